"""Text: a document's text to tokens, and tokens to a sparse count matrix.

The tokenizer and its stored settings (:mod:`.tokenizer`, :mod:`.stop_words`), feature
hashing (:mod:`.hashing`), the numpy run counter of the default tokenizer (:mod:`.runs`),
the vectorizer (:mod:`.vectorizer`) and the feature families fit chooses among
(:mod:`.families`). Imports only :mod:`nbclass.reading` and the
shared leaves.
"""
