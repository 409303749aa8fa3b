"""The console script's fast start for one document (nbclass.cli.entry) against the click CLI.

Both run as real processes: ``python -m nbclass`` (the fast start where it applies) and the
same with ``NBCLASS_FULL_CLI=1`` (always click). For every argument list below, they must
print the same bytes on stdout and stderr and exit with the same code.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import DEMO_CORPUS, DEMO_DOCS, REPO, nbclass_command
from hypothesis import given
from hypothesis import strategies as st

from nbclass.cli.entry import _value, parse_predict

TIMEOUT = 60
DOCUMENT = b"My card was charged twice for the same invoice, please refund one payment\n"
RULED_OUT = b"refund outage password\n"  # under --estimator mle every class rules it out


def run(args, stdin: bytes = DOCUMENT, full_cli: bool = False, flags=()):
    env = dict(os.environ)
    env.pop("NBCLASS_FULL_CLI", None)
    if full_cli:
        env["NBCLASS_FULL_CLI"] = "1"
    command = [sys.executable, *flags, *nbclass_command()[1:], *map(str, args)]
    return subprocess.run(
        command, input=stdin, capture_output=True, cwd=REPO, timeout=TIMEOUT, env=env
    )


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("entry") / "demo.nbc"
    result = run(["fit", DEMO_CORPUS, "-o", path, "-q"])
    assert result.returncode == 0, result.stderr
    return path


TICKET = DEMO_DOCS / "ticket-1.txt"
CASES = [
    # served by the fast start
    ["-m", "{M}"],
    ["--model-file", "{M}", "--format", "jsonl"],
    ["--model-file={M}", "--format=jsonl", "--top-k=2"],
    ["-m", "{M}", str(TICKET)],
    [str(TICKET), "-m", "{M}", "--format", "jsonl"],
    ["-m", "{M}", "--exit-code"],
    ["-m", "{M}", "--min-probability", "0.999", "--exit-code"],
    ["-m", "{M}", "--min-margin", ".5", "--format", "jsonl"],
    ["-m", "{M}", "--min-known", "3", "--min-known", "90%", "--unsure-label", "dunno"],
    ["-m", "{M}", "--model", "bernoulli", "--alpha", "2", "--format", "jsonl"],
    ["-m", "{M}", "--model", "complement", "--no-class-prior"],
    ["-m", "{M}", "--estimator", "predictive", "--format", "jsonl"],
    ["-m", "{M}", "--estimator", "mle", "RULED_OUT"],
    ["-m", "{M}", "--estimator", "mle", "--exit-code", "RULED_OUT"],
    # errors the library reports (the same in both)
    ["-m", "{M}", "--min-probability", "2"],
    ["-m", "{M}", "--unsure-label", "billing"],
    ["-m", "missing.nbc"],
    ["-m", str(TICKET)],
    ["-m", "{M}", "--model", "complement", "--estimator", "mle", "--tf", "raw"],
    # handed to click unchanged
    ["-m", "{M}", "--top-k", "0"],
    ["-m", "{M}", "--format", "xml"],
    ["-m", "{M}", "--bogus"],
    ["-m={M}"],
    ["-m", "{M}", "--lines"],
    ["-m", "{M}", str(DEMO_DOCS)],
    ["-m", "{M}", "no-such-file.txt"],
    ["-m", "{M}", str(TICKET), str(TICKET)],
    ["-m", "{M}", "--tf", "log", "--idf"],
    ["-m", "{M}", "--beta", "0.5"],
    ["-m", "{M}", "--explain", "2"],
    ["-m", "{M}", "--format", "tsv", "--format", "jsonl"],
    ["-m", "{M}", "--min-known", "1", "--min-known", "2", "--min-known", "3%"],
    ["-h"],
    [],
]


@pytest.mark.parametrize("case", CASES, ids=[" ".join(c) or "(none)" for c in CASES])
def test_the_fast_start_and_click_print_the_same_bytes(model, case):
    stdin = RULED_OUT if "RULED_OUT" in case else DOCUMENT
    args = ["predict", *(str(a).replace("{M}", str(model)) for a in case if a != "RULED_OUT")]
    with ThreadPoolExecutor(2) as pool:  # the two processes run side by side
        fast, full = pool.map(lambda full_cli: run(args, stdin, full_cli), (False, True))
    assert (fast.returncode, fast.stdout, fast.stderr) == (
        full.returncode,
        full.stdout,
        full.stderr,
    )


def test_the_cases_cover_output_warnings_and_errors(model):
    """The table above is not vacuous: it prints labels, a warning, usage errors, codes."""
    plain = ["--model", "multinomial"]  # whatever the default estimator
    ok = run(["predict", "-m", model, *plain])
    assert ok.returncode == 0 and ok.stdout.startswith(b"-\tbilling\t")
    warned = run(["predict", "-m", model, *plain, "--estimator", "mle", "--exit-code"], RULED_OUT)
    assert warned.returncode == 9 and warned.stderr.startswith(b"Warning: every class")
    bad = run(["predict", "-m", model, "--min-probability", "2"])
    message = b"Error: --min-probability 2.0 is out of range: give a number from 0 to 1\n"
    assert (bad.returncode, bad.stderr) == (2, message)
    coded = run(["predict", "-m", model, *plain, "--exit-code"])
    assert coded.returncode == 11  # billing, the second class (account, billing, outage)


def imported_modules(result) -> set[str]:
    """The modules ``python -X importtime`` reported importing."""
    return {
        line.split("|")[-1].strip()
        for line in result.stderr.decode().splitlines()
        if line.startswith("import time:")
    }


def test_one_document_imports_neither_click_nor_numpy_scipy_rich(model):
    result = run(["predict", "-m", model, "--format", "jsonl"], flags=["-X", "importtime"])
    assert result.returncode == 0, result.stderr
    imported = imported_modules(result)
    assert "nbclass.cli.single" in imported and "nbclass.modelfile.quick" in imported
    heavy = {m for m in imported if m.split(".")[0] in {"click", "numpy", "scipy", "rich"}}
    assert heavy == set()
    assert "nbclass.cli.app" not in imported


def test_settings_that_need_the_whole_model_take_the_batch_path(model):
    result = run(["predict", "-m", model, "--tf", "log", "--idf"], flags=["-X", "importtime"])
    assert result.returncode == 0
    assert {"numpy", "nbclass.cli.app"} <= imported_modules(result)


@pytest.mark.parametrize(
    "args",
    [
        ["-m", "M"],
        ["--model-file=M", "file.txt", "--exit-code"],
        ["-m", "M", "--min-known", "3", "--min-known", "5%", "--top-k", "12"],
        ["-m", "M", "--min-probability", "0.5", "--min-margin", "1.", "--alpha", "10"],
    ],
)
def test_parse_accepts_plain_one_document_lists(args):
    assert parse_predict(args) is not None


@pytest.mark.parametrize(
    "args",
    [
        [],  # no model
        ["M"],
        ["-m", "M", "a", "b"],  # two paths
        ["-m", "M", "-m", "N"],  # repeated
        ["-m", "--format"],  # a value that looks like an option
        ["-m=M"],  # click reads the value "=M"
        ["-mM"],
        ["-m", "M", "--top-k", "0"],
        ["-m", "M", "--top-k", "+3"],
        ["-m", "M", "--top-k", "1_0"],
        ["-m", "M", "--min-probability", "1e-3"],
        ["-m", "M", "--min-probability", "nan"],
        ["-m", "M", "--min-probability", " 0.5"],
        ["-m", "M", "--format", "TSV"],
        ["-m", "M", "--exit-code=1"],
        ["-m", "M", "--lines"],
        ["-m", "M", "--explain", "3"],
        ["-m", "M", "--beta", "1"],
        ["-m", "M", "--scheduler", "tcp://x:1"],
        ["-m", "M", "--table", "t.csv"],
        ["-m", "M", "--"],
        ["-m", "M", "--help"],
        ["-m", "M", "-h"],
        ["-m", "M", "--min-known", "1", "--min-known", "2", "--min-known", "3"],
    ],
)
def test_parse_hands_everything_else_to_click(args):
    assert parse_predict(args) is None


def test_the_broken_pipe_exit_is_the_cli_one():
    import nbclass.cli.app
    import nbclass.cli.entry

    assert nbclass.cli.entry.EXIT_BROKEN_PIPE == nbclass.cli.app.EXIT_BROKEN_PIPE


@given(st.text(alphabet="0123456789.-+e_ \u0663\u00b9x", max_size=70))
def test_numbers_are_read_as_the_plain_number_patterns_read_them(text):
    """The fast start takes a whole number or a decimal only when it has the plain form
    click reads the same way; written with string methods, it is these patterns."""
    whole = re.fullmatch(r"[1-9][0-9]{0,17}", text)
    decimal = re.fullmatch(r"[0-9]{1,30}(\.[0-9]{0,30})?|\.[0-9]{1,30}", text)
    assert _value("int", text) == (int(text) if whole else None)
    assert _value("float", text) == (float(text) if decimal else None)


def _after_the_command(name: str, value: str | None, lines: str) -> str:
    """The last line a Python process prints with ``lines`` run after the console
    script's main() (``nbclass --version``), with the environment variable ``name`` set
    to ``value`` (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k != name}
    if value is not None:
        env[name] = value
    script = (
        "import os, sys\n"
        "sys.argv = ['nbclass', '--version']\n"
        "import nbclass.reading.process\n"
        "nbclass.reading.process.quick_exit = lambda code: None  # back here after it\n"
        "from nbclass.cli.entry import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
    ) + lines
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, cwd=REPO,
                            timeout=TIMEOUT, env=env)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.decode().splitlines()[-1]


