"""The range of every number a user gives: options and environment variables, in one table.

Each number nbclass takes from a command line, from the environment or from the library
calls behind them is checked here, against the row of :data:`RANGES` named after its
option or variable, before it is used: an out-of-range value (NaN, an infinity, a
negative seed, ``--folds 99999999999``) is one :class:`nbclass.errors.UsageError` naming
the option, the value and the range, never a traceback, a hang or memory without bound.
The table of docs/robustness.md is this table (``tests/test_ranges.py`` compares them).

A range here is the widest one that can make sense; what depends on other values (the
estimator's lower bound on α and β, ``--folds`` against the documents of a class) is
checked where those values meet. The upper bounds keep every sum finite in double
precision and every allocation proportional to the input:

- pseudo-counts: at most 10^6, so that T_c + V·β and log Γ(a + x) − log Γ(a) keep their
  precision for any vocabulary a model can hold (at 10^308, V·β is infinite and every
  class would be ruled out);
- counts of things to make (folds, worker processes, listed words): bounded so that a
  typing slip cannot ask for gigabytes or hundreds of processes.

Standard library only: the one-document path imports it.
"""

from __future__ import annotations

import math
import os

from .errors import UsageError

MAX_PSEUDO_COUNT = 1e6
MAX_FOLDS = 10_000
MAX_JOBS = 256
MAX_SEED = 2**32 - 1
MAX_COUNT = 2**63 - 1  # a count compared with 64-bit counts
MAX_LISTED = 2**31 - 1  # words or classes listed per document or in all
MAX_TIMEOUT = 86_400.0  # a day, in seconds
MAX_SIZE = 1 << 40  # bytes: 1 TiB


class Range:
    """The values one option or variable may take.

    ``kind`` is ``"int"`` (a whole number), ``"float"`` (a finite decimal number) or
    ``"size"`` (bytes, or a whole number with K, M or G); ``low`` and ``high`` bound it,
    ``low_open`` makes the lower bound exclusive.
    """

    __slots__ = ("name", "kind", "low", "high", "low_open", "meaning")

    def __init__(self, name, kind, low, high, meaning, low_open=False):
        self.name, self.kind, self.low, self.high = name, kind, low, high
        self.meaning, self.low_open = meaning, low_open

    def describe(self) -> str:
        """The range in words, as messages and the docs give it."""
        low, high = _number(self.low), _number(self.high)
        if self.kind == "int":
            return f"a whole number from {low} to {high}"
        if self.kind == "size":
            return f"a size from {low} to {high} bytes (a number, or with K, M or G: 64M)"
        if self.low_open:
            return f"a number above {low} and at most {high}"
        return f"a number from {low} to {high}"

    def contains(self, value) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.kind != "float" and not isinstance(value, int):
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= self.high

    def check(self, value, shown=None):
        """``value`` when it is in range, else the :class:`UsageError` that says so.

        ``shown`` is how to name the value in the message (what the user typed)."""
        if self.contains(value):
            return value
        text = shown if shown is not None else _shown(value)
        named = f"{self.name}={text}" if self.name.isupper() else f"{self.name} {text}"
        raise UsageError(f"{named} is out of range: give {self.describe()}")


