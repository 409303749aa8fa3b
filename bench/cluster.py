"""``fit --scheduler`` from 1 to 2 to 4 Dask worker processes on this machine.

For each number of workers, starts a Dask scheduler and that many single-thread workers
on 127.0.0.1, fits the 20 Newsgroups training set (11,314 documents, unpacked into
``~/.cache/nbclass-corpora`` as ``bench/run.py`` does) with ``nbclass fit --scheduler``
in a client process of its own, and reports, from inside that process: the time, the
client's peak resident memory, what it gathered (results and their pickled bytes), what
it submitted (tasks and the pickled bytes of their arguments), and the number of parts.
The model must equal a local fit's, byte for byte. Also reports the pickled size of one
part's tally: what each part would cost the client if it gathered every part.

Usage: python bench/cluster.py [--corpus DIR] [WORKERS ...]   (default: 1 2 4)

``--corpus`` fits another folder, e.g. the 100 MB corpus that ``bench/run.py`` generates
into ``~/.cache/nbclass-corpora/generated-100MB``.
"""

from __future__ import annotations

import json
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import corpus  # noqa: E402

BIN = Path(sys.executable).parent

CLIENT = r"""
import json, pickle, resource, sys, time
from distributed import Client, Future

stats = {"gathered": 0, "gathered_bytes": 0, "submitted": 0, "submitted_bytes": 0,
         "parts": 0}
real_gather, real_submit = Client._gather, Client.submit

async def _gather(self, futures, *args, **kwargs):
    result = await real_gather(self, futures, *args, **kwargs)
    items = result if isinstance(futures, (list, tuple)) else [result]
    stats["gathered"] += len(items)
    stats["gathered_bytes"] += sum(len(pickle.dumps(item)) for item in items)
    return result

def submit(self, function, *args, **kwargs):
    stats["submitted"] += 1
    stats["parts"] += getattr(function, "__name__", "") == "tally_listed"
    plain = [a for a in args if not isinstance(a, Future)]
    stats["submitted_bytes"] += len(pickle.dumps(plain))
    return real_submit(self, function, *args, **kwargs)

Client._gather, Client.submit = _gather, submit
from nbclass.cli.app import main
start = time.perf_counter()
try:
    main(sys.argv[1:])
except SystemExit as exit:
    assert not exit.code, exit.code
stats["seconds"] = time.perf_counter() - start
stats["client_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(stats))
"""


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def measure(workers: int, train: Path, root: Path) -> dict:
    processes = []
    scheduler_file = root / f"scheduler-{workers}.json"
    try:
        processes.append(subprocess.Popen(
            [BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", scheduler_file],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        ))  # fmt: skip
        while not scheduler_file.exists() or not scheduler_file.read_text().endswith("}"):
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        for i in range(workers):
            processes.append(subprocess.Popen(
                [BIN / "dask", "worker", address, "--host", "127.0.0.1", "--nthreads", "1",
                 "--no-dashboard", "--no-nanny", "--name", f"w{i}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            ))  # fmt: skip
        wait = f"from distributed import Client\nClient({address!r}).wait_for_workers({workers})"
        subprocess.run([sys.executable, "-c", wait], check=True, timeout=120)
        model = root / f"dask-{workers}.nbc"
        result = subprocess.run(
            [sys.executable, "-c", CLIENT, "fit", str(train), "-o", str(model), "-q",
             "--scheduler", address],
            capture_output=True, text=True, check=True, timeout=1800,
        )  # fmt: skip
        stats = json.loads(result.stdout)
        stats["model"] = model.read_bytes()
        return stats
    finally:
        for process in reversed(processes):
            _stop(process)


def part_bytes(train: Path, documents: int) -> int:
    """The pickled size of the tally of the first ``documents`` files of a class: what
    one part would send to the client if every part came back."""
    from nbclass.counting.tally import tally_part
    from nbclass.reading.corpus import list_corpus
    from nbclass.reading.policy import DEFAULT_POLICY
    from nbclass.text.tokenizer import TokenizerSettings

    listed = list_corpus(str(train))
    paths, labels = listed.paths[:documents], listed.labels[:documents]
    part = tally_part(paths, labels, len(listed.classes), TokenizerSettings(), 0, False,
                      DEFAULT_POLICY)  # fmt: skip
    return len(pickle.dumps(part))


def main() -> None:
    args = sys.argv[1:]
    train = corpus() / "train"
    if args[:1] == ["--corpus"]:
        train, args = Path(args[1]), args[2:]
    counts = [int(a) for a in args] or [1, 2, 4]
    root = Path(tempfile.mkdtemp(prefix="nbclass-cluster-bench-"))
    try:
        local = root / "local.nbc"
        start = time.perf_counter()
        subprocess.run([BIN / "nbclass", "fit", train, "-o", local, "-q", "-j", "1"], check=True)
        print(f"{train}: local fit, one process: {time.perf_counter() - start:.2f} s")
        rows = []
        for workers in counts:
            stats = measure(workers, train, root)
            assert stats.pop("model") == local.read_bytes(), "the model differs from a local fit"
            rows.append((workers, stats))
            print(workers, json.dumps(stats), flush=True)
        from nbclass.reading.corpus import list_corpus

        documents = len(list_corpus(str(train)).paths)
        print("\n| worker processes | time | client peak memory | parts | results gathered "
              "| bytes gathered | tasks submitted | bytes submitted | per part |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for workers, s in rows:
            per_part = s["submitted_bytes"] / max(1, s["parts"])
            print(f"| {workers} | {s['seconds']:.2f} s | {s['client_peak_mb']:.0f} MB "
                  f"| {s['parts']} | {s['gathered']} | {s['gathered_bytes'] / 1e6:.2f} MB "
                  f"| {s['submitted']} | {s['submitted_bytes'] / 1e3:.1f} kB "
                  f"| {per_part:.0f} B |")  # fmt: skip
        size = min(1000, -(-documents // (4 * max(counts))))
        print(f"\none part's tally ({size} documents), pickled: "
              f"{part_bytes(train, size) / 1e6:.2f} MB")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
