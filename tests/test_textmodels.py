"""Complement NB, the transforms, the Pólya predictive, the DCM and the prior fit.

Hand-computed fractions on the "Chinese Beijing" corpus (conftest.CHINESE):

- china (3 documents): T = chinese 5, beijing 1, macao 1, shanghai 1 (T_c = 8);
  D = chinese 3, beijing 1, macao 1, shanghai 1;
- japan (1 document): T = D = chinese 1, japan 1, tokyo 1 (T_c = 3);
- V = 6 words (beijing, chinese, japan, macao, shanghai, tokyo), N = 4.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
from conftest import CHINESE_TEST

from nbclass.counting.counts import as_table
from nbclass.errors import UsageError
from nbclass.modelfile.quick import QuickModel
from nbclass.modelfile.textfile import load, load_with_header, save
from nbclass.models.estimators import EstimatorSettings, Prepared
from nbclass.models.model import Classifier, fit
from nbclass.models.textmodels import idf_weights, prepare, resolve_prior, transformed_counts
from nbclass.reading.corpus import list_corpus

log = math.log


def softmax(b: list[float]) -> list[float]:
    top = max(b)
    total = sum(math.exp(v - top) for v in b)
    return [math.exp(v - top) / total for v in b]


@pytest.fixture
def chinese(chinese_corpus):
    return fit(list_corpus(str(chinese_corpus)))


def jll(fitted, text: str, **settings) -> list[float]:
    classifier = Classifier(fitted, EstimatorSettings(**settings))
    return classifier.joint_log_likelihood([text])[0].tolist()


def proba(fitted, text: str, **settings) -> list[float]:
    clf = Classifier(fitted, EstimatorSettings(**settings))
    return np.exp(clf.predict([text]).log_proba[0]).tolist()


# --- complement ---------------------------------------------------------------------------


def test_complement_by_hand(chinese):
    # Complement of china = japan's counts: θ̃ = chinese, japan, tokyo (1 + 1) / (3 + 6),
    # the others 1 / 9. Complement of japan = china's counts: chinese (5 + 1) / (8 + 6),
    # japan and tokyo 1 / 14. Without the class prior (scikit-learn's form):
    b_china = -(3 * log(2 / 9) + log(2 / 9) + log(2 / 9))
    b_japan = -(3 * log(6 / 14) + log(1 / 14) + log(1 / 14))
    plain = {"model": "complement", "class_prior": False}
    assert jll(chinese, CHINESE_TEST, **plain) == pytest.approx([b_china, b_japan], rel=1e-14)
    assert proba(chinese, CHINESE_TEST, **plain) == pytest.approx(
        softmax([b_china, b_japan]), rel=1e-12
    )
    # With it (Rennie et al.'s eq. 6): + log π_c, π = (3 + 1) / (4 + 2), (1 + 1) / (4 + 2)
    expected = [log(4 / 6) + b_china, log(2 / 6) + b_japan]
    assert jll(chinese, CHINESE_TEST, model="complement") == pytest.approx(expected, rel=1e-14)


def test_complement_weight_normalisation_by_hand(chinese):
    # w_jc = −log θ̃_jc / Σ_k |log θ̃_kc|
    sum_china = 3 * log(9 / 2) + 3 * log(9)
    sum_japan = log(14 / 6) + 3 * log(14 / 2) + 2 * log(14)
    b_china = 5 * log(9 / 2) / sum_china
    b_japan = (3 * log(14 / 6) + 2 * log(14)) / sum_japan
    assert jll(chinese, CHINESE_TEST, model="complement", norm="weight") == pytest.approx(
        [b_china, b_japan], rel=1e-14
    )


# --- transforms ---------------------------------------------------------------------------


def test_idf_and_log_tf_sums_by_hand(chinese):
    counts = chinese.counts
    assert idf_weights(as_table(counts.doc_count), counts.n_docs).tolist() == pytest.approx(
        [log(4), 0.0, log(4), log(4), log(4), log(4)], abs=1e-15
    )
    S = transformed_counts(counts, EstimatorSettings(tf="log"))
    # china: chinese is in 3 documents, 5 times: 3 log(1 + 5/3); every other pair is once.
    expected = [[log(2), 0], [3 * log(8 / 3), log(2)], [0, log(2)], [log(2), 0], [log(2), 0],
                [0, log(2)]]  # fmt: skip
    assert S.ravel().tolist() == pytest.approx(np.ravel(expected).tolist(), rel=1e-15)


def test_multinomial_with_log_tf_and_idf_by_hand(chinese):
    # Document features: chinese log(1 + 3)·idf 0 = 0, tokyo and japan log(2)·log(4) = L.
    # S_china = L for beijing, macao, shanghai (3L in all); S_japan = L for japan, tokyo.
    L = log(2) * log(4)
    theta_china = 1 / (3 * L + 6)  # tokyo and japan are not in china
    theta_japan = (L + 1) / (2 * L + 6)
    pi_china, pi_japan = 4 / 6, 2 / 6
    expected = [log(pi_china) + 2 * L * log(theta_china), log(pi_japan) + 2 * L * log(theta_japan)]
    got = jll(chinese, CHINESE_TEST, tf="log", idf=True)
    assert got == pytest.approx(expected, rel=1e-14)
    # Length normalisation divides the document's features by ‖t‖ = L√2.
    expected = [
        log(pi_china) + 2 / math.sqrt(2) * log(theta_china),
        log(pi_japan) + 2 / math.sqrt(2) * log(theta_japan),
    ]
    got = jll(chinese, CHINESE_TEST, tf="log", idf=True, norm="length")
    assert got == pytest.approx(expected, rel=1e-14)


def test_multinomial_weight_normalisation_drops_the_prior(chinese):
    # θ_china: chinese 6/14, beijing, macao, shanghai 2/14, japan, tokyo 1/14.
    sum_china = log(14 / 6) + 3 * log(14 / 2) + 2 * log(14)
    b_china = (3 * log(6 / 14) + 2 * log(1 / 14)) / sum_china
    # θ_japan: chinese, japan, tokyo 2/9, the others 1/9.
    sum_japan = 3 * log(9 / 2) + 3 * log(9)
    b_japan = 5 * log(2 / 9) / sum_japan
    assert jll(chinese, CHINESE_TEST, norm="weight") == pytest.approx(
        [b_china, b_japan], rel=1e-14
    )


def test_document_with_no_known_word_under_every_transform(chinese):
    # No feature, no prior (weight normalisation drops it): both classes equally likely.
    for model in ("multinomial", "complement"):
        p = proba(chinese, "nothing known", model=model, tf="log", idf=True, norm="both")
        assert p == [0.5, 0.5]


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"model": "bernoulli", "tf": "log"}, "--model bernoulli uses word presence"),
        ({"model": "complement", "estimator": "mle"}, "--model complement takes"),
        ({"norm": "weight", "estimator": "mle"}, "--norm weight divides"),
        ({"estimator": "predictive", "idf": True}, "--estimator predictive is the exact"),
        ({"prior_fit": True, "estimator": "map"}, "--prior-fit may choose"),
        ({"model": "complement", "beta": (1.0, 2.0)}, "complement model takes one --beta"),
    ],
)
def test_settings_that_make_no_sense_are_refused(settings, message):
    with pytest.raises(UsageError, match=message):
        EstimatorSettings(**settings).validate()


def test_old_files_without_the_new_fields_keep_their_meaning():
    old = {"model": "multinomial", "estimator": "map", "alpha": 2.0, "beta": [2.0, 2.0]}
    settings = EstimatorSettings.from_dict(old)
    assert settings == EstimatorSettings(model="multinomial", estimator="map", alpha=2.0,
                                         beta=(2.0, 2.0), tf="raw", idf=False, norm="none",
                                         prior_fit=False)  # fmt: skip
    assert EstimatorSettings.from_dict(settings.to_dict()) == settings


# --- the one-document path ------------------------------------------------------------------

QUICK = [
    EstimatorSettings(model="complement"),
    EstimatorSettings(model="complement", class_prior=False),
    EstimatorSettings(class_prior=False),
    EstimatorSettings(model="complement", beta=(0.1, 0.1)),
    EstimatorSettings(estimator="predictive"),
    EstimatorSettings(estimator="predictive", alpha=0.5, beta=(0.01, 0.01)),
    EstimatorSettings(model="bernoulli", estimator="predictive"),
]


@pytest.mark.parametrize("settings", QUICK, ids=str)
def test_quick_path_equals_batch_path(chinese, tmp_path, settings):
    path = str(tmp_path / "m.nbc")
    save(chinese, path)
    quick = QuickModel(path)
    assert quick.can_score(settings)
    batch = Classifier(chinese, settings)
    for text in [CHINESE_TEST, "", "unseen", "Tokyo Tokyo Tokyo Japan", "Beijing Chinese"]:
        expected = batch.joint_log_likelihood([text])[0].tolist()
        assert quick.joint_log_likelihood(text, settings) == pytest.approx(expected, rel=1e-12)


NEEDS_EVERY_COUNT = [
    EstimatorSettings(idf=True),
    EstimatorSettings(tf="log"),
    EstimatorSettings(model="complement", norm="weight"),
    EstimatorSettings(prior_fit=True),
]


def test_quick_path_declines_what_needs_every_count_but_the_defaults(chinese, tmp_path):
    """Only the file's default settings have their fitted β and class totals at hand."""
    path = str(tmp_path / "m.nbc")
    save(replace(chinese, defaults=EstimatorSettings(tf="log", prior_fit=True)), path)
    quick = QuickModel(path)
    for settings in NEEDS_EVERY_COUNT + [EstimatorSettings(model="dcm")]:
        assert not quick.can_score(settings)
    assert quick.can_score(EstimatorSettings(tf="log", prior_fit=True))
    assert not quick.can_score(EstimatorSettings(model="dcm", prior_fit=True))


