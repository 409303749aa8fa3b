"""Multi-label models: reading label sets, per-label counts, thresholds, predict, the file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nbclass.counting.counts import Counts, as_table
from nbclass.errors import NbclassError
from nbclass.models import multilabel as ml
from nbclass.models.labelsets import checked_record, label_set, labels_of, parse_line

NBCLASS = [sys.executable, "-m", "nbclass"]

TICKETS = [
    "__label__billing __label__outage the payment page is down and my card was charged",
    "__label__billing refund my invoice please",
    "__label__outage site down since this morning",
    "account\treset my password please",
    "billing,account\tcannot login to see my invoice",
    '{"labels": [], "text": "hello there"}',
    "__label__billing charged twice for one invoice",
    "__label__outage the api returns 503 errors",
    "account\tlocked out of my account after a password change",
]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*NBCLASS, *args], input=stdin, capture_output=True, text=True)


@pytest.fixture
def tickets(tmp_path) -> Path:
    path = tmp_path / "tickets.txt"
    path.write_text("\n".join(TICKETS) + "\n")
    return path


# --- reading -----------------------------------------------------------------------------


def test_the_three_line_forms_give_the_same_label_sets():
    assert parse_line("__label__b __label__a  some text", "l") == (("a", "b"), "some text")
    assert parse_line("b,a\tsome text", "l") == (("a", "b"), "some text")
    assert parse_line('{"labels": ["b", "a"], "text": "some text", "id": 3}', "l") == (
        ("a", "b"),
        "some text",
    )
    assert parse_line("\tno label", "l") == ((), "no label")
    assert label_set(["b", "a", "b"]) == "a,b"
    assert labels_of("") == ()


@pytest.mark.parametrize(
    "line, message",
    [
        ("just text", "has no labels"),
        ('{"labels": "a", "text": "x"}', '"labels" list'),
        ('{"labels": ["a"]}', '"text" string'),
        ("{not json", "not valid JSON"),
        ('{"labels": ["a,b"], "text": "x"}', "holds ','"),
        ("a, ,b\ttext", "empty label"),
    ],
)
def test_a_bad_line_is_named(line, message):
    with pytest.raises(NbclassError, match=message):
        parse_line(line, "line f:7")


# --- counts --------------------------------------------------------------------------------


def _label_set_counts() -> Counts:
    # Label sets "", "a", "a,b", "b"; words x, y.
    return Counts(
        classes=("", "a", "a,b", "b"),
        vocabulary=("x", "y"),
        class_count=np.array([1, 2, 1, 3]),
        doc_count=np.array([[1, 2, 0, 1], [0, 1, 1, 3]]),
        token_count=np.array([[2, 5, 0, 1], [0, 1, 4, 6]]),
    )


def test_label_counts_are_sums_over_label_sets_and_not_l_is_the_rest():
    counts = ml.label_counts(_label_set_counts())
    assert counts.labels == ("a", "b")
    assert counts.n_docs == 7
    assert counts.class_count.tolist() == [3, 4]  # a: 2 + 1; b: 1 + 3
    assert as_table(counts.token_count).tolist() == [[5, 1], [5, 10]]
    assert as_table(counts.doc_count).tolist() == [[2, 1], [2, 4]]
    b = counts.binary(1)
    assert b.class_count.tolist() == [3, 4]
    assert as_table(b.token_count).tolist() == [[8 - 1, 1], [11 - 10, 10]]
    assert as_table(b.doc_count).tolist() == [[4 - 1, 1], [5 - 4, 4]]


def test_log_odds_are_the_binary_multinomial_by_hand():
    counts = ml.label_counts(_label_set_counts())
    settings = ml.EstimatorSettings(model="multinomial")
    scorer = ml.LabelScorer(counts, settings)
    import scipy.sparse as sp

    X = sp.csr_matrix(np.array([[1, 2]]))
    # label a: "a" has N 3 of 7, T_x = 5, T_y = 5; "not a" N 4, T_x = 8 − 5, T_y = 11 − 5.
    a = (np.log((3 + 1) / (7 + 2)) - np.log((4 + 1) / (7 + 2))
         + 1 * (np.log((5 + 1) / (10 + 2)) - np.log((3 + 1) / (9 + 2)))
         + 2 * (np.log((5 + 1) / (10 + 2)) - np.log((6 + 1) / (9 + 2))))  # fmt: skip
    assert scorer.log_odds(X)[0, 0] == pytest.approx(a, rel=1e-12)


def _random_label_set_counts(seed: int = 3) -> Counts:
    """Four label sets over three labels and 40 words, some words in no label set of a
    label, one word in every document of one label set (D_j = D_jl for its labels)."""
    rng = np.random.default_rng(seed)
    N_s = np.array([5, 7, 3, 4])
    D = rng.integers(0, 3, size=(40, 4)) * (rng.random((40, 4)) < 0.4)
    D[0] = 0
    D[0, 1] = N_s[1]
    D[1] = [1, 0, 0, 0]  # a word of the documents without a label alone
    T = D * rng.integers(1, 4, size=D.shape)
    return Counts(
        classes=("", "a", "a,c", "b,c"),
        vocabulary=tuple(f"w{j:02d}" for j in range(40)),
        class_count=N_s,
        doc_count=D,
        token_count=T,
    )


@pytest.mark.parametrize(
    "settings",
    [
        ml.EstimatorSettings(model="multinomial"),
        ml.EstimatorSettings(model="multinomial", beta=(0.3, 0.3), class_prior=False),
        ml.EstimatorSettings(model="multinomial", estimator="map", beta=(2.0, 2.0), alpha=2.0),
        *ml.CANDIDATES,
        ml.EstimatorSettings(model="multinomial", tf="log"),
        ml.EstimatorSettings(model="multinomial", idf=True),
    ],
)
def test_the_log_odds_from_the_pairs_are_each_labels_binary_models(settings):
    """The multinomial log-odds made from the nonzero (word, label) pairs equal those of
    each label's binary model (not l, l) scored by the one scorer of two classes, every
    word or some words, one β or each label its own; so do the weights export and explain
    read."""
    import scipy.sparse as sp

    from nbclass.models.posterior import make_scorer

    counts = ml.label_counts(_random_label_set_counts())
    assert ml.sparse_odds(settings)
    X = sp.csr_matrix(np.random.default_rng(4).integers(0, 3, size=(6, 40)))
    rows = np.flatnonzero(np.asarray(X.sum(axis=0)).ravel())
    scales = [0.3, 1.0, 3.0] if settings.estimator != "map" else [1.0, 1.5, 3.0]
    for scorer, documents, words in (
        (ml.LabelScorer(counts, settings, scales=scales), X, None),
        (ml.LabelScorer(counts, settings, rows=rows, scales=scales), X[:, rows], rows),
    ):
        assert scorer.odds
        for l in range(3):
            binary = make_scorer(counts.binary(l), ml.scaled(settings, scales[l]), rows=words)
            jll = binary.joint_log_likelihood(documents)
            expected = jll[:, 1] - jll[:, 0]
            assert scorer.log_odds(documents)[:, l] == pytest.approx(expected, rel=1e-12)
    _, W, b = ml.LabelScorer(counts, settings, scales=scales).linear()
    features, _ = ml.LabelScorer(counts, settings, scales=scales).weights(0)
    every = ml.LabelScorer(counts, settings, scales=scales)
    assert np.asarray(features(X) @ W + b) == pytest.approx(every.log_odds(X), rel=1e-12)
    for l in range(3):
        assert every.weights(l)[1] == pytest.approx(W[:, l], rel=1e-12)


def test_settings_outside_the_pairs_score_as_2l_classes():
    assert not ml.sparse_odds(ml.EstimatorSettings(model="multinomial", prior_fit=True))
    assert not ml.sparse_odds(ml.EstimatorSettings(model="multinomial", norm="weight"))
    assert not ml.sparse_odds(ml.EstimatorSettings(model="multinomial", estimator="mle"))
    assert not ml.sparse_odds(ml.EstimatorSettings(model="bernoulli"))
    counts = ml.label_counts(_random_label_set_counts())
    assert not ml.LabelScorer(counts, ml.EstimatorSettings(model="bernoulli")).odds
    # MAP at β 2 times 0.3 is no positive estimate for an unseen word: every scale as 2L
    mapped = ml.EstimatorSettings(model="multinomial", estimator="map", beta=(2.0, 2.0))
    assert not ml.LabelScorer(counts, mapped, scales=[1.0, 0.3, 1.0]).odds


def test_a_folds_training_counts_are_the_counts_less_its_documents():
    import scipy.sparse as sp

    counts = ml.label_counts(_label_set_counts())
    X = sp.csr_matrix(np.array([[2, 0], [1, 3]]))  # x x (label a); x y y y (label b)
    Y = np.array([[1, 0], [0, 1]])
    fewer = counts.without(X, Y)
    assert fewer.n_docs == 5 and fewer.class_count.tolist() == [3 - 1, 4 - 1]
    assert as_table(fewer.doc_count).tolist() == [[2 - 1, 1 - 1], [2 - 0, 4 - 1]]
    assert as_table(fewer.token_count).tolist() == [[5 - 2, 1 - 1], [5 - 0, 10 - 3]]
    assert fewer.doc_count.nnz == fewer.token_count.nnz == 3  # the pair (x, b) is gone
    assert fewer.word_docs.tolist() == [4 - 2, 5 - 1] and fewer.word_tokens.tolist() == [5, 8]


# --- thresholds ------------------------------------------------------------------------------


def test_f1_threshold_by_hand():
    p = np.array([0.9, 0.8, 0.6, 0.3, 0.1])
    y = np.array([1, 0, 1, 1, 0])
    # top 1: F1 2/(1+3) = 0.5; top 2: 2/(2+3) = 0.4; top 3: 4/(3+3); top 4: 6/(4+3).
    t, f1 = ml.f1_threshold(p, y)
    assert f1 == pytest.approx(6 / 7)
    assert t == pytest.approx((0.3 + 0.1) / 2)


def test_f1_threshold_ties_go_to_the_higher_threshold():
    # Top 1 and top 4 both give F1 2/3 (2·1/(1+2) and 2·2/(4+2)): the higher threshold.
    t, f1 = ml.f1_threshold(np.array([0.9, 0.5, 0.4, 0.3]), np.array([1, 0, 0, 1]))
    assert (t, f1) == (pytest.approx(0.7), pytest.approx(2 / 3))


def test_a_label_that_only_adds_false_positives_is_never_predicted():
    # The other labels: 10 true positives, 1 false negative: micro-F1 20/22 without this
    # label (whose one positive is then missed). Its top 1, 2, 3 cells give 20/23, 20/24,
    # 22/25: all lower, so it is never predicted.
    p, y = np.array([[0.9], [0.8], [0.3]]), np.array([[0], [0], [1]])
    assert ml.micro_f1_threshold(p, y, 10, 0, 1) == 1.0
    assert ml.micro_f1_threshold(p, y) == pytest.approx((0.3 + 0) / 2)  # alone: all three


@pytest.mark.parametrize("n", [3, 1000, 65_536 * 3 + 17])
def test_the_pooled_platt_fit_gives_the_floats_of_one_table_of_every_cell(n):
    # fit_platt_cells sums each Newton step's cells by blocks, by halves as numpy sums
    # the whole array: the same bits as fit_platt of the cells as one column.
    rng = np.random.default_rng(n)
    y = rng.random(n) < 0.05
    s = rng.standard_normal(n) * 4 + 2 * y
    s[rng.random(n) < 0.01] = -5e3  # past SCORE_BOUND: clipped
    expected = ml.fit_platt(s[:, None], y[:, None])[0]
    assert ml.fit_platt_cells(s.copy(), y).tolist() == expected.tolist()


@pytest.mark.parametrize(
    "n, others", [(7, (0, 0, 0)), (40_000, (3, 1, 2)), (150_001, (90, 40, 10))]
)
def test_the_shared_threshold_of_sorted_cells_is_micro_f1_threshold(n, others):
    # Ties (probabilities rounded to 3 decimals) and other labels' counts: the same float,
    # and the same true and false positives at it.
    rng = np.random.default_rng(n)
    y = rng.random((n // 7 + 1, 7)) < 0.1
    p = np.round(rng.random(y.shape) ** 3 * 0.5 + 0.5 * y * rng.random(y.shape), 3)
    expected = ml.micro_f1_threshold(p, y, *others)
    cells = ml._SortedCells(p.ravel().copy(), p[y].copy())
    assert cells.threshold(*map(float, others)) == expected
    chosen = p >= expected
    assert cells.counts(expected) == ml._confusion(chosen, y)


def test_decide_never_leaves_a_document_empty_unless_asked():
    p = np.array([[0.2, 0.3], [0.9, 0.6]])
    t = np.array([0.5, 0.5])
    assert ml.decide(p, t).tolist() == [[False, True], [True, True]]
    assert ml.decide(p, t, allow_empty=True).tolist() == [[False, False], [True, True]]
    assert ml.decide(p, t, top_k=1).tolist() == [[False, True], [True, False]]


# --- the command line ----------------------------------------------------------------------


def test_fit_and_predict_label_sets(tickets, tmp_path):
    model = tmp_path / "m.nbc"
    done = run("fit", "--multi-label", "--lines", str(tickets), "-o", str(model))
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("fit: 9 documents, 3 labels, ")
    done = run("predict", "-m", str(model), "--format", "jsonl", "--threshold", "0",
               stdin="the payment page is down")  # fmt: skip
    record = json.loads(done.stdout)
    assert record["source"] == "-"
    assert sorted(record["labels"]) == ["account", "billing", "outage"]  # every p >= 0
    assert list(record["probabilities"]) == record["labels"]  # most probable first
    done = run("predict", "-m", str(model), "--threshold", "1", "--allow-empty", stdin="down")
    assert done.stdout == "-\t\t\n"
    done = run("predict", "-m", str(model), "--threshold", "1", stdin="site down")
    source, labels, probabilities = done.stdout.rstrip("\n").split("\t")
    assert (source, labels) == ("-", "outage")  # the most probable, not none
    assert float(probabilities) == pytest.approx(record["probabilities"]["outage"], abs=0.5)


def test_predict_refuses_exit_code_and_unknown_labels(tickets, tmp_path):
    model = tmp_path / "m.nbc"
    run("fit", "--multi-label", "--lines", str(tickets), "-o", str(model), "-q")
    done = run("predict", "-m", str(model), "--exit-code", stdin="x")
    assert done.returncode == 2
    assert done.stderr.startswith("Error: --exit-code is for single-label models")
    done = run("predict", "-m", str(model), "--threshold", "nope=0.3", stdin="x")
    assert (done.returncode, done.stderr) == (
        2, "Error: --threshold 'nope=0.3': the model has no label 'nope'\n"
    )
    done = run("fit", "--multi-label", str(tmp_path), "-o", str(model))
    assert done.returncode == 2
    assert "not a CORPUS_DIR" in done.stderr


def test_fit_then_update_is_the_fit_of_both(tickets, tmp_path):
    lines = tickets.read_text().splitlines(keepends=True)
    (tmp_path / "a.txt").write_text("".join(lines[:5]))
    (tmp_path / "b.txt").write_text("".join(lines[5:]))
    whole, part = tmp_path / "whole.nbc", tmp_path / "part.nbc"
    for source, target in ((tickets, whole), (tmp_path / "a.txt", part)):
        done = run("fit", "--multi-label", "--lines", str(source), "-o", str(target), "-q")
        assert done.returncode == 0, done.stderr
    done = run("fit", "--update", str(part), "--lines", str(tmp_path / "b.txt"), "-q")
    assert done.returncode == 0, done.stderr
    assert part.read_bytes() == whole.read_bytes()


# --- the model file is hostile input -----------------------------------------------------------


def _record():
    return {"separator": ",", "labels": ["a", "b"],
            "candidates": [{"settings": ml.CANDIDATES[0].to_dict()}]}  # fmt: skip


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda r: r.update(labels=["a"]), "labels are not those"),
        (lambda r: r.update(separator=";"), "separator"),
        (lambda r: r.update(extra=1), "unknown multi_label field"),
        (lambda r: r.update(candidates=[]), "candidates"),
        (lambda r: r.update(thresholds=[0.5, 2.0], calibration=[[1, 0], [1, 0]],
                            criterion="x", documents=1, folds=1), "thresholds"),
        (lambda r: r.update(thresholds=[0.5, 0.5], calibration=[[0, 0], [1, 0]],
                            criterion="x", documents=1, folds=1), "calibration"),
        (lambda r: r["candidates"][0]["settings"].update(model="nope"), "settings"),
        (lambda r: r.update(beta_scales=[1.0, 0.0]), "beta_scales"),
        (lambda r: r.update(beta_scales=[1.0, 3.0], beta_scale=[1.0, 3.0], micro_f1=0.5),
         "beta_scale"),  # no thresholds
        (lambda r: r.update(beta_scales=[1.0, 3.0], beta_scale=[1.0, 2.0], micro_f1=0.5,
                            thresholds=[0.5, 0.5], calibration=[[1, 0], [1, 0]],
                            criterion="x", documents=1, folds=1), "beta_scale"),
    ],
)
def test_a_bad_multi_label_record_is_refused(change, message):
    data = _record()
    change(data)
    with pytest.raises(ValueError, match=message):
        checked_record(data, ["", "a", "a,b"])
    assert checked_record(_record(), ["", "a", "a,b"]) == _record()
    with pytest.raises(ValueError, match="not a label set"):
        checked_record(_record(), ["a", "b,a"])


def test_both_loaders_refuse_a_damaged_record(tickets, tmp_path):
    from dataclasses import replace

    from nbclass.errors import ModelFileError
    from nbclass.modelfile.quick import QuickModel
    from nbclass.modelfile.textfile import dumps, load

    model = tmp_path / "m.nbc"
    run("fit", "--multi-label", "--lines", str(tickets), "-o", str(model), "-q")
    loaded = load(str(model))
    assert loaded.multi_label["labels"] == ["account", "billing", "outage"]
    assert len(loaded.multi_label["thresholds"]) == 3
    damaged = dict(loaded.multi_label, thresholds=[0.5, 0.5])
    bad = tmp_path / "bad.nbc"
    bad.write_bytes(dumps(replace(loaded, multi_label=damaged)))
    for loader in (load, QuickModel):
        with pytest.raises(ModelFileError, match="thresholds are not 3 numbers"):
            loader(str(bad))
    done = run("predict", "-m", str(bad), stdin="x")
    assert done.returncode == 1
    assert done.stderr.startswith("Error: ") and "thresholds are not 3 numbers" in done.stderr


# --- evaluation ------------------------------------------------------------------------------


def test_label_metrics_by_hand():
    from nbclass.evaluation.labels import LabelEvaluation

    truth = np.array([[1, 1, 0], [1, 0, 0], [0, 0, 1], [0, 0, 0]], dtype=bool)
    chosen = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 1], [0, 1, 0]], dtype=bool)
    p = np.array([[0.9, 0.4, 0.1], [0.8, 0.6, 0.1], [0.1, 0.2, 0.7], [0.2, 0.55, 0.1]])
    m = LabelEvaluation(("a", "b", "c"), list("wxyz"), truth, chosen, p).metrics()
    # a: tp 2, fp 0, fn 0; b: tp 0, fp 2, fn 1; c: tp 1. Micro: 2·3 / (4 true + 5 predicted).
    assert m["micro_f1"] == pytest.approx(6 / 9)
    assert (m["micro_precision"], m["micro_recall"]) == (pytest.approx(3 / 5), 3 / 4)
    assert m["macro_f1"] == pytest.approx((1 + 0 + 1) / 3)
    assert m["hamming_loss"] == pytest.approx(3 / 12)
    assert m["subset_accuracy"] == pytest.approx(1 / 4)  # only y is exactly right
    assert m["per_label"]["b"] == {
        "precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1, "predicted": 2,
        # bins 4 (0.4, truth 1), 6 (0.6, 0), 2 (0.2, 0), 5 (0.55, 0): |0.4-1|+0.6+0.2+0.55
        "ece": pytest.approx((0.6 + 0.6 + 0.2 + 0.55) / 4),
    }  # fmt: skip


def test_evaluate_prints_the_metrics_by_name(tickets, tmp_path):
    model = tmp_path / "m.nbc"
    run("fit", "--multi-label", "--lines", str(tickets), "-o", str(model), "-q")
    done = run("evaluate", "-m", str(model), "--lines", str(tickets), "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["documents"], data["labels"]) == (9, 3)
    for name in ("micro_f1", "macro_f1", "hamming_loss", "subset_accuracy", "ece"):
        assert 0.0 <= data[name] <= 1.0
    assert sorted(data["per_label"]) == ["account", "billing", "outage"]
    assert data["per_label"]["billing"]["support"] == 4
    # Its predictions, read back, give the same micro-F1.
    done = run("predict", "-m", str(model), "--lines", str(tickets), "--format", "jsonl")
    predicted = [set(json.loads(line)["labels"]) for line in done.stdout.splitlines()]
    truth = [set(parse_line(line, "l")[0]) for line in TICKETS]
    tp = sum(len(p & t) for p, t in zip(predicted, truth))
    total = sum(len(p) + len(t) for p, t in zip(predicted, truth))
    assert data["micro_f1"] == pytest.approx(2 * tp / total)
    done = run("evaluate", "-m", str(model), str(tmp_path))
    assert done.returncode == 2
    assert "is a multi-label model: evaluate it on --lines FILE" in done.stderr


def test_merge_and_unlearn_are_exact_and_sync_is_refused(tickets, tmp_path):
    lines = tickets.read_text().splitlines(keepends=True)
    (tmp_path / "a.txt").write_text("".join(lines[:5]))
    (tmp_path / "b.txt").write_text("".join(lines[5:]))
    paths = {}
    for name, source, ledger in (
        ("all", tickets, ()), ("a", tmp_path / "a.txt", ()), ("b", tmp_path / "b.txt", ()),
        ("all-ledger", tickets, ("--ledger",)), ("a-ledger", tmp_path / "a.txt", ("--ledger",)),
    ):  # fmt: skip
        paths[name] = tmp_path / f"{name}.nbc"
        done = run("fit", "--multi-label", *ledger, "--lines", str(source), "-o",
                   str(paths[name]), "-q")  # fmt: skip
        assert done.returncode == 0, done.stderr
    merged = tmp_path / "merged.nbc"
    assert run("merge", str(paths["a"]), str(paths["b"]), "-o", str(merged), "-q").returncode == 0
    assert merged.read_bytes() == paths["all"].read_bytes()
    for whole, part in (("all", "a"), ("all-ledger", "a-ledger")):
        done = run("unlearn", "-m", str(paths[whole]), "--lines", str(tmp_path / "b.txt"), "-q")
        assert done.returncode == 0, done.stderr
        assert paths[whole].read_bytes() == paths[part].read_bytes()
    (tmp_path / "corpus" / "x").mkdir(parents=True)
    (tmp_path / "corpus" / "x" / "1.txt").write_text("hello")
    done = run("sync", str(tmp_path / "corpus"), "-m", str(paths["a"]))
    assert done.returncode == 2
    assert "is a multi-label model: its documents come as lines" in done.stderr


# --- info, top-features, explain, export: label by label ------------------------------------


@pytest.fixture
def tickets_model(tickets, tmp_path) -> Path:
    model = tmp_path / "m.nbc"
    done = run("fit", "--multi-label", "--lines", str(tickets), "-o", str(model), "-q")
    assert done.returncode == 0, done.stderr
    return model


def test_info_lists_the_labels(tickets_model):
    data = json.loads(run("info", "-m", str(tickets_model), "--format", "json").stdout)
    labels = data["multi_label"]["labels"]
    assert {k: v["documents"] for k, v in labels.items()} == {
        "account": 3, "billing": 4, "outage": 3,
    }  # fmt: skip
    assert (data["multi_label"]["label_sets"], data["multi_label"]["no_label"]) == (6, 1)
    assert data["exit_codes"] == {}
    text = run("info", "-m", str(tickets_model)).stdout
    assert "labels       3 in 6 label sets (1 documents without a label)" in text
    assert "  billing  4  threshold " in text


def test_top_features_per_class_ranks_each_label_against_the_rest(tickets_model):
    from nbclass.modelfile.textfile import load
    from nbclass.models.selection import class_top_features

    done = run("top-features", "-m", str(tickets_model), "--per-class", "2")
    rows = [line.split("\t") for line in done.stdout.splitlines()]
    assert [r[0] for r in rows] == ["account", "account", "billing", "billing", "outage",
                                    "outage"]  # fmt: skip
    model = load(str(tickets_model))
    billing = ml.label_counts(model.active_counts).binary(1)  # "billing" against the rest
    expected = [f for f in class_top_features(billing, model.defaults, 2) if f.label == "1"]
    assert [(r[1], float(r[2])) for r in rows[2:4]] == [(f.word, f.value) for f in expected]
    assert rows[2][1] == "invoice"  # in 3 of billing's 4 documents, in no other


def test_export_scores_as_predict_does(tickets_model, tmp_path):
    import re

    out = tmp_path / "m.json"
    assert run("export", "-m", str(tickets_model), "-o", str(out), "-q").returncode == 0
    e = json.loads(out.read_text())
    assert e["multi_label"] is True and e["labels"] == ["account", "billing", "outage"]
    text = "the checkout page is down and the invoice was charged twice"
    at = {word: j for j, word in enumerate(e["vocabulary"])}
    f = np.zeros(len(at))
    for token in re.findall(e["tokenizer"]["token_pattern"], text.lower()):
        if token in at:
            f[at[token]] += 1
    assert e["transform"] == {"binary": False, "tf": "raw", "length_norm": True}
    f *= np.array(e["idf"])
    f /= np.linalg.norm(f)
    s = f @ np.array(e["weights"]) + np.array(e["bias"])
    p = 1 / (1 + np.exp(-(np.array(e["calibration"]["a"]) * s + np.array(e["calibration"]["c"]))))
    record = json.loads(run("predict", "-m", str(tickets_model), "--format", "jsonl",
                            stdin=text).stdout)  # fmt: skip
    assert [record["probabilities"][label] for label in e["labels"]] == pytest.approx(
        p.tolist(), rel=1e-12
    )
    chosen = [label for label, q, t in zip(e["labels"], p, e["thresholds"]) if q >= t]
    assert sorted(record["labels"]) == sorted(chosen or [e["labels"][int(p.argmax())]])


def test_explain_gives_each_labels_words_and_their_share_of_the_log_odds(tickets_model, tmp_path):
    out = tmp_path / "m.json"
    run("export", "-m", str(tickets_model), "-o", str(out), "-q")
    e = json.loads(out.read_text())
    done = run("predict", "-m", str(tickets_model), "--format", "jsonl", "--explain", "3",
               "--threshold", "0", stdin="invoice")  # fmt: skip
    record = json.loads(done.stdout)
    j = e["vocabulary"].index("invoice")
    # One known word: f(x) = idf_j / |idf_j| = 1, so its contribution is W_jl itself.
    for l, label in enumerate(e["labels"]):
        assert record["explanation"][label] == [["invoice", pytest.approx(e["weights"][j][l])]]
    done = run("predict", "-m", str(tickets_model), "--explain", "3", stdin="invoice")
    assert done.returncode == 2
    assert "add --format jsonl" in done.stderr


def test_cv_fits_each_fold_as_fit_does(tickets, tmp_path):
    from nbclass.evaluation.labels import cross_validate_labels, fold_of_documents
    from nbclass.models.learning import multi_label_documents
    from nbclass.text.tokenizer import TokenizerSettings

    done = run("cv", "--multi-label", "--lines", str(tickets), "--folds", "3", "--format",
               "json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["documents"], data["folds"], len(data["per_fold"])) == (9, 3, 3)
    # Fold 0 by hand: fit its training lines with the command, evaluate its held-out ones.
    fold = fold_of_documents(9, 3, 0)
    train = [line for line, f in zip(TICKETS, fold) if f != 0]
    test = [line for line, f in zip(TICKETS, fold) if f == 0]
    (tmp_path / "train.txt").write_text("\n".join(train) + "\n")
    (tmp_path / "test.txt").write_text("\n".join(test) + "\n")
    model = tmp_path / "fold0.nbc"
    run("fit", "--multi-label", "--lines", str(tmp_path / "train.txt"), "-o", str(model), "-q")
    done = run("evaluate", "-m", str(model), "--lines", str(tmp_path / "test.txt"),
               "--format", "json")  # fmt: skip
    fold0 = json.loads(done.stdout)
    assert data["per_fold"][0]["micro_f1"] == fold0["micro_f1"]
    assert data["per_fold"][0]["hamming_loss"] == fold0["hamming_loss"]
    lines = [(f"t:{i}", line) for i, line in enumerate(TICKETS, 1)]
    evaluation, _ = cross_validate_labels(
        multi_label_documents(lines), TokenizerSettings(), ml_filter(), ml.CANDIDATES, 3, 0
    )
    assert evaluation.metrics()["micro_f1"] == data["micro_f1"]


def ml_filter():
    from nbclass.models.model import VocabularyFilter

    return VocabularyFilter()


def test_serve_and_the_python_library_refuse_a_multi_label_model(tickets_model):
    import nbclass

    with pytest.raises(nbclass.InputError, match="is a multi-label model"):
        nbclass.load(str(tickets_model))
    done = subprocess.run([*NBCLASS, "serve", "-m", str(tickets_model), "--port", "0"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith("Error: ") and "is a multi-label model" in done.stderr


# --- each label's smoothing ------------------------------------------------------------------


def test_log_odds_with_each_labels_beta_by_hand():
    import scipy.sparse as sp

    counts = ml.label_counts(_label_set_counts())
    settings = ml.EstimatorSettings(model="multinomial")
    scorer = ml.LabelScorer(counts, settings, scales=[0.3, 3.0])
    X = sp.csr_matrix(np.array([[1, 2]]))
    # a (β 0.3): T_x 5, T_y 5 of 10; not a: 3, 6 of 9. b (β 3): 1, 10 of 11; not b: 7, 1 of 8.
    a = (np.log((3 + 1) / (7 + 2)) - np.log((4 + 1) / (7 + 2))
         + 1 * (np.log((5 + 0.3) / (10 + 0.6)) - np.log((3 + 0.3) / (9 + 0.6)))
         + 2 * (np.log((5 + 0.3) / (10 + 0.6)) - np.log((6 + 0.3) / (9 + 0.6))))  # fmt: skip
    b = (np.log((4 + 1) / (7 + 2)) - np.log((3 + 1) / (7 + 2))
         + 1 * (np.log((1 + 3) / (11 + 6)) - np.log((7 + 3) / (8 + 6)))
         + 2 * (np.log((10 + 3) / (11 + 6)) - np.log((1 + 3) / (8 + 6))))  # fmt: skip
    assert scorer.log_odds(X)[0].tolist() == pytest.approx([a, b], rel=1e-12)
    _, W, bias = scorer.linear()  # what export writes: the same log-odds
    assert (np.array([1, 2]) @ W + bias).tolist() == pytest.approx([a, b], rel=1e-12)
    for l in range(2):  # and what explain reads, label by label
        assert scorer.weights(l)[1].tolist() == pytest.approx(W[:, l].tolist(), rel=1e-12)


def test_each_label_with_enough_documents_chooses_the_beta_of_the_lowest_log_loss():
    rng = np.random.default_rng(0)
    Y = np.zeros((50, 2))
    Y[:25, 0] = 1  # 25 positives and 25 negatives: its own choice
    Y[:19, 1] = 1  # 19 positives: too few, the first scale
    noise = rng.normal(size=(50, 2))
    sharp = np.where(Y > 0, 3.0, -3.0) + 0.1 * noise
    assert ml.choose_scales([noise, sharp], Y, [1.0, 0.3]).tolist() == [0.3, 1.0]
    assert ml.choose_scales([sharp, noise], Y, [1.0, 0.3]).tolist() == [1.0, 1.0]
    # The log loss of the calibrated probabilities, label by label.
    loss = ml.held_out_log_loss(sharp[:, :1], Y[:, :1])
    assert loss.shape == (1,) and 0 < loss[0] < ml.held_out_log_loss(noise[:, :1], Y[:, :1])[0]


def _topics(n: int, seed: int) -> list[str]:
    """Lines of a generated corpus: three frequent topics and a rare one, noisy words."""
    import random

    rng = random.Random(seed)
    topics = {"sport": "match goal team score coach league win season player".split(),
              "money": "bank rate loan profit share market price trade fund".split(),
              "rain": "storm rain cloud wind flood cold snow weather sky".split(),
              "rare": "comet orbit telescope".split()}  # fmt: skip
    common = "the a of and to in is it for on that with".split()
    out = []
    for i in range(n):
        labels = [t for t in ("sport", "money", "rain") if rng.random() < 0.35]
        if i % 40 == 0:
            labels.append("rare")
        words = [rng.choice(common) for _ in range(rng.randint(3, 12))]
        for t in labels:
            words += [rng.choice(topics[t]) for _ in range(rng.randint(1, 5))]
        for t in topics:
            if t not in labels and rng.random() < 0.3:
                words.append(rng.choice(topics[t]))
        rng.shuffle(words)
        out.append(",".join(sorted(labels)) + "\t" + " ".join(words))
    return out


def test_each_labels_beta_is_chosen_kept_and_used_by_every_path(tmp_path):
    from nbclass.modelfile.textfile import load

    lines = _topics(160, 3)
    corpus, model = tmp_path / "topics.txt", tmp_path / "m.nbc"
    corpus.write_text("\n".join(lines) + "\n")
    done = run("fit", "--multi-label", "--lines", str(corpus), "-o", str(model))
    assert done.returncode == 0, done.stderr
    loaded = load(str(model))
    data = loaded.multi_label
    assert data["labels"] == ["money", "rain", "rare", "sport"]
    assert data["beta_scales"] == [1.0, 0.3, 3.0]
    # money and rain chose their own; rare (4 documents) keeps 1; sport chose 1.
    assert data["beta_scale"] == [0.3, 3.0, 1.0, 1.0]
    assert data["micro_f1"] > max(c["micro_f1"] for c in data["candidates"])
    assert f"held-out micro-F1 {data['micro_f1']:.3f}" in done.stderr
    info = run("info", "-m", str(model)).stdout
    assert "beta x 0.3" in info and "beta x 3" in info
    # predict scores each label with its own β: the binary model's log-odds by make_scorer.
    from nbclass.models.posterior import make_scorer
    from nbclass.text.vectorizer import TextCounter

    text = "storm over the bank and the market price"
    record = json.loads(run("predict", "-m", str(model), "--format", "jsonl",
                            stdin=text).stdout)  # fmt: skip
    labelled = ml.label_counts(loaded.active_counts)
    X = TextCounter(loaded.tokenizer, labelled.vocabulary).count([text])[0]
    decisions = ml.decisions_of(data)
    for l, label in enumerate(data["labels"]):
        settings = ml.scaled(loaded.defaults, data["beta_scale"][l])
        jll = make_scorer(labelled.binary(l), settings).joint_log_likelihood(X)[0]
        a, c = decisions.calibration[l]
        p = 1 / (1 + np.exp(-(a * (jll[1] - jll[0]) + c)))
        assert record["probabilities"][label] == pytest.approx(p, rel=1e-12)
    # export writes those log-odds
    out = tmp_path / "m.json"
    assert run("export", "-m", str(model), "-o", str(out), "-q").returncode == 0
    e = json.loads(out.read_text())
    f = X.toarray()[0] * np.array(e["idf"])
    s = f / np.linalg.norm(f) @ np.array(e["weights"]) + np.array(e["bias"])
    p = 1 / (1 + np.exp(-(np.array(e["calibration"]["a"]) * s + np.array(e["calibration"]["c"]))))
    assert p.tolist() == pytest.approx([record["probabilities"][x] for x in e["labels"]],
                                       rel=1e-12)  # fmt: skip
    # top-features ranks rain on its binary counts under its β (3)
    from nbclass.models.selection import class_top_features

    rows = [r.split("\t") for r in run("top-features", "-m", str(model), "--per-class",
                                       "2").stdout.splitlines()]  # fmt: skip
    rain = ml.scaled(loaded.defaults, 3.0)
    expected = [x for x in class_top_features(labelled.binary(1), rain, 2) if x.label == "1"]
    assert [(r[1], float(r[2])) for r in rows if r[0] == "rain"] == [
        (x.word, x.value) for x in expected
    ]
    # fit of some lines, then an update with the rest: the fit of all, byte for byte
    (tmp_path / "a.txt").write_text("\n".join(lines[:100]) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(lines[100:]) + "\n")
    part = tmp_path / "part.nbc"
    assert run("fit", "--multi-label", "--lines", str(tmp_path / "a.txt"), "-o", str(part),
               "-q").returncode == 0  # fmt: skip
    assert run("fit", "--update", str(part), "--lines", str(tmp_path / "b.txt"),
               "-q").returncode == 0  # fmt: skip
    assert part.read_bytes() == model.read_bytes()
    # merge of the two parts' models, and unlearning the second part: fits, byte for byte
    a, b, merged, fewer = (tmp_path / f"{x}.nbc" for x in ("a", "b", "merged", "fewer"))
    for source, target in (("a.txt", a), ("b.txt", b)):
        assert run("fit", "--multi-label", "--lines", str(tmp_path / source), "-o",
                   str(target), "-q").returncode == 0  # fmt: skip
    assert run("merge", str(a), str(b), "-o", str(merged), "-q").returncode == 0
    assert merged.read_bytes() == model.read_bytes()
    assert run("unlearn", "-m", str(model), "--lines", str(tmp_path / "b.txt"), "-o",
               str(fewer), "-q").returncode == 0  # fmt: skip
    assert fewer.read_bytes() == a.read_bytes()
    # without the stored calibration, the stored β scales are dropped too: σ(s_l) at β
    other = json.loads(run("predict", "-m", str(model), "--format", "jsonl",
                           "--no-calibration", stdin=text).stdout)  # fmt: skip
    S = ml.LabelScorer(labelled, loaded.defaults).log_odds(X)[0]
    assert [other["probabilities"][x] for x in data["labels"]] == pytest.approx(
        (1 / (1 + np.exp(-S))).tolist(), rel=1e-12
    )


def test_check_gates_multi_label_models_by_micro_and_macro_f1(tickets, tmp_path):
    """check of two multi-label models on --lines FILE: each judged as evaluate judges it
    (the same figures, to the last digit), micro- and macro-F1 gated by --max-drop, the
    new model's ECE by --max-ece; exit 0 or 3. A single-label model against a
    multi-label one, or a TEST_DIR, is a usage error (exit 2)."""
    full, small = tmp_path / "full.nbc", tmp_path / "small.nbc"
    (tmp_path / "few.txt").write_text("\n".join(TICKETS[:5]) + "\n")
    run("fit", "--multi-label", "--lines", str(tickets), "-o", str(full), "-q")
    run("fit", "--multi-label", "--lines", str(tmp_path / "few.txt"), "-o", str(small), "-q")

    def evaluated(model):
        done = run("evaluate", "-m", str(model), "--lines", str(tickets), "--format", "json")
        return json.loads(done.stdout)

    old, new = evaluated(full), evaluated(small)
    names = ("micro_f1", "macro_f1", "hamming_loss", "subset_accuracy", "ece")
    drops = {name: old[name] - new[name] for name in ("micro_f1", "macro_f1")}
    assert max(drops.values()) > 0.01  # the model of five lines is worse on the nine
    done = run("check", "-m", str(small), "--baseline", str(full), "--lines", str(tickets),
               "--max-drop", "0.01", "--format", "json")  # fmt: skip
    assert done.returncode == 3, done.stderr
    data = json.loads(done.stdout)
    assert data["passed"] is False and data["checked"] == ["micro_f1", "macro_f1"]
    assert list(data["metrics"]) == list(names) and data["documents"] == 9
    for name in names:
        assert data["metrics"][name] == {"baseline": old[name], "new": new[name],
                                         "change": new[name] - old[name]}  # fmt: skip
    failing = [name for name, drop in drops.items() if drop > 0.01]
    assert [f.split()[0] for f in data["failures"]] == failing
    text = run("check", "-m", str(small), "--baseline", str(full), "--lines", str(tickets),
               "--max-drop", "0.01")  # fmt: skip
    assert text.returncode == 3 and "FAILED: keep the baseline" in text.stdout
    assert "Hamming loss" in text.stdout and "subset accuracy" in text.stdout
    # Against itself it passes; the ECE gate alone can fail it.
    same = run("check", "-m", str(full), "--baseline", str(full), "--lines", str(tickets))
    assert same.returncode == 0 and "passed" in same.stdout
    assert old["ece"] > 0
    strict = run("check", "-m", str(full), "--baseline", str(full), "--lines", str(tickets),
                 "--max-ece", "0", "--format", "json")  # fmt: skip
    assert strict.returncode == 3
    failures = json.loads(strict.stdout)["failures"]
    assert failures == [f"ece {old['ece']:.4f} is above --max-ece 0.0"]
    # Models of two kinds, and a folder of documents, are usage errors.
    single = tmp_path / "single.nbc"
    (tmp_path / "single.tsv").write_text("billing\tmy invoice\noutage\tthe api is down\n")
    run("fit", "--lines", str(tmp_path / "single.tsv"), "-o", str(single), "-q")
    mixed = run("check", "-m", str(full), "--baseline", str(single), "--lines", str(tickets))
    assert mixed.returncode == 2
    assert f"{str(single)!r} is a single-label model and the other a multi-label one" in (
        mixed.stderr)  # fmt: skip
    folder = run("check", "-m", str(full), "--baseline", str(full), str(tmp_path))
    assert folder.returncode == 2 and "reads --lines FILE" in folder.stderr


def _documents_and_counts(n: int = 60, V: int = 50, L: int = 12, seed: int = 5):
    """n random documents (counts X (n, V), labels Y (n, L) bool, some with none) and
    the label-set Counts of them all."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(n, V)) * (rng.random((n, V)) < 0.2)
    Y = rng.random((n, L)) < 0.2
    names = [",".join(f"l{l:02d}" for l in np.flatnonzero(row)) for row in Y]
    classes = sorted(set(names))
    member = np.array([[name == c for c in classes] for name in names], dtype=np.int64)
    counts = Counts(
        classes=tuple(classes),
        vocabulary=tuple(f"w{j:02d}" for j in range(V)),
        class_count=member.sum(axis=0),
        doc_count=(X > 0).astype(np.int64).T @ member,
        token_count=X.T @ member,
    )
    return sp.csr_matrix(X), Y, counts


