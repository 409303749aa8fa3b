"""nbclass.counting.csr: every operation the choice uses gives what scipy.sparse's own
matrices of the same arrays give, bit for bit (the same kernels, the same arguments)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from nbclass.counting.csr import CSC, CSR
from nbclass.counting.pairtable import PairTable


def bits(a) -> np.ndarray:
    a = np.asarray(a)
    return a.view(np.uint64) if a.dtype == np.float64 else a


def same(ours, theirs) -> None:
    """The same matrix: shape, arrays (values to the bit) and their types."""
    assert ours.shape == theirs.shape
    assert ours.format == theirs.format
    assert np.array_equal(ours.indptr, theirs.indptr)
    assert np.array_equal(ours.indices, theirs.indices)
    assert ours.data.dtype == theirs.data.dtype
    assert ours.indices.dtype == theirs.indices.dtype == ours.indptr.dtype == theirs.indptr.dtype
    assert np.array_equal(bits(ours.data), bits(theirs.data))


def same_array(ours, theirs) -> None:
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    assert np.array_equal(bits(ours), bits(theirs))


@st.composite
def matrices(draw, floats: bool | None = None):
    """A scipy CSR matrix of random entries (duplicates and stored zeros possible), made
    canonical or not, of integers or of floats of mixed magnitudes."""
    M = draw(st.integers(0, 12))
    N = draw(st.integers(1, 12))
    n = draw(st.integers(0, 40)) if M else 0
    rows = draw(hnp.arrays(np.int64, n, elements=st.integers(0, max(M - 1, 0))))
    cols = draw(hnp.arrays(np.int64, n, elements=st.integers(0, N - 1)))
    if floats is None:
        floats = draw(st.booleans())
    if floats:
        values = draw(hnp.arrays(np.float64, n, elements=st.floats(
            -1e6, 1e6, allow_nan=False, allow_subnormal=False)))  # fmt: skip
        values = values * draw(hnp.arrays(np.float64, n, elements=st.sampled_from(
            [1e-8, 1.0, 3.0, 1e8])))  # fmt: skip
    else:
        values = draw(hnp.arrays(draw(st.sampled_from([np.int32, np.int64, np.uint16])), n,
                                 elements=st.integers(0, 1000)))  # fmt: skip
    X = sp.csr_matrix((values, (rows, cols)), shape=(M, N))
    if draw(st.booleans()) and X.nnz:  # unsorted rows, as a product leaves them
        X = sp.csr_matrix((X.data[::-1].copy(), X.indices[::-1].copy(),
                           (X.nnz - X.indptr[::-1]).copy()), shape=X.shape)[::-1]  # fmt: skip
        X = sp.csr_matrix(X)
    return X


def ours_of(X) -> CSR:
    return CSR(X.data, X.indices, X.indptr, X.shape)


@given(matrices(), st.data())
def test_rows_and_columns_are_scipys(X, data):
    M, N = X.shape
    rows = np.zeros(0, dtype=np.int64)
    if M:
        rows = data.draw(hnp.arrays(np.int64, data.draw(st.integers(0, 15)),
                                    elements=st.integers(0, M - 1)))  # fmt: skip
    columns = data.draw(hnp.arrays(np.int64, data.draw(st.integers(1, 15)),
                                   elements=st.integers(0, N - 1)))  # fmt: skip
    ours = ours_of(X)
    same(ours[rows], sp.csr_matrix(X[rows]))
    same(ours[:, columns], sp.csr_matrix(X[:, columns]))
    same(ours[rows][:, columns], sp.csr_matrix(X[rows][:, columns]))
    start = data.draw(st.integers(0, M))
    same(ours[start:], sp.csr_matrix(X[start:]))
    held = ours.tocsc()
    same(held, X.tocsc())
    same(held.tocsr(), X.tocsc().tocsr())
    same(held[:, columns], X.tocsc()[:, columns])


@given(matrices(), st.data())
def test_products_with_dense_tables_are_scipys(X, data):
    M, N = X.shape
    k = data.draw(st.integers(1, 5))
    W = data.draw(hnp.arrays(np.float64, (N, k), elements=st.floats(
        -1e3, 1e3, allow_nan=False, allow_subnormal=False)))  # fmt: skip
    ours = ours_of(X)
    same_array(ours @ W, np.asarray(X @ W))
    same_array(ours.tocsc() @ W, np.asarray(X.tocsc() @ W))
    same_array(ours @ W[:, 0], np.asarray(X @ W[:, 0]))
    F = ours.astype(np.float64)
    same(F, X.astype(np.float64))
    same_array(F @ W, np.asarray(X.astype(np.float64) @ W))


@given(matrices())
def test_sums_and_dense_copies_are_scipys(X):
    ours = ours_of(X)
    for axis in (0, 1):
        same_array(ours.sum(axis=axis), np.asarray(X.sum(axis=axis)))
        same_array(ours.tocsc().sum(axis=axis), np.asarray(X.tocsc().sum(axis=axis)))
    total = ours.sum()
    assert type(total) is type(X.sum()) or np.asarray(total).dtype == np.asarray(X.sum()).dtype
    assert bits(np.asarray(total)) == bits(np.asarray(X.sum()))
    same_array(ours.toarray(), X.toarray())
    copy = ours.copy()
    copy.data[...] = 0
    assert np.array_equal(ours.data, X.data)  # a copy's values are its own


@given(matrices(floats=False), matrices(floats=False))
def test_entries_subtraction_and_sparse_products_are_scipys(A, B):
    rows, columns, values = ours_of(A).entries()
    coo = A.tocoo()
    assert np.array_equal(rows, coo.row) and np.array_equal(columns, coo.col)
    same(CSR.from_entries(rows, columns, values, A.shape), sp.csr_matrix(
        (values, (rows, columns)), shape=A.shape))  # fmt: skip
    if B.shape == A.shape:
        same(ours_of(A) - ours_of(B), sp.csr_matrix(A - B))
    if A.shape[1] == B.shape[0]:
        same(ours_of(A).matmul_sparse(ours_of(B)), sp.csr_matrix(A @ B))


@given(matrices())
def test_canonical_forms_are_scipys(X):
    ours, theirs = ours_of(X).copy(), X.copy()
    assert ours.has_sorted_indices == theirs.has_sorted_indices
    ours.sort_indices()
    theirs.sort_indices()
    same(ours, theirs)
    ours.eliminate_zeros()
    theirs.eliminate_zeros()
    same(ours, theirs)
    ours, theirs = ours_of(X).copy(), X.copy()
    ours.sum_duplicates()
    theirs.sum_duplicates()
    same(ours, theirs)


def test_long_rows_of_mixed_magnitudes_add_in_scipys_order():
    """A row whose terms round differently in another order (the choice's held-out
    documents of 20 Newsgroups hold up to 2,382 entries)."""
    rng = np.random.default_rng(7)
    M, N = 50, 3000
    X = sp.random(M, N, density=0.4, format="csr", random_state=rng)
    X.data = X.data * 10.0 ** rng.integers(-8, 9, X.nnz)
    W = rng.normal(size=(N, 20)) * 10.0 ** rng.integers(-6, 7, (N, 1))
    ours = ours_of(X)
    same_array(ours @ W, np.asarray(X @ W))
    same_array(ours.tocsc() @ W, np.asarray(X.tocsc() @ W))
    same_array(ours.sum(axis=0), np.asarray(X.sum(axis=0)))
    same_array(ours.sum(axis=1), np.asarray(X.sum(axis=1)))
    same_array(ours.tocsc().sum(axis=1), np.asarray(X.tocsc().sum(axis=1)))


def test_of_takes_scipys_arrays_without_copying():
    X = sp.csr_matrix(np.array([[0, 2, 0], [1, 0, 3]], dtype=np.int32))
    ours = CSR.of(X)
    assert ours.data is X.data and ours.indices is X.indices and ours.indptr is X.indptr
    assert CSR.of(ours) is ours
    with pytest.raises(TypeError):
        CSR.of(X.tocsc())


def test_a_pair_table_is_a_csr_whose_copies_are_plain():
    table = PairTable(np.array([3, 1, 5]), np.array([0, 2, 1], dtype=np.int32),
                      np.array([0, 2, 2, 3], dtype=np.int32), (3, 3))  # fmt: skip
    assert isinstance(table, CSR) and table.has_sorted_indices
    W = np.array([[1.0, 0.5], [2.0, 0.25], [4.0, 0.125]])
    same_array(table @ W, np.asarray(table.tocsr() @ W))
    assert type(table.astype(np.float64)) is CSR and type(table.copy()) is CSR
    same(table.tocsc(), table.tocsr().tocsc())
    assert table.sum(axis=1).tolist() == [4, 0, 5]  # (its own exact sums: 1-d)
    assert isinstance(CSC(table.data, table.indices, table.indptr, (3, 3)), CSC)