PREPARED = [
    EstimatorSettings(model="complement", tf="log", prior_fit=True),
    EstimatorSettings(model="complement", tf="log", idf=True, norm="both", prior_fit=True),
    EstimatorSettings(model="complement", idf=True, norm="length", class_prior=False),
    EstimatorSettings(tf="log", idf=True, norm="weight"),
    EstimatorSettings(tf="log", estimator="mle", norm="length"),
    EstimatorSettings(tf="log", estimator="map", alpha=2.0, beta=(2.0, 2.0)),
    EstimatorSettings(prior_fit=True),
    EstimatorSettings(estimator="predictive", prior_fit=True),
    EstimatorSettings(model="bernoulli", prior_fit=True),
]


@pytest.mark.parametrize("settings", PREPARED, ids=str)
def test_quick_path_serves_the_default_settings_from_the_prepared_numbers(
    chinese, tmp_path, settings
):
    """A model's defaults that need every count: the header's fitted β and class totals."""
    path = str(tmp_path / "m.nbc")
    save(replace(chinese, defaults=settings), path)
    quick = QuickModel(path)
    assert quick.can_score(settings)
    batch = Classifier(load(path), settings)
    fresh = Classifier(chinese, settings)  # β fitted here, not read from the file
    for text in [CHINESE_TEST, "", "unseen", "Tokyo Tokyo Tokyo Japan", "Beijing Chinese"]:
        expected = batch.joint_log_likelihood([text])[0].tolist()
        assert fresh.joint_log_likelihood([text])[0].tolist() == expected
        assert quick.joint_log_likelihood(text, settings) == pytest.approx(expected, rel=1e-12)


