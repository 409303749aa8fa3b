"""Evidence for every model, typicality percentiles from cross-validation folds, and
predict --min-typicality (docs/novelty.md)."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest
from conftest import CHINESE_TEST, NAMED, REPO, write_corpus
from hypothesis import given, settings
from hypothesis import strategies as st

from nbclass.cli.app import cli
from nbclass.evaluation.judging import stratified_folds
from nbclass.modelfile.textfile import load, load_with_header
from nbclass.models.estimators import EstimatorSettings
from nbclass.models.model import Classifier, fit
from nbclass.models.novelty import PERCENTILES, out_of_fold_evidence, percentiles, threshold
from nbclass.models.posterior import log_evidence
from nbclass.reading.corpus import Corpus, list_corpus
from nbclass.text.vectorizer import TextCounter

DEMO = REPO / "corpora" / "demo"
ODD_LINE = "ERROR 503 upstream dns tls 502 latency disk database timeout 503 502"


def jsonl(runner, *args, input=None):
    result = runner.invoke(cli, ["predict", *map(str, args), "--format", "jsonl"], input=input)
    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


# --- log_evidence for every model ---------------------------------------------------------


@pytest.fixture
def chinese_default(runner, chinese_corpus, tmp_path):
    """The Chinese corpus under complement, log tf (not generative)."""
    path = tmp_path / "default.nbc"
    options = ["fit", str(chinese_corpus), "-o", str(path), "-q", *NAMED]
    assert runner.invoke(cli, options).exit_code == 0
    return path


def test_a_complement_model_gives_the_multinomial_evidence_by_hand(runner, chinese_default):
    # multinomial posterior mean, α = 1, β = 1: π = (N_c + 1)/6, θ = (T_jc + 1)/(T_c + 6)
    def pi(N_c):
        return F(N_c + 1, 6)

    def theta(T_jc, T_c):
        return F(T_jc + 1, T_c + 6)

    evidence = pi(3) * theta(5, 8) ** 3 * theta(0, 8) ** 2 + pi(1) * theta(1, 3) ** 5
    assert load(str(chinese_default)).defaults.model == "complement"
    for extra in ((), ("--explain", "1")):  # the one-document path, then the batch path
        (record,) = jsonl(runner, "-m", chinese_default, *extra, input=CHINESE_TEST)
        assert record["evidence_model"] == "multinomial"
        assert record["log_evidence"] == pytest.approx(math.log(evidence), rel=1e-14)


def test_a_bernoulli_model_gives_its_own_evidence_by_hand(runner, chinese_default):
    # present: chinese, japan, tokyo; θ = (D_jc + 1)/(N_c + 2); π = (N_c + 1)/6
    def theta(D_jc, N_c):
        return F(D_jc + 1, N_c + 2)

    china = F(4, 6) * theta(3, 3) * theta(0, 3) ** 2 * (1 - theta(1, 3)) ** 3
    japan = F(2, 6) * theta(1, 1) ** 3 * (1 - theta(0, 1)) ** 3
    args = ("--model", "bernoulli", "--beta", "1", "--alpha", "1")
    for extra in ((), ("--explain", "1")):
        (record,) = jsonl(runner, "-m", chinese_default, *args, *extra, input=CHINESE_TEST)
        assert record["evidence_model"] == "bernoulli"
        assert record["log_evidence"] == pytest.approx(math.log(china + japan), rel=1e-14)


# --- out-of-fold evidence: count subtraction equals a refit ---------------------------------

SMALL = {
    "ham": ["meet me at noon", "lunch at noon today", "see you at lunch", "call me today",
            "noon meeting moved"],
    "spam": ["win cash now", "cash prize win today", "claim your prize now", "free cash",
             "win a free prize"],
    "news": ["the market fell today", "rain at noon", "the team won the cup", "market news",
             "cup final today"],
}  # fmt: skip


@pytest.mark.parametrize(
    "settings",
    [
        EstimatorSettings(),
        EstimatorSettings(estimator="map", alpha=2.0, beta=(2.0, 2.0)),
        EstimatorSettings(beta=(0.3, 0.3), class_prior=False),
        EstimatorSettings(model="bernoulli", beta=(0.5, 2.0)),
        EstimatorSettings(model="poisson", estimator="predictive"),
        EstimatorSettings(model="dcm"),
        EstimatorSettings(estimator="predictive", prior_fit=True),
    ],
    ids=lambda s: f"{s.model}-{s.estimator}",
)
def test_out_of_fold_evidence_equals_a_refit_without_the_fold(tmp_path, settings):
    root = write_corpus(tmp_path / "small", SMALL)
    corpus = list_corpus(str(root))
    model = fit(corpus, defaults=settings)
    texts = [Path(p).read_text(encoding="utf-8") for p in corpus.paths]
    X, _ = TextCounter(model.tokenizer, model.active_counts.vocabulary).count(texts)
    labels = np.asarray(corpus.labels)
    folds = stratified_folds(corpus, 3)
    got = out_of_fold_evidence(model.active_counts, X, labels, folds, settings)
    for f, rows in enumerate(folds):
        keep = sorted(set(range(len(texts))) - set(rows.tolist()))
        paths, kept_labels = [corpus.paths[i] for i in keep], [int(labels[i]) for i in keep]
        rest = Corpus(corpus.classes, paths, kept_labels)
        refit = Classifier(fit(rest, defaults=settings), settings)
        Xr, _ = refit.count([texts[i] for i in rows])
        known = np.asarray(Xr.sum(axis=1)).ravel()
        evidence = log_evidence(refit.scorer.joint_log_likelihood(Xr))
        for i, k, e in zip(rows.tolist(), known.tolist(), evidence.tolist()):
            if k == 0:
                assert math.isnan(got[i])
            else:
                assert got[i] == pytest.approx(e / k, rel=1e-12), (f, i)


# --- fit --typicality ------------------------------------------------------------------------


@pytest.fixture
def demo_model(runner, tmp_path):
    path = tmp_path / "demo.nbc"
    options = ["fit", str(DEMO), "-o", str(path), "--typicality", "-q", *NAMED]
    result = runner.invoke(cli, options)
    assert result.exit_code == 0, result.stderr
    return path


def test_the_record_is_the_percentiles_of_the_out_of_fold_values(demo_model):
    model, header = load_with_header(str(demo_model))
    record = header["typicality"]
    assert model.typicality == record
    assert (record["documents"], record["folds"]) == (42, 5)  # 14 per class: 5 folds
    corpus = list_corpus(str(DEMO))
    texts = [Path(p).read_text(encoding="utf-8") for p in corpus.paths]
    counts = model.active_counts
    X, _ = TextCounter(model.tokenizer, counts.vocabulary).count(texts)
    expected = out_of_fold_evidence(
        counts, X, np.asarray(corpus.labels), stratified_folds(corpus, 5),
        EstimatorSettings(model="multinomial"),
    )  # fmt: skip
    assert record["percentiles"] == np.percentile(expected, range(101)).tolist()


def test_threshold_interpolates_between_whole_percentiles():
    record = {"percentiles": [float(-10 + i / 10) for i in range(101)]}
    assert threshold(record, 0) == -10.0
    assert threshold(record, 100) == 0.0
    assert threshold(record, 50) == pytest.approx(-5.0)
    assert threshold(record, 12.5) == pytest.approx(-10 + 1.25)


def test_planted_documents_are_unlike_training_and_tickets_are_not(runner, demo_model):
    odd = [ODD_LINE, "vat tls admin password 502 refund dns"]
    for text in odd:
        (plain,) = jsonl(runner, "-m", demo_model, "--min-probability", "0.3", input=text)
        (record,) = jsonl(
            runner, "-m", demo_model, "--min-probability", "0.3", "--min-typicality", "1",
            input=text,
        )  # fmt: skip
        assert plain["reason"] is None and record["reason"] == "unlike-training"
        assert record["label"] == "unsure"
    records = jsonl(
        runner, "-m", demo_model, REPO / "corpora" / "demo-docs", REPO / "corpora" / "demo-test",
        "--min-typicality", "1",
    )  # fmt: skip
    assert len(records) == 15 and all(r["reason"] is None for r in records)


def test_one_document_and_batch_paths_agree(runner, demo_model, tmp_path):
    texts = [ODD_LINE, "my card was charged twice", "please reset my password", "", "zzz"]
    for i, text in enumerate(texts):
        folder = tmp_path / f"d{i}"
        folder.mkdir()
        (folder / "t.txt").write_text(text, encoding="utf-8")
        args = ("-m", demo_model, "--min-typicality", "5", "--min-known", "1")
        (one,) = jsonl(runner, *args, folder / "t.txt")
        (batch,) = jsonl(runner, *args, folder)
        assert (one["reason"], one["evidence_model"]) == (batch["reason"], batch["evidence_model"])
        assert one["log_evidence"] == pytest.approx(batch["log_evidence"], rel=1e-12, abs=1e-15)


def test_the_record_does_not_survive_a_change_of_counts(runner, demo_model, tmp_path):
    updated, pruned = tmp_path / "updated.nbc", tmp_path / "pruned.nbc"
    runner.invoke(cli, ["fit", str(REPO / "corpora" / "demo-test"), "--update", str(demo_model),
                        "-o", str(updated), "-q"])  # fmt: skip
    runner.invoke(cli, ["select-features", "-m", str(demo_model), "-k", "50", "-o", str(pruned),
                        "-q"])  # fmt: skip
    for path in (updated, pruned):
        assert load_with_header(str(path))[1]["typicality"] is None
        result = runner.invoke(cli, ["predict", "-m", str(path), "--min-typicality", "1"],
                               input=ODD_LINE)  # fmt: skip
        assert result.exit_code == 2
        assert result.stderr == (
            "Error: --min-typicality needs the training documents' typicality, which this "
            "model does not store: fit it with --typicality\n"
        )


def test_other_evidence_settings_are_refused(runner, demo_model):
    result = runner.invoke(
        cli, ["predict", "-m", str(demo_model), "--min-typicality", "1", "--model", "bernoulli"],
        input=ODD_LINE,
    )
    assert result.exit_code == 2 and "leave out --model" in result.stderr
    # complement with other transforms still scores evidence with the same multinomial
    result = runner.invoke(
        cli, ["predict", "-m", str(demo_model), "--min-typicality", "1", "--tf", "raw"],
        input=ODD_LINE,
    )
    assert result.exit_code == 0 and result.stdout.startswith("-\tunsure\t")


@pytest.mark.parametrize("value", ["-1", "101"])
def test_min_typicality_is_a_percentile(runner, demo_model, value):
    result = runner.invoke(cli, ["predict", "-m", str(demo_model), "--min-typicality", value],
                           input="x")  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: --min-typicality {float(value)} is out of range: give a number from 0 to 100\n"
    )


def test_typicality_needs_a_corpus_folder(runner, tmp_path):
    lines = tmp_path / "l.txt"
    lines.write_text("a\tsome text\nb\tother text\n", encoding="utf-8")
    result = runner.invoke(
        cli, ["fit", "--lines", str(lines), "-o", str(tmp_path / "m.nbc"), "--typicality"]
    )
    assert result.exit_code == 2 and "--typicality reads training documents again" in result.stderr


def test_a_class_of_one_document_gives_no_record(runner, chinese_corpus, tmp_path):
    path = tmp_path / "m.nbc"
    runner.invoke(cli, ["fit", str(chinese_corpus), "-o", str(path), "--typicality", "-q", *NAMED])
    assert load_with_header(str(path))[1]["typicality"] is None  # japan has 1 document


# --- the real case: 20 Newsgroups given French, and a log file ------------------------------

RECIPE = """Bonjour à tous, je cherche une bonne recette de tarte aux pommes pour le repas de
dimanche. Ma grand-mère la faisait avec de la cannelle et un peu de beurre salé, mais je ne me
souviens plus des quantités. Est-ce que quelqu'un pourrait me donner la sienne ? Merci d'avance
et bonne journée à vous.

