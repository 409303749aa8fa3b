"""Hostile input, in real processes: devices, pipes, endless streams, forged models,
dying parents, bad scheduler addresses; what docs/robustness.md promises.

Scratch devices are made in temporary folders (``os.mkfifo``; a character device with
``os.mknod`` when running as root); the real /dev entries are never touched. Every child
runs with its address space bounded (``resource.setrlimit``) and a timeout, so a case
that grows or hangs fails the test instead of the machine.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import NAMED, REPO, big_corpus, nbclass_command

from nbclass.modelfile.fileformat import MODEL_SECTIONS, OPTIONAL_SECTIONS, PREFIX, pack, parse

DEMO = REPO / "corpora" / "demo"
TABLE = REPO / "corpora" / "table-demo.csv"
MEMORY = 1 << 30  # address space of a child: a few times what any command here needs
TIMEOUT = 60
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="os.mknod of a character device needs root")


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def run(*args, input: bytes | None = None, env: dict | None = None, stdin=None,
        timeout: float = TIMEOUT, cwd=None) -> subprocess.CompletedProcess:  # fmt: skip
    """nbclass in a child process with bounded memory and time."""
    return subprocess.run(
        [*nbclass_command(), *map(str, args)],
        input=input,
        stdin=stdin,
        capture_output=True,
        cwd=cwd or REPO,
        timeout=timeout,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1", **(env or {})},
        preexec_fn=_limit_memory,
    )


def one_error(result: subprocess.CompletedProcess, code: int) -> str:
    """The one ``Error:`` line of a failed command (asserting there is nothing else)."""
    stderr = result.stderr.decode()
    assert result.returncode == code, stderr
    assert "Traceback" not in stderr, stderr
    assert stderr.startswith("Error: ") and stderr.count("\n") == 1, stderr
    return stderr.rstrip("\n")


def char_device(path: Path, minor: int) -> Path:
    """A character device node with the numbers of /dev/null (3), /dev/zero (5) or
    /dev/full (7), made in a temporary folder."""
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    return path


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "model.nbc"
    result = run("fit", DEMO, "-o", path, "-q", "-j", "1", *NAMED)  # a fitted β, log tf
    assert result.returncode == 0, result.stderr
    return path


@pytest.fixture(scope="module")
def table_model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("table") / "table.nbc"
    result = run("fit", "--table", TABLE, "--label", "team", "-o", path, "-q")
    assert result.returncode == 0, result.stderr
    return path


# --- 1. A destination that is not a regular file is refused, never replaced -------------


def _special(kind: str, path: Path) -> Path:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.close()  # the socket file stays
    else:
        char_device(path, 7)  # /dev/full's numbers
    return path


KIND_WORDS = {
    "fifo": "named pipe (FIFO)",
    "socket": "socket",
    "device": "character device",
}
WRITERS = {
    "fit -o": lambda dest, m: ["fit", DEMO, "-o", dest, "-q"],
    "fit --update": lambda dest, m: ["fit", DEMO, "--update", dest, "-q"],
    "fit --update -o": lambda dest, m: ["fit", DEMO, "--update", m, "-o", dest, "-q"],
    "fit --table": lambda dest, m: ["fit", "--table", TABLE, "--label", "team", "-o", dest],
    "merge": lambda dest, m: ["merge", m, m, "-o", dest, "-q"],
    "select-features": lambda dest, m: ["select-features", "-m", m, "-k", "5", "-o", dest],
    "unlearn -o": lambda dest, m: ["unlearn", DEMO, "-m", m, "-o", dest, "-q"],
    "sync": lambda dest, m: ["sync", DEMO, "-m", dest, "-q"],
}


@pytest.mark.parametrize("kind", ["fifo", "socket", pytest.param("device", marks=needs_root)])
@pytest.mark.parametrize("command", list(WRITERS))
def test_a_destination_that_is_not_a_regular_file_is_refused(tmp_path, model, kind, command):
    folder = tmp_path / "out"
    folder.mkdir()
    dest = _special(kind, folder / "x.nbc")
    before = os.stat(dest)
    result = run(*WRITERS[command](dest, model))
    assert one_error(result, 1) == (
        f"Error: cannot write model {str(dest)!r}: it is a {KIND_WORDS[kind]}, not a regular "
        "file, and writing would replace it; give the path of a new or existing model file"
    )
    after = os.stat(dest)
    assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode)
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert sorted(os.listdir(folder)) == ["x.nbc"]  # no lock file, no temporary
    assert result.stdout == b""


# --- 2. Bounded, non-blocking reads ------------------------------------------------------


NOT_REGULAR = (
    "is not an nbclass model file: it is a {}, and a model must be a regular file "
    "(nbclass never reads a model from a pipe or a device)"
)
READERS = {
    "one document": lambda m, doc: (["predict", "-m", m], b"refund my invoice"),
    "batch": lambda m, doc: (["predict", "-m", m, doc, doc], None),
    "lines": lambda m, doc: (["predict", "-m", m, "--lines"], b"a\nb\n"),
    "info": lambda m, doc: (["info", "-m", m], None),
    "top-features": lambda m, doc: (["top-features", "-m", m], None),
    "fit --update": lambda m, doc: (["fit", DEMO, "--update", m, "-o", Path(doc).parent / "o"],
                                    None),  # fmt: skip
    "table": lambda m, doc: (["predict", "-m", m, "--table", TABLE], None),
}


@pytest.mark.parametrize("kind", ["fifo", pytest.param("zero", marks=needs_root)])
@pytest.mark.parametrize("command", list(READERS))
def test_a_model_must_be_a_regular_file(tmp_path, kind, command):
    """A FIFO without a writer would block an ordinary open for ever; a /dev/zero would be
    read until memory runs out. Both are refused at once, before anything is read."""
    doc = tmp_path / "doc.txt"
    doc.write_text("refund my invoice")
    if kind == "fifo":
        path = tmp_path / "model.fifo"
        os.mkfifo(path)
        words = "named pipe (FIFO)"
    else:
        path = char_device(tmp_path / "zero", 5)
        words = "character device"
    args, stdin = READERS[command](path, doc)
    result = run(*args, input=stdin, timeout=30)
    assert one_error(result, 1) == f"Error: {str(path)!r} " + NOT_REGULAR.format(words)
    assert result.stdout == b""
    assert sorted(os.listdir(tmp_path)) == sorted(["doc.txt", path.name])


def test_a_fifo_with_a_writer_is_refused_too(tmp_path, model):
    """Even with a writer streaming a real model into it, a FIFO is not read."""
    path = tmp_path / "model.fifo"
    os.mkfifo(path)
    writer = subprocess.Popen(["sh", "-c", f"while cat '{model}'; do :; done > '{path}'"])
    try:
        result = run("info", "-m", path, timeout=30)
    finally:
        writer.kill()
        writer.wait()
    words = "named pipe (FIFO)"
    assert one_error(result, 1) == f"Error: {str(path)!r} " + NOT_REGULAR.format(words)


def test_a_model_longer_than_its_header_says_is_refused_unread(tmp_path, model):
    """8 GB more than the prefix declares (a sparse file): refused from its size, in
    bounded memory, without reading the excess."""
    path = tmp_path / "long.nbc"
    data = model.read_bytes()
    path.write_bytes(data)
    extra = 8 << 30
    os.truncate(path, len(data) + extra)
    assert PREFIX.unpack_from(data)[4] == len(data)
    for args, stdin in (
        (["predict", "-m", path], b"refund"),
        (["info", "-m", path], None),
        (["predict", "-m", path, "--lines"], b"refund\n"),
    ):
        result = run(*args, input=stdin, timeout=30)
        assert one_error(result, 1) == (
            f"Error: {str(path)!r} is corrupted ({extra} bytes after its end)"
        )


def test_the_null_device_reads_as_an_empty_model(tmp_path):
    """A copy of /dev/null (made here) is what it always was: an empty model file."""
    if not ROOT:
        pytest.skip("os.mknod of a character device needs root")
    path = char_device(tmp_path / "null", 3)
    result = run("info", "-m", path)
    assert one_error(result, 1) == (
        f"Error: {str(path)!r} is empty (0 bytes), not an nbclass model file"
    )


def _stop_words_error(path) -> str:
    return (
        f"Error: stop-word file {str(path)!r} is larger than 16 MiB: give a file with one "
        "word per line"
    )


def test_a_stop_word_file_has_a_limit(tmp_path):
    big = tmp_path / "big.txt"
    with open(big, "wb") as handle:
        handle.truncate(16 * 1024 * 1024 + 1)  # one byte over the limit, sparse
    result = run("fit", DEMO, "-o", tmp_path / "m.nbc", "--stop-words", big)
    assert one_error(result, 2) == _stop_words_error(big)
    assert not (tmp_path / "m.nbc").exists()
    exact = tmp_path / "exact.txt"
    with open(exact, "wb") as handle:
        handle.write(b"the\n")
        handle.truncate(16 * 1024 * 1024)  # at the limit: read
    result = run("fit", DEMO, "-o", tmp_path / "m.nbc", "--stop-words", exact, "-q")
    assert result.returncode == 0, result.stderr


@needs_root
def test_an_endless_stop_word_device_is_cut_at_the_limit(tmp_path):
    zero = char_device(tmp_path / "zero", 5)
    result = run("fit", DEMO, "-o", tmp_path / "m.nbc", "--stop-words", zero)
    assert one_error(result, 2) == _stop_words_error(zero)


def test_an_endless_stop_word_pipe_is_cut_at_the_limit(tmp_path):
    fifo = tmp_path / "words"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"exec yes the > '{fifo}'"], stderr=subprocess.DEVNULL)
    try:
        result = run("fit", DEMO, "-o", tmp_path / "m.nbc", "--stop-words", fifo)
    finally:
        writer.kill()
        writer.wait()
    assert one_error(result, 2) == _stop_words_error(fifo)


def _row_error(name) -> str:
    return (
        f"Error: {str(name)!r} line 1 is longer than 16 MiB: a table row must be shorter "
        "(is the file a table?)"
    )


@pytest.mark.parametrize("command", ["fit", "predict", "evaluate"])
def test_a_table_without_line_ends_is_cut_at_the_row_limit(tmp_path, table_model, command):
    """20 MB of NUL bytes and no newline (a sparse file, or a /dev/zero)."""
    zeros = tmp_path / "zeros.csv"
    with open(zeros, "wb") as handle:
        handle.truncate(20 * 1024 * 1024)
    args = {
        "fit": ["fit", "--table", zeros, "--label", "team", "-o", tmp_path / "t.nbc"],
        "predict": ["predict", "-m", table_model, "--table", zeros],
        "evaluate": ["evaluate", "-m", table_model, "--table", zeros],
    }[command]
    assert one_error(run(*args), 1) == _row_error(zeros)
    if ROOT:
        device = char_device(tmp_path / "zero", 5)
        args = [device if a == zeros else a for a in args] + ["--table-format", "csv"]
        assert one_error(run(*args), 1) == _row_error(device)


def test_a_table_read_whole_has_a_settable_limit(tmp_path):
    """fit --table reads the whole table: an endless pipe stops at the limit."""
    yes = subprocess.Popen(["yes", "T-1,pro,49.0,120,charged twice,billing"],
                           stdout=subprocess.PIPE)  # fmt: skip
    try:
        header = b"ticket,plan,amount,latency_ms,message,team\n"
        proc = subprocess.Popen(
            ["sh", "-c", "printf '%s' \"$0\"; exec cat", header.decode()],
            stdin=yes.stdout,
            stdout=subprocess.PIPE,
        )
        yes.stdout.close()
        result = run(
            "fit", "--table", "-", "--table-format", "csv", "--label", "team",
            "-o", tmp_path / "t.nbc", stdin=proc.stdout, env={"NBCLASS_MAX_TABLE_BYTES": "1M"},
        )  # fmt: skip
        proc.stdout.close()
    finally:
        for child in (yes, proc):
            child.kill()
            child.wait()
    assert one_error(result, 1) == (
        "Error: table '-' is larger than 1 MiB, the limit of a table read whole: set "
        "NBCLASS_MAX_TABLE_BYTES (e.g. 1G) to read it"
    )
    assert not (tmp_path / "t.nbc").exists()


def test_a_streamed_table_is_scored_as_it_is_read(tmp_path, table_model):
    """An endless table on stdin: predictions come out while it is still being written,
    each the same as for the row read from a file, in bounded memory."""
    row = "T-9,pro,49.0,120,charged twice for the same invoice"
    one = tmp_path / "one.csv"
    one.write_text("ticket,plan,amount,latency_ms,message\n" + row + "\n")
    single = run("predict", "-m", table_model, "--table", one)
    assert single.returncode == 0, single.stderr
    (expected,) = single.stdout.decode().splitlines()
    _name, rest = expected.split("\t", 1)
    feeder = subprocess.Popen(
        ["sh", "-c", f"echo ticket,plan,amount,latency_ms,message; exec yes '{row}'"],
        stdout=subprocess.PIPE,
    )
    reader = subprocess.Popen(
        [*nbclass_command(), "predict", "-m", str(table_model), "--table", "-",
         "--table-format", "csv"],
        stdin=feeder.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"}, preexec_fn=_limit_memory,
    )  # fmt: skip
    feeder.stdout.close()
    try:
        lines = [reader.stdout.readline().decode() for _ in range(50_000)]
        assert reader.poll() is None  # still reading the endless input
    finally:
        for child in (feeder, reader):
            child.kill()
            child.wait()
        reader.stdout.close()
        reader.stderr.close()
    assert lines == [f"-:{n}\t{rest}\n" for n in range(1, 50_001)]


# --- 5. Forged models: a header asks for nothing nbclass would not write ------------------


def forged(model: Path, folder: Path, edit, name: str = "forged.nbc") -> Path:
    """A copy of ``model`` whose JSON header ``edit`` changed, with every checksum and
    offset made valid again: only the checks of the header's content can refuse it."""
    data = model.read_bytes()
    header, sections = parse(data, str(model), MODEL_SECTIONS, OPTIONAL_SECTIONS)
    table = [
        (entry["name"], entry["dtype"], entry["shape"][0], sections[entry["name"]].tobytes())
        for entry in header["sections"]
    ]
    edit(header)
    path = folder / name
    path.write_bytes(pack(header, table))
    return path


