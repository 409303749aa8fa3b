"""PairTable: a (V, C) table of integer counts kept by its nonzero pairs, in numpy alone.

The counts D_jc and T_jc (:class:`nbclass.counting.counts.Counts`) are kept as the
(word, class) pairs that occur, in the layout of a canonical CSR matrix: ``indptr``
(V + 1,) where each word's pairs start, ``indices`` their classes (ascending within a
word, each once) and ``data`` their counts. A :class:`PairTable` is those three arrays
and the little a fit needs of them (sums, rows, a dense copy), so that counting, the
vocabulary filter and the model file never import scipy. A :class:`PairTable` is a
:class:`nbclass.counting.csr.CSR` (whose products, gathers and conversions call scipy's
compiled kernels without importing scipy.sparse: a default fit's choice computes with
it so); :meth:`PairTable.tocsr` makes the scipy matrix of the same arrays (no copy),
once, for the code that computes with scipy.
"""

from __future__ import annotations

import threading

import numpy as np

from .csr import CSR

BLOCK_PAIRS = 2**18  # pairs summed at a time (float64 sums of a block of values below 2^32: exact)
_CSR_LOCK = threading.Lock()  # (threads of a choice or a service read one table's matrix)


class PairTable(CSR):
    """A (V, C) integer table by its nonzero pairs, in the layout of canonical CSR.

    Attributes
    ----------
    data : ndarray of shape (nnz,), integers
        The values at the pairs, row-major.
    indices : ndarray of shape (nnz,), int32 or int64
        The column of each pair: ascending within a row, each at most once.
    indptr : ndarray of shape (V + 1,), the type of ``indices``
        Where each row's pairs start.
    shape : tuple (V, C)

    The arrays are taken as they are (not copied or checked: the counting layer makes
    them canonical, ``indices`` and ``indptr`` of one type) and not changed. A table is a
    :class:`~nbclass.counting.csr.CSR` of integers with sums, rows and a dense copy of its
    own (exact sums as 1-d int64 arrays, rows as a :class:`PairTable`); a copy or a change
    of type is a plain :class:`~nbclass.counting.csr.CSR`. It can be read as a scipy
    matrix by :meth:`tocsr`, which wraps the same arrays, made once.

    >>> table = PairTable(np.array([3, 1, 5]), np.array([0, 2, 1]), np.array([0, 2, 2, 3]),
    ...                   (3, 3))
    >>> table.sum(axis=1).tolist(), table.sum(axis=0).tolist(), table.sum()
    ([4, 0, 5], [3, 5, 1], 9)
    >>> table[np.array([2, 0])].toarray().tolist()
    [[0, 5, 0], [3, 0, 1]]
    """

    __slots__ = ("_csr",)

    def __init__(self, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
                 shape: tuple[int, int]):  # fmt: skip
        self.data, self.indices, self.indptr = data, indices, indptr
        self.shape = (int(shape[0]), int(shape[1]))
        self._sorted = True  # (canonical)
        self._csr = None

    def __reduce__(self):  # (pickled without the scipy matrix, if one was made)
        return PairTable, (self.data, self.indices, self.indptr, self.shape)

    def __repr__(self) -> str:
        return f"<PairTable {self.shape[0]} x {self.shape[1]}, {self.nnz} pairs, {self.dtype}>"

    @property
    def nnz(self) -> int:
        return int(self.data.size)

    def sum(self, axis: int | None = None):
        """Σ_c (``axis`` 1, shape (V,)), Σ_j (``axis`` 0, shape (C,)) or the whole sum
        (``axis`` None, an int) of the values, in int64, exactly (:func:`pair_sums`)."""
        if axis is None:
            return int(pair_sums(self, 0).sum())
        return pair_sums(self, axis)

    def __getitem__(self, rows) -> PairTable:
        """The table of the rows ``rows`` (an integer array of indices from 0 to V − 1, or
        a slice), in that order."""
        V, C = self.shape
        if isinstance(rows, slice):
            rows = np.arange(V)[rows]
        rows = np.asarray(rows)
        if rows.ndim != 1 or rows.dtype.kind not in "iu":
            raise TypeError("a PairTable's rows are taken by a 1-d integer array or a slice")
        rows = rows.astype(np.int64, copy=False)
        if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= V):
            raise IndexError(f"a row index is outside 0 to {V - 1}")
        starts = self.indptr[rows].astype(np.int64)
        lengths = self.indptr[rows + 1] - starts
        indptr = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        nnz = int(indptr[-1])
        if rows.size and nnz == self.nnz and np.array_equal(rows, np.arange(V)):
            return self  # every row, in order
        taken = np.repeat(starts - indptr[:-1], lengths)
        taken += np.arange(nnz, dtype=np.int64)
        index = np.int32 if max(C, nnz) < 2**31 else np.int64
        return PairTable(self.data[taken], self.indices[taken].astype(index, copy=False),
                         indptr.astype(index), (rows.size, C))  # fmt: skip

    def toarray(self) -> np.ndarray:
        """The table as a dense (V, C) ndarray of its values' type."""
        out = np.zeros(self.shape, dtype=self.dtype)
        rows = np.repeat(np.arange(self.shape[0]), np.diff(self.indptr))
        out[rows, self.indices] = self.data
        return out

    def tocsr(self):
        """The scipy.sparse CSR matrix of these arrays (not copied), made on the first
        call (scipy is imported then) and kept: canonical, as the table is."""
        if self._csr is None:
            import scipy.sparse as sp

            with _CSR_LOCK:  # one matrix, whichever thread asks first
                if self._csr is None:
                    matrix = sp.csr_matrix((self.data, self.indices, self.indptr),
                                           shape=self.shape, copy=False)  # fmt: skip
                    matrix.has_sorted_indices = True  # row-major pairs, each once: canonical
                    matrix.has_canonical_format = True
                    self._csr = matrix
        return self._csr


