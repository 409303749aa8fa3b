"""Counts: the sufficient statistics of naive Bayes, exact integers from one pass.

Notation (``docs/maths.md``):

=========  ==========================  ===============================================
symbol     code name                   meaning
=========  ==========================  ===============================================
N_c        ``class_count``, (C,)       training **documents** of class c
N          ``n_docs``                  sum of N_c
D_jc       ``doc_count``, (V, C) CSR   **documents** of class c containing word j
T_jc       ``token_count``, (V, C) CSR **tokens** (occurrences) of word j in class c
T_c        ``class_tokens``, (C,)      sum over j of T_jc: **tokens** in class c
=========  ==========================  ===============================================

One set of counts serves both event models: the Bernoulli model reads N_c and D_jc, the
multinomial model N_c and T_jc. Counts are additive: the counts of corpus A and corpus B
together are ``merge(counts(A), counts(B))``. Classes and vocabulary are kept sorted, so
equal corpora give equal counts whatever the order their documents were read in.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import FrozenInstanceError, dataclass
from functools import cached_property
from itertools import chain, compress, islice, repeat
from operator import eq, lt
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # scipy is imported where it is used: a named fit never needs it
    import scipy.sparse as sp

from ..compiled import sparsetools, sparsetools_loaded
from ..ranges import MAX_COUNT, environment, usable_cores
from ..reading.policy import DEFAULT_POLICY, ReadLog, ReadPolicy, has_bytes
from ..reading.process import check_workers, signals_held, worker_result
from ..text.tokenizer import TokenizerSettings, ascii_splitter, make_tokenizer
from ..text.vectorizer import GrowingVocabulary, binarize
from .csr import CSR
from .pairtable import BLOCK_PAIRS, PairTable, pair_sums  # (pairs a block at a time)
from .tally import DigestMarks, FirstCallTokenizer, Tally, pack, settle, tally, tally_paths

BLOCK_CELLS = 2**18  # cells per block where whole-table work is done a block at a time
PART_SIZE = 1000  # documents per progress report, and per part sent to a Dask cluster
# (word, class) pairs a process tallies (in a run tally's arrays, or in Python
# dictionaries for the documents it tokenizes) before it packs and sends them: this bounds
# a worker's tally to a few tens of MB. Larger windows repeat fewer words between windows
# but hold more memory in every worker at once (on 20 Newsgroups, windows of 100,000 took
# 120-123 MB for the whole fit, of 200,000 128-146 MB, in the same time).
FLUSH_ENTRIES = 100_000
# Forking a worker process costs a few milliseconds; below this much text one process
# is about as fast. The result is the same either way.
PARALLEL_MIN_BYTES = 4 * 2**20
# Seconds a count that ended early (an error, Ctrl-C) waits for the thread doing its
# caller's work meanwhile (imports): that work is not needed any more, and the thread
# may wait on a lock left held by the interrupted main thread.
HELPER_GRACE = 2.0


class _CountTable:
    """The fields ``doc_count`` and ``token_count`` of :class:`Counts`: each table is kept
    as it was given (:attr:`Counts.doc_table`), and read as a scipy CSR matrix where it
    is a :class:`PairTable` (:meth:`PairTable.tocsr`: made on the first read, the same
    arrays), as itself otherwise. The one place where counted counts become scipy's."""

    def __set_name__(self, owner, name: str) -> None:
        self.name, self.key = name, "_" + name

    def __get__(self, counts, owner=None):
        if counts is None:  # (the dataclass's field then has no default)
            raise AttributeError(self.name)
        table = counts.__dict__[self.key]
        return table.tocsr() if type(table) is PairTable else table

    def __set__(self, counts, table) -> None:  # once, by the dataclass's __init__
        if self.key in counts.__dict__:
            raise FrozenInstanceError(f"cannot assign to field {self.name!r}")
        counts.__dict__[self.key] = table