PATHS = {
    "one document": lambda m, doc: (["predict", "-m", m], b"refund my invoice", {}),
    "one document, click": lambda m, doc: (
        ["predict", "-m", m], b"refund my invoice", {"NBCLASS_FULL_CLI": "1"}
    ),
    "one file": lambda m, doc: (["predict", "-m", m, doc], None, {}),
    "batch": lambda m, doc: (["predict", "-m", m, doc, doc], None, {}),
    "info": lambda m, doc: (["info", "-m", m], None, {}),
    "fit --update": lambda m, doc: (["fit", DEMO, "--update", m, "-o", Path(doc).parent / "o"],
                                    None, {}),  # fmt: skip
}


def refused_everywhere(path: Path, doc: Path, problem: str) -> None:
    """Every path that reads a model refuses ``path`` at once, in one line."""
    for name, make in PATHS.items():
        args, stdin, env = make(path, doc)
        started = time.monotonic()
        result = run(*args, input=stdin, env=env, timeout=30)
        line = one_error(result, 1)
        assert line == f"Error: {str(path)!r} is not a valid nbclass model ({problem})", name
        assert time.monotonic() - started < 20, name
        assert result.stdout == b"", name


def test_the_forged_model_harness_changes_nothing_by_itself(tmp_path, model):
    same = forged(model, tmp_path, lambda header: None)
    assert same.read_bytes() == model.read_bytes()


