"""bench/accuracy.py's own arithmetic: the multi-label scores, worked out by hand, and the
rows of models with no probabilities."""

from __future__ import annotations

import importlib.util
import json
from fractions import Fraction as F

import pytest
from conftest import REPO


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_accuracy", REPO / "bench" / "accuracy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_multi_label_scores_by_hand(bench):
    # labels a, b, c; four documents:
    #   truth {a, b}  predicted {a}      a: tp      b: fn
    #   truth {b}     predicted {b, c}   b: tp      c: fp
    #   truth {}      predicted {}       (exactly right)
    #   truth {c}     predicted {a, c}   c: tp      a: fp
    # a: tp 1, fp 1, fn 0 -> F1 2/3; b: tp 1, fn 1 -> 2/3; c: tp 1, fp 1 -> 2/3
    # micro: 2·3 / (2·3 + 2 + 1) = 6/9; Hamming: 3 wrong cells (b, c, a) of 12; subset: 1 of 4
    truth = [{"a", "b"}, {"b"}, set(), {"c"}]
    predicted = [{"a"}, {"b", "c"}, set(), {"a", "c"}]
    got = bench.multi_scores(["a", "b", "c"], truth, predicted)
    assert got == {
        "micro_f1": pytest.approx(float(F(6, 9)), rel=1e-15),
        "macro_f1": pytest.approx(float(F(2, 3)), rel=1e-15),
        "hamming_loss": pytest.approx(float(F(3, 12)), rel=1e-15),
        "subset_accuracy": 0.25,
    }


def test_a_label_neither_true_nor_predicted_counts_as_f1_zero(bench):
    got = bench.multi_scores(["a", "b"], [{"a"}], [{"a"}])
    assert got["micro_f1"] == 1.0 and got["macro_f1"] == 0.5


def test_a_model_without_probabilities_has_no_log_loss_or_ece(bench):
    got = bench.scores(["x", "y"], ["x", "y", "y"], ["x", "x", "y"], None)
    assert got["accuracy"] == pytest.approx(2 / 3, rel=1e-15)
    assert got["log_loss"] is None and got["ece"] is None
    assert bench.shown(None) == "n/a" and bench.shown(0.12344) == "0.1234"


def test_nbsvm_learns_a_separable_corpus(bench):
    texts = ["good fine", "good great", "fine great", "bad awful", "awful poor", "bad poor"]
    labels = ["pos", "pos", "pos", "neg", "neg", "neg"]
    model = bench.NBSVM().fit(texts, labels)
    assert model.predict(["great good", "poor awful", "bad"]) == ["pos", "neg", "neg"]
    assert json.dumps(model.classes) == '["neg", "pos"]'


def test_the_sample_is_the_first_by_digest_and_the_first_of_each_class(bench, monkeypatch):
    import hashlib

    monkeypatch.setattr(bench, "SAMPLE_SIZE", 3)
    monkeypatch.setattr(bench, "SAMPLE_PER_CLASS", 2)
    texts = [f"document {i}" for i in range(12)]
    labels = ["big"] * 10 + ["small"] * 2
    kept = bench.sample(texts, labels)
    order = sorted(range(12), key=lambda i: hashlib.sha256(texts[i].encode()).digest())
    assert kept[:3] == order[:3]  # the first 3 by digest, whatever their class
    assert sorted(kept) == sorted(set(kept))
    assert {10, 11} <= set(kept)  # both of the small class
    big = sum(labels[i] == "big" for i in order[:3])
    assert sum(labels[i] == "big" for i in kept) == max(2, big)
    assert bench.sample(texts[::-1], labels[::-1]) == [11 - i for i in kept]  # not the order


def test_the_single_label_corpus_of_the_fit_cost_is_each_documents_first_label(bench, tmp_path):
    train = tmp_path / "train.jsonl"
    records = [
        {"labels": ["earn", "acq"], "text": "Profit  rose\n\tsharply"},
        {"labels": [], "text": "no topic"},
        {"labels": ["grain"], "text": "wheat"},
    ]
    train.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "first.txt"
    assert bench.first_topic_lines(train, out) == 2
    assert out.read_text() == "__label__earn Profit rose sharply\n__label__grain wheat\n"
