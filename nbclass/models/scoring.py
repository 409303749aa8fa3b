"""Bulk predict on several cores: files read and counted by forked worker processes.

Reading and counting the documents is most of predict's work; loading the model and
building the scorer is most of the rest, and it needs scipy. So the work is split:

- :class:`CountedBatches` forks ``jobs`` worker processes as soon as the files are
  listed, the model file is read and its checksums checked, and the model's
  :class:`nbclass.text.vectorizer.TextCounter` is read from those bytes
  (:func:`nbclass.modelfile.counter.load_counter`: the tokenizer and the vocabulary, no
  counts) with its run table built, once, which the workers inherit. Each worker
  takes a batch of files (``BATCH_SIZE``),
  reads and counts it, and sends back the sources, the nonzero counts and the token
  numbers, with the batch's read log, up to ``AHEAD`` batches ahead of the main process
  (or more, for short documents: :func:`ahead`);
- meanwhile the main process loads the whole model and builds the
  :class:`nbclass.models.model.Classifier`; then :func:`score_counted` scores each batch as it
  comes (one sparse product), in the order of the files, and the caller prints it;
- against a model of many classes (a batch scored in blocks), scoring is most of the
  work: :class:`ScoredBlocks` forks ``jobs`` more workers once the model is loaded,
  which share it, score the blocks of the counted batches and make what is printed of
  them; the main process only cuts the batches into blocks and prints, in order.

The main process replays each batch's read log (warnings of skipped documents, replaced
characters) when it scores that batch, so the warnings come in the same order as in one
process. The numbers are the same: the same code counts and scores each batch.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence

from ..reading.policy import (
    ReadLog,
    ReadPolicy,
    has_bytes,
    mean_bytes,
    read_document,
    read_documents,
)
from ..reading.process import signals_held, worker_result

# Below this much text, one process: forking and sending back cost more than they save;
# unless there are this many files: opening and reading a file costs as much as counting
# a few kB of its text, so many short documents are worth the workers too.
PARALLEL_MIN_BYTES = 4 * 2**20
PARALLEL_MIN_FILES = 10_000
# Batches each worker may have counted ahead of the one the main process scores. The main
# process first imports scipy and loads the model (about 0.4 s for 20 Newsgroups' model),
# in which time a worker counts about four batches of its test split: with fewer, the
# workers wait idle and the main process then waits for them; with more, the memory of
# the batches counted and not yet scored grows for nothing.
AHEAD = 4
# ... or more, if they hold no more than this much text (what they hold, counted, is
# about as large): 20 Newsgroups' batches have 2 MB, the multilingual corpus's 60 kB.
TEXT_AHEAD = 16 * 2**20

_WORK: tuple | None = None  # in a worker: (text counter, read policy)


def worth_parallel(files: Sequence[tuple[str, bool]], batch_size: int) -> bool:
    """Whether ``files`` (``(path, walked)`` pairs) are enough work for worker processes:
    more than one batch, and ``PARALLEL_MIN_FILES`` files or at least ``PARALLEL_MIN_BYTES``
    (estimated from a sample of the files by :func:`nbclass.reading.policy.has_bytes`,
    given them as a list)."""
    if len(files) <= batch_size:
        return False
    return len(files) >= PARALLEL_MIN_FILES or has_bytes([p for p, _ in files], PARALLEL_MIN_BYTES)


def ahead(files: Sequence[tuple[str, bool]], jobs: int, batch_size: int) -> int:
    """The batches to have in flight: ``AHEAD`` a worker, or as many as hold about
    ``TEXT_AHEAD`` bytes of text (file sizes from a sample), if more: batches of short
    documents are then all counted while the model loads. At most every batch."""
    size = batch_size * mean_bytes([path for path, _ in files])
    wanted = max(AHEAD * jobs, int(TEXT_AHEAD // max(size, 1.0)))
    return min(wanted, -(-len(files) // batch_size))


class CountedBatches:
    """The batches of ``files``, read and counted by ``jobs`` worker processes forked
    when this is made (at most :func:`ahead` batches in flight).

    Iterating gives, per batch in the order of the files, ``(sources, entries,
    n_tokens, log)``: :meth:`nbclass.text.vectorizer.TextCounter.entries` of the documents
    read and the batch's :class:`nbclass.reading.policy.ReadLog`. A worker's error (an
    unreadable file under ``--on-error fail``) is raised in its turn, after the batches
    before it. :meth:`close` stops the workers (iterating to the end does too).
    """

    def __init__(
        self, counter, files: Sequence[tuple[str, bool]], policy: ReadPolicy, jobs: int,
        batch_size: int,
    ):  # fmt: skip
        """``counter``: the model's :class:`nbclass.text.vectorizer.TextCounter`, or a
        function that makes it (each worker then calls it once)."""
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        global _WORK
        # Inherited by the forked workers, each of which builds the counter (when given a
        # function that makes it) and its run table (a cached property) as it starts,
        # while this process loads the model.
        _WORK = [counter, policy]
        self._batches = (files[i : i + batch_size] for i in range(0, len(files), batch_size))
        from ..reading.process import start_worker

        workers = min(jobs, -(-len(files) // batch_size))  # never more than the batches
        self._pool = ProcessPoolExecutor(
            workers,
            mp_context=multiprocessing.get_context("fork"),
            initializer=start_worker,  # workers never outlive this process
            initargs=(os.getpid(),),
        )
        self._pending = deque()
        try:
            for _ in range(ahead(files, jobs, batch_size)):
                self._submit()
        except BaseException:
            self.close()
            raise
        # The first submit forked every worker (under fork, Python 3.10.5 and later start
        # a pool's workers all at once): each has the counter, and this process needs
        # none of its own. Where they start as needed (3.10.0 to 3.10.4), or the pool
        # does not say, it is kept for the workers forked later.
        if len(getattr(self._pool, "_processes", None) or ()) >= workers:
            _WORK[0] = None

    def _submit(self) -> None:
        batch = next(self._batches, None)
        if batch is not None:
            with signals_held():  # the first submit forks the workers
                future = self._pool.submit(_count_batch, batch)
            self._pending.append(future)

    def __iter__(self) -> Iterator[tuple]:
        try:
            while self._pending:
                result = worker_result(self._pending.popleft(), self._pool)
                self._submit()
                yield result
        finally:
            self.close()

    def close(self) -> None:
        global _WORK
        self._pool.shutdown(wait=True, cancel_futures=True)
        _WORK = None


def _count_batch(batch: Sequence[tuple[str, bool]]):
    """A worker's task: read and count one batch of files."""
    counter, policy = _WORK
    if callable(counter):  # the first batch of this worker
        counter = _WORK[0] = counter()
    log = ReadLog()  # no warnings here: the main process prints them in order
    paths = [path for path, _ in batch]
    if all(walked for _, walked in batch):
        read = list(read_documents(paths, policy, log))
    else:
        read = [(i, read_document(p, policy, log, walked)) for i, (p, walked) in enumerate(batch)]
        read = [(i, data) for i, data in read if data is not None]
    sources = [paths[i] for i, _ in read]
    documents = [data for _, data in read]

    def decode(data: bytes) -> str:
        return log.decode(data, policy.encoding)

    *entries, n_tokens = counter.document_entries(documents, decode, policy.encoding)
    return sources, entries, n_tokens, log


