"""Signals, closed and full outputs, a full disk: real processes, real signals, real mounts.

Each case is what a cron job meets: ``kill`` or ``timeout`` stopping a long fit, Ctrl-C,
``| head -1``, ``>&-``, ``> /dev/full``, a disk that fills up while a model is saved. The
answer is always an exit code and at most one line on stderr, and the model on disk is
the old one or the new one, never half of one.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from conftest import DEMO_CORPUS, NAMED, REPO, big_corpus, nbclass_command
from test_subprocess import TIMEOUT, bash, run

from nbclass.errors import EXIT_INTERRUPTED, EXIT_TERMINATED

EXIT_BROKEN_PIPE = 141


def _default_signals():  # pragma: no cover - runs in the child
    # A test runner in the background may ignore SIGINT, and ignored signals are inherited.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def wait_until_handled(pid: int, signum: int) -> None:
    """Wait until the process catches ``signum`` (nbclass installed its handler)."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():  # pragma: no cover - not Linux
        pytest.skip("needs /proc/PID/status to know when nbclass handles signals")
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        fields = dict(
            line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line
        )
        if int(fields["SigCgt"], 16) >> (signum - 1) & 1:
            return
        time.sleep(0.005)
    raise AssertionError(f"process {pid} never handled signal {signum}")  # pragma: no cover


def unread_bytes(pipe) -> int:
    """Bytes written to a pipe and not read yet (FIONREAD works on either end on Linux)."""
    buffer = bytearray(4)
    fcntl.ioctl(pipe.fileno(), termios.FIONREAD, buffer)
    return int.from_bytes(buffer, "little")


@pytest.fixture(scope="module")
def demo_model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.nbc"
    assert run("fit", DEMO_CORPUS, "-o", path, "-q", "--ledger", *NAMED).returncode == 0
    return path


# --- SIGTERM and Ctrl-C during fit -----------------------------------------------------------

SIGNALS = {"SIGTERM": (signal.SIGTERM, EXIT_TERMINATED, "\nTerminated\n"),
           "SIGINT": (signal.SIGINT, EXIT_INTERRUPTED, "\nInterrupted\n")}  # fmt: skip


@pytest.mark.parametrize("name", list(SIGNALS))
def test_a_signal_during_fit_of_a_folder_leaves_no_model(tmp_path, name):
    signum, code, message = SIGNALS[name]
    output = tmp_path / "out" / "m.nbc"
    output.parent.mkdir()
    # A fit that outlasts the signal; should fitting get faster, the corpus grows.
    for files in (8, 32, 128):
        corpus = big_corpus(tmp_path / f"corpus-{files}", files)
        process = subprocess.Popen(
            [*nbclass_command(), "fit", str(corpus), "-o", str(output), "-q"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_default_signals,
        )
        wait_until_handled(process.pid, signal.SIGTERM)  # nbclass's main() is running
        time.sleep(0.2)  # and by now counting the corpus
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=TIMEOUT)
        # The fit was faster than the signal: it wrote its model and exited (0), or the
        # signal came while Python was finishing, after its handlers were reset (-signum).
        if process.returncode in (0, -signum) and output.exists():  # pragma: no cover
            output.unlink()
            continue
        break
    assert process.returncode == code, stderr
    assert stdout == b"" and stderr.decode() == message
    assert set(os.listdir(output.parent)) <= {".m.nbc.lock"}  # no model, no temporary file


