"""CSR and CSC matrices in numpy, computed by scipy's compiled kernels without scipy.sparse.

A default fit's choice (:mod:`nbclass.models.choosing`) gathers rows and columns of the
sample's count matrix, multiplies held-out documents by dense weight tables, sums rows
and columns and subtracts held-out counts from the corpus's. scipy's matrix classes do
each of those by one function of their compiled module ``scipy.sparse._sparsetools``,
wrapped in Python that checks its arguments; importing ``scipy.sparse`` for them costs
0.14-0.19 s of CPU (its array-API layer imports numpy's f2py, testing, ma and random),
as much as a whole named fit of a small corpus. :class:`CSR` and :class:`CSC` hold the
same three arrays as scipy's ``csr_matrix`` and ``csc_matrix`` and call the same kernels
(:func:`nbclass.compiled.sparsetools`, loaded from its file) with the same arguments, so
every result is the same: the same floats, added in the same order, and the same
integers. Only what the choice does is here; the names and the shapes of the results
are scipy's (a sum along an axis is a 2-d array, as ``csr_matrix.sum`` gives a matrix).

>>> X = CSR.from_entries([0, 0, 2, 0], [1, 3, 0, 1], np.array([2, 1, 4, 5]), (3, 4))
>>> X.indptr.tolist(), X.indices.tolist(), X.data.tolist()   # (0, 1) summed: 2 + 5
([0, 2, 2, 3], [1, 3, 0], [7, 1, 4])
>>> (X @ np.array([[1.0], [0.5], [0.0], [2.0]])).ravel().tolist()
[5.5, 0.0, 4.0]
>>> X[np.array([2, 0])][:, np.array([0, 1])].toarray().tolist()
[[4, 0], [0, 7]]
>>> X.sum(axis=1).ravel().tolist(), X.sum(axis=0).ravel().tolist(), int(X.sum())
([8, 0, 4], [4, 7, 0, 1], 12)
"""

from __future__ import annotations

import numpy as np

from ..compiled import sparsetools

_INT32_MAX = np.iinfo(np.int32).max


def index_type(*arrays, most: int = 0) -> type:
    """int32 where every one of the integer ``arrays`` is int32 (or narrower) and ``most``
    fits it, else int64: the index type scipy's kernels are called with."""
    if most > _INT32_MAX:
        return np.int64
    for array in arrays:
        if np.asarray(array).dtype.itemsize > 4 or np.asarray(array).dtype == np.uint32:
            return np.int64
    return np.int32


def _sum_type(dtype: np.dtype) -> np.dtype:
    """The type numpy (and scipy) sums values of ``dtype`` in: the platform's integer for
    narrower integers (unsigned: its unsigned one), else the type itself."""
    if dtype.kind == "u" and np.can_cast(dtype, np.uint):
        return np.dtype(np.uint)
    if np.can_cast(dtype, np.int_):
        return np.dtype(np.int_)
    return dtype


