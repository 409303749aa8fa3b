"""scipy's compiled kernels loaded from their files (:mod:`nbclass.compiled`): the same
functions as scipy's packages give, bit for bit, without importing those packages."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.special
from conftest import REPO

import nbclass.compiled as compiled

# Arguments across every range the fit meets: concentrations from 1e-12 to 1e12, the
# roots of lnΓ at 1 and 2, ψ's root near 1.4616, negatives and special values.
ARGUMENTS = np.concatenate([
    np.geomspace(1e-12, 1e12, 20_001), np.linspace(0.5, 2.5, 20_001),
    -np.geomspace(1e-3, 1e3, 1001), [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 2.0],
])  # fmt: skip


def bits(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).view(np.uint64)


@pytest.mark.parametrize("ours, theirs", [
    (compiled.gammaln, scipy.special.gammaln), (compiled.digamma, scipy.special.digamma),
    (compiled.expit, scipy.special.expit),
])  # fmt: skip
def test_special_functions_are_scipys_to_the_bit(ours, theirs):
    with np.errstate(all="ignore"):
        assert np.array_equal(bits(ours(ARGUMENTS)), bits(theirs(ARGUMENTS)))


def test_xlogy_is_scipys_to_the_bit():
    x = np.concatenate([ARGUMENTS[:5000], [0.0, 0.0, 0.0, 1.0]])
    y = np.concatenate([ARGUMENTS[-5000:], [0.0, np.inf, np.nan, 0.0]])
    with np.errstate(all="ignore"):
        assert np.array_equal(bits(compiled.xlogy(x, y)), bits(scipy.special.xlogy(x, y)))
    assert compiled.xlogy(0.0, 0.0) == 0.0 and np.isnan(compiled.xlogy(0.0, np.nan))


def test_rel_entr_takes_scipys_cases_and_is_within_ulps_of_it():
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.random(50_000), rng.random(50_000) * 1e-300, [0.0, 0.0, 1.0, -1.0,
                        np.nan, 1.0, 1e300, 1e-300, 0.3]])  # fmt: skip
    y = np.concatenate([rng.random(50_000), rng.random(50_000), [0.0, 0.5, 0.0, 0.5, 0.5,
                        np.nan, 1e-300, 1e300, 0.3]])  # fmt: skip
    ours, theirs = compiled.rel_entr(x, y), scipy.special.rel_entr(x, y)
    assert np.array_equal(np.isnan(ours), np.isnan(theirs))
    assert np.array_equal(np.isinf(ours), np.isinf(theirs))
    finite = np.isfinite(theirs)
    assert np.allclose(ours[finite], theirs[finite], rtol=4 * np.finfo(float).eps, atol=0)
    # hand-computed: 0.5 log 2 (x/y = 2: not "near", the plain log); 0.3 log 1 = 0; 0 log 0
    assert compiled.rel_entr(0.5, 0.25) == 0.5 * np.log(2.0)
    assert compiled.rel_entr(0.3, 0.3) == 0.0 and compiled.rel_entr(0.0, 0.0) == 0.0
    assert compiled.rel_entr(1.0, 0.0) == np.inf and compiled.rel_entr(-1.0, 1.0) == np.inf
    assert compiled.rel_entr(np.ones((2, 3)), np.ones(3)).shape == (2, 3)


def test_sparse_kernels_give_scipys_products():
    rng = np.random.default_rng(3)
    X = sp.random(300, 500, density=0.05, format="csr", random_state=4) * 7
    W = rng.standard_normal((500, 6))
    out = np.zeros((300, 6))
    compiled.sparsetools().csr_matvecs(300, 500, 6, X.indptr, X.indices, X.data, W.ravel(),
                                       out.ravel())  # fmt: skip
    assert np.array_equal(bits(out), bits(X @ W))


SUBPROCESS = """
import sys
import numpy as np
import nbclass.compiled as c
assert c.gammaln(np.array([1.0, 3.0])).tolist() == [0.0, float(np.log(2.0))]
assert c.digamma(np.array([1.0]))[0] < 0 and c.xlogy(2.0, 1.0) == 0.0
assert hasattr(c.sparsetools(), "csr_matvecs")
print(" ".join(sorted(m for m in ("scipy.sparse", "scipy.special", "numpy.f2py",
                                  "numpy.testing") if m in sys.modules)) or "none")
"""


def test_loading_the_kernels_imports_neither_package():
    """Loaded from their files, the kernels bring in neither scipy.sparse nor
    scipy.special (nor the numpy modules their import pulls in). Where this scipy has no
    ``_special_ufuncs`` the fallback imports scipy.special, and the test says so."""
    import importlib.util

    run = subprocess.run([sys.executable, "-c", SUBPROCESS], capture_output=True, text=True,
                         cwd=REPO, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    if importlib.util.find_spec("scipy.special._special_ufuncs") is None:
        pytest.skip("this scipy has no _special_ufuncs: the fallback imports scipy.special")
    assert run.stdout.strip() == "none"


def test_the_ordinary_import_is_the_fallback(monkeypatch):
    """Where the file cannot be loaded (a scipy without it), the same functions come
    from the ordinary import."""
    monkeypatch.setattr(compiled, "_LOADED", {})
    monkeypatch.setattr(compiled, "_from_file", lambda package, name: None)
    assert compiled.sparsetools().csr_matvecs is sp._sparsetools.csr_matvecs
    assert compiled._special("gammaln") is scipy.special.gammaln


def test_a_module_without_the_function_asked_for_is_not_used(monkeypatch):
    """A file that loads but lacks the function (an older layout) falls back too."""
    import types

    monkeypatch.setattr(compiled, "_LOADED", {})
    monkeypatch.setattr(compiled, "_from_file",
                        lambda package, name: types.ModuleType("empty"))  # fmt: skip
    assert compiled._special("psi") is scipy.special.psi
