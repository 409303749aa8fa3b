"""Numeric and categorical columns: hand fractions, exact sums, and scikit-learn's GaussianNB
and CategoricalNB on the same data (priors, var_smoothing and alpha matched) to 1e-9."""

from __future__ import annotations

import math
import random
import sys
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.naive_bayes import CategoricalNB, GaussianNB

from nbclass.models.columns import (
    TOO_LARGE,
    CategoricalStats,
    GaussianStats,
    categorical_log_likelihood,
    exact_units,
    gaussian_log_likelihood,
    variance_floor,
)
from nbclass.models.estimators import log_class_prior
from nbclass.models.posterior import log_posterior

FAST = settings(max_examples=60, deadline=None, database=None)
ATOL = 1e-9
FINITE = st.floats(allow_nan=False, allow_infinity=False)


# --- exact sums ---------------------------------------------------------------------------


@FAST
@given(st.lists(FINITE, max_size=12))
def test_sums_are_exact_fractions(values):
    stats = GaussianStats.of(values, [0] * len(values), 1)
    assert F(stats.sum_x[0], 2**1074) == sum(map(F, values), F(0))
    assert F(stats.sum_xx[0], 2**2148) == sum((F(x) ** 2 for x in values), F(0))
    # consistent sums; only a variance past half the largest double is refused (fit and
    # the loader alike: it could not be scored with its floor added)
    variance = F(stats.sum_xx[0], 2**2148) / max(len(values), 1) - (
        F(stats.sum_x[0], 2**1074) / max(len(values), 1)
    ) ** 2
    expected = [TOO_LARGE] if variance > F(sys.float_info.max) / 2 else []
    assert stats.problems(np.array([len(values)])) == expected


@FAST
@given(st.lists(st.tuples(FINITE, st.integers(0, 2)), max_size=12), st.randoms())
def test_sums_do_not_depend_on_row_order(rows, rnd):
    shuffled = list(rows)
    rnd.shuffle(shuffled)
    a = GaussianStats.of([x for x, _ in rows], [c for _, c in rows], 3)
    b = GaussianStats.of([x for x, _ in shuffled], [c for _, c in shuffled], 3)
    assert a.equals(b)


def test_float_sums_would_not_be_exact_but_these_are():
    values = [1e16, 1.0, -1e16]  # a float sum gives 0.0 or 2.0 depending on the order
    stats = GaussianStats.of(values, [0, 0, 0], 1)
    assert stats.sum_x[0] == 1 << 1074
    mean, var = stats.parameters(0.0)
    assert mean[0] == float(F(1, 3))
    exact_var = (F(10**32) * 2 + 1) / 3 - F(1, 9)
    assert var[0] == float(exact_var)


def test_exact_units_of_the_smallest_and_largest_doubles():
    tiny = 5e-324  # 2^-1074
    assert exact_units(tiny) == (1, 1)
    big = 1.7976931348623157e308
    a, b = exact_units(big)
    assert F(a, 2**1074) == F(big) and F(b, 2**2148) == F(big) ** 2


# --- hand-computed estimates --------------------------------------------------------------


def test_gaussian_mean_variance_and_floor_by_hand():
    # class 0: 1, 2, 3 (mean 2, variance 2/3); class 1: 10 alone (variance 0); one missing
    stats = GaussianStats.of([1.0, 2.0, None, 3.0, 10.0], [0, 0, 1, 0, 1], 2)
    assert stats.count.tolist() == [3, 1]
    pooled = F(1 + 4 + 9 + 100, 4) - F(16, 4) ** 2  # variance of 1, 2, 3, 10
    floor = variance_floor([stats], 1e-9)
    assert floor == 1e-9 * float(pooled)
    mean, var = stats.parameters(floor)
    assert mean.tolist() == [2.0, 10.0]
    assert var.tolist() == [float(F(2, 3)) + floor, 0.0 + floor]
    x = np.array([2.0, np.nan])
    ll = gaussian_log_likelihood(x, mean, var)
    assert ll[0, 0] == pytest.approx(-0.5 * math.log(2 * math.pi * (2 / 3 + floor)), abs=1e-15)
    assert ll[1].tolist() == [0.0, 0.0]  # missing: the factor is left out


def test_a_class_without_values_gets_the_pooled_gaussian():
    stats = GaussianStats.of([1.0, 3.0, None], [0, 0, 1], 2)
    mean, var = stats.parameters(0.5)
    assert mean.tolist() == [2.0, 2.0]
    assert var.tolist() == [1.5, 1.5]


def test_categorical_theta_by_hand_with_hallucinated_examples():
    # colour: class 0 saw red, red, blue; class 1 saw green; L = 3 values
    stats = CategoricalStats.of(["red", "red", "blue", "green", None], [0, 0, 0, 1, 1], 2)
    assert stats.values == ("blue", "green", "red")
    theta = np.exp(stats.log_theta("posterior-mean", 1.0))
    expected = [
        [F(1 + 1, 3 + 3), F(0 + 1, 1 + 3)],  # blue
        [F(0 + 1, 3 + 3), F(1 + 1, 1 + 3)],  # green
        [F(2 + 1, 3 + 3), F(0 + 1, 1 + 3)],  # red
    ]
    assert np.allclose(theta, np.array(expected, dtype=float), rtol=0, atol=1e-15)
    theta_half = np.exp(stats.log_theta("posterior-mean", 0.5))
    assert theta_half[2, 0] == pytest.approx(float(F(2 * 2 + 1, 2 * 3 + 3)), abs=1e-15)
    theta_mle = np.exp(stats.log_theta("mle", 1.0))
    assert theta_mle[:, 0].tolist() == pytest.approx([1 / 3, 0.0, 2 / 3], abs=1e-15)


