"""``make bench``'s scale section: many classes and large vocabularies, generated.

Corpora are made by :func:`generate` (no model needed): class c draws its words from a
Zipf law over a window of the vocabulary of its own (rank r is word ``(r + c V / C) mod
V``), and every document also takes the next few words of a sweep over the whole
vocabulary, so that all V words occur. Documents are about 2 kB, one file each, in one
folder per class, generated once into ``~/.cache/nbclass-corpora`` (``NBCLASS_CACHE``).

For each (classes, words, MB) setting, its folders read once first (the page cache
warm, as a corpus being counted again is): fit's seconds and MB/s (a run whose memory is not
sampled) and peak memory (the process tree's, as bench/run.py measures it, in a second
run), the model file's size and its nonzero (word, class) pairs; then predict of 10,000
generated documents against that model and against a 20-class model of the same
vocabulary size, in alternating runs whose memory is not sampled.

With ``--ledger``, also the commands that keep a ledger: each corpus split in two halves
(every other file of each class), ``fit --ledger`` of the whole and of each half, then
``fit --update``, ``merge``, ``unlearn`` and ``sync``, their seconds and peak memory, and
whether each file is the fresh fit's, byte for byte.

With ``--multi-label LABELS``, a multi-label corpus instead: each corpus's documents
written as JSON lines (:func:`multi_label_lines`; documents of class k have label k // 4
and each of t + 17, t + 34, t + 51 mod LABELS with probability 0.4), then ``fit
--multi-label --lines`` of them and a default single-label ``fit --lines`` of the same
documents (each document's first label): seconds, CPU seconds, peak memory, file size.

Usage: python bench/scale.py [--settings C:V:MB,...] [--repeat N] [--fit-options ...] [--ledger]
       python bench/scale.py --multi-label 5000 [--settings 20000:200000:175]
Writes bench/results/scale-<UTC time>.md and prints the table.
"""

from __future__ import annotations

import argparse
import datetime
import filecmp
import os
import shutil
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import CACHE, HERE, NBCLASS, folder_mb, machine, measure, read_once  # noqa: E402

DEFAULT_SETTINGS = "2000:2000000:200,20000:200000:175"
PREDICT_DOCUMENTS = 10_000
SMALL_CLASSES = 20
TOKENS_PER_DOCUMENT = 300  # mean (Poisson): about 2 kB of text
ZIPF = 1.2


