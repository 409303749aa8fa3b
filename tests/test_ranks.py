"""Classes are ranked by log posterior, also when their probabilities underflow to 0.0.

A long document drives every class but one to probability 0.0 (e^-863 is below the
smallest double); the runner-up must still be the second class by log posterior, not the
first class in alphabetical order. Checked through the real console script: the
one-document fast start (no numpy), the batch path (several files, --lines, --explain)
and evaluate.

The corpus, under the plain multinomial with β = 1 (V = 4 words: apple, banana, cherry,
zebra), gives θ_zebra = 2/9 (a: 4 apple + 1 zebra), 3/8 (b: 2 banana + 2 zebra) and
4/8 (c: 3 zebra + 1 cherry); the classes have one document each, so equal priors. A
document of n zebras has log-odds n·log(4/3) for c against b and n·log(27/16) for b
against a: with n = 3000, p(c) = 1.0 and p(b) = p(a) = 0.0, ranked c, b, a.
"""

from __future__ import annotations

import json
import math
import os
import subprocess

import pytest
from conftest import REPO, nbclass_command, write_corpus

N = 3000
LONG = " ".join(["zebra"] * N)
CORPUS = {
    "a": ["apple apple apple apple zebra"],
    "b": ["banana banana zebra zebra"],
    "c": ["zebra zebra zebra cherry"],
}
PLAIN = ["--model", "multinomial", "--beta", "1", "--tf", "raw", "--no-prior-fit"]


def run(args, stdin: str = "", full_cli: bool = False, flags=()):
    env = dict(os.environ)
    env.pop("NBCLASS_FULL_CLI", None)
    if full_cli:
        env["NBCLASS_FULL_CLI"] = "1"
    command = [nbclass_command()[0], *flags, *nbclass_command()[1:], *map(str, args)]
    return subprocess.run(
        command, input=stdin.encode(), capture_output=True, cwd=REPO, timeout=120, env=env
    )


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranks")
    corpus = write_corpus(root / "corpus", CORPUS)
    path = root / "plain.nbc"
    result = run(["fit", corpus, "-o", path, "-q", *PLAIN])
    assert result.returncode == 0, result.stderr
    return path


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranks-docs")
    (root / "long.txt").write_text(LONG)
    (root / "empty.txt").write_text("no known word here")  # every class equal: class order
    return root


def test_the_hand_fractions_underflow():
    log_odds_cb = N * (math.log(4 / 8) - math.log(3 / 8))
    log_odds_ba = N * (math.log(3 / 8) - math.log(2 / 9))
    assert log_odds_cb > 745 and log_odds_ba > 745  # e^-745 is below the smallest double
    assert math.exp(-log_odds_cb) == 0.0


def test_the_one_document_fast_start_ranks_by_log_posterior(model):
    result = run(["predict", "-m", model, "--top-k", "3"], LONG, flags=["-X", "importtime"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == "-\tc\t1.0\tb\t0.0\ta\t0.0\n"
    imported = {
        line.split("|")[-1].strip()
        for line in result.stderr.decode().splitlines()
        if line.startswith("import time:")
    }
    assert "nbclass.modelfile.quick" in imported and "numpy" not in imported
    jsonl = run(["predict", "-m", model, "--format", "jsonl"], LONG)
    record = json.loads(jsonl.stdout)
    assert (record["label"], list(record["probabilities"])) == ("c", ["c", "b", "a"])
    assert record["probabilities"] == {"c": 1.0, "b": 0.0, "a": 0.0}


def test_click_prints_the_same_for_one_document(model):
    for args in (["--top-k", "2"], ["--format", "jsonl"]):
        fast = run(["predict", "-m", model, *args], LONG)
        full = run(["predict", "-m", model, *args], LONG, full_cli=True)
        assert (fast.returncode, fast.stdout, fast.stderr) == (0, full.stdout, full.stderr)


def test_the_batch_path_ranks_by_log_posterior(model, documents):
    long, empty = documents / "long.txt", documents / "empty.txt"
    result = run(["predict", "-m", model, long, empty, "--top-k", "3"])
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.decode().splitlines()
    assert first == f"{long}\tc\t1.0\tb\t0.0\ta\t0.0"
    cells = second.split("\t")  # equal posteriors: ties keep the class order
    # (no known word: the prior, and the label unsure; the ranking keeps the class order)
    assert cells[0] == str(empty) and cells[1::2] == ["unsure", "b", "c"]
    assert [float(p) for p in cells[2::2]] == [pytest.approx(1 / 3, rel=1e-12)] * 3
    lines = run(["predict", "-m", model, "--lines", "--top-k", "2", "-"], f"{LONG}\n{LONG}\n")
    expected = ["-:1\tc\t1.0\tb\t0.0", "-:2\tc\t1.0\tb\t0.0"]
    assert lines.stdout.decode().splitlines() == expected


def test_explain_names_the_second_class_by_log_posterior(model, documents):
    long = documents / "long.txt"
    result = run(["predict", "-m", model, long, "--explain", "1", "--format", "jsonl"])
    assert result.returncode == 0, result.stderr
    explanation = json.loads(result.stdout)["explanation"]
    assert explanation["versus"] == "b"
    expected = N * (math.log(4 / 8) - math.log(3 / 8))  # equal priors: words alone
    assert explanation["log_odds"] == pytest.approx(expected, rel=1e-9)
    assert explanation["words"] == [
        {"word": "zebra", "count": N, "contribution": pytest.approx(expected, rel=1e-9)}
    ]


def test_evaluate_ranks_the_underflowed_document_right(model, tmp_path):
    test = write_corpus(tmp_path / "test", {"c": [LONG], "b": ["banana " * 10]})
    result = run(["evaluate", "-m", model, test, "--format", "json"])
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["accuracy"] == 1.0
    assert data["confusion_matrix"] == [[0, 0, 0], [0, 1, 0], [0, 0, 1]]
