"""Dask: the counting of ``fit`` and the scoring of ``predict`` on an existing cluster.

Dask is an optional extra (``pip install 'nbclass[dask]'``); this is the only module that
imports it, and only when a scheduler address is given, so nothing else pays for it.

The work sent to the workers is the same as for local processes: ``fit`` sends parts of
the file list to :func:`nbclass.tally.tally_part` and adds the integer tallies it gets back
into one :class:`nbclass.counts.CountAccumulator`, so the model is the same, bit for bit,
as a local fit. ``predict`` sends the model file's bytes once to every worker and parts of
the file list to :func:`score_part`, then prints the parts in the order of the input.

Workers read the documents themselves, by absolute path: the files must be on a
filesystem that every worker sees at the same path as this machine. Workers need
nbclass installed, at the same version as the client (checked on connecting).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import CancelledError
from contextlib import contextmanager
from dataclasses import dataclass, replace
from itertools import islice

from . import __version__
from .errors import NbclassError, UsageError

INSTALL = "pip install 'nbclass[dask]'"
TIMEOUT_VARIABLE = "NBCLASS_SCHEDULER_TIMEOUT"
DEFAULT_TIMEOUT = 10.0  # seconds to reach the scheduler, and then to find a worker
SCHEMES = ("tcp", "tls")
WORKER_HINT = (
    "on a Dask worker, which reads every file at the absolute path this machine gives: "
    "the files must be on a filesystem that every worker sees at the same path"
)


def require_dask() -> None:
    """Raise :class:`UsageError`, saying how to install Dask, when it is not installed."""
    _distributed()


def _distributed():
    try:
        import distributed
    except ImportError:
        raise UsageError(f"--scheduler needs Dask, which is not installed: {INSTALL}") from None
    return distributed


def scheduler_timeout() -> float:
    """Seconds allowed to reach the scheduler: ``NBCLASS_SCHEDULER_TIMEOUT``, else 10."""
    value = os.environ.get(TIMEOUT_VARIABLE)
    if not value:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise UsageError(f"{TIMEOUT_VARIABLE}={value!r} must be a positive number of seconds")
    return seconds


def _worker_version() -> str:  # runs on each worker
    return __version__


@dataclass
class Cluster:
    """A connection to a Dask scheduler that has at least one worker.

    Attributes
    ----------
    client : distributed.Client
    address : str
    threads : int
        Worker threads in the cluster when it was reached (at least 1).
    """

    client: object
    address: str
    threads: int

    @property
    def window(self) -> int:
        """Parts sent ahead: enough to keep every thread busy, few enough to bound memory."""
        return max(4, 2 * self.threads)

    def _submit(self, function: Callable, args: tuple):
        return self.client.submit(function, *args, pure=False)

    def run_unordered(self, function: Callable, parts: Iterable[tuple]) -> Iterator:
        """``function(*args)`` for each ``args`` of ``parts``, yielded as they finish.

        At most :attr:`window` parts are on the cluster at a time, so neither the
        scheduler nor the workers hold more than that many parts or results.
        """
        distributed = _distributed()
        parts = iter(parts)
        live = {self._submit(function, args) for args in islice(parts, self.window)}
        running = distributed.as_completed(list(live), loop=self.client.loop)
        try:
            for future in running:
                live.discard(future)
                result = self._result(future)
                following = next(parts, None)
                if following is not None:
                    live.add(new := self._submit(function, following))
                    running.add(new)
                yield result
        finally:
            self.client.cancel(list(live))

    def run_ordered(self, function: Callable, parts: Iterable[tuple]) -> Iterator:
        """``function(*args)`` for each ``args`` of ``parts``, yielded in their order.

        At most :attr:`window` parts are on the cluster at a time.
        """
        parts = iter(parts)
        live = deque(self._submit(function, args) for args in islice(parts, self.window))
        try:
            while live:
                result = self._result(live[0])
                live.popleft()
                following = next(parts, None)
                if following is not None:
                    live.append(self._submit(function, following))
                yield result
        finally:
            self.client.cancel(list(live))

    def _result(self, future):
        try:
            return future.result()
        except NbclassError as exc:  # the worker's own error, e.g. a file it cannot read
            raise type(exc)(f"{exc} ({WORKER_HINT})") from None
        except (OSError, CancelledError):  # the scheduler went away (CommClosedError: OSError)
            raise NbclassError(
                f"lost the connection to the Dask scheduler at {self.address}: run the "
                "command again once it is back"
            ) from None
        except Exception as exc:
            problem = str(exc).splitlines()[0] if str(exc) else ""
            raise NbclassError(
                f"a Dask worker of {self.address} failed: {type(exc).__name__}: {problem}"
            ) from None


@contextmanager
def connect(address: str) -> Iterator[Cluster]:
    """Connect to the scheduler at ``address`` and check its workers; close on exit.

    Raises
    ------
    UsageError
        When Dask is not installed, or ``address`` is not an address.
    NbclassError
        When the scheduler cannot be reached within :func:`scheduler_timeout` seconds, has
        no worker within as long again, or a worker runs another version of nbclass.
    """
    distributed = _distributed()
    with _quiet_dask():
        with _connect(distributed, address.strip()) as cluster:
            yield cluster


@contextmanager
def _quiet_dask():
    """Dask logs to stderr, and a command's error is one line of its own: mute it meanwhile."""
    loggers = [
        logging.getLogger(name)
        for name in [*logging.root.manager.loggerDict]
        if name.split(".")[0] == "distributed"
    ]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