@pytest.fixture
def doc(tmp_path) -> Path:
    path = tmp_path / "doc.txt"
    path.write_text("I was charged twice for the same invoice, please refund")
    return path


def test_a_catastrophic_token_pattern_is_refused_on_every_path(tmp_path, model, doc):
    """(\\w+)+! takes time exponential in the length of a word without '!': over 40 s
    for 40 characters. Refused from the pattern's shape, before any text is matched."""
    pattern = r"(?u)(\w+)+!"
    path = forged(model, tmp_path, lambda h: h["tokenizer"].update(token_pattern=pattern))
    doc.write_text("a" * 40)
    refused_everywhere(path, doc, (
        f"--token-pattern {pattern!r} repeats a part that is itself repeated, which can "
        "take exponential time on some texts; write it without (e.g. \\w+ instead of (\\w+)+)"
    ))  # fmt: skip


@pytest.mark.parametrize(
    ("pattern", "hazard"),
    [
        (r"(a|ab)*c", "repeats an alternation"),
        (r"(?:\w+\s?)+$", "repeats a part that is itself repeated"),
        (r"(\w)\1+", "refers back to a group"),
    ],
)
def test_fit_refuses_the_patterns_a_model_may_not_hold(tmp_path, pattern, hazard):
    result = run("fit", DEMO, "-o", tmp_path / "m.nbc", "--token-pattern", pattern)
    assert one_error(result, 2) == (
        f"Error: --token-pattern {pattern!r} {hazard}, which can take exponential time on "
        "some texts; write it without (e.g. \\w+ instead of (\\w+)+)"
    )
    assert not (tmp_path / "m.nbc").exists()


