"""Table models: naive Bayes over the columns of a table, each with its own distribution.

The class-conditional factorises over the columns (seed 000, "we can mix different kind
of features"; ``docs/maths.md``)::

    b_c = log π_c + Σ_k log p(x_k | c)

where column k is

- ``numeric``: a Gaussian, log N(x_k; μ_kc, σ²_kc) (:mod:`nbclass.models.columns`);
- ``categorical``: log θ_{x_k c}, Dirichlet-smoothed (:mod:`nbclass.models.columns`);
- ``text``: a bag of words scored exactly as a text model scores a document (the
  multinomial or Bernoulli event model of :mod:`nbclass.models.posterior`, from the column's own
  counts N_c, D_jc, T_jc, where N_c counts the rows of class c that have text there).

A missing cell leaves its column's factor out of that row's product; so does a category
never seen in training, and a numeric column with the same value in every training row.
π_c = the estimator's class prior from N_c, the rows of class c. ``--estimator``,
``--alpha`` and ``--beta`` work as for text: β is the pseudo-count of categorical values
(β_1 when B1,B0 is given) and of words; Gaussian columns always use the maximum-
likelihood mean and variance plus the variance floor.

Everything fitted is a count or an exact sum, so statistics are additive:
:func:`merge_tables` of the models of two tables equals the model of both.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..counting.counts import CountAccumulator, Counts
from ..counting.counts import merge as merge_counts
from ..defaults import DEFAULT_VAR_SMOOTHING
from ..errors import NbclassError, NbclassWarning, UsageError
from ..ranges import check
from ..reading.table import Cell, Table, detect_type, is_number
from ..text.tokenizer import TokenizerSettings, make_tokenizer
from ..text.vectorizer import count_matrix
from .columns import (
    CategoricalStats,
    GaussianStats,
    categorical_log_likelihood,
    gaussian_log_likelihood,
    variance_floor,
)
from .estimators import EstimatorSettings, log_class_prior
from .model import BATCH_SIZE, Predictions
from .posterior import LinearScorer, log_posterior, make_scorer
from .selection import top_features as text_top_features

FEATURE_TYPES = ("numeric", "categorical", "text")


@dataclass(frozen=True, eq=False)
class TableColumn:
    """One feature column: its name, type and fitted statistics.

    ``stats`` is a :class:`GaussianStats` (numeric), :class:`CategoricalStats`
    (categorical) or :class:`~nbclass.counting.counts.Counts` (text; its ``class_count`` counts
    the rows of each class with text in this column).
    """

    name: str
    type: str
    stats: GaussianStats | CategoricalStats | Counts

    def equals(self, other: TableColumn) -> bool:
        return (
            self.name == other.name and self.type == other.type and self.stats.equals(other.stats)
        )


@dataclass(frozen=True, eq=False)
class TableModel:
    """A fitted naive Bayes model of a table.

    Attributes
    ----------
    label : str
        The column that holds the class.
    classes : tuple of str, length C
        Sorted.
    class_count : ndarray of shape (C,), int64
        N_c, training rows of class c.
    columns : tuple of TableColumn
        The feature columns, in the training table's order.
    tokenizer : TokenizerSettings
        How text columns become words.
    defaults : EstimatorSettings
        Event model (text columns), estimator and priors unless overridden.
    var_smoothing : float
        ε of the variance floor.
    ignored : tuple of str
        Columns of the training table left out (``ignore``), for the record.
    """

    label: str
    classes: tuple[str, ...]
    class_count: np.ndarray
    columns: tuple[TableColumn, ...]
    tokenizer: TokenizerSettings = field(default_factory=TokenizerSettings)
    defaults: EstimatorSettings = field(default_factory=EstimatorSettings)
    var_smoothing: float = DEFAULT_VAR_SMOOTHING
    ignored: tuple[str, ...] = ()

    @property
    def n_rows(self) -> int:
        return int(self.class_count.sum())

    def column(self, name: str) -> TableColumn:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(name)

    def equals(self, other: TableModel) -> bool:
        """Same classes, columns and statistics, exactly (settings included)."""
        return (
            self.label == other.label
            and self.classes == other.classes
            and np.array_equal(self.class_count, other.class_count)
            and len(self.columns) == len(other.columns)
            and all(a.equals(b) for a, b in zip(self.columns, other.columns))
            and self.tokenizer == other.tokenizer
            and self.defaults == other.defaults
            and self.var_smoothing == other.var_smoothing
        )

    def problems(self) -> list[str]:
        """What makes this model impossible (empty when it is consistent)."""
        found = []
        if len(self.classes) < 1 or not all(map(str.__lt__, self.classes[:-1], self.classes[1:])):
            found.append("class names are not sorted and unique")
        if self.class_count.shape != (len(self.classes),) or (self.class_count < 0).any():
            found.append("class counts do not match the classes")
            return found
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names) or self.label in names or not all(names):
            found.append("column names are not unique, empty, or repeat the label")
        if not math.isfinite(self.var_smoothing) or self.var_smoothing <= 0:
            found.append("the variance smoothing is not a positive number")
        for column in self.columns:
            if column.type not in FEATURE_TYPES:
                found.append(f"column {column.name!r} has an unknown type {column.type!r}")
                continue
            if column.type == "text":
                problems = column.stats.problems()
                if column.stats.classes != self.classes:
                    problems.append("classes differ from the model's")
                elif (column.stats.class_count > self.class_count).any():
                    problems.append("more rows with text than rows")
            else:
                problems = column.stats.problems(self.class_count)
            found += [f"column {column.name!r}: {p}" for p in problems]
        return found


def validate_var_smoothing(value: float) -> float:
    """``value`` if it is a variance floor fit and predict accept (a positive share of the
    largest variance: a class whose values are all equal would otherwise have variance 0)."""
    return check("--var-smoothing", value)


def fit_table(
    table: Table,
    label: str,
    column_types: Mapping[str, str] | None = None,
    tokenizer: TokenizerSettings | None = None,
    defaults: EstimatorSettings | None = None,
    var_smoothing: float = DEFAULT_VAR_SMOOTHING,
    min_classes: int = 2,
) -> TableModel:
    """Fit a table model: one distribution per column, by type (detected or given).

    ``min_classes`` is 2 for a new model; rows added to an existing model
    (:func:`table_part`, then :func:`merge_tables`) may all be of one class.

    Raises
    ------
    UsageError
        An unknown label or typed column, or a type that does not fit the cells.
    NbclassError
        A row without a label, fewer than two classes, or no feature column.
    """
    tokenizer = tokenizer or TokenizerSettings()
    tokenize = make_tokenizer(tokenizer)
    defaults = (defaults or EstimatorSettings()).validate()
    var_smoothing = validate_var_smoothing(float(var_smoothing))
    column_types = dict(column_types or {})
    if label not in table.columns:
        raise UsageError(
            f"--label {label!r} is not a column of {table.path!r}; its columns are "
            + ", ".join(repr(c) for c in table.columns)
        )
    unknown = [name for name in column_types if name not in table.columns]
    if unknown:
        raise UsageError(
            f"--column-types names {unknown[0]!r}, which is not a column of the table"
        )
    if label in column_types:
        raise UsageError(f"--column-types cannot type the label column {label!r}")
    label_cells = table.column(label)
    for row, value in enumerate(label_cells, start=1):
        if value is None:
            raise NbclassError(
                f"{table.path!r} row {row} has no label in column {label!r}: fill it in or "
                "remove the row"
            )
    classes = tuple(sorted(set(label_cells)))
    if len(classes) < min_classes:
        raise NbclassError(
            f"column {label!r} holds {len(classes)} class; naive Bayes needs at least two"
        )
    class_at = {c: i for i, c in enumerate(classes)}
    y = [class_at[v] for v in label_cells]
    C = len(classes)
    columns, ignored = [], []
    for name in table.columns:
        if name == label:
            continue
        cells = table.column(name)
        kind = column_types.get(name) or detect_type(cells)
        if kind == "ignore":
            if name not in column_types:
                warnings.warn(
                    f"column {name!r} has no value in any row: it is left out of the model",
                    NbclassWarning,
                    stacklevel=2,
                )
            ignored.append(name)
        elif kind == "numeric":
            stats = GaussianStats.of(_numbers(cells, name, table.path), y, C)
            problem = stats.variance_problem()
            if problem:
                raise NbclassError(f"{table.path!r} column {name!r}: {problem}")
            columns.append(TableColumn(name, kind, stats))
        elif kind == "categorical":
            columns.append(TableColumn(name, kind, CategoricalStats.of(cells, y, C)))
        else:
            columns.append(TableColumn(name, kind, _text_counts(cells, y, classes, tokenize)))
    if not columns:
        raise NbclassError(f"{table.path!r} has no feature column besides the label {label!r}")
    return TableModel(
        label=label,
        classes=classes,
        class_count=np.bincount(y, minlength=C).astype(np.int64),
        columns=tuple(columns),
        tokenizer=tokenizer,
        defaults=defaults,
        var_smoothing=var_smoothing,
        ignored=tuple(ignored),
    )


def _numbers(cells: Sequence[Cell], name: str, source: str, rows=None) -> list[float | None]:
    """The cells of a numeric column as floats (``None`` if missing)."""
    out: list[float | None] = []
    for i, value in enumerate(cells):
        if value is None:
            out.append(None)
        elif is_number(value):
            out.append(float(value))
        else:
            where = f"{source!r} row {i + 1}" if rows is None else repr(rows[i])
            raise NbclassError(
                f"{where}: column {name!r} holds {value!r}, which is not a finite number, "
                "but the column is numeric (change it with --column-types "
                f"{name}=categorical)"
            )
    return out


def _text_counts(cells: Sequence[Cell], y: Sequence[int], classes, tokenize) -> Counts:
    accumulator = CountAccumulator(classes)
    present = [i for i, v in enumerate(cells) if v is not None]
    X = count_matrix((tokenize(cells[i]) for i in present), accumulator.vocabulary)
    accumulator.add(X, [y[i] for i in present])
    return accumulator.result()


class TableClassifier:
    """Scores rows of a table with a table model, under given estimator settings.

    The same shape as :class:`nbclass.models.model.Classifier`: :meth:`predict` takes a batch
    (here rows, ``{column: cell}``) and returns :class:`nbclass.models.model.Predictions`;
    :meth:`predict_rows` streams ``(source, row)`` pairs in batches. Columns of a row that
    the model does not know (the label, an id) are ignored; a model column absent from a
    row is missing there.

    Examples
    --------
    >>> from nbclass.reading.table import Table
    >>> rows = [("3.1", "red", "a"), ("2.9", "red", "a"), ("7.0", "blue", "b"),
    ...         ("7.4", "blue", "b")]
    >>> model = fit_table(Table("t.csv", ("size", "colour", "kind"), rows), label="kind")
    >>> clf = TableClassifier(model)
    >>> clf.classes[clf.predict([{"size": "7.2", "colour": None}]).best[0]]
    'b'
    """

    def __init__(self, model: TableModel, settings: EstimatorSettings | None = None):
        self.model = model
        self.settings = s = (settings or model.defaults).validate()
        self.classes = model.classes
        self.log_pi = log_class_prior(model.class_count, s.estimator, s.alpha)
        numeric = [c.stats for c in model.columns if c.type == "numeric"]
        self.floor = variance_floor(numeric, model.var_smoothing)
        self.tokenize = make_tokenizer(model.tokenizer, lazy=True)  # a fixed vocabulary
        self._scorers = [self._scorer(column) for column in model.columns]

    def _scorer(self, column: TableColumn):
        s, stats = self.settings, column.stats
        if column.type == "numeric":
            if stats.pooled_variance() == 0:
                return None  # one value in every training row: no information
            mean, var = stats.parameters(self.floor)
            if (var <= 0).any():
                raise NbclassError(
                    f"column {column.name!r}: its variance underflows to 0; rescale the column"
                )
            return mean, var
        if column.type == "categorical":
            return stats.log_theta(s.estimator, s.beta[0])
        return _text_scorer(stats, s)

    def log_likelihood_parts(
        self, rows: Sequence[Mapping[str, Cell]], sources: Sequence[str] | None = None
    ) -> list[np.ndarray]:
        """log p(x_k | c) per column k (model order), each ndarray of shape (n, C).

        A row's entry is 0 where its cell is missing or unseen (the factor is left out).
        """
        parts = []
        for column, scorer in zip(self.model.columns, self._scorers):
            cells = [row.get(column.name) for row in rows]
            if column.type == "numeric":
                if scorer is None:
                    parts.append(np.zeros((len(rows), len(self.classes))))
                    continue
                where = (
                    sources if sources is not None else [f"row {i + 1}" for i in range(len(rows))]
                )
                values = _numbers(cells, column.name, "", where)
                x = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
                parts.append(gaussian_log_likelihood(x, *scorer))
            elif column.type == "categorical":
                parts.append(categorical_log_likelihood(column.stats.indices(cells), scorer))
            else:
                vocabulary, text_scorer = scorer
                X = count_matrix((self.tokenize(v or "") for v in cells), vocabulary)
                part = text_scorer.joint_log_likelihood(X)
                part[[v is None for v in cells]] = 0.0
                parts.append(part)
        return parts

    def joint_log_likelihood(
        self, rows: Sequence[Mapping[str, Cell]], sources: Sequence[str] | None = None
    ) -> np.ndarray:
        """b_c = log π_c + Σ_k log p(x_k | c), ndarray of shape (n, C), summed in column order."""
        jll = np.tile(self.log_pi, (len(rows), 1))
        for part in self.log_likelihood_parts(rows, sources):
            jll += part
        return jll

    def predict(
        self, rows: Sequence[Mapping[str, Cell]], sources: Sequence[str] | None = None
    ) -> Predictions:
        """Posterior probabilities of a batch of rows."""
        if sources is None:
            sources = [str(i) for i in range(len(rows))]
        jll = self.joint_log_likelihood(rows, sources)
        return Predictions(list(sources), self.classes, log_posterior(jll))

    def predict_rows(
        self, rows: Iterable[tuple[str, Mapping[str, Cell]]], batch_size: int = BATCH_SIZE
    ) -> Iterator[Predictions]:
        """Predict a stream of ``(source, row)`` pairs, one batch at a time."""
        batch: list[tuple[str, Mapping[str, Cell]]] = []
        for item in rows:
            batch.append(item)
            if len(batch) == batch_size:
                yield self.predict([r for _, r in batch], [s for s, _ in batch])
                batch = []
        if batch:
            yield self.predict([r for _, r in batch], [s for s, _ in batch])


def _text_scorer(counts: Counts, settings: EstimatorSettings):
    """(vocabulary, scorer) giving log p(words | c) of a text column, without log π."""
    scorer = make_scorer(counts, settings)
    if not isinstance(scorer, LinearScorer):  # the Pólya and negative binomial, DCM
        raise UsageError(
            f"the text columns of a table model need a linear model: --model {settings.model} "
            f"with --estimator {settings.estimator} is not one; use --model multinomial, "
            "bernoulli, complement or poisson with --estimator posterior-mean, map or mle"
        )
    log_pi = log_class_prior(counts.class_count, settings.estimator, settings.alpha)
    # make_scorer's bias is log π_c (+ the Bernoulli absent-word sum); keep only the latter.
    finite = np.isfinite(log_pi)
    bias = np.where(finite, scorer.bias - np.where(finite, log_pi, 0.0), 0.0)
    scorer = LinearScorer(scorer.weights, bias, scorer.binary, scorer.required, scorer.n_required)
    return {word: j for j, word in enumerate(counts.vocabulary)}, scorer


# --- top features ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TableFeature:
    """A column (numeric, categorical) or a word of a text column, with its MI in nats."""

    feature: str
    type: str
    mi: float
    label: str


def _column_mi(pi: np.ndarray, kl: np.ndarray, classes) -> tuple[float, str]:
    """I = Σ_c π_c KL_c and the class with the largest share π_c KL_c."""
    share = pi * kl
    return max(float(share.sum()), 0.0), classes[int(share.argmax())]


def categorical_mutual_information(log_theta: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """π_c KL(θ_·c ‖ θ_·), ndarray of shape (C,); I_k is its sum.

    With θ_v = Σ_c π_c θ_vc, I_k = Σ_c π_c Σ_v θ_vc log(θ_vc / θ_v), in nats.
    """
    from ..compiled import rel_entr

    theta = np.exp(log_theta)  # (L, C)
    theta_v = theta @ pi  # (L,)
    return rel_entr(theta, theta_v[:, None]).sum(axis=0)


def gaussian_mutual_information(mean: np.ndarray, var: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """KL(N(μ_c, σ²_c) ‖ Σ_c' π_c' N(μ_c', σ²_c')) per class, ndarray of shape (C,).

    The mixture has no closed form, so each expectation over class c's Gaussian is a
    numerical integral (``scipy.integrate.quad`` in the standardised variable
    z = (x − μ_c) / σ_c, over |z| ≤ 40, absolute error ≲ 1e-10).
    """
    from scipy.integrate import quad
    from scipy.special import logsumexp

    log_pi = np.log(pi)
    sd = np.sqrt(var)

    def log_density(x: float) -> np.ndarray:
        return -0.5 * np.log(2.0 * np.pi * var) - 0.5 * (x - mean) ** 2 / var

    kl = []
    for c in range(mean.shape[0]):

        def integrand(z: float, c=c) -> float:
            ld = log_density(mean[c] + sd[c] * z)
            return (
                math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) * (ld[c] - logsumexp(log_pi + ld))
            )

        value, _ = quad(integrand, -40.0, 40.0, points=[0.0], limit=200, epsabs=1e-12)
        kl.append(value)
    return np.array(kl)


def table_top_features(
    model: TableModel, settings: EstimatorSettings | None = None, k: int = 20
) -> list[TableFeature]:
    """The ``k`` most informative features, best first (ties: by name).

    A feature is what the model multiplies: a numeric or categorical column as a whole,
    or one word of a text column (named ``column:word``). Its score is the mutual
    information in nats between it and the class under the fitted distributions:
    for a categorical column Σ_c π_c Σ_v θ_vc log(θ_vc / θ_v); for a numeric column the
    same with the Gaussians (a numerical integral); for a word the presence MI of
    :mod:`nbclass.models.selection`, within the rows that have text in the column. The class is
    the one the feature tells most about: the largest term π_c KL_c for a column, the
    highest θ_jc for a word.
    """
    settings = (settings or model.defaults).validate()
    clf = TableClassifier(model, settings)
    pi = np.exp(clf.log_pi)
    found: list[TableFeature] = []
    for column, scorer in zip(model.columns, clf._scorers):
        if column.type == "numeric":
            if scorer is None:
                found.append(TableFeature(column.name, "numeric", 0.0, model.classes[0]))
                continue
            mi, label = _column_mi(pi, gaussian_mutual_information(*scorer, pi), model.classes)
            found.append(TableFeature(column.name, "numeric", mi, label))
        elif column.type == "categorical":
            mi, label = _column_mi(pi, categorical_mutual_information(scorer, pi), model.classes)
            found.append(TableFeature(column.name, "categorical", mi, label))
        elif column.stats.vocabulary:
            for f in text_top_features(column.stats, settings, k):
                found.append(TableFeature(f"{column.name}:{f.word}", "text", f.mi, f.label))
    found.sort(key=lambda f: (-f.mi, f.feature))
    return found[:k]


# --- merging --------------------------------------------------------------------------------


def merge_tables(*models: TableModel) -> TableModel:
    """The model of the union of the tables that gave ``models``: every statistic summed.

    The models must have the same label, the same columns of the same types, and the same
    tokenizer; classes and categorical values are united. Settings come from the first.
    """
    first = models[0]
    shape = [(c.name, c.type) for c in first.columns]
    for other in models[1:]:
        if other.label != first.label or [(c.name, c.type) for c in other.columns] != shape:
            raise NbclassError("cannot merge table models with different labels or columns")
        if other.tokenizer != first.tokenizer:
            raise NbclassError("cannot merge table models with different tokenizers")
    classes = tuple(sorted(set().union(*(m.classes for m in models))))
    at = {c: i for i, c in enumerate(classes)}
    C = len(classes)
    class_count = np.zeros(C, dtype=np.int64)
    for m in models:
        class_count[[at[c] for c in m.classes]] += m.class_count
    columns = []
    for j, (name, kind) in enumerate(shape):
        parts = [(m.columns[j].stats, [at[c] for c in m.classes]) for m in models]
        if kind == "numeric":
            count = np.zeros(C, dtype=np.int64)
            s1, s2 = [0] * C, [0] * C
            for stats, cols in parts:
                count[cols] += stats.count
                for i, c in enumerate(cols):
                    s1[c] += stats.sum_x[i]
                    s2[c] += stats.sum_xx[i]
            stats = GaussianStats(count, tuple(s1), tuple(s2))
        elif kind == "categorical":
            values = tuple(sorted(set().union(*(p.values for p, _ in parts))))
            vat = {v: i for i, v in enumerate(values)}
            count = np.zeros((len(values), C), dtype=np.int64)
            for p, cols in parts:
                count[np.ix_([vat[v] for v in p.values], cols)] += p.count
            stats = CategoricalStats(values, count)
        else:
            stats = merge_counts(*(p for p, _ in parts))  # each part has all its classes
        columns.append(TableColumn(name, kind, stats))
    return TableModel(
        label=first.label,
        classes=classes,
        class_count=class_count,
        columns=tuple(columns),
        tokenizer=first.tokenizer,
        defaults=first.defaults,
        var_smoothing=first.var_smoothing,
        ignored=first.ignored,
    )


def table_part(model: TableModel, table: Table, label: str | None = None) -> TableModel:
    """The rows of ``table`` fitted with ``model``'s own settings, ready to merge into it.

    The rows are read with the model's label, column types, ignored columns, tokenizer
    and variance floor; they may all be of one class. ``label``, if given, must be the
    model's.
    """
    if label is not None and label != model.label:
        raise UsageError(
            f"--label {label!r} differs from the model's label column {model.label!r}: "
            "leave --label out to use the model's"
        )
    types = {c.name: c.type for c in model.columns}
    types.update({name: "ignore" for name in model.ignored})
    missing = [name for name in [model.label, *types] if name not in table.columns]
    extra = [name for name in table.columns if name != model.label and name not in types]
    if missing or extra:
        problem = (
            f"lacks the model's column {missing[0]!r}" if missing
            else f"has a column {extra[0]!r} the model does not know"
        )  # fmt: skip
        raise UsageError(
            f"{table.path!r} {problem}: rows added to a table model need the same columns"
        )
    return fit_table(
        table,
        model.label,
        types,
        model.tokenizer,
        model.defaults,
        model.var_smoothing,
        min_classes=1,
    )
