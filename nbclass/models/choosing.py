"""Choosing the model from the data, and calibrating it: what ``fit --model auto`` does.

No one setting of naive Bayes is best on every corpus: plain multinomial wins on some,
word presence (Bernoulli) on others, complement or bursty (DCM) models on others still.
So the default fit chooses, on the training corpus alone:

1. **A sample.** Up to :data:`nbclass.counting.sketch.OVERALL` training documents (fewer when the
   corpus affords few folds: :func:`plan`): those first by the SHA-256 of their content,
   and the first few of each class (:mod:`nbclass.counting.sketch`), so the same set of
   documents always gives the same choice, whether it was fitted at once or assembled
   by update and merge. Their counts over the model's vocabulary are the rows of ``X``
   (shape (n, V)) with labels ``y`` (shape (n,)).
2. **K-fold cross-validation by subtraction.** The sample is dealt into K stratified
   folds, K from :func:`plan` (at most :data:`FOLDS`). Fold k's model is the model of
   the *whole* training corpus minus fold k's documents: counts add up, so its counts
   are the total counts less the fold's rows, exactly what a refit without them would
   count (words and classes left with no count are dropped, as such a fit would never
   see them; a held-out document whose class is left with no document is not scored,
   since no refit could name its class). Every candidate is scored on every held-out
   document: one count of the corpus, K scorings.
3. **The criterion: the smallest shortfall.** Each candidate's held-out accuracy and
   macro-F1 are compared with the best of the family on each; its shortfall is the larger
   of its two gaps, and the smallest shortfall wins (:func:`shortfall`). A tie goes to
   the lower held-out log loss, then to the earlier candidate in :data:`CANDIDATES` (the
   simpler one). Accuracy counts documents and macro-F1 counts classes: on unequal classes
   the most accurate candidate can neglect the small ones, and the one best for them can
   lose documents; the winner is the candidate never far behind the best on either.
4. **Calibration.** The winner's held-out scores fit a per-document temperature
   T(x) = exp(t₀ + t₁ · log(1 + n_x) + t₂ · log(1 + g_x)), n_x the document's tokens in
   the vocabulary and g_x the gap between its two best scores, by minimising the held-out
   log loss (Newton's method in the box of :data:`T1_RANGE` and ±
   :attr:`nbclass.models.estimators.Calibration.GAP_BOUND` for t₂);
   predict reports softmax_c(b_c / T(x)). Naive Bayes
   adds one log-likelihood ratio per token, so its confidence grows with the length of a
   document however redundant the words are: a temperature that grows with length is the
   correction that shape calls for. Dividing every score of a document by the same
   positive number never changes the order of the classes, so the labels (and the
   accuracy the choice was made on) stay those of the formula; only the probabilities
   change.
5. **Class offsets.** The winner is also scored with per-class offsets on its calibrated
   scores, softmax_c(b_c / T(x) + a_c + d_c · log(1 + n_x)), fitted on held-out scores
   and measured cross-fitted (:func:`cross_fitted_offsets`); they move labels, and are
   kept (stored in the calibration) only when their shortfall is smaller than the
   winner's.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from ..counting import sketch
from ..counting.counts import Counts
from ..counting.csr import CSC, CSR, as_csr
from ..text.vectorizer import binarize
from .blas import one_thread
from .chosen import calibrated, score_gaps
from .estimators import Calibration, EstimatorSettings
from .posterior import (
    LinearScorer,
    best_classes,
    log_posterior,
    make_scorer,
    posterior_and_evidence,
    row_max,
    row_totals,
)
from .sparsity import dense_cells, is_sparse, row_sums, weights_dot
from .textmodels import prepare, primed_concentrations

FOLDS = 5
SEED = 20261124
# The settings scored on the sets of a second round (choose's ``second``): those that did
# best on the first round's sets.
SECOND_ROUND = 2
CRITERION = (
    "smallest shortfall from the best accuracy and macro-F1, then log loss, "
    "then the earlier candidate"
)

# The family fit chooses from, simplest first. The first three are what scikit-learn's
# MultinomialNB, BernoulliNB and ComplementNB do at their defaults (α = 1); the others are
# nbclass's refinements: β fitted by leave-one-out likelihood, log(1 + tf), the DCM.
CANDIDATES = (
    EstimatorSettings(model="multinomial"),
    EstimatorSettings(model="bernoulli"),
    EstimatorSettings(model="complement", class_prior=False),
    EstimatorSettings(model="multinomial", prior_fit=True),
    EstimatorSettings(model="multinomial", tf="log", prior_fit=True),
    EstimatorSettings(model="complement", tf="log", class_prior=False),
    EstimatorSettings(model="complement", tf="log", prior_fit=True),
    EstimatorSettings(model="dcm", prior_fit=True),
)


def describe(settings: EstimatorSettings) -> str:
    """A short name of the settings, e.g. ``complement tf=log β=fit no-class-prior``."""
    parts = [settings.model]
    if settings.estimator != "posterior-mean":
        parts.append(settings.estimator)
    if settings.tf != "raw":
        parts.append(f"tf={settings.tf}")
    if settings.idf:
        parts.append("idf")
    if settings.norm != "none":
        parts.append(f"norm={settings.norm}")
    if settings.prior_fit:
        parts.append("β=fit")
    elif settings.beta != (1.0, 1.0):
        b1, b0 = settings.beta
        parts.append(f"β={b1:g}" if b1 == b0 else f"β={b1:g},{b0:g}")
    if settings.alpha != 1.0:
        parts.append(f"α={settings.alpha:g}")
    if not settings.class_prior:
        parts.append("no-class-prior")
    return " ".join(parts)


# --- the sample and its folds -------------------------------------------------------------


HELD_OUT_SHARE = 0.2  # of the corpus, at most, held out of a fold's training counts


def folds_for(n: int, N: int, most: int = FOLDS) -> int:
    """How many folds the sample of ``n`` of the corpus's ``N`` documents is dealt into.

    As few as keep every fold's held-out documents within :data:`HELD_OUT_SHARE` of the
    corpus (so every held-out document is scored by a model of at least 80 % of it, as
    5-fold cross-validation of the whole corpus does), at most ``most``:
    ⌈n / (0.2 N)⌉ clipped to [1, most]. A corpus no larger than the sample takes ``most``
    folds; one five times the sample or more takes one (the sample is held out at once,
    the rest of the corpus is the training set), so the cost of the choice stops growing
    with the corpus.

    >>> folds_for(42, 42), folds_for(6000, 11314), folds_for(6000, 36694)
    (5, 3, 1)
    """
    return max(1, min(most, math.ceil(n / (HELD_OUT_SHARE * N))))


# Scoring one fold costs, over the candidates, about as much per cell of the V × C count
# table as the count costs per token of the corpus; folds are not limited below this many
# cells in all (a fraction of a second).
FREE_CELLS = 1_000_000


def plan(counts: Counts, most: int = FOLDS, rows: np.ndarray | None = None) -> tuple[int, int]:
    """``(documents, folds)``: how many sampled documents the choice scores, in how many
    folds, for the corpus of ``counts``; ``rows`` (sorted indices into its vocabulary,
    None: all), for the counts restricted to those rows (the same numbers as
    ``plan(counts.restrict(rows))``): a choice with a second round plans on the rows of
    its first (:func:`first_round_rows`), so that a fit with word pairs scores the
    documents and folds of a fit of its words alone.

    The folds are as many as :func:`folds_for` deals
    :data:`nbclass.counting.sketch.OVERALL` documents into, but their cells in all
    (folds × V × C, or folds × the nonzero pairs past
    :data:`nbclass.models.sparsity.DENSE_CELLS`, where a fold is scored from its pairs)
    stay within the corpus's tokens, or within
    :data:`FREE_CELLS` if that is more: so the choice costs about what the count costs,
    whatever the vocabulary and the number of classes. The documents are then as many as
    those folds hold out, each at most :data:`HELD_OUT_SHARE` of the corpus.

    >>> from nbclass.counting.counts import Counts
    >>> def corpus(N, V, C, tokens):
    ...     T = np.zeros((V, C), dtype=np.int64); T[0, 0] = tokens
    ...     return Counts(tuple("c%d" % c for c in range(C)), tuple("w%d" % j for j in range(V)),
    ...                   np.full(C, N // C), T > 0, T)
    >>> plan(corpus(1600, 36449, 2, 1014004))  # a small corpus: every document, 5 folds
    (1600, 5)
    >>> plan(corpus(11300, 130107, 20, 3369673))  # a vocabulary as large as its tokens
    (2260, 1)
    """
    N = counts.n_docs
    n = min(N, sketch.OVERALL)
    k = folds_for(n, N, most)
    V, C = (len(counts.vocabulary) if rows is None else rows.size), len(counts.classes)
    cells = V * C
    if not dense_cells(V, C):  # a fold is scored from its pairs (sparsity.py)
        if rows is None:
            cells = counts.nonzero[0].size
        else:
            inside = np.zeros(len(counts.vocabulary), dtype=bool)
            inside[rows] = True
            cells = int(np.count_nonzero(inside[counts.nonzero[0]]))
    tokens = counts.token_table.sum() if rows is None else counts.word_tokens[rows].sum()
    budget = max(FREE_CELLS, int(tokens))
    affordable = max(1, budget // max(cells, 1))
    if affordable >= k:
        return n, k
    return min(n, math.ceil(affordable * HELD_OUT_SHARE * N)), affordable


def first_round_rows(features, second) -> np.ndarray | None:
    """The rows of the sets of :func:`choose`'s first round (``features`` and ``second``
    as :func:`choose` takes them), sorted, where a second round follows; else None
    (every row). The choice plans its documents and folds on them (:func:`plan`): a fit
    with word pairs then scores its first round on the documents and folds a fit of its
    words alone scores (the same table rows, to the last digit), and the pairs, many
    times the words' entries, do not multiply the folds.

    >>> features = [(("words",), np.array([0, 2]), None, None),
    ...             (("words", "pairs"), np.array([0, 1, 2]), None, None)]
    >>> first_round_rows(features, [False, ("words",)]).tolist()
    [0, 2]
    >>> first_round_rows(features, [False, False]) is None
    True
    """
    if not features or second is None:
        return None
    later = [bool(second[i]) for i in range(len(features))]
    if all(later) or not any(later):
        return None
    rows = [features[i][1] for i, late in enumerate(later) if not late]
    if any(at is None for at in rows):
        return None
    inside = np.zeros(int(max(at.max(initial=-1) for at in rows)) + 1, dtype=bool)
    for at in rows:
        inside[at] = True
    return np.flatnonzero(inside)


# A candidate's held-out scores are documents × classes numbers, and the calibration goes
# through the winner's a dozen times or more: the choice scores as many sampled documents
# as keep them within this many cells (64 MB of float64), so that its time and memory
# stop growing with the classes (2,000 classes: 4,194 documents; 20,000 classes: 419).
# Most of the choice's time past a few hundred classes is in proportion to these cells:
# with 2²⁵ (256 MB), the choice of a generated 20,000 classes × 200,000 words took 19 s
# of CPU, nearly three times the count of its 177 MB; with 2²³, 6.3 s.
CHOICE_CELLS = 2**23
# Past this many classes CHOICE_CELLS binds (a sample holds at most OVERALL +
# REPRESENTATIVES = 16,000 documents, within the cells up to 524 classes), and the
# calibration, which fits three numbers and goes through its documents a dozen times
# or more, is fitted on the first CALIBRATION_CELLS // C of the winner's scored documents
# (by digest: a uniform sample of them; its targets' ε still counts all of them), at
# least CALIBRATION_LEAST: at 2,000 classes 1,048 of 4,194 documents, 0.24 s of CPU
# instead of 1.0 (generated 2,000 classes × 2,000,000 words); at 20,000 classes all 415.
MANY_CLASSES = CHOICE_CELLS // (sketch.OVERALL + sketch.REPRESENTATIVES)
CALIBRATION_CELLS = 2**21
CALIBRATION_LEAST = 1000


def calibration_documents(n_classes: int) -> int | None:
    """How many of the winner's scored documents its calibration is fitted on (the first
    ones), None for all of them: all up to :data:`MANY_CLASSES` classes.

    >>> calibration_documents(524), calibration_documents(2000), calibration_documents(20000)
    (None, 1048, 1000)
    """
    if n_classes <= MANY_CLASSES:
        return None
    return max(CALIBRATION_CELLS // n_classes, CALIBRATION_LEAST)


def scored_rows(labels: np.ndarray, documents: int, n_classes: int) -> np.ndarray:
    """Which documents of the stored sample (class indices ``labels`` in (digest, class)
    order) the choice scores, as sorted indices: the first ``documents`` (:func:`plan`)
    and the first few of each class the sample keeps
    (:func:`nbclass.counting.sketch.per_class_for`), while they are at most
    :data:`CHOICE_CELLS` // ``n_classes`` documents; past that, fewer of each class as
    many as fit (down to none), and past that again the first :data:`CHOICE_CELLS` //
    ``n_classes`` documents alone. Up to 524 classes the sample always fits (16,000
    documents × 524 classes are under 2²³ cells).

    >>> labels = np.array([0, 0, 0, 1, 0, 1, 1, 2])
    >>> scored_rows(labels, 2, 10).tolist()  # the first 2, and the first 5 of each class
    [0, 1, 2, 3, 4, 5, 6, 7]
    >>> scored_rows(labels, 4, 2**21).tolist()  # 4 documents fit, none of each class kept
    [0, 1, 2, 3]
    >>> scored_rows(labels, 6, 2**22).tolist()  # 2 documents fit: the first 2 alone
    [0, 1]
    """
    most = max(1, CHOICE_CELLS // max(n_classes, 1))
    for per_class in range(sketch.per_class_for(n_classes), -1, -1):
        rows = sketch.kept(labels, overall=documents, per_class=per_class)
        if rows.size <= most:
            return rows
    return sketch.kept(labels, overall=min(documents, most), per_class=0)


def present(ids: np.ndarray) -> list[int]:
    """The distinct values of ``ids`` (nonnegative integers: classes, folds), ascending,
    as ``np.unique(ids).tolist()`` gives them, by a count of each: np.unique of a plain
    array imports numpy.ma (7 ms) to ask whether it is masked.

    >>> present(np.array([3, 0, 3, 1]))
    [0, 1, 3]
    """
    return np.flatnonzero(np.bincount(ids)).tolist()


def stratified_fold_ids(y: np.ndarray, k: int = FOLDS, seed: int = SEED) -> np.ndarray:
    """The fold (0..k−1) of each sampled document, shape (n,).

    The documents come in (digest, class) order, a function of the set of documents
    alone, so the folds are too. Each class's documents are shuffled and dealt to the
    folds in turn, each class starting where the previous one stopped, so fold sizes
    differ by at most one and a class of fewer than k documents lands in as many
    different folds as it has documents.
    """
    y = np.asarray(y, dtype=np.int64)
    rng = np.random.default_rng(seed)
    fold = np.empty(y.size, dtype=np.int64)
    start = 0
    for c in present(y):
        members = np.flatnonzero(y == c)
        fold[rng.permutation(members)] = (start + np.arange(members.size)) % k
        start = (start + members.size) % k
    return fold


# --- held-out scores ------------------------------------------------------------------------


class Entries(Sequence):
    """The entries ``base[at]`` of a vocabulary (``at`` sorted indices into it), as a
    fold's counts name their rows: no string is gathered for each of them (a fold of 20
    Newsgroups with word pairs keeps 1.18 million), since the choice only ever asks how
    many there are; one is made when asked for."""

    __slots__ = ("at", "base")

    def __init__(self, base: Sequence[str], at: np.ndarray):
        if isinstance(base, Entries):  # entries of entries: of the first base
            base, at = base.base, base.at[at]
        self.base, self.at = base, at

    def __len__(self) -> int:
        return int(self.at.size)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(map(self.base.__getitem__, self.at[index].tolist()))
        return self.base[int(self.at[index])]

    def __iter__(self):
        return map(self.base.__getitem__, self.at.tolist())

    def __eq__(self, other) -> bool:  # as a tuple of the same words is
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(other) == len(self) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Entries({tuple(self)!r})"


@dataclass(frozen=True)
class Fold:
    """One fold's training counts (whole corpus minus the fold) and its held-out rows."""

    rows: np.ndarray  # indices into the sample of the held-out documents, shape (m,)
    counts: Counts  # the training counts, pruned
    words: np.ndarray  # the training vocabulary's columns of X, shape (V_k,)
    classes: np.ndarray  # the training classes' indices among the model's, shape (C_k,)
    used: np.ndarray  # the training vocabulary's words the held-out rows hold, shape (R,)


