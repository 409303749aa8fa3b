"""The formulas of MATH.md on the "Chinese Beijing" corpus; probabilities as literal fractions.

Manning, Raghavan & Schütze, Introduction to Information Retrieval (2008), ch. 13, table 13.1.
Training documents (class china: d1-d3, class japan: d4)::

    d1 china  Chinese Beijing Chinese
    d2 china  Chinese Chinese Shanghai
    d3 china  Chinese Macao
    d4 japan  Tokyo Japan Chinese
    d5 ?      Chinese Chinese Chinese Tokyo Japan   (CHINESE_TEST)

Counted by hand (vocabulary sorted; columns china, japan):

    word      T_china T_japan  D_china D_japan
    beijing      1       0        1       0
    chinese      5       1        3       1
    japan        0       1        0       1
    macao        1       0        1       0
    shanghai     1       0        1       0
    tokyo        0       1        0       1
    T_c = (8, 3), N_c = (3, 1), N = 4, V = 6, C = 2.

The estimates below use α = 2, multinomial β = 2 and Bernoulli (β_1, β_0) = (2, 3), so that
every MAP estimate is defined, plus the textbook's own β = 1 in the textbook tests.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest
from conftest import CHINESE, CHINESE_TEST
from sklearn.metrics import mutual_info_score

from nbclass.counting.counts import as_table
from nbclass.errors import UsageError
from nbclass.models.estimators import (
    EstimatorSettings,
    bernoulli_fractions,
    bernoulli_weights,
    log_class_prior,
    log_fraction,
    multinomial_log_theta,
)
from nbclass.models.model import Classifier, fit
from nbclass.models.selection import mutual_information
from nbclass.reading.corpus import list_corpus

RTOL = 1e-12
WORDS = ("beijing", "chinese", "japan", "macao", "shanghai", "tokyo")
ESTIMATORS = ("mle", "map", "posterior-mean")
ALPHA = 2.0
BETA_MULTINOMIAL = (2.0, 2.0)
BETA_BERNOULLI = (2.0, 3.0)


def log(p: F) -> float:
    """log of an exact fraction; log 0 = −inf (without numpy's divide-by-zero warning)."""
    return -math.inf if p == 0 else math.log(p)


def logs(table) -> np.ndarray:
    return np.array([[log(p) for p in row] for row in table])


def normalise(scores: list[F]) -> list[F]:
    total = sum(scores)
    return [s / total for s in scores]


@pytest.fixture
def model(chinese_corpus):
    return fit(list_corpus(str(chinese_corpus)))


@pytest.fixture
def counts(model):
    return model.counts


# ---------------------------------------------------------------------------------------------
# Counts


def test_counts_of_the_textbook_corpus(counts):
    assert counts.classes == ("china", "japan")
    assert counts.vocabulary == WORDS
    assert counts.class_count.tolist() == [3, 1]
    assert counts.n_docs == 4
    assert as_table(counts.doc_count).tolist() == [[1, 0], [3, 1], [0, 1], [1, 0], [1, 0], [0, 1]]
    assert as_table(counts.token_count).tolist() == [
        [1, 0],
        [5, 1],
        [0, 1],
        [1, 0],
        [1, 0],
        [0, 1],
    ]
    assert counts.class_tokens.tolist() == [8, 3]
    assert counts.class_count.dtype == np.int64
    assert as_table(counts.doc_count).dtype == np.int64
    assert as_table(counts.token_count).dtype == np.int64
    assert counts.problems() == []


# ---------------------------------------------------------------------------------------------
# Estimates: π, θ for every estimator and event model (MATH.md, "Estimators")

# π_c, columns china, japan; α = 2, C = 2, N = 4.
PI = {
    "mle": [F(3, 4), F(1, 4)],
    "map": [F(3 + 2 - 1, 4 + 2 * 2 - 2), F(1 + 2 - 1, 4 + 2 * 2 - 2)],
    "posterior-mean": [F(3 + 2, 4 + 2 * 2), F(1 + 2, 4 + 2 * 2)],
}

# Multinomial θ_jc: rows beijing, chinese, japan, macao, shanghai, tokyo; columns china, japan.
# β = 2, V = 6, T_c = (8, 3).
THETA_MULTINOMIAL = {
    "mle": [
        [F(1, 8), F(0, 3)],
        [F(5, 8), F(1, 3)],
        [F(0, 8), F(1, 3)],
        [F(1, 8), F(0, 3)],
        [F(1, 8), F(0, 3)],
        [F(0, 8), F(1, 3)],
    ],
    "map": [
        [F(1 + 1, 8 + 6), F(0 + 1, 3 + 6)],
        [F(5 + 1, 8 + 6), F(1 + 1, 3 + 6)],
        [F(0 + 1, 8 + 6), F(1 + 1, 3 + 6)],
        [F(1 + 1, 8 + 6), F(0 + 1, 3 + 6)],
        [F(1 + 1, 8 + 6), F(0 + 1, 3 + 6)],
        [F(0 + 1, 8 + 6), F(1 + 1, 3 + 6)],
    ],
    "posterior-mean": [
        [F(1 + 2, 8 + 12), F(0 + 2, 3 + 12)],
        [F(5 + 2, 8 + 12), F(1 + 2, 3 + 12)],
        [F(0 + 2, 8 + 12), F(1 + 2, 3 + 12)],
        [F(1 + 2, 8 + 12), F(0 + 2, 3 + 12)],
        [F(1 + 2, 8 + 12), F(0 + 2, 3 + 12)],
        [F(0 + 2, 8 + 12), F(1 + 2, 3 + 12)],
    ],
}

# Bernoulli θ_jc = p(word j present | c); (β_1, β_0) = (2, 3), N_c = (3, 1).
THETA_BERNOULLI = {
    "mle": [
        [F(1, 3), F(0, 1)],
        [F(3, 3), F(1, 1)],
        [F(0, 3), F(1, 1)],
        [F(1, 3), F(0, 1)],
        [F(1, 3), F(0, 1)],
        [F(0, 3), F(1, 1)],
    ],
    "map": [
        [F(1 + 1, 3 + 3), F(0 + 1, 1 + 3)],
        [F(3 + 1, 3 + 3), F(1 + 1, 1 + 3)],
        [F(0 + 1, 3 + 3), F(1 + 1, 1 + 3)],
        [F(1 + 1, 3 + 3), F(0 + 1, 1 + 3)],
        [F(1 + 1, 3 + 3), F(0 + 1, 1 + 3)],
        [F(0 + 1, 3 + 3), F(1 + 1, 1 + 3)],
    ],
    "posterior-mean": [
        [F(1 + 2, 3 + 5), F(0 + 2, 1 + 5)],
        [F(3 + 2, 3 + 5), F(1 + 2, 1 + 5)],
        [F(0 + 2, 3 + 5), F(1 + 2, 1 + 5)],
        [F(1 + 2, 3 + 5), F(0 + 2, 1 + 5)],
        [F(1 + 2, 3 + 5), F(0 + 2, 1 + 5)],
        [F(0 + 2, 3 + 5), F(1 + 2, 1 + 5)],
    ],
}

# 1 − θ_jc written from its own numerator, (N_c − D_jc + β_0 [− 1]) / denominator.
NOT_THETA_BERNOULLI = {
    "mle": [
        [F(2, 3), F(1, 1)],
        [F(0, 3), F(0, 1)],
        [F(3, 3), F(0, 1)],
        [F(2, 3), F(1, 1)],
        [F(2, 3), F(1, 1)],
        [F(3, 3), F(0, 1)],
    ],
    "map": [
        [F(2 + 2, 3 + 3), F(1 + 2, 1 + 3)],
        [F(0 + 2, 3 + 3), F(0 + 2, 1 + 3)],
        [F(3 + 2, 3 + 3), F(0 + 2, 1 + 3)],
        [F(2 + 2, 3 + 3), F(1 + 2, 1 + 3)],
        [F(2 + 2, 3 + 3), F(1 + 2, 1 + 3)],
        [F(3 + 2, 3 + 3), F(0 + 2, 1 + 3)],
    ],
    "posterior-mean": [
        [F(2 + 3, 3 + 5), F(1 + 3, 1 + 5)],
        [F(0 + 3, 3 + 5), F(0 + 3, 1 + 5)],
        [F(3 + 3, 3 + 5), F(0 + 3, 1 + 5)],
        [F(2 + 3, 3 + 5), F(1 + 3, 1 + 5)],
        [F(2 + 3, 3 + 5), F(1 + 3, 1 + 5)],
        [F(3 + 3, 3 + 5), F(0 + 3, 1 + 5)],
    ],
}


def assert_log_equal(actual, expected_log):
    """Equal within RTOL, with −inf exactly where expected."""
    actual = np.asarray(actual, dtype=np.float64)
    expected_log = np.asarray(expected_log, dtype=np.float64)
    assert not np.isnan(actual).any()
    np.testing.assert_array_equal(np.isneginf(actual), np.isneginf(expected_log))
    np.testing.assert_allclose(actual, expected_log, rtol=RTOL, atol=0)


def test_not_theta_table_is_one_minus_theta():
    # The two hand-written Bernoulli tables agree with each other.
    for estimator in ESTIMATORS:
        for theta_row, not_row in zip(
            THETA_BERNOULLI[estimator], NOT_THETA_BERNOULLI[estimator], strict=True
        ):
            assert [1 - t for t in theta_row] == not_row


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_log_class_prior(counts, estimator):
    log_pi = log_class_prior(counts.class_count, estimator, ALPHA)
    assert log_pi.shape == (2,)
    assert_log_equal(log_pi, [log(p) for p in PI[estimator]])


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_multinomial_log_theta(counts, estimator):
    log_theta = multinomial_log_theta(as_table(counts.token_count), estimator, BETA_MULTINOMIAL[0])
    assert log_theta.shape == (6, 2)
    assert_log_equal(log_theta, logs(THETA_MULTINOMIAL[estimator]))


def bernoulli_log_theta(doc_count, class_count, estimator, beta):
    """log θ_jc and log(1 − θ_jc) from the library's fractions, each (V, C); a class whose
    denominator is 0 gives its words θ = 0: log θ = −inf, log(1 − θ) = 0."""
    present, absent, denominator = bernoulli_fractions(doc_count, class_count, estimator, beta)
    log_theta = log_fraction(present, denominator)
    log_not_theta = log_fraction(absent, denominator)
    log_not_theta[:, np.asarray(denominator) <= 0] = 0.0
    return log_theta, log_not_theta


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_bernoulli_log_theta(counts, estimator):
    log_theta, log_not_theta = bernoulli_log_theta(
        as_table(counts.doc_count), counts.class_count, estimator, BETA_BERNOULLI
    )
    assert log_theta.shape == log_not_theta.shape == (6, 2)
    assert_log_equal(log_theta, logs(THETA_BERNOULLI[estimator]))
    assert_log_equal(log_not_theta, logs(NOT_THETA_BERNOULLI[estimator]))


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_bernoulli_weights_are_the_log_odds_of_theta(counts, estimator):
    # w_jc = log(θ_jc / (1 − θ_jc)) from the hand fractions; θ = 1: weight 0, certain;
    # θ = 0: −inf.
    weights, certain = bernoulli_weights(
        as_table(counts.doc_count), counts.class_count, estimator, BETA_BERNOULLI
    )
    theta, not_theta = THETA_BERNOULLI[estimator], NOT_THETA_BERNOULLI[estimator]
    expected = [
        [0.0 if q == 0 else (-math.inf if p == 0 else log(p / q)) for p, q in zip(*rows)]
        for rows in zip(theta, not_theta)
    ]
    assert certain.tolist() == [[q == 0 for q in row] for row in not_theta]
    assert_log_equal(weights, expected)


def test_laplace_smoothing_of_the_textbook(counts):
    # IIR 13.2: P(Chinese|c) = (5 + 1) / (8 + 6) = 3/7,
    # P(Tokyo|c) = P(Japan|c) = (0 + 1) / (8 + 6),
    # P(Chinese|j) = P(Tokyo|j) = P(Japan|j) = (1 + 1) / (3 + 6) = 2/9.
    log_theta = multinomial_log_theta(as_table(counts.token_count), "posterior-mean", 1.0)
    chinese, japan, tokyo = WORDS.index("chinese"), WORDS.index("japan"), WORDS.index("tokyo")
    assert_log_equal(log_theta[chinese], [log(F(5 + 1, 8 + 6)), log(F(1 + 1, 3 + 6))])
    assert_log_equal(log_theta[tokyo], [log(F(0 + 1, 8 + 6)), log(F(1 + 1, 3 + 6))])
    assert_log_equal(log_theta[japan], [log(F(0 + 1, 8 + 6)), log(F(1 + 1, 3 + 6))])
    assert F(5 + 1, 8 + 6) == F(3, 7)


# ---------------------------------------------------------------------------------------------
# Posterior p(y | x) of the test document d5 = Chinese×3 Tokyo Japan


def hand_posterior(model_name: str, estimator: str) -> list[F]:
    """p(y | d5) from the literal tables: π_c Π_j p(x_j | c), normalised."""
    pi = PI[estimator]
    row = {w: j for j, w in enumerate(WORDS)}
    scores = []
    for c in range(2):
        if model_name == "multinomial":
            theta = [r[c] for r in THETA_MULTINOMIAL[estimator]]
            score = pi[c] * theta[row["chinese"]] ** 3 * theta[row["tokyo"]] * theta[row["japan"]]
        else:
            theta = [r[c] for r in THETA_BERNOULLI[estimator]]
            not_theta = [r[c] for r in NOT_THETA_BERNOULLI[estimator]]
            score = (
                pi[c]
                * theta[row["chinese"]]
                * theta[row["tokyo"]]
                * theta[row["japan"]]
                * not_theta[row["beijing"]]
                * not_theta[row["macao"]]
                * not_theta[row["shanghai"]]
            )
        scores.append(score)
    return normalise(scores)


def settings_for(model_name: str, estimator: str) -> EstimatorSettings:
    beta = BETA_MULTINOMIAL if model_name == "multinomial" else BETA_BERNOULLI
    return EstimatorSettings(model=model_name, estimator=estimator, alpha=ALPHA, beta=beta)


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("model_name", ["multinomial", "bernoulli"])
def test_posterior_of_the_test_document(model, model_name, estimator):
    predictions = Classifier(model, settings_for(model_name, estimator)).predict([CHINESE_TEST])
    expected = hand_posterior(model_name, estimator)
    assert predictions.classes == ("china", "japan")
    assert_log_equal(predictions.log_proba[0], [log(p) for p in expected])
    np.testing.assert_allclose(
        np.exp(predictions.log_proba[0]), [float(p) for p in expected], rtol=RTOL, atol=0
    )


def test_hand_posteriors_worked_out():
    # A few of the hand products in closed form, so a slip in the tables above shows here.
    # posterior-mean multinomial: china 5/8 (7/20)^3 (2/20)^2, japan 3/8 (3/15)^5.
    china = F(5, 8) * F(7, 20) ** 3 * F(2, 20) ** 2
    japan = F(3, 8) * F(3, 15) ** 5
    assert hand_posterior("multinomial", "posterior-mean") == [
        china / (china + japan),
        japan / (china + japan),
    ]
    # MAP Bernoulli: china 4/6 (4/6)(1/6)(1/6) (4/6)^3, japan 2/6 (2/4)(2/4)(2/4) (3/4)^3.
    china = F(4, 6) * F(4, 6) * F(1, 6) * F(1, 6) * F(4, 6) ** 3
    japan = F(2, 6) * F(2, 4) ** 3 * F(3, 4) ** 3
    assert hand_posterior("bernoulli", "map") == [
        china / (china + japan),
        japan / (china + japan),
    ]


@pytest.mark.parametrize("model_name", ["multinomial", "bernoulli"])
def test_mle_black_swan_makes_china_impossible(model, model_name):
    # Under mle, "tokyo" and "japan" were never seen in china: θ = 0, so p(china | d5) is
    # exactly 0 and p(japan | d5) exactly 1 (not 1 - 1e-300, not NaN, no log(0) warning).
    predictions = Classifier(model, EstimatorSettings(model=model_name, estimator="mle")).predict(
        [CHINESE_TEST]
    )
    assert predictions.log_proba[0].tolist() == [-math.inf, 0.0]
    assert np.exp(predictions.log_proba[0]).tolist() == [0.0, 1.0]
    assert predictions.best.tolist() == [1]


def test_textbook_multinomial_example(model):
    # IIR example 13.1 uses π = N_c / N = 3/4, 1/4 with Laplace θ. nbclass's posterior-mean
    # prior is (N_c + α) / (N + Cα), which no α > 0 turns into 3/4; with α = 1 it is 4/6, 2/6.
    clf = Classifier(model, EstimatorSettings(model="multinomial", alpha=1.0, beta=(1.0, 1.0)))
    jll = clf.joint_log_likelihood([CHINESE_TEST])[0]
    china = F(3 + 1, 4 + 2) * F(5 + 1, 8 + 6) ** 3 * F(0 + 1, 8 + 6) * F(0 + 1, 8 + 6)
    japan = F(1 + 1, 4 + 2) * F(1 + 1, 3 + 6) ** 3 * F(1 + 1, 3 + 6) * F(1 + 1, 3 + 6)
    assert_log_equal(jll, [log(china), log(japan)])
    assert_log_equal(
        clf.predict([CHINESE_TEST]).log_proba[0],
        [log(china / (china + japan)), log(japan / (china + japan))],
    )
    # The textbook's own numbers: swap log π for log(3/4), log(1/4) and the products are
    # 3/4 (3/7)^3 (1/14)(1/14) ≈ 0.0003 and 1/4 (2/9)^3 (2/9)(2/9) ≈ 0.0001: china wins.
    log_pi = log_class_prior(model.counts.class_count, "posterior-mean", 1.0)
    textbook = np.exp(jll - log_pi + [log(F(3, 4)), log(F(1, 4))])
    book_china = F(3, 4) * F(3, 7) ** 3 * F(1, 14) * F(1, 14)
    book_japan = F(1, 4) * F(2, 9) ** 3 * F(2, 9) * F(2, 9)
    np.testing.assert_allclose(textbook, [float(book_china), float(book_japan)], rtol=RTOL)
    assert round(float(book_china), 4) == 0.0003
    assert round(float(book_japan), 4) == 0.0001
    assert clf.predict([CHINESE_TEST]).best.tolist() == [0]


def test_textbook_bernoulli_example(model):
    # IIR example 13.2: P(Chinese|c) = 4/5, P(Japan|c) = P(Tokyo|c) = 1/5,
    # P(Beijing|c) = P(Macao|c) = P(Shanghai|c) = 2/5; P(Chinese|j) = P(Japan|j) = P(Tokyo|j)
    # = 2/3, the other three 1/3. With π = 3/4, 1/4: ≈ 0.005 for china, ≈ 0.022 for japan.
    clf = Classifier(model, EstimatorSettings(model="bernoulli", alpha=1.0, beta=(1.0, 1.0)))
    jll = clf.joint_log_likelihood([CHINESE_TEST])[0]
    china = F(4, 5) * F(1, 5) * F(1, 5) * (1 - F(2, 5)) ** 3
    japan = F(2, 3) * F(2, 3) * F(2, 3) * (1 - F(1, 3)) ** 3
    assert_log_equal(jll, [log(F(4, 6) * china), log(F(2, 6) * japan)])
    log_pi = log_class_prior(model.counts.class_count, "posterior-mean", 1.0)
    textbook = np.exp(jll - log_pi + [log(F(3, 4)), log(F(1, 4))])
    np.testing.assert_allclose(
        textbook, [float(F(3, 4) * china), float(F(1, 4) * japan)], rtol=RTOL
    )
    assert round(float(F(3, 4) * china), 3) == 0.005
    assert round(float(F(1, 4) * japan), 3) == 0.022
    assert clf.predict([CHINESE_TEST]).best.tolist() == [1]


# ---------------------------------------------------------------------------------------------
# Bernoulli scoring: the sparse decomposition equals the seed's dense formula

DOCUMENTS = [
    *CHINESE["china"],
    *CHINESE["japan"],
    CHINESE_TEST,
    "",
    "Beijing Tokyo",
    "Osaka Kyoto",  # unseen words only
    "Chinese",
]


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_bernoulli_sparse_scores_equal_dense_formula(model, estimator):
    settings = settings_for("bernoulli", estimator)
    clf = Classifier(model, settings)
    jll = clf.joint_log_likelihood(DOCUMENTS)
    counts = model.counts
    log_pi = log_class_prior(counts.class_count, estimator, ALPHA)
    log_theta, log_not_theta = bernoulli_log_theta(
        as_table(counts.doc_count), counts.class_count, estimator, BETA_BERNOULLI
    )
    # Seed 000's algorithm: L_c = log π_c + Σ_j [x_j log θ_jc + (1 − x_j) log(1 − θ_jc)],
    # written with an if so that 0 · (−inf) never arises.
    expected = np.empty((len(DOCUMENTS), 2))
    for i, text in enumerate(DOCUMENTS):
        present = set(text.lower().split())
        for c in range(2):
            total = float(log_pi[c])
            for j, word in enumerate(WORDS):
                x_j = 1 if word in present else 0
                total += float(log_theta[j, c]) if x_j else float(log_not_theta[j, c])
            expected[i, c] = total
    assert_log_equal(jll, expected)


def test_bernoulli_dense_formula_by_hand_for_an_empty_document(model):
    # x = 0: b_c = log π_c + Σ_j log(1 − θ_jc), posterior-mean with (β_1, β_0) = (2, 3).
    jll = Classifier(model, settings_for("bernoulli", "posterior-mean")).joint_log_likelihood([""])
    china = F(5, 8) * F(2 + 3, 8) * F(0 + 3, 8) * F(3 + 3, 8) * F(2 + 3, 8) ** 2 * F(3 + 3, 8)
    japan = F(3, 8) * F(1 + 3, 6) * F(0 + 3, 6) * F(0 + 3, 6) * F(1 + 3, 6) ** 2 * F(0 + 3, 6)
    assert_log_equal(jll[0], [log(china), log(japan)])


# ---------------------------------------------------------------------------------------------
# Mutual information (MATH.md, "Feature selection by mutual information")


def mi_formula(pi: list[F], theta: list[F]) -> float:
    """I_j = Σ_c [θ_jc π_c log(θ_jc/θ_j) + (1 − θ_jc) π_c log((1 − θ_jc)/(1 − θ_j))].

    Exact fractions inside the logs; 0 · log 0 = 0.
    """
    theta_j = sum(p * t for p, t in zip(pi, theta, strict=True))
    total = 0.0
    for p, t in zip(pi, theta, strict=True):
        if t > 0:
            total += float(t * p) * math.log(t / theta_j)
        if t < 1:
            total += float((1 - t) * p) * math.log((1 - t) / (1 - theta_j))
    return total


def test_mutual_information_mle_by_hand(counts):
    I = mutual_information(counts, EstimatorSettings(estimator="mle"))
    assert I.shape == (6,)
    # chinese is in every document: independent of the label, I = 0 exactly.
    assert I[WORDS.index("chinese")] == 0.0
    # tokyo is present exactly in the japan documents: I = H(Y) = 3/4 log(4/3) + 1/4 log 4.
    tokyo = F(3, 4) * 1 * math.log(F(1, 1) / F(3, 4)) + F(1, 4) * 1 * math.log(F(1, 1) / F(1, 4))
    # beijing: θ = (1/3, 0), π = (3/4, 1/4), θ_j = 3/4 · 1/3 = 1/4.
    beijing = (
        float(F(1, 3) * F(3, 4)) * math.log(F(1, 3) / F(1, 4))
        + float(F(2, 3) * F(3, 4)) * math.log(F(2, 3) / F(3, 4))
        + float(F(1, 1) * F(1, 4)) * math.log(F(1, 1) / F(3, 4))
    )
    np.testing.assert_allclose(I[WORDS.index("tokyo")], float(tokyo), rtol=RTOL)
    np.testing.assert_allclose(I[WORDS.index("japan")], float(tokyo), rtol=RTOL)
    np.testing.assert_allclose(I[WORDS.index("beijing")], beijing, rtol=RTOL)
    np.testing.assert_allclose(
        I[WORDS.index("beijing")], mi_formula([F(3, 4), F(1, 4)], [F(1, 3), F(0, 1)]), rtol=RTOL
    )


def test_mutual_information_posterior_mean_by_hand(counts):
    # α = 1, (β_1, β_0) = (1, 1): π = (3 + 1)/(4 + 2), (1 + 1)/(4 + 2);
    # θ = (D + 1)/(N_c + 2): china /5, japan /3.
    I = mutual_information(counts, EstimatorSettings(estimator="posterior-mean"))
    pi = [F(3 + 1, 4 + 2), F(1 + 1, 4 + 2)]
    expected = {
        "beijing": [F(1 + 1, 3 + 2), F(0 + 1, 1 + 2)],
        "chinese": [F(3 + 1, 3 + 2), F(1 + 1, 1 + 2)],
        "tokyo": [F(0 + 1, 3 + 2), F(1 + 1, 1 + 2)],
    }
    for word, theta in expected.items():
        np.testing.assert_allclose(I[WORDS.index(word)], mi_formula(pi, theta), rtol=RTOL)
    # chinese written out in full: θ_j = 4/6 · 4/5 + 2/6 · 2/3 = 34/45.
    assert pi[0] * F(4, 5) + pi[1] * F(2, 3) == F(34, 45)
    chinese = (
        float(F(4, 5) * F(4, 6)) * math.log(F(4, 5) / F(34, 45))
        + float(F(1, 5) * F(4, 6)) * math.log(F(1, 5) / F(11, 45))
        + float(F(2, 3) * F(2, 6)) * math.log(F(2, 3) / F(34, 45))
        + float(F(1, 3) * F(2, 6)) * math.log(F(1, 3) / F(11, 45))
    )
    np.testing.assert_allclose(I[WORDS.index("chinese")], chinese, rtol=RTOL)
    assert I[WORDS.index("chinese")] > 0  # smoothing makes it slightly informative


def test_mutual_information_mle_equals_sklearn_empirical_mi(counts):
    # Independent check: with mle, I_j is the empirical MI of (word j present, label).
    labels = [0, 0, 0, 1]
    texts = [*CHINESE["china"], *CHINESE["japan"]]
    I = mutual_information(counts, EstimatorSettings(estimator="mle"))
    for j, word in enumerate(WORDS):
        presence = [int(word in text.lower().split()) for text in texts]
        np.testing.assert_allclose(
            I[j], mutual_info_score(labels, presence), rtol=1e-12, atol=1e-15
        )


# ---------------------------------------------------------------------------------------------
# Settings that cannot work are refused, never clamped


@pytest.mark.parametrize(
    "settings",
    [
        EstimatorSettings(estimator="map", alpha=0.5),
        EstimatorSettings(estimator="map", beta=(0.5, 0.5)),
        EstimatorSettings(model="bernoulli", estimator="map", beta=(1.0, 0.99)),
        EstimatorSettings(model="bernoulli", estimator="map", beta=(0.0, 2.0)),
    ],
)
def test_map_with_pseudo_count_below_one_is_refused(settings):
    with pytest.raises(UsageError, match="map"):
        settings.validate()


def test_map_with_pseudo_counts_of_one_is_accepted():
    settings = EstimatorSettings(model="bernoulli", estimator="map", alpha=1.0, beta=(1.0, 1.0))
    assert settings.validate() is settings


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_multinomial_with_two_betas_is_refused(estimator):
    with pytest.raises(UsageError, match="multinomial"):
        EstimatorSettings(model="multinomial", estimator=estimator, beta=(1.0, 2.0)).validate()


def test_classifier_refuses_invalid_settings(model):
    with pytest.raises(UsageError):
        Classifier(model, EstimatorSettings(estimator="map", alpha=0.5))


def test_bernoulli_absent_total_is_the_sum_of_each_values_term_float_for_float():
    """bernoulli_absent_total's terms n · (log(1 − θ numerator) − log(denominator)) are
    those of bernoulli_fraction value by value (the same numerator, the same float;
    math.fsum of them), and the words with θ = 1 counted, for every estimator, priors
    below, at and above 1, NaN and infinite ones, and document counts above N_c."""
    from nbclass.models.estimators import bernoulli_absent_total, bernoulli_fraction

    def by_each_value(histogram, N_c, estimator, beta):
        denominator = bernoulli_fraction(0, N_c, estimator, beta)[2]
        if denominator <= 0:
            return 0.0, 0
        terms, certain = [], 0
        for d, n in histogram:
            absent = bernoulli_fraction(d, N_c, estimator, beta)[1]
            if absent <= 0:
                certain += n
            else:
                terms.append(n * (math.log(absent) - math.log(denominator)))
        return math.fsum(terms), certain

    rng = np.random.default_rng(13)
    priors = [(1.0, 1.0), (0.3, 0.7), (2.5, 0.25), (1.0, 0.5), (0.5, math.nan),
              (1.0, math.inf), (1e-9, 1e-9)]  # fmt: skip
    for _ in range(300):
        N_c = int(rng.integers(0, 60))
        values = np.unique(rng.integers(0, N_c + 3, int(rng.integers(1, 40)))).tolist()
        histogram = [(d, int(rng.integers(1, 10**6))) for d in values]
        for estimator in ESTIMATORS:
            for beta in priors:
                got = bernoulli_absent_total(histogram, N_c, estimator, beta)
                want = by_each_value(histogram, N_c, estimator, beta)
                assert type(got[1]) is int and got[1] == want[1]
                assert np.array_equal(np.float64(got[0]).view(np.int64),
                                      np.float64(want[0]).view(np.int64)), (estimator, beta)
