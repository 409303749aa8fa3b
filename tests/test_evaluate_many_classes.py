"""evaluate at 30,000 classes in a bounded address space: the confusion matrix is kept as
its nonzero cells (at most one per document), never as the (L, L) table (7.2 GB of int64
at 30,000 labels; the command ended in an out-of-memory error under this bound before)."""

from __future__ import annotations

import json
import math
import resource
import subprocess
from collections import Counter
from fractions import Fraction as F

import pytest
from conftest import nbclass_command

CLASSES = 30_000
ADDRESS_SPACE = 2_000_000_000  # bytes: the matrix alone would take 7.2 GB


def limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """A model of 30,000 classes, class c_i trained on "w_i w_i shared", and 301 test lines:

    - c_0 .. c_199: their own word, so each is predicted right;
    - c_200 .. c_289: the word of c_(i + 10000), so predicted as that class;
    - c_290 .. c_294, two lines each: the word of c_20000, so predicted as it (cells of 2);
    - zz-new, a class the model does not know: the word of c_5.
    """
    root = tmp_path_factory.mktemp("many")
    train, test = root / "train.tsv", root / "test.tsv"
    train.write_text("".join(f"c{i:05d}\tw{i} w{i} shared\n" for i in range(CLASSES)))
    lines = [f"c{k:05d}\tw{k}\n" for k in range(200)]
    lines += [f"c{k:05d}\tw{k + 10_000}\n" for k in range(200, 290)]
    lines += [f"c{290 + (k - 290) // 2:05d}\tw20000\n" for k in range(290, 300)]
    lines.append("zz-new\tw5\n")
    test.write_text("".join(lines))
    model = root / "model.nbc"
    subprocess.run(
        [*nbclass_command(), "fit", "--lines", str(train), "--model", "multinomial",
         "-o", str(model)], check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    return model, test


def evaluate(model, test, *options) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), "evaluate", "-m", str(model), "--lines", str(test), *options],
        capture_output=True, text=True, timeout=600, preexec_fn=limit,
    )  # fmt: skip


@pytest.fixture(scope="module")
def evaluated(many) -> dict:
    """evaluate --format json of the 301 lines, under the bound."""
    model, test = many
    result = evaluate(model, test, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_evaluate_json_at_30000_classes(evaluated):
    data = evaluated
    labels = data["labels"]
    assert labels == [f"c{i:05d}" for i in range(CLASSES)] + ["zz-new"]
    assert data["documents"] == 301
    assert data["accuracy"] == float(F(200, 301))
    assert data["micro_f1"] == float(F(200, 301))
    # Labels true or predicted: c_0..c_199 (F1 1, but c_5 2/3: predicted twice), c_200..c_289,
    # c_10200..c_10289, c_290..c_294, c_20000 and zz-new (F1 0): 387 of them.
    assert data["macro_f1"] == pytest.approx(float((199 + F(2, 3)) / 387), rel=1e-15)
    assert data["per_class"]["c00005"] == {
        "precision": 0.5, "recall": 1.0, "f1": float(F(2, 3)), "support": 1, "predicted": 2,
    }  # fmt: skip
    assert data["per_class"]["c20000"] == {
        "precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0, "predicted": 10,
    }  # fmt: skip
    assert data["per_class"]["c00290"]["support"] == 2
    assert data["per_class"]["c29999"] == {
        "precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0, "predicted": 0,
    }  # fmt: skip
    # The matrix would be 30,001 x 30,001: its nonzero cells instead, by true then predicted.
    assert data["confusion_matrix"] is None
    assert data["confusions"] == (
        [[k, k, 1] for k in range(200)]
        + [[k, k + 10_000, 1] for k in range(200, 290)]
        + [[k, 20_000, 2] for k in range(290, 295)]
        + [[CLASSES, 5, 1]]
    )
    # Probabilistic metrics over the 300 documents of known classes. Each class has 3
    # tokens of V = 30,001 words (beta 1): a one-word document gets 3 / 30,002 for the
    # class of its word, 1 / 30,002 for each other class.
    assert data["probabilistic_documents"] == 300
    a, b = 3 / 30_002, 1 / 30_002
    assert data["log_loss"] == pytest.approx(-(200 * math.log(a) + 100 * math.log(b)) / 300,
                                             rel=1e-12)  # fmt: skip
    right = (a - 1) ** 2 + (CLASSES - 1) * b**2
    wrong = a**2 + (b - 1) ** 2 + (CLASSES - 2) * b**2
    assert data["brier_score"] == pytest.approx((200 * right + 100 * wrong) / 300, rel=1e-12)
    assert data["ece"] == pytest.approx(abs(200 / 300 - a), rel=1e-12)


def test_the_text_lists_the_largest_confusions_of_30000_classes(many, evaluated):
    """The text report under the same bound: its largest confusions come from the same
    cells (its per-class table shows 50 of the 30,001 rows, tests/test_report_many_classes.py)."""
    model, test = many
    result = evaluate(model, test)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = lines.index(
        "largest confusions (30001 classes: its nonzero cells are in --format json)"
    )
    rows = [line.split() for line in lines[start + 4 : start + 19]]
    assert rows == [[f"c{k:05d}", "c20000", "2", "100.0%"] for k in range(290, 295)] + [
        [f"c{k:05d}", f"c{k + 10_000:05d}", "1", "100.0%"] for k in range(200, 210)
    ]
    assert lines[start + 19] == ""
    # and these are the predictions evaluate made
    y_pred = list(range(200)) + list(range(10_200, 10_290)) + [20_000] * 10 + [5]
    names = [line.split("\t")[0] for line in test.read_text().splitlines()]
    y_true = [int(name[1:]) if name != "zz-new" else CLASSES for name in names]
    cells = sorted(Counter(zip(y_true, y_pred)).items())
    assert evaluated["confusions"] == [[t, p, n] for (t, p), n in cells]


def test_out_of_memory_while_scoring_names_the_batch_and_the_fix(many, tmp_path):
    """1,000 lines against 30,000 classes in 800 MB of address space: the model loads, the
    batch's log posteriors (240 MB, several times over) do not fit. The message said only
    --max-bytes before, whatever took the memory."""
    model, test = many
    lines = test.read_text().splitlines(keepends=True)
    thousand = tmp_path / "thousand.tsv"
    thousand.write_text("".join((lines * 4)[:1000]))
    result = subprocess.run(
        [*nbclass_command(), "evaluate", "-m", str(model), "--lines", str(thousand)],
        capture_output=True, text=True, timeout=600,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (800 << 20, 800 << 20)),
    )  # fmt: skip
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        "Error: out of memory scoring documents 1 to 1,000 against the model's 30,000 "
        "classes: their log posteriors take 1,000 x 30,000 x 8 bytes (240 MB), several times "
        "over while they are scored, and a long document's words are counted whole (up to "
        "--max-bytes): give the command more memory, or a smaller --max-bytes"
    ]
