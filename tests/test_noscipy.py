"""A named fit needs no scipy: its counts are numpy tables (PairTable), summed by numpy.

The subprocess tests run the real command with an import hook that refuses scipy (and
says so on stderr, so an import tried and caught is seen too); the unit tests check the
numpy table and sums against scipy's own.
"""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import REPO, assert_changes_write_fresh_fits, big_corpus
from hypothesis import given, settings
from hypothesis import strategies as st

import nbclass.counting.counts
from nbclass.counting.counts import (
    Counts,
    count_sums,
    counts_of_pairs,
    numpy_sum_pairs,
    scipy_sum_pairs,
    sum_pairs,
)
from nbclass.counting.pairtable import PairTable

# The command's main with scipy (or the package sys.argv[1] names) refused: any import
# of it is reported and fails.
BLOCKED = """
import sys

REFUSED = sys.argv.pop(1)


class NoScipy:
    def find_spec(self, name, path=None, target=None):
        if name == REFUSED or name.startswith(REFUSED + "."):
            sys.stderr.write("scipy import: " + name + "\\n")
            raise ImportError("scipy is blocked: " + name)
        return None


sys.meta_path.insert(0, NoScipy())
sys.argv = ["nbclass", *sys.argv[1:]]
from nbclass.cli.entry import main

main()
"""


def run(*args, blocked: bool, refused: str = "scipy") -> subprocess.CompletedProcess:
    code = ["-c", BLOCKED, refused] if blocked else ["-m", "nbclass"]
    return subprocess.run([sys.executable, *code, *map(str, args)], capture_output=True,
                          cwd=REPO, timeout=600)  # fmt: skip


NAMED_MODELS = [
    ["multinomial"], ["bernoulli", "--prior-fit"], ["complement"], ["dcm", "--prior-fit"],
    ["complement", "--tf", "log", "--idf", "--prior-fit", "--norm", "weight"],
]  # fmt: skip


@pytest.mark.parametrize("model", NAMED_MODELS)
def test_a_named_fit_imports_no_scipy_and_writes_the_same_bytes(news_sample, tmp_path, model):
    """One process (-j 1): the counts summed, filtered and written without scipy, and
    what the file keeps beside them: a fitted β, the transformed totals and norms."""
    args = (news_sample[0], "--model", *model, "-j", "1", "--min-df", "2", "--max-features", "800")
    assert run("fit", *args, "-o", tmp_path / "plain.nbc", blocked=False).returncode == 0
    done = run("fit", *args, "-o", tmp_path / "blocked.nbc", blocked=True)
    assert done.returncode == 0, done.stderr.decode()
    assert b"scipy" not in done.stderr
    assert (tmp_path / "blocked.nbc").read_bytes() == (tmp_path / "plain.nbc").read_bytes()


def test_a_named_fit_with_workers_imports_no_scipy_meanwhile(tmp_path):
    """Two worker processes (a corpus past PARALLEL_MIN_BYTES): the main process's thread
    that runs while they count does not import scipy either (it did, for the counts)."""
    corpus = big_corpus(tmp_path / "big", 4)  # 4.8 MB
    args = (corpus, "--model", "multinomial", "-j", "2", "--ngram-range", "1,2")
    assert run("fit", *args, "-o", tmp_path / "plain.nbc", blocked=False).returncode == 0
    done = run("fit", *args, "-o", tmp_path / "blocked.nbc", blocked=True)
    assert done.returncode == 0, done.stderr.decode()
    assert b"scipy" not in done.stderr
    assert (tmp_path / "blocked.nbc").read_bytes() == (tmp_path / "plain.nbc").read_bytes()