def test_prepared_numbers_by_hand(chinese):
    """--tf log class totals S_c = Σ_j D_jc log(1 + T_jc / D_jc); complement: the others'."""
    china = 3 * log(1 + 5 / 3) + 3 * log(2)  # chinese, then beijing, macao, shanghai
    japan = 3 * log(2)
    plain = prepare(chinese.active_counts, EstimatorSettings(tf="log"))
    assert plain.beta is None and plain.weight_norms is None
    assert plain.class_totals == pytest.approx((china, japan), rel=1e-15)
    complement = prepare(chinese.active_counts, EstimatorSettings(model="complement", tf="log"))
    assert complement.class_totals == pytest.approx((japan, china), rel=1e-15)
    fitted = prepare(chinese.active_counts, EstimatorSettings(prior_fit=True))
    assert fitted.class_totals is None
    assert fitted.beta == resolve_prior(chinese.active_counts, fitted.settings).beta[0]
    assert prepare(chinese.active_counts, EstimatorSettings(model="complement")) is None


def test_prepared_numbers_are_in_the_header_and_checked(chinese, tmp_path):
    settings = EstimatorSettings(model="complement", tf="log", prior_fit=True)
    path = tmp_path / "m.nbc"
    save(replace(chinese, defaults=settings), str(path))
    _, header = load_with_header(str(path))
    expected = prepare(chinese.active_counts, settings)
    assert header["prepared"] == json.loads(json.dumps(expected.to_dict()))
    assert load(str(path)).prepared == expected
    with pytest.raises(ValueError, match="3 finite numbers"):
        Prepared.from_dict(header["prepared"], 3)
    bad = dict(header["prepared"], beta=-1.0)
    with pytest.raises(ValueError, match="β"):
        Prepared.from_dict(bad, 2)


