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
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
from conftest import REPO, nbclass_command

from nbclass.fileformat import PREFIX

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
    result = run("fit", DEMO, "-o", path, "-q", "-j", "1")
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
