"""Metrics: hand-computed fractions, and equality with scikit-learn on the same predictions."""

from __future__ import annotations

import json
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest
import sklearn.metrics as skm
from conftest import CHINESE, write_corpus
from hypothesis import given, settings
from hypothesis import strategies as st

from nbclass.cli.app import cli
from nbclass.evaluation.judging import evaluate
from nbclass.modelfile.textfile import save
from nbclass.models import metrics
from nbclass.models.estimators import EstimatorSettings
from nbclass.models.model import Classifier, fit
from nbclass.reading.corpus import list_corpus, read_text

# --- hand-computed -------------------------------------------------------------------------

# 3 labels; true and predicted labels of 7 documents, one without a label (-1).
Y_TRUE = np.array([0, 0, 0, 1, 1, 2, 2])
Y_PRED = np.array([0, 0, 1, 1, 2, 2, -1])


def test_confusion_matrix_by_hand():
    assert metrics.confusion_matrix(Y_TRUE, Y_PRED, 3).tolist() == [
        [2, 1, 0],
        [0, 1, 1],
        [0, 0, 1],
    ]


def test_class_metrics_by_hand():
    M = metrics.confusion_matrix(Y_TRUE, Y_PRED, 3)
    pc = metrics.class_metrics(M, np.bincount(Y_TRUE, minlength=3))
    # label 0: tp 2, predicted 2, support 3; label 1: tp 1, predicted 2, support 2;
    # label 2: tp 1, predicted 2, support 2 (one of its documents got no label).
    assert pc.precision.tolist() == [float(F(2, 2)), float(F(1, 2)), float(F(1, 2))]
    assert pc.recall.tolist() == [float(F(2, 3)), float(F(1, 2)), float(F(1, 2))]
    assert pc.f1.tolist() == [float(F(4, 4 + 0 + 1)), float(F(2, 2 + 1 + 1)), float(F(2, 4))]
    assert pc.support.tolist() == [3, 2, 2]
    assert metrics.accuracy(M, 7) == float(F(4, 7))
    assert metrics.macro_f1(pc) == pytest.approx(float((F(4, 5) + F(1, 2) + F(1, 2)) / 3))
    # micro: 2 * 4 / (6 predicted + 7 true)
    assert metrics.micro_f1(pc) == float(F(8, 13))


def test_a_label_neither_true_nor_predicted_is_not_in_the_macro_average():
    M = metrics.confusion_matrix(np.array([0, 1]), np.array([0, 0]), 3)
    pc = metrics.class_metrics(M, np.array([1, 1, 0]))
    assert pc.active.tolist() == [True, True, False]
    # F1 label 0: 2*1/(2+1+0) = 2/3; label 1: 0
    assert metrics.macro_f1(pc) == pytest.approx(float(F(2, 3) / 2))


def test_log_loss_and_brier_by_hand():
    proba = np.array([[F(3, 4), F(1, 4), F(0)], [F(1, 5), F(1, 5), F(3, 5)]])
    y = np.array([0, 1])
    with np.errstate(divide="ignore"):  # log 0 = -inf is meant
        log_p = np.log(np.array([[float(v) for v in row] for row in proba]))
    assert metrics.log_loss(log_p[[0, 1], y]) == pytest.approx(
        -(np.log(3 / 4) + np.log(1 / 5)) / 2, rel=1e-15
    )
    brier = ((F(1, 4) ** 2 + F(1, 4) ** 2 + 0) + (F(1, 5) ** 2 + F(4, 5) ** 2 + F(3, 5) ** 2)) / 2
    assert metrics.brier_score(np.exp(log_p), y) == pytest.approx(float(brier), rel=1e-15)


def test_log_loss_is_infinite_when_the_true_class_had_probability_0():
    assert metrics.log_loss(np.array([-1.0, -np.inf])) == np.inf