@pytest.mark.parametrize("model", [
    ["complement"],
    # what the file keeps beside the counts, which its load checks against them: the
    # transformed class totals and a fitted beta, scaled (complement) or not (multinomial)
    ["complement", "--tf", "log", "--idf", "--prior-fit", "--norm", "weight"],
    ["multinomial", "--prior-fit"],
])  # fmt: skip
def test_update_merge_and_unlearn_of_named_models_import_no_scipy(news_sample, tmp_path, model):
    """A named model updated, merged and unlearned (without a ledger) under the hook
    writes the fresh fits' bytes, and none of the three imports scipy, with a transform
    and a fitted beta too (the load's check of the beta took the raw token total from
    scipy's matrix)."""
    import shutil

    halves = {"a": tmp_path / "a", "b": tmp_path / "b", "all": tmp_path / "all"}
    for k, path in enumerate(sorted(p for p in news_sample[0].rglob("*") if p.is_file())):
        for half in ("ab"[k % 2], "all"):
            target = halves[half] / path.parent.name / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
    models = {half: tmp_path / f"{half}.nbc" for half in halves}
    for half, corpus in halves.items():
        done = run("fit", corpus, "--model", *model, "-o", models[half], "-q", blocked=False)
        assert done.returncode == 0
    stderr = []

    def blocked(*args):
        done = run(*args, blocked=True)
        stderr.append(done.stderr)
        return done

    assert_changes_write_fresh_fits(blocked, halves["b"], models["all"], models["a"], models["b"])
    assert len(stderr) == 3 and b"scipy" not in b"".join(stderr)


def test_a_default_fit_chooses_without_importing_scipy_sparse(news_sample, tmp_path):
    """A default fit's choice (the sample's matrix, the folds, every candidate's held-out
    scores, the calibration) computes with nbclass.counting.csr, never scipy.sparse (the
    package and every module under it refused; nbclass.compiled loads the file of
    scipy.sparse._sparsetools without importing the package, which no hook sees), and
    writes the bytes it writes without the hook."""
    args = ("fit", news_sample[0], "-j", "1")
    assert run(*args, "-o", tmp_path / "plain.nbc", blocked=False).returncode == 0
    done = run(*args, "-o", tmp_path / "blocked.nbc", blocked=True, refused="scipy.sparse")
    assert done.returncode == 0, done.stderr.decode()
    assert b"scipy import" not in done.stderr
    assert b"chose " in done.stderr  # (the default fit chose)
    assert (tmp_path / "blocked.nbc").read_bytes() == (tmp_path / "plain.nbc").read_bytes()


@pytest.mark.parametrize("fmt", [["--format", "tsv"], ["--format", "jsonl", "--top-k", "2"]])
def test_predict_of_a_folder_in_one_process_imports_no_scipy_sparse(news_sample, tmp_path, fmt):
    """Predict in its own process (one job, or a folder too small for workers) counts the
    documents into entries and scores them as the workers' batches are scored
    (nbclass.models.explain.texts_scored), never importing scipy.sparse (0.12-0.17 s of
    CPU, half of a predict of a few files): the lines printed are those printed without
    the hook."""
    model = tmp_path / "model.nbc"
    assert run("fit", news_sample[0], "-o", model, "-j", "1", blocked=False).returncode == 0
    args = ("predict", "-m", model, news_sample[0], "-j", "1", *fmt)
    plain = run(*args, blocked=False)
    done = run(*args, blocked=True, refused="scipy.sparse")
    assert plain.returncode == 0 and done.returncode == 0, done.stderr.decode()
    assert b"scipy import" not in done.stderr
    assert done.stdout == plain.stdout and plain.stdout.count(b"\n") > 20


# BLOCKED (scipy.sparse refused, or nothing: "none") with the weights of every candidate
# of the choice made from the nonzero pairs (sparsity.SparseWeights), as past
# DENSE_CELLS (many classes) they are.
SPARSE_LAYOUT = BLOCKED.replace(
    "from nbclass.cli.entry import main",
    "import nbclass.models.layout\n\nnbclass.models.layout.DENSE_CELLS = 256\n"
    "from nbclass.cli.entry import main",
)