class _Cells(NamedTuple):
    """(class, word) cells of held-out counts, as a COO matrix (C, V) holds them."""

    row: np.ndarray
    col: np.ndarray
    data: np.ndarray


def _tables(counts: Counts) -> tuple:
    """``(T, D)``: the counts' T_jc and D_jc as they are kept, a table in CSR layout as a
    :class:`~nbclass.counting.csr.CSR` (a :class:`~nbclass.counting.pairtable.PairTable`
    is one; a scipy matrix's arrays are taken), a dense one as it is."""
    return tuple(as_csr(table) if is_sparse(table) else table
                 for table in (counts.token_table, counts.doc_table))  # fmt: skip


def fold_of(counts: Counts, X: CSR, y: np.ndarray, rows: np.ndarray) -> Fold:
    """The fold that holds out the sampled documents ``rows``: ``counts`` (the whole
    training corpus's, over the vocabulary X's columns count) less their counts.

    The held-out documents' T_jc and D_jc are summed as sparse (class, word) cells, and
    only those cells are subtracted from one copy of the tables: a fold costs one copy
    of them and work in the held-out documents' size, however many words they touch.
    Words left with no token are dropped from the fold's vocabulary, classes left with
    no document from its classes, as a count of the training documents alone would."""
    C, V = len(counts.classes), len(counts.vocabulary)
    held_out = X[rows]
    labels = np.asarray(y)[rows]
    members = CSR.from_entries(  # (C, m): which class each held-out document is of
        labels, np.arange(rows.size), np.ones(rows.size, dtype=np.int64), (C, rows.size)
    )
    T, D = _tables(counts)
    both = _packed(counts, held_out)
    if both is not None:  # T_jc and D_jc summed at once, T in the high 32 bits
        cells = _Cells(*members.matmul_sparse(both).entries())
        tokens = cells._replace(data=cells.data >> 32)
        documents = cells._replace(data=cells.data & _LOW)
    else:
        tokens, documents = (_Cells(*members.matmul_sparse(part).entries())
                             for part in (held_out, binarize(held_out)))  # fmt: skip
    class_count = counts.class_count - np.bincount(labels, minlength=C)
    left = counts.word_tokens - np.bincount(tokens.col, weights=tokens.data, minlength=V)
    gone = np.flatnonzero(left == 0)  # every token of these words is held out
    if is_sparse(T):
        tables = None if both is None else _packed_fold(counts, cells, gone)
        if tables is None:
            tables = _sparse_fold(counts, tokens, documents, gone)
        token_count, doc_count, words, row = tables
    elif gone.size:
        words = np.delete(np.arange(V), gone)
        token_count, doc_count = T[words], D[words]
    else:
        words = np.arange(V)
        token_count, doc_count = T.copy(), D.copy()
    if not is_sparse(T):
        row = np.full(V, -1, dtype=np.int64)  # each word's row in the fold's tables
        row[words] = np.arange(words.size)
        for table, cells in ((token_count, tokens), (doc_count, documents)):
            at = row[cells.col]
            kept = at >= 0
            table[at[kept], cells.row[kept]] -= cells.data[kept]  # each cell once
    used = row[np.flatnonzero(np.bincount(held_out.indices, minlength=V))]
    classes = np.flatnonzero(class_count)
    if classes.size < C:
        token_count, doc_count = token_count[:, classes], doc_count[:, classes]
    vocabulary = counts.vocabulary
    training = Counts(
        classes=tuple(counts.classes[c] for c in classes.tolist()),
        vocabulary=Entries(vocabulary, words) if gone.size else vocabulary,
        class_count=class_count[classes],
        doc_count=doc_count,
        token_count=token_count,
    )
    return Fold(rows, training, words, classes, used[used >= 0])


# The low 32 bits of a packed count (D_jc; T_jc above them).
_LOW = (1 << 32) - 1


def _packed(counts: Counts, held_out: CSR) -> CSR | None:
    """The held-out documents' counts as T << 32 | 1 (int64) when :func:`fold_of` can
    sum and subtract T_jc and D_jc as one int64 (:func:`_packed_fold`): CSR counts of one
    pattern, every T_jc and the held-out tokens below 2^31, every N_c below 2^31; else
    None."""
    T, D = _tables(counts)
    if not (is_sparse(T) and is_sparse(D)):
        return None
    if any(np.result_type(part.dtype, np.int64) != np.int64 for part in (T, D, held_out)):
        return None  # (the tables subtracted as they are would not be int64 either)
    if int(counts.class_count.max(initial=0)) >= 2**31:
        return None
    if held_out.nnz and int(held_out.data.min()) < 0:
        return None
    if int(held_out.data.sum(dtype=np.int64)) >= 2**31 or (T.nnz and int(T.data.max()) >= 2**31):
        return None
    if not (np.array_equal(T.indptr, D.indptr) and np.array_equal(T.indices, D.indices)):
        return None
    both = held_out.copy()
    both.data = held_out.data.astype(np.int64) << 32
    both.data |= 1
    return both