def _number(value) -> str:
    """A bound as the docs write it: 1000000 as 1e+06, 4294967295 as 4294967295."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e5:
        return str(int(value))
    if isinstance(value, float):
        return f"{value:g}"
    if value >= 10**12 and (value & (value - 1)) == 0:  # a power of two: 2^N
        return f"2^{value.bit_length() - 1}"
    for bits in (63, 32, 31):
        if value == 2**bits - 1:
            return f"2^{bits}-1"
    return str(value)


def _shown(value) -> str:
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    return str(value)


_ROWS = [
    # estimator options: fit, predict, evaluate, cv, check, explain, export, top-features
    Range("--alpha", "float", 0.0, MAX_PSEUDO_COUNT, "pseudo-count α of each class "
          "(posterior-mean and predictive need > 0, map >= 1)"),
    Range("--beta", "float", 0.0, MAX_PSEUDO_COUNT, "pseudo-counts β of θ, each of B1,B0 "
          "(posterior-mean and predictive need > 0, map >= 1)"),
    Range("--var-smoothing", "float", 0.0, 1.0, "fit --table: variance floor, times the "
          "largest variance", low_open=True),
    # vocabulary
    Range("--min-df", "int", 1, MAX_COUNT, "fit, sync: documents a word must be in"),
    Range("--max-features", "int", 1, MAX_COUNT, "fit, sync: words kept"),
    # evaluation
    Range("--folds", "int", 2, MAX_FOLDS, "cv: stratified folds (also at most the "
          "documents of the smallest class)"),
    Range("--seed", "int", 0, MAX_SEED, "cv: seed of the split"),
    Range("--max-drop", "float", 0.0, 1.0, "check: largest fall of accuracy and macro-F1"),
    Range("--max-ece", "float", 0.0, 1.0, "check: largest calibration error"),
    # predict's thresholds and listings
    Range("--min-probability", "float", 0.0, 1.0, "predict: top probability below which "
          "a document is unsure"),
    Range("--min-margin", "float", 0.0, 1.0, "predict: margin below which a document is "
          "unsure"),
    Range("--min-typicality", "float", 0.0, 100.0, "predict: percentile of typicality"),
    Range("--top-k", "int", 1, MAX_LISTED, "predict: classes listed per document"),
    Range("--explain", "int", 1, MAX_LISTED, "predict: words listed per document"),
    Range("-k", "int", 1, MAX_LISTED, "top-features, select-features, diff: words"),
    Range("--per-class", "int", 1, MAX_LISTED, "top-features: words per class"),
    # reading and processes
    Range("--max-bytes", "size", 1, MAX_SIZE, "largest document (a line with --lines)"),
    Range("--jobs", "int", 1, MAX_JOBS, "-j: processes that read, count and score; more "
          "than the usable cores is taken as the usable cores"),
    Range("NBCLASS_JOBS", "int", 1, MAX_JOBS, "processes when -j is not given (likewise "
          "at most the usable cores)"),
    Range("NBCLASS_MAX_TABLE_BYTES", "size", 1, MAX_SIZE, "largest table read whole "
          "(256M unset)"),
    Range("NBCLASS_MAX_MODEL_MEMORY", "size", 1, MAX_SIZE, "memory a model's counts may "
          "take (64 times its file size, at least 256M, unset)"),
    Range("NBCLASS_SCHEDULER_TIMEOUT", "float", 0.0, MAX_TIMEOUT, "seconds to reach a "
          "Dask scheduler (10 unset)", low_open=True),
    Range("NBCLASS_WORKER_TIMEOUT", "float", 0.0, MAX_TIMEOUT, "seconds a command on a "
          "Dask cluster waits while it has no worker (60 unset)", low_open=True),
    Range("NBCLASS_STORAGE_TIMEOUT", "float", 0.0, MAX_TIMEOUT, "seconds one request to an "
          "object store may take (60 unset)", low_open=True),
    Range("NBCLASS_PIPE_WAIT", "float", 0.0, MAX_TIMEOUT, "seconds a named pipe given by "
          "name may take to give its first byte (30 unset)", low_open=True),
    # the service
    Range("--port", "int", 0, 65535, "serve: TCP port (0: a free one)"),
    Range("--workers", "int", 1, MAX_JOBS, "serve: processes that serve requests"),
    Range("--max-request-bytes", "int", 1, 1 << 30, "serve: largest request body"),
    Range("--max-batch", "int", 1, 1_000_000, "serve: texts in one request"),
    Range("--max-headers", "int", 1, 10_000, "serve: header fields in one request"),
    Range("--max-connections", "int", 1, 100_000, "serve: open connections per worker"),
    Range("--timeout", "float", 0.0, MAX_TIMEOUT, "serve: seconds for a request's headers, "
          "then for its body", low_open=True),
]  # fmt: skip
RANGES: dict[str, Range] = {row.name: row for row in _ROWS}


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity (``os.sched_getaffinity``,
    which ``taskset``, a container's cpuset or a batch scheduler narrow), else every
    core of the machine. ``-j`` and ``NBCLASS_JOBS`` above it are taken as it."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def check(name: str, value, shown=None):
    """``value`` when it is in the range of option or variable ``name``, else a
    :class:`UsageError` naming both (``None`` passes: an option not given)."""
    if value is None:
        return None
    return RANGES[name].check(value, shown)


_SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """Bytes from ``N`` or ``N`` with a suffix K, M, G or T (powers of 1024; ``KiB``,
    ``KB`` and lower case are read the same).

    >>> parse_size("64M"), parse_size("512"), parse_size("1KiB"), parse_size("2g")
    (67108864, 512, 1024, 2147483648)
    """
    value = text.strip().upper()
    for tail in ("IB", "B"):
        if value.endswith(tail) and value[: -len(tail)][-1:] in "KMGT" and len(value) > 2:
            value = value[: -len(tail)]
            break
    suffix = value[-1:] if value[-1:] in "KMGT" else ""
    digits = value[: len(value) - len(suffix)]
    if not (digits.isascii() and digits.isdigit()) or int(digits) < 1:
        raise ValueError(f"{text!r} is not a size: give a whole number of bytes, e.g. 64M")
    return int(digits) * _SUFFIXES[suffix]


def parse(name: str, text: str):
    """The value of ``text`` given for option or variable ``name``, checked."""
    row = RANGES[name]
    try:
        if row.kind == "size":
            value = parse_size(text)
        elif row.kind == "int":
            value = int(text.strip()) if text.strip().lstrip("+-").isdigit() else None
        else:
            value = float(text)
    except ValueError:
        value = None
    if value is None:
        named = f"{name}={text!r}" if name.isupper() else f"{name} {text!r}"
        raise UsageError(f"{named} is not {_article(row)}: give {row.describe()}")
    return row.check(value, repr(text) if name.isupper() else text)


def _article(row: Range) -> str:
    return {"int": "a whole number", "size": "a size", "float": "a number"}[row.kind]


def environment(name: str):
    """The value of environment variable ``name``, checked; ``None`` when unset or empty."""
    text = os.environ.get(name)
    if not text:
        return None
    return parse(name, text)
