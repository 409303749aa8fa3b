"""Counting: the exact integer counts N_c, D_jc, T_jc of a corpus, and their ledger.

A batch's tally (:mod:`.tally`), the counts of a corpus on one or many processes, or on a
cluster through a counting function the caller gives (:mod:`.counts`), and the per-document
ledger that makes unlearning exact (:mod:`.ledger`). Imports only the layers below
(:mod:`nbclass.text`, :mod:`nbclass.reading`).
"""
