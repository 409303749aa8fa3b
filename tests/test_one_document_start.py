"""What one document through the fast start imports, and that what it leaves out still
works when something asks for it (real processes; the timings are the benchmark's)."""

from __future__ import annotations

import pytest
from conftest import DEMO_CORPUS
from test_entry import DOCUMENT, run  # the console script, with its environment


def imported_modules(result) -> set[str]:
    return {
        line.split("|")[-1].strip()
        for line in result.stderr.decode().splitlines()
        if line.startswith("import time:")
    }


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("start") / "demo.nbc"
    result = run(["fit", DEMO_CORPUS, "-o", path, "-q"])
    assert result.returncode == 0, result.stderr
    return path


def test_one_document_leaves_out_what_it_does_not_use(model):
    """Neither dataclasses (the records are made dataclasses only when asked), inspect,
    typing, threading, the corpus module, the json package (the header is read by its C
    scanner; a TSV line needs no JSON), struct nor signal's enumerations are imported to
    score a piped document."""
    result = run(["predict", "-m", model], flags=["-X", "importtime"])
    assert result.returncode == 0, result.stderr
    imported = imported_modules(result)
    assert {"nbclass.modelfile.quick", "nbclass.reading.policy", "nbclass.records"} <= imported
    unused = {"ast", "dis", "tokenize", "typing", "threading", "weakref", "nbclass.reading.corpus"}
    unused |= {"dataclasses", "inspect", "copy", "json", "struct", "signal"}
    assert imported & unused == set()
    jsonl = run(["predict", "-m", model, "--format", "jsonl"], flags=["-X", "importtime"])
    assert jsonl.returncode == 0 and "json" in imported_modules(jsonl), jsonl.stderr


@pytest.mark.parametrize(
    "stdin",
    [DOCUMENT, b"caf\xe9 \xff refund twice\n", b"\xef\xbb\xbfrefund \xc3\xa9t\xc3\xa9\n"],
)
def test_one_document_prints_what_the_click_cli_prints(model, stdin):
    """Valid UTF-8, undecodable bytes (counted and reported by the decoder, which then
    imports threading for its counter) and a byte order mark: same bytes, same code."""
    fast = run(["predict", "-m", model, "--format", "jsonl"], stdin=stdin)
    full = run(["predict", "-m", model, "--format", "jsonl"], stdin=stdin, full_cli=True)
    assert (fast.returncode, fast.stdout, fast.stderr) == (
        full.returncode,
        full.stdout,
        full.stderr,
    )
    if b"\xff" in stdin:
        assert b"replaced 2 undecodable byte sequences by U+FFFD in 1 document" in fast.stderr
