"""Dask: the counting of ``fit`` and the scoring of ``predict`` on an existing cluster.

Dask is an optional extra (``pip install 'nbclass[dask]'``); this is the only module that
imports it, and only when a scheduler address is given, so nothing else pays for it.

The work sent to the workers is the same as for local processes: ``fit`` has the
workers list the class folders (:func:`count_folder`), tally parts of the listings with
:func:`nbclass.counting.tally.tally_part` and sum the tallies among themselves in a tree
(:meth:`Cluster.reduce`, :func:`nbclass.counting.tally.combine`), so this process receives one
table of integer counts whatever the size of the corpus, and the model is the same, bit
for bit, as a local fit. ``fit --lines FILE`` splits the file into byte ranges, one per
part (:func:`count_lines_file`). ``predict`` sends the model file's bytes once to every
worker and parts of the file list to :func:`score_part`, then prints the parts in the
order of the input, or has the workers write them (:func:`write_part`).

Workers read the documents themselves, by absolute path or URL: the files must be on a
filesystem that every worker sees at the same path as this machine, or in object
storage (:mod:`nbclass.reading.storage`) that every worker can reach. Workers need nbclass
installed, at the same version as the client (checked on connecting).
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
from functools import partial
from itertools import islice

from ..errors import NbclassError, UsageError
from ..ranges import environment
from ..version import __version__

INSTALL = "pip install 'nbclass[dask]'"
TIMEOUT_VARIABLE = "NBCLASS_SCHEDULER_TIMEOUT"
DEFAULT_TIMEOUT = 10.0  # seconds to reach the scheduler, and then to find a worker
WORKER_TIMEOUT_VARIABLE = "NBCLASS_WORKER_TIMEOUT"
DEFAULT_WORKER_TIMEOUT = 60.0  # seconds a command waits while the cluster has no worker
SCHEMES = ("tcp", "tls")
SPLIT_EVERY = 8  # results merged into one on a worker, at each level of a reduction
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
    seconds = environment(TIMEOUT_VARIABLE)
    return DEFAULT_TIMEOUT if seconds is None else seconds


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

    def reduce(
        self, function: Callable, parts: Iterable[tuple], merge: Callable,
        on_done: Callable | None = None, split_every: int = SPLIT_EVERY,
    ):  # fmt: skip
        """``merge`` of ``function(*args)`` over ``(tag, args)`` of ``parts``, merged on the
        workers in a tree: this process gathers one result, whatever the number of parts.

        At most :attr:`window` parts run at a time. Results merge level by level, as they
        finish: ``split_every`` results of one level make one of the next (merged where
        they are), so each result is merged with others of its size, and no more than
        ``split_every - 1`` per level wait. ``on_done(tag)`` is called as each part
        finishes; its result stays on the cluster. None when ``parts`` is empty.

        A worker lost midway loses the results it held: the scheduler computes them again
        from the parts still known to it, so the sum is the same.
        """
        distributed = _distributed()
        client = self.client
        parts = iter(parts)
        level, tags, live = {}, {}, set()
        waiting: dict[int, list] = {}

        def submit(fn, args, at_level, tag=None):
            future = client.submit(fn, *args, pure=False)
            level[future.key], tags[future.key] = at_level, tag
            live.add(future)
            return future

        def leaf():
            item = next(parts, None)
            return None if item is None else submit(function, item[1], 0, item[0])

        first = [future for future in (leaf() for _ in range(self.window)) if future]
        running = distributed.as_completed(first, loop=client.loop)
        try:
            for future in running:
                live.discard(future)
                if future.status != "finished":
                    self._result(future)  # raises the worker's error, said for a user
                at, tag = level.pop(future.key), tags.pop(future.key)
                if at == 0:
                    following = leaf()
                    if following is not None:
                        running.add(following)
                    if on_done is not None:
                        on_done(tag)
                group = waiting.setdefault(at, [])
                group.append(future)
                if len(group) == split_every:
                    running.add(submit(merge, group, at + 1))
                    waiting[at] = []
            rest = [future for at in sorted(waiting) for future in waiting[at]]
            waiting.clear()
            while len(rest) > split_every:
                rest = [
                    submit(merge, rest[i : i + split_every], -1)
                    for i in range(0, len(rest), split_every)
                ]
            if not rest:
                return None
            final = rest[0] if len(rest) == 1 else submit(merge, rest, -1)
            return self._result(final)
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
        with _watch_workers(client, address, worker_timeout()):
            yield Cluster(client, address, max(1, threads))
    finally:
        client.close()


def worker_timeout() -> float:
    """Seconds a command waits while its cluster has no worker: ``NBCLASS_WORKER_TIMEOUT``,
    else 60 (more than 0, at most a day)."""
    from ..reading.limits import seconds_variable

    return seconds_variable(WORKER_TIMEOUT_VARIABLE, DEFAULT_WORKER_TIMEOUT)


class _NoWorker(BaseException):
    """Raised in the main thread when the cluster has had no worker for too long (a
    BaseException, as KeyboardInterrupt is, so that no handler of errors stops it)."""


@contextmanager
def _watch_workers(client, address: str, seconds: float) -> Iterator[None]:
    """Stop the block with an :class:`NbclassError` once the scheduler has had no worker
    for ``seconds``: its work would wait for ever (the scheduler keeps it for workers
    that may come back). A thread asks the scheduler for its workers every second, and
    interrupts the main thread with SIGALRM, the wait for a result included. (Nothing is
    watched when the block is not in the main thread, where no signal can be received.)
    """
    import signal
    import time

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stop, active = threading.Event(), [True]

    def expire(signum, frame):
        if active[0]:
            raise _NoWorker()

    def watch():
        since = None
        while not stop.wait(min(1.0, seconds / 4)):
            try:
                workers = len(client.nthreads())
            except Exception:  # the scheduler went away: the main thread is told so
                continue
            if workers:
                since = None
                continue
            since = time.monotonic() if since is None else since
            if time.monotonic() - since >= seconds and not stop.is_set():
                signal.pthread_kill(threading.main_thread().ident, signal.SIGALRM)
                return

    previous = signal.signal(signal.SIGALRM, expire)
    watcher = threading.Thread(target=watch, name="nbclass-workers", daemon=True)
    watcher.start()
    try:
        yield
    except _NoWorker:
        raise NbclassError(
            f"the Dask scheduler at {address} has had no worker for {seconds:g} s with work "
            f"left (were its workers stopped?): start some with  dask worker {address}  and "
            f"run the command again (the wait is set by {WORKER_TIMEOUT_VARIABLE})"
        ) from None
    finally:
        stop.set()
        watcher.join()
        active[0] = False
        signal.signal(signal.SIGALRM, previous)


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


def _classifier(data: bytes, digest: str, settings, calibrate=True):
    """The worker's classifier for a model's bytes, settings and ``calibrate``
    (:class:`nbclass.models.model.Classifier`), built once per process."""
    from ..modelfile.textfile import loads
    from ..models.model import Classifier

    key = (digest, settings, calibrate)
    with _classifiers_lock:
        classifier = _classifiers.get(key)
        if classifier is None:
            _classifiers.clear()  # one model at a time: a worker's memory is not ours
            classifier = _classifiers[key] = Classifier(
                loads(data), settings, calibrate=calibrate
            )
    return classifier


def score_part(
    data: bytes, digest: str, settings, paths: Sequence[str], start: int, abstention, explain,
    policy=None, calibrate=True,
):  # fmt: skip
    """A worker's unit of work: ``(start, end, log_proba, extras, kept, log)`` of the
    files at ``paths``.

    ``kept`` lists the indices (into ``paths``) of the documents read under ``policy``
    (:mod:`nbclass.reading.policy`), ``log`` the :class:`~nbclass.reading.policy.ReadLog`
    of the others.
    ``log_proba`` is an ndarray of shape (len(kept), C), log p(y = c | x), and
    ``extras`` the per-document log evidence, abstention reason and explanation, all
    computed by the same code as a local predict (:mod:`nbclass.models.explain`).
    """
    import numpy as np

    from ..models.explain import extras, texts_scored
    from ..reading.policy import DEFAULT_POLICY, ReadLog, read_document

    policy = policy or DEFAULT_POLICY
    classifier = _classifier(data, digest, settings, calibrate)
    log, kept, batch = ReadLog(), [], []
    for i, path in enumerate(paths):
        document = read_document(path, policy, log, walked=False)
        if document is not None:
            kept.append(i)
            batch.append((path, log.decode(document, policy.encoding)))
    # Scored a block of documents at a time, as a local predict (bounded memory against
    # many classes): the part's rows are the same floats as one batch's.
    sources, texts = [path for path, _ in batch], [text for _, text in batch]
    rows, found = [], []  # each block's scores and extras (its other arrays let go)
    for scored in texts_scored(classifier, sources, texts):  # one block if no document
        rows.append(scored.log_proba)
        found.append(extras(classifier, scored, abstention, explain))
    rows = rows[0] if len(rows) == 1 else np.vstack(rows)
    merged = None if found[0] is None else [extra for part in found for extra in part]
    return start, start + len(paths), rows, merged, kept, log


def predict_files(
    address: str, data: bytes, classes: Sequence[str], settings, paths: Sequence[str],
    abstention, explain: int | None = None, policy=None, log=None, calibrate=True,
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
    calibrate : bool
        Apply the model's calibration to its defaults, as a local predict does
        (:func:`nbclass.models.model.scoring_settings`).
    paths : sequence of str
        Files to classify; they are printed as given and sent to the workers absolute.

    abstention : nbclass.models.abstain.Abstention
    explain : int or None
        As for a local predict.

    Yields
    ------
    (Predictions, extras), in the order of ``paths``, one per part of the file list.
    """
    from ..models.model import BATCH_SIZE, Predictions

    with connect(address) as cluster:
        n = len(paths)
        size = max(1, min(BATCH_SIZE, -(-n // (cluster.threads * 4))))
        model = cluster.client.scatter(data, broadcast=True, hash=False)
        digest = hashlib.sha256(data).hexdigest()
        absolute = [_absolute(p) for p in paths]
        parts = (
            (model, digest, settings, absolute[a : a + size], a, abstention, explain, policy,
             calibrate)
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


def write_part(
    data: bytes, digest: str, settings, paths: Sequence[str], start: int, abstention, explain,
    policy, classes, fmt: str, top_k, unsure_label: str, folder: str, name: str,
    shown: Sequence[str], calibrate=True,
):  # fmt: skip
    """A worker's unit of ``predict --output-dir``: score the files at ``paths`` as
    :func:`score_part` does and write their lines, each named by ``shown`` (the paths as
    the user gave them), as the part file ``name`` of ``folder`` (:mod:`nbclass.output.parts`).

    Returns ``(start, end, rows, log, warnings)``: the rows written, the
    :class:`~nbclass.reading.policy.ReadLog` and the warnings of the documents that every class
    rules out; nothing of the predictions comes back."""
    from ..output.parts import write_part as write
    from ..output.render import prediction_labels, prediction_lines

    start, end, log_proba, extras, kept, log = score_part(
        data, digest, settings, paths, start, abstention, explain, policy, calibrate
    )
    sources = [shown[i] for i in kept]
    rows = log_proba  # an ndarray (n, C): ranked by numpy, never a list of C floats a row
    write(folder, name, prediction_lines(sources, classes, rows, fmt, top_k, extras, unsure_label))
    _, problems = prediction_labels(sources, classes, rows, settings, extras, unsure_label)
    return start, end, len(rows), log, problems


def write_predictions(
    address: str, data: bytes, classes: Sequence[str], settings, paths: Sequence[str],
    abstention, explain: int | None, policy, log, folder: str, fmt: str, top_k,
    unsure_label: str, calibrate=True,
) -> tuple[int, int, list[str]]:  # fmt: skip
    """Score the documents at ``paths`` on the cluster, each part written by the worker
    that scores it into ``folder`` (already made by :func:`nbclass.output.parts.prepare`), one
    file per part, named in the order of ``paths``. A run that fails removes the parts it
    wrote (:func:`nbclass.output.parts.remove_parts`), so it can be run again as it was.

    Sources are written as given (local paths relative to this process's folder stay
    so); skipped documents are merged into ``log`` in the order of ``paths``.

    Returns
    -------
    (documents written, parts, warnings)
    """
    from ..output.parts import remove_parts

    names: list[str] = []
    try:
        with connect(address) as cluster:
            return _write_predictions(
                cluster, data, classes, settings, paths, abstention, explain, policy, log,
                folder, fmt, top_k, unsure_label, calibrate, names,
            )  # fmt: skip
    except BaseException:  # no part of a failed run stays: it can be run again as it was
        remove_parts(folder, names)
        raise


def _write_predictions(
    cluster, data, classes, settings, paths, abstention, explain, policy, log, folder, fmt,
    top_k, unsure_label, calibrate, names: list[str],
) -> tuple[int, int, list[str]]:  # fmt: skip
    """:func:`write_predictions` on the connected ``cluster``; ``names`` receives the
    names of the parts as soon as they are known (so that a failure can remove them)."""
    from ..models.model import BATCH_SIZE
    from ..output.parts import digits_for, part_name

    written, problems = 0, []
    n = len(paths)
    size = max(1, min(BATCH_SIZE, -(-n // (cluster.threads * 4))))
    count = -(-n // size)
    digits = digits_for(count)
    names.extend(part_name(i, fmt, digits) for i in range(count))
    model = cluster.client.scatter(data, broadcast=True, hash=False)
    digest = hashlib.sha256(data).hexdigest()
    parts = (
        (model, digest, settings, [_absolute(p) for p in paths[a : a + size]], a,
         abstention, explain, policy, tuple(classes), fmt, top_k, unsure_label, folder,
         part_name(a // size, fmt, digits), list(paths[a : a + size]), calibrate)
        for a in range(0, n, size)
    )  # fmt: skip
    for start, end, rows, part_log, part_problems in cluster.run_ordered(write_part, parts):
        if log is not None:
            given = dict(zip(map(_absolute, paths[start:end]), paths[start:end]))
            part_log.skipped = [
                replace(skip, source=given.get(skip.source, skip.source))
                for skip in part_log.skipped
            ]
            log.add(part_log)
        written += rows
        problems.extend(part_problems)
    return written, count, problems


def model_to_send(model_path: str, paths: Sequence[str], overrides: dict, use_calibration: bool):
    """What a predict on a cluster sends: ``(data, settings, calibrate, classes, files)``,
    the model file's bytes (the workers get these very bytes), the settings it is scored
    with and whether its calibration applies (:func:`nbclass.models.model.scoring_settings` of the
    estimator ``overrides``), its classes and the files of ``paths`` (a missing path
    stops here, before any work is sent)."""
    from ..modelfile.fileformat import read
    from ..modelfile.textfile import loads
    from ..models.model import scoring_settings
    from ..reading.corpus import expand_paths

    require_dask()
    data = read(model_path)
    model = loads(data, model_path)
    settings, calibrate = scoring_settings(model, overrides, use_calibration)
    files = list(expand_paths(paths))
    return data, settings, calibrate, model.active_counts.classes, files


def predict_paths(
    address: str, model_path: str, paths: Sequence[str], scoring: tuple, abstention,
    explain: int | None, policy, log,
) -> tuple[Sequence[str], object, Iterator]:  # fmt: skip
    """``(classes, settings, batches)`` of the files at ``paths`` scored on the cluster
    with the model at ``model_path`` and ``scoring``, ``(overrides, use_calibration)``:
    each batch is ``(sources, log_proba, extras)``, ``log_proba`` an ndarray (n, C)
    (:func:`predict_files`)."""
    data, settings, calibrate, classes, files = model_to_send(model_path, paths, *scoring)
    batches = predict_files(
        address, data, classes, settings, files, abstention, explain, policy, log,
        calibrate=calibrate,
    )  # fmt: skip
    rows = ((s.sources, s.log_proba, extra) for s, extra in batches)
    return classes, settings, rows


def write_paths(
    address: str, model_path: str, paths: Sequence[str], scoring: tuple, abstention,
    explain: int | None, policy, log, folder: str, fmt: str, top_k,
) -> list[str]:  # fmt: skip
    """Score the files at ``paths`` on the cluster, each worker writing the parts it
    scores into ``folder`` (:func:`write_predictions`); returns the warnings about
    documents that every class rules out."""
    data, settings, calibrate, classes, files = model_to_send(model_path, paths, *scoring)
    abstention.check_classes(classes)
    _, _, problems = write_predictions(
        address, data, classes, settings, files, abstention, explain, policy, log, folder, fmt,
        top_k, abstention.label, calibrate=calibrate,
    )  # fmt: skip
    return problems


# fit ----------------------------------------------------------------------------------


def _absolute(path: str) -> str:
    """``path`` as a worker must be given it: a URL as it is, a local path absolute."""
    if isinstance(path, str) and "://" in path:
        from ..reading.storage import is_url

        if is_url(path):
            return path
    return os.path.abspath(path)


def part_size(n: int, threads: int) -> int:
    """Documents per part: at most ``PART_SIZE``, and at least four parts per thread."""
    from ..counting.counts import PART_SIZE

    return max(1, min(PART_SIZE, -(-n // (threads * 4))))


def list_folder(folder: str):
    """A worker's listing of one class folder: its files, sorted (a
    :class:`nbclass.reading.corpus.PathList`)."""
    from ..reading.corpus import PathList, walk_files

    return PathList(walk_files(folder))


def take(listing, start: int, end: int) -> list[str]:
    """``listing[start:end]``: run where the listing is, so that only the slice moves."""
    return listing[start:end]


def tally_listed(paths, label: int, classes, tokenizer, ledger: bool, policy):
    """``(classes, packed tally)`` of the documents at ``paths``, all of class
    ``classes[label]``: a leaf of the reduction of :func:`count_folder`."""
    from ..counting.tally import tally_part

    part = tally_part(paths, [label] * len(paths), len(classes), tokenizer, 0, ledger, policy)
    return tuple(classes), part[2]


def tally_given(paths, labels, classes, tokenizer, ledger: bool, policy):
    """``(classes, packed tally)`` of the documents at ``paths``: a leaf of
    :func:`count_paths`."""
    from ..counting.tally import tally_part

    return tuple(classes), tally_part(paths, labels, len(classes), tokenizer, 0, ledger, policy)[2]


def _merge(*parts):
    from ..counting.tally import combine

    return combine(*parts)


def sample_listed(paths, label: int, classes, policy) -> list:
    """The sample (:class:`nbclass.counting.sketch.Keeper`) of the documents at ``paths``,
    all of class ``classes[label]``, as ``(digest, class name, bytes)`` items: a leaf of
    :func:`sample_folder`. Every document is read and hashed where it is; only the bytes
    of those the sample keeps travel. Documents ``policy`` skips are left out (the count
    skipped them too, and said so)."""
    from dataclasses import replace

    from ..counting.sketch import Keeper
    from ..counting.tally import digest
    from ..reading.policy import ReadLog, read_document

    keeper, log, quiet = Keeper(), ReadLog(), replace(policy, on_error="skip")
    name = classes[label]
    for path in paths:
        data = read_document(path, quiet, log)
        if data is not None:
            keeper.offer(digest(data), name, data)
    return keeper.items()


def _merge_samples(*parts) -> list:
    """The sample of the union of the sets whose samples are ``parts``: exact, as the
    sample of a union is the sample of its parts' samples (:mod:`nbclass.counting.sketch`)."""
    from ..counting.sketch import Keeper

    keeper = Keeper()
    for items in parts:
        for item in items:
            keeper.offer(*item)
    return keeper.items()


def _listed(cluster, folders) -> tuple[list, list[int]]:
    """Each class folder of ``folders`` (``(name, path)``) listed by a worker, whose listing
    stays there (futures), and the listings' lengths, which come back. A listing that
    failed raises its own error (:meth:`Cluster._result`), not Dask's."""
    client = cluster.client
    listings = [client.submit(list_folder, _absolute(path), pure=False) for _, path in folders]
    lengths = [client.submit(len, listing, pure=False) for listing in listings]
    try:
        sizes = client.gather(lengths)
    except Exception:
        for future in lengths:
            if future.status != "finished":
                cluster._result(future)
        raise
    return listings, sizes


def sample_folder(address: str, root: str, policy) -> list:
    """The sample for choosing the model (:mod:`nbclass.counting.sketch`) of the corpus
    folder ``root``, made on the cluster: each class folder is listed by a worker, each
    part's documents are read and hashed by a worker, which keeps the part's sample, and
    the samples are merged on the workers in a tree (:meth:`Cluster.reduce`). This
    process receives the ``(digest, class name, bytes)`` of the sampled documents only,
    in (digest, class) order: the same as reading every document here would keep."""
    from ..reading.corpus import class_folders

    folders = class_folders(root)
    classes = tuple(name for name, _ in folders)
    with connect(address) as cluster:
        client = cluster.client
        listings, sizes = _listed(cluster, folders)
        size = part_size(sum(sizes), cluster.threads)

        def parts():
            for c, (listing, n) in enumerate(zip(listings, sizes)):
                for a in range(0, n, size):
                    paths = client.submit(take, listing, a, min(n, a + size), pure=False)
                    yield None, (paths, c, classes, policy)

        result = cluster.reduce(sample_listed, parts(), _merge_samples)
    return [] if result is None else result


def count_paths(
    address: str, paths, labels, classes, tokenizer, ledger: bool, policy,
    on_progress: Callable[[int, int], None] | None = None,
) -> tuple:  # fmt: skip
    """The packed tally (:func:`nbclass.counting.tally.pack`) of the documents at ``paths``,
    counted in parts on the cluster and summed there (:meth:`Cluster.reduce`): one
    result comes back. ``on_progress(start, end)`` as each part is counted."""
    n = len(paths)
    with connect(address) as cluster:
        size = part_size(n, cluster.threads)
        parts = (
            (
                (a, min(n, a + size)),
                ([_absolute(p) for p in paths[a : a + size]], list(labels[a : a + size]),
                 tuple(classes), tokenizer, ledger, policy),
            )
            for a in range(0, n, size)
        )  # fmt: skip
        done = None if on_progress is None else (lambda span: on_progress(*span))
        result = cluster.reduce(tally_given, parts, _merge, done)
    return _empty(classes) if result is None else result[1]


def counter(address: str) -> Callable[..., tuple]:
    """The counting function of the cluster of ``address`` that
    :func:`nbclass.counting.counts.count_corpus` (``cluster=``) calls: :func:`count_paths`
    with that address."""
    return partial(count_paths, address)


def _empty(classes) -> tuple:
    from ..counting.tally import new_tally, pack
    from ..reading.policy import ReadLog

    return pack((*new_tally(len(classes)), None, None, ReadLog()))


def count_folder(
    address: str, root: str, tokenizer, ledger: bool, policy, min_classes: int = 2,
    on_progress: Callable[[int], None] | None = None,
) -> tuple:  # fmt: skip
    """``(classes, packed tally)`` of the corpus folder ``root``, listed and counted on
    the cluster.

    This process lists the top of ``root`` only (its class folders); each class folder
    is listed by a worker, whose listing stays there, and only its length comes back.
    Parts of the listings are cut where they are (:func:`take`) and tallied where the
    scheduler chooses, and the tallies summed on the workers in a tree
    (:meth:`Cluster.reduce`): this process receives one integer per class and one table
    of counts. ``on_progress(n)`` as each part of ``n``
    documents is counted.

    Raises
    ------
    CorpusError
        As :func:`nbclass.reading.corpus.list_corpus` does.
    """
    from ..errors import CorpusError
    from ..reading.corpus import check_classes, class_folders, empty_class

    folders = class_folders(root)
    classes = tuple(name for name, _ in folders)
    with connect(address) as cluster:
        client = cluster.client
        listings, sizes = _listed(cluster, folders)
        for (_, path), n in zip(folders, sizes):
            if not n:
                raise CorpusError(empty_class(path))
        check_classes(root, classes, min_classes)
        size = part_size(sum(sizes), cluster.threads)

        def parts():
            for c, (listing, n) in enumerate(zip(listings, sizes)):
                for a in range(0, n, size):
                    b = min(n, a + size)
                    # the slice is cut where the listing is: a class's listing, which
                    # may be large, never moves; each part gets its own paths only
                    paths = client.submit(take, listing, a, b, pure=False)
                    yield b - a, (paths, c, classes, tokenizer, ledger, policy)

        return cluster.reduce(tally_listed, parts(), _merge, on_progress)


def count_on_cluster(
    address: str, corpus_dir: str | None, lines_path: str | None, tokenizer, ledger: bool,
    min_classes: int = 2, policy=None, log=None, multi_label: bool = False,
):  # fmt: skip
    """The :class:`nbclass.models.learning.Documents` of a corpus folder (:func:`count_folder`)
    or a labelled-lines file (:func:`count_lines_file`; ``multi_label``: of multi-label
    lines, under their label sets), counted on the cluster; the documents skipped are
    merged into ``log``."""
    from ..models.learning import documents_of
    from ..reading.policy import DEFAULT_POLICY

    policy = policy or DEFAULT_POLICY
    if lines_path is not None:
        classes, packed = count_lines_file(
            address, lines_path, tokenizer, ledger, policy, multi_label
        )
        if not classes:
            if log is not None:
                log.add(packed[8])
            raise NbclassError(
                "no labelled lines in the input: write LABEL<TAB>TEXT or __label__LABEL TEXT "
                "per line"
            )
        return documents_of(classes, packed, ledger, log, lines=True)
    else:
        classes, packed = count_folder(
            address, corpus_dir, tokenizer, ledger, policy, min_classes
        )
    return documents_of(classes, packed, ledger, log)


# fit --lines FILE: byte ranges --------------------------------------------------------

LINES_RANGE = 64 * 1024 * 1024  # the largest byte range of a --lines file in one part


class _Range:
    """A binary stream of the lines of ``handle`` (open at ``start``) that belong to the
    byte range ``[start, end)``: those after the first newline at or after ``start``
    (from the beginning of the file when ``start`` is 0), up to and with the first
    newline at or after ``end`` (or the end of the file). Consecutive ranges thus hold
    every line once, as Hadoop's and Dask's text readers split files.
    """

    def __init__(self, handle, start: int, end: int):
        from ..reading.policy import CHUNK

        self.handle, self.position, self.end, self.chunk = handle, start, end, CHUNK
        self.skipping = start > 0
        self.first = 0 if start == 0 else None  # where the range's first line starts
        self.done = False

    def read(self, n: int = -1) -> bytes:
        while not self.done:
            chunk = self.handle.read(self.chunk)
            if not chunk:
                self.done = True
                break
            if self.skipping:
                i = chunk.find(b"\n")
                if i < 0:
                    self.position += len(chunk)
                    continue
                self.skipping = False
                if self.position + i >= self.end:  # that newline ends the range too
                    self.done = True
                    break
                self.position += i + 1
                self.first = self.position
                chunk = chunk[i + 1 :]
            if self.position + len(chunk) > self.end:
                i = chunk.find(b"\n", max(0, self.end - self.position))
                if i >= 0:
                    self.done = True
                    return chunk[: i + 1]
            self.position += len(chunk)
            if chunk:
                return chunk
        return b""


def _open_binary(path: str):
    if isinstance(path, str) and "://" in path:
        from ..reading.storage import is_url, open_binary

        if is_url(path):
            return open_binary(path)
    return open(path, "rb")


def _size(path: str) -> int:
    if isinstance(path, str) and "://" in path:
        from ..reading.storage import is_url, size

        if is_url(path):
            return size(path)
    return os.path.getsize(path)


def _lines_before(path: str, position: int) -> int:
    """The number of newlines in the first ``position`` bytes of the file at ``path``."""
    from ..reading.policy import CHUNK

    n = 0
    with _open_binary(path) as handle:
        while position > 0:
            chunk = handle.read(min(CHUNK, position))
            if not chunk:
                break
            n += chunk.count(b"\n")
            position -= len(chunk)
    return n


def tally_range(
    path: str, start: int, end: int, tokenizer, ledger: bool, policy, multi_label: bool = False
):  # fmt: skip
    """``(classes, packed tally)`` of the labelled lines of ``path`` in the byte range
    ``[start, end)`` (:class:`_Range`): a leaf of :func:`count_lines_file`.

    Lines are read, limited, decoded and parsed as a local ``fit --lines`` does
    (:func:`nbclass.reading.policy.iter_lines`,
    :func:`nbclass.models.learning.document_lines`; with ``multi_label``, as ``fit
    --multi-label`` does, each document under its label set); the
    classes are those met, in the order met. A line named in an error or a skip is
    numbered in the whole file, as locally (the newlines before the range are counted
    only then).
    """
    import re
    from collections import Counter

    from ..counting.tally import pack, tally, tally_ledger
    from ..models.learning import document_lines
    from ..reading.corpus import decode
    from ..reading.policy import BINARY, BINARY_PROBE, ReadLog, Skip, iter_lines
    from ..text.tokenizer import make_tokenizer

    log = ReadLog()
    tokenize = make_tokenizer(tokenizer)
    class_at: dict[str, int] = {}
    part = ([], [], [], [] if ledger else None)
    reader = None

    def renumber(text: str) -> str:
        if reader is None or not reader.first:
            return text
        base = _lines_before(path, reader.first)
        return re.sub(
            re.escape(path) + r":(\d+)", lambda m: f"{path}:{int(m.group(1)) + base}", text
        )

    def add(batch):
        labels = [class_at[label] for label, _ in batch]
        texts = [data for _, data in batch]
        if ledger:
            tally_ledger(texts, labels, len(class_at), tokenize, into=part)
        else:
            tally((tokenize(decode(t)) for t in texts), labels, len(class_at), into=part)

    try:
        with _open_binary(path) as handle:
            if policy.is_binary(handle.read(BINARY_PROBE)):  # the rule for the whole file
                if start == 0:
                    log.skip(Skip(path, BINARY, ""))
                return (), pack(((), [], [], None, None, log))
            handle.seek(start)
            reader = _Range(handle, start, end)
            lines = iter_lines(path, reader, replace(policy, binary=True), log)
            batch = []
            for _source, label, data in document_lines(lines, multi_label, start == 0):
                if label not in class_at:
                    class_at[label] = len(class_at)
                    part[0].append(0)
                    part[1].append(Counter())
                    part[2].append(Counter())
                batch.append((label, data))
                if len(batch) == 1000:
                    add(batch)
                    batch = []
            if batch:
                add(batch)
    except NbclassError as exc:
        raise type(exc)(renumber(str(exc))) from None
    except OSError as exc:
        raise NbclassError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    if log.skipped:
        log.skipped = [replace(skip, source=renumber(skip.source)) for skip in log.skipped]
    take_seen = getattr(tokenize, "take_seen", None)
    seen = take_seen() if take_seen else None
    return tuple(class_at), pack((*part[:3], part[3], seen, log))


def count_lines_file(
    address: str, path: str, tokenizer, ledger: bool, policy, multi_label: bool = False
) -> tuple:  # fmt: skip
    """``(classes, packed tally)`` of the labelled lines of the file ``path`` (a local
    path that every worker sees, or a URL), split into byte ranges counted by the workers
    (:func:`tally_range`) and summed among them: this process reads nothing of the file
    but its size, and receives one table of counts. ``multi_label``: multi-label lines,
    each document counted under its label set.

    Raises
    ------
    UsageError
        For standard input (it cannot be split), or an encoding whose line end is not
        the byte ``\\n``.
    NbclassError
        When the file cannot be read, or holds no labelled line.
    """
    from ..errors import UsageError

    if path == "-":
        raise UsageError(
            "--scheduler splits --lines FILE into byte ranges that the workers read: "
            "standard input cannot be split; give a FILE, or count here without --scheduler"
        )
    if not policy.splits_lines:
        raise UsageError(
            f"--lines splits at the byte \\n, which is not a line end in {policy.encoding}: "
            "convert the input to UTF-8 first (iconv)"
        )
    target = _absolute(path)
    try:
        total = _size(target)
    except OSError as exc:
        raise NbclassError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    with connect(address) as cluster:
        step = max(1, min(LINES_RANGE, -(-total // (cluster.threads * 4))))
        parts = (
            ((a, b), (target, a, b, tokenizer, ledger, policy, multi_label))
            for a, b in ((a, min(total, a + step)) for a in range(0, total, step))
        )
        result = cluster.reduce(tally_range, parts, _merge)
    return result or ((), _empty(()))
