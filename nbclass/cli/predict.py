"""``nbclass predict``: documents, lines or table rows to labels and probabilities.
"""

from __future__ import annotations

import os
import sys
import warnings

import click

from ..errors import (
    NbclassError,
    NbclassWarning,
    UsageError,
)
from . import predict_options as spec
from .common import (
    FileProgress,
    check_scheduler,
    estimator_overrides,
    refuse_reading_options,
    resolve_settings,
)
from .options import (
    CONTEXT,
    FILE_OR_FOLDER,
    FOLDER,
    Ranged,
    click_option,
    estimator_options,
    jobs_option,
    model_option,
    reading_options,
    table_predict_options,
)


@click.command(context_settings=CONTEXT)
@model_option
@click.argument("paths", nargs=-1, type=FILE_OR_FOLDER, metavar="[PATH]...")
@click.option("--lines", is_flag=True, help="Every line of the input is one document.")
@click.option(
    "--labelled",
    type=click.Choice(["auto", "yes", "no"]),
    default="auto",
    show_default=True,
    help="With --lines: read a line's label (LABEL<TAB>TEXT or __label__LABEL TEXT, as fit "
    "reads them) as a label, not as text. auto: when a file's first line has a label "
    "that is one of the model's classes, or __label__ (a warning says so).",
)
@click_option(spec.FORMAT)
@click_option(spec.TOP_K)
@estimator_options("Overrides the model's default without refitting.")
@click.option(
    "--scheduler",
    envvar="DASK_SCHEDULER_ADDRESS",
    metavar="ADDRESS",
    help="Score files and folders on the Dask cluster of this scheduler (tcp://HOST:PORT); "
    "the output is the same.  [default: $DASK_SCHEDULER_ADDRESS, else this process]",
)
@click_option(spec.NO_CALIBRATION)
@click.option(
    "--explain",
    type=Ranged("--explain"),
    default=None,
    metavar="N",
    help="Add the N words that pushed each document most towards its class (their "
    "contribution to the log-odds against the runner-up).",
)
@click_option(spec.MIN_PROBABILITY)
@click_option(spec.MIN_MARGIN)
@click_option(spec.MIN_KNOWN)
@click.option(
    "--min-typicality",
    type=Ranged("--min-typicality"),
    default=None,
    metavar="P",
    help="Label a document unsure (unlike-training) when its log-evidence per known token "
    "is below the P-th percentile of the training documents' (a model fitted with "
    "--typicality).",
)
@click_option(spec.UNSURE_LABEL)
@click.option(
    "--threshold",
    "thresholds",
    multiple=True,
    metavar="P|LABEL=P",
    help="Multi-label models: predict the labels whose probability is at least P (every "
    "label's, or LABEL's; repeat for several).  [default: the thresholds fit chose]",
)
@click.option(
    "--allow-empty",
    is_flag=True,
    help="Multi-label models: a document that passes no threshold gets no label (by "
    "default it gets its most probable label).",
)
@click_option(spec.EXIT_CODE)
@click_option(spec.EXIT_CODE_MAP)
@jobs_option(
    "Processes that read and score files (from 4 MB of them). The output is the same for "
    "any number."
)
@click_option(spec.QUIET)
@click.option(
    "--output-dir",
    type=FOLDER,
    metavar="DIR|URL",
    help="Write the predictions as part files DIR/part-NNNNNN.tsv (or .jsonl), one per "
    "part of the input, instead of to stdout: with --scheduler each worker writes its "
    "own. Sorted and concatenated, they are what stdout would show.",
)
@table_predict_options
@reading_options
def predict(
    model_path, paths, lines, labelled, fmt, top_k, event_model, estimator, alpha, beta,
    scheduler, no_calibration, explain, min_probability, min_margin, min_known, min_typicality,
    unsure_label, thresholds, allow_empty, use_exit_code, show_exit_codes, text_options, jobs,
    quiet, reading, output_dir, **table_options,
):  # fmt: skip
    """Classify documents: files, folders (walked recursively) or standard input.

    With no PATH, or with -, standard input is one document (with --lines, one document
    per line). Prints one line per document to stdout.

    \b
    TSV (default):  source<TAB>label<TAB>probability
    JSONL:          {"source", "label", "probability", "probabilities": {class: p},
                     "log_evidence", "reason"}
    The source is the file path, - for standard input, PATH:LINE with --lines.
    Numbers are printed in full (shortest repr that reads back as the same float).

    \b
    Examples:
      echo "refund my card" | nbclass predict -m model.nbc
      nbclass predict -m model.nbc inbox/ --format jsonl --top-k 3
      tail -n 100 app.log | nbclass predict -m model.nbc --lines
      nbclass predict -m table-model.nbc --table new.csv --id ticket
      nbclass predict -m model.nbc ticket.txt --min-probability 0.9 --exit-code

    With --table FILE (a model fitted with --table), every row of FILE is classified;
    its source is FILE:ROW (rows counted from 1 after the header) or the --id column.

    With --exit-code-map, print the model's exit codes (CLASS<TAB>CODE per class, what
    fit --exit-code-map reads) and read no document.
    """
    if show_exit_codes:
        return _print_exit_codes(model_path, paths, lines)
    if table_options["table"] is not None or table_options["id_column"] is not None:
        if output_dir is not None:
            raise UsageError("--output-dir writes the predictions of documents: not with --table")
        refuse_reading_options(reading)
        return _predict_table(
            model_path, paths, lines, fmt, top_k, event_model, estimator, alpha, beta,
            **table_options,
        )  # fmt: skip
    if not paths and sys.stdin.isatty():
        raise click.UsageError(
            "no input: give files or folders to classify, or pipe a document into "
            "standard input, e.g.  echo 'some text' | nbclass predict -m MODEL"
        )
    on_cluster = scheduler and not lines and paths and "-" not in paths
    if on_cluster:  # a malformed address or a missing Dask is said before any file is read
        from ..cluster.remote import require_dask

        check_scheduler(click.get_current_context(), scheduler)
        require_dask()
    from ..modelfile.quick import QuickModel

    quick = QuickModel(model_path)  # read and checked once: bulk predict loads these bytes
    if quick.multi_label is not None:
        from .common import first_given

        unused = {
            "use_exit_code": "--exit-code", "output_dir": "--output-dir",
            "min_probability": "--min-probability", "min_margin": "--min-margin",
            "min_known": "--min-known", "min_typicality": "--min-typicality",
            "unsure_label": "--unsure-label", "scheduler": "--scheduler",
        }  # fmt: skip
        named = first_given(click.get_current_context(), unused)
        if named:
            raise UsageError(
                f"{named} is for single-label models; a multi-label model predicts a set "
                "of labels (use --threshold, --top-k and --allow-empty)"
            )
        from ..output.labels import shows_explanations

        if explain and not shows_explanations(fmt):
            raise UsageError(
                "--explain with a multi-label model lists words per label: add --format jsonl"
            )
        overrides = estimator_overrides(event_model, estimator, alpha, beta, text_options)
        return _predict_multi_label(
            model_path, paths, lines, labelled, fmt, top_k, overrides, not no_calibration,
            thresholds, allow_empty, reading, explain,
        )  # fmt: skip
    if thresholds or allow_empty:
        raise UsageError("--threshold and --allow-empty are for multi-label models")
    from ..models.abstain import Abstention, check_exit_classes, exit_code

    codes = {}
    from ..reading.corpus import iter_documents

    abstention = Abstention.from_options(
        min_probability, min_margin, min_known, unsure_label, min_typicality
    )
    single = not lines and (
        not paths or paths == ("-",) or (len(paths) == 1 and os.path.isfile(paths[0]))
    )
    if use_exit_code and not single and len(paths) == 1 and not lines:
        from ..reading.corpus import expand_paths

        list(expand_paths(paths))  # a path that does not exist says so (exit 1)
    if output_dir is not None and use_exit_code:
        raise UsageError("--exit-code names one document's label: leave out --output-dir")
    if output_dir is not None:
        from ..output.parts import prepare

        single, output_dir = False, prepare(output_dir)
    if use_exit_code and not single:
        raise UsageError(
            "--exit-code needs exactly one document (standard input or one file, without "
            "--lines): an exit code can only name one label"
        )
    documents = iter_documents(paths or ["-"], lines, *reading)
    model_classes: list = []
    if lines and labelled != "no":
        from ..models.learning import texts_of_lines

        documents = texts_of_lines(documents, lambda: model_classes, labelled)
    if single and not explain:
        # One document: score it without numpy, which would take most of the time to import.
        from .single import predict_one

        overrides = estimator_overrides(event_model, estimator, alpha, beta, text_options)
        code = predict_one(
            model_path, documents, overrides, fmt, top_k, abstention, use_exit_code,
            not no_calibration,
        )  # fmt: skip
        if code is not None:
            if use_exit_code:
                raise click.exceptions.Exit(code)
            return
        # Settings that need every count (fitted β, idf, normalised weights): batch path.
    from ..modelfile.predicting import listed_files, predict_documents
    from ..output.render import shows_evidence

    # The models (and scipy) are imported once the worker processes, if any, are forked.
    def check_classes(classes) -> None:
        nonlocal codes
        model_classes[:] = classes  # before any line is read (texts_of_lines)
        abstention.check_classes(classes)
        if use_exit_code:
            from ..modelfile.quick import QuickModel

            codes = QuickModel(model_path).exit_codes  # a class's code never changes
            check_exit_classes(codes, classes)

    evidence = shows_evidence(fmt)

    def add_extras(classifier, scored):
        from ..models.explain import extras

        return extras(
            classifier, scored, abstention=abstention, explain=explain, evidence=evidence
        )

    def render(classes, settings, sources, rows, extras):  # where the documents are scored
        from ..output.render import printed

        return printed(sources, classes, rows, fmt, top_k, settings, extras, unsure_label)

    overrides = estimator_overrides(event_model, estimator, alpha, beta, text_options)
    scoring = overrides, not no_calibration
    files, jobs = (None, 1) if on_cluster else listed_files(paths, lines, jobs)
    # The progress bar needs the files listed; never over results printed on a terminal.
    bar_wanted = not (quiet or on_cluster or lines or not paths or "-" in paths)
    bar_wanted = bar_wanted and sys.stderr.isatty() and not sys.stdout.isatty()
    if bar_wanted and files is None:
        from ..reading.corpus import list_inputs

        try:
            files = list_inputs(paths)
        except NbclassError:  # a missing path: its error comes in its turn
            bar_wanted = False
    if on_cluster and output_dir is not None:
        from ..cluster.remote import write_paths

        problems = write_paths(
            scheduler, model_path, paths, scoring, abstention, explain, *reading, output_dir,
            fmt, top_k,
        )  # fmt: skip
        for problem in problems:
            warnings.warn(problem, NbclassWarning, stacklevel=1)
        return
    if on_cluster:
        from ..cluster.remote import predict_paths

        classes, settings, batches = predict_paths(
            scheduler, model_path, paths, scoring, abstention, explain, *reading
        )
        batches = (render(classes, settings, *batch) for batch in batches)
    else:
        if files is not None:  # listed already: read them without walking again (no --lines)
            documents = iter_documents(paths, lines, *reading, listed=files)
        classes, settings, batches = predict_documents(
            model_path, documents, files, jobs, scoring, reading, add_extras, check_classes,
            render, (quick.data, quick.parsed),
        )  # fmt: skip
    check_classes(classes)
    labels = []
    listed = [path for path, _ in files] if bar_wanted else []
    if output_dir is not None:
        return _write_all_predictions(output_dir, batches, fmt)
    from .single import print_printed

    with FileProgress("predict", listed, not bar_wanted) as bar:
        for batch in batches:
            labels = print_printed(batch)
            if bar:
                bar.past(batch.sources[-1] if batch.sources else None)
        if bar:
            bar.past(None, finished=True)
    if use_exit_code:
        raise click.exceptions.Exit(exit_code(codes, labels[0] if labels else ""))


