"""Bad input: every kind of broken document, corpus and option, in real processes.

Each test asserts the exact behaviour the "Bad documents" table of docs/robustness.md
promises: what is printed on stderr, the exit code, and that a skipped document never
changes the counts of the others (the model file is byte for byte the fit of the corpus
without it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import CHINESE, REPO, nbclass_command, write_corpus

from nbclass.cli.app import cli
from nbclass.counting.counts import as_table
from nbclass.errors import CorpusError, NbclassError
from nbclass.models.learning import count_documents
from nbclass.reading.corpus import list_corpus
from nbclass.reading.policy import DEFAULT_MAX_BYTES, ReadLog, ReadPolicy, parse_size
from nbclass.text.tokenizer import TokenizerSettings

TIMEOUT = 60
MB = 1024 * 1024


def run(*args, input: bytes | None = None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *map(str, args)],
        input=input,
        capture_output=True,
        cwd=cwd or REPO,
        timeout=TIMEOUT,
    )


def lines(stream: bytes) -> list[str]:
    return stream.decode().splitlines()


def fit_bytes(corpus, tmp_path, *options, name="model.nbc") -> bytes:
    result = run("fit", corpus, "-o", tmp_path / name, "-q", "-j", "1", *options)
    assert result.returncode == 0, result.stderr
    return (tmp_path / name).read_bytes()


@pytest.fixture(scope="module")
def chinese_model(tmp_path_factory):
    """(corpus, model path, model bytes) of the textbook corpus, fitted once."""
    root = tmp_path_factory.mktemp("chinese")
    corpus = write_corpus(root / "corpus", CHINESE)
    result = CliRunner().invoke(cli, ["fit", str(corpus), "-o", str(root / "M"), "-q"])
    assert result.exit_code == 0, result.output
    return corpus, root / "M", (root / "M").read_bytes()


@pytest.fixture
def clean(tmp_path):
    return write_corpus(tmp_path / "clean", CHINESE)


@pytest.fixture
def dirty(tmp_path, clean):
    """The same corpus, to which tests add bad documents."""
    return shutil.copytree(clean, tmp_path / "dirty", symlinks=True)


def make_unreadable(path) -> str:
    """A document that cannot be read, for real: mode 000, or for root (whom permissions do
    not stop) a link to /proc/self/mem, a regular file whose first bytes give EIO.
    Returns the error's detail as the skip summary prints it."""
    if os.geteuid() != 0:
        path.write_text("secret words", encoding="utf-8")
        path.chmod(0)
        return "permission denied"
    os.symlink("/proc/self/mem", path)
    return "input/output error"


# --- files ------------------------------------------------------------------------------


def test_an_empty_file_is_a_document_without_words(tmp_path, clean, dirty):
    (dirty / "japan" / "empty.txt").write_bytes(b"")
    result = run("fit", dirty, "-o", tmp_path / "m.nbc")
    assert result.returncode == 0
    assert lines(result.stderr)[0].startswith("fit: 5 documents, 2 classes, 6 words, ")
    options = ["--model", "multinomial", "--estimator", "posterior-mean", "--alpha", "1"]
    empty = run("predict", "-m", tmp_path / "m.nbc", *options, input=b"")
    # No words: the posterior is the class prior, (N_c + α) / (N + Cα) = (3 + 1) / (5 + 2),
    # and the document is unsure (no-known-words).
    expected = f"-\tunsure\t{(3 + 1) / (5 + 2)!r}\n".encode()
    assert (empty.returncode, empty.stdout, empty.stderr) == (0, expected, b"")


