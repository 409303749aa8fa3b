"""The real ``nbclass`` entry point in real processes, through real pipes and signals.

``nbclass_command()`` runs ``python -m nbclass``, the same ``nbclass.cli.app:main`` as the
console script: exit codes, the warning printer, SIGPIPE and SIGINT handling are those a
shell user sees.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading

import pytest
from conftest import (
    CHINESE,
    CHINESE_TEST,
    DEMO_CORPUS,
    DEMO_DOCS,
    REPO,
    nbclass_command,
    write_corpus,
)

TIMEOUT = 60
EXIT_BROKEN_PIPE = 141  # documented in nbclass/cli.py
EXIT_INTERRUPTED = 130


def run(*args, input: bytes | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *map(str, args)],
        input=input,
        capture_output=True,
        cwd=REPO,
        timeout=TIMEOUT,
        **kwargs,
    )


def bash(script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], capture_output=True, cwd=REPO, timeout=TIMEOUT)


def _default_signals():  # pragma: no cover - runs in the child
    # A test runner started in the background may ignore SIGINT, and one started under
    # nohup SIGHUP; ignored signals are inherited, Python only turns SIGINT into
    # KeyboardInterrupt when it is not ignored, and nbclass leaves an ignored SIGTERM or
    # SIGHUP ignored (install_sigterm), as the user who ignored it asked.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


@pytest.fixture(scope="module")
def demo_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("demo") / "demo.nbc"
    result = run("fit", DEMO_CORPUS, "-o", path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b""
    summary = result.stderr.decode()
    assert summary.startswith("fit: 42 documents, 3 classes, ")
    assert summary.endswith(f" -> {path}\n") and summary.count("\n") == 1
    return path


@pytest.fixture(scope="module")
def words_model(tmp_path_factory):
    """The demo's fit choosing among its words: "the dashboard times out" is an outage
    (the default's choice with word pairs prunes to entries of two documents or more,
    without "dashboard", and answers billing at 0.44)."""
    path = tmp_path_factory.mktemp("words") / "demo.nbc"
    result = run("fit", DEMO_CORPUS, "-o", path, "-q", "--ngram-range", "1,1")
    assert result.returncode == 0, result.stderr
    return path


def test_fit_then_predict_from_a_shell_pipe(demo_model):
    text = "My card was charged twice for the same invoice, please refund one payment"
    cmd = shlex.join([*nbclass_command(), "predict", "-m", str(demo_model)])
    result = bash(f"echo {shlex.quote(text)} | {cmd}")
    assert result.returncode == 0
    assert result.stderr == b""
    source, label, p = result.stdout.decode().removesuffix("\n").split("\t")
    assert (source, label) == ("-", "billing")
    assert p == repr(float(p)) and 1 / 3 < float(p) <= 1.0


def test_predict_stdin_bytes_equal_the_same_document_as_a_file(demo_model, tmp_path):
    text = (DEMO_DOCS / "ticket-2.txt").read_bytes()
    piped = run("predict", "-m", demo_model, input=text)
    doc = tmp_path / "doc.txt"
    doc.write_bytes(text)
    from_file = run("predict", "-m", demo_model, doc)
    assert piped.returncode == from_file.returncode == 0
    assert piped.stdout.split(b"\t")[1:] == from_file.stdout.split(b"\t")[1:]
    assert piped.stdout.startswith(b"-\toutage\t")


def test_predict_the_demo_documents(demo_model):
    result = run("predict", "-m", demo_model, DEMO_DOCS)
    assert result.returncode == 0
    assert result.stderr == b""
    rows = [line.split("\t") for line in result.stdout.decode().splitlines()]
    assert [(r[0], r[1]) for r in rows] == [
        (str(DEMO_DOCS / "ticket-1.txt"), "billing"),
        (str(DEMO_DOCS / "ticket-2.txt"), "outage"),
        (str(DEMO_DOCS / "ticket-3.txt"), "account"),
    ]
    assert all(len(r) == 3 and r[2] == repr(float(r[2])) for r in rows)


def test_predict_cut_off_by_head_ends_quietly_with_141(demo_model, tmp_path):
    big = tmp_path / "big.log"
    line = "the api returns 503 errors and my invoice is wrong, request {}\n"
    big.write_text("".join(line.format(i) for i in range(200_000)), encoding="utf-8")
    err, status = tmp_path / "stderr.txt", tmp_path / "status.txt"
    cmd = shlex.join([*nbclass_command(), "predict", "-m", str(demo_model), "--lines", str(big)])
    script = (
        f"set -o pipefail; {cmd} 2>{shlex.quote(str(err))} | head -n 1; "
        f'echo "$? ${{PIPESTATUS[*]}}" >{shlex.quote(str(status))}'
    )
    result = bash(script)
    # The output (200,000 lines) is far larger than a pipe buffer: nbclass was cut off.
    out = result.stdout.decode()
    assert out.count("\n") == 1 and out.startswith(f"{big}:1\t")
    assert result.stderr == b""
    stderr = err.read_text()
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr
    assert stderr == ""
    # pipefail status of the pipeline, then nbclass's own status and head's
    assert status.read_text().split() == [str(EXIT_BROKEN_PIPE), str(EXIT_BROKEN_PIPE), "0"]


def test_predict_with_a_terminal_on_stdin_prints_a_usage_hint(demo_model):
    try:
        master, slave = os.openpty()
    except (AttributeError, OSError) as exc:  # pragma: no cover - no pty on this system
        pytest.skip(f"no pseudo-terminal available: {exc}")
    try:
        result = run("predict", "-m", demo_model, stdin=slave)
        with_path = run("predict", "-m", demo_model, DEMO_DOCS / "ticket-1.txt", stdin=slave)
    finally:
        os.close(slave)
        os.close(master)
    assert result.returncode == 2
    assert result.stdout == b""
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr
    assert stderr.startswith("Usage: nbclass predict [OPTIONS] [PATH]...\n")
    assert stderr.endswith(
        "Error: no input: give files or folders to classify, or pipe a document into "
        "standard input, e.g.  echo 'some text' | nbclass predict -m MODEL\n"
    )
    # given a PATH, a terminal on stdin does not matter
    assert with_path.returncode == 0
    assert with_path.stdout.decode().split("\t")[1] == "billing"


def test_ctrl_c_during_a_long_predict_exits_130(words_model):
    proc = subprocess.Popen(
        [*nbclass_command(), "predict", "-m", str(words_model), "--lines"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        preexec_fn=_default_signals,
    )
    watchdog = threading.Timer(TIMEOUT, proc.kill)
    watchdog.start()
    try:
        # One full batch (1000 documents) is classified and flushed; then nbclass waits
        # for more input on a pipe that stays open, like `tail -f app.log | nbclass ...`.
        proc.stdin.write(b"the dashboard times out\n" * 1000)
        proc.stdin.flush()
        batch = [proc.stdout.readline() for _ in range(1000)]
        assert batch[0].startswith(b"-:1\toutage\t"), batch[0]
        assert batch[-1].startswith(b"-:1000\toutage\t"), batch[-1]
        proc.send_signal(signal.SIGINT)
        returncode = proc.wait(timeout=TIMEOUT)
        rest = proc.stdout.read()
        stderr = proc.stderr.read().decode()
    finally:
        watchdog.cancel()
        if proc.poll() is None:  # pragma: no cover - only when the test failed
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                stream.close()
            except BrokenPipeError:
                pass
    assert returncode == EXIT_INTERRUPTED, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert stderr == "\nInterrupted\n"
    assert rest == b""  # nothing more was read, so nothing more is written


# A finalizer that Ctrl-C interrupts: the signal is sent from inside ``__del__``, so
# Python's handler raises KeyboardInterrupt there, where Python prints and drops it.
_INTERRUPTED_FINALIZER = """
import os, signal, sys, time
from nbclass.reading.process import install_sigterm

