"""Output: results as text, for scripts and for people.

Lines of TSV, JSON and JSON lines (:mod:`.render`), reports drawn with rich for a
terminal (:mod:`.report`), and predictions written as numbered part files
(:mod:`.parts`). This file imports nothing: the one-document path renders its line
through :mod:`.render` without numpy.
"""