@pytest.mark.parametrize("name", list(SIGNALS))
def test_a_signal_during_fit_lines_from_an_endless_pipe_keeps_the_old_model(
    tmp_path, demo_model, name
):
    signum, code, message = SIGNALS[name]
    model = tmp_path / "m.nbc"
    model.write_bytes(demo_model.read_bytes())
    before = sorted(os.listdir(tmp_path))
    process = subprocess.Popen(
        [*nbclass_command(), "fit", "--lines", "-", "--update", str(model), "-q"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_default_signals,
    )
    try:
        # like `tail -f tickets.tsv | nbclass fit --lines - ...`: the pipe stays open
        process.stdin.write(b"billing\ta refund for my invoice please\n" * 2000)
        process.stdin.flush()
        wait_until_handled(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + TIMEOUT
        while unread_bytes(process.stdin) and time.monotonic() < deadline:
            time.sleep(0.01)
        process.send_signal(signum)
        code_seen = process.wait(timeout=TIMEOUT)
        stdout, stderr = process.stdout.read(), process.stderr.read()
    finally:
        if process.poll() is None:  # pragma: no cover - only when the test failed
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            try:
                stream.close()
            except BrokenPipeError:
                pass
    assert code_seen == code, stderr
    assert stdout == b"" and stderr.decode() == message
    assert model.read_bytes() == demo_model.read_bytes()
    assert set(os.listdir(tmp_path)) - {".m.nbc.lock"} == set(before)  # no temporary file


# A Ctrl-C that lands inside a fork hook. logging's hook takes its module lock before the
# fork and gives it back after, in Python; Python drops an exception raised in a hook, so
# the lock stayed held and a thread that logged later (numpy's import) waited for ever.
# Here the hook is the test's own: its lock stands for logging's, and it sends the
# interrupt itself, so the case happens every time rather than once in a few fits.
FORK_HOOK = """
import contextlib, os, signal, sys, threading
from nbclass.reading.process import install_sigterm, signals_held
install_sigterm()  # as nbclass's main() does
lock = threading.Lock()

def after_in_parent():
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the hook runs
    lock.release()

os.register_at_fork(before=lock.acquire, after_in_parent=after_in_parent,
                    after_in_child=lock.release)
held = signals_held() if sys.argv[1] == "held" else contextlib.nullcontext()
interrupted = False
try:
    with held:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
except KeyboardInterrupt:
    interrupted = True
print(interrupted, lock.locked(), flush=True)
os._exit(0)
"""


@pytest.mark.parametrize("hold, expected", [("held", "True False"), ("bare", "False True")])
def test_an_interrupt_inside_a_fork_hook_is_raised_after_the_fork(hold, expected):
    """Held (as every fork of workers is), the interrupt is raised once the fork and its
    hooks are done, and the hook's lock is free; bare, it is lost inside the hook and
    the lock stays held: the hazard the holding removes."""
    result = subprocess.run(
        [sys.executable, "-c", FORK_HOOK, hold], capture_output=True, timeout=TIMEOUT,
        preexec_fn=_default_signals, cwd=REPO,
    )  # fmt: skip
    assert result.stdout.decode().split("\n")[0] == expected, result.stderr


def test_an_ignored_sigterm_stays_ignored(tmp_path):
    """nohup-style: a SIGTERM the parent ignores is not turned into an exit."""
    model = tmp_path / "m.nbc"
    fit = shlex.join([*nbclass_command(), "fit", str(DEMO_CORPUS), "-o", str(model), "-q"])
    script = f"trap '' TERM; {fit} & pid=$!; sleep 0.05; kill -TERM $pid; wait $pid; echo $?"
    result = bash(script)
    assert result.stdout == b"0\n" and result.stderr == b""
    assert model.exists()


# --- closed and full outputs -------------------------------------------------------------------


def test_predict_of_many_documents_cut_off_by_head_is_quiet(tmp_path, demo_model):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(3000):
        (docs / f"{i:05d}.txt").write_text(f"refund invoice number {i} charged twice\n")
    err, status = tmp_path / "stderr.txt", tmp_path / "status.txt"
    cmd = shlex.join([*nbclass_command(), "predict", "-m", str(demo_model), str(docs)])
    result = bash(
        f"{cmd} 2>{shlex.quote(str(err))} | head -n 1; "
        f'echo "${{PIPESTATUS[*]}}" >{shlex.quote(str(status))}'
    )
    assert result.stdout.decode().startswith(f"{docs}/00000.txt\tbilling\t")
    assert result.stdout.count(b"\n") == 1
    assert err.read_text() == ""
    # 3,000 lines are more than a pipe holds: nbclass was cut off, and says so by 141.
    assert status.read_text().split() == [str(EXIT_BROKEN_PIPE), "0"]


CLOSED_STDOUT = {
    "predict a folder": ["predict", "-m", "{model}", str(DEMO_CORPUS / "billing")],
    "predict one document": ["predict", "-m", "{model}"],
    "info": ["info", "-m", "{model}"],
    "top-features": ["top-features", "-m", "{model}"],
}


@pytest.mark.parametrize("case", list(CLOSED_STDOUT))
def test_results_to_a_closed_stdout_are_one_error_line(demo_model, case):
    args = [a.format(model=demo_model) for a in CLOSED_STDOUT[case]]
    cmd = shlex.join([*nbclass_command(), *args])
    result = bash(f"echo 'my invoice is wrong' | {cmd} >&-")
    assert result.returncode == 1
    assert result.stderr == b"Error: cannot write to standard output: it is closed\n"


def test_fit_with_a_closed_stdout_works_and_the_model_is_not_fd_1(tmp_path):
    """fd 1 is reserved: the saved model cannot become stdout and receive printed text."""
    model = tmp_path / "m.nbc"
    cmd = shlex.join([*nbclass_command(), "fit", str(DEMO_CORPUS), "-o", str(model), "--ledger"])
    result = bash(f"{cmd} >&- 2>&-; echo $?")
    assert result.stdout == b"0\n"
    reference = tmp_path / "r.nbc"
    assert run("fit", DEMO_CORPUS, "-o", reference, "-q", "--ledger").returncode == 0
    assert model.read_bytes() == reference.read_bytes()


@pytest.mark.parametrize("case", ["predict a folder", "predict one document", "info"])
def test_results_to_dev_full_are_one_error_line(demo_model, case):
    args = [a.format(model=demo_model) for a in CLOSED_STDOUT[case]]
    cmd = shlex.join([*nbclass_command(), *args])
    result = bash(f"echo 'my invoice is wrong' | {cmd} >/dev/full")
    assert result.returncode == 1
    assert result.stderr == b"Error: cannot write to standard output: No space left on device\n"


# --- a full disk while saving a model ----------------------------------------------------------


def _mount_command() -> list[str] | None:
    """`unshare` arguments giving a private mount namespace where tmpfs can be mounted."""
    probe = 'mount -t tmpfs -o size=64k tmpfs "$0"'  # on /tmp, in the private namespace only
    for command in (["unshare", "-m"], ["unshare", "-rm"]):
        try:
            result = subprocess.run(
                [*command, "sh", "-c", probe, "/tmp"], capture_output=True, timeout=TIMEOUT
            )
        except (OSError, subprocess.TimeoutExpired):  # pragma: no cover - no unshare
            continue
        if result.returncode == 0:
            return command
    return None  # pragma: no cover - depends on the machine


@pytest.fixture(scope="module")
def private_mount():
    command = _mount_command()
    if command is None:  # pragma: no cover - depends on the machine
        pytest.skip(
            "cannot mount a small tmpfs: neither root (unshare -m) nor an unprivileged user "
            "namespace (unshare -rm) is available here"
        )
    return command


def on_a_full_disk(private_mount, tmp_path: Path, files: dict[str, Path], command: list) -> dict:
    """Copy ``files`` onto a fresh tmpfs, fill it up, run ``command`` in it; report.

    The tmpfs lives in a private mount namespace and disappears with it: what the test
    checks is copied out first (the files, the folder listing, the command's output).
    """
    disk, out = tmp_path / "disk", tmp_path / "out"
    disk.mkdir()
    out.mkdir()
    q = shlex.quote
    copies = "; ".join(f"cp {q(str(src))} {q(str(disk / name))}" for name, src in files.items())
    args = shlex.join([a.replace("DISK", str(disk)) for a in map(str, command)])
    script = f"""
set -u
mount -t tmpfs -o size=256k tmpfs {q(str(disk))}
{copies}
touch {q(str(disk))}/.{q(next(iter(files)))}.lock
dd if=/dev/zero of={q(str(disk))}/fill bs=4k 2>/dev/null
{args} >{q(str(out))}/stdout 2>{q(str(out))}/stderr
echo $? >{q(str(out))}/status
ls -A {q(str(disk))} >{q(str(out))}/listing
for f in {" ".join(q(n) for n in files)}; do cp {q(str(disk))}/"$f" {q(str(out))}/"$f"; done
"""
    result = subprocess.run([*private_mount, "bash", "-c", script], capture_output=True,
                            timeout=TIMEOUT)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return {
        "status": int((out / "status").read_text()),
        "stderr": (out / "stderr").read_text(),
        "listing": sorted((out / "listing").read_text().split()),
        **{name: (out / name).read_bytes() for name in files},
    }


def full_disk_error(path: str) -> str:
    return (
        f"Error: no space left on device while saving model {path!r}; the previous model is "
        "unchanged: free some space and run the command again\n"
    )


FULL_DISK = {
    "fit --update": ["fit", "--lines", "{lines}", "--update", "DISK/m.nbc"],
    "fit -o": ["fit", str(DEMO_CORPUS), "-o", "DISK/m.nbc", "--ledger", "--ngram-range", "1,2"],
    "merge": ["merge", "DISK/m.nbc", "{other}", "-o", "DISK/m.nbc"],
    "sync": ["sync", "{inbox}", "-m", "DISK/m.nbc"],
}


@pytest.mark.parametrize("case", list(FULL_DISK))
def test_a_full_disk_keeps_the_old_model_and_says_so(private_mount, tmp_path, demo_model, case):
    lines = tmp_path / "new.tsv"
    lines.write_text("billing\tcharged twice for one refund\noutage\tthe api is down\n")
    other = tmp_path / "other.nbc"
    assert run("fit", "--lines", lines, "-o", other, "-q", "--ledger", *NAMED).returncode == 0
    inbox = tmp_path / "inbox"
    subprocess.run(["cp", "-r", str(DEMO_CORPUS), str(inbox)], check=True)
    (inbox / "billing" / "new.txt").write_text("charged twice for one refund\n")
    command = [*nbclass_command(), *(
        a.format(lines=lines, other=other, inbox=inbox) for a in FULL_DISK[case]
    )]  # fmt: skip
    report = on_a_full_disk(private_mount, tmp_path, {"m.nbc": demo_model}, command)
    assert report["stderr"] == full_disk_error(str(tmp_path / "disk" / "m.nbc"))
    assert report["status"] == 1
    assert report["m.nbc"] == demo_model.read_bytes()
    assert report["listing"] == [".m.nbc.lock", "fill", "m.nbc"]  # no temporary file left


def test_the_same_commands_succeed_on_a_disk_with_room(tmp_path, demo_model):
    """The full-disk cases above fail because of the disk alone."""
    lines = tmp_path / "new.tsv"
    lines.write_text("billing\tcharged twice for one refund\n")
    model = tmp_path / "m.nbc"
    model.write_bytes(demo_model.read_bytes())
    result = run("fit", "--lines", lines, "--update", model, "-q")
    assert result.returncode == 0 and result.stderr == b""
    assert model.read_bytes() != demo_model.read_bytes()


# --- the robustness page's table names real tests -------------------------------------------


def test_every_test_named_in_the_robustness_table_exists():
    """Each `file::name` (and each `::name` after it in a row) is a test function."""
    import re

    text = (REPO / "docs" / "robustness.md").read_text(encoding="utf-8")
    found = []
    for row in text.splitlines():
        file = None
        for named_file, name in re.findall(r"`(test_\w+\.py)?::(\w+)`", row):
            file = named_file or file
            found.append((file, name))
    assert len(found) >= 45
    for file, name in found:
        source = (REPO / "tests" / file).read_text(encoding="utf-8")
        assert f"def {name}(" in source, f"{file}::{name}"