def test_binary_documents_are_skipped_with_a_warning_unless_binary_is_given(
    tmp_path, clean, dirty
):
    (dirty / "china" / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR Tokyo")
    result = run("fit", dirty, "-o", tmp_path / "m.nbc", "-j", "1")
    assert result.returncode == 0
    assert lines(result.stderr)[0] == f"Warning: skipped '{dirty}/china/image.png': binary"
    # the 6 words and the 7 pairs of the four documents, none of the image's
    assert lines(result.stderr)[1].startswith("fit: 4 documents, 2 classes, 13 words, ")
    assert lines(result.stderr)[2:] == ["nbclass: skipped 1 document: 1 binary"]
    assert (tmp_path / "m.nbc").read_bytes() == fit_bytes(clean, tmp_path, name="clean.nbc")
    # words only: the summary counts the entries the choice keeps, and among these five
    # tiny documents the default's choice keeps the pairs pruned to df>=2 (2 entries)
    with_binary = run("fit", dirty, "-o", tmp_path / "b.nbc", "--binary", "--ngram-range", "1,1")
    assert with_binary.returncode == 0
    # the 6 words and the image's "png" and "ihdr"
    assert lines(with_binary.stderr)[0].startswith("fit: 5 documents, 2 classes, 8 words, ")


def test_a_nul_byte_after_the_first_8_kib_is_text(tmp_path, dirty):
    (dirty / "china" / "late.txt").write_bytes(b"Chinese " * 1024 + b"\x00 Beijing")
    result = run("fit", dirty, "-o", tmp_path / "m.nbc")
    assert result.returncode == 0
    assert lines(result.stderr)[0].startswith("fit: 5 documents, ")


def test_invalid_utf8_is_replaced_and_counted_and_encoding_reads_it(tmp_path, clean):
    corpus = write_corpus(tmp_path / "latin", {"fr": ["déjà vu"], "en": ["seen already"]})
    (corpus / "fr" / "001.txt").write_bytes("café crème".encode("latin-1"))
    result = run("fit", corpus, "-o", tmp_path / "u.nbc", "-j", "1")
    assert result.returncode == 0
    assert lines(result.stderr)[1:] == [
        "nbclass: replaced 2 undecodable byte sequences by U+FFFD in 1 document (not utf-8: "
        "give --encoding if they are in another encoding)"
    ]
    words = run("top-features", "-m", tmp_path / "u.nbc", "-k", "20").stdout.decode()
    assert "caf\t" in words and "café" not in words  # \w stops at U+FFFD
    latin = run("fit", corpus, "-o", tmp_path / "l.nbc", "-q", "--encoding", "latin-1")
    assert (latin.returncode, latin.stderr) == (0, b"")
    words = run("top-features", "-m", tmp_path / "l.nbc", "-k", "20").stdout.decode()
    assert "café\t" in words and "crème\t" in words


def test_utf16_documents_with_encoding_are_text_not_binary(tmp_path):
    corpus = write_corpus(tmp_path / "c", {"a": ["x"], "b": ["y"]})
    (corpus / "a" / "000.txt").write_bytes("apple apple".encode("utf-16"))
    (corpus / "b" / "000.txt").write_bytes("pear".encode("utf-16"))
    result = run("fit", corpus, "-o", tmp_path / "m.nbc", "--encoding", "utf-16")
    assert result.returncode == 0
    assert lines(result.stderr)[0].startswith("fit: 2 documents, 2 classes, 2 words, ")
    predicted = run(
        "predict", "-m", tmp_path / "m.nbc", "--encoding", "utf-16",
        input="apple".encode("utf-16"),
    )  # fmt: skip
    assert predicted.stdout.decode().split("\t")[:2] == ["-", "a"]


def test_a_huge_piped_document_is_refused_and_memory_stays_bounded(tmp_path, clean):
    """200 MB through a pipe: predict reads 16 MiB + 1 byte, says so, and stays small."""
    model = tmp_path / "m.nbc"
    fit_bytes(clean, tmp_path, name="m.nbc")
    wrapper = f"""
import resource, subprocess, sys
writer = subprocess.Popen(
    [sys.executable, "-c",
     "import sys\\nb = b'Chinese ' * 131072\\ntry:\\n"
     "    for _ in range(200): sys.stdout.buffer.write(b)\\nexcept BrokenPipeError: pass"],
    stdout=subprocess.PIPE)
reader = subprocess.run({[*nbclass_command(), "predict", "-m", str(model)]!r} + sys.argv[1:],
                        stdin=writer.stdout, capture_output=True)
writer.stdout.close()
writer.wait()
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(reader.returncode, peak, reader.stdout.decode(), reader.stderr.decode(), sep="|")
"""
    for options, code, out, err in [
        ([], 1, "", "Error: '-' is larger than --max-bytes 16M: give a larger --max-bytes, "
         "or --on-error skip to skip such documents\n"),
        (["--on-error", "skip"], 0, "", "Warning: skipped '-': too large (over 16M)\n"
         "nbclass: skipped 1 document: 1 too large (over 16M)\n"),
    ]:  # fmt: skip
        result = subprocess.run(
            [sys.executable, "-c", wrapper, *options], capture_output=True, text=True,
            cwd=REPO, timeout=TIMEOUT,
        )  # fmt: skip
        returncode, peak, stdout, stderr = result.stdout.split("|")
        assert (int(returncode), stdout, stderr) == (code, out, err + "\n")
        assert int(peak) < 100 * MB  # of 200 MB sent; without a limit it takes over 3 GB


def test_over_size_documents_fail_by_default_or_are_skipped(tmp_path, clean, dirty):
    (dirty / "japan" / "big.txt").write_text("Tokyo " * 200, encoding="utf-8")
    result = run("fit", dirty, "-o", tmp_path / "m.nbc", "--max-bytes", "1K")
    assert (result.returncode, lines(result.stderr)) == (1, [
        f"Error: '{dirty}/japan/big.txt' is larger than --max-bytes 1K: give a larger "
        "--max-bytes, or --on-error skip to skip such documents"
    ])  # fmt: skip
    assert not (tmp_path / "m.nbc").exists()
    skipped = fit_bytes(dirty, tmp_path, "--max-bytes", "1K", "--on-error", "skip")
    assert skipped == fit_bytes(clean, tmp_path, name="clean.nbc")


def test_sizes_accept_suffixes():
    assert [parse_size(s) for s in ("1", "1K", "64M", "2G", "512k", "1MiB", "3KB")] == [
        1, 1024, 64 * MB, 2 * 1024 * MB, 512 * 1024, MB, 3 * 1024,
    ]  # fmt: skip
    assert DEFAULT_MAX_BYTES == 16 * MB
    for bad in ("0", "-1", "1.5M", "M", "12X", ""):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_names_with_newlines_tabs_and_bad_bytes_stay_one_line_per_document(tmp_path, clean):
    fit_bytes(clean, tmp_path, name="m.nbc")
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    names = [b"new\nline", b"tab\there", b"back\\slash", b"bell\x07", b"latin\xe9"]
    for name in names:
        with open(os.path.join(os.fsencode(inbox), name), "w") as handle:
            handle.write("Chinese Tokyo")
    expected = ["back\\\\slash", "bell\\x07", "latin\\xe9", "new\\nline", "tab\\there"]
    tsv = run("predict", "-m", tmp_path / "m.nbc", inbox)
    assert tsv.returncode == 0, tsv.stderr
    rows = lines(tsv.stdout)
    assert [row.split("\t")[0] for row in rows] == [f"{inbox}/{name}" for name in expected]
    jsonl = run("predict", "-m", tmp_path / "m.nbc", inbox, "--format", "jsonl")
    records = [json.loads(line) for line in lines(jsonl.stdout)]  # valid UTF-8 JSON
    assert [r["source"] for r in records] == [f"{inbox}/{name}" for name in expected]


def test_an_unreadable_file_fails_by_default_and_is_skipped_with_on_error_skip(
    tmp_path, clean, dirty
):
    detail = make_unreadable(dirty / "china" / "locked.txt")
    path = f"{dirty}/china/locked.txt"
    result = run("fit", dirty, "-o", tmp_path / "m.nbc", "-j", "1")
    assert result.returncode == 1
    assert lines(result.stderr) == [
        f"Error: cannot read {path!r}: {detail.capitalize()}; --on-error skip skips such documents"
    ]
    assert not (tmp_path / "m.nbc").exists()
    skipped = run("fit", dirty, "-o", tmp_path / "m.nbc", "-j", "1", "--on-error", "skip")
    assert skipped.returncode == 0
    assert lines(skipped.stderr)[0] == f"Warning: skipped '{path}': unreadable ({detail})"
    assert lines(skipped.stderr)[2] == f"nbclass: skipped 1 document: 1 unreadable ({detail})"
    assert (tmp_path / "m.nbc").read_bytes() == fit_bytes(clean, tmp_path, name="clean.nbc")


def test_skipping_is_the_same_in_worker_processes(tmp_path, clean, dirty, monkeypatch):
    """-j 2 on a corpus above the parallel threshold: the workers apply the policy."""
    monkeypatch.setenv("NBCLASS_JOBS", "2")
    from nbclass.counting import counts

    monkeypatch.setattr(counts, "PARALLEL_MIN_BYTES", 0)
    make_unreadable(dirty / "china" / "locked.txt")
    (dirty / "japan" / "blob.bin").write_bytes(b"\x00\x01Tokyo")
    corpus = list_corpus(str(dirty))
    log = ReadLog()
    documents = count_documents(
        corpus, TokenizerSettings(), False, jobs=2, policy=ReadPolicy(on_error="skip"), log=log
    )
    reference = count_documents(list_corpus(str(clean)), TokenizerSettings(), False, jobs=1)
    assert documents.counts.class_count.tolist() == reference.counts.class_count.tolist()
    assert (
        as_table(documents.counts.token_count).tolist()
        == as_table(reference.counts.token_count).tolist()
    )
    assert sorted((os.path.basename(s.source), s.reason) for s in log.skipped) == [
        ("blob.bin", "binary"), ("locked.txt", "unreadable"),
    ]  # fmt: skip


def test_fifos_sockets_devices_and_symlink_loops_are_skipped_without_hanging(
    tmp_path, clean, dirty
):
    china = dirty / "china"
    os.mkfifo(china / "fifo")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(china / "socket"))
    try:
        os.symlink("/dev/zero", china / "zero")
        os.symlink("/dev/null", china / "null")
        os.symlink(china / "loop-b", china / "loop-a")
        os.symlink(china / "loop-a", china / "loop-b")
        os.symlink(dirty, china / "up")  # a link to a folder above: not followed
        result = run("fit", dirty, "-o", tmp_path / "m.nbc", "-j", "1")
    finally:
        server.close()
    assert result.returncode == 0, result.stderr
    # the 6 words and the 7 pairs of the four documents
    assert lines(result.stderr)[0].startswith("fit: 4 documents, 2 classes, 13 words, ")
    assert len(lines(result.stderr)) == 1
    assert (tmp_path / "m.nbc").read_bytes() == fit_bytes(clean, tmp_path, name="clean.nbc")


