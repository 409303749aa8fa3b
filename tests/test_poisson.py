"""--model poisson on the "Chinese Beijing" corpus: every estimator against hand fractions.

Counts (tests/test_maths.py): T_china = beijing 1, chinese 5, macao 1, shanghai 1 (T_c = 8),
T_japan = chinese 1, japan 1, tokyo 1 (T_c = 3); N_c = (3, 1); V = 6. The test document
d5 = chinese ×3, tokyo, japan has length ℓ = 5, the exposure e of every word.

Model (docs/maths.md): x_j | c ~ Poisson(λ_jc ℓ), λ_jc ~ Gamma(β, Vβ). With β = 2, α = 2:

    posterior-mean  λ = (T_jc + 2) / (T_c + 12)     π = (N_c + 2) / 8
    map             λ = (T_jc + 1) / (T_c + 12)     π = (N_c + 1) / 6
    mle             λ = T_jc / T_c                  π = N_c / 4
    predictive      negative binomial with a' = T_jc + 2, b' = T_c + 12, e = ℓ = 5

The expected values below sum over all V words with the full probability mass function
(absent words included, each its own factor), not with the closed forms nbclass uses.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest
from conftest import CHINESE_TEST

from nbclass.errors import UsageError
from nbclass.models.estimators import EstimatorSettings
from nbclass.models.model import Classifier, fit
from nbclass.models.posterior import log_evidence
from nbclass.reading.corpus import list_corpus

WORDS = ("beijing", "chinese", "japan", "macao", "shanghai", "tokyo")
T = {"china": (1, 5, 0, 1, 1, 0), "japan": (0, 1, 1, 0, 0, 1)}
N_C = {"china": 3, "japan": 1}
X = (0, 3, 1, 0, 0, 1)  # d5 over WORDS
ELL = sum(X)
V, ALPHA, BETA = 6, 2, 2


def rate(c: str, j: int, estimator: str) -> F:
    T_jc, T_c = T[c][j], sum(T[c])
    if estimator == "mle":
        return F(T_jc, T_c)
    if estimator == "map":
        return F(T_jc + BETA - 1, T_c + V * BETA)
    return F(T_jc + BETA, T_c + V * BETA)


def prior(c: str, estimator: str) -> F:
    if estimator == "mle":
        return F(N_C[c], 4)
    if estimator == "map":
        return F(N_C[c] + ALPHA - 1, 4 + 2 * ALPHA - 2)
    return F(N_C[c] + ALPHA, 4 + 2 * ALPHA)


def log(p: F) -> float:
    return -math.inf if p == 0 else math.log(p)


def plug_in_log_joint(c: str, estimator: str) -> float:
    """log π_c + Σ_j log Poisson(x_j; λ_jc ℓ) over all six words, minus the class-free
    ℓ log ℓ − Σ_j log x_j!: the product of λ^x / x! is exact, e^{−λℓ} summed word by word."""
    product = prior(c, estimator)
    for j, x in enumerate(X):
        product *= (rate(c, j, estimator) * ELL) ** x / math.factorial(x)
    exposure = sum(rate(c, j, estimator) * ELL for j in range(V))  # absent words too
    class_free = ELL * math.log(ELL) - sum(math.log(math.factorial(x)) for x in X)
    return log(product) - float(exposure) - class_free


def rising(a: int, x: int) -> int:
    """Γ(a + x) / Γ(a) = a (a + 1) … (a + x − 1)."""
    return math.prod(range(a, a + x))


def predictive_joint(c: str) -> F:
    """π_c Π_j NB(x_j; a', b', e = ℓ), the whole pmf of every word, an exact fraction."""
    b = sum(T[c]) + V * BETA
    p = prior(c, "posterior-mean")
    for j, x in enumerate(X):
        a = T[c][j] + BETA
        p *= F(rising(a, x), math.factorial(x)) * F(b, b + ELL) ** a * F(ELL, b + ELL) ** x
    return p


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from conftest import CHINESE, write_corpus

    root = write_corpus(tmp_path_factory.mktemp("chinese"), CHINESE)
    return fit(list_corpus(str(root)))


def settings(estimator: str) -> EstimatorSettings:
    return EstimatorSettings(
        model="poisson", estimator=estimator, alpha=ALPHA, beta=(BETA, BETA)
    ).validate()


def scores(model, estimator: str) -> tuple[np.ndarray, np.ndarray, float]:
    classifier = Classifier(model, settings(estimator))
    jll = classifier.joint_log_likelihood([CHINESE_TEST])
    return jll[0], classifier.predict([CHINESE_TEST]).log_proba[0], float(log_evidence(jll)[0])


def test_the_test_document_counts():
    assert dict(zip(WORDS, X)) == {w: CHINESE_TEST.lower().split().count(w) for w in WORDS}


@pytest.mark.parametrize("estimator", ["posterior-mean", "map"])
def test_plug_in_posterior_and_evidence_by_hand(model, estimator):
    jll, log_proba, evidence = scores(model, estimator)
    expected = [plug_in_log_joint(c, estimator) for c in ("china", "japan")]
    # the joint up to one shared constant: nbclass leaves out ℓ log ℓ − Σ log x_j! too
    assert jll.tolist() == pytest.approx(expected, rel=1e-12)
    top = max(expected)
    log_total = top + math.log(sum(math.exp(e - top) for e in expected))
    assert log_proba.tolist() == pytest.approx([e - log_total for e in expected], rel=1e-12)
    assert evidence == pytest.approx(log_total, rel=1e-12)


def test_map_rates_sum_below_one_per_class(model):
    # Λ_c = Σ_j (T_jc + 1) / (T_c + 12): china 14/20, japan 9/15; the −ℓΛ_c term differs
    assert sum(rate("china", j, "map") for j in range(V)) == F(7, 10)
    assert sum(rate("japan", j, "map") for j in range(V)) == F(3, 5)
    jll, _, _ = scores(model, "map")
    china = log(F(4, 6) * F(6, 20) ** 3 * F(1, 20) * F(1, 20)) - 5 * 0.7
    japan = log(F(2, 6) * F(2, 15) ** 3 * F(2, 15) * F(2, 15)) - 5 * 0.6
    assert (jll[0] - jll[1]) == pytest.approx(china - japan, rel=1e-12)


def test_posterior_mean_posterior_is_an_exact_fraction(model):
    # Λ_c = 1 for both classes: the e^{−ℓ} cancel and the posterior is rational
    _, log_proba, _ = scores(model, "posterior-mean")
    china = F(5, 8) * F(7, 20) ** 3 * F(2, 20) * F(2, 20)
    japan = F(3, 8) * F(3, 15) ** 3 * F(3, 15) * F(3, 15)
    assert np.exp(log_proba).tolist() == pytest.approx(
        [float(china / (china + japan)), float(japan / (china + japan))], rel=1e-12
    )


def test_mle_black_swan_and_equal_to_the_multinomial(model):
    # tokyo and japan were never seen in china: λ = 0 and china is impossible
    jll, log_proba, evidence = scores(model, "mle")
    assert jll[0] == -math.inf and log_proba.tolist() == [-math.inf, 0.0]
    expected = plug_in_log_joint("japan", "mle")
    assert jll[1] == pytest.approx(expected, rel=1e-12)
    assert evidence == pytest.approx(expected, rel=1e-12)
    multinomial = Classifier(model, EstimatorSettings(estimator="mle"))
    text = "Chinese Chinese Beijing"  # possible for both; Λ_c = 1, so the multinomial's odds
    assert Classifier(model, settings("mle")).predict([text]).log_proba[0] == pytest.approx(
        multinomial.predict([text]).log_proba[0], rel=1e-12
    )


def test_negative_binomial_predictive_by_hand(model):
    jll, log_proba, evidence = scores(model, "predictive")
    china, japan = predictive_joint("china"), predictive_joint("japan")
    total = china + japan
    assert np.exp(log_proba).tolist() == pytest.approx(
        [float(china / total), float(japan / total)], rel=1e-12
    )
    class_free = ELL * math.log(ELL) - sum(math.log(math.factorial(x)) for x in X)
    assert jll.tolist() == pytest.approx([log(china) - class_free, log(japan) - class_free])
    assert evidence == pytest.approx(log(total) - class_free, rel=1e-12)


def test_empty_document_gets_the_class_prior(model):
    for estimator in ("posterior-mean", "map", "mle", "predictive"):
        jll = Classifier(model, settings(estimator)).joint_log_likelihood(["unseen words"])[0]
        pi = "posterior-mean" if estimator == "predictive" else estimator
        assert jll.tolist() == pytest.approx([log(prior(c, pi)) for c in ("china", "japan")])


def test_poisson_refuses_transforms_and_map_below_one():
    with pytest.raises(UsageError, match="--model poisson models the raw counts"):
        EstimatorSettings(model="poisson", tf="log").validate()
    with pytest.raises(UsageError, match="--estimator map needs"):
        EstimatorSettings(model="poisson", estimator="map", beta=(0.5, 0.5)).validate()


@pytest.mark.parametrize(
    "options",
    [("--model", "poisson", "--estimator", "predictive"), ("--model", "dcm"),
     ("--model", "multinomial", "--estimator", "predictive")],
)  # fmt: skip
def test_table_text_columns_refuse_the_scorers_that_are_not_linear(runner, tmp_path, options):
    from conftest import REPO

    from nbclass.cli.app import cli

    model = tmp_path / "t.nbc"
    table = REPO / "corpora" / "table-demo.csv"
    fitted = runner.invoke(
        cli, ["fit", "--table", str(table), "--label", "team", "-o", str(model), "-q",
              "--model", "poisson"],
    )  # fmt: skip
    assert fitted.exit_code == 0, fitted.stderr
    new = REPO / "corpora" / "table-new.csv"
    ok = runner.invoke(cli, ["predict", "-m", str(model), "--table", str(new)])
    assert ok.exit_code == 0 and ok.stdout.count("\n") == 3
    result = runner.invoke(cli, ["predict", "-m", str(model), "--table", str(new), *options])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("Error: the text columns of a table model need a linear")
