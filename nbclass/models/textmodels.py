"""Text models beyond the plug-in multinomial: transforms, complement NB, Pólya, DCM, prior fit.

Everything here is computed from the stored counts N_c, D_jc and T_jc (documents,
documents, tokens; see :mod:`nbclass.counting.counts`), so models stay count-additive: a model
fitted on A and B is still the sum of the models of A and of B, whatever is chosen here.

Transforms (Rennie, Shih, Teevan & Karger 2003, "Tackling the poor assumptions of naive
Bayes text classifiers", section 4, steps 1-3 and 6). For a document x (counts over the
used vocabulary) the features that multiply the weights are

- ``--tf log``: t_j = log(1 + x_j) instead of x_j (step 1; damps repeated words);
- ``--idf``: t_j ← t_j · idf_j, idf_j = log(N / Σ_c D_jc) (step 2; 0 for a word that is in
  every training document);
- ``--norm length`` (or ``both``): t ← t / ‖t‖₂, so a document's score does not grow with
  its length (step 3).

The per-class sums the estimates are made from, S_jc, are the same transforms applied to
the training documents, as far as the stored counts allow:

- raw: S_jc = T_jc;
- ``--tf log``: S_jc = D_jc · log(1 + T_jc / D_jc) (0 where D_jc = 0): the D_jc documents
  of class c that contain word j are taken to hold it T_jc / D_jc times each. This is
  exactly Σ_{d in c} log(1 + x_dj) when each of them holds it equally often (in
  particular once, the common case), and an upper bound otherwise (Jensen);
- ``--idf``: S_jc ← idf_j · S_jc, exact (idf_j is the same for every document);
- the length normalisation is applied to the scored document only: normalising each
  training document needs its length, which the counts do not keep.

Weight normalisation (``--norm weight`` or ``both``, step 6): each class's weights are
divided by the sum of their absolute values, w_jc ← w_jc / Σ_k |w_kc|. The scores are then
no longer log-probabilities and the class prior is left out (as Rennie et al. do).
``class_prior=False`` leaves log π_c out of every model's scores (a uniform prior).

Models (``b_c`` is the score whose softmax gives p(y = c | x)):

================  ============================================================================
multinomial       θ_jc = (S_jc + β) / (S_c + Vβ); b_c = log π_c + Σ_j t_j log θ_jc
complement        S̃_jc = Σ_{c'≠c} S_jc' (the other classes' sums);
                  θ̃_jc = (S̃_jc + β) / (S̃_c + Vβ); b_c = log π_c − Σ_j t_j log θ̃_jc
                  (Rennie et al.'s eq. 6); without the class prior and with raw counts
                  this is scikit-learn's ComplementNB exactly
predictive        the Dirichlet-multinomial (Pólya) predictive of the whole document,
                  a_jc = T_jc + β, A_c = T_c + Vβ, n = Σ_j x_j:
                  b_c = log π_c + Σ_j [lnΓ(a_jc + x_j) − lnΓ(a_jc)] − [lnΓ(A_c + n) − lnΓ(A_c)]
dcm               Elkan's EDCM (below)
================  ============================================================================

The multinomial coefficient n! / Π_j x_j! is the same for every class and is left out.

DCM (Madsen, Kauchak & Elkan 2005; Elkan 2006, "Clustering documents with an
exponential-family approximation of the Dirichlet compound multinomial distribution").
The EDCM gives a document of n tokens the probability

    p(x | c) = n! / Π_{j: x_j>0} x_j · Γ(s_c) / Γ(s_c + n) · Π_{j: x_j>0} β_jc,
    s_c = Σ_j β_jc,

so a word counts once however often it repeats (burstiness). Elkan's maximum-likelihood
equations are β_jc = D_jc / K_c and K_c = Σ_{d in c} [ψ(s_c + n_d) − ψ(s_c)]; they need only
the document frequencies D_jc and the documents' lengths n_d. The counts keep the total
length T_c, not each n_d, so every document of class c is taken to have the mean length
n̄_c = T_c / N_c. Then s_c·K_c = D_c := Σ_j D_jc gives one equation for s_c:

    s_c · [ψ(s_c + n̄_c) − ψ(s_c)] = D_c / N_c

(the mean number of distinct words per document, matched by the expected number of
distinct words of an n̄_c-token document). Its solution is unique (the left side grows
from 1 to n̄_c as s_c goes from 0 to ∞). The word proportions are smoothed with the
pseudo-count β on document frequencies:

    β_jc = s_c · (D_jc + β) / (D_c + Vβ),

which keeps Σ_j β_jc = s_c and equals Elkan's β_jc = D_jc / K_c when β → 0. The score is
b_c = log π_c + lnΓ(s_c) − lnΓ(s_c + n) + Σ_{j: x_j>0} log β_jc: a linear function of the
word presences (weights log β_jc) plus a term in the document length n.

Prior fit (``--prior-fit``): β maximises the leave-one-out log-likelihood of the integer
counts K_jc the model's estimate is made of (T_jc for multinomial and predictive, the
complement counts T̃_jc for complement, D_jc for dcm), each unit predicted from all the
others of its class:

    L(β) = Σ_{c} Σ_{j: K_jc>0} K_jc log(K_jc − 1 + β) − Σ_c K_c log(K_c − 1 + Vβ),

and for bernoulli (β_1 = β_0 = β, each document's presence bit of each word left out)

    L(β) = Σ_c Σ_j [D_jc log(D_jc − 1 + β) + (N_c − D_jc) log(N_c − D_jc − 1 + β)]
           − Σ_c V N_c log(N_c − 1 + 2β)   (terms with a zero factor dropped).

It depends on a count only through its value, so it is a sum over the distinct values:
cheap. β is searched in [1e-4, 100] (on log β). With ``--tf log`` or ``--idf`` the sums
S_jc are not integers: β is fitted on the raw counts and multiplied by Σ S / Σ K, so the
prior keeps the same weight relative to the data.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp

from ..counting.counts import BLOCK_CELLS, Counts, distinct_values, value_counts
from ..counting.csr import CSR
from .estimators import (
    BETA_RANGE,
    CELL_FRACTIONS,
    FRACTION_BLOCK_CELLS,
    EstimatorSettings,
    Prepared,
    cell_log_fractions,
    log_class_prior,
    log_fraction,
    multinomial_fraction,
    nonzero_cells,
)
from .sparsity import (
    SparseWeights,
    column_sums,
    csr_table,
    dense,
    dense_cells,
    gamma_sums,
    row_sums,
    weights_dot,
)

S_MAX = 1e12  # DCM concentration when a class shows no burstiness at all (the multinomial limit)


# Numbers derived from a whole Counts object, made once per object: counts are never
# changed in place, and fit's choice asks for the same ones under several candidates (the
# fitted β of the multinomial for raw and log tf; the log-tf sums for three candidates).
# Kept as long as the counts live (weakly keyed), each behind its own lock so that two
# threads asking for the same numbers compute them once.
_DERIVED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_DERIVED_LOCK = threading.Lock()


def _derived(counts: Counts, key: tuple, compute):
    """``compute()`` for ``counts`` and ``key``, computed the first time it is asked for."""
    with _DERIVED_LOCK:
        slot = _DERIVED.setdefault(counts, {}).setdefault(key, [threading.Lock(), None])
    with slot[0]:
        if slot[1] is None:
            slot[1] = (compute(),)
    return slot[1][0]


def idf_weights(doc_count: np.ndarray, n_docs: int) -> np.ndarray:
    """idf_j = log(N / Σ_c D_jc), ndarray of shape (V,); 0 for a word in no document.

    Examples
    --------
    >>> np.allclose(idf_weights(np.array([[2, 1], [0, 1]]), 4), [math.log(4 / 3), math.log(4)])
    True
    """
    return idf_of(row_sums(doc_count), n_docs)


def idf_of(df: np.ndarray, n_docs: int) -> np.ndarray:
    """idf_j = log(N / df_j) of the document frequencies ``df`` (V,); 0 where df_j = 0."""
    df = np.asarray(df).astype(np.float64)
    out = np.zeros(df.shape)
    seen = df > 0
    out[seen] = math.log(n_docs) - np.log(df[seen]) if n_docs > 0 else 0.0
    return out


def transformed_entries(
    counts: Counts, settings: EstimatorSettings
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, cols, S)``: the nonzero S_jc of :func:`transformed_counts`, (nnz,) each.

    The sums are 0 where D_jc = 0, so these entries are all of them; computing them alone
    costs memory in proportion to the nonzero counts, not to V × C. Computed once per
    counts and transform (read-only arrays).
    """
    return _derived(
        counts,
        ("entries", settings.tf, settings.idf),
        lambda: _transformed_entries(counts, settings),
    )


