"""Bulk predict in worker processes (nbclass.scoring): the same bytes as one process."""

from __future__ import annotations

import pytest
from test_subprocess import run

from nbclass.cli import cli


@pytest.fixture
def small_batches(monkeypatch):
    """Workers for any amount of text, and batches of 7 documents (several per worker)."""
    import nbclass.model
    import nbclass.scoring

    monkeypatch.setattr(nbclass.scoring, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(nbclass.model, "BATCH_SIZE", 7)


@pytest.fixture(scope="module")
def news_model(news_sample, tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "news.nbc"
    result = run("fit", news_sample[0], "-o", path, "-q")
    assert result.returncode == 0, result.stderr
    return path


def _predict(runner, *args):
    result = runner.invoke(cli, ["predict", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--format", "jsonl", "--top-k", "2"],
        ["--explain", "3", "--format", "jsonl"],
        ["--min-probability", "0.99", "--model", "multinomial"],
    ],
)
def test_workers_print_what_one_process_prints(
    runner, news_model, news_sample, small_batches, options
):
    test = news_sample[1]
    one = _predict(runner, "-m", news_model, test, "-j", "1", *options)
    assert one[0] == 0 and one[1].count("\n") == 120
    for jobs in ("2", "3"):
        assert _predict(runner, "-m", news_model, test, "-j", jobs, *options) == one


def test_skipped_documents_are_reported_in_order_by_the_workers(
    runner, news_model, news_sample, small_batches, tmp_path
):
    """A binary file and an oversize one among the documents: the same warnings, the
    same predictions and the same summary, whatever the number of processes."""
    folder = tmp_path / "inbox"
    folder.mkdir()
    texts = sorted(news_sample[1].rglob("*"))
    texts = [p for p in texts if p.is_file()][:30]
    for i, path in enumerate(texts):
        (folder / f"{i:03d}.txt").write_bytes(path.read_bytes()[:4000])
    (folder / "010b.bin").write_bytes(b"\x00\x01binary")
    (folder / "020b.txt").write_bytes(b"big " * 3000)
    options = ["--max-bytes", "10K", "--on-error", "skip"]
    one = _predict(runner, "-m", news_model, folder, "-j", "1", *options)
    assert one[0] == 0 and one[1].count("\n") == 30
    assert "010b.bin" in one[2] and "020b.txt" in one[2]
    assert _predict(runner, "-m", news_model, folder, "-j", "2", *options) == one


def test_an_error_in_a_worker_stops_after_the_batches_before_it(
    runner, news_model, news_sample, small_batches, tmp_path
):
    folder = tmp_path / "inbox"
    folder.mkdir()
    for i in range(40):
        (folder / f"{i:03d}.txt").write_text(f"space shuttle orbit launch {i}")
    (folder / "025.txt").write_bytes(b"big " * 3000)
    one = _predict(runner, "-m", news_model, folder, "-j", "1", "--max-bytes", "10K")
    assert one[0] == 1 and "025.txt" in one[2] and "--max-bytes" in one[2]
    assert one[1].count("\n") == 21  # the batches of 7 before the one that fails
    assert _predict(runner, "-m", news_model, folder, "-j", "2", "--max-bytes", "10K") == one


def test_real_processes_over_four_megabytes_give_the_same_bytes(tmp_path, news_model):
    """Above PARALLEL_MIN_BYTES (no patching: real subprocesses) -j 2 uses the workers;
    its output is byte for byte that of -j 1."""
    folder = tmp_path / "big"
    folder.mkdir()
    words = "space shuttle orbit god atheism image graphics jpeg believe launch ".split()
    for i in range(1200):
        text = " ".join(words[(i * 7 + k) % len(words)] for k in range(800 + i % 50))
        (folder / f"{i:04d}.txt").write_text(text)
    one = run("predict", "-m", news_model, folder, "-j", "1")
    two = run("predict", "-m", news_model, folder, "-j", "2")
    assert one.returncode == 0 and one.stdout.count(b"\n") == 1200
    assert (two.returncode, two.stdout, two.stderr) == (0, one.stdout, one.stderr)
