"""What several commands share: library settings from options, summaries, progress bars.
"""

from __future__ import annotations

import os
import sys
import time
from array import array

import click

from ..errors import (
    UsageError,
)


def estimator_overrides(event_model, estimator, alpha, beta, text_options=None) -> dict:
    """The estimator options as :func:`nbclass.models.estimators.resolve` takes them."""
    return dict(
        model=event_model, estimator=estimator, alpha=alpha, beta=beta, **(text_options or {})
    )


def resolve_settings(base, event_model, estimator, alpha, beta, text_options=None):
    """The estimator settings of the options given, over ``base``'s."""
    from ..models.estimators import resolve

    return resolve(base, **estimator_overrides(event_model, estimator, alpha, beta, text_options))


def refuse_reading_options(reading) -> None:
    """--table reads a table, not documents: the reading options would be ignored."""
    from ..reading.policy import DEFAULT_POLICY

    if reading[0] != DEFAULT_POLICY:
        raise UsageError(
            "--encoding, --max-bytes, --binary and --on-error apply to documents, not to "
            "--table (a table is read as UTF-8)"
        )


class FileProgress:
    """A progress bar over ``paths`` on a terminal's stderr; called with (start, end)."""

    def __init__(self, verb: str, paths: list[str], quiet: bool):
        from ..output.render import ProgressBar

        enabled = not quiet and sys.stderr.isatty()
        self.paths, self.cursor = paths, 0
        self.sizes = array("q", map(_size, paths) if enabled else ())
        self.bar = ProgressBar(verb, len(paths), sum(self.sizes), enabled)

    def __enter__(self):
        self.bar.__enter__()
        return self if self.bar.enabled else None

    def __exit__(self, *exc):
        self.bar.__exit__(*exc)

    def __call__(self, start: int, end: int) -> None:
        self.bar.advance(end - start, sum(self.sizes[start:end]))

    def past(self, path: str | None, finished: bool = False) -> None:
        """Advance to just past ``path``, the last file done (the files are done in the
        order of ``paths``; those skipped on the way count as done), or to the end."""
        start, n = self.cursor, len(self.paths)
        end = n if finished else start
        while path is not None and end < n:
            end += 1
            if self.paths[end - 1] == path:
                break
        self.cursor = end
        if end > start:
            self(start, end)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def given(ctx, name: str) -> bool:
    """True when the user gave option ``name`` (not its default)."""
    from click.core import ParameterSource

    return ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)


def first_given(ctx, options: dict[str, str]) -> str | None:
    """The first of ``options`` (parameter name -> option as typed) that the user gave,
    or None: for refusing options that do not apply."""
    return next((option for name, option in options.items() if given(ctx, name)), None)


def fit_settings(ctx, options: dict, base=None, multi_label: bool = False):
    """(tokenizer, vocabulary filter, defaults, auto) from fit's options, over ``base``'s
    (:func:`nbclass.models.learning.fit_settings`, told which options the user gave)."""
    from ..models.learning import fit_settings as settings

    return settings(options, {name for name in options if given(ctx, name)}, base, multi_label)


def shown(name: str) -> str:
    """A path or name as printed in text output: control characters escaped, as predict
    escapes its sources (:func:`nbclass.names.escape`)."""
    from ..names import escape

    return escape(str(name))


def summary(
    verb: str, model, path: str, start: float, extra: str = "", chose: bool = False
) -> None:  # fmt: skip
    """The one line a writing command prints on stderr; with ``chose``, what fit chose."""
    seconds = time.perf_counter() - start
    counts = model.counts
    choice = f"chose {shown(model.choice['chosen'])}, " if chose and model.choice else ""
    classes = f"{len(counts.classes)} classes"
    if model.multi_label is not None:
        data = model.multi_label
        classes = f"{len(data['labels'])} labels"
        f1 = [c["micro_f1"] for c in data["candidates"] if c.get("micro_f1") is not None]
        f1 = [data["micro_f1"]] if "micro_f1" in data else f1  # with each label's β
        choice = f"held-out micro-F1 {max(f1):.3f}, " if f1 else ""
    click.echo(
        f"{verb}: {extra}{counts.n_docs} documents, {classes}, "
        f"{len(model.active_counts.vocabulary)} words, {choice}{seconds:.2f} s -> "
        f"{shown(path)}",
        err=True,
    )