def test_ece_bins_are_closed_on_the_right():
    # 0.1 belongs to the first bin [0, 0.1]; 0.3 to (0.2, 0.3]; 1.0 to (0.9, 1.0].
    cal = metrics.calibration(np.array([0.1, 0.3, 0.3, 1.0]), np.array([1, 1, 0, 1]), 10)
    assert cal.count.tolist() == [1, 0, 2, 0, 0, 0, 0, 0, 0, 1]
    assert cal.accuracy[[0, 2, 9]].tolist() == [1.0, 0.5, 1.0]
    assert cal.confidence[[0, 2, 9]].tolist() == [0.1, 0.3, 1.0]
    # (1/4)|1 - 0.1| + (2/4)|0.5 - 0.3| + (1/4)|1 - 1|
    assert cal.ece == pytest.approx(0.9 / 4 + 0.2 / 2, rel=1e-15)


def test_ece_of_five_bins_by_hand():
    conf = np.array([0.35, 0.45, 0.61, 0.79, 0.8, 0.99])
    correct = np.array([0, 1, 1, 0, 1, 1])
    cal = metrics.calibration(conf, correct, 5)
    # bins (0.2,0.4]: .35 (wrong); (0.4,0.6]: .45 (right); (0.6,0.8]: .61 .79 .8; (0.8,1]: .99
    assert cal.count.tolist() == [0, 1, 1, 3, 1]
    expected = (
        abs(0 - 0.35) + abs(1 - 0.45) + 3 * abs(2 / 3 - (0.61 + 0.79 + 0.8) / 3) + abs(1 - 0.99)
    ) / 6
    assert cal.ece == pytest.approx(expected, rel=1e-12)


# --- scikit-learn on the same predictions ----------------------------------------------------


def assert_like_sklearn(y_true, y_pred, log_proba, n_labels):
    """Every metric against scikit-learn's on the same labels and probabilities.

    scikit-learn's log loss clips probabilities to [eps, 1 - eps]; nbclass uses the log
    posterior as it is, so the comparison clips ours the same way first.
    """
    M = metrics.confusion_matrix(y_true, y_pred, n_labels)
    pc = metrics.class_metrics(M, np.bincount(y_true, minlength=n_labels))
    labels = list(range(n_labels))
    assert M.tolist() == skm.confusion_matrix(y_true, y_pred, labels=labels).tolist()
    assert metrics.accuracy(M, len(y_true)) == pytest.approx(
        skm.accuracy_score(y_true, y_pred), abs=1e-15
    )
    p, r, f, s = skm.precision_recall_fscore_support(
        y_true, y_pred, labels=labels, zero_division=0
    )
    np.testing.assert_allclose(pc.precision, p, atol=1e-15)
    np.testing.assert_allclose(pc.recall, r, atol=1e-15)
    np.testing.assert_allclose(pc.f1, f, atol=1e-15)
    assert pc.support.tolist() == s.tolist()
    for average, ours in (("macro", metrics.macro_f1(pc)), ("micro", metrics.micro_f1(pc))):
        theirs = skm.f1_score(y_true, y_pred, average=average, zero_division=0)
        assert ours == pytest.approx(theirs, abs=1e-15)
    if log_proba is not None:
        proba = np.exp(log_proba)
        eps = np.finfo(float).eps
        log_p = np.clip(log_proba, np.log(eps), np.log1p(-eps))
        assert metrics.log_loss(log_p[np.arange(len(y_true)), y_true]) == pytest.approx(
            skm.log_loss(y_true, proba, labels=labels), abs=1e-12
        )
        assert metrics.brier_score(proba, y_true) == pytest.approx(
            skm.brier_score_loss(y_true, proba, labels=labels, scale_by_half=False), abs=1e-14
        )


@settings(max_examples=60, deadline=None)
@given(
    n_labels=st.integers(2, 5),
    data=st.data(),
)
def test_metrics_equal_sklearn_on_random_predictions(n_labels, data):
    n = data.draw(st.integers(1, 40))
    y_true = np.array(data.draw(st.lists(st.integers(0, n_labels - 1), min_size=n, max_size=n)))
    y_pred = np.array(data.draw(st.lists(st.integers(0, n_labels - 1), min_size=n, max_size=n)))
    raw = np.array(
        data.draw(st.lists(st.floats(0.01, 1.0), min_size=n * n_labels, max_size=n * n_labels))
    ).reshape(n, n_labels)
    proba = raw / raw.sum(axis=1, keepdims=True)
    assert_like_sklearn(y_true, y_pred, np.log(proba), n_labels)