def score_counted(
    classifier, counted: CountedBatches, log: ReadLog, finish: Callable
) -> Iterator:
    """``finish(classifier, scored)`` of each block of each batch of ``counted``, in
    order (:func:`nbclass.models.explain.scored_blocks`: one block a batch but for a
    model of many classes); each batch's read log is added to ``log`` (its warnings
    printed) before its blocks are given."""
    from .explain import scored_blocks

    for sources, entries, n_tokens, batch_log in counted:
        log.add(batch_log)
        for scored in scored_blocks(classifier, sources, entries, n_tokens):
            yield finish(classifier, scored)


_SCORING: tuple | None = None  # in a scoring worker: (classifier, finish)


class ScoredBlocks:
    """The blocks of the batches of ``counted`` scored by ``jobs`` worker processes,
    forked when this is made, once the model is loaded: they share the ``classifier``
    (copy on write: its weights are only read) and each gives back
    ``finish(classifier, scored)`` of a block, what is printed of it, never its
    (documents × classes) scores.

    Against a model of many classes, scoring is most of predict's work (20,000 classes:
    200 million scores for 10,000 documents, against reading and counting them), and
    one process scoring what the counting workers send leaves a core idle. The main
    process cuts each counted batch into the blocks it would score
    (:func:`nbclass.models.explain.blocks_of`: the same blocks, so the same floats and
    the same parts), sends them, at most ``AHEAD`` a worker ahead of the one it gives,
    and gives the results in the order of the files. Each batch's read log is added to
    ``log`` before its first block is given; an error of the counting (an unreadable
    file under ``--on-error fail``) is raised in its turn, after the blocks before it.
    """

    def __init__(self, counted: CountedBatches, classifier, finish: Callable, jobs: int, log):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from ..reading.process import start_worker

        prepare = getattr(classifier.scorer, "prepare", None)
        if prepare is not None:  # made once, here, and shared by the workers
            prepare()
        global _SCORING
        _SCORING = (classifier, finish)  # inherited by the forked workers
        self._counted, self._log = counted, log
        self._blocks = self._cut(iter(counted), classifier)
        self._pool = ProcessPoolExecutor(
            jobs,
            mp_context=multiprocessing.get_context("fork"),
            initializer=start_worker,  # workers never outlive this process
            initargs=(os.getpid(),),
        )
        self._pending = deque()
        try:
            for _ in range(AHEAD * jobs):
                self._submit()
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _cut(counted: Iterator, classifier) -> Iterator[tuple]:
        from .explain import blocks_of

        for sources, entries, n_tokens, batch_log in counted:
            for block in blocks_of(classifier, sources, entries, n_tokens):
                yield batch_log, block
                batch_log = None  # the batch's first block carries its log

    def _submit(self) -> None:
        if self._blocks is None:
            return
        try:
            item = next(self._blocks, None)
        except Exception as error:  # noqa: BLE001 (raised in its turn, by __iter__)
            self._blocks = None
            self._pending.append((None, None, error))
            return
        if item is None:
            self._blocks = None
            return
        batch_log, block = item
        with signals_held():  # the first submit forks the workers
            future = self._pool.submit(_score_block, block)
        self._pending.append((batch_log, future, None))

    def __iter__(self) -> Iterator:
        try:
            while self._pending:
                batch_log, future, error = self._pending.popleft()
                if error is not None:
                    raise error
                if batch_log is not None:
                    self._log.add(batch_log)
                result = worker_result(future, self._pool)
                self._submit()
                yield result
        finally:
            self.close()

    def close(self) -> None:
        global _SCORING
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._counted.close()
        _SCORING = None


def _score_block(block: tuple):
    """A scoring worker's task: one block of :func:`nbclass.models.explain.blocks_of`,
    scored and finished."""
    from .explain import score_block

    classifier, finish = _SCORING
    return finish(classifier, score_block(classifier, *block))
