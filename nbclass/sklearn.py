"""A scikit-learn estimator on raw texts: nbclass in a Pipeline, cross_val_score, GridSearchCV.

:class:`NaiveBayesTextClassifier` takes a list of texts for ``X`` (tokenizing is part of the
model, as on the command line) and any labels for ``y``. It fits with :func:`nbclass.fit`
and scores with :class:`nbclass.api.Model`, so its probabilities are those of ``nbclass
predict`` on a model fitted with the same options (the calibration of ``model=None``,
which chooses by cross-validation as ``nbclass fit`` does, included). Every option of
fit is a parameter (``get_params`` / ``set_params``, ``clone``); pickling keeps the model
as the bytes of its model file: counts and settings, no code.

scikit-learn is an optional dependency (``pip install 'nbclass[sklearn]'``), imported only
by this module.
"""

from __future__ import annotations

import numpy as np

try:
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_is_fitted, column_or_1d
except ImportError as exc:  # pragma: no cover - the tests install scikit-learn
    from .errors import NbclassError

    raise NbclassError(
        "nbclass.sklearn needs scikit-learn: pip install 'nbclass[sklearn]' (or scikit-learn)"
    ) from exc

from .api import Model, fit
from .errors import InputError


class NaiveBayesTextClassifier(ClassifierMixin, BaseEstimator):
    """Naive Bayes text classification with nbclass's exact counts, on raw texts.

    Parameters
    ----------
    model : {None, "auto", "multinomial", "bernoulli", "complement", "dcm", "poisson"}
        ``None`` (the default) is ``nbclass fit``'s default: ``"auto"`` (settings chosen by
        cross-validation, then calibrated) unless another estimator option is given, then
        the multinomial model with those options.
    estimator, alpha, beta, tf, idf, norm, prior_fit, class_prior
        The estimator options of ``nbclass fit`` (None: the command's default).
    lowercase, token_pattern, symbols, ngram_range, ngram_doc_limit, stop_words,
    hash_features, min_df, max_features
        The tokenizer and vocabulary options of ``nbclass fit`` (``symbols`` None: on when
        the settings are chosen, ``model`` None or ``"auto"``, as the command's default).
    calibration : bool
        Apply the calibration fitted with ``model="auto"`` (``predict --no-calibration``
        when False).
    jobs : int or None
        Threads that score the candidates of ``model="auto"`` (the model is the same for
        any number; None: every core; one where the counts hold fewer than 2**20 words ×
        classes, docs/choosing.md, as for :func:`nbclass.fit`).

    Attributes
    ----------
    classes_ : ndarray of shape (C,)
        The labels, sorted (``numpy.unique(y)``).
    model_ : nbclass.Model
        The fitted model (its classes are the labels as strings).

    Examples
    --------
    >>> clf = NaiveBayesTextClassifier(model="multinomial").fit(
    ...     ["cheap pills", "win cash now", "lunch at noon?", "see you at noon"],
    ...     ["spam", "spam", "ham", "ham"])
    >>> clf.predict(["cash pills"]).tolist()
    ['spam']
    """

    def __init__(
        self, model=None, estimator=None, alpha=None, beta=None, tf=None, idf=None, norm=None,
        prior_fit=None, class_prior=None, lowercase=True, token_pattern=None, symbols=None,
        ngram_range=None, ngram_doc_limit=None, stop_words="none", hash_features=None, min_df=1,
        max_features=None, calibration=True, jobs=None,
    ):  # fmt: skip
        self.model = model
        self.estimator = estimator
        self.alpha = alpha
        self.beta = beta
        self.tf = tf
        self.idf = idf
        self.norm = norm
        self.prior_fit = prior_fit
        self.class_prior = class_prior
        self.lowercase = lowercase
        self.token_pattern = token_pattern
        self.symbols = symbols
        self.ngram_range = ngram_range
        self.ngram_doc_limit = ngram_doc_limit
        self.stop_words = stop_words
        self.hash_features = hash_features
        self.min_df = min_df
        self.max_features = max_features
        self.calibration = calibration
        self.jobs = jobs

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False  # X is a list of texts
        tags.input_tags.string = True
        return tags

    # -- fitting

    def _options(self) -> dict:
        names = (
            "model", "estimator", "alpha", "beta", "tf", "idf", "norm", "prior_fit",
            "class_prior", "lowercase", "token_pattern", "symbols", "ngram_range",
            "ngram_doc_limit", "stop_words", "hash_features", "min_df", "max_features",
        )  # fmt: skip
        return {name: getattr(self, name) for name in names}

    def fit(self, X, y):
        """Learn from the texts ``X`` and their labels ``y`` (as :func:`nbclass.fit`)."""
        X = _texts(X)
        return self._fit(X, _labels(y, len(X)))

    def _fit(self, X: list[str], y: np.ndarray):
        classes = np.unique(y)
        names = _names(classes)
        if len(classes) < 2:  # the message of nbclass fit, as a ValueError
            raise InputError(
                f"the input has only one class ({names[classes[0]]!r}): a classifier needs "
                "at least two classes"
            )
        fitted = fit(X, [names[label] for label in y.tolist()], jobs=self.jobs, **self._options())
        return self._set_fitted(fitted, classes)

    def partial_fit(self, X, y, classes=None):
        """Add the texts ``X`` with labels ``y`` (the first call fits).

        Later calls add the documents to the counts, as ``nbclass fit --update``: the
        model is the one a fit of every document given so far makes with the settings
        of the first fit (whose choice and calibration are kept). New labels are welcome;
        ``classes``, if given, must hold every label of ``y``.
        """
        X = _texts(X)
        y = _labels(y, len(X))
        if classes is not None:
            unknown = set(y.tolist()) - set(np.asarray(classes).tolist())
            if unknown:
                raise InputError(f"label {sorted(map(str, unknown))[0]!r} is not in classes")
        if not hasattr(self, "model_"):
            return self._fit(X, y)
        classes = np.unique(np.concatenate([self.classes_, y]))
        names = _names(classes)
        updated = self.model_.update(X, [names[label] for label in y.tolist()])
        return self._set_fitted(updated, classes)

    def _set_fitted(self, fitted: Model, classes: np.ndarray):
        self.classes_ = classes
        self.model_ = fitted
        return self

    @classmethod
    def from_model(cls, model: Model, calibration: bool = True) -> NaiveBayesTextClassifier:
        """A fitted estimator of a model made elsewhere (``nbclass.load("model.nbc")``):
        scikit-learn's interface to ``nbclass predict``'s probabilities, calibration
        included. Its classes are the model's class names; its parameters are the
        defaults (a ``clone`` refits with them)."""
        if not isinstance(model, Model):
            raise InputError(f"from_model takes an nbclass.Model, not {type(model).__name__}")
        self = cls(calibration=calibration)
        return self._set_fitted(model, np.asarray(model.classes_, dtype=object))

    # -- predicting

    @property
    def _columns(self) -> np.ndarray:
        """The model's column of each of ``classes_``."""
        at = {name: j for j, name in enumerate(self.model_.classes_)}
        return np.array([at[name] for name in _names(self.classes_).values()], dtype=np.intp)

    def _scoring(self) -> Model:
        check_is_fitted(self, "model_")
        return self.model_ if self.calibration else self.model_.using(calibration=False)

    def predict_log_proba(self, X) -> np.ndarray:
        """log p(c | x), ndarray of shape (n, C) in ``classes_`` order."""
        return self._scoring().predict_log_proba(_texts(X))[:, self._columns]

    def predict_proba(self, X) -> np.ndarray:
        """p(c | x), ndarray of shape (n, C) in ``classes_`` order: ``nbclass predict``'s."""
        return self._scoring().predict_proba(_texts(X))[:, self._columns]

    def predict(self, X) -> np.ndarray:
        """The most probable label of each text, ndarray of shape (n,) (the first in the
        model's class order on a tie, as ``nbclass predict``)."""
        log_proba = self._scoring().predict_log_proba(_texts(X))
        labels = np.empty(len(self.model_.classes_), dtype=self.classes_.dtype)
        labels[self._columns] = self.classes_
        return labels[log_proba.argmax(axis=1)]


