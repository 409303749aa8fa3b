"""One model of many classes, every path: the same probabilities for the same document.

tests/test_offsets_paths.py scores the demo corpus's three classes by every path. Here a
default fit of 600 generated classes × 32,000 words: a sparse model (past the dense
table's cells), calibrated with a gap term (t2) and no class offsets (the choice scores
them up to 100 classes), the rows whose every scale is positive and finite, the rule at
many classes; and the same file with 600 class offsets a_c + d_c · log(1 + n) written in
(the loader takes them at any number of classes). Each document is scored by predict on
a folder (the batch path), predict on stdin (the one-document path, without numpy), the
library, scikit-learn's estimator, ``serve`` and ``predict --explain``, and evaluate's log
loss is that of predict's probabilities.
"""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import replace

import numpy as np
import pytest
from conftest import nbclass_command
from test_serve import Server

import nbclass
from nbclass.modelfile.textfile import load, save
from nbclass.models.layout import dense_cells
from nbclass.sklearn import NaiveBayesTextClassifier

C, OWN = 600, 80
ODD = ("c1w3", "zzqq qqzz", "")  # one known word, none, an empty document


def run(*args, input=None) -> str:
    result = subprocess.run(
        [*nbclass_command(), *map(str, args)], input=input, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def documents(rng, c: int, many: int) -> list[str]:
    """``many`` texts of class c: half its own words, a fifth its neighbour's, the rest
    of 40 words every class shares."""
    own = [f"c{c}w{k}" for k in range(OWN)]
    near = [f"c{(c + 1) % C}w{k}" for k in range(OWN)]
    shared = [f"s{k}" for k in range(40)]
    texts = []
    for _ in range(many):
        draws = rng.random(int(rng.integers(3, 30)))
        texts.append(" ".join(
            rng.choice(own) if r < 0.5 else rng.choice(near) if r < 0.7 else rng.choice(shared)
            for r in draws
        ))  # fmt: skip
    return texts


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """(the default model, the same with class offsets, the test folder, its texts in the
    folder's order)."""
    root = tmp_path_factory.mktemp("many-classes")
    rng = np.random.default_rng(2)
    for c in range(C):
        folder = root / "train" / f"k{c:03d}"
        folder.mkdir(parents=True)
        for i, text in enumerate(documents(rng, c, 8)):
            (folder / f"{i}.txt").write_text(text, encoding="utf-8")
    model = root / "wide.nbc"
    run("fit", root / "train", "-o", model, "-q")
    rng = np.random.default_rng(7)  # documents no fit saw, of 40 classes
    tests = [(f"k{c:03d}", documents(rng, c, 1)[0]) for c in range(0, C, 15)]
    tests += [("k000", " ".join(documents(rng, 0, 30))),  # long: log(1 + n) weighs
              *zip(("k001", "k002", "k003"), ODD)]  # fmt: skip
    texts = []
    for i, (label, text) in enumerate(tests):
        folder = root / "test" / label
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i:02d}.txt").write_text(text, encoding="utf-8")
    paths = sorted((root / "test").rglob("*.txt"))
    texts = [p.read_text(encoding="utf-8") for p in paths]
    loaded = load(str(model))
    rng = np.random.default_rng(3)
    offsets = replace(loaded.calibration, offsets=tuple(rng.uniform(-2, 2, C).tolist()),
                      length_offsets=tuple(rng.uniform(-0.5, 0.5, C).tolist()))  # fmt: skip
    with_offsets = root / "offsets.nbc"
    save(replace(loaded, calibration=offsets), str(with_offsets))
    return model, with_offsets, root / "test", texts


@pytest.fixture(params=["temperature", "offsets"])
def case(request, wide):
    model, with_offsets, folder, texts = wide
    return (model if request.param == "temperature" else with_offsets), folder, texts


def rows(lines: str, classes) -> np.ndarray:
    records = [json.loads(line) for line in lines.splitlines()]
    return np.array([[r["probabilities"][c] for c in classes] for r in records])