def test_unseen_and_missing_categories_leave_the_factor_out():
    stats = CategoricalStats.of(["a", "b"], [0, 1], 2)
    rows = stats.indices(["a", None, "zebra"])
    assert rows.tolist() == [0, -1, -1]
    ll = categorical_log_likelihood(rows, stats.log_theta("posterior-mean", 1.0))
    assert ll[0].tolist() == pytest.approx([math.log(2 / 3), math.log(1 / 3)], abs=1e-15)
    assert ll[1:].tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_impossible_sums_are_named():
    bad = GaussianStats(np.array([1]), (2 << 1074,), (1 << 2148,))  # (Σx)² > n Σx²
    assert bad.problems(np.array([1])) == ["a numeric column's sums are not those of any values"]
    too_many = GaussianStats(np.array([3]), (0,), (0,))
    assert too_many.problems(np.array([2]))
    assert CategoricalStats(("b", "a"), np.zeros((2, 1), np.int64)).problems(np.array([0]))


# --- scikit-learn -------------------------------------------------------------------------


def _labels(n: int, C: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = np.concatenate([np.arange(C), rng.integers(0, C, n - C)])  # every class present
    rng.shuffle(y)
    return y


@pytest.mark.parametrize("var_smoothing", [1e-9, 1e-3])
def test_gaussian_equals_scikit_learn_gaussiannb(var_smoothing):
    rng = np.random.default_rng(0)
    n, C = 120, 3
    y = _labels(n, C, 1)
    X = rng.normal(size=(n, 4)) * [1.0, 10.0, 0.01, 1e4] + y[:, None] * [0.5, 3.0, 0.0, 1e3]
    X_test = rng.normal(size=(40, 4)) * [1.0, 10.0, 0.01, 1e4]
    stats = [GaussianStats.of(X[:, k].tolist(), y.tolist(), C) for k in range(4)]
    floor = variance_floor(stats, var_smoothing)
    log_pi = log_class_prior(np.bincount(y), "posterior-mean", 1.0)
    jll = log_pi + sum(
        gaussian_log_likelihood(X_test[:, k], *stats[k].parameters(floor)) for k in range(4)
    )
    reference = GaussianNB(priors=np.exp(log_pi), var_smoothing=var_smoothing).fit(X, y)
    assert reference.epsilon_ == pytest.approx(floor, rel=1e-12)
    for k in range(4):
        mean, var = stats[k].parameters(floor)
        assert np.allclose(reference.theta_[:, k], mean, rtol=1e-12, atol=0)
        assert np.allclose(reference.var_[:, k], var, rtol=1e-12, atol=0)
    proba = np.exp(log_posterior(jll))
    assert np.allclose(proba, reference.predict_proba(X_test), rtol=0, atol=ATOL)
    assert np.allclose(log_posterior(jll), reference.predict_log_proba(X_test), rtol=0, atol=1e-9)


@pytest.mark.parametrize("beta", [1.0, 0.3])
def test_categorical_equals_scikit_learn_categoricalnb(beta):
    rnd = random.Random(2)
    n, C = 150, 3
    y = _labels(n, C, 3)
    alphabets = [["low", "mid", "high"], list("abcdefg"), ["yes", "no"]]
    columns = [
        [
            rnd.choice(alphabet[: 1 + (c + i) % len(alphabet)] if i else alphabet)
            for i, c in enumerate(y.tolist())
        ]
        for alphabet in alphabets
    ]
    stats = [CategoricalStats.of(col, y.tolist(), C) for col in columns]
    # scikit-learn wants integer codes: each value's index in nbclass's sorted values
    X = np.array([s.indices(col) for s, col in zip(stats, columns)]).T
    assert (X >= 0).all()
    test_cells = [[rnd.choice(s.values) for _ in range(30)] for s in stats]
    X_test = np.array([s.indices(col) for s, col in zip(stats, test_cells)]).T
    log_pi = log_class_prior(np.bincount(y), "posterior-mean", 1.0)
    parts = [
        categorical_log_likelihood(s.indices(col), s.log_theta("posterior-mean", beta))
        for s, col in zip(stats, test_cells)
    ]
    jll = log_pi + sum(parts)
    reference = CategoricalNB(alpha=beta, class_prior=np.exp(log_pi)).fit(X, y)
    for k, s in enumerate(stats):
        assert np.allclose(
            reference.feature_log_prob_[k], s.log_theta("posterior-mean", beta).T, atol=1e-12
        )
    assert np.allclose(np.exp(log_posterior(jll)), reference.predict_proba(X_test), atol=ATOL)