install_sigterm()

class Finalized:
    def __del__(self):
        os.kill(os.getpid(), signal.{signal})
        time.sleep(0.05)  # Python code runs, so the handler runs here

item = Finalized()
try:
    del item
    sys.stdout.write("waiting\\n")
    sys.stdout.flush()
    sys.stdin.buffer.read()  # a pipe that stays open: only the signal can end this
except KeyboardInterrupt:
    sys.exit(130)
except BaseException as exc:
    sys.exit(getattr(exc, "exit_code", 1))
"""


@pytest.mark.parametrize(("name", "code"), [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129)])
def test_an_interrupt_inside_a_finalizer_still_ends_the_command(name, code):
    proc = subprocess.Popen(
        [sys.executable, "-c", _INTERRUPTED_FINALIZER.format(signal=name)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        preexec_fn=_default_signals,
    )
    watchdog = threading.Timer(TIMEOUT, proc.kill)
    watchdog.start()
    try:
        assert proc.stdout.readline() == b"waiting\n"
        returncode = proc.wait(timeout=TIMEOUT)  # stdin stays open: no end of input
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        watchdog.cancel()
        if proc.poll() is None:  # pragma: no cover - only when the test failed
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()
    assert (returncode, out) == (code, b""), err.decode()
    assert err == b"", err.decode()  # the dropped exception was not printed either


def test_mle_warning_from_the_console_entry_point(tmp_path):
    corpus = write_corpus(tmp_path / "chinese", CHINESE)
    model = tmp_path / "chinese.nbc"
    # words alone: the textbook's answer (china) is that of the words; with the default's
    # word pairs the four documents choose bernoulli, words+pairs, and "tokyo japan" of
    # the one japan document decides
    assert run("fit", corpus, "-o", model, "-q", "--ngram-range", "1,1").returncode == 0
    result = run("predict", "-m", model, "--estimator", "mle", input=b"Beijing Tokyo")
    assert result.returncode == 0
    assert result.stdout == b"-\t\t0.0\n"
    stderr = result.stderr.decode()
    assert stderr.count("\n") == 1
    assert stderr.startswith(
        "Warning: every class has probability 0 for '-' under --estimator mle"
    )
    assert stderr.endswith("Use --estimator posterior-mean to smooth.\n")
    ok = run("predict", "-m", model, input=CHINESE_TEST.encode())
    assert ok.returncode == 0 and ok.stderr == b"" and ok.stdout.startswith(b"-\tchina\t")


def test_errors_are_one_line_and_an_exit_code(tmp_path):
    missing = tmp_path / "missing.nbc"
    result = run("predict", "-m", missing, DEMO_DOCS)
    assert result.returncode == 1
    assert result.stdout == b""
    assert result.stderr.decode() == (
        f"Error: model file {str(missing)!r} does not exist: create one with 'nbclass fit'\n"
    )
    usage = run("fit", DEMO_CORPUS, "-o", tmp_path / "m.nbc", "--ngram-range", "2,1")
    assert usage.returncode == 2
    assert usage.stderr.decode().startswith("Error: --ngram-range 2,1 is not valid")
    assert usage.stderr.count(b"\n") == 1


def test_every_line_arrives_when_the_process_ends_without_teardown(demo_model, tmp_path):
    """A command ends with :func:`nbclass.reading.process.quick_exit` (no interpreter teardown):
    the last buffered lines of stdout and stderr must still arrive, through pipes."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    texts = [(DEMO_DOCS / f"ticket-{i}.txt").read_text() for i in (1, 2, 3)]
    for i in range(1500):
        (inbox / f"{i:04d}.txt").write_text(texts[i % 3])
    result = run("predict", "-m", demo_model, "-j", "1", inbox)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().split("\n")
    assert lines[-1] == "" and len(lines) == 1501  # every line, the last one whole
    labels = [line.split("\t")[1] for line in lines[:-1]]
    assert labels == ["billing", "outage", "account"] * 500
    fit = run("fit", DEMO_CORPUS, "-o", tmp_path / "m.nbc")
    assert fit.returncode == 0 and fit.stderr.decode().startswith("fit: 42 documents")