def pair_sums(table, axis: int) -> np.ndarray:
    """Σ_c table_jc (``axis`` 1, shape (V,)) or Σ_j table_jc (``axis`` 0, shape (C,)) of
    a table in CSR layout (a :class:`PairTable` or a scipy CSR matrix) of integers, as
    int64, exactly, from its arrays alone, a block of pairs at a time: no copy of every
    value in another type is made (scipy and numpy sum a narrow type by a uint64 copy
    of all its values: 82 MB at 10 million pairs). The rows' sums are made by
    ``reduceat`` in int64; the columns' by sums of each block taken in float64 (exact: a
    block of 2^18 values below 2^32 sums below 2^50) and added in int64, or for 64-bit
    values by ``numpy.add.at`` in int64. Sums past 2^63 wrap round as int64 sums do
    (counts whose sums do not fit are refused where they are read)."""
    V, C = table.shape
    data, indptr, indices = table.data, table.indptr, table.indices
    wide = data.dtype.itemsize == 8
    if axis == 1:
        out = np.zeros(V, dtype=np.int64)
        start = 0
        while start < V:  # rows of at most BLOCK_PAIRS pairs at a time (one row at least)
            stop = int(np.searchsorted(indptr, indptr[start] + BLOCK_PAIRS, side="right")) - 1
            stop = min(max(stop, start + 1), V)
            first, last = indptr[start], indptr[stop]
            if last > first:
                some = indptr[start:stop] < indptr[start + 1 : stop + 1]  # (reduceat gives
                # an empty row its next value)
                out[start:stop][some] = np.add.reduceat(
                    data[first:last], indptr[start:stop][some] - first, dtype=np.int64
                )
            start = stop
        return out
    out = np.zeros(C, dtype=np.int64)
    if wide:  # added in int64 as they are (0.5 ms for 300,000 pairs, scipy's 0.8)
        np.add.at(out, indices, data.astype(np.int64, copy=False))
        return out
    for start in range(0, data.size, BLOCK_PAIRS):
        end = start + BLOCK_PAIRS
        out += np.bincount(
            indices[start:end], weights=data[start:end], minlength=C
        ).astype(np.int64)
    return out
