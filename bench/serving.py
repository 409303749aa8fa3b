"""Benchmark ``nbclass serve`` on 20 Newsgroups with wrk, on 127.0.0.1 only.

Part of ``make bench``. Fits the default model (``--model auto``) on the training split,
serves it with one worker per core, and measures with wrk (Debian's ``wrk``, installed
with apt-get when missing):

- single short documents (the subject lines of the test split) at 1, 8 and 64
  concurrent connections: requests/s and the latency percentiles p50 and p99;
- batches of 100 of them a request: documents/s;
- against one ``nbclass predict`` process per document, and the CLI's bulk rate
  (``predict --lines`` on a file of all of them);
- the model file replaced 20 times (alternately by two models) under load at 8
  connections: failed requests (non-2xx answers and socket errors) must be 0;
- 10,000 malformed requests of assorted kinds: each must get a 4xx JSON answer, and no
  worker may die.

Writes bench/results/serving-<UTC time>.md and .json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from hashlib import sha256
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import NBCLASS, corpus, machine  # noqa: E402

CONNECTIONS = (1, 8, 64)
BATCH = 100


def ensure_wrk() -> str:
    """The path of wrk, installed with apt-get when it is missing (Debian, as root)."""
    found = shutil.which("wrk")
    if found:
        return found
    print("bench: installing wrk with apt-get", flush=True)
    install = ["apt-get", "install", "-y", "wrk"]
    if subprocess.run(install, capture_output=True).returncode:
        # a fresh machine's package lists may be empty or old: read them, then try again
        subprocess.run(["apt-get", "update"], check=True, capture_output=True)
        subprocess.run(install, check=True, capture_output=True)
    return shutil.which("wrk") or sys.exit("bench: wrk is not installed and apt-get failed")


def short_documents(test: Path, n: int) -> list[str]:
    """The ``Subject:`` lines of the test split (short documents, 30 to 80 characters)."""
    texts = []
    for path in sorted(test.rglob("*")):
        if not path.is_file():
            continue
        for line in path.read_text(encoding="latin-1").splitlines():
            if line.startswith("Subject:"):
                subject = line[len("Subject:") :].strip()
                if subject:
                    texts.append(subject)
                break
        if len(texts) == n:
            break
    return texts


class Service:
    """``nbclass serve`` started by the bench on 127.0.0.1, stopped by its pid."""

    def __init__(self, model: Path, workers: int, log: Path):
        self.log = open(log, "wb")  # noqa: SIM115 - closed by stop()
        self.process = subprocess.Popen(
            [NBCLASS, "serve", "-m", str(model), "--port", "0", "--workers", str(workers)],
            stdout=subprocess.DEVNULL, stderr=self.log,
        )  # fmt: skip
        self.path = log
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            text = log.read_text(encoding="utf-8", errors="replace")
            port = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
            if port and text.count("serve: ready") >= workers:
                self.port = int(port.group(1))
                return
            if self.process.poll() is not None:
                sys.exit(f"bench: nbclass serve ended: {text}")
            time.sleep(0.1)
        sys.exit("bench: nbclass serve did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> int:
        os.kill(self.process.pid, signal.SIGTERM)
        code = self.process.wait(60)
        self.log.close()
        return code


def lua_bodies(bodies: list[str], path: Path) -> Path:
    """A wrk script that POSTs the bodies in turn (each thread from its own start)."""
    items = ",\n".join(json.dumps(b) for b in bodies)  # a JSON string is a Lua string here
    path.write_text(
        f"""local bodies = {{
{items}
}}
local i = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  i = i % #bodies + 1
  return wrk.format(nil, "/predict", nil, bodies[i])
end
""",
        encoding="utf-8",
    )
    return path


def run_wrk(wrk: str, url: str, script: Path, connections: int, seconds: int) -> dict:
    """wrk's requests/s, p50 and p99 (ms), and its failures (socket errors, non-2xx)."""
    threads = min(connections, 2)
    out = subprocess.run(
        [wrk, f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", "-s",
         str(script), url],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip

    def ms(label: str) -> float:
        value, unit = re.search(rf"^\s*{label}\s+([\d.]+)(us|ms|s)\s*$", out, re.M).groups()
        return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out
    )
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "requests_per_s": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "requests": int(re.search(r"(\d+) requests in", out).group(1)),
        "p50_ms": ms("50%"),
        "p99_ms": ms("99%"),
        "failed": (sum(map(int, errors.groups())) if errors else 0)
        + (int(non_2xx.group(1)) if non_2xx else 0),
    }