def test_a_file_deleted_between_listing_and_reading_is_vanished(tmp_path, clean, dirty):
    (dirty / "japan" / "gone.txt").write_text("Tokyo", encoding="utf-8")
    corpus = list_corpus(str(dirty))
    (dirty / "japan" / "gone.txt").unlink()
    with pytest.raises(NbclassError, match="gone.txt'. No such file or directory; --on-error"):
        count_documents(corpus, TokenizerSettings(), False)
    log = ReadLog()
    documents = count_documents(
        corpus, TokenizerSettings(), False, policy=ReadPolicy(on_error="skip"), log=log
    )
    assert documents.counts.n_docs == 4
    assert log.summary(ReadPolicy()) == [
        "nbclass: skipped 1 document: 1 vanished (removed after the corpus was listed)"
    ]


def test_a_file_replaced_by_a_fifo_after_listing_is_not_waited_on(tmp_path, dirty):
    (dirty / "japan" / "swap.txt").write_text("Tokyo", encoding="utf-8")
    corpus = list_corpus(str(dirty))
    (dirty / "japan" / "swap.txt").unlink()
    os.mkfifo(dirty / "japan" / "swap.txt")  # nobody will ever write to it
    log = ReadLog()
    documents = count_documents(corpus, TokenizerSettings(), False, log=log)
    assert documents.counts.n_docs == 4
    assert [(s.reason, s.detail) for s in log.skipped] == [
        ("not a regular file", "changed while the corpus was read")
    ]


