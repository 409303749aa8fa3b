"""Numbers a hostile user gives: every option and environment variable has one range, in
:mod:`nbclass.ranges`, checked on every path and documented in docs/robustness.md.

Each command runs in a child process with bounded memory (:func:`test_robustness.run`),
so that a value that would make it allocate without bound fails the test instead of the
machine.
"""

from __future__ import annotations

import json
import math
import re
import resource
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest
from conftest import NAMED, REPO, nbclass_command
from test_robustness import DEMO, TABLE, forged, one_error, refused_everywhere, run

from nbclass.errors import UsageError
from nbclass.modelfile.fileformat import MODEL_SECTIONS, OPTIONAL_SECTIONS, pack, parse, section
from nbclass.ranges import RANGES, check, environment
from nbclass.ranges import parse as parse_value

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
        parse_value("NBCLASS_SCHEDULER_TIMEOUT", "0")
    assert str(error.value) == (
        "NBCLASS_SCHEDULER_TIMEOUT='0' is out of range: give a number above 0 and at most 86400"
    )
    assert parse_value("NBCLASS_MAX_TABLE_BYTES", "1K") == 1024


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
    (["export", "-m", "M", "-o", "O", "--beta", "1e308"], {},
     "--beta 1e+308 is out of range: give a number from 0 to 1e+06"),
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


# --- forged model files: numbers and records of the header ---------------------------------


def raw_header_edit(path: Path, old: bytes, new: bytes) -> None:
    """Replace ``old`` by ``new`` once in the JSON header of the model at ``path``, the
    header's length kept (its padding absorbs the difference) and its CRC-32 made right:
    what ``pack`` cannot write (``Infinity``, ``1e400``, ``64.0``) in any field."""
    data = bytearray(path.read_bytes())
    length = int.from_bytes(data[12:16], "little")
    header = bytes(data[32 : 32 + length])
    assert header.count(old) >= 1, old
    text = header.rstrip(b" ").replace(old, new, 1)
    assert len(text) <= length
    header = text + b" " * (length - len(text))
    data[32 : 32 + length] = header
    data[16:20] = zlib.crc32(header).to_bytes(4, "little")
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def named(tmp_path_factory) -> Path:
    """A model with the named settings (a fitted β, log tf) the robustness tests use."""
    path = tmp_path_factory.mktemp("named") / "model.nbc"
    result = run("fit", DEMO, "-o", path, "-q", "-j", "1", *NAMED)
    assert result.returncode == 0, result.stderr
    return path


@pytest.fixture
def doc(tmp_path) -> Path:
    path = tmp_path / "doc.txt"
    path.write_text("I was charged twice for the same invoice, please refund")
    return path


HEADER_FIELDS = ("sections_start", "offset", "length", "shape", "n_features", "n_used")
NOT_WHOLE = (b"-Infinity", b"1e400", b"NaN", b"64.0", b"true", b"18446744073709551616")


@pytest.mark.parametrize(
    ("field", "number"),
    [(field, b"Infinity") for field in HEADER_FIELDS]
    + [(HEADER_FIELDS[i % len(HEADER_FIELDS)], n) for i, n in enumerate(NOT_WHOLE)],
)
def test_header_numbers_that_are_no_whole_numbers_are_refused_on_every_path(
    named, tmp_path, doc, field, number
):
    """``int()`` of Infinity raised OverflowError on every path; a float was rounded."""
    path = tmp_path / "forged.nbc"
    path.write_bytes(named.read_bytes())
    if field in ("sections_start", "n_features", "n_used"):
        value = parse(named.read_bytes(), "m", MODEL_SECTIONS, OPTIONAL_SECTIONS)[0][field]
        raw_header_edit(path, f'"{field}": {value}'.encode(), f'"{field}": '.encode() + number)
        name = field
    else:  # the first section's (class_count)
        raw = path.read_bytes()
        start = raw.index(b'"name": "class_count"')
        entry = raw[raw.rindex(b"{", 0, start) : raw.index(b"}", start)]
        old = re.search(rf'"{field}": (\[\d+\]|\d+)'.encode(), entry)[0]
        raw_header_edit(path, old, f'"{field}": '.encode()
                        + (b"[" + number + b"]" if field == "shape" else number))  # fmt: skip
        name = f"{field} of section 'class_count'"
    refused_everywhere(path, doc, f"the header's {name} is not a whole number from 0 to 2^63-1")