def malformed(port: int, count: int) -> dict:
    """``count`` malformed requests of assorted kinds, each on its own connection."""
    def post(body: bytes) -> bytes:
        head = b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
        return head % len(body) + body

    kinds = [
        post(b"{"), post(b'{"text": "caf\xe9"}'), post(b"[1]"), post(b"{}"),
        post(b'{"text": 1}'), post(b'{"texts": [1]}'), post(b'{"text": "a", "top_k": -1}'),
        post(b'{"text": "a", "min_probability": NaN}'), post(b'{"text": "\\ud800"}'),
        post(b'{"text": "a", "x": 1}'), post(b"[" * 5000 + b"]" * 5000),
        b"POST /predict HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n",
        b"POST /predict HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        b"GARBAGE\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
        b"GET /predict HTTP/1.1\r\n\r\n", b"GET /nothing HTTP/1.1\r\n\r\n",
        b"GET /health HTTP/1.1\r\n" + b"X: y\r\n" * 200 + b"\r\n",
        b"GET /health HTTP/1.1\r\nX: " + b"y" * 20000 + b"\r\n\r\n",
        b"POST /predict HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n",
    ]  # fmt: skip
    statuses: dict[int, int] = {}
    other = 0
    for i in range(count):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(kinds[i % len(kinds)])
            sock.shutdown(socket.SHUT_WR)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        match = re.match(rb"HTTP/1\.1 (\d{3}) ", answer)
        head, _, body = answer.partition(b"\r\n\r\n")
        try:
            ok = match and 400 <= int(match.group(1)) < 500 and "error" in json.loads(body)
        except ValueError:
            ok = False
        if ok:
            statuses[int(match.group(1))] = statuses.get(int(match.group(1)), 0) + 1
        else:
            other += 1
    return {"requests": count, "kinds": len(kinds), "statuses": statuses, "not_4xx_json": other}


def per_process(model: Path, texts: list[str], n: int) -> float:
    """Documents/s of one ``nbclass predict`` process per document."""
    subprocess.run([NBCLASS, "predict", "-m", str(model)], input=texts[0].encode(),
                   capture_output=True, check=True)  # fmt: skip
    began = time.perf_counter()
    for text in texts[:n]:
        subprocess.run([NBCLASS, "predict", "-m", str(model)], input=text.encode(),
                       capture_output=True, check=True)  # fmt: skip
    return n / (time.perf_counter() - began)


