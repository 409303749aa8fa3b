"""What a writing command may replace, and what overlapping writers leave.

Real processes on real files: merges and updates of one model at once (the lock is
flock(2), so only real processes show it), destinations that are not models, and
``predict --output-dir`` on a real full tmpfs.
"""

from __future__ import annotations

import shlex
import subprocess

import pytest
from conftest import DEMO_CORPUS, NAMED, REPO, nbclass_command
from test_crashes import private_mount  # noqa: F401 - a fixture

from nbclass.modelfile import tablefile
from nbclass.modelfile.textfile import load

TIMEOUT = 180
TABLE = REPO / "corpora" / "table-demo.csv"
LABELS = ("billing", "account", "outage")


def run(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *map(str, args)], capture_output=True, timeout=TIMEOUT, **kwargs
    )


def lines_of(texts) -> str:
    return "".join(f"{LABELS[i % 3]}\t{text}\n" for i, text in enumerate(texts))


# --- lost updates: merge reads its inputs under the output's lock ------------------------


def test_six_merges_and_six_updates_at_once_lose_no_document(tmp_path):
    """The live model starts with 2 documents; 6 `merge live shard-i -o live` (2 documents
    each) and 6 `fit --update live` (1 each) run at once: 20 documents at the end, the
    counts of one fit of the 20."""
    texts = [f"document {i} about word{i} and thing{i}" for i in range(20)]
    labelled = lines_of(texts).splitlines(keepends=True)
    live = tmp_path / "live.nbc"
    (tmp_path / "live.tsv").write_text("".join(labelled[:2]))
    assert run("fit", "--lines", tmp_path / "live.tsv", "-o", live, "-q", *NAMED).returncode == 0
    shards = []
    for i in range(6):
        source = tmp_path / f"shard-{i}.tsv"
        source.write_text("".join(labelled[2 + 2 * i : 4 + 2 * i]))
        shards.append(tmp_path / f"shard-{i}.nbc")
        assert run("fit", "--lines", source, "-o", shards[-1], "-q", *NAMED).returncode == 0
    processes = []
    for i in range(6):
        processes.append(subprocess.Popen(
            [*nbclass_command(), "merge", str(live), str(shards[i]), "-o", str(live), "-q"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        ))  # fmt: skip
        processes.append(subprocess.Popen(
            [*nbclass_command(), "fit", "--lines", "-", "--update", str(live), "-q"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        ))  # fmt: skip
    for i, process in enumerate(processes[1::2]):
        process.stdin.write(labelled[14 + i].encode())
        process.stdin.close()
    for process in processes:
        assert process.wait(TIMEOUT) == 0
        assert process.stderr.read() == b""
        process.stderr.close()
        process.stdout.close()
    everything = tmp_path / "all.tsv"
    everything.write_text("".join(labelled))
    fresh = tmp_path / "fresh.nbc"
    assert run("fit", "--lines", everything, "-o", fresh, "-q", *NAMED).returncode == 0
    assert load(str(live)).counts.n_docs == 20
    assert live.read_bytes() == fresh.read_bytes()


def test_six_table_merges_and_six_table_updates_at_once_lose_no_row(tmp_path):
    """The same with table models: 20 rows, then 6 merges of a 20-row shard and 6
    `fit --table --update` of 20 rows each: 260 rows at the end."""
    live = tmp_path / "live.nbc"
    shard = tmp_path / "shard.nbc"
    for path in (live, shard):
        assert run("fit", "--table", TABLE, "--label", "team", "-o", path, "-q").returncode == 0
    processes = []
    for _ in range(6):
        for command in (
            ["merge", live, shard, "-o", live, "-q"],
            ["fit", "--table", TABLE, "--label", "team", "--update", live, "-q"],
        ):
            processes.append(subprocess.Popen(
                [*nbclass_command(), *map(str, command)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            ))  # fmt: skip
    for process in processes:
        _, err = process.communicate(timeout=TIMEOUT)
        assert (process.returncode, err) == (0, b"")
    assert tablefile.load(str(live)).n_rows == 20 + 12 * 20


# --- what a writing command may replace ---------------------------------------------------

NOT_A_MODEL = "cannot write model '{}': it is a file that is not an nbclass model, and " \
    "writing would replace it; give the path of a new or existing model file (or remove " \
    "the file first)"  # fmt: skip


@pytest.fixture(scope="module")
def demo_models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    text, table = folder / "text.nbc", folder / "table.nbc"
    assert run("fit", DEMO_CORPUS, "-o", text, "-q", *NAMED).returncode == 0
    assert run("fit", "--table", TABLE, "--label", "team", "-o", table, "-q").returncode == 0
    return text, table


@pytest.mark.parametrize(
    "command",
    [
        ["fit", DEMO_CORPUS, "-o", "{out}", *NAMED],
        ["fit", "--lines", "{lines}", "-o", "{out}"],
        ["fit", "--table", TABLE, "--label", "team", "-o", "{out}"],
        ["fit", "--lines", "{lines}", "--update", "{text}", "-o", "{out}"],
        ["fit", "--table", TABLE, "--label", "team", "--update", "{table}", "-o", "{out}"],
        ["select-features", "-m", "{text}", "-k", "5", "-o", "{out}"],
        ["merge", "{text}", "{text}", "-o", "{out}"],
        ["merge", "{table}", "{table}", "-o", "{out}"],
        ["unlearn", "--lines", "{lines}", "-m", "{text}", "-o", "{out}"],
        ["sync", DEMO_CORPUS, "-m", "{out}"],
        ["fit", "--lines", "{lines}", "--update", "{out}"],
    ],
    ids=lambda c: " ".join(str(a) for a in c[:3]),
)
@pytest.mark.parametrize("content", [b"notes\n", b"ticket,team\nT-1,billing\n", b"\x89PNG\r\n"])
def test_a_regular_file_that_is_not_a_model_is_never_replaced(
    tmp_path, demo_models, command, content
):
    text, table = demo_models
    out = tmp_path / "g.txt"
    out.write_bytes(content)
    lines = tmp_path / "lines.tsv"
    lines.write_text("billing\tcharged twice for one refund\n")
    args = [
        a.format(out=out, text=text, table=table, lines=lines) if isinstance(a, str) else a
        for a in command
    ]
    result = run(*args)
    assert result.stderr.decode() == f"Error: {NOT_A_MODEL.format(out)}\n"
    assert result.returncode == 1
    assert out.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.txt", "lines.tsv"]


def test_models_empty_files_and_damaged_models_are_replaced(tmp_path, demo_models):
    text, table = demo_models
    empty, damaged, other = tmp_path / "empty.nbc", tmp_path / "damaged.nbc", tmp_path / "t.nbc"
    empty.write_bytes(b"")
    damaged.write_bytes(text.read_bytes()[:100])
    other.write_bytes(table.read_bytes())  # a table model is replaced by a text model
    for out in (empty, damaged, other):
        result = run("fit", DEMO_CORPUS, "-o", out, "-q", *NAMED)
        assert (result.returncode, result.stderr) == (0, b"")
        assert out.read_bytes() == text.read_bytes()


def test_export_never_replaces_a_model(tmp_path, demo_models):
    text, _ = demo_models
    model = tmp_path / "m.nbc"
    model.write_bytes(text.read_bytes())
    result = run("export", "-m", model, "-o", model, "-q")
    assert result.returncode == 1
    assert result.stderr.decode() == (
        f"Error: cannot write {str(model)!r}: it is an nbclass model file, and the export "
        "would replace it; give another path\n"
    )
    assert model.read_bytes() == text.read_bytes()
    notes = tmp_path / "m.json"
    notes.write_text("old export\n")
    assert run("export", "-m", model, "-o", notes, "-q").returncode == 0
    assert notes.read_bytes().startswith(b"{")


# --- predict --output-dir: whole parts or none --------------------------------------------


def test_output_dir_on_a_full_disk_leaves_no_part_and_the_rerun_works(
    private_mount, tmp_path, demo_models  # noqa: F811 - the fixture
):
    """On a full 256 kB tmpfs the run fails with one line and leaves no part file, whole
    or cut short; once there is room, the same command writes every part."""
    text, _ = demo_models
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(1500):  # two parts of 1,000 lines at most, 120 kB in all
        (docs / f"{i:04d}.txt").write_text(f"refund {i} please, the invoice is wrong\n")
    disk, report = tmp_path / "disk", tmp_path / "report"
    disk.mkdir()
    report.mkdir()
    predict = shlex.join([*nbclass_command(), "predict", "-m", str(text), str(docs),
                          "--output-dir", str(disk / "out"), "-j", "1"])  # fmt: skip
    script = f"""
set -u
mount -t tmpfs -o size=256k tmpfs {disk}
mkdir {disk}/out
dd if=/dev/zero of={disk}/fill bs=4k 2>/dev/null
{predict} 2>{report}/stderr; echo $? >{report}/status
ls -A {disk}/out >{report}/full
rm {disk}/fill
{predict} 2>{report}/stderr-again; echo $? >{report}/status-again
ls -A {disk}/out >{report}/again
cat {disk}/out/* >{report}/parts || true
"""
    subprocess.run([*private_mount, "bash", "-c", script], check=True, timeout=TIMEOUT)
    stderr = (report / "stderr").read_text()
    assert (report / "status").read_text() == "1\n"
    assert stderr.startswith(f"Error: cannot write {str(disk / 'out')!r}"[:-1] + "/part-00000")
    assert stderr.endswith(".tsv': No space left on device\n") and stderr.count("\n") == 1
    assert (report / "full").read_text() == ""
    assert (report / "status-again").read_text() == "0\n"
    assert (report / "stderr-again").read_text() == ""
    assert (report / "again").read_text().split() == ["part-000000.tsv", "part-000001.tsv"]
    assert (report / "parts").read_bytes() == run("predict", "-m", text, docs).stdout


def test_output_dir_of_a_failing_run_keeps_no_part(tmp_path, demo_models):
    """A document that cannot be read stops the run after a part was written: the part is
    removed, and the run with the document readable writes every part."""
    text, _ = demo_models
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(1500):
        (docs / f"{i:04d}.txt").write_text(f"the api is down {i}\n")
    (docs / "9999.txt").write_bytes(b"x" * 2000)
    out = tmp_path / "out"
    result = run("predict", "-m", text, docs, "--output-dir", out, "--max-bytes", "1K")
    assert result.returncode == 1
    assert result.stderr.decode().startswith(f"Error: {str(docs / '9999.txt')!r} is larger")
    assert sorted(p.name for p in out.iterdir()) == []
    result = run("predict", "-m", text, docs, "--output-dir", out)
    assert (result.returncode, result.stderr) == (0, b"")
    assert sorted(p.name for p in out.iterdir()) == ["part-000000.tsv", "part-000001.tsv"]
    expected = run("predict", "-m", text, docs).stdout
    assert b"".join(p.read_bytes() for p in sorted(out.iterdir())) == expected
