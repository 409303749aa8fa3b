"""Numbers a hostile user gives: every option and environment variable has one range, in
:mod:`nbclass.ranges`, checked on every path and documented in docs/robustness.md.

Each command runs in a child process with bounded memory (:func:`test_robustness.run`),
so that a value that would make it allocate without bound fails the test instead of the
machine.
"""

from __future__ import annotations

import math
import re

import pytest
from conftest import REPO
from test_robustness import DEMO, TABLE, one_error, run

from nbclass.errors import UsageError
from nbclass.ranges import RANGES, check, environment, parse

ROBUSTNESS = REPO / "docs" / "robustness.md"


def test_the_documented_table_is_the_table_the_code_checks():
    text = ROBUSTNESS.read_text(encoding="utf-8")
    start = text.index("| option or variable | range | what |")
    rows = [line for line in text[start:].split("\n\n")[0].splitlines()[2:]]
    assert rows == [f"| `{r.name}` | {r.describe()} | {r.meaning} |" for r in RANGES.values()]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, True, "1", None])
def test_no_range_holds_nan_infinities_booleans_or_text(value):
    for row in RANGES.values():
        assert not row.contains(value), row.name


def test_a_range_names_the_option_the_value_and_the_range():
    assert check("--folds", 10_000) == 10_000
    assert check("--alpha", None) is None
    with pytest.raises(UsageError) as error:
        check("--folds", 10_001)
    assert str(error.value) == "--folds 10001 is out of range: give a whole number from 2 to 10000"
    with pytest.raises(UsageError) as error:
        check("--max-drop", math.nan)
    assert str(error.value) == "--max-drop nan is out of range: give a number from 0 to 1"
    with pytest.raises(UsageError) as error:
        parse("NBCLASS_SCHEDULER_TIMEOUT", "0")
    assert str(error.value) == (
        "NBCLASS_SCHEDULER_TIMEOUT='0' is out of range: give a number above 0 and at most 86400"
    )
    assert parse("NBCLASS_MAX_TABLE_BYTES", "1K") == 1024


def test_an_empty_variable_is_unset(monkeypatch):
    monkeypatch.setenv("NBCLASS_JOBS", "")
    assert environment("NBCLASS_JOBS") is None
    monkeypatch.setenv("NBCLASS_JOBS", "3")
    assert environment("NBCLASS_JOBS") == 3


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("values") / "m.nbc"
    result = run("fit", DEMO, "-o", path, "-q")
    assert result.returncode == 0, result.stderr
    return path


SIZE = "a size from 1 to 2^40 bytes (a number, or with K, M or G: 64M)"
# (arguments, environment, the one error line); M is the model, T a table, D the corpus
CASES = [
    (["cv", "D", "--folds", "99999999999"], {},
     "--folds 99999999999 is out of range: give a whole number from 2 to 10000"),
    (["cv", "D", "--seed", "-1"], {},
     "--seed -1 is out of range: give a whole number from 0 to 2^32-1"),
    (["cv", "D", "--seed", "4294967296"], {},
     "--seed 4294967296 is out of range: give a whole number from 0 to 2^32-1"),
    (["fit", "D", "-o", "O", "-j", "500"], {},
     "--jobs 500 is out of range: give a whole number from 1 to 256"),
    (["fit", "D", "-o", "O"], {"NBCLASS_JOBS": "48000"},
     "NBCLASS_JOBS='48000' is out of range: give a whole number from 1 to 256"),
    (["predict", "-m", "M", "D"], {"NBCLASS_JOBS": "1e3"},
     "NBCLASS_JOBS='1e3' is not a whole number: give a whole number from 1 to 256"),
    *[(["fit", "--table", "T", "--label", "team", "-o", "O"], {"NBCLASS_MAX_TABLE_BYTES": v},
       f"NBCLASS_MAX_TABLE_BYTES={v!r} is not a size: give {SIZE}")
      for v in ("abc", "-5", "1.5K", "0")],
    (["fit", "D", "-o", "O", "--scheduler", "tcp://127.0.0.1:1"],
     {"NBCLASS_SCHEDULER_TIMEOUT": "1e308"},
     "NBCLASS_SCHEDULER_TIMEOUT='1e308' is out of range: give a number above 0 and at most "
     "86400"),
    (["fit", "D", "-o", "O", "--scheduler", "tcp://127.0.0.1:1"],
     {"NBCLASS_SCHEDULER_TIMEOUT": "nan"},
     "NBCLASS_SCHEDULER_TIMEOUT='nan' is out of range: give a number above 0 and at most "
     "86400"),
    (["check", "-m", "M", "--baseline", "M", "D", "--max-drop", "nan"], {},
     "--max-drop nan is out of range: give a number from 0 to 1"),
    (["check", "-m", "M", "--baseline", "M", "D", "--max-ece", "inf"], {},
     "--max-ece inf is out of range: give a number from 0 to 1"),
    (["fit", "D", "-o", "O", "--beta", "1e308"], {},
     "--beta 1e+308 is out of range: give a number from 0 to 1e+06"),
    (["fit", "D", "-o", "O", "--alpha", "1e308"], {},
     "--alpha 1e+308 is out of range: give a number from 0 to 1e+06"),
    (["fit", "D", "-o", "O", "--model", "bernoulli", "--beta", "1,1e307"], {},
     "--beta 1e+307 is out of range: give a number from 0 to 1e+06"),
    (["fit", "--table", "T", "--label", "team", "-o", "O", "--var-smoothing", "1e308"], {},
     "--var-smoothing 1e+308 is out of range: give a number above 0 and at most 1"),
    (["fit", "D", "-o", "O", "--min-df", "99999999999999999999"], {},
     "--min-df 99999999999999999999 is out of range: give a whole number from 1 to 2^63-1"),
    (["top-features", "-m", "M", "-k", "99999999999"], {},
     "-k 99999999999 is out of range: give a whole number from 1 to 2^31-1"),
    (["predict", "-m", "M", "D", "--explain", "0"], {},
     "--explain 0 is out of range: give a whole number from 1 to 2^31-1"),
    (["predict", "-m", "M", "D", "--max-bytes", "2T"], {},
     "--max-bytes 2199023255552 is out of range: give " + SIZE),
    (["serve", "-m", "M", "--workers", "500"], {},
     "--workers 500 is out of range: give a whole number from 1 to 256"),
    (["serve", "-m", "M", "--timeout", "nan"], {},
     "--timeout nan is out of range: give a number above 0 and at most 86400"),
    (["serve", "-m", "M", "--port", "70000"], {},
     "--port 70000 is out of range: give a whole number from 0 to 65535"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "env", "message"), CASES)
