"""Numeric and categorical columns: exact sufficient statistics and their estimators.

Notation (``docs/maths.md``, "Other class-conditional distributions"), for one column k:

==========  ========================  =======================================================
symbol      code name                 meaning
==========  ========================  =======================================================
n_kc        ``count``, (C,)           **rows** of class c where column k has a value
S1_kc       ``sum_x``, (C,)           Σ x over those rows, exact (see below)
S2_kc       ``sum_xx``, (C,)          Σ x² over those rows, exact
μ_kc        ``mean``                  S1_kc / n_kc
σ²_kc       ``var``                   S2_kc / n_kc − μ_kc² + ε · max_k' v_k'   (Gaussian)
N_kvc       ``count``, (L, C)         **rows** of class c where column k has value v
L_k         ``len(values)``           distinct values of column k seen in training
θ_kvc       ``log_theta`` (log)       p(x_k = v | c), categorical
==========  ========================  =======================================================

**Gaussian columns** (seeds 000, 002, 004): p(x_k | c) = N(x_k; μ_kc, σ²_kc), with the
maximum-likelihood mean and variance (divisor n_kc, as scikit-learn's GaussianNB) plus a
variance floor. The floor is scikit-learn's ``var_smoothing`` rule: ε times the largest
variance v_k' of any numeric column over all training rows (classes pooled), added to
every class's variance; ε = 1e-9 by default. It is relative, so it means the same in any
unit; it keeps the density finite for a class whose values are all equal (n_kc = 1, say);
and it is derived from the same additive sums, so merged statistics give the same floor
as one fit. A numeric column whose pooled variance is 0 (one value in every row) cannot
tell classes apart and is left out of the product. A class with no value in column k is
given the column's pooled mean and variance (what is known without the class).

**Exact sums.** Every finite double is an integer multiple of 2^-1074 and its square an
integer multiple of 2^-2148, so S1 is kept as the Python integer S1 · 2^1074 and S2 as
S2 · 2^2148. Sums are then exact: the same for any order of the rows, and the statistics
of two tables add up to those of both (``merge``). They become floats only in
:meth:`GaussianStats.parameters`, computed exactly as fractions and rounded once:
σ² = (n·S2 − S1²) / n², so there is no cancellation either.

**Categorical columns** (seeds 002, 004): θ_kvc = (N_kvc + β) / (n_kc + L_k β) under the
posterior mean, seed 004's "l hallucinated examples spread evenly over all V values"
(β = l = 1 is Laplace smoothing); ``map`` and ``mle`` as for the multinomial text model
(:func:`nbclass.models.estimators.multinomial_fraction`, with L_k in place of V). A value not
seen in training has no θ: its factor is left out, as for a missing value.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import NbclassError
from .estimators import log_fraction, multinomial_fraction

X_SHIFT = 1074  # S1 is stored as S1 · 2^1074 (an integer for any sum of doubles)
XX_SHIFT = 2 * X_SHIFT  # S2 as S2 · 2^2148


def exact_units(x: float) -> tuple[int, int]:
    """(x · 2^1074, x² · 2^2148), both exact integers, for a finite double x.

    >>> exact_units(0.5) == (2**1073, 2**2146)
    True
    """
    p, q = x.as_integer_ratio()  # q = 2^e, e <= 1074
    e = q.bit_length() - 1
    return p << (X_SHIFT - e), (p * p) << (XX_SHIFT - 2 * e)


@dataclass(frozen=True, eq=False)
class GaussianStats:
    """Exact per-class sums of one numeric column.

    Attributes
    ----------
    count : ndarray of shape (C,), int64
        n_c, rows of class c with a value.
    sum_x : tuple of int, length C
        S1_c · 2^1074.
    sum_xx : tuple of int, length C
        S2_c · 2^2148.
    """

    count: np.ndarray
    sum_x: tuple[int, ...]
    sum_xx: tuple[int, ...]

    @classmethod
    def of(cls, values: Sequence[float | None], labels: Sequence[int], C: int) -> GaussianStats:
        """The sums of ``values`` (``None`` = missing) with class indices ``labels``."""
        count = [0] * C
        s1 = [0] * C
        s2 = [0] * C
        for x, c in zip(values, labels):
            if x is None:
                continue
            a, b = exact_units(x)
            count[c] += 1
            s1[c] += a
            s2[c] += b
        return cls(np.array(count, dtype=np.int64), tuple(s1), tuple(s2))

    def equals(self, other: GaussianStats) -> bool:
        return (
            np.array_equal(self.count, other.count)
            and self.sum_x == other.sum_x
            and self.sum_xx == other.sum_xx
        )

    def pooled(self) -> tuple[int, int, int]:
        """(n, S1 · 2^1074, S2 · 2^2148) over all classes."""
        return int(self.count.sum()), sum(self.sum_x), sum(self.sum_xx)

    def pooled_variance(self) -> float:
        """v_k, the variance of the column over all rows with a value (0 if none)."""
        return _moments(*self.pooled())[1]

    def problems(self, class_count: np.ndarray) -> list[str]:
        """What makes these sums impossible (empty when consistent)."""
        found = []
        if (self.count < 0).any() or (self.count > class_count).any():
            found.append("a numeric column has more values than its class has rows")
        for n, s1, s2 in zip(self.count.tolist(), self.sum_x, self.sum_xx):
            if n == 0 and (s1 or s2):
                found.append("a numeric column has sums but no values")
            elif s2 < 0 or s1 * s1 > n * s2:  # Cauchy–Schwarz: (Σx)² <= n Σx²
                found.append("a numeric column's sums are not those of any values")
            elif n and s2 >= n << (2048 + XX_SHIFT):  # every |x| < 2^1024
                found.append("a numeric column's sums exceed the range of doubles")
        if not found:
            problem = self.variance_problem()
            if problem:
                found.append(problem)
        return found

    def variance_problem(self) -> str | None:
        """What keeps the Gaussian of some class, or of the pooled values, from being
        scored in doubles (values near ±1e308: a variance, or a variance plus its floor,
        past the largest double); None when every one can be. Checked at fit, on every
        update and when a model file is read, so that predict never meets it."""
        try:
            variances = [_moments(*self.pooled())[1]] + [
                _moments(n, s1, s2)[1]
                for n, s1, s2 in zip(self.count.tolist(), self.sum_x, self.sum_xx)
            ]
        except NbclassError as exc:
            return str(exc)
        if max(variances) > sys.float_info.max / 2:  # σ² + floor, the floor <= max σ²
            return TOO_LARGE
        return None

    def parameters(self, floor: float) -> tuple[np.ndarray, np.ndarray]:
        """μ_c and σ²_c = s²_c + floor, each ndarray of shape (C,).

        A class with no value gets the pooled mean and variance.
        """
        pooled = _moments(*self.pooled())
        mean, var = [], []
        for n, s1, s2 in zip(self.count.tolist(), self.sum_x, self.sum_xx):
            m, v = _moments(n, s1, s2) if n else pooled
            mean.append(m)
            var.append(v + floor)
        return np.array(mean), np.array(var)


TOO_LARGE = "a numeric column's variance is too large for a double: rescale the column"


def _moments(n: int, s1: int, s2: int) -> tuple[float, float]:
    """Mean and variance (divisor n) from exact sums, each rounded once; (0, 0) if n = 0."""
    if n == 0:
        return 0.0, 0.0
    try:
        mean = s1 / (n << X_SHIFT)  # int / int is correctly rounded
        var = (n * s2 - s1 * s1) / ((n * n) << XX_SHIFT)
    except OverflowError:
        raise NbclassError(TOO_LARGE) from None
    return mean, var


def variance_floor(columns: Sequence[GaussianStats], var_smoothing: float) -> float:
    """ε · max_k v_k over the numeric columns (0 when there is none)."""
    return var_smoothing * max((g.pooled_variance() for g in columns), default=0.0)


def gaussian_log_likelihood(x: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """log N(x_i; μ_c, σ²_c), ndarray of shape (n, C); 0 where x_i is NaN (missing).

    Parameters
    ----------
    x : ndarray of shape (n,)
        One column's values, NaN where missing.
    mean, var : ndarray of shape (C,)

    Notes
    -----
    −½ log(2π σ²_c) − (x − μ_c)² / (2 σ²_c), written as scikit-learn's GaussianNB does.
    """
    present = ~np.isnan(x)
    out = np.zeros((x.shape[0], mean.shape[0]))
    xp = x[present, None]
    # With a tiny variance (a column whose values are all nearly equal) the squared
    # distance over σ² can exceed the largest double: the density is then below the
    # smallest positive double and its logarithm is −inf, the float nearest the truth.
    with np.errstate(over="ignore"):
        out[present] = -0.5 * np.log(2.0 * np.pi * var) - 0.5 * ((xp - mean) ** 2 / var)
    return out


@dataclass(frozen=True, eq=False)
class CategoricalStats:
    """Per-class value counts of one categorical column.

    Attributes
    ----------
    values : tuple of str, length L
        The values seen in training, sorted.
    count : ndarray of shape (L, C), int64
        N_vc, rows of class c with value v.
    """

    values: tuple[str, ...]
    count: np.ndarray

    @classmethod
    def of(cls, cells: Sequence[str | None], labels: Sequence[int], C: int) -> CategoricalStats:
        values = tuple(sorted({v for v in cells if v is not None}))
        index = {v: i for i, v in enumerate(values)}
        count = np.zeros((len(values), C), dtype=np.int64)
        for v, c in zip(cells, labels):
            if v is not None:
                count[index[v], c] += 1
        return cls(values, count)

    def equals(self, other: CategoricalStats) -> bool:
        return self.values == other.values and np.array_equal(self.count, other.count)

    def problems(self, class_count: np.ndarray) -> list[str]:
        found = []
        if (self.count < 0).any() or (self.count.sum(axis=0) > class_count).any():
            found.append("a categorical column has more values than its class has rows")
        if not all(map(str.__lt__, self.values[:-1], self.values[1:])):
            found.append("a categorical column's values are not sorted and unique")
        if any(v != v.strip() or not v or "\x00" in v for v in self.values):
            found.append("a categorical column holds an empty or unstripped value")
        return found

    def log_theta(self, estimator: str, beta: float) -> np.ndarray:
        """log θ_vc, ndarray of shape (L, C)."""
        N = self.count.astype(np.float64)
        L = N.shape[0]
        return log_fraction(*multinomial_fraction(N, N.sum(axis=0), L, estimator, beta))

    def indices(self, cells: Sequence[str | None]) -> np.ndarray:
        """Row of each cell's value in ``values``, shape (n,); −1 if missing or unseen."""
        index = {v: i for i, v in enumerate(self.values)}
        return np.fromiter((index.get(v, -1) for v in cells), dtype=np.int64, count=len(cells))


def categorical_log_likelihood(rows: np.ndarray, log_theta: np.ndarray) -> np.ndarray:
    """log θ_{x_i c}, ndarray of shape (n, C); 0 where ``rows`` is −1 (missing, unseen).

    Parameters
    ----------
    rows : ndarray of shape (n,)
        Value index per row (:meth:`CategoricalStats.indices`).
    log_theta : ndarray of shape (L, C)
    """
    out = np.zeros((rows.shape[0], log_theta.shape[1]))
    known = rows >= 0
    out[known] = log_theta[rows[known]]
    return out