@dataclass(frozen=True, eq=False)
class Counts:
    """Exact per-class counts over a vocabulary.

    Attributes
    ----------
    classes : tuple of str, length C
        Class names, sorted.
    vocabulary : tuple of str, length V
        Words, sorted; row j of the count matrices is ``vocabulary[j]``.
    class_count : ndarray of shape (C,), int64
        N_c, number of training documents of class c.
    doc_count : scipy.sparse.csr_matrix of shape (V, C), integers
        D_jc, number of documents of class c that contain word j at least once.
    token_count : scipy.sparse.csr_matrix of shape (V, C), integers
        T_jc, number of occurrences of word j in the documents of class c.

    D and T are canonical (sorted indices, each pair once, no explicit zero) and share
    one pattern: the (word, class) pairs that occur, D_jc > 0 exactly where T_jc > 0
    (:func:`counts_of_pairs` makes them so). Memory is proportional to those pairs, never
    to V × C. Counted and loaded counts keep them as :class:`PairTable` (numpy arrays in
    CSR layout, :attr:`doc_table` and :attr:`token_table`), which ``doc_count`` and
    ``token_count`` give as scipy CSR matrices of the same arrays, made on their first
    read: what a named fit does with the counts (sums, rows, the model file) reads the
    tables and never imports scipy. Dense (V, C) ndarrays, and scipy matrices, are
    accepted too (small counts built by hand: tests, examples), kept and read as they
    are; every method reads any form. Counted counts are int64; loaded ones keep
    the model file's narrowest unsigned types (:func:`count_values`), so arithmetic on
    their values widens first (:meth:`pairs` and :meth:`at_nonzero` give the type asked
    for; sums of the matrices are taken in 64 bits).
    """

    classes: tuple[str, ...]
    vocabulary: tuple[str, ...]
    class_count: np.ndarray
    doc_count: np.ndarray = _CountTable()
    token_count: np.ndarray = _CountTable()

    @property
    def doc_table(self):
        """D_jc as kept: a :class:`PairTable`, or the dense ndarray or scipy matrix given."""
        return self.__dict__["_doc_count"]

    @property
    def token_table(self):
        """T_jc as kept (:attr:`doc_table`)."""
        return self.__dict__["_token_count"]

    @cached_property
    def nonzero(self) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, cols)`` of the (word, class) pairs with D_jc > 0 (exactly those with
        T_jc > 0), row-major: by word, classes ascending; int32 (int64 past 2**31 words
        or classes: an index of one fits when words × classes does not) of shape (nnz,)
        each. Keys j C + c are made from them in int64.
        Computed once (the counts are never changed in place): from the CSR pattern, or
        from a dense table a block of rows at a time (no int64 array of every pair is
        made on the way)."""
        D = self.doc_table
        V, C = D.shape
        dtype = np.int32 if max(V, C) < 2**31 else np.int64  # half the memory, kept
        if is_sparse(D):
            rows = np.repeat(np.arange(V, dtype=dtype), np.diff(D.indptr))
            return rows, D.indices.astype(dtype, copy=False)
        rows = np.empty(np.count_nonzero(D), dtype=dtype)
        cols = np.empty(rows.size, dtype=dtype)
        at, step = 0, max(1, BLOCK_CELLS // max(C, 1))
        for start in range(0, V, step):
            flat = np.flatnonzero(D[start : start + step])
            end = at + flat.size
            np.floor_divide(flat, C, out=rows[at:end], casting="unsafe")
            np.remainder(flat, C, out=cols[at:end], casting="unsafe")
            rows[at:end] += start
            at = end
        return rows, cols

    def at_nonzero(self, matrix, dtype) -> np.ndarray:
        """``matrix[rows, cols]`` at the pairs of :attr:`nonzero`, made as ``dtype`` a block
        at a time: shape (nnz,). (At 130,000 words × 20 classes, every cell nonzero, an
        int64 array of them all is 21 MB; this makes none but the result.) A CSR matrix
        of the same pattern gives its values as they are.

        >>> counts = Counts(("a", "b"), ("x", "y"), np.array([1, 2]),
        ...                 np.array([[0, 1], [2, 0]]), np.array([[0, 3], [5, 0]]))
        >>> counts.at_nonzero(counts.token_count, np.float64).tolist()
        [3.0, 5.0]
        """
        if is_sparse(matrix):
            return matrix.data.astype(dtype)
        rows, cols = self.nonzero
        out = np.empty(rows.size, dtype=dtype)
        for start in range(0, rows.size, BLOCK_CELLS):
            end = start + BLOCK_CELLS
            out[start:end] = matrix[rows[start:end], cols[start:end]]
        return out

    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(rows, cols, D, T)`` at the nonzero pairs (:attr:`nonzero`), the counts int64."""
        rows, cols = self.nonzero
        return (
            rows, cols,
            self.at_nonzero(self.doc_table, np.int64), self.at_nonzero(self.token_table, np.int64),
        )  # fmt: skip

    @cached_property
    def doc_histograms(self) -> list[list[tuple[int, int]]]:
        """:func:`doc_count_histograms` of D_jc (computed once): from the nonzero pairs
        when D_jc ≥ 1 at every one of them, as in any consistent counts
        (:func:`pair_histograms`), else from every cell."""
        V, C = self.doc_table.shape
        if is_sparse(self.doc_table):  # the pattern's classes and values as they are
            cols, values = self.doc_table.indices, self.doc_table.data
        else:
            cols = self.nonzero[1]
            values = self.at_nonzero(self.doc_table, np.int64)
        if not values.size or values.min() < 1:
            return doc_count_histograms(as_table(self.doc_table))
        return pair_histograms(cols, values, V, C)

    @cached_property
    def words_in_order(self) -> bool:
        """Whether the vocabulary is sorted and unique: compared once (2 million words
        take 0.2 s), or known from how the counts were made."""
        return _strictly_increasing(self.vocabulary)

    @property
    def n_docs(self) -> int:
        """N, the number of training documents."""
        return int(self.class_count.sum())

    @cached_property
    def class_tokens(self) -> np.ndarray:
        """T_c, ndarray of shape (C,): tokens in the documents of class c (summed once)."""
        return count_sums(self.token_table, 0)

    @cached_property
    def word_tokens(self) -> np.ndarray:
        """Σ_c T_jc, ndarray of shape (V,): tokens of word j in all classes (summed once)."""
        return count_sums(self.token_table, 1)

    def equals(self, other: Counts) -> bool:
        """True when both hold the same classes, words and integer counts."""
        return (
            self.classes == other.classes
            and self.vocabulary == other.vocabulary
            and np.array_equal(self.class_count, other.class_count)
            and self.doc_table.shape == other.doc_table.shape
            and self.token_table.shape == other.token_table.shape
            and all(map(np.array_equal, self.pairs(), other.pairs()))
        )

    def restrict(self, rows: np.ndarray) -> Counts:
        """The counts of the words at ``rows`` (sorted indices), N_c unchanged.

        Rows strictly increasing (as the vocabulary filter gives them) are taken by a
        mask: the words by ``compress`` (a string looked up by each index took four times
        as long: 1.18 million of 1.2 million entries of 20 Newsgroups with word pairs), and
        D and T, when they share their pattern (:func:`pair_matrices`), by one selection
        of their pairs for both; the same counts as the tables' own row selection."""
        rows = np.asarray(rows, dtype=np.int64)
        D, T = self.doc_table, self.token_table
        V = len(self.vocabulary)
        if (
            rows.size
            and rows[0] >= 0
            and rows[-1] < V
            and bool((rows[1:] > rows[:-1]).all())
        ):
            keep = np.zeros(V, dtype=bool)
            keep[rows] = True
            shared = type(D) is PairTable and type(T) is PairTable and (
                D.indptr is T.indptr and D.indices is T.indices and D.shape[0] == V
            )
            if rows.size == V:  # every row, in order: the tables as they are
                pass
            elif shared:
                lengths = np.diff(D.indptr)
                indptr = np.zeros(rows.size + 1, dtype=np.int64)
                np.cumsum(lengths[rows], out=indptr[1:])
                C, nnz = D.shape[1], int(indptr[-1])
                index = np.int32 if max(C, nnz) < 2**31 else np.int64
                pairs = np.repeat(keep, lengths)  # the kept words' pairs
                indices, indptr = D.indices[pairs].astype(index, copy=False), indptr.astype(index)
                D, T = (PairTable(table.data[pairs], indices, indptr, (rows.size, C))
                        for table in (D, T))  # fmt: skip
            else:
                D, T = D[rows], T[rows]
            return Counts(
                classes=self.classes,
                vocabulary=tuple(compress(self.vocabulary, keep)),
                class_count=self.class_count,
                doc_count=D,
                token_count=T,
            )
        return Counts(
            classes=self.classes,
            vocabulary=tuple(map(self.vocabulary.__getitem__, rows.tolist())),
            class_count=self.class_count,
            doc_count=self.doc_table[rows],
            token_count=self.token_table[rows],
        )

    def pruned(self) -> Counts:
        """These counts without the words and classes that have no count at all.

        A fit only ever sees words and classes that occur, so this is the form that
        compares bit for bit with a fit of the same documents. Made from the nonzero
        pairs (which consistent counts have only in classes with documents).
        """
        V, C = len(self.vocabulary), len(self.classes)
        rows, cols, docs, tokens = self.pairs()
        used = np.zeros(V, dtype=bool)
        used[rows] = True
        words = np.flatnonzero(used)
        kept = np.flatnonzero(self.class_count)
        if words.size == V and kept.size == C:
            return self
        word_map = np.full(V, -1, dtype=np.int64)
        word_map[words] = np.arange(words.size)
        class_map = np.full(C, -1, dtype=np.int64)
        class_map[kept] = np.arange(kept.size)
        rows, cols = word_map[rows], class_map[cols]
        keep = cols >= 0
        return counts_of_pairs(
            tuple(self.classes[c] for c in kept.tolist()),
            tuple(self.vocabulary[j] for j in words.tolist()),
            self.class_count[kept],
            rows[keep], cols[keep], docs[keep], tokens[keep],
        )  # fmt: skip

    def problems(self) -> list[str]:
        """What makes these counts impossible (empty when they are consistent)."""
        found = []
        C, V = len(self.classes), len(self.vocabulary)
        if self.class_count.shape != (C,):
            found.append(f"class counts have shape {self.class_count.shape}, expected ({C},)")
        for name, array in (("document", self.doc_table), ("token", self.token_table)):
            if array.shape != (V, C):
                found.append(f"{name} counts have shape {array.shape}, expected ({V}, {C})")
        if found:
            return found
        negative, too_many, more_documents, tokens_alone = self._cell_problems()
        if negative:
            found.append("negative counts")
        if too_many:
            found.append("a word is in more documents of a class than the class has")
        if more_documents:
            found.append("a word is in more documents than it has tokens")
        if tokens_alone:
            found.append("a word has tokens in a class but no documents")
        if not negative and not _sums_fit(self.class_count, self.token_table):
            found.append("count too large (the counts sum past 2^63 - 1)")
        if not _strictly_increasing(self.classes):
            found.append("class names are not sorted and unique")
        if not self.words_in_order:
            found.append("vocabulary is not sorted and unique")
        if "\x00" in "".join(self.vocabulary):
            found.append("a word holds a NUL character")
        return found

    def _cell_problems(self) -> tuple[bool, bool, bool, bool]:
        """Whether any count is negative, any D_jc > N_c, any D_jc > T_jc, and any T_jc
        has no D_jc. When N_c ≥ 0, and T has as many nonzero cells as D and T_jc, D_jc ≥ 1
        at each of D's (any consistent counts), no other cell is nonzero, and only those
        pairs are tested; otherwise every test on a block of rows at a time, while it is in the
        cache (on the whole (V, C) arrays, each test read them from memory again)."""
        D, T, N = self.doc_table, self.token_table, self.class_count
        negative = bool((N < 0).any())
        if is_sparse(D) or is_sparse(T):
            return self._pair_problems(negative)
        rows, cols = self.nonzero
        if not negative and np.count_nonzero(T) == rows.size:  # only the nonzero pairs
            too_many = more_documents = False
            for start in range(0, rows.size, BLOCK_CELLS):
                r, c = rows[start : start + BLOCK_CELLS], cols[start : start + BLOCK_CELLS]
                d, t = D[r, c], T[r, c]
                if d.min() < 1 or t.min() < 1:  # impossible counts: every cell below
                    break
                too_many = too_many or bool((d > N[c]).any())
                more_documents = more_documents or bool((d > t).any())
            else:  # T_jc > 0 at each of D's nonzero pairs, as many: no other cell is nonzero
                return negative, too_many, more_documents, False
        too_many = more_documents = tokens_alone = False
        step = max(1, BLOCK_CELLS // max(D.shape[1], 1))
        for start in range(0, D.shape[0], step):
            d, t = D[start : start + step], T[start : start + step]
            negative = negative or bool(d.min() < 0 or t.min() < 0)
            too_many = too_many or bool((d > N).any())
            more = bool((d > t).any())
            more_documents = more_documents or more
            if negative or more:
                tokens_alone = tokens_alone or bool(((d == 0) & (t != 0)).any())
            else:  # 0 <= D <= T: D > 0 implies T > 0, so the nonzero cells are the same
                tokens_alone = tokens_alone or np.count_nonzero(d) != np.count_nonzero(t)
        return negative, too_many, more_documents, tokens_alone

    def _pair_problems(self, negative: bool) -> tuple[bool, bool, bool, bool]:
        """:meth:`_cell_problems` of CSR counts: both of one pattern (as
        :func:`counts_of_pairs` makes them), every test on the stored pairs only."""
        D, T, N = self.doc_table, self.token_table, self.class_count
        if np.array_equal(D.indptr, T.indptr) and np.array_equal(D.indices, T.indices):
            d, t, c = D.data, T.data, D.indices
        else:  # on the union of the patterns
            C = len(self.classes)
            Dc, Tc = self.doc_count.tocoo(), self.token_count.tocoo()  # (scipy's)
            keys = np.concatenate((Dc.row * np.int64(C) + Dc.col, Tc.row * np.int64(C) + Tc.col))
            zeros = np.zeros(Tc.nnz + Dc.nnz, dtype=np.int64)
            d = np.concatenate((Dc.data.astype(np.int64), zeros[: Tc.nnz]))
            t = np.concatenate((zeros[: Dc.nnz], Tc.data.astype(np.int64)))
            keys, d, t = summed(keys, d, t)
            c = keys % C
        # A block of pairs at a time, while it is in the cache: on the whole arrays each
        # test made a temporary of every pair (N_c of each, 80 MB at 10 million pairs).
        too_many = more_documents = tokens_alone = False
        for start in range(0, d.size, BLOCK_PAIRS):
            end = start + BLOCK_PAIRS
            db, tb = d[start:end], t[start:end]
            negative = negative or bool(db.min() < 0 or tb.min() < 0)
            too_many = too_many or bool((db > N[c[start:end]]).any())
            more_documents = more_documents or bool((db > tb).any())
            tokens_alone = tokens_alone or bool(((db == 0) & (tb != 0)).any())
        return negative, too_many, more_documents, tokens_alone


def _sums_fit(class_count: np.ndarray, token_count) -> bool:
    """Whether N = Σ_c N_c and Σ_jc T_jc (non-negative counts) are at most 2^63 − 1, so
    that every sum taken of them in int64 (N, T_c, Σ_c T_jc, and Σ_j D_jc ≤ T_c) is exact:
    64-bit counts from a file may each be below 2^63 and sum past it, where int64 sums
    wrap round."""
    if sum(np.asarray(class_count).tolist()) > MAX_COUNT:
        return False
    values = token_count.data if is_sparse(token_count) else np.asarray(token_count)
    return sum_fits(values.reshape(-1))


def sum_fits(values: np.ndarray) -> bool:
    """Whether the sum of ``values`` (non-negative integers, shape (n,)) is at most
    2^63 − 1, exactly: values of fewer than 8 bytes sum below it without a pass over them
    (fewer than 2^31 of them), 64-bit ones whose largest times their number is below it
    with one pass; else the halves of each block are summed (each half in 64 bits)."""
    if values.dtype.kind not in "iu" or values.dtype.itemsize < 8 and values.size < 2**31:
        return True  # (counts of another type: checked where they come from a file)
    if not values.size or values.size * int(values.max()) <= MAX_COUNT:  # (as a rule)
        return True
    total, low = 0, np.uint64(2**32 - 1)
    for start in range(0, values.size, BLOCK_PAIRS):
        block = values[start : start + BLOCK_PAIRS].astype(np.uint64)
        total += (int((block >> np.uint64(32)).sum()) << 32) + int((block & low).sum())
        if total > MAX_COUNT:
            return False
    return True


def at_most(part: Counts, total: Counts) -> bool:
    """Whether D_jc and T_jc of ``part`` are at most those of ``total`` at every pair (both
    over the same classes and words), from their nonzero pairs."""
    C = len(total.classes)
    D, T = total.doc_table, total.token_table
    if is_sparse(D) and is_sparse(T):
        # CSR of one pattern (:attr:`Counts.nonzero`): the pairs' keys from it and their
        # counts as stored, without the row and column arrays of every pair (20,000
        # classes × 200,000 words: 400 MB made to check a sample of 6,000 documents).
        keys = np.repeat(np.arange(D.shape[0], dtype=np.int64) * C, np.diff(D.indptr))
        keys += D.indices
        docs, tokens = D.data, T.data
    else:
        rows, cols, docs, tokens = total.pairs()
        keys = rows.astype(np.int64) * C + cols
    part_rows, part_cols, part_docs, part_tokens = part.pairs()
    taken = part_rows.astype(np.int64) * C + part_cols
    if not taken.size:
        return True
    if not keys.size:
        return False
    at = np.minimum(np.searchsorted(keys, taken), keys.size - 1)
    return bool(
        np.array_equal(keys[at], taken)
        and (part_docs <= docs[at]).all()
        and (part_tokens <= tokens[at]).all()
    )


def is_sparse(matrix) -> bool:
    """Whether a count matrix is in CSR layout, a :class:`PairTable` or a scipy.sparse CSR
    matrix (rather than a dense ndarray); scipy is not imported to tell."""
    return hasattr(matrix, "indptr")


def as_table(matrix) -> np.ndarray:
    """A count matrix as a dense (V, C) ndarray, whatever its form (for small counts:
    tests, examples, reports of a few words)."""
    return matrix.toarray() if is_sparse(matrix) else np.asarray(matrix)


def counts_of_pairs(
    classes: Sequence[str], vocabulary: Sequence[str], class_count: np.ndarray,
    rows: np.ndarray | None, cols: np.ndarray, docs: np.ndarray, tokens: np.ndarray,
    word_ptr: np.ndarray | None = None,
) -> Counts:  # fmt: skip
    """Counts from their nonzero (word, class) pairs.

    ``rows`` (word indices) and ``cols`` (class indices) are in row-major order, each
    pair at most once; ``docs`` and ``tokens`` are D_jc and T_jc there, shape (nnz,) each.
    Pairs where both are 0 are dropped. The count matrices are made by
    :func:`count_matrices`. ``rows`` may be None when ``word_ptr`` (V + 1,) says where
    each word's pairs start (a model file's sections): no array of every pair's word is
    then made unless a pair is dropped.
    D_jc and T_jc keep their integer types (a model file's are its narrowest unsigned
    ones: one or two bytes a pair as a rule, where int64 copies took 8 each); 64-bit
    unsigned ones, and what is not an integer, are made int64.
    """
    docs, tokens = count_values(docs), count_values(tokens)
    # As a rule D_jc > 0 at every pair: then none is dropped, and no mask is made.
    keep = None if np.count_nonzero(docs) == docs.size else (docs != 0) | (tokens != 0)
    V, C = len(vocabulary), len(classes)
    if (keep is None or keep.all()) and word_ptr is not None:
        D, T = pair_matrices(V, C, np.asarray(word_ptr, dtype=np.int64), cols, docs, tokens)
    else:
        if rows is None:
            rows = np.repeat(np.arange(V, dtype=np.int64), np.diff(word_ptr))
        if keep is not None and not keep.all():
            rows, cols, docs, tokens = rows[keep], cols[keep], docs[keep], tokens[keep]
        D, T = count_matrices(V, C, rows, cols, docs, tokens)
    return Counts(tuple(classes), tuple(vocabulary), np.asarray(class_count, dtype=np.int64), D, T)


def count_values(values) -> np.ndarray:
    """Counts as an integer array of a type arithmetic on them can take: their own when
    it is an integer type other than uint64 (which numpy mixes with int64 into floats),
    else int64 (their values are checked to fit where they come from a file)."""
    values = np.asarray(values)
    if values.dtype.kind in "iu" and values.dtype != np.uint64:
        return values
    return values.astype(np.int64)


def count_sums(table, axis: int) -> np.ndarray:
    """Σ_c table_jc (``axis`` 1, shape (V,)) or Σ_j table_jc (``axis`` 0, shape (C,)) of
    a (V, C) count table, a :class:`PairTable`, CSR or dense, as int64, exactly: the pairs
    of a table in CSR layout are summed as they are stored (:func:`nbclass.counting.
    pairtable.pair_sums`: a narrow type is not copied as uint64 first, as scipy and numpy
    sum it, and scipy is not needed); a CSR matrix of another type than integers takes
    scipy's own sums."""
    if not is_sparse(table):
        return np.asarray(table).sum(axis=axis, dtype=np.int64)
    if table.dtype.kind not in "iu":
        return np.asarray(table.sum(axis=axis), dtype=np.int64).reshape(-1)
    return pair_sums(table, axis)


def count_matrices(V: int, C: int, rows, cols, docs, tokens) -> tuple:
    """D and T, canonical tables (V, C) in CSR layout (:class:`PairTable`) sharing one
    pattern, from their values at the pairs ``(rows, cols)`` (row-major, each pair once):
    sorted indices, no duplicates; no explicit zeros in consistent counts. Memory: 20
    bytes a pair and 8 a word, never V × C."""
    indptr = np.zeros(V + 1, dtype=np.int64)
    np.cumsum(np.bincount(np.asarray(rows, dtype=np.int64), minlength=V), out=indptr[1:])
    return pair_matrices(V, C, indptr, cols, docs, tokens)


def pair_matrices(V: int, C: int, indptr: np.ndarray, cols, docs, tokens) -> tuple:
    """:func:`count_matrices` of pairs given by where each word's start (``indptr``,
    int64 (V + 1,)) and their classes ``cols``, in any integer type: two
    :class:`PairTable` sharing their ``indptr`` and ``indices`` (int32 where they fit)."""
    index = np.int32 if max(C, int(indptr[-1])) < 2**31 else np.int64
    indices, indptr = np.asarray(cols).astype(index), indptr.astype(index, copy=False)
    return tuple(PairTable(count_values(values), indices, indptr, (V, C))
                 for values in (docs, tokens))  # fmt: skip


def _strictly_increasing(items: Sequence[str]) -> bool:
    return all(map(lt, items, islice(items, 1, None)))  # (str.__lt__ took three times as long)


_AT_OR_BELOW_SPACE = re.compile("[\x00- ]")


def _above_space(words: Sequence[str]) -> bool:
    """Whether no character of ``words`` is at or below the space: then the rows of a
    :class:`KeyedRows` in the order :func:`with_pairs` gives (its words in their names'
    order, distinct) are in their names' order, strictly, a word pair's name being its
    words' joined by a space (a word before the pairs it begins, and they before the
    next word, which the first does not begin with a space). The word pairs' entries of
    ``words`` are empty (not named yet).

    >>> _above_space(["ab", "", "c"]), _above_space(["a b"]), _above_space(["a\x01"])
    (True, False, False)
    """
    return _AT_OR_BELOW_SPACE.search("".join(words)) is None


def doc_count_histograms(doc_count: np.ndarray) -> list[list[tuple[int, int]]]:
    """For each class, the pairs (d, n): n words have D_jc = d (d = 0 included if any).

    Parameters
    ----------
    doc_count : ndarray of shape (V, C)
        D_jc (documents).

    Returns
    -------
    list of C lists of (d, n), d ascending, n > 0; Σ n = V for every class.
    """
    V, C = doc_count.shape
    top = int(doc_count.max()) if doc_count.size else 0
    width = top + 1
    if C * width <= 4 * V:  # small values: one tally of (class, d) codes, a block at a time
        tally = np.zeros(C * width, dtype=np.int64)
        offsets = np.arange(C, dtype=np.int64) * width
        step = max(1, BLOCK_CELLS // max(C, 1))
        for start in range(0, V, step):
            codes = doc_count[start : start + step] + offsets
            tally += np.bincount(codes.reshape(-1), minlength=tally.size)
        return _histograms_of(tally.reshape(C, width))
    histograms = []
    for c in range(C):
        values, n = value_counts(doc_count[:, c])
        histograms.append(list(zip(values.tolist(), n.tolist())))
    return histograms


# Cells of the tally of (class, value) that :func:`pair_histograms` makes when the values
# are too many for one of every value (4 M cells, 32 MB); larger values are sorted.
HISTOGRAM_CELLS = 2**22


def pair_histograms(cols: np.ndarray, values: np.ndarray, V: int, C: int):
    """:func:`doc_count_histograms` of counts given by their nonzero pairs: the class
    ``cols`` and the value ``values`` (≥ 1) of each, V words, C classes.

    The values below a width are tallied by (class, value), all of them when the
    tally is at most 4 cells a pair or a word (as a rule), else a width of
    :data:`HISTOGRAM_CELLS` cells; the few larger ones are sorted. Each class's count of
    zeros is V less its number of pairs. Memory in proportion to the pairs, never to
    C × the largest value, and no sort of every pair (at 20,000 classes × 200,000 words
    and 10 million pairs a sort of them by class took most of a model's load).

    >>> pair_histograms(np.array([0, 1, 0, 1]), np.array([2, 1, 900, 2]), 3, 2)
    [[(0, 1), (2, 1), (900, 1)], [(0, 1), (1, 1), (2, 1)]]
    """
    largest = int(values.max())
    width = largest + 1
    if C * width > 4 * max(V, values.size):
        width = max(2, min(width, HISTOGRAM_CELLS // max(C, 1)))
    large = None
    if largest < width:  # every value tallied: a block of pairs at a time
        tally = np.zeros(C * width, dtype=np.int64)
        step = max(BLOCK_PAIRS, C * width)  # each block's tally no larger than its codes
        for start in range(0, values.size, step):
            codes = cols[start : start + step].astype(np.int64)
            codes *= width
            codes += values[start : start + step]
            tally += np.bincount(codes, minlength=tally.size)
        tally = tally.reshape(C, width)
    else:
        small = values < width
        codes = cols[small].astype(np.int64) * width
        codes += values[small]
        top = largest + 1
        keys = cols[~small].astype(np.int64) * top + values[~small]
        keys, found = np.unique(keys, return_counts=True)
        ends = np.searchsorted(keys // top, np.arange(C + 1))
        large = (keys % top, found, ends)
        tally = np.bincount(codes, minlength=C * width).reshape(C, width)
    # the words a class lacks (D_jc = 0): V less its pairs, small and large
    lacking = V - tally.sum(axis=1)
    if large is not None:
        before = np.concatenate(([0], np.cumsum(large[1])))  # pairs before each key
        lacking -= np.diff(before[large[2]])
    tally[:, 0] = lacking
    histograms = _histograms_of(tally)
    if large is not None:
        large_values, found, ends = (part.tolist() for part in large)
        for c in np.flatnonzero(np.diff(ends)).tolist():
            start, end = ends[c], ends[c + 1]
            histograms[c] += zip(large_values[start:end], found[start:end])
    return histograms


def _histograms_of(tally: np.ndarray) -> list[list[tuple[int, int]]]:
    """The (d, n) pairs with n > 0 of each row of ``tally`` (C, width): n = tally[c, d]
    (found in one pass over the tally, then cut class by class)."""
    classes, values = np.nonzero(tally)  # row-major: by class, d ascending
    pairs = list(zip(values.tolist(), tally[classes, values].tolist()))
    ends = np.cumsum(np.bincount(classes, minlength=tally.shape[0])).tolist()
    return [pairs[start:end] for start, end in zip([0, *ends[:-1]], ends)]


def value_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of a nonnegative integer array, ascending, and how often each
    occurs (int64 ndarrays): a tally when the values are small (at most 8 times their
    number), else a sort.

    >>> [a.tolist() for a in value_counts(np.array([3, 0, 3, 7]))]
    [[0, 3, 7], [1, 2, 1]]
    """
    if values.size and values.max() <= 8 * values.size:
        tally = np.bincount(values)
        found = np.flatnonzero(tally)
        return found, tally[found]
    return np.unique(values, return_counts=True)


def distinct_values(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``numpy.unique(values, return_inverse=True)`` of a nonnegative integer array (the
    distinct values ascending, and each value's place among them), by a tally when the
    values are small (at most 8 times their number), else by a sort: the same arrays.

    >>> [a.tolist() for a in distinct_values(np.array([3, 0, 3, 7]))]
    [[0, 3, 7], [1, 0, 1, 2]]
    """
    if values.size and values.max() <= 8 * values.size:
        seen = np.bincount(values) > 0
        place = np.cumsum(seen) - 1
        return np.flatnonzero(seen).astype(values.dtype), place[values]
    return np.unique(values, return_inverse=True)


def count_documents(
    X: sp.csr_matrix, labels: np.ndarray, n_classes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """N_c, D_jc and T_jc of one batch of documents.

    Parameters
    ----------
    X : csr_matrix of shape (n, V)
        Token counts per document.
    labels : ndarray of shape (n,), int
        Class index of each document.
    n_classes : int
        C.

    Returns
    -------
    class_count : ndarray of shape (C,), int64 (documents)
    doc_count : ndarray of shape (V, C), int64 (documents containing the word)
    token_count : ndarray of shape (V, C), int64 (tokens)

    Notes
    -----
    With Y the (n, C) one-hot label matrix: ``T = X.T @ Y`` and ``D = 1[X > 0].T @ Y``.
    """
    import scipy.sparse as sp

    labels = np.asarray(labels, dtype=np.int64)
    n = labels.shape[0]
    Y = sp.csr_matrix(
        (np.ones(n, dtype=np.int64), labels, np.arange(n + 1, dtype=np.int64)),
        shape=(n, n_classes),
    )
    token_count = (X.T @ Y).toarray().astype(np.int64, copy=False)
    doc_count = (binarize(X).T @ Y).toarray().astype(np.int64, copy=False)
    class_count = np.bincount(labels, minlength=n_classes).astype(np.int64)
    return class_count, doc_count, token_count


def count_pairs(
    X: sp.csr_matrix, labels: np.ndarray, n_classes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The nonzero (word, class) pairs of one batch of documents: ``(rows, cols,
    doc_counts, token_counts)``, int64 arrays of shape (nnz,), row-major (by word, classes
    ascending). :func:`count_documents` without its (V, C) tables."""
    import scipy.sparse as sp

    labels = np.asarray(labels, dtype=np.int64)
    n = labels.shape[0]
    Y = sp.csr_matrix(
        (np.ones(n, dtype=np.int64), labels, np.arange(n + 1, dtype=np.int64)),
        shape=(n, n_classes),
    )
    T = sp.csr_matrix(X.T @ Y)
    D = sp.csr_matrix(binarize(X).T @ Y)
    T.sum_duplicates()
    D.sum_duplicates()  # canonical: indices sorted, each pair once
    T.eliminate_zeros()
    D.eliminate_zeros()
    if not (np.array_equal(T.indptr, D.indptr) and np.array_equal(T.indices, D.indices)):
        raise ValueError("a document holds a word with no token")  # explicit zeros in X
    rows = np.repeat(np.arange(T.shape[0], dtype=np.int64), np.diff(T.indptr))
    cols = T.indices.astype(np.int64)
    return rows, cols, D.data.astype(np.int64), T.data.astype(np.int64)


# Pairs waiting to be summed at the least, before they are (16 MB at 16 bytes a pair).
SUM_PAIRS = 2**20
# The pairs waiting before a sum, as a multiple of those summed before: 3, or 16 when the
# last sum left more than 7/8 of the pairs it was given (nearly every pair new).
SUM_AFTER, SUM_AFTER_IDLE = 3, 16


class PairSums:
    """Sums of counts by (word, class) pair, kept as the pairs met, never as a (V, C) table.

    Added pairs (their rows, classes, D and T) wait in a list as they come; once they are
    three times as many as the pairs already summed (and at least ``SUM_PAIRS``), all of
    them are summed into one list of distinct pairs again. A sum is scipy's conversion of the pairs
    to a CSR matrix (:func:`sum_pairs`): a counting sort of their rows, each row's classes
    sorted and its repeated pairs added, in time linear in the pairs and rows: no sort of
    every pair's key and no insertion into the pairs summed before. :meth:`result` sums
    them a last time with each row moved to its place in the words' order, which gives
    the count matrices' pairs in their order at once. Memory: a small multiple of the
    distinct pairs (16 bytes each waiting, 24 summed), and each pair is summed O(log)
    times over the whole count. Where nearly every pair is new (thousands of classes), a
    sum leaves as many as it was given and only the last one is of use: summing once the
    waiting pairs are three times those summed, not as many, the fit of 2,000 classes ×
    2 million words summed 5 million pairs on the way, not 16 million. And after a sum
    that left more than 7/8 of the pairs it was given, the next waits for 16 times those
    summed (a waiting pair takes 16 bytes, a summed one 24, so such a sum saves no
    memory): that fit then sums 1 million pairs on the way, the first sum's, and its
    count's main process takes 0.4 s less CPU. The waiting pairs are then at most 16
    times the distinct pairs, should the pairs that come later repeat.

    >>> def two_adds():
    ...     sums = PairSums(2)
    ...     sums.add(np.array([1, 0, 1]), np.array([1, 0, 1]), np.array([1, 2, 1]),
    ...              np.array([4, 5, 6]))
    ...     sums.add(np.array([0]), np.array([1]), np.array([1]), np.array([1]))
    ...     return sums
    >>> [a.tolist() for a in two_adds().result(2)]
    [[0, 2, 3], [0, 1, 1], [2, 1, 2], [5, 1, 10]]
    >>> [a.tolist() for a in two_adds().result(2, order=np.array([1, 0]))]  # row 1 first
    [[0, 1, 3], [1, 0, 1], [2, 2, 1], [10, 5, 1]]
    """

    def __init__(self, n_classes: int):
        self.n_classes = n_classes
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._summed = 0  # the distinct pairs of the last sum (the first part)
        self._waiting = 0
        self._after = SUM_AFTER  # the waiting pairs, in pairs summed, that make a sum
        self._rows = 0  # the rows of the pairs met: at least the largest row + 1

    def add(self, rows: np.ndarray, cols: np.ndarray, docs: np.ndarray, tokens: np.ndarray):
        """Add D and T at the pairs (``rows``, ``cols``) (a pair may come twice)."""
        if not len(rows):
            return
        self._parts.append((rows, cols, docs, tokens))
        self._rows = max(self._rows, int(np.max(rows)) + 1)
        self._waiting += len(rows)
        if self._waiting >= max(SUM_PAIRS, self._after * self._summed):
            given = self._summed + self._waiting
            indptr, cols, docs, tokens = self._sum(self._rows)
            rows = np.repeat(np.arange(self._rows, dtype=cols.dtype), np.diff(indptr))
            self._parts, self._summed, self._waiting = [(rows, cols, docs, tokens)], rows.size, 0
            self._after = SUM_AFTER_IDLE if 8 * rows.size > 7 * given else SUM_AFTER

    def _sum(self, n_rows: int, order: np.ndarray | None = None, place=None):
        """:func:`sum_pairs` of every pair added (which are dropped), the rows first
        moved to where ``order`` (the row of each place) or ``place`` (the place of each
        row) puts them."""
        parts, self._parts = self._parts, []
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return np.zeros(n_rows + 1, dtype=np.int64), empty, empty, empty
        rows, cols, docs, tokens = (np.concatenate(part) for part in zip(*parts))
        del parts
        if order is not None:
            place = np.empty(order.size, dtype=np.int32 if order.size < 2**31 else np.int64)
            place[order] = np.arange(order.size, dtype=place.dtype)
        if place is not None:  # (every place below n_rows: int32 where that fits, as the
            # sum takes them, not 8 bytes an entry then copied to 4)
            rows = place.astype(np.int32 if n_rows < 2**31 else np.int64, copy=False)[rows]
            del place
        return sum_pairs(n_rows, self.n_classes, rows, cols, docs, tokens)

    def renumber(self, rows: np.ndarray) -> None:
        """Move each pair added at row r to row ``rows[r]`` (two rows may become one)."""
        self._parts = [(rows[r], c, d, t) for r, c, d, t in self._parts]
        self._rows = int(rows.max()) + 1 if rows.size else 0

    def result(self, n_rows: int, order: np.ndarray | None = None, place=None):
        """``(indptr, cols, docs, tokens)``: the distinct pairs, by row (in the order
        ``order`` gives, the row of each place, if given; or at ``place``, the place of
        each row, two rows maybe at one place, in ``n_rows`` places) and by class, and
        their sums (int64), with ``indptr`` (n_rows + 1,) where each row's start. The
        sums are spent afterwards."""
        if place is None:
            n_rows = max(n_rows, self._rows)
        return self._sum(n_rows, order, place)


# The pairs :func:`sum_pairs` sums with numpy at the most, where scipy's compiled kernels
# are not loaded yet: numpy's sort costs about 20-50 ns a pair more than their conversion,
# which came to the 0.1-0.2 s of scipy's import at 2 to 10 million pairs (loading the
# kernels from their file takes 3 ms: nbclass.compiled).
NUMPY_SUM_PAIRS = 2**21


def sum_pairs(n_rows: int, n_cols: int, rows, cols, docs, tokens):
    """``(indptr, cols, docs, tokens)`` of the distinct pairs (``rows``, ``cols``) in
    row-major order and the sums of ``docs`` and ``tokens`` at each (int64): the arrays of
    the canonical CSR matrix of the pairs (a pair whose sums are 0 kept, as scipy keeps
    it). Summed by :func:`numpy_sum_pairs` unless scipy's compiled kernels are loaded
    already (a default fit loads them for its choice while the workers count) or the
    pairs are more than ``NUMPY_SUM_PAIRS``: then by scipy's conversion of the pairs to a
    CSR matrix (:func:`scipy_sum_pairs`), which costs less. The same arrays either way.

    >>> [a.tolist() for a in sum_pairs(2, 2, np.array([1, 0, 1]), np.array([1, 0, 1]),
    ...                                np.array([1, 2, 1]), np.array([4, 5, 6]))]
    [[0, 1, 2], [0, 1], [2, 2], [5, 10]]
    """
    if len(docs) > NUMPY_SUM_PAIRS or sparsetools_loaded() or "scipy.sparse" in sys.modules:
        try:
            return scipy_sum_pairs(n_rows, n_cols, rows, cols, docs, tokens)
        except ImportError:  # pragma: no cover - a dependency; numpy gives the same
            pass
    return numpy_sum_pairs(n_rows, n_cols, rows, cols, docs, tokens)


def numpy_sum_pairs(n_rows: int, n_cols: int, rows, cols, docs, tokens):
    """:func:`sum_pairs` by numpy alone: each pair's key j C + c, a sort of the keys and a
    sum of the runs of equal keys. Where the counts are nonnegative and the key's bits and
    those of the largest D and T of a pair fit in 64, one array of uint64 holds the key
    in its high bits and both counts in its low ones, and is sorted in place (no order
    to gather the counts by); else the keys are sorted by ``argsort``. The pairs are
    given in runs already in order (the sums before, each part's words), which the
    stable sort (timsort) takes as they are. ``indptr`` and ``cols`` are int32 where the
    rows, columns and pairs are fewer than 2^31, as scipy's.

    >>> [a.tolist() for a in numpy_sum_pairs(2, 2, np.array([1, 0, 1]), np.array([1, 0, 1]),
    ...                                      np.array([1, 2, 1]), np.array([4, 5, 6]))]
    [[0, 1, 2], [0, 1], [2, 2], [5, 10]]
    """
    docs, tokens = np.asarray(docs), np.asarray(tokens)
    n = docs.size
    index = np.int32 if max(n_rows, n_cols, n) < 2**31 else np.int64
    keys = np.asarray(rows).astype(np.uint64)
    keys *= np.uint64(n_cols)
    keys += np.asarray(cols).astype(np.uint64)
    key_bits = max(1, (n_rows * n_cols - 1).bit_length())
    doc_bits = token_bits = 64
    if n and min(int(docs.min()), int(tokens.min())) >= 0:
        doc_bits = max(1, int(docs.max()).bit_length())
        token_bits = max(1, int(tokens.max()).bit_length())
    if n and key_bits + doc_bits + token_bits <= 64:
        keys <<= np.uint64(doc_bits + token_bits)
        keys |= tokens.astype(np.uint64) << np.uint64(doc_bits)
        keys |= docs.astype(np.uint64)
        keys.sort(kind="stable")
        # (each below 2^63: read as int64 where they are, not copied)
        docs = (keys & np.uint64(2**doc_bits - 1)).view(np.int64)
        keys >>= np.uint64(doc_bits)
        tokens = (keys & np.uint64(2**token_bits - 1)).view(np.int64)
        keys >>= np.uint64(token_bits)
        keys = keys.view(np.int64)
    else:
        order = np.argsort(keys, kind="stable")
        keys = keys[order].view(np.int64)
        docs, tokens = docs[order].astype(np.int64), tokens[order].astype(np.int64)
        del order
    if n:
        first = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        if first.size < n:  # some pair repeats: its runs summed (in int64, as scipy's)
            docs, tokens = np.add.reduceat(docs, first), np.add.reduceat(tokens, first)
            keys = keys[first]
        del first
    rows = keys // n_cols
    indptr = np.zeros(n_rows + 1, dtype=index)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    rows *= n_cols
    keys -= rows  # the classes
    return indptr, keys.astype(index), docs, tokens


def scipy_sum_pairs(n_rows: int, n_cols: int, rows, cols, docs, tokens):
    """:func:`sum_pairs` by scipy's conversion of the pairs to a canonical CSR matrix
    (its compiled kernels, :meth:`nbclass.counting.csr.CSR.from_entries`, without
    importing scipy.sparse): a counting sort of the rows, each row's classes sorted and
    its repeated pairs added, linear in the pairs and rows. Where both sums are
    nonnegative and fit (the whole of ``docs`` below 2^32, of ``tokens`` below 2^31),
    they are added as one int64 (T in the high 32 bits, D in the low): one conversion,
    whose sums are both, exactly."""

    def as_csr(values):
        return CSR.from_entries(rows, cols, values, (n_rows, n_cols))

    docs, tokens = np.asarray(docs), np.asarray(tokens)
    if (
        docs.size
        and min(int(docs.min()), int(tokens.min())) >= 0
        and int(docs.sum(dtype=np.int64)) < 2**32
        and int(tokens.sum(dtype=np.int64)) < 2**31
    ):
        both = tokens.astype(np.int64)
        both <<= 32
        both |= docs
        del docs, tokens
        matrix = as_csr(both)
        del both
        docs = matrix.data & 0xFFFFFFFF
        matrix.data >>= 32
        return matrix.indptr, matrix.indices, docs, matrix.data
    D, T = as_csr(docs.astype(np.int64)), as_csr(tokens.astype(np.int64))
    return D.indptr, D.indices, D.data, T.data


def summed(keys: np.ndarray, *values: np.ndarray) -> tuple[np.ndarray, ...]:
    """The distinct ``keys``, ascending, and the sum of each of ``values`` at each.

    >>> [a.tolist() for a in summed(np.array([5, 2, 5]), np.array([1, 2, 3]))]
    [[2, 5], [2, 4]]
    """
    from ..text.runs import sort_order

    if not keys.size:
        return (keys, *values)
    keys, order = sort_order(keys)
    first = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    sums = tuple(np.add.reduceat(v[order], first) for v in values)
    return (keys[first], *sums)


class KeyedRows:
    """Rows for the words of run tallies, found by their keys with numpy.

    A run tally sends each word it numbers once, with its key
    (:meth:`nbclass.text.runs.RunTally.keys_of`: a function of the word's bytes, so every
    tally gives a word the same key). Placing the words by their keys (a binary search in
    the sorted keys of the words met) costs far less than a dictionary of the words. A
    key that is a word's own bytes is the word; a hashed key found again must name the
    same word, which is compared, and where it does not (two words sharing a hash),
    :meth:`rows` refuses the batch and the caller goes on by name.

    A word pair counted by the numbers of its words comes as the rows of its two words
    (:meth:`pair_rows`) and is given a row of its own, with no look-up: a pair sent by
    two processes has two rows until the count's end, where the pairs are put in order
    by their words' places (:func:`with_pairs`), which puts a pair's two rows side by
    side, and they become one entry there (or when the words go to a dictionary,
    :meth:`distinct`). A pair is named once, in the vocabulary's order
    (:meth:`named_in`). 20 Newsgroups with word pairs has 1.05 million pairs, sent 1.35
    million times by two processes: each window's new pairs were sorted and searched
    among those met, to find the ones another process had sent.

    >>> keyed = KeyedRows()
    >>> keyed.rows(["b", "a"], np.array([2, 1], dtype=np.uint64)).tolist()
    [0, 1]
    >>> keyed.rows(["c", "a"], np.array([3, 1], dtype=np.uint64)).tolist(), keyed.names
    ([2, 1], ['b', 'a', 'c'])
    >>> hashed = np.uint64(1 << 63)
    >>> keyed.rows(["x"], np.array([hashed], dtype=np.uint64)).tolist()
    [3]
    >>> keyed.rows(["y"], np.array([hashed], dtype=np.uint64)) is None  # not "x"
    True
    >>> keyed.pair_rows(np.array([1, 0]), np.array([2, 1])).tolist()
    [4, 5]
    >>> keyed.pair_rows(np.array([0, 1]), np.array([1, 2])).tolist(), keyed.named()[4:]
    ([6, 7], ['a c', 'b a', 'b a', 'a c'])
    >>> keyed.distinct().tolist(), keyed.named()[4:]  # each row's row once the pairs are one
    ([0, 1, 2, 3, 4, 5, 5, 4], ['a c', 'b a'])
    """

    def __init__(self):
        self.names: list[str] = []  # row j's word ("" for a pair not named yet)
        # The words' keys, sorted, with the row of each: in runs of decreasing size,
        # each at least twice the next (a batch's new words are a run, merged with the
        # runs before it while they are not twice its size). A word is merged O(log V)
        # times, and a batch searches O(log V) runs: one sorted array, into which every
        # batch's words were inserted, cost a copy of every word met per batch.
        self._runs: list[tuple[np.ndarray, np.ndarray]] = []
        # The word pairs: (their rows, the rows of their two words), as they came.
        self._pairs: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._named = 0  # the pairs named (the first ones of those listed)

    def rows(self, names: list[str], keys: np.ndarray) -> np.ndarray | None:
        """The row of each of ``names`` (distinct words, of ``keys``), the new ones given
        the next rows in order; None, with nothing added, when a key is shared by two
        of the words or stands for another word met before."""
        from ..text.runs import is_long

        keys = np.asarray(keys, dtype=np.uint64)
        order, ordered = _key_order(keys)
        if (ordered[1:] == ordered[:-1]).any():  # two of the words share a key
            return None
        known = _found(self._runs, ordered)
        hit = known >= 0
        found, found_rows = order[hit], known[hit]
        hashed = is_long(ordered[hit])  # the other keys are their words' bytes
        if hashed.any():
            met = map(self.names.__getitem__, found_rows[hashed].tolist())
            if not all(map(eq, met, map(names.__getitem__, found[hashed].tolist()))):
                return None
        rows, new = self._new_rows(self._runs, order, ordered, known)
        self.names.extend(map(names.__getitem__, new.tolist()))
        return rows

    def pair_rows(self, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        """Rows for the word pairs of the words at rows ``first`` and ``second``: the
        next ones, in order, each pair a row of its own even where it has one already
        (sent by another process), to be named by :meth:`named` or :meth:`named_in`."""
        V = len(self.names)
        rows = np.arange(V, V + len(first), dtype=np.int64)
        if rows.size:
            self.names.extend(repeat("", rows.size))
            kept = np.int32 if V + rows.size < 2**31 else np.int64  # (half the memory)
            self._pairs.append(tuple(np.asarray(a).astype(kept) for a in (rows, first, second)))
        return rows

    def _new_rows(self, runs: list, order, ordered, known) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, new)``: the rows of the keys ``ordered`` (``keys[order]``) of a batch,
        those ``known`` (−1 for new) and the new ones given the next rows in the batch's
        order, and ``new`` the places of the new keys in the batch, ascending; the new
        keys added to ``runs``."""
        from ..text.runs import inserted

        hit = known >= 0
        missed = order[~hit]
        rows = np.empty(order.size, dtype=np.int64)
        rows[order[hit]] = known[hit]
        # The new keys in their order, given the next rows: marked and read back in one
        # pass (their places are distinct), where np.sort(missed) sorted them, twice a
        # batch with the caller's.
        is_new = np.zeros(order.size, dtype=bool)
        is_new[missed] = True
        new = np.flatnonzero(is_new)
        if new.size:
            V = len(self.names)
            rows[new] = np.arange(V, V + new.size)
            run = (ordered[~hit], rows[missed])
            while runs and runs[-1][0].size < 2 * run[0].size:
                last_keys, last_rows = runs.pop()
                at = np.searchsorted(last_keys, run[0])
                run = inserted(at, (last_keys, last_rows), run)
            runs.append(run)
        return rows, new

    def named(self) -> list[str]:
        """:attr:`names`, the word pairs named (their words' names joined by a space)."""
        from ..text.runs import pair_names

        rows, first, second = self.pairs()
        if self._named < rows.size:
            done, self._named = self._named, rows.size
            rows, first, second = rows[done:], first[done:], second[done:]
            for row, name in zip(rows.tolist(), pair_names(self.names, first, second)):
                self.names[row] = name
        return self.names

    def distinct(self) -> np.ndarray | None:
        """Make the word pairs met more than once (sent by more than one process) one
        row each, the rows numbered again in their order; returns the new row of each
        row (a repeated pair's, that of its first row), or None where no pair repeats
        (nothing changed)."""
        rows, first, second = self.pairs()
        if not rows.size:
            return None
        V = len(self.names)
        keys = first.astype(np.int64) * V + second
        _, once, which = np.unique(keys, return_index=True, return_inverse=True)
        if once.size == rows.size:
            return None
        keep = np.ones(V, dtype=bool)
        keep[rows] = False
        keep[rows[once]] = True
        new_row = np.cumsum(keep) - 1
        renumbered = new_row.copy()
        renumbered[rows] = new_row[rows[once][which.reshape(-1)]]  # a pair's first row's
        named = rows[self._named] if self._named < rows.size else V  # the first not named
        once.sort()  # (the pairs are listed in the order of their rows)
        rows, first, second = rows[once], first[once], second[once]
        self._named = int(np.count_nonzero(rows < named))
        self._pairs = [(new_row[rows], new_row[first], new_row[second])]
        self.names = list(compress(self.names, keep.tolist()))
        self._runs = [(keys, new_row[at]) for keys, at in self._runs]
        return renumbered

    def named_in(self, order: np.ndarray, pairs: tuple | None = None) -> tuple[str, ...]:
        """``tuple(self.named()[r] for r in order)``: the names of the rows ``order``
        (each row at most once), a word pair's its words' joined by a space, made in
        that order, the pairs never named in the order of their rows. The words' names
        are encoded once, each followed by a NUL (no name holds one), as one array of
        bytes; a block of places at a time, each place's one or two names (a pair's
        first word's NUL made a space) are gathered from it by numpy into one array of
        bytes, decoded once and split at the NULs.

        20 Newsgroups with pairs, 1.18 million rows in the vocabulary's order: the pairs
        named in the order of their rows (0.25 s of CPU) and then taken in the order
        asked (a gather of a million strings scattered in memory) took 0.41 s; the
        names gathered as Python strings (an array of objects, each name and its NUL or
        space) and joined by ``str.join``, 0.25-0.28 s; gathered as bytes, 0.22-0.24 s (in
        one process, runs in turn).

        >>> keyed = KeyedRows()
        >>> keyed.rows(["b", "é"], np.array([2, 1], dtype=np.uint64)).tolist()
        [0, 1]
        >>> keyed.pair_rows(np.array([1, 0]), np.array([0, 0])).tolist()
        [2, 3]
        >>> keyed.named_in(np.array([1, 2, 0, 3]))
        ('é', 'é b', 'b', 'b b')
        """
        rows, first, second = self.pairs() if pairs is None else pairs
        names = self.names
        V = len(names)
        if not order.size:
            return ()
        index = np.int32 if V < 2**31 else np.int64
        # Each row's word (its place among the words' rows), or -1 - its pair (its place
        # among the pairs' rows); and each pair's two words.
        code = np.zeros(V, dtype=index)
        code[rows] = -1
        words = np.flatnonzero(code == 0)  # the words' rows (a pair's name may be "")
        code[words] = np.arange(words.size, dtype=index)
        code[rows] = np.arange(-1, -1 - rows.size, -1, dtype=index)
        first, second = code[first], code[second]
        # Each word's name and a NUL, as bytes (any str: surrogates pass), where each
        # starts and its length with the NUL.
        text = "\x00".join(map(names.__getitem__, words.tolist())) + "\x00"
        held = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
        del text, words
        at = np.int32 if held.size < 2**31 else np.int64  # (places in the bytes)
        size = np.flatnonzero(held == 0).astype(at)
        size += 1  # where each ends, its NUL included
        start = np.empty_like(size)
        start[:1] = 0
        start[1:] = size[:-1]
        size -= start

        def block(low: int) -> list[str]:
            which = code[order[low : low + _NAMED_BLOCK]]
            paired = np.flatnonzero(which < 0)
            # The names at each place (a word's; a pair's first and second word's) in
            # turn: the place's last ends at ends[place].
            ends = np.ones(which.size, dtype=index)
            ends[paired] = 2
            np.cumsum(ends, out=ends)
            pieces = np.empty(int(ends[-1]), dtype=index)
            ends -= 1
            pieces[ends] = which  # (a pair's: below)
            ends = ends[paired]
            which = which[paired]
            np.negative(which, out=which)
            which -= 1
            pieces[ends] = second[which]
            ends -= 1
            pieces[ends] = first[which]
            # Each piece's bytes, by a gather: byte i of piece k is at start[k] + i.
            lengths = size[pieces]
            stops = np.cumsum(lengths)
            shift = start[pieces]
            shift -= stops
            shift += lengths  # each piece's start less its place in the result
            taken = np.repeat(shift, lengths)
            taken += np.arange(taken.size, dtype=at)
            joined = held[taken]
            del taken
            joined[stops[ends] - 1] = 32  # a pair's first word's NUL: a space
            found = joined.tobytes().decode("utf-8", "surrogatepass").split("\x00")
            found.pop()  # (after the last NUL)
            return found

        # A block at a time (the bytes gathered take 4-5 times their size in indices),
        # into one tuple: no list of every name.
        return tuple(chain.from_iterable(map(block, range(0, order.size, _NAMED_BLOCK))))

    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(rows, first, second)`` of the word pairs placed by :meth:`pair_rows`: each
        pair's row and those of its two words, in the order of their rows."""
        if not self._pairs:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty
        if len(self._pairs) > 1:
            self._pairs = [tuple(map(np.concatenate, zip(*self._pairs)))]
        return self._pairs[0]

    def in_order(self) -> np.ndarray | None:
        """The rows of the words (not the word pairs) in the order of their keys, which
        is their words' order when no key is a hash (:func:`nbclass.text.runs.run_keys`):
        the runs merged by numpy, not millions of words compared by Python. None when a
        key is a hash.

        >>> keyed = KeyedRows()
        >>> _ = keyed.rows(["b", "a"], np.array([2, 1], dtype=np.uint64))
        >>> keyed.in_order().tolist()
        [1, 0]
        >>> _ = keyed.rows(["a_long_word"], np.array([1 << 63], dtype=np.uint64))
        >>> keyed.in_order() is None
        True
        """
        from ..text.runs import is_long

        if not self._runs:
            return np.zeros(0, dtype=np.int64)
        keys = np.concatenate([keys for keys, _ in self._runs])
        if is_long(keys).any():
            return None
        rows = np.concatenate([rows for _, rows in self._runs])
        return rows[np.argsort(keys, kind="stable")]  # sorted runs: a merge sort merges them


def _key_order(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, keys[order])``, ``order`` sorting ``keys``: the binary searches of sorted
    keys take far less time. A run tally sends its words in order, and a key that is no
    hash is its word's bytes, in that order: such keys come sorted, and are not sorted
    again (the argsort of each batch took 0.3 s of the main process at 2,000,000 words).
    """
    if (keys[1:] >= keys[:-1]).all():
        return np.arange(keys.size), keys
    order = np.argsort(keys)
    return order, keys[order]


def _found(runs: list[tuple[np.ndarray, np.ndarray]], ordered: np.ndarray) -> np.ndarray:
    """The row of each of the keys ``ordered`` (sorted) in the sorted ``runs`` of (keys,
    rows), −1 for a key in none."""
    known = np.full(ordered.size, -1, dtype=np.int64)
    for known_keys, known_rows in runs:
        at = np.minimum(np.searchsorted(known_keys, ordered), known_keys.size - 1)
        there = np.flatnonzero(known_keys[at] == ordered)
        known[there] = known_rows[at[there]]
    return known


def with_pairs(words: np.ndarray, pairs: tuple, V: int) -> tuple[np.ndarray, np.ndarray]:
    """``(entries, place)``: the rows ``words`` (the words' rows, in their names' order)
    with the rows of the word ``pairs`` (``(rows, first, second)``,
    :meth:`KeyedRows.pairs`) among them: each pair after its first word and the pairs of
    that word before it, by their second words' order, a pair of two rows or more (sent
    by two processes) once, by one of them; and the place of each of the ``V`` rows
    among them (a pair's rows, its place). That is the names' order when no word's name
    holds a character at or below the space (a pair's name is its words' joined by
    one); the caller checks it.

    >>> pairs = (np.array([2, 3, 4]), np.array([0, 0, 0]), np.array([0, 1, 1]))
    >>> entries, place = with_pairs(np.array([1, 0]), pairs, 5)  # "b b", "b a", "b a"
    >>> entries[:2].tolist(), entries[2] in (3, 4), int(entries[3]), place.tolist()  # b, a
    ([1, 0], True, 2, [1, 0, 3, 2, 2])
    """
    rows, first, second = pairs
    W = words.size + 1
    place = np.zeros(V, dtype=np.int64)
    place[words] = np.arange(1, W)
    # A word's key is (its place) W, a pair's (its first word's) W + its second word's:
    # below W^2, one sort of 64-bit integers (np.lexsort of the two took twice as long);
    # a pair's rows share a key. A stable sort (timsort) finds the runs: the words' keys
    # are one, ascending, and a worker's pairs come in runs of its windows, whose words
    # come sorted (20 Newsgroups' 1.18 million keys: 0.02 s, quicksort's 0.08 s).
    keys = np.empty(words.size + rows.size, dtype=np.int64)
    np.multiply(np.arange(1, W), W, out=keys[: words.size])
    of_pairs = keys[words.size :]
    np.take(place, first, out=of_pairs)
    of_pairs *= W
    of_pairs += place[second]
    del of_pairs
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    entries = np.concatenate((words, rows))[order]
    del order
    new = np.empty(keys.size, dtype=bool)  # a key's first place
    new[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=new[1:])
    del keys
    place[entries] = np.cumsum(new) - 1
    return entries[new], place


class CountAccumulator:
    """Adds up the counts of batches of documents over a vocabulary that grows.

    Memory is proportional to the vocabulary and to the distinct (word, class) pairs met
    (:class:`PairSums`), not to the number of documents nor to words × classes: each
    batch is counted and dropped.

    Examples
    --------
    >>> from nbclass.text.vectorizer import count_matrix
    >>> acc = CountAccumulator(["ham", "spam"])
    >>> acc.add(count_matrix([["win", "cash"], ["hi"]], acc.vocabulary), [1, 0])
    >>> counts = acc.result()
    >>> counts.vocabulary, as_table(counts.token_count).tolist()
    (('cash', 'hi', 'win'), [[0, 1], [1, 0], [0, 1]])
    """

    def __init__(self, classes: Sequence[str]):
        self.classes = tuple(classes)
        self._vocabulary = GrowingVocabulary()
        # The run tallies' words placed by their keys while every batch came with them
        # (:class:`KeyedRows`); None once the words are in the dictionary instead.
        self._keyed: KeyedRows | None = KeyedRows()
        # Row j's word, once the words go through the dictionary (:meth:`_names`).
        self._by_row: list[str] = []
        self._class_count = np.zeros(len(self.classes), dtype=np.int64)
        self._pairs = PairSums(len(self.classes))
        self._origins: dict = {}  # origin -> the row of each word number of a run tally
        # The sample's documents' rows the tallies kept (tally.tally_paths' marks), by
        # row; once the vocabulary is sorted, :attr:`sampled` by column, those of the
        # documents of the sample alone (each mark's place in it, set before the result).
        self._sampled: list = []
        self.sample_places: np.ndarray | None = None
        self.sampled: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def vocabulary(self) -> GrowingVocabulary:
        """``word -> row`` of the words met so far; words added to it get the next rows."""
        if self._keyed is not None:  # from now on every word goes through the dictionary
            keyed, self._keyed = self._keyed, None
            renumbered = keyed.distinct()  # a pair sent twice: one row (one name) from now
            if renumbered is not None:
                self._pairs.renumber(renumbered)
                for known in self._origins.values():  # where they are: a caller holds one
                    met = known >= 0
                    known[met] = renumbered[known[met]]
                self._sampled = [
                    (counted, marks, renumbered[rows], values)
                    for counted, marks, rows, values in self._sampled
                ]  # fmt: skip
            names = keyed.named()
            self._vocabulary.update(zip(names, range(len(names))))
        return self._vocabulary

    def add(self, X: sp.csr_matrix, labels: Sequence[int]) -> None:
        """Add a batch: ``X`` (n, V_now) counted over ``self.vocabulary``, and its labels."""
        labels = np.asarray(labels, dtype=np.int64)
        self._class_count += np.bincount(labels, minlength=len(self.classes))
        rows, cols, docs, tokens = count_pairs(X, labels, len(self.classes))
        self._pairs.add(rows, cols, docs, tokens)

    def add_tally(
        self, tally: Tally, entries: list | None = None, seen: dict | None = None
    ) -> None:
        """Add the per-class counts of a batch made by :func:`tally` (maybe elsewhere).

        A tally with ledger entries (a fourth item) adds them to ``entries`` (its
        ``extend``: a list, or a :class:`nbclass.counting.ledger.EntryBook`); one with
        words sampled per hashed column (a fifth) merges them into ``seen``.
        """
        self.add_packed(pack(tally), entries, seen)

    def add_packed(self, packed: tuple, entries: list | None = None, seen: dict | None = None):
        """Add a tally in the compact form of :func:`nbclass.counting.tally.pack`.

        One dictionary look-up per word of the tally places its row (per new word, for
        a run tally's words sent by their numbers: the rows of an origin's numbers are
        kept); its (word, class) pairs are then added to the pair sums by numpy.
        """
        class_count, words, lengths, rows, doc_counts, token_counts = packed[:6]
        if entries is not None:
            entries.extend(packed[6])
        if seen is not None and len(packed) > 7 and packed[7]:
            from ..text.hashing import add_representative

            for column, sample in packed[7].items():
                for key, word in sample:
                    add_representative(seen, column, key, word)
        self._class_count += np.asarray(class_count, dtype=np.int64)
        if isinstance(words, tuple):  # a run tally's words by its own numbers (tally.pack)
            origin, new_words, new_ids, others = words[:4]
            new_keys = words[4] if len(words) > 4 else None
            pair_ids, first, second = words[6] if len(words) > 6 else ((),) * 3
            known = self._origins.get(origin, np.zeros(0, dtype=np.int64))
            tops = [int(np.max(ids)) + 1 for ids in (new_ids, pair_ids) if len(ids)]
            if tops:
                need = max(tops)
                if known.size < need:  # room for the new numbers, doubling
                    grown = np.full(max(need, 2 * known.size), -1, dtype=np.int64)
                    grown[: known.size] = known
                    known = grown
                # (kept before the words are placed: should they go to the dictionary,
                # the rows it holds are numbered again where it is, vocabulary)
                self._origins[origin] = known
                if len(new_ids):
                    known[np.asarray(new_ids)] = self._keyed_rows(new_words, new_keys)
                if len(pair_ids):  # their words' numbers are known: numbered before them
                    known[np.asarray(pair_ids)] = self._pair_rows(known[first], known[second])
            other_rows = self._rows(others)
            # (as a rule no other word: the origin's rows as they are, not a copy of
            # every word's row a window)
            at = np.concatenate((other_rows, known)) if other_rows.size else known
            if len(words) > 5 and words[5] is not None:  # the sample's documents' rows
                counted, marks, rows_of, values = words[5]
                self._sampled.append((counted, marks, at[rows_of], values))
        else:
            at = self._rows(words)
        self._add_cells(at, lengths, rows, doc_counts, token_counts)

    def _keyed_rows(self, words: str, keys: np.ndarray | None) -> np.ndarray:
        """The row of each of a run tally's new ``words`` (NUL-joined, distinct), placed
        by their ``keys`` while no two words have shared one, else by name."""
        if self._keyed is not None and keys is not None:
            rows = self._keyed.rows(words.split("\x00") if words else [], keys)
            if rows is not None:
                return rows
        return self._rows(words)

    def _pair_rows(self, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        """The row of each word pair (distinct) of the words at rows ``first`` and
        ``second``: a new row each, made one with its other rows and named at the end;
        by name once the words go through the dictionary."""
        if self._keyed is not None:
            return self._keyed.pair_rows(first, second)
        from ..text.runs import pair_names

        # The names of the batch's own words only are encoded (every name of the
        # vocabulary, listed and encoded each window, made the count O(V) a window).
        rows, at = np.unique(np.concatenate((first, second)), return_inverse=True)
        names = list(map(self._names().__getitem__, rows.tolist()))
        return self._rows("\x00".join(pair_names(names, at[: first.size], at[first.size :])))

    def _names(self) -> list[str]:
        """Row j's word, for every row of the dictionary: the words it gained since the
        last call appended, read from its end, not all of them listed again. (A
        GrowingVocabulary numbers its words in the order they were added, and this
        accumulator only ever adds words to it, once it has any.)"""
        vocabulary, names = self.vocabulary, self._by_row
        if len(names) < len(vocabulary):
            added = list(islice(reversed(vocabulary), len(vocabulary) - len(names)))
            added.reverse()
            names += added
        return names

    def _rows(self, words: str) -> np.ndarray:
        """The row of each of ``words`` (NUL-joined), the new ones added in order."""
        if not words:
            return np.zeros(0, dtype=np.int64)
        words = words.split("\x00")
        vocabulary = self.vocabulary
        at = None
        if not vocabulary:  # the first tally: its words are the rows, in order
            vocabulary.update(zip(words, range(len(words))))
            if len(vocabulary) == len(words):
                at = np.arange(len(words), dtype=np.int64)
            else:  # a word listed twice: the rows as below
                vocabulary.clear()
        if at is None:
            # One look-up per word: known words get their row, new words -1 and then the
            # next rows, in order (a word listed twice gets one row).
            at = np.fromiter(
                map(vocabulary.get, words, repeat(-1)), dtype=np.int64, count=len(words)
            )
        new = np.flatnonzero(at < 0)
        if new.size:
            V = len(vocabulary)
            added = dict.fromkeys(map(words.__getitem__, new.tolist()))
            vocabulary.update(zip(added, range(V, V + len(added))))
            if len(added) == new.size:
                at[new] = np.arange(V, V + new.size)
            else:
                found = map(vocabulary.__getitem__, map(words.__getitem__, new.tolist()))
                at[new] = np.fromiter(found, dtype=np.int64, count=new.size)
        return at

    def _add_cells(self, at, lengths, rows, doc_counts, token_counts) -> None:
        """Add a packed tally's counts, its words being at rows ``at``."""
        if not len(rows):
            return
        C = len(self.classes)
        column = np.repeat(np.arange(C, dtype=np.int32), np.asarray(lengths, dtype=np.int64))
        at = at[np.asarray(rows)]  # a pair twice when a word was listed twice: both added
        if at.max() < 2**31:
            at = at.astype(np.int32)  # half the memory for each pair waiting
        self._pairs.add(at, column, doc_counts, token_counts)

    def result(self) -> Counts:
        """The counts, with the vocabulary sorted; the accumulator is spent afterwards.

        The pairs are summed a last time with each row moved to its word's place
        (:meth:`PairSums.result`), which gives them in the count matrices' order. Where
        the words' keys give that order (:meth:`KeyedRows.in_order`; word pairs placed by
        their words' places, :func:`with_pairs`), a thread sums
        them (numpy and scipy let go of the interpreter's lock) while this one makes the
        vocabulary and checks its order: the count's last work on two cores, the
        workers being done.
        """
        # Row j holds the j-th word added (in the keyed rows' names, or GrowingVocabulary);
        # the word pairs' names are "" there: made in the vocabulary's order below.
        keyed = self._keyed
        by_row = keyed.names if keyed is not None else self._names()
        by_word = keyed.in_order() if keyed is not None else None
        pairs, V = self._pairs, len(by_row)
        word_pairs = keyed.pairs() if keyed is not None else None
        by_words = word_pairs is not None and word_pairs[0].size > 0
        place = None  # each row's place in by_word's order (a pair's rows: one place)
        if by_words:  # the pairs placed by their words
            if by_word is None:  # the words (not the pairs) sorted by name
                words = np.ones(V, dtype=bool)
                words[word_pairs[0]] = False
                by_word = np.array(
                    sorted(np.flatnonzero(words).tolist(), key=by_row.__getitem__), np.int64
                )
            by_word, place = with_pairs(by_word, word_pairs, V)  # checked below
        elif by_word is not None:
            place = np.empty(V, dtype=np.int64)
            place[by_word] = np.arange(V)
        self._pairs = self._vocabulary = self._keyed = self._origins = self._by_row = None
        summing = words = None
        if by_word is not None:  # the words sorted by their keys (2 million: 0.05 s,
            n = by_word.size  # sorted(): 0.5 s), the entries
            if by_words:  # named first: the sum's memory then reuses the naming's
                words = keyed.named_in(by_word, word_pairs)
                summing = _in_thread(pairs.result, n, None, place)
                ordered = _above_space(by_row) or _strictly_increasing(words)
            else:
                summing = _in_thread(pairs.result, n, None, place)
                words = _taken(by_row, by_word)
                ordered = _strictly_increasing(words)
            pairs = None
            if not ordered:  # an n-gram's joins, made spaces: sorted by name
                names = keyed.named() if by_words else by_row
                names = _taken(names, by_word)  # each place's
                order = sorted(range(n), key=names.__getitem__)
                words = tuple(map(names.__getitem__, order))
                del names
                order = np.array(order, dtype=np.int64)  # the place of each word, sorted
                # summed in the keys' order: once more, in the words'
                word_ptr, cols, docs, tokens = summing()
                summing = None
                pairs = PairSums(len(self.classes))
                pairs.add(np.repeat(np.arange(n), np.diff(word_ptr)), cols, docs, tokens)
                rank = np.empty(n, dtype=np.int64)
                rank[order] = np.arange(n)
                place = rank[place]  # each row's column
                del rank
            else:
                order = None
        else:  # every word by name
            order = sorted(range(V), key=by_row.__getitem__)
            words = tuple(map(by_row.__getitem__, order))
            order = np.array(order, dtype=np.int64)  # the row of each word, sorted
            place = np.empty(V, dtype=np.int64)
            place[order] = np.arange(V)
        del keyed, word_pairs, by_row, by_word
        if self._sampled:
            self.sampled = _sampled_by_column(self._sampled, place, len(words), self.sample_places)
        self._sampled = []
        del place
        summed = summing() if summing is not None else pairs.result(len(words), order)
        word_ptr, cols, docs, tokens = summed
        del summed, summing, pairs, order
        counts = counts_of_pairs(
            self.classes, words, self._class_count.copy(),
            None, cols, docs, tokens, word_ptr=word_ptr,
        )  # fmt: skip
        vars(counts)["words_in_order"] = True  # compared above (a cached property's value)
        return counts


_NAMED_BLOCK = 1 << 16  # entries named at a time (KeyedRows.named_in)


def _taken(items: Sequence, rows: np.ndarray, block: int = 1 << 16) -> tuple:
    """``tuple(items[r] for r in rows)``, without a list of every row as a Python int at
    once (43 MB at 20 Newsgroups' 1.2 million entries with pairs, while the last sum
    runs in another thread).

    >>> _taken("abc", np.array([2, 0]), block=1)
    ('c', 'a')
    """
    parts = (rows[at : at + block].tolist() for at in range(0, rows.size, block))
    return tuple(chain.from_iterable(map(items.__getitem__, part) for part in parts))


def _in_thread(function: Callable, *args) -> Callable[[], object]:
    """Start ``function(*args)`` in a thread; return a function that waits for its
    result (raising its error, if it raised one)."""
    import threading

    done: list = []

    def run() -> None:
        try:
            done.append((True, function(*args)))
        except BaseException as exc:  # MemoryError included: raised where it is waited for
            done.append((False, exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def wait():
        thread.join()
        succeeded, value = done.pop()
        if not succeeded:
            raise value
        return value

    return wait


def _sampled_by_column(parts: list, column: np.ndarray, V: int, places: np.ndarray) -> tuple:
    """``(counted, places, columns, counts)`` of the sample's rows ``parts`` (counted marks,
    and (mark, row, count) triples by the accumulator's rows), the marks made the
    documents' places in the sample (``places``: each mark's, −1 for a document not in
    it, whose rows are left out) and the rows columns of
    the sorted vocabulary of ``V`` words (``column``: each row's), each (place, column)
    once and in that order (a document's counts at two rows of one column summed).
    ``counted``: the places of the documents counted, in no order.

    Put in that order by two counting sorts of scipy's compiled kernels (without
    importing scipy.sparse), each linear in the entries: by column (``coo_tocsr`` of
    the entries with their columns as rows), then by place (``csr_tocsc`` of that,
    which takes each column's entries in turn, so each place's come in its columns'
    order), and the counts at one (place, column) summed (``csr_sum_duplicates``): the
    arrays of the canonical CSR matrix of the entries, which
    :meth:`nbclass.counting.csr.CSR.from_entries` made by a counting sort by place and
    then a sort of each place's columns (``csr_sort_indices``). 20 Newsgroups with
    --ngram-range 1,2 (2.57 million entries of 6,000 documents over 1.2 million
    columns): 0.073-0.09 s, against 0.10-0.14 s; movie reviews' 1.5 million entries
    0.035-0.042 s against 0.055-0.064 (CPU, 5 calls of each on the same entries, twice in
    turn). The places are the sample's own order; the rows of the documents read but not
    sampled (5 % more) go to a last place of their own, cut off after the sorts (left out
    first, the places, rows and counts were copied once more: 0.074-0.26 s against
    0.060-0.085 at 20 Newsgroups', where fresh memory faults in). Summed counts are of
    the type ``np.add.reduceat`` gives them."""
    counted, marks, rows, counts = (np.concatenate(p) for p in zip(*parts))
    counted = places[counted]
    counted = counted[counted >= 0]
    n, nnz = (int(places.max()) + 1 if places.size else 0), counts.size
    index = np.int32 if max(n + 1, V, nnz) < 2**31 else np.int64  # (as scipy's)
    # Each entry's place, a document not in the sample's the last row (n), dropped after
    # the sorts (where they were left out first: three more copies of every entry).
    place = places.astype(index)
    place[place < 0] = n
    marks = place[marks]
    columns = column[rows].astype(index, copy=False)
    del rows, place
    kernels = sparsetools()
    starts = np.empty(V + 1, dtype=index)  # by column: where each column's entries start
    at = np.empty(nnz, dtype=index)  # and each entry's place
    values = np.empty_like(counts)
    kernels.coo_tocsr(V, n + 1, nnz, columns, marks, counts, starts, at, values)
    del columns, marks
    indptr, indices = np.empty(n + 2, dtype=index), np.empty(nnz, dtype=index)
    data = np.empty_like(values)
    kernels.csr_tocsc(V, n + 1, starts, at, values, indptr, indices, data)
    del starts, at, values
    inside = int(indptr[n])
    if not inside:
        return counted, places[:0], places[:0], counts[:0]
    matrix = CSR(data[:inside], indices[:inside], indptr[: n + 1], (n, V), True)
    del data, indices, indptr
    matrix.sum_duplicates()
    summed = matrix.data
    if summed.size < inside:
        summed = summed.astype(np.add.reduceat(summed[:1], [0]).dtype, copy=False)
    places = np.repeat(np.arange(n, dtype=places.dtype), np.diff(matrix.indptr))
    return counted, places, matrix.indices.astype(column.dtype), summed


def merge(*parts: Counts) -> Counts:
    """The counts of the union of the corpora that gave ``parts``: a sum, word by word.

    Classes and words missing from a part count zero there. Only the nonzero pairs of the
    parts are added (:class:`PairSums`).
    """
    classes = tuple(sorted(set().union(*(p.classes for p in parts))))
    vocabulary = tuple(sorted(set().union(*(p.vocabulary for p in parts))))
    class_at = {c: i for i, c in enumerate(classes)}
    word_at = {w: j for j, w in enumerate(vocabulary)}
    C = len(classes)
    class_count = np.zeros(C, dtype=np.int64)
    sums = PairSums(C)
    for part in parts:
        cols = np.array([class_at[c] for c in part.classes], dtype=np.int64)
        rows = np.array([word_at[w] for w in part.vocabulary], dtype=np.int64)
        class_count[cols] += part.class_count
        r, c, d, t = part.pairs()
        sums.add(rows[r], cols[c], d, t)
    word_ptr, cols, docs, tokens = sums.result(len(vocabulary))
    return counts_of_pairs(
        classes, vocabulary, class_count, None, cols, docs, tokens, word_ptr=word_ptr
    )


def subtract(total: Counts, part: Counts) -> Counts:
    """The counts of the corpus ``total`` was fitted on, without the documents of ``part``.

    The inverse of :func:`merge`: ``subtract(merge(a, b), b)`` equals ``a``. Words and
    classes left with no count are dropped, as a fit of the remaining documents would
    never have seen them. Only the nonzero pairs are touched.

    Raises
    ------
    ValueError
        Naming the first problem when ``part`` cannot have been learned by ``total``: a
        class or word ``total`` never saw, or a count that would become negative or
        impossible (a word in more documents of a class than the class has).
    """
    class_at = {c: i for i, c in enumerate(total.classes)}
    word_at = {w: j for j, w in enumerate(total.vocabulary)}
    unknown = [c for c in part.classes if c not in class_at]
    if unknown:
        raise ValueError(f"class {unknown[0]!r} is not in the model")
    unknown = [w for w in part.vocabulary if w not in word_at]
    if unknown:
        raise ValueError(f"the word {unknown[0]!r} is not in the model")
    C = len(total.classes)
    cols = np.array([class_at[c] for c in part.classes], dtype=np.int64)
    rows = np.array([word_at[w] for w in part.vocabulary], dtype=np.int64)
    class_count = total.class_count.copy()
    class_count[cols] -= part.class_count
    r, c, docs, tokens = total.pairs()
    keys = r.astype(np.int64) * C + c  # ascending (row-major pairs)
    docs, tokens = docs.copy(), tokens.copy()
    pr, pc, pd, pt = part.pairs()
    taken = rows[pr] * C + cols[pc]
    at = np.minimum(np.searchsorted(keys, taken), max(keys.size - 1, 0))
    if taken.size and not (keys.size and np.array_equal(keys[at], taken)):
        raise ValueError(
            "the model never learned these documents: the remainder would have negative counts"
        )
    np.subtract.at(docs, at, pd)
    np.subtract.at(tokens, at, pt)
    rest = counts_of_pairs(
        total.classes, total.vocabulary, class_count, keys // C, keys % C, docs, tokens
    )
    problems = rest.problems()
    if problems:
        raise ValueError(
            f"the model never learned these documents: the remainder would have {problems[0]}"
        )
    return rest.pruned()


def default_jobs(asked: int | None = None) -> int:
    """Worker processes (or threads) to use: ``asked`` (``-j``, already in its range) if
    given, else ``NBCLASS_JOBS`` if set, else every usable core; never more than the
    usable cores (:func:`nbclass.ranges.usable_cores`): more processes than cores finish
    no sooner and each takes memory of its own. Those who fork also take no more than
    the parts of work they have."""
    cores = usable_cores()
    if asked is None:
        asked = environment("NBCLASS_JOBS")
    return cores if asked is None else min(asked, cores)


def count_texts(
    texts: Sequence[str],
    labels: Sequence[int],
    classes: Sequence[str],
    tokenizer: TokenizerSettings,
) -> Counts:
    """The counts of documents already in memory, as :func:`count_corpus` counts files.

    ``texts[i]`` is a document of class ``classes[labels[i]]``; every class of
    ``classes`` is kept, with N_c = 0 when no text has it.
    """
    tokenize = make_tokenizer(tokenizer)
    accumulator = CountAccumulator(classes)
    for start in range(0, len(texts), PART_SIZE):
        part = slice(start, start + PART_SIZE)
        accumulator.add_tally(
            tally((tokenize(t) for t in texts[part]), labels[part], len(classes))
        )
    return accumulator.result()


def count_corpus(
    paths: Sequence[str],
    labels: Sequence[int],
    classes: Sequence[str],
    tokenizer: TokenizerSettings,
    jobs: int = 1,
    on_progress: Callable[[int, int], None] | None = None,
    entries: list | None = None,
    seen: dict | None = None,
    cluster: Callable[..., tuple] | None = None,
    policy: ReadPolicy = DEFAULT_POLICY,
    log: ReadLog | None = None,
    meanwhile: Callable[[], None] | None = None,
    sample: SampleRows | None = None,
) -> Counts:
    """Read, tokenize and count documents, on ``jobs`` processes or a Dask cluster.

    Documents are read under ``policy`` (:mod:`nbclass.reading.policy`); those it skips are
    recorded in ``log`` (and count for nothing).

    When ``seen`` is a dict and the tokenizer hashes, the words sampled per column
    (:mod:`nbclass.text.hashing`) are merged into it.

    When ``entries`` is given (a list, or an :class:`nbclass.counting.ledger.EntryBook`,
    which keeps them as arrays), each document's ledger entry ``(digest, class index,
    Counter)`` is added to it by its ``extend``, a window at a time, in no particular order.

    The documents are tallied (:mod:`nbclass.counting.tally`: by runs with numpy, or in plain
    Python), part after part of consecutive documents, into one tally until it holds
    ``FLUSH_ENTRIES`` (word, class) pairs; that tally is packed and added to the count
    arrays, and the next one starts (a process's run tally goes on with the same
    numbers for its words, which the count arrays' side learns once). With ``jobs`` > 1
    and at least ``PARALLEL_MIN_BYTES`` of text, ``jobs`` forked worker processes tally,
    each taking the next part when free and sending back each packed tally. Counts are
    integers, so the result is the same, bit for bit, for any number of jobs. Memory is
    bounded by the vocabulary and ``FLUSH_ENTRIES``, not by the number of documents.
    ``on_progress(start, end)`` is called as the documents ``paths[start:end]`` are
    counted (every document once).

    With ``cluster``, a function that counts the documents elsewhere and returns their
    packed tally, ``cluster(paths, labels, classes, tokenizer, ledger, policy,
    on_progress)``, the documents are counted by it instead, whatever the size of the
    corpus: :func:`nbclass.cluster.remote.counter` gives one that tallies parts of at most
    ``PART_SIZE`` documents on a Dask cluster's workers and sums them there. The counting
    layer takes the function rather than importing the cluster layer above it.

    ``meanwhile``: work for this process while worker processes count (the default
    fit's choice imports scipy with it; the counts need no scipy), run by a thread
    started once they are forked (never before: a fork would copy a thread's
    half-done import), and waited for before this returns; without workers, it runs
    before the count (the pairs' sums then take scipy's compiled kernels that a default
    fit's choice loads, :func:`sum_pairs`). It must not raise (its errors are its own to
    keep for later).

    ``sample`` (:class:`SampleRows`; not with ``entries`` or ``cluster``): the counting
    processes hash every document they read, and keep the rows of those that may be in
    the sample as they count them (where they count by runs); ``sample.offer`` is given
    each window's indices and digests as it is added, ``sample.chosen`` then names the
    sample, and ``sample`` is given the rows kept of its documents.
    """
    accumulator = CountAccumulator(classes)
    n, C = len(paths), len(classes)
    ledger = entries is not None
    size = max(1, min(PART_SIZE, -(-n // (max(1, jobs) * 8))))
    if cluster is not None:  # counted and summed elsewhere: one table comes back
        packed = cluster(paths, labels, classes, tokenizer, ledger, policy, on_progress)
        accumulator.add_packed(packed, entries, seen)
        if log is not None:
            log.add(packed[8])
        return accumulator.result()
    share = _Share(paths, labels, C, tokenizer, ledger, size, policy)
    if sample is not None and not ledger:
        share.marks = DigestMarks(sample.bounds)
    if jobs <= 1 or n <= size or not has_bytes(paths, PARALLEL_MIN_BYTES):
        if meanwhile is not None:  # no worker to wait for: first, so that the kernels it
            meanwhile()  # loads (a default fit's) sum the pairs as they come
            meanwhile = None
        packs = share.tally(on_progress)
    else:
        parts = -(-n // size)  # never more workers than parts to count
        packs = share.tally_in_workers(min(jobs, parts), on_progress, meanwhile)
        meanwhile = None
    for packed in packs:
        accumulator.add_packed(packed, entries, seen)
        if log is not None:
            log.add(packed[8])
        if share.marks is not None:  # the window's documents, hashed (_Share.tally_window)
            sample.offer(*packed[9])
    if meanwhile is not None:
        meanwhile()
    if share.marks is not None:  # every document offered: the sample is known
        chosen = np.asarray(sample.chosen(), dtype=np.int64)
        accumulator.sample_places = np.full(n, -1, dtype=np.int64)
        accumulator.sample_places[chosen] = np.arange(chosen.size)
    counts = accumulator.result()
    if sample is not None and accumulator.sampled is not None:
        sample.counted, *sample.rows = accumulator.sampled
    return counts


@dataclass
class SampleRows:
    """The documents :func:`count_corpus` hashes for the sample (:mod:`nbclass.counting.sketch`),
    and the rows it keeps of those that may be in it as it counts them.

    Attributes
    ----------
    bounds : list of int, one per class
        A document's rows are kept when the first 8 bytes of its SHA-256, read as a
        big-endian number, are below its class's bound (:func:`nbclass.counting.sketch.bounds`).
    offer : callable
        ``offer(indices, digests)``: the indices among the paths of the documents of a
        window, and their digests joined (32 bytes each), as each window is added.
    chosen : callable
        ``chosen()``, once every document is offered: the indices among the paths of
        the sample's documents, in the sample's order (a document's place in it).
    counted : ndarray of shape (k,), int64
        The places in the sample of its documents whose rows were kept (in no order; a
        document counted in Python by a tokenizer without runs is not among them), once
        counted.
    rows : list of three ndarrays
        ``(places, columns, counts)``: the nonzero counts of those documents over the
        sorted vocabulary of the count, in (place, column) order.
    """

    bounds: list
    offer: Callable[[list, bytes], None]
    chosen: Callable[[], Sequence[int]]
    counted: np.ndarray | None = None
    rows: list | None = None


class _Share:
    """The parts of a corpus, handed out one at a time to whichever process is free.

    ``next_part`` and ``done`` are shared integers (``multiprocessing.Value``) when
    worker processes take part; the workers inherit this object when they are forked
    (or receive it pickled where they are spawned).
    """

    def __init__(self, paths, labels, n_classes, tokenizer, ledger, size, policy):
        self.paths, self.labels, self.n_classes = paths, labels, n_classes
        self.tokenizer, self.ledger, self.size = tokenizer, ledger, size
        self.policy = policy
        self.next_part = self.done = None  # shared integers, once workers take part
        self._next = 0  # without workers
        self._tokenize = self._splitter = None
        self._runs = self._origin = None  # this process's run tally, once it has one
        self.marks = None  # a DigestMarks, when the documents are hashed (SampleRows)

    def _take(self) -> int:
        """The start of the next part nobody has taken."""
        if self.next_part is None:
            start = self._next
            self._next += self.size
            return start
        with self.next_part.get_lock():
            start = self.next_part.value
            self.next_part.value = start + self.size
        return start

    def left(self) -> bool:
        """Whether some part has not been taken yet."""
        taken = self._next if self.next_part is None else self.next_part.value
        return taken < len(self.paths)

    def tally_window(self, on_progress=None):
        """Tally parts until the tally holds ``FLUSH_ENTRIES`` (word, class) pairs or no
        part is left; the packed tally (:func:`nbclass.counting.tally.pack`), or None if no part
        was left. When the documents are hashed (``marks``), the packed tally has one more
        item: the indices and digests of the window's documents
        (:meth:`nbclass.counting.tally.DigestMarks.take`)."""
        packed = self._window(on_progress)
        if packed is None or self.marks is None:
            return packed
        return (*packed, self.marks.take())

    def _window(self, on_progress=None):
        if self._tokenize is None:
            if not self.ledger:
                self._splitter = ascii_splitter(self.tokenizer, self.policy.encoding)
            if self._splitter is not None and self.tokenizer.hash_features is None:
                self._tokenize = FirstCallTokenizer(self.tokenizer)  # runs count most
            else:
                self._tokenize = make_tokenizer(self.tokenizer)
        n, part = len(self.paths), None
        while (start := self._take()) < n:
            end = min(n, start + self.size)
            if self.marks is not None:
                self.marks.offset = start
            part = tally_paths(
                self.paths[start:end], self.labels[start:end], self.n_classes, self._tokenize,
                self.ledger, self.policy, into=part, splitter=self._splitter, runs=self._runs,
                marks=self.marks,
            )  # fmt: skip
            if on_progress:
                on_progress(start, end)
            if self.done is not None:
                with self.done.get_lock():
                    self.done.value += end - start
            if _entries(part) >= FLUSH_ENTRIES:
                break
        if part is None:
            return None
        settle(part, self._tokenize)  # the short documents the run tally still gathers
        if len(part) > 6 and part[6] is not None:
            # This process's run tally counts its next windows too, with the same numbers
            # for the words: the receiver learns each of them once (tally.pack's origin).
            self._runs = part[6]
            if self._origin is None:
                self._origin = os.urandom(8)  # this process's, whatever its pid
            return pack(part, self._origin)
        return pack(part)

    def tally(self, on_progress=None):
        """Yield packed tallies of every part, in this process."""
        while (packed := self.tally_window(on_progress)) is not None:
            yield packed

    def tally_in_workers(self, jobs: int, on_progress=None, meanwhile=None):
        """Yield packed tallies of every part, made by ``jobs`` worker processes.

        Each task tallies one window (:meth:`tally_window`) and sends its packed tally
        back; a worker that finishes one gets another while parts are left, so the
        packs are added as they come and no process holds more than one window.
        ``meanwhile`` runs in a thread of this process once the workers are forked
        (:func:`count_corpus`).
        """
        import multiprocessing
        from collections import deque
        from concurrent.futures import FIRST_COMPLETED, wait

        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
        context = multiprocessing.get_context(method)
        self.next_part, self.done = context.Value("q", 0), context.Value("q", 0)
        reported, n = 0, len(self.paths)
        # A worker's windows must be added in the order it made them: a window sends
        # the words it numbered since the one before, and later windows name them by
        # number only. Futures are taken in the order they finished (their callbacks
        # run in the order the results arrive, one worker's in its order), not from
        # the set wait() gives: two windows of one worker that finished while this
        # process was adding another window came in any order, and a word numbered in
        # the first was then counted on another word's row.
        finished_in_order = deque()

        def submit():
            future = pool.submit(_tally_window)
            future.add_done_callback(finished_in_order.append)
            return future

        with _pool(jobs, context, self) as pool:
            helper, ended = None, False
            try:
                # Two tasks per worker: one waits, so a worker never idles while its
                # packed tally travels back and the next task comes.
                with signals_held():  # the workers are forked here
                    live = {submit() for _ in range(2 * jobs)}
                if meanwhile is not None:
                    import threading

                    helper = threading.Thread(target=meanwhile, daemon=True)
                    helper.start()
                while live:
                    wait(live, timeout=0.05, return_when=FIRST_COMPLETED)
                    if on_progress and self.done.value > reported:
                        counted = self.done.value
                        on_progress(reported, counted)
                        reported = counted
                    while finished_in_order:
                        future = finished_in_order.popleft()
                        live.discard(future)
                        packed = worker_result(future, pool)
                        if packed is not None and self.left():
                            live.add(submit())
                        if packed is not None:
                            yield packed
                    if live and not finished_in_order:
                        check_workers(pool)  # one killed while sending would be waited for
                ended = True
            finally:
                lock = self.next_part.get_lock()
                if lock.acquire(timeout=1):  # a killed worker may have died holding it
                    try:
                        self.next_part.value = n  # on an error, the others stop early
                    finally:
                        lock.release()
                if helper is not None:  # its work is needed only when the count ended
                    helper.join(None if ended else HELPER_GRACE)
        if on_progress and reported < n:
            on_progress(reported, n)


def _entries(part) -> int:
    """The (word, class) pairs a tally of :func:`nbclass.counting.tally.tally_paths` holds."""
    entries = sum(map(len, part[2]))
    if len(part) > 6 and part[6] is not None:  # and the documents counted by runs
        entries += part[6].pairs
    return entries


_SHARE: _Share | None = None  # a worker process's share of the corpus


def _start_worker(share: _Share, parent: int) -> None:
    global _SHARE
    from ..reading.process import start_worker

    start_worker(parent)  # never outlive the fit (kill -9 of the parent included)
    _SHARE = share


def _tally_window():
    """A worker's task: one window of parts of the inherited share, packed."""
    return _SHARE.tally_window()


@contextmanager
def _pool(jobs: int, context, share: _Share):
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(
        jobs, mp_context=context, initializer=_start_worker, initargs=(share, os.getpid())
    )
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
