"""``--scheduler``: fit and predict on a real Dask cluster give what they give locally.

A session fixture starts a real ``dask scheduler`` and two ``dask worker`` processes from
this virtual environment, on 127.0.0.1 with free ports, one thread each, and stops them
after the tests. The workers run in a folder of their own, so a relative path sent to
them would not be found: the tests also check that nbclass sends absolute paths.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DEMO_CORPUS, DEMO_DOCS, REPO, nbclass_command

from nbclass.cli.app import cli

STARTUP = 60  # seconds for the scheduler and the workers to come up
TIMEOUT = 60


def _dask() -> str:
    dask = Path(sys.executable).parent / "dask"
    assert dask.exists(), "the test extra installs distributed: run  make install"
    return str(dask)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)  # dask's own clean shutdown
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _log(path: Path) -> str:
    return path.read_text(errors="replace")[-2000:] if path.exists() else ""


@pytest.fixture(scope="session")
def scheduler(tmp_path_factory):
    """The address of a running Dask scheduler with two single-thread workers."""
    root = tmp_path_factory.mktemp("dask")
    workdir = root / "workers"
    workdir.mkdir()
    scheduler_file = root / "scheduler.json"
    processes: list[subprocess.Popen] = []
    logs: list[Path] = []

    def start(name: str, *args: str) -> None:
        log = root / f"{name}.log"
        logs.append(log)
        with open(log, "wb") as handle:
            processes.append(
                subprocess.Popen(
                    [_dask(), *args],
                    cwd=workdir,
                    stdin=subprocess.DEVNULL,
                    stdout=handle,
                    stderr=subprocess.STDOUT,
                )
            )

    def failed(what: str) -> str:
        return what + "\n" + "\n".join(f"--- {log.name}\n{_log(log)}" for log in logs)

    try:
        start(
            "scheduler",
            "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
            "--scheduler-file", str(scheduler_file),
        )  # fmt: skip
        deadline = time.monotonic() + STARTUP
        while not scheduler_file.exists() or not scheduler_file.read_text().endswith("}"):
            assert processes[0].poll() is None, failed("the scheduler stopped")
            assert time.monotonic() < deadline, failed("the scheduler did not start")
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        for i in (1, 2):
            start(
                f"worker{i}",
                "worker", address, "--host", "127.0.0.1", "--nthreads", "1",
                "--no-dashboard", "--no-nanny", "--name", f"worker{i}",
            )  # fmt: skip
        # Wait in a process of its own, so no Dask client lives in the test process.
        wait = (
            "import sys; from distributed import Client\n"
            f"with Client({address!r}, timeout={STARTUP}) as c: c.wait_for_workers(2, {STARTUP})"
        )
        result = subprocess.run(
            [sys.executable, "-c", wait], capture_output=True, text=True, timeout=2 * STARTUP
        )
        assert result.returncode == 0, failed(result.stderr)
        yield address
    finally:
        for process in reversed(processes):
            _stop(process)


def _environment(**variables: str) -> dict:
    """This environment without a scheduler of its own, plus ``variables``."""
    env = {k: v for k, v in os.environ.items() if k != "DASK_SCHEDULER_ADDRESS"}
    return {**env, **variables}


def run(*args, env: dict | None = None, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *map(str, args)],
        capture_output=True,
        cwd=cwd,
        timeout=TIMEOUT,
        env=_environment(**(env or {})),
    )


def local_fit(corpus, output) -> bytes:
    """The model file of a local fit in one process, made in this process."""
    result = CliRunner().invoke(
        cli, ["fit", str(corpus), "-o", str(output), "-q", "-j", "1"],
        env={"DASK_SCHEDULER_ADDRESS": None},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return Path(output).read_bytes()


@pytest.fixture
def news(tmp_path, news_sample):
    """A copy of the 20news sample (240 documents) inside tmp_path, by relative path."""
    train, _ = news_sample
    shutil.copytree(train, tmp_path / "train")
    return tmp_path


def test_fit_on_the_cluster_writes_the_same_model_file_as_a_local_fit(scheduler, news):
    remote = run("fit", "train", "-o", "dask.nbc", "--scheduler", scheduler, cwd=news)
    assert remote.returncode == 0, remote.stderr
    assert remote.stderr.decode().startswith("fit: 240 documents, 4 classes, ")
    assert (news / "dask.nbc").read_bytes() == local_fit(news / "train", news / "local.nbc")


def test_a_fit_with_symbols_on_the_cluster_writes_the_local_fits_file(scheduler, news):
    """--symbols: the workers count the symbols as a local fit does (the setting goes
    to them with the tokenizer), the choice and the file the same."""
    remote = run(
        "fit", "train", "--symbols", "-o", "dask.nbc", "-q", "--scheduler", scheduler, cwd=news
    )
    assert (remote.returncode, remote.stderr) == (0, b"")
    local = CliRunner().invoke(
        cli, ["fit", str(news / "train"), "--symbols", "-o", str(news / "local.nbc"), "-q",
              "-j", "1"], env={"DASK_SCHEDULER_ADDRESS": None},
    )  # fmt: skip
    assert local.exit_code == 0, local.output
    written = (news / "local.nbc").read_bytes()
    assert b'"symbols": true' in written and (news / "dask.nbc").read_bytes() == written


def test_pairs_of_the_short_documents_on_the_cluster_are_the_local_fits(scheduler, news):
    """--ngram-doc-limit: the workers form the pairs of the documents of at most 64
    tokens only (the setting goes to them with the tokenizer), as a local fit does."""
    options = ["--ngram-range", "1,2", "--ngram-doc-limit", "64", "--model", "multinomial"]
    remote = run("fit", "train", *options, "-o", "dask.nbc", "-q", "--scheduler", scheduler,
                 cwd=news)  # fmt: skip
    assert (remote.returncode, remote.stderr) == (0, b"")
    local = CliRunner().invoke(
        cli, ["fit", str(news / "train"), *options, "-o", str(news / "local.nbc"), "-q",
              "-j", "1"], env={"DASK_SCHEDULER_ADDRESS": None},
    )  # fmt: skip
    assert local.exit_code == 0, local.output
    written = (news / "local.nbc").read_bytes()
    assert b'"ngram_doc_limit": 64' in written and (news / "dask.nbc").read_bytes() == written


def test_an_update_counted_on_the_cluster_equals_a_fresh_local_fit(scheduler, news):
    """At the defaults: half the documents fitted here, the other half added by an update
    counted on the cluster (its sample read here, every document hashed) writes the bytes
    of a local fit of all of them, choice and calibration included."""
    first, second = news / "first", news / "second"
    for path in sorted((news / "train").glob("*/*")):
        half = first if int(path.stem) % 2 else second
        (half / path.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, half / path.parent.name / path.name)
    local_fit(first, news / "m.nbc")
    remote = run("fit", "second", "--update", "m.nbc", "-q", "--scheduler", scheduler, cwd=news)
    assert (remote.returncode, remote.stderr) == (0, b"")
    assert (news / "m.nbc").read_bytes() == local_fit(news / "train", news / "local.nbc")


def test_chinese_tickets_at_the_defaults_on_the_cluster_are_the_local_fit(scheduler, tmp_path):
    """The tokenization of scripts written without spaces is chosen the same way on the
    workers' counts: the twelve tickets counted on the cluster (all three tokenizations,
    the choice keeping characters and pairs), and an update of the demo corpus's model
    with them, write the local fit's bytes."""
    tickets = REPO / "corpora" / "zh-tickets"
    remote = run("fit", tickets, "-o", tmp_path / "dask.nbc", "-q", "--scheduler", scheduler)
    assert (remote.returncode, remote.stderr) == (0, b"")
    local = local_fit(tickets, tmp_path / "local.nbc")
    assert (tmp_path / "dask.nbc").read_bytes() == local
    assert b'"features": ["words", "characters", "pairs"]' in local
    both = tmp_path / "both"
    for corpus in (DEMO_CORPUS, tickets):
        for path in sorted(corpus.glob("*/*")):
            (both / path.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, both / path.parent.name / f"{corpus.name}-{path.name}")
    demo = tmp_path / "demo"
    for path in sorted((both).glob("*/demo-*")):
        (demo / path.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, demo / path.parent.name / path.name)
    added = tmp_path / "added"
    for path in sorted((both).glob("*/zh-tickets-*")):
        (added / path.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, added / path.parent.name / path.name)
    local_fit(demo, tmp_path / "m.nbc")
    remote = run("fit", added, "--update", tmp_path / "m.nbc", "-q", "--scheduler", scheduler)
    assert (remote.returncode, remote.stderr) == (0, b"")
    assert (tmp_path / "m.nbc").read_bytes() == local_fit(both, tmp_path / "both.nbc")


