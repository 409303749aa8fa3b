"""What several commands share: library settings from options, summaries, progress bars.
"""

from __future__ import annotations

import os
import sys
import time
from array import array

import click

from ..errors import (
    NbclassError,
    UsageError,
)
from ..models.estimators import (
    AUTO,
    DEFAULTS,
    EstimatorSettings,
)
from ..text.tokenizer import DEFAULT_NGRAM_RANGE, DEFAULT_TOKEN_PATTERN


def _overrides(event_model, estimator, alpha, beta, text_options=None) -> dict:
    """The estimator options as :func:`nbclass.models.estimators.resolve` takes them."""
    return dict(
        model=event_model, estimator=estimator, alpha=alpha, beta=beta, **(text_options or {})
    )


def _settings(base, event_model, estimator, alpha, beta, text_options=None):
    from ..models.estimators import resolve

    return resolve(base, **_overrides(event_model, estimator, alpha, beta, text_options))


def _refuse_reading_options(reading) -> None:
    """--table reads a table, not documents: the reading options would be ignored."""
    from ..reading.policy import DEFAULT_POLICY

    if reading[0] != DEFAULT_POLICY:
        raise UsageError(
            "--encoding, --max-bytes, --binary and --on-error apply to documents, not to "
            "--table (a table is read as UTF-8)"
        )


class _progress:
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


def _given(ctx, name: str) -> bool:
    """True when the user gave option ``name`` (not its default)."""
    from click.core import ParameterSource

    return ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)


def _fit_settings(ctx, p: dict, base=None):
    """(tokenizer, vocabulary filter, defaults, auto) from fit's options, over ``base``'s.

    ``auto`` is True when fit is to choose the settings from the data (``--model auto``,
    the default when no estimator option is given); ``defaults`` is then a stand-in. With
    a ``base`` model (``--update``, ``sync``), options the user did not give keep the
    model's settings, and tokenizer options that differ from the model's are refused.
    """
    from dataclasses import replace

    from ..models.estimators import overridden, resolve
    from ..models.model import VocabularyFilter
    from ..text.tokenizer import TokenizerSettings, load_stop_words, make_tokenizer

    words, source = load_stop_words(p["stop_words"], p["lowercase"])
    tokenizer = TokenizerSettings(
        lowercase=p["lowercase"],
        token_pattern=DEFAULT_TOKEN_PATTERN if p["token_pattern"] is None else p["token_pattern"],
        ngram_range=p["ngram_range"] or DEFAULT_NGRAM_RANGE,
        stop_words=words,
        stop_words_source=source,
        hash_features=p["hash_features"],
    )
    make_tokenizer(tokenizer)  # refuse a pattern that cannot work before reading anything
    vocabulary_filter = VocabularyFilter(
        min_df=p["min_df"], max_features=p["max_features"]
    ).validate()
    overrides = _overrides(
        p["event_model"], p["estimator"], p["alpha"], p["beta"], p["text_options"]
    )
    others = dict(overrides, model=None)
    if p["event_model"] == AUTO and overridden(**others):
        raise UsageError(
            "--model auto chooses the estimator, priors and transforms itself: give "
            "--model NAME to set them"
        )
    if base is None:
        if not overridden(**overrides):
            return tokenizer, vocabulary_filter, DEFAULTS, True
        return tokenizer, vocabulary_filter, resolve(EstimatorSettings(), **overrides), False
    if p["event_model"] == AUTO:
        raise UsageError(
            "--model auto chooses from a whole corpus; an update keeps the model's choice: "
            "fit the whole corpus anew to choose again"
        )
    from ..models.learning import check_same_tokenizer

    given = {
        name: getattr(tokenizer, name)
        for name in ("lowercase", "token_pattern", "ngram_range", "hash_features")
        if _given(ctx, name)
    }
    if _given(ctx, "stop_words"):
        given.update(stop_words=tokenizer.stop_words, stop_words_source=source)
    check_same_tokenizer(base, replace(base.tokenizer, **given), "the model")
    if not any(_given(ctx, name) for name in ("min_df", "max_features")):
        vocabulary_filter = base.vocabulary_filter
    else:
        vocabulary_filter = replace(
            base.vocabulary_filter,
            **{k: p[k] for k in ("min_df", "max_features") if _given(ctx, k)},
        )
    defaults = resolve(base.defaults, **overrides)
    return base.tokenizer, vocabulary_filter.validate(), defaults, False


