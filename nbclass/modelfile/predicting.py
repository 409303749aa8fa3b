"""Bulk predict on this machine: a model file and documents to batches of predictions.

:func:`predict_documents` chooses how: when many files are listed and several processes
are allowed, forked workers read and count them while this process loads the model
(:mod:`nbclass.models.scoring`); otherwise this process reads, counts and scores them in
batches of :data:`nbclass.defaults.BATCH_SIZE`. Either way the batches are the same, in
the order of the documents: ``(sources, log posteriors, extras)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from .. import defaults
from ..errors import NbclassError

# A model of more entries than this has its run table built once, before the counting
# workers are forked (they inherit it); a smaller one is built by each worker.
PREBUILT_ENTRIES = 1 << 19


def listed_files(paths, lines: bool, jobs: int | None):
    """``(files, jobs)``: the ``(path, walked)`` files of ``paths``, which ``jobs`` worker
    processes may read and count (:mod:`nbclass.models.scoring`), or None (and one job) for
    standard input, --lines, one job, or a path that does not exist (its error comes in
    its turn, after the documents before it)."""
    from ..counting.counts import default_jobs
    from ..reading.corpus import list_inputs

    if lines or not paths or "-" in paths:
        return None, 1
    jobs = default_jobs(jobs)
    if jobs < 2:
        return None, 1
    try:
        return list_inputs(paths), jobs
    except NbclassError:
        return None, 1


def batches_of(items: Iterable, size: int) -> Iterator[list]:
    """``items`` in lists of ``size`` (the last one shorter)."""
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def predict_documents(
    model_path: str, documents: Iterable, files, jobs: int, scoring: tuple, reading: tuple,
    add_extras: Callable, check_classes: Callable, render: Callable | None = None,
    read_model: tuple | None = None,
):  # fmt: skip
    """``(classes, settings, batches)`` of the model file ``model_path`` on ``documents``
    (``(source, text)`` pairs, read lazily), or on ``files`` (listed ``(path, walked)``
    pairs, or None) read by ``jobs`` workers when that is worth it.

    ``scoring`` is ``(overrides, use_calibration)`` (:func:`nbclass.models.model.
    scoring_settings`), ``reading`` ``(policy, log)``; ``add_extras(classifier, scored)``
    gives each batch's extras, and ``check_classes(classes)`` may refuse the model's
    classes before any batch is taken. ``batches`` yields ``(sources, log_proba, extras)``,
    ``log_proba`` an ndarray (n, C) (a batch of a model of many classes in blocks); or,
    given ``render(classes, settings, sources, log_proba, extras)``, what it returns for
    each, made in the process that scored the batch: against a model of many classes
    the workers score too (:class:`nbclass.models.scoring.ScoredBlocks`), and only what
    is printed comes back. ``read_model``: ``(data, parsed)``, the model file's bytes and
    what :func:`nbclass.modelfile.fileformat.parse` gave for them, if the caller read and
    checked them already (else they are read here).
    """
    from ..models.scoring import worth_parallel

    size = defaults.BATCH_SIZE  # read when called: tests make it smaller
    if files is not None and jobs > 1 and worth_parallel(files, size):
        return _in_parallel(
            model_path, files, jobs, scoring, reading, add_extras, check_classes, render,
            read_model,
        )  # fmt: skip
    from ..modelfile.fileformat import read
    from ..modelfile.textfile import loads
    from ..models.explain import texts_scored
    from ..models.model import Classifier, scoring_settings

    if read_model is None:
        read_model = read(model_path), None
    data, parsed = read_model
    model = loads(data, model_path, parsed, scoring=True)
    settings, calibrate = scoring_settings(model, *scoring)
    classifier = Classifier(model, settings, calibrate=calibrate)
    check_classes(classifier.classes)
    _keep_loaded(len(classifier.classes))

    def batches():
        for batch in batches_of(documents, size):
            sources, texts = [source for source, _ in batch], [text for _, text in batch]
            for scored in texts_scored(classifier, sources, texts):
                yield finish(classifier, scored)

    finish = _finisher(settings, add_extras, render)
    return classifier.classes, settings, batches()


def _finisher(settings, add_extras: Callable, render: Callable | None) -> Callable:
    """``finish(classifier, scored)``: a scored block as :func:`predict_documents` yields it."""

    def finish(classifier, scored):
        extras = add_extras(classifier, scored)
        if render is None:
            return scored.sources, scored.log_proba, extras
        return render(classifier.classes, settings, scored.sources, scored.log_proba, extras)

    return finish


def _in_parallel(
    model_path, files, jobs, scoring, reading, add_extras, check_classes, render, read_model
):  # fmt: skip
    """:func:`predict_documents` by ``jobs`` forked workers, which read and count while this
    process loads the model; an error before the batches are taken (the model, the
    options, ``check_classes``) stops the workers."""
    from functools import partial

    from ..models.scoring import CountedBatches, score_counted
    from .counter import load_counter
    from .fileformat import MODEL_SECTIONS, OPTIONAL_SECTIONS, parse, read

    if read_model is None:
        data = read(model_path)
        # Damage is refused here, every checksum checked once: the counting workers and
        # the loader below take the header and sections as parsed (each checked them
        # again: 55 MB of crc32 each time for 20,000 classes x 200,000 words).
        read_model = data, parse(data, model_path, MODEL_SECTIONS, OPTIONAL_SECTIONS)
    data, parsed = read_model
    policy, log = reading
    header = parsed[0]
    entries, classes = header.get("n_used"), header.get("classes")
    if isinstance(classes, list):
        _keep_block_memory(len(classes))  # before the workers are forked: they make blocks too
    if isinstance(entries, int) and entries > PREBUILT_ENTRIES:
        # The tokenizer, the words and their run table, read from the bytes and built
        # once, here, before the workers are forked: they inherit it (each built its own
        # before, 0.4-0.5 s of CPU a worker against 20 Newsgroups' default model with
        # word pairs). This process lets it go once they are forked (its classifier
        # scores what they counted).
        counter = load_counter(data, model_path, parsed)
        counter.runs  # noqa: B018 - built before the fork
    else:
        # A smaller table (0.04 s for 20 Newsgroups' 130,000 words) is built by each
        # worker while this process reads the model, rather than before they start.
        counter = partial(load_counter, data, model_path, parsed)
    counted = CountedBatches(counter, files, policy, jobs, defaults.BATCH_SIZE)
    del counter
    _keep_loaded()
    try:  # the workers count while scipy is imported and the model loaded
        from ..models.model import Classifier, scoring_settings
        from .textfile import loads

        model = loads(data, model_path, parsed, scoring=True)
        settings, calibrate = scoring_settings(model, *scoring)
        classifier = Classifier(model, settings, calibrate=calibrate)
        check_classes(classifier.classes)
    except BaseException:
        counted.close()
        raise
    _keep_loaded()  # (the blocks' memory is kept since the start, above)
    finish = _finisher(settings, add_extras, render)
    if render is not None and _in_blocks(len(classifier.classes)):
        # Scoring is most of the work: the workers, forked now, share the classifier.
        from ..models.scoring import ScoredBlocks

        try:
            batches = ScoredBlocks(counted, classifier, finish, jobs, log)
        except BaseException:
            counted.close()
            raise
        return classifier.classes, settings, iter(batches)
    return classifier.classes, settings, score_counted(classifier, counted, log, finish)


def _keep_loaded(classes: int | None = None) -> None:
    """Take every object made so far (the modules, the model, the classifier: they live
    until the process ends) out of the cyclic garbage collector's passes. Each batch
    makes thousands of lists and strings, and the collections they trigger walked all
    those objects again: 13 ms of the 19 batches of the multilingual test split, when
    the main process's scoring and printing is what the workers wait for.

    With the number of ``classes``, when a batch is scored in blocks
    (:func:`nbclass.models.explain.block_rows`), the memory of the blocks is kept too
    (:func:`nbclass.reading.process.keep_freed_memory`, as a default fit does): each block
    makes and frees (documents, classes) arrays of 8 MB a few times, and given back to
    the kernel and asked for again, their pages were cleared each time (against 20,000
    classes, 200 blocks a 10,000-document predict, a quarter of its CPU time)."""
    import gc

    gc.freeze()
    if classes is not None:
        _keep_block_memory(classes)


def _keep_block_memory(classes: int) -> None:
    """Keep the memory freed by this process (:func:`nbclass.reading.process.
    keep_freed_memory`) where a batch is scored in blocks against ``classes`` classes."""
    if _in_blocks(classes):
        from ..reading.process import keep_freed_memory

        keep_freed_memory()


def _in_blocks(classes: int) -> bool:
    """Whether a batch is scored in blocks against a model of ``classes`` classes
    (:func:`nbclass.models.explain.block_rows`)."""
    from ..models.explain import block_rows

    return block_rows(classes) < defaults.BATCH_SIZE