# --- the command line ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        ["--model", "complement"],
        ["--model", "complement", "--tf", "log", "--idf", "--norm", "both"],
        ["--tf", "log", "--idf"],
        ["--estimator", "predictive"],
    ],
    ids=" ".join,
)
def test_cli_one_document_equals_a_folder_of_them(runner, chinese_corpus, tmp_path, options):
    from nbclass.cli.app import cli

    path = str(tmp_path / "m.nbc")
    assert runner.invoke(cli, ["fit", str(chinese_corpus), "-o", path, "-q"]).exit_code == 0
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text(CHINESE_TEST)
    (folder / "b.txt").write_text("Beijing Macao")
    many = runner.invoke(cli, ["predict", "-m", path, str(folder), "--format", "jsonl", *options])
    assert many.exit_code == 0, many.stderr
    one = runner.invoke(
        cli, ["predict", "-m", path, "--format", "jsonl", *options], input=CHINESE_TEST
    )
    assert one.exit_code == 0, one.stderr
    first = json.loads(many.stdout.splitlines()[0])
    single = json.loads(one.stdout)
    assert single["label"] == first["label"]
    for label, p in single["probabilities"].items():
        assert p == pytest.approx(first["probabilities"][label], rel=1e-12)


def test_cli_fit_stores_the_text_options(runner, chinese_corpus, tmp_path):
    from nbclass.cli.app import cli

    path = str(tmp_path / "m.nbc")
    options = ["--model", "complement", "--tf", "log", "--idf", "--norm", "weight", "--prior-fit"]
    result = runner.invoke(cli, ["fit", str(chinese_corpus), "-o", path, "-q", *options])
    assert result.exit_code == 0, result.stderr
    info = json.loads(runner.invoke(cli, ["info", "-m", path, "--format", "json"]).stdout)
    assert info["defaults"] == {
        "model": "complement",
        "estimator": "posterior-mean",
        "alpha": 1.0,
        "beta": [1.0, 1.0],
        "tf": "log",
        "idf": True,
        "norm": "weight",
        "prior_fit": True,
        "class_prior": True,
    }
    # predict overrides them without refitting; a combination that makes no sense is refused
    result = runner.invoke(cli, ["predict", "-m", path, "--no-idf", "--norm", "none"], input="x")
    assert result.exit_code == 0, result.stderr
    result = runner.invoke(cli, ["predict", "-m", path, "--model", "bernoulli", "--tf", "log"],
                           input="x")  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: --tf, --idf and --norm transform word counts")
    # Stored settings that cannot go with what is given fall back to the plain ones.
    # bernoulli keeps the prior fit (it can take it); mle cannot, nor the complement model.
    raw = ["--tf", "raw", "--no-idf", "--norm", "none"]
    for given, plain in (
        (["--model", "bernoulli"], raw),
        (["--estimator", "mle"], [*raw, "--no-prior-fit", "--model", "multinomial"]),
    ):
        fallback = runner.invoke(cli, ["predict", "-m", path, *given], input=CHINESE_TEST)
        explicit = runner.invoke(cli, ["predict", "-m", path, *given, *plain], input=CHINESE_TEST)
        assert fallback.exit_code == 0 and fallback.stdout == explicit.stdout


# --- the Pólya predictive ------------------------------------------------------------------


def test_predictive_is_a_product_of_sequential_fractions(chinese):
    # china: a = T + 1 (chinese 6, tokyo 1), A = 8 + 6 = 14; japan: a = 2 each, A = 3 + 6 = 9.
    # The second token's fraction counts the first: "Chinese Tokyo" under china is
    # 6/14 · 1/15 (the multinomial coefficient 2 is the same for both classes, left out).
    pi = [4 / 6, 2 / 6]
    got = jll(chinese, "Chinese Tokyo", estimator="predictive")
    expected = [log(pi[0]) + log(6 / 14) + log(1 / 15), log(pi[1]) + log(2 / 9) + log(2 / 10)]
    assert got == pytest.approx(expected, rel=1e-14)
    # A repeated word: its second occurrence counts the first (6/14 · 7/15, 2/9 · 3/10).
    got = jll(chinese, "Chinese Chinese", estimator="predictive")
    expected = [log(pi[0]) + log(6 / 14) + log(7 / 15), log(pi[1]) + log(2 / 9) + log(3 / 10)]
    assert got == pytest.approx(expected, rel=1e-14)
    # One token: the predictive is the posterior mean.
    assert jll(chinese, "Tokyo", estimator="predictive") == pytest.approx(
        jll(chinese, "Tokyo"), rel=1e-14
    )


# --- DCM -----------------------------------------------------------------------------------

