"""Bulk predict on several cores: batches of files scored by forked worker processes.

The main process loads the model and builds the :class:`nbclass.model.Classifier` once;
``jobs`` worker processes are forked from it, so they share its arrays and start in a few
milliseconds. Each takes a batch of files (``BATCH_SIZE``), reads, tokenizes, counts and
scores it, and sends back only what is printed: the sources, the log-posteriors and the
per-document extras. The main process prints the batches in the order of the files, as
the one-process path does, and replays each batch's read log (warnings of skipped
documents, replaced characters) when it prints that batch. The numbers are the same: the
same code scores each batch.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence

from .reading import ReadLog, ReadPolicy, has_bytes, read_document

# Below this much text, one process: forking and sending back cost more than they save.
PARALLEL_MIN_BYTES = 4 * 2**20

_WORK: tuple | None = None  # in a worker: (classifier, policy, extras function)


def worth_parallel(files: Sequence[tuple[str, bool]], batch_size: int) -> bool:
    """Whether ``files`` (``(path, walked)`` pairs) are enough work for worker processes:
    more than one batch and at least ``PARALLEL_MIN_BYTES``."""
    return len(files) > batch_size and has_bytes((p for p, _ in files), PARALLEL_MIN_BYTES)


def score_files(
    classifier, files: Sequence[tuple[str, bool]], policy: ReadPolicy, log: ReadLog,
    extras: Callable, jobs: int, batch_size: int,
) -> Iterator[tuple[list[str], list[list[float]], list]]:  # fmt: skip
    """``(sources, log_proba rows, extras)`` per batch of ``files``, in order, scored by
    ``jobs`` forked workers (at most two batches each in flight).

    ``extras(classifier, scored)`` gives a batch's per-document extras
    (:func:`nbclass.explain.extras` with its options bound). An error of a worker (an
    unreadable file under ``--on-error fail``) is raised here, after the batches before it.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    global _WORK
    batches = (files[i : i + batch_size] for i in range(0, len(files), batch_size))
    _ = classifier.runs  # built once here (a cached property), shared by the workers
    _WORK = (classifier, policy, extras)  # inherited by the forked workers
    context = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(jobs, mp_context=context)
    try:
        pending = deque()
        for batch in batches:
            pending.append(pool.submit(_score_batch, batch))
            if len(pending) < 2 * jobs:
                continue
            yield _received(pending.popleft().result(), log)
        while pending:
            yield _received(pending.popleft().result(), log)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        _WORK = None


def _received(result, log: ReadLog):
    sources, rows, extra, batch_log = result
    log.add(batch_log)  # the warnings of this batch's skipped documents, now
    return sources, rows, extra


def _score_batch(batch: Sequence[tuple[str, bool]]):
    """A worker's task: read and score one batch of files."""
    from .explain import score_batch

    classifier, policy, extras = _WORK
    log = ReadLog()  # no warnings here: the main process prints them in order
    documents = []
    for path, walked in batch:
        data = read_document(path, policy, log, walked)
        if data is not None:
            documents.append((path, log.decode(data, policy.encoding)))
    if not documents:
        return [], [], [], log
    scored = score_batch(classifier, documents)
    return scored.sources, scored.log_proba.tolist(), extras(classifier, scored), log
