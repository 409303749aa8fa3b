"""``nbclass merge``, ``nbclass unlearn`` and ``nbclass sync``: models as sums of counts.
"""

from __future__ import annotations

import os
import time

import click

from ..errors import (
    ModelKindError,
    UsageError,
)
from .common import (
    _count,
    _fit_settings,
    _line_documents,
    _new_model,
    _reload,
    _shown,
    _summary,
    _with_defaults,
)
from .options import CONTEXT, FILE, FOLDER, _model_option, fit_options, reading_options


@click.command(context_settings=CONTEXT)
@click.argument("models", nargs=-1, required=True, type=FILE, metavar="MODEL...")
@click.option(
    "-o", "--output", required=True, type=FILE, metavar="OUT", help="Model file to write."
)
@click.option("-q", "--quiet", is_flag=True, help="Print no summary.")
def merge(models, output, quiet):
    """Sum models fitted on different shards of a corpus into one.

    The result equals, bit for bit, a fit of all the shards' documents at once. Models
    must share their tokenizer settings (the difference is named otherwise); the first
    model's vocabulary filter and default estimator settings are kept. The result keeps a
    ledger when every model has one. Table models (fit --table) merge with table models
    of the same label and columns.

    \b
    Example:
      nbclass merge shard-1.nbc shard-2.nbc shard-3.nbc -o all.nbc
    """
    from ..modelfile.textfile import load, locked, save
    from ..models.learning import combine

    start = time.perf_counter()
    if len(models) < 2:
        raise UsageError("give at least two models to merge")
    try:
        loaded = [load(path) for path in models]
    except ModelKindError as exc:
        if exc.kind != "table":
            raise
        return _merge_tables(models, output, quiet, start)
    with locked(output):
        merged = combine(loaded, list(models))
        save(merged, output)
    if not quiet:
        _summary("merge", merged, output, start, f"{len(models)} models, ")


def _merge_tables(paths, output, quiet, start):
    from ..modelfile.tablefile import load, save
    from ..modelfile.textfile import locked
    from ..models.tablemodel import merge_tables

    tables, texts = [], []
    for path in paths:
        try:
            tables.append(load(path))
        except ModelKindError:
            texts.append(path)
    if texts:
        raise UsageError(
            f"cannot merge the text model {texts[0]!r} with table models: merge text models "
            "with text models and table models (fit --table) with table models"
        )
    with locked(output):
        merged = merge_tables(*tables)
        save(merged, output)
    if not quiet:
        click.echo(
            f"merge: {len(paths)} models, {merged.n_rows} rows, {len(merged.classes)} classes, "
            f"{time.perf_counter() - start:.2f} s -> {_shown(output)}",
            err=True,
        )


@click.command(context_settings=CONTEXT)
@click.argument("corpus_dir", type=FOLDER, metavar="[CORPUS_DIR]", required=False)
@_model_option
@click.option(
    "--lines",
    "lines_path",
    type=FILE,
    metavar="FILE|-",
    help="Unlearn one document per line (LABEL<TAB>TEXT or __label__LABEL TEXT).",
)
@click.option("-o", "--output", type=FILE, metavar="OUT", help="Write here instead of over MODEL.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Processes that read and count.  [default: $NBCLASS_JOBS, else every core]",
)
@click.option("-q", "--quiet", is_flag=True, help="Print no summary.")
@reading_options
def unlearn(corpus_dir, model_path, lines_path, output, jobs, quiet, reading):
    """Subtract documents that were learned by mistake.

    CORPUS_DIR is laid out like a training corpus (one subfolder per class; one class is
    enough); every document in it is removed from the model under that class. A relabel
    is unlearn + fit --update. Counts never go negative: with a ledger (fit --ledger), a
    document the model never learned under that class is named and refused; without
    one, a count that would become impossible is. Nothing is written unless every
    document can be removed.

    \b
    Examples:
      nbclass unlearn mistakes/ -m model.nbc
      printf 'spam\tHi mum, see you at 6\n' | nbclass unlearn --lines - -m model.nbc
    """
    from ..counting.counts import default_jobs
    from ..modelfile.textfile import load, locked, save
    from ..models.learning import line_keys, unlearn_counts, unlearn_keys

    start = time.perf_counter()
    if (corpus_dir is None) == (lines_path is None):
        raise UsageError("give a CORPUS_DIR, or --lines FILE (one of them)")
    output = output or model_path
    model = load(model_path)
    if model.ledger is not None:
        if lines_path is not None:
            keys, sources = line_keys(_line_documents(lines_path, reading))
        else:
            from ..models.learning import corpus_keys
            from ..reading.corpus import list_corpus

            keys, sources = corpus_keys(list_corpus(corpus_dir, min_classes=1), *reading)
        removed = len(keys)
    else:
        jobs = jobs or default_jobs()
        documents, _ = _count(
            corpus_dir, lines_path, model.tokenizer, False, jobs, quiet, model, None, reading
        )
        removed = documents.counts.n_docs
    with locked(output):
        model = _reload(model_path, model)
        if model.ledger is not None:
            result = unlearn_keys(model, keys, sources)
        else:
            result = unlearn_counts(model, documents)
        save(result, output)
    if not quiet:
        _summary("unlearn", result, output, start, f"-{removed} documents, now ")