def bulk(model: Path, texts: list[str], work: Path) -> float:
    """Documents/s of the CLI's bulk predict: ``predict --lines`` on a file of them."""
    lines = work / "short.txt"
    lines.write_text("\n".join(texts) + "\n", encoding="utf-8")
    best = float("inf")
    for _ in range(3):
        began = time.perf_counter()
        subprocess.run([NBCLASS, "predict", "-m", str(model), "--lines", str(lines)],
                       capture_output=True, check=True)  # fmt: skip
        best = min(best, time.perf_counter() - began)
    return len(texts) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10, help="of each wrk run")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--malformed", type=int, default=10_000)
    parser.add_argument("--replacements", type=int, default=20)
    args = parser.parse_args()
    wrk = ensure_wrk()
    root = corpus()
    work = Path(tempfile.mkdtemp(prefix="nbclass-bench-serve-"))
    try:
        results = measure_all(args, wrk, root, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(results)


def measure_all(args, wrk: str, root: Path, work: Path) -> dict:
    train, test = root / "train", root / "test"
    model, other = work / "model.nbc", work / "other.nbc"
    print("bench serve: fitting the default model and a multinomial one", flush=True)
    subprocess.run([NBCLASS, "fit", str(train), "-o", str(model), "-q"], check=True)
    subprocess.run([NBCLASS, "fit", str(train), "-o", str(other), "-q", "--model",
                    "multinomial"], check=True)  # fmt: skip
    texts = short_documents(test, 5000)
    served = work / "served.nbc"
    shutil.copyfile(model, served)
    results: dict = {
        "workers": args.workers,
        "documents": {"count": len(texts),
                      "mean_chars": sum(map(len, texts)) / len(texts)},
    }  # fmt: skip
    single = lua_bodies([json.dumps({"text": t}) for t in texts[:1000]], work / "single.lua")
    batches = [json.dumps({"texts": texts[i : i + BATCH]}) for i in range(0, 1000, BATCH)]
    batch = lua_bodies(batches, work / "batch.lua")
    service = Service(served, args.workers, work / "serve.log")
    try:
        run_wrk(wrk, service.url, single, 8, 2)  # warm
        for c in CONNECTIONS:
            result = run_wrk(wrk, service.url, single, c, args.seconds)
            results[f"single, {c} connections"] = result
            print(f"  single, {c} connections: {result}", flush=True)
        result = run_wrk(wrk, service.url, batch, 2, args.seconds)
        result["documents_per_s"] = result["requests_per_s"] * BATCH
        results[f"batch of {BATCH}, 2 connections"] = result
        print(f"  batch: {result}", flush=True)
        # The model replaced under load: alternately by the other model and back.
        outcome: dict = {}
        seconds = max(args.seconds, args.replacements)
        load = threading.Thread(
            target=lambda: outcome.update(run_wrk(wrk, service.url, single, 8, seconds))
        )
        log = service.path.read_text(encoding="utf-8")
        before = log.count("serve: loaded ") + log.count("serve: reloaded ")
        load.start()
        time.sleep(0.5)
        for i in range(args.replacements):
            source = (other, model)[i % 2]
            temporary = work / "served.nbc.tmp"
            shutil.copyfile(source, temporary)
            os.replace(temporary, served)
            time.sleep((seconds - 1.5) / args.replacements)
        load.join()
        outcome["replacements"] = args.replacements
        # Replacements that come while a worker loads the previous one are taken together:
        # it loads the file as it is when it looks again.
        time.sleep(3)
        log = service.path.read_text(encoding="utf-8")
        loads = log.count("serve: loaded ") + log.count("serve: reloaded ") - before
        outcome["loads_per_worker"] = loads / args.workers
        with urllib.request.urlopen(service.url + "/health", timeout=10) as answer:
            serving = json.loads(answer.read())["model"]
        outcome["serves_the_last_file"] = serving == sha256(served.read_bytes()).hexdigest()[:16]
        results["replaced under load, 8 connections"] = outcome
        print(f"  replaced under load: {outcome}", flush=True)
        result = malformed(service.port, args.malformed)
        log = service.path.read_text(encoding="utf-8")
        result["workers_died"] = log.count(" ended (exit ")
        result["internal_errors"] = log.count("internal error")
        result["service_alive"] = service.process.poll() is None
        results["malformed requests"] = result
        print(f"  malformed: {result}", flush=True)
    finally:
        results["exit_code_at_sigterm"] = service.stop()
    results["one process per document, documents/s"] = per_process(model, texts, 50)
    results["predict --lines (bulk), documents/s"] = bulk(model, texts, work)
    per, many = results["one process per document, documents/s"], results[
        "predict --lines (bulk), documents/s"
    ]
    print(f"  per process: {per:.1f} docs/s; bulk: {many:.0f} docs/s", flush=True)
    return results


def report(results: dict) -> None:
    stamp = time.strftime("%Y-%m-%dT%H%M%SZ", time.gmtime())
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    description = machine()
    (out / f"serving-{stamp}.json").write_text(
        json.dumps({"machine": description, "results": results}, indent=2) + "\n",
        encoding="utf-8",
    )
    lines = [
        f"# nbclass serve, {stamp}",
        "",
        description,
        "",
        f"{results['workers']} workers; {results['documents']['count']} short documents "
        f"(20 Newsgroups test subjects, {results['documents']['mean_chars']:.0f} characters "
        "on average); wrk on 127.0.0.1",
        "",
        "| case | requests/s | documents/s | p50 ms | p99 ms | failed |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        if isinstance(r, dict) and "requests_per_s" in r:
            docs = r.get("documents_per_s", r["requests_per_s"])
            lines.append(
                f"| {name} | {r['requests_per_s']:.0f} | {docs:.0f} | {r['p50_ms']:.2f} | "
                f"{r['p99_ms']:.2f} | {r['failed']} |"
            )
    per = results["one process per document, documents/s"]
    lines.append(f"| one `nbclass predict` process per document | | {per:.1f} | | | |")
    lines.append(f"| `nbclass predict --lines` (bulk) | | "
                 f"{results['predict --lines (bulk), documents/s']:.0f} | | | |")  # fmt: skip
    r = results["replaced under load, 8 connections"]
    m = results["malformed requests"]
    lines += [
        "",
        f"Model replaced {r['replacements']} times under load: {r['failed']} failed requests "
        f"of {r['requests']}; {r['loads_per_worker']:g} loads per worker (replacements "
        "during a load are taken together), serving the last file: "
        f"{r['serves_the_last_file']}.",
        f"{m['requests']} malformed requests of {m['kinds']} kinds: answers by status "
        f"{m['statuses']}, {m['not_4xx_json']} not a 4xx JSON error, {m['workers_died']} "
        f"workers died, {m['internal_errors']} internal errors; exit code at SIGTERM "
        f"{results['exit_code_at_sigterm']}.",
    ]
    (out / f"serving-{stamp}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