def word_names(V: int) -> np.ndarray:
    """V distinct lowercase words of 6 letters ('q' and the index in base 26), as bytes."""
    digits = (np.arange(V, dtype=np.int64)[:, None] // 26 ** np.arange(4, -1, -1)) % 26
    letters = np.empty((V, 6), dtype=np.uint8)
    letters[:, 0] = ord("q")
    letters[:, 1:] = digits + ord("a")
    return letters.view("S6").reshape(V)


def generate(folder: Path, C: int, V: int, megabytes: float, seed: int = 0,
             flat: bool = False) -> None:  # fmt: skip
    """Write a corpus of about ``megabytes`` MB over C classes and V words into ``folder``
    (one subfolder per class; with ``flat``, the documents alone, for predict)."""
    rng = np.random.default_rng(seed)
    names = word_names(V)
    n_docs = max(1, int(megabytes * 1e6 / (TOKENS_PER_DOCUMENT * 7)))
    sweep = 0 if flat else -(-V // n_docs)  # words of the sweep per document
    shift = max(1, V // C)
    if not flat:
        for c in range(C):
            (folder / f"c{c:05d}").mkdir(parents=True, exist_ok=True)
    else:
        folder.mkdir(parents=True, exist_ok=True)
    at = 0
    for start in range(0, n_docs, 1000):
        batch = min(1000, n_docs - start)
        labels = rng.integers(0, C, size=batch)
        first = np.arange(start, start + batch)
        labels = np.where(first < C, first % C, labels)  # every class has a document
        lengths = rng.poisson(TOKENS_PER_DOCUMENT, size=batch) + 1
        ranks = (rng.zipf(ZIPF, size=int(lengths.sum())) - 1) % V
        ids = (ranks + np.repeat(labels, lengths) * shift) % V
        ends = np.cumsum(lengths)
        for i in range(batch):
            words = names[ids[ends[i] - lengths[i] : ends[i]]].tolist()
            if sweep:
                words += names[np.arange(at, at + sweep) % V].tolist()
                at += sweep
            name = f"{start + i:08d}.txt"
            path = folder / name if flat else folder / f"c{labels[i]:05d}" / name
            path.write_bytes(b" ".join(words) + b"\n")


def corpus(name: str, C: int, V: int, megabytes: float, flat: bool = False) -> Path:
    folder = CACHE / "scale" / name
    done = folder / ".complete"
    if not done.exists():
        print(f"bench: generating {name} ({megabytes:g} MB)", flush=True)
        generate(folder, C, V, megabytes, seed=C + V, flat=flat)
        done.write_text("")
    return folder


LABELS_PER_QUARTER = 4  # classes 4t to 4t + 3 share label t
RELATED = (17, 34, 51)  # the related labels t + r (mod L), each with probability 0.4
RELATED_PROBABILITY = 0.4


def multi_label_lines(train: Path, out: Path, labels: int, seed: int = 0) -> None:
    """Write the documents of the class folders of ``train`` as JSON lines ``{"labels":
    [...], "text": ...}`` into ``out``, in (class, file name) order: a document of class
    k has label t = k // 4 and each of t + 17, t + 34, t + 51 (mod ``labels``) with
    probability 0.4 (``numpy.random.default_rng(seed)``, three draws a document); label l
    is named ``L`` and l in five digits. The first label is t's, for a single-label fit."""
    import json

    rng = np.random.default_rng(seed)
    partial = out.with_name(out.name + ".partial")
    with open(partial, "w", encoding="utf-8") as lines:
        for k, folder in enumerate(sorted(p for p in train.iterdir() if p.is_dir())):
            t = (k // LABELS_PER_QUARTER) % labels
            for path in sorted(folder.iterdir()):
                draws = rng.random(len(RELATED)) < RELATED_PROBABILITY
                mine = [t] + [(t + r) % labels for r, d in zip(RELATED, draws) if d]
                names = [f"L{l:05d}" for l in dict.fromkeys(mine)]
                text = path.read_text(encoding="utf-8").strip()
                lines.write(json.dumps({"labels": names, "text": text}) + "\n")
    partial.rename(out)


def multi_label_rows(train: Path, work: Path, labels: int, label: str, extra) -> list[str]:
    """Fit --multi-label of :func:`multi_label_lines` of ``train`` and a single-label fit
    of the same documents (their first labels): one table row each."""
    import json

    lines = work / f"{train.name}-{labels}labels.jsonl"
    if not lines.exists():
        print(f"bench: writing {lines}", flush=True)
        multi_label_lines(train, lines, labels)
    first = work / f"{train.name}-{labels}labels-first.txt"
    if not first.exists():  # LABEL<TAB>TEXT, the form a single-label fit --lines reads
        with open(lines, encoding="utf-8") as source, open(first, "w", encoding="utf-8") as out:
            for line in source:
                document = json.loads(line)
                out.write(f"{document['labels'][0]}\t{document['text']}\n")
    rows = []
    for name, options, path in (
        ("fit --multi-label --lines", ["--multi-label"], lines),
        ("fit --lines (first label)", [], first),
    ):
        model = work / f"{train.name}-{labels}labels{'-multi' if options else ''}.nbc"
        result = measure([NBCLASS, "fit", *options, "--lines", str(path), "-o", str(model),
                          "-q", *extra])  # fmt: skip
        rows.append(f"| {label} | `{name}` | {path.stat().st_size / 1e6:.0f} "
                    f"| {result['seconds']:.1f} | {result['peak_mb']:.0f} "
                    f"| {model.stat().st_size / 1e6:.1f} |")  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def nonzero_pairs(model: Path) -> int:
    """The (word, class) pairs a model file stores (its class_index section), read from
    the file's section table without loading the model."""
    from nbclass.modelfile.fileformat import parse
    from nbclass.modelfile.textfile import MODEL_SECTIONS, OPTIONAL_SECTIONS

    _, sections = parse(model.read_bytes(), str(model), MODEL_SECTIONS, OPTIONAL_SECTIONS)
    return len(sections["class_index"])


def halves(train: Path, work: Path) -> tuple[Path, Path]:
    """``train`` split in two folders under ``work``: every other file of each class."""
    a, b = work / f"{train.name}-a", work / f"{train.name}-b"
    if not (b / ".complete").exists():
        for half in (a, b):
            shutil.rmtree(half, ignore_errors=True)
        for folder in sorted(p for p in train.iterdir() if p.is_dir()):
            for i, path in enumerate(sorted(folder.iterdir())):
                (a if i % 2 == 0 else b).joinpath(folder.name).mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, (a if i % 2 == 0 else b) / folder.name / path.name)
        (b / ".complete").write_text("")
    return a, b


def ledger_rows(train: Path, work: Path, label: str) -> list[str]:
    """One table row per command that writes a model with a ledger, on ``train`` and its
    :func:`halves`: seconds, peak MB, and the fresh fit its file must equal."""
    a, b = halves(train, work)
    model = {k: work / f"{train.name}-{k}.nbc"
             for k in ("whole", "a", "b", "update", "merge", "unlearn", "sync")}  # fmt: skip
    steps = [
        ("fit --ledger", ["fit", train, "--ledger", "-o", model["whole"]], "whole", None),
        ("fit a/ --ledger", ["fit", a, "--ledger", "-o", model["a"]], "a", None),
        ("fit b/ --ledger", ["fit", b, "--ledger", "-o", model["b"]], "b", None),
        ("fit b/ --update a.nbc", ["fit", b, "--update", model["a"], "-o", model["update"]],
         "update", "whole"),
        ("merge a.nbc b.nbc", ["merge", model["a"], model["b"], "-o", model["merge"]],
         "merge", "whole"),
        ("unlearn b/ -m whole.nbc", ["unlearn", b, "-m", model["whole"], "-o",
                                     model["unlearn"]], "unlearn", "a"),
        ("sync corpus/ -m a.nbc", ["sync", train, "-m", model["sync"]], "sync", "whole"),
    ]  # fmt: skip
    rows = []
    for name, args, written, fresh in steps:
        if written == "sync":
            shutil.copyfile(model["a"], model["sync"])
        result = measure([NBCLASS, *map(str, args), "-q"])
        same = "-" if fresh is None else (
            "yes" if filecmp.cmp(model[written], model[fresh], shallow=False) else "NO"
        )  # fmt: skip
        rows.append(f"| {label} | `{name}` | {result['seconds']:.1f} "
                    f"| {result['peak_mb']:.0f} | {same} |")  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", default=DEFAULT_SETTINGS,
                        help="classes:words:MB of each generated corpus, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="predict runs of each model")
    parser.add_argument("--fit-options", default="", help="more options for fit")  # fmt: skip
    parser.add_argument("--ledger", action="store_true",
                        help="also the commands that change a model with a ledger")  # fmt: skip
    parser.add_argument("--multi-label", type=int, metavar="LABELS",
                        help="fit the corpora as JSON lines with this many labels instead")
    args = parser.parse_args()
    work = Path(os.environ.get("TMPDIR", "/tmp")) / "nbclass-bench-scale"
    work.mkdir(parents=True, exist_ok=True)
    extra = args.fit_options.split()
    if args.multi_label:
        if args.settings == DEFAULT_SETTINGS:
            args.settings = "20000:200000:175"
        lines = [
            f"Machine: {machine()}",
            "",
            "| corpus | command | MB | s | peak MB | file MB |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for setting in args.settings.split(","):
            C, V, megabytes = setting.split(":")
            C, V, megabytes = int(C), int(V), float(megabytes)
            train = corpus(f"{C}x{V}-{megabytes:g}MB", C, V, megabytes)
            lines += multi_label_rows(train, work, args.multi_label,
                                      f"{C:,} × {V:,}, {args.multi_label:,} labels", extra)
        return report(lines)
    lines = [
        f"Machine: {machine()}",
        "",
        "| corpus | MB | fit s | MB/s | fit peak MB | file MB | nonzero pairs "
        "| predict 10,000 s | 20-class predict s | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for setting in args.settings.split(","):
        C, V, megabytes = setting.split(":")
        C, V, megabytes = int(C), int(V), float(megabytes)
        name = f"{C}x{V}-{megabytes:g}MB"
        train = corpus(name, C, V, megabytes)
        small = corpus(f"{SMALL_CLASSES}x{V}", SMALL_CLASSES, V, max(10.0, V * 7 / 1e6 * 3))
        test = corpus(f"test-{V}", C, V, PREDICT_DOCUMENTS * TOKENS_PER_DOCUMENT * 7 / 1e6,
                      flat=True)  # fmt: skip
        size = folder_mb(train)
        for folder in (train, small, test):
            read_once(folder)
        model, small_model = work / f"{name}.nbc", work / f"{SMALL_CLASSES}x{V}.nbc"
        # The fit's time from a run whose memory is not sampled, its peak from a second
        # (sampling the workers' memory slows a process tree in proportion to its memory).
        fit = measure([NBCLASS, "fit", str(train), "-o", str(model), "-q", *extra], tree=False)
        fit["peak_mb"] = measure([NBCLASS, "fit", str(train), "-o", str(model), "-q", *extra])[
            "peak_mb"
        ]
        measure([NBCLASS, "fit", str(small), "-o", str(small_model), "-q", *extra], tree=False)
        times = {"big": [], "small": []}
        for _ in range(args.repeat):  # alternating: the machine's load falls on both
            for key, path in (("big", model), ("small", small_model)):
                command = [NBCLASS, "predict", "-m", str(path), str(test), "-q"]
                times[key].append(measure(command, tree=False)["seconds"])
        big, little = statistics.median(times["big"]), statistics.median(times["small"])
        lines.append(
            f"| {C:,} classes × {V:,} words | {size:.0f} | {fit['seconds']:.1f} "
            f"| {size / fit['seconds']:.1f} | {fit['peak_mb']:.0f} "
            f"| {model.stat().st_size / 1e6:.1f} | {nonzero_pairs(model):,} "
            f"| {big:.2f} | {little:.2f} | {big / little:.2f} |"
        )
        print(lines[-1], flush=True)
    if args.ledger:
        lines += [
            "",
            "| corpus | command | s | peak MB | the fresh fit's file |",
            "|---|---|---:|---:|---|",
        ]
        for setting in args.settings.split(","):
            C, V, megabytes = setting.split(":")
            name = f"{int(C)}x{int(V)}-{float(megabytes):g}MB"
            lines += ledger_rows(CACHE / "scale" / name, work, f"{int(C):,} × {int(V):,}")
    report(lines)


def report(lines: list[str]) -> None:
    """Print the table and write it to bench/results/scale-<UTC time>.md."""
    text = "\n".join(lines) + "\n"
    print()
    print(text)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H%M%SZ")
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / f"scale-{stamp}.md").write_text(text)


if __name__ == "__main__":
    main()
