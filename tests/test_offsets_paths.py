"""One model with class offsets, every path: the same probabilities for the same document.

The demo corpus's fit choosing among its words (``--ngram-range 1,1``; the default's word
pairs make a choice without class offsets) keeps the symbols and the class offsets, and its
temperature has a gap term (t2): the richest calibration a file holds. Each document is scored by
predict on a folder (the batch path), by predict on stdin (the one-document path, without
numpy), by the library (``nbclass.load(...).predict_proba``), by scikit-learn's estimator
made from the model, and explained by ``predict --explain``, whose log-odds must be those
of the probabilities it prints next to them. (``serve`` answers predict's lines byte for
byte: tests/test_serve.py; the export's scorer: tests/test_export.py.)
"""

from __future__ import annotations

import json
import math
import subprocess

import numpy as np
import pytest
from conftest import DEMO_CORPUS, nbclass_command

import nbclass
from nbclass.sklearn import NaiveBayesTextClassifier

TEXTS = [
    "My card was charged twice ($49.99 + $49.99) -- refund please!!",
    "login fails: ERR_CERT_DATE_INVALID @ 09:00, 100% of users?",
    "the outage page says 503 :( since this morning",
    "password reset " * 40,  # long: log(1 + n) moves the offsets d_c
    "refund",
    "a b c",  # symbols only
    "zzqq qqzz",  # no known token: the class prior
    "",
]


def run(*args, input=None) -> str:
    result = subprocess.run(
        [*nbclass_command(), *map(str, args)], input=input, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """(model path, folder of the TEXTS, their paths in the folder's order)."""
    root = tmp_path_factory.mktemp("offsets")
    model = root / "demo.nbc"
    run("fit", DEMO_CORPUS, "-o", model, "-q", "--ngram-range", "1,1")  # for the offsets
    folder = root / "docs"
    folder.mkdir()
    paths = []
    for i, text in enumerate(TEXTS):
        paths.append(folder / f"{i:02d}.txt")
        paths[-1].write_text(text, encoding="utf-8")
    return model, folder, paths


def rows(lines: str, classes) -> np.ndarray:
    records = [json.loads(line) for line in lines.splitlines()]
    return np.array([[r["probabilities"][c] for c in classes] for r in records])


def test_every_path_gives_the_batch_probabilities(demo):
    model, folder, paths = demo
    loaded = nbclass.load(str(model))
    calibration = loaded._model.calibration
    assert len(calibration.offsets) == 3 and calibration.t2 != 0  # what this test is about
    classes = loaded.classes_
    batch = rows(run("predict", "-m", model, folder, "--format", "jsonl", "--min-known", 0),
                 classes)  # fmt: skip
    assert batch.shape == (len(TEXTS), 3)
    one = np.vstack([
        rows(run("predict", "-m", model, "--format", "jsonl", "--min-known", 0, input=text),
             classes)
        for text in TEXTS
    ])  # fmt: skip
    np.testing.assert_allclose(one, batch, rtol=1e-12, atol=1e-15)
    assert loaded.predict_proba(TEXTS).tolist() == batch.tolist()
    estimator = NaiveBayesTextClassifier.from_model(loaded)
    assert list(estimator.classes_) == classes
    assert estimator.predict_proba(TEXTS).tolist() == batch.tolist()
    # without the calibration, offsets and all: other probabilities, on every path alike
    plain = rows(run("predict", "-m", model, folder, "--format", "jsonl", "--min-known", 0,
                     "--no-calibration"), classes)  # fmt: skip
    assert np.abs(plain - batch)[:-2].max() > 1e-3
    assert loaded.using(calibration=False).predict_proba(TEXTS).tolist() == plain.tolist()


def test_the_explained_log_odds_are_those_of_the_printed_probabilities(demo):
    """explain adds the class offsets to the bias: the words' contributions and the bias
    sum to log p(label) − log p(versus) of the same line, calibration and offsets included."""
    model, folder, paths = demo
    records = [
        json.loads(line)
        for line in run("predict", "-m", model, folder, "--format", "jsonl", "--min-known", 0,
                        "--explain", 1000).splitlines()
    ]  # fmt: skip
    assert len(records) == len(TEXTS)
    loaded = nbclass.load(str(model))
    for text, record in zip(TEXTS, records):
        explanation, p = record["explanation"], record["probabilities"]
        log_odds = math.log(p[record["label"]]) - math.log(p[explanation["versus"]])
        assert explanation["log_odds"] == pytest.approx(log_odds, rel=1e-12, abs=1e-12)
        library = loaded.explain(text, 1000)  # the words' contributions and the bias
        assert (library["label"], library["versus"]) == (record["label"], explanation["versus"])
        assert library["log_odds"] == explanation["log_odds"]
        total = math.fsum([v for _, _, v in library["words"]] + [library["bias"]])
        assert total == pytest.approx(log_odds, rel=1e-12, abs=1e-12)