@click.command(context_settings=CONTEXT)
@click.argument("corpus_dir", type=FOLDER, metavar="CORPUS_DIR")
@_model_option
@fit_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format of the report.",
)
@click.pass_context
@reading_options
def sync(ctx, corpus_dir, model_path, jobs, quiet, fmt, reading, **options):
    """Make MODEL equal to a fresh fit of CORPUS_DIR as it is now.

    The model keeps a ledger (a SHA-256 per document and its class), so sync learns new
    files, unlearns deleted ones (from the ledger: their files are gone) and moves the
    counts of a file that moved to another class folder. Running it twice changes
    nothing; after any sequence of syncs the model equals `fit --ledger` of the folder,
    bit for bit. When MODEL does not exist it is created (with the fit options given
    here). A model whose settings fit chose (--model auto) is chosen and calibrated again
    whenever the folder changed. Prints what it did: added, removed, relabelled,
    unchanged. The model is locked meanwhile, so overlapping cron runs queue up.

    \b
    Example (crontab, every five minutes):
      */5 * * * *  nbclass sync /srv/tickets -m /srv/tickets.nbc
    """
    import json

    from ..counting.counts import default_jobs
    from ..modelfile.textfile import load, locked, save
    from ..models.learning import SyncReport
    from ..models.learning import sync as sync_model
    from ..reading.corpus import list_corpus

    jobs = jobs or default_jobs()
    with locked(model_path):
        corpus = list_corpus(corpus_dir)
        if os.path.exists(model_path):
            from dataclasses import replace

            model = load(model_path)
            _, vocabulary_filter, defaults, _ = _fit_settings(ctx, options, model)
            resettled = (vocabulary_filter, defaults) != (model.vocabulary_filter, model.defaults)
            model = replace(model, vocabulary_filter=vocabulary_filter)
            model, report = sync_model(_with_defaults(model, defaults), corpus, jobs, *reading)
            if report.changed and model.choice is not None:
                # A model that fit chose is chosen again from the folder as it is now, so
                # that sync stays equal to a fresh fit of the folder.
                from ..models.learning import corpus_sample
                from ..models.model import with_choice

                model = with_choice(model, corpus_sample(corpus, reading[0]), jobs)
        else:
            from ..models.learning import count_documents

            tokenizer, vocabulary_filter, defaults, auto = _fit_settings(ctx, options)
            policy, log = reading
            documents = count_documents(
                corpus, tokenizer, True, jobs, policy=policy, log=log, sample=auto
            )
            model = _new_model(documents, tokenizer, vocabulary_filter, defaults, auto, jobs)
            report, resettled = SyncReport(added=documents.counts.n_docs), True
        if report.changed or resettled:
            save(model, model_path)
    if quiet:
        return
    from ..output.formats import Output

    fields = {
        "added": report.added,
        "removed": report.removed,
        "relabelled": report.relabelled,
        "unchanged": report.unchanged,
        "documents": model.counts.n_docs,
    }

    def text(data):
        counts = ", ".join(f"{value} {name}" for name, value in fields.items())
        return [
            f"sync: {counts} -> {_shown(model_path)}" + ("" if report.changed else " (unchanged)")
        ]

    Output(fmt).document({**fields, "model": model_path}, text=text, as_json=json.dumps)
