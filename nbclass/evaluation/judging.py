"""Judging models on labelled documents: evaluate, cross-validate, check, diff.

A test corpus is laid out like a training corpus (one subfolder per class). Its classes
need not be the model's:

- a test class the model does not know is added to the labels after the model's classes;
  its documents can never be predicted right, so they count as errors in the accuracy,
  the F1 scores and the confusion matrix, but they are left out of the probabilistic
  metrics (log loss, Brier score, calibration), which need p(true class | x) and the
  model gives no probability to a class it never saw;
- a model class missing from the test corpus has support 0; it enters the macro average
  only if some document is predicted as it (scikit-learn's default label set: labels
  that are true or predicted).

Cross-validation counts each fold once; the training counts of fold k are the total
minus fold k's counts (counts are additive), which are exactly the counts a refit on the
other folds would give (the tests compare, with :meth:`Counts.equals`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from ..counting.counts import Counts, count_corpus, count_texts, merge, subtract
from ..defaults import DEFAULT_FOLDS, DEFAULT_SEED
from ..errors import NbclassError, UsageError
from ..models import metrics
from ..models.estimators import AUTO, DEFAULTS, EstimatorSettings, overridden, resolve
from ..models.learning import at_defaults, corpus_sample, counted_to_choose
from ..models.model import (
    BATCH_SIZE,
    Classifier,
    Model,
    VocabularyFilter,
    scoring_settings,
    with_sample,
)
from ..models.posterior import best_classes
from ..models.sparsity import row_sums
from ..models.tablemodel import TableClassifier, TableModel
from ..ranges import check as check_range
from ..reading.corpus import Corpus, read_text, stratified_folds
from ..reading.policy import DEFAULT_POLICY, ReadPolicy
from ..reading.table import Table
from ..text.tokenizer import TokenizerSettings


@dataclass(frozen=True, eq=False)
class DocumentScores:
    """What the metrics need of each document's log posterior (C floats), kept instead
    of it: memory in proportion to the documents, not to documents x classes.

    Attributes
    ----------
    best : ndarray of shape (n,)
        The most probable class (the first on ties, as ``predict`` labels); −1 when every
        class is impossible.
    best_log : ndarray of shape (n,)
        Its log posterior (−inf: every class impossible).
    true_log : ndarray of shape (n,)
        The log posterior of the true class; NaN for a class the model does not know.
    brier : ndarray of shape (n,)
        Σ_c (p_c − 1[true class = c])² (:func:`nbclass.models.metrics.brier_rows`); NaN
        for a class the model does not know.
    """

    best: np.ndarray
    best_log: np.ndarray
    true_log: np.ndarray
    brier: np.ndarray

    @classmethod
    def of(cls, log_proba: np.ndarray, y_true: np.ndarray) -> DocumentScores:
        """From the log posteriors, shape (n, C), of documents whose labels are ``y_true``
        (a label ≥ C is a class the model does not know)."""
        n, C = log_proba.shape
        if n == 0:
            return cls(np.zeros(0, dtype=np.int64), *(np.zeros(0) for _ in range(3)))
        best = best_classes(log_proba)
        best_log = log_proba[np.arange(n), best]  # −1: a row all −∞, its last entry too
        rows = np.flatnonzero(y_true < C)
        true_log = np.full(n, np.nan)
        true_log[rows] = log_proba[rows, y_true[rows]]
        return cls(best, best_log, true_log, metrics.brier_rows(log_proba, y_true))

    @classmethod
    def join(cls, parts: Sequence[DocumentScores]) -> DocumentScores:
        """The scores of consecutive batches of documents, in order."""
        if not parts:
            return cls.of(np.zeros((0, 0)), np.zeros(0, dtype=np.int64))
        return cls(*(np.concatenate([getattr(p, name) for p in parts])
                     for name in ("best", "best_log", "true_log", "brier")))  # fmt: skip


def score_paths(
    classifier: Classifier, paths: Sequence[str], y_true: np.ndarray,
    policy: ReadPolicy = DEFAULT_POLICY, texts: Sequence[str] | None = None,
) -> DocumentScores:  # fmt: skip
    """The :class:`DocumentScores` of the documents at ``paths``, whose labels are
    ``y_true``, scored :data:`BATCH_SIZE` at a time (only a batch's log posteriors are held).

    Every document must be readable under ``policy`` (see
    :func:`nbclass.reading.corpus.readable`): one that is not now is an error. With ``texts``
    (the documents, read already), nothing is read.
    """
    parts = []
    for start in range(0, len(paths), BATCH_SIZE):
        if texts is None:
            batch = [read_text(p, policy) for p in paths[start : start + BATCH_SIZE]]
        else:
            batch = list(texts[start : start + BATCH_SIZE])
        parts.append(scored_batch(classifier, batch, y_true, start))
    return DocumentScores.join(parts)


def scored_batch(classifier, batch: list, y_true: np.ndarray, start: int) -> DocumentScores:
    """The :class:`DocumentScores` of ``batch``, the documents from ``start`` on.

    Raises
    ------
    NbclassError
        Out of memory: it names what takes it (the batch's log posteriors, a long document)
        and the fix, where a bare ``MemoryError`` would leave the command's generic message.
    """
    try:
        log_proba = classifier.predict(batch).log_proba
        return DocumentScores.of(log_proba, y_true[start : start + len(batch)])
    except MemoryError:
        rows, C = len(batch), len(classifier.classes)
        raise NbclassError(
            f"out of memory scoring documents {start + 1:,} to {start + rows:,} against the "
            f"model's {C:,} classes: their log posteriors take {rows:,} x {C:,} x 8 bytes "
            f"({rows * C * 8 / 1e6:,.0f} MB), several times over while they are scored, and "
            "a long document's words are counted whole (up to --max-bytes): give the command "
            "more memory, or a smaller --max-bytes"
        ) from None


@dataclass(frozen=True, eq=False)
class Evaluation:
    """A model's predictions on labelled documents and every metric derived from them.

    Attributes
    ----------
    labels : list of str, length L
        The model's classes (in its order) then the test classes it does not know (sorted).
    n_model_classes : int
        C; labels ``0..C-1`` are the model's classes.
    y_true : ndarray of shape (n,)
        Index into ``labels`` of each document's class.
    scores : DocumentScores
        What the metrics need of the model's log posterior of each document.
    """

    labels: list[str]
    n_model_classes: int
    y_true: np.ndarray
    scores: DocumentScores
    bins: int = metrics.ECE_BINS

    @classmethod
    def of(cls, labels: list[str], n_model_classes: int, y_true: np.ndarray,
           log_proba: np.ndarray) -> Evaluation:  # fmt: skip
        """From the log posteriors of every document, ndarray of shape (n, C)."""
        return cls(labels, n_model_classes, y_true, DocumentScores.of(log_proba, y_true))

    @property
    def y_pred(self) -> np.ndarray:
        """Predicted label per document, shape (n,); −1 when every class is impossible.

        Ties go to the first class in the model's order, as in ``predict``.
        """
        return self.scores.best

    @property
    def n_docs(self) -> int:
        return int(self.y_true.size)

    @cached_property
    def confusions(self) -> metrics.Confusion:
        """The nonzero cells of the confusion matrix: at most one per document."""
        return metrics.confusions(self.y_true, self.y_pred, len(self.labels))

    @property
    def confusion(self) -> np.ndarray:
        """M[t, p], ndarray of shape (L, L): L² cells, so only for few labels; every
        metric is counted without it."""
        return self.confusions.dense()

    @cached_property
    def per_class(self) -> metrics.ClassMetrics:
        return metrics.class_metrics_of(self.y_true, self.y_pred, len(self.labels))

    @property
    def accuracy(self) -> float:
        return metrics.accuracy_of(self.per_class, self.n_docs)

    @property
    def macro_f1(self) -> float:
        return metrics.macro_f1(self.per_class)

    @property
    def micro_f1(self) -> float:
        return metrics.micro_f1(self.per_class)

    @cached_property
    def known(self) -> np.ndarray:
        """Documents whose class the model knows, bool of shape (n,)."""
        return self.y_true < self.n_model_classes

    @property
    def unknown_classes(self) -> list[str]:
        return self.labels[self.n_model_classes :]

    @property
    def missing_classes(self) -> list[str]:
        """Model classes with no document in the test corpus."""
        support = self.per_class.support
        return [self.labels[c] for c in range(self.n_model_classes) if support[c] == 0]

    @property
    def log_loss(self) -> float:
        return metrics.log_loss(self.scores.true_log[self.known])

    @property
    def brier_score(self) -> float:
        terms = self.scores.brier[self.known]
        return float(np.mean(terms)) if terms.size else float("nan")

    @cached_property
    def calibration(self) -> metrics.Calibration:
        known = self.known
        confidence = np.exp(self.scores.best_log[known]) if known.any() else np.zeros(0)
        correct = self.y_pred[known] == self.y_true[known]
        return metrics.calibration(confidence, correct, self.bins)

    @property
    def ece(self) -> float:
        return self.calibration.ece

    def summary(self) -> dict[str, float]:
        """The headline metrics."""
        return {
            "accuracy": self.accuracy,
            "macro_f1": self.macro_f1,
            "micro_f1": self.micro_f1,
            "log_loss": self.log_loss,
            "brier_score": self.brier_score,
            "ece": self.ece,
        }

    @property
    def whole_matrix(self) -> bool:
        """Whether :meth:`to_dict` holds the whole confusion matrix (few labels)."""
        return len(self.labels) <= metrics.MATRIX_LABELS

    def _confusion_dict(self) -> dict:
        """``confusion_matrix``, the whole (L, L) matrix up to ``metrics.MATRIX_LABELS``
        labels; past them it is None and ``confusions`` lists the nonzero cells as
        ``[true, predicted, documents]`` (indices into ``labels``), in that order."""
        if self.whole_matrix:
            return {"confusion_matrix": self.confusion.tolist()}
        cells = self.confusions
        return {
            "confusion_matrix": None,
            "confusions": np.stack([cells.true, cells.predicted, cells.count], axis=1).tolist(),
        }

    def to_dict(self) -> dict:
        """Everything, as plain data (``nbclass evaluate --format json``)."""
        pc = self.per_class
        cal = self.calibration
        return {
            "documents": self.n_docs,
            "labels": list(self.labels),
            "unknown_classes": self.unknown_classes,
            "missing_classes": self.missing_classes,
            "no_label": int(np.sum(self.y_pred < 0)),
            **self.summary(),
            "probabilistic_documents": int(self.known.sum()),
            "per_class": {
                label: {
                    "precision": float(pc.precision[i]),
                    "recall": float(pc.recall[i]),
                    "f1": float(pc.f1[i]),
                    "support": int(pc.support[i]),
                    "predicted": int(pc.predicted[i]),
                }
                for i, label in enumerate(self.labels)
            },
            **self._confusion_dict(),
            "calibration": [
                {
                    "low": float(cal.edges[b]),
                    "high": float(cal.edges[b + 1]),
                    "count": int(cal.count[b]),
                    "confidence": float(cal.confidence[b]),
                    "accuracy": float(cal.accuracy[b]),
                }
                for b in range(len(cal.count))
            ],
        }


def misclassified(evaluation: Evaluation, sources: Sequence[str]) -> list[dict]:
    """The documents ``evaluation`` got wrong, in its order: their ``source`` (from
    ``sources``, one per document), ``true`` and ``predicted`` class (None: no label), and
    the ``probability`` the model gave each (None for a class the model does not know,
    or no label)."""
    ev = evaluation
    if len(sources) != ev.n_docs:  # pragma: no cover - the callers pass the corpus's own
        raise ValueError("one source per evaluated document")
    C = ev.n_model_classes
    out = []
    for i in np.flatnonzero(ev.y_pred != ev.y_true).tolist():
        t, p = int(ev.y_true[i]), int(ev.y_pred[i])
        out.append({
            "source": sources[i],
            "true": ev.labels[t],
            "predicted": None if p < 0 else ev.labels[p],
            "true_probability": float(np.exp(ev.scores.true_log[i])) if t < C else None,
            "probability": None if p < 0 else float(np.exp(ev.scores.best_log[i])),
        })  # fmt: skip
    return out


def evaluation_of(
    classifier: Classifier, paths: Sequence[str], class_names: Sequence[str],
    policy: ReadPolicy = DEFAULT_POLICY, texts: Sequence[str] | None = None,
) -> Evaluation:  # fmt: skip
    """Score the documents at ``paths`` (or ``texts``, when given), whose true classes are
    ``class_names``."""
    classes = list(classifier.classes)
    unknown = sorted(set(class_names) - set(classes))
    labels = classes + unknown
    at = {label: i for i, label in enumerate(labels)}
    y_true = np.array([at[name] for name in class_names], dtype=np.int64)
    scores = score_paths(classifier, paths, y_true, policy, texts)
    return Evaluation(labels, len(classes), y_true, scores)


def evaluate(
    model: Model, settings: EstimatorSettings | None, corpus: Corpus,
    policy: ReadPolicy = DEFAULT_POLICY, calibrate: bool = True,
) -> Evaluation:  # fmt: skip
    """Evaluate ``model`` on a labelled test corpus, read under ``policy`` (files) or held
    in memory (``corpus.texts``), scored as predict scores it: ``settings`` (None: the
    model's defaults) and ``calibrate`` as :class:`nbclass.models.model.Classifier` takes
    them (:func:`nbclass.models.model.scoring_settings` gives both from a command's
    options)."""
    names = [corpus.classes[i] for i in corpus.labels]
    classifier = Classifier(model, settings, calibrate=calibrate)
    return evaluation_of(classifier, corpus.paths, names, policy, corpus.texts)


# --- cross-validation -----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CrossValidation:
    """The evaluations of every fold, and the learning curve if asked for.

    Attributes
    ----------
    folds : list of ndarray
        Indices of the test documents of each fold.
    evaluations : list of Evaluation
        Fold k's model (trained on the other folds) on fold k.
    curve : list of (list of int, list of float)
        For m = 1 .. k−1 training folds: per test fold, the training documents and the
        accuracy (empty unless asked for).
    """

    folds: list[np.ndarray]
    evaluations: list[Evaluation]
    curve: list[tuple[list[int], list[float]]]

    def metric(self, name: str) -> np.ndarray:
        """One metric per fold, shape (k,)."""
        return np.array([ev.summary()[name] for ev in self.evaluations])

    def summary(self) -> dict[str, dict]:
        """Per metric: mean, standard deviation (n − 1 denominator), min, max, per fold."""
        out = {}
        for name in self.evaluations[0].summary():
            values = self.metric(name)
            out[name] = {
                "mean": float(values.mean()),
                "std": float(values.std(ddof=1)),
                "min": float(values.min()),
                "max": float(values.max()),
                "folds": values.tolist(),
            }
        return out

    def to_dict(self) -> dict:
        return {
            "folds": len(self.folds),
            "fold_documents": [int(f.size) for f in self.folds],
            "metrics": self.summary(),
            "learning_curve": [
                {
                    "training_folds": m + 1,
                    "training_documents": sizes,
                    "accuracy": accuracies,
                    "accuracy_mean": float(np.mean(accuracies)),
                    "accuracy_std": float(np.std(accuracies, ddof=1)),
                }
                for m, (sizes, accuracies) in enumerate(self.curve)
            ],
        }


def cv_settings(
    like: Model | None, overrides: dict, multi_label: bool = False
) -> tuple[TokenizerSettings, VocabularyFilter, EstimatorSettings | None]:
    """``(tokenizer, vocabulary_filter, settings)`` of a cross-validation: as the model
    ``like`` fits (its tokenizer, filter and defaults), or as a fit with no options does
    (``multi_label``: a fit of multi-label documents, which counts no symbols by default).

    ``overrides`` are the estimator options given (``None``: not given), as
    :func:`nbclass.models.estimators.resolve` takes them. ``settings`` is ``None`` when
    each fold's training documents are to choose them, as fit does: for ``--model auto``,
    and when no option is given and ``like`` (if any) had its settings chosen.

    Raises
    ------
    UsageError
        For ``--model auto`` with other estimator options.
    """
    if like is not None:
        tokenizer, vocabulary_filter, defaults = (
            like.tokenizer, like.vocabulary_filter, like.defaults,
        )  # fmt: skip
        auto = like.choice is not None  # chosen by fit: choose the same way in every fold
    else:  # the formula of the options given, if any; else fit's default, --model auto
        tokenizer, vocabulary_filter, defaults = (
            TokenizerSettings(), VocabularyFilter(), EstimatorSettings(),
        )  # fmt: skip
        auto = True
    if overrides.get("model") == AUTO and overridden(**dict(overrides, model=None)):
        raise UsageError(
            "--model auto chooses the estimator, priors and transforms itself: give "
            "--model NAME to set them"
        )
    auto = overrides.get("model") == AUTO or (auto and not overridden(**overrides))
    if auto and like is None:  # each fold counts as fit does at its defaults
        tokenizer = counted_to_choose(tokenizer, False, multi_label)
    elif auto and like.choice is not None and at_defaults(tokenizer):
        # A chosen model keeps its own symbols; its folds count the scripts written
        # without spaces every way, to choose, unless its words already hold them.
        from ..text.families import holds_unspaced

        if not holds_unspaced(like.counts.vocabulary):
            tokenizer = replace(tokenizer, unspaced="all")
    return tokenizer, vocabulary_filter, None if auto else resolve(defaults, **overrides)


def cross_validate(
    corpus: Corpus,
    tokenizer: TokenizerSettings,
    vocabulary_filter: VocabularyFilter,
    settings: EstimatorSettings | None,
    k: int = DEFAULT_FOLDS,
    seed: int = DEFAULT_SEED,
    learning_curve: bool = False,
    jobs: int = 1,
    policy: ReadPolicy = DEFAULT_POLICY,
    calibrate: bool = True,
) -> CrossValidation:
    """Stratified k-fold cross-validation, counting each document once.

    Fold k's counts C_k are taken once; the training counts of fold k are
    ``subtract(merge(C_1..C_k), C_k)``, exactly the counts of a refit on the other folds
    (counts are additive). The learning curve trains fold k's models on the m folds that
    follow it (k+1, …, k+m, cyclically) for m = 1 … k−1: training sets of about
    m/k of the corpus, each a sum of fold counts, nothing re-read. A corpus held in memory
    (``corpus.texts``, from labelled lines) is counted from its texts.

    ``settings`` None evaluates what ``fit --model auto`` does: each training set chooses
    its own settings and calibration (:func:`nbclass.models.model.with_sample`) from a sample of
    its own documents, read again for that; the test fold is never among them. Each fold
    is scored as predict would score its model (:class:`nbclass.models.model.Classifier`),
    without the calibration unless ``calibrate``.
    """
    folds = stratified_folds(corpus, k, seed)
    paths, labels, texts = corpus.paths, corpus.labels, corpus.texts
    parts = []
    for f in folds:
        fold_labels = [labels[i] for i in f]
        if texts is None:
            fold_paths = [paths[i] for i in f]
            parts.append(
                count_corpus(
                    fold_paths, fold_labels, corpus.classes, tokenizer, jobs, policy=policy
                )
            )
        else:
            fold_texts = [texts[i] for i in f]
            parts.append(count_texts(fold_texts, fold_labels, corpus.classes, tokenizer))
    total = merge(*parts)
    evaluations, per_fold_curve = [], []

    def judge(counts: Counts, training: list[int], test: np.ndarray) -> Evaluation:
        model = Model(counts, tokenizer, vocabulary_filter, settings or DEFAULTS)
        if settings is None:
            sample = corpus_sample(corpus.subset(training), counts, tokenizer, policy)
            model = with_sample(model, sample)
        classifier = Classifier(model, calibrate=calibrate)  # as predict scores the model
        names = [corpus.classes[labels[j]] for j in test]
        test_texts = None if texts is None else [texts[j] for j in test]
        return evaluation_of(classifier, [paths[j] for j in test], names, policy, test_texts)

    for i, f in enumerate(folds):
        others = [j for step in range(1, k) for j in folds[(i + step) % k].tolist()]
        evaluations.append(judge(subtract(total, parts[i]), others, f))
        if learning_curve:
            points = []
            for m in range(1, k - 1):
                counts = merge(*(parts[(i + 1 + step) % k] for step in range(m)))
                training = [j for step in range(m) for j in folds[(i + 1 + step) % k].tolist()]
                points.append((counts.n_docs, judge(counts, training, f).accuracy))
            points.append((total.n_docs - int(f.size), evaluations[-1].accuracy))
            per_fold_curve.append(points)
    curve = [
        ([per_fold_curve[i][m][0] for i in range(k)], [per_fold_curve[i][m][1] for i in range(k)])
        for m in range(k - 1 if learning_curve else 0)
    ]
    return CrossValidation(folds, evaluations, curve)


# --- check: the gate before a new model replaces the old one ----------------------------------

CHECKED = ("accuracy", "macro_f1")
ROUNDING = 1e-12  # differences of metrics computed in floating point


@dataclass(frozen=True, eq=False)
class Check:
    """A new model against a baseline on the same test corpus.

    Attributes
    ----------
    baseline, new : Evaluation
        Or :class:`nbclass.evaluation.labels.LabelEvaluation`, for multi-label models:
        anything with ``summary()`` (metric name -> value, ``ece`` among them) and
        ``n_docs``.
    max_drop : float
        Largest allowed fall of each metric of ``checked`` (baseline − new).
    max_ece : float or None
        Largest allowed expected calibration error of the new model.
    checked : tuple of str
        The metrics gated by ``max_drop``: accuracy and macro-F1 (:data:`CHECKED`), or
        micro- and macro-F1 for multi-label models.
    """

    baseline: Evaluation
    new: Evaluation
    max_drop: float
    max_ece: float | None = None
    checked: tuple[str, ...] = CHECKED

    @property
    def failures(self) -> list[str]:
        """What fails, in words; empty when the new model passes."""
        out = []
        old, new = self.baseline.summary(), self.new.summary()
        for name in self.checked:
            drop = old[name] - new[name]
            if drop > self.max_drop + ROUNDING:
                out.append(
                    f"{name} fell by {drop:.4f} ({old[name]:.4f} -> {new[name]:.4f}), "
                    f"more than --max-drop {self.max_drop}"
                )
        if self.max_ece is not None and new["ece"] > self.max_ece + ROUNDING:
            out.append(f"ece {new['ece']:.4f} is above --max-ece {self.max_ece}")
        return out

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict:
        old, new = self.baseline.summary(), self.new.summary()
        return {
            "passed": self.passed,
            "failures": self.failures,
            "max_drop": self.max_drop,
            "max_ece": self.max_ece,
            "checked": list(self.checked),
            "documents": self.new.n_docs,
            "metrics": {
                name: {"baseline": old[name], "new": new[name], "change": new[name] - old[name]}
                for name in old
            },
        }


def check(
    new: Model,
    baseline: Model,
    corpus: Corpus,
    max_drop: float,
    max_ece: float | None = None,
    overrides: dict | None = None,
    policy: ReadPolicy = DEFAULT_POLICY,
    use_calibration: bool = True,
) -> Check:
    """Evaluate both models on ``corpus``, each as predict scores it with the estimator
    ``overrides`` and ``use_calibration`` (:func:`nbclass.models.model.scoring_settings`):
    by default its own settings and calibration."""
    check_range("--max-drop", max_drop)
    check_range("--max-ece", max_ece)
    overrides = overrides or {}

    def judge(model: Model) -> Evaluation:
        settings, calibrate = scoring_settings(model, overrides, use_calibration)
        return evaluate(model, settings, corpus, policy, calibrate)

    return Check(judge(baseline), judge(new), max_drop, max_ece)


# --- diff: what changed between two models ------------------------------------------------------

DIFF_CELLS = 1 << 21  # word × class cells diff holds at a time (a block of classes)


class _ClassColumns:
    """One model's token counts T_jc read a block of classes at a time, and the sums every
    class's log-odds need: memory in proportion to the pairs and to V + C, and (V, B)
    floats for a block of B classes, never a (V, C) table."""

    def __init__(self, counts: Counts):
        from ..models.sparsity import column_sums, csr_table

        table = csr_table(counts.token_count)
        self.columns = table.tocsc()  # a class's column is one slice
        self.V = table.shape[0]
        # The counts' integer sums, exact as floats (as the sums of a float table are)
        self.T_c = column_sums(table).astype(np.float64)
        self.T_j = row_sums(table).astype(np.float64)
        self.T_rest = self.T_c.sum() - self.T_c

    def tokens(self, classes: np.ndarray) -> np.ndarray:
        """T_jc of ``classes`` (B,) as floats, shape (V, B)."""
        return self.columns[:, classes].toarray().astype(np.float64)

    def log_odds(self, classes: np.ndarray, T: np.ndarray | None = None) -> np.ndarray:
        """:func:`class_log_odds` of ``classes`` (B,) only, shape (V, B), the same floats
        (``T``: their :meth:`tokens`, if already made)."""
        T = self.tokens(classes) if T is None else T
        V, T_c, T_rest = self.V, self.T_c[classes], self.T_rest[classes]
        rest = self.T_j[:, None] - T
        return (np.log(T + 1) - np.log(T_c + V)) - (np.log(rest + 1) - np.log(T_rest + V))


def class_log_odds(counts: Counts) -> np.ndarray:
    """log θ_jc − log θ_j,rest per word and class, ndarray of shape (V, C).

    θ is the multinomial posterior mean with β = 1 over the counts' V words; "rest" pools
    the tokens of every other class. A positive value means word j is more frequent in
    class c than in the others: the weight it adds to c against the rest. (:func:`diff`
    makes it a block of classes at a time.)
    """
    return _ClassColumns(counts).log_odds(np.arange(len(counts.classes)))


def kl_divergence(T_new: np.ndarray, T_old: np.ndarray):
    """KL(θ_new ‖ θ_old) in nats, θ = (T_j + 1) / (Σ T + U) over the same U words.

    Smoothing with β = 1 gives every word a probability in both, so the divergence is
    finite; it is 0 when the two classes have the same word counts. A float for two
    vectors (U,); for two tables (B, U), each row's divergence, ndarray (B,), the floats
    of its row alone (numpy sums a contiguous row as it sums a vector).
    """
    U = T_new.shape[-1]
    log_new = np.log(T_new + 1) - np.log(T_new.sum(axis=-1, keepdims=True) + U)
    log_old = np.log(T_old + 1) - np.log(T_old.sum(axis=-1, keepdims=True) + U)
    out = np.sum(np.exp(log_new) * (log_new - log_old), axis=-1)
    return float(out) if T_new.ndim == 1 else out


def _largest(values: np.ndarray, k: int) -> np.ndarray:
    """The places of the ``k`` largest ``values`` (1-D), largest first, ties in place
    order: ``np.argsort(-values, kind="stable")[:k]`` without sorting them all."""
    if values.size <= k:
        return np.argsort(-values, kind="stable")
    if k <= 32:  # the k-th largest by descending the distinct values: numpy's partition
        kth = values.max()  # takes 35 times longer on a row of mostly equal values
        while np.count_nonzero(values >= kth) < k:
            kth = values[values < kth].max()
    else:
        kth = np.partition(values, values.size - k)[values.size - k]
    candidates = np.flatnonzero(values >= kth)  # every tie of the k-th, in place order
    return candidates[np.argsort(-values[candidates], kind="stable")[:k]]


@dataclass(frozen=True, eq=False)
class ModelDiff:
    """What changed from model A (old) to model B (new), over the words each uses.

    The classes both models have are compared a block at a time (:data:`DIFF_CELLS`
    words × classes): memory in proportion to the pairs and to words + classes, never
    to words × classes.

    Attributes
    ----------
    old, new : Counts
        The models' active counts.
    k : int
        Words listed per class and new words listed.
    """

    old: Counts
    new: Counts
    k: int = 5

    def to_dict(self) -> dict:
        a, b, k = self.old, self.new, self.k
        classes_a, classes_b = set(a.classes), set(b.classes)
        words_a, words_b = set(a.vocabulary), set(b.vocabulary)
        added = sorted(words_b - words_a)
        union = sorted(words_a | words_b)
        shared = sorted(words_a & words_b)
        tokens_b = dict(zip(b.vocabulary, row_sums(b.token_count).tolist()))
        frequent_new = sorted(added, key=lambda w: (-tokens_b[w], w))[:k]
        compared = self._compared(union, shared)
        docs_a = dict(zip(a.classes, a.class_count.tolist()))
        docs_b = dict(zip(b.classes, b.class_count.tolist()))
        per_class = {}
        for name in sorted(classes_a | classes_b):
            entry = {"documents_old": docs_a.get(name, 0), "documents_new": docs_b.get(name, 0)}
            entry.update(compared.get(name, {}))
            per_class[name] = entry
        return {
            "documents": {"old": a.n_docs, "new": b.n_docs},
            "classes_added": sorted(classes_b - classes_a),
            "classes_removed": sorted(classes_a - classes_b),
            "vocabulary": {
                "old": len(a.vocabulary),
                "new": len(b.vocabulary),
                "added": len(added),
                "removed": len(words_a - words_b),
                "frequent_new_words": frequent_new,
            },
            "classes": per_class,
        }

    def _compared(self, union: list[str], shared: list[str]) -> dict[str, dict]:
        """``{"kl", "moved"}`` of each class both models have: KL(θ_B ‖ θ_A) over the
        ``union`` of the vocabularies, and the k ``shared`` words whose log-odds moved
        most (ties: alphabetical)."""
        a, b, k = self.old, self.new, self.k
        place_a = {name: c for c, name in enumerate(a.classes)}
        common = [(name, place_a[name], cb) for cb, name in enumerate(b.classes)
                  if name in place_a]  # fmt: skip
        at = {w: u for u, w in enumerate(union)}
        union_a = np.array([at[w] for w in a.vocabulary], dtype=np.int64)
        union_b = np.array([at[w] for w in b.vocabulary], dtype=np.int64)
        row_a = {w: j for j, w in enumerate(a.vocabulary)}
        row_b = {w: j for j, w in enumerate(b.vocabulary)}
        ia = np.array([row_a[w] for w in shared], dtype=np.int64)
        ib = np.array([row_b[w] for w in shared], dtype=np.int64)
        old, new = _ClassColumns(a), _ClassColumns(b)
        step = max(1, DIFF_CELLS // max(len(union), 1))
        out = {}
        for start in range(0, len(common), step):
            block = common[start : start + step]
            ca = np.array([c for _, c, _ in block], dtype=np.int64)
            cb = np.array([c for _, _, c in block], dtype=np.int64)
            T_a, T_b = old.tokens(ca), new.tokens(cb)
            on_union_a = np.zeros((len(block), len(union)))
            on_union_a[:, union_a] = T_a.T
            on_union_b = np.zeros((len(block), len(union)))
            on_union_b[:, union_b] = T_b.T
            kl = kl_divergence(on_union_b, on_union_a).tolist()
            del on_union_a, on_union_b
            old_lo = old.log_odds(ca, T_a)[ia].T.copy()  # (B, shared), a row per class
            new_lo = new.log_odds(cb, T_b)[ib].T.copy()
            change = new_lo - old_lo
            for i, (name, _, _) in enumerate(block):
                order = _largest(np.abs(change[i]), k)
                out[name] = {
                    "kl": kl[i],
                    "moved": [
                        {
                            "word": shared[j],
                            "old": float(old_lo[i, j]),
                            "new": float(new_lo[i, j]),
                            "change": float(change[i, j]),
                        }
                        for j in order.tolist()
                    ],
                }
        return out


def diff_notes(old: Model, new: Model) -> list[str]:
    """What a reader of :func:`diff` should know: the models tokenize differently, or use
    different vocabulary filters or selections (words may then differ for that reason), or
    score differently at their defaults (:func:`scoring_diff`)."""
    notes = []
    if old.tokenizer.to_dict() != new.tokenizer.to_dict():
        notes.append("the models tokenize differently: words may differ for that reason")
    if old.vocabulary_filter != new.vocabulary_filter or old.selection != new.selection:
        notes.append("the models use different vocabulary filters or selections")
    changed = scoring_diff(old, new)["changed"]
    moved = exit_code_changes(old, new)
    if moved:
        notes.append(
            "a class has another exit code in the new model (predict --exit-code): "
            + ", ".join(moved)
        )
    if changed:
        names = {"defaults": "default settings", "chosen": "who chose them",
                 "fitted_beta": "fitted β"}  # fmt: skip
        notes.append(
            "the models score differently at their defaults ("
            + ", ".join(names.get(name, name) for name in changed) + ")"
        )
    return notes


def scoring_diff(old: Model, new: Model) -> dict:
    """How two models score at their defaults, side by side.

    Two models of the same counts score differently when fit chose or calibrated them on
    other documents, so the counts alone cannot say whether a model changed. Each side
    holds ``defaults`` (the short name of the default settings,
    :func:`nbclass.models.choosing.describe`), ``chosen`` (whether fit chose them),
    ``fitted_beta`` (the fitted β, or None), ``calibration`` (its record: t0, t1, t2 and
    any class offsets, or None) and
    ``typicality`` (the stored record's documents and median per-token evidence, or
    None); ``changed`` lists the fields that differ (the typicality by its whole record).
    """
    from ..models.choosing import describe

    def side(model: Model) -> dict:
        record = model.typicality
        return {
            "defaults": describe(model.defaults),
            "chosen": model.choice is not None,
            "fitted_beta": None if model.prepared is None else model.prepared.beta,
            "calibration": None if model.calibration is None else model.calibration.to_dict(),
            "typicality": None if record is None else {
                "documents": record["documents"], "median": record["percentiles"][50],
            },
        }  # fmt: skip

    a, b = side(old), side(new)
    changed = [name for name in a if name != "typicality" and a[name] != b[name]]
    if old.typicality != new.typicality:
        changed.append("typicality")
    return {"old": a, "new": b, "changed": changed}


def exit_code_changes(old: Model, new: Model) -> list[str]:
    """``class old -> new`` for each class both models give an exit code and the codes
    differ (:mod:`nbclass.models.exitcodes`): what a routing script would get wrong."""
    a, b = old.codes, new.codes
    both = [name for name in sorted(a) if name in b and a[name] != b[name]]
    return [f"{name} {a[name]} -> {b[name]}" for name in both]


def diff(old: Model, new: Model, k: int = 5) -> ModelDiff:
    """Compare two models' counts over the words each one uses."""
    check_range("-k", k)
    return ModelDiff(old.active_counts, new.active_counts, k)


# --- tables ---------------------------------------------------------------------------------


def evaluate_table(model: TableModel, settings: EstimatorSettings, table: Table) -> Evaluation:
    """Evaluate a table model (:mod:`nbclass.models.tablemodel`) on a labelled table.

    The true class of each row is in the model's label column; a row without one is an
    :class:`NbclassError` naming it. Rows are scored in batches, exactly as ``predict
    --table`` scores them.
    """
    if model.label not in table.columns:
        raise NbclassError(
            f"{table.path!r} has no column {model.label!r}, the model's label: evaluation "
            "needs the true class of every row"
        )
    k = table.columns.index(model.label)
    names = []
    for number, row in enumerate(table.rows, start=1):
        if row[k] is None:
            raise NbclassError(
                f"{table.path!r} row {number} has no label in column {model.label!r}: fill it "
                "in or remove the row"
            )
        names.append(str(row[k]))
    classifier = TableClassifier(model, settings)
    classes = list(classifier.classes)
    labels = classes + sorted(set(names) - set(classes))
    at = {label: i for i, label in enumerate(labels)}
    y_true = np.array([at[name] for name in names], dtype=np.int64)
    records = [dict(zip(table.columns, row)) for row in table.rows]
    parts = []
    for start in range(0, len(records), BATCH_SIZE):
        parts.append(scored_batch(classifier, records[start : start + BATCH_SIZE], y_true, start))
    return Evaluation(labels, len(classes), y_true, DocumentScores.join(parts))