# Class "a": two documents of 4 tokens (D: xx 2, yy 1, zz 1, vv 1, ww 1; D_c = 6, T_c = 8);
# class "b": one document of 3 tokens (D: xx 1, uu 1, T_c = 3: "uu" twice).
BURSTY = {"a": ["xx xx yy zz", "xx vv vv ww"], "b": ["uu xx uu"]}


@pytest.fixture
def bursty(tmp_path):
    from conftest import write_corpus

    return fit(list_corpus(str(write_corpus(tmp_path / "bursty", BURSTY))))


def test_dcm_concentration_by_hand():
    from nbclass.models.textmodels import dcm_concentration

    # ψ(s + 4) − ψ(s) = 1/s + 1/(s+1) + 1/(s+2) + 1/(s+3): the equation for class a,
    # s · [ψ(s + 4) − ψ(s)] = 6/2, is s/(s+1) + s/(s+2) + s/(s+3) = 2.
    s = dcm_concentration(3.0, 4.0)
    assert s / (s + 1) + s / (s + 2) + s / (s + 3) == pytest.approx(2.0, rel=1e-13)
    # class b: s · [1/s + 1/(s+1) + 1/(s+2)] = 2, i.e. s/(s+1) + s/(s+2) = 1: s = √2.
    assert dcm_concentration(2.0, 3.0) == pytest.approx(math.sqrt(2), rel=1e-13)
    # no repeated word: the multinomial limit
    assert dcm_concentration(4.0, 4.0) == 1e12


def _concentration_one_class(mean_distinct: float, mean_length: float) -> float:
    """The bisection of one class at a time, as dcm_concentration did it before the
    classes were searched together (Python floats, math.exp and scalar digamma)."""
    from scipy.special import digamma

    from nbclass.models.textmodels import S_MAX

    if mean_length <= 0 or mean_distinct >= mean_length:
        return S_MAX

    def excess(log_s):
        s = math.exp(log_s)
        return s * (digamma(s + mean_length) - digamma(s)) - mean_distinct

    low, high = math.log(1e-12), math.log(S_MAX)
    if excess(low) >= 0:
        return math.exp(low)
    if excess(high) <= 0:
        return S_MAX
    while True:
        middle = 0.5 * (low + high)
        if middle in (low, high):
            return math.exp(low if abs(excess(low)) <= abs(excess(high)) else high)
        if excess(middle) < 0:
            low = middle
        else:
            high = middle


def test_dcm_concentrations_of_every_class_at_once_are_those_of_each_alone():
    """The classes searched together (dcm_concentrations) give each class the float its
    own bisection gives, bit for bit: means of real lengths and of small integers, classes
    with no repeated word (S_MAX), with m̄ ≤ 1 (the smallest s), empty ones, and classes
    that stop after different numbers of halvings in one call."""
    from nbclass.models.textmodels import S_MAX, dcm_concentrations

    rng = np.random.default_rng(29)
    lengths = np.concatenate([rng.uniform(0, 500, 2000), rng.integers(0, 40, 400) * 1.0,
                              [0.0, 1.0, 4.0, 3.0, 4.0, 2.5]])  # fmt: skip
    distinct = np.concatenate([lengths[:2000] * rng.uniform(0, 1.1, 2000),
                               rng.integers(0, 40, 400) * 1.0,
                               [0.0, 0.5, 4.0, 2.0, 3.0, 1.0]])  # fmt: skip
    together = dcm_concentrations(distinct, lengths)
    pairs = zip(distinct.tolist(), lengths.tolist())
    alone = np.array([_concentration_one_class(d, n) for d, n in pairs])
    assert together.view(np.int64).tolist() == alone.view(np.int64).tolist()
    smallest = math.exp(math.log(1e-12))
    assert (together == S_MAX).sum() > 100 and (together == smallest).sum() >= 3
    assert 100 < np.unique(together).size
    assert dcm_concentrations(np.zeros(0), np.zeros(0)).shape == (0,)