@pytest.mark.parametrize("pairs", [True, False])
def test_label_major_fold_counts_score_as_the_fold_s_training_counts(monkeypatch, pairs):
    # FoldCounts (every document's counts label-major, less a fold's, a block of labels
    # at a time) gives the sums and held-out log-odds of LabelCounts.without, bit for bit,
    # with weights as pairs (forced here: these are small enough for a table) or a table.
    X, Y, counts = _documents_and_counts()
    labelled = ml.label_counts(counts)
    Y = Y[:, [labelled.labels.index(f"l{l:02d}") for l in range(Y.shape[1])]]
    monkeypatch.setattr(ml, "BLOCK_PAIRS", 40)  # blocks of a few labels
    if pairs:
        monkeypatch.setattr(ml, "dense_cells", lambda V, C: False)
    fold = np.arange(12)
    held = X[fold]
    training = labelled.without(held, Y[fold])
    by_label = ml.FoldCounts.of(labelled).without(held, Y[fold])
    assert len(list(by_label._blocks(np.arange(len(labelled.labels))))) > 3
    used = np.intersect1d(np.flatnonzero(training.word_tokens > 0), np.unique(held.indices))
    part = held[:, used]
    for settings in [*ml.CANDIDATES, ml.scaled(ml.CANDIDATES[0], 0.3)]:
        for a, b in zip(by_label.sums(settings.tf, settings.idf),
                        training.sums(settings.tf, settings.idf)):  # fmt: skip
            assert a.tolist() == b.tolist()
        expected = ml.LabelScorer(training, settings, rows=used).log_odds(part)
        for cols in (None, np.array([1, 4, 5, 11])):
            got = ml._held_out_odds(by_label, settings, cols, used, part)
            assert got.tolist() == (expected if cols is None else expected[:, cols]).tolist()
            got = ml._held_out_odds(training, settings, cols, used, part)
            assert got.tolist() == (expected if cols is None else expected[:, cols]).tolist()
