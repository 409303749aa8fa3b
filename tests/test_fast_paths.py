"""The faster ways of computing give the very numbers of the plain ones (exact equality,
not a tolerance), and the shortcuts taken for speed are taken exactly when they apply.
The timings themselves are the benchmark's (bench/run.py), never a test's."""

from __future__ import annotations

import contextlib
import math
import subprocess
import sys

import numpy as np
import pytest
from conftest import DEMO_CORPUS, REPO
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from nbclass.counting.counts import Counts, as_table
from nbclass.models.estimators import EstimatorSettings
from nbclass.models.posterior import log_posterior
from nbclass.models.textmodels import idf_weights, transformed_counts

SCORES = arrays(
    np.float64,
    st.tuples(st.integers(1, 30), st.integers(1, 25)),
    elements=st.one_of(
        st.floats(-1e6, 1e6, allow_nan=False), st.just(-math.inf), st.floats(-1e-300, 1e-300)
    ),
)


@settings(max_examples=300, deadline=None)
@given(SCORES)
def test_log_posterior_is_scipys_log_softmax_to_the_last_bit(jll):
    """Rows with a finite best score are exactly scipy.special.log_softmax's (the same
    steps, without importing scipy.special); rows every class rules out stay −inf."""
    from scipy.special import log_softmax

    out = log_posterior(jll)
    possible = np.isfinite(jll.max(axis=1))
    assert np.array_equal(out[possible], log_softmax(jll[possible], axis=1))
    assert np.isneginf(out[~possible]).all()


def _dense_transformed_counts(counts: Counts, s: EstimatorSettings) -> np.ndarray:
    """S_jc by the formula over the whole (V, C) arrays (the straightforward way)."""
    T = as_table(counts.token_count).astype(np.float64)
    if s.tf == "log":
        D = as_table(counts.doc_count).astype(np.float64)
        S = np.zeros(T.shape)
        seen = D > 0
        S[seen] = D[seen] * np.log1p(T[seen] / D[seen])
    else:
        S = T
    if s.idf:
        S = S * idf_weights(as_table(counts.doc_count), counts.n_docs)[:, None]
    return S


@st.composite
def counts_of(draw) -> Counts:
    """Counts a corpus could give: T_jc >= D_jc, both zero together, D_jc <= N_c."""
    V, C = draw(st.integers(1, 40)), draw(st.integers(1, 6))
    N = np.array(draw(st.lists(st.integers(1, 50), min_size=C, max_size=C)), dtype=np.int64)
    D = np.zeros((V, C), dtype=np.int64)
    T = np.zeros((V, C), dtype=np.int64)
    for j in range(V):
        for c in range(C):
            d = draw(st.integers(0, int(N[c])))
            D[j, c], T[j, c] = d, d + (draw(st.integers(0, 1000)) if d else 0)
    return Counts(
        classes=tuple(f"c{c}" for c in range(C)),
        vocabulary=tuple(f"w{j:03d}" for j in range(V)),
        class_count=N,
        doc_count=D,
        token_count=T,
    )


@settings(max_examples=150, deadline=None)
@given(counts_of(), st.sampled_from(["raw", "log"]), st.booleans())
def test_transformed_counts_are_the_dense_formulas(counts, tf, idf):
    """Computed on the nonzero counts, S_jc is the dense formula's, value and sign."""
    s = EstimatorSettings(model="complement", tf=tf, idf=idf)
    fast, plain = transformed_counts(counts, s), _dense_transformed_counts(counts, s)
    assert fast.dtype == plain.dtype == np.float64 and fast.shape == plain.shape
    assert np.array_equal(fast, plain)
    assert np.array_equal(np.signbit(fast), np.signbit(plain))


def test_predict_uses_workers_for_many_files_or_much_text(tmp_path, monkeypatch):
    """More than one batch, and either enough files or enough bytes: nothing else."""
    import nbclass.models.scoring as scoring

    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(30):
        (folder / f"{i:02d}.txt").write_text(f"document {i}\n")  # 12 or 13 bytes each
    files = [(str(path), True) for path in sorted(folder.iterdir())]
    monkeypatch.setattr(scoring, "PARALLEL_MIN_BYTES", 10_000)
    monkeypatch.setattr(scoring, "PARALLEL_MIN_FILES", 30)
    assert scoring.worth_parallel(files, 7)  # 30 files: enough of them
    assert not scoring.worth_parallel(files[:29], 7)  # 29 small files, 370 bytes
    assert not scoring.worth_parallel(files, 30)  # one batch only
    monkeypatch.setattr(scoring, "PARALLEL_MIN_BYTES", 300)
    assert scoring.worth_parallel(files[:29], 7)  # enough bytes


def _imported(args: list[str], tmp_path) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "nbclass", *args],
        capture_output=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr.decode()
    return {
        line.split("|")[-1].strip()
        for line in result.stderr.decode().splitlines()
        if line.startswith("import time:")
    }