def test_fit_reads_the_scheduler_from_the_environment(scheduler, tmp_path):
    remote = run(
        "fit", DEMO_CORPUS, "-o", tmp_path / "dask.nbc", "-q", "--ngram-range", "1,2",
        env={"DASK_SCHEDULER_ADDRESS": scheduler},
    )  # fmt: skip
    assert (remote.returncode, remote.stderr) == (0, b"")
    result = CliRunner().invoke(
        cli, ["fit", str(DEMO_CORPUS), "-o", str(tmp_path / "local.nbc"), "--ngram-range", "1,2"],
        env={"DASK_SCHEDULER_ADDRESS": None},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (tmp_path / "dask.nbc").read_bytes() == (tmp_path / "local.nbc").read_bytes()


def test_a_ledger_and_hashing_come_back_from_the_cluster_the_same(scheduler, tmp_path):
    """Ledger entries and hashed columns' word samples travel back from the workers."""
    options = ["--ledger", "--hash-features", "2^12"]
    remote = run(
        "fit", DEMO_CORPUS, "-o", tmp_path / "dask.nbc", "-q", *options, "--scheduler", scheduler
    )
    assert (remote.returncode, remote.stderr) == (0, b"")
    result = CliRunner().invoke(
        cli, ["fit", str(DEMO_CORPUS), "-o", str(tmp_path / "local.nbc"), "-j", "1", *options],
        env={"DASK_SCHEDULER_ADDRESS": None},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (tmp_path / "dask.nbc").read_bytes() == (tmp_path / "local.nbc").read_bytes()


def _script(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=TIMEOUT
    )


def test_counting_on_the_cluster_uses_both_workers_and_equals_a_serial_count(scheduler, news):
    """The library call: parts go to both workers; the counts equal one process's."""
    code = f"""
from distributed import Client
from nbclass.cluster.remote import counter
from nbclass.counting.counts import count_corpus
from nbclass.reading.corpus import list_corpus
from nbclass.text.tokenizer import TokenizerSettings

def executed(dask_worker):
    return dask_worker.state.executed_count

corpus = list_corpus("train")
args = corpus.paths, corpus.labels, corpus.classes, TokenizerSettings()
with Client({scheduler!r}, timeout=10) as client:
    before = client.run(executed)
    seen = []
    progress = lambda a, b: seen.append(b - a)
    remote = count_corpus(*args, cluster=counter({scheduler!r}), on_progress=progress)
    after = client.run(executed)
assert remote.equals(count_corpus(*args, jobs=1))
print(len(seen), sum(seen), len(after), all(after[w] > before[w] for w in after))
"""
    result = _script(code, news)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "8 240 2 True\n"  # 4 parts per worker thread, 30 documents each


def test_a_file_a_worker_cannot_read_is_named_with_why(scheduler, tmp_path):
    code = f"""
from nbclass.cluster.remote import counter
from nbclass.counting.counts import count_corpus
from nbclass.errors import NbclassError
from nbclass.text.tokenizer import TokenizerSettings
try:
    count_corpus(["a.txt", "gone.txt"], [0, 1], ["a", "b"], TokenizerSettings(),
                 cluster=counter({scheduler!r}))
except NbclassError as exc:
    print(exc)
"""
    (tmp_path / "a.txt").write_text("present", encoding="utf-8")
    result = _script(code, tmp_path)
    assert result.returncode == 0, result.stderr
    gone = str(tmp_path / "gone.txt")
    assert result.stdout == (
        f"cannot read {gone!r}: No such file or directory; --on-error skip skips such "
        "documents (on a Dask worker, which reads "
        "every file at the absolute path this machine gives: the files must be on a "
        "filesystem that every worker sees at the same path)\n"
    )


def test_an_unreachable_scheduler_is_one_line_and_exit_1_within_the_timeout(tmp_path):
    import socket

    with socket.socket() as sock:  # a port that nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    start = time.monotonic()
    result = run(
        "fit", DEMO_CORPUS, "-o", tmp_path / "m.nbc", "--scheduler", f"tcp://127.0.0.1:{port}",
        env={"NBCLASS_SCHEDULER_TIMEOUT": "1"},
    )  # fmt: skip
    assert time.monotonic() - start < 20
    assert result.returncode == 1
    assert result.stderr.decode() == (
        f"Error: cannot reach the Dask scheduler at tcp://127.0.0.1:{port} within 1 s: check "
        "the address and that the scheduler is running (the wait is set by "
        "NBCLASS_SCHEDULER_TIMEOUT)\n"
    )
    assert not (tmp_path / "m.nbc").exists()


@pytest.mark.parametrize("address", ["http://host:8786", " "])
def test_what_is_not_a_scheduler_address_is_a_usage_error(address, tmp_path):
    result = run("fit", DEMO_CORPUS, "-o", tmp_path / "m.nbc", "--scheduler", address)
    assert result.returncode == 2
    stderr = result.stderr.decode()
    assert stderr.startswith("Error: --scheduler ") and stderr.count("\n") == 1, stderr


def _without_dask(*args) -> subprocess.CompletedProcess:
    """nbclass in a process where importing distributed fails, as when it is not installed."""
    code = (
        "import sys; sys.modules['distributed'] = None\n"  # makes `import distributed` fail
        "from nbclass.cli.app import main; main(sys.argv[1:])"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        cwd=REPO,
        timeout=TIMEOUT,
        env=_environment(),
    )


def test_without_dask_the_scheduler_option_says_how_to_install_it(tmp_path):
    result = _without_dask(
        "fit", DEMO_CORPUS, "-o", tmp_path / "m.nbc", "--scheduler", "tcp://h:1"
    )
    assert result.returncode == 2
    assert result.stderr.decode() == (
        "Error: --scheduler needs Dask, which is not installed: pip install 'nbclass[dask]'\n"
    )
    # and without --scheduler nothing needs it
    result = _without_dask("fit", DEMO_CORPUS, "-o", tmp_path / "m.nbc", "-q")
    assert (result.returncode, result.stderr) == (0, b"")


def test_nbclass_imports_dask_only_for_a_scheduler():
    code = (
        "import sys, nbclass.cli.app, nbclass.cluster.remote, nbclass.counting.counts\n"
        "import nbclass.models.model\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (0, "[]\n")


# --- predict --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def news_model(tmp_path_factory, news_sample):
    """A model of the 20news training sample, and a folder holding the test sample."""
    train, test = news_sample
    root = tmp_path_factory.mktemp("predict")
    local_fit(train, root / "news.nbc")
    shutil.copytree(test, root / "test")
    return root


@pytest.mark.parametrize(
    "options",
    [("--format", "jsonl", "--top-k", "2"), ("--model", "bernoulli", "--estimator", "mle")],
)
def test_predict_on_the_cluster_prints_what_a_local_predict_prints(scheduler, news_model, options):
    # Relative paths, printed as given; two folders and a file, in the order given.
    one = min((news_model / "test" / "alt.atheism").iterdir()).relative_to(news_model)
    args = ("predict", "-m", "news.nbc", "test/sci.space", DEMO_DOCS, one)
    local = run(*args, *options, cwd=news_model)
    assert local.returncode == 0, local.stderr
    remote = run(*args, *options, "--scheduler", scheduler, cwd=news_model)
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout == local.stdout
    assert remote.stderr == local.stderr  # the same warnings for the same documents
    assert len(remote.stdout.splitlines()) == 30 + 3 + 1


def test_standard_input_and_lines_are_scored_here_even_with_a_scheduler(news_model):
    nowhere = {"DASK_SCHEDULER_ADDRESS": "tcp://127.0.0.1:1"}  # would fail if it were used
    document = min((news_model / "test" / "sci.space").iterdir())
    for args, input in [
        (("-",), document.read_bytes()),
        (("--lines", "-"), b"the orbit of the moon\ngod and faith\n"),
        ((document,), None),
    ]:
        here = subprocess.run(
            [*nbclass_command(), "predict", "-m", "news.nbc", *map(str, args)],
            input=input, capture_output=True, cwd=news_model, timeout=TIMEOUT, env=_environment(),
        )  # fmt: skip
        there = subprocess.run(
            [*nbclass_command(), "predict", "-m", "news.nbc", *map(str, args)],
            input=input, capture_output=True, cwd=news_model, timeout=TIMEOUT,
            env=_environment(**nowhere),
        )  # fmt: skip
        assert here.returncode == 0 and here.stdout, here.stderr
        assert (there.returncode, there.stdout, there.stderr) == (0, here.stdout, b"")


def test_predict_without_dask_says_how_to_install_it():
    result = _without_dask("predict", "-m", "model.nbc", DEMO_DOCS, "--scheduler", "tcp://h:1")
    assert (result.returncode, result.stdout) == (2, b"")
    assert result.stderr.decode() == (
        "Error: --scheduler needs Dask, which is not installed: pip install 'nbclass[dask]'\n"
    )


def test_the_workers_read_under_the_same_policy_as_a_local_run(scheduler, tmp_path):
    """--on-error skip, binaries and --encoding travel to the workers: the same model, the
    same rows, the same warnings (naming the paths as given), the same summary."""
    corpus = tmp_path / "corpus"
    shutil.copytree(DEMO_CORPUS, corpus)
    first = min(p for p in corpus.iterdir() if p.is_dir())
    (first / "blob.bin").write_bytes(b"\x00\x01 refund")
    (first / "latin.txt").write_bytes("refund café".encode("latin-1"))
    os.symlink("/proc/self/mem", first / "unreadable.txt")  # EIO when read, even for root
    options = ["--on-error", "skip", "--encoding", "cp1252"]
    local = run("fit", "corpus", "-o", "local.nbc", "-j", "1", *options, cwd=tmp_path)
    remote = run("fit", "corpus", "-o", "dask.nbc", *options, "--scheduler", scheduler,
                 cwd=tmp_path)  # fmt: skip
    assert (local.returncode, remote.returncode) == (0, 0), remote.stderr
    assert (tmp_path / "dask.nbc").read_bytes() == (tmp_path / "local.nbc").read_bytes()
    assert remote.stderr.decode().splitlines()[-1] == (
        "nbclass: skipped 2 documents: 1 unreadable (input/output error), 1 binary"
    )
    args = ("predict", "-m", "local.nbc", "corpus", *options)
    local = run(*args, cwd=tmp_path)
    remote = run(*args, "--scheduler", scheduler, cwd=tmp_path)
    assert (local.returncode, remote.returncode) == (0, 0), remote.stderr
    assert remote.stdout == local.stdout
    assert sorted(remote.stderr.splitlines()) == sorted(local.stderr.splitlines())
    assert f"Warning: skipped 'corpus/{first.name}/blob.bin': binary" in local.stderr.decode()
