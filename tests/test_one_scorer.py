"""One scorer: every command reports a model's probabilities as predict does (stored
settings and calibration), and a document with no known word gets the class prior.

Real corpora: a sample of 20 Newsgroups (``news_sample``) and of SMS spam, whose model
(chosen by fit: a multinomial with the class prior, calibrated) is the one whose empty
message used to be reported as near-certain ham.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import tarfile
from dataclasses import replace as dataclass_replace

import numpy as np
import pytest
from conftest import SHARED_CORPORA, nbclass_command
from sklearn.metrics import accuracy_score, f1_score

from nbclass.modelfile.quick import QuickModel, reported
from nbclass.modelfile.textfile import load
from nbclass.models.chosen import calibrated
from nbclass.models.model import Classifier
from nbclass.records import replace

pytestmark = pytest.mark.corpus

# (Punctuation is no longer sure to be unknown: the default model of SMS spam keeps the
# symbols, "!!!" and "..." among them; these are not in its corpus.)
NO_KNOWN_WORD = ["", "zzqx qqzx xxzq", "\t\n  \u2042 \u2e18\u2e18 \u2042"]


def run(*args, input=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *map(str, args)], input=input, capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def news(news_sample, tmp_path_factory):
    """(model path, test folder): the default model of the training sample, and the test
    sample with two documents of no known word added."""
    train, test = news_sample
    root = tmp_path_factory.mktemp("one-scorer")
    model = root / "news.nbc"
    result = run("fit", train, "-o", model, "-q")
    assert result.returncode == 0, result.stderr
    folder = root / "test"
    shutil.copytree(test, folder)
    (folder / "sci.space" / "empty.txt").write_text("", encoding="utf-8")
    (folder / "alt.atheism" / "unknown.txt").write_text(NO_KNOWN_WORD[1], encoding="utf-8")
    return model, folder


@pytest.fixture(scope="module")
def sms(tmp_path_factory):
    """A default model of 1,200 SMS messages (1,000 ham, 200 spam)."""
    archive = SHARED_CORPORA / "sms_spam.tar.gz"
    if not archive.exists():
        pytest.skip(f"{archive} is absent (the shared corpora live beside the repository)")
    root = tmp_path_factory.mktemp("sms")
    wanted = {"ham": 1000, "spam": 200}
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            parts = member.name.split("/")
            if len(parts) == 3 and member.isfile() and wanted.get(parts[1], 0) > 0:
                wanted[parts[1]] -= 1
                target = root / "corpus" / parts[1] / parts[2]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(member).read())
    model = root / "sms.nbc"
    result = run("fit", root / "corpus", "-o", model, "-q")
    assert result.returncode == 0, result.stderr
    return model


def metrics_of_predict(model, folder, *options) -> dict:
    """Accuracy, macro-F1, log loss and ECE (10 bins) computed here, from the JSONL that
    ``nbclass predict --min-known 0`` prints for the labelled ``folder``."""
    result = run("predict", "-m", model, folder, "--format", "jsonl", "--min-known", 0, *options)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    truth = [r["source"].split("/")[-2] for r in records]
    labels = [r["label"] for r in records]
    p_true = np.array([r["probabilities"][t] for r, t in zip(records, truth)])
    confidence = np.array([r["probability"] for r in records])
    correct = np.array([a == b for a, b in zip(labels, truth)])
    bins = np.clip(np.ceil(confidence * 10).astype(int) - 1, 0, 9)
    ece = sum(
        (bins == b).mean() * abs(correct[bins == b].mean() - confidence[bins == b].mean())
        for b in range(10)
        if (bins == b).any()
    )
    with np.errstate(divide="ignore"):  # a probability printed as 0.0 (underflow)
        log_loss = float(-np.mean(np.log(p_true)))
    return {
        "documents": len(records),
        "accuracy": accuracy_score(truth, labels),
        "macro_f1": f1_score(truth, labels, average="macro"),
        "log_loss": log_loss,
        "ece": float(ece),
    }


def evaluate_json(model, folder, *options) -> dict:
    result = run("evaluate", "-m", model, folder, "--format", "json", *options)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("options", [(), ("--no-calibration",)], ids=["calibrated", "formula"])
def test_evaluate_reports_the_metrics_of_predicts_output(news, options):
    model, folder = news
    assert load(str(model)).calibration is not None  # fit chose and calibrated
    expected = metrics_of_predict(model, folder, *options)
    got = evaluate_json(model, folder, *options)
    assert got["calibrated"] is (not options)
    assert got["documents"] == expected["documents"] == 122
    assert got["accuracy"] == expected["accuracy"]
    assert got["macro_f1"] == pytest.approx(expected["macro_f1"], rel=1e-12)
    if math.isfinite(expected["log_loss"]):
        assert got["log_loss"] == pytest.approx(expected["log_loss"], rel=1e-12)
    else:  # the JSONL's 0.0 is a log posterior below -745; evaluate keeps it
        assert options and got["log_loss"] > 745 / expected["documents"]
    assert got["ece"] == pytest.approx(expected["ece"], rel=1e-9, abs=1e-12)


def test_the_temperature_keeps_the_labels_and_the_class_offsets_move_them(news):
    """The temperature T(x) divides a document's scores by one positive number: the
    formula's labels. The class offsets the choice picked here (a_c + d_c log(1 + n_x))
    move some of them, and the labels are those of softmax(b / T + a + d log(1 + n))."""
    model, folder = news
    loaded = load(str(model))
    calibration = loaded.calibration
    assert len(calibration.offsets) == len(calibration.length_offsets) == 4  # picked here
    paths = sorted(folder.rglob("*.txt"))
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in paths]
    formula = Classifier(loaded, calibrate=False).predict(texts).log_proba
    temperature = replace(calibration, offsets=(), length_offsets=())
    alone = Classifier(dataclass_replace(loaded, calibration=temperature)).predict(texts)
    assert (alone.log_proba.argmax(axis=1) == formula.argmax(axis=1)).all()
    counter = Classifier(loaded)
    X = counter.count(texts)[0]
    known = np.asarray(X.sum(axis=1)).ravel()
    by_hand = alone.log_proba + np.asarray(calibration.offsets) + np.outer(
        np.log1p(known), calibration.length_offsets
    )
    labels = counter.predict(texts).log_proba.argmax(axis=1)
    some = known > 0  # the two documents of no known word get the prior
    assert some.sum() == len(texts) - 2
    assert (labels[some] == by_hand[some].argmax(axis=1)).all()
    assert (labels != formula.argmax(axis=1)).sum() >= 1
    with_it = evaluate_json(model, folder)
    without = evaluate_json(model, folder, "--no-calibration")
    assert with_it["confusion_matrix"] != without["confusion_matrix"]
    assert abs(with_it["log_loss"] - without["log_loss"]) > 1e-3


def test_check_gates_the_calibrated_ece(news):
    model, folder = news
    calibrated_ece = evaluate_json(model, folder)["ece"]
    formula_ece = evaluate_json(model, folder, "--no-calibration")["ece"]
    assert calibrated_ece != formula_ece
    for options, ece in (((), calibrated_ece), (("--no-calibration",), formula_ece)):
        result = run(
            "check", "-m", model, "--baseline", model, folder, "--format", "json", *options
        )
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["metrics"]["ece"]["new"] == ece
    # A limit between the two: the calibrated model passes, the formula fails, or the
    # other way round; either way the gate follows the probabilities predict reports.
    limit = (calibrated_ece + formula_ece) / 2
    for options, ece in (((), calibrated_ece), (("--no-calibration",), formula_ece)):
        result = run(
            "check", "-m", model, "--baseline", model, folder, "--max-ece", limit, *options
        )
        assert result.returncode == (3 if ece > limit else 0), result.stdout + result.stderr


def test_cv_scores_folds_with_and_without_the_calibration(news):
    model, folder = news
    runs = {}
    for options in ((), ("--no-calibration",)):
        result = run("cv", folder, "--like", model, "-k", 3, "--format", "json", *options)
        assert result.returncode == 0, result.stderr
        runs[options] = json.loads(result.stdout)
    calibrated_run, formula_run = runs[()], runs[("--no-calibration",)]
    assert calibrated_run["calibrated"] is True and formula_run["calibrated"] is False
    with_it, without = calibrated_run["metrics"], formula_run["metrics"]
    # the class offsets a fold's choice picks move labels: the accuracies may differ too
    assert with_it["log_loss"]["folds"] != without["log_loss"]["folds"]


def test_the_library_route_calibrates_as_predict(news):
    model, folder = news
    paths = sorted(p for p in folder.rglob("*.txt"))
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in paths]
    loaded = load(str(model))
    got = np.exp(Classifier(loaded).predict(texts).log_proba)
    result = run("predict", "-m", model, *paths, "--format", "jsonl", "-j", 1)
    classes = list(loaded.active_counts.classes)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    want = np.array([[r["probabilities"][c] for c in classes] for r in records])
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-300)
    formula = np.exp(Classifier(loaded, calibrate=False).predict(texts).log_proba)
    assert np.abs(formula - want).max() > 1e-3


def test_one_document_path_follows_the_batch_rules(news, news_sample):
    """Without numpy, the same posterior as the batch function, calibration and the
    no-evidence rule included, on 120 real documents and three with no known word."""
    model, _ = news
    _, test = news_sample
    texts = [
        p.read_text(encoding="utf-8", errors="replace") for p in sorted(test.rglob("*.txt"))
    ] + NO_KNOWN_WORD
    quick = QuickModel(str(model))
    assert quick.calibration is not None and quick.can_score(quick.defaults)
    batch = Classifier(load(str(model))).predict(texts).log_proba
    for text, row in zip(texts, batch):
        known = quick.known_tokens(text)[0]
        jll = quick.joint_log_likelihood(text, quick.defaults)
        one = reported(jll, known, quick.class_count, quick.defaults, quick.calibration)
        np.testing.assert_allclose(one, row, rtol=1e-12, atol=1e-12)
    for text in NO_KNOWN_WORD:  # the CLI's one-document path prints the same line
        single = run("predict", "-m", model, "--format", "jsonl", input=text)
        record = json.loads(single.stdout)
        assert record["reason"] == "no-known-words" and record["log_evidence"] == 0.0


def test_a_document_with_no_known_word_gets_the_class_prior_under_calibration(sms):
    model = load(str(sms))
    assert model.defaults.class_prior and model.calibration is not None
    N_c = model.counts.class_count.tolist()
    assert model.counts.classes == ("ham", "spam") and N_c == [1000, 200]
    prior = [(1000 + 1) / (1200 + 2), (200 + 1) / (1200 + 2)]
    # What the calibration alone made of it: T(x) at 0 tokens sharpens the prior.
    log_pi = np.log(prior)[None, :]
    sharpened = np.exp(calibrated(log_pi, np.zeros(1), model.calibration))[0]
    assert sharpened[0] - prior[0] > 0.01
    for text in NO_KNOWN_WORD:
        for options in ((), ("--no-calibration",)):
            result = run("predict", "-m", sms, "--format", "jsonl", *options, input=text)
            assert result.returncode == 0, result.stderr
            record = json.loads(result.stdout)
            assert record["label"] == "unsure" and record["reason"] == "no-known-words"
            assert record["log_evidence"] == 0.0
            got = [record["probabilities"]["ham"], record["probabilities"]["spam"]]
            assert got == pytest.approx(prior, rel=1e-15, abs=0)


def test_no_evidence_exits_9_unless_min_known_0(sms, tmp_path):
    for text in NO_KNOWN_WORD:
        result = run("predict", "-m", sms, "--exit-code", input=text)
        assert result.returncode == 9 and result.stdout == f"-\tunsure\t{1001 / 1202!r}\n"
        result = run("predict", "-m", sms, "--exit-code", "--min-known", "0", input=text)
        assert result.returncode == 10 and result.stdout.split("\t")[1] == "ham"
    # A file and a folder (the batch path) say the same.
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    result = run("predict", "-m", sms, "--exit-code", tmp_path / "empty.txt")
    assert result.returncode == 9
    result = run("predict", "-m", sms, tmp_path, "--format", "jsonl", "--explain", 3)
    record = json.loads(result.stdout)
    assert record["reason"] == "no-known-words" and record["log_evidence"] == 0.0
    assert record["explanation"]["words"] == []
    ham, spam = record["probabilities"]["ham"], record["probabilities"]["spam"]
    assert record["explanation"]["log_odds"] == pytest.approx(math.log(1001 / 201), rel=1e-14)
    assert [ham, spam] == pytest.approx([1001 / 1202, 201 / 1202], rel=1e-15, abs=0)