@pytest.mark.parametrize("options", [["--model", "multinomial"], []])
def test_no_fit_imports_scipy(tmp_path, options):
    """A named fit keeps its counts as numpy arrays (PairTable) and imports no scipy; nor
    does the default fit, which chooses the model with matrices of its own
    (nbclass.counting.csr) and scipy's compiled kernels and special functions loaded
    from their files (nbclass.compiled), neither scipy.sparse nor scipy.special."""
    model = tmp_path / "model.nbc"
    imported = _imported(["fit", str(DEMO_CORPUS), "-o", str(model), "-q", *options], tmp_path)
    assert "numpy" in imported
    assert not [name for name in imported if name.split(".")[0] == "scipy"]


def _whole_table_weights(S, estimator, beta, totals, V, complement):
    """The weights by the formulas over the whole (R, C) table of sums (as they were made
    before the cells)."""
    from nbclass.models.estimators import log_fraction, multinomial_fraction

    S = np.asarray(S, dtype=np.float64)
    if complement:
        S = S.sum(axis=1, keepdims=True) - S
        estimator = "posterior-mean"
    totals = np.asarray(totals, np.float64)
    out = log_fraction(*multinomial_fraction(S, totals, V, estimator, beta))
    return -out if complement else out


def _same_floats(a, b) -> bool:
    """Bit for bit: the values, their signs (of zeros too) and the infinities."""
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(
        a.view(np.int64), b.view(np.int64)
    )


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 40), st.integers(1, 24), st.floats(0.0, 1.0), st.booleans(),
    st.sampled_from(["posterior-mean", "map", "mle"]),
    st.sampled_from([1.0, 0.5, 1e-4, 0.0, 2.5, 0.3]), st.integers(0, 3), st.integers(0, 2**32),
    st.integers(1, 50),
)  # fmt: skip
def test_weights_from_the_nonzero_cells_are_the_whole_tables(
    R, C, density, integers, estimator, beta, totals_kind, seed, block
):
    """log θ_jc (multinomial) and −log θ̃_jc (complement) made from the nonzero sums alone
    (the cells of every word and class with S_jc = 0 take one log a class, or a word),
    a ``block`` of rows at a time, are the formulas over the whole table, to the last
    bit: zeros' signs, −∞ where a numerator or a class's denominator is not positive."""
    from nbclass.models.estimators import cell_log_fractions, multinomial_log_theta
    from nbclass.models.textmodels import complement_weights, multinomial_weights

    rng = np.random.default_rng(seed)
    T = (rng.random((R, C)) < density) * rng.integers(1, 1000, (R, C))
    S = T if integers else np.where(T > 0, T * np.log1p(rng.random((R, C))), 0.0)
    totals = S.sum(axis=0) * [1.0, 1.5, 1.0, 1.0][totals_kind]
    if totals_kind == 2:
        totals[0] = 0.0  # a class with no estimate
    if totals_kind == 3:
        totals[-1] = -1.0
    V = R + int(rng.integers(0, 10**5))
    with np.errstate(all="ignore"):
        for complement in (False, True):
            plain = _whole_table_weights(S, estimator, beta, totals, V, complement)
            flat = np.flatnonzero(S)
            values = S.ravel()[flat].astype(np.float64)
            sums = S.astype(np.float64).sum(axis=1) if complement else None
            kept = values.copy()
            with _cells_from(1, block * C):
                fast = cell_log_fractions(S.shape, flat, values, estimator, beta, totals, V, sums)
            assert fast.flags.c_contiguous and _same_floats(fast, plain)
            assert _same_floats(values, kept)  # (the caller's cells, not changed)
        with _cells_from(1, block * C):  # the functions' own paths through the cells
            fast = multinomial_weights(S.astype(np.float64), estimator, beta, totals, V)
            assert _same_floats(fast, _whole_table_weights(S, estimator, beta, totals, V, False))
            fast = complement_weights(S.astype(np.float64), beta, totals, V)
            assert _same_floats(fast, _whole_table_weights(S, "", beta, totals, V, True))
            fast = multinomial_log_theta(T, estimator, beta, totals, V)
            assert _same_floats(fast, _whole_table_weights(T, estimator, beta, totals, V, False))


@contextlib.contextmanager
def _cells_from(cells: int, block: int | None = None):
    """Weights made from the nonzero cells from tables of ``cells`` cells (1: always;
    2**62: never), the words' sums of transformed sums and the weights' cells a ``block``
    of cells at a time."""
    import nbclass.models.estimators as E
    import nbclass.models.posterior as P
    import nbclass.models.textmodels as TM

    saved = (E.CELL_FRACTIONS, TM.CELL_FRACTIONS, P.CELL_FRACTIONS, TM.SUM_BLOCK_CELLS,
             E.FRACTION_BLOCK_CELLS, P.FRACTION_BLOCK_CELLS, TM.FRACTION_BLOCK_CELLS)  # fmt: skip
    E.CELL_FRACTIONS = TM.CELL_FRACTIONS = P.CELL_FRACTIONS = cells
    TM.SUM_BLOCK_CELLS = block or saved[3]
    E.FRACTION_BLOCK_CELLS = P.FRACTION_BLOCK_CELLS = TM.FRACTION_BLOCK_CELLS = block or saved[4]
    try:
        yield
    finally:
        E.CELL_FRACTIONS, TM.CELL_FRACTIONS, P.CELL_FRACTIONS, TM.SUM_BLOCK_CELLS = saved[:4]
        E.FRACTION_BLOCK_CELLS, P.FRACTION_BLOCK_CELLS, TM.FRACTION_BLOCK_CELLS = saved[4:]


