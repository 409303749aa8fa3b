"""The BLAS products of the choice's Newton steps, in one thread: the same floats whatever
the caller's threads.

The class offsets' and the calibration's Newton steps sum over thousands of held-out
documents in BLAS products (``F.T @ R``, a vector times the probabilities, ``G.T @ G``).
OpenBLAS shares such a product's sums out among its threads and adds their parts, in
another order than one thread adds them: at 6,000 documents × 100 classes two threads
gave other offsets than one, so a model file depended on the number of threads of the
process that chose it (the command runs one, the library as many as the machine has
cores, a user's ``OPENBLAS_NUM_THREADS`` any). :func:`one_thread` runs a function with
one BLAS thread and gives the process its threads back after it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import wraps
from typing import TypeVar

F = TypeVar("F", bound=Callable)

# The BLAS's thread count is the process's: one limited call at a time (a call within
# one, in the same thread, keeps the limit).
_lock = threading.RLock()
_controllers: list = []  # the threadpoolctl controller, made at the first call


def one_thread(function: F) -> F:
    """``function`` run with the BLAS in one thread, its threads given back after it."""

    @wraps(function)
    def limited(*args, **kwargs):
        with _lock:
            if not _controllers:  # the libraries loaded by then: numpy's BLAS
                from threadpoolctl import ThreadpoolController

                _controllers.append(ThreadpoolController())
            with _controllers[0].limit(limits=1, user_api="blas"):
                return function(*args, **kwargs)

    return limited  # type: ignore[return-value]