def _transformed_entries(counts: Counts, settings: EstimatorSettings):
    rows, cols = counts.nonzero
    S = counts.at_nonzero(counts.token_table, np.float64)  # (the tables: no scipy)
    if settings.tf == "log":
        S = log_tf_sums(S, counts.at_nonzero(counts.doc_table, np.float64))
    if settings.idf:
        S *= idf_weights(counts.doc_table, counts.n_docs)[rows]
    S.flags.writeable = False
    return rows, cols, S


def log_tf_sums(T: np.ndarray, D: np.ndarray) -> np.ndarray:
    """S = D · log(1 + T / D) of token sums ``T`` and document counts ``D`` (float64
    arrays of one shape), computed in ``T`` (changed in place and returned); 0 where
    D = 0 (then T = 0 too): the per-class sums of log term frequencies."""
    np.divide(T, D, out=T, where=D > 0)
    np.log1p(T, out=T)
    T *= D
    return T


def transformed_counts(counts: Counts, settings: EstimatorSettings, words=None) -> np.ndarray:
    """S_jc, the per-class sums of the transformed training counts, ndarray of shape (V, C);
    with ``words`` (sorted indices, (R,)), the rows of those words only, (R, C).

    Computed on the nonzero counts (:func:`transformed_entries`) and placed in zeros: the
    same numbers as the formula over the whole (V, C) array, about four times as fast.
    """
    rows, cols, entries = transformed_entries(counts, settings)
    if words is None:
        S = np.zeros(counts.token_table.shape)
        S[rows, cols] = entries
        return S
    # The rows of the words last asked for are kept for these counts and transform: a
    # choice scores several β on the same fold's words.

    def placed(words: np.ndarray) -> np.ndarray:
        at = np.full(counts.token_table.shape[0], -1, dtype=np.int64)
        at[words] = np.arange(len(words))
        row = at[rows]
        kept = row >= 0
        S = np.zeros((len(words), counts.token_table.shape[1]))
        S[row[kept], cols[kept]] = entries[kept]
        return S

    return _last_rows(counts, ("rows", settings.tf, settings.idf), words, placed)


# Rows of sums summed a block of this many cells at a time (transformed_cells): 1 MB.
SUM_BLOCK_CELLS = 2**17