def test_dcm_scores_by_hand(bursty):
    from nbclass.models.textmodels import dcm_concentration

    # vocabulary uu, vv, ww, xx, yy, zz (V = 6); β = 0.5; β_jc = s_c (D_jc + β) / (D_c + Vβ)
    s_a, s_b = dcm_concentration(3.0, 4.0), math.sqrt(2)
    beta_a = {"xx": s_a * (2 + 0.5) / (6 + 3), "uu": s_a * (0 + 0.5) / (6 + 3)}
    beta_b = {"xx": s_b * (1 + 0.5) / (2 + 3), "uu": s_b * (1 + 0.5) / (2 + 3)}
    pi = [(2 + 1) / (3 + 2), (1 + 1) / (3 + 2)]
    # "xx xx uu": n = 3 tokens, words xx and uu present (each counted once)
    expected = [
        log(pi[0]) + math.lgamma(s_a) - math.lgamma(s_a + 3) + log(beta_a["xx"] * beta_a["uu"]),
        log(pi[1]) + math.lgamma(s_b) - math.lgamma(s_b + 3) + log(beta_b["xx"] * beta_b["uu"]),
    ]
    assert jll(bursty, "xx xx uu", model="dcm", beta=(0.5, 0.5)) == pytest.approx(
        expected, rel=1e-13
    )


def test_dcm_is_elkans_maximum_likelihood_when_documents_have_equal_lengths(bursty):
    # Class a's documents both have 4 tokens, so the mean-length equation is Elkan's:
    # with β → 0 the concentration maximises the EDCM likelihood of the training documents.
    from nbclass.models.textmodels import dcm_parameters

    counts = bursty.counts
    log_beta, s = dcm_parameters(counts, 1e-12)
    a = counts.classes.index("a")
    p = {w: math.exp(log_beta[j, a]) / s[a] for j, w in enumerate(counts.vocabulary)}

    def likelihood(conc: float) -> float:
        total = 0.0
        for text in BURSTY["a"]:
            words = text.split()
            total += math.lgamma(conc) - math.lgamma(conc + len(words))
            total += sum(log(conc * p[w]) for w in set(words))
        return total

    best = likelihood(s[a])
    assert best > likelihood(s[a] * 1.001) and best > likelihood(s[a] / 1.001)


# --- prior fit -------------------------------------------------------------------------------


def brute_force_loo(documents: dict[str, list[str]], beta: float) -> float:
    """Leave each token out in turn and predict it from the rest of its class."""
    from collections import Counter

    vocabulary = {w for texts in documents.values() for t in texts for w in t.lower().split()}
    total = 0.0
    for texts in documents.values():
        tokens = Counter(w for t in texts for w in t.lower().split())
        T_c = sum(tokens.values())
        for count in tokens.values():
            for _ in range(count):
                total += log((count - 1 + beta) / (T_c - 1 + len(vocabulary) * beta))
    return total


def brute_force_bernoulli_loo(documents: dict[str, list[str]], beta: float) -> float:
    """Leave each document's presence bit of each word out; predict it from the others."""
    vocabulary = {w for texts in documents.values() for t in texts for w in t.lower().split()}
    total = 0.0
    for texts in documents.values():
        present = [set(t.lower().split()) for t in texts]
        for i, doc in enumerate(present):
            others = present[:i] + present[i + 1 :]
            for word in vocabulary:
                same = sum((word in o) == (word in doc) for o in others)
                total += log((same + beta) / (len(others) + 2 * beta))
    return total


@pytest.mark.parametrize("beta", [0.01, 0.3, 1.0, 7.0])
def test_leave_one_out_likelihood_equals_brute_force(chinese, beta):
    from conftest import CHINESE

    from nbclass.models.textmodels import loo_objective

    counts = chinese.counts
    assert float(loo_objective(counts, "multinomial")(beta)) == pytest.approx(
        brute_force_loo(CHINESE, beta), rel=1e-13
    )
    assert float(loo_objective(counts, "bernoulli")(beta)) == pytest.approx(
        brute_force_bernoulli_loo(CHINESE, beta), rel=1e-13
    )
    # complement: the same leave-one-out over each class's complement counts
    complement = {"china": CHINESE["japan"], "japan": CHINESE["china"]}
    assert float(loo_objective(counts, "complement")(beta)) == pytest.approx(
        brute_force_loo(complement, beta), rel=1e-13
    )


@pytest.mark.parametrize("model", ["multinomial", "complement", "dcm", "bernoulli"])
def test_fitted_beta_maximises_the_objective(bursty, chinese, model):
    from nbclass.models.textmodels import BETA_RANGE, fit_beta, loo_objective

    for fitted in (bursty, chinese):
        beta = fit_beta(fitted.counts, model)
        objective = loo_objective(fitted.counts, model)
        best = float(objective(beta))
        grid = np.exp(np.linspace(*np.log(BETA_RANGE), 4001))
        assert best >= objective(grid).max() - 1e-9
        if BETA_RANGE[0] < beta < BETA_RANGE[1]:
            assert best >= float(objective(beta * 1.001))
            assert best >= float(objective(beta / 1.001))