SELECTION = {"criterion": "mutual-information", "k": 5, "estimator": "posterior-mean",
             "alpha": 1.0, "beta": [1.0, 1.0], "from_vocabulary": 9}  # fmt: skip


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("selection", {}, "the selection record does not hold exactly alpha, beta, criterion, "
         "estimator, from_vocabulary, k"),
        ("selection", {"k": 5}, "the selection record does not hold exactly alpha, beta, "
         "criterion, estimator, from_vocabulary, k"),
        ("selection", [], "the selection record does not hold exactly alpha, beta, criterion, "
         "estimator, from_vocabulary, k"),
        ("selection", {**SELECTION, "k": 0}, "the selection record's k is out of range"),
        ("selection", {**SELECTION, "alpha": 1e308}, "the selection record's alpha is out of "
         "range"),
        ("selection", {**SELECTION, "criterion": "chi2"},
         "the selection record names another criterion or estimator"),
        ("choice", {"candidates": []}, "the choice record must list 1 to 256 candidates"),
        ("choice", "auto", "the choice record is not an object with a list of candidates"),
        ("vocabulary_filter", {"min_df": -1, "max_features": None},
         "the vocabulary filter record's min-df is out of range"),
        ("vocabulary_filter", {"min_df": 1, "max_features": 0},
         "the vocabulary filter record's max-features is out of range"),
        ("vocabulary_filter", {"min_df": 1.5, "max_features": None},
         "the vocabulary filter record's min-df is out of range"),
    ],
)  # fmt: skip
def test_forged_records_are_refused_alike_by_the_one_document_path(
    named, tmp_path, doc, field, value, problem
):
    """The one-document path accepted a forged selection, choice or min_df −1 that the
    full loader refused (or, for a selection without its fields, that info crashed on)."""
    path = forged(named, tmp_path, lambda header: header.update({field: value}))
    refused_everywhere(path, doc, problem)


@pytest.fixture(scope="module")
def chosen(tmp_path_factory) -> Path:
    """A model whose settings fit chose: its calibration has class offsets (the demo
    corpus's choice among its words keeps them; pinned to words, as the choice with the
    word pairs of the default keeps none, and the subject is the calibration's fields)."""
    path = tmp_path_factory.mktemp("chosen") / "model.nbc"
    result = run("fit", DEMO, "-o", path, "-q", "-j", "1", "--ngram-range", "1,1")
    assert result.returncode == 0, result.stderr
    return path


def _set(record: str, field: str, value):
    """An edit of the header that sets ``field`` of ``record`` (a dotted path) to
    ``value``, a function of the field's current value."""

    def edit(header):
        *parents, last = [record, *field.split(".")]
        node = header
        for key in parents:
            node = node[key]
        node[last] = value(node[last])

    return edit


def _first(value):
    """``value`` with its first entry made a numeric string: ``[0.5, 1]`` -> ``["0.5", 1]``."""
    return lambda old: [value(old[0]), *old[1:]]


