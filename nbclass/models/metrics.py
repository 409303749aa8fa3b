"""Classification metrics from labels and probabilities, with numpy alone.

Labels are integer indices ``0..L-1`` into a list of label names; a predicted label of
``-1`` means "no label" (every class was impossible, or the prediction abstained): it is
an error for its document and a prediction of no class.

=====================  ====================================================================
metric                 definition (n documents, L labels, C model classes)
=====================  ====================================================================
confusion matrix       M[t, p] = documents of true label t predicted p, shape (L, L); kept
                       as its nonzero cells (:class:`Confusion`, at most n of them)
accuracy               Σ_t M[t, t] / n
precision_l            tp_l / (documents predicted l); 0 when none is (sklearn's
                       ``zero_division=0``)
recall_l               tp_l / support_l, support_l = documents whose true label is l; 0 when 0
F1_l                   2 tp_l / (2 tp_l + fp_l + fn_l); 0 when the denominator is 0
macro F1               mean of F1_l over the labels that are true or predicted at least once
                       (scikit-learn's default label set)
micro F1               2 Σ tp / (Σ predicted + Σ support); equals accuracy when every
                       document gets a label
log loss               −(1/n) Σ_i log p(y_i | x_i), from the log posterior (no clipping)
Brier score            (1/n) Σ_i Σ_c (p(c | x_i) − 1[y_i = c])², the multiclass sum form
                       (range [0, 2]; scikit-learn's ``scale_by_half=False``)
ECE                    Σ_b (n_b / n) |accuracy_b − confidence_b| over B equal-width bins
                       of the confidence max_c p(c | x_i)
=====================  ====================================================================

ECE bins (Guo et al., "On calibration of modern neural networks", ICML 2017): bin b of
``B`` (default 10) holds the documents with b/B < confidence ≤ (b+1)/B; the first bin
also holds confidence 0. Empty bins add nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ECE_BINS = 10

#: Labels up to which ``evaluate --format json`` writes the whole confusion matrix (a
#: million cells); past them, its nonzero cells (at most one per document).
MATRIX_LABELS = 1_000


def confusion_matrix(y_true: np.ndarray, y_pred: np.ndarray, n_labels: int) -> np.ndarray:
    """M[t, p]: documents of true label t predicted p, ndarray of shape (L, L).

    Predictions of ``-1`` (no label) are in no column.

    >>> confusion_matrix(np.array([0, 0, 1, 1]), np.array([0, 1, 1, -1]), 2).tolist()
    [[1, 1], [0, 1]]
    """
    y_true, y_pred = np.asarray(y_true, dtype=np.int64), np.asarray(y_pred, dtype=np.int64)
    labelled = y_pred >= 0
    flat = y_true[labelled] * n_labels + y_pred[labelled]
    return np.bincount(flat, minlength=n_labels * n_labels).reshape(n_labels, n_labels)


@dataclass(frozen=True, eq=False)
class Confusion:
    """The confusion matrix as its nonzero cells, in order of (true, predicted).

    At most one cell per document, whatever the number of labels: the (L, L) matrix of
    20,000 labels is 3.2 GB of int64, the cells of 400 documents a few kilobytes.

    Attributes
    ----------
    n_labels : int
        L.
    true, predicted, count : ndarray of shape (k,)
        Cell (true[i], predicted[i]) holds count[i] > 0 documents; sorted by true label,
        then predicted.
    """

    n_labels: int
    true: np.ndarray
    predicted: np.ndarray
    count: np.ndarray

    @classmethod
    def of_matrix(cls, M) -> Confusion:
        """The nonzero cells of a dense (L, L) matrix."""
        M = np.asarray(M, dtype=np.int64)
        true, predicted = np.nonzero(M)
        return cls(M.shape[0], true, predicted, M[true, predicted])

    def dense(self) -> np.ndarray:
        """M, ndarray of shape (L, L): only for few labels (L² cells)."""
        L = self.n_labels
        M = np.zeros((L, L), dtype=np.int64)
        M[self.true, self.predicted] = self.count
        return M

    def row_sums(self) -> np.ndarray:
        """Σ_p M[t, p] per true label t, shape (L,)."""
        return np.bincount(self.true, weights=self.count, minlength=self.n_labels).astype(
            np.int64
        )

    def largest_errors(self, k: int) -> list[tuple[int, int, int]]:
        """The ``k`` largest off-diagonal cells as (documents, true, predicted), largest
        first, ties by true then predicted label."""
        wrong = np.flatnonzero(self.true != self.predicted)
        order = np.lexsort((self.predicted[wrong], self.true[wrong], -self.count[wrong]))[:k]
        cells = wrong[order]
        return list(zip(self.count[cells].tolist(), self.true[cells].tolist(),
                        self.predicted[cells].tolist()))  # fmt: skip


def confusions(y_true: np.ndarray, y_pred: np.ndarray, n_labels: int) -> Confusion:
    """The nonzero cells of :func:`confusion_matrix`, without the (L, L) matrix.

    >>> m = confusions(np.array([0, 0, 1, 1]), np.array([0, 1, 1, -1]), 2)
    >>> m.true.tolist(), m.predicted.tolist(), m.count.tolist()
    ([0, 0, 1], [0, 1, 1], [1, 1, 1])
    """
    y_true, y_pred = np.asarray(y_true, dtype=np.int64), np.asarray(y_pred, dtype=np.int64)
    labelled = y_pred >= 0
    cells, count = np.unique(y_true[labelled] * n_labels + y_pred[labelled], return_counts=True)
    true, predicted = np.divmod(cells, n_labels) if n_labels else (cells, cells)
    return Confusion(n_labels, true, predicted, count.astype(np.int64))


def _divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0."""
    numerator = np.asarray(numerator, dtype=float)
    denominator = np.asarray(denominator, dtype=float)
    out = np.zeros(np.broadcast(numerator, denominator).shape)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


