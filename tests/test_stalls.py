"""Services that stop answering: a Dask cluster whose last worker is killed, an object
store that accepts a connection and never answers (or answers a byte at a time).

Real processes: a Dask scheduler and worker on 127.0.0.1 started and stopped by pid, and
a socket server in a thread of this process; every command ends within its timeout.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from conftest import big_corpus, nbclass_command
from test_dask import _dask, _stop

STARTUP = 60
TIMEOUT = 120


def run(*args, env=None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *map(str, args)], capture_output=True, timeout=TIMEOUT,
        env={**os.environ, **(env or {})}, **kwargs,
    )  # fmt: skip


# --- a Dask cluster that loses its last worker ---------------------------------------------


@pytest.fixture
def lone_worker(tmp_path):
    """``(address, worker process)``: a scheduler of this test's own with one worker."""
    scheduler_file = tmp_path / "scheduler.json"
    processes = []
    with open(tmp_path / "dask.log", "wb") as log:
        try:
            processes.append(subprocess.Popen(
                [_dask(), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                 "--scheduler-file", str(scheduler_file)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path,
            ))  # fmt: skip
            deadline = time.monotonic() + STARTUP
            while not scheduler_file.exists() or not scheduler_file.read_text().endswith("}"):
                assert processes[0].poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
            address = json.loads(scheduler_file.read_text())["address"]
            processes.append(subprocess.Popen(
                [_dask(), "worker", address, "--host", "127.0.0.1", "--nthreads", "1",
                 "--no-dashboard", "--no-nanny", "--name", "lone"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path,
            ))  # fmt: skip
            wait = (
                "from distributed import Client\n"
                f"with Client({address!r}, timeout={STARTUP}) as c: "
                f"c.wait_for_workers(1, {STARTUP})"
            )
            subprocess.run([sys.executable, "-c", wait], check=True, timeout=2 * STARTUP)
            yield address, processes[1]
        finally:
            for process in reversed(processes):
                _stop(process)


def test_a_fit_whose_last_worker_is_killed_stops_after_the_worker_timeout(
    tmp_path, lone_worker
):
    address, worker = lone_worker
    corpus = big_corpus(tmp_path / "corpus", 60)  # 72 MB: seconds of work for one thread
    fit = subprocess.Popen(
        [*nbclass_command(), "fit", str(corpus), "-o", str(tmp_path / "m.nbc"), "-q",
         "--scheduler", address],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "NBCLASS_WORKER_TIMEOUT": "2"},
    )  # fmt: skip
    # Wait, in a process of its own, until the worker has a task of the fit.
    busy = (
        "import time; from distributed import Client\n"
        f"with Client({address!r}, timeout={STARTUP}) as c:\n"
        "    while not any(c.processing().values()): time.sleep(0.05)"
    )
    subprocess.run([sys.executable, "-c", busy], check=True, timeout=TIMEOUT)
    assert fit.poll() is None, fit.communicate()
    worker.send_signal(signal.SIGKILL)
    worker.wait(TIMEOUT)
    _, err = fit.communicate(timeout=TIMEOUT)
    assert fit.returncode == 1
    assert err.decode() == (
        f"Error: the Dask scheduler at {address} has had no worker for 2 s with work left "
        f"(were its workers stopped?): start some with  dask worker {address}  and run the "
        "command again (the wait is set by NBCLASS_WORKER_TIMEOUT)\n"
    )
    assert not (tmp_path / "m.nbc").exists()


@pytest.mark.parametrize("value", ["0", "-1", "nan", "abc", "1e400", "86401"])
def test_the_worker_timeout_must_be_a_number_of_seconds(tmp_path, lone_worker, value):
    address, _ = lone_worker
    result = run("fit", tmp_path, "-o", tmp_path / "m.nbc", "--scheduler", address,
                 env={"NBCLASS_WORKER_TIMEOUT": value})  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.decode() == (
        f"Error: NBCLASS_WORKER_TIMEOUT={value!r} is "
        f"{'not a number' if value == 'abc' else 'out of range'}: give a number above 0 and "
        "at most 86400\n"
    )


# --- an object store that stalls ----------------------------------------------------------


class StalledStore:
    """A server on 127.0.0.1 that accepts connections and then never answers
    (``silent``), or answers an HTTP response one byte every half second (``slow``)."""

    def __init__(self, mode: str):
        self.mode, self.connections = mode, []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self):
        self.server.settimeout(0.2)
        while not self._stop.is_set():
            try:
                connection, _ = self.server.accept()
            except OSError:
                continue
            self.connections.append(connection)
            if self.mode == "slow":
                threading.Thread(target=self._drip, args=(connection,), daemon=True).start()

    def _drip(self, connection):
        answer = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100_000
        try:
            connection.recv(65536)
            for byte in answer:
                if self._stop.wait(0.5):
                    return
                connection.send(bytes([byte]))
        except OSError:
            return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(TIMEOUT)
        for connection in self.connections:
            connection.close()
        self.server.close()


STALLED_COMMANDS = {
    "info": (["info", "-m", "s3://bucket/m.nbc"], "cannot read model file 's3://bucket/m.nbc'"),
    "predict one": (["predict", "-m", "s3://bucket/m.nbc"],
                    "cannot read model file 's3://bucket/m.nbc'"),
    "fit": (["fit", "s3://bucket/corpus", "-o", "{out}"], "cannot read 's3://bucket/corpus'"),
    "predict an object": (["predict", "-m", "{model}", "s3://bucket/doc.txt"],
                          "cannot read 's3://bucket/doc.txt'"),
    "fit --lines": (["fit", "--lines", "s3://bucket/lines.tsv", "-o", "{out}"],
                    "cannot read 's3://bucket/lines.tsv'"),
}  # fmt: skip


@pytest.mark.parametrize("mode", ["silent", "slow"])
@pytest.mark.parametrize("case", list(STALLED_COMMANDS))
def test_a_store_that_stalls_is_one_error_after_the_storage_timeout(tmp_path, mode, case):
    from conftest import DEMO_CORPUS, NAMED

    model = tmp_path / "m.nbc"
    assert run("fit", DEMO_CORPUS, "-o", model, "-q", *NAMED).returncode == 0
    command, what = STALLED_COMMANDS[case]
    args = [a.format(out=tmp_path / "out.nbc", model=model) for a in command]
    with StalledStore(mode) as store:
        env = {
            "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{store.port}",
            "NBCLASS_STORAGE_TIMEOUT": "2",
        }  # fmt: skip
        result = run(*args, env=env, stdin=subprocess.DEVNULL)
    assert result.returncode == 1
    assert result.stderr.decode().splitlines()[-1:] == [
        f"Error: {what}: no answer within 2 s (the store is slow or does not answer; "
        "NBCLASS_STORAGE_TIMEOUT sets the wait)"
    ]
    assert result.stderr.decode().count("\n") == 1
    assert not (tmp_path / "out.nbc").exists()
