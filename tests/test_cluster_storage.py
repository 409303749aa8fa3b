"""Past one machine: object storage, reduction, listing and output on a real cluster.

A module fixture starts a real S3-compatible server (moto's server mode) and a real
Dask scheduler with two single-thread workers, all on 127.0.0.1 with free ports, from
this virtual environment; the workers and every nbclass process get the server's
address and test credentials through the environment, as a user's machines would
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``). Everything is stopped by pid after the
module's tests.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import DEMO_CORPUS, REPO, nbclass_command
from hypothesis import given
from hypothesis import strategies as st
from test_dask import _dask, _log, _stop

STARTUP = 60
TIMEOUT = 120
BUCKET = "nbclass-test"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STARTUP
    while True:
        assert process.poll() is None, f"the S3 server stopped:\n{_log(log)}"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            assert time.monotonic() < deadline, f"the S3 server did not start:\n{_log(log)}"
            time.sleep(0.1)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """``(scheduler address, environment)``: an S3 server with the bucket BUCKET, and a
    Dask scheduler with two workers that reach it."""
    root = tmp_path_factory.mktemp("world")
    workdir = root / "workers"
    workdir.mkdir()
    processes: list[subprocess.Popen] = []
    logs: list[Path] = []
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DASK_"))}
    env.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1", AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}",
    )  # fmt: skip

    def start(name: str, command: list[str]) -> subprocess.Popen:
        log = root / f"{name}.log"
        logs.append(log)
        with open(log, "wb") as handle:
            process = subprocess.Popen(
                command, cwd=workdir, stdin=subprocess.DEVNULL, stdout=handle,
                stderr=subprocess.STDOUT, env=env,
            )  # fmt: skip
        processes.append(process)
        return process

    def failed(what: str) -> str:
        return what + "\n" + "\n".join(f"--- {log.name}\n{_log(log)}" for log in logs)

    try:
        moto = Path(sys.executable).parent / "moto_server"
        assert moto.exists(), "the test extra installs moto[server]: run  make install"
        server = start("s3", [str(moto), "-H", "127.0.0.1", "-p", str(port)])
        _wait_for_port(port, server, logs[-1])
        scheduler_file = root / "scheduler.json"
        scheduler = start("scheduler", [
            _dask(), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
            "--scheduler-file", str(scheduler_file),
        ])  # fmt: skip
        deadline = time.monotonic() + STARTUP
        while not scheduler_file.exists() or not scheduler_file.read_text().endswith("}"):
            assert scheduler.poll() is None, failed("the scheduler stopped")
            assert time.monotonic() < deadline, failed("the scheduler did not start")
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        for i in (1, 2):
            start(f"worker{i}", [
                _dask(), "worker", address, "--host", "127.0.0.1", "--nthreads", "1",
                "--no-dashboard", "--no-nanny", "--name", f"worker{i}",
            ])  # fmt: skip
        ready = (
            "from distributed import Client\n"
            f"with Client({address!r}, timeout={STARTUP}) as c: c.wait_for_workers(2, {STARTUP})\n"
            "import fsspec\n"
            f"fsspec.filesystem('s3').mkdir({BUCKET!r})\n"
        )
        result = subprocess.run(
            [sys.executable, "-c", ready], capture_output=True, text=True, env=env,
            timeout=2 * STARTUP,
        )  # fmt: skip
        assert result.returncode == 0, failed(result.stderr)
        yield address, env
    finally:
        for process in reversed(processes):
            _stop(process)


def run(env, *args, cwd=REPO, input=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *map(str, args)], capture_output=True, cwd=cwd, timeout=TIMEOUT,
        env=env, input=input,
    )  # fmt: skip


def script(env, code: str, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd,
        timeout=TIMEOUT, env=env,
    )  # fmt: skip


def upload(env, local: Path, url: str) -> None:
    result = script(env, f"import fsspec; fsspec.filesystem('s3').put({str(local)!r}, "
                         f"{url!r}, recursive=True)")  # fmt: skip
    assert result.returncode == 0, result.stderr


def s3_bytes(env, url: str) -> bytes:
    code = (
        "import sys, fsspec\n"
        f"sys.stdout.buffer.write(fsspec.filesystem('s3').cat({url!r}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=TIMEOUT, env=env
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def s3_listing(env, url: str) -> list[str]:
    result = script(env, f"import fsspec; print('\\n'.join(fsspec.filesystem('s3').ls({url!r})))")
    assert result.returncode == 0, result.stderr
    return sorted(result.stdout.split())


@pytest.fixture(scope="module")
def news_s3(world, news_sample, tmp_path_factory):
    """The 20news sample's training and test folders, here and in the bucket."""
    _, env = world
    train, test = news_sample
    upload(env, train, f"s3://{BUCKET}/news/train")
    upload(env, test, f"s3://{BUCKET}/news/test")
    return train, test


