"""Safe under cron: overlapping writers lose nothing, readers never fail, kills break nothing.

Real processes (``python -m nbclass``) on real files: the lock is flock(2) and the write an
atomic rename, so only real processes can show they work.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time

from conftest import DEMO_CORPUS, DEMO_DOCS, NAMED, nbclass_command

from nbclass.modelfile.textfile import dumps, load, lock_path
from nbclass.models.model import fit
from nbclass.reading.corpus import list_corpus
from nbclass.text.tokenizer import TokenizerSettings

TIMEOUT = 120
WRITERS = 20


def start(*args, stdin=subprocess.DEVNULL, output=subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen(
        [*nbclass_command(), *map(str, args)], stdin=stdin, stdout=output, stderr=output
    )


class Readers:
    """Read the model over and over while writers run; collect every failure.

    One thread per command of ``commands``, each running it at least once: by default one
    document piped to ``predict`` (the numpy-free path); the mixed test adds a batch
    ``predict`` and ``info``.
    """

    def __init__(self, model, commands=(("predict", "-m", "{model}"),)):
        self.model, self.failures, self.runs = model, [], 0
        self.commands = [[a.format(model=model) for a in map(str, c)] for c in commands]
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._loop, args=(c,), daemon=True) for c in self.commands
        ]

    def _loop(self, command):
        while True:
            result = subprocess.run(
                [*nbclass_command(), *command],
                input=b"refund my invoice",
                capture_output=True,
                timeout=TIMEOUT,
            )
            self.runs += 1
            if result.returncode != 0 or not result.stdout or result.stderr:
                self.failures.append((command, result.stderr.decode()))
            if self._stop.is_set():
                return

    def __enter__(self):
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for thread in self._threads:
            thread.join(TIMEOUT)


def test_overlapping_updates_lose_nothing_and_readers_never_fail(tmp_path):
    """20 `fit --update` processes at once, each adding its own document (to a ledger)."""
    flag = ["--ledger"]
    model = tmp_path / "m.nbc"
    fit_demo = [*nbclass_command(), "fit", DEMO_CORPUS, "-o", model, "-q", *flag]
    subprocess.run(fit_demo, check=True)
    texts = [f"ticket {i} about refund number r{i} and login l{i}" for i in range(WRITERS)]
    with Readers(model) as readers:
        logs = [open(tmp_path / f"writer-{i}.err", "w+b") for i in range(WRITERS)]  # noqa: SIM115
        writers = [
            subprocess.Popen(
                [*nbclass_command(), "fit", "--lines", "-", "--update", str(model), "-q"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
            for log in logs
        ]
        # Every writer gets its input at once, so all 20 run and contend for the lock.
        for process, text in zip(writers, texts):
            label = ("billing", "account", "outage")[len(text) % 3]
            process.stdin.write(f"{label}\t{text}\n".encode())
            process.stdin.close()
        for process, log in zip(writers, logs):
            process.wait(TIMEOUT)
            log.seek(0)
            assert process.returncode == 0, log.read()
            log.close()
    assert readers.runs > 0 and readers.failures == []
    # The final model is exactly one fit of the demo corpus and the 20 lines.
    everything = tmp_path / "all.nbc"
    lines = "".join(
        f"{('billing', 'account', 'outage')[len(t) % 3]}\t{t}\n" for t in texts
    ).encode()
    fit_all = [*nbclass_command(), "fit", DEMO_CORPUS, "-o", everything, "-q", *flag]
    subprocess.run(fit_all, check=True)
    subprocess.run(
        [*nbclass_command(), "fit", "--lines", "-", "--update", everything, "-q"],
        input=lines,
        check=True,
    )
    assert model.read_bytes() == everything.read_bytes()
    assert load(model).counts.n_docs == 42 + WRITERS
    assert os.path.exists(lock_path(str(model)))


def test_overlapping_syncs_end_equal_to_a_fresh_fit(tmp_path):
    inbox = tmp_path / "inbox"
    subprocess.run(["cp", "-r", str(DEMO_CORPUS), str(inbox)], check=True)
    model = tmp_path / "live.nbc"
    syncs = [start("sync", inbox, "-m", model, "--format", "json", *NAMED) for _ in range(6)]
    outputs = [process.communicate(timeout=TIMEOUT)[0] for process in syncs]
    assert all(process.returncode == 0 for process in syncs)
    # Exactly one of them learned the 42 documents; the others found nothing to do.
    added = sorted(int(out.split(b'"added": ')[1].split(b",")[0]) for out in outputs)
    assert added == [0, 0, 0, 0, 0, 42]
    fresh = fit(list_corpus(str(inbox)), TokenizerSettings(), ledger=True)
    assert model.read_bytes() == dumps(fresh)


def test_overlapping_updates_and_syncs_lose_nothing_and_readers_never_fail(tmp_path):
    """10 `fit --update` and 10 `sync` processes at once on one ledger model.

    The syncs make the model equal to the folder, so they remove the documents the updates
    added before them; every update is therefore either removed by exactly one later sync
    or still in the model at the end. Counting both (the syncs report what they removed;
    one last sync reports what is left) gives exactly 10 when no update was lost, and no
    sync's work was undone by a writer that did not re-read the model under the lock.
    """
    folder = tmp_path / "inbox"
    subprocess.run(["cp", "-r", str(DEMO_CORPUS), str(folder)], check=True)
    model = tmp_path / "m.nbc"
    subprocess.run([*nbclass_command(), "sync", folder, "-m", model, "-q", *NAMED], check=True)
    for i in range(5):  # new files for the syncs to learn
        (folder / "billing" / f"new-{i}.txt").write_text(f"invoice {i} was charged twice\n")
    readers_commands = [
        ("predict", "-m", "{model}"),
        ("predict", "-m", "{model}", DEMO_DOCS),
        ("info", "-m", "{model}"),
    ]
    with Readers(model, readers_commands) as readers:
        logs = [open(tmp_path / f"w{i}.out", "w+b") for i in range(WRITERS)]  # noqa: SIM115
        processes = []
        for i, log in enumerate(logs):
            if i % 2:
                command = ["sync", folder, "-m", model, "--format", "json"]
            else:
                command = ["fit", "--lines", "-", "--update", model, "-q"]
            processes.append(subprocess.Popen(
                [*nbclass_command(), *map(str, command)],
                stdin=subprocess.PIPE, stdout=log, stderr=subprocess.PIPE,
            ))  # fmt: skip
        for i, process in enumerate(processes):
            if i % 2 == 0:
                process.stdin.write(f"outage\tupdate {i} says the api is down\n".encode())
            process.stdin.close()
        reports = []
        for i, (process, log) in enumerate(zip(processes, logs)):
            assert process.wait(TIMEOUT) == 0, process.stderr.read()
            process.stderr.close()
            log.seek(0)
            if i % 2:
                reports.append(json.loads(log.read()))
            log.close()
    assert readers.runs >= 3 and readers.failures == []
    final = subprocess.run(
        [*nbclass_command(), "sync", folder, "-m", model, "--format", "json"],
        capture_output=True, check=True,
    )  # fmt: skip
    reports.append(json.loads(final.stdout))
    assert sum(r["added"] for r in reports) == 5
    assert sum(r["removed"] for r in reports) == WRITERS // 2
    assert reports[-1]["added"] == 0 and reports[-1]["documents"] == 42 + 5
    fresh = fit(list_corpus(str(folder)), TokenizerSettings(), ledger=True)
    assert model.read_bytes() == dumps(fresh)


# --- SIGKILL at random moments ------------------------------------------------------------

KILLS = 100
KILL_SEED = 20261121


def forked(argv: list[str]) -> int:
    """Run ``nbclass argv`` in a forked child (a real process, started in a millisecond)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 70
        try:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            from nbclass.cli.app import main

            main(list(map(str, argv)))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            os._exit(code)
    return pid