def check_scheduler(ctx, address: str) -> None:
    """Refuse a malformed scheduler address at once, naming where it came from, and a
    malformed ``NBCLASS_WORKER_TIMEOUT``."""
    from click.core import ParameterSource

    from ..cluster.remote import check_address_form, worker_timeout

    source = ctx.get_parameter_source("scheduler")
    name = "DASK_SCHEDULER_ADDRESS" if source == ParameterSource.ENVIRONMENT else "--scheduler"
    check_address_form(address, name)
    worker_timeout()  # a bad NBCLASS_WORKER_TIMEOUT is said before any work


def line_documents(lines_path: str, reading):
    """``(source, text)`` per line of ``lines_path`` (``-`` for standard input)."""
    from ..reading.corpus import iter_documents

    return iter_documents([lines_path], True, *reading)


def _cluster_sample(scheduler, corpus_dir, policy):
    """The :class:`nbclass.counting.sketch.Keeper` of the sample of a corpus folder, made
    by the workers of ``scheduler`` (:func:`nbclass.cluster.remote.sample_folder`); the
    documents are decoded here as :func:`nbclass.models.learning.read_sketch` decodes them."""
    from ..cluster.remote import sample_folder
    from ..counting.sketch import Keeper
    from ..reading.policy import ReadLog

    keeper, log = Keeper(), ReadLog()
    for item in sample_folder(scheduler, corpus_dir, policy):
        keeper.offer(*item)
    keeper.decode = lambda data: log.decode(data, policy.encoding)
    return keeper


def count_input(
    corpus_dir, lines_path, tokenizer, ledger, jobs, quiet, base, scheduler, reading,
    sample=False, keys=False, multi_label=False,
):  # fmt: skip
    """Count the documents of a corpus folder or of labelled lines (keeping their sample
    for choosing the model with ``sample``, every document's key with ``keys``);
    ``multi_label``: multi-label lines, each document under its label set."""
    from ..models.learning import count_documents, count_lines, count_multi_label_lines
    from ..reading.corpus import list_corpus

    min_classes = 1 if base is not None else 2
    if scheduler:
        from ..cluster.remote import count_on_cluster
        from ..models.learning import from_ledger, lines_sketch, read_sketch, sketched

        documents = count_on_cluster(
            scheduler, corpus_dir, lines_path, tokenizer, ledger, min_classes, *reading,
            multi_label=multi_label,
        )
        if ledger:
            return from_ledger(documents, sample, keys), None
        if sample or keys:
            if lines_path is not None:  # the lines are read here, every one hashed
                keeper = lines_sketch(line_documents(lines_path, reading), keys, multi_label)
            elif keys:
                corpus = list_corpus(corpus_dir, min_classes=min_classes)
                keeper = read_sketch(corpus, reading[0], keys)
            else:  # the workers hash the documents: only the sampled ones come here
                keeper = _cluster_sample(scheduler, corpus_dir, reading[0])
            documents = sketched(documents, keeper, tokenizer, sample, jobs)
        return documents, None
    if lines_path is not None:
        lines = line_documents(lines_path, reading)
        if multi_label:  # always with the sample the model chooses from
            return count_multi_label_lines(lines, tokenizer, ledger, keys), None
        return count_lines(lines, tokenizer, ledger, sample, keys), None
    corpus = list_corpus(corpus_dir, min_classes=min_classes)
    with FileProgress("fit", corpus.paths, quiet) as bar:
        documents = count_documents(
            corpus, tokenizer, ledger, jobs, bar, None, *reading, sample=sample, keys=keys
        )
    return documents, corpus