POWER = "which can take time a power of the length of some texts; write one repeat (e.g. " \
    "\\w+ instead of \\w*\\w*)"  # fmt: skip
QUADRATIC = "which can take time quadratic in the length of some texts; bound the repeat to " \
    "at most 100 (e.g. \\w{1,100}x instead of \\w+x)"  # fmt: skip
UNBOUNDED = "repeats a part without a bound before a part that can fail"


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("\\w*" * 20 + "x", f"{UNBOUNDED}, {QUADRATIC}"),
        ("\\w{0,9}" * 20 + "x", f"repeats the same characters twice in a row, {POWER}"),
        ("\\w*\\w*", f"repeats the same characters twice in a row, {POWER}"),
        ("\\w+x", f"{UNBOUNDED}, {QUADRATIC}"),
        ("\\w+@\\w+", f"{UNBOUNDED}, {QUADRATIC}"),
        ("[a-z]+\\b", f"{UNBOUNDED}, {QUADRATIC}"),
        ("(?:ab)+c", f"{UNBOUNDED}, {QUADRATIC}"),
        ("\\w{1,101}x", f"{UNBOUNDED}, {QUADRATIC}"),
    ],
)
def test_patterns_that_take_a_power_of_the_text_length_are_refused_on_every_path(
    tmp_path, model, doc, pattern, problem
):
    """Twenty \\w* and an x took over an hour on 60 characters; \\w+x minutes on 100 KB.
    Refused from the pattern's shape by fit and by every path that reads a model."""
    result = run("fit", DEMO, "-o", tmp_path / "m.nbc", "--token-pattern", pattern)
    assert one_error(result, 2) == f"Error: --token-pattern {pattern!r} {problem}"
    assert not (tmp_path / "m.nbc").exists()
    path = forged(model, tmp_path, lambda h: h["tokenizer"].update(token_pattern=pattern))
    doc.write_text("a" * 60)
    refused_everywhere(path, doc, f"--token-pattern {pattern!r} {problem}")