def local(env, *args, cwd=REPO) -> subprocess.CompletedProcess:
    """nbclass run in this machine's processes only (no scheduler, one job)."""
    result = run(env, *args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result


# --- the reduction and the listing on the cluster ---------------------------------------

GATHER_SPY = """
import sys
from distributed import Client

gathered, submitted = [], []
real_gather, real_submit = Client._gather, Client.submit

async def _gather(self, futures, *args, **kwargs):
    gathered.append(len(futures) if isinstance(futures, (list, tuple)) else 1)
    return await real_gather(self, futures, *args, **kwargs)

def submit(self, function, *args, **kwargs):
    submitted.append(getattr(function, "__name__", ""))
    return real_submit(self, function, *args, **kwargs)

Client._gather, Client.submit = _gather, submit
from nbclass.cli.app import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    assert not exit.code, exit.code
print(sum(gathered), submitted.count("tally_listed"), submitted.count("_merge"),
      submitted.count("list_folder"), submitted.count("sample_listed"),
      submitted.count("_merge_samples"))
"""


def test_fit_from_s3_lists_and_sums_on_the_workers_and_the_client_gathers_one_table(
    world, news_s3, tmp_path
):
    """The CLI in a real process, its Dask client watched: it gathers the length of each
    of the 4 class folders (listed by the workers) and one table of counts, while the
    workers tally 8 parts and merge them in a tree; then, for the sample the default
    model chooses from, the lengths again and one sample, the workers hashing the same
    8 parts and merging their samples in a tree. The model equals a local fit."""
    address, env = world
    train, _ = news_s3
    model = f"s3://{BUCKET}/models/news.nbc"
    result = subprocess.run(
        [sys.executable, "-c", GATHER_SPY, "fit", f"s3://{BUCKET}/news/train", "-o", model,
         "-q", "--scheduler", address],
        capture_output=True, text=True, timeout=TIMEOUT, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    # gathered: 4 lengths + 1 table, 4 lengths + 1 sample; submitted: 8 parts, merged by
    # one task (8 at a time), 4 listings, twice
    assert result.stdout == "10 8 1 8 8 1\n"
    local(env, "fit", train, "-o", tmp_path / "local.nbc", "-q", "-j", "1")
    assert s3_bytes(env, model) == (tmp_path / "local.nbc").read_bytes()
    # and a local fit of the bucket, with no cluster, writes the same bytes
    local(env, "fit", f"s3://{BUCKET}/news/train", "-o", tmp_path / "here.nbc", "-q")
    assert (tmp_path / "here.nbc").read_bytes() == (tmp_path / "local.nbc").read_bytes()


def test_a_local_corpus_on_the_cluster_with_a_ledger_and_hashing_is_the_local_model(
    world, news_sample, tmp_path
):
    address, env = world
    train, _ = news_sample
    options = ["--ledger", "--hash-features", "2^12", "-q"]
    remote = run(env, "fit", train, "-o", tmp_path / "dask.nbc", *options, "--scheduler", address)
    assert remote.returncode == 0, remote.stderr
    local(env, "fit", train, "-o", tmp_path / "local.nbc", *options, "-j", "1")
    assert (tmp_path / "dask.nbc").read_bytes() == (tmp_path / "local.nbc").read_bytes()


def test_an_empty_class_folder_found_by_a_worker_is_the_local_error(world, tmp_path):
    address, env = world
    corpus = tmp_path / "corpus"
    shutil.copytree(DEMO_CORPUS, corpus)
    empty = corpus / "zzz"
    empty.mkdir()
    (empty / ".hidden").write_text("not a document")
    here = run(env, "fit", "corpus", "-o", "m.nbc", cwd=tmp_path)
    there = run(env, "fit", "corpus", "-o", "m.nbc", "--scheduler", address, cwd=tmp_path)
    assert (here.returncode, there.returncode) == (1, 1)
    assert there.stderr == here.stderr == (
        b"Error: class folder 'corpus/zzz' has no documents: add files to it or remove it\n"
    )
    assert not (tmp_path / "m.nbc").exists()


# --- predict: models and documents in the bucket, parts written by the workers ----------


@pytest.fixture(scope="module")
def model_s3(world, news_s3) -> str:
    """A model of the 20news training sample, in the bucket."""
    _, env = world
    model = f"s3://{BUCKET}/models/predict.nbc"
    local(env, "fit", news_s3[0], "-o", model, "-q")
    return model


@pytest.mark.parametrize("fmt", ["tsv", "jsonl"])
def test_predict_output_dir_parts_concatenate_to_the_local_output(world, model_s3, fmt):
    """Workers write one part each to the bucket; sorted and concatenated, the parts are
    what a local predict of the same URLs prints; stdout stays empty."""
    address, env = world
    model = model_s3
    inputs = [f"s3://{BUCKET}/news/test/sci.space", f"s3://{BUCKET}/news/test/alt.atheism"]
    expected = local(env, "predict", "-m", model, *inputs, "--format", fmt).stdout
    out = f"s3://{BUCKET}/out-{fmt}"
    remote = run(env, "predict", "-m", model, *inputs, "--format", fmt, "--output-dir", out,
                 "--scheduler", address)  # fmt: skip
    assert (remote.returncode, remote.stdout, remote.stderr) == (0, b"", b"")
    parts = s3_listing(env, out)
    assert parts == [f"{BUCKET}/out-{fmt}/part-{i:06d}.{fmt}" for i in range(8)]  # 60 docs
    assert b"".join(s3_bytes(env, f"s3://{part}") for part in parts) == expected
    assert len(expected.splitlines()) == 60
    if fmt == "tsv":  # and printed by the client, as the workers send the rows back
        printed = run(env, "predict", "-m", model, *inputs, "--scheduler", address)
        assert (printed.returncode, printed.stdout, printed.stderr) == (0, expected, b"")


def test_predict_output_dir_here_and_on_the_cluster_from_local_files(
    world, news_sample, tmp_path
):
    """Local files, sources as given (relative): the workers' parts, this process's parts
    and stdout all say the same."""
    address, env = world
    train, test = news_sample
    shutil.copytree(test, tmp_path / "test")
    local(env, "fit", train, "-o", tmp_path / "m.nbc", "-q")
    args = ("predict", "-m", "m.nbc", "test", "--top-k", "2")
    expected = local(env, *args, cwd=tmp_path).stdout
    for name, extra in [("here", ()), ("there", ("--scheduler", address))]:
        result = run(env, *args, "--output-dir", name, *extra, cwd=tmp_path)
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b""), name
        parts = sorted((tmp_path / name).iterdir())
        assert all(p.name.startswith("part-") and p.suffix == ".tsv" for p in parts)
        assert b"".join(p.read_bytes() for p in parts) == expected
    assert len(list((tmp_path / "there").iterdir())) == 8  # 120 documents, 15 per part
    again = run(env, *args, "--output-dir", "there", cwd=tmp_path)
    assert again.returncode == 2
    assert again.stderr == (
        b"Error: --output-dir 'there' already holds part files: remove them or give a new "
        b"folder (the parts of two runs would mix)\n"
    )


# --- fit --lines: byte ranges read by different workers ---------------------------------


@pytest.fixture(scope="module")
def lines_file(news_sample, tmp_path_factory) -> Path:
    """The 20news training sample as labelled lines (LABEL<TAB>TEXT), with blank lines,
    CRLF ends, a fastText line and a final line without a newline."""
    train, _ = news_sample
    out = []
    for folder in sorted(train.iterdir()):
        for path in sorted(folder.iterdir()):
            text = " ".join(path.read_bytes().decode("latin-1").split())
            out.append(f"{folder.name}\t{text}\n")
    out[5] = out[5].replace("\n", "\r\n")
    out.insert(10, "\n")
    out.append("__label__sci.space the orbit of the moon")
    path = tmp_path_factory.mktemp("lines") / "news.tsv"
    path.write_bytes("".join(out).encode("utf-8"))
    return path


@pytest.mark.parametrize("options", [(), ("--ledger", "--hash-features", "2^10")])
def test_fit_lines_split_into_byte_ranges_equals_a_local_fit(world, lines_file, tmp_path, options):
    address, env = world
    url = f"s3://{BUCKET}/lines/news.tsv"
    upload(env, lines_file, url)
    local(env, "fit", "--lines", lines_file, "-o", tmp_path / "local.nbc", "-q", *options)
    expected = (tmp_path / "local.nbc").read_bytes()
    for source in (lines_file, url):
        out = tmp_path / "dask.nbc"
        result = run(env, "fit", "--lines", source, "-o", out, "--scheduler", address, *options)
        assert result.returncode == 0, result.stderr
        assert result.stderr.decode().startswith("fit: 241 documents, 4 classes, ")
        assert out.read_bytes() == expected, source
        out.unlink()


@pytest.mark.parametrize(
    "options, label, message",
    [
        ((), "spam", "has no label: write LABEL<TAB>TEXT or __label__LABEL TEXT"),
        (("--multi-label",), "spam,urgent", "has no labels: write LABEL,LABEL<TAB>TEXT, "
         '__label__A __label__B TEXT or {"labels": [...], "text": ...}'),
    ],
)
def test_a_bad_line_in_a_later_range_is_named_by_its_line_in_the_file(
    world, tmp_path, options, label, message
):  # fmt: skip
    address, env = world
    lines = [f"{label if i % 2 else 'ham'}\tmessage number {i}\n" for i in range(2000)]
    lines[1500] = "no tab on this line\n"
    path = tmp_path / "bad.tsv"
    path.write_text("".join(lines), encoding="utf-8")
    here = run(env, "fit", *options, "--lines", path, "-o", tmp_path / "m.nbc")
    there = run(env, "fit", *options, "--lines", path, "-o", tmp_path / "m.nbc", "--scheduler",
                address)  # fmt: skip
    assert (here.returncode, there.returncode) == (1, 1)
    message = f"Error: line {path}:1501 {message}"
    assert here.stderr.decode() == message + "\n"
    assert there.stderr.decode().startswith(message)


def test_fit_lines_from_standard_input_with_a_scheduler_is_refused(world):
    address, env = world
    result = run(env, "fit", "--lines", "-", "-o", "m.nbc", "--scheduler", address,
                 input=b"a\tb\n")  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == (
        b"Error: --scheduler splits --lines FILE into byte ranges that the workers read: "
        b"standard input cannot be split; give a FILE, or count here without --scheduler\n"
    )


@pytest.fixture(scope="module")
def multi_label_file(news_sample, tmp_path_factory) -> tuple[Path, Path, Path]:
    """``(whole, first, rest)``: the 20news training sample as multi-label lines in the
    three forms in turn (fastText, LABELS<TAB>TEXT, JSON), each document under its
    newsgroup and its top-level group (``sci``, ``comp``, ...), every seventh with no
    label; with a blank line and CRLF ends; ``first`` and ``rest`` cut the lines in two."""
    train, _ = news_sample
    out = []
    for folder in sorted(train.iterdir()):
        for path in sorted(folder.iterdir()):
            text = " ".join(path.read_bytes().decode("latin-1").split())
            labels = [] if len(out) % 7 == 3 else [folder.name, folder.name.split(".")[0]]
            form = len(out) % 3
            if form == 0 and labels:
                out.append(" ".join(f"__label__{x}" for x in labels) + f" {text}\n")
            elif form == 1 or not labels:
                out.append(",".join(labels) + f"\t{text}\n")
            else:
                out.append(json.dumps({"labels": labels, "text": text}) + "\n")
    out[5] = out[5].replace("\n", "\r\n")
    out.insert(10, "\n")
    root = tmp_path_factory.mktemp("multi")
    paths = root / "whole.txt", root / "first.txt", root / "rest.txt"
    for path, part in zip(paths, (out, out[:150], out[150:])):
        path.write_bytes("".join(part).encode("utf-8"))
    return paths


@pytest.mark.parametrize("options", [(), ("--ledger",)])
def test_fit_multi_label_on_the_cluster_equals_a_local_fit(
    world, multi_label_file, tmp_path, options
):  # fmt: skip
    """fit --multi-label --scheduler counts the byte ranges' lines under their label sets
    (one range holds lines of every form) and writes the local fit's bytes, from a file
    every worker sees and from the bucket; an update counted on the cluster writes the
    bytes of a fresh local fit of every line."""
    address, env = world
    whole, first, rest = multi_label_file
    url = f"s3://{BUCKET}/multi/whole.txt"
    upload(env, whole, url)
    local(env, "fit", "--multi-label", "--lines", whole, "-o", tmp_path / "local.nbc", "-q",
          *options)  # fmt: skip
    expected = (tmp_path / "local.nbc").read_bytes()
    for source in (whole, url):
        out = tmp_path / "dask.nbc"
        result = run(env, "fit", "--multi-label", "--lines", source, "-o", out, "--scheduler",
                     address, *options)  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert result.stderr.decode().startswith("fit: 240 documents, 8 labels, "), source
        assert out.read_bytes() == expected, source
        out.unlink()
    part = tmp_path / "part.nbc"
    local(env, "fit", "--multi-label", "--lines", first, "-o", part, "-q", *options)
    result = run(env, "fit", "--update", part, "--lines", rest, "--scheduler", address, "-q")
    assert result.returncode == 0, result.stderr
    assert part.read_bytes() == expected


def _ranges(data: bytes, cuts: list[int], chunk: int) -> list[bytes]:
    from nbclass.cluster.remote import _Range

    bounds = [0, *sorted(set(c for c in cuts if 0 < c < len(data))), len(data)]
    pieces = []
    for start, end in zip(bounds, bounds[1:]):
        handle = io.BytesIO(data)
        handle.seek(start)
        reader = _Range(handle, start, end)
        reader.chunk = chunk
        pieces.append(b"".join(iter(reader.read, b"")))
    return pieces


@given(
    st.lists(st.binary(max_size=6).map(lambda b: b.replace(b"\n", b"")), max_size=12),
    st.booleans(),
    st.lists(st.integers(0, 80), max_size=6),
    st.integers(1, 7),
)
def test_byte_ranges_hold_every_line_once_in_order(lines, final_newline, cuts, chunk):
    """Law: the ranges of any cut points, concatenated, are the file; each holds whole
    lines (every range but the last that holds any ends with a newline)."""
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    pieces = [piece for piece in _ranges(data, cuts, chunk) if piece]
    assert b"".join(pieces) == data
    assert all(piece.endswith(b"\n") for piece in pieces[:-1])


def test_byte_ranges_follow_the_rule_of_the_first_newline_at_or_after():
    data = b"ab\ncd\nef\n"
    # a range starting at 3 ('c', just after a newline) starts after the newline at 5
    assert _ranges(data, [3], 1024) == [b"ab\ncd\n", b"ef\n"]
    assert _ranges(data, [2], 1024) == [b"ab\n", b"cd\nef\n"]  # the newline at 2 ends both
    assert _ranges(data, [1, 4], 2) == [b"ab\n", b"cd\n", b"ef\n"]


# --- tables -----------------------------------------------------------------------------


def test_fit_table_with_a_scheduler_is_refused_never_run_here(world, tmp_path):
    address, env = world
    table = tmp_path / "t.csv"
    table.write_text("x,team\n1,a\n2,b\n3,a\n", encoding="utf-8")
    given = [(("--scheduler", address), {}), ((), {"DASK_SCHEDULER_ADDRESS": address})]
    for extra, variables in given:
        result = run({**env, **variables}, "fit", "--table", table, "--label", "team", "-o",
                     tmp_path / "m.nbc", *extra)  # fmt: skip
        assert result.returncode == 2
        assert result.stderr == (
            b"Error: --table is fitted in this process, not on a Dask cluster: leave out "
            b"--scheduler (and unset DASK_SCHEDULER_ADDRESS)\n"
        )
        assert not (tmp_path / "m.nbc").exists()


# --- a worker killed mid-fit -------------------------------------------------------------

KILL_MID_FIT = """
import os, signal, sys, threading, time
from distributed import Client
from nbclass.cluster.remote import count_on_cluster
from nbclass.reading.corpus import list_corpus
from nbclass.models.learning import count_documents
from nbclass.text.tokenizer import TokenizerSettings

address, url, local, victim, pid = sys.argv[1:6]
done, killed = threading.Event(), []

def holding(dask_worker):
    return len(dask_worker.data)

def watch():
    with Client(address, timeout=30) as client:
        workers = client.scheduler_info()["workers"]
        at = next(a for a, w in workers.items() if w["name"] == victim)
        while not done.is_set():
            held = client.run(holding, workers=[at]).get(at, 0)
            if held and not done.is_set():
                os.kill(int(pid), signal.SIGKILL)
                killed.append(held)
                return
            time.sleep(0.01)

watcher = threading.Thread(target=watch)
watcher.start()
remote = count_on_cluster(address, url, None, TokenizerSettings(), False)
done.set()
watcher.join()
here = count_documents(list_corpus(local), TokenizerSettings(), False)
print(bool(killed), remote.counts.equals(here.counts), remote.counts.n_docs)
"""


def test_a_worker_killed_mid_fit_still_gives_the_same_counts(world, news_s3, tmp_path):
    """A third worker joins, is killed (SIGKILL) as soon as it holds a part's tally,
    before the fit ends: the scheduler counts its parts again elsewhere, and the counts
    equal a local count of the same corpus."""
    address, env = world
    train, _ = news_s3
    log = tmp_path / "victim.log"
    with open(log, "wb") as handle:
        victim = subprocess.Popen(
            [_dask(), "worker", address, "--host", "127.0.0.1", "--nthreads", "1",
             "--no-dashboard", "--no-nanny", "--name", "victim"],
            cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT,
            env=env,
        )  # fmt: skip
    try:
        wait = (
            "from distributed import Client\n"
            f"with Client({address!r}, timeout=30) as c: c.wait_for_workers(3, 30)"
        )
        ready = script(env, wait)
        assert ready.returncode == 0, ready.stderr + _log(log)
        result = subprocess.run(
            [sys.executable, "-c", KILL_MID_FIT, address, f"s3://{BUCKET}/news/train",
             str(train), "victim", str(victim.pid)],
            capture_output=True, text=True, timeout=TIMEOUT, env=env, cwd=tmp_path,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert result.stdout == "True True 240\n"
        assert victim.wait(timeout=10) == -9
    finally:
        _stop(victim)


def test_output_dir_on_the_cluster_warns_as_a_local_predict(world, tmp_path):
    """Skipped documents and documents every class rules out: the same warnings on the
    client's stderr, in the same order, and the same rows in the parts."""
    address, env = world
    docs = tmp_path / "docs"
    shutil.copytree(DEMO_CORPUS, docs)
    first = min(p for p in docs.iterdir() if p.is_dir())
    (first / "blob.bin").write_bytes(b"\x00\x01 refund")
    (first / "zzz-ruled-out.txt").write_text("refund outage password")
    local(env, "fit", DEMO_CORPUS, "-o", tmp_path / "m.nbc", "-q")
    args = ("predict", "-m", "m.nbc", "docs", "--on-error", "skip", "--estimator", "mle")
    here = local(env, *args, cwd=tmp_path)
    there = run(env, *args, "--output-dir", "out", "--scheduler", address, cwd=tmp_path)
    assert (there.returncode, there.stdout) == (0, b""), there.stderr
    assert there.stderr == here.stderr
    assert b"binary" in here.stderr and b"every class has probability 0" in here.stderr
    parts = sorted((tmp_path / "out").iterdir())
    assert b"".join(p.read_bytes() for p in parts) == here.stdout


def _peak_rss(env, *args) -> tuple[int, bytes, int]:
    """``(exit code, stderr, peak resident memory in kB)`` of nbclass ``args``."""
    process = subprocess.Popen(
        [*nbclass_command(), *map(str, args)], stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, env=env, cwd=REPO,
    )  # fmt: skip
    err = process.stderr.read()
    process.stderr.close()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, err, usage.ru_maxrss


def test_a_model_object_longer_than_it_declares_is_refused_without_reading_it(
    world, tmp_path
):
    """A model at an s3:// URL is read as a local one: the prefix, then no more than the
    size it declares. With 64 MiB appended it is refused from its size, and the command
    holds no more memory than reading the plain model does."""
    _, env = world
    model, long = tmp_path / "m.nbc", tmp_path / "long.nbc"
    assert run(env, "fit", DEMO_CORPUS, "-o", model, "-q").returncode == 0
    long.write_bytes(model.read_bytes() + b"\0" * (64 * 1024 * 1024))
    upload(env, model, f"s3://{BUCKET}/bound/m.nbc")
    upload(env, long, f"s3://{BUCKET}/bound/long.nbc")
    code, err, plain = _peak_rss(env, "info", "-m", f"s3://{BUCKET}/bound/m.nbc")
    assert (code, err) == (0, b"")
    code, err, peak = _peak_rss(env, "info", "-m", f"s3://{BUCKET}/bound/long.nbc")
    assert code == 1
    assert err.decode() == (
        f"Error: 's3://{BUCKET}/bound/long.nbc' is corrupted ({64 * 1024 * 1024} bytes after "
        "its end)\n"
    )
    assert peak < plain + 16 * 1024, (peak, plain)


def test_a_prefix_given_as_a_model_is_a_folder_not_an_empty_model(world, tmp_path):
    """info -m s3://bucket/prefix said the model was empty; a prefix is a folder."""
    _, env = world
    model = tmp_path / "m.nbc"
    assert run(env, "fit", DEMO_CORPUS, "-o", model, "-q").returncode == 0
    upload(env, model, f"s3://{BUCKET}/prefix/m.nbc")
    for url in (f"s3://{BUCKET}/prefix", f"s3://{BUCKET}/prefix/"):
        for args, stdin in ((["info", "-m", url], None), (["predict", "-m", url], b"refund")):
            result = run(env, *args, input=stdin)
            assert (result.returncode, result.stderr.decode()) == (
                1, f"Error: {url!r} is a folder (a prefix of objects), not a model file\n"
            ), args
    missing = run(env, "info", "-m", f"s3://{BUCKET}/prefix/none.nbc")
    assert missing.stderr.decode() == (
        f"Error: model file 's3://{BUCKET}/prefix/none.nbc' does not exist: create one with "
        "'nbclass fit'\n"
    )
