"""URLs through fsspec, on this machine: ``file://`` URLs give what local paths give, the
reading policy applies to objects, and local paths never import fsspec.

The same through a real S3 server and a real Dask cluster: tests/test_cluster_storage.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from conftest import DEMO_CORPUS, DEMO_DOCS, REPO, nbclass_command
from test_entry import imported_modules

TIMEOUT = 60


def run(*args, cwd=REPO, input=None, flags=()) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DASK_SCHEDULER_ADDRESS"}
    return subprocess.run(
        [sys.executable, *flags, *nbclass_command()[1:], *map(str, args)], capture_output=True,
        cwd=cwd, timeout=TIMEOUT, env=env, input=input,
    )  # fmt: skip


def ok(*args, **kwargs) -> subprocess.CompletedProcess:
    result = run(*args, **kwargs)
    assert result.returncode == 0, result.stderr
    return result


def url(path) -> str:
    return f"file://{path}"


def test_fit_and_predict_through_file_urls_equal_local_paths(tmp_path):
    ok("fit", DEMO_CORPUS, "-o", tmp_path / "local.nbc", "-q")
    ok("fit", url(DEMO_CORPUS), "-o", url(tmp_path / "url.nbc"), "-q")
    assert (tmp_path / "url.nbc").read_bytes() == (tmp_path / "local.nbc").read_bytes()
    local = ok("predict", "-m", tmp_path / "local.nbc", DEMO_DOCS, "--format", "jsonl")
    remote = ok("predict", "-m", url(tmp_path / "url.nbc"), url(DEMO_DOCS), "--format", "jsonl")
    assert remote.stdout.replace(url(DEMO_DOCS).encode(), str(DEMO_DOCS).encode()) == local.stdout
    assert remote.stdout.count(b'"source": "file://') == 3
    # one document, from a model at a URL
    one = ok("predict", "-m", url(tmp_path / "url.nbc"), input=b"refund my invoice")
    same = ok("predict", "-m", tmp_path / "local.nbc", input=b"refund my invoice")
    assert one.stdout == same.stdout


def test_fit_lines_from_a_url_equals_the_local_file(tmp_path):
    lines = tmp_path / "l.tsv"
    lines.write_bytes(b"spam\twin cash now\nham\tsee you at six\r\n\n__label__spam free cash")
    ok("fit", "--lines", lines, "-o", tmp_path / "a.nbc", "-q")
    ok("fit", "--lines", url(lines), "-o", tmp_path / "b.nbc", "-q")
    assert (tmp_path / "a.nbc").read_bytes() == (tmp_path / "b.nbc").read_bytes()


def test_the_reading_policy_applies_to_objects_at_urls(tmp_path):
    """Sizes, binaries, encodings and hidden names: the same skips, the same summary, the
    same model as for the local folder."""
    corpus = tmp_path / "corpus"
    shutil.copytree(DEMO_CORPUS, corpus)
    first = min(p for p in corpus.iterdir() if p.is_dir())
    (first / "blob.bin").write_bytes(b"\x00\x01 refund")
    (first / "big.txt").write_bytes(b"refund " * 200)
    (first / "latin.txt").write_bytes("refund café".encode("latin-1"))
    (first / ".hidden").write_text("never read")
    options = ["--on-error", "skip", "--max-bytes", "1K", "-q"]
    here = ok("fit", "corpus", "-o", "here.nbc", *options, cwd=tmp_path)
    there = ok("fit", url(corpus), "-o", "there.nbc", *options, cwd=tmp_path)
    assert (tmp_path / "here.nbc").read_bytes() == (tmp_path / "there.nbc").read_bytes()
    assert there.stderr.decode().replace(url(tmp_path) + "/", "") == here.stderr.decode()
    assert here.stderr.decode().splitlines()[-2:] == [
        "nbclass: skipped 2 documents: 1 binary, 1 too large (over 1K)",
        "nbclass: replaced 1 undecodable byte sequence by U+FFFD in 1 document (not utf-8: "
        "give --encoding if they are in another encoding)",
    ]
    failed = run("fit", url(corpus), "-o", "x.nbc", "--max-bytes", "1K", cwd=tmp_path)
    assert failed.returncode == 1
    assert failed.stderr.decode() == (
        f"Error: '{url(first / 'big.txt')}' is larger than --max-bytes 1K: give a larger "
        "--max-bytes, or --on-error skip to skip such documents\n"
    )


def test_missing_urls_are_the_errors_of_missing_paths(tmp_path):
    for args, message in [
        (("fit", url(tmp_path / "none"), "-o", "m.nbc"),
         f"Error: corpus folder '{url(tmp_path / 'none')}' does not exist\n"),
        (("predict", "-m", url(tmp_path / "none.nbc"), DEMO_DOCS),
         f"Error: model file '{url(tmp_path / 'none.nbc')}' does not exist: create one with "
         "'nbclass fit'\n"),
    ]:  # fmt: skip
        result = run(*args, cwd=tmp_path)
        assert (result.returncode, result.stderr.decode()) == (1, message)


def test_an_unknown_scheme_is_a_usage_error(tmp_path):
    result = run("fit", "nosuchscheme://bucket/corpus", "-o", tmp_path / "m.nbc")
    assert result.returncode == 2
    assert result.stderr.decode() == (
        "Error: nosuchscheme://bucket/corpus: Protocol not known: nosuchscheme (fsspec has no "
        "filesystem for it)\n"
    )


def test_without_fsspec_a_url_says_how_to_install_it_and_paths_still_work(tmp_path):
    code = (
        "import sys; sys.modules['fsspec'] = None\n"  # makes `import fsspec` fail
        "from nbclass.cli.app import main; main(sys.argv[1:])"
    )
    for args, expected in [
        (["fit", url(DEMO_CORPUS), "-o", str(tmp_path / "m.nbc")], 2),
        (["fit", str(DEMO_CORPUS), "-o", str(tmp_path / "m.nbc"), "-q"], 0),
    ]:
        result = subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, timeout=TIMEOUT
        )
        assert result.returncode == expected, result.stderr
    assert result.stderr == b""
    result = subprocess.run(
        [sys.executable, "-c", code, "fit", url(DEMO_CORPUS), "-o", "m.nbc"],
        capture_output=True, timeout=TIMEOUT, cwd=tmp_path,
    )  # fmt: skip
    assert result.stderr.decode() == (
        f"Error: {url(DEMO_CORPUS)}: reading URLs needs fsspec, which is not installed: "
        "pip install 'nbclass[storage]'\n"
    )


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("storage") / "demo.nbc"
    ok("fit", DEMO_CORPUS, "-o", path, "-q")
    return path


def test_local_paths_never_import_fsspec(model, tmp_path):
    """One document (the fast start) and a batch of files: no fsspec, no storage module."""
    for args, stdin in [
        (["predict", "-m", model], b"refund my card"),
        (["predict", "-m", model, DEMO_DOCS], None),
        (["fit", DEMO_CORPUS, "-o", tmp_path / "m.nbc", "-q"], None),
    ]:
        result = run(*args, input=stdin, flags=["-X", "importtime"])
        assert result.returncode == 0, result.stderr
        imported = imported_modules(result)
        assert not {m for m in imported if m.split(".")[0] == "fsspec"}, args
        assert "nbclass.reading.storage" not in imported, args


def test_predict_output_dir_here_writes_parts_that_concatenate_to_stdout(model, tmp_path):
    expected = ok("predict", "-m", model, DEMO_DOCS, "--format", "jsonl").stdout
    ok("predict", "-m", model, DEMO_DOCS, "--format", "jsonl", "--output-dir", tmp_path / "o")
    assert [p.name for p in sorted((tmp_path / "o").iterdir())] == ["part-000000.jsonl"]
    assert (tmp_path / "o" / "part-000000.jsonl").read_bytes() == expected
    # at a URL, and from standard input with --lines
    out = url(tmp_path / "u")
    result = ok("predict", "-m", model, "--lines", "--output-dir", out, input=b"refund\nlogin\n")
    assert result.stdout == b""
    lines = ok("predict", "-m", model, "--lines", input=b"refund\nlogin\n").stdout
    assert (tmp_path / "u" / "part-000000.tsv").read_bytes() == lines
    (tmp_path / "file").write_text("")
    result = run("predict", "-m", model, DEMO_DOCS, "--output-dir", tmp_path / "file")
    assert (result.returncode, result.stderr.decode()) == (
        2, f"Error: --output-dir '{tmp_path / 'file'}' is a file: give a folder\n"
    )