def test_a_default_fit_scoring_from_the_pairs_imports_no_scipy_sparse(news_sample, tmp_path):
    """The choice's candidates with weights from the nonzero pairs (SparseWeights, their
    corrections, the DCM's and Bernoulli's sparse tables) compute with
    nbclass.counting.csr too: the fit writes the bytes it writes without the hook."""
    out = {}
    for refused in ("none", "scipy.sparse"):
        out[refused] = tmp_path / f"{refused}.nbc"
        done = subprocess.run(
            [sys.executable, "-c", SPARSE_LAYOUT, refused, "fit", str(news_sample[0]), "-j", "1",
             "-o", str(out[refused])], capture_output=True, cwd=REPO, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr.decode()
        assert b"scipy import" not in done.stderr and b"chose " in done.stderr
    assert out["none"].read_bytes() == out["scipy.sparse"].read_bytes()


def test_the_import_hook_sees_what_needs_scipy(news_sample, tmp_path):
    """The check above can fail: a fit that scores (the default's choice) is refused."""
    done = run("fit", news_sample[0], "-o", tmp_path / "auto.nbc", "-j", "1", blocked=True)
    assert done.returncode != 0
    assert b"scipy import: scipy" in done.stderr


def test_a_default_fit_takes_scipys_special_functions_without_importing_scipy_special(
    news_sample, tmp_path,
):  # fmt: skip
    """The default fit's choice (the DCM's lnΓ and ψ, the mutual information's x log y and
    relative entropy, the calibration's log softmax) and its import while the documents
    are counted take scipy's special functions from :mod:`nbclass.compiled`: with
    ``scipy.special`` refused (scipy.sparse let through, and ``find_spec("scipy")``,
    which locates the compiled modules loaded from their files), it writes the bytes
    it writes with scipy.special at hand."""
    args = ("fit", news_sample[0], "-j", "1")
    assert run(*args, "-o", tmp_path / "plain.nbc", blocked=False).returncode == 0
    done = run(*args, "-o", tmp_path / "blocked.nbc", blocked=True, refused="scipy.special")
    assert done.returncode == 0, done.stderr.decode()
    assert b"scipy import" not in done.stderr
    assert (tmp_path / "blocked.nbc").read_bytes() == (tmp_path / "plain.nbc").read_bytes()


# The library's fit of a named model, and its save, with scipy refused where the first
# argument is "blocked" (docs/python.md: "a fit of a named model ... needs numpy alone").
API_FIT = """
import sys

if sys.argv[1] == "blocked":
    sys.meta_path.insert(0, type("NoScipy", (), {"find_spec": staticmethod(
        lambda name, *rest: sys.exit("scipy import: " + name)
        if name.split(".")[0] == "scipy" else None)})())
import nbclass

texts = [open(p, encoding="utf-8", errors="replace").read() for p in sys.argv[4:]]
labels = [p.split("/")[-2] for p in sys.argv[4:]]
nbclass.fit(texts, labels, jobs=1, **eval(sys.argv[3])).save(sys.argv[2])
"""


@pytest.mark.parametrize("options", [
    {"model": "multinomial"},
    {"model": "complement", "tf": "log", "idf": True, "prior_fit": True, "norm": "weight"},
])  # fmt: skip
def test_the_library_fits_and_saves_a_named_model_without_scipy(news_sample, tmp_path,
                                                                 options):  # fmt: skip
    """nbclass.fit of a named model imports no scipy and saves the bytes it saves with
    scipy at hand; with model "auto" (the choice) the same script is refused, so the
    check can fail."""
    paths = sorted(str(p) for p in news_sample[0].rglob("*") if p.is_file())

    def api_fit(blocked: str, name: str, options: dict) -> subprocess.CompletedProcess:
        args = ["-c", API_FIT, blocked, tmp_path / name, repr(options), *paths]
        return subprocess.run([sys.executable, *args], capture_output=True, cwd=REPO,
                              timeout=600)  # fmt: skip

    assert api_fit("plain", "plain.nbc", options).returncode == 0
    done = api_fit("blocked", "blocked.nbc", options)
    assert done.returncode == 0, done.stderr.decode()
    assert (tmp_path / "blocked.nbc").read_bytes() == (tmp_path / "plain.nbc").read_bytes()
    refused = api_fit("blocked", "auto.nbc", {"model": "auto"})
    assert refused.returncode != 0 and b"scipy import: scipy" in refused.stderr


# --- numpy's sums of the pairs against scipy's conversion -----------------------------------

def _pairs(draw, n_rows, n_cols, index, values):
    n = draw(st.integers(0, 60))
    rows = draw(st.lists(st.integers(0, n_rows - 1), min_size=n, max_size=n))
    cols = draw(st.lists(st.integers(0, n_cols - 1), min_size=n, max_size=n))
    docs = draw(st.lists(values, min_size=n, max_size=n))
    tokens = draw(st.lists(values, min_size=n, max_size=n))
    return (np.array(rows, dtype=index), np.array(cols, dtype=index),
            np.array(docs, dtype=np.int64), np.array(tokens, dtype=np.int64))  # fmt: skip


@st.composite
def pair_lists(draw):
    n_rows, n_cols = draw(st.integers(1, 40)), draw(st.integers(1, 12))
    index = draw(st.sampled_from([np.int32, np.int64]))
    values = draw(st.sampled_from([
        st.integers(0, 7),  # small counts: packed with the keys in one uint64
        st.integers(0, 2**40),  # too wide to pack: sorted by argsort
        st.integers(-5, 5),  # negative counts: by argsort
        st.integers(-(2**62), 2**62),  # sums that wrap round in int64, as scipy's do
    ]))  # fmt: skip
    return (n_rows, n_cols, *_pairs(draw, n_rows, n_cols, index, values))


@settings(max_examples=400)
@given(pair_lists())
def test_numpy_sums_of_pairs_are_scipys(pairs):
    n_rows, n_cols, rows, cols, docs, tokens = pairs
    expected = scipy_sum_pairs(n_rows, n_cols, rows, cols, docs, tokens)
    got = numpy_sum_pairs(n_rows, n_cols, rows, cols, docs, tokens)
    for a, b in zip(got, expected):
        assert a.dtype == b.dtype
        assert a.tolist() == b.tolist()


def test_numpy_sums_of_pairs_edge_cases():
    empty = np.zeros(0, dtype=np.int64)
    indptr, cols, docs, tokens = numpy_sum_pairs(3, 2, empty, empty, empty, empty)
    assert indptr.tolist() == [0, 0, 0, 0] and cols.size == docs.size == tokens.size == 0
    assert docs.dtype == tokens.dtype == np.int64
    # one row, every pair three times, in reverse order; a pair whose sums are 0 is kept
    rows, cols = np.zeros(6, dtype=np.int32), np.array([2, 1, 0, 2, 1, 0], dtype=np.int32)
    docs, tokens = np.array([1, 0, 2, 3, 0, 4]), np.array([5, 0, 6, 7, 0, 8])
    got = numpy_sum_pairs(1, 3, rows, cols, docs, tokens)
    assert [a.tolist() for a in got] == [[0, 3], [0, 1, 2], [6, 0, 4], [14, 0, 12]]
    assert [a.dtype for a in got] == [np.int32, np.int32, np.int64, np.int64]


@pytest.mark.parametrize("at_most, imported, summer", [
    (0, True, "scipy_sum_pairs"),  # more pairs than NUMPY_SUM_PAIRS: scipy's conversion
    (10**9, True, "scipy_sum_pairs"),  # scipy imported already: its conversion
    (10**9, False, "numpy_sum_pairs"),  # neither: numpy's sort
])  # fmt: skip
def test_sum_pairs_takes_numpy_or_scipy_as_it_says(monkeypatch, at_most, imported, summer):
    """sum_pairs sums by numpy where the pairs are at most NUMPY_SUM_PAIRS and neither
    scipy's compiled kernels are loaded nor scipy.sparse imported, else by scipy's
    conversion: the same arrays. (This module imports scipy and loads the kernels, so
    the last case takes scipy.sparse out of sys.modules and says the kernels are not
    loaded while it runs.)"""
    counts = nbclass.counting.counts
    rng = np.random.default_rng(5)
    rows, cols = rng.integers(0, 500, 20_000), rng.integers(0, 30, 20_000)
    docs, tokens = rng.integers(1, 3, 20_000), rng.integers(1, 9, 20_000)
    expected = scipy_sum_pairs(500, 30, rows, cols, docs, tokens)
    called = []

    def recorded(name):
        real = getattr(counts, name)
        return lambda *args: (called.append(name), real(*args))[1]

    for name in ("numpy_sum_pairs", "scipy_sum_pairs"):
        monkeypatch.setattr(counts, name, recorded(name))
    monkeypatch.setattr(counts, "NUMPY_SUM_PAIRS", at_most)
    if not imported:
        monkeypatch.delitem(sys.modules, "scipy.sparse")
        monkeypatch.setattr(counts, "sparsetools_loaded", lambda: False)
    got = sum_pairs(500, 30, rows, cols, docs, tokens)
    monkeypatch.undo()
    assert called == [summer]
    for a, b in zip(got, expected):
        assert a.dtype == b.dtype and np.array_equal(a, b)


# --- PairTable ------------------------------------------------------------------------------

@st.composite
def tables(draw):
    V, C = draw(st.integers(0, 12)), draw(st.integers(1, 6))
    dtype = draw(st.sampled_from([np.uint8, np.uint16, np.int32, np.int64]))
    info = np.iinfo(dtype)
    high = int(info.max) if dtype != np.int64 else 2**56  # (every sum below 2^63)
    cells = draw(st.lists(st.integers(0, high), min_size=V * C, max_size=V * C))
    holes = draw(st.lists(st.booleans(), min_size=V * C, max_size=V * C))
    dense = np.array([0 if h else x for x, h in zip(cells, holes)], dtype=dtype).reshape(V, C)
    csr = sp.csr_matrix(dense)
    csr.sort_indices()
    index = draw(st.sampled_from([np.int32, np.int64]))
    table = PairTable(csr.data, csr.indices.astype(index), csr.indptr.astype(index), (V, C))
    return dense, table


@settings(max_examples=300)
@given(tables(), st.data())
def test_a_pair_table_sums_rows_and_densifies_as_scipy_and_numpy_do(drawn, data):
    dense, table = drawn
    V, C = dense.shape
    exact = [np.array(dense.tolist(), dtype=object).reshape(V, C).sum(axis=a) for a in (0, 1)]
    for axis in (0, 1):  # exact integers (below 2^63: no wrapping in these tables)
        assert table.sum(axis).dtype == np.int64
        assert table.sum(axis).tolist() == [int(x) for x in np.asarray(exact[axis]).reshape(-1)]
        assert count_sums(table, axis).tolist() == table.sum(axis).tolist()
    assert table.sum() == int(dense.astype(object).sum())
    assert table.toarray().dtype == dense.dtype and np.array_equal(table.toarray(), dense)
    rows = np.array(data.draw(st.lists(st.integers(0, max(V - 1, 0)), max_size=8) if V else
                              st.just([])), dtype=np.int64)  # fmt: skip
    taken = table[rows]
    assert taken.shape == (rows.size, C) and np.array_equal(taken.toarray(), dense[rows])
    expected = sp.csr_matrix(dense)[rows]
    expected.sort_indices()
    assert taken.indptr.tolist() == expected.indptr.tolist()
    assert taken.indices.tolist() == expected.indices.tolist()
    assert np.array_equal(table[1:].toarray(), dense[1:])


def test_pair_table_sums_of_64_bit_counts_are_exact():
    """Sums past 2^53 (where float64 is inexact) and up to 2^63 - 1, by columns and rows."""
    big = 2**61 + 1
    table = PairTable(np.array([big, big, 3, big], dtype=np.int64), np.array([0, 1, 0, 0]),
                      np.array([0, 2, 3, 4]), (3, 2))  # fmt: skip
    assert table.sum(0).tolist() == [2 * big + 3, big]
    assert table.sum(1).tolist() == [2 * big, 3, big]
    assert table.sum(0).tolist() == np.asarray(table.tocsr().sum(axis=0)).ravel().tolist()


def test_a_pair_table_becomes_one_scipy_matrix_of_the_same_arrays():
    table = PairTable(np.array([2, 7], dtype=np.uint16), np.array([1, 0], dtype=np.int32),
                      np.array([0, 1, 1, 2], dtype=np.int32), (3, 2))  # fmt: skip
    csr = table.tocsr()
    assert table.tocsr() is csr
    assert csr.has_canonical_format and csr.toarray().tolist() == [[0, 2], [0, 0], [7, 0]]
    assert all(np.shares_memory(getattr(csr, a), getattr(table, a))
               for a in ("data", "indices", "indptr"))  # fmt: skip
    again = pickle.loads(pickle.dumps(table))
    assert again._csr is None and np.array_equal(again.toarray(), table.toarray())
    with pytest.raises(TypeError):
        table[np.array([[0]])]
    for outside in (-1, 3):
        with pytest.raises(IndexError):
            table[np.array([0, outside])]


# --- Counts keep the tables and give scipy's matrices on demand ---------------------------------

def test_counted_counts_keep_pair_tables_and_give_one_csr_of_them():
    counts = counts_of_pairs(("a", "b"), ("x", "y", "z"), np.array([2, 1]),
                             np.array([0, 0, 2]), np.array([0, 1, 1]),
                             np.array([1, 1, 1]), np.array([3, 2, 4]))  # fmt: skip
    assert type(counts.doc_table) is PairTable and type(counts.token_table) is PairTable
    assert counts.class_tokens.tolist() == [3, 6] and counts.word_tokens.tolist() == [5, 0, 4]
    D = counts.doc_count
    assert sp.issparse(D) and D.format == "csr" and counts.doc_count is D
    assert np.shares_memory(D.data, counts.doc_table.data)
    assert counts.token_count.toarray().tolist() == [[3, 2], [0, 0], [0, 4]]
    assert counts.problems() == []
    restricted = counts.restrict(np.array([0, 2]))
    assert type(restricted.doc_table) is PairTable
    assert restricted.token_count.toarray().tolist() == [[3, 2], [0, 4]]
    with pytest.raises(AttributeError):  # frozen
        counts.doc_count = D


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), min_size=3, max_size=3), min_size=1, max_size=12),
       st.lists(st.booleans(), min_size=12, max_size=12), st.booleans())  # fmt: skip
