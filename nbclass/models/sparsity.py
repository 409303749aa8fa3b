"""Count tables in either form: dense ndarrays or scipy.sparse (V, C) matrices.

D_jc and T_jc (:mod:`nbclass.counting.counts`) are (V, C) tables whose nonzero cells
are the (word, class) pairs that occur. The models layer reads them through these
functions, so that it gives the same numbers whether the tables are dense ndarrays or
canonical CSR matrices (sorted indices, no explicit zeros, the same pattern for both).
"""

from __future__ import annotations

import numpy as np


def is_sparse(table) -> bool:
    """True for a scipy.sparse matrix (or array), False for an ndarray."""
    return hasattr(table, "tocsr")


def dense(table, rows=None) -> np.ndarray:
    """``table`` (V, C) as an ndarray; with ``rows`` (R,), those rows only, (R, C).

    A dense table is returned as it is (not copied) when ``rows`` is None.
    """
    if is_sparse(table):
        return (table if rows is None else table[rows]).toarray()
    return table if rows is None else table[rows]


def row_sums(table) -> np.ndarray:
    """Σ_c table_jc, ndarray of shape (V,), the table's own dtype."""
    return np.asarray(table.sum(axis=1)).ravel()


def column_sums(table) -> np.ndarray:
    """Σ_j table_jc, ndarray of shape (C,), the table's own dtype."""
    return np.asarray(table.sum(axis=0)).ravel()
