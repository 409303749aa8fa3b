"""scipy's compiled kernels, loaded without importing ``scipy.sparse`` or ``scipy.special``.

Importing those two packages costs 0.14-0.19 s of CPU (scipy's array-API layer imports
numpy's f2py, testing, ma and random modules on the way), as much as a whole fit of a
small corpus by a named model. What the fit's choice calls is held by two extension
modules: ``scipy.sparse._sparsetools`` (the products of CSR and CSC matrices with dense
tables, gathers of rows and columns, conversions between the forms) and
``scipy.special._special_ufuncs`` (lnΓ, ψ, x log y, the logistic function). This module
loads each from its file the first time it is asked for (3 ms for both), and falls back
to the ordinary import where the file or a name is missing (scipy before 1.15 has no
``_special_ufuncs``) or loading it fails. Either way the functions are scipy's own, so
they give the same floats; ``tests/test_compiled.py`` checks that bit for bit.

:func:`rel_entr` is the one special function the choice uses that neither module holds:
it is computed here, in numpy, by the formula scipy uses.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import threading
from types import ModuleType

import numpy as np

_LOCK = threading.Lock()  # (a choice scores on threads: each module is loaded once)
_LOADED: dict[str, ModuleType] = {}


def _from_file(package: str, name: str) -> ModuleType | None:
    """The extension module ``scipy.<package>.<name>`` loaded from its file, without
    running ``scipy/<package>/__init__.py``; None if scipy or the file is not there."""
    spec = importlib.util.find_spec("scipy")  # (finds the package; does not import it)
    if spec is None or not spec.submodule_search_locations:
        return None
    full = f"scipy.{package}.{name}"
    for location in spec.submodule_search_locations:
        folder = os.path.join(location, package)
        try:
            files = sorted(os.listdir(folder))
        except OSError:
            continue
        for file in files:
            if file.startswith(name + ".") and file.endswith(tuple(
                    importlib.machinery.EXTENSION_SUFFIXES)):  # fmt: skip
                path = os.path.join(folder, file)
                loader = importlib.machinery.ExtensionFileLoader(full, path)
                module_spec = importlib.util.spec_from_file_location(full, path, loader=loader)
                module = importlib.util.module_from_spec(module_spec)
                loader.exec_module(module)
                return module
    return None


def _module(package: str, name: str, needed: str) -> ModuleType:
    """``scipy.<package>.<name>``, from its file if it has ``needed``, else imported."""
    key = f"{package}.{name}"
    module = _LOADED.get(key)
    if module is not None:
        return module
    with _LOCK:
        module = _LOADED.get(key)
        if module is None:
            try:
                module = _from_file(package, name)
            except Exception:  # noqa: BLE001 - any failure: the ordinary import below
                module = None
            if module is None or not hasattr(module, needed):
                module = _imported(package, name)
            _LOADED[key] = module
    return module


def _imported(package: str, name: str) -> ModuleType:
    """The ordinary import: ``scipy.special`` itself where ``_special_ufuncs`` is absent
    (its functions are the package's attributes under the same names)."""
    import importlib

    try:
        return importlib.import_module(f"scipy.{package}.{name}")
    except ImportError:
        return importlib.import_module(f"scipy.{package}")


def sparsetools() -> ModuleType:
    """``scipy.sparse._sparsetools``: ``csr_matvecs``, ``csc_matvecs``, ``csr_row_index``,
    ``csr_column_index1``/``2``, ``csr_tocsc``, ``coo_tocsr``, ``csr_todense``,
    ``csr_sort_indices``, ``csr_sum_duplicates`` and the others scipy's matrices call."""
    return _module("sparse", "_sparsetools", "csr_matvecs")


def sparsetools_loaded() -> bool:
    """Whether :func:`sparsetools` has loaded its module already (nothing is loaded to
    tell)."""
    return "sparse._sparsetools" in _LOADED


def load() -> None:
    """Load both modules now (3 ms of CPU), so that their first use finds them loaded:
    the fit does it on a thread while its workers count."""
    sparsetools()
    _special("gammaln")


def _special(function: str):
    return getattr(_module("special", "_special_ufuncs", "gammaln"), function)


def gammaln(x, out=None):
    """ln|Γ(x)| elementwise: ``scipy.special.gammaln``."""
    return _special("gammaln")(x, out=out)


def digamma(x, out=None):
    """ψ(x) = d/dx ln Γ(x) elementwise: ``scipy.special.digamma`` (scipy's ``psi``)."""
    return _special("psi")(x, out=out)


def xlogy(x, y, out=None):
    """x log y elementwise, 0 where x = 0 (and y is not NaN): ``scipy.special.xlogy``."""
    return _special("xlogy")(x, y, out=out)


def expit(x, out=None):
    """1 / (1 + e^−x) elementwise: ``scipy.special.expit``."""
    return _special("expit")(x, out=out)


def rel_entr(x, y) -> np.ndarray:
    """x log(x / y) elementwise, by the cases ``scipy.special.rel_entr`` takes:

    ======================  =================================
    x > 0, y > 0            x log(x / y), as x log1p((x − y) / y) when 1/2 < x/y < 2
    x = 0, y ≥ 0            0
    otherwise               +∞ (NaN where x or y is NaN)
    ======================  =================================

    Where x/y over- or underflows, x (log x − log y). The logarithms are numpy's, which
    may differ from the C library's in the last bit: within a few ulp of scipy's.

    >>> rel_entr(np.array([0.5, 0.0, 1.0, 2.0]), np.array([0.25, 0.3, 0.0, 3.0])).round(6).tolist()
    [0.346574, 0.0, inf, -0.81093]
    """
    x, y = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    out = np.full(x.shape, np.inf)
    both = (x > 0) & (y > 0)
    out[(x == 0) & (y >= 0)] = 0.0
    out[np.isnan(x) | np.isnan(y)] = np.nan
    xb, yb = x[both], y[both]
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        ratio = xb / yb
        near = (ratio > 0.5) & (ratio < 2.0)
        ordinary = ~near & (ratio > np.finfo(np.float64).tiny) & (ratio < np.inf)
        values = np.empty(xb.shape)
        values[near] = xb[near] * np.log1p((xb[near] - yb[near]) / yb[near])
        values[ordinary] = xb[ordinary] * np.log(ratio[ordinary])
        far = ~(near | ordinary)
        values[far] = xb[far] * (np.log(xb[far]) - np.log(yb[far]))
    out[both] = values
    return out
