"""Files outside the corpus and inputs that never come: links to folders, folder names
under a locale that is not UTF-8, named pipes that nothing writes to.

Real processes, real links and real FIFOs; every command ends within its timeout.
"""

from __future__ import annotations

import os
import subprocess
import threading

import pytest
from conftest import DEMO_CORPUS, NAMED, REPO, nbclass_command

from nbclass.modelfile.textfile import load

TIMEOUT = 60
TABLE = REPO / "corpora" / "table-demo.csv"


def run(*args, env=None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *map(str, args)], capture_output=True, timeout=TIMEOUT,
        env={**os.environ, **(env or {})}, **kwargs,
    )  # fmt: skip


@pytest.fixture(scope="module")
def demo_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "m.nbc"
    assert run("fit", DEMO_CORPUS, "-o", path, "-q", *NAMED).returncode == 0
    return path


# --- symbolic links to folders ------------------------------------------------------------


def test_a_class_folder_that_is_a_link_to_a_folder_elsewhere_is_not_followed(tmp_path):
    corpus = tmp_path / "corpus"
    subprocess.run(["cp", "-r", str(DEMO_CORPUS), str(corpus)], check=True)
    elsewhere = tmp_path / "elsewhere" / "secrets"
    elsewhere.mkdir(parents=True)
    (elsewhere / "payroll.txt").write_text("salary of every employee\n")
    (corpus / "secrets").symlink_to(elsewhere)
    (corpus / "root").symlink_to("/")
    result = run("fit", corpus, "-o", tmp_path / "m.nbc", "-q", *NAMED)
    assert result.returncode == 0
    assert result.stderr.decode() == (
        f"Warning: ignoring 2 symbolic link(s) to folders in '{corpus}' (first "
        f"'{corpus / 'root'}'): links to folders are not followed; move or copy the folder "
        "into the corpus\n"
    )
    model = load(str(tmp_path / "m.nbc"))
    assert list(model.counts.classes) == ["account", "billing", "outage"]
    assert "salary" not in model.counts.vocabulary
    fresh = tmp_path / "fresh.nbc"
    assert run("fit", DEMO_CORPUS, "-o", fresh, "-q", *NAMED).returncode == 0
    assert (tmp_path / "m.nbc").read_bytes() == fresh.read_bytes()


