"""Bulk predict in worker processes (nbclass.models.scoring): the same bytes as one process."""

from __future__ import annotations

import numpy as np
import pytest
from test_subprocess import run

from nbclass.cli.app import cli
from nbclass.models.estimators import EstimatorSettings


@pytest.fixture(params=["count", "score"])
def small_batches(monkeypatch, request):
    """Workers for any amount of text, and batches of 7 documents (several per worker).
    "score": blocks of 3 documents at 4 classes (as blocks of 52 at 20,000), so that
    the workers score too (ScoredBlocks); gives the list of the ScoredBlocks made."""
    import nbclass.defaults
    import nbclass.models.explain
    import nbclass.models.scoring

    monkeypatch.setattr(nbclass.models.scoring, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(nbclass.defaults, "BATCH_SIZE", 7)  # where predict reads it
    made = []
    if request.param == "score":
        monkeypatch.setattr(nbclass.models.explain, "BLOCK_CELLS", 12)
        scored = nbclass.models.scoring.ScoredBlocks

        class Counted(scored):
            def __init__(self, *args):
                made.append(self)
                super().__init__(*args)

        monkeypatch.setattr(nbclass.models.scoring, "ScoredBlocks", Counted)
    return request.param, made


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
    mode, made = small_batches
    assert not made
    for jobs in ("2", "3"):
        assert _predict(runner, "-m", news_model, test, "-j", jobs, *options) == one
    assert len(made) == (2 if mode == "score" else 0)  # the workers scored, both times


def test_scoring_workers_share_the_corrections_made_before_the_fork(
    runner, news_model, news_sample, monkeypatch
):
    """Weights from the pairs (every model past 0 cells here): the corrections the scoring
    workers add are made once, by the process that forks them, which scores nothing
    itself (before, each worker made its own), and the workers print what one process
    prints."""
    import nbclass.defaults
    import nbclass.models.explain
    import nbclass.models.layout
    import nbclass.models.scoring
    from nbclass.models.sparsity import SparseWeights

    monkeypatch.setattr(nbclass.models.layout, "DENSE_CELLS", 0)
    monkeypatch.setattr(nbclass.models.scoring, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(nbclass.defaults, "BATCH_SIZE", 7)
    monkeypatch.setattr(nbclass.models.explain, "BLOCK_CELLS", 12)
    scorers = []

    class Recorded(nbclass.models.scoring.ScoredBlocks):
        def __init__(self, counted, classifier, *args):
            super().__init__(counted, classifier, *args)
            scorers.append(classifier.scorer)

    monkeypatch.setattr(nbclass.models.scoring, "ScoredBlocks", Recorded)
    test, options = news_sample[1], ["--model", "multinomial"]
    one = _predict(runner, "-m", news_model, test, "-j", "1", *options)
    assert one[0] == 0 and one[1].count("\n") == 120 and not scorers
    assert _predict(runner, "-m", news_model, test, "-j", "2", *options) == one
    [scorer] = scorers
    assert isinstance(scorer.weights, SparseWeights)
    assert scorer.weights._delta is not None and scorer.weights._lengths is not None


def test_the_model_file_is_checked_once_by_the_workers_and_the_loader(
    runner, news_model, news_sample, small_batches, monkeypatch, tmp_path
):
    """Bulk predict in workers reads and parses (checks every checksum of) the model file
    once, in the main process, for the command's first look (QuickModel: a multi-label
    model?): the counting workers and the loader take what it parsed (the command parsed
    it three times more, the 55 MB of a 20,000-class model each time). They print what
    one process prints."""
    import os

    import nbclass.modelfile.counter
    import nbclass.modelfile.fileformat
    import nbclass.modelfile.quick
    import nbclass.modelfile.textfile

    calls = tmp_path / "parsed"
    parse = nbclass.modelfile.fileformat.parse

    def recorded(*args, **kwargs):
        with open(calls, "a") as out:  # from any process: the forked workers too
            out.write(f"{os.getpid()}\n")
        return parse(*args, **kwargs)

    for module in (nbclass.modelfile.fileformat, nbclass.modelfile.counter,
                   nbclass.modelfile.quick, nbclass.modelfile.textfile):  # fmt: skip
        monkeypatch.setattr(module, "parse", recorded)
    test = news_sample[1]
    two = _predict(runner, "-m", news_model, test, "-j", "2")
    assert calls.read_text() == f"{os.getpid()}\n"
    assert two == _predict(runner, "-m", news_model, test, "-j", "1") and two[0] == 0


def test_workers_that_score_write_the_parts_of_one_process(
    runner, news_model, news_sample, small_batches, tmp_path
):
    """--output-dir: a part per block the same in one process and in workers."""
    test = news_sample[1]
    parts = []
    for jobs in ("1", "2"):
        folder = tmp_path / f"parts{jobs}"
        assert _predict(runner, "-m", news_model, test, "-j", jobs, "--output-dir", folder)[0] == 0
        parts.append({p.name: p.read_bytes() for p in folder.iterdir()})
    mode, made = small_batches
    assert len(parts[0]) == (52 if mode == "score" else 18)  # batches of 7: 3 + 3 + 1
    assert parts[0] == parts[1] and len(made) == (mode == "score")


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


@pytest.mark.parametrize("prebuilt", [True, False])
@pytest.mark.parametrize("fit_options", [["--ngram-range", "1,2"], ["--hash-features", "512"]])
def test_workers_count_any_tokenizer_and_any_text(
    runner, news_sample, small_batches, tmp_path, fit_options, prebuilt, monkeypatch
):
    """Models whose tokens are not ASCII runs (bigrams, hashed columns), and texts in
    several scripts: the workers tokenize what they cannot count by runs, with the run
    table built before they are forked (a model of many entries) or by each of them."""
    import nbclass.modelfile.predicting

    monkeypatch.setattr(nbclass.modelfile.predicting, "PREBUILT_ENTRIES", 0 if prebuilt else 10**9)
    model = tmp_path / "model.nbc"
    fitted = runner.invoke(cli, ["fit", str(news_sample[0]), "-o", str(model), "-q", *fit_options])
    assert fitted.exit_code == 0
    folder = tmp_path / "inbox"
    folder.mkdir()
    texts = ["space shuttle orbit", "Gödel's god, über alles", "東京 graphics card", "", "NASA!"]
    for i in range(30):
        (folder / f"{i:03d}.txt").write_text(texts[i % len(texts)] + f" {i}")
    one = _predict(runner, "-m", model, folder, "-j", "1", "--format", "jsonl")
    assert one[0] == 0 and one[1].count("\n") == 30
    assert _predict(runner, "-m", model, folder, "-j", "2", "--format", "jsonl") == one


def test_an_accented_corpus_is_counted_the_same_by_the_workers(runner, small_batches, tmp_path):
    """Texts mixing ASCII and accented words, one process against two: counts known to
    the model (the --explain words) and token numbers (--min-known) agree."""
    train = tmp_path / "train"
    for label, words in (("fr", "café crème été résumé the"), ("en", "coffee cream summer the")):
        (train / label).mkdir(parents=True)
        for i in range(5):
            (train / label / f"{i}.txt").write_text(f"{words} {label}{i}")
    model = tmp_path / "model.nbc"
    # words alone: with the default's word pairs these ten texts choose dcm, which has no
    # --explain; the subject is the counting of accented words by the workers
    words = ["--ngram-range", "1,1"]
    fitted = runner.invoke(cli, ["fit", str(train), "-o", str(model), "-q", *words])
    assert fitted.exit_code == 0
    folder = tmp_path / "inbox"
    folder.mkdir()
    for i in range(25):
        text = ["café coffee", "crème crème cream", "the summer été", "unknown words", "x"][i % 5]
        (folder / f"{i:03d}.txt").write_text(text)
    options = ["--explain", "2", "--format", "jsonl", "--min-known", "3"]
    one = _predict(runner, "-m", model, folder, "-j", "1", *options)
    assert one[0] == 0 and '"few-known-words"' in one[1]  # "café coffee": 2 known tokens
    assert '"no-known-words"' in one[1]  # "unknown words" and "x": none
    assert _predict(runner, "-m", model, folder, "-j", "2", *options) == one


def test_errors_before_the_batches_stop_the_workers(
    runner, news_model, news_sample, small_batches, tmp_path
):
    """A damaged model (found before the workers start) and an unsure label that is a
    class (found after): the error of one process, and no worker left behind."""
    import multiprocessing

    damaged = tmp_path / "damaged.nbc"
    data = bytearray(news_model.read_bytes())
    data[-100] ^= 0xFF
    damaged.write_bytes(bytes(data))
    test = news_sample[1]
    cases = [
        (["-m", damaged, test], 1, "is corrupted"),
        (["-m", news_model, test, "--unsure-label", "sci.space"], 2, "is a class"),
    ]
    for args, code, message in cases:
        one = _predict(runner, *args, "-j", "1")
        assert one[0] == code and one[1] == "" and one[2].count("\n") == 1
        assert message in one[2]
        assert _predict(runner, *args, "-j", "2") == one
        assert multiprocessing.active_children() == []


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


def test_a_main_process_that_never_scores_still_ends(tmp_path, news_model, news_sample):
    """A process that forks its counting workers and stops before it scores, without
    closing its batches, still ends, with its workers."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from nbclass.modelfile.counter import load_counter\n"
        "from nbclass.modelfile.fileformat import read\n"
        "from nbclass.models.scoring import CountedBatches\n"
        "from nbclass.reading.corpus import list_inputs\n"
        "from nbclass.reading.policy import ReadPolicy\n"
        "counter = load_counter(read(sys.argv[1]))\n"
        "batches = CountedBatches(counter, list_inputs([sys.argv[2]]), ReadPolicy(), 3, 7)\n"
        "print('started', flush=True)\n"
        "sys.exit(0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(news_model), str(news_sample[1])],
        capture_output=True, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, b"started\n", b"")


def test_batches_of_short_documents_are_all_counted_ahead(tmp_path):
    """Batches in flight: AHEAD a worker for documents of a few kB, every batch for
    short ones (up to TEXT_AHEAD bytes of text), sized from the files themselves."""
    from nbclass.models.scoring import AHEAD, TEXT_AHEAD, ahead

    short, long = tmp_path / "short", tmp_path / "long"
    short.mkdir()
    long.mkdir()
    for i in range(40):
        (short / f"{i:02d}.txt").write_text("a short one " * 5)  # 60 bytes
        (long / f"{i:02d}.txt").write_text("x" * 4000)
    for i in range(10):
        (tmp_path / f"empty{i}").write_bytes(b"")

    def files(folder, n=40):
        return [(str(p), True) for p in sorted(folder.iterdir())] * (n // 40)

    assert TEXT_AHEAD // 600 < 400_000 // 10  # the text budget, not the number of batches
    assert ahead(files(short, 400_000), 2, 10) == TEXT_AHEAD // 600
    assert ahead(files(short), 2, 10) == 4  # every batch
    assert ahead(files(long, 40_000), 2, 10) == max(AHEAD * 2, TEXT_AHEAD // 40_000)
    assert ahead(files(long, 40_000), 2, 1000) == AHEAD * 2
    empty = [(str(tmp_path / f"empty{i}"), True) for i in range(10)] * 100
    assert ahead(empty, 3, 10) == 100  # nothing to size: every batch, and no more


@pytest.mark.parametrize(
    "overrides",
    [{}, {"model": "multinomial"}, {"model": "complement", "tf": "log", "idf": True},
     {"model": "bernoulli"}, {"model": "multinomial", "norm": "length"}],
)  # fmt: skip
def test_scores_of_news_documents_without_scipy_are_the_sparse_products(
    news_model, news_sample, overrides
):
    """Real documents, rows of hundreds of words: the scores made from the nonzero
    counts with numpy alone are the sparse product's floats, bit for bit (a reduction
    that adds long rows pairwise would differ in the last bits)."""
    from dataclasses import replace

    from nbclass.modelfile.textfile import load
    from nbclass.models.model import Classifier
    from nbclass.text.vectorizer import sorted_entries

    model = load(str(news_model))
    settings = replace(EstimatorSettings(), **overrides) if overrides else model.defaults
    classifier = Classifier(model, settings)
    texts = [p.read_text(errors="replace") for p in sorted(news_sample[1].rglob("*.txt"))]
    X, _ = classifier.count(texts)
    assert np.diff(X.indptr).max() > 100
    coo = X.tocoo()
    entries = sorted_entries(
        coo.row.astype(np.int64), coo.col.astype(np.int64), coo.data.astype(np.int64),
        X.shape[1],
    )  # fmt: skip
    fast = classifier.scorer.entry_scores(*entries, X.shape[0])
    expected = classifier.scorer.joint_log_likelihood(X)
    if classifier.scorer.required is not None:
        assert fast is None
    else:
        assert fast.tobytes() == expected.tobytes()


@pytest.mark.parametrize("fmt", ["tsv", "jsonl"])
def test_a_bulk_predict_in_workers_prints_what_one_process_prints(news_sample, tmp_path, fmt):
    """Workers count, and the main process scores small batches from their entries. The
    model's weights are made from its counts' tables as loaded, not scipy's matrices, so
    the main process imports no scipy.sparse, in either format; the output is the one
    process's either way."""
    import subprocess
    import sys

    model = tmp_path / "m.nbc"
    assert run("fit", news_sample[0], "-o", model, "-q", "--model", "complement").returncode == 0
    script = (
        "import sys\n"
        "import nbclass.defaults, nbclass.models.scoring as scoring\n"
        "scoring.PARALLEL_MIN_BYTES = 0\n"
        "nbclass.defaults.BATCH_SIZE = 7\n"
        "from nbclass.cli.app import cli\n"
        "try:\n"
        "    cli.main(sys.argv[1:], standalone_mode=False)\n"
        "finally:\n"
        "    sys.stderr.write('scipy: %s\\n' % ('scipy.sparse' in sys.modules))\n"
    )
    args = ["predict", "-m", str(model), str(news_sample[1]), "--format", fmt]
    done = subprocess.run(
        [sys.executable, "-c", script, *args, "-j", "2"], capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.decode().endswith("scipy: False\n")
    one = run(*args, "-j", "1")
    assert one.returncode == 0 and done.stdout == one.stdout and one.stdout.count(b"\n") == 120


@pytest.mark.parametrize("features", [[], ["--ngram-range", "1,2"]])
def test_a_bulk_predict_scores_large_batches_as_nbclass_csr_as_scipys(
    news_sample, tmp_path, features
):
    """The main process scores a large batch of a linear scorer's (every batch here:
    NUMPY_PRODUCTS 0) as a CSR of nbclass.counting.csr, not scipy's matrix: the same
    bytes printed, in either format, as with scipy's matrix (entries_csr replaced by
    entries_matrix); and a default model's predict imports no scipy.sparse then, in
    either format: its weights (log tf) and the JSON lines' evidence (a raw multinomial)
    are made from the counts' own tables, not scipy's."""
    import subprocess
    import sys

    model = tmp_path / "m.nbc"
    assert run("fit", news_sample[0], "-o", model, "-q", *features).returncode == 0
    script = (
        "import sys\n"
        "import nbclass.defaults, nbclass.models.scoring as scoring\n"
        "import nbclass.models.explain as explain, nbclass.text.vectorizer as vectorizer\n"
        "scoring.PARALLEL_MIN_BYTES = 0\n"
        "nbclass.defaults.BATCH_SIZE = 40\n"
        "explain.NUMPY_PRODUCTS = 0\n"
        "if sys.argv.pop(1) == 'scipy':\n"
        "    explain.entries_csr = vectorizer.entries_matrix\n"
        "from nbclass.cli.app import cli\n"
        "try:\n"
        "    cli.main(sys.argv[1:], standalone_mode=False)\n"
        "finally:\n"
        "    sys.stderr.write('scipy: %s\\n' % ('scipy.sparse' in sys.modules))\n"
    )
    for fmt in ("tsv", "jsonl"):
        args = ["predict", "-m", str(model), str(news_sample[1]), "--format", fmt, "-j", "2"]
        done = {
            way: subprocess.run([sys.executable, "-c", script, way, *args], capture_output=True,
                                timeout=120)
            for way in ("nbclass", "scipy")
        }  # fmt: skip
        for way in done:
            assert done[way].returncode == 0, done[way].stderr
        assert done["scipy"].stderr.decode().endswith("scipy: True\n")
        assert done["nbclass"].stderr.decode().endswith("scipy: False\n")
        assert done["nbclass"].stdout == done["scipy"].stdout
        assert done["nbclass"].stdout.count(b"\n") == 120


def test_a_worker_forked_after_the_first_batches_still_has_the_counter(
    runner, news_model, news_sample, monkeypatch
):
    """Where a pool forks its workers as they are needed (Python 3.10.0 to 3.10.4 did,
    under fork), one may start after the main process would have let the counter go:
    it must still count. Here the second worker is forked at the third batch."""
    from concurrent.futures import ProcessPoolExecutor

    import nbclass.defaults
    import nbclass.modelfile.predicting
    import nbclass.models.scoring

    spawned = []

    class Lazy(ProcessPoolExecutor):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._safe_to_dynamically_spawn_children = True  # fork as needed
            self.submitted = 0

        def submit(self, *args, **kwargs):
            self.submitted += 1
            return super().submit(*args, **kwargs)

        def _adjust_process_count(self):
            if self.submitted in (1, 3):  # one worker, and the other at the third batch
                spawned.append(self.submitted)
                self._spawn_process()

    monkeypatch.setattr("concurrent.futures.ProcessPoolExecutor", Lazy)
    monkeypatch.setattr(nbclass.models.scoring, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(nbclass.models.scoring, "AHEAD", 1)
    monkeypatch.setattr(nbclass.models.scoring, "TEXT_AHEAD", 0)
    monkeypatch.setattr(nbclass.defaults, "BATCH_SIZE", 7)
    monkeypatch.setattr(nbclass.modelfile.predicting, "PREBUILT_ENTRIES", 0)  # built first
    test = news_sample[1]
    one = _predict(runner, "-m", news_model, test, "-j", "1")
    assert one[0] == 0 and one[1].count("\n") == 120
    assert _predict(runner, "-m", news_model, test, "-j", "2") == one
    assert spawned == [1, 3]