def test_prior_fit_scores_with_the_fitted_beta(chinese):
    from nbclass.models.textmodels import fit_beta

    beta = fit_beta(chinese.active_counts, "multinomial")
    assert jll(chinese, CHINESE_TEST, prior_fit=True) == jll(
        chinese, CHINESE_TEST, beta=(beta, beta)
    )
    # the chinese corpus: no word is seen once in a class but 'beijing', 'macao',
    # 'shanghai' (china) and 'japan', 'tokyo', 'chinese' (japan): an interior optimum
    assert 1e-4 < beta < 100


def test_explain_of_transformed_models_sums_to_the_log_odds():
    """--explain uses the transformed features: contributions + bias = the log-odds."""
    from conftest import DEMO_CORPUS

    from nbclass.models.estimators import EstimatorSettings
    from nbclass.models.explain import explanations, score_batch
    from nbclass.models.model import Classifier, fit
    from nbclass.reading.corpus import list_corpus

    model = fit(list_corpus(str(DEMO_CORPUS)))
    text = "refund my double charge, the invoice is wrong wrong wrong"
    for settings in (
        EstimatorSettings(model="complement", tf="log"),
        EstimatorSettings(tf="log", idf=True),
    ):
        classifier = Classifier(model, settings)
        scored = score_batch(classifier, [("-", text)])
        (explanation,) = explanations(classifier, scored, 100)
        total = sum(c for _, _, c in explanation["words"]) + explanation["bias"]
        assert total == pytest.approx(explanation["log_odds"], rel=1e-9)
        row = scored.log_proba[0]
        a = classifier.classes.index(explanation["versus"])
        assert explanation["log_odds"] == pytest.approx(row.max() - row[a], rel=1e-9)


def test_a_given_beta_replaces_the_fitted_one():
    fitted = EstimatorSettings(model="complement", tf="log", prior_fit=True)
    assert fitted.combined(beta=(1.0, 1.0)) == EstimatorSettings(model="complement", tf="log")
    assert fitted.combined(beta=(1.0, 1.0), prior_fit=True) == fitted
    assert fitted.combined(alpha=2.0).prior_fit


def test_mutual_information_under_prior_fit_uses_the_bernoulli_fitted_beta(chinese):
    """θ of the ranking is a presence probability: its β is fitted for the Bernoulli model."""
    from nbclass.models.selection import mutual_information, top_features
    from nbclass.models.textmodels import fit_beta

    counts = chinese.active_counts
    beta = fit_beta(counts, "bernoulli")
    assert beta != 1.0
    explicit = EstimatorSettings(model="complement", beta=(beta, beta))
    fitted = EstimatorSettings(model="complement", prior_fit=True)
    assert mutual_information(counts, fitted).tolist() == (
        mutual_information(counts, explicit).tolist()
    )
    assert top_features(counts, fitted, 4) == top_features(counts, explicit, 4)
    assert mutual_information(counts, fitted).tolist() != (
        mutual_information(counts, EstimatorSettings()).tolist()
    )


def test_complement_leave_one_out_from_the_nonzero_counts_equals_the_dense_one(news_sample):
    """The complement counts T̃_jc = T_j − T_jc are never formed: same L(β) as if they were."""
    from nbclass.models.textmodels import loo_objective, multinomial_loo

    train, _ = news_sample
    counts = fit(list_corpus(str(train))).active_counts
    T = as_table(counts.token_count)
    dense = T.sum(axis=1, keepdims=True) - T
    betas = np.array([1e-3, 0.05, 0.5, 1.0, 7.0])
    assert loo_objective(counts, "complement")(betas) == pytest.approx(
        multinomial_loo(dense, betas), rel=1e-12
    )