Pour la pâte, je pense qu'il faut de la farine, du beurre, un jaune d'œuf et une pincée de sel,
mais faut-il la laisser reposer au frais avant de l'étaler ? Et pour les pommes, vaut-il mieux
des golden ou des reinettes ? J'ai lu qu'il fallait les couper en fines lamelles et les disposer
en rosace, puis ajouter du sucre vanillé avant la cuisson. Combien de temps au four, et à quelle
température ? La dernière fois, le fond était encore mou et les bords trop cuits.

Si vous avez aussi une idée de dessert sans gluten pour ma sœur, je suis preneuse. Elle ne
mange pas de blé depuis deux ans et nous aimerions tous partager le même gâteau à la fin du
repas. Merci encore pour vos conseils, et bon appétit !
"""


def application_log(n: int = 60) -> str:
    """A Java service's log, 60 lines drawn with a fixed seed (the one docs/novelty.md uses)."""
    rng = random.Random(3)
    services = ["OrderController", "ConnectionPool", "SqlExceptionHelper", "CacheManager",
                "AuthFilter", "PaymentGateway"]  # fmt: skip
    lines = []
    for i in range(n):
        service, level = rng.choice(services), rng.choice(["INFO ", "WARN ", "ERROR", "DEBUG"])
        ms = rng.randint(3, 5000)
        message = rng.choice([
            f"GET /api/orders?page={rng.randint(1, 9)} took {ms} ms",
            f"HikariPool-1 - Connection is not available, request timed out after {ms}ms.",
            f"cache miss for key user:{rng.randint(1000, 9999)} (ttl={rng.randint(10, 600)}s)",
            f"token refreshed for session {rng.randint(10**7, 10**8)}",
            f"retrying payment {rng.randint(10**5, 10**6)} attempt {rng.randint(1, 5)}/5",
        ])  # fmt: skip
        lines.append(
            f"2024-03-11 08:{i // 60 + 14:02d}:{i % 60:02d},{rng.randint(0, 999):03d} {level} "
            f"[http-nio-8080-exec-{rng.randint(1, 9)}] c.e.a.{service} - {message}"
        )
    return "\n".join(lines) + "\n"