@pytest.mark.parametrize(
    "pattern",
    ["\\w{1,100}x", "#\\w+x", "(?u)\\b[^\\W\\d_]{2,}\\b", "\\d+(?:\\.\\d+)?",
     "[A-Za-z]+(?:'[a-z]+)?", "\\b[a-z]+[0-9]+", "\\S+"],
)  # fmt: skip
def test_patterns_that_stay_linear_fit_and_predict_a_long_run_in_bounded_time(
    tmp_path, pattern
):
    """Bounded repeats, and repeats that cannot be started again inside a run (a first part
    they cannot match, a leading \\b before word characters) are tried once per run: a
    200 KB run of letters, and of digits, is predicted (the timeout bounds the time)."""
    corpus = tmp_path / "c"
    for label, text in (("a", "#ab1x 12.5 don't"), ("b", "#cdx 3 xyz9")):
        (corpus / label).mkdir(parents=True)
        (corpus / label / "1.txt").write_text(text)
    model = tmp_path / "m.nbc"
    result = run("fit", corpus, "-o", model, "-q", "--token-pattern", pattern, *NAMED)
    assert (result.returncode, result.stderr) == (0, b"")
    long = tmp_path / "long.txt"
    long.write_text("a" * 200_000 + " " + "1" * 200_000 + "#" + "b" * 200_000 + "\n")
    for args in (["predict", "-m", model, long], ["predict", "-m", model, tmp_path / "c"]):
        result = run(*args, timeout=60)
        assert result.returncode == 0 and result.stderr == b"", result.stderr


def test_a_huge_ngram_range_is_refused_on_every_path(tmp_path, model, doc):
    path = forged(model, tmp_path, lambda h: h["tokenizer"].update(ngram_range=[1, 100000000]))
    refused_everywhere(path, doc, (
        "--ngram-range 1,100000000 is not valid: give MIN,MAX with 1 <= MIN <= MAX <= 10"
    ))  # fmt: skip
    result = run("fit", DEMO, "-o", tmp_path / "m.nbc", "--ngram-range", "1,11")
    assert one_error(result, 2) == (
        "Error: --ngram-range 1,11 is not valid: give MIN,MAX with 1 <= MIN <= MAX <= 10"
    )
    result = run("fit", DEMO, "-o", tmp_path / "m.nbc", "--ngram-range", "1,10", "-q")
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("beta", [1e-300, 1e6])
def test_a_fitted_beta_the_prior_fit_cannot_give_is_refused(tmp_path, model, doc, beta):
    header = parse(model.read_bytes(), "m", MODEL_SECTIONS, OPTIONAL_SECTIONS)[0]
    assert header["defaults"]["prior_fit"] and header["defaults"]["tf"] == "log"
    real = header["prepared"]["beta"]
    path = forged(model, tmp_path, lambda h: h["prepared"].update(beta=beta))
    for name, make in PATHS.items():
        args, stdin, env = make(path, doc)
        line = one_error(run(*args, input=stdin, env=env, timeout=30), 1)
        prefix = (
            f"Error: {str(path)!r} is not a valid nbclass model (the fitted β {beta!r} is "
            "outside the range the prior fit can give (0.0001 to 100, times "
        )
        assert line.startswith(prefix), (name, line)
        assert line.endswith(" for the transformed sums))"), (name, line)
        scale = float(line[len(prefix):].split(" ")[0])
        assert 0 < scale <= 1  # log(1 + tf) sums are below the raw counts
    # the real β passes, and so do the other numbers as written
    assert 1e-4 <= real / scale <= 100
    result = run("info", "-m", model)
    assert result.returncode == 0 and f"beta {real:.4g} fitted" in result.stdout.decode()


def test_forged_class_totals_are_recomputed_by_the_full_loader(tmp_path, model, doc):
    def double(header):
        header["prepared"]["class_totals"] = [2 * v for v in header["prepared"]["class_totals"]]

    path = forged(model, tmp_path, double)
    for name in ("batch", "info", "fit --update"):
        args, stdin, env = PATHS[name](path, doc)
        assert one_error(run(*args, input=stdin, env=env), 1) == (
            f"Error: {str(path)!r} is not a valid nbclass model (the prepared class totals "
            "disagree with the counts)"
        ), name


def test_prepared_numbers_the_defaults_do_not_need_are_refused(tmp_path, model, doc):
    path = forged(model, tmp_path, lambda h: h["prepared"].update(class_totals=None))
    refused_everywhere(path, doc, "the prepared class_totals is missing for the default settings")


def test_duplicate_class_names_are_refused_on_every_path(tmp_path, model, doc):
    def duplicate(header):
        header["classes"][1] = header["classes"][0]

    path = forged(model, tmp_path, duplicate)
    refused_everywhere(path, doc, "class names are not sorted and unique")


# --- 6. The small ones ---------------------------------------------------------------------


