"""nbclass from Python: fit, load, save, predict, explain, update and merge models.

The functions and the :class:`Model` here are what ``import nbclass`` offers
(``docs/python.md``); each does what the command of the same purpose does, by the same
library calls, so the numbers are the command's:

- :func:`fit` learns from texts and labels as ``nbclass fit --lines`` learns from
  ``LABEL<TAB>TEXT`` lines, and :func:`fit_corpus` from a folder as ``nbclass fit``: the
  model, saved, is the same file byte for byte (the choice of ``--model auto`` and its
  calibration included);
- :meth:`Model.predict_proba` gives the probabilities ``nbclass predict`` prints (the
  stored defaults and their calibration, or the estimator options of :meth:`Model.using`
  without it), and :meth:`Model.classify` its JSONL records;
- every error a user can cause is an :class:`nbclass.errors.NbclassError` whose message is
  the command's ``Error:`` line.

A :class:`Model` is a value: :meth:`Model.update`, :meth:`Model.merge` and
:meth:`Model.using` return a new model and leave the one they were called on as it was.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Iterator
from functools import cached_property

import numpy as np

from . import defaults as _defaults
from .errors import InputError, NbclassError, NbclassWarning
from .modelfile import textfile
from .models import learning
from .models.abstain import Abstention
from .models.explain import ScoredBatch, explanations, extras, texts_scored
from .models.model import Classifier, scoring_settings
from .models.model import Model as _Model
from .output.render import model_info, prediction_labels, prediction_views
from .ranges import check as check_range
from .reading.policy import DEFAULT_MAX_BYTES, ReadLog, ReadPolicy, Skip
from .version import __version__

# The estimator options, by their keyword here and in the library's overrides
# (:func:`nbclass.models.estimators.resolve`): the command's --model ... --class-prior.
ESTIMATOR_OPTIONS = (
    "model", "estimator", "alpha", "beta", "tf", "idf", "norm", "prior_fit", "class_prior",
)  # fmt: skip
TEXT_OPTIONS = ("tf", "idf", "norm", "prior_fit", "class_prior")
# The tokenizer and vocabulary options of fit, with their defaults (the command's).
TOKENIZER_OPTIONS = {
    "lowercase": True,
    "token_pattern": None,
    "unspaced": None,
    "symbols": None,  # on for model="auto" (as fit chooses), else off
    "ngram_range": None,
    "ngram_doc_limit": None,
    "stop_words": "none",
    "hash_features": None,
    "min_df": 1,
    "max_features": None,
}


# --- checking what a caller gives -----------------------------------------------------------


def _texts(texts, what: str = "texts") -> list[str]:
    """``texts`` as a list of str, refusing one string (whose characters would be the
    documents) and anything that is not a string."""
    if isinstance(texts, (str, bytes)):
        raise InputError(
            f"{what} must be a list of strings, not one string: give [text] for one document"
        )
    try:
        texts = list(texts)
    except TypeError:
        raise InputError(
            f"{what} must be a list of strings, not {type(texts).__name__}"
        ) from None
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise InputError(
                f"{what}[{i}] is {type(text).__name__}, not a string: give the documents' text"
            )
    return texts


def _labels(labels, n: int) -> list[str]:
    """``labels`` as n class names: strings, non-empty, without surrounding spaces, tabs
    or line breaks (what a class of ``fit --lines`` can be)."""
    labels = _texts(labels, "labels")
    if len(labels) != n:
        raise InputError(f"{n} texts but {len(labels)} labels: give one label per text")
    for i, label in enumerate(labels):
        if not label or label != label.strip() or any(c in label for c in "\t\n\r"):
            raise InputError(
                f"labels[{i}] {label!r} is not a class name: give a non-empty name without "
                "surrounding spaces, tabs or line breaks"
            )
        if label.startswith("__label__"):
            raise InputError(
                f"labels[{i}] {label!r} starts with __label__: give the class name alone"
            )
    return labels


def _encoded(texts: list[str]) -> list[bytes]:
    """The UTF-8 bytes of each text: a document is its bytes, as a file's content is."""
    out = []
    for i, text in enumerate(texts):
        try:
            out.append(text.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise InputError(
                f"texts[{i}] is not valid Unicode ({exc.reason} at position {exc.start}): "
                "give text that UTF-8 can encode"
            ) from None
    return out


def _beta(beta) -> tuple[float, float] | None:
    """``beta``: B, (B1, B0) or the command's text ``"B"`` / ``"B1,B0"``."""
    if beta is None:
        return None
    from .models.estimators import parse_beta

    if isinstance(beta, str):
        return parse_beta(beta)
    if isinstance(beta, (int, float)) and not isinstance(beta, bool):
        return float(beta), float(beta)
    if isinstance(beta, (tuple, list)) and len(beta) == 2:
        return parse_beta(f"{beta[0]},{beta[1]}")
    raise InputError(f"beta {beta!r} is not B or (B1, B0) (for example 1 or (1, 1))")


def _number(name: str, value, kind: type, at_least=None):
    """An option's value checked for its type (``bool`` is no number here)."""
    if value is None:
        return None
    ok = (int,) if kind is int else (int, float)
    if isinstance(value, bool) or not isinstance(value, (*ok, np.integer, np.floating)):
        raise InputError(f"{name} {value!r} must be a number")
    value = kind(value)
    if kind is float and not math.isfinite(value):
        raise InputError(f"{name} {value!r} must be a finite number")
    if at_least is not None and value < at_least:
        raise InputError(f"{name} {value!r} must be at least {at_least}")
    return value


def _overrides(options: dict) -> dict:
    """The estimator options given, as :func:`nbclass.models.estimators.resolve` takes them
    (``None``: not given)."""
    unknown = set(options) - set(ESTIMATOR_OPTIONS)
    if unknown:
        raise InputError(
            f"unknown option {sorted(unknown)[0]!r}: the estimator options are "
            f"{', '.join(ESTIMATOR_OPTIONS)}"
        )
    out = {name: options.get(name) for name in ESTIMATOR_OPTIONS}
    out["alpha"] = _number("alpha", out["alpha"], float)
    out["beta"] = _beta(out["beta"])
    return out


def _fit_settings(options: dict):
    """``(tokenizer, vocabulary filter, defaults, auto)`` of fit's keyword options, as
    ``nbclass fit`` makes them (:func:`nbclass.models.learning.fit_settings`)."""
    unknown = set(options) - set(TOKENIZER_OPTIONS) - set(ESTIMATOR_OPTIONS)
    if unknown:
        raise InputError(
            f"unknown option {sorted(unknown)[0]!r}: fit takes "
            f"{', '.join([*TOKENIZER_OPTIONS, *ESTIMATOR_OPTIONS])}"
        )
    values = {**TOKENIZER_OPTIONS, **{k: v for k, v in options.items() if k in TOKENIZER_OPTIONS}}
    if not isinstance(values["lowercase"], bool):
        raise InputError(f"lowercase {values['lowercase']!r} must be True or False")
    if values["symbols"] is not None and not isinstance(values["symbols"], bool):
        raise InputError(f"symbols {values['symbols']!r} must be True, False or None")
    if values["ngram_range"] is not None:
        pair = values["ngram_range"]
        if isinstance(pair, str):
            pair = pair.split(",")
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise InputError(f"ngram_range {values['ngram_range']!r} must be (MIN, MAX)")
        low, high = (_number("ngram_range", int(v) if isinstance(v, str) else v, int, 1)
                     for v in pair)  # fmt: skip
        if low > high:
            raise InputError(f"ngram_range ({low}, {high}): MIN must not exceed MAX")
        values["ngram_range"] = (low, high)
    values["ngram_doc_limit"] = _number("ngram_doc_limit", values["ngram_doc_limit"], int, 1)
    if values["hash_features"] is not None:
        from .text.hashing import parse_hash_features

        try:
            values["hash_features"] = parse_hash_features(str(values["hash_features"]))
        except ValueError as exc:
            raise InputError(f"hash_features: {exc}") from None
    if values["unspaced"] is not None:
        from .text.tokenizer import UNSPACED_MODES

        if values["unspaced"] not in UNSPACED_MODES:
            raise InputError(
                f"unspaced {values['unspaced']!r} must be one of {', '.join(UNSPACED_MODES)}"
            )
    if values["stop_words"] is None:
        values["stop_words"] = "none"
    values["min_df"] = _number("min_df", values["min_df"], int)
    values["max_features"] = _number("max_features", values["max_features"], int)
    overrides = _overrides({k: v for k, v in options.items() if k in ESTIMATOR_OPTIONS})
    values["event_model"] = overrides.pop("model")
    values.update(
        estimator=overrides.pop("estimator"), alpha=overrides.pop("alpha"),
        beta=overrides.pop("beta"), text_options=overrides,
    )  # fmt: skip
    return learning.fit_settings(values)


def _jobs(jobs) -> int:
    from .counting.counts import default_jobs

    if jobs is None:
        return default_jobs()
    from .ranges import check

    return default_jobs(check("--jobs", _number("jobs", jobs, int, 1)))


def _warn_skip(skip: Skip) -> None:
    detail = f" ({skip.detail})" if skip.detail else ""
    warnings.warn(f"skipped {skip.source!r}: {skip.reason}{detail}", NbclassWarning, stacklevel=3)


# --- the public functions ---------------------------------------------------------------------


def fit(texts: Iterable[str], labels: Iterable[str], *, ledger: bool = False, jobs=None,
        **options) -> Model:  # fmt: skip
    """Learn a model from ``texts`` and their ``labels``, as ``nbclass fit --lines``.

    Parameters
    ----------
    texts : list of str, length n
        The documents. A text may hold tabs and line breaks; an empty text is a document
        with no word.
    labels : list of str, length n
        Their classes (at least two different ones).
    ledger : bool
        Keep every document's digest and counts (``--ledger``).
    jobs : int or None
        Threads that score the candidates of ``model="auto"`` (default: every core; one
        where the counts hold fewer than 2**20 words × classes, docs/choosing.md; the
        model is the same for any number).
    **options
        fit's options by their Python names: ``lowercase``, ``token_pattern``, ``unspaced``,
        ``symbols`` (None by default: on when ``model="auto"`` chooses, as fit's
        ``--symbols`` default), ``ngram_range`` (MIN, MAX), ``ngram_doc_limit`` (N: the
        n-grams longer than one word only in texts of at most N tokens), ``stop_words``
        (``"english"``, a file or ``"none"``), ``hash_features``, ``min_df``,
        ``max_features``, and the estimator options
        ``model`` (``"auto"`` by default: chosen by cross-validation and calibrated),
        ``estimator``, ``alpha``, ``beta``, ``tf``, ``idf``, ``norm``, ``prior_fit``,
        ``class_prior``.

    Returns
    -------
    Model
        Saved, the very bytes ``nbclass fit --lines`` writes for the lines
        ``LABEL<TAB>TEXT`` of these documents.

    Raises
    ------
    UsageError
        For an option value that cannot work, texts that are not strings, labels that
        are not class names.
    NbclassError
        For one class only, or no word at all.
    """
    texts = _texts(texts)
    labels = _labels(labels, len(texts))
    if not texts:
        raise NbclassError("no documents: give texts and their labels")
    tokenizer, vocabulary_filter, defaults, auto = _fit_settings(options)
    documents = learning.count_labelled(
        zip(labels, _encoded(texts)), tokenizer, bool(ledger), sample=auto
    )
    model = learning.new_model(
        documents, tokenizer, vocabulary_filter, defaults, auto, _jobs(jobs)
    )
    return Model(model)


def fit_corpus(
    path: str, *, ledger: bool = False, typicality: bool = False, jobs=None,
    encoding: str = "utf-8", max_bytes: int = DEFAULT_MAX_BYTES, binary: bool = False,
    on_error: str = "fail", **options,
) -> Model:  # fmt: skip
    """Learn a model from a corpus folder (one subfolder per class), as ``nbclass fit``.

    ``jobs`` processes read and count (default: every core); ``encoding``,
    ``max_bytes``, ``binary`` and ``on_error`` are the reading options of the command
    (a skipped document is a :class:`nbclass.errors.NbclassWarning`); ``typicality``
    stores how typical the training documents are for a named model (``--typicality``);
    the other options are :func:`fit`'s. Saved, the model is the file ``nbclass fit``
    writes with the same options.
    """
    from .reading.corpus import list_corpus

    policy = ReadPolicy(encoding, _number("max_bytes", max_bytes, int, 1), bool(binary), on_error)
    log = ReadLog(on_skip=_warn_skip)
    tokenizer, vocabulary_filter, defaults, auto = _fit_settings(options)
    jobs = _jobs(jobs)
    corpus = list_corpus(path, min_classes=2)
    documents = learning.count_documents(
        corpus, tokenizer, bool(ledger), jobs, policy=policy, log=log, sample=auto
    )
    model = learning.new_model(documents, tokenizer, vocabulary_filter, defaults, auto, jobs)
    if typicality and not auto:
        from .models.model import with_typicality

        model = with_typicality(model, corpus, policy)
    return Model(model)


def load(path: str) -> Model:
    """Read a model file (written by ``nbclass fit`` or :meth:`Model.save`).

    Raises
    ------
    ModelFileError
        For a file that is missing, not a model, damaged or of a format this nbclass does
        not read; a :class:`nbclass.errors.ModelKindError` for a table model.
    """
    if not isinstance(path, str) and not hasattr(path, "__fspath__"):
        raise InputError(f"load takes a path, not {type(path).__name__}")
    path = str(path)
    model, header = textfile.load_with_header(path)
    if model.multi_label is not None:
        raise InputError(
            f"{path!r} is a multi-label model: the Python library predicts one class per "
            "text; classify with nbclass predict -m MODEL, which gives label sets"
        )
    return Model(model, path, {k: header[k] for k in ("format", "version", "nbclass_version")})


# --- the model ------------------------------------------------------------------------------


class Model:
    """A fitted model: exact counts and the settings to use them.

    Made by :func:`fit`, :func:`fit_corpus` or :func:`load`. Probabilities are in the
    order of :attr:`classes_`; a batch of texts is scored as ``nbclass predict`` scores
    documents.
    """

    def __init__(self, model: _Model, path: str | None = None, header: dict | None = None,
                 overrides: dict | None = None, calibration: bool = True):  # fmt: skip
        if not isinstance(model, _Model):
            raise InputError(
                "make a Model with nbclass.fit, nbclass.fit_corpus or nbclass.load"
            )
        self._model, self._path, self._header = model, path, header
        self._overrides = overrides or dict.fromkeys(ESTIMATOR_OPTIONS)
        self._calibration = calibration

    # -- what it is

    @property
    def classes_(self) -> list[str]:
        """The C class names, in the order of the probabilities' columns."""
        return list(self._model.active_counts.classes)

    @property
    def path(self) -> str | None:
        """The file the model was loaded from, or None."""
        return self._path

    def info(self) -> dict:
        """What ``nbclass info --format json`` prints: documents, classes, vocabulary,
        tokenizer, default settings, fitted β, calibration, the choice."""
        return model_info(self._model, self._path, self._header)

    def __repr__(self) -> str:
        counts = self._model.counts
        where = f", path={self._path!r}" if self._path else ""
        return (
            f"<nbclass.Model: {counts.n_docs} documents, {len(counts.classes)} classes "
            f"{self.classes_!r}, {len(self._model.active_counts.vocabulary)} words{where}>"
        )

    # -- as bytes and as a file

    def to_bytes(self) -> bytes:
        """The model file's bytes (what :meth:`save` writes)."""
        return textfile.dumps(self._model)

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<bytes>") -> Model:
        """The model of a model file's bytes (checked as :func:`load` checks a file)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InputError(f"from_bytes takes bytes, not {type(data).__name__}")
        model, header = textfile.loads_with_header(bytes(data), name)
        return cls(model, None, {k: header[k] for k in ("format", "version", "nbclass_version")})

    def save(self, path: str) -> None:
        """Write the model file atomically, under its lock (as ``nbclass fit -o`` does)."""
        path = str(path)
        textfile.check_destination(path)
        with textfile.locked(path):
            textfile.save(self._model, path)

    def __getstate__(self) -> dict:
        """Pickled as the model file's bytes (counts and settings, never code)."""
        return {
            "model": self.to_bytes(), "path": self._path, "header": self._header,
            "overrides": self._overrides, "calibration": self._calibration,
        }  # fmt: skip

    def __setstate__(self, state: dict) -> None:
        self.__init__(
            textfile.loads(state["model"], "<pickle>"), state["path"], state["header"],
            state["overrides"], state["calibration"],
        )  # fmt: skip

    # -- scoring

    def using(self, *, calibration: bool = True, **options) -> Model:
        """This model scored with other estimator options, as ``nbclass predict --model
        NAME --alpha A ...`` (no refit: the counts are the same).

        ``options`` are ``model``, ``estimator``, ``alpha``, ``beta``, ``tf``, ``idf``,
        ``norm``, ``prior_fit``, ``class_prior``; any of them turns the stored calibration
        off, as on the command line, and ``calibration=False`` does alone
        (``--no-calibration``).
        """
        overrides = _overrides(options)
        result = Model(self._model, self._path, self._header, overrides, bool(calibration))
        _ = result._classifier  # the options are checked here, not at the first prediction
        return result

    @cached_property
    def _classifier(self) -> Classifier:
        settings, calibrate = scoring_settings(self._model, self._overrides, self._calibration)
        return Classifier(self._model, settings, calibrate=calibrate)

    def _scored(self, texts) -> Iterator[ScoredBatch]:
        texts = _texts(texts)
        size = _defaults.BATCH_SIZE
        for start in range(0, len(texts), size):
            batch = texts[start : start + size]
            sources = [str(start + i) for i in range(len(batch))]
            # a block of documents at a time: bounded memory against many classes
            yield from texts_scored(self._classifier, sources, batch)

    def predict_log_proba(self, texts: Iterable[str]) -> np.ndarray:
        """log p(c | x) of each text, ndarray of shape (n, C) in :attr:`classes_` order
        (−inf for a class the text rules out)."""
        rows = [scored.log_proba for scored in self._scored(texts)]
        if not rows:
            return np.empty((0, len(self.classes_)))
        return np.vstack(rows)

    def predict_proba(self, texts: Iterable[str]) -> np.ndarray:
        """p(c | x) of each text, ndarray of shape (n, C) in :attr:`classes_` order: the
        probabilities ``nbclass predict --format jsonl`` prints, float for float."""
        log_proba = self.predict_log_proba(texts)
        # math.exp, as predict prints them: numpy's exp differs in the last bit for some.
        return np.array(list(map(math.exp, log_proba.ravel().tolist()))).reshape(
            log_proba.shape
        )

    def predict(self, texts: Iterable[str], **thresholds) -> list[str]:
        """The label of each text, as ``nbclass predict`` prints it.

        ``thresholds`` are predict's: ``min_probability``, ``min_margin``, ``min_known``
        (N, ``"P%"`` or both in a list), ``min_typicality`` and ``unsure_label``; a text
        that fails one gets ``unsure_label`` (``"unsure"``). A text that every class
        rules out (``estimator="mle"``) gets ``""``, with a warning.
        """
        return [record["label"] for record in self.classify(texts, top_k=1, **thresholds)]

    def classify(
        self, texts: Iterable[str], *, top_k: int | None = None, explain: int | None = None,
        min_probability: float | None = None, min_margin: float | None = None,
        min_known=None, min_typicality: float | None = None, unsure_label: str = "unsure",
    ) -> list[dict]:  # fmt: skip
        """Each text's record as ``nbclass predict --format jsonl`` prints it, without
        ``source``: ``label``, ``probability``, ``probabilities`` (the ``top_k`` most
        probable classes, all by default, best first), ``log_evidence``,
        ``evidence_model``, ``reason`` (why it is unsure, or None) and, with ``explain``
        N, ``explanation`` (the N words that pushed it most towards its class)."""
        if top_k is not None:
            top_k = check_range("--top-k", _number("top_k", top_k, int))
        if explain is not None:
            explain = check_range("--explain", _number("explain", explain, int))
        if min_known is None:
            min_known = ()
        elif isinstance(min_known, (str, int)):
            min_known = (min_known,)
        abstention = Abstention.from_options(
            _number("min_probability", min_probability, float),
            _number("min_margin", min_margin, float),
            tuple(str(v) for v in min_known), unsure_label,
            _number("min_typicality", min_typicality, float),
        )  # fmt: skip
        classifier = self._classifier
        classes = classifier.classes
        abstention.check_classes(classes)
        record, _ = prediction_views(classes, top_k, unsure_label)
        out = []
        for scored in self._scored(texts):
            more = extras(classifier, scored, abstention, explain, evidence=True)
            rows = scored.log_proba  # ranked by numpy (nbclass.output.render)
            _, problems = prediction_labels(
                scored.sources, classes, rows, classifier.settings, more, unsure_label
            )
            for problem in problems:
                warnings.warn(problem, NbclassWarning, stacklevel=2)
            for row, extra in zip(rows, more):
                result = record(("", row, extra))
                del result["source"]
                out.append(result)
        return out

    def explain(self, text: str, n: int = 10) -> dict | None:
        """Why ``text`` gets its label: ``{"label", "versus", "log_odds", "bias",
        "words"}``, ``words`` the ``n`` words that pushed it most towards ``label``
        against the runner-up ``versus`` as ``(word, count, contribution)``, largest
        first (``predict --explain N``; the contributions and ``bias`` add up to
        ``log_odds``). None when every class rules the text out."""
        if not isinstance(text, str):
            raise InputError(f"explain takes one text (a string), not {type(text).__name__}")
        n = check_range("--explain", _number("n", n, int))
        scored = next(self._scored([text]))
        (explanation,) = explanations(self._classifier, scored, n)
        if explanation is None:
            return None
        best = int(np.argmax(scored.log_proba[0]))
        return {"label": self._classifier.classes[best], **explanation}

    # -- changing the counts

    def update(self, texts: Iterable[str], labels: Iterable[str]) -> Model:
        """This model with ``texts`` added under ``labels``, as ``nbclass fit --lines
        --update`` adds them: the model a fit of all the documents gives (new words and
        classes welcome). A model with a ledger gets their entries."""
        texts = _texts(texts)
        labels = _labels(labels, len(texts))
        model = self._model
        tokenizer, vocabulary_filter, defaults, _ = learning.fit_settings(
            {**TOKENIZER_OPTIONS, "event_model": None, "estimator": None, "alpha": None,
             "beta": None, "text_options": None}, (), model,
        )  # fmt: skip
        documents = learning.count_labelled(  # the tokenizer the update counts with
            zip(labels, _encoded(texts)), tokenizer, model.ledger is not None,
            sample=learning.chooses(model),
        )  # fmt: skip
        from dataclasses import replace

        from .models.model import with_defaults

        current = replace(model, vocabulary_filter=vocabulary_filter)
        return Model(learning.update(with_defaults(current, defaults), documents))

    def merge(self, *others: Model) -> Model:
        """The sum of this model and ``others`` (fitted on other documents with the same
        tokenizer), as ``nbclass merge``: this model's vocabulary filter and default
        settings are kept."""
        for other in others:
            if not isinstance(other, Model):
                raise InputError(f"merge takes nbclass models, not {type(other).__name__}")
        models = [self, *others]
        if len(models) < 2:
            raise InputError("give at least one other model to merge")
        names = [m._path or f"model {i + 1}" for i, m in enumerate(models)]
        return Model(learning.combine([m._model for m in models], names))


__all__ = ["Model", "fit", "fit_corpus", "load", "__version__"]