@contextmanager
def _connect(distributed, address: str) -> Iterator[Cluster]:
    if not address:  # Client("") would start a cluster of its own
        raise UsageError("--scheduler is empty: give the address, e.g. tcp://HOST:8786")
    _check_address(address)
    timeout = scheduler_timeout()
    try:
        with _deadline(2 * timeout):  # a server that accepts and never answers: Dask waits
            client = distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError):
        _mute_abandoned_client()
        raise NbclassError(
            f"cannot reach the Dask scheduler at {address} within {timeout:g} s: check the "
            f"address and that the scheduler is running (the wait is set by {TIMEOUT_VARIABLE})"
        ) from None
    except Exception as exc:  # something answered, but not as a Dask scheduler does
        _mute_abandoned_client()
        raise NbclassError(
            f"what answers at {address} is not a Dask scheduler ({type(exc).__name__} on "
            "connecting): check the address and port"
        ) from None
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError):
            raise NbclassError(
                f"the Dask scheduler at {address} has no worker after {timeout:g} s: start "
                f"some with  dask worker {address}"
            ) from None
        _check_workers(client)
        threads = sum(client.nthreads().values())
        yield Cluster(client, address, max(1, threads))
    finally:
        client.close()


_ADDRESS = re.compile(
    r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://)?"
    r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[0-9]{1,5})"
)


def check_address_form(address: str, name: str = "--scheduler") -> None:
    """Refuse, at once and without Dask, what is not ``[tcp|tls://]HOST:PORT``.

    ``name`` is where the address came from (the option, or the environment variable),
    for the message. A :class:`UsageError`: Dask itself would wait for its own connect
    timeout (20 s) before failing on a missing port.

    >>> check_address_form("tcp://10.0.0.5:8786")
    >>> check_address_form("tcp://host")
    Traceback (most recent call last):
    ...
    nbclass.errors.UsageError: --scheduler 'tcp://host' is not a Dask scheduler address: \
give tcp://HOST:PORT (or tls://HOST:PORT)
    """
    address = address.strip()
    if not address:  # Client("") would start a cluster of its own
        raise UsageError(f"{name} is empty: give the address, e.g. tcp://HOST:8786")
    match = _ADDRESS.fullmatch(address)
    if (
        match is None
        or (match["scheme"] or "tcp") not in SCHEMES
        or not 0 < int(match["port"]) < 65536
    ):
        raise UsageError(
            f"{name} {address!r} is not a Dask scheduler address: give tcp://HOST:PORT "
            "(or tls://HOST:PORT)"
        )


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise ``TimeoutError`` in the main thread if the block lasts more than ``seconds``
    (a real-time alarm; nothing is bounded in other threads, where no alarm can be set)."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise TimeoutError(f"no answer within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _mute_abandoned_client() -> None:
    """The half-made client of a failed connection tries to close itself when collected,
    waits, and prints a traceback as an "ignored" exception: the failure has been said in
    one line already, so such reports are dropped from now on."""
    import sys

    sys.unraisablehook = lambda unraisable: None


def _check_address(address: str) -> None:
    """Refuse what is not a network address before a client exists (it would linger)."""
    from distributed.comm import parse_address, parse_host_port
    from distributed.security import Security

    check_address_form(address)
    try:
        scheme, location = parse_address(address)
        if scheme not in SCHEMES:
            raise ValueError(scheme)
        parse_host_port(location)
    except (ValueError, TypeError):
        raise UsageError(
            f"--scheduler {address!r} is not a Dask scheduler address: give tcp://HOST:PORT "
            "(or tls://HOST:PORT)"
        ) from None
    if scheme == "tls" and Security().get_connection_args("client").get("ssl_context") is None:
        raise UsageError(
            f"--scheduler {address}: tls:// needs Dask's TLS settings (distributed.comm.tls "
            "in the Dask configuration, with the client's certificate and key)"
        )