@pytest.mark.parametrize("full_cli", ["", "1"])
def test_exit_code_on_a_missing_file_says_it_does_not_exist(tmp_path, model, full_cli):
    result = run("predict", "-m", model, "--exit-code", tmp_path / "missing.txt",
                 env={"NBCLASS_FULL_CLI": full_cli})  # fmt: skip
    assert one_error(result, 1) == f"Error: {str(tmp_path / 'missing.txt')!r} does not exist"


def _closed_stdin() -> None:
    os.close(0)
    _limit_memory()


@pytest.mark.parametrize(
    "args",
    [
        ["predict", "-m", "{model}"],
        ["predict", "-m", "{model}", "-"],
        ["predict", "-m", "{model}", "--lines"],
        ["predict", "-m", "{model}", "--exit-code"],
        ["fit", "--lines", "-", "-o", "{tmp}/new.nbc"],
        ["predict", "-m", "{table}", "--table", "-", "--table-format", "csv"],
    ],
)
@pytest.mark.parametrize("full_cli", ["", "1"])
def test_a_closed_stdin_is_an_error_not_an_empty_document(
    tmp_path, model, table_model, args, full_cli
):
    filled = [a.format(model=model, table=table_model, tmp=tmp_path) for a in args]
    result = subprocess.run(
        [*nbclass_command(), *filled],
        capture_output=True,
        timeout=TIMEOUT,
        env={**os.environ, "NBCLASS_FULL_CLI": full_cli},
        preexec_fn=_closed_stdin,
    )
    assert one_error(result, 1) == (
        "Error: standard input is closed: pipe the input into nbclass, or give a file to read"
    )
    assert result.stdout == b""
    assert not (tmp_path / "new.nbc").exists()


CONTROL_CLASSES = {"bill\x1b[31ming": "bill\\x1b[31ming", "tech\rsupport": "tech\\rsupport"}


@pytest.fixture
def control_corpus(tmp_path) -> Path:
    root = tmp_path / "corpus\x07"
    texts = {"bill\x1b[31ming": ["refund my invoice", "charged twice"],
             "tech\rsupport": ["server is down", "cannot log in"]}  # fmt: skip
    for label, docs in texts.items():
        (root / label).mkdir(parents=True)
        for i, text in enumerate(docs):
            (root / label / f"{i}.txt").write_text(text)
    return root


def _printable(text: str) -> bool:
    return all(ch in "\t\n" or ch.isprintable() for ch in text)


def test_control_characters_are_escaped_in_every_text_output(tmp_path, control_corpus):
    out = tmp_path / "m\x07.nbc"
    fit = run("fit", control_corpus, "-o", out, "-j", "1")
    assert fit.returncode == 0, fit.stderr
    summary = fit.stderr.decode()
    assert _printable(summary) and summary.endswith(f"-> {tmp_path}/m\\x07.nbc\n"), summary
    info = run("info", "-m", out)
    text = info.stdout.decode()
    assert info.returncode == 0 and _printable(text), text
    assert f"model        {tmp_path}/m\\x07.nbc\n" in text
    for raw, shown in CONTROL_CLASSES.items():
        assert f"\n  {shown}" in text and raw not in text
    as_json = json.loads(run("info", "-m", out, "--format", "json").stdout)
    assert set(as_json["classes"]) == set(CONTROL_CLASSES)  # JSON keeps the real names
    names_shown = "bill\\x1b[31ming"
    for args, lists_classes in (
        (["evaluate", "-m", out, control_corpus], True),
        (["diff", out, out], True),
        (["cv", control_corpus, "-k", "2", "-j", "1"], False),
        (["check", "-m", out, "--baseline", out, control_corpus], False),
        (["top-features", "-m", out], True),
        (["predict", "-m", out, control_corpus], True),
    ):
        result = run(*args)
        output = result.stdout.decode() + result.stderr.decode()
        assert result.returncode == 0, (args, output)
        assert _printable(output), (args, output)
        assert "corpus\\x07" in output or args[0] in ("diff", "top-features"), (args, output)
        assert not lists_classes or names_shown in output, (args, output)


def test_click_usage_errors_end_with_the_error_line(tmp_path):
    """click's own usage errors (what nbclass does not parse itself) print the usage line,
    a hint, a blank line and the Error line, with exit 2, as docs/robustness.md says."""
    result = run("info")
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr.decode() == (
        "Usage: nbclass info [OPTIONS]\n"
        "Try 'nbclass info --help' for help.\n"
        "\n"
        "Error: Missing option '-m' / '--model-file'.\n"
    )
    result = run("fit", DEMO, "-o", tmp_path / "m.nbc", "--zzz")
    assert result.returncode == 2
    assert result.stderr.decode().splitlines() == [
        "Usage: nbclass fit [OPTIONS] [CORPUS_DIR]",
        "Try 'nbclass fit --help' for help.",
        "",
        "Error: No such option '--zzz'.",
    ]


# --- 4. Scheduler addresses ------------------------------------------------------------------


