"""A multi-label model judged on documents with known label sets (``docs/multi-label.md``).

With Y (n, L) the true labels and Ŷ (n, L) the predicted ones, over the labels of the model
and of the test documents together (sorted):

- per label l: TP_l = Σ_i Y_il Ŷ_il, precision TP_l / Σ_i Ŷ_il, recall TP_l / Σ_i Y_il,
  F1_l = 2 TP_l / (Σ_i Y_il + Σ_i Ŷ_il) (0 when both sums are 0; such a label, neither in
  the documents nor predicted, is left out of the macro average);
- micro-F1 = 2 Σ TP / (Σ Y + Σ Ŷ) over every (document, label) cell;
- macro-F1 = the mean of F1_l over the labels that are in the documents or predicted;
- Hamming loss = the share of (document, label) cells predicted wrong;
- subset accuracy = the share of documents whose predicted set is exactly the true set;
- calibration per label: the expected calibration error of p_l against Y_l in 10
  equal-width probability bins (Σ_bins |bin| / n · |mean p − share of positives|); ``ece``
  is the same over every cell together. A label the model does not know has p = 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BINS = 10
#: The figures ``check`` shows for multi-label models, and those its --max-drop gates.
LABEL_SUMMARY = ("micro_f1", "macro_f1", "hamming_loss", "subset_accuracy", "ece")
LABEL_CHECKED = ("micro_f1", "macro_f1")


def expected_calibration_error(p: np.ndarray, y: np.ndarray, bins: int = BINS) -> float:
    """Σ_b (n_b / n) |mean p in b − mean y in b| over ``bins`` equal-width bins of p (n,)
    (the last bin holds p = 1).

    >>> expected_calibration_error(np.array([0.9, 0.9, 0.2, 0.2]), np.array([1, 0, 0, 0]))
    0.30000000000000004
    """
    p = np.asarray(p, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if not p.size:
        return 0.0
    at = np.minimum((p * bins).astype(np.int64), bins - 1)
    n = np.bincount(at, minlength=bins)
    gap = np.abs(np.bincount(at, p, bins) - np.bincount(at, y, bins))
    return float(gap.sum() / p.size) if n.any() else 0.0


@dataclass(frozen=True)
class LabelEvaluation:
    """The labels, truth, decisions and probabilities of a test set, and their metrics.

    Attributes
    ----------
    labels : tuple of str, length L
    sources : list of str, length n
    truth, chosen : ndarray of shape (n, L), bool
    probabilities : ndarray of shape (n, L)
    """

    labels: tuple[str, ...]
    sources: list[str]
    truth: np.ndarray
    chosen: np.ndarray
    probabilities: np.ndarray

    @property
    def n_docs(self) -> int:
        return len(self.sources)

    def summary(self) -> dict[str, float]:
        """The headline metrics, those ``check`` compares (:data:`LABEL_SUMMARY`)."""
        metrics = self.metrics()
        return {name: metrics[name] for name in LABEL_SUMMARY}

    def metrics(self) -> dict:
        """Every metric by name (the JSON of ``evaluate --format json``)."""
        Y, P = self.truth, self.chosen
        n, L = Y.shape
        tp = np.sum(Y & P, axis=0)
        true, predicted = Y.sum(axis=0), P.sum(axis=0)
        f1 = np.divide(2 * tp, true + predicted, out=np.zeros(L), where=true + predicted > 0)
        seen = (true + predicted) > 0
        per_label = {}
        for l, label in enumerate(self.labels):
            per_label[label] = {
                "precision": float(tp[l] / predicted[l]) if predicted[l] else 0.0,
                "recall": float(tp[l] / true[l]) if true[l] else 0.0,
                "f1": float(f1[l]),
                "support": int(true[l]),
                "predicted": int(predicted[l]),
                "ece": expected_calibration_error(self.probabilities[:, l], Y[:, l]),
            }
        cells = max(n * L, 1)
        TP, T, Pn = int(tp.sum()), int(true.sum()), int(predicted.sum())
        return {
            "documents": n,
            "labels": L,
            "micro_precision": TP / Pn if Pn else 0.0,
            "micro_recall": TP / T if T else 0.0,
            "micro_f1": 2 * TP / (T + Pn) if T + Pn else 0.0,
            "macro_f1": float(f1[seen].mean()) if seen.any() else 0.0,
            "hamming_loss": float(np.sum(Y != P) / cells),
            "subset_accuracy": float(np.mean(np.all(Y == P, axis=1))) if n else 0.0,
            "labels_per_document": float(T / n) if n else 0.0,
            "predicted_per_document": float(Pn / n) if n else 0.0,
            "ece": expected_calibration_error(self.probabilities, Y),
            "per_label": per_label,
        }


def evaluate_labels(
    model, documents: Sequence[tuple[str, tuple[str, ...], str]], overrides: dict | None = None,
    calibrate: bool = True, thresholds: Sequence[str] = (), top_k: int | None = None,
    allow_empty: bool = False,
) -> LabelEvaluation:  # fmt: skip
    """Score ``documents`` ``(source, labels, text)`` with the multi-label ``model`` as
    predict does (:func:`nbclass.models.multilabel.predict_documents`, the same options)
    and line up its decisions with their labels."""
    from ..models.multilabel import predict_documents

    batches = list(predict_documents(
        model, ((s, text) for s, _, text in documents), overrides, calibrate, thresholds,
        top_k, allow_empty,
    ))  # fmt: skip
    known = tuple(model.multi_label["labels"])
    labels = tuple(sorted(set(known).union(*(set(ls) for _, ls, _ in documents))))
    at = {label: l for l, label in enumerate(labels)}
    columns = [at[label] for label in known]
    n, L = len(documents), len(labels)
    truth = np.zeros((n, L), dtype=bool)
    for i, (_, names, _) in enumerate(documents):
        truth[i, [at[name] for name in names]] = True
    chosen = np.zeros((n, L), dtype=bool)
    probabilities = np.zeros((n, L))
    start = 0
    for batch in batches:
        end = start + len(batch.sources)
        chosen[start:end, columns] = batch.chosen
        probabilities[start:end, columns] = batch.probabilities
        start = end
    return LabelEvaluation(labels, [s for s, _, _ in documents], truth, chosen, probabilities)


def check_labels(
    new, baseline, documents: Sequence[tuple[str, tuple[str, ...], str]], max_drop: float,
    max_ece: float | None = None, overrides: dict | None = None, calibrate: bool = True,
):  # fmt: skip
    """Two multi-label models judged on the same ``documents`` (:func:`evaluate_labels`,
    each with its own settings, calibrations and thresholds, as predict decides): a
    :class:`nbclass.evaluation.judging.Check` gating micro- and macro-F1 by ``max_drop``
    and the new model's ECE over every (document, label) cell by ``max_ece``."""
    from ..ranges import check as check_range
    from .judging import Check

    check_range("--max-drop", max_drop)
    check_range("--max-ece", max_ece)
    return Check(
        evaluate_labels(baseline, documents, overrides, calibrate),
        evaluate_labels(new, documents, overrides, calibrate),
        max_drop, max_ece, LABEL_CHECKED,
    )  # fmt: skip