def _texts(X) -> list[str]:
    """``X`` as a list of texts: a list, a tuple, a 1-d array or a pandas Series of str."""
    if isinstance(X, np.ndarray) and X.ndim != 1:
        raise InputError(
            f"X must be a 1-d sequence of texts, not an array of shape {X.shape}: "
            "nbclass tokenizes the texts itself"
        )
    if hasattr(X, "tolist") and not isinstance(X, (str, bytes)):
        X = X.tolist()
    if isinstance(X, (str, bytes)) or not hasattr(X, "__iter__"):
        raise InputError("X must be a list of texts, not one text: give [text]")
    X = list(X)
    for i, text in enumerate(X):
        if not isinstance(text, str):
            raise InputError(
                f"X[{i}] is {type(text).__name__}, not a text: nbclass takes raw texts "
                "(put no vectorizer before it)"
            )
    return X


def _labels(y, n: int) -> np.ndarray:
    """``y`` as a 1-d array of class labels (scikit-learn's checks: a column is raveled
    with a warning, continuous values, NaN and infinities are refused)."""
    y = column_or_1d(y, warn=True)
    check_classification_targets(y)
    if y.shape[0] != n:
        raise InputError(f"{n} texts but {y.shape[0]} labels: give one label per text")
    return y


def _names(classes: np.ndarray) -> dict:
    """Each label's class name in the model: ``str(label)``, which must differ for
    different labels."""
    names = {label: str(label) for label in classes.tolist()}
    if len(set(names.values())) != len(names):
        raise InputError("two labels have the same text: give labels that read differently")
    return names


__all__ = ["NaiveBayesTextClassifier"]