def _address_error(name: str, address: str) -> str:
    return (
        f"Error: {name} {address!r} is not a Dask scheduler address: give tcp://HOST:PORT "
        "(or tls://HOST:PORT)"
    )


BAD_ADDRESSES = ["bogus", "tcp://host", "tcp://host:0", "tcp://host:65536", "udp://host:8786",
                 "tcp://host:port", "tcp://a b:1"]  # fmt: skip


@pytest.mark.parametrize("address", BAD_ADDRESSES)
@pytest.mark.parametrize("command", ["fit", "predict"])
def test_a_malformed_scheduler_address_is_a_usage_error_at_once(
    tmp_path, model, command, address
):
    args = {
        "fit": ["fit", DEMO, "-o", tmp_path / "m.nbc"],
        "predict": ["predict", "-m", model, DEMO / "billing", DEMO / "technical"],
    }[command]
    started = time.monotonic()
    result = run(*args, "--scheduler", address, timeout=30)
    assert one_error(result, 2) == _address_error("--scheduler", address)
    assert time.monotonic() - started < 15  # Dask's own connect timeout is 20 s
    from_env = run(*args, env={"DASK_SCHEDULER_ADDRESS": address}, timeout=30)
    assert one_error(from_env, 2) == _address_error("DASK_SCHEDULER_ADDRESS", address)
    assert result.stdout == from_env.stdout == b""
    assert not (tmp_path / "m.nbc").exists()


def test_a_scheduler_address_in_the_environment_does_not_matter_for_one_document(model):
    """A piped document is scored here whatever the scheduler setting, on both paths."""
    for full_cli in ("", "1"):
        env = {"DASK_SCHEDULER_ADDRESS": "bogus", "NBCLASS_FULL_CLI": full_cli}
        result = run("predict", "-m", model, input=b"refund my invoice", env=env)
        assert result.returncode == 0, result.stderr


def _server(mode: str):
    """A TCP server on 127.0.0.1 that accepts and says nothing, or answers with bytes that
    are not Dask's protocol; a child process, stopped by pid."""
    code = (
        "import socket, sys\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(8)\n"
        "print(s.getsockname()[1], flush=True)\n"
        "held = []\n"
        "while True:\n"
        "    c, _ = s.accept(); held.append(c)\n"
        f"    if {mode == 'garbage'}: c.sendall(b'HTTP/1.1 400 Bad Request\\r\\n\\r\\n' * 4)\n"
    )
    server = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    port = int(server.stdout.readline())
    return server, port


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed when the block ends: nothing listens


@pytest.mark.parametrize("mode", ["closed", "silent", "garbage"])
def test_an_unreachable_scheduler_is_one_line_after_the_timeout(tmp_path, mode):
    pytest.importorskip("distributed")
    server = None
    if mode == "closed":
        port = _closed_port()
    else:
        server, port = _server(mode)
    address = f"tcp://127.0.0.1:{port}"
    try:
        started = time.monotonic()
        result = run("fit", DEMO, "-o", tmp_path / "m.nbc", "--scheduler", address,
                     env={"NBCLASS_SCHEDULER_TIMEOUT": "1"}, timeout=60)  # fmt: skip
        elapsed = time.monotonic() - started
    finally:
        if server is not None:
            os.kill(server.pid, signal.SIGKILL)
            server.wait()
            server.stdout.close()
    line = one_error(result, 1)
    if mode == "garbage":
        assert line.startswith(f"Error: what answers at {address} is not a Dask scheduler (")
        assert line.endswith(" on connecting): check the address and port")
    else:
        assert line == (
            f"Error: cannot reach the Dask scheduler at {address} within 1 s: check the address "
            "and that the scheduler is running (the wait is set by NBCLASS_SCHEDULER_TIMEOUT)"
        )
    assert elapsed < 15, elapsed  # the timeout, twice at most, and the start-up
    assert not (tmp_path / "m.nbc").exists()


# --- 3. Workers never outlive their parent; SIGHUP is handled like SIGTERM --------------------


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> tuple[Path, Path]:
    """(corpus, its model): about 77 MB, a few seconds of work for two workers."""
    root = tmp_path_factory.mktemp("big")
    corpus = big_corpus(root / "corpus", 64)
    result = run("fit", corpus, "-o", root / "big.nbc", "-q", "-j", "2")
    assert result.returncode == 0, result.stderr
    return corpus, root / "big.nbc"


def _children(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry))
    return found