def test_restrict_by_a_mask_gives_the_rows_the_tables_select(cells, kept, shuffled):
    """Counts.restrict of strictly increasing rows (taken by a mask, D and T by one
    selection of their shared pairs) gives the words, arrays and types the tables' own
    row selection gives; other rows (here: reversed) are taken by that selection."""
    V = len(cells)
    docs = np.array(cells, dtype=np.int64)
    tokens = docs * 2 + (docs > 0)  # T_jc >= D_jc, zero where D_jc is
    words = tuple(f"w{j:02d}" for j in range(V))
    counts = counts_of_pairs(("a", "b", "c"), words, docs.sum(axis=0) + 3,
                             *np.nonzero(docs), docs[docs > 0], tokens[docs > 0])  # fmt: skip
    D, T = counts.doc_table, counts.token_table
    assert D.indptr is T.indptr and D.indices is T.indices  # (the pattern shared)
    rows = np.flatnonzero(kept[:V])
    if shuffled:
        rows = rows[::-1]
    restricted = counts.restrict(rows)
    assert restricted.vocabulary == tuple(words[j] for j in rows.tolist())
    for got, table in ((restricted.doc_table, D), (restricted.token_table, T)):
        expected = table[rows]
        assert type(got) is PairTable and got.shape == expected.shape
        for name in ("data", "indices", "indptr"):
            a, b = getattr(got, name), getattr(expected, name)
            assert a.dtype == b.dtype and a.tolist() == b.tolist()
    dense = Counts(counts.classes, words, counts.class_count, docs, tokens)
    assert dense.restrict(rows).equals(restricted)
    assert restricted.token_count.toarray().tolist() == tokens[rows].tolist()