def test_the_loo_objective_of_a_histogram_is_its_formulas_floats():
    """The objective made from a histogram (its parts without β made once) gives the
    floats of Σ n · v · log(v − 1 + β) − Σ K_c · log(K_c − 1 + Vβ) written out, bit for
    bit, for one β (a Python float, as the golden-section search gives, a numpy float
    and a 0-d array) and for a grid of them."""
    from nbclass.models.textmodels import _loo_of_histogram

    rng = np.random.default_rng(11)
    for _ in range(200):
        k, C = int(rng.integers(1, 400)), int(rng.integers(1, 30))
        values = np.unique(rng.integers(1, 10**6, k)).astype(np.float64)
        n = rng.integers(1, 10**4, values.size).astype(np.float64)
        K_c = rng.integers(0, 10**7, C).astype(np.float64)
        V = int(rng.integers(1, 10**6))
        objective = _loo_of_histogram(values, n, K_c, V)
        kept = K_c[K_c > 0][:, None]
        one = rng.uniform(-10, 5)
        for beta in (math.exp(one), np.exp(one), np.exp(np.array(one)),
                     np.exp(np.linspace(-10, 5, 41))):  # fmt: skip
            flat = np.asarray(beta, dtype=np.float64).reshape(1, -1)
            words = (n[:, None] * values[:, None] * np.log(values[:, None] - 1 + flat)).sum(0)
            totals = (kept * np.log(kept - 1 + V * flat)).sum(axis=0)
            want = (words - totals).reshape(np.shape(beta))
            assert np.array_equal(np.asarray(objective(beta)).view(np.int64),
                                  want.view(np.int64))  # fmt: skip


def test_two_classes_complement_beta_is_the_multinomials_own_search_float_for_float():
    """Of two classes the complement counts are the counts with the classes swapped, so
    fit_beta gives complement the multinomial's β: the complement's own objective, made
    from its histogram of T_j − T_jc, is the multinomial's float for float (on the
    search's grid and at single β), and its own golden-section search finds the same β,
    for tables with empty words and classes, few and many distinct counts, int64 and
    the unsigned types of a loaded model. Three classes keep complement's own β."""
    from nbclass.counting.counts import Counts
    from nbclass.models.textmodels import _fit_beta, fit_beta, loo_objective

    rng = np.random.default_rng(2026)
    grid = np.exp(np.linspace(-9.0, 3.0, 41))
    for trial in range(150):
        C = 3 if trial % 10 == 9 else 2
        V = int(rng.integers(1, 200))
        top = int(rng.choice([2, 5, 50, 5000]))
        T = rng.integers(0, top, (V, C)) * (rng.random((V, C)) < rng.random())
        if trial % 7 == 0:
            T[:, 0] = 0  # a class without a token
        D = np.minimum(T, rng.integers(1, 30, (V, C))) * (T > 0)
        kind = np.uint16 if trial % 3 == 0 else np.int64
        N = np.maximum(D.max(axis=0), 1) + rng.integers(0, 5, C)
        counts = Counts(tuple("abc"[:C]), tuple(f"w{j}" for j in range(V)), N,
                        D.astype(kind), T.astype(kind))  # fmt: skip
        own = _fit_beta(counts, "complement")
        if C == 3:
            assert fit_beta(counts, "complement") == own
            continue
        assert fit_beta(counts, "complement") == own == _fit_beta(counts, "multinomial")
        complement, multinomial = (loo_objective(counts, m) for m in ("complement", "multinomial"))
        assert np.array_equal(complement(grid).view(np.int64), multinomial(grid).view(np.int64))
        for beta in grid[::4].tolist():
            assert np.array_equal(np.float64(complement(beta)).view(np.int64),
                                  np.float64(multinomial(beta)).view(np.int64))  # fmt: skip


def test_concentrations_made_side_by_side_are_each_counts_own():
    """primed_concentrations bisects the classes of several counts at once (the choice's
    DCM candidates of one fold): each counts gets the s_c of dcm_concentrations of its
    own classes alone, bit for bit, with S_MAX for a class without a document; and
    class_concentrations then hands back those floats."""
    from nbclass.counting.counts import Counts
    from nbclass.models.textmodels import (
        S_MAX,
        class_concentrations,
        dcm_concentrations,
        primed_concentrations,
    )

    rng = np.random.default_rng(23)
    many, wanted = [], []
    for _ in range(12):
        V, C = int(rng.integers(1, 60)), int(rng.integers(2, 9))
        N_c = rng.integers(0, 40, C)
        N_c[0] = max(N_c[0], 1)
        D = np.minimum(rng.integers(0, 40, (V, C)), N_c)
        T = D * rng.integers(1, 5, (V, C))
        counts = Counts(tuple(f"c{c}" for c in range(C)), tuple(f"w{j}" for j in range(V)),
                        N_c, D, T)  # fmt: skip
        has = N_c > 0
        s = np.full(C, S_MAX)
        s[has] = dcm_concentrations(D.sum(axis=0)[has] / N_c[has], T.sum(axis=0)[has] / N_c[has])
        many.append(counts)
        wanted.append(s)
    primed_concentrations(many)
    for counts, s in zip(many, wanted):
        assert class_concentrations(counts).view(np.int64).tolist() == s.view(np.int64).tolist()