def _check_workers(client) -> None:
    for worker, version in client.run(_worker_version, on_error="return").items():
        if isinstance(version, BaseException):
            why = (str(version).splitlines() or [type(version).__name__])[0]
            raise NbclassError(
                f"the Dask worker {worker} cannot run nbclass ({why}): "
                f"install nbclass {__version__} where the workers run"
            )
        if version != __version__:
            raise NbclassError(
                f"the Dask worker {worker} runs nbclass {version}, this is {__version__}: "
                "install the same version everywhere, so that both tokenize alike"
            )


# predict ------------------------------------------------------------------------------

_classifiers: dict = {}
_classifiers_lock = threading.Lock()


def _classifier(data: bytes, digest: str, settings, calibration=None):
    """The worker's classifier for a model's bytes, settings and calibration, built once
    per process."""
    from .model import Classifier
    from .modelfile import loads

    key = (digest, settings, calibration)
    with _classifiers_lock:
        classifier = _classifiers.get(key)
        if classifier is None:
            _classifiers.clear()  # one model at a time: a worker's memory is not ours
            classifier = _classifiers[key] = Classifier(
                loads(data), settings, calibration=calibration
            )
    return classifier


def score_part(
    data: bytes, digest: str, settings, paths: Sequence[str], start: int, abstention, explain,
    policy=None, calibration=None,
):  # fmt: skip
    """A worker's unit of work: ``(start, end, log_proba, extras, kept, log)`` of the
    files at ``paths``.

    ``kept`` lists the indices (into ``paths``) of the documents read under ``policy``
    (:mod:`nbclass.reading`), ``log`` the :class:`~nbclass.reading.ReadLog` of the others.
    ``log_proba`` is an ndarray of shape (len(kept), C), log p(y = c | x), and
    ``extras`` the per-document log evidence, abstention reason and explanation, all
    computed by the same code as a local predict (:mod:`nbclass.explain`).
    """
    from .explain import extras, score_batch
    from .reading import DEFAULT_POLICY, ReadLog, read_document

    policy = policy or DEFAULT_POLICY
    classifier = _classifier(data, digest, settings, calibration)
    log, kept, batch = ReadLog(), [], []
    for i, path in enumerate(paths):
        document = read_document(path, policy, log, walked=False)
        if document is not None:
            kept.append(i)
            batch.append((path, log.decode(document, policy.encoding)))
    scored = score_batch(classifier, batch)
    return start, start + len(paths), scored.log_proba, extras(
        classifier, scored, abstention, explain
    ), kept, log


def predict_files(
    address: str, data: bytes, classes: Sequence[str], settings, paths: Sequence[str],
    abstention, explain: int | None = None, policy=None, log=None, calibration=None,
) -> Iterator:  # fmt: skip
    """Posterior probabilities of the documents at ``paths``, scored on the cluster.

    The workers read them under ``policy``; what they skip is merged into ``log`` with
    the paths as given, and has no row.

    Parameters
    ----------
    address : str
        The scheduler.
    data : bytes
        The model file (already checked by the caller), sent once to each worker.
    classes : sequence of str
        The model's classes, C.
    settings : EstimatorSettings
    calibration : Calibration or None
        Applied to the probabilities, as by a local predict with these settings.
    paths : sequence of str
        Files to classify; they are printed as given and sent to the workers absolute.

    abstention : nbclass.abstain.Abstention
    explain : int or None
        As for a local predict.

    Yields
    ------
    (Predictions, extras), in the order of ``paths``, one per part of the file list.
    """
    from .model import BATCH_SIZE, Predictions

    with connect(address) as cluster:
        n = len(paths)
        size = max(1, min(BATCH_SIZE, -(-n // (cluster.threads * 4))))
        model = cluster.client.scatter(data, broadcast=True, hash=False)
        digest = hashlib.sha256(data).hexdigest()
        absolute = [os.path.abspath(p) for p in paths]
        parts = (
            (model, digest, settings, absolute[a : a + size], a, abstention, explain, policy,
             calibration)
            for a in range(0, n, size)
        )
        for start, end, log_proba, extras, kept, part_log in cluster.run_ordered(
            score_part, parts
        ):
            if log is not None:
                given = dict(zip(absolute[start:end], paths[start:end]))
                part_log.skipped = [
                    replace(skip, source=given.get(skip.source, skip.source))
                    for skip in part_log.skipped
                ]
                log.add(part_log)
            sources = [paths[start + i] for i in kept]
            yield Predictions(sources, tuple(classes), log_proba), extras