@pytest.mark.corpus
def test_newsgroups_given_french_and_a_log_file(runner, news_sample, tmp_path):
    train, test = news_sample
    model = tmp_path / "news.nbc"
    options = ["fit", str(train), "-o", str(model), "--typicality", "-q", *NAMED]
    result = runner.invoke(cli, options)
    assert result.exit_code == 0, result.stderr
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "recette.txt").write_text(RECIPE, encoding="utf-8")
    (odd / "app.log").write_text(application_log(), encoding="utf-8")
    plain = jsonl(runner, "-m", model, odd, "--min-probability", "0.9")
    flagged = jsonl(runner, "-m", model, odd, "--min-probability", "0.9", "--min-typicality", "1")
    assert [r["reason"] for r in flagged] == ["unlike-training", "unlike-training"]
    # the posterior is confident about at least one of them: --min-probability misses it
    assert any(r["reason"] is None and r["probability"] >= 0.9 for r in plain)
    records = jsonl(runner, "-m", model, test, "--min-typicality", "1")
    share = sum(r["reason"] == "unlike-training" for r in records) / len(records)
    assert len(records) == 120 and share <= 0.05


def test_fit_at_its_default_stores_the_typicality_its_folds_measured(runner, tmp_path):
    """--model auto scores every sampled document out of fold anyway: the record is the
    percentiles of those documents' e(x) under the winner's evidence model."""
    import hashlib

    from nbclass.models.choosing import choose
    from nbclass.models.model import choice_features
    from nbclass.models.novelty import evidence_settings

    path = tmp_path / "auto.nbc"
    assert runner.invoke(cli, ["fit", str(DEMO), "-o", str(path), "-q"]).exit_code == 0
    model = load(str(path))
    record = model.typicality
    assert record is not None and record["documents"] == 42 and record["folds"] == 5
    assert record["evidence_settings"] == evidence_settings(model.defaults).to_dict()
    corpus = list_corpus(str(DEMO))  # 42 documents: all are sampled, in (SHA-256, class) order
    read = [(Path(p).read_bytes(), corpus.classes[c]) for p, c in zip(corpus.paths, corpus.labels)]
    sample = sorted((hashlib.sha256(data).digest(), name, data.decode()) for data, name in read)
    # The choice of fit again: its feature sets (words, symbols, pairs, their prunings) over
    # every row counted, the pruned sets pruned in each fold.
    counts = model.counts
    X, _ = TextCounter(model.tokenizer, counts.vocabulary).count([t for _, _, t in sample])
    y = np.array([counts.classes.index(c) for _, c, _ in sample])
    features, second = choice_features(counts, model.tokenizer.symbol_entries, True)
    choice = choose(counts, X, y, features=features, second=second, offsets=True)
    assert (choice.settings, choice.features) == (model.defaults, ("words", "symbols", "pairs"))
    assert record["percentiles"] == np.percentile(choice.evidence, range(101)).tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=1,
                max_size=300),  # fmt: skip
       st.sampled_from([PERCENTILES, (0, 50, 100), (33, 66), (1,), (99, 100, 0)]))
def test_percentiles_are_numpys_to_the_bit(values, q):
    """The typicality record's percentiles (computed without np.unique, which imports
    numpy.ma) are np.percentile's floats, for any finite values: ties, one value,
    mixed magnitudes, unsorted percentiles."""
    values = np.array(values)
    ours = percentiles(values, q)
    theirs = np.percentile(values, q)
    assert np.array_equal(ours.view(np.int64), np.asarray(theirs, dtype=np.float64).view(np.int64))


def test_percentiles_of_typical_evidence_values():
    rng = np.random.default_rng(2)
    for n in (1, 2, 3, 10, 101, 1000, 6000):
        values = -rng.gamma(2.0, 3.0, n)
        assert np.array_equal(percentiles(values, PERCENTILES).view(np.int64),
                              np.percentile(values, PERCENTILES).view(np.int64))  # fmt: skip