def test_predict_with_skip_prints_no_row_for_a_skipped_document(tmp_path, clean):
    fit_bytes(clean, tmp_path, name="m.nbc")
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.txt").write_text("Tokyo Japan", encoding="utf-8")
    (inbox / "b.bin").write_bytes(b"\x00Tokyo")
    detail = make_unreadable(inbox / "c.txt")
    (inbox / "d.txt").write_text("Chinese", encoding="utf-8")
    common = ["predict", "-m", tmp_path / "m.nbc", "--model", "multinomial"]
    failed = run(*common, inbox)
    assert failed.returncode == 1
    assert lines(failed.stderr) == [
        f"Warning: skipped '{inbox}/b.bin': binary",
        f"Error: cannot read '{inbox}/c.txt': {detail.capitalize()}; --on-error skip skips "
        "such documents",
    ]
    result = run(*common, inbox, "--on-error", "skip")
    assert result.returncode == 0
    assert [row.split("\t")[0] for row in lines(result.stdout)] == [
        f"{inbox}/a.txt", f"{inbox}/d.txt"
    ]  # fmt: skip
    assert lines(result.stderr) == [
        f"Warning: skipped '{inbox}/b.bin': binary",
        f"Warning: skipped '{inbox}/c.txt': unreadable ({detail})",
        f"nbclass: skipped 2 documents: 1 unreadable ({detail}), 1 binary",
    ]
    one = run(*common, inbox / "b.bin", "--exit-code")
    assert (one.returncode, one.stdout) == (9, b"")  # no label


