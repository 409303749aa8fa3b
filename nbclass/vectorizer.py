"""Vectorizer: token lists to a sparse bag-of-words matrix.

Rows are documents and columns are vocabulary words; entry ``X[i, j]`` is the number of
times word j occurs in document i (the multinomial event model's ``x``). The Bernoulli
event model uses the same matrix binarised, ``x_j = 1[X[i, j] > 0]``. The matrix is a
``scipy.sparse.csr_matrix`` with sorted column indices and no stored zeros, and is never
made dense.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from itertools import repeat
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # scipy is imported where it is used: fitting never needs it
    import scipy.sparse as sp


class GrowingVocabulary(dict):
    """A ``word -> column`` mapping that gives an unseen word the next free column.

    Examples
    --------
    >>> vocabulary = GrowingVocabulary()
    >>> vocabulary["ham"], vocabulary["spam"], vocabulary["ham"]
    (0, 1, 0)
    """

    def __missing__(self, word: str) -> int:
        index = self[word] = len(self)
        return index


def count_matrix(token_lists: Iterable[list[str]], vocabulary: Mapping[str, int]) -> sp.csr_matrix:
    """Count tokens per document.

    Parameters
    ----------
    token_lists : iterable of list of str
        One list of tokens per document.
    vocabulary : mapping of str to int
        Column of each word. A :class:`GrowingVocabulary` learns new words as it meets
        them; any other mapping is fixed and words outside it are ignored.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_documents, len(vocabulary)), dtype int64
        Token counts; rows with no known word are empty.

    Examples
    --------
    >>> X = count_matrix([["b", "a", "b"], ["c"]], {"a": 0, "b": 1})
    >>> X.toarray().tolist()
    [[1, 2], [0, 0]]
    """
    import scipy.sparse as sp

    indptr = [0]
    indices: list[int] = []
    data: list[int] = []
    if isinstance(vocabulary, GrowingVocabulary):
        lookup = vocabulary.__getitem__
        for tokens in token_lists:
            counts = Counter(tokens)
            indices.extend(map(lookup, counts))
            data.extend(counts.values())
            indptr.append(len(indices))
    else:
        get, unknown = vocabulary.get, repeat(-1)
        for tokens in token_lists:
            counts = Counter(tokens)
            indices.extend(map(get, counts, unknown))  # -1 for a word outside the vocabulary
            data.extend(counts.values())
            indptr.append(len(indices))
    columns = np.array(indices, dtype=np.int64)
    values = np.array(data, dtype=np.int64)
    row_ends = np.array(indptr, dtype=np.int64)
    known = columns >= 0
    if not known.all():
        kept = np.concatenate(([0], np.cumsum(known)))
        columns, values, row_ends = columns[known], values[known], kept[row_ends]
    X = sp.csr_matrix((values, columns, row_ends), shape=(len(indptr) - 1, len(vocabulary)))
    X.sort_indices()
    return X


def binarize(X: sp.csr_matrix) -> sp.csr_matrix:
    """Presence matrix ``1[X > 0]`` of the same shape (the Bernoulli event model's ``x``)."""
    B = X.copy()
    B.data = np.ones_like(B.data)
    return B
