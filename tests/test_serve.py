"""``nbclass serve``: a real server on 127.0.0.1 (or a Unix socket), real HTTP requests,
started and stopped by its process id.

Answers are compared byte for byte with ``nbclass predict --format jsonl`` run on the
same text; replacement, SIGHUP and SIGTERM are done to the running process.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import DEMO_CORPUS, REPO, write_corpus

NBCLASS = str(Path(sys.executable).parent / "nbclass")
TEXTS = [
    "the login page returns 503 since this morning",
    "My card was charged twice for the same invoice, please refund one payment",
    "I cannot reset my password",
    "zzz qqq",  # no known word
    "",
    "Ünïcödé ticket: ça ne marche pas \u2014 refund",
]


def nbclass(*args, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [NBCLASS, *args], input=input, capture_output=True, text=True, cwd=REPO, timeout=120
    )


@pytest.fixture(scope="module")
def demo_model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("serve") / "model.nbc"
    done = nbclass("fit", str(DEMO_CORPUS), "-o", str(path), "-q")
    assert done.returncode == 0, done.stderr
    return path


@pytest.fixture(scope="module")
def other_model(tmp_path_factory) -> Path:
    """Another model (two classes, other words) to replace the demo model with."""
    root = tmp_path_factory.mktemp("other")
    corpus = write_corpus(root / "corpus", {
        "spam": ["win cash now", "cheap pills win", "cash prize claim now", "win win win"],
        "ham": ["lunch at noon", "see you at the meeting", "the report is attached",
                "meeting notes attached"],
    })  # fmt: skip
    path = root / "other.nbc"
    done = nbclass("fit", str(corpus), "-o", str(path), "-q", "--model", "multinomial")
    assert done.returncode == 0, done.stderr
    return path


class Server:
    """``nbclass serve`` in a child process; its stderr lines collected by a thread."""

    def __init__(self, model: Path, *options: str, socket_path: str | None = None,
                 preexec_fn=None):  # fmt: skip
        where = ["--socket", socket_path] if socket_path else ["--port", "0"]
        self.process = subprocess.Popen(
            [NBCLASS, "serve", "-m", str(model), *where, *options],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO, preexec_fn=preexec_fn,
        )  # fmt: skip
        self.lines: list[str] = []
        self._seen = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        first = self.wait_for(r"listening on (\S+),", timeout=60)
        address = first.group(1)
        self.socket_path = socket_path
        self.port = None if socket_path else int(address.rsplit(":", 1)[1])

    def _read(self) -> None:
        for raw in self.process.stderr:
            with self._seen:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self._seen.notify_all()
        with self._seen:
            self._seen.notify_all()

    def wait_for(self, pattern: str, timeout: float = 30, start: int = 0) -> re.Match:
        """The first stderr line from ``start`` on that matches ``pattern``."""
        deadline = time.monotonic() + timeout
        with self._seen:
            while True:
                for line in self.lines[start:]:
                    if match := re.search(pattern, line):
                        return match
                left = deadline - time.monotonic()
                if left <= 0 or (self.process.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(f"no line {pattern!r} in {self.lines}")
                self._seen.wait(left)

    def connect(self, timeout: float = 30) -> http.client.HTTPConnection:
        if self.socket_path:
            return UnixConnection(self.socket_path, timeout)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def raw(self, timeout: float = 10) -> socket.socket:
        if self.socket_path:
            sock = socket.socket(socket.AF_UNIX)
            sock.settimeout(timeout)
            sock.connect(self.socket_path)
            return sock
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)

    def request(self, method: str, path: str, body=None, headers=None):
        """``(status, headers, body bytes)`` on a new connection."""
        connection = self.connect()
        try:
            if isinstance(body, dict | list):
                body = json.dumps(body)
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def predict(self, body) -> tuple[int, bytes]:
        status, _, data = self.request("POST", "/predict", body)
        return status, data

    def stop(self, signum=signal.SIGTERM, timeout: float = 60) -> int:
        """Send ``signum`` to the server's pid and wait for its exit code."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signum)
        code = self.process.wait(timeout)
        self._reader.join(10)
        return code

    def kill(self) -> None:
        """Kill the server by its pid if it still runs; close its stderr."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        self._reader.join(10)
        self.process.stderr.close()


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


@pytest.fixture
def start():
    """``start(model, *options)``: a :class:`Server`, killed at the end if still running."""
    servers = []

    def make(model, *options, **kwargs) -> Server:
        server = Server(model, *options, **kwargs)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.kill()


def predict_lines(model: Path, text: str, *options: str) -> str:
    done = nbclass("predict", "-m", str(model), "--format", "jsonl", *options, input=text)
    assert done.returncode == 0, done.stderr
    return done.stdout


# --- answers: predict's own lines --------------------------------------------------------


@pytest.mark.parametrize(
    "fields, options",
    [
        ({}, []),
        ({"top_k": 2}, ["--top-k", "2"]),
        ({"calibration": False}, ["--no-calibration"]),
        ({"min_probability": 0.9, "unsure_label": "human"},
         ["--min-probability", "0.9", "--unsure-label", "human"]),
        ({"min_known": ["2", "50%"], "min_margin": 0.5},
         ["--min-known", "2", "--min-known", "50%", "--min-margin", "0.5"]),
        ({"min_typicality": 5}, ["--min-typicality", "5"]),
        ({"explain": 3, "top_k": 1}, ["--explain", "3", "--top-k", "1"]),
    ],
)  # fmt: skip
def test_one_text_is_answered_with_predicts_jsonl_line_byte_for_byte(
    start, demo_model, fields, options
):
    server = start(demo_model)
    try:
        for text in TEXTS:
            status, body = server.predict({"text": text, **fields})
            assert status == 200
            assert body.decode("utf-8") == predict_lines(demo_model, text, *options)
    finally:
        assert server.stop() == 0


def test_a_list_is_answered_with_the_lines_of_predict_lines_as_a_json_array(start, demo_model):
    server = start(demo_model)
    texts = [t for t in TEXTS if t]  # predict --lines reads one document a line
    expected = predict_lines(demo_model, "\n".join(texts) + "\n", "--lines", "--top-k", "2")
    status, body = server.predict({"texts": texts, "top_k": 2})
    assert status == 200
    assert body.decode("utf-8") == "[" + ",\n".join(expected.splitlines()) + "]\n"
    assert [row["source"] for row in json.loads(body)] == ["-:1", "-:2", "-:3", "-:4", "-:5"]
    status, body = server.predict({"texts": texts[:2], "sources": ["a\tb", "c"]})
    assert [row["source"] for row in json.loads(body)] == ["a\\tb", "c"]  # escaped as predict
    status, body = server.predict({"texts": []})
    assert (status, body) == (200, b"[]\n")
    assert server.stop() == 0


def test_health_info_and_one_log_line_per_request(start, demo_model):
    server = start(demo_model)
    status, headers, body = server.request("GET", "/health")
    sha = json.loads(body)["model"]
    assert status == 200 and json.loads(body) == {"status": "ok", "model": sha}
    assert headers["content-type"] == "application/json"
    assert headers["x-nbclass-model"] == sha
    status, _, body = server.request("GET", "/info")
    info = json.loads(body)
    assert info["model"]["classes"] == ["account", "billing", "outage"]
    assert info["model"]["sha256"][:16] == sha
    assert info["model"]["documents"] == 42
    assert info["limits"] == {"max_request_bytes": 1048576, "max_batch": 1000, "timeout": 10.0}
    server.predict({"texts": ["a", "b", "c"]})
    server.wait_for(r"POST /predict 200 3 documents [0-9.]+ ms model " + sha)
    server.wait_for(r"GET /info 200 0 documents")
    assert server.stop() == 0
    assert server.lines[-1].startswith("serve: drained and stopped")


def test_a_unix_socket(start, demo_model, tmp_path):
    path = str(tmp_path / "nbclass.sock")
    server = start(demo_model, socket_path=path)
    status, body = server.predict({"text": TEXTS[0]})
    assert status == 200 and body.decode() == predict_lines(demo_model, TEXTS[0])
    assert server.stop() == 0
    assert not os.path.exists(path)


def test_two_workers_answer_and_drain_at_sigterm(start, demo_model):
    server = start(demo_model, "--workers", "2")
    first = int(server.wait_for(r"^serve: ready \(pid (\d+)\)").group(1))
    second = int(server.wait_for(rf"^serve: ready \(pid (?!{first}\))(\d+)\)").group(1))
    workers = {first, second}
    children = subprocess.run(["pgrep", "-P", str(server.process.pid)], capture_output=True)
    assert workers == {int(pid) for pid in children.stdout.split()}
    for text in TEXTS:
        assert server.predict({"text": text})[1].decode() == predict_lines(demo_model, text)
    assert server.stop() == 0
    for pid in workers:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


# --- starting: errors before anything is served --------------------------------------------


def test_start_errors_are_one_line_and_an_exit_code(demo_model, tmp_path):
    done = nbclass("serve", "-m", str(tmp_path / "missing.nbc"), "--port", "0")
    assert done.returncode == 1 and done.stderr.startswith("Error: ")
    assert len(done.stderr.splitlines()) == 1 and "missing.nbc" in done.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = nbclass("serve", "-m", str(demo_model), "--port", str(port))
    assert done.returncode == 1
    assert done.stderr == (
        f"Error: cannot listen on 127.0.0.1:{port}: Address already in use (choose another "
        "--port, --host or --socket)\n"
    )
    done = nbclass("serve", "-m", str(demo_model), "--workers", "0")
    assert done.returncode == 2 and "--workers" in done.stderr
    (tmp_path / "table.csv").write_text("x,label\n1,a\n2,b\n", encoding="utf-8")
    done = nbclass("fit", "--table", str(tmp_path / "table.csv"), "--label", "label",
                   "-o", str(tmp_path / "table.nbc"), "-q")  # fmt: skip
    assert done.returncode == 0, done.stderr
    done = nbclass("serve", "-m", str(tmp_path / "table.nbc"), "--port", "0")
    assert done.returncode == 1 and "table model" in done.stderr


# --- refused requests: a JSON error, never a crash ----------------------------------------


def exchange(server: Server, data: bytes, read_timeout: float = 10) -> bytes:
    """Send raw bytes on a new connection, half-close it, read everything back."""
    with server.raw(read_timeout) as sock:
        sock.sendall(data)
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        return read_all(sock)


def read_all(sock: socket.socket) -> bytes:
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def status_and_error(answer: bytes) -> tuple[int, str]:
    """The first response of ``answer``: its status and its JSON error message."""
    head, _, rest = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = int(re.search(rb"content-length: (\d+)", head, re.IGNORECASE).group(1))
    assert re.search(rb"content-type: application/json", head, re.IGNORECASE), answer
    return status, json.loads(rest[:length])["error"]


def post(body: bytes, extra: bytes = b"") -> bytes:
    return (
        b"POST /predict HTTP/1.1\r\nHost: x\r\n" + extra
        + b"Content-Length: %d\r\n\r\n" % len(body) + body
    )  # fmt: skip


MALFORMED = [
    # (request bytes, status, a part of the error message)
    (post(b"{"), 400, "not JSON"),
    (post(b'{"text": "caf\xe9"}'), 400, "not UTF-8"),
    (post(b"\xff\xfe{}"), 400, "not UTF-8"),
    (post(b'["text"]'), 400, "JSON object"),
    (post(b'"text"'), 400, "JSON object"),
    (post(b""), 400, "not JSON"),
    (post(b"{}"), 400, 'either "text"'),
    (post(b'{"text": "a", "texts": ["b"]}'), 400, 'either "text"'),
    (post(b'{"text": null}'), 400, "text must be a string"),
    (post(b'{"texts": "abc"}'), 400, "list of strings"),
    (post(b'{"texts": ["a", 3]}'), 400, "texts[1] must be a string"),
    (post(b'{"text": "a", "top-k": 2}'), 400, "unknown field 'top-k'"),
    (post(b'{"text": "a", "top_k": 0}'), 400, "top_k"),
    (post(b'{"text": "a", "top_k": 2.5}'), 400, "top_k"),
    (post(b'{"text": "a", "top_k": true}'), 400, "top_k"),
    (post(b'{"text": "a", "min_probability": 2}'), 400, "min_probability"),
    (post(b'{"text": "a", "min_probability": NaN}'), 400, "not a JSON number"),
    (post(b'{"text": "a", "min_margin": Infinity}'), 400, "not a JSON number"),
    (post(b'{"text": "a", "min_known": "lots"}'), 400, "min_known 'lots'"),
    (post(b'{"text": "a", "min_known": {}}'), 400, "min_known"),
    (post(b'{"text": "a", "min_typicality": 101}'), 400, "min_typicality"),
    (post(b'{"text": "a", "unsure_label": "billing"}'), 400, "is a class"),
    (post(b'{"text": "a", "unsure_label": "a\\tb"}'), 400, "unsure_label"),
    (post(b'{"text": "a", "calibration": "no"}'), 400, "calibration"),
    (post(b'{"text": "a", "explain": -1}'), 400, "explain"),
    (post(b'{"text": "\\ud800"}'), 400, "lone surrogate"),
    (post(b'{"text": "a", "source": 1}'), 400, "source must be a string"),
    (post(b'{"texts": ["a"], "sources": ["x", "y"]}'), 400, "one per text"),
    (post(b'{"texts": ["a"], "source": "x"}'), 400, '"source" goes with "text"'),
    (post(b"[" * 30_000 + b"]" * 30_000), 400, "nests JSON too deeply"),
    (post(b'{"text": ' + b"1" * 5000 + b"}"), 400, "not JSON"),
    (post(b'{"text": "' + b"a" * 70_000 + b'"}'), 413, "larger than 65536 bytes"),
    (post(b'{"texts": ' + json.dumps(["a"] * 11).encode() + b"}"), 413, "at most 10"),
    (b"POST /predict HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n{}", 413, "larger than"),
    (b"POST /predict HTTP/1.1\r\nContent-Length: -5\r\n\r\n{}", 400, "not valid HTTP"),
    (b"POST /predict HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n{}", 400,
     "not valid HTTP"),
    (b"GET /predict HTTP/1.1\r\n\r\n", 405, "takes POST"),
    (b"DELETE /info HTTP/1.1\r\n\r\n", 405, "takes GET"),
    (b"GET /../../etc/passwd HTTP/1.1\r\n\r\n", 404, "no such path"),
    (b"GET /%00%ff HTTP/1.1\r\n\r\n", 404, "no such path"),
    (b"GARBAGE\r\n\r\n", 400, "not valid HTTP"),
    (b"\x00\x01\x02\x03\r\n\r\n", 400, "not valid HTTP"),
    (b"GET / HTTP/9.9\r\n\r\n", 400, "not valid HTTP"),
    (b"GET /health HTTP/1.1\r\nBad Header\r\n\r\n", 400, "not valid HTTP"),
    (b"GET /health HTTP/1.1\r\n" + b"X-A: b\r\n" * 30 + b"\r\n", 431, "more than 20 headers"),
    (b"GET /health HTTP/1.1\r\nX-A: " + b"b" * 20000 + b"\r\n\r\n", 431, "longer than 16384"),
    (b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n", 414, "longer than 16384"),
    (b"POST /predict HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400,
     "not valid HTTP"),
    (b"POST /predict HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     + b"8000\r\n" + b"a" * 0x8000 + b"\r\n" + b"8000\r\n" + b"a" * 0x8000 + b"\r\n"
     + b"10\r\n" + b"a" * 16 + b"\r\n0\r\n\r\n", 413, "larger than"),
    (b"GET /health HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", 200, None),
]  # fmt: skip


def test_hundreds_of_malformed_requests_get_4xx_json_errors_and_the_server_lives_on(
    start, demo_model
):
    server = start(
        demo_model, "--max-request-bytes", "65536", "--max-batch", "10", "--max-headers", "20"
    )
    for _ in range(4):  # 4 rounds of the list: 200 requests
        for data, status, message in MALFORMED:
            answer = exchange(server, data)
            if message is None:
                assert answer.startswith(b"HTTP/1.1 %d " % status), answer[:200]
                continue
            got, error = status_and_error(answer)
            assert (got, message in error) == (status, True), (data[:80], answer[:300])
    # Half a request, then the connection closed: nothing to answer, nothing broken.
    for cut in (b"POST /predict HTTP/1.1\r\nContent-Length: 50\r\n\r\n{\"te", b"GET /hea"):
        for _ in range(20):
            exchange(server, cut)
    status, body = server.predict({"text": TEXTS[0]})
    assert status == 200 and body.decode() == predict_lines(demo_model, TEXTS[0])
    assert server.process.poll() is None
    assert server.stop() == 0
    assert not any("internal error" in line or "Traceback" in line for line in server.lines)


def test_a_client_that_stalls_is_answered_408_and_let_go(start, demo_model):
    server = start(demo_model, "--timeout", "0.5")
    for partial in (
        b"",  # connected, says nothing
        b"POST /predict HTTP/1.1\r\nHost: x\r\n",  # headers never end
        b"POST /predict HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"text\": ",  # body stops
    ):
        with server.raw(5) as sock:
            began = time.monotonic()
            sock.sendall(partial) if partial else None
            answer = read_all(sock)  # the server closes the connection
            waited = time.monotonic() - began
        if partial:
            assert status_and_error(answer)[0] == 408, answer
        assert 0.4 < waited < 3
    # Headers trickled a byte at a time do not extend the deadline.
    with server.raw(5) as sock:
        began = time.monotonic()
        answer = b""
        for byte in b"GET /health HTTP/1.1\r\nX-Slow: " + b"a" * 100:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            time.sleep(0.02)
        answer = read_all(sock)
    assert status_and_error(answer)[0] == 408
    assert time.monotonic() - began < 3
    assert server.stop() == 0


# --- operations: replacement, SIGHUP, SIGTERM ---------------------------------------------


def replace_file(source: Path, target: Path) -> None:
    """What fit, update and sync do: a temporary file renamed over the old one."""
    temporary = target.with_name(target.name + ".tmp")
    shutil.copyfile(source, temporary)
    os.replace(temporary, target)


def test_the_model_is_replaced_under_load_without_a_failed_or_mixed_request(
    start, demo_model, other_model, tmp_path
):
    served = tmp_path / "served.nbc"
    shutil.copyfile(demo_model, served)
    texts = ["refund my card", "win cash now", "the meeting notes"]
    # The expected answer under each model, from predict itself.
    expected = {}
    for model in (demo_model, other_model):
        lines = predict_lines(model, "\n".join(texts) + "\n", "--lines")
        expected[model] = ("[" + ",\n".join(lines.splitlines()) + "]\n").encode()
    server = start(served)
    sha = {}
    for model in (demo_model, other_model):
        replace_file(model, served)
        server.wait_for(r"model (\w+) replaces|^serve: listening", start=0)
        deadline = time.monotonic() + 20
        while True:
            _, headers, body = server.request("POST", "/predict", {"texts": texts})
            if body == expected[model]:
                sha[model] = headers["x-nbclass-model"]
                break
            assert time.monotonic() < deadline
            time.sleep(0.05)
    answers, failures = [], []
    stop = threading.Event()

    def client() -> None:
        connection = server.connect()
        while not stop.is_set():
            try:
                connection.request("POST", "/predict", json.dumps({"texts": texts}))
                response = connection.getresponse()
                answers.append((response.status, response.getheader("x-nbclass-model"),
                                response.read()))  # fmt: skip
            except Exception as exc:  # noqa: BLE001 - every failure is counted
                failures.append(repr(exc))
                connection.close()
                connection = server.connect()
        connection.close()

    clients = [threading.Thread(target=client) for _ in range(4)]
    for thread in clients:
        thread.start()
    replacements = 6
    for i in range(replacements):
        time.sleep(0.4)
        model = (demo_model, other_model)[i % 2]
        seen = len(server.lines)  # (before the file changes: its line can only come after)
        replace_file(model, served)
        server.wait_for(rf"loaded .* model {sha[model]} replaces", start=seen)
    time.sleep(0.3)
    stop.set()
    for thread in clients:
        thread.join(30)
    assert failures == []
    assert len(answers) > 50
    by_sha = {sha[m]: expected[m] for m in expected}
    for status, model_sha, body in answers:
        assert status == 200
        assert body == by_sha[model_sha]  # every document of an answer by the one model
    assert {model_sha for _, model_sha, _ in answers} == set(by_sha)
    assert server.stop() == 0


def test_a_broken_new_file_is_refused_and_the_old_model_keeps_serving(
    start, demo_model, other_model, tmp_path
):
    served = tmp_path / "served.nbc"
    shutil.copyfile(demo_model, served)
    server = start(served)
    _, headers, before = server.request("POST", "/predict", {"text": TEXTS[0]})
    broken = tmp_path / "broken.nbc"
    data = demo_model.read_bytes()
    broken.write_bytes(data[: len(data) // 2])  # truncated
    replace_file(broken, served)
    server.wait_for(r"refused the new model file: .*truncated.* \(still serving "
                    + headers["x-nbclass-model"] + r"\)")  # fmt: skip
    for _ in range(3):
        _, again, body = server.request("POST", "/predict", {"text": TEXTS[0]})
        assert (again["x-nbclass-model"], body) == (headers["x-nbclass-model"], before)
    seen = len(server.lines)
    os.kill(server.process.pid, signal.SIGHUP)  # SIGHUP tries again, and refuses again
    server.wait_for(r"refused the new model file", start=seen)
    assert server.process.poll() is None
    replace_file(other_model, served)
    server.wait_for(r"loaded .* model \w+ replaces " + headers["x-nbclass-model"])
    status, body = server.predict({"text": "win cash"})
    assert body.decode() == predict_lines(other_model, "win cash")
    assert server.stop() == 0


def wait_for_lines(server: Server, pattern: str, n: int, timeout: float = 30) -> None:
    """Wait until ``n`` lines of the server's log match ``pattern``."""
    deadline = time.monotonic() + timeout
    while sum(bool(re.search(pattern, line)) for line in list(server.lines)) < n:
        assert time.monotonic() < deadline, (pattern, server.lines)
        time.sleep(0.05)