def transformed_cells(counts: Counts, settings: EstimatorSettings, words: np.ndarray):
    """``(flat, S, sums)``: the nonzero S_jc of the words ``words`` (sorted indices, (R,))
    at their places j·C + c of :func:`transformed_counts`' (R, C) table, ascending, and
    each word's S_j = Σ_c S_jc, (R,), the floats that table's ``sum(axis=1)`` gives (each
    row summed as numpy sums it, in a block of :data:`SUM_BLOCK_CELLS` placed in zeros:
    a row's sum is its C numbers' alone), read-only: the weights made from the nonzero
    cells (:func:`nbclass.models.estimators.cell_log_fractions`) need no (R, C) table of
    sums. The cells of the words last asked for are kept, as :func:`transformed_counts`
    keeps its rows."""
    rows, cols, entries = transformed_entries(counts, settings)
    V, C = counts.token_table.shape

    def cells(words: np.ndarray):
        at = np.full(V, -1, dtype=np.int64)
        at[words] = np.arange(len(words))
        row = at[rows]
        kept = np.flatnonzero(row >= 0)
        flat = row[kept] * C
        flat += cols[kept]
        values = entries[kept]
        if flat.size > 1 and not (flat[1:] > flat[:-1]).all():
            order = np.argsort(flat, kind="stable")
            flat, values = flat[order], values[order]
        sums = np.zeros(len(words))
        step = max(1, SUM_BLOCK_CELLS // max(C, 1))
        block = np.zeros((step, C))
        bounds = np.searchsorted(flat, np.arange(0, len(words) + step, step) * C)
        for b, start in enumerate(range(0, len(words), step)):
            stop = min(start + step, len(words))
            lo, hi = bounds[b], bounds[b + 1]
            block[...] = 0.0
            block.ravel()[flat[lo:hi] - start * C] = values[lo:hi]
            sums[start:stop] = block[: stop - start].sum(axis=1)
        return flat, values, sums

    return _last_rows(counts, ("cells", settings.tf, settings.idf), words, cells)


def _last_rows(counts: Counts, key: tuple, rows, make) -> np.ndarray:
    """``make(rows)`` (``rows``: sorted indices, (R,)), read-only; the result for the rows
    last asked for is kept for ``counts`` and ``key`` and given again while the same rows
    are asked for (the choice's candidates of a fold ask for the same words in turn)."""
    last = _derived(counts, key, lambda: [threading.Lock()])
    rows = np.asarray(rows)
    with last[0]:
        if len(last) == 3 and np.array_equal(last[1], rows):
            return last[2]
    out = make(rows)
    for part in out if isinstance(out, tuple) else (out,):
        part.flags.writeable = False
    with last[0]:
        last[1:] = [rows.copy(), out]
    return out


# table_rows keeps the rows of tables of at most this many cells (512 KB of int64), where
# selecting them is a fixed cost: past it the selection's time grows with the rows, and
# the kept rows of every feature set of a fold (20 Newsgroups: 35,000 words × 20 classes,
# two tables, six sets) raised the peak memory of the fit by a tenth.
KEPT_ROWS_CELLS = 2**16


def table_rows(counts: Counts, name: str, rows) -> np.ndarray:
    """``dense(counts.<name>, rows)`` (``name``: "token_count" or "doc_count") of the
    rows ``rows`` (sorted indices, (R,)). Where they are at most :data:`KEPT_ROWS_CELLS`
    cells they are read-only, and the rows last asked for are kept for these counts, as
    :func:`transformed_counts` keeps its own (:func:`_last_rows`): the choice scores five
    formulas on the same fold's words, each of which took the rows from the sparse table
    again (a quarter of a millisecond each, 150 times in the choice on SMS spam). The
    table is read as the counts keep it (:attr:`Counts.token_table`): a loaded model's
    is not made scipy's for it."""
    table = counts.token_table if name == "token_count" else counts.doc_table
    if rows is None or len(rows) * table.shape[1] > KEPT_ROWS_CELLS:
        return dense(table, rows)
    return _last_rows(counts, ("table rows", name), rows, partial(dense, table))


def document_features(
    X: sp.csr_matrix, tf: str = "raw", idf: np.ndarray | None = None, length_norm: bool = False
) -> sp.csr_matrix:
    """The transformed documents t (float CSR of the same shape as ``X``, (n, V)).

    ``X`` holds token counts; ``idf`` is idf_j (V,) or None. A document with no known word
    stays all zero under the length normalisation.
    """
    X = X.astype(np.float64)  # a copy: the caller's matrix is never changed
    rows = _row_of_entries(X) if length_norm else None
    X.data = entry_features(X.data, X.indices, rows, X.shape[0], tf, idf, length_norm)
    return X


def entry_features(values, cols, rows, n: int, tf: str = "raw", idf=None, length_norm=False):
    """:func:`document_features` of the nonzero counts ``values`` (float64, changed in
    place and returned) of n documents, at columns ``cols`` and rows ``rows`` (needed
    for the length normalisation only), each row's entries in column order."""
    if tf == "log":
        np.log1p(values, out=values)
    if idf is not None:
        values *= idf[cols]
    if length_norm:
        lengths = np.sqrt(np.bincount(rows, values**2, minlength=n))
        scale = np.divide(1.0, lengths, out=np.zeros(lengths.shape), where=lengths > 0)
        values *= scale[rows]
    return values


def _row_of_entries(X: sp.csr_matrix) -> np.ndarray:
    return np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))


def _sum_rows(X: sp.csr_matrix, values: np.ndarray) -> np.ndarray:
    """Per document, the sum of ``values`` (nnz, C) over its entries: ndarray (n, C)."""
    nnz = values.shape[0]
    S = CSR(np.ones(nnz), np.arange(nnz), X.indptr, (X.shape[0], nnz))
    return np.asarray(S @ values)


def normalise_weights(W: np.ndarray) -> np.ndarray:
    """w_jc / Σ_k |w_kc| (Rennie et al. step 6), ndarray of shape (V, C).

    Examples
    --------
    >>> normalise_weights(np.array([[-1.0, 2.0], [-3.0, 2.0]])).tolist()
    [[-0.25, 0.5], [-0.75, 0.5]]
    """
    total = np.abs(W).sum(axis=0)
    return np.divide(W, total, out=np.zeros(W.shape), where=total > 0)


def multinomial_weights(
    S: np.ndarray, estimator: str, beta: float, totals=None, V: int | None = None
) -> np.ndarray:
    """log θ_jc with θ_jc = (S_jc + β) / (S_c + Vβ) (or the MAP / MLE fraction), (R, C).

    ``S`` (R, C) holds the sums of every word (R = V, the default) or of some words, with
    ``totals`` S_c (C,) and ``V`` of the whole vocabulary given.
    """
    S_c = S.sum(axis=0) if totals is None else np.asarray(totals, dtype=np.float64)
    V = S.shape[0] if V is None else V
    if S.ndim == 2 and S.size >= CELL_FRACTIONS:  # from the nonzero sums: the same floats
        flat, values = nonzero_cells(S)
        return cell_log_fractions(S.shape, flat, values, estimator, beta, S_c, V)
    return log_fraction(*multinomial_fraction(S, S_c, V, estimator, beta))


