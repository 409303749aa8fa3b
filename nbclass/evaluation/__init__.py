"""Evaluation: judging models on labelled documents (evaluate, cv, check, diff).
"""
