"""``nbclass merge``, ``nbclass unlearn`` and ``nbclass sync``: models as sums of counts.
"""

from __future__ import annotations

import os
import time

import click

from ..errors import (
    NbclassError,
    UsageError,
)
from .common import count_input, fit_settings, line_documents, shown, summary
from .options import (
    CONTEXT,
    FILE,
    FOLDER,
    fit_options,
    jobs_option,
    model_option,
    reading_options,
)


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
    from ..modelfile.updating import merge_files
    from ..models.tablemodel import TableModel

    start = time.perf_counter()
    merged = merge_files(models, output)
    if quiet:
        return
    if isinstance(merged, TableModel):
        click.echo(
            f"merge: {len(models)} models, {merged.n_rows} rows, {len(merged.classes)} classes, "
            f"{time.perf_counter() - start:.2f} s -> {shown(output)}",
            err=True,
        )
    else:
        summary("merge", merged, output, start, f"{len(models)} models, ")


@click.command(context_settings=CONTEXT)
@click.argument("corpus_dir", type=FOLDER, metavar="[CORPUS_DIR]", required=False)
@model_option
@click.option(
    "--lines",
    "lines_path",
    type=FILE,
    metavar="FILE|-",
    help="Unlearn one document per line (LABEL<TAB>TEXT or __label__LABEL TEXT).",
)
@click.option("-o", "--output", type=FILE, metavar="OUT", help="Write here instead of over MODEL.")
@jobs_option("Processes that read and count.")
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
    from ..modelfile.textfile import CountedFor, load
    from ..modelfile.updating import unlearn_file
    from ..models.learning import line_keys

    start = time.perf_counter()
    if (corpus_dir is None) == (lines_path is None):
        raise UsageError("give a CORPUS_DIR, or --lines FILE (one of them)")
    output = output or model_path
    model = load(model_path)
    keys, sources, documents = None, (), None
    multi_label = model.multi_label is not None
    if multi_label and lines_path is None:
        raise UsageError(
            f"{model_path!r} is a multi-label model: give the documents to unlearn as "
            "--lines FILE with their labels (as fit --multi-label reads them)"
        )
    if multi_label:
        from ..models.learning import count_multi_label_lines, multi_label_keys

        if model.ledger is not None:
            keys, sources = multi_label_keys(line_documents(lines_path, reading))
            removed = len(keys)
        else:
            documents = count_multi_label_lines(
                line_documents(lines_path, reading), model.tokenizer, False,
                keys=model.sample is not None,
            )  # fmt: skip
            removed = documents.counts.n_docs
    elif model.ledger is not None:
        if lines_path is not None:
            keys, sources = line_keys(line_documents(lines_path, reading))
        else:
            from ..models.learning import corpus_keys
            from ..reading.corpus import list_corpus

            keys, sources = corpus_keys(list_corpus(corpus_dir, min_classes=1), *reading)
        removed = len(keys)
    else:
        jobs = default_jobs(jobs)
        documents, _ = count_input(
            corpus_dir, lines_path, model.tokenizer, False, jobs, quiet, model, None, reading,
            keys=model.sample is not None,
        )  # fmt: skip
        removed = documents.counts.n_docs
    threads = default_jobs(jobs) if jobs else 1
    before, model = CountedFor.of(model), None  # its counts go before it is read again
    result = unlearn_file(model_path, output, before, documents, keys, sources, threads)
    if not quiet:
        summary("unlearn", result, output, start, f"-{removed} documents, now ")


@click.command(context_settings=CONTEXT)
@click.argument("corpus_dir", type=FOLDER, metavar="CORPUS_DIR")
@model_option
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
    from functools import partial

    from ..counting.counts import default_jobs
    from ..modelfile.updating import sync_folder
    from ..models.estimators import AUTO
    from ..reading.corpus import list_corpus

    def settings(base):
        if base is not None and options["event_model"] == AUTO:
            if base.choice is None:  # fit did not choose this model's settings
                raise UsageError(
                    f"sync keeps the settings {model_path!r} was fitted with, and --model "
                    f"auto would change them: to let fit choose, fit the folder anew (nbclass "
                    f"fit {corpus_dir} --ledger -o {model_path}), or leave the option out"
                )
            return fit_settings(ctx, {**options, "event_model": None}, base)  # as it is
        return fit_settings(ctx, options, base)

    if os.path.isfile(model_path):  # a multi-label model has no folder layout
        from ..modelfile.quick import QuickModel

        try:
            multi_label = QuickModel(model_path).multi_label is not None
        except NbclassError:  # not a model: sync_folder says what it may and may not replace
            multi_label = False
        if multi_label:
            raise UsageError(
                f"{model_path!r} is a multi-label model: its documents come as lines, not "
                "class folders; add them with fit --update and remove them with unlearn "
                "--lines"
            )
    model, report = sync_folder(
        model_path, partial(list_corpus, corpus_dir), settings, default_jobs(jobs), *reading,
        folder=corpus_dir,
    )  # fmt: skip
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
            f"sync: {counts} -> {shown(model_path)}" + ("" if report.changed else " (unchanged)")
        ]

    Output(fmt).document({**fields, "model": model_path}, text=text, as_json=json.dumps)