def _with_defaults(model, defaults):
    """``model`` with new default settings; a choice and calibration made for other
    settings are dropped with them."""
    from dataclasses import replace

    if defaults == model.defaults:
        return model
    return replace(model, defaults=defaults, choice=None, calibration=None)


def _shown(name: str) -> str:
    """A path or name as printed in text output: control characters escaped, as predict
    escapes its sources (:func:`nbclass.names.escape`)."""
    from ..names import escape

    return escape(str(name))


def _summary(
    verb: str, model, path: str, start: float, extra: str = "", chose: bool = False
) -> None:  # fmt: skip
    """The one line a writing command prints on stderr; with ``chose``, what fit chose."""
    seconds = time.perf_counter() - start
    counts = model.counts
    choice = f"chose {_shown(model.choice['chosen'])}, " if chose and model.choice else ""
    click.echo(
        f"{verb}: {extra}{counts.n_docs} documents, {len(counts.classes)} classes, "
        f"{len(model.active_counts.vocabulary)} words, {choice}{seconds:.2f} s -> "
        f"{_shown(path)}",
        err=True,
    )


def _check_scheduler(ctx, address: str) -> None:
    """Refuse a malformed scheduler address at once, naming where it came from."""
    from click.core import ParameterSource

    from ..cluster.remote import check_address_form

    source = ctx.get_parameter_source("scheduler")
    name = "DASK_SCHEDULER_ADDRESS" if source == ParameterSource.ENVIRONMENT else "--scheduler"
    check_address_form(address, name)


def _line_documents(lines_path: str, reading):
    """``(source, text)`` per line of ``lines_path`` (``-`` for standard input)."""
    from ..reading.corpus import iter_documents

    return iter_documents([lines_path], True, *reading)


def _new_model(documents, tokenizer, vocabulary_filter, defaults, auto: bool, jobs: int = 1):
    """The model of freshly counted ``documents``; with ``auto``, its settings chosen by
    cross-validation on the documents' sample (:func:`nbclass.models.model.with_choice`)."""
    from ..models.model import Model, check_usable, with_choice

    if len(documents.counts.classes) < 2:
        raise NbclassError(
            f"the input has only one class ({documents.counts.classes[0]!r}): a "
            "classifier needs at least two classes"
        )
    model = Model(
        documents.counts, tokenizer, vocabulary_filter, defaults, ledger=documents.ledger,
        column_words=documents.column_words,
    )  # fmt: skip
    check_usable(model)
    return with_choice(model, documents.sample, jobs) if auto else model


def _reload(path: str, before):
    """The model at ``path`` read again under its lock, refusing a change of settings.

    Documents were counted for the model as it was before the lock was taken; another
    writer may have changed its counts meanwhile (that is fine, counts add up), but not
    its tokenizer or whether it keeps a ledger.
    """
    from ..modelfile.textfile import load

    now = load(path)
    if now.tokenizer != before.tokenizer or (now.ledger is None) != (before.ledger is None):
        raise NbclassError(
            f"{path!r} was replaced by a model with other settings while the documents were "
            "read; run the command again"
        )
    return now


def _count(
    corpus_dir, lines_path, tokenizer, ledger, jobs, quiet, base, scheduler, reading,
    sample=False,
):  # fmt: skip
    """Count the documents of a corpus folder or of labelled lines (keeping a sample of
    them for choosing the model with ``sample``)."""
    from ..models.learning import count_documents, count_lines
    from ..reading.corpus import list_corpus

    min_classes = 1 if base is not None else 2
    if scheduler:
        from ..cluster.remote import count_on_cluster

        documents = count_on_cluster(
            scheduler, corpus_dir, lines_path, tokenizer, ledger, min_classes, *reading
        )
        if sample:  # the sample for choosing the model is read here, as a local fit reads it
            from ..models.learning import corpus_sample, lines_sample

            if lines_path is not None:
                documents.sample = lines_sample(_line_documents(lines_path, reading))
            else:
                corpus = list_corpus(corpus_dir, min_classes=min_classes)
                documents.sample = corpus_sample(corpus, reading[0])
        return documents, None
    if lines_path is not None:
        documents = count_lines(
            _line_documents(lines_path, reading), tokenizer, ledger, sample
        )
        return documents, None
    corpus = list_corpus(corpus_dir, min_classes=min_classes)
    with _progress("fit", corpus.paths, quiet) as bar:
        documents = count_documents(
            corpus, tokenizer, ledger, jobs, bar, None, *reading, sample=sample
        )
    return documents, corpus