def _quick_exit_in_a_child(prepare) -> tuple[int, bytes]:
    """Fork; the child runs ``prepare``, buffers a line on stdout (a pipe), then calls
    ``quick_exit(7)``; if that returns, the child exits 3 without flushing. Returns the
    child's exit code and what reached the pipe."""
    import sys

    from nbclass.reading.process import quick_exit

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 70
        try:
            os.close(read)
            os.dup2(write, 1)
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - buffered, a pipe
            prepare()
            sys.stdout.write("buffered line\n")
            quick_exit(7)
            code = 3
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), data


def test_quick_exit_flushes_and_exits_with_the_code():
    assert _quick_exit_in_a_child(lambda: None) == (7, b"buffered line\n")


def test_quick_exit_returns_while_a_thread_runs():
    def start_thread():
        threading.Thread(target=threading.Event().wait, args=(5,), daemon=True).start()

    assert _quick_exit_in_a_child(start_thread) == (3, b"")


def test_quick_exit_returns_while_a_child_process_lives():
    def start_child():
        import multiprocessing

        multiprocessing.get_context("fork").Process(target=time_sleep, args=(1,)).start()

    assert _quick_exit_in_a_child(start_child) == (3, b"")


def time_sleep(seconds: float) -> None:  # pragma: no cover - in a grandchild
    import time

    time.sleep(seconds)