def _predict_multi_label(
    model_path, paths, lines, labelled, fmt, top_k, overrides, calibrate, thresholds,
    allow_empty, reading, explain,
):  # fmt: skip
    """predict with a multi-label model: the labels of each document, in batches."""
    from ..modelfile.textfile import load
    from ..models.multilabel import predict_documents
    from ..output.labels import label_lines
    from ..reading.corpus import iter_documents

    model = load(model_path)
    documents = iter_documents(paths or ["-"], lines, *reading)
    if lines and labelled != "no":
        from ..models.labelsets import texts_of_lines

        documents = texts_of_lines(documents, labelled)
    batches = predict_documents(
        model, documents, overrides, calibrate, thresholds, top_k, allow_empty, explain=explain
    )
    for batch in batches:
        for line in label_lines(batch, fmt):
            click.echo(line)


def _print_exit_codes(model_path, paths, lines) -> None:
    """predict --exit-code-map: the model's code map on stdout, no document read."""
    if paths or lines:
        raise UsageError(
            "--exit-code-map prints the model's exit codes and reads no document: leave out "
            + ("--lines" if lines else "PATH")
        )
    from ..modelfile.quick import QuickModel
    from ..models.exitcodes import map_lines

    for line in map_lines(QuickModel(model_path).exit_codes):
        click.echo(line)