@pytest.mark.corpus
def test_evaluation_equals_sklearn_on_20news(news_sample):
    train, test = news_sample
    model = fit(list_corpus(str(train)))
    for s in (EstimatorSettings(), EstimatorSettings(model="bernoulli")):
        corpus = list_corpus(str(test))
        ev = evaluate(model, s, corpus)
        # evaluate keeps what the metrics need of each row; the rows themselves, as scored:
        texts = [read_text(path) for path in corpus.paths]
        log_proba = Classifier(model, s, calibrate=True).predict(texts).log_proba
        proba = np.exp(log_proba)
        assert ev.n_docs == 120
        assert ev.y_pred.tolist() == log_proba.argmax(axis=1).tolist()
        assert ev.log_loss == metrics.log_loss(log_proba[np.arange(120), ev.y_true])
        assert ev.brier_score == metrics.brier_score(proba, ev.y_true)
        assert_like_sklearn(ev.y_true, ev.y_pred, log_proba, len(ev.labels))
        assert ev.accuracy == skm.accuracy_score(ev.y_true, proba.argmax(axis=1))
        assert 1 / 4 < ev.accuracy < 1  # better than chance on 4 groups
        assert ev.macro_f1 == pytest.approx(
            skm.f1_score(ev.y_true, ev.y_pred, average="macro"), abs=1e-15
        )


# --- classes the model does not know, or that the test lacks --------------------------------


def chinese_model(tmp_path) -> Path:
    path = tmp_path / "m.nbc"
    # The plain multinomial model (the fractions of these tests are computed for it).
    train = list_corpus(str(write_corpus(tmp_path / "train", CHINESE)))
    save(fit(train, defaults=EstimatorSettings()), str(path))
    return path


def test_unknown_and_missing_classes(tmp_path):
    model = fit(list_corpus(str(write_corpus(tmp_path / "train", CHINESE))))
    test = write_corpus(
        tmp_path / "test",
        {"china": ["Chinese Beijing", "Shanghai Chinese"], "korea": ["Seoul Chinese"]},
    )
    ev = evaluate(model, EstimatorSettings(), list_corpus(str(test), min_classes=1))
    assert ev.labels == ["china", "japan", "korea"]
    assert ev.unknown_classes == ["korea"]
    assert ev.missing_classes == ["japan"]
    assert ev.y_pred.tolist() == [0, 0, 0]
    # The korea document counts as an error, ...
    assert ev.accuracy == float(F(2, 3))
    assert ev.confusion.tolist() == [[2, 0, 0], [0, 0, 0], [1, 0, 0]]
    # ... japan is neither true nor predicted so it is not averaged: F1 china 4/5, korea 0.
    assert ev.macro_f1 == pytest.approx(0.4, abs=1e-15)
    # ... and probabilistic metrics use the two china documents only.
    assert ev.known.tolist() == [True, True, False]
    assert ev.log_loss == pytest.approx(-np.mean(ev.scores.true_log[[0, 1]]), abs=1e-15)
    assert np.isnan(ev.scores.true_log[2]) and np.isnan(ev.scores.brier[2])
    assert ev.calibration.count.sum() == 2


# --- the command ---------------------------------------------------------------------------