def _alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie (dead, not reaped yet by its new parent)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start_with_workers(args: list, tmp_path: Path):
    """nbclass started with ``args``, once it has forked its two workers: (process, pids)."""
    if not Path("/proc/self/stat").exists():  # pragma: no cover - not Linux
        pytest.skip("needs /proc to find the worker processes")
    process = subprocess.Popen(
        [*nbclass_command(), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        preexec_fn=_default_signals,
    )
    deadline = time.monotonic() + TIMEOUT
    workers: set[int] = set()
    while len(workers) < 2 and time.monotonic() < deadline and process.poll() is None:
        workers = _children(process.pid)
        time.sleep(0.01)
    if len(workers) < 2:  # pragma: no cover - finished before its workers were seen
        process.kill()
        process.communicate()
        pytest.fail("the command never had two workers at once")
    return process, workers


def _default_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _wait_gone(pids: set[int], seconds: float = 5.0) -> set[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = {pid for pid in pids if _alive(pid)}
        if not left:
            return left
        time.sleep(0.05)
    return {pid for pid in pids if _alive(pid)}


@pytest.mark.parametrize("command", ["fit", "predict"])
def test_workers_die_with_a_killed_parent(tmp_path, big, command):
    corpus, model = big
    args = {
        "fit": ["fit", corpus, "-o", tmp_path / "m.nbc", "-q", "-j", "2"],
        "predict": ["predict", "-m", model, *[corpus] * 6, "-j", "2", "-q"],  # > 1000 files
    }[command]
    process, workers = _start_with_workers(args, tmp_path)
    try:
        process.kill()  # SIGKILL: no handler, no clean-up in the parent
        process.communicate(timeout=TIMEOUT)
        left = _wait_gone(workers)
    finally:
        for pid in workers:
            if _alive(pid):  # pragma: no cover - only when the test fails
                os.kill(pid, signal.SIGKILL)
    assert left == set(), f"workers {left} outlived their parent"
    assert not (tmp_path / "m.nbc").exists()


def _die_at_once(_):
    os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's out-of-memory killer does


def test_a_killed_worker_is_one_error_line_not_a_traceback(monkeypatch):
    """A forked worker killed under its task (before it sends anything back) breaks the
    pool; the task's result is then one NbclassError saying what happened and what to do,
    which the command line prints as its one ``Error:`` line with exit code 1."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from nbclass.errors import NbclassError
    from nbclass.reading import process
    from nbclass.reading.process import WORKER_LOST, worker_result

    # The pool is abandoned, which marks this process to end at once (quick_exit): the
    # mark is put back after the test, for the tests that follow in this process.
    monkeypatch.setattr(process, "ABANDONED", False)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        future = pool.submit(_die_at_once, None)
        with pytest.raises(NbclassError) as caught:
            worker_result(future, pool)
    assert str(caught.value) == WORKER_LOST
    assert "\n" not in WORKER_LOST and WORKER_LOST.endswith("fewer workers (-j 1)")
    assert caught.value.exit_code == 1
    assert process.ABANDONED


# A worker killed in the middle of sending its result back: it holds the result queue's
# lock and has written the start of a message (a length of 1,000 bytes, 10 of them).
_DIES_MID_RESULT = """
import multiprocessing, os, signal, struct, sys
from concurrent.futures import ProcessPoolExecutor
from nbclass.errors import NbclassError
from nbclass.reading.process import quick_exit, worker_result

def die_mid_result(_):
    queue = POOL._result_queue
    queue._wlock.acquire()
    os.write(queue._writer.fileno(), struct.pack("!i", 1000) + bytes(10))
    os.kill(os.getpid(), signal.SIGKILL)

POOL = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork"))
future = POOL.submit(die_mid_result, None)
try:
    worker_result(future, POOL)
except NbclassError as error:
    sys.stderr.write(f"Error: {error}\\n")
    if sys.argv[1] == "quick":
        quick_exit(1)
    sys.exit(1)  # a Python program's ordinary exit, which waits for the pool's thread
"""


@pytest.mark.parametrize("ending", ["quick", "ordinary"])
def test_a_worker_killed_while_sending_its_result_ends_the_command(ending):
    """The pool's own thread then waits for the rest of the message, and a worker for
    the lock: the wait for the result sees the worker gone, kills the others, and the
    process ends with the one error line instead of waiting for ever: at once as the
    command does, or by Python's ordinary exit as a program calling the library does
    (the pool's read of the half-sent message ends when the pipe's last writer closes)."""
    from nbclass.reading.process import WORKER_LOST

    done = subprocess.run([sys.executable, "-c", _DIES_MID_RESULT, ending],
                          capture_output=True, timeout=TIMEOUT, cwd=REPO)  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr.decode() == f"Error: {WORKER_LOST}\n"


def test_sighup_is_handled_like_sigterm(tmp_path, big):
    corpus, _ = big
    out = tmp_path / "out"
    out.mkdir()
    process, workers = _start_with_workers(
        ["fit", corpus, "-o", out / "m.nbc", "-q", "-j", "2"], tmp_path
    )
    process.send_signal(signal.SIGHUP)
    stdout, stderr = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 129, stderr
    assert stdout == b"" and stderr == b"\nHangup\n"
    assert _wait_gone(workers) == set()
    assert sorted(os.listdir(out)) == []  # nothing written: no model, no temporary