def test_threads_reading_a_tables_matrix_at_once_get_one(monkeypatch):
    """Eight threads reading doc_count at once (the choice's threads, a service's
    requests) get one scipy matrix, made once (54a28f5's lock); the matrix's making is
    slowed so that, without the lock, every thread would make its own."""
    import threading
    import time

    made = []
    real = sp.csr_matrix

    def slow(*args, **kwargs):
        made.append(threading.get_ident())
        time.sleep(0.05)
        return real(*args, **kwargs)

    monkeypatch.setattr(sp, "csr_matrix", slow)
    counts = counts_of_pairs(("a", "b"), ("x", "y"), np.array([1, 1]), np.array([0, 1]),
                             np.array([0, 1]), np.array([1, 1]), np.array([2, 3]))  # fmt: skip
    start, got = threading.Barrier(8), []

    def read():
        start.wait()
        got.append(counts.doc_count)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1 and len(got) == 8 and all(matrix is got[0] for matrix in got)
    assert got[0].toarray().tolist() == [[1, 0], [0, 1]]


def test_counts_given_dense_or_scipy_tables_keep_them():
    dense = Counts(("a",), ("x",), np.array([1]), doc_count=np.array([[1]]),
                   token_count=np.array([[2]]))  # fmt: skip
    assert type(dense.doc_count) is np.ndarray and dense.doc_table is dense.doc_count
    csr = sp.csr_matrix(np.array([[2]]))
    given_csr = Counts(("a",), ("x",), np.array([1]), sp.csr_matrix(np.array([[1]])), csr)
    assert given_csr.token_count is csr and given_csr.equals(dense)
    with pytest.raises(TypeError):  # both tables are required
        Counts(("a",), ("x",), np.array([1]))