SETTINGS = "the estimator settings' {} is not a number"
CALIBRATION = "the calibration's {} is not a number"
OFFSETS = "the calibration's class offsets must be two lists of C numbers"
# Numbers of the header that fit writes as JSON numbers, forged as what Python's float()
# would also take: true, a numeric string, an integer past any float.
FORGED_NUMBERS = [
    ("named", "defaults", "alpha", lambda v: True, SETTINGS.format("alpha")),
    ("named", "defaults", "alpha", lambda v: repr(v), SETTINGS.format("alpha")),
    ("named", "defaults", "alpha", lambda v: 10**400, SETTINGS.format("alpha")),
    ("named", "defaults", "beta", _first(repr), SETTINGS.format("beta")),
    ("named", "defaults", "beta", lambda v: "11", "the estimator settings' beta is not a list "
     "of two numbers"),
    ("named", "prepared", "settings.alpha", lambda v: True, SETTINGS.format("alpha")),
    ("named", "prepared", "beta", lambda v: repr(v), "the prepared β must be a finite number "
     "> 0"),
    ("named", "prepared", "class_totals", _first(repr), "prepared class_totals must be 3 finite "
     "numbers >= 0"),
    ("named", "prepared", "class_totals", lambda v: "".join(map(repr, v)), "prepared "
     "class_totals must be 3 finite numbers >= 0"),
    ("chosen", "calibration", "t0", lambda v: True, CALIBRATION.format("t0")),
    ("chosen", "calibration", "t1", lambda v: repr(v), CALIBRATION.format("t1")),
    ("chosen", "calibration", "t2", lambda v: f" {v!r}\n", CALIBRATION.format("t2")),
    ("chosen", "calibration", "offsets", _first(lambda v: True), OFFSETS),
    ("chosen", "calibration", "length_offsets", _first(repr), OFFSETS),
    ("chosen", "defaults", "alpha", lambda v: False, SETTINGS.format("alpha")),
]  # fmt: skip


@pytest.mark.parametrize(
    ("model", "record", "field", "value", "problem"),
    FORGED_NUMBERS,
    ids=[f"{m}-{r}.{f}-{i}" for i, (m, r, f, _, _) in enumerate(FORGED_NUMBERS)],
)
def test_header_numbers_forged_as_booleans_or_text_are_refused_on_every_path(
    request, tmp_path, doc, model, record, field, value, problem
):
    """The estimator settings, the prepared numbers and the calibration were read with
    float(), which takes true as 1.0 and "0.5" as 0.5: a forged file loaded and scored.
    Only JSON numbers are read now, by every loader alike."""
    path = forged(request.getfixturevalue(model), tmp_path, _set(record, field, value))
    refused_everywhere(path, doc, problem)


def test_a_selection_with_its_fields_is_shown_by_info(named, tmp_path):
    selected = tmp_path / "selected.nbc"
    result = run("select-features", "-m", named, "-k", "5", "-o", selected)
    assert result.returncode == 0, result.stderr
    info = run("info", "-m", selected)
    assert info.returncode == 0, info.stderr
    assert re.search(rb"selection +top 5 of \d+ words by mutual-information", info.stdout)


# --- memory: what a model file may make a command allocate ---------------------------------