def _stderr_on_a_terminal(*args) -> tuple[int, bytes, str]:
    """Run nbclass with stderr on a pseudo-terminal (stdout and stdin not): the exit
    code, stdout, and what the terminal received."""
    try:
        master, slave = os.openpty()
    except (AttributeError, OSError) as exc:  # pragma: no cover - no pty on this system
        pytest.skip(f"no pseudo-terminal available: {exc}")
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "120"}
    process = subprocess.Popen(
        [*nbclass_command(), *map(str, args)], stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=slave, cwd=REPO, env=env,
    )  # fmt: skip
    os.close(slave)
    screen, out = [], []
    reader = threading.Thread(target=lambda: out.append(process.stdout.read()))
    reader.start()
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal has gone
                break
            if not data:
                break
            screen.append(data)
    finally:
        os.close(master)
        reader.join(TIMEOUT)
        process.stdout.close()
        process.wait(TIMEOUT)
    return process.returncode, out[0], b"".join(screen).decode("utf-8", "replace")


def test_progress_bars_on_a_terminal_and_none_with_quiet(news_sample, tmp_path):
    train, test = news_sample
    model = tmp_path / "m.nbc"
    code, _, screen = _stderr_on_a_terminal("fit", train, "-o", model)
    assert code == 0
    assert "fit 240/240 files" in screen  # the bar's last state: files, then MB, rate, ETA
    assert "fit: 240 documents, 4 classes" in screen  # and the summary after it
    code, _, screen = _stderr_on_a_terminal("fit", train, "-o", model, "-q")
    assert (code, screen) == (0, "")

    piped = run("predict", "-m", model, test)  # stderr a pipe: no bar
    assert piped.returncode == 0 and piped.stderr == b""
    code, out, screen = _stderr_on_a_terminal("predict", "-m", model, test)
    assert code == 0 and out == piped.stdout  # the results untouched by the bar
    assert "predict 120/120 files" in screen and "Traceback" not in screen
    code, out, screen = _stderr_on_a_terminal("predict", "-m", model, test, "-q", "-j", "1")
    assert (code, out, screen) == (0, piped.stdout, "")


def test_the_allocator_keeps_freed_memory_in_a_process_that_asks():
    """:func:`nbclass.reading.process.keep_freed_memory` (a default fit asks): glibc takes
    the three settings, and the process then computes as before (asked in a child, whose
    allocator is its own)."""
    script = (
        "import numpy as np\n"
        "from nbclass.reading.process import keep_freed_memory\n"
        "assert keep_freed_memory()\n"
        "a = np.arange(5_000_000, dtype=np.float64)\n"
        "for _ in range(3):\n"
        "    b = a * 2.0\n"
        "    del b\n"
        "print(float((a * 2.0).sum()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) == 2.0 * 4_999_999 * 5_000_000 / 2
