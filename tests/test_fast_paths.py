"""The faster ways of computing give the very numbers of the plain ones (exact equality,
not a tolerance), and the shortcuts taken for speed are taken exactly when they apply.
The timings themselves are the benchmark's (bench/run.py), never a test's."""

from __future__ import annotations

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