def fold_of_documents(n: int, k: int, seed: int) -> np.ndarray:
    """The fold (0..k−1) of each of ``n`` documents: a seeded shuffle dealt in turn, so
    fold sizes differ by at most one."""
    fold = np.empty(n, dtype=np.int64)
    fold[np.random.default_rng(seed).permutation(n)] = np.arange(n) % k
    return fold


def cross_validate_labels(
    documents: Sequence[tuple[str, tuple[str, ...], str]], tokenizer, vocabulary_filter,
    candidates, k: int, seed: int, scales=(1.0,),
) -> tuple[LabelEvaluation, list[dict]]:  # fmt: skip
    """K-fold cross-validation of multi-label ``documents`` ``(source, labels, text)``:
    each fold scored by a model fitted on the others exactly as ``fit --multi-label``
    fits (its own choice of ``candidates``, of each label's β among ``scales``,
    calibrations and thresholds on its own training documents). Returns every
    document's held-out evaluation together, and each fold's metrics (without
    ``per_label``).

    Raises
    ------
    UsageError
        With fewer documents than folds.
    """
    from ..errors import UsageError
    from ..models.labelsets import label_names, label_set
    from ..models.learning import count_labelled
    from ..models.model import Model, check_usable, with_sample
    from ..models.multilabel import record

    n = len(documents)
    if n < k:
        raise UsageError(f"--folds {k} needs at least {k} documents; there are {n}")
    fold = fold_of_documents(n, k, seed)
    parts, per_fold = [], []
    for f in range(k):
        train = [documents[i] for i in np.flatnonzero(fold != f).tolist()]
        test = [documents[i] for i in np.flatnonzero(fold == f).tolist()]
        counted = count_labelled(
            ((label_set(labels), text.encode("utf-8", "surrogatepass"))
             for _, labels, text in train),
            tokenizer, False, sample=True,
        )  # fmt: skip
        labels = label_names(counted.counts.classes)
        model = Model(
            counted.counts, tokenizer, vocabulary_filter, candidates[0],
            multi_label=record(labels, candidates, scales=scales),
        )  # fmt: skip
        check_usable(model)
        model = with_sample(model, counted.sample)
        evaluation = evaluate_labels(model, test)
        parts.append(evaluation)
        metrics = evaluation.metrics()
        metrics.pop("per_label")
        per_fold.append(metrics)
    labels = tuple(sorted(set().union(*(set(e.labels) for e in parts))))
    at = {label: l for l, label in enumerate(labels)}
    truth = np.zeros((n, len(labels)), dtype=bool)
    chosen = np.zeros((n, len(labels)), dtype=bool)
    probabilities = np.zeros((n, len(labels)))
    sources = [""] * n
    for f, evaluation in enumerate(parts):
        rows = np.flatnonzero(fold == f)
        columns = [at[label] for label in evaluation.labels]
        truth[np.ix_(rows, columns)] = evaluation.truth
        chosen[np.ix_(rows, columns)] = evaluation.chosen
        probabilities[np.ix_(rows, columns)] = evaluation.probabilities
        for i, source in zip(rows.tolist(), evaluation.sources):
            sources[i] = source
    return LabelEvaluation(labels, sources, truth, chosen, probabilities), per_fold