SCORED = [
    EstimatorSettings(model="multinomial"),
    EstimatorSettings(model="complement", class_prior=False),
    EstimatorSettings(model="multinomial", estimator="map", beta=(2.5, 2.5)),
    EstimatorSettings(model="multinomial", estimator="mle"),
    EstimatorSettings(model="complement", beta=(0.25, 0.25)),
    EstimatorSettings(model="multinomial", tf="log", prior_fit=True),
    EstimatorSettings(model="complement", tf="log", class_prior=False),
    EstimatorSettings(model="complement", tf="log", prior_fit=True),
    EstimatorSettings(model="multinomial", tf="log", idf=True, estimator="map", beta=(1.5, 1.5)),
    EstimatorSettings(model="complement", idf=True, norm="length"),
    EstimatorSettings(model="bernoulli"),
    EstimatorSettings(model="bernoulli", estimator="mle", class_prior=False),
    EstimatorSettings(model="dcm"),
    EstimatorSettings(model="dcm", prior_fit=True),
]


@settings(max_examples=60, deadline=None)
@given(counts_of(), st.booleans(), st.integers(0, 2**32), st.integers(1, 9))
def test_a_folds_scorer_from_the_cells_is_the_whole_tables(counts, sparse, seed, block):
    """The scorer of some words of sparse (or dense) counts, as the choice makes its
    folds', has the weights and bias the whole-table formulas give, bit for bit, the
    words' sums of transformed sums summed in blocks of any size."""
    import scipy.sparse

    from nbclass.counting.csr import CSR
    from nbclass.models.posterior import make_scorer
    from nbclass.models.textmodels import _DERIVED

    if sparse:
        counts = Counts(
            classes=counts.classes, vocabulary=counts.vocabulary,
            class_count=counts.class_count,
            doc_count=CSR.of(scipy.sparse.csr_matrix(counts.doc_count)),
            token_count=CSR.of(scipy.sparse.csr_matrix(counts.token_count)),
        )  # fmt: skip
    rng = np.random.default_rng(seed)
    V, C = len(counts.vocabulary), len(counts.classes)
    rows = np.flatnonzero(rng.random(V) < 0.7)
    for s in SCORED:
        _DERIVED.pop(counts, None)
        with _cells_from(1, block * C):
            fast = make_scorer(counts, s, rows=rows)
        _DERIVED.pop(counts, None)
        with _cells_from(2**62):
            plain = make_scorer(counts, s, rows=rows)
        assert fast.weights.flags.c_contiguous and _same_floats(fast.weights, plain.weights)
        assert _same_floats(fast.bias, plain.bias)
        if s.model == "dcm":
            assert _same_floats(fast.concentration, plain.concentration)
            continue
        assert (fast.idf is None) == (plain.idf is None)
        assert fast.idf is None or _same_floats(fast.idf, plain.idf)
        assert (fast.required is None) == (plain.required is None)  # (Bernoulli's θ = 1)
        assert fast.required is None or np.array_equal(
            fast.required.toarray(), plain.required.toarray()
        )  # fmt: skip


@pytest.mark.parametrize("C", [1, 7, 9, 17, 20, 33])
@pytest.mark.parametrize("block", [1, 3, 1000])
def test_the_cells_sums_are_the_tables_row_sums(C, block):
    """A word's sum of transformed sums S_j is the float the (R, C) table's sum(axis=1)
    gives (numpy adds a row of 8 or more in eight running sums: not the order of its
    nonzero cells), whatever the block of rows summed at a time; the cells are the
    table's nonzero cells in order."""
    from nbclass.models.textmodels import _DERIVED, transformed_cells

    rng = np.random.default_rng(C * 1000 + block)
    V = 3000
    D = (rng.random((V, C)) < 0.6) * rng.integers(1, 9, (V, C))
    T = D * rng.integers(1, 7, (V, C))
    counts = Counts(
        classes=tuple(f"c{c}" for c in range(C)), vocabulary=tuple(f"w{j}" for j in range(V)),
        class_count=D.max(axis=0) + 1, doc_count=D, token_count=T,
    )  # fmt: skip
    rows = np.flatnonzero(rng.random(V) < 0.5)
    s = EstimatorSettings(model="complement", tf="log")
    with _cells_from(1, block * C):
        flat, values, sums = transformed_cells(counts, s, rows)
    _DERIVED.pop(counts, None)
    S = transformed_counts(counts, s, rows)
    assert _same_floats(sums, S.sum(axis=1))
    assert np.array_equal(flat, np.flatnonzero(S)) and _same_floats(values, S.ravel()[flat])