def complement_weights(
    S: np.ndarray, beta: float, totals=None, V: int | None = None
) -> np.ndarray:
    """−log θ̃_jc, θ̃_jc = (S̃_jc + β) / (S̃_c + Vβ), S̃_jc = Σ_{c'≠c} S_jc'; (R, C).

    ``S`` (R, C) holds the sums of every word (the default) or of some words, with
    ``totals`` S̃_c = Σ_j S̃_jc (C,) and ``V`` of the whole vocabulary given.

    Examples
    --------
    >>> S = np.array([[2.0, 0.0], [1.0, 3.0]])  # complement counts [[0, 2], [3, 1]]
    >>> W = complement_weights(S, 1.0)
    >>> np.allclose(W, -np.log([[1 / 5, 3 / 5], [4 / 5, 2 / 5]]))
    True
    >>> np.array_equal(complement_weights(S[1:], 1.0, totals=[3.0, 3.0], V=2), W[1:])
    True
    """
    if totals is not None and S.ndim == 2 and S.size >= CELL_FRACTIONS:
        # From the nonzero sums, with each word's S_j summed as below: the same floats.
        flat, values = nonzero_cells(S)
        return cell_log_fractions(S.shape, flat, values, "posterior-mean", beta, totals,
                                  S.shape[0] if V is None else V, S.sum(axis=1))  # fmt: skip
    complement = S.sum(axis=1, keepdims=True) - S
    return -multinomial_weights(complement, "posterior-mean", beta, totals, V)


def class_totals(counts: Counts, settings: EstimatorSettings, entries=None) -> np.ndarray:
    """The denominators' data part of a multinomial or complement model, (C,): S_c = Σ_j S_jc,
    or for complement S̃_c = Σ_j S̃_jc = S − S_c.

    Summed from the nonzero S_jc (:func:`transformed_entries`; ``entries``, their
    ``(cols, S)``, if the caller has them), memory in proportion to them, not to V × C.
    """
    if entries is None:  # summed once per counts and transform, for both models
        sums, total = _derived(counts, ("class sums", settings.tf, settings.idf), lambda: (
            _class_sums(counts, *transformed_entries(counts, settings)[1:])
        ))  # fmt: skip
    else:
        sums, total = _class_sums(counts, *entries)
    if settings.model == "complement":
        # S − S_c can round to a hair below 0 where it is 0 (one class): it is a sum of
        # nonnegative numbers, and the model file refuses negative totals.
        return np.maximum(total - sums, 0.0)
    return sums.copy()


def _class_sums(counts: Counts, cols: np.ndarray, S: np.ndarray):
    """``(S_c, S)``: the nonzero sums ``S`` at the classes ``cols`` summed by class,
    (C,), and all of them (:func:`class_totals`)."""
    return np.bincount(cols, weights=S, minlength=len(counts.classes)), S.sum()


def sparse_weights(
    counts: Counts, settings: EstimatorSettings, rows=None, totals=None
) -> SparseWeights:
    """The weights of the multinomial or complement model (raw or transformed sums) as
    :class:`nbclass.models.sparsity.SparseWeights`: the value at each
    nonzero pair and the per-class constant of an unseen word (complement: a per-word
    and a per-class term), memory in proportion to the pairs; of the words ``rows``
    (R,) alone if given. ``totals``: S_c (or S̃_c) over every word, if the caller has
    them. The weights are those of the dense path, cell for cell (before any weight
    normalisation): the same fractions, elementwise.
    """
    from .estimators import log_fraction, log_fraction_at, multinomial_fraction

    V, C = len(counts.vocabulary), len(counts.classes)
    beta, estimator = settings.beta[0], settings.estimator
    if settings.transformed:  # S_jc at the pairs, in row-major order (the CSR's)
        r, cols, S = transformed_entries(counts, settings)
        ptr = np.zeros(V + 1, dtype=np.int64)
        np.cumsum(np.bincount(r, minlength=V), out=ptr[1:])
        table = CSR(np.asarray(S, dtype=np.float64), cols, ptr, (V, C))
        if totals is None:
            totals = class_totals(counts, settings, (cols, S))
    else:
        table = csr_table(counts.token_table)  # T_jc as counted: (T_jc + β) is a float
        if totals is None:
            totals = counts.class_tokens.astype(np.float64)
            if settings.model == "complement":
                totals = totals.sum() - totals
    totals = np.asarray(totals, dtype=np.float64)
    word_sums = None
    if settings.model == "complement":
        word_sums = np.asarray(table.sum(axis=1), dtype=np.float64).ravel()
    if rows is not None:
        table = table[rows]
        word_sums = None if word_sums is None else word_sums[rows]
    table.sort_indices()
    cols, values = table.indices, table.data
    word = scale = None
    if settings.model == "complement":  # −log((S_j − S_jc + β) / (S̃_c + Vβ))
        at_rows = np.repeat(np.arange(table.shape[0]), np.diff(table.indptr))
        at = -log_fraction(word_sums[at_rows] - values + beta, totals[cols] + V * beta)
        constant = np.log(totals + V * beta)
        word, scale = -np.log(word_sums + beta), np.ones(C)
    else:  # each pair's numerator; each class's denominator, its log taken once
        numerator, denominators = multinomial_fraction(values, totals, V, estimator, beta)
        at = log_fraction_at(numerator, denominators, cols, in_place=numerator is not values)
        constant = log_fraction(*multinomial_fraction(np.zeros(C), totals, V, estimator, beta))
    # The values have the counts' pattern: they share its (read-only) index arrays, as
    # the corrections share theirs (10 million pairs: 41 MB not copied).
    out = CSR(at, cols, table.indptr, table.shape)
    remake = partial(_weights_values, counts, settings, rows, totals)
    return SparseWeights(out, constant, word, scale, remake=remake)


def _weights_values(counts: Counts, settings: EstimatorSettings, rows, totals):
    """The values of :func:`sparse_weights` made again (the same floats)."""
    return sparse_weights(counts, settings, rows, totals).values


# --- The Pólya (Dirichlet-multinomial) predictive -------------------------------------


