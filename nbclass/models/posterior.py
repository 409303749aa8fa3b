"""Posterior predictive in log space: scores = X @ W + b, then a log-softmax.

For both event models the joint log-likelihood b_c = log π_c + log p(x | y = c) is linear in
the document (seed 004: "NB is a generalized linear model"):

- multinomial: log p(x | c) = Σ_j x_j log θ_jc, so W = log θ and b = log π
  (the multinomial coefficient does not depend on c and cancels);
- Bernoulli: log p(x | c) = Σ_{j: x_j=1} [log θ_jc − log(1 − θ_jc)] + Σ_j log(1 − θ_jc),
  so W = log θ − log(1 − θ) and b = log π + Σ_j log(1 − θ_jc), the absent-word sum computed
  once per class (exactly, from the histogram of D_jc, see
  :func:`nbclass.models.estimators.bernoulli_absent_total`); scoring touches only the words a
  document contains.

Then p(y = c | x) = exp(b_c − logsumexp_c' b_c') (seed 000, "log-sum-exp trick").

Infinities are answers, never NaN. Under ``mle`` a word with θ_jc = 0 makes class c
impossible for any document containing it (weight −inf). A Bernoulli word with θ_jc = 1
makes c impossible for any document *lacking* it; its (+inf) weight is kept out of W and b
and checked by counting such words instead. When every class is impossible for a document,
its log posterior is −inf everywhere and it has no label.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # scipy is imported where it is used, so fitting never loads it
    import scipy.sparse as sp

from ..counting.counts import Counts
from ..counting.csr import CSR, as_csr
from ..text.vectorizer import binarize
from .estimators import (
    CELL_FRACTIONS,
    FRACTION_BLOCK_CELLS,
    EstimatorSettings,
    Prepared,
    bernoulli_absent_total,
    bernoulli_weights,
    cell_log_fractions,
    fractions_into,
    multinomial_log_theta,
)
from .sparsity import (
    SparseWeights,
    csr_table,
    dense,
    dense_cells,
    is_sparse,
    weights_at,
    weights_dot,
)
from .textmodels import (
    class_log_prior,
    class_totals,
    complement_weights,
    dcm_scorer,
    document_features,
    entry_features,
    idf_weights,
    multinomial_weights,
    normalise_weights,
    polya_scorer,
    resolve_prior,
    sparse_weights,
    table_rows,
    transformed_cells,
    transformed_counts,
)


@dataclass(frozen=True, eq=False)
class LinearScorer:
    """Joint log-likelihood of documents as a linear function of their counts.

    Attributes
    ----------
    weights : ndarray of shape (V, C), or SparseWeights
        W; may hold −inf (a word that makes a class impossible), never +inf or NaN. A
        :class:`nbclass.models.sparsity.SparseWeights` past
        :data:`nbclass.models.sparsity.DENSE_CELLS` cells: per-class constants plus
        corrections at the nonzero pairs, the same scores to rounding.
    bias : ndarray of shape (C,)
        b = log π (+ the Bernoulli absent-word sum).
    binary : bool
        Score ``1[X > 0]`` (Bernoulli) instead of ``X`` (multinomial).
    required : csr_matrix of shape (V, C), or None
        Bernoulli words with θ_jc = 1: a document lacking one is impossible for class c.
    n_required : ndarray of shape (C,), or None
        How many such words each class has (the column sums of ``required``).
    tf : {"raw", "log"}
        Term-frequency transform of the counts (:mod:`nbclass.models.textmodels`).
    idf : ndarray of shape (V,), or None
        idf_j multiplying the counts, if ``--idf``.
    length_norm : bool
        Divide each document's features by their Euclidean length.
    """

    weights: np.ndarray
    bias: np.ndarray
    binary: bool
    required: sp.csr_matrix | None = None
    n_required: np.ndarray | None = None
    tf: str = "raw"
    idf: np.ndarray | None = None
    length_norm: bool = False

    def words(self, rows: np.ndarray) -> LinearScorer:
        """This scorer for documents that hold only the words ``rows`` (R,): X of shape (n, R)."""
        return replace(
            self,
            weights=self.weights[rows],
            required=None if self.required is None else self.required[rows],
            idf=None if self.idf is None else self.idf[rows],
        )

    def prepare(self) -> None:
        """Make now what scoring makes once and keeps (the corrections of sparse weights:
        :meth:`nbclass.models.sparsity.SparseWeights.prepare`), before workers are forked."""
        if isinstance(self.weights, SparseWeights):
            self.weights.prepare()

    def features(self, X: sp.csr_matrix) -> sp.csr_matrix:
        """f(X), what the weights multiply: 1[X > 0], X, or its transform; (n, V)."""
        if self.binary:
            return binarize(X)
        if self.tf == "raw" and self.idf is None and not self.length_norm:
            return X
        return document_features(X, self.tf, self.idf, self.length_norm)

    def feature_kind(self):
        """What :meth:`features` of a matrix depends on besides the matrix, where scorers
        of other weights may share them (the choice's candidates of one feature set):
        ``"presence"`` (also :class:`nbclass.models.textmodels.DcmScorer`'s) or the tf;
        None for features made with idf or the length norm (not shared)."""
        if self.binary:
            return "presence"
        return None if self.idf is not None or self.length_norm else self.tf

    def takes_columns(self) -> bool:
        """Whether :meth:`joint_log_likelihood` of documents given as a CSC matrix is
        the floats it gives for them as CSR with each row's entries in column order:
        dense weights (scipy's product adds each cell's terms in column order either
        way, :func:`nbclass.models.choosing._by_columns`) and features made entry by
        entry (no idf, which reads the entries' columns from the indices, no length
        norm, which reads their rows)."""
        return isinstance(self.weights, np.ndarray) and self.idf is None and not self.length_norm

    def joint_log_likelihood(self, X: sp.csr_matrix, features=None) -> np.ndarray:
        """b_c for each document, ndarray of shape (n, C).

        Parameters
        ----------
        X : csr_matrix of shape (n, V)
            Token counts over the scorer's vocabulary.
        features : optional
            ``self.features(X)`` when the caller has them (another scorer's of the same
            :meth:`feature_kind`), never changed.
        """
        X = self.features(X) if features is None else features
        jll = weights_dot(X, self.weights, self.bias)
        if self.required is not None:  # (X scipy's or not: the same product, csr_matmat)
            present = as_csr(X).matmul_sparse(self.required).toarray()
            jll[present < self.n_required] = -np.inf
        return jll

    def entry_scores(self, rows, cols, values, n: int) -> np.ndarray | None:
        """:meth:`joint_log_likelihood` of n documents given by their nonzero counts
        ``values`` at ``(rows, cols)`` (int64, shape (nnz,), sorted by row then column),
        with numpy alone: no sparse matrix, so no scipy. The same floats as the sparse
        product: each row's terms are added one after the other, in column order,
        starting from zero (``numpy.bincount``, a class at a time; a reduction would sum
        long rows pairwise, a different rounding). About seven times the sparse
        product's time, so for small batches. None when the scorer needs the matrix: a
        Bernoulli word whose absence rules a class out is checked by a sparse product.
        """
        if self.required is not None or isinstance(self.weights, SparseWeights):
            return None
        if self.binary:
            values = np.ones(values.size)
        else:
            values = values.astype(np.float64)  # a copy: the caller's counts stay
            if not (self.tf == "raw" and self.idf is None and not self.length_norm):
                values = entry_features(
                    values, cols, rows, n, self.tf, self.idf, self.length_norm
                )
        weights = self.weights[cols]  # (nnz, C)
        jll = np.empty((n, len(self.bias)))
        for c in range(jll.shape[1]):
            jll[:, c] = np.bincount(rows, weights=weights[:, c] * values, minlength=n)
        return jll + self.bias

    def contributions(self, X: sp.csr_matrix, a: np.ndarray, b: np.ndarray) -> sp.csr_matrix:
        """Each word's share of the log-odds of class a_i against class b_i.

        Entry (i, j) is f(x_ij) (W[j, a_i] − W[j, b_i]) with f as in :meth:`features`
        (the identity, 1[x > 0], or the tf/idf/length transform), stored where x_ij > 0.
        When both classes are possible, b_a − b_b = (row i's sum) + :meth:`bias_difference`,
        exactly the log-odds
        log p(a | x) − log p(b | x) up to rounding.

        Parameters
        ----------
        X : csr_matrix of shape (n, V)
        a, b : int ndarray of shape (n,)

        Returns
        -------
        csr_matrix of shape (n, V), float
        """
        F = self.features(X).tocsr()
        rows = np.repeat(np.arange(F.shape[0]), np.diff(F.indptr))
        cols = F.indices
        with np.errstate(invalid="ignore"):  # −inf − −inf: both classes ruled out (NaN)
            difference = weights_at(self.weights, cols, a[rows]) - weights_at(
                self.weights, cols, b[rows]
            )
        import scipy.sparse as sp

        return sp.csr_matrix(
            (F.data * difference, F.indices.copy(), F.indptr.copy()), shape=F.shape
        )

    def bias_difference(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """b_a − b_b per document, shape (n,): the log-odds of a document with no word."""
        return self.bias[a] - self.bias[b]


def make_scorer(
    counts: Counts, settings: EstimatorSettings, prepared: Prepared | None = None, rows=None,
    layout: str | None = None,
):  # fmt: skip
    """The scorer of ``counts`` under ``settings`` (model, estimator, priors, transforms).

    ``prepared`` (:class:`nbclass.models.textmodels.Prepared`), the numbers a model file keeps for
    its default settings, supplies the fitted β when it belongs to ``settings`` and
    ``counts``; otherwise β is fitted here.

    ``rows`` (int ndarray of shape (R,), indices into the vocabulary): the scorer of
    documents that hold only those words, scoring X of shape (n, R). Every total (T_c,
    the absent-word sums, the concentrations, β) still covers the whole vocabulary, so
    the scores are those of the whole model, to rounding; only the R words' weights are
    made, which is what makes scoring a few documents against a large vocabulary cheap
    (the held-out folds of :mod:`nbclass.models.choosing`).

    A :class:`LinearScorer` for every model but ``--estimator predictive``
    (:class:`nbclass.models.textmodels.PolyaScorer`) and ``--model dcm``
    (:class:`nbclass.models.textmodels.DcmScorer`, linear in word presences plus a length term);
    ``--model poisson --estimator predictive`` gives a
    :class:`nbclass.models.poisson.NegativeBinomialScorer`.
    All have ``joint_log_likelihood(X)``.

    ``layout``: ``"dense"`` makes (V, C) (or (R, C)) tables of weights, ``"sparse"``
    per-class constants plus corrections at the nonzero (word, class) pairs
    (:mod:`nbclass.models.sparsity`, memory in proportion to the pairs); None chooses
    by size (:func:`nbclass.models.sparsity.dense_cells`). The scores are the same to
    rounding.
    """
    if prepared is not None and prepared.settings == settings:
        settings = prepared.resolved()
    else:
        prepared = None
        settings = resolve_prior(counts, settings)
    V, T_c = len(counts.vocabulary), counts.class_tokens
    if layout is None:
        # The rows= path makes R × C weights, but for these models the dense path makes
        # every word's first (the norms, or the whole table of a predictive).
        whole = (
            rows is None or settings.model == "poisson" or settings.estimator == "predictive"
            or settings.norm in ("weight", "both")
        )  # fmt: skip
        layout = "dense" if dense_cells(V if whole else len(rows), T_c.size) else "sparse"
    sparse = layout == "sparse"
    if settings.model == "dcm":
        return dcm_scorer(counts, settings, rows, sparse=sparse)
    if settings.class_prior:
        log_pi = class_log_prior(counts, settings.estimator, settings.alpha)
    else:
        log_pi = np.zeros(len(counts.class_count))
    if settings.model == "multinomial" and settings.estimator == "predictive":
        return _words(polya_scorer(counts, settings, sparse), rows)
    if settings.model == "poisson":
        from .poisson import poisson_weights, predictive_scorer, sparse_poisson_weights

        if settings.estimator == "predictive":
            return _words(predictive_scorer(counts, settings, sparse), rows)
        if sparse:
            weights = sparse_poisson_weights(counts, settings, rows)
            return LinearScorer(weights, log_pi, binary=False)
        weights = poisson_weights(counts, settings)
        return _words(LinearScorer(weights=weights, bias=log_pi, binary=False), rows)
    if sparse and settings.model != "bernoulli":
        if settings.norm in ("weight", "both"):  # the norms cover every word
            totals = _totals(counts, settings, prepared, np.arange(0))
            weights = sparse_weights(counts, settings, None, totals)
            weights = weights.divided(_weight_norms(weights, prepared))
            if rows is not None:
                weights = weights[rows]
            bias = np.zeros(len(log_pi))
        else:
            totals = _totals(counts, settings, prepared, rows)
            weights, bias = sparse_weights(counts, settings, rows, totals), log_pi
        return LinearScorer(
            weights=weights, bias=bias, binary=False, tf=settings.tf,
            idf=idf_weights(csr_table(counts.doc_count, rows), counts.n_docs)
            if settings.idf else None,
            length_norm=settings.norm in ("length", "both"),
        )  # fmt: skip
    if settings.model in ("multinomial", "complement") and settings.transformed:
        if rows is not None and settings.norm in ("weight", "both"):  # norms of every word
            return _transformed_scorer(counts, settings, log_pi).words(rows)
        totals = _totals(counts, settings, prepared, rows)
        return _transformed_scorer(counts, settings, log_pi, totals, rows)
    if settings.model in ("multinomial", "complement"):
        complement = settings.model == "complement"
        totals = T_c.sum() - T_c if complement and rows is not None else T_c  # S̃_c or T_c
        weights = _pair_weights(counts, settings, rows, totals)
        if weights is not None:
            return LinearScorer(weights=weights, bias=log_pi, binary=False)
    if settings.model == "complement":
        T = table_rows(counts, "token_count", rows).astype(np.float64)
        totals = None if rows is None else T_c.sum() - T_c  # S̃_c = Σ_j T̃_jc
        weights = complement_weights(T, settings.beta[0], totals, V)
        return LinearScorer(weights=weights, bias=log_pi, binary=False)
    if settings.model == "multinomial":
        T = table_rows(counts, "token_count", rows)
        log_theta = multinomial_log_theta(T, settings.estimator, settings.beta[0], T_c, V)
        return LinearScorer(weights=log_theta, bias=log_pi, binary=False)
    if sparse:
        weights, certain = sparse_bernoulli_weights(counts, settings, rows)
    else:
        weights, certain = _bernoulli_rows(counts, settings, rows)
    # Σ_j log(1 − θ_jc) over every word, and how many words have θ_jc = 1, per class.
    absent, n_certain = zip(*(
        bernoulli_absent_total(histogram, N_c, settings.estimator, settings.beta)
        for histogram, N_c in zip(
            counts.doc_histograms, counts.class_count.tolist()
        )
    ))  # fmt: skip
    bias = log_pi + np.array(absent)
    if not any(n_certain):
        return LinearScorer(weights=weights, bias=bias, binary=True)
    return LinearScorer(
        weights=weights,
        bias=bias,
        binary=True,
        required=certain if sparse else as_csr(certain.astype(np.int64)),
        n_required=np.array(n_certain, dtype=np.int64),
    )


def _pair_weights(counts: Counts, settings: EstimatorSettings, rows, totals):
    """The dense weights of the raw multinomial (log θ_jc) or complement (−log θ̃_jc) of
    the words ``rows`` made from the pairs of a sparse table of integer counts
    (:func:`nbclass.models.estimators.cell_log_fractions`), without the (R, C) table of
    T_jc and its float copies the whole-table formulas make (each of a fold of 20
    Newsgroups' pairs, 201,419 words × 20 classes, is 32 MB: the first candidate scored
    on them raised the fit's peak memory by 123 MB); None where the table is dense,
    small (:data:`nbclass.models.estimators.CELL_FRACTIONS`) or not of integers, or
    every word is scored: the formulas of the whole table then. The same floats: a
    word's T_j = Σ_c T_jc, an integer, is the same float however it is summed."""
    table = counts.token_table  # (as kept: a loaded model's is not made scipy's)
    if rows is None or not is_sparse(table) or table.dtype.kind not in "iu":
        return None
    R, C = len(rows), table.shape[1]
    if R * C < CELL_FRACTIONS:
        return None
    table = as_csr(table)
    V, beta = len(counts.vocabulary), settings.beta[0]
    W = np.empty((R, C))
    step = max(1, FRACTION_BLOCK_CELLS // C)
    for start in range(0, R, step):  # a block of rows at a time: no array of every pair
        stop = min(start + step, R)
        part = table[rows[start:stop]]
        part.sum_duplicates()  # (a canonical table, as the counts keep it, is left as it is)
        lengths = np.diff(part.indptr)
        flat = np.repeat(np.arange(stop - start, dtype=np.int64) * C, lengths)
        flat += part.indices
        if settings.model == "multinomial":
            fractions_into(W[start:stop], flat, part.data, settings.estimator, beta, totals, V)
            continue
        values = part.data.astype(np.float64)
        sums = np.bincount(np.repeat(np.arange(stop - start), lengths), weights=values,
                           minlength=stop - start)  # fmt: skip
        fractions_into(W[start:stop], flat, values, "posterior-mean", beta, totals, V, sums)
    return W


def _bernoulli_rows(counts: Counts, settings: EstimatorSettings, rows):
    """:func:`nbclass.models.estimators.bernoulli_weights` of the words ``rows`` (None:
    every word), the weights and where θ_jc = 1, (R, C) each: made a block of
    :data:`nbclass.models.estimators.FRACTION_BLOCK_CELLS` cells at a time when the rows
    are many, each block from its rows of D_jc, so that the only tables of R × C cells
    are these two (the whole block's D_jc, its floats, the numerators of θ and 1 − θ
    were four more of float64: 80 MB a candidate at 130,000 words × 20 classes). Each
    cell is a function of its own D_jc and N_c alone: the same floats."""
    table = counts.doc_table
    C = table.shape[1]
    step = max(1, FRACTION_BLOCK_CELLS // max(C, 1))
    if rows is None or len(rows) <= step:
        return bernoulli_weights(table_rows(counts, "doc_count", rows), counts.class_count,
                                 settings.estimator, settings.beta)  # fmt: skip
    R = len(rows)
    weights, certain = np.empty((R, C)), np.empty((R, C), dtype=bool)
    for start in range(0, R, step):
        stop = min(start + step, R)
        weights[start:stop], certain[start:stop] = bernoulli_weights(
            dense(table, rows[start:stop]), counts.class_count, settings.estimator,
            settings.beta,
        )  # fmt: skip
    return weights, certain


def _weight_norms(weights: SparseWeights, prepared: Prepared | None) -> np.ndarray:
    """Σ_j |W_jc| of every word, from ``prepared`` when it has them."""
    if prepared is not None and prepared.weight_norms is not None:
        return np.array(prepared.weight_norms)
    return weights.column_abs_sums()


def sparse_bernoulli_weights(counts: Counts, settings: EstimatorSettings, rows=None):
    """The Bernoulli weights w_jc = log θ_jc − log(1 − θ_jc) as
    :class:`nbclass.models.sparsity.SparseWeights` (the same cells as
    :func:`nbclass.models.estimators.bernoulli_weights`), and the words with θ_jc = 1 as
    a CSR matrix of ones (R, C)."""
    from .estimators import bernoulli_fraction, log_fraction

    table = csr_table(counts.doc_count, rows)
    N_c = counts.class_count.astype(np.float64)
    cols = table.indices
    present, absent, _ = bernoulli_fraction(
        table.data.astype(np.float64), N_c[cols], settings.estimator, settings.beta
    )
    certain = absent <= 0
    at = log_fraction(present, absent)
    at[certain] = 0.0
    zero = np.zeros(N_c.size)
    present0, absent0, denominator = bernoulli_fraction(zero, N_c, settings.estimator,
                                                        settings.beta)  # fmt: skip
    constant = log_fraction(present0, absent0)
    unestimated = np.asarray(denominator) <= 0
    constant[unestimated] = -np.inf
    at[unestimated[cols]] = -np.inf
    certain &= ~unestimated[cols]
    weights = SparseWeights(CSR(at, cols.copy(), table.indptr.copy(), table.shape), constant)
    ones = np.ones(table.data.size, dtype=np.int64)
    ones[~certain] = 0
    required = CSR(ones, cols.copy(), table.indptr.copy(), table.shape)
    required.eliminate_zeros()
    return weights, required


def _words(scorer, rows):
    """``scorer`` made for every word, for documents that hold only ``rows`` (if given)."""
    return scorer if rows is None else scorer.words(rows)


def _totals(counts: Counts, settings: EstimatorSettings, prepared: Prepared | None, rows):
    """S_c (or S̃_c for complement) over the whole vocabulary when only ``rows`` are
    scored (from ``prepared`` when it has them); None when every word is."""
    if rows is None:
        return None
    if prepared is not None and prepared.class_totals is not None:
        return np.array(prepared.class_totals)
    return class_totals(counts, settings)


def _transformed_scorer(
    counts: Counts, settings: EstimatorSettings, log_pi, totals=None, rows=None
) -> LinearScorer:
    """Multinomial or complement weights from the transformed sums S_jc (textmodels); of
    the words ``rows`` alone when they and ``totals`` (S_c, or S̃_c for complement, over
    the whole vocabulary) are given."""
    beta, V = settings.beta[0], len(counts.vocabulary)
    C = len(counts.classes)
    if rows is not None and totals is not None and len(rows) * C >= CELL_FRACTIONS:
        # From the nonzero sums (transformed_cells): no (R, C) table of sums
        flat, values, sums = transformed_cells(counts, settings, rows)
        weights = cell_log_fractions(
            (len(rows), C), flat, values, settings.estimator, beta, totals, V,
            sums if settings.model == "complement" else None,
        )  # fmt: skip
        return _transformed_linear(counts, settings, rows, weights, log_pi)
    S = transformed_counts(counts, settings, rows)
    if settings.model == "complement":
        weights = complement_weights(S, beta, totals, V)
        bias = log_pi
    else:
        weights = multinomial_weights(S, settings.estimator, beta, totals, V)
        bias = log_pi
    return _transformed_linear(counts, settings, rows, weights, bias)


def _transformed_linear(counts: Counts, settings: EstimatorSettings, rows, weights, bias):
    """The :class:`LinearScorer` of the transformed sums' ``weights`` (of the words
    ``rows``, or of every word) and ``bias`` (log π)."""
    if settings.norm in ("weight", "both"):
        weights = normalise_weights(weights)
        bias = np.zeros(len(bias))
    return LinearScorer(
        weights=weights,
        bias=bias,
        binary=False,
        tf=settings.tf,
        idf=idf_weights(dense(counts.doc_count, rows), counts.n_docs) if settings.idf else None,
        length_norm=settings.norm in ("length", "both"),
    )


# np.exp(x) is a subnormal number or 0.0 below ln(2^-1022) ≈ −708.40, and numpy takes
# about twenty times as long for such an input as for one whose exp is a normal number;
# a long document leaves a third of its classes' shifted scores below it against 20,000
# classes. Their terms are below 2^-1022 each, and a row's sum, at least 1, rarely sees
# them: :func:`exp_sums` takes their exp only where it could.
SUBNORMAL_EXP = -708.5
LEAST_NORMAL = 2.0**-1022


def exp_sums(shifted: np.ndarray) -> np.ndarray:
    """``np.exp(shifted).sum(axis=1)`` of a 2-d array (−inf allowed), the same floats,
    without numpy's slow exp of the inputs whose exp is subnormal or 0.

    Floating-point addition rounds monotonically, and a row is summed by the same tree
    of additions whatever its values: the row's sum with those terms set to 0 is a
    lower bound of its sum, and with them set to 2^-1022 (more than any of them) an
    upper bound. Where both bounds are one float, that float is the sum; elsewhere
    (a row whose largest terms are themselves tiny) the row is summed with every exp.
    """
    if shifted.size and shifted.min() >= SUBNORMAL_EXP:
        # No tiny term (a row flattened by a calibration's temperature, as a rule): every
        # exp at numpy's speed, without the masks below (0.9 ms against 1.8 ms a block
        # of 52 documents × 20,000 classes).
        return row_totals(np.exp(shifted))
    keep = shifted >= SUBNORMAL_EXP
    terms = np.zeros(shifted.shape)
    np.exp(shifted, out=terms, where=keep)
    np.logical_not(keep, out=keep)  # now the tiny terms
    lower = row_totals(terms)
    if not keep.any():
        return lower
    np.copyto(terms, LEAST_NORMAL, where=keep)
    unsure = lower != row_totals(terms)
    if unsure.any():
        lower[unsure] = row_totals(np.exp(shifted[unsure]))
    return lower


def row_totals(cells: np.ndarray) -> np.ndarray:
    """``cells.sum(axis=1)`` of an (m, C) float array, shape (m,), the same floats. Of two
    columns, C-contiguous: the first plus (0.0 plus the second), what numpy's reduction
    of each row computes (the row's first cell, plus the sum of the others begun at
    0.0: −0.0 and −0.0 sum to +0.0), in a fifteenth of its time: numpy reduces a row
    at a time, and rows of two cells pay its cost per row (the choice's posteriors of
    a fold's 48 candidates of SMS spam at once, 43,200 rows: 0.64 ms against 0.04).

    >>> cells = np.array([[1.5, -0.0], [-0.0, -0.0], [np.inf, 2.0], [0.1, 0.2]])
    >>> np.array_equal(row_totals(cells).view(np.int64), cells.sum(axis=1).view(np.int64))
    True
    """
    if cells.ndim == 2 and cells.shape[1] == 2 and cells.flags.c_contiguous:
        return cells[:, 0] + (0.0 + cells[:, 1])
    return cells.sum(axis=1)


def alone_cut(classes: int) -> float:
    """ln(2^-56 / C): a shifted row of C classes whose every entry but its 0 is below it
    sums to 1 for certain (:func:`alone_rows`)."""
    return float(np.log(2.0**-56 / max(classes, 1)))


def alone_rows(shifted: np.ndarray) -> np.ndarray:
    """Which rows of ``shifted`` (each shifted by its largest entry, which is then 0)
    have ``np.exp(row).sum() == 1.0`` for certain, without an exp: those whose only
    entry at or above ln(2^-56 / C) is their 0, shape (n,) of bool.

    The other C − 1 terms are then each below 2^-56 / C (numpy's exp is within an ulp
    or two), together below 2^-56. However a sum adds them up (numpy's pairwise tree,
    or one by one), each partial sum without the 1 stays below 2^-53 (its roundings
    add at most C ulps), and 1 + p rounds to 1 for every float p < 2^-53, the next
    float above 1 being 1 + 2^-52: every partial sum that holds the 1 is 1, the total
    too. Against 20,000 classes the cut is −48.7, and a document of a few hundred
    words has, as a rule, no other class within 48.7 of its best one (2,077 of the
    first 2,080 test documents of the generated 20,000 classes × 200,000 words).
    """
    cut = alone_cut(shifted.shape[1])
    if 0 < shifted.shape[1] <= COLUMN_CLASSES:  # how many are above it, column by column
        count = np.zeros(shifted.shape[0], dtype=np.uint8)
        for c in range(shifted.shape[1]):
            count += shifted[:, c] >= cut
        return count == 1
    above = shifted >= cut
    # One entry above the cut: the first (argmax of a row of bools) and no other. A
    # count of each row's entries (count_nonzero) turns every bool into an int64 first,
    # four times the comparison's time against 20,000 classes.
    if not above.shape[1]:
        return np.zeros(above.shape[0], dtype=bool)
    rows, first = np.arange(above.shape[0]), above.argmax(axis=1)
    alone = above[rows, first]
    above[rows, first] = False
    alone &= ~above.any(axis=1)
    return alone


def best_classes(log_proba: np.ndarray) -> np.ndarray:
    """The most probable class of each row of ``log_proba`` (n, C), shape (n,): the first
    on ties, as ``predict`` labels; −1 where every class is impossible (the row all −inf).

    >>> best_classes(np.array([[-1.0, -0.5, -0.5], [-np.inf, -np.inf, -np.inf]])).tolist()
    [1, -1]
    """
    if log_proba.ndim == 2 and log_proba.shape[1] == 2:
        best = best_of_two(log_proba)
    else:
        best = log_proba.argmax(axis=1)
    best[np.isneginf(log_proba[np.arange(best.size), best])] = -1
    return best


def best_of_two(cells: np.ndarray) -> np.ndarray:
    """``cells.argmax(axis=1)`` of an (n, 2) array, shape (n,) of np.intp: the first of
    the largest, the second where it is larger than the first, or NaN (numpy's largest)
    where the first is not, in a third of the time (numpy's argmax takes a row at a
    time)."""
    first, second = cells[:, 0], cells[:, 1]
    larger = second > first
    missing = np.isnan(second)
    if missing.any():
        larger |= missing & ~np.isnan(first)
    return larger.astype(np.intp)


# Up to this many classes, a row's largest entry is found column by column (np.maximum
# of each column into the largest so far), and so is how many of a row's entries are
# above alone_cut: numpy's reductions along a row take their steps row by row, which at
# a few classes costs more than the arithmetic (the choice's blocks of 12,000 scores ×
# 16 classes of the multilingual corpus: max 0.55 ms, column by column 0.19 ms). Not
# the argmax: column by column it took 0.77 ms against numpy's 0.29.
COLUMN_CLASSES = 32


def row_max(a: np.ndarray) -> np.ndarray:
    """``a.max(axis=1)`` of a 2-d float array with at least one column, shape (n,): the
    same floats (a maximum is one of the row's numbers whatever the order it is taken
    in; a NaN anywhere in a row gives NaN either way), but for the sign of a row's
    largest entry where it is both 0 and −0 (the two orders may keep either)."""
    if a.shape[1] > COLUMN_CLASSES:
        return a.max(axis=1)
    top = a[:, 0].copy()
    for c in range(1, a.shape[1]):
        np.maximum(top, a[:, c], out=top)
    return top


def log_posterior(jll: np.ndarray, every: bool = False) -> np.ndarray:
    """log p(y = c | x) from joint log-likelihoods, ndarray of shape (n, C).

    Rows where every class is impossible (all −inf) stay all −inf instead of NaN.

    Examples
    --------
    >>> log_posterior(np.array([[1000.0, 1000.0], [-np.inf, -np.inf]])).tolist()
    [[-0.6931471805599453, -0.6931471805599453], [-inf, -inf]]

    Each possible row is b − m − log Σ_c exp(b_c − m), m its largest b_c: the steps of
    ``scipy.special.log_softmax``, the same floats, without importing scipy.special
    (50 ms, a tenth of a bulk predict of 20 Newsgroups' test split). A row whose sum is
    1 for certain (:func:`alone_rows`: a document far more likely in one class than in
    any other) takes no exp at all, and its log, 0, is not subtracted (b − m − 0 is
    b − m, float for float); the others are summed by :func:`exp_sums`. ``every``: the
    rows are not looked at for that (:func:`shifted_log_posterior`), the same floats.
    """
    top = row_max(jll) if jll.shape[1] else np.full(jll.shape[0], -np.inf)
    possible = np.isfinite(top)
    if not possible.all():
        out = np.full(jll.shape, -np.inf)
        out[possible] = log_posterior(jll[possible], every)
        return out
    # Every row possible (as a rule): the same steps in place, two (n, C) arrays.
    return shifted_log_posterior(np.subtract(jll, top[:, None]), every=every)


def shifted_log_posterior(out: np.ndarray, second: np.ndarray | None = None,
                          every: bool = False) -> np.ndarray:  # fmt: skip
    """:func:`log_posterior` of scores already shifted by each row's largest one, in place:
    ``out`` (n, C), every row possible (its largest entry 0), becomes b − m − log Σ_c
    exp(b_c − m), and is returned.

    ``second`` (n,): each row's second largest entry (−∞ where it has none), if the
    caller knows them: a row is then alone (:func:`alone_rows`) where it is below
    :func:`alone_cut`, without a pass over the block (the largest entry, 0, is at or
    above the cut, so the row has one such entry exactly when its second is below).

    A row alone summed all the same gives the same floats: its sum of exps is 1 for
    certain (:func:`alone_rows`), its log 0, and x − 0 is x (−0 and ±inf included). So
    where some rows are alone but not all, up to :data:`COLUMN_CLASSES` classes every
    row is summed, not the others picked out and put back (whose copies cost more than
    the exps they spare at a few classes: SMS spam's choice, 9.7 ms against 3.5); and
    with ``every`` no row is looked at (the choice's held-out posteriors and class
    offsets, whose rows are seldom alone at a few classes: NPS chat's 15 classes, 38 ms
    against 24 ms, of which alone_rows' 30 passes took 9.5).
    """
    if every:
        summed = None
    elif second is None:
        summed = ~alone_rows(out)
    else:
        summed = second >= alone_cut(out.shape[1])
    if summed is None or summed.all() or (out.shape[1] <= COLUMN_CLASSES and summed.any()):
        totals = exp_sums(out)
        with np.errstate(divide="ignore"):
            out -= np.log(totals)[:, None]
    elif summed.any():
        rows = np.flatnonzero(summed)
        totals = exp_sums(out[rows])
        with np.errstate(divide="ignore"):
            out[rows] -= np.log(totals)[:, None]
    return out


# The choice's held-out scores against thousands of classes leave most of a row's
# shifted scores far below its best (at 20,000 classes half of them under −100): terms
# below e^-64 are left out of the exps and bounded instead (more than np.exp of any
# x < −64: e^-64 and 2^-40 of it), as :func:`exp_sums` bounds the subnormal ones.
TAIL_EXP = -64.0
TAIL_BOUND = float(np.exp(TAIL_EXP)) * (1.0 + 2.0**-40)


def posterior_and_evidence(jll: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(log_posterior(jll), scipy.special.logsumexp(jll, axis=1))``, the same floats,
    from one exp of the scores, and that only where b_c − m ≥ :data:`TAIL_EXP`.

    Both shift each row by its largest score m (b − m, the same subtraction). The
    posterior sums exp(b_c − m) over the row; scipy's logsumexp sums the same terms
    with those of the row's largest scores (b_c = m, there b_c − m = 0) left out, s,
    and returns (log1p(s / k) + log k) + m, k the number of them (s itself where it is
    0). The terms below e^-64 are bounded as :func:`exp_sums` bounds its tiny ones: each
    sum is taken with them 0 and with them :data:`TAIL_BOUND`, by one tree of additions
    whatever the values, so the true sum lies between the two. A row's posterior sum
    (at least 1) is then known where its bounds are one float; its evidence where its
    bounds of s are one float, or where both are below 2^-30 (log1p(x) is then between
    0 and 2x) and the evidence of 0 and of 2 s / k are one float (additions round
    monotonically). Every other row takes every exp. A row's log of its sum is
    subtracted from every row, as from the rows :func:`log_posterior` leaves alone:
    their sum is exactly 1 (:func:`alone_rows`), their log 0. Rows with no finite
    score take the two functions' own paths.
    """
    top = row_max(jll) if jll.shape[1] else np.full(jll.shape[0], -np.inf)
    if not np.isfinite(top).all():
        return log_posterior(jll), logsumexp_rows(jll)
    out = np.subtract(jll, top[:, None])
    near = out >= TAIL_EXP
    terms = np.zeros(out.shape)
    np.exp(out, out=terms, where=near)
    totals = terms.sum(axis=1)
    largest = out == 0
    k = np.count_nonzero(largest, axis=1).astype(np.float64)[:, None]
    top = top[:, None]

    def evidence_of(s: np.ndarray, k: np.ndarray, top: np.ndarray) -> np.ndarray:
        s = np.where(s == 0, s, s / k)
        return (np.log1p(s) + np.log(k) + top)[:, 0]

    terms[largest] = 0.0
    s = terms.sum(axis=1, keepdims=True)
    evidence = evidence_of(s, k, top)
    np.logical_not(near, out=near)  # now the tail
    if near.any():
        np.copyto(terms, TAIL_BOUND, where=near)
        s_high = terms.sum(axis=1, keepdims=True)
        terms[largest] = 1.0  # exp(0)
        unsure = totals != terms.sum(axis=1)
        small = s_high / k < 2.0**-30
        with np.errstate(divide="ignore"):
            at_zero = (0.0 + np.log(k) + top)[:, 0]
            at_most = (2.0 * (s_high / k) + np.log(k) + top)[:, 0]
        known = (s == s_high)[:, 0] | (small[:, 0] & (at_zero == at_most))
        unsure |= ~known
        if unsure.any():
            rows = np.flatnonzero(unsure)
            exact = np.exp(out[rows])
            totals[rows] = exact.sum(axis=1)
            exact[largest[rows]] = 0.0
            evidence[rows] = evidence_of(exact.sum(axis=1, keepdims=True), k[rows], top[rows])
    with np.errstate(divide="ignore"):
        out -= np.log(totals)[:, None]
    return out, evidence


def log_evidence(jll: np.ndarray) -> np.ndarray:
    """log p(x) = logsumexp_c b_c, ndarray of shape (n,); −inf for an impossible document.

    For the multinomial model this leaves out the multinomial coefficient of the document,
    which is the same for every class.
    """
    out = np.full(jll.shape[0], -np.inf)
    possible = np.isfinite(jll.max(axis=1))
    out[possible] = logsumexp_rows(jll[possible])
    return out


def logsumexp_rows(a: np.ndarray) -> np.ndarray:
    """``scipy.special.logsumexp(a, axis=1)`` of a 2-d float64 array, shape (n,): scipy's
    steps in numpy, the same floats, without importing scipy.special.

    Each row's largest entries m (k of them) are set apart, the others' exp(a − m) summed,
    s, and the result is log1p(s / k) + log k + m (s itself where it is 0); where that
    is not finite (a row of −inf, +inf or NaN), log Σ exp(a) as it comes.

    >>> logsumexp_rows(np.array([[0.0, 0.0], [1000.0, -np.inf], [-np.inf, -np.inf]])).tolist()
    [0.6931471805599453, 1000.0, -inf]
    """
    a = np.asarray(a, dtype=np.float64)
    if not a.size:
        return np.full(a.shape[0], -np.inf)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        direct = np.log(np.exp(a).sum(axis=1, keepdims=True))
        top = a.max(axis=1, keepdims=True)
        largest = a == top
        rest = np.array(a, copy=True)  # (in a's layout, as scipy's copy: the same sums)
        rest[largest] = -np.inf
        k = largest.astype(np.float64).sum(axis=1, keepdims=True)
        s = np.exp(rest - top).sum(axis=1, keepdims=True)
        s = np.where(s == 0, s, s / k)  # (s ≥ 0 or NaN, k ≥ 0: scipy's signs are +)
        out = np.log1p(s) + np.log(k) + top
    return np.where(np.isfinite(out), out, direct)[:, 0]