def sparse_model(template: Path, path: Path, V: int, C: int) -> Path:
    """A consistent model of V words and C classes, each word in one document of class
    j mod C, written as fit writes it: sparse counts, so that the file takes a few bytes
    per word whatever C is (tests/test_memory_bounds.py loads it in memory of that size)."""
    header, sections = parse(template.read_bytes(), "t", MODEL_SECTIONS, OPTIONAL_SECTIONS)
    keep = {k: v for k, v in header.items() if k not in ("sections", "sections_start", "sample")}
    j = np.arange(V, dtype=np.int64)
    cls = j % C
    per_class = np.bincount(cls, minlength=C)
    words = "\x00".join(f"w{i:07d}" for i in range(V)).encode()
    blob = np.frombuffer(words, dtype=np.uint8)
    offsets = np.append(0, np.append(np.flatnonzero(blob == 0) + 1, blob.size + 1))
    histograms = [[(0, V - int(n)), (1, int(n))] if n < V else [(1, V)] for n in per_class]
    pairs = [pair for h in histograms for pair in h]
    arrays = {
        "class_count": per_class, "vocabulary": blob, "vocabulary_offsets": offsets,
        "word_ptr": np.arange(V + 1), "class_index": cls, "doc_count": np.ones(V, np.int64),
        "token_count": np.ones(V, np.int64),
        "used": np.packbits(np.ones(V, bool), bitorder="little"), "class_tokens": per_class,
        "histogram_ptr": np.cumsum([0] + [len(h) for h in histograms]),
        "histogram_value": np.array([d for d, _ in pairs]),
        "histogram_count": np.array([n for _, n in pairs]),
    }  # fmt: skip
    # no choice, so none of its vocabulary filter either (a pruning at df >= 2 of the
    # template's choice would leave none of these words, each in one document)
    keep["vocabulary_filter"] = {"min_df": 1, "max_features": None}  # as fit writes it
    keep.update(classes=[f"c{c:05d}" for c in range(C)], n_features=V, n_used=V,
                prepared=None, choice=None, calibration=None, typicality=None,
                selection=None, ledger=None)  # fmt: skip
    keep["defaults"] = {**keep["defaults"], "model": "multinomial", "tf": "raw", "idf": False,
                        "norm": "none", "prior_fit": False}  # fmt: skip
    table = []
    for name in MODEL_SECTIONS:
        values = arrays[name]
        top = int(values.max(initial=0))
        dtype = next(t for t in ("|u1", "<u2", "<u4", "<u8") if top < 2 ** (8 * int(t[-1])))
        table.append(section(name, values.astype(dtype)))  # the smallest type, as fit
    path.write_bytes(pack(keep, table))
    return path


def test_the_sparse_model_harness_writes_a_model_that_loads(model, tmp_path):
    path = sparse_model(model, tmp_path / "small.nbc", 600, 30)
    info = run("info", "-m", path, "--format", "json")
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["documents"] == 600
    one = run("predict", "-m", path, input=b"w0000031 w0000061")
    batch = run("predict", "-m", path, DEMO / "billing", "--format", "jsonl")
    assert one.returncode == batch.returncode == 0, (one.stderr, batch.stderr)
    assert one.stdout.split(b"\t")[1] == b"c00001"


def test_the_model_memory_limit_is_settable(model, tmp_path):
    result = run("info", "-m", model, env={"NBCLASS_MAX_MODEL_MEMORY": "1K"})
    assert one_error(result, 1).endswith(
        "more than the 1 KiB a model of "
        f"{model.stat().st_size} bytes may ask for: set NBCLASS_MAX_MODEL_MEMORY (e.g. 1G) "
        "to load it"
    )
    one = run("predict", "-m", model, input=b"refund", env={"NBCLASS_MAX_MODEL_MEMORY": "1K"})
    assert one_error(one, 1) == one_error(result, 1)
    bad = run("info", "-m", model, env={"NBCLASS_MAX_MODEL_MEMORY": "lots"})
    assert one_error(bad, 2) == (
        "Error: NBCLASS_MAX_MODEL_MEMORY='lots' is not a size: give a size from 1 to 2^40 bytes "
        "(a number, or with K, M or G: 64M)"
    )


# --- output that cannot be encoded ---------------------------------------------------------


@pytest.fixture(scope="module")
def drinks(tmp_path_factory) -> tuple[Path, Path]:
    """A model with the classes café and 🍵tea, and a document of the first."""
    root = tmp_path_factory.mktemp("drinks")
    for name, text in (("café", "espresso"), ("🍵tea", "green")):
        (root / "corpus" / name).mkdir(parents=True)
        (root / "corpus" / name / "1.txt").write_text(text, encoding="utf-8")
    result = run("fit", root / "corpus", "-o", root / "m.nbc", "-q", "--model", "multinomial")
    assert result.returncode == 0, result.stderr
    return root / "m.nbc", root / "corpus" / "café" / "1.txt"