@dataclass(frozen=True, eq=False)
class PolyaScorer:
    """Exact posterior predictive of whole documents under the multinomial model.

    Attributes
    ----------
    pseudo : ndarray of shape (V, C), or csr_matrix of shape (V, C)
        a_jc = T_jc + β, the posterior Dirichlet's parameters (tokens plus pseudo-counts);
        or, for large models, T_jc itself as a CSR matrix (its nonzero pairs), with
        a_jc = T_jc + ``beta`` everywhere (:func:`nbclass.models.sparsity.gamma_sums`).
    total : ndarray of shape (C,)
        A_c = Σ_j a_jc = T_c + Vβ.
    log_prior : ndarray of shape (C,)
        log π_c.
    beta : float
        β, when ``pseudo`` holds T_jc.
    """

    pseudo: np.ndarray
    total: np.ndarray
    log_prior: np.ndarray
    beta: float | None = None

    def words(self, rows: np.ndarray) -> PolyaScorer:
        """This scorer for documents that hold only the words ``rows`` (R,): X of shape (n, R)."""
        return replace(self, pseudo=self.pseudo[rows])

    def joint_log_likelihood(self, X: sp.csr_matrix) -> np.ndarray:
        """b_c = log π_c + log p(x | c, training data), ndarray of shape (n, C).

        log p(x | c) = Σ_j [lnΓ(a_jc + x_j) − lnΓ(a_jc)] − [lnΓ(A_c + n) − lnΓ(A_c)], the
        multinomial coefficient left out (it does not depend on c). Only the entries of
        ``X`` are touched.
        """
        from ..compiled import gammaln

        if self.beta is None:
            x = X.data.astype(np.float64)[:, None]
            a = self.pseudo[X.indices]
            words = _sum_rows(X, gammaln(a + x) - gammaln(a))
        else:
            words = gamma_sums(X, self.pseudo, self.beta)
        n = np.asarray(X.sum(axis=1), dtype=np.float64)
        if not self.pseudo.shape[0]:  # no vocabulary: every document is empty, p(x | c) = 1
            return words + self.log_prior
        length = gammaln(self.total + n) - gammaln(self.total)
        return words - length + self.log_prior


def polya_scorer(counts: Counts, settings: EstimatorSettings, sparse=False) -> PolyaScorer:
    """The Pólya predictive scorer of ``counts`` with pseudo-count β and class prior α;
    ``sparse``: from the nonzero pairs (no (V, C) table)."""
    beta = settings.beta[0]
    if sparse:
        V = len(counts.vocabulary)
        return PolyaScorer(
            pseudo=csr_table(counts.token_count), total=counts.class_tokens + V * beta,
            log_prior=_log_prior(counts, settings), beta=beta,
        )  # fmt: skip
    pseudo = dense(counts.token_count).astype(np.float64) + beta
    return PolyaScorer(
        pseudo=pseudo,
        total=pseudo.sum(axis=0),
        log_prior=_log_prior(counts, settings),
    )


def _log_prior(counts: Counts, settings: EstimatorSettings) -> np.ndarray:
    """log π_c (posterior mean), or 0 for every class without ``class_prior``."""
    if not settings.class_prior:
        return np.zeros(len(counts.class_count))
    return class_log_prior(counts, "posterior-mean", settings.alpha)


def class_log_prior(counts: Counts, estimator: str, alpha: float) -> np.ndarray:
    """log π_c of ``counts`` (:func:`nbclass.models.estimators.log_class_prior`), (C,),
    read-only: made once per counts, estimator and α (the choice's candidates of a
    feature set share it)."""

    def compute() -> np.ndarray:
        log_pi = log_class_prior(counts.class_count, estimator, alpha)
        log_pi.flags.writeable = False
        return log_pi

    return _derived(counts, ("log prior", estimator, float(alpha)), compute)


# --- DCM (Elkan's EDCM) -------------------------------------------------------------------


def dcm_concentration(mean_distinct: float, mean_length: float) -> float:
    """s solving s · [ψ(s + n̄) − ψ(s)] = m̄, for m̄ distinct words in n̄ tokens on average.

    The left side increases from 1 (s → 0) to n̄ (s → ∞). When m̄ ≥ n̄ (no word ever
    repeats) the answer is the multinomial limit, ``S_MAX``; when m̄ ≤ 1 it is the smallest
    s searched, 1e-12. One class of :func:`dcm_concentrations`.

    Examples
    --------
    >>> from nbclass.compiled import digamma
    >>> s = dcm_concentration(3.0, 5.0)
    >>> round(float(s * (digamma(s + 5.0) - digamma(s))), 12)
    3.0
    """
    return float(dcm_concentrations(np.array([mean_distinct]), np.array([mean_length]))[0])


def _exps(x: np.ndarray) -> np.ndarray:
    """e^x of each entry by ``math.exp``, the floats of the scalar function (numpy's exp
    may differ from it in the last bit)."""
    return np.fromiter(map(math.exp, x.tolist()), dtype=np.float64, count=x.size)


def dcm_concentrations(mean_distinct: np.ndarray, mean_length: np.ndarray) -> np.ndarray:
    """:func:`dcm_concentration` of every class at once, (C,): m̄_c and n̄_c (C,) float64.

    Bisection on log s, to adjacent floating-point numbers (about 60 halvings): the left
    side increases with s, so the root stays bracketed. Every class takes the steps it
    would take alone, element by element (the same floats as one class at a time; a class
    stops when its bracket cannot be halved, the others go on), so the model is the same
    whatever the number of classes; at 20,000 classes the loop over classes took 1.3 s."""
    from ..compiled import digamma

    mean_distinct = np.asarray(mean_distinct, dtype=np.float64)
    mean_length = np.asarray(mean_length, dtype=np.float64)
    out = np.full(mean_distinct.shape, S_MAX)
    at = np.flatnonzero(~((mean_length <= 0) | (mean_distinct >= mean_length)))
    m, n = mean_distinct[at], mean_length[at]

    def excess(log_s: np.ndarray, where: np.ndarray) -> np.ndarray:
        s = _exps(log_s)
        return s * (digamma(s + n[where]) - digamma(s)) - m[where]

    every = np.arange(at.size)
    low = np.full(at.size, math.log(1e-12))
    high = np.full(at.size, math.log(S_MAX))
    lowest = excess(low, every) >= 0
    out[at[lowest]] = math.exp(math.log(1e-12))
    highest = ~lowest
    highest[highest] = excess(high[highest], every[highest]) <= 0  # S_MAX, as set
    going = np.flatnonzero(~lowest & ~highest)  # the classes still searched
    low, high = low[going], high[going]
    while going.size:
        middle = 0.5 * (low + high)
        done = (middle == low) | (middle == high)
        if done.any():
            a, b, i = low[done], high[done], going[done]
            nearer = np.abs(excess(a, i)) <= np.abs(excess(b, i))
            out[at[i]] = _exps(np.where(nearer, a, b))
            keep = ~done
            going, low, high, middle = going[keep], low[keep], high[keep], middle[keep]
        below = excess(middle, going) < 0
        low = np.where(below, middle, low)
        high = np.where(below, high, middle)
    return out