@dataclass(frozen=True, eq=False)
class ClassMetrics:
    """Per-label true positives, precision, recall, F1, support and predictions, shape (L,)."""

    tp: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray
    support: np.ndarray
    predicted: np.ndarray

    @property
    def active(self) -> np.ndarray:
        """Labels true or predicted at least once, bool of shape (L,): the macro average's."""
        return (self.support > 0) | (self.predicted > 0)


def report_rows(support, predicted, f1, each: int) -> tuple[np.ndarray, np.ndarray]:
    """The per-class rows a report of many classes shows, as two arrays of label indices:
    the ``each`` labels with the most true documents (ties in label order), and the
    ``each`` of lowest F1 among the other labels true or predicted at least once (ties:
    more documents true or predicted first, then label order).

    >>> support, predicted, f1 = [3, 1, 0, 2, 0], [3, 0, 1, 2, 0], [1.0, 0.0, 0.0, 0.5, 0.0]
    >>> frequent, worst = report_rows(support, predicted, f1, 1)
    >>> frequent.tolist(), worst.tolist()
    ([0], [1])
    """
    support, predicted = np.asarray(support, np.int64), np.asarray(predicted, np.int64)
    f1, index = np.asarray(f1, dtype=float), np.arange(support.size)
    frequent = np.lexsort((index, -support))
    frequent = frequent[support[frequent] > 0][:each]
    others = ((support > 0) | (predicted > 0)) & ~np.isin(index, frequent)
    others = np.flatnonzero(others)
    worst = others[np.lexsort((others, -(support + predicted)[others], f1[others]))][:each]
    return frequent, worst


def class_metrics(M: np.ndarray, support: np.ndarray) -> ClassMetrics:
    """Precision, recall and F1 per label from the confusion matrix.

    Parameters
    ----------
    M : ndarray of shape (L, L)
    support : ndarray of shape (L,)
        Documents per true label, counting those that got no label (so it may exceed the
        row sums of ``M``).
    """
    return _class_metrics(np.diag(M), M.sum(axis=0), support)


def class_metrics_of(y_true: np.ndarray, y_pred: np.ndarray, n_labels: int) -> ClassMetrics:
    """:func:`class_metrics` of the confusion matrix of ``y_true`` and ``y_pred`` (−1: no
    label), without the (L, L) matrix: its diagonal and column sums are counted from the
    labels, so memory follows L (20,000 labels: 3.2 GB as a matrix).

    >>> m = class_metrics_of(np.array([0, 0, 1, 1]), np.array([0, 1, 1, -1]), 2)
    >>> m.tp.tolist(), m.predicted.tolist(), m.f1.tolist()
    ([1, 1], [1, 2], [0.6666666666666666, 0.5])
    """
    y_true, y_pred = np.asarray(y_true, dtype=np.int64), np.asarray(y_pred, dtype=np.int64)
    tp = np.bincount(y_true[y_true == y_pred], minlength=n_labels)
    predicted = np.bincount(y_pred[y_pred >= 0], minlength=n_labels)
    return _class_metrics(tp, predicted, np.bincount(y_true, minlength=n_labels))


def _class_metrics(tp: np.ndarray, predicted: np.ndarray, support: np.ndarray) -> ClassMetrics:
    """Precision, recall and F1 per label from its true positives, predictions and support."""
    fp, fn = predicted - tp, support - tp
    return ClassMetrics(
        tp=tp,
        precision=_divide(tp, predicted),
        recall=_divide(tp, support),
        f1=_divide(2 * tp, 2 * tp + fp + fn),
        support=np.asarray(support, dtype=np.int64),
        predicted=predicted,
    )


def accuracy(M: np.ndarray, n: int) -> float:
    """Σ_t M[t, t] / n; n counts every document, those without a label too."""
    return float(np.trace(M) / n) if n else 0.0


