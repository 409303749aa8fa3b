"""Count tables in either form: dense ndarrays or sparse (V, C) matrices in CSR layout.

D_jc and T_jc (:mod:`nbclass.counting.counts`) are (V, C) tables whose nonzero cells
are the (word, class) pairs that occur. The models layer reads them through these
functions, so that it gives the same numbers whether the tables are dense ndarrays or
canonical CSR matrices (sorted indices, no explicit zeros, the same pattern for both):
:class:`nbclass.counting.csr.CSR` (a :class:`~nbclass.counting.pairtable.PairTable` is
one), which computes with scipy's compiled kernels without importing scipy.sparse, or
scipy's own matrices, which are read by their arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np

from ..counting.csr import CSR, as_csr
from .layout import DENSE_CELLS, dense_cells  # noqa: F401 (the modules of the tables take them here)


def is_sparse(table) -> bool:
    """True for a sparse matrix (a :class:`~nbclass.counting.csr.CSR`, a scipy.sparse
    matrix or array), False for an ndarray."""
    return hasattr(table, "tocsr")


def dense(table, rows=None) -> np.ndarray:
    """``table`` (V, C) as an ndarray; with ``rows`` (R,), those rows only, (R, C).

    A dense table is returned as it is (not copied) when ``rows`` is None.
    """
    if is_sparse(table):
        return (table if rows is None else table[rows]).toarray()
    return table if rows is None else table[rows]


def row_sums(table) -> np.ndarray:
    """Σ_c table_jc, ndarray of shape (V,): int64 for integer tables (the counts of a
    loaded model keep the file's unsigned types: :func:`nbclass.counting.counts.
    count_sums`), else the table's own dtype."""
    return _sums(table, 1)


def column_sums(table) -> np.ndarray:
    """Σ_j table_jc, ndarray of shape (C,), of the type :func:`row_sums` gives."""
    return _sums(table, 0)


def _sums(table, axis: int) -> np.ndarray:
    if table.dtype.kind in "iub":
        from ..counting.counts import count_sums

        return count_sums(table, axis)
    return np.asarray(table.sum(axis=axis)).ravel()


# --- Weights from the nonzero pairs ---------------------------------------------------------

CORRECTION_PAIRS = 2**18  # pairs whose corrections are made at a time

def csr_table(table, rows=None) -> CSR:
    """``table`` (V, C) as a canonical :class:`~nbclass.counting.csr.CSR` matrix (its rows
    ``rows`` only, if given): a CSR table's own arrays (not copied), a dense one's nonzero
    cells."""
    table = as_csr(table)
    if rows is not None:
        table = table[rows]
    out = CSR(table.data, table.indices, table.indptr, table.shape, table.has_sorted_indices)
    out.sort_indices()
    return out


class SparseWeights:
    """A (V, C) weight table W given by what a word has when it is not seen in a class
    and by its values at the (word, class) pairs that occur:

        W_jc = g_j r_c + k_c      where (j, c) is not a pair (T_jc = D_jc = 0),
        W_jc = w_jc               at the pairs,

    so that for features F (n, V), F W = (F g) r + (F 1) k + F Δ with Δ_jc = w_jc − (g_j r_c
    + k_c) at the pairs (``docs/maths.md``, scoring from the nonzero pairs). ``g`` and
    ``r`` are absent (0) for every model but complement. Where k_c = −∞ (an estimator
    with no mass on unseen words) class c's score is F w if every word of the document
    is a pair of class c, else −∞; Δ then holds w_jc itself.

    Attributes
    ----------
    values : :class:`~nbclass.counting.csr.CSR` of shape (V, C), float64
        w_jc at the pairs (explicit zeros included: a weight may be 0).
    constant : ndarray of shape (C,)
        k_c.
    word : ndarray of shape (V,), or None
        g_j.
    scale : ndarray of shape (C,), or None
        r_c.
    """

    def __init__(self, values, constant, word=None, scale=None, remake=None):
        """``remake``: a function that makes the same ``values`` again, if their maker
        has one: :meth:`prepare` may then turn them into the corrections in place."""
        self._values = values
        self._remake = remake
        self.constant = np.asarray(constant, dtype=np.float64)
        self.word = word
        self.scale = scale
        self.shape = values.shape

    @property
    def values(self):
        """w_jc at the pairs (see the class's attributes); made again by ``remake`` if
        :meth:`prepare` turned them into the corrections."""
        if self._values is None:
            self._values = self._remake()
        return self._values

    @property
    def _infinite(self) -> np.ndarray:
        return ~np.isfinite(self.constant)

    def unseen(self, words, classes) -> np.ndarray:
        """W_jc off the pairs, for the pairs (``words``, ``classes``) (equal shapes)."""
        out = self.constant[classes]
        if self.word is not None:
            out = out + self.word[words] * self.scale[classes]
        return out

    def corrections(self):
        """Δ (V, C) as a :class:`~nbclass.counting.csr.CSR` of the pattern of
        :attr:`values` (made once)."""
        if getattr(self, "_delta", None) is None:
            self._delta = self._corrections()
        return self._delta

    def prepare(self) -> None:
        """Make now what :meth:`dot` makes once and keeps: the corrections and each word's
        number of pairs. A process that forks scoring workers calls it first, so that the
        workers share them (copy on write, only read) rather than each making its own
        (against 20,000 classes × 200,000 words, 82 MB and a gather of 10 million pairs).

        Scoring needs the corrections alone where every k_c is finite: the values then
        become the corrections in place, when they can be made again if asked for
        (``remake``), rather than a second array of every pair beside them (82 MB there,
        whose pages the kernel cleared)."""
        self._row_lengths()
        if (
            getattr(self, "_delta", None) is None
            and self._remake is not None
            and not self._infinite.any()
        ):
            self._delta = self._corrections(in_place=True)
            self._values = None
        self.corrections()

    def _row_lengths(self) -> np.ndarray:
        """The pairs of each word, shape (V,) (made once)."""
        if getattr(self, "_lengths", None) is None:
            self._lengths = np.diff(self.values.indptr)
        return self._lengths

    def _corrections(self, in_place: bool = False):
        """Δ at the pairs, a block of pairs at a time (no array of every pair's k_c),
        into a new array or, ``in_place``, into the values' own."""
        values = self.values
        cols, data = values.indices, values.data
        out = data if in_place else np.empty(data.size)
        infinite = self._infinite
        infinite = infinite if infinite.any() else None  # (no mask of every pair then)
        rows = None
        if self.word is not None:
            rows = np.repeat(np.arange(values.shape[0]), np.diff(values.indptr))
        for start in range(0, data.size, CORRECTION_PAIRS):
            end = start + CORRECTION_PAIRS
            classes = cols[start:end]
            base = (
                self.constant[classes] if rows is None  # k_c alone: no row index a pair
                else self.unseen(rows[start:end], classes)
            )  # fmt: skip
            if infinite is not None:
                base[infinite[classes]] = 0.0
            np.subtract(data[start:end], base, out=out[start:end])
        # Δ has the pattern of the values: it shares their (read-only) index arrays.
        return CSR(out, cols, values.indptr, values.shape)

    def __getitem__(self, rows) -> SparseWeights:
        """The rows ``rows`` (an index array), as weights of those words."""
        return SparseWeights(
            self.values[rows], self.constant, None if self.word is None else self.word[rows],
            self.scale,
        )  # fmt: skip

    def dot(self, F, bias: np.ndarray | None = None) -> np.ndarray:
        """F W for features F (n, V), a CSR matrix (:class:`~nbclass.counting.csr.CSR`
        or scipy's): ndarray (n, C); F W + ``bias``
        (C,) if given, the same floats as ``bias`` added to F W."""
        F = as_csr(F)
        total = np.asarray(F.sum(axis=1), dtype=np.float64)  # (n, 1)
        infinite = self._infinite
        constant = np.where(infinite, 0.0, self.constant)
        # t_i k_c first, then F Δ added into it: (F Δ)_ic + t_i k_c is the same float
        # either way round (one addition, which commutes). A cell without a correction
        # is t_i k_c alone, where it was 0 + t_i k_c: the same float but for the sign
        # of a zero, which only a document with no word has (t_i = 0, k_c < 0). Each
        # range of rows takes t_i k_c, then its corrections, then the bias (added last
        # as to F W: the complement's word terms come before it) while in the caches.
        empty = total.ravel() == 0
        empty = empty if empty.any() else None

        def constants(first: int, last: int, rows: np.ndarray) -> None:
            np.multiply(total[first:last], constant, out=rows)
            if empty is not None:
                rows[empty[first:last]] = 0.0

        def add_bias(first: int, last: int, rows: np.ndarray) -> None:
            rows += bias

        out = np.empty((F.shape[0], self.shape[1]))
        last_bias = bias is not None and self.word is None
        add_product(
            F, self.corrections(), out, self._row_lengths(), constants,
            add_bias if last_bias else None,
        )  # fmt: skip
        if self.word is not None:
            out += (F @ self.word)[:, None] * self.scale
        if infinite.any():  # covered: every word of the document a pair of class c
            pattern = self.values.copy()
            pattern.data = np.ones(pattern.data.size)
            present = F.copy()
            present.data = np.ones(present.data.size)
            covered = (present @ pattern).toarray()
            words = np.diff(present.indptr)[:, None]
            out[:, infinite] = np.where(
                covered[:, infinite] < words, -np.inf, out[:, infinite]
            )
        if bias is not None and not last_bias:
            out += bias
        return out

    def at(self, words: np.ndarray, classes: np.ndarray) -> np.ndarray:
        """W_jc at the pairs (``words``, ``classes``) (int arrays of one shape)."""
        words = np.asarray(words, dtype=np.int64)
        classes = np.asarray(classes, dtype=np.int64)
        C = self.shape[1]
        values = self.values
        keys = np.repeat(np.arange(values.shape[0], dtype=np.int64), np.diff(values.indptr))
        keys *= C
        keys += values.indices
        wanted = words * C + classes
        where = np.searchsorted(keys, wanted)
        where = np.minimum(where, max(keys.size - 1, 0))
        found = keys[where] == wanted if keys.size else np.zeros(wanted.shape, dtype=bool)
        out = self.unseen(words, classes)
        out[found] = values.data[where[found]]
        return out

    def column(self, c: int) -> np.ndarray:
        """W_jc of every word for class ``c``, shape (V,)."""
        if getattr(self, "_columns", None) is None:
            self._columns = self.values.tocsc()
        out = np.full(self.shape[0], self.constant[c])
        if self.word is not None:
            out = out + self.word * self.scale[c]
        start, end = self._columns.indptr[c], self._columns.indptr[c + 1]
        out[self._columns.indices[start:end]] = self._columns.data[start:end]
        return out

    def column_abs_sums(self) -> np.ndarray:
        """Σ_j |W_jc|, shape (C,), for weights of one sign in each column (log θ ≤ 0 or
        −log θ̃ ≥ 0): Σ_j W_jc = Σ_j g_j r_c + V k_c + Σ_j Δ_jc, then its magnitude."""
        V = self.shape[0]
        delta = self.corrections()
        sums = np.asarray(delta.sum(axis=0)).ravel() + V * self.constant
        if self.word is not None:
            sums = sums + self.word.sum() * self.scale
        return np.abs(sums)

    def divided(self, norms: np.ndarray) -> SparseWeights:
        """W_jc / norms_c (0 for a column whose norm is 0)."""
        inverse = np.divide(1.0, norms, out=np.zeros(norms.shape), where=norms > 0)
        values = self.values.copy()
        cols = values.indices
        values.data = np.divide(values.data, norms[cols], out=np.zeros(cols.size),
                                where=norms[cols] > 0)  # fmt: skip
        scale = None if self.scale is None else self.scale * inverse
        return SparseWeights(values, self.constant * inverse, self.word, scale)

    def toarray(self) -> np.ndarray:
        """The dense (V, C) table (for small models only: V × C floats)."""
        V, C = self.shape
        out = np.broadcast_to(self.constant, (V, C)).copy()
        if self.word is not None:
            out += self.word[:, None] * self.scale
        values = self.values
        rows = np.repeat(np.arange(V), np.diff(values.indptr))
        out[rows, values.indices] = values.data
        return out


# add_product gathers at most this many (document entry, pair) products at a time (12 MB),
# and sums them for at most this many cells at a time (1 MiB: in a core's own cache).
PRODUCTS = 2**20
PRODUCT_CELLS = 2**17
# It multiplies the table's rows that F's entries take as dense rows instead when they
# are at most this many cells (32 MB), and F's entries times the classes are at most
# TOUCHED_FACTOR times the products (few classes, many pairs a word: 20 Newsgroups with
# word pairs, 20 classes, has 12 products an entry).
TOUCHED_CELLS = 2**22
TOUCHED_FACTOR = 2


def add_product(
    F, table, out: np.ndarray, lengths: np.ndarray | None = None,
    before: Callable | None = None, after: Callable | None = None,
) -> None:  # fmt: skip
    """out += F table, for F (n, V) and table (V, C) CSR matrices and ``out`` a
    C-contiguous float64 ndarray (n, C); ``lengths`` the entries of each row of
    ``table``, if the caller keeps them. The same floats as scipy's ``F @ table``
    (``csr_matmat``) added into ``out``.

    ``before(first, last, rows)`` and ``after(first, last, rows)``, if given, are called
    with each range of rows ``out[first:last]`` (``rows``, a view) before the product's
    rows are added into them and after: ``before`` may fill them (``out`` may then be
    uninitialised), ``after`` add something more, while they are in the caches.

    A cell of the product is the sum, from 0, of the products F_ij table_jc of its row's
    entries j, in their order. Here the table's rows that F's entries take are gathered
    one after another (scipy's ``csr_row_index``, what ``table[rows]`` runs), each
    multiplied by its entry's value (``csr_scale_rows``), and added in that order into
    zeroed cells (``csr_todense``, what ``toarray`` runs): the same additions from 0 in
    the same order, which are then added into ``out`` as ``toarray`` of the product
    would be. ``csr_matmat`` keeps a row's sums with a list of the classes it touched
    and copies them out, and ``toarray`` then adds them: 1.9 times this time against
    20,000 classes. A few rows at a time (:data:`PRODUCT_CELLS` cells), their products
    gathered :data:`PRODUCTS` at a time at most (a row's entries in turns, if it has
    more; one entry's row more, at most).

    Against few classes, the table's rows that F takes are made dense rows once instead
    (:func:`_touched_rows`), and a range's products are added into its zeroed cells by
    scipy's ``csr_matvecs`` (what ``F @ dense`` runs): each entry's value times its
    row, added from 0 in the order of the entries, as above; the cells of the classes
    a row has no pair of add a product ±0.0 (F's values are finite), which changes no
    sum from +0.0 (it is never -0.0) and no other. On a batch of 1,000 documents of 20
    Newsgroups' test split against its default model with word pairs (342,000 entries,
    4 million products), 23.5 ms against 19.6 ms.
    """
    n, C = out.shape
    if lengths is None:
        lengths = np.diff(table.indptr)
    taken = lengths[F.indices]  # the pairs of each entry of F
    at = np.zeros(taken.size + 1, dtype=np.int64)  # where each entry's products start
    np.cumsum(taken, out=at[1:])
    gather, scale, scatter = _sparse_kernels()
    if gather is None:  # scipy's private functions gone: the same floats, slower
        if before is not None:
            before(0, n, out)
        out += (F @ table).toarray()
        if after is not None:
            after(0, n, out)
        return
    index = table.indices.dtype
    if table.indptr.dtype != index or index not in (np.int32, np.int64):
        index = np.int64
    table = (
        np.asarray(table.indptr, dtype=index), np.asarray(table.indices, dtype=index),
        np.asarray(table.data, dtype=np.float64),
    )  # fmt: skip
    F_ptr = np.asarray(F.indptr, dtype=np.int64)
    F_cols = np.asarray(F.indices, dtype=index)
    F_values = np.asarray(F.data, dtype=np.float64)
    ones = bool((F_values == 1.0).all())  # 1 × w is w
    touched = _touched_rows(F_cols, F_values, table, lengths, C, int(at[-1]), gather, scatter)
    step = max(1, PRODUCT_CELLS // max(C, 1))
    sums = np.empty((min(step, n), C))
    for first in range(0, n, step):
        last = min(first + step, n)
        rows = out[first:last]
        if before is not None:
            before(first, last, rows)
        start, end = int(F_ptr[first]), int(F_ptr[last])  # the rows' entries
        if at[end] > at[start]:
            part = sums[: last - first]
            part[:] = 0.0
            if touched is not None:
                columns, dense_rows = touched
                _matvecs()(last - first, dense_rows.shape[0], C,
                           (F_ptr[first : last + 1] - start).astype(index),
                           columns[start:end], F_values[start:end], dense_rows, part)  # fmt: skip
                start = end
            while start < end:  # at most PRODUCTS products a turn (one entry at least)
                stop = int(np.searchsorted(at, at[start] + PRODUCTS, side="right")) - 1
                stop = min(max(stop, start + 1), end)
                top = int(np.searchsorted(F_ptr, start, side="right")) - 1
                bottom = int(np.searchsorted(F_ptr, stop - 1, side="right"))
                ptr = at[np.clip(F_ptr[top : bottom + 1], start, stop)] - at[start]
                ptr = ptr.astype(index)  # the turn's rows [top, bottom): their products
                cols = np.empty(int(ptr[-1]), dtype=index)
                values = np.empty(cols.size)
                gather(stop - start, F_cols[start:stop], *table, cols, values)
                if not ones:
                    scale(stop - start, C, (at[start : stop + 1] - at[start]).astype(index),
                          cols, values, F_values[start:stop])  # fmt: skip
                scatter(bottom - top, C, ptr, cols, values, part[top - first : bottom - first])
                start = stop
            rows += part
        else:  # no product: 0 added all the same (-0.0 + 0.0 is 0.0, as F @ table's)
            rows += 0.0
        if after is not None:
            after(first, last, rows)


def _touched_rows(F_cols, F_values, table, lengths, C: int, products: int, gather, scatter):
    """``(columns, rows)``: the rows of ``table`` (``(indptr, indices, data)``, its
    pairs' lengths ``lengths``) that F's entries (``F_cols``, ``F_values``) take, dense,
    float64 (T, C), and each entry's row among them (its column of F renumbered), for
    :func:`add_product`; None where that is not worth it (:data:`TOUCHED_FACTOR`), the
    rows are more than :data:`TOUCHED_CELLS` cells, a value of F is not finite (its
    product with 0 is not 0), or a row of the table taken holds a class twice or out of
    order (its values would be summed first)."""
    if not products or F_cols.size * C > TOUCHED_FACTOR * products:
        return None
    V = lengths.size
    taken = np.zeros(V, dtype=bool)
    taken[F_cols] = True
    rows = np.flatnonzero(taken).astype(F_cols.dtype)
    if rows.size * C > TOUCHED_CELLS or not np.isfinite(F_values).all():
        return None
    indptr, indices, data = table
    ptr = np.zeros(rows.size + 1, dtype=indptr.dtype)
    np.cumsum(lengths[rows], out=ptr[1:])
    cols, values = np.empty(int(ptr[-1]), dtype=indices.dtype), np.empty(int(ptr[-1]))
    gather(rows.size, rows, indptr, indices, data, cols, values)
    up = np.diff(cols) > 0  # each row's classes ascending (a row's first may be any)
    up[ptr[1:-1][(ptr[1:-1] > 0) & (ptr[1:-1] < cols.size)] - 1] = True
    if not up.all() or (cols.size and (cols.min() < 0 or cols.max() >= C)):
        return None
    dense = np.zeros((rows.size, C))
    scatter(rows.size, C, ptr, cols, values, dense)
    where = np.empty(V, dtype=F_cols.dtype)  # (only the rows taken are read)
    where[rows] = np.arange(rows.size, dtype=F_cols.dtype)
    return where[F_cols], dense


@cache
def _matvecs():
    """scipy's compiled product of a CSR matrix and a dense one (``csr_matvecs``)."""
    from ..compiled import sparsetools

    return sparsetools().csr_matvecs


@cache
def _sparse_kernels():
    """scipy's compiled gather of CSR rows, scaling of CSR rows and densify of a CSR
    matrix (private: None if absent), from :func:`nbclass.compiled.sparsetools` when
    first used, without importing ``scipy.sparse``."""
    from ..compiled import sparsetools

    try:
        kernels = sparsetools()
        return kernels.csr_row_index, kernels.csr_scale_rows, kernels.csr_todense
    except (ImportError, AttributeError):  # pragma: no cover (every scipy supported has them)
        return None, None, None


def weights_dot(F, W, bias: np.ndarray | None = None) -> np.ndarray:
    """F W for features F (n, V) and weights W, an ndarray or :class:`SparseWeights`;
    F W + ``bias`` (C,) if given (added to F W: the same floats)."""
    if isinstance(W, SparseWeights):
        return W.dot(F, bias)
    out = np.asarray(F @ W)
    if bias is not None:
        out += bias
    return out


def weights_column(W, c: int) -> np.ndarray:
    """W[:, c], shape (V,), for either form of W."""
    if isinstance(W, SparseWeights):
        return W.column(c)
    return W[:, c]


def weights_at(W, words: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """W_jc at the pairs (``words``, ``classes``), for either form of W."""
    if isinstance(W, SparseWeights):
        return W.at(words, classes)
    return W[words, classes]


def gamma_sums(X, table, beta: float) -> np.ndarray:
    """Σ_j [lnΓ(a_jc + x_j) − lnΓ(a_jc)] with a_jc = table_jc + β, for the documents X
    (csr_matrix (n, V)) and a CSR table (V, C): ndarray (n, C).

    Off the pairs a_jc = β for every class, so each document's entries give one number
    Σ_j [lnΓ(β + x_j) − lnΓ(β)] for all classes; at the pairs its entries and the table's
    row are joined, (entry, class) by (entry, class), and the difference is added: work
    in proportion to the pairs the documents' words have, never n × V × C.
    """
    from ..compiled import gammaln

    n, C = X.shape[0], table.shape[1]
    x = X.data.astype(np.float64)
    doc = np.repeat(np.arange(n), np.diff(X.indptr))
    base_terms = gammaln(beta + x) - gammaln(beta)
    out = np.zeros((n, C))
    out += np.bincount(doc, weights=base_terms, minlength=n)[:, None]
    starts, lengths = table.indptr[X.indices], np.diff(table.indptr)[X.indices]
    pairs = int(lengths.sum())
    if not pairs:
        return out
    entry = np.repeat(np.arange(x.size), lengths)
    offsets = np.arange(pairs) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    at = np.repeat(starts, lengths) + offsets
    a = table.data[at].astype(np.float64) + beta
    xe = x[entry]
    terms = gammaln(a + xe) - gammaln(a) - base_terms[entry]
    cells = doc[entry] * C + table.indices[at]
    out += np.bincount(cells, weights=terms, minlength=n * C).reshape(n, C)
    return out