def run_forked(argv) -> int:
    _, status = os.waitpid(forked(argv), 0)
    return os.waitstatus_to_exitcode(status)


def test_writers_killed_at_100_random_moments_leave_the_old_or_the_new_model(tmp_path):
    """SIGKILL `fit --update`, `sync` and `merge` at random moments of their run.

    Each writer is a forked child of this process (nbclass is imported already, so the
    child starts at once and the kill lands in the reading, counting and writing of the
    model, not in the interpreter's start-up). The kill time is drawn uniformly over 0 to
    1.2 times a whole run. After each kill the model must be byte for byte the old one or
    the new one, and load.
    """
    import nbclass.cli.app  # noqa: F401  (imported before forking)

    folder = tmp_path / "inbox"
    subprocess.run(["cp", "-r", str(DEMO_CORPUS), str(folder)], check=True)
    (folder / "billing" / "new.txt").write_text("my invoice was charged twice\n")
    lines = tmp_path / "new.tsv"
    lines.write_text("billing\tan extra ticket about a refund\noutage\tthe api is down\n")
    model, other = tmp_path / "m.nbc", tmp_path / "other.nbc"
    assert run_forked(["fit", DEMO_CORPUS, "-o", model, "-q", "--ledger", *NAMED]) == 0
    assert run_forked(["fit", "--lines", lines, "-o", other, "-q", "--ledger", *NAMED]) == 0
    old = model.read_bytes()
    writers = {
        "fit --update": ["fit", "--lines", lines, "--update", model, "-q"],
        "sync": ["sync", folder, "-m", model, "-q"],
        "merge": ["merge", model, other, "-o", model, "-q"],
    }
    new, duration = {}, {}
    for name, argv in writers.items():
        began = time.perf_counter()
        assert run_forked(argv) == 0
        duration[name] = time.perf_counter() - began
        new[name] = model.read_bytes()
        assert new[name] != old
        model.write_bytes(old)
    rnd = random.Random(KILL_SEED)
    outcomes = {"old": 0, "new": 0}
    for kill in range(KILLS):
        name = list(writers)[kill % len(writers)]
        model.write_bytes(old)
        delay = rnd.uniform(0, 1.2 * duration[name])
        pid = forked(writers[name])
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        data = model.read_bytes()
        context = f"seed {KILL_SEED}, kill {kill} of {name} after {delay:.4f} s"
        assert data in (old, new[name]), context
        load(str(model))  # every check passes
        outcomes["old" if data == old else "new"] += 1
    # both outcomes happen, so the kills did land before and after the rename
    assert outcomes["old"] > 0 and outcomes["new"] > 0, outcomes
    # A killed writer may leave its temporary file; the next writer removes it.
    assert run_forked(writers["fit --update"]) == 0
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