def test_the_model_is_what_this_test_is_about(wide):
    model, with_offsets, _, texts = wide
    loaded = load(str(model))
    counts = loaded.counts
    assert len(counts.classes) == C and not dense_cells(len(counts.vocabulary), C)
    calibration = loaded.calibration
    assert calibration.t2 != 0 and calibration.offsets == ()
    assert len(load(str(with_offsets)).calibration.offsets) == C
    assert len(texts) == 44


def test_every_path_gives_the_batch_probabilities(case, start):
    model, folder, texts = case
    loaded = nbclass.load(str(model))
    classes = loaded.classes_
    batch = rows(run("predict", "-m", model, folder, "--format", "jsonl", "--min-known", 0),
                 classes)  # fmt: skip
    assert batch.shape == (len(texts), C)
    assert loaded.predict_proba(texts).tolist() == batch.tolist()
    estimator = NaiveBayesTextClassifier.from_model(loaded)
    assert estimator.predict_proba(texts).tolist() == batch.tolist()
    plain = loaded.using(calibration=False).predict_proba(texts)
    assert np.abs(plain - batch).max() > 1e-3  # the calibration moves them
    # two documents, the long one, one word, no known word, the empty one
    special = [i for i, text in enumerate(texts) if len(text) > 300 or text in ODD]
    chosen = [i for i in range(len(texts)) if i not in special][:2] + special
    assert len(chosen) == 6
    lines = [run("predict", "-m", model, "--format", "jsonl", "--min-known", 0, input=texts[i])
             for i in chosen]  # fmt: skip
    one = np.vstack([rows(line, classes) for line in lines])
    np.testing.assert_allclose(one, batch[chosen], rtol=1e-12, atol=1e-15)
    server = start(model)
    try:
        for i, line in zip(chosen, lines):
            status, body = server.predict({"text": texts[i], "min_known": ["0"]})
            assert status == 200 and body.decode("utf-8") == line
    finally:
        assert server.stop() == 0


@pytest.fixture
def start():
    servers = []

    def make(model, *options) -> Server:
        servers.append(Server(model, *options))
        return servers[-1]

    yield make
    for server in servers:
        server.kill()


def test_evaluate_reports_the_log_loss_of_predicts_probabilities(case):
    model, folder, texts = case
    classes = nbclass.load(str(model)).classes_
    records = [json.loads(line) for line in run(
        "predict", "-m", model, folder, "--format", "jsonl", "--min-known", 0).splitlines()]
    truth = [classes.index(r["source"].split("/")[-2]) for r in records]
    probabilities = rows("\n".join(map(json.dumps, records)), classes)
    assert (probabilities.argmax(axis=1) == truth).mean() > 0.5
    got = json.loads(run("evaluate", "-m", model, folder, "--format", "json"))
    assert got["documents"] == len(texts) and got["calibrated"] is True
    want = -math.fsum(math.log(p[t]) for p, t in zip(probabilities, truth)) / len(truth)
    assert got["log_loss"] == pytest.approx(want, rel=1e-12)
    assert got["accuracy"] == np.mean(probabilities.argmax(axis=1) == truth)


def test_the_explained_log_odds_are_those_of_the_printed_probabilities(case):
    model, folder, texts = case
    records = [json.loads(line) for line in run(
        "predict", "-m", model, folder, "--format", "jsonl", "--min-known", 0,
        "--explain", 1000).splitlines()]  # fmt: skip
    loaded = nbclass.load(str(model))
    assert len(records) == len(texts)
    for text, record in zip(texts, records):
        if text in ODD[1:]:  # no known word: nothing to explain
            continue
        explanation, p = record["explanation"], record["probabilities"]
        log_odds = math.log(p[record["label"]]) - math.log(p[explanation["versus"]])
        assert explanation["log_odds"] == pytest.approx(log_odds, rel=1e-12, abs=1e-12)
        library = loaded.explain(text, 1000)
        assert (library["label"], library["versus"]) == (record["label"], explanation["versus"])
        total = math.fsum([v for _, _, v in library["words"]] + [library["bias"]])
        assert total == pytest.approx(log_odds, rel=1e-12, abs=1e-12)