def _concentration_means(counts: Counts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which classes have a document (C,), and their m̄_c = D_c / N_c and n̄_c = T_c / N_c."""
    D_c = column_sums(counts.doc_count).astype(np.float64)
    T_c = counts.class_tokens.astype(np.float64)
    N_c = counts.class_count.astype(np.float64)
    has = N_c > 0
    return has, D_c[has] / N_c[has], T_c[has] / N_c[has]


def class_concentrations(counts: Counts) -> np.ndarray:
    """The DCM's s_c (C,) of ``counts`` (:func:`dcm_concentrations` of its classes with a
    document, :data:`S_MAX` for the others), made once per counts (or by
    :func:`primed_concentrations`, the same floats)."""

    def compute() -> np.ndarray:
        has, mean_distinct, mean_length = _concentration_means(counts)
        return _every_class(has, dcm_concentrations(mean_distinct, mean_length))

    return _derived(counts, ("concentrations",), compute)


def _every_class(has: np.ndarray, found: np.ndarray) -> np.ndarray:
    """s_c of every class (C,): ``found`` for the classes with a document (``has``),
    :data:`S_MAX` for the others."""
    s = np.full(has.shape, S_MAX)
    s[has] = found
    return s


def primed_concentrations(many: Sequence[Counts]) -> None:
    """:func:`class_concentrations` of each of ``many`` counts made at once, by one
    bisection of all their classes side by side: each class takes the steps it takes
    alone (:func:`dcm_concentrations` is element by element), so each counts gets the
    floats it would get alone, for one loop of about 60 halvings instead of one each (the
    choice's DCM candidates: one per feature set and fold, 30 on SMS spam)."""
    parts = [(counts, *_concentration_means(counts)) for counts in many]
    if not parts:
        return
    found = dcm_concentrations(np.concatenate([part[2] for part in parts]),
                               np.concatenate([part[3] for part in parts]))  # fmt: skip
    start = 0
    for counts, has, mean_distinct, _ in parts:
        s = _every_class(has, found[start : start + mean_distinct.size])
        start += mean_distinct.size
        _derived(counts, ("concentrations",), lambda s=s: s)


@dataclass(frozen=True, eq=False)
class DcmScorer:
    """EDCM scores: word presences times ``weights``, plus ``bias``, plus a length term.

    Attributes
    ----------
    weights : ndarray of shape (V, C), or SparseWeights
        log β_jc, applied to 1[x_j > 0] (:mod:`nbclass.models.sparsity` for large models).
    bias : ndarray of shape (C,)
        log π_c + lnΓ(s_c).
    concentration : ndarray of shape (C,)
        s_c = Σ_j β_jc.
    """

    weights: np.ndarray
    bias: np.ndarray
    concentration: np.ndarray
    binary = True

    def words(self, rows: np.ndarray) -> DcmScorer:
        """This scorer for documents that hold only the words ``rows`` (R,): X of shape (n, R)."""
        return replace(self, weights=self.weights[rows])

    def features(self, X: sp.csr_matrix) -> sp.csr_matrix:
        """1[X > 0], the word presences the weights multiply."""
        from ..text.vectorizer import binarize

        return binarize(X)

    def takes_columns(self) -> bool:
        """Whether the scores of documents given as a CSC matrix are those of the same
        documents as CSR in column order: with dense weights (as
        :meth:`nbclass.models.posterior.LinearScorer.takes_columns` says)."""
        return isinstance(self.weights, np.ndarray)

    def feature_kind(self) -> str:
        """The presences, as :meth:`nbclass.models.posterior.LinearScorer.feature_kind`
        names a Bernoulli scorer's."""
        return "presence"

    def joint_log_likelihood(self, X: sp.csr_matrix, features=None) -> np.ndarray:
        """b_c = log π_c + lnΓ(s_c) − lnΓ(s_c + n) + Σ_{j: x_j>0} log β_jc, (n, C);
        ``features``: ``self.features(X)`` when the caller has them."""
        from ..compiled import gammaln

        n = np.asarray(X.sum(axis=1), dtype=np.float64)
        presence = weights_dot(self.features(X) if features is None else features, self.weights)
        return presence + self.bias - gammaln(self.concentration + n)


def dcm_parameters(
    counts: Counts, beta: float, rows=None, sparse: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """log β_jc (V, C) and s_c (C,) of the EDCM, from N_c, D_jc and T_c (see module doc);
    with ``rows`` (R,), log β_jc of those words only, (R, C); ``sparse``: as
    :class:`nbclass.models.sparsity.SparseWeights` (log s_c + log(β / (D_c + Vβ)) for an
    unseen word, the same cells as the dense table at the pairs)."""
    V, C = counts.doc_table.shape
    D_c = column_sums(counts.doc_count).astype(np.float64)
    s = class_concentrations(counts)
    step = max(1, FRACTION_BLOCK_CELLS // max(C, 1))
    if not sparse and rows is not None and len(rows) > step:
        # A block of rows at a time: each cell is its own D_jc's (the same floats), and
        # the one table of R × C cells is the result (D_jc, its floats, D_jc + β and the
        # log fraction were four more: 18 MB each at 130,000 words × 20 classes).
        log_beta = np.empty((len(rows), C))
        for start in range(0, len(rows), step):
            D = dense(counts.doc_table, rows[start : start + step]).astype(np.float64)
            log_beta[start : start + step] = np.log(s) + log_fraction(D + beta, D_c + V * beta)
        return log_beta, s
    D = csr_table(counts.doc_count, rows) if sparse else table_rows(counts, "doc_count", rows)
    D = D.astype(np.float64)
    if sparse:
        cols = D.indices
        at = np.log(s)[cols] + log_fraction(D.data + beta, D_c[cols] + V * beta)
        constant = np.log(s) + log_fraction(np.full(s.size, beta), D_c + V * beta)
        values = CSR(at, cols.copy(), D.indptr.copy(), D.shape)
        return SparseWeights(values, constant), s
    log_beta = np.log(s) + log_fraction(D + beta, D_c + V * beta)
    return log_beta, s


def dcm_scorer(
    counts: Counts, settings: EstimatorSettings, rows=None, sparse: bool = False
) -> DcmScorer:
    """The EDCM scorer of ``counts``; with ``rows``, of documents holding only those words
    (:func:`nbclass.models.posterior.make_scorer`); ``sparse``: weights from the pairs."""
    from ..compiled import gammaln

    log_beta, s = dcm_parameters(counts, settings.beta[0], rows, sparse)
    log_pi = _log_prior(counts, settings)
    return DcmScorer(weights=log_beta, bias=log_pi + gammaln(s), concentration=s)


# --- Prior fit --------------------------------------------------------------------------


def _value_histogram(K: np.ndarray, positive=None) -> tuple[np.ndarray, np.ndarray]:
    """Distinct positive values of ``K`` and how often each occurs; ``positive``: those
    values already picked out (in any order), if the caller has them."""
    values, n = value_counts(K[K > 0] if positive is None else positive)
    return values.astype(np.float64), n.astype(np.float64)


def multinomial_loo(K: np.ndarray, beta) -> np.ndarray:
    """L(β), the leave-one-out log-likelihood of integer counts K (V, C); β scalar or array.

    Each of the Σ K units (a token, or a document containing a word) is predicted from the
    other units of its class: p = (K_jc − 1 + β) / (K_c − 1 + Vβ).
    """
    return _multinomial_loo_function(K)(beta)


def _multinomial_loo_function(K: np.ndarray, positive=None):
    """β ↦ L(β) for counts K, with the histogram of K's values computed once
    (``positive``: K's positive values, if the caller has them)."""
    return _loo_of_histogram(*_value_histogram(K, positive), column_sums(K), K.shape[0])


def _complement_loo_function(T, nonzero=None, values=None):
    """β ↦ L(β) for the complement counts T̃_jc = T_j − T_jc, without forming them.

    For word j, the C − m_j classes where T_jc = 0 (m_j classes have it) hold T̃_jc = T_j,
    the others T_j − T_jc: the histogram comes from the V totals and the nonzero entries
    (``nonzero``: their ``(rows, cols)``, :attr:`nbclass.counting.counts.Counts.nonzero`,
    and ``values`` the T_jc there; ``T`` an ndarray or a CSR matrix).
    """
    V, C = T.shape
    T_j = row_sums(T)
    if nonzero is None:
        T = dense(T)
        nonzero = np.nonzero(T)
    rows, cols = nonzero
    if values is None:
        values = T[rows, cols]
    absent = C - np.bincount(rows, minlength=V)  # classes without word j
    # The histogram of the positive T̃_jc: T_j, absent[j] times; T_j − T_jc, once each.
    whole = (T_j > 0) & (absent > 0)
    totals, where = distinct_values(T_j[whole])
    others, times = [], []  # the positive T_j − T_jc and their numbers, a block at a time
    for start in range(0, rows.size, BLOCK_CELLS):
        r = rows[start : start + BLOCK_CELLS]
        rest = T_j[r] - values[start : start + BLOCK_CELLS]
        distinct, n = value_counts(rest[rest > 0])
        others.append(distinct)
        times.append(n)
    if not others:  # no nonzero count at all
        others, times = [np.zeros(0, dtype=T.dtype)], [np.zeros(0, dtype=np.int64)]
    others, times = np.concatenate(others), np.concatenate(times)
    distinct, inverse = distinct_values(np.concatenate([totals, others]))
    weights = np.concatenate([np.bincount(where, weights=absent[whole]), times])
    n = np.bincount(inverse, weights=weights)
    K_c = T_j.sum() - column_sums(T)
    return _loo_of_histogram(distinct.astype(np.float64), n, K_c, V)


def _loo_of_histogram(values: np.ndarray, n: np.ndarray, K_c: np.ndarray, V: int):
    """β ↦ L(β) from the distinct positive counts ``values``, how often each occurs ``n``,
    and the class totals ``K_c``."""
    K_c = np.asarray(K_c).astype(np.float64)
    K_c = K_c[K_c > 0][:, None]
    values, n = values[:, None], n[:, None]
    # The parts that do not depend on β, made once for the grid's and the search's 46 calls:
    # the same operations in the same order as n * values * log(values − 1 + β) and
    # K_c * log(K_c − 1 + Vβ), so the same floats.
    weights, less, totals_less = n * values, values - 1, K_c - 1
    # The same columns flat, for one β at a time (the golden-section search's 45 calls):
    # the same operations on the same numbers, and a sum over a column of one is numpy's
    # sum of the flat array (the same tree of additions), so the same floats with half
    # the calls' overhead.
    weights1, less1, K_c1, totals_less1 = (a[:, 0] for a in (weights, less, K_c, totals_less))
    # Each step of one β in place in an array of its own, and the sums by np.add.reduce
    # (what ndarray.sum calls): the same operations on the same arrays, without an
    # array made for each step of the search's 45 calls (their overhead was most of it).
    word_cells, total_cells = np.empty(weights1.size), np.empty(K_c1.size)
    add, log, multiply, add_up = np.add, np.log, np.multiply, np.add.reduce
    # Two classes' terms (the two-class corpora's every fit) summed as numpy sums two
    # numbers, the first plus (0.0 plus the second) (nbclass.models.posterior.
    # row_totals), without a reduction's call (a fifth of a call of the search).
    two = K_c1.size == 2

    def objective(beta) -> np.ndarray:
        if isinstance(beta, float):  # one β: the same floats as the array path's
            log(add(less1, beta, out=word_cells), out=word_cells)
            log(add(totals_less1, V * beta, out=total_cells), out=total_cells)
            words = add_up(multiply(weights1, word_cells, out=word_cells))
            multiply(K_c1, total_cells, out=total_cells)
            if two:
                first, second = total_cells.tolist()
                return words - (first + (0.0 + second))
            return words - add_up(total_cells)
        beta = np.asarray(beta, dtype=np.float64)
        flat = beta.reshape(1, -1)
        words = (weights * np.log(less + flat)).sum(axis=0)
        totals = (K_c * np.log(totals_less + V * flat)).sum(axis=0)
        return (words - totals).reshape(beta.shape)

    return objective


def _bernoulli_loo_function(counts: Counts):
    """β ↦ L(β) of the Bernoulli model with β_1 = β_0 = β (each presence bit left out
    once), with the histograms of D_jc computed once."""
    V = counts.doc_table.shape[0]
    terms = []  # per class: (k, n) pairs of both kinds, and N_c
    for histogram, N_c in zip(counts.doc_histograms, counts.class_count.tolist()):
        if N_c == 0:
            continue
        d = np.array([h[0] for h in histogram], dtype=np.float64)
        n = np.array([h[1] for h in histogram], dtype=np.float64)
        k = np.concatenate([d, N_c - d])  # documents with the word, documents without it
        m = np.concatenate([n, n])
        some = k > 0
        terms.append((k[some][:, None], m[some][:, None], float(N_c)))

    def objective(beta) -> np.ndarray:
        beta = np.asarray(beta, dtype=np.float64)
        flat = beta.reshape(1, -1)
        total = np.zeros(flat.shape[1])
        for k, m, N_c in terms:
            total += (m * k * np.log(k - 1 + flat)).sum(axis=0)
            total -= V * N_c * np.log(N_c - 1 + 2 * flat[0])
        return total.reshape(beta.shape)

    return objective


def loo_objective(counts: Counts, model: str):
    """The function β ↦ L(β) that ``--prior-fit`` maximises for ``model``."""
    if model == "bernoulli":
        return _bernoulli_loo_function(counts)
    # The counts' tables (their sums, shape and values at the pairs: no scipy).
    if model == "complement":
        values = counts.at_nonzero(counts.token_table, np.int64)
        return _complement_loo_function(counts.token_table, counts.nonzero, values)
    K = counts.doc_table if model == "dcm" else counts.token_table
    # The positive counts are those at the nonzero (word, class) pairs, which the counts
    # keep (D_jc > 0 exactly where T_jc > 0): no pass over every cell to find them.
    return _multinomial_loo_function(K, counts.at_nonzero(K, K.dtype))


def fit_beta(counts: Counts, model: str) -> float:
    """The β in ``BETA_RANGE`` maximising the leave-one-out likelihood (see module doc).

    A coarse grid over log β (41 points) finds the best bracket, then a golden-section
    search refines it to a relative precision of about 1e-9. Fitted once per counts and
    model.

    Of two classes (integer counts), complement's β is the multinomial's, the same
    float: T̃_j0 = T_j − T_j0 = T_j1 and T̃_j1 = T_j0, so the complement counts are the
    counts with their two classes swapped. L(β) then has the same histogram of positive
    counts (the same distinct values ascending, the same numbers of each) and the same
    class totals K_c in the other order; a sum of two floats is the same either way
    round, so every value of the search is the same float, and so is its β (the
    choice's complement candidates of a two-class fold fitted it a second time).
    """
    if model == "complement" and _swapped_classes(counts.token_table):
        model = "multinomial"
    return _derived(counts, ("beta", model), lambda: _fit_beta(counts, model))


def _swapped_classes(table) -> bool:
    """Whether ``table``'s complement counts are its own counts with the classes swapped:
    two classes of integer counts (:func:`fit_beta`)."""
    return table.shape[1] == 2 and table.dtype.kind in "iu"


def _fit_beta(counts: Counts, model: str) -> float:
    objective = loo_objective(counts, model)
    lo, hi = (math.log(b) for b in BETA_RANGE)
    grid = np.linspace(lo, hi, 41)
    values = objective(np.exp(grid))
    best = int(np.argmax(values))
    a, b = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    ratio = (math.sqrt(5) - 1) / 2

    def f(t: float) -> float:
        return float(objective(math.exp(t)))

    x1, x2 = b - ratio * (b - a), a + ratio * (b - a)
    f1, f2 = f(x1), f(x2)
    while b - a > 1e-9:
        if f1 >= f2:
            b, x2, f2 = x2, x1, f1
            x1 = b - ratio * (b - a)
            f1 = f(x1)
        else:
            a, x1, f1 = x1, x2, f2
            x2 = a + ratio * (b - a)
            f2 = f(x2)
    candidates = [(values[best], grid[best]), (f1, x1), (f2, x2)]
    return math.exp(max(candidates)[1])


def resolve_prior(
    counts: Counts, settings: EstimatorSettings, entries: np.ndarray | None = None
) -> EstimatorSettings:
    """``settings`` with β replaced by the fitted one when ``prior_fit`` is on.

    ``entries``: the nonzero S_jc of :func:`transformed_entries` under ``settings`` (they
    do not depend on β), if the caller has them already.
    """
    if not settings.prior_fit:
        return settings
    beta = fit_beta(counts, settings.model)
    if settings.model in ("multinomial", "complement") and (settings.tf != "raw" or settings.idf):
        raw = counts.token_table.sum()  # (exact, as scipy's: no scipy needed)
        if raw > 0:
            if entries is None:
                entries = transformed_entries(counts, settings)[2]
            beta *= float(entries.sum()) / float(raw)
    return replace(settings, beta=(beta, beta))


# --- What the one-document path needs from every count -----------------------------------


def needs_preparing(settings: EstimatorSettings) -> bool:
    """Whether scoring under ``settings`` needs numbers made from every count."""
    return settings.prior_fit or (
        settings.model in ("multinomial", "complement") and settings.transformed
    )


def prepare(counts: Counts, settings: EstimatorSettings) -> Prepared | None:
    """The :class:`Prepared` numbers of ``settings`` on ``counts``; None if none are needed.

    DCM needs its concentrations as well; the one-document path leaves it to the batch
    path, so only its fitted β is kept.
    """
    if not needs_preparing(settings):
        return None
    transformed = settings.model in ("multinomial", "complement") and settings.transformed
    # The nonzero S_jc (they do not depend on β): for the prior fit and the class totals.
    entries = transformed_entries(counts, settings)[2] if transformed else None
    resolved = resolve_prior(counts, settings, entries)
    beta = resolved.beta[0] if settings.prior_fit else None
    totals = norms = None
    if transformed:
        totals = tuple(float(v) for v in class_totals(counts, settings))  # (kept)
        if settings.norm in ("weight", "both") and not dense_cells(*counts.token_table.shape):
            weights = sparse_weights(counts, resolved, None, np.array(totals))
            norms = tuple(float(v) for v in weights.column_abs_sums())
        elif settings.norm in ("weight", "both"):
            S = transformed_counts(counts, resolved)
            if settings.model == "complement":
                weights = complement_weights(S, resolved.beta[0])
            else:
                weights = multinomial_weights(S, resolved.estimator, resolved.beta[0])
            norms = tuple(float(v) for v in np.abs(weights).sum(axis=0))
    return Prepared(settings=settings, beta=beta, class_totals=totals, weight_norms=norms)
