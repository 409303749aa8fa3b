"""Safe under cron: overlapping writers lose nothing, readers never fail, kills break nothing.

Real processes (``python -m nbclass``) on real files: the lock is flock(2) and the write an
atomic rename, so only real processes can show they work.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time

from conftest import DEMO_CORPUS, nbclass_command

from nbclass.corpus import list_corpus
from nbclass.model import fit
from nbclass.modelfile import dumps, load, lock_path
from nbclass.tokenizer import TokenizerSettings

TIMEOUT = 120
WRITERS = 20


def start(*args, stdin=subprocess.DEVNULL, output=subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen(
        [*nbclass_command(), *map(str, args)], stdin=stdin, stdout=output, stderr=output
    )


class Readers:
    """Predict with the model over and over in a thread; collect every failure."""

    def __init__(self, model):
        self.model, self.failures, self.runs = model, [], 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        while not self._stop.is_set():
            result = subprocess.run(
                [*nbclass_command(), "predict", "-m", str(self.model)],
                input=b"refund my invoice",
                capture_output=True,
                timeout=TIMEOUT,
            )
            self.runs += 1
            if result.returncode != 0 or b"\t" not in result.stdout:
                self.failures.append(result.stderr.decode())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(TIMEOUT)


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
    syncs = [start("sync", inbox, "-m", model, "--format", "json") for _ in range(6)]
    outputs = [process.communicate(timeout=TIMEOUT)[0] for process in syncs]
    assert all(process.returncode == 0 for process in syncs)
    # Exactly one of them learned the 42 documents; the others found nothing to do.
    added = sorted(int(out.split(b'"added": ')[1].split(b",")[0]) for out in outputs)
    assert added == [0, 0, 0, 0, 0, 42]
    fresh = fit(list_corpus(str(inbox)), TokenizerSettings(), ledger=True)
    assert model.read_bytes() == dumps(fresh)


def test_a_writer_killed_at_any_moment_leaves_the_old_or_the_new_model(tmp_path):
    """SIGKILL a `fit --update` at random moments; the model is always whole."""
    model = tmp_path / "m.nbc"
    subprocess.run([*nbclass_command(), "fit", DEMO_CORPUS, "-o", model, "-q"], check=True)
    old = model.read_bytes()
    line = b"billing\tan extra ticket about a refund\n"
    probe = tmp_path / "probe.nbc"
    probe.write_bytes(old)
    began = time.perf_counter()
    subprocess.run(
        [*nbclass_command(), "fit", "--lines", "-", "--update", probe, "-q"],
        input=line,
        check=True,
    )
    duration = time.perf_counter() - began
    new = probe.read_bytes()
    assert new != old
    rnd = random.Random(2026)
    outcomes = {"old": 0, "new": 0}
    for _ in range(12):
        model.write_bytes(old)
        process = start(
            "fit", "--lines", "-", "--update", model, "-q",
            stdin=subprocess.PIPE, output=subprocess.DEVNULL,
        )  # fmt: skip
        process.stdin.write(line)
        process.stdin.close()  # the writer reads its input, then takes the lock and writes
        time.sleep(rnd.uniform(0, duration * 1.1))
        process.send_signal(signal.SIGKILL)
        process.wait(TIMEOUT)
        data = model.read_bytes()
        assert data in (old, new)
        load(str(model))  # loads, every check passes
        outcomes["old" if data == old else "new"] += 1
    # A killed writer may leave its temporary file; the next writer removes it.
    subprocess.run(
        [*nbclass_command(), "fit", "--lines", "-", "--update", model, "-q"],
        input=line,
        check=True,
    )
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
    assert outcomes["old"] > 0