class _Compressed:
    """What :class:`CSR` and :class:`CSC` share: the three arrays, of which ``indptr``
    (major + 1,) says where each row (CSR) or column (CSC) starts in ``indices`` (nnz,)
    and ``data`` (nnz,). ``indptr`` and ``indices`` are of one type: int32 where the
    shape and the number of entries are below 2^31, as in scipy's matrices, else int64."""

    __slots__ = ("data", "indices", "indptr", "shape", "_sorted")
    ndim = 2

    def __init__(self, data, indices, indptr, shape, sorted_indices: bool | None = None):
        data, indices, indptr = np.asarray(data), np.asarray(indices), np.asarray(indptr)
        # int32 where the shape and the entries allow, as scipy's constructor makes them
        # (it checks the arrays' values: below those bounds in a valid matrix).
        nnz = int(indptr[-1]) if indptr.size else 0
        index = np.int32 if max(int(shape[0]), int(shape[1]), nnz) <= _INT32_MAX else np.int64
        self.indices = indices.astype(index, copy=False)
        self.indptr = indptr.astype(index, copy=False)
        self.data = data
        self.shape = (int(shape[0]), int(shape[1]))
        self._sorted = sorted_indices

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"<{name} {self.shape[0]} x {self.shape[1]}, {self.nnz} stored, {self.dtype}>"

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def _major(self) -> tuple[int, int]:
        return self.shape

    @property
    def has_sorted_indices(self) -> bool:
        """Whether each row's (CSR) or column's (CSC) indices ascend (found once)."""
        if self._sorted is None:
            M = self.indptr.size - 1
            self._sorted = bool(sparsetools().csr_has_sorted_indices(M, self.indptr, self.indices))
        return self._sorted

    @has_sorted_indices.setter
    def has_sorted_indices(self, value: bool) -> None:
        self._sorted = bool(value)

    def sort_indices(self) -> None:
        """Sort each row's indices (and their values) in place (``csr_sort_indices``)."""
        if not self.has_sorted_indices:
            sparsetools().csr_sort_indices(self.indptr.size - 1, self.indptr, self.indices,
                                           self.data)  # fmt: skip
            self._sorted = True

    def _with_data(self, data: np.ndarray, copy: bool = True):
        """The matrix of this pattern with the values ``data`` (index arrays copied, or
        shared when ``copy`` is False)."""
        indices, indptr = (self.indices.copy(), self.indptr.copy()) if copy else (
            self.indices, self.indptr)  # fmt: skip
        return self._plain(data, indices, indptr, self.shape, self._sorted)

    def copy(self):
        """A copy of the three arrays."""
        return self._with_data(self.data.copy())

    def astype(self, dtype, copy: bool = True):
        """The values as ``dtype`` (a copy of the matrix, or itself if it is of that
        type and ``copy`` is False). As scipy's, a change of type also makes the copy
        canonical (:meth:`sum_duplicates`: a CSR's rows sorted, duplicates added)."""
        dtype = np.dtype(dtype)
        if self.dtype != dtype:
            out = self._with_data(self.data.astype(dtype))
            out.sum_duplicates()
            return out
        return self.copy() if copy else self

    def sum_duplicates(self) -> None:
        """Sort each row's (CSR) or column's (CSC) indices and add the values at one
        index, in place (``csr_sort_indices``, ``csr_sum_duplicates``)."""
        if self.has_sorted_indices and bool(sparsetools().csr_has_canonical_format(
                self.indptr.size - 1, self.indptr, self.indices)):  # fmt: skip
            return
        self.sort_indices()
        M, N = self._major()
        sparsetools().csr_sum_duplicates(M, N, self.indptr, self.indices, self.data)
        self._prune()

    def _prune(self) -> None:
        nnz = self.nnz
        if self.indices.size != nnz:
            self.indices = self.indices[:nnz].copy()
        if self.data.size != nnz:
            self.data = self.data[:nnz].copy()

    def sum(self, axis: int | None = None):
        """The sum of every value (``axis`` None: a scalar), of each row (``axis`` 1,
        shape (n_rows, 1)) or of each column (``axis`` 0, shape (1, n_columns)), in the
        type numpy sums the values in, by scipy's additions: a CSR row's (a CSC column's)
        values by ``numpy.add.reduceat`` (in the values' own type, then widened, then
        added to 0), a CSR column's (a CSC row's) from 0 in the order stored
        (``csc_matvec`` by ones), every value as numpy sums a matrix of one row after
        :meth:`sum_duplicates` (which changes the matrix in place, as scipy's does)."""
        total = _sum_type(self.dtype)
        major, minor = self._major()
        if axis is None:
            if not self.nnz:
                return total.type(0)
            self.sum_duplicates()
            return self.data.reshape(1, -1).sum()
        if axis not in (0, 1, -1, -2):
            raise ValueError(f"axis {axis} is out of range for a matrix")
        lines = (axis % 2 == 1) == (self.format == "csr")  # each row of a CSR, column of a CSC
        csr = self.format == "csr"
        if lines:
            out = np.zeros(major, dtype=total)
            some = np.flatnonzero(np.diff(self.indptr))
            if some.size:
                out[some] = np.add.reduceat(self.data, self.indptr[some].astype(np.intp))
            shape = (major, 1) if csr else (1, major)
            return out.reshape(shape).sum(axis=())  # (0 added: a sum of -0.0 is 0.0)
        ones = np.ones(major, dtype=total)
        out = np.zeros(minor, dtype=np.result_type(self.dtype, total))
        sparsetools().csc_matvec(minor, major, self.indptr, self.indices, self.data, ones, out)
        return out.astype(total, copy=False).reshape((1, minor) if csr else (minor, 1))

    def __matmul__(self, other):
        """The product with a dense vector (n_columns,) or table (n_columns, k): an
        ndarray (n_rows,) or (n_rows, k), each cell's terms added from 0 in the order of
        the stored entries (``csr_matvec(s)``, ``csc_matvec(s)``); with a CSR matrix, the
        CSR matrix of :meth:`CSR.matmul_sparse`."""
        if isinstance(other, CSR) or getattr(other, "format", None) == "csr":
            return self.tocsr().matmul_sparse(other)
        other = np.asarray(other)
        M, N = self.shape
        if other.shape[0] != N:
            raise ValueError(f"dimension mismatch: {self.shape} @ {other.shape}")
        result = np.result_type(self.dtype, other.dtype)
        kernels = sparsetools()
        if other.ndim == 1:
            out = np.zeros(M, dtype=result)
            getattr(kernels, self.format + "_matvec")(
                M, N, self.indptr, self.indices, self.data, other, out)  # fmt: skip
            return out
        if other.shape[1] == 1:  # (scipy takes a single column as a vector)
            return (self @ np.ravel(other)).reshape(M, 1)
        k = other.shape[1]
        out = np.zeros((M, k), dtype=result)
        getattr(kernels, self.format + "_matvecs")(
            M, N, k, self.indptr, self.indices, self.data, np.ravel(other), out.ravel()
        )  # fmt: skip
        return out