ASCII = [{"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "PYTHONUTF8": "0", "LANG": "C"}]


@pytest.mark.parametrize("env", ASCII)
def test_names_an_ascii_output_cannot_hold_are_escaped_not_a_traceback(drinks, env):
    model, doc = drinks
    for full in ("", "1"):  # the fast start, and click
        one = run("predict", "-m", model, input=b"espresso",
                  env={**env, "NBCLASS_FULL_CLI": full})  # fmt: skip
        assert one.returncode == 0 and one.stderr == b"", one.stderr
        assert one.stdout == b"-\tcaf\\u00e9\t0.6666666666666666\n"
    jsonl = run("predict", "-m", model, doc, doc, "--format", "jsonl", env=env)
    assert jsonl.returncode == 0 and jsonl.stderr == b"", jsonl.stderr
    assert jsonl.stdout.isascii()
    rows = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert [sorted(row["probabilities"]) for row in rows] == [["café", "🍵tea"]] * 2
    assert b'"\\ud83c\\udf75tea"' in jsonl.stdout  # beyond U+FFFF: a surrogate pair
    for args in (["info", "-m", model], ["top-features", "-m", model, "-k", "2"],
                 ["info", "-m", model, "--format", "json"]):  # fmt: skip
        result = run(*args, env=env)
        assert result.returncode == 0 and result.stderr == b"", result.stderr
        assert result.stdout.isascii() and b"caf\\u00e9" in result.stdout, args


# --- messages that name the real cause ----------------------------------------------------


@pytest.mark.parametrize("ledger", [[], ["--ledger"]])
def test_unlearning_every_document_says_so(tmp_path, ledger):
    model = tmp_path / "m.nbc"
    assert run("fit", DEMO, "-o", model, "-q", *ledger).returncode == 0
    before = model.read_bytes()
    result = run("unlearn", DEMO, "-m", model)
    assert one_error(result, 1) == (
        "Error: unlearning these documents would leave the model without a word: they are "
        "every document it learned (or every one that held a word); nothing was changed. To "
        "start again, fit a new model"
    )
    assert model.read_bytes() == before


@pytest.mark.parametrize("url", ["s3://bucket/table.csv", "file:///tmp/table.csv"])
def test_a_table_at_a_url_is_refused_as_a_url_not_as_missing(tmp_path, url):
    result = run("fit", "--table", url, "--label", "team", "-o", tmp_path / "t.nbc")
    assert one_error(result, 2) == (
        f"Error: --table {url!r} is a URL: a table is read from a local file or from standard "
        "input; copy it here first, or pipe it in with --table -"
    )


def test_numbers_whose_variance_no_double_holds_are_refused_at_fit(tmp_path):
    """Values of ±1e308 were accepted by fit, whose model predict then refused."""
    table = tmp_path / "t.csv"
    table.write_text("x,label\n1e308,a\n-1e308,a\n1,b\n2,b\n")
    result = run("fit", "--table", table, "--label", "label", "-o", tmp_path / "t.nbc")
    assert one_error(result, 1) == (
        f"Error: {str(table)!r} column 'x': a numeric column's variance is too large for a "
        "double: rescale the column"
    )
    assert not (tmp_path / "t.nbc").exists()
    table.write_text("x,label\n1e153,a\n-1e153,a\n1,b\n2,b\n")  # the largest that fit
    fitted = run("fit", "--table", table, "--label", "label", "-o", tmp_path / "t.nbc")
    assert fitted.returncode == 0, fitted.stderr
    scored = run("predict", "-m", tmp_path / "t.nbc", "--table", "-", "--table-format", "csv",
                 input=b"x\n1e153\n1.5\n")  # fmt: skip
    assert scored.returncode == 0, scored.stderr
    assert [line.split("\t")[1] for line in scored.stdout.decode().splitlines()] == ["a", "b"]


def test_a_row_every_class_rules_out_under_smoothed_estimates_gets_no_smoothing_advice(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("x,label\n0,a\n1,a\n10,b\n11,b\n")
    fitted = run("fit", "--table", table, "--label", "label", "-o", tmp_path / "t.nbc")
    assert fitted.returncode == 0, fitted.stderr
    result = run("predict", "-m", tmp_path / "t.nbc", "--table", "-", "--table-format", "csv",
                 input=b"x\n1e200\n")  # fmt: skip
    assert result.returncode == 0
    assert result.stderr.decode() == (
        "Warning: every class has probability 0 for '-:1' under --estimator posterior-mean: "
        "a value the class never had rules each out (or a number too far from every class's "
        "values); its label is empty.\n"
    )


def test_a_summary_that_cannot_be_written_does_not_fail_the_command(tmp_path):
    """fit 2>/dev/full wrote the model, then exited 1; messages are lost, not the outcome."""
    model = tmp_path / "m.nbc"
    with open("/dev/full", "w") as full:
        result = subprocess.run([*nbclass_command(), "fit", DEMO, "-o", model],
                                stderr=full, stdout=subprocess.PIPE, timeout=120)  # fmt: skip
        assert result.returncode == 0 and model.exists()
        failed = subprocess.run([*nbclass_command(), "fit", tmp_path / "none", "-o", model],
                                stderr=full, timeout=120)  # fmt: skip
        assert failed.returncode == 1
        usage = subprocess.run([*nbclass_command(), "cv", DEMO, "--folds", "0"],
                               stderr=full, timeout=120)  # fmt: skip
        assert usage.returncode == 2
        one = subprocess.run([*nbclass_command(), "predict", "-m", model], input=b"refund",
                             stderr=full, stdout=subprocess.PIPE, timeout=120)  # fmt: skip
        assert one.returncode == 0 and one.stdout.startswith(b"-\tbilling\t")


def test_running_out_of_memory_is_one_error_line(model, tmp_path):
    """A 64 MB line with --max-bytes 1G under 768 MiB of address space: a MemoryError
    traceback before; one line and exit 1 now, for a line and for a file."""
    line = tmp_path / "line.txt"
    with open(line, "wb") as out:
        for _ in range(64):
            out.write(b"word " * 200_000)
        out.write(b"\n")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (768 << 20, 768 << 20))

    for args in (["--lines", line], [line]):
        result = subprocess.run([*nbclass_command(), "predict", "-m", model, "--max-bytes", "1G",
                                 *args], capture_output=True, timeout=300,
                                preexec_fn=limit)  # fmt: skip
        assert one_error(result, 1) == (
            "Error: out of memory: the input needs more than this process may use (a document "
            "of up to --max-bytes is held whole, and several times that while its words are "
            "counted): give a smaller --max-bytes, or the command more memory"
        )


@pytest.mark.parametrize("command", ["info", "diff", "export", "top-features", "merge"])
def test_out_of_memory_in_a_command_that_reads_models_only_names_no_document_option(
    model, tmp_path, runner, monkeypatch, command
):
    """A command without --max-bytes that runs out of memory (a model too large for the
    limit: the loader raises MemoryError) is told to get more memory, not to give a
    smaller --max-bytes, an option it does not have (predict's line: the test above)."""
    from nbclass.cli.app import cli
    from nbclass.modelfile import textfile

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(textfile, "load", no_memory)
    monkeypatch.setattr(textfile, "load_with_header", no_memory)
    args = {
        "info": ["info", "-m", model],
        "diff": ["diff", model, model],
        "export": ["export", "-m", model, "-o", tmp_path / "w.npz", "--format", "npz"],
        "top-features": ["top-features", "-m", model],
        "merge": ["merge", model, model, "-o", tmp_path / "m.nbc"],
    }[command]
    result = runner.invoke(cli, [str(arg) for arg in args])
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        "Error: out of memory: the model (or models) this command reads need more than "
        "this process may use: give the command more memory\n"
    )


def test_a_folder_url_given_as_a_model_is_a_folder(model, tmp_path):
    url = f"file://{model.parent}"
    for args, stdin in ((["info", "-m", url], None), (["predict", "-m", url], b"refund")):
        result = run(*args, input=stdin)
        assert one_error(result, 1) == (
            f"Error: {url!r} is a folder (a prefix of objects), not a model file"
        )


MISSING_FIELDS = [
    ("chosen", "calibration", "t0"),
    ("chosen", "calibration", "length_offsets"),
    ("named", "defaults", "alpha"),
    ("named", "tokenizer", "lowercase"),
]


@pytest.mark.parametrize(("model", "record", "field"), MISSING_FIELDS,
                         ids=[f"{r}.{f}" for _, r, f in MISSING_FIELDS])  # fmt: skip
def test_a_missing_field_is_named_as_missing_on_every_path(request, tmp_path, doc, model,
                                                           record, field):  # fmt: skip
    """A header record without one of its fields was refused with the bare key, a
    KeyError's text ('... is not a valid nbclass model ('t0')'); the line says it is
    missing. (Offsets without their lengths are two lists that are not C numbers each.)"""
    path = forged(request.getfixturevalue(model), tmp_path,
                  lambda header: header[record].pop(field))  # fmt: skip
    problem = f"{field!r} is missing"
    if field == "length_offsets":
        problem = "the calibration's class offsets must be two lists of C numbers"
    refused_everywhere(path, doc, problem)


EXTREME_CALIBRATIONS = [  # each number at the bound the loader allows
    {"t0": 20.0, "t1": 20.0, "t2": 1.0, "offsets": [1000.0, -1000.0, 0.0],
     "length_offsets": [1000.0, -1000.0, 0.0]},
    {"t0": -20.0, "t1": -20.0, "t2": -1.0, "offsets": [-1000.0, 0.0, 1000.0],
     "length_offsets": [-1000.0, 1000.0, 0.0]},
]  # fmt: skip


@pytest.mark.parametrize("extreme", EXTREME_CALIBRATIONS, ids=["high", "low"])
def test_a_calibration_at_its_bounds_gives_finite_probabilities_on_both_paths(
    chosen, tmp_path, extreme
):
    """A file from elsewhere may hold any calibration the loader accepts: t0 and t1 at
    ±20, t2 at ±1, class offsets at ±1,000 (a temperature of e^±300 and more for a long
    document, shifts of 10^4). Every line is valid JSON without NaN, probabilities sum to
    1, and the one-document path prints the batch path's, for short, long and empty
    documents."""
    path = forged(chosen, tmp_path,
                  lambda header: header["calibration"].update(extreme))  # fmt: skip
    texts = ["refund my invoice", "the login page returns 503 :(", "password " * 20_000, ""]
    folder = tmp_path / "docs"
    folder.mkdir()
    for i, text in enumerate(texts):
        (folder / f"{i}.txt").write_text(text)
    options = ["--format", "jsonl", "--min-known", "0"]
    batch = run("predict", "-m", path, *options, *sorted(folder.iterdir()))
    assert batch.returncode == 0, batch.stderr
    assert not re.search(rb"NaN|Infinity", batch.stdout)
    rows = [json.loads(line) for line in batch.stdout.splitlines()]
    assert len(rows) == len(texts)
    for text, row in zip(texts, rows):
        one = run("predict", "-m", path, *options, input=text.encode())
        assert one.returncode == 0, one.stderr
        assert not re.search(rb"NaN|Infinity", one.stdout)
        single = json.loads(one.stdout)
        assert single["label"] == row["label"]
        assert math.fsum(row["probabilities"].values()) == pytest.approx(1.0, abs=1e-12)
        for c, p in row["probabilities"].items():
            assert single["probabilities"][c] == pytest.approx(p, rel=1e-12, abs=1e-300)