def test_lines_too_long_and_binary_line_files(tmp_path, clean):
    fit_bytes(clean, tmp_path, name="m.nbc")
    text = b"Tokyo\n" + b"Chinese " * 300 + b"\nJapan\r\n"
    common = ["predict", "-m", tmp_path / "m.nbc", "--lines", "--max-bytes", "1K"]
    failed = run(*common, input=text)
    assert failed.returncode == 1
    assert lines(failed.stderr) == [
        "Error: '-:2' is larger than --max-bytes 1K: give a larger --max-bytes, or "
        "--on-error skip to skip such documents"
    ]
    result = run(*common, "--on-error", "skip", input=text)
    assert [row.split("\t")[0] for row in lines(result.stdout)] == ["-:1", "-:3"]
    assert lines(result.stderr) == [
        "Warning: skipped '-:2': too large (over 1K)",
        "nbclass: skipped 1 document: 1 too large (over 1K)",
    ]
    binary = run("predict", "-m", tmp_path / "m.nbc", "--lines", input=b"\x00\x01\nTokyo\n")
    assert (binary.returncode, binary.stdout) == (0, b"")
    assert lines(binary.stderr)[0] == "Warning: skipped '-': binary"


def test_evaluate_and_sync_read_under_the_same_policy(tmp_path, clean, dirty):
    fit_bytes(clean, tmp_path, name="m.nbc")
    (dirty / "japan" / "blob.bin").write_bytes(b"\x00Tokyo")
    detail = make_unreadable(dirty / "china" / "locked.txt")
    evaluated = run("evaluate", "-m", tmp_path / "m.nbc", dirty, "--format", "json")
    assert evaluated.returncode == 1
    evaluated = run(
        "evaluate", "-m", tmp_path / "m.nbc", dirty, "--format", "json", "--on-error", "skip"
    )
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["documents"] == 4
    assert lines(evaluated.stderr)[-1] == (
        f"nbclass: skipped 2 documents: 1 unreadable ({detail}), 1 binary"
    )
    synced = run("sync", dirty, "-m", tmp_path / "s.nbc", "--on-error", "skip")
    assert synced.returncode == 0, synced.stderr
    assert lines(synced.stdout) == [
        f"sync: 4 added, 0 removed, 0 relabelled, 0 unchanged, 4 documents -> {tmp_path}/s.nbc"
    ]
    reference = fit_bytes(clean, tmp_path, "--ledger", name="l.nbc")
    assert (tmp_path / "s.nbc").read_bytes() == reference


