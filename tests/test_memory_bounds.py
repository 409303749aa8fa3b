"""Memory in proportion to what was seen: the counts are kept as their nonzero (word,
class) pairs, so a command's peak memory follows the pairs and the classes of its input,
never words × classes.

Each command runs in a real child process; its peak resident memory is the kernel's
(``ru_maxrss`` of the reaped child, read by a small Python parent that starts it), and is
compared with the same command's on a small input: the extra memory must be a small
multiple of the input's size. (Dense (V, C) tables of 64-bit counts took 16 V C bytes:
15 GiB for the forged model below, 1.07 GiB for the lines file.)
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, nbclass_command
from test_hostile_values import sparse_model
from test_robustness import DEMO, run

MB = 1 << 20
TIMEOUT = 300

_WRAPPER = """
import json, resource, subprocess, sys
stdin = sys.stdin.buffer.read() if sys.argv[1] == "1" else None
def bound():  # a command that makes a table of every cell fails instead of filling the machine
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
child = subprocess.run(sys.argv[2:], input=stdin, capture_output=True, preexec_fn=bound)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps([child.returncode, peak, child.stderr.decode(errors="replace")]))
"""


def peak(*args, input: bytes | None = None) -> tuple[int, int, str]:
    """``(exit code, peak resident bytes, stderr)`` of ``nbclass ARGS`` in a child process
    of its own (so that no other child's peak is counted)."""
    result = subprocess.run(
        [sys.executable, "-c", _WRAPPER, "1" if input is not None else "0",
         *nbclass_command(), *map(str, args)],
        input=input, capture_output=True, cwd=REPO, timeout=TIMEOUT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    code, used, stderr = json.loads(result.stdout)
    return code, used, stderr


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("bounds") / "m.nbc"
    result = run("fit", DEMO, "-o", path, "-q")
    assert result.returncode == 0, result.stderr
    return path


def test_a_small_file_declaring_many_words_and_classes_loads_in_memory_of_its_size(
    template, tmp_path
):
    """200,000 words × 5,000 classes in a file of a few MB (each word in one class): info,
    the one-document path and predict of a file load it and answer, each within the
    memory of the small model plus 40 times the file's size; its dense count tables
    would have taken 14.9 GiB."""
    small = sparse_model(template, tmp_path / "small.nbc", 600, 30)
    huge = sparse_model(template, tmp_path / "huge.nbc", 200_000, 5_000)
    size = huge.stat().st_size
    assert size < 5_000_000
    doc = tmp_path / "doc.txt"
    doc.write_text("w0000031 w0000061 w0199999 refund")
    commands = {
        "info": (["info", "-m"], None),
        "one document": (["predict", "-m"], b"w0000031 w0199999"),
        "one file": (["predict", doc, "-m"], None),
    }
    for name, (args, stdin) in commands.items():
        base_code, base, base_err = peak(*args, small, input=stdin)
        code, used, stderr = peak(*args, huge, input=stdin)
        assert (base_code, code) == (0, 0), (name, base_err, stderr)
        assert "Traceback" not in stderr
        assert used < base + 40 * size, (name, used / MB, base / MB, size / MB)


@pytest.fixture(scope="module")
def huge_and_small(template, tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("huge")
    small = sparse_model(template, root / "small.nbc", 600, 30)
    return sparse_model(template, root / "huge.nbc", 200_000, 5_000), small


def test_every_other_command_reading_the_model_stays_in_memory_of_its_size(
    huge_and_small, tmp_path
):
    """The same 200,000 × 5,000 model through the commands that derive weights, rankings
    or tables from its counts: predict --explain and a complement model with every
    transform (batch path), export (npz and JSON: its W as pairs), top-features,
    select-features and evaluate. Each within the small model's peak plus 40 times the
    file's size (a (V, C) table of its floats: 7.5 GiB)."""
    huge, small = huge_and_small
    size = huge.stat().st_size
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("w0000031 w0000061 w0199999 refund")
    (docs / "b.txt").write_text("w0000031 w0000031 w0012345")
    lines = tmp_path / "test.tsv"
    lines.write_text("c00031\tw0000031 w0005031\nc00061\tw0000061\nc00007\tw0000031\n")
    out = tmp_path / "out"
    commands = {
        "explain": ["predict", docs, "--explain", "3", "--format", "jsonl", "-m"],
        "complement": ["predict", docs, "--model", "complement", "--tf", "log", "--idf",
                       "--norm", "both", "--format", "jsonl", "-m"],
        "export npz": ["export", "-o", out.with_suffix(".npz"), "--format", "npz", "-m"],
        "export json": ["export", "-o", out.with_suffix(".json"), "--format", "json", "-m"],
        "top-features": ["top-features", "-k", "3", "-m"],
        "select-features": ["select-features", "-k", "100", "-o", out.with_suffix(".nbc"),
                            "-q", "-m"],
        "evaluate": ["evaluate", "--lines", lines, "--format", "json", "-m"],
    }  # fmt: skip
    for name, args in commands.items():
        base_code, base, base_err = peak(*args, small)
        code, used, stderr = peak(*args, huge)
        assert (base_code, code) == (0, 0), (name, base_err, stderr)
        assert "Traceback" not in stderr
        assert used < base + 40 * size, (name, used / MB, base / MB, size / MB)


def _served_peak(model: Path) -> int:
    """The peak resident bytes of ``serve`` (one worker: the process that answers) after
    one request of two documents with their explanations."""
    from test_serve import Server

    def bound():  # a server that made a table of every cell would fail, not fill the machine
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    server = Server(model, "--workers", "1", preexec_fn=bound)
    try:
        body = {"texts": ["w0000031 w0000061 refund", "w0199999"], "top_k": 3, "explain": 2}
        status, data = server.predict(body)
        assert status == 200, data
        assert len(data.splitlines()) == 2
        status = Path(f"/proc/{server.process.pid}/status").read_text()
        return int(status.split("VmHWM:")[1].split()[0]) * 1024
        assert server.stop() == 0
    finally:
        server.kill()  # closes its stderr


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_serve_holds_the_model_in_memory_of_its_size(huge_and_small):
    huge, small = huge_and_small
    base, used = _served_peak(small), _served_peak(huge)
    assert used < base + 40 * huge.stat().st_size, (used / MB, base / MB)


def test_the_model_memory_limit_still_refuses_with_its_numbers(template, tmp_path):
    """NBCLASS_MAX_MODEL_MEMORY below what the counts take: one Error line naming the
    words, classes and pairs and what they would take."""
    huge = sparse_model(template, tmp_path / "huge.nbc", 200_000, 5_000)
    result = run("info", "-m", huge, env={"NBCLASS_MAX_MODEL_MEMORY": "8M"})
    assert result.returncode == 1
    assert result.stderr.decode() == (
        f"Error: {str(huge)!r} declares 200000 words, 5000 classes and 200000 (word, class) "
        "pairs: its counts would take 19.5 MiB of memory, more than the 8 MiB a model of "
        f"{huge.stat().st_size} bytes may ask for: set NBCLASS_MAX_MODEL_MEMORY (e.g. 1G) "
        "to load it\n"
    )


def lines_file(path: Path, n_labels: int, per_label: int) -> Path:
    """``n_labels`` labels, ``per_label`` short lines each, words shared between labels."""
    with path.open("w", encoding="utf-8") as out:
        for k in range(per_label):
            for label in range(n_labels):
                words = " ".join(f"w{(label * 7 + k * 13 + i) % 4000}" for i in range(3))
                out.write(f"tag{label:05d}\t{words}\n")
    return path


@pytest.mark.parametrize("options", [["--model", "multinomial"], []])
def test_fit_of_lines_with_twelve_thousand_labels_stays_small(tmp_path, options):
    """12,000 labels in a lines file of about 336 kB: fit's peak is that of 30 labels of
    the same size plus a small multiple of the file (the dense tables took 1.07 GiB)."""
    many = lines_file(tmp_path / "many.tsv", 12_000, 1)
    few = lines_file(tmp_path / "few.tsv", 30, 400)
    size = many.stat().st_size
    assert 300_000 < size < 400_000
    base_code, base, base_err = peak("fit", "--lines", few, "-o", tmp_path / "few.nbc", "-q",
                                     *options)  # fmt: skip
    code, used, stderr = peak("fit", "--lines", many, "-o", tmp_path / "many.nbc", "-q", *options)
    assert (base_code, code) == (0, 0), (base_err, stderr)
    assert used < base + 100 * size, (used / MB, base / MB, size / MB)
    info = run("info", "-m", tmp_path / "many.nbc", "--format", "json")
    assert len(json.loads(info.stdout)["classes"]) == 12_000


@pytest.mark.parametrize(
    "options",
    [["--model", "multinomial"], ["--model", "bernoulli"],
     ["--model", "complement", "--tf", "log", "--idf", "--norm", "both"]],
)  # fmt: skip
def test_cv_of_4000_classes_in_bounded_memory(tmp_path, options):
    """cv by subtraction at 4,000 classes × 40,000 words (3 folds; a (V, C) table of
    floats takes 1.28 GB) in 1 GiB of address space. Class c's three lines hold its
    words x0-x3, x4-x7 and x8, x9, x0, x1 (and a word s0, s1 or s2 every class's line of
    that rank has): each fold holds one line of each class, the first and the third
    are found by the x0 and x1 they share, the second by nothing of its class, so
    8,000 of the 12,000 held-out lines are right under each model."""
    lines = tmp_path / "lines.tsv"
    with lines.open("w") as out:
        for k in range(3):
            for c in range(4000):
                own = " ".join(f"a{c:04d}x{(4 * k + m) % 10}" for m in range(4))
                out.write(f"c{c:04d}\t{own} s{k}\n")
    result = run("cv", "--lines", lines, "--folds", "3", "--format", "json", *options)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["fold_documents"] == [4000, 4000, 4000]
    accuracy = data["metrics"]["accuracy"]["folds"]
    assert round(sum(accuracy) * 4000) == 8000


@pytest.mark.parametrize(
    "edit",
    [
        {"n_features": 200_000, "n_used": 200_000},
        {"classes": [f"c{c:05d}" for c in range(5_000)]},
        {"n_features": 200_000, "n_used": 200_000,
         "classes": [f"c{c:05d}" for c in range(5_000)]},
    ],
    ids=["words", "classes", "both"],
)  # fmt: skip
def test_a_header_declaring_more_words_and_classes_than_its_sections_is_refused(
    huge_and_small, tmp_path, edit
):
    """The small model's header forged to declare 200,000 words and/or 5,000 classes
    over its own sections (600 words, 30 classes; every checksum right): every path
    that reads a model refuses it at once in one line, in 1 GiB of address space,
    before anything of the declared size is made."""
    from test_robustness import forged, refused_everywhere

    _, small = huge_and_small
    path = forged(small, tmp_path, lambda header: header.update(edit))
    doc = tmp_path / "doc.txt"
    doc.write_text("w0000031 refund")
    refused_everywhere(path, doc, "inconsistent section sizes")