class CSR(_Compressed):
    """A sparse (n_rows, n_columns) matrix in compressed sparse row layout, as scipy's
    ``csr_matrix`` keeps it.

    Attributes
    ----------
    data : ndarray of shape (nnz,)
        The stored values, row after row.
    indices : ndarray of shape (nnz,), int32 or int64
        The column of each value.
    indptr : ndarray of shape (n_rows + 1,), the type of ``indices``
        Where each row's values start.
    shape : tuple (n_rows, n_columns)

    The arrays are taken as given (``indices`` and ``indptr`` made one integer type),
    not checked. Every operation gives what scipy's ``csr_matrix`` of the same arrays
    gives: the same arrays, of the same types, the same floats.
    """

    __slots__ = ()
    format = "csr"

    @classmethod
    def from_entries(cls, rows, columns, values, shape) -> CSR:
        """The canonical matrix (each row's columns ascending, each at most once) of the
        entries ``values`` at (``rows``, ``columns``), those at one cell summed in the
        order given: ``csr_matrix((values, (rows, columns)), shape)`` (``coo_tocsr``,
        then ``csr_sum_duplicates``)."""
        rows, columns, values = np.asarray(rows), np.asarray(columns), np.asarray(values)
        M, N = int(shape[0]), int(shape[1])
        # int32 positions where the shape and the entries allow, whatever the arrays'
        # types, as scipy's COO matrix takes them (a copy of half the size of int64's)
        index = np.int32 if max(M, N, values.size) <= _INT32_MAX else np.int64
        kernels = sparsetools()
        indptr = np.empty(M + 1, dtype=index)
        indices = np.empty(values.size, dtype=index)
        data = np.empty_like(values)
        if values.size == 0:
            indptr[:] = 0
            return cls(data, indices, indptr, (M, N), True)
        rows, columns = rows.astype(index, copy=False), columns.astype(index, copy=False)
        kernels.coo_tocsr(M, N, values.size, rows, columns, values, indptr, indices, data)
        out = cls(data, indices, indptr, (M, N))
        out.sum_duplicates()
        return out

    @classmethod
    def of(cls, matrix) -> CSR:
        """``matrix`` (a :class:`CSR`, or a scipy CSR matrix or array) as a :class:`CSR`
        of the same three arrays, not copied."""
        if isinstance(matrix, CSR):
            return matrix
        if getattr(matrix, "format", None) != "csr":
            raise TypeError(f"not a CSR matrix: {type(matrix).__name__}")
        sorted_indices = matrix.__dict__.get("_has_sorted_indices")
        return cls(matrix.data, matrix.indices, matrix.indptr, matrix.shape, sorted_indices)

    def tocsr(self) -> CSR:
        return self

    def eliminate_zeros(self) -> None:
        """Drop the stored zeros, in place (``csr_eliminate_zeros``)."""
        M, N = self.shape
        sparsetools().csr_eliminate_zeros(M, N, self.indptr, self.indices, self.data)
        self._prune()

    def __getitem__(self, key) -> CSR:
        """``X[rows]``, ``X[rows, :]`` (an integer array or a slice of rows) and
        ``X[:, columns]`` (an integer array of columns): the rows (``csr_row_index``) or
        columns (``csr_column_index1``/``2``) in the order given."""
        if isinstance(key, tuple):
            rows, columns = key
            out = self if _every(rows) else self._rows(rows)
            return out if _every(columns) else out._columns(columns)
        return self._rows(key)

    def _rows(self, rows) -> CSR:
        M, N = self.shape
        if isinstance(rows, slice):
            start, stop, step = rows.indices(M)
            if step == 1:
                first, last = int(self.indptr[start]), int(self.indptr[max(stop, start)])
                indptr = self.indptr[start : max(stop, start) + 1] - self.indptr[start]
                return CSR(self.data[first:last], self.indices[first:last], indptr,
                           (max(stop - start, 0), N), self._sorted)  # fmt: skip
            rows = np.arange(start, stop, step)
        index = self.indices.dtype
        rows = _positions(rows, M, index, "row")
        lengths = self.indptr[rows + 1] - self.indptr[rows]
        indptr = np.zeros(rows.size + 1, dtype=index)
        np.cumsum(lengths, out=indptr[1:])
        nnz = int(indptr[-1])
        indices = np.empty(nnz, dtype=index)
        data = np.empty(nnz, dtype=self.dtype)
        sparsetools().csr_row_index(rows.size, rows, self.indptr, self.indices, self.data,
                                    indices, data)  # fmt: skip
        return CSR(data, indices, indptr, (rows.size, N), self._sorted)

    def _columns(self, columns) -> CSR:
        M, N = self.shape
        index = self.indices.dtype
        columns = _positions(columns, N, index, "column")
        k = columns.size
        if k == 0:
            return CSR(np.zeros(0, self.dtype), np.zeros(0, index), np.zeros(M + 1, index),
                       (M, 0), True)  # fmt: skip
        kernels = sparsetools()
        offsets = np.zeros(N, dtype=index)
        indptr = np.empty_like(self.indptr)
        kernels.csr_column_index1(k, columns, M, N, self.indptr, self.indices, offsets, indptr)
        order = np.argsort(columns).astype(index, copy=False)
        nnz = int(indptr[-1])
        indices = np.empty(nnz, dtype=index)
        data = np.empty(nnz, dtype=self.dtype)
        kernels.csr_column_index2(order, offsets, self.indices.size, self.indices, self.data,
                                  indices, data)  # fmt: skip
        return CSR(data, indices, indptr, (M, k))

    def toarray(self) -> np.ndarray:
        """The dense (n_rows, n_columns) ndarray of the values' type (``csr_todense``)."""
        out = np.zeros(self.shape, dtype=self.dtype)
        M, N = self.shape
        sparsetools().csr_todense(M, N, self.indptr, self.indices, self.data, out)
        return out

    def todense(self) -> np.ndarray:
        """:meth:`toarray` (scipy's gives the same values as a ``numpy.matrix``)."""
        return self.toarray()

    def tocsc(self) -> CSC:
        """The same matrix in compressed sparse column layout (``csr_tocsc``): each
        column's rows ascending."""
        M, N = self.shape
        index = index_type(self.indptr, self.indices, most=max(self.nnz, M))
        indptr = np.empty(N + 1, dtype=index)
        indices = np.empty(self.nnz, dtype=index)
        data = np.empty(self.nnz, dtype=self.dtype)
        sparsetools().csr_tocsc(M, N, self.indptr.astype(index, copy=False),
                                self.indices.astype(index, copy=False), self.data,
                                indptr, indices, data)  # fmt: skip
        return CSC(data, indices, indptr, self.shape, True)

    def __sub__(self, other) -> CSR:
        """The difference with a matrix of the same shape (``csr_minus_csr``), explicit
        zeros kept where scipy keeps them."""
        other = CSR.of(other)
        if other.shape != self.shape:
            raise ValueError(f"inconsistent shapes {self.shape} and {other.shape}")
        most = self.nnz + other.nnz
        index = index_type(self.indptr, self.indices, other.indptr, other.indices, most=most)
        indptr = np.empty(self.indptr.shape, dtype=index)
        indices = np.empty(most, dtype=index)
        data = np.empty(most, dtype=np.result_type(self.dtype, other.dtype))
        M, N = self.shape
        sparsetools().csr_minus_csr(
            M, N, self.indptr.astype(index, copy=False), self.indices.astype(index, copy=False),
            self.data, other.indptr.astype(index, copy=False),
            other.indices.astype(index, copy=False), other.data, indptr, indices, data,
        )  # fmt: skip
        out = CSR(data, indices, indptr, self.shape)
        out._prune()
        return out

    def matmul_sparse(self, other: CSR) -> CSR:
        """The product with a CSR matrix (``csr_matmat``): each row's columns in the
        order the kernel leaves them (not sorted), as scipy's ``A @ B``."""
        other = CSR.of(other)
        M, K = self.shape
        if other.shape[0] != K:
            raise ValueError(f"dimension mismatch: {self.shape} @ {other.shape}")
        N = other.shape[1]
        kernels = sparsetools()
        arrays = (self.indptr, self.indices, other.indptr, other.indices)
        index = index_type(*arrays)
        parts = [array.astype(index, copy=False) for array in arrays]
        nnz = int(kernels.csr_matmat_maxnnz(M, N, *parts))
        result = np.result_type(self.dtype, other.dtype)
        if nnz == 0:
            return CSR(np.zeros(0, result), np.zeros(0, index), np.zeros(M + 1, index), (M, N),
                       True)  # fmt: skip
        wider = index_type(*arrays, most=nnz)
        if wider != index:
            index = wider
            parts = [array.astype(index, copy=False) for array in arrays]
        indptr = np.empty(M + 1, dtype=index)
        indices = np.empty(nnz, dtype=index)
        data = np.empty(nnz, dtype=result)
        kernels.csr_matmat(M, N, parts[0], parts[1], self.data, parts[2], parts[3], other.data,
                           indptr, indices, data)  # fmt: skip
        out = CSR(data, indices, indptr, (M, N))
        out._prune()
        return out

    def entries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(rows, columns, values)`` of the stored entries in their order (what
        ``tocoo()`` holds as ``row``, ``col``, ``data``)."""
        rows = np.repeat(np.arange(self.shape[0], dtype=self.indices.dtype),
                         np.diff(self.indptr))  # fmt: skip
        return rows, self.indices[: self.nnz], self.data[: self.nnz]


CSR._plain = CSR  # (what a copy or a change of type of a CSR or its subclass is)


class CSC(_Compressed):
    """A sparse matrix in compressed sparse column layout (scipy's ``csc_matrix``):
    ``indptr`` (n_columns + 1,) says where each column's rows (``indices``) and values
    (``data``) start. The choice takes a fold's held-out documents so, to multiply them
    by a dense table a row of the table at a time (:func:`nbclass.models.choosing.
    _held_columns`)."""

    __slots__ = ()
    format = "csc"

    def _major(self) -> tuple[int, int]:
        return self.shape[1], self.shape[0]

    def __getitem__(self, key) -> CSC:
        """``X[:, columns]`` (an integer array): those columns, in the order given
        (``csr_row_index`` of the transposed arrays, as scipy's)."""
        if not (isinstance(key, tuple) and _every(key[0])):
            raise TypeError("a CSC matrix's columns are taken by X[:, columns]")
        M, N = self.shape
        transposed = CSR(self.data, self.indices, self.indptr, (N, M), self._sorted)
        part = transposed._rows(key[1])
        return CSC(part.data, part.indices, part.indptr, (M, part.shape[0]), self._sorted)

    def toarray(self) -> np.ndarray:
        return CSR(self.data, self.indices, self.indptr, self.shape[::-1]).toarray().T.copy()

    def tocsr(self) -> CSR:
        """The same matrix in compressed sparse row layout (``csr_tocsc`` of the
        transposed arrays, as scipy's): each row's columns ascending."""
        M, N = self.shape
        transposed = CSR(self.data, self.indices, self.indptr, (N, M)).tocsc()
        return CSR(transposed.data, transposed.indices, transposed.indptr, (M, N), True)


CSC._plain = CSC


def _positions(key, size: int, index: type, what: str) -> np.ndarray:
    """The indices ``key`` (integers from −size to size − 1, or a mask) as a flat array of
    type ``index``, each from 0 to size − 1."""
    key = np.asarray(key)
    if key.dtype == bool:
        key = np.flatnonzero(key)
    key = key.astype(index, copy=False).ravel()
    if key.size and (int(key.min()) < -size or int(key.max()) >= size):
        raise IndexError(f"a {what} index is outside 0 to {size - 1}")
    if key.size and int(key.min()) < 0:
        key = np.where(key < 0, key + size, key).astype(index)
    return key


def _every(key) -> bool:
    return isinstance(key, slice) and key == slice(None)


def as_csr(matrix) -> CSR:
    """``matrix`` as a :class:`CSR`: itself, a scipy CSR matrix's arrays (not copied),
    another scipy matrix's CSR form (scipy's ``tocsr``), or a dense 2-d array's nonzero
    entries in row-major order (as ``csr_matrix`` of the array holds them)."""
    if isinstance(matrix, CSR):
        return matrix
    if hasattr(matrix, "tocsr"):  # a scipy matrix (a CSR matrix's own arrays)
        return CSR.of(matrix.tocsr())
    dense = np.asarray(matrix)
    if dense.ndim != 2:
        raise ValueError(f"a matrix has 2 dimensions, not {dense.ndim}")
    rows, columns = np.nonzero(dense)
    return CSR.from_entries(rows, columns, dense[rows, columns], dense.shape)