# --- corpora ----------------------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() == 0, reason="permissions do not stop root")
def test_an_unreadable_folder_inside_the_corpus_stops_the_command(tmp_path, dirty):
    hidden = dirty / "china" / "sub"
    hidden.mkdir()
    (hidden / "more.txt").write_text("Tokyo", encoding="utf-8")
    hidden.chmod(0)
    try:
        result = run("fit", dirty, "-o", tmp_path / "m.nbc", "--on-error", "skip")
    finally:
        hidden.chmod(0o755)
    assert (result.returncode, lines(result.stderr)) == (1, [
        f"Error: cannot read folder '{hidden}': Permission denied (it may hold any number of "
        "documents: make it readable, or move it out of the way)"
    ])  # fmt: skip


def test_a_class_folder_name_that_is_not_utf8_is_refused(tmp_path):
    root = tmp_path / "c"
    write_corpus(root, {"good": ["a b"]})
    bad = os.path.join(os.fsencode(root), b"caf\xe9")
    os.mkdir(bad)
    with open(os.path.join(bad, b"1.txt"), "w") as handle:
        handle.write("c d")
    result = run("fit", root, "-o", tmp_path / "m.nbc")
    assert (result.returncode, lines(result.stderr)) == (1, [
        f"Error: class folder name 'caf\\xe9' in '{root}' is not valid UTF-8: rename the "
        "folder (a class name is stored as UTF-8 text)"
    ])  # fmt: skip


@pytest.mark.parametrize(
    "layout, message",
    [
        ("missing", "corpus folder '{root}' does not exist"),
        ("file", "'{root}' is a file, not a corpus folder: give a folder with one subfolder "
         "per class"),
        ("no classes", "no class folders in '{root}': put each class's documents in a "
         "subfolder named after the class"),
        ("one class", "'{root}' has only one class folder ('a'): a classifier needs at least "
         "two classes"),
        ("empty class", "class folder '{root}/b' has no documents: add files to it or remove it"),
        ("only hidden", "class folder '{root}/b' has no documents: add files to it or remove it"),
    ],
)  # fmt: skip
def test_corpora_that_cannot_be_fitted(tmp_path, layout, message):
    root = tmp_path / "corpus"
    if layout == "file":
        root.write_text("x", encoding="utf-8")
    elif layout != "missing":
        root.mkdir()
        if layout == "no classes":
            (root / "loose.txt").write_text("x", encoding="utf-8")
        else:
            write_corpus(root, {"a": ["x y"]})
        if layout in ("empty class", "only hidden"):
            (root / "b").mkdir()
        if layout == "only hidden":
            (root / "b" / ".hidden").write_text("x", encoding="utf-8")
            (root / "b" / "backup~").write_text("x", encoding="utf-8")
    result = run("fit", root, "-o", tmp_path / "m.nbc")
    assert result.returncode == 1
    assert lines(result.stderr)[-1] == "Error: " + message.format(root=root)
    with pytest.raises(CorpusError):
        list_corpus(str(root))


def test_hidden_files_and_editor_backups_are_skipped(tmp_path, clean, dirty):
    (dirty / "china" / ".swp").write_text("Tokyo Tokyo", encoding="utf-8")
    (dirty / "china" / "001.txt~").write_text("Tokyo Tokyo", encoding="utf-8")
    (dirty / ".git").mkdir()
    (dirty / ".git" / "HEAD").write_text("ref", encoding="utf-8")
    assert fit_bytes(dirty, tmp_path) == fit_bytes(clean, tmp_path, name="clean.nbc")


