"""Several labels per document: one binary naive Bayes per label, from one count.

A multi-label corpus is counted once, as a single-label one is, with each document's
*label set* as its class: the labels sorted, joined by :data:`SEPARATOR` (``"acq,earn"``;
``""`` for a document with no label). The stored counts are therefore the ordinary exact
counts N_s, D_js, T_js of :mod:`nbclass.counting.counts` over label sets s, and update,
merge, unlearn, sync and a Dask fit stay exact with no change. Everything per label is
derived from them (``docs/multi-label.md``):

=========  ====================================  =========================================
symbol     code name                             meaning
=========  ====================================  =========================================
M_sl       ``membership``, (S, L)                1 when label set s holds label l
N_l        ``LabelCounts.class_count``, (L,)     Σ_s N_s M_sl: **documents** with label l
D_jl       ``LabelCounts.doc_count``, (V, L)     Σ_s D_js M_sl: **documents** with l and j
T_jl       ``LabelCounts.token_count``, (V, L)   Σ_s T_js M_sl: **tokens** of j in them
N, D_j,    ``n_docs``, ``word_docs``,            the totals over every label set
T_j        ``word_tokens``
=========  ====================================  =========================================

The binary model of label l has two classes, "not l" and "l": N_¬l = N − N_l,
D_j¬l = D_j − D_jl, T_j¬l = T_j − T_jl (a document is counted once whatever its labels).
Each is scored by the one scorer of its event model (:func:`nbclass.models.posterior.make_scorer`),
and its log-odds s_l(x) = b_l(x) − b_¬l(x) become a probability
p_l(x) = σ(a_l s_l(x) + c_l) by a calibration fitted on held-out scores; label l is
predicted when p_l(x) ≥ t_l, a threshold chosen for F1 (:func:`choose`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..counting.counts import Counts
from .estimators import EstimatorSettings
from .labelsets import SEPARATOR, label_names, labels_of
from .posterior import make_scorer
from .sparsity import SparseWeights, dense_cells, weights_column

if TYPE_CHECKING:
    import scipy.sparse as sp

# A label with fewer sampled positive documents than this shares one threshold, chosen
# for the micro-F1 of all such labels together: the F1 of 1 to 4 positives is too noisy
# to place a threshold of its own.
MIN_THRESHOLD_POSITIVES = 5
# A label with fewer sampled positive (or negative) documents than this shares one
# calibration (a_l, c_l), fitted on all such labels' held-out scores together.
MIN_CALIBRATION_POSITIVES = 20
FOLDS = 5
ASCENT_ROUNDS = 2  # rounds of thresholds for the micro-F1 of every label (fit_decisions)
SEED = 20261126
THRESHOLD_CRITERION = (
    "the highest micro-F1 of the held-out decisions: each label's threshold on its "
    "calibrated probability starts at its own best F1, then is moved, label by label "
    f"({ASCENT_ROUNDS} rounds), to the best micro-F1 of all labels given the others'; labels "
    f"with fewer than {MIN_THRESHOLD_POSITIVES} sampled positives share one threshold; "
    "ties go to the higher threshold, and a threshold of 1 means never"
)
# The settings fit chooses from for a multi-label model (by the held-out micro-F1 at the
# chosen thresholds; ties: the earlier).
CANDIDATES = (
    EstimatorSettings(model="multinomial", idf=True, norm="length"),
    EstimatorSettings(model="multinomial", tf="log", idf=True, norm="length"),
)
# At the defaults each label with MIN_CALIBRATION_POSITIVES sampled positives and
# negatives also chooses its smoothing: the chosen settings' β times one of these scales,
# the one whose calibrated held-out probabilities have the lowest log loss (ties: the
# earlier); the other labels keep the first, 1 (:func:`choose_scales`).
BETA_SCALES = (1.0, 0.3, 3.0)


# --- per-label counts -------------------------------------------------------------------------


def membership(classes: Sequence[str], labels: Sequence[str]) -> sp.csr_matrix:
    """M_sl: 1.0 when label set ``classes[s]`` holds ``labels[l]``, csr_matrix (S, L)."""
    import scipy.sparse as sp

    at = {label: l for l, label in enumerate(labels)}
    ptr, cols = [0], []
    for name in classes:
        cols.extend(sorted(at[label] for label in labels_of(name)))
        ptr.append(len(cols))
    ones = np.ones(len(cols))
    return sp.csr_matrix((ones, cols, ptr), shape=(len(classes), len(labels)))


def _canonical(table) -> sp.csr_matrix:
    """``table`` as a canonical int64 CSR matrix: sorted indices, no stored zero (so D_jl
    and T_jl, zero together, have one pattern)."""
    table = table.tocsr().astype(np.int64)
    table.eliminate_zeros()
    table.sort_indices()
    return table


@dataclass(frozen=True, eq=False)
class LabelCounts:
    """The counts of every label and the totals, derived from label-set counts.

    Attributes
    ----------
    labels : tuple of str, length L
    vocabulary : tuple of str, length V
    n_docs : int
        N, every document (with or without labels).
    class_count : ndarray of shape (L,)
        N_l, the documents with label l.
    doc_count, token_count : csr_matrix of shape (V, L), int64
        D_jl and T_jl: **documents** with label l holding word j, **tokens** of j in them;
        canonical (:func:`_canonical`), their nonzero cells the (word, label) pairs, so
        their memory is in proportion to the pairs, not to V × L.
    word_docs, word_tokens : ndarray of shape (V,)
        D_j and T_j over every document.
    """

    labels: tuple[str, ...]
    vocabulary: tuple[str, ...]
    n_docs: int
    class_count: np.ndarray
    doc_count: sp.csr_matrix
    token_count: sp.csr_matrix
    word_docs: np.ndarray
    word_tokens: np.ndarray

    def binary(self, l: int) -> Counts:
        """The counts of the binary model of label ``l``: classes ``("0", "1")`` =
        (not l, l), N = (N − N_l, N_l), D_j = (D_j − D_jl, D_jl), T_j likewise."""
        D = self.doc_count[:, [l]].toarray().ravel()
        T = self.token_count[:, [l]].toarray().ravel()
        N_l = int(self.class_count[l])
        return Counts(
            classes=("0", "1"),
            vocabulary=self.vocabulary,
            class_count=np.array([self.n_docs - N_l, N_l], dtype=np.int64),
            doc_count=np.column_stack([self.word_docs - D, D]).astype(np.int64),
            token_count=np.column_stack([self.word_tokens - T, T]).astype(np.int64),
        )

    @cached_property
    def paired(self) -> Counts:
        """Every label's binary counts side by side, as one model of 2L classes: class
        2l is "not l", 2l + 1 is "l" (names ``"00000-0"``, ``"00000-1"``, ... sort so).
        Made once: every candidate and β scored on these counts shares them (and the
        sums derived from them, :func:`nbclass.models.textmodels.transformed_entries`)."""
        L = len(self.labels)

        def pairs(total: np.ndarray, part: np.ndarray, dtype=np.int64) -> np.ndarray:
            out = np.empty(part.shape[:-1] + (2 * L,), dtype=dtype)
            np.subtract(total[..., None], part, out=out[..., 0::2], casting="unsafe")
            out[..., 1::2] = part
            return out

        # The tables hold the same integers in int32 when every total fits (half the
        # memory to write and read; every sum of them is taken in int64 or float64).
        largest = max(self.n_docs, int(self.word_tokens.max(initial=0)))
        small = np.int32 if largest < 2**31 else np.int64
        return Counts(
            classes=tuple(f"{l:05d}-{b}" for l in range(L) for b in "01"),
            vocabulary=self.vocabulary,
            class_count=pairs(np.array(self.n_docs), self.class_count),
            doc_count=pairs(self.word_docs, self.doc_count.toarray(), small),
            token_count=pairs(self.word_tokens, self.token_count.toarray(), small),
        )

    def sums(self, tf: str, idf: bool):
        """The transformed sums of every label's binary model that every pair's weight
        needs: ``(S_j, S_l, S_¬l)``, S_j (V,) of the totals, S_l and S_¬l (L,) the sums
        of S_jl and S_j¬l over every word (a word off l's pairs has S_jl = 0 and S_j¬l =
        S_j; :meth:`pair_sums` gives S_jl and S_j¬l at the pairs). S = T, or D · log(1 +
        T / D) with ``tf`` "log", times idf_j = log(N / D_j) with ``idf``
        (:func:`nbclass.models.textmodels.transformed_counts` of the binary counts).
        Computed once per counts and transform, the pairs a block at a time."""
        from .textmodels import _derived

        return _derived(self, ("sums", tf, idf), lambda: self._sums(tf, idf))

    def _sums(self, tf: str, idf: bool):
        whole = word_sums(self, tf, idf)
        L = len(self.labels)
        # np.add.at adds in the order of the pairs, as one bincount of every pair would:
        # the same floats, a block of pairs at a time
        label_sums, other_sums = np.zeros(L), np.zeros(L)
        for rows in self._row_blocks():
            T, D, words, labels = self._pairs_of(rows)
            mine, others = pair_sums(self, tf, idf, T, D, rows[words])
            np.add.at(label_sums, labels, mine)
            others -= whole[rows[words]]
            np.add.at(other_sums, labels, others)
        return _frozen(whole, label_sums, whole.sum() + other_sums)

    def _row_blocks(self, pairs: int = 1 << 20):
        """The words in blocks of consecutive rows of about ``pairs`` pairs each."""
        indptr, V = self.doc_count.indptr, self.doc_count.shape[0]
        ends = np.searchsorted(indptr, np.arange(pairs, indptr[-1] + pairs, pairs), "right")
        start = 0
        for end in np.unique(np.minimum(np.maximum(ends - 1, 1), V)).tolist() + [V]:
            if end > start:
                yield np.arange(start, end)
                start = end

    def _pairs_of(self, rows: np.ndarray, labels: np.ndarray | None = None):
        """The pairs of the words ``rows`` (sorted, (R,)) and, if given, the ``labels``
        (sorted): ``(T, D, words, labels)``, their T_jl and D_jl, their words' places in
        ``rows`` and their labels, (P',) each, in (word, label) order."""
        indptr = self.doc_count.indptr
        starts, lengths = indptr[rows], indptr[rows + 1] - indptr[rows]
        words = np.repeat(np.arange(len(rows)), lengths)
        at = np.arange(words.size, dtype=np.int64)
        at += np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        owners = self.doc_count.indices[at]
        if labels is not None and len(labels) < len(self.labels):
            kept = np.zeros(len(self.labels), dtype=bool)
            kept[labels] = True
            kept = kept[owners]
            at, words, owners = at[kept], words[kept], owners[kept]
        # D and T are nonzero together: one pattern
        return self.token_count.data[at], self.doc_count.data[at], words, owners

    def label_blocks(self, labels: np.ndarray, rows: np.ndarray):
        """The pairs of ``labels`` at the words ``rows`` a block of labels at a time:
        ``(places, pairs)``, ``places`` the block's places in ``labels``, ``pairs`` as
        :meth:`_pairs_of` gives them, about :data:`BLOCK_PAIRS` each."""
        T, D, words, owners = self._pairs_of(rows, labels)
        place = np.full(len(self.labels), -1, dtype=np.int64)
        place[labels] = np.arange(len(labels))
        size = max(1, int(len(labels) * BLOCK_PAIRS // max(1, T.size)))
        block = place[owners] // size
        order = np.argsort(block, kind="stable")  # each block's pairs in (word, label) order
        ends = np.searchsorted(block[order], np.arange(1, -(-len(labels) // size) + 1))
        del block
        start = 0
        for b, end in enumerate(ends.tolist()):
            mine = order[start:end]
            places = np.arange(b * size, min(len(labels), (b + 1) * size))
            yield places, (T[mine], D[mine], words[mine], owners[mine])
            start = end

    def without(self, X: sp.csr_matrix, Y: np.ndarray) -> LabelCounts:
        """These counts less the documents counted as ``X`` (m, V) with labels ``Y``
        (m, L) 0/1: a held-out fold's training counts (subtraction, no recount)."""
        import scipy.sparse as sp

        from ..text.vectorizer import binarize

        B = binarize(X)
        Y = np.asarray(Y).astype(np.int64)  # integer products: the counts stay integers
        Z = sp.csr_matrix(Y)  # a few labels a document: the products are sparse too

        return LabelCounts(
            labels=self.labels,
            vocabulary=self.vocabulary,
            n_docs=self.n_docs - X.shape[0],
            class_count=self.class_count - Y.sum(axis=0),
            doc_count=_canonical(self.doc_count - B.T @ Z),
            token_count=_canonical(self.token_count - X.T @ Z),
            word_docs=self.word_docs - np.asarray(B.sum(axis=0)).ravel(),
            word_tokens=self.word_tokens - np.asarray(X.sum(axis=0)).ravel(),
        )


def _frozen(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    for array in arrays:
        array.flags.writeable = False
    return arrays


def word_sums(counts, tf: str, idf: bool) -> np.ndarray:
    """S_j of every word (V,) over every document: T_j, or D_j · log(1 + T_j / D_j)
    with ``tf`` "log", times idf_j with ``idf``."""
    from .textmodels import idf_of, log_tf_sums

    whole = counts.word_tokens.astype(np.float64)
    if tf == "log":
        whole = log_tf_sums(whole, counts.word_docs.astype(np.float64))
    if idf:
        whole *= idf_of(counts.word_docs, counts.n_docs)
    return whole


def pair_sums(counts, tf: str, idf: bool, T: np.ndarray, D: np.ndarray, words: np.ndarray):
    """S_jl and S_j¬l (:meth:`LabelCounts.sums`) of pairs with T_jl ``T`` and D_jl ``D``
    of the words ``words`` (P',) in ``counts`` (its totals): (P',) float64 each, each
    pair's number as a table of every pair gives it."""
    from .textmodels import idf_of, log_tf_sums

    mine = T.astype(np.float64)
    others = (counts.word_tokens[words] - T).astype(np.float64)
    if tf == "log":
        mine = log_tf_sums(mine, D.astype(np.float64))
        others = log_tf_sums(others, (counts.word_docs[words] - D).astype(np.float64))
    if idf:
        weights = idf_of(counts.word_docs, counts.n_docs)[words]
        mine *= weights
        others *= weights
    return mine, others


@dataclass(frozen=True, eq=False)
class FoldCounts:
    """The per-label counts label-major (csc_matrix (V, L), a label's pairs together),
    less one fold's documents, for the choice's multinomial log-odds (:func:`odds_scorer`)
    a block of labels at a time: every document's D_jl and T_jl (``docs``, ``tokens``,
    shared by every fold) and the fold's (``fold_docs``, ``fold_tokens``, None for every
    document), a block's counts their difference (:meth:`block`). A fold's training
    counts are then the fold's pairs and the totals, not a copy of every pair (at 5,000
    labels, 19 million pairs: 438 MiB each). The other attributes are
    :class:`LabelCounts`', less the fold's."""

    labels: tuple[str, ...]
    vocabulary: tuple[str, ...]
    n_docs: int
    class_count: np.ndarray
    word_docs: np.ndarray
    word_tokens: np.ndarray
    docs: sp.csc_matrix
    tokens: sp.csc_matrix
    fold_docs: sp.csc_matrix | None = None
    fold_tokens: sp.csc_matrix | None = None

    @classmethod
    def of(cls, counts: LabelCounts) -> FoldCounts:
        """``counts`` label-major, its counts in int32 when every one fits (a block's
        are taken in int64 again: :meth:`block`)."""

        def narrow(table):
            small = table.data.size == 0 or table.data.max() < 2**31
            return table.astype(np.int32 if small else np.int64).tocsc()

        return cls(
            counts.labels, counts.vocabulary, counts.n_docs, counts.class_count,
            counts.word_docs, counts.word_tokens, narrow(counts.doc_count),
            narrow(counts.token_count),
        )  # fmt: skip

    def without(self, X: sp.csr_matrix, Y: np.ndarray) -> FoldCounts:
        """:meth:`LabelCounts.without` of every document's counts: the fold's counts
        ``X`` (m, V) with labels ``Y`` (m, L) kept aside."""
        import scipy.sparse as sp

        from ..text.vectorizer import binarize

        B = binarize(X)
        Y = np.asarray(Y).astype(np.int64)
        Z = sp.csr_matrix(Y)
        return replace(
            self, n_docs=self.n_docs - X.shape[0], class_count=self.class_count - Y.sum(axis=0),
            word_docs=self.word_docs - np.asarray(B.sum(axis=0)).ravel(),
            word_tokens=self.word_tokens - np.asarray(X.sum(axis=0)).ravel(),
            fold_docs=(B.T @ Z).tocsc(), fold_tokens=(X.T @ Z).tocsc(),
        )  # fmt: skip

    def block(self, labels: np.ndarray):
        """D_jl and T_jl of the ``labels`` (sorted), canonical csc_matrix (V, L') each:
        the same pairs and counts as :meth:`LabelCounts.without`'s."""
        if labels.size and labels[-1] - labels[0] == labels.size - 1:  # a range: slices
            labels = slice(int(labels[0]), int(labels[-1]) + 1)
        D, T = self.docs[:, labels], self.tokens[:, labels]
        if self.fold_docs is not None:
            D, T = D - self.fold_docs[:, labels], T - self.fold_tokens[:, labels]
        out = []
        for table in (D, T):
            table = table.tocsc().astype(np.int64, copy=False)
            table.eliminate_zeros()
            table.sort_indices()
            out.append(table)
        return out

    def _blocks(self, labels: np.ndarray):
        """``labels`` in blocks of about :data:`BLOCK_PAIRS` pairs: ``(places, labels)``."""
        pairs = np.cumsum(np.diff(self.docs.indptr)[labels])
        total = int(pairs[-1]) if pairs.size else 0
        cuts = np.searchsorted(pairs, np.arange(BLOCK_PAIRS, total, BLOCK_PAIRS), "left") + 1
        start = 0
        for end in [*np.unique(cuts).tolist(), len(labels)]:
            end = min(end, len(labels))
            if end > start:
                yield np.arange(start, end), labels[start:end]
                start = end

    def label_blocks(self, labels: np.ndarray, rows: np.ndarray):
        """:meth:`LabelCounts.label_blocks` of these counts: the pairs of ``labels`` at
        the words ``rows``, a block of labels at a time, in (word, label) order."""
        for places, mine in self._blocks(labels):
            yield places, self._pairs_of(rows, mine)

    def _pairs_of(self, rows: np.ndarray, labels: np.ndarray | None = None):
        """:meth:`LabelCounts._pairs_of` of these counts: ``(T, D, words, labels)`` of
        the pairs of ``labels`` (sorted; None: every label) at the words ``rows``."""
        labels = np.arange(len(self.labels)) if labels is None else np.asarray(labels)
        where = np.full(len(self.vocabulary), -1, dtype=np.int64)
        where[rows] = np.arange(len(rows))
        D, T = self.block(labels)
        owners = np.repeat(labels, np.diff(D.indptr))
        words = where[D.indices]
        kept = np.flatnonzero(words >= 0)
        owners, words = owners[kept], words[kept]
        order = np.lexsort((owners, words))  # (word, label) order
        kept = kept[order]
        return T.data[kept], D.data[kept], words[order], owners[order]

    def sums(self, tf: str, idf: bool):
        """:meth:`LabelCounts.sums` of these counts, the same floats: each label's pairs
        are added in word order, as there, a block of labels at a time."""
        from .textmodels import _derived

        return _derived(self, ("sums", tf, idf), lambda: self._sums(tf, idf))

    def _sums(self, tf: str, idf: bool):
        whole = word_sums(self, tf, idf)
        L = len(self.labels)
        label_sums, other_sums = np.zeros(L), np.zeros(L)
        for places, mine in self._blocks(np.arange(L)):
            D, T = self.block(mine)
            owners = np.repeat(places, np.diff(D.indptr))
            ours, others = pair_sums(self, tf, idf, T.data, D.data, D.indices)
            label_sums[mine] = np.bincount(owners - places[0], weights=ours, minlength=len(mine))
            others -= whole[D.indices]
            other_sums[mine] = np.bincount(owners - places[0], weights=others,
                                           minlength=len(mine))  # fmt: skip
        return _frozen(whole, label_sums, whole.sum() + other_sums)


def label_counts(counts: Counts) -> LabelCounts:
    """The :class:`LabelCounts` of label-set counts: N_l = Σ_s N_s M_sl, D_jl = Σ_s D_js
    M_sl, T_jl = Σ_s T_js M_sl (integer sums of sparse tables, scipy's: the label counts
    are scipy matrices)."""
    import scipy.sparse as sp

    from .sparsity import csr_table

    def table(matrix) -> sp.csr_matrix:  # (csr_table's canonical arrays, not copied)
        canonical = csr_table(matrix)
        return sp.csr_matrix((canonical.data, canonical.indices, canonical.indptr),
                             shape=canonical.shape).astype(np.int64)  # fmt: skip

    labels = label_names(counts.classes)
    M = membership(counts.classes, labels).astype(np.int64)
    D, T = table(counts.doc_count), table(counts.token_count)
    return LabelCounts(
        labels=labels,
        vocabulary=counts.vocabulary,
        n_docs=counts.n_docs,
        class_count=np.asarray(M.T @ np.asarray(counts.class_count, dtype=np.int64)).ravel(),
        doc_count=_canonical(D @ M),
        token_count=_canonical(T @ M),
        word_docs=np.asarray(D.sum(axis=1)).ravel().astype(np.int64),
        word_tokens=np.asarray(T.sum(axis=1)).ravel().astype(np.int64),
    )


def label_matrix(classes: Sequence[str], labels: Sequence[str], y: np.ndarray) -> np.ndarray:
    """Y: whether each document has each label, bool ndarray (n, L), from label-set
    indices ``y`` (n,)."""
    return membership(classes, labels)[np.asarray(y, dtype=np.int64)].astype(bool).toarray()


# --- scoring --------------------------------------------------------------------------------


def scaled(settings: EstimatorSettings, scale: float) -> EstimatorSettings:
    """``settings`` with β times ``scale`` (both of Bernoulli's β_1, β_0); the same object
    for a scale of 1."""
    if scale == 1.0:
        return settings
    return replace(settings, beta=tuple(float(b) * scale for b in settings.beta))


def sparse_odds(settings: EstimatorSettings) -> bool:
    """Whether :func:`odds_scorer` scores labels under ``settings``: the multinomial
    model with a positive estimate for an unseen word (β > 0; β > 1 for ``map``), its
    own β (no ``--prior-fit``) and no weight normalisation (whose norms sum every word)."""
    from .estimators import multinomial_fraction

    return (
        settings.model == "multinomial"
        and settings.estimator in ("posterior-mean", "map")
        and multinomial_fraction(0.0, 0.0, 1, settings.estimator, settings.beta[0])[0] > 0
        and not settings.prior_fit
        and settings.norm in ("none", "length")
    )


def odds_scorer(
    counts: LabelCounts, settings: EstimatorSettings, labels: np.ndarray, rows=None,
    pairs=None, dense: bool | None = None,
):  # fmt: skip
    """The log-odds s_l(x) = b_l(x) − b_¬l(x) of the labels ``labels`` (L',) under
    multinomial ``settings`` (:func:`sparse_odds`) as one linear scorer of L' columns,
    made from the nonzero (word, label) pairs (``docs/maths.md``, scoring from the
    nonzero pairs): with θ_jc = (S_jc + β) / (S_c + Vβ) (or the MAP fraction),

        w_jl = log θ_jl − log θ_j¬l   at the pairs (D_jl > 0),
        w_jl = −log(S_j + β) + k_l,   k_l = log(β / (S_l + Vβ)) + log(S_¬l + Vβ), off them,

    since off l's pairs S_jl = 0 and S_j¬l = S_j. The weights are
    :class:`nbclass.models.sparsity.SparseWeights` (the per-word term −log(S_j + β), the
    per-label constants k_l, the pairs' values), so their memory and the scoring work are
    in proportion to the pairs, not to V × L; the bias is log π_l − log π_¬l of the binary
    model's class prior. ``rows``: score documents that hold only those words (sorted,
    (R,)), every total still over the whole vocabulary. ``pairs``: the labels' pairs at
    those words, ``(at, words, labels)`` as :meth:`LabelCounts._pairs_of` gives them, if
    the caller has them; ``dense``: whether the weights are a table (None: by their size,
    :func:`dense_cells`)."""
    import scipy.sparse as sp

    from .estimators import log_class_prior, log_fraction, log_fraction_at, multinomial_fraction
    from .posterior import LinearScorer
    from .textmodels import idf_of

    V, beta, estimator = len(counts.vocabulary), settings.beta[0], settings.estimator
    whole, label_sums, other_sums = counts.sums(settings.tf, settings.idf)
    rows = np.arange(V) if rows is None else np.asarray(rows)
    place = np.full(len(counts.labels), -1, dtype=np.int64)
    place[labels] = np.arange(len(labels))
    T, D, words, owners = counts._pairs_of(rows, labels) if pairs is None else pairs
    mine, others = pair_sums(counts, settings.tf, settings.idf, T, D, rows[words])
    del T, D
    # log θ at the pairs, each label's denominators' logs taken once (log_fraction_at),
    # in the numerators' own arrays
    values = log_fraction_at(
        *multinomial_fraction(mine, label_sums, V, estimator, beta), owners, in_place=True
    )
    del mine
    values -= log_fraction_at(
        *multinomial_fraction(others, other_sums, V, estimator, beta), owners, in_place=True
    )
    del others
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(np.bincount(words, minlength=len(rows)), out=ptr[1:])
    del words
    table = sp.csr_matrix((values, place[owners], ptr), shape=(len(rows), len(labels)))
    unseen, label_total = multinomial_fraction(0.0, label_sums[labels], V, estimator, beta)
    other_total = multinomial_fraction(0.0, other_sums[labels], V, estimator, beta)[1]
    constant = log_fraction(unseen, label_total) + np.log(other_total)
    word = -np.log(multinomial_fraction(whole[rows], 0.0, V, estimator, beta)[0])
    weights = SparseWeights(table, constant, word, np.ones(len(labels)))
    if dense_cells(len(rows), len(labels)) if dense is None else dense:
        weights = weights.toarray()  # small: a table, as make_scorer makes one
    bias = np.zeros(len(labels))
    if settings.class_prior:
        for i, l in enumerate(labels.tolist()):
            N_l = int(counts.class_count[l])
            prior = log_class_prior(np.array([counts.n_docs - N_l, N_l]), estimator,
                                    settings.alpha)  # fmt: skip
            bias[i] = prior[1] - prior[0]
    return LinearScorer(
        weights=weights, bias=bias, binary=False, tf=settings.tf,
        idf=idf_of(counts.word_docs[rows], counts.n_docs) if settings.idf else None,
        length_norm=settings.norm == "length",
    )  # fmt: skip


# Pairs of one block of labels scored at a time by :func:`odds_blocks`.
BLOCK_PAIRS = 1 << 20


def odds_blocks(
    counts: LabelCounts, settings: EstimatorSettings, labels: np.ndarray, rows, dense: bool
):  # fmt: skip
    """:func:`odds_scorer` of ``labels`` a block of labels at a time: ``(places, scorer)``
    pairs, ``places`` the block's places in ``labels`` and ``scorer`` their log-odds',
    each block of about :data:`BLOCK_PAIRS` pairs. Weights are per-label constants and
    corrections at the pairs, and a document's log-odds for a label is made from that
    label's alone: the same floats as one scorer of every label (as :func:`dense_cells`
    of every label makes it: ``dense``), in memory in proportion to a block's pairs (at
    5,000 labels, every label's weights at once are a few hundred MB). A table
    (``dense``): one block."""
    rows = np.arange(len(counts.vocabulary)) if rows is None else np.asarray(rows)
    if dense:
        yield np.arange(len(labels)), odds_scorer(counts, settings, labels, rows, dense=True)
        return
    for places, pairs in counts.label_blocks(labels, rows):
        yield places, odds_scorer(counts, settings, labels[places], rows, pairs, dense=False)


class LabelScorer:
    """The log-odds s_l(x) = b_l(x) − b_¬l(x) of every label's binary model under
    ``settings``.

    The multinomial model (:func:`sparse_odds`) scores them from the nonzero (word, label)
    pairs, one linear scorer of the labels' log-odds (:func:`odds_scorer`). Every other
    model whose parameters are per class (all but complement) scores the L binary models
    at once as one model of 2L classes, (not l, l) side by side
    (:meth:`LabelCounts.paired`), by the one scorer of its event model
    (:func:`make_scorer`): θ_jc, the Bernoulli sums and the weight norms are per class,
    the class prior's normaliser cancels in b_l − b_¬l, and idf_j = log(LN / L D_j) is
    the binary models' own. Only ``--prior-fit`` differs: it fits one β for every label.
    Complement naive Bayes, whose parameters for a class are the other classes' counts,
    scores each label's binary counts (:meth:`LabelCounts.binary`) in turn.

    ``scales`` (L,): label l is scored with β times ``scales[l]`` (:func:`scaled`; the
    labels of one scale share one scorer, whose columns for them are their own binary
    models'); None: every label with ``settings``' own β.
    ``rows``: score documents that hold only those words (as :func:`make_scorer`)."""

    def __init__(
        self, counts: LabelCounts, settings: EstimatorSettings, rows=None, scales=None
    ):  # fmt: skip
        L = len(counts.labels)
        self.labels = counts.labels
        self.present = counts.class_count > 0  # a label no training document has: −inf
        self.always = counts.class_count == counts.n_docs  # every document has it: +inf
        self.scales = np.ones(L) if scales is None else np.asarray(scales, dtype=np.float64)
        # groups: (scorer, labels); with odds, the scorer's column i is labels[i]'s
        # log-odds, else its columns 2l, 2l + 1 are "not l" and "l".
        scales = np.unique(self.scales).tolist()
        self.odds = all(sparse_odds(scaled(settings, scale)) for scale in scales)
        self.groups, self.scorers = [], []
        for scale in scales:
            mine, labels = scaled(settings, scale), np.flatnonzero(self.scales == scale)
            if self.odds:
                self.groups.append((odds_scorer(counts, mine, labels, rows), labels))
            elif settings.model != "complement":
                self.groups.append((make_scorer(counts.paired, mine, rows=rows), labels))
        if settings.model == "complement":
            self.scorers = [
                make_scorer(counts.binary(l), scaled(settings, self.scales[l]), rows=rows)
                if self.present[l] and not self.always[l]
                else None
                for l in range(L)
            ]

    def _columns(self, labels: np.ndarray, at: np.ndarray):
        """The columns of ``labels`` in their group's scorer: ``(not l, l)``, or
        ``(None, l's column)`` for a scorer of log-odds (``at``: each label's place)."""
        if self.odds:
            return None, at
        return 2 * labels, 2 * labels + 1

    def weights(self, l: int):
        """``(features, w)``: the document transform and the weights (V,) of label ``l``'s
        log-odds, s_l(x) = f(x) · w + const, when its scorer is linear; else None."""
        from .posterior import LinearScorer

        if self.scorers:
            scorer, (no, yes) = self.scorers[l], (0, 1)
        else:
            scorer, labels = next((s, ls) for s, ls in self.groups if l in ls)
            no, yes = self._columns(l, int(np.searchsorted(labels, l)))
        if not isinstance(scorer, LinearScorer) or scorer.required is not None:
            return None
        W = scorer.weights  # a table, or per-class constants and pairs (sparsity.py)
        w = weights_column(W, yes)
        return scorer.features, w if no is None else w - weights_column(W, no)

    def linear(self):
        """``(scorer, W, b)`` with s(x) = f(x) W + b for every label, W (V, L), b (L,),
        ``scorer.features`` the transform f (the same for every β), when the model is
        linear and every label has documents and non-documents; else None."""
        from .posterior import LinearScorer

        if (
            not self.groups or not self.present.all() or self.always.any() or not all(
                isinstance(scorer, LinearScorer) and scorer.required is None
                for scorer, _ in self.groups
            )
        ):  # fmt: skip
            return None
        first = self.groups[0][0]
        L = len(self.labels)
        odds, bias = np.empty((first.weights.shape[0], L)), np.empty(L)
        for scorer, labels in self.groups:
            no, yes = self._columns(labels, np.arange(len(labels)))
            W, b = scorer.weights, np.asarray(scorer.bias)
            bias[labels] = b[yes] if no is None else b[yes] - b[no]
            if isinstance(W, SparseWeights):  # a label at a time
                for i, l in enumerate(labels.tolist()):
                    odds[:, l] = W.column(int(yes[i]))
                    if no is not None:
                        odds[:, l] -= W.column(int(no[i]))
            else:
                W = np.asarray(W)
                odds[:, labels] = W[:, yes] if no is None else W[:, yes] - W[:, no]
        return first, odds, bias

    def log_odds(self, X: sp.csr_matrix) -> np.ndarray:
        """s_l(x) of each document counted as ``X`` (n, V): ndarray (n, L)."""
        n, L = X.shape[0], len(self.labels)
        with np.errstate(invalid="ignore"):
            out = np.zeros((n, L))
            for scorer, labels in self.groups:
                jll = scorer.joint_log_likelihood(X)
                no, yes = self._columns(labels, np.arange(len(labels)))
                out[:, labels] = jll[:, yes] if no is None else jll[:, yes] - jll[:, no]
            for l, scorer in enumerate(self.scorers):
                if scorer is not None:
                    jll = scorer.joint_log_likelihood(X)
                    out[:, l] = jll[:, 1] - jll[:, 0]
        out[:, ~self.present] = -np.inf
        out[:, self.always] = np.inf
        out[np.isnan(out)] = 0.0
        return out


# --- calibration and thresholds -------------------------------------------------------------


def sigmoid(z: np.ndarray) -> np.ndarray:
    """σ(z) = 1 / (1 + e^−z) without overflow, any shape (``scipy.special.expit``)."""
    from ..compiled import expit

    return expit(np.asarray(z, dtype=np.float64))


SCORE_BOUND = 1e3  # |s| beyond this is taken as this when calibrating (an infinite log-odds)


def fit_platt(S: np.ndarray, Y: np.ndarray, M: np.ndarray | None = None) -> np.ndarray:
    """``(a_k, c_k)`` of each column k, maximising Σ_i M_ik log σ(±(a_k S_ik + c_k)): the
    logistic fit of labels ``Y`` (n, K) 0/1 on scores ``S`` (n, K) over the cells
    ``M`` (n, K) bool (default: every cell), by Newton's method on every column at once;
    ndarray (K, 2). a_k ≥ 0.01 / max |S_·k| (the order of the scores is kept). Platt's
    targets (n₊ + 1) / (n₊ + 2) and 1 / (n₋ + 2) instead of 1 and 0 keep it finite when
    the scores separate the labels.

    >>> s, y = np.array([[-2.0], [-1.0], [1.0], [2.0]]), np.array([[0], [1], [0], [1]])
    >>> a, c = fit_platt(s, y)[0]
    >>> round(float(a), 4), abs(round(float(c), 4))  # targets 3/4 and 1/4: symmetric
    (0.2023, 0.0)
    """
    from ..compiled import expit

    S = np.clip(np.asarray(S, dtype=np.float64), -SCORE_BOUND, SCORE_BOUND)
    Y = np.asarray(Y, dtype=np.float64)
    every = M is None or bool(np.all(M))  # then the weights w0 are all 1, and x * 1 is x:
    if every:  # left out, with the masked copy of S
        positives = Y.sum(axis=0)  # sums of 0s and 1s: exact, in any order
        negatives = S.shape[0] - positives
    else:
        M = np.asarray(M, dtype=bool)
        S = np.where(M, S, 0.0)
        w0 = M.astype(np.float64)
        positives = (Y * w0).sum(axis=0)
        negatives = w0.sum(axis=0) - positives
    target = np.where(Y > 0, (positives + 1) / (positives + 2), 1 / (negatives + 2))
    scale = np.maximum(np.abs(S).max(axis=0, initial=0.0), 1.0)
    z = S / scale
    del S
    p, r, w, wz, product = (np.empty_like(z) for _ in range(5))

    def sums(a: np.ndarray, c: np.ndarray):
        np.multiply(a, z, out=p)
        np.add(p, c, out=p)
        expit(p, out=p)  # p = σ(a z + c), as sigmoid gives it
        np.subtract(p, target, out=r)
        if not every:
            np.multiply(r, w0, out=r)
        g_a, g_c = np.multiply(r, z, out=product).sum(axis=0), r.sum(axis=0)
        np.subtract(1, p, out=w)
        np.multiply(w, p, out=w)  # p (1 − p)
        np.add(w, 1e-12, out=w)
        if not every:
            np.multiply(w, w0, out=w)
        np.multiply(w, z, out=wz)
        return g_a, g_c, np.multiply(wz, z, out=product).sum(axis=0), wz.sum(axis=0), w.sum(axis=0)

    return _newton(sums, z.shape[1], scale)


def _newton(sums, K: int, scale: np.ndarray) -> np.ndarray:
    """Platt's ``(a_k, c_k)`` (K, 2) by Newton's method from a = 1, c = 0, with ``sums(a,
    c)`` the gradient and Hessian's sums Σ r z, Σ r, Σ w z², Σ w z, Σ w over the cells
    (r = p − target, w = p (1 − p) + 1e-12, z the scores over ``scale``)."""
    a, c = np.ones(K), np.zeros(K)
    for _ in range(100):
        g_a, g_c, h_aa, h_ac, h_cc = sums(a, c)
        h_aa, h_cc = h_aa + 1e-9, h_cc + 1e-9
        det = h_aa * h_cc - h_ac * h_ac
        step_a = (h_cc * g_a - h_ac * g_c) / det
        step_c = (h_aa * g_c - h_ac * g_a) / det
        a, c = a - step_a, c - step_c
        if max(np.abs(step_a).max(initial=0.0), np.abs(step_c).max(initial=0.0)) < 1e-9:
            break
    return np.column_stack([np.maximum(a, 0.01) / scale, c])


# Blocks of cells summed at a time in a pooled fit (:func:`_pairwise`): a multiple of 8.
_BLOCK = 1 << 16


def _pairwise(block, start: int, end: int) -> tuple:
    """The sums ``block(i, j)`` gives for the cells [i, j), over the cells [start, end),
    as numpy sums one array of them all: by halves (the first rounded down to a multiple
    of 8) down to :data:`_BLOCK` cells, numpy's own pairwise summation, so the floats are
    the same without an array of every cell."""
    n = end - start
    if n <= _BLOCK:
        return block(start, end)
    half = n // 2
    half -= half % 8
    left, right = _pairwise(block, start, start + half), _pairwise(block, start + half, end)
    return tuple(x + y for x, y in zip(left, right))


def fit_platt_cells(s: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``fit_platt(s[:, None], y[:, None])[0]``, the same floats, for the cells of many
    labels together (the rare labels' tens of millions): ``s`` (N,) float64 is clipped
    and scaled in place, ``y`` (N,) bool; each Newton step's arrays are made
    :data:`_BLOCK` cells at a time (:func:`_pairwise`), not five arrays of every cell."""
    from ..compiled import expit

    np.clip(s, -SCORE_BOUND, SCORE_BOUND, out=s)
    positives = np.array([float(np.count_nonzero(y))])
    negatives = s.size - positives
    high, low = float(((positives + 1) / (positives + 2))[0]), float((1 / (negatives + 2))[0])
    largest = max(float(s.max(initial=0.0)), -float(s.min(initial=0.0)))  # max |s|
    scale = np.maximum(np.array([largest]), 1.0)
    np.divide(s, scale, out=s)
    z = s

    def sums(a: np.ndarray, c: np.ndarray):
        def block(i: int, j: int) -> tuple:
            zz = z[i:j]
            p = np.multiply(a, zz)
            p += c
            expit(p, out=p)
            r = np.subtract(p, np.where(y[i:j], high, low))
            w = np.subtract(1, p)
            w *= p
            w += 1e-12
            wz = np.multiply(w, zz)
            return (np.multiply(r, zz).sum(), r.sum(), np.multiply(wz, zz).sum(), wz.sum(),
                    w.sum())  # fmt: skip

        return tuple(np.array([x]) for x in _pairwise(block, 0, z.size))

    return _newton(sums, 1, scale)[0]


def f1_threshold(p: np.ndarray, y: np.ndarray, order=None) -> tuple[float, float]:
    """``(t, F1)``: the threshold on probabilities ``p`` (n,) that maximises the F1 of
    predicting ``p ≥ t`` against labels ``y`` (n,) 0/1, halfway between the lowest
    probability predicted and the next lower one; ties go to the higher threshold. With
    no positive, t = 1 (never predicted by its own threshold) and F1 = 0. ``order``:
    ``np.argsort(-p, kind="stable")``, if the caller has it.

    >>> f1_threshold(np.array([0.9, 0.8, 0.3, 0.1]), np.array([1, 0, 1, 0]))
    (0.2, 0.8)
    """
    p = np.asarray(p, dtype=np.float64)
    y = np.asarray(y)
    P = int(y.sum())
    if P == 0:
        return 1.0, 0.0
    order = np.argsort(-p, kind="stable") if order is None else order
    ps, ys = p[order], y[order]
    tp = np.cumsum(ys)
    k = np.arange(1, p.size + 1)
    f1 = 2 * tp / (k + P)
    ends = np.append(ps[1:] < ps[:-1], True)  # the last of each run of equal p
    f1 = np.where(ends, f1, -1.0)
    best = int(np.argmax(f1))  # first maximum: the fewest predictions, the higher t
    below = ps[best + 1] if best + 1 < ps.size else 0.0
    return float((ps[best] + below) / 2), float(f1[best])


def micro_f1_threshold(p: np.ndarray, Y: np.ndarray, tp: float = 0.0, fp: float = 0.0,
                       fn: float = 0.0, order=None) -> float:
    """The one threshold t on every cell of ``p`` and ``Y`` (n, L') together that gives
    the highest micro-F1 when added to the true positives, false positives and false
    negatives ``tp``, ``fp``, ``fn`` of the other labels' decisions: 2 (tp + TP(t)) /
    (2 (tp + TP(t)) + fp + FP(t) + fn + FN(t)); ties go to the higher threshold, and t = 1
    (never predicted) when predicting no cell is best. ``order``:
    ``np.argsort(-p.ravel(), kind="stable")``, if the caller has it.

    >>> micro_f1_threshold(np.array([[0.9, 0.2], [0.3, 0.1]]), np.array([[1, 0], [0, 0]]))
    0.6
    >>> micro_f1_threshold(np.array([[0.9], [0.8], [0.3]]), np.array([[0], [0], [1]]), 10, 0, 1)
    1.0
    """
    p, y = np.asarray(p, dtype=np.float64).ravel(), np.asarray(Y).ravel()
    order = np.argsort(-p, kind="stable") if order is None else order
    ps, ys = p[order], y[order]
    TP = np.cumsum(ys)
    positives = ys.sum()
    del ys
    # f1 = 2 (tp + TP) / (2 (tp + TP) + fp + FP + fn + FN), each operation as written,
    # in two arrays (the rare labels' cells together are tens of millions)
    f1 = np.add(TP, tp)
    f1 *= 2
    denominator = f1.copy()
    denominator += fp
    FP = np.arange(1, p.size + 1, dtype=np.result_type(np.int64, TP.dtype))
    FP -= TP
    denominator += FP
    del FP
    denominator += fn
    denominator += positives - TP  # FN
    del TP
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.divide(f1, denominator, out=f1 if f1.dtype == np.float64 else None)
        none = 2 * tp / (2 * tp + fp + fn + positives) if tp + fp + fn + positives else 0.0
    del denominator
    np.nan_to_num(f1, copy=False, nan=0.0)
    f1[np.flatnonzero(~(ps[1:] < ps[:-1]))] = -1.0  # only the last of each run of equal p
    best = int(np.argmax(f1)) if f1.size else 0
    if not f1.size or f1[best] <= none:
        return 1.0
    below = ps[best + 1] if best + 1 < ps.size else 0.0
    return float((ps[best] + below) / 2)


@dataclass(frozen=True)
class Decisions:
    """What a multi-label model predicts with, chosen by :func:`choose`.

    Attributes
    ----------
    calibration : ndarray of shape (L, 2)
        (a_l, c_l) of p_l = σ(a_l s_l + c_l).
    thresholds : ndarray of shape (L,)
        t_l in [0, 1]: label l is predicted when p_l ≥ t_l.
    """

    calibration: np.ndarray
    thresholds: np.ndarray

    def probabilities(self, log_odds: np.ndarray) -> np.ndarray:
        """p_l(x) = σ(a_l s_l(x) + c_l), ndarray (n, L), from log-odds (n, L)."""
        a, c = self.calibration[:, 0], self.calibration[:, 1]
        s = np.clip(log_odds, -SCORE_BOUND, SCORE_BOUND)
        return sigmoid(a * s + c)


class _SortedCells:
    """The probabilities of many cells sorted (ascending, ``cells``), and those of the
    positive ones (``positives``): what :func:`micro_f1_threshold` needs of one group of
    labels, without their (document, label) order. (The micro-F1 at a threshold turns
    only on how many cells, and how many positive cells, reach it.)"""

    def __init__(self, cells: np.ndarray, positives: np.ndarray):
        cells.sort()
        positives.sort()
        self.cells, self.positives = cells, positives

    def counts(self, t: float) -> tuple[int, int, int]:
        """TP, FP, FN of predicting the cells with p ≥ ``t``."""
        reached = self.cells.size - int(np.searchsorted(self.cells, t, side="left"))
        tp = self.positives.size - int(np.searchsorted(self.positives, t, side="left"))
        return tp, reached - tp, self.positives.size - tp

    def threshold(self, tp: float, fp: float, fn: float) -> float:
        """:func:`micro_f1_threshold` of these cells, the same float: a block of
        :data:`_BLOCK` cells at a time, from the highest probability down."""
        q, P = self.cells, self.positives.size
        with np.errstate(invalid="ignore", divide="ignore"):
            none = 2 * tp / (2 * tp + fp + fn + P) if tp + fp + fn + P else 0.0
        best, at = -np.inf, -1
        for k0 in range(0, q.size, _BLOCK):  # descending positions k0 .. k1 - 1
            k1 = min(q.size, k0 + _BLOCK)
            j = np.arange(q.size - 1 - k0, q.size - 1 - k1, -1)  # their ascending places
            v = q[j]
            TP = P - np.searchsorted(self.positives, v, side="left")
            f1 = np.add(TP, tp)
            f1 *= 2
            denominator = f1.copy()
            denominator += fp
            denominator += np.arange(k0 + 1, k1 + 1) - TP  # FP
            denominator += fn
            denominator += P - TP  # FN
            with np.errstate(invalid="ignore", divide="ignore"):
                np.divide(f1, denominator, out=f1)
            np.nan_to_num(f1, copy=False, nan=0.0)
            f1[(j > 0) & ~(q[np.maximum(j - 1, 0)] < v)] = -1.0  # the last of a run only
            i = int(np.argmax(f1))
            if f1[i] > best:
                best, at = float(f1[i]), int(j[i])
        if at < 0 or best <= none:
            return 1.0
        below = q[at - 1] if at > 0 else 0.0
        return float((q[at] + below) / 2)


def _probabilities(S: np.ndarray, a: float, c: float) -> np.ndarray:
    """σ(a clip(s) + c) of scores ``S`` (any shape), as :meth:`Decisions.probabilities`
    gives each cell."""
    return sigmoid(a * np.clip(S, -SCORE_BOUND, SCORE_BOUND) + c)


def _cells(S: np.ndarray, columns: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """``S[:, columns][mask[:, columns]]`` (every cell of the columns with no mask), a
    block of rows at a time: (N,), in (row, column) order."""
    n = S.shape[0]
    step = max(1, _BLOCK // max(1, columns.size))
    if mask is None:
        out = np.empty(n * columns.size, dtype=S.dtype)
    else:
        out = np.empty(int(np.count_nonzero(mask[:, columns])), dtype=S.dtype)
    at = 0
    for r in range(0, n, step):
        part = S[r : r + step][:, columns]
        if mask is not None:
            part = part[mask[r : r + step][:, columns]]
        out[at : at + part.size] = part.ravel()
        at += part.size
    return out


def fit_decisions(S: np.ndarray, Y: np.ndarray) -> Decisions:
    """Calibrations and thresholds from held-out log-odds ``S`` and labels ``Y`` (n, L).

    A label with :data:`MIN_CALIBRATION_POSITIVES` positives and negatives gets a
    calibration of its own, the others one fitted on their cells together; then a label
    with :data:`MIN_THRESHOLD_POSITIVES` positives gets the threshold of its best F1, the
    others one threshold, the one that gives the best micro-F1 of all labels when added to
    the decisions of the first (:func:`micro_f1_threshold`). The rare labels' cells are
    taken together (:func:`fit_platt_cells`, :class:`_SortedCells`), never as tables of
    every cell's probability."""
    n, L = Y.shape
    positives = Y.sum(axis=0)
    own = (positives >= MIN_CALIBRATION_POSITIVES) & (n - positives >= MIN_CALIBRATION_POSITIVES)
    calibration = np.zeros((L, 2))
    finite = np.isfinite(S)
    calibration[own] = fit_platt(S[:, own], Y[:, own], finite[:, own])
    shared = np.flatnonzero(~own)
    if shared.size:
        if finite[:, shared].any():
            cells = _cells(S, shared, finite)
            pooled = fit_platt_cells(cells, _cells(Y, shared, finite).astype(bool))
            del cells
        else:
            pooled = (1.0, 0.0)
        calibration[shared] = pooled
    del finite
    truth = Y > 0
    thresholds = np.ones(L)
    rare = positives < MIN_THRESHOLD_POSITIVES
    # Each label's probabilities (n,) and cells in decreasing probability, sorted once
    # for every round; the rare labels' cells together (_SortedCells).
    labels = np.flatnonzero(~rare)
    p = {}
    for l in labels.tolist():
        p[l] = _probabilities(S[:, l], *calibration[l])
        order = np.argsort(-p[l], kind="stable")
        thresholds[l] = f1_threshold(p[l], Y[:, l], order)[0]
        p[l] = (p[l], order)
    pooled = None
    if rare.any():
        group = np.flatnonzero(rare)
        a, c = calibration[group[0]]
        cells = _cells(S, group)
        for start in range(0, cells.size, _BLOCK):
            cells[start : start + _BLOCK] = _probabilities(cells[start : start + _BLOCK], a, c)
        pooled = _SortedCells(cells, _probabilities(_cells(S, group, truth), a, c))
    # Then each label's threshold (the rare labels' one threshold) again, for the micro-F1
    # of every label given the others' decisions: a label whose best F1 is poor would
    # otherwise add more false positives than true ones. The counts are whole numbers
    # (float64), so their sums are the same in any order: the rare labels' are kept as
    # one (rest).
    tp, fp, fn = (np.zeros(L) for _ in range(3))
    for l, (p_l, _) in p.items():
        mine = p_l >= thresholds[l]
        tp[l], fp[l], fn[l] = _confusion(mine, truth[:, l])
    rest = np.array(pooled.counts(1.0) if pooled else (0, 0, 0), dtype=np.float64)
    for _ in range(ASCENT_ROUNDS):
        for l, (p_l, order) in p.items():
            others = np.ones(L, dtype=bool)
            others[l] = False
            t = micro_f1_threshold(p_l[:, None], Y[:, [l]], tp[others].sum() + rest[0],
                                   fp[others].sum() + rest[1], fn[others].sum() + rest[2],
                                   order)  # fmt: skip
            thresholds[l] = t
            tp[l], fp[l], fn[l] = _confusion(p_l >= t, truth[:, l])
        if pooled is not None:
            t = pooled.threshold(tp.sum(), fp.sum(), fn.sum())
            thresholds[rare] = t
            rest[:] = pooled.counts(t)
    return Decisions(calibration, thresholds)


def _confusion(chosen: np.ndarray, truth: np.ndarray) -> tuple[int, int, int]:
    """TP, FP, FN of the decisions ``chosen`` against ``truth`` (bool, equal shapes)."""
    tp = int(np.count_nonzero(chosen & truth))
    return tp, int(np.count_nonzero(chosen)) - tp, int(np.count_nonzero(truth)) - tp


def decide(
    p: np.ndarray, thresholds: np.ndarray, top_k: int | None = None, allow_empty: bool = False
) -> np.ndarray:
    """Which labels each document gets, bool ndarray (n, L), from its probabilities
    ``p`` (n, L): p_l ≥ t_l; with ``top_k``, at most the k most probable of those; a
    document that passes no threshold gets its most probable label unless ``allow_empty``.

    >>> decide(np.array([[0.9, 0.6, 0.1], [0.2, 0.3, 0.1]]), np.array([0.5, 0.5, 0.5])).tolist()
    [[True, True, False], [False, True, False]]
    """
    chosen = p >= thresholds
    if top_k is not None:
        rank = np.argsort(np.argsort(-p, axis=1, kind="stable"), axis=1, kind="stable")
        chosen &= rank < top_k
    if not allow_empty and p.shape[1]:
        empty = ~chosen.any(axis=1)
        chosen[np.flatnonzero(empty), p[empty].argmax(axis=1)] = True
    return chosen


# --- the choice -----------------------------------------------------------------------------


def fold_ids(n: int, k: int = FOLDS, seed: int = SEED) -> np.ndarray:
    """The fold (0..k−1) of each of ``n`` sampled documents (in (digest, class) order),
    dealt in turn after a seeded shuffle: a function of the set of documents alone."""
    fold = np.empty(n, dtype=np.int64)
    fold[np.random.default_rng(seed).permutation(n)] = np.arange(n) % k
    return fold


def held_out_log_odds(
    counts: LabelCounts, X: sp.csr_matrix, Y: np.ndarray, folds: np.ndarray, candidates,
    threads: int = 1, columns=None,
) -> list[np.ndarray]:  # fmt: skip
    """Every candidate's log-odds of every sampled document ``X`` (n, V) with labels
    ``Y`` (n, L) under the model of the other folds: (n, L) each. A fold's training
    counts are the whole counts less the fold's (:meth:`LabelCounts.without`); the words
    the fold's training counts lack are left out of its documents, as predict leaves out
    unknown words. ``threads`` score a fold's candidates (the result does not depend on
    them). ``columns``: for each candidate, the labels (an index array) whose columns to
    keep, or None for all: (n, len(columns[i])) then (at 5,000 labels and 6,000 sampled
    documents, each whole table is 240 MB)."""
    n, L = Y.shape
    columns = [None] * len(candidates) if columns is None else columns
    out = [np.zeros((n, L if cols is None else len(cols))) for cols in columns]
    for k in np.unique(folds).tolist():
        rows = np.flatnonzero(folds == k)
        held = X[rows]
        training = counts.without(held, Y[rows])
        known = np.flatnonzero(training.word_tokens > 0)
        used = np.intersect1d(known, np.unique(held.indices))
        part = held[:, used]
        if any(c.model != "complement" and not sparse_odds(c) for c in candidates):
            _ = training.paired  # made once, before the threads share it

        def score(settings: EstimatorSettings, cols, training=training, used=used,
                  part=part) -> np.ndarray:  # fmt: skip
            if sparse_odds(settings):  # a block of labels at a time, only cols
                return _held_out_odds(training, settings, cols, used, part)
            scored = LabelScorer(training, settings, rows=used).log_odds(part)
            return scored if cols is None else scored[:, cols]

        if threads > 1:  # numpy leaves the interpreter lock on whole-table arithmetic
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(threads) as pool:
                _keep(out, rows, pool.map(score, candidates, columns))
        else:
            _keep(out, rows, map(score, candidates, columns))
        del training, held, part, score  # before the next fold's are made
    return out


def _keep(out: list[np.ndarray], rows: np.ndarray, scores) -> None:
    """Each candidate's fold ``scores`` (n_fold, L') put in its table's ``rows``, one at
    a time as they come."""
    for whole, scored in zip(out, scores):
        whole[rows] = scored
        del scored


def _held_out_odds(
    counts: LabelCounts, settings: EstimatorSettings, cols, rows: np.ndarray,
    X: sp.csr_matrix,
) -> np.ndarray:  # fmt: skip
    """``LabelScorer(counts, settings, rows=rows).log_odds(X)[:, cols]`` (``cols`` None:
    every label), the same floats, for settings :func:`sparse_odds` scores: the labels
    ``cols`` alone, a block of them at a time (:func:`odds_blocks`)."""
    L = len(counts.labels)
    labels = np.arange(L) if cols is None else np.asarray(cols)
    out = np.zeros((X.shape[0], len(labels)))
    with np.errstate(invalid="ignore"):
        for places, scorer in odds_blocks(counts, settings, labels, rows,
                                          dense_cells(len(rows), L)):  # fmt: skip
            out[:, places] = scorer.joint_log_likelihood(X)
    out[:, ~(counts.class_count[labels] > 0)] = -np.inf
    out[:, counts.class_count[labels] == counts.n_docs] = np.inf
    out[np.isnan(out)] = 0.0
    return out


def held_out_micro_f1(decisions: Decisions, S: np.ndarray, Y: np.ndarray) -> float:
    """The micro-F1 of the decisions on held-out log-odds ``S`` against labels ``Y`` (n,
    L): 2 TP / (2 TP + FP + FN) over every (document, label) cell of
    ``decide(decisions.probabilities(S), decisions.thresholds)`` (0 with no positive), a
    block of documents at a time (its counts are whole numbers)."""
    tp = chosen = 0
    step = max(1, (1 << 20) // max(1, S.shape[1]))
    for r in range(0, S.shape[0], step):
        mine = decide(decisions.probabilities(S[r : r + step]), decisions.thresholds)
        tp += int(np.count_nonzero(mine & (Y[r : r + step] > 0)))
        chosen += int(np.count_nonzero(mine))
    denominator = float(chosen + int(np.count_nonzero(Y)))
    return 2 * float(tp) / denominator if denominator else 0.0


def held_out_log_loss(S: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Each label's mean log loss of its Platt-calibrated held-out probabilities, from
    log-odds ``S`` and labels ``Y`` (n, L) (:func:`fit_platt` on that label's own cells;
    probabilities kept within [1e-15, 1 − 1e-15]): ndarray (L,)."""
    finite = np.isfinite(S)
    calibration = fit_platt(S, Y, finite)
    p = np.clip(Decisions(calibration, np.ones(S.shape[1])).probabilities(S), 1e-15, 1 - 1e-15)
    truth = Y > 0
    return -np.where(truth, np.log(p), np.log1p(-p)).mean(axis=0)


def scaled_labels(Y: np.ndarray) -> np.ndarray:
    """The labels that choose a β scale of their own (:func:`choose_scales`): those with
    :data:`MIN_CALIBRATION_POSITIVES` sampled positives and negatives in ``Y`` (n, L)."""
    n, positives = Y.shape[0], Y.sum(axis=0)
    return np.flatnonzero(
        (positives >= MIN_CALIBRATION_POSITIVES) & (n - positives >= MIN_CALIBRATION_POSITIVES)
    )


def choose_scales(scores: Sequence[np.ndarray], Y: np.ndarray, scales: Sequence[float]):
    """The β scale of each label (ndarray (L,)): for a label with
    :data:`MIN_CALIBRATION_POSITIVES` positives and negatives, the scale whose held-out
    log-odds (``scores``, one (n, L) array per scale, or one of those labels' columns
    alone) give the lowest
    :func:`held_out_log_loss` (ties: the earlier); for the others, the first. Log loss
    rather than F1: it weighs every document's probability, where the F1 of a threshold
    turns on the few documents near it."""
    L = Y.shape[1]
    own = scaled_labels(Y)
    chosen = np.full(L, float(scales[0]))
    if len(scales) > 1 and own.size:
        loss = np.array([
            held_out_log_loss(S if S.shape[1] == own.size else S[:, own], Y[:, own])
            for S in scores
        ])  # fmt: skip
        chosen[own] = np.asarray(scales, dtype=np.float64)[np.argmin(loss, axis=0)]
    return chosen


@dataclass(frozen=True)
class Choice:
    settings: EstimatorSettings
    decisions: Decisions
    table: list[dict]  # {"settings", "micro_f1"} of each candidate
    documents: int
    folds: int
    scales: np.ndarray | None = None  # (L,) each label's β scale, when they were chosen
    micro_f1: float | None = None  # the held-out micro-F1 with them


def choose(
    counts: Counts, X: sp.csr_matrix, y: np.ndarray, candidates=CANDIDATES, scales=(1.0,),
    threads: int = 1,
) -> Choice:  # fmt: skip
    """The settings, calibrations and thresholds of a multi-label model, chosen on its
    sampled documents ``X`` (n, V) of label sets ``y`` (n,) by :data:`FOLDS`-fold
    cross-validation by subtraction: each candidate's held-out micro-F1 at the thresholds
    chosen from the held-out scores themselves (:func:`fit_decisions`); the highest wins,
    ties to the earlier candidate. With ``scales`` (the first 1), each label then chooses
    the winner's β times one of them (:func:`choose_scales`), and the calibrations and
    thresholds are chosen again on the held-out scores so mixed; they are kept when their
    held-out micro-F1 is higher than the winner's with one β, else every label keeps 1.
    ``threads`` score the candidates (the result does not depend on them)."""
    labelled = label_counts(counts)
    Y = label_matrix(counts.classes, labelled.labels, y)
    n = X.shape[0]
    k = max(2, min(FOLDS, n))
    folds = fold_ids(n, k)
    per_label = len(scales) > 1
    variants = [
        (c, s) for c in candidates
        for s in (scales if per_label and not c.prior_fit else scales[:1])
    ]  # fmt: skip
    if all(sparse_odds(scaled(c, s)) for c, s in variants):  # label-major, by blocks
        labelled = FoldCounts.of(labelled)
    # The other scales' log-odds are needed only for the labels that may take them.
    own = scaled_labels(Y)
    scores = held_out_log_odds(
        labelled, X, Y, folds, [scaled(c, s) for c, s in variants], threads,
        [None if s == scales[0] else own for _, s in variants],
    )  # fmt: skip
    del labelled  # not needed after (at 5,000 labels, 19 million pairs: 290 MiB)
    table, best, best_f1 = [], None, -1.0
    for at, (settings, scale) in enumerate(variants):
        if scale != scales[0]:
            continue
        decisions = fit_decisions(scores[at], Y)
        f1 = held_out_micro_f1(decisions, scores[at], Y)
        table.append({"settings": settings.to_dict(), "micro_f1": round(f1, 12)})
        if f1 > best_f1:
            best, best_f1 = (settings, decisions), f1
        # of the candidates seen, only the best one's tables are needed after (one each:
        # 240 MB at 6,000 sampled documents x 5,000 labels)
        seen = [id(c) for c, _ in variants[: at + 1] if c is not best[0]]
        scores = [None if id(c) in seen else S for (c, _), S in zip(variants, scores)]
    if not per_label:
        return Choice(best[0], best[1], table, n, k)
    mine = [(s, S) for (c, s), S in zip(variants, scores) if c is best[0]]
    del scores
    chosen_scales = choose_scales([S for _, S in mine], Y, [s for s, _ in mine])
    S = mine[0][1]  # the first scale's, whole (not needed after): the others' put in it
    for scale, S_scale in mine[1:]:
        at = chosen_scales[own] == scale
        S[:, own[at]] = S_scale[:, at]
    del mine
    decisions = fit_decisions(S, Y)
    f1 = held_out_micro_f1(decisions, S, Y)
    if not f1 > best_f1:  # no better on the held-out documents: one β for every label
        chosen_scales, decisions, f1 = np.full(Y.shape[1], float(scales[0])), best[1], best_f1
    return Choice(best[0], decisions, table, n, k, chosen_scales, round(f1, 12))


# --- the model's record ---------------------------------------------------------------------


def record(
    labels: Sequence[str], candidates, choice: Choice | None = None, scales=(1.0,)
) -> dict:  # fmt: skip
    """The ``multi_label`` record of a model's header (:func:`.labelsets.checked_record`):
    its labels, the candidate settings, the β scales each label chooses from (when more
    than one), and the choice's calibrations, thresholds, held-out micro-F1 of each
    candidate and each label's β scale once made."""
    data = {"separator": SEPARATOR, "labels": list(labels)}
    if len(scales) > 1:
        data["beta_scales"] = [float(s) for s in scales]
    if choice is None:
        data["candidates"] = [{"settings": s.to_dict()} for s in candidates]
        return data
    if choice.scales is not None:
        data.update(beta_scale=choice.scales.tolist(), micro_f1=choice.micro_f1)
    data.update(
        candidates=choice.table,
        calibration=[[float(a), float(c)] for a, c in choice.decisions.calibration],
        thresholds=[float(t) for t in choice.decisions.thresholds],
        criterion=THRESHOLD_CRITERION,
        documents=choice.documents,
        folds=choice.folds,
    )
    return data


def candidates_of(data: dict) -> tuple[EstimatorSettings, ...]:
    """The candidate settings of a checked ``multi_label`` record."""
    return tuple(EstimatorSettings.from_dict(c["settings"]) for c in data["candidates"])


def chosen_again(model, threads: int = 1):
    """``model`` (a multi-label :class:`nbclass.models.model.Model` with a sample) with
    its settings, calibrations and thresholds chosen from its counts and sample
    (:func:`choose`): a function of those alone, so fit, update, merge, unlearn and sync
    of the same documents write the same model. ``threads`` score the candidates."""
    import scipy.sparse as sp

    from ..reading.process import return_freed_memory

    counts, sample = model.active_counts, model.sample
    X = sp.csr_matrix(
        (sample.counts, sample.words, sample.ptr),
        shape=(sample.n_documents, len(model.counts.vocabulary)),
    )
    if counts is not model.counts:
        X = X[:, model.active_rows]
    candidates = candidates_of(model.multi_label)
    scales = tuple(model.multi_label.get("beta_scales", (1.0,)))
    return_freed_memory()  # what the count freed: the choice's tables are mapped afresh
    choice = choose(counts, X, sample.labels, candidates, scales, threads)
    return replace(
        model, defaults=choice.settings, choice=None, calibration=None,
        multi_label=record(label_names(counts.classes), candidates, choice, scales),
    )  # fmt: skip


def decisions_of(data: dict) -> Decisions | None:
    """The calibrations and thresholds of a checked record (None when it has none)."""
    if "thresholds" not in data:
        return None
    return Decisions(
        np.array(data["calibration"], dtype=np.float64).reshape(-1, 2),
        np.array(data["thresholds"], dtype=np.float64),
    )


@dataclass(frozen=True, eq=False)
class LabelPredictor:
    """A multi-label model's scorer and decisions: what predict, evaluate and explain
    score with. ``settings`` other than the model's defaults drop the stored calibration
    (p_l = σ(s_l)), thresholds (0.5) and β scales (1), as single-label scoring drops its
    calibration."""

    counts: LabelCounts
    settings: EstimatorSettings
    decisions: Decisions
    scales: np.ndarray | None = None  # (L,) each label's β scale (LabelScorer)

    @cached_property
    def scorer(self) -> LabelScorer:
        return LabelScorer(self.counts, self.settings, scales=self.scales)

    @property
    def labels(self) -> tuple[str, ...]:
        return self.counts.labels

    def probabilities(self, X: sp.csr_matrix) -> np.ndarray:
        """p_l(x) of each document counted as ``X`` (n, V): ndarray (n, L)."""
        return self.decisions.probabilities(self.scorer.log_odds(X))


def predictor(
    counts: Counts, settings: EstimatorSettings, data: dict, own: bool
) -> LabelPredictor:
    """The :class:`LabelPredictor` of label-set ``counts`` (the model's active counts) with
    its ``multi_label`` record ``data``; ``own``: ``settings`` are the model's defaults,
    whose stored decisions apply."""
    labelled = label_counts(counts)
    decisions = decisions_of(data) if own else None
    if decisions is None:
        L = len(labelled.labels)
        decisions = Decisions(np.tile([1.0, 0.0], (L, 1)), np.full(L, 0.5))
    return LabelPredictor(labelled, settings, decisions, scales_of(data) if own else None)


def scales_of(data: dict) -> np.ndarray | None:
    """Each label's β scale in a checked record (None when it has none: every label 1)."""
    if "beta_scale" not in data:
        return None
    return np.array(data["beta_scale"], dtype=np.float64)


def with_thresholds(thresholds: np.ndarray, labels: Sequence[str], given: Sequence[str]):
    """``thresholds`` (L,) with the ``--threshold`` values ``given``: ``T`` sets every
    label's, ``LABEL=T`` one label's (later ones win). A :class:`UsageError` for a value
    out of [0, 1] or a label the model does not have."""
    from ..errors import UsageError

    out = np.array(thresholds, dtype=np.float64)
    at = {label: l for l, label in enumerate(labels)}
    for item in given:
        name, equals, value = item.rpartition("=")
        try:
            t = float(value)
        except ValueError:
            t = math.nan
        if not 0.0 <= t <= 1.0:
            raise UsageError(f"--threshold {item!r}: give a probability in [0, 1], e.g. 0.4 "
                             "or LABEL=0.4")  # fmt: skip
        if not equals:
            out[:] = t
        elif name not in at:
            raise UsageError(f"--threshold {item!r}: the model has no label {name!r}")
        else:
            out[at[name]] = t
    return out


@dataclass(frozen=True, eq=False)
class LabelPredictions:
    """The labels and probabilities of a batch of documents.

    Attributes
    ----------
    sources : list of str, length n
    labels : tuple of str, length L
    probabilities : ndarray of shape (n, L)
        p_l(x), calibrated when the model's own settings score.
    chosen : ndarray of shape (n, L), bool
        The labels each document gets (:func:`decide`).
    """

    sources: list[str]
    labels: tuple[str, ...]
    probabilities: np.ndarray
    chosen: np.ndarray
    explanations: list[dict] | None = None


def predict_documents(
    model, documents, overrides: dict | None = None, calibrate: bool = True,
    thresholds: Sequence[str] = (), top_k: int | None = None, allow_empty: bool = False,
    batch_size: int = 1000, explain: int | None = None,
):  # fmt: skip
    """Predict a stream of ``(source, text)`` pairs with a multi-label ``model``, one
    :class:`LabelPredictions` per batch. ``overrides``: estimator options as
    :func:`nbclass.models.estimators.resolve` takes them (any given drops the stored
    calibrations and thresholds: p_l = σ(s_l), t_l = 0.5); ``calibrate=False`` does the
    same for the model's own settings; ``thresholds``: ``--threshold`` values;
    ``explain``: that many words per predicted label (:func:`label_explanations`)."""
    from ..text.vectorizer import TextCounter
    from .estimators import overridden, resolve

    overrides = overrides or {}
    settings = resolve(model.defaults, **overrides)
    own = calibrate and not overridden(**overrides)
    counts = model.active_counts
    scorer = predictor(counts, settings, model.multi_label, own)
    limits = with_thresholds(scorer.decisions.thresholds, scorer.labels, thresholds)
    counter = TextCounter(model.tokenizer, counts.vocabulary)
    batch: list[tuple[str, str]] = []

    def scored():
        X = counter.count([text for _, text in batch])[0]
        p = scorer.probabilities(X)
        chosen = decide(p, limits, top_k, allow_empty)
        why = None
        if explain:
            why = label_explanations(scorer.scorer, X, chosen, counts.vocabulary, explain)
        return LabelPredictions([s for s, _ in batch], scorer.labels, p, chosen, why)

    for document in documents:
        batch.append(document)
        if len(batch) == batch_size:
            yield scored()
            batch = []
    if batch:
        yield scored()


def label_top_features(
    counts: Counts, settings: EstimatorSettings, k: int, criterion: str, scales=None
):  # fmt: skip
    """``top-features --per-class`` of a multi-label model: for each label, the ``k``
    words that favour it most over the documents without it, ranked on its binary counts
    (:meth:`LabelCounts.binary`) by :func:`nbclass.models.selection.class_top_features`
    under ``settings`` with the label's β scale (``scales`` (L,), :func:`scaled`; None:
    1); labels in order. A label every document (or none) has is left out."""
    from .selection import class_top_features

    labelled = label_counts(counts)
    scales = np.ones(len(labelled.labels)) if scales is None else scales
    out = []
    for l, label in enumerate(labelled.labels):
        if 0 < labelled.class_count[l] < labelled.n_docs:
            mine = scaled(settings, float(scales[l]))
            ranked = class_top_features(labelled.binary(l), mine, k, criterion)
            out.extend(replace(f, label=label) for f in ranked if f.label == "1")
    return out


def label_explanations(
    scorer: LabelScorer, X: sp.csr_matrix, chosen: np.ndarray, words: Sequence[str], n: int
) -> list[dict]:
    """For each document counted as ``X`` (m, V), the ``n`` words that raise the
    log-odds of each of its ``chosen`` (m, L) labels most: ``{label: [[word, f_j w_j],
    ...]}``, largest first (ties: vocabulary order). A ``UsageError`` when the settings'
    scores are not linear (the DCM, ``--estimator predictive``)."""
    from ..errors import UsageError

    out = [{} for _ in range(X.shape[0])]
    for l in np.flatnonzero(chosen.any(axis=0)).tolist():
        linear = scorer.weights(l)
        if linear is None:
            raise UsageError("--explain needs a linear model: not the DCM or --estimator "
                             "predictive")  # fmt: skip
        features, w = linear
        F = features(X).tocsr()
        for i in np.flatnonzero(chosen[:, l]).tolist():
            start, end = F.indptr[i], F.indptr[i + 1]
            cols, values = F.indices[start:end], F.data[start:end] * w[F.indices[start:end]]
            order = np.lexsort((cols, -values))[:n]
            out[i][scorer.labels[l]] = [[words[cols[j]], float(values[j])] for j in order]
    return out