def test_a_corpus_of_links_to_folders_has_no_class_folders(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("account", "billing"):
        (corpus / name).symlink_to(DEMO_CORPUS / name)
    result = run("fit", corpus, "-o", tmp_path / "m.nbc")
    assert result.returncode == 1
    assert result.stderr.decode().splitlines() == [
        f"Warning: ignoring 2 symbolic link(s) to folders in '{corpus}' (first "
        f"'{corpus / 'account'}'): links to folders are not followed; move or copy the "
        "folder into the corpus",
        f"Error: no class folders in {str(corpus)!r}: put each class's documents in a "
        "subfolder named after the class",
    ]
    assert not (tmp_path / "m.nbc").exists()


def test_sync_does_not_follow_a_linked_class_folder_either(tmp_path):
    corpus = tmp_path / "corpus"
    subprocess.run(["cp", "-r", str(DEMO_CORPUS), str(corpus)], check=True)
    (corpus / "everything").symlink_to("/")
    result = run("sync", corpus, "-m", tmp_path / "m.nbc", "-q", *NAMED)
    assert result.returncode == 0
    assert load(str(tmp_path / "m.nbc")).counts.n_docs == 42


# --- folder names under LC_ALL=C ----------------------------------------------------------


def test_a_utf8_class_folder_name_is_read_the_same_under_an_ascii_locale(tmp_path):
    """LC_ALL=C without UTF-8 mode: Python's file system encoding is ASCII and names come
    as surrogates; the class is still 'café', and the model the same bytes."""
    corpus = tmp_path / "corpus"
    subprocess.run(["cp", "-r", str(DEMO_CORPUS), str(corpus)], check=True)
    (corpus / "outage").rename(corpus / "café")
    models = {}
    for name, env in (
        ("utf8", {"LC_ALL": "C.UTF-8"}),
        ("ascii", {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}),
    ):
        models[name] = tmp_path / f"{name}.nbc"
        result = run("fit", corpus, "-o", models[name], "-q", *NAMED, env=env)
        assert (result.returncode, result.stderr) == (0, b""), result.stderr
    assert list(load(str(models["ascii"])).counts.classes) == ["account", "billing", "café"]
    assert models["ascii"].read_bytes() == models["utf8"].read_bytes()
    # A name that is not UTF-8 is still refused, under either locale.
    os.rename(os.fsencode(corpus / "café"), os.fsencode(corpus) + b"/caf\xe9")
    env = {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    result = run("fit", corpus, "-o", tmp_path / "bad.nbc", env=env)
    assert result.returncode == 1
    assert result.stderr.decode() == (
        f"Error: class folder name 'caf\\xe9' in '{corpus}' is not valid UTF-8: rename the "
        "folder (a class name is stored as UTF-8 text)\n"
    )


# --- named pipes given by name --------------------------------------------------------------

NOTHING_WRITTEN = (
    "Error: nothing was written to the named pipe '{}' in 0.5 s: start the process that "
    "writes to it first, or set NBCLASS_PIPE_WAIT to wait longer\n"
)


@pytest.mark.parametrize(
    ("command", "code"),
    [
        (["predict", "-m", "{model}", "{fifo}"], 1),
        (["predict", "-m", "{model}", "{fifo}", "{fifo}"], 1),
        (["predict", "-m", "{model}", "--lines", "{fifo}"], 1),
        (["evaluate", "-m", "{model}", "--lines", "{fifo}"], 1),
        (["fit", "--lines", "{fifo}", "-o", "{out}"], 1),
        (["fit", DEMO_CORPUS, "-o", "{out}", "--stop-words", "{fifo}"], 2),
        (["fit", "--table", "{fifo}", "--table-format", "csv", "--label", "team", "-o",
          "{out}"], 1),
        (["predict", "-m", "{table}", "--table", "{fifo}", "--table-format", "csv"], 1),
    ],
    ids=lambda c: " ".join(map(str, c[:4])) if isinstance(c, list) else str(c),
)  # fmt: skip
def test_a_named_pipe_that_nothing_writes_to_is_an_error_not_a_wait(
    tmp_path, demo_model, command, code
):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    table = tmp_path / "t.nbc"
    if "{table}" in command:
        assert run("fit", "--table", TABLE, "--label", "team", "-o", table, "-q").returncode == 0
    out = tmp_path / "out.nbc"
    args = [str(a).format(model=demo_model, fifo=fifo, out=out, table=table) for a in command]
    result = run(*args, env={"NBCLASS_PIPE_WAIT": "0.5"})
    assert (result.returncode, result.stderr.decode()) == (code, NOTHING_WRITTEN.format(fifo))
    assert result.stdout == b""
    assert not out.exists()


def test_a_named_pipe_with_a_writer_is_read_like_standard_input(tmp_path, demo_model):
    """The writer opens the pipe after nbclass (within NBCLASS_PIPE_WAIT); `<(command)`,
    an anonymous pipe, is read too."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def write():
        with open(fifo, "w") as handle:
            handle.write("charged twice, refund please\n")

    writer = threading.Thread(target=write)
    process = subprocess.Popen(
        [*nbclass_command(), "predict", "-m", str(demo_model), "--lines", str(fifo)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "NBCLASS_PIPE_WAIT": "30"},
    )  # fmt: skip
    writer.start()
    out, err = process.communicate(timeout=TIMEOUT)
    writer.join(TIMEOUT)
    assert (process.returncode, err) == (0, b"")
    assert out.decode().startswith(f"{fifo}:1\tbilling\t")
    command = " ".join([*nbclass_command(), "predict", "-m", str(demo_model), "--lines",
                        "<(printf 'charged twice, refund please\\n')"])  # fmt: skip
    result = subprocess.run(["bash", "-c", command], capture_output=True, timeout=TIMEOUT)
    assert result.returncode == 0 and result.stderr == b""
    assert result.stdout.decode().split("\t")[1] == "billing"


def test_a_fifo_inside_a_folder_is_still_skipped_without_waiting(tmp_path, demo_model):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("refund please\n")
    os.mkfifo(docs / "pipe")
    result = run("predict", "-m", demo_model, docs, env={"NBCLASS_PIPE_WAIT": "86400"})
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout.decode().count("\n") == 1


@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan", "inf", "86401", "1e400"])
def test_the_pipe_wait_must_be_a_number_of_seconds(tmp_path, demo_model, value):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = run("predict", "-m", demo_model, fifo, env={"NBCLASS_PIPE_WAIT": value})
    assert result.returncode == 2
    assert result.stderr.decode() == (
        f"Error: NBCLASS_PIPE_WAIT={value!r} is "
        f"{'not a number' if value == 'abc' else 'out of range'}: give a number above 0 and "
        "at most 86400\n"
    )