def test_a_removed_model_file_leaves_the_loaded_model_serving(
    start, demo_model, other_model, tmp_path
):
    served = tmp_path / "served.nbc"
    shutil.copyfile(demo_model, served)
    server = start(served)
    _, headers, before = server.request("POST", "/predict", {"text": TEXTS[0]})
    served.unlink()
    time.sleep(1.5)  # three looks at the file
    _, again, body = server.request("POST", "/predict", {"text": TEXTS[0]})
    assert (again["x-nbclass-model"], body) == (headers["x-nbclass-model"], before)
    replace_file(other_model, served)
    server.wait_for(r"loaded .* model \w+ replaces " + headers["x-nbclass-model"])
    assert server.stop() == 0


@pytest.mark.parametrize("workers", [1, 2])
def test_sighup_loads_the_file_again_in_every_worker(start, demo_model, workers):
    server = start(demo_model, "--workers", str(workers))
    wait_for_lines(server, r"^serve: ready", workers)
    sha = json.loads(server.request("GET", "/health")[2])["model"]
    os.kill(server.process.pid, signal.SIGHUP)
    wait_for_lines(server, rf"reloaded '.*model.nbc': the same model \({sha}\)", workers)
    assert server.request("GET", "/health")[0] == 200
    assert server.stop() == 0


@pytest.mark.parametrize("workers", ["1", "2"])
def test_sigterm_lets_the_request_in_flight_finish_then_exits_0(start, demo_model, workers):
    server = start(demo_model, "--workers", workers)
    body = json.dumps({"text": TEXTS[1]}).encode()
    with server.raw(20) as sock:
        sock.sendall(b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                     % len(body) + body[:10])  # fmt: skip
        time.sleep(0.3)  # the request is in flight: its body half sent
        os.kill(server.process.pid, signal.SIGTERM)
        time.sleep(0.3)
        sock.sendall(body[10:])
        answer = read_all(sock)
    head, _, rest = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    assert rest.decode() == predict_lines(demo_model, TEXTS[1])
    assert server.process.wait(30) == 0
    # Nothing is accepted any more.
    with pytest.raises(OSError):
        server.raw(2).close()