def _write_all_predictions(folder, batches, fmt):
    """--output-dir here: each batch (:class:`nbclass.output.render.Printed`) as its part
    file; a run that fails (an unreadable document, a full disk, a signal) removes the
    parts it wrote, so that it can be run again into the same folder."""
    from ..output.parts import part_name, remove_parts, write_part

    written = []
    try:
        for index, batch in enumerate(batches):
            written.append(part_name(index, fmt))
            write_part(folder, part_name(index, fmt), batch.lines)
            for problem in batch.problems:
                warnings.warn(problem, NbclassWarning, stacklevel=1)
    except BaseException:
        remove_parts(folder, written)
        raise


def _predict_table(
    model_path, paths, lines, fmt, top_k, event_model, estimator, alpha, beta, table,
    table_format, id_column,
):  # fmt: skip
    if table is None:
        raise UsageError("--id names a column of --table FILE: give --table too")
    if paths or lines:
        raise UsageError("--table FILE classifies rows: give no PATH and no --lines")
    from ..modelfile.tablefile import load
    from ..models.tablemodel import TableClassifier
    from ..output.formats import Output
    from ..output.render import prediction_views, smoothing_advice
    from ..reading.table import iter_rows
    from ..reading.table import table_format as detect_format

    model = load(model_path)
    settings = resolve_settings(model.defaults, event_model, estimator, alpha, beta)
    classifier = TableClassifier(model, settings)
    header, rows = iter_rows(table, detect_format(table, table_format))
    if header is not None:
        if id_column is not None and id_column not in header:
            raise UsageError(f"--id {id_column!r} is not a column of {table!r}")
        absent = [c.name for c in model.columns if c.name not in header]
        if absent:
            warnings.warn(
                f"{table!r} has no column {', '.join(map(repr, absent))}: the model's factor "
                "for it is left out of every row",
                NbclassWarning,
                stacklevel=1,
            )

    def sources():
        for number, row in enumerate(rows, start=1):
            name = row.get(id_column) if id_column is not None else None
            yield (f"{table}:{number}" if name is None else name), row

    out, views = Output(fmt), prediction_views(model.classes, top_k)
    for predictions in classifier.predict_rows(sources()):
        log_rows = predictions.log_proba.tolist()
        out.records(zip(predictions.sources, log_rows), *views)
        for source, row in zip(predictions.sources, log_rows):
            if max(row) == float("-inf"):
                warnings.warn(
                    f"every class has probability 0 for {source!r} under --estimator "
                    f"{settings.estimator}: a value the class never had rules each out (or a "
                    "number too far from every class's values); its label is empty."
                    + smoothing_advice(settings.estimator),
                    NbclassWarning,
                    stacklevel=1,
                )