@pytest.mark.parametrize("given_value", [None, "1"])
def test_the_command_asks_for_no_huge_pages_unless_told(given_value):
    """The console script turns off numpy's requests for huge pages (madvise) before
    numpy is imported (the kernel's compaction for them was most of the choice's system
    time), and leaves a value the user set alone."""
    last = _after_the_command("NUMPY_MADVISE_HUGEPAGE", given_value, (
        "import numpy\n"
        "print(os.environ['NUMPY_MADVISE_HUGEPAGE'],\n"
        "      numpy._core.multiarray._get_madvise_hugepage())\n"
    ))  # fmt: skip
    assert last == ("0 False" if given_value is None else "1 True")


@pytest.mark.parametrize("given_value", [None, "2"])
def test_the_command_runs_openblas_in_one_thread_unless_told(given_value):
    """The console script asks numpy's OpenBLAS for one thread before numpy is imported
    (its helper threads spin between the command's small dense products), and leaves a
    number the user set alone."""
    last = _after_the_command("OPENBLAS_NUM_THREADS", given_value, (
        "import numpy  # noqa\n"
        "from threadpoolctl import threadpool_info\n"
        "blas = [p['num_threads'] for p in threadpool_info() if p['internal_api'] == 'openblas']\n"
        "print(os.environ['OPENBLAS_NUM_THREADS'], blas[:1])\n"
    ))  # fmt: skip
    if given_value is None:
        assert last == "1 [1]"
    else:
        assert last.split()[0] == "2"