def _packed_fold(counts: Counts, cells: _Cells, gone: np.ndarray):
    """:func:`_sparse_fold` with the held-out cells ``cells`` (COO (C, V), T << 32 | D,
    from :func:`_packed`, each (class, word) once) found in the tables' sorted pattern
    and subtracted where they are, from one copy of each table's values: no merge of the
    whole tables (at 2,000 classes × 2,000,000 words, a held-out sample of 1.4 million
    cells against 9.8 million pairs), the cells left at 0 dropped and the rows of the
    words ``gone`` (left empty) taken out of the row pointers: the same tables. None
    where the counts do not hold the held-out documents' (a cell they lack, a D_jc or
    T_jc left below 0, or one left at 0 without the other) or their pattern is not
    sorted: :func:`_sparse_fold` then makes them as it always has."""
    T, D = _tables(counts)
    V, C = T.shape
    if not T.has_sorted_indices or not T.data.all():
        return None  # (a stored 0 would stay where a subtraction drops it)
    # The pattern's cells as word × C + class, increasing in CSR order.
    keys = np.repeat(np.arange(V, dtype=np.int64) * C, np.diff(T.indptr))
    keys += T.indices
    # The held-out cells in that order too (word-major): sorted needles, which a binary
    # search finds near the last one (four times as fast as in class-major order).
    held = CSR.from_entries(cells.col, cells.row, cells.data, T.shape)
    word = np.repeat(np.arange(V, dtype=np.int64), np.diff(held.indptr))
    wanted = word * C
    wanted += held.indices
    at = np.searchsorted(keys, wanted)
    if at.size and (int(at.max()) >= T.nnz or not np.array_equal(keys[at], wanted)):
        return None  # a cell the counts lack
    del keys, wanted
    left = T.data[at].astype(np.int64) - (held.data >> 32)
    left_documents = D.data[at].astype(np.int64) - (held.data & _LOW)
    if (left < 0).any() or (left_documents < 0).any() or (
        (left == 0) != (left_documents == 0)
    ).any():
        return None  # not the counts of a refit
    # What is left is no larger than the count: it fits the tables' own (narrow) type,
    # and they are widened to int64 last, once the emptied cells are dropped.
    tokens, documents = T.data.copy(), D.data.copy()
    tokens[at], documents[at] = left, left_documents
    emptied = at[left == 0]
    lengths = np.diff(T.indptr).astype(np.int64)
    indices = T.indices
    if emptied.size:
        keep = np.ones(T.nnz, dtype=bool)
        keep[emptied] = False
        tokens, documents, indices = tokens[keep], documents[keep], indices[keep]
        lengths -= np.bincount(word[left == 0], minlength=V)
    else:
        indices = indices.copy()  # (the counts' own stay theirs)
    tokens, documents = tokens.astype(np.int64, copy=False), documents.astype(np.int64, copy=False)
    words = np.delete(np.arange(V), gone) if gone.size else np.arange(V)
    row = np.full(V, -1, dtype=np.int64)
    row[words] = np.arange(words.size)
    if gone.size:
        if lengths[gone].any():
            return None
        lengths = lengths[words]
    indptr = np.zeros(words.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    shape = (words.size, C)
    tables = [CSR(tokens, indices, indptr, shape),
              CSR(documents, indices.copy(), indptr.copy(), shape)]  # fmt: skip
    return tables[0], tables[1], words, row


def _sparse_fold(counts: Counts, tokens: _Cells, documents: _Cells, gone: np.ndarray):
    """:func:`fold_of`'s tables when the counts are CSR (V, C): the held-out cells
    ``tokens`` and ``documents`` ((C, V)) subtracted as sparse matrices, the cells left
    at 0 dropped (canonical CSR again), then the rows of the words ``gone`` too.
    Returns the two tables, the kept words (V_k,) and each word's row in them (V,)."""
    T, D = _tables(counts)
    V = T.shape[0]
    tables = []
    for table, cells in ((T, tokens), (D, documents)):
        held = CSR.from_entries(cells.col, cells.row, cells.data, table.shape)
        rest = table - held
        rest.eliminate_zeros()
        rest.sort_indices()
        tables.append(rest)
    words = np.delete(np.arange(V), gone) if gone.size else np.arange(V)
    row = np.full(V, -1, dtype=np.int64)
    row[words] = np.arange(words.size)
    if gone.size:
        tables = [table[words] for table in tables]
    return tables[0], tables[1], words, row


def pruned(fold: Fold, min_df: int) -> Fold:
    """``fold`` with the words of fewer than ``min_df`` training documents (Σ_c D_jc of
    the fold's own counts: the held-out documents never decide) left out of its counts,
    as a model pruned to its frequent words holds them."""
    return _kept(fold, row_sums(fold.counts.doc_count) >= min_df)


def restricted(fold: Fold, rows: np.ndarray | None) -> Fold:
    """``fold`` with only the words ``rows`` (sorted indices into the vocabulary of X's
    columns; None: all) in its counts: the fold of the counts restricted to those rows,
    exactly (a fold subtracts each word's own counts, and drops the words and classes
    left with none: restricting before or after gives the same counts)."""
    if rows is None:
        return fold
    inside = np.zeros(int(max(fold.words.max(initial=-1), rows.max(initial=-1))) + 1, bool)
    inside[rows] = True
    return _kept(fold, inside[fold.words])


def _kept(fold: Fold, keep: np.ndarray) -> Fold:
    """``fold`` with the words of its vocabulary where ``keep`` (bool, (V_k,)) alone."""
    if keep.all():
        return fold
    rows, counts = np.flatnonzero(keep), fold.counts
    used = fold.used[keep[fold.used]]
    if 4 * rows.size < keep.size:  # each kept word's row after pruning, found among few
        place = np.searchsorted(rows, used)
    else:  # or counted along the vocabulary
        place = (np.cumsum(keep) - 1)[used]
    restricted = Counts(  # Counts.restrict, its vocabulary as Entries
        classes=counts.classes, vocabulary=Entries(counts.vocabulary, rows),
        class_count=counts.class_count, doc_count=counts.doc_count[rows],
        token_count=counts.token_count[rows],
    )  # fmt: skip
    return Fold(fold.rows, restricted, fold.words[rows], fold.classes, place)


def informative(fold: Fold, k: int, ranking: np.ndarray | None = None) -> Fold:
    """``fold`` with its vocabulary pruned to the ``k`` entries of highest mutual
    information in the fold's own training counts (the held-out documents never decide),
    as a model pruned by the same rule keeps them
    (:func:`nbclass.models.selection.informative_rows`). ``ranking``, when given, is
    that order of the fold's entries, best first (:func:`mi_ranking`), computed once for
    several ``k``."""
    if len(fold.counts.vocabulary) <= k:
        return fold
    ranking = mi_ranking(fold, k) if ranking is None else ranking
    keep = np.zeros(len(fold.counts.vocabulary), dtype=bool)
    keep[ranking[:k]] = True
    return _kept(fold, keep)


def mi_ranking(fold: Fold, k: int | None = None, whole: tuple | None = None) -> np.ndarray:
    """The fold's entries by mutual information in its training counts, best first (ties:
    the earlier entry), as :func:`nbclass.models.selection.informative_rows` ranks them:
    all of them, or the ``k`` best. ``whole``, when given, is ``(larger, I)``: a fold
    that ``fold`` restricts (:func:`restricted`) and the I_j of its entries
    (:func:`nbclass.models.selection.pruning_information`), which are ``fold``'s at its
    entries to the bit: an entry's I_j is a function of its own counts and of the
    classes' documents alone, which a restriction keeps."""
    from .selection import pruning_information, rank_features

    if whole is None:
        I = pruning_information(fold.counts)
    else:
        larger, I = whole
        if fold is not larger:  # the larger fold's words, sorted, hold the fold's
            I = I[np.searchsorted(larger.words, fold.words)]
    return rank_features(I, I.size if k is None else min(k, I.size))


def set_documents(whole: Fold, X: CSR, rows: np.ndarray | None,
                  min_df: int | None, top_mi: int | None = None,
                  ranking: np.ndarray | None = None,
                  held=None) -> tuple[Fold, CSR]:  # fmt: skip
    """The fold ``whole`` restricted to a feature set's ``rows`` (:func:`restricted`),
    pruned to ``min_df`` if given, then to its ``top_mi`` entries of highest mutual
    information if given (:func:`informative`; ``ranking``: the restricted fold's, when
    ``min_df`` is None), with its held-out documents' counts over the words they hold,
    (m, R): one fold of the whole vocabulary serves every feature set. ``held``: the
    held-out documents' rows of X (``X[whole.rows]``), when the caller has them, or a
    :class:`_Columns` of a set of ``whole``'s rows unpruned, whose columns hold these."""
    fold = restricted(whole, rows)
    if min_df is not None:
        fold, ranking = pruned(fold, min_df), None
    if top_mi is not None:
        fold = informative(fold, top_mi, ranking)
    columns = fold.words[fold.used]
    if isinstance(held, _Columns):  # the columns of a set that holds these
        if columns.size == held.columns.size:
            return fold, held.documents
        return fold, held.documents[:, np.searchsorted(held.columns, columns)]
    return fold, (X[whole.rows] if held is None else held)[:, columns]


class _Columns(NamedTuple):
    """A feature set's held-out documents (``documents``, CSR (m, R)) and the columns of
    X they hold (``columns``, ascending, (R,)): the documents of a pruning of the set
    are its columns among these, the same matrix as those columns of X's rows (a
    selection of columns keeps each row's entries in their order, numbered by their
    place among the columns taken), from a matrix R wide rather than the vocabulary
    (movie reviews with pairs: 97,000 columns of 460,000)."""

    columns: np.ndarray
    documents: CSR


def fold_scorer(fold: Fold, settings: EstimatorSettings):
    """The scorer of ``fold``'s training counts under ``settings``, for documents holding
    only the words its held-out documents use. Only those words get weights (a third of
    20 Newsgroups' vocabulary in its one fold); every total still covers the fold's whole
    vocabulary."""
    prepared = prepare(fold.counts, settings)
    return make_scorer(fold.counts, settings, prepared, rows=fold.used)


# --- held-out summaries: what the criterion needs, a block of documents at a time ---------

# Held-out scores are made a block of documents at a time, at most this many cells
# (documents × classes, 16 MB of float64) each, and each block is reduced at once to what
# the choice needs of it per document: whether its class was scored, its predicted class,
# log p(its class | x) and log p(x). Memory then follows the sample's documents and C,
# not documents × classes × candidates (2,000 classes: 14,000 documents × 2,000 classes
# × 24 candidates would be 5.4 GB).
SCORE_CELLS = 2**21
# Every candidate's whole held-out scores (documents × classes) are kept as well while
# they are this many cells or fewer in all (256 MB of float64), so that the winner's are
# at hand for its calibration; past it, the winner's are made again, the same floats.
KEEP_CELLS = 2**25
# The winner's scores made again are held whole up to this many cells (1 GiB): its
# calibration goes through them a dozen times, and scoring them again each time from the
# folds' weights (:class:`HeldOutScores`) took 40 % of the choice's time at 5,000 classes.
WINNER_CELLS = 2**27
# The candidates are shared by two threads or more (fit's -j) where the counts hold this
# many words × classes or more. Below it a candidate's arithmetic is on small tables, most
# of its time is the interpreter's, which holds its lock, and the threads mostly wait on
# each other: NPS chat (4,991 × 15), SMS spam, pros and cons and movie reviews (36,555 × 2)
# chose in 0.45, 0.37, 0.18 and 0.68 s of CPU in one thread against 0.70, 0.57, 0.22 and
# 0.83 s in two, no sooner on the clock; 20 Newsgroups (147,752 × 20) and the multilingual
# corpus (106,053 × 16) in 0.47 and 0.88 s on the clock in two against 0.67 and 1.15 s.
THREAD_CELLS = 2**20
# Where one thread scores a fold whose held-out documents × classes are at most half this
# many cells, its candidates' scores are made in one block each, and the posteriors of as
# many candidates as make this many cells at once (:meth:`Summary.add_together`): the
# small corpora, whose blocks of a few hundred rows took a call of each function per
# candidate. 2 MB of scores a group: all 48 of a fold of NPS chat's at once (12 MB, and
# the posterior's tables of as many) raised the fit's peak memory by a third.
STACK_CELLS = 2**18


@dataclass
class Summary:
    """One candidate's held-out documents, reduced row by row (every row's numbers are
    those the whole (n, C) scores give it: each is a function of its own row alone).

    Attributes
    ----------
    scored : ndarray of shape (n,), bool
        Its true class is possible (scored −inf when its fold had no training document of it).
    pred : ndarray of shape (n,), int64
        The class of highest posterior, −1 where none is possible (or not scored).
    picked : ndarray of shape (n,)
        log p(true class | x) where scored.
    evidence : ndarray of shape (n,), or None
        log p(x) = logsumexp_c b_c where the document has a known token (for the
        candidates that can be a winner's evidence model, :func:`_evidence`). Where the
        whole scores are kept, made when first read, from the blocks of rows they were
        added in (the same arrays, so the same floats): the choice reads one candidate's.
    jll : ndarray of shape (n, C), or None
        The whole scores, when kept (:data:`KEEP_CELLS`): made when first read from the
        blocks of scores as they were added (−inf where no block gave a row), so that
        only the one the choice reads is ever put together.
    """

    scored: np.ndarray
    pred: np.ndarray
    picked: np.ndarray
    made: np.ndarray | None  # log p(x), as far as made (see evidence)
    # (rows, scores) of each block added, when the whole scores are kept; else None
    blocks: list | None
    shape: tuple = (0, 0)  # (n, C) of the whole scores
    # (scores, has, rows) of the blocks kept whose evidence is not made yet
    pending: list = field(default_factory=list)

    @classmethod
    def empty(cls, n: int, C: int, evidence: bool, keep: bool) -> Summary:
        return cls(
            np.zeros(n, dtype=bool), np.full(n, -1, dtype=np.int64), np.zeros(n),
            np.full(n, np.nan) if evidence else None, [] if keep else None, (n, C),
        )  # fmt: skip

    @property
    def jll(self) -> np.ndarray | None:
        """The whole scores (n, C) when kept, put together from the blocks when first read
        (each row as it was added: the same floats), else None."""
        if self.blocks is None:
            return None
        if len(self.blocks) != 1 or self.blocks[0][0] is not None:
            whole = np.full(self.shape, -np.inf)
            for at, jll in self.blocks:
                whole[at] = jll
            self.blocks = [(None, whole)]
        return self.blocks[0][1]

    @property
    def evidence(self) -> np.ndarray | None:
        for jll, has, at in self.pending:  # each block's kept scores, as added
            with np.errstate(divide="ignore"):
                evidence = posterior_and_evidence(jll)[1]
            self.made[at[has]] = evidence[has]
        self.pending = []
        return self.made

    def add(self, at: np.ndarray, jll: np.ndarray, truth: np.ndarray, known: np.ndarray):
        """The documents ``at`` (indices into the sample) with scores ``jll`` (len(at), C),
        true classes ``truth`` and known tokens ``known``."""
        ok, log_proba = self._take(at, jll, truth, known)
        if log_proba is None and ok.all():
            # the floats posterior_and_evidence gives, without the evidence
            log_proba = log_posterior(jll)
        self._settle(at, ok, log_proba, jll, truth)

    @staticmethod
    def add_together(summaries, at: np.ndarray, jlls, truth: np.ndarray, known) -> None:
        """:meth:`add` of each of ``summaries`` its scores ``jlls`` (and known tokens
        ``known``) of the same documents ``at``: the log posteriors of those whose every
        document's class is possible made by one :func:`log_posterior` of their scores
        stacked, and their classes by one :func:`best_classes`. Both are row by row (each
        row's floats are those of its own row alone; test_choosing_blocks), so each
        summary is what :meth:`add` makes of it, for two calls instead of one each: a
        candidate's block of a small corpus is a few hundred rows, and the calls' own
        steps were most of their time."""
        taken = [s._take(at, jll, truth, k) for s, jll, k in zip(summaries, jlls, known)]
        plain = [i for i, (ok, log_proba) in enumerate(taken) if log_proba is None and ok.all()]
        if plain:
            stacked = log_posterior(np.concatenate([jlls[i] for i in plain]), every=True)
            best = best_classes(stacked)
            m, rows = at.size, np.arange(at.size)
            for place, i in enumerate(plain):
                summaries[i].pred[at] = best[place * m : (place + 1) * m]
                summaries[i].picked[at] = stacked[place * m : (place + 1) * m][rows, truth]
        plain = set(plain)
        for i, (summary, (ok, log_proba)) in enumerate(zip(summaries, taken)):
            if i not in plain:
                summary._settle(at, ok, log_proba, jlls[i], truth)

    def _take(self, at, jll, truth, known):
        """:meth:`add`'s first steps: the kept scores, which documents are scored and
        their evidence (or the blocks to make it from); ``(ok, log_proba)``, log_proba
        None unless the evidence's exp made it."""
        if self.blocks is not None:  # kept as they are (the scorers make a new array)
            if jll.base is not None:  # (a view would keep the array it is of)
                jll = jll.copy()
            self.blocks.append((at, jll))
        ok = np.isfinite(jll[np.arange(at.size), truth])
        self.scored[at] = ok
        has = known > 0
        log_proba = None
        if self.made is not None and has.any():
            if self.blocks is not None:  # its log p(x) made when read, from the kept rows
                self.pending.append((jll, has, at))
            else:  # from one exp of the scores
                with np.errstate(divide="ignore"):
                    log_proba, evidence = posterior_and_evidence(jll)
                self.made[at[has]] = evidence[has]
        return ok, log_proba

    def _settle(self, at, ok, log_proba, jll, truth) -> None:
        """:meth:`add`'s last steps: the scored documents' classes and log p(true class)."""
        if ok.any():
            if log_proba is None:
                log_proba = log_posterior(jll[ok])
            elif not ok.all():
                log_proba = log_proba[ok]
            pred = best_classes(log_proba)
            self.pred[at[ok]] = pred
            self.picked[at[ok]] = log_proba[np.arange(pred.size), truth[ok]]


def row_blocks(n: int, C: int, cells: int | None = None):
    """``(start, stop)`` of consecutive blocks of ``n`` rows of ``C`` cells, each at most
    ``cells`` (:data:`SCORE_CELLS`) cells, or one row."""
    step = max(1, (SCORE_CELLS if cells is None else cells) // max(C, 1))
    return [(start, min(n, start + step)) for start in range(0, n, step)]


def block_rows(X: CSR, start: int, stop: int) -> CSR:
    """The rows ``start:stop`` of ``X``: ``X`` itself when they are all of them (a block
    that holds every held-out document, as at 20 Newsgroups' 2,263 × 20 classes, is not
    copied for each candidate; the scorers never change the matrix they score)."""
    if start == 0 and stop == X.shape[0]:
        return X
    return X[start:stop]


class HeldOutScores:
    """One candidate's held-out scores b_c, shape (n, C), made on demand from its folds'
    scorers: ``scores[at]`` (``at`` an int array of sample rows) is those rows, (len(at),
    C), −inf for the classes a row's fold lacks. Held instead of the (n, C) array past
    :data:`WINNER_CELLS`: its memory is the folds' weights at the rows their documents use,
    and each row is scored as when it was scored with the others (the same floats)."""

    def __init__(self, n: int, C: int):
        self.shape = (n, C)
        self.parts: list = []  # per fold: (classes, scorer, held-out documents)
        self.part = np.full(n, -1, dtype=np.int64)  # each sampled row's fold
        self.position = np.zeros(n, dtype=np.int64)  # and its row among that fold's

    def add(self, rows: np.ndarray, classes: np.ndarray, scorer, held_out) -> None:
        self.part[rows] = len(self.parts)
        self.position[rows] = np.arange(rows.size)
        self.parts.append((classes, scorer, held_out))

    def __getitem__(self, at) -> np.ndarray:
        at = np.asarray(at, dtype=np.int64)
        out = np.full((at.size, self.shape[1]), -np.inf)
        for p, (classes, scorer, held_out) in enumerate(self.parts):
            mine = np.flatnonzero(self.part[at] == p)
            if mine.size:
                part = scorer.joint_log_likelihood(held_out[self.position[at[mine]]])
                out[np.ix_(mine, classes)] = part
        return out


class LastFold:
    """The fold :func:`held_out_summaries` made last (of ``counts`` and ``X``), kept
    for :func:`winner_scores`: a corpus whose sample is held out at once (one fold, as
    at millions of words) has its fold made once, not again for the winner's scores
    (1.4 s of CPU at 2,000 classes × 2,000,000 words). It holds one fold at a time."""

    __slots__ = ("counts", "X", "k", "fold")

    def __init__(self):
        self.counts = self.X = self.k = self.fold = None

    def get(self, counts: Counts, X: CSR, k: int) -> Fold | None:
        """The kept fold if it is fold ``k`` of these ``counts`` and ``X``, else None."""
        if self.counts is counts and self.X is X and self.k == k:
            return self.fold
        return None

    def put(self, counts: Counts, X: CSR, k: int, fold: Fold) -> None:
        self.counts, self.X, self.k, self.fold = counts, X, k, fold


def winner_scores(counts: Counts, X: CSR, y: np.ndarray, fold_ids: np.ndarray,
                  settings: EstimatorSettings, rows: np.ndarray | None = None,
                  min_df: int | None = None, top_mi: int | None = None,
                  last: LastFold | None = None):  # fmt: skip
    """The held-out scores of one candidate on the feature set ``rows`` (pruned to
    ``min_df`` and ``top_mi``), made again: the (n, C) array when it has at most
    :data:`WINNER_CELLS` cells, else :class:`HeldOutScores`; −inf for the classes a
    row's fold lacks. Each fold's documents are scored a block at a time, as when they
    were scored with the other candidates (the same floats); ``last``: a fold kept from
    then (:class:`LastFold`)."""
    n, C = X.shape[0], len(counts.classes)
    scores = np.full((n, C), -np.inf) if n * C <= WINNER_CELLS else HeldOutScores(n, C)
    for k in present(fold_ids):
        held = np.flatnonzero(fold_ids == k)
        whole = None if last is None else last.get(counts, X, k)
        if whole is None:
            whole = fold_of(counts, X, y, held)
        fold, held_out = set_documents(whole, X, rows, min_df, top_mi)
        del whole
        scorer = fold_scorer(fold, settings)
        if isinstance(scores, HeldOutScores):
            scores.add(held, fold.classes, scorer, held_out)
            continue
        for start, stop in row_blocks(held.size, C):
            part = scorer.joint_log_likelihood(block_rows(held_out, start, stop))
            scores[np.ix_(held[start:stop], fold.classes)] = part
    return scores


def held_out_summaries(
    counts: Counts,
    X: CSR,
    y: np.ndarray,
    fold_ids: np.ndarray,
    candidates,
    threads: int = 1,
    sets=((None, None, None),),
    evidence=(),
    keep: bool = False,
    per_set=None,
    last: LastFold | None = None,
) -> list[tuple[list[Summary], np.ndarray]]:
    """Every candidate's held-out documents under the model of their fold, on each
    feature set of ``sets`` (``(rows, min_df, top_mi)``: sorted indices into the
    vocabulary or None for all, and prunings or None, :func:`set_documents`), summarised
    (:class:`Summary`, with ``evidence`` for the candidates in ``evidence`` and the whole
    scores when ``keep``): per set, the candidates' summaries and each document's known
    tokens, shape (n,). ``per_set``, when given, lists the candidates of each set
    instead (a subset of ``candidates`` each); ``last`` keeps the last fold made
    (:class:`LastFold`). What the whole held-out scores give,
    reduced a block of :data:`SCORE_CELLS` at a time. A class the fold's training counts
    lack scores −inf (no refit could name it).

    One fold of the whole vocabulary is made at a time, in this process, and restricted
    once to each set of rows (the fold of the set's counts, exactly), which its plain,
    df and MI prunings share; where two sets of rows are ranked by mutual information,
    the whole fold's entries are computed once (:func:`mi_ranking`). Its candidates are
    scored by ``threads`` threads where the counts hold :data:`THREAD_CELLS` words ×
    classes or more (by one below), each making its weights once (at the rows its held-out
    documents use) and scoring the documents block by block: spread over forked workers,
    each would hold a fold of its own, which on 20 Newsgroups nearly doubled the memory
    of fit to gain 4 % of its time.
    """
    n, C = X.shape[0], len(counts.classes)
    if not sets:  # no fold to make
        return []
    per_set = [candidates] * len(sets) if per_set is None else per_set
    out = [
        ([Summary.empty(n, C, settings in evidence, keep) for settings in mine],
         np.zeros(n, dtype=np.int64))
        for mine in per_set
    ]  # fmt: skip
    # A second thread pays only where a candidate's work is whole-table arithmetic, which
    # leaves the interpreter lock: below THREAD_CELLS the interpreter's own steps hold it,
    # and two threads take more CPU than one for no less time.
    shared = threads > 1 and len(counts.vocabulary) * C >= THREAD_CELLS
    most: dict = {}  # the largest top_mi of each set of rows ranked by MI alone
    for set_rows, min_df, top_mi in sets:
        if top_mi is not None and min_df is None:
            at = None if set_rows is None else set_rows.tobytes()
            most[at] = max(most.get(at, 0), top_mi)
    for k in present(fold_ids):
        rows = np.flatnonzero(fold_ids == k)
        if last is not None:
            last.put(None, None, None, None)  # never two folds at once
        whole = fold_of(counts, X, y, rows)
        if last is not None:
            last.put(counts, X, k, whole)
        held = X[rows]  # the held-out documents' rows, for every feature set
        blocks = row_blocks(rows.size, C)
        by_columns = False  # held as a CSC matrix (None: not), made when a set first asks
        # The fold restricted to each set of rows once (its plain, df and MI sets share
        # it), and the mutual information of the whole fold's entries once where two sets
        # of rows are ranked: each set's are the whole's at its entries, to the bit.
        work, rankings, inside = [], {}, {}
        whole_set: dict = {}  # the held-out documents of each set of rows unpruned
        information = None
        if len(most) > 1:
            from .selection import pruning_information

            information = (whole, pruning_information(whole.counts))
        for (set_rows, min_df, top_mi), mine, (summaries, known) in zip(sets, per_set, out):
            at = None if set_rows is None else set_rows.tobytes()
            if at not in inside:
                inside[at] = restricted(whole, set_rows)
            ranking = None
            if top_mi is not None and min_df is None:
                if at not in rankings:  # as far as the largest top_mi of these rows
                    rankings[at] = mi_ranking(inside[at], most[at], information)
                ranking = rankings[at]
            fold, held_out = set_documents(inside[at], X, None, min_df, top_mi, ranking,
                                           whole_set.get(at, held))  # fmt: skip
            if min_df is None and top_mi is None:  # every column a pruning of it can hold
                whole_set[at] = _Columns(fold.words[fold.used], held_out)
            fold_known = np.asarray(held_out.sum(axis=1)).ravel()
            known[rows] = fold_known
            columns = None
            if fold.used.size * fold.classes.size >= COLUMN_CELLS:
                if by_columns is False:
                    by_columns = _held_columns(held, len(blocks))
                columns = _by_columns(by_columns, fold)
            made: dict = {}  # the set's features, by kind (_block_scores)
            work += [(settings, summary, fold, held_out, fold_known, columns, made)
                     for settings, summary in zip(mine, summaries)]  # fmt: skip
        del information, inside, rankings, whole_set  # what the sets were made with
        # The DCM candidates' concentrations, one bisection of every set's classes at once
        # (the same floats as each set's alone).
        primed_concentrations([item[2].counts for item in work if item[0].model == "dcm"])

        # A set's features are let go when its last candidate is scored.
        left: dict = {}  # id of a set's features -> its candidates not yet scored
        for item in work:
            left[id(item[6])] = left.get(id(item[6]), 0) + 1
        lock = threading.Lock()

        def scored(made: dict, left=left, lock=lock) -> None:
            with lock:
                left[id(made)] -= 1
                if not left[id(made)]:
                    made.clear()

        def score(item, rows=rows, blocks=blocks):
            settings, summary, fold, held_out, fold_known, columns, made = item
            scorer = fold_scorer(fold, settings)
            for start, stop in blocks:
                jll = _block_scores(scorer, fold, held_out, start, stop, C, columns, made)
                at = rows[start:stop]
                summary.add(at, jll, y[at], fold_known[start:stop])
            scored(made)

        if shared:  # numpy leaves the interpreter lock on whole-table arithmetic
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(threads) as pool:
                pending = pool.map(score, work)  # (every item handed to the pool)
                work.clear()  # a set's fold, documents and numbers go with its last candidate
                list(pending)
        elif len(blocks) == 1 and rows.size and 2 * rows.size * C <= STACK_CELLS:
            # The candidates' scores of the fold in one block each, the posteriors of as
            # many as make STACK_CELLS made at once (Summary.add_together).
            group = STACK_CELLS // (rows.size * C)
            for first in range(0, len(work), group):
                items = work[first : first + group]
                jlls = _scores_together(items, rows.size, C)
                Summary.add_together([item[1] for item in items], rows, jlls, y[rows],
                                     [item[4] for item in items])  # fmt: skip
                del jlls
                for item in items:
                    scored(item[6])
        else:
            while work:  # a set's fold, documents and numbers go with its last candidate
                score(work.pop(0))
    return out


# A feature set's held-out documents are scored as a CSC matrix (_by_columns) where its
# candidates' weights hold this many cells (1 MB) or more: smaller tables stay in the
# cache whichever way they are read, and the conversion would cost more than it saves
# (SMS spam's 2 classes, NPS chat's 4,991 words: no product faster).
COLUMN_CELLS = 2**17


def _held_columns(held: CSR, blocks: int) -> CSC | None:
    """A fold's held-out documents ``held`` (CSR, every column of X) as a CSC matrix,
    where they are scored in one block and each row's entries are in column order;
    else None. Each feature set takes its columns (:func:`_by_columns`)."""
    if blocks != 1 or held.format != "csr" or not held.nnz or not held.has_sorted_indices:
        return None
    return held.tocsc()


def _by_columns(held: CSC | None, fold: Fold) -> CSC | None:
    """A feature set's held-out documents (``fold``'s, the columns of X its held-out
    documents use) as a CSC matrix, from the fold's (:func:`_held_columns`; None: None),
    for the products of its candidates' dense weights (:func:`_block_scores`). Its
    columns are those of set_documents' CSR held-out documents, each column's entries
    in row order: the same matrix.

    scipy's product of a CSC matrix and a dense table goes through the table's rows in
    order, adding each row's terms to the documents that hold its word: every cell's
    terms are added in the order of the word's columns, as the product of a CSR row
    whose entries are sorted adds them, so the scores are the same floats. The table's
    rows are then read once each, in order, instead of once for every document holding
    the word: on 20 Newsgroups' fold the 64 candidates' products took 0.10 s of CPU
    against 0.14 s."""
    if held is None or not dense_cells(fold.used.size, max(fold.classes.size, 1)):
        return None  # (weights from the pairs, sparsity.py, are scored by their rows)
    return held[:, fold.words[fold.used]]


# A set's held-out documents of at most this many entries have each kind of features
# made once for its candidates (_block_scores), and kept while they are scored (2 MB of
# float64 each): movie reviews' three candidates of log tf made them 0.018 s of its
# choice's 0.43. Larger ones (20 Newsgroups with word pairs) make their own, as they
# are used: kept, they raised the fit's peak memory by 10 MB.
SHARED_ENTRIES = 2**18


def _block_scores(scorer, fold: Fold, held_out, start: int, stop: int, C: int,
                  columns=None, shared: dict | None = None) -> np.ndarray:  # fmt: skip
    """The scores (stop − start, C) of the held-out documents ``start:stop`` of ``fold``
    by ``scorer``: −inf for the classes the fold lacks. ``columns``: the documents as a
    CSC matrix (:func:`_by_columns`), taken for all of them by a scorer that gives it
    the same floats (its ``takes_columns``). ``shared``: the features of the whole
    block made for the set's scorers so far, by kind (``feature_kind``): each kind is
    made once and read by every scorer of it (the features are made from the matrix
    alone and never changed: the same floats), where the block is all the documents."""
    X, features = _block_input(scorer, held_out, start, stop, columns, shared)
    if features is None:
        part = scorer.joint_log_likelihood(X)
    else:
        part = scorer.joint_log_likelihood(X, features)
    return _placed(part, fold, stop - start, C)


def _block_input(scorer, held_out, start: int, stop: int, columns=None,
                 shared: dict | None = None):  # fmt: skip
    """``(X, features)``: the documents ``start:stop`` as :func:`_block_scores` gives them
    to ``scorer`` (as rows or columns) and their features shared by kind, or None where
    the scorer makes its own."""
    whole = start == 0 and stop == held_out.shape[0]
    if columns is not None and whole and getattr(scorer, "takes_columns", bool)():
        X = columns
    else:
        X = block_rows(held_out, start, stop)
    kind = getattr(scorer, "feature_kind", None)
    if kind is None or shared is None or not whole or X.nnz > SHARED_ENTRIES:
        return X, None
    key = (kind(), X is columns)
    if key[0] is None:
        return X, None
    features = shared.get(key)
    if features is None:
        features = shared[key] = scorer.features(X)
    return X, features


def _placed(part: np.ndarray, fold: Fold, m: int, C: int) -> np.ndarray:
    """A block's scores ``part`` (m, classes of ``fold``) as (m, C) float64, C-contiguous:
    −inf for the classes the fold lacks."""
    if fold.classes.size == C:  # then fold.classes is 0, 1, ..., C - 1
        return np.ascontiguousarray(part, dtype=np.float64)
    jll = np.full((m, C), -np.inf)
    jll[:, fold.classes] = part
    return jll


def _scores_together(items, n: int, C: int) -> list:
    """:func:`_block_scores` of the whole block of ``n`` documents by each of ``items``'
    candidates (the ``work`` of :func:`held_out_summaries`), the same floats, the
    products of the linear scorers that read one matrix of shared features (a set's
    raw counts, its log tf, its presences) made at once: their weights side by side,
    one product, each scorer's columns of it plus its bias. A cell of a product of a
    sparse matrix and a dense table adds its terms from 0 in the order of the matrix's
    entries, one column of the table at a time whatever its other columns (scipy's
    ``csr_matvecs``, ``csc_matvecs``), so each scorer's columns are the floats of its
    own product: two-class corpora's products of two columns each paid the pass over
    the documents' entries for two numbers an entry."""
    out: list = [None] * len(items)
    together: dict = {}  # id of shared features -> (features, [(item, scorer)])
    for at, (settings, _, fold, held_out, _, columns, made) in enumerate(items):
        scorer = fold_scorer(fold, settings)
        X, features = _block_input(scorer, held_out, 0, n, columns, made)
        dense = isinstance(scorer, LinearScorer) and isinstance(scorer.weights, np.ndarray)
        if features is not None and dense and scorer.required is None:
            together.setdefault(id(features), (features, []))[1].append((at, scorer))
        else:
            part = (scorer.joint_log_likelihood(X) if features is None
                    else scorer.joint_log_likelihood(X, features))  # fmt: skip
            out[at] = _placed(part, items[at][2], n, C)
    for features, members in together.values():
        widths = [scorer.weights.shape[1] for _, scorer in members]
        if len(members) == 1:
            products = [weights_dot(features, members[0][1].weights)]
        else:
            product = np.asarray(features @ np.hstack([s.weights for _, s in members]))
            ends = np.cumsum(widths)
            products = [product[:, end - width : end].copy() for end, width in zip(ends, widths)]
        for (at, scorer), part in zip(members, products):
            part += scorer.bias  # weights_dot's sum: F W, then the bias
            out[at] = _placed(part, items[at][2], n, C)
    return out


# --- calibration ----------------------------------------------------------------------------


def log_loss_of(log_proba: np.ndarray, y: np.ndarray) -> float:
    """Mean −log p(y | x); a true class given probability 0 costs −log(1e-15), as
    scikit-learn's clipping does, so one impossible document cannot make it infinite."""
    if y.size == 0:
        return 0.0
    return _mean_log_loss(log_proba[np.arange(y.size), y])


def _mean_log_loss(picked: np.ndarray) -> float:
    """Mean −log p of the true classes' log-probabilities ``picked`` (n,), clipped as
    :func:`log_loss_of` clips them; 0 for no document."""
    if picked.size == 0:
        return 0.0
    return float(np.mean(-np.maximum(picked, math.log(1e-15))))


# t1, the exponent of the length in T(x) = e^t0 (1 + n_x)^t1: 0 is one temperature for
# every document; 1 divides the scores by the length, i.e. scores each document by its
# mean evidence per token. Past 1 a longer document would be less sure than a shorter one
# holding the same words in the same proportions, and below 0 surer than the product of
# independent words already is: neither is a correction of naive Bayes, so t1 stays in
# [0, 1] (which also keeps a small sample from extrapolating to other lengths wildly).
T1_RANGE = (0.0, 1.0)


@one_thread
def fit_calibration(jll: np.ndarray, y: np.ndarray, n_tokens: np.ndarray,
                    threads: int = 1, most: int | None = None) -> Calibration:
    """The (t0, t1, t2) that minimise the cross-entropy of softmax(jll / T(x)) against
    Platt's targets, T(x) = exp(t0 + t1 · log(1 + n_x) + t2 · log(1 + g(x))).

    ``jll`` (shape (n, C), or :class:`HeldOutScores`: read a block of rows at a time) are
    held-out scores, ``y`` (n,) the true classes, ``n_tokens`` (n,) the known tokens per
    document; g(x) is the gap between a document's two top
    scores (:func:`score_gaps`). As in Platt (1999), the targets are not 0 and 1:
    the true class's is 1 − ε and the other possible classes share ε, ε = 1 / (n + 2)
    (Laplace's rule of succession for "this kind of document is right"). Without it, a
    sample classified all right would drive T to 0 (certainty that n documents cannot
    support); with thousands of documents ε is negligible. t1 is kept in
    :data:`T1_RANGE` and t2 in ±:attr:`Calibration.GAP_BOUND`. Documents whose true class
    scores −inf (its class had no training document in their fold) are left out.
    ``threads`` share the blocks of documents of each evaluation (the same floats: each
    row's numbers are its own). ``most``: fitted on the first ``most`` documents left
    (:func:`calibration_documents`), or on all of them (None); ε is then that of all of
    them (n counts every document whose true class is possible: each was scored, and
    the first are a uniform sample of them, so they speak for the n).
    """
    C = jll.shape[1]
    if y.size == 0:
        return Calibration(0.0, 0.0)
    if isinstance(jll, np.ndarray):  # each row's true class's score, picked out alone
        true = [jll[np.arange(y.size), y]]
    else:  # (HeldOutScores: its rows a block at a time)
        true = [jll[np.arange(a, b)][np.arange(b - a), y[a:b]] for a, b in row_blocks(y.size, C)]
    ok = np.flatnonzero(np.isfinite(np.concatenate(true)))
    scored = ok.size  # the targets' ε counts every one of them
    ok = ok[:most]
    y = y[ok]
    if y.size == 0:
        return Calibration(0.0, 0.0)
    blocks = row_blocks(ok.size, C)
    gaps = np.concatenate([score_gaps(jll[ok[a:b]]) for a, b in blocks])
    features = np.stack([np.log1p(n_tokens[ok]), np.log1p(gaps)], axis=1)
    pool = None
    if threads > 1 and len(blocks) > 1:  # numpy leaves the interpreter lock on the blocks
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(threads)
    try:
        loss = _calibration_loss(jll, ok, y, features, blocks, pool, scored)
        gap = Calibration.GAP_BOUND
        t = _minimise(loss, [(-Calibration.BOUND, Calibration.BOUND), T1_RANGE, (-gap, gap)])
        worse = loss(t)[0] >= loss(np.zeros(3))[0]
    finally:
        if pool is not None:
            pool.shutdown()
    if worse:
        return Calibration(0.0, 0.0)
    return Calibration(float(t[0]), float(t[1]), float(t[2]))


def _calibration_loss(jll, ok, y, features, blocks, pool=None, scored=None):
    """The cross-entropy L(t) of the calibration, with its gradient and Hessian.

    Document i's scores are z_i = a_i · e^(−λ_i), λ_i = t0 + t1 · u_i + t2 · v_i, with
    (u_i, v_i) its row of ``features`` (log(1 + n_i), log(1 + g_i)), a_i its shifted
    scores, τ_i its targets; f_i(λ) = logsumexp(z_i) − τ_i · z_i, so
    f_i′ = −(p_i − τ_i) · z_i and f_i″ = Var_{p_i}(z_i) + (p_i − τ_i) · z_i with
    p_i = softmax(z_i); L is their mean, and by the chain rule ∂λ_i/∂t = (1, u_i, v_i).

    The documents are the rows ``ok`` of ``jll`` (true classes ``y``); each evaluation
    goes through them a block (``blocks``, ranges of ``ok``) at a time, every row's
    numbers its own, so the memory is a block's whatever the documents and classes
    (``pool``: threads that take the blocks in turn, a block each at a time).
    A block whose every score is finite (every class possible: the rule at many
    classes) takes :func:`_finite_block`'s steps, the same floats in fewer passes; the
    value at a point already evaluated is not computed again. The targets' ε is
    1 / (n + 2) for n = ``scored`` documents (None: the rows ``ok``).
    """
    design = np.hstack([np.ones((features.shape[0], 1)), features])  # ∂λ_i/∂t, (n, 3)
    n = design.shape[0]
    epsilon = 1.0 / ((n if scored is None else scored) + 2)
    # The blocks' shifted scores and targets are made once when they are few cells.
    cached = {} if ok.size * jll.shape[1] <= 4 * SCORE_CELLS else None
    done: dict = {}  # the value, gradient and Hessian at each point evaluated

    # Each block of finite scores, once seen: its rows' maxima, and its first row where
    # its rows are consecutive rows of an array (then a slice, not a gather).
    seen: dict = {}
    others = float(jll.shape[1] - 1)
    shares = (epsilon / max(others, 1.0), 1.0 - epsilon if others > 0 else 1.0)

    def prepared(a: int, b: int):
        if cached is not None and a in cached:
            return cached[a]
        if a in seen:  # finite: shifted as before, the same floats
            top, first, least = seen[a]
            block = jll[ok[a:b]] if first is None else jll[first : first + b - a]
            return np.subtract(block, top), None, (*shares, least)
        block = jll[ok[a:b]]
        finite = np.isfinite(block)
        if finite.all():  # the shifted scores in place; the targets as each row's two
            top = _row_maxima(block)
            block -= top
            least = _least_negative(block)
            item = (block, None, (*shares, least))
            if cached is None and isinstance(jll, np.ndarray):
                consecutive = int(ok[b - 1]) - int(ok[a]) == b - a - 1
                seen[a] = (top, int(ok[a]) if consecutive else None, least)
        else:
            # Shifted by their row maximum: the softmax is unchanged and no overflow.
            shifted = np.where(finite, block - block.max(axis=1, keepdims=True), 0.0)
            others = finite.sum(axis=1, keepdims=True) - 1.0
            target = np.where(finite, epsilon / np.maximum(others, 1.0), 0.0)
            target[np.arange(b - a), y[a:b]] = np.where(others[:, 0] > 0, 1.0 - epsilon, 1.0)
            item = (shifted, finite, target)
        if cached is not None:
            cached[a] = item
        return item

    def loss(t: np.ndarray):
        key = np.asarray(t, dtype=np.float64).tobytes()
        if key in done:
            return done[key]
        scales = np.exp(-(design @ t))[:, None]
        first, second, rows = np.empty(n), np.empty(n), np.empty(n)

        def block(span):
            a, b = span
            shifted, finite, target = prepared(a, b)
            if finite is None:
                first[a:b], second[a:b], rows[a:b] = _finite_block(
                    shifted, scales[a:b], y[a:b], *target
                )
                return
            z = np.where(finite, shifted * scales[a:b], 0.0)
            # log_posterior: scipy.special.log_softmax's floats on these rows (each has
            # a finite score, its true class's), without importing scipy.special
            log_p = np.where(finite, log_posterior(np.where(finite, z, -np.inf)), 0.0)
            p = np.where(finite, np.exp(log_p), 0.0)
            pz, tz = (p * z).sum(axis=1), (target * z).sum(axis=1)
            first[a:b] = tz - pz
            second[a:b] = (p * z * z).sum(axis=1) - pz * pz + pz - tz
            rows[a:b] = (target * log_p).sum(axis=1)

        list(map(block, blocks) if pool is None else pool.map(block, blocks))
        gradient = design.T @ first / n
        hessian = (design * second[:, None]).T @ design / n
        done[key] = float(-rows.mean()), gradient, hessian
        return done[key]

    return loss


# np.exp(x) is 0 for every x below this (it is 0 from −745.1333 down): the cells of a
# softmax this far below their row's largest are left out of its exps, which are most of
# the calibration's time at thousands of classes (numpy's exp is slowest where it
# underflows), and they are 0 all the same.
EXP_ZERO = -746.0


# A block's shifted scores times its scales stay nonzero where they are negative while the
# least of them in magnitude times the least scale is above this (far above the least
# subnormal, 2^-1074, so that the product's rounding cannot reach it).
NO_UNDERFLOW = 2.0**-1000


def _least_negative(shifted: np.ndarray) -> float:
    """The least magnitude of the cells of ``shifted`` whose sign is negative, −0 among
    them (its magnitude 0); inf where there are none."""
    return -float(np.max(shifted, where=np.signbit(shifted), initial=-np.inf))


def _finite_block(shifted, scales, y, share, own, least: float = 0.0):
    """The rows of :func:`_calibration_loss`'s sums (−(p − τ) · z, Var_p(z) + (p − τ) · z,
    τ · log p) for a block of finite scores ``shifted`` (each row's largest 0), row scales
    ``scales`` (m, 1), true classes ``y``, each row's targets ``share`` (every other
    class) and ``own`` (its class): the floats of the general steps (which take
    log_softmax of z, then exp of it) in fewer passes. log_softmax shifts z by its row
    maximum, +0 here (then z − 0 is z, bit for bit); exp is taken where z ≥
    :data:`EXP_ZERO` alone, and is 0 elsewhere, as is exp(log p) (log p ≤ z, since the
    row's sum of exps is at least the 1 of its maximum); a target τ_ic times z_ic is
    the row's share times z_ic, its own class's cell set apart.

    ``least``: :func:`_least_negative` of ``shifted`` (0: not known). The row maxima of
    z are then known without a pass over the block where every scale is positive and
    finite and ``least`` times the least of them is above :data:`NO_UNDERFLOW`: each
    row's largest cell of ``shifted`` is +0 (the row's largest score less itself), and
    so is that cell of z (+0 times a positive scale), while every other cell is +0 as
    well (a tie) or negative and stays negative (or −inf, past the floats), never −0:
    the maximum numpy's reduction gives is +0, whatever order it takes the cells in,
    and the shift is none (NPS chat's calibrations spent a fifth of their time on the
    reduction, a row of 15 classes at a time)."""
    z = shifted * scales
    low, high = scales.min(), scales.max()
    if low > 0.0 and high < np.inf and least * low > NO_UNDERFLOW:
        z_shifted = z  # every row's largest is +0
    else:
        top = _row_maxima(z)
        if (top != 0).any() or np.signbit(top).any():  # not +0: log_softmax's shift
            z_shifted = z - top
        else:
            z_shifted = z
    near = z_shifted >= EXP_ZERO
    e = np.zeros(z.shape)
    np.exp(z_shifted, out=e, where=near)
    log_p = z_shifted - np.log(_row_sums(e))
    np.exp(log_p, out=e, where=near)  # p; 0 where not near, as it was
    at = np.arange(y.size)
    pz_cells = e * z
    pz = _row_sums(pz_cells)[:, 0]
    pz_cells *= z
    pzz = _row_sums(pz_cells)[:, 0]
    tz_cells = z * share
    tz_cells[at, y] = own * z[at, y]
    tz = _row_sums(tz_cells)[:, 0]
    np.multiply(log_p, share, out=tz_cells)
    tz_cells[at, y] = own * log_p[at, y]
    return tz - pz, pzz - pz * pz + pz - tz, _row_sums(tz_cells)[:, 0]


def _row_sums(cells: np.ndarray) -> np.ndarray:
    """``cells.sum(axis=1, keepdims=True)`` of an (m, C) array, the same floats
    (:func:`nbclass.models.posterior.row_totals`: of two columns, C-contiguous, two
    columns added, in a sixth of numpy's time; SMS spam's calibration and offsets spent
    half their time in these sums).

    >>> cells = np.array([[1.5, -0.0], [-0.0, -0.0], [np.inf, 2.0]])
    >>> np.array_equal(_row_sums(cells).view(np.int64), cells.sum(1, keepdims=True).view(np.int64))
    True
    """
    return row_totals(cells)[:, None]


def _row_maxima(cells: np.ndarray) -> np.ndarray:
    """``cells.max(axis=1, keepdims=True)`` of an (m, C) array, the same floats (NaN and
    the sign of 0 as it gives them); of two columns, the first's and the second's
    elementwise maximum (:func:`nbclass.models.posterior.row_max`, the order numpy's
    reduction takes them in), in a sixth of the time (:func:`_row_sums`). Not past two:
    column by column, a row holding both 0 and −0 may keep the other zero."""
    if cells.shape[1] == 2:
        return row_max(cells)[:, None]
    return cells.max(axis=1, keepdims=True)


def _newton_step(g: np.ndarray, H: np.ndarray) -> np.ndarray:
    """−H⁺g over the directions of positive curvature (a direction of none, as when every
    document has the same length and t0, t1 do the same, takes no step), or −g where the
    Hessian has a negative curvature or none at all."""
    curvature, directions = np.linalg.eigh(H)
    top = curvature.max()
    if top <= 0 or curvature.min() < -1e-10 * top:
        return -g
    keep = curvature > 1e-10 * top
    basis = directions[:, keep]
    return -basis @ ((basis.T @ g) / curvature[keep])


def _minimise(function, bounds, steps: int = 100) -> np.ndarray:
    """A local minimum of ``function`` (returning value, gradient, Hessian) within the box
    ``bounds``, from the origin: Newton steps on the coordinates not held at a bound
    (a gradient step where the Hessian is not positive definite), halved until the value
    falls, until no step lowers it."""
    low, high = (np.array(b, dtype=np.float64) for b in zip(*bounds))
    t = np.clip(np.zeros(len(bounds)), low, high)
    value, gradient, hessian = function(t)
    for _ in range(steps):
        # Held: at a bound with the gradient pushing past it.
        free = ~(((t <= low) & (gradient > 0)) | ((t >= high) & (gradient < 0)))
        if not free.any():
            break
        step = np.zeros_like(t)
        step[free] = _newton_step(gradient[free], hessian[np.ix_(free, free)])
        if -(gradient @ step) < 1e-15 * max(1.0, abs(value)):  # nothing left to gain
            break
        for _ in range(50):
            trial = np.clip(t + step, low, high)
            trial_value, trial_gradient, trial_hessian = function(trial)
            if trial_value < value:
                break
            step /= 2
        else:
            break
        moved = np.abs(trial - t).max()
        t, value, gradient, hessian = trial, trial_value, trial_gradient, trial_hessian
        if moved < 1e-12:
            break
    return t


# --- class offsets: a refinement of the winner ---------------------------------------------

# The class offsets are scored where the classes are at most this many: their Newton
# system has 2C unknowns (a 200 × 200 solve at 100 classes), and past a hundred classes
# the held-out documents are too few a class to fit two numbers each.
OFFSET_CLASSES = 100
# The ridge ½ λ ‖(a, d)‖² on the offsets: a class of few held-out documents keeps offsets
# near 0 (the calibrated model), one of many is moved by its documents.
OFFSET_RIDGE = 1.0
OFFSETS_NAME = "class offsets"


def offset_features(n_tokens) -> np.ndarray:
    """(1, log(1 + n_x)) of each document, shape (n, 2): the columns whose per-class
    coefficients (a_c, d_c) the offsets are."""
    u = np.log1p(np.asarray(n_tokens, dtype=np.float64))
    return np.column_stack([np.ones(u.size), u])


@one_thread
def fit_offsets(L: np.ndarray, y: np.ndarray, n_tokens: np.ndarray,
                steps: int = 50) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The class offsets (a, d), each shape (C,), that minimise

        −Σ_i log softmax_c(L_ic + a_c + d_c · log(1 + n_i))[y_i] + ½ λ (‖a‖² + ‖d‖²)

    (λ = :data:`OFFSET_RIDGE`) over documents of calibrated log-probabilities ``L`` (n, C;
    −inf for a class a document's fold lacked, never its true class ``y``) and known
    tokens ``n_tokens``, the log softmax taken by
    :func:`nbclass.models.posterior.log_posterior`, as every path scores: a multinomial
    logistic regression on fixed scores, convex, solved by Newton's method from 0
    (Hessian Σ_i F_i F_iᵀ ⊗ (diag p_i − p_i p_iᵀ) + λ I, F_i = (1, log(1 + n_i))), a
    step halved until the objective falls; it stops when no gradient entry exceeds
    1e-10 n, or when no step lowers the objective (its floats' precision). Nothing
    random: the same scores give the same floats.
    """
    n, C = L.shape
    F = offset_features(n_tokens)
    m = F.shape[1]
    W = np.zeros((m, C))
    rows = np.arange(n)

    def objective(W):
        S = log_posterior(L + F @ W, every=True)  # the scorer's log softmax; −inf stays −inf
        return -float(np.sum(S[rows, y])) + 0.5 * OFFSET_RIDGE * float(np.sum(W * W)), S

    value, S = objective(W)
    for _ in range(steps):
        P = np.exp(S)
        R = P.copy()
        R[rows, y] -= 1.0
        g = F.T @ R + OFFSET_RIDGE * W  # (m, C)
        if np.abs(g).max() <= 1e-10 * max(n, 1):
            break
        G = (F[:, :, None] * P[:, None, :]).reshape(n, m * C)  # F_ia p_ic
        H = -(G.T @ G)
        for a in range(m):
            for b in range(m):
                H[a * C:(a + 1) * C, b * C:(b + 1) * C] += np.diag((F[:, a] * F[:, b]) @ P)
        H += OFFSET_RIDGE * np.eye(m * C)
        step = np.linalg.solve(H, g.reshape(-1)).reshape(m, C)
        t, improved = 1.0, False
        for _ in range(30):
            trial, trial_S = objective(W - t * step)
            if trial <= value:
                improved = True
                break
            t /= 2
        if not improved:
            break
        W, value, S = W - t * step, trial, trial_S
    return W[0], W[1]


def with_offsets(calibration: Calibration, jll: np.ndarray, y: np.ndarray,
                 n_tokens: np.ndarray) -> Calibration:  # fmt: skip
    """``calibration`` with the class offsets fitted on the held-out documents ``jll``
    (n, C) of true classes ``y`` whose class was scored (:func:`fit_offsets` of their
    log-probabilities under ``calibration``)."""
    L = calibrated(jll, n_tokens, calibration)
    a, d = fit_offsets(L, y, n_tokens)
    return Calibration(calibration.t0, calibration.t1, calibration.t2,
                       tuple(a.tolist()), tuple(d.tolist()))  # fmt: skip


def cross_fitted_offsets(jll: np.ndarray, y: np.ndarray, n_tokens: np.ndarray,
                         fold_ids: np.ndarray) -> np.ndarray:  # fmt: skip
    """The held-out documents' log-probabilities (n, C) under the winner with class
    offsets, each fold's calibration and offsets fitted on the other folds' documents
    (:func:`fit_calibration`, :func:`with_offsets`), so that no document is scored by
    offsets it helped to fit. One fold (a corpus of five times its sample or more): its
    documents are dealt into two (:func:`stratified_fold_ids`). Every document's true
    class must be scored (finite)."""
    if len(present(fold_ids)) == 1:
        fold_ids = stratified_fold_ids(y, 2)
    out = np.full(jll.shape, -np.inf)
    for k in present(fold_ids):
        test, train = fold_ids == k, fold_ids != k
        if not train.any():
            continue
        held, truth, lengths = jll[train], y[train], n_tokens[train]
        calibration = fit_calibration(held, truth, lengths)
        calibration = with_offsets(calibration, held, truth, lengths)
        del held
        out[test] = calibrated(jll[test], n_tokens[test], calibration)
    return out


# --- the choice ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Choice:
    """What fit chose, and why.

    Attributes
    ----------
    settings : EstimatorSettings
        The winner, stored as the model's defaults.
    calibration : Calibration
        Fitted on the winner's held-out scores.
    table : list of dict
        Per candidate: its name, settings, held-out accuracy, macro-F1 and log loss.
    documents : int
        Held-out documents scored (the sample, less those no fold could score).
    evidence : ndarray of shape (m,), or None
        The held-out per-token log-evidence e(x) = log p(x) / n_x of the sampled documents
        with a known token, under the winner's evidence model
        (:func:`nbclass.models.novelty.evidence_settings`, itself a candidate): the typicality
        of the training documents, measured by the same folds at no extra cost.
    """

    settings: EstimatorSettings
    calibration: Calibration
    table: list[dict]
    documents: int
    folds: int
    evidence: np.ndarray | None = None
    features: tuple[str, ...] | None = None
    min_df: int | None = None
    top_mi: int | None = None
    offsets: bool = False

    def to_dict(self) -> dict:
        name = named(self.settings, self.features, self.min_df, self.top_mi)
        return {
            "criterion": CRITERION,
            "folds": self.folds,
            "documents": self.documents,
            "chosen": name + ", " + OFFSETS_NAME if self.offsets else name,
            "candidates": self.table,
        }


def named(
    settings: EstimatorSettings,
    features: tuple[str, ...] | None,
    min_df: int | None = None,
    top_mi: int | None = None,
) -> str:
    """A candidate's name: its settings (:func:`describe`), then its feature families
    when the choice compared several sets, and the pruning of its vocabulary, e.g.
    ``multinomial β=fit, words+pairs, df≥2`` or ``complement tf=log no-class-prior,
    MI top 1000``."""
    parts = [describe(settings)]
    if features is not None:
        parts.append("+".join(features))
    if min_df is not None:
        parts.append(f"df≥{min_df}")
    if top_mi is not None:
        parts.append(f"MI top {top_mi}")
    return ", ".join(parts)


def _macro_f1(y: np.ndarray, pred: np.ndarray, C: int) -> float:
    """Macro-F1 of predictions ``pred`` (−1: none) of the true classes ``y``, as
    ``evaluate`` computes it (:mod:`nbclass.models.metrics`)."""
    from . import metrics

    return metrics.macro_f1(metrics.class_metrics_of(y, pred, C))


def shortfall(accuracy, macro_f1) -> list[float]:
    """Each candidate's shortfall: the larger of its gaps to the best accuracy and to the
    best macro-F1 of the family, max(max(a) − a_i, max(f) − f_i).

    >>> shortfall([0.74, 0.72, 0.70], [0.38, 0.43, 0.40])
    [0.05, 0.02, 0.04]
    """
    best_a, best_f = max(accuracy), max(macro_f1)
    return [round(float(max(best_a - a, best_f - f)), 12) for a, f in zip(accuracy, macro_f1)]


def _no_evidence(candidates, features=None) -> Choice:
    """The choice when no document can be held out (every class has one document): the
    first, simplest candidate (on the first feature set), uncalibrated; its table says
    no document was scored."""
    names, _, min_df, top_mi = features[0] if features else (None, None, None, None)
    table = [
        {"name": named(s, names, min_df, top_mi), "settings": s.to_dict(), "accuracy": 0.0,
         "macro_f1": 0.0, "log_loss": 0.0, "chosen": i == 0}
        for i, s in enumerate(candidates)
    ]  # fmt: skip
    if names is not None:
        for row in table:
            row["features"] = list(names)
    if min_df is not None:
        for row in table:
            row["min_df"] = min_df
    if top_mi is not None:
        for row in table:
            row["top_mi"] = top_mi
    return Choice(candidates[0], Calibration(0.0, 0.0), table, 0, 0, None, names, min_df,
                  top_mi)  # fmt: skip


def keeps_its_class(fold_ids: np.ndarray, y: np.ndarray, class_count: np.ndarray) -> np.ndarray:
    """Whether each sampled document's class keeps a training document when the
    document's fold is held out, bool of shape (n,): fewer of the class's N_c documents
    are in the fold than N_c. A document for which it does not could not be scored (no
    refit could name its class).

    >>> keeps_its_class(np.array([0, 0, 1, 0]), np.array([0, 1, 1, 2]), np.array([5, 2, 1]))
    array([ True,  True,  True, False])
    """
    held = np.zeros((int(fold_ids.max()) + 1, class_count.size), dtype=np.int64)
    np.add.at(held, (fold_ids, y), 1)
    return held[fold_ids, y] < class_count[y]


def choose(
    counts: Counts,
    X: CSR,
    y: np.ndarray,
    candidates=CANDIDATES,
    k: int = FOLDS,
    threads: int = 1,
    features: list[tuple[tuple[str, ...] | None, np.ndarray | None, int | None, int | None]]
    | None = None,
    second=None,
    offsets: bool = False,
) -> Choice:
    """Cross-validate ``candidates`` on the sample ``(X, y)`` of the corpus of ``counts``.

    ``X`` (n, V) counts the sampled documents over ``counts.vocabulary``; ``y`` (n,) are
    their classes (indices into ``counts.classes``); ``threads`` score the candidates.
    ``features``, when given, lists feature sets ``(family names, rows, min_df, top_mi)``
    (names None and rows None: every entry, one kind of token; rows: sorted indices into
    the vocabulary, :mod:`nbclass.text.families`; ``min_df`` and ``top_mi`` None or a
    pruning of each fold's vocabulary, :func:`pruned` and :func:`informative`): every
    candidate is then scored
    on each set's rows alone (the counts and the sample restricted to them, as a fit
    counting only those tokens would hold), the sets in that order, and the choice picks
    a set with the settings. ``second``, when given, marks the sets (one item each) scored
    in a second round, only with the :data:`SECOND_ROUND` settings that did best on the
    other sets by the criterion (and their evidence settings,
    :func:`nbclass.models.novelty.evidence_settings`, for the typicality): the sets with
    word pairs, whose entries are many times the words'. An item is False (the first
    round), True (the second), or the family names of the first round's set that the
    set adds to (the second round, only when the first round's best candidate is of a
    set of those names; every such set when none is): on 20 Newsgroups with pairs the
    first round decides between the words with and without the symbols, and the second
    scores the pairs with that choice alone, half its work. A second-round set pruned by
    mutual information is left out where the first round scored such prunings and its best
    candidate is none of them. ``offsets``: the winner is also
    scored with class offsets (:func:`cross_fitted_offsets`; C ≤ :data:`OFFSET_CLASSES`),
    a row of the table after the candidates, and kept with them when its shortfall is
    smaller than the winner's (its calibration then holds them, :func:`with_offsets`).
    """
    y = np.asarray(y, dtype=np.int64)
    # A document whose class has no other document is never scored: held out, its class
    # would have no training document. Leaving it out of the sample spares the work.
    scorable = counts.class_count[y] >= 2
    X = as_csr(X)
    if not scorable.all():  # (else not copied: with word pairs, most of the sample's entries)
        X, y = X[scorable], y[scorable]
    if y.size == 0:
        return _no_evidence(candidates, features)
    fold_ids = stratified_fold_ids(y, folds_for(y.size, counts.n_docs, k))
    # Likewise a document held out with every other document of its class (a corpus of
    # thousands of small classes, sampled whole into one fold): its fold would have no
    # training document of its class. It stays with the fold's training documents.
    kept = keeps_its_class(fold_ids, y, counts.class_count)
    if not kept.all():
        X, y, fold_ids = X[kept], y[kept], fold_ids[kept]
        if y.size == 0:
            return _no_evidence(candidates, features)
    from .novelty import evidence_settings

    sets = features or [(None, None, None, None)]
    later = [bool(second is not None and second[i]) for i in range(len(sets))]
    if all(later):  # no first round to narrow the second
        later = [False] * len(sets)
    first = [i for i, late in enumerate(later) if not late]
    narrowed = min(len(candidates), 2 * SECOND_ROUND)  # at most, with their evidence models
    scored = len(candidates) * len(first) + narrowed * (len(sets) - len(first))
    # Each candidate's held-out scores are kept whole only when all of them together are
    # small; otherwise the winner's are made again for its calibration.
    keep = y.size * len(counts.classes) * scored <= KEEP_CELLS
    evidence = {evidence_settings(settings) for settings in candidates}

    specs = [  # (rows, min_df, top_mi) of each set; None: every row
        (None if kept_rows is None or kept_rows.size == len(counts.vocabulary) else kept_rows,
         min_df, top_mi)
        for _, kept_rows, min_df, top_mi in sets
    ]  # fmt: skip
    results: list = [None] * len(sets)  # per set: (its candidates, summaries, known tokens)
    last = LastFold()  # the last fold scored, for the winner's scores made again
    done = _first_round(counts, X, y, fold_ids, candidates, threads, [specs[i] for i in first],
                        evidence, keep, len(first) < len(sets), last)  # fmt: skip
    for i, (summaries, n_tokens) in zip(first, done):
        results[i] = (candidates, summaries, n_tokens)
    made: dict = {}  # each set's rows of the table, made once (_rows)
    if len(first) < len(sets):
        ahead = _rows(sets, specs, results, y, len(counts.classes), made)
        gaps = shortfall(
            [r["correct"] / max(r["documents"], 1) for r in ahead], [r["macro_f1"] for r in ahead]
        )
        best: list = []  # the formulas of the first round, best first by the criterion
        for i in sorted(range(len(ahead)), key=lambda i: (gaps[i], ahead[i]["log_loss"], i)):
            if ahead[i]["settings"] not in best:
                best.append(ahead[i]["settings"])
        wanted = set(best[:SECOND_ROUND]) | {evidence_settings(s) for s in best[:SECOND_ROUND]}
        mine = tuple(settings for settings in candidates if settings in wanted)
        at = [i for i, late in enumerate(later) if late]
        top = ahead[min(range(len(ahead)), key=lambda i: (gaps[i], ahead[i]["log_loss"], i))]
        on_top = [i for i in at if _adds_to(second[i], top["features"])]
        at = on_top or at
        if top["top_mi"] is None and any(r["top_mi"] is not None for r in ahead):
            # The words pruned by MI lost: so would the pairs' (docs/choosing.md), whose
            # ranking of every fold's entries is a fifth of the second round.
            at = [i for i in at if sets[i][3] is None]
        elif top["top_mi"] is not None:
            # The words pruned by MI won: so the pairs are scored pruned by MI alone, to
            # as many entries and to the next size (with pairs, more entries inform), by
            # the winning formula (and its evidence formula) alone (docs/choosing.md).
            larger = sorted({sets[i][3] for i in at if (sets[i][3] or 0) > top["top_mi"]})
            sizes = {top["top_mi"], *larger[:1]}
            at = [i for i in at if sets[i][3] in sizes]
            wanted = {best[0], evidence_settings(best[0])}
            mine = tuple(settings for settings in candidates if settings in wanted)
        done = held_out_summaries(counts, X, y, fold_ids, candidates, threads,
                                  [specs[i] for i in at], evidence, keep,
                                  per_set=[mine] * len(at), last=last)  # fmt: skip
        for i, (summaries, n_tokens) in zip(at, done):
            results[i] = (mine, summaries, n_tokens)
    rows = _rows(sets, specs, results, y, len(counts.classes), made)
    gaps = shortfall(
        [r["correct"] / max(r["documents"], 1) for r in rows], [r["macro_f1"] for r in rows]
    )
    best = min(range(len(rows)), key=lambda i: (gaps[i], rows[i]["log_loss"], i))
    winner = rows[best]
    n_tokens = winner["known"]
    jll = winner["summary"].jll
    if jll is None:  # made again: the same floats as when it was scored with the others
        jll = winner_scores(counts, X, y, fold_ids, winner["settings"], winner["rows"],
                            winner["min_df"], winner["top_mi"], last)  # fmt: skip
    del last
    C = len(counts.classes)
    calibration = fit_calibration(jll, y, n_tokens, threads, calibration_documents(C))
    scored = winner["summary"].scored
    refined = None  # the winner with class offsets, cross-fitted: (its row, its log-probs)
    if offsets and 2 <= C <= OFFSET_CLASSES and scored.any():
        at = np.flatnonzero(scored)
        held = jll[at]  # at most 16,000 × 100 cells, made again if they were not kept
        log_p = cross_fitted_offsets(held, y[at], n_tokens[at], fold_ids[at])
        pred = best_classes(log_p)
        refined = {
            "correct": int(np.sum(pred == y[at])), "documents": int(at.size),
            "macro_f1": _macro_f1(y[at], pred, C),
            "log_loss": _mean_log_loss(log_p[np.arange(at.size), y[at]]),
        }  # fmt: skip
        everyone = rows + [refined]
        gaps = shortfall(
            [r["correct"] / max(r["documents"], 1) for r in everyone],
            [r["macro_f1"] for r in everyone],
        )
        refined["picked"] = gaps[-1] < gaps[best]
        if refined["picked"]:
            calibration = with_offsets(calibration, held, y[at], n_tokens[at])
        del held
    table = []
    for i, r in enumerate(rows):
        row = {
            "name": named(r["settings"], r["features"], r["min_df"], r["top_mi"]),
            "settings": r["settings"].to_dict(),
            "accuracy": r["correct"] / max(r["documents"], 1),
            "macro_f1": r["macro_f1"],
            "log_loss": r["log_loss"],
            "chosen": i == best and not (refined is not None and refined["picked"]),
        }
        if r["features"] is not None:
            row["features"] = list(r["features"])
        if r["min_df"] is not None:
            row["min_df"] = r["min_df"]
        if r["top_mi"] is not None:
            row["top_mi"] = r["top_mi"]
        table.append(row)
    if refined is not None:  # after every candidate: the winner, refined
        row = dict(table[best], name=table[best]["name"] + ", " + OFFSETS_NAME,
                   accuracy=refined["correct"] / refined["documents"],
                   macro_f1=refined["macro_f1"], log_loss=refined["log_loss"],
                   chosen=refined["picked"], offsets=True)  # fmt: skip
        table.append(row)
    chosen_at = next(i for i, row in enumerate(table) if row["chosen"])
    at = np.flatnonzero(scored)
    picked = [
        calibrated(jll[at[a:b]], n_tokens[at[a:b]], calibration)[np.arange(b - a), y[at[a:b]]]
        for a, b in row_blocks(at.size, jll.shape[1])
    ]  # fmt: skip
    table[chosen_at]["calibrated_log_loss"] = _mean_log_loss(
        np.concatenate(picked) if picked else np.zeros(0)
    )
    return Choice(
        replace(winner["settings"]), calibration, table, int(scored.sum()),
        len(present(fold_ids)), _evidence(rows, winner), winner["features"],
        winner["min_df"], winner["top_mi"], bool(calibration.offsets),
    )  # fmt: skip


def _adds_to(base, names) -> bool:
    """Whether a second-round set whose ``second`` item is ``base`` (True, or the family
    names of the first-round set it adds to) is scored when the first round's best
    candidate is of the families ``names``.

    >>> _adds_to(("words", "symbols"), ("symbols", "words")), _adds_to(("words",), None)
    (True, False)
    >>> _adds_to(True, ("words",))
    True
    """
    if base is True:
        return True
    return names is not None and set(base) == set(names)


def _rows(sets, specs, results, y: np.ndarray, C: int, made: dict | None = None) -> list[dict]:
    """The scored candidates, set by set in ``sets`` order and in the order of
    :data:`CANDIDATES` within a set (the sets not scored, None in ``results``, left
    out), each with what the criterion and the table need. ``made``: each set's rows
    made by an earlier call, by index in ``sets`` (taken, and added to)."""
    rows: list = []
    made = {} if made is None else made
    for at, ((names, _, min_df, top_mi), (set_rows, _, _), result) in enumerate(
        zip(sets, specs, results)
    ):
        if result is None:
            continue
        if at in made:  # (the first round's, made before the second round)
            rows += made[at]
            continue
        mine, summaries, n_tokens = result
        made[at] = []
        for settings, summary in zip(mine, summaries):
            scored = summary.scored
            pred, truth = summary.pred[scored], y[scored]
            made[at].append(
                {
                    "settings": settings,
                    "summary": summary,
                    "correct": int(np.sum(pred == truth)),
                    "log_loss": _mean_log_loss(summary.picked[scored]),
                    "macro_f1": _macro_f1(truth, pred, C),
                    "documents": int(scored.sum()),
                    "features": names,
                    "min_df": min_df,
                    "top_mi": top_mi,
                    "known": n_tokens,
                    "rows": set_rows,
                }
            )
        rows += made[at]
    return rows


def _first_round(counts, X, y, fold_ids, candidates, threads, specs, evidence, keep,
                 narrow: bool, last: LastFold | None = None):  # fmt: skip
    """:func:`held_out_summaries` of every candidate on the sets ``specs``. When a second
    round follows (``narrow``) and these sets hold only some rows of the vocabulary (the
    words, without the pairs), the counts and the sample are first restricted to those
    rows: the folds of the restricted counts are those of the whole restricted to them,
    exactly (:func:`restricted`), and they cost the rows of the words alone."""
    if narrow and all(set_rows is not None for set_rows, _, _ in specs):
        # The rows of any set, sorted: marked, not np.unique of them all (a hash table of
        # 520,000 rows took 0.13 s where marking them takes 0.01 s).
        inside = np.zeros(len(counts.vocabulary), dtype=bool)
        for set_rows, _, _ in specs:
            inside[set_rows] = True
        union = np.flatnonzero(inside)
        counts, X = counts.restrict(union), X[:, union]
        specs = [
            (None if set_rows.size == union.size else np.searchsorted(union, set_rows),
             min_df, top_mi)
            for set_rows, min_df, top_mi in specs
        ]  # fmt: skip
    return held_out_summaries(counts, X, y, fold_ids, candidates, threads, specs, evidence, keep,
                              last=last)


def _evidence(rows: list[dict], winner: dict):
    """e(x) of the held-out documents under the winner's evidence model (on the winner's
    features), or None when that model is not among the candidates."""
    from .novelty import evidence_settings

    wanted = evidence_settings(winner["settings"])
    found = [
        r for r in rows
        if r["settings"] == wanted and (r["features"], r["min_df"], r["top_mi"]) == (
            winner["features"], winner["min_df"], winner["top_mi"])
    ]  # fmt: skip
    if not found:
        return None
    n_tokens = winner["known"]
    known = n_tokens > 0
    return found[0]["summary"].evidence[known] / n_tokens[known]