def test_two_thousand_classes_fit_and_predict_in_seconds(tmp_path):
    root = tmp_path / "many"
    for c in range(2000):
        (root / f"c{c:04d}").mkdir(parents=True)
        (root / f"c{c:04d}" / "d.txt").write_text(f"word{c:04d} common", encoding="utf-8")
    result = run("fit", root, "-o", tmp_path / "m.nbc", "-j", "1")
    assert result.returncode == 0, result.stderr
    assert lines(result.stderr)[0].startswith("fit: 2000 documents, 2000 classes, 2001 words, ")
    seconds = float(re.search(r", (\d+\.\d+) s -> ", lines(result.stderr)[0])[1])
    assert seconds < 10
    predicted = run("predict", "-m", tmp_path / "m.nbc", input=b"word1234")
    assert predicted.stdout.decode().split("\t")[:2] == ["-", "c1234"]


# --- options ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["fit", "C", "-o", "M", "--alpha", "-1"], "--estimator posterior-mean needs --alpha > 0"),
        (["fit", "C", "-o", "M", "--alpha", "0"], "--estimator posterior-mean needs --alpha > 0"),
        (["fit", "C", "-o", "M", "--beta", "nan"],
         "--beta nan is out of range: give a number from 0 to 1e+06"),
        (["fit", "C", "-o", "M", "--alpha", "inf"],
         "--alpha inf is out of range: give a number from 0 to 1e+06"),
        (["predict", "-m", "M", "--beta", "-0.5"], "--estimator posterior-mean needs --alpha > 0"),
        (["predict", "-m", "M", "--estimator", "map", "--beta", "0.5"],
         "--estimator map needs --alpha >= 1 and --beta >= 1"),
        (["predict", "-m", "M", "--model", "bernoulli", "--beta", "1,0"],
         "--estimator posterior-mean needs --alpha > 0 and --beta > 0"),
        (["predict", "-m", "M", "--min-probability", "nan"],
         "--min-probability nan is out of range: give a number from 0 to 1"),
        (["predict", "-m", "M", "--min-margin", "-1"],
         "--min-margin -1.0 is out of range: give a number from 0 to 1"),
        (["fit", "C", "-o", "M", "--min-df", "0"],
         "--min-df 0 is out of range: give a whole number from 1 to 2^63-1"),
        (["fit", "C", "-o", "M", "--max-features", "-5"],
         "--max-features -5 is out of range: give a whole number from 1 to 2^63-1"),
        (["fit", "C", "-o", "M", "--ngram-range", "2,1"], "--ngram-range 2,1 is not valid"),
        (["fit", "C", "--lines", "-", "-o", "M"], "give a CORPUS_DIR, --lines FILE or --table"),
        (["fit", "--table", "t.csv", "--label", "x", "--lines", "-", "-o", "M"],
         "--table cannot be combined with --lines"),
        (["fit", "C", "--ledger", "--update", "M"], "keeps no ledger; --ledger needs one"),
        (["unlearn", "C", "-m", "M", "--lines", "-"], "give a CORPUS_DIR, or --lines FILE"),
        (["predict", "-m", "M", "--lines", "--exit-code", "-"], "--exit-code needs exactly one"),
        (["cv", "C", "--folds", "1"],
         "--folds 1 is out of range: give a whole number from 2 to 10000"),
        (["check", "-m", "M", "--baseline", "M", "C", "--max-drop", "-1"],
         "--max-drop -1.0 is out of range"),
        (["fit", "C", "-o", "M", "--encoding", "klingon"],
         "--encoding 'klingon' is not an encoding Python knows"),
        (["predict", "-m", "M", "--encoding", "base64"], "--encoding 'base64' is not a text "),
        (["fit", "--lines", "-", "-o", "M", "--encoding", "utf-16"],
         "--lines splits at the byte \\n, which is not a line end in utf-16"),
        (["fit", "C", "-o", "M", "--max-bytes", "0"], "Invalid value for --max-bytes: '0' is"),
        (["fit", "C", "-o", "M", "--on-error", "ignore"], "Invalid value for '--on-error'"),
        (["top-features", "-m", "M", "-k", "0"],
         "-k 0 is out of range: give a whole number from 1 to 2^31-1"),
        (["fit", "--table", "t.csv", "--label", "x", "-o", "M", "--encoding", "latin-1"],
         "--encoding, --max-bytes, --binary and --on-error apply to documents, not to --table"),
    ],
)  # fmt: skip
def test_out_of_range_and_conflicting_options_are_one_error_line_and_exit_2(
    chinese_model, args, message
):
    corpus, model, _ = chinese_model
    args = [{"C": str(corpus), "M": str(model)}.get(a, a) for a in args]
    result = CliRunner().invoke(cli, args, input="Tokyo\n")
    assert result.exit_code == 2, result.stderr
    assert isinstance(result.exception, SystemExit), result.exception  # not a crash
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and message in errors[0], result.stderr
    assert result.stderr.splitlines()[-1] == errors[0]
    assert model.read_bytes() == chinese_model[2]  # nothing written