def test_evaluate_json_is_the_library_result(tmp_path, runner):
    model = chinese_model(tmp_path)
    test = write_corpus(
        tmp_path / "test",
        {"china": ["Chinese Beijing", "Tokyo Chinese Tokyo"], "japan": ["Tokyo Japan"]},
    )
    result = runner.invoke(cli, ["evaluate", "-m", str(model), str(test), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    ev = evaluate(
        fit(list_corpus(str(tmp_path / "train"))), EstimatorSettings(), list_corpus(str(test))
    )
    assert data["documents"] == 3
    assert data["accuracy"] == ev.accuracy == float(F(2, 3))
    assert data["macro_f1"] == ev.macro_f1
    assert data["log_loss"] == ev.log_loss
    assert data["confusion_matrix"] == [[1, 1], [0, 1]]
    assert data["per_class"]["japan"] == {
        "precision": 0.5,
        "recall": 1.0,
        "f1": float(F(2, 3)),
        "support": 1,
        "predicted": 2,
    }
    assert [b["count"] for b in data["calibration"]] == ev.calibration.count.tolist()


def test_evaluate_json_writes_null_for_an_infinite_log_loss(tmp_path, runner):
    model = chinese_model(tmp_path)
    test = write_corpus(tmp_path / "test", {"japan": ["Beijing Chinese"]})
    result = runner.invoke(
        cli, ["evaluate", "-m", str(model), str(test), "--format", "json", "--estimator", "mle"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["log_loss"] is None
    assert "Infinity" not in result.stdout


def test_evaluate_text_is_plain_when_piped(tmp_path, runner):
    model = chinese_model(tmp_path)
    test = write_corpus(tmp_path / "test", {"china": ["Chinese"], "japan": ["Tokyo Japan"]})
    result = runner.invoke(cli, ["evaluate", "-m", str(model), str(test)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "\x1b[" not in out
    assert all(len(line) <= 80 and line == line.rstrip() for line in out.splitlines())
    for heading in ("accuracy", "macro F1", "per class", "confusion matrix", "reliability"):
        assert heading in out


def test_evaluate_refuses_a_missing_test_folder(tmp_path, runner):
    model = chinese_model(tmp_path)
    result = runner.invoke(cli, ["evaluate", "-m", str(model), str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert "does not exist" in result.stderr


# --- the confusion matrix drawn at 80 columns --------------------------------------------------


def drawn(renderables) -> str:
    import io

    from nbclass.output.report import show

    buffer = io.StringIO()
    show(*renderables, file=buffer)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "L, count, form",
    [
        (3, 7, "confusion matrix (rows: true class, columns"),
        (10, 42, "confusion matrix (rows: true class, columns"),
        (14, 42, "confusion matrix (rows: true class #, columns"),
        (20, 385, "largest confusions (20 classes"),
    ],
)
def test_the_confusion_matrix_takes_the_first_form_that_fits(L, count, form):
    from nbclass.output.report import confusion_section

    labels = [f"newsgroup.number.{i:02d}" for i in range(L)]
    M = [[count if t == p else (t + p) % 3 for p in range(L)] for t in range(L)]
    text = drawn(confusion_section(labels, metrics.Confusion.of_matrix(M)))
    assert text.splitlines()[0].startswith(form)
    assert all(len(line) <= 80 for line in text.splitlines())
    if L == 20:  # the largest confusion first: (t + p) % 3 == 2, first such pair (0, 2)
        row = next(line for line in text.splitlines() if line.startswith(" newsgroup")).split()
        assert row == ["newsgroup.number.00", "newsgroup.number.02", "2", "0.5%"]
    else:
        assert str(count) in text


# --- the confusion matrix as its nonzero cells, against the dense (L, L) formulas ----------


def dense_largest_errors(M, k):
    """The report's largest confusions as they were drawn from the whole matrix."""
    L = len(M)
    cells = [(int(M[t][p]), t, p) for t in range(L) for p in range(L) if t != p and M[t][p]]
    return sorted(cells, key=lambda x: (-x[0], x[1], x[2]))[:k]


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_the_nonzero_cells_give_the_dense_matrixs_metrics(data):
    """Random log posteriors of C model classes (rows where every class is impossible:
    no label) and true labels among L >= C (labels the model does not know): every metric
    of the cells equals the dense matrix's, bit for bit, and the JSON's ``confusions``
    past ``MATRIX_LABELS`` are the matrix's nonzero cells in (true, predicted) order."""
    from nbclass.evaluation.judging import Evaluation

    C = data.draw(st.integers(1, 12), label="C")
    L = C + data.draw(st.integers(0, 3), label="unknown labels")
    n = data.draw(st.integers(0, 60), label="n")
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    rng = np.random.default_rng(seed)
    # few distinct scores: ties, which go to the first class, as predict labels
    log_proba = rng.integers(-3, 1, size=(n, C)).astype(float)
    log_proba[rng.random((n, C)) < 0.2] = -np.inf
    y_true = rng.integers(0, L, n)
    labels = [f"label {i}" for i in range(L)]
    ev = Evaluation.of(labels, C, y_true, log_proba)
    y_pred = np.where(np.isneginf(log_proba).all(axis=1), -1, log_proba.argmax(axis=1)) if n else (
        np.zeros(0, dtype=np.int64))  # fmt: skip
    assert ev.y_pred.tolist() == y_pred.tolist()
    M = metrics.confusion_matrix(y_true, y_pred, L)
    dense = metrics.class_metrics(M, np.bincount(y_true, minlength=L))
    for field in ("tp", "precision", "recall", "f1", "support", "predicted"):
        assert getattr(ev.per_class, field).tolist() == getattr(dense, field).tolist(), field
    assert ev.accuracy == metrics.accuracy(M, n)
    assert ev.macro_f1 == metrics.macro_f1(dense) and ev.micro_f1 == metrics.micro_f1(dense)
    cells = ev.confusions
    assert cells.dense().tolist() == M.tolist()
    assert cells.row_sums().tolist() == M.sum(axis=1).tolist()
    for k in (1, 3, 15, L * L):
        assert cells.largest_errors(k) == dense_largest_errors(M.tolist(), k)
    whole = ev.to_dict()
    assert whole["confusion_matrix"] == M.tolist() and "confusions" not in whole
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(metrics, "MATRIX_LABELS", L - 1)
        sparse = ev.to_dict()
    true, predicted = np.nonzero(M)
    assert sparse["confusion_matrix"] is None
    assert sparse["confusions"] == [
        [t, p, int(M[t, p])] for t, p in zip(true.tolist(), predicted.tolist())
    ]
    rest = [  # NaN where no document's class is known: compared as JSON text
        json.dumps({k: v for k, v in d.items() if k not in ("confusion_matrix", "confusions")})
        for d in (sparse, whole)
    ]
    assert rest[0] == rest[1]


def test_class_names_and_paths_are_printed_as_they_are_not_as_markup(tmp_path):
    """Class names and paths are the user's: a class "[bold]urgent" was printed "urgent"
    in evaluate's per-class table and heat map (rich read it as markup), and ":fire:"
    as an emoji. Real subprocesses, the report piped: every name and the misclassified
    document's path appear as written."""
    import subprocess

    from conftest import nbclass_command

    names = ["[bold]urgent", ":fire:", "plain [x]"]
    train = write_corpus(tmp_path / "train", {
        names[0]: ["server down outage now", "outage again down"],
        names[1]: ["invoice refund card", "refund my card"],
        names[2]: ["password login reset", "reset my password"],
    })  # fmt: skip
    test = write_corpus(tmp_path / "test", {names[0]: ["outage down"], names[1]: ["refund"]})
    (test / names[2]).mkdir()
    (test / names[2] / "[draft] a.txt").write_text("refund my card", encoding="utf-8")
    model = tmp_path / "m.nbc"
    run = [*nbclass_command()]
    subprocess.run([*run, "fit", str(train), "-o", str(model), "-q", "--model", "multinomial"],
                   check=True)  # fmt: skip
    out = subprocess.run([*run, "evaluate", "-m", str(model), str(test), "--errors"],
                         check=True, capture_output=True, text=True).stdout  # fmt: skip
    table = out[out.index("per class") : out.index("confusion matrix")]
    rows = [line.split()[0] for line in table.splitlines()[4:] if line.strip()]
    assert rows == [":fire:", "[bold]urgent", "plain"]  # sorted; the third name's first word
    assert "plain [x]" in table and "🔥" not in out
    assert "[draft] a.txt" in out[out.index("misclassified documents") :]