def accuracy_of(per_class: ClassMetrics, n: int) -> float:
    """:func:`accuracy` from the true positives per label: Σ_l tp_l / n."""
    return float(per_class.tp.sum() / n) if n else 0.0


def macro_f1(per_class: ClassMetrics) -> float:
    """Mean F1 over the labels that are true or predicted at least once."""
    active = per_class.active
    return float(per_class.f1[active].mean()) if active.any() else 0.0


def micro_f1(per_class: ClassMetrics) -> float:
    """2 Σ tp / (Σ predicted + Σ support), the F1 of the pooled counts."""
    predicted, support = per_class.predicted.sum(), per_class.support.sum()
    return float(_divide(2 * per_class.tp.sum(), predicted + support))


def log_loss(log_p_true: np.ndarray) -> float:
    """−mean log p(y_i | x_i); +inf when a true class got probability 0.

    Parameters
    ----------
    log_p_true : ndarray of shape (n,)
        The log posterior of each document's true class.
    """
    if log_p_true.size == 0:
        return float("nan")
    return float(-np.mean(log_p_true))


def brier_score(proba: np.ndarray, y_true: np.ndarray) -> float:
    """(1/n) Σ_i Σ_c (p_ic − 1[y_i = c])², the multiclass sum form.

    Parameters
    ----------
    proba : ndarray of shape (n, C)
    y_true : ndarray of shape (n,)
        Column of each document's true class in ``proba``.
    """
    n = proba.shape[0]
    if n == 0:
        return float("nan")
    onehot = np.zeros_like(proba)
    onehot[np.arange(n), y_true] = 1.0
    return float(np.mean(np.sum((proba - onehot) ** 2, axis=1)))


BRIER_CELLS = 1 << 20  # documents x classes exponentiated at once by brier_rows


def brier_rows(log_proba: np.ndarray, y_true: np.ndarray) -> np.ndarray:
    """Σ_c (p_ic − 1[y_i = c])² per document, the terms of :func:`brier_score` (the same
    floats), from the log posterior a few rows at a time (at most :data:`BRIER_CELLS`
    cells at once); NaN for a document whose true class is not a column (y_i ≥ C).

    Parameters
    ----------
    log_proba : ndarray of shape (n, C)
    y_true : ndarray of shape (n,)
    """
    n, C = log_proba.shape
    step = max(1, BRIER_CELLS // max(1, C))
    sums = np.full(n, np.nan)
    for start in range(0, n, step):
        y = y_true[start : start + step]
        rows = np.flatnonzero(y < C)
        diff = np.exp(log_proba[start + rows])
        diff[np.arange(rows.size), y[rows]] -= 1.0
        sums[start + rows] = np.sum(diff**2, axis=1)
    return sums


@dataclass(frozen=True, eq=False)
class Calibration:
    """Reliability of the confidence, per equal-width bin (see the module's Notes).

    Attributes
    ----------
    edges : ndarray of shape (B + 1,)
    count : ndarray of shape (B,)
        Documents per bin.
    confidence : ndarray of shape (B,)
        Mean confidence per bin (0 for an empty bin).
    accuracy : ndarray of shape (B,)
        Share of correct predictions per bin (0 for an empty bin).
    ece : float
        Σ_b (n_b / n) |accuracy_b − confidence_b|.
    """

    edges: np.ndarray
    count: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray
    ece: float


def calibration(confidence: np.ndarray, correct: np.ndarray, bins: int = ECE_BINS) -> Calibration:
    """Bin the confidences and compare each bin's accuracy with its mean confidence.

    Parameters
    ----------
    confidence : ndarray of shape (n,)
        max_c p(c | x_i).
    correct : bool ndarray of shape (n,)
        Whether the predicted label is the true one.

    >>> cal = calibration(np.array([0.95, 0.95, 0.55, 0.1]), np.array([1, 0, 1, 0]), 10)
    >>> round(cal.ece, 12)  # (2/4)|0.5 - 0.95| + (1/4)|1 - 0.55| + (1/4)|0 - 0.1|
    0.3625
    """
    edges = np.linspace(0.0, 1.0, bins + 1)
    confidence = np.asarray(confidence, dtype=float)
    correct = np.asarray(correct, dtype=float)
    index = np.searchsorted(edges[1:-1], confidence, side="left")
    count = np.bincount(index, minlength=bins)
    confidence_sum = np.bincount(index, weights=confidence, minlength=bins)
    correct_sum = np.bincount(index, weights=correct, minlength=bins)
    mean_confidence = _divide(confidence_sum, count)
    mean_accuracy = _divide(correct_sum, count)
    n = confidence.size
    ece = float(np.sum(count * np.abs(mean_accuracy - mean_confidence)) / n) if n else 0.0
    return Calibration(edges, count, mean_confidence, mean_accuracy, ece)