def test_k_larger_than_the_vocabulary_lists_every_word_with_a_note(tmp_path, clean):
    fit_bytes(clean, tmp_path, name="m.nbc")
    top = run("top-features", "-m", tmp_path / "m.nbc", "-k", "100")
    assert top.returncode == 0
    # the default fit keeps the 6 words and the 7 pairs of adjacent words of the documents
    assert len(lines(top.stdout)) == 13
    assert lines(top.stderr) == [
        "top-features: -k 100 is more than the model's 13 words: listing all of them"
    ]
    kept = run("select-features", "-m", tmp_path / "m.nbc", "-k", "100", "-o", tmp_path / "s")
    assert (kept.returncode, lines(kept.stderr)[0].split(" ->")[0]) == (
        0, "select-features: kept 13 of 13 words"
    )  # fmt: skip


def test_fit_lines_skips_an_over_size_line_and_learns_the_others_exactly(tmp_path):
    good = b"china\tChinese Beijing\njapan\tTokyo Japan\r\nchina\tShanghai\n"
    bad = good + b"japan\t" + b"Tokyo " * 100 + b"\n"
    reference = run("fit", "--lines", "-", "-o", tmp_path / "good.nbc", "-q", input=good)
    assert reference.returncode == 0, reference.stderr
    failed = run("fit", "--lines", "-", "-o", tmp_path / "m.nbc", "--max-bytes", "100", input=bad)
    assert (failed.returncode, lines(failed.stderr)) == (1, [
        "Error: '-:4' is larger than --max-bytes 100: give a larger --max-bytes, or "
        "--on-error skip to skip such documents"
    ])  # fmt: skip
    skipped = run(
        "fit", "--lines", "-", "-o", tmp_path / "m.nbc", "-q", "--max-bytes", "100",
        "--on-error", "skip", input=bad,
    )  # fmt: skip
    assert lines(skipped.stderr) == [
        "Warning: skipped '-:4': too large (over 100)",
        "nbclass: skipped 1 document: 1 too large (over 100)",
    ]
    assert (tmp_path / "m.nbc").read_bytes() == (tmp_path / "good.nbc").read_bytes()


def test_cv_measures_the_documents_it_could_read(tmp_path, dirty):
    for i in range(3):
        (dirty / "japan" / f"more{i}.txt").write_text("Tokyo Japan", encoding="utf-8")
    (dirty / "china" / "blob.bin").write_bytes(b"\x00Chinese")
    result = run("cv", dirty, "--folds", "2", "--format", "json", "-j", "1")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["documents"] == 7
    assert lines(result.stderr) == [
        f"Warning: skipped '{dirty}/china/blob.bin': binary",
        "nbclass: skipped 1 document: 1 binary",
    ]