def test_every_number_out_of_range_is_one_error_line_and_exit_2(model, tmp_path, args, env,
                                                                message):  # fmt: skip
    names = {"D": DEMO, "M": model, "T": TABLE, "O": tmp_path / "out.nbc"}
    result = run(*[names.get(a, a) for a in args], env=env)
    assert one_error(result, 2) == f"Error: {message}"
    assert not (tmp_path / "out.nbc").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--beta", "1e308", "--format", "jsonl"],
         "--beta 1e+308 is out of range: give a number from 0 to 1e+06"),
        (["--beta", "1e308", "--estimator", "predictive"],
         "--beta 1e+308 is out of range: give a number from 0 to 1e+06"),
        (["--alpha", "1e308"], "--alpha 1e+308 is out of range: give a number from 0 to 1e+06"),
        (["--alpha", "100000000000000000000"],
         "--alpha 1e+20 is out of range: give a number from 0 to 1e+06"),
        (["--top-k", "99999999999"],
         "--top-k 99999999999 is out of range: give a whole number from 1 to 2^31-1"),
        (["--min-probability", "1.5"],
         "--min-probability 1.5 is out of range: give a number from 0 to 1"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("full", ["", "1"])
def test_one_document_and_batch_refuse_the_same_numbers_alike(model, tmp_path, args,
                                                              message, full):  # fmt: skip
    """The fast start, click with one document and a batch of files: the same line."""
    doc = tmp_path / "doc.txt"
    doc.write_text("refund my invoice")
    one = run("predict", "-m", model, *args, input=b"refund my invoice",
              env={"NBCLASS_FULL_CLI": full})  # fmt: skip
    assert one_error(one, 2) == f"Error: {message}"
    batch = run("predict", "-m", model, *args, doc, doc, env={"NBCLASS_FULL_CLI": full})
    assert one_error(batch, 2) == f"Error: {message}"


def test_the_largest_pseudo_counts_give_finite_probabilities_on_both_paths(model, tmp_path):
    """At the top of the range every formula stays finite: valid JSON, no NaN, and the
    one-document path prints what the batch path prints."""
    import json

    doc = tmp_path / "doc.txt"
    doc.write_text("refund my invoice")
    for estimator in ("posterior-mean", "predictive", "map"):
        args = ["--model", "multinomial", "--estimator", estimator, "--alpha", "1e6",
                "--beta", "1e6", "--format", "jsonl"]  # fmt: skip
        one = run("predict", "-m", model, *args, input=b"refund my invoice")
        batch = run("predict", "-m", model, *args, doc)
        assert one.returncode == batch.returncode == 0, (one.stderr, batch.stderr)
        rows = [json.loads(line) for line in (one.stdout + batch.stdout).splitlines()]
        for row in rows:
            assert row["label"] and all(math.isfinite(p) for p in row["probabilities"].values())
            assert not re.search(rb"NaN|Infinity", one.stdout + batch.stdout)
        probabilities = [row["probabilities"] for row in rows]
        for c in probabilities[0]:
            assert math.isclose(probabilities[0][c], probabilities[1][c], rel_tol=1e-9)
