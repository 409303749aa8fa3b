"""``nbclass fit``: a corpus folder, labelled lines or a table to a model file.
"""

from __future__ import annotations

import time

import click

from ..defaults import DEFAULT_VAR_SMOOTHING
from ..errors import (
    NbclassError,
    UsageError,
)
from ..models.estimators import (
    TABLE_DEFAULTS,
)
from ..reading.process import keep_freed_memory
from ..text.tokenizer import DEFAULT_NGRAM_RANGE, DEFAULT_TOKEN_PATTERN
from .common import (
    check_scheduler,
    count_input,
    first_given,
    fit_settings,
    refuse_reading_options,
    resolve_settings,
    shown,
    summary,
)
from .options import CONTEXT, FILE, FOLDER, fit_options, reading_options, table_fit_options


@click.command(context_settings=CONTEXT)
@click.argument("corpus_dir", type=FOLDER, metavar="[CORPUS_DIR]", required=False)
@click.option("-o", "--output", type=FILE, metavar="MODEL", help="Model file to write.")
@click.option(
    "--lines",
    "lines_path",
    type=FILE,
    metavar="FILE|-",
    help="Learn one document per line of FILE (- for standard input): LABEL<TAB>TEXT or "
    "fastText's __label__LABEL TEXT.",
)
@click.option(
    "--multi-label",
    "multi_label",
    is_flag=True,
    help="Each document has any number of labels (with --lines): fastText's __label__A "
    "__label__B TEXT, A,B<TAB>TEXT or JSON {\"labels\": [...], \"text\": ...}. One "
    "binary model per label, thresholds chosen for F1 (docs/multi-label.md).",
)
@click.option(
    "--update",
    "update_path",
    type=FILE,
    metavar="MODEL",
    help="Add the documents to this existing model (written back to it unless -o is given). "
    "Same result as fitting everything at once.",
)
@click.option(
    "--ledger",
    is_flag=True,
    help="Keep a ledger of every document (its SHA-256, class and word counts), so that "
    "sync and unlearn know exactly what was learned. Grows with the corpus.",
)
@click.option(
    "--typicality",
    is_flag=True,
    help="Also store how typical training documents are (their per-token evidence under "
    "models that did not see them), for predict --min-typicality, when a model is named. "
    "Reads up to 1,000 documents again. (--model auto, the default, always stores it: "
    "its cross-validation measures it.)",
)
@click.option(
    "--exit-code-map",
    "exit_code_map",
    type=FILE,  # completes a file name; CLASS=CODE pairs pass as typed
    metavar="FILE|CLASS=CODE,...",
    help="The exit codes of predict --exit-code, 10 to 124: a file of CLASS<TAB>CODE lines "
    "(what predict --exit-code-map prints) or CLASS=CODE pairs. Other classes take the "
    "smallest free codes.  [default: 10, 11, ... in sorted order]",
)
@fit_options
@click.option(
    "--scheduler",
    envvar="DASK_SCHEDULER_ADDRESS",
    metavar="ADDRESS",
    help="Count on the Dask cluster of this scheduler (tcp://HOST:PORT); the workers read "
    "the files at their absolute paths. The model is the same.  [default: "
    "$DASK_SCHEDULER_ADDRESS, else local processes]",
)
@table_fit_options
@click.pass_context
@reading_options
def fit(
    ctx, corpus_dir, output, lines_path, multi_label, update_path, ledger, typicality,
    exit_code_map, jobs, quiet, scheduler, reading, **options,
):
    """Learn a model from CORPUS_DIR, a folder with one subfolder per class.

    Every regular file below a class folder, recursively, is one document of that class
    (UTF-8; other bytes are replaced). Hidden files and folders (.*) and editor backups
    (*~) are skipped. The tokenizer settings and the estimator settings are stored in the
    model: predict tokenizes exactly as fit did.

    With --lines, documents come one per line instead of from a folder. With --update,
    they are added to an existing model, whose tokenizer settings are used (giving
    different ones is an error); the model is locked meanwhile, so overlapping runs queue.

    \b
    Examples:
      nbclass fit corpus/ -o model.nbc
      nbclass fit corpus/ -o model.nbc --model bernoulli --stop-words english
      nbclass fit corpus/ -o model.nbc --ngram-range 1,2 --min-df 2
      nbclass fit new-tickets/ --update model.nbc
      cut -f2,3 labelled.tsv | nbclass fit --lines - -o model.nbc

    With --table FILE --label COLUMN, learn from a table instead: numeric columns get
    Gaussians, categorical columns smoothed frequencies, text columns bags of words.

    \b
      nbclass fit --table tickets.csv --label team -o model.nbc
      nbclass fit --table t.csv --label team --column-types zip=categorical -o model.nbc
    """
    table_options = {
        name: options.pop(name)
        for name in ("table", "label", "table_format", "column_types", "var_smoothing")
    }
    if table_options["table"] is not None:
        if scheduler:
            raise UsageError(
                "--table is fitted in this process, not on a Dask cluster: leave out "
                "--scheduler (and unset DASK_SCHEDULER_ADDRESS)"
            )
        if (
            lines_path or ledger or options["hash_features"] or typicality or exit_code_map
            or options["unspaced"] or options["symbols"]
            or options["ngram_doc_limit"] is not None
        ):  # fmt: skip
            raise UsageError(
                "--table cannot be combined with --lines, --ledger, --hash-features, "
                "--unspaced, --symbols, --ngram-doc-limit, --typicality or --exit-code-map"
            )
        if update_path is not None:
            return _update_table(ctx, update_path, output, quiet, table_options)
        if output is None:
            raise UsageError("give -o MODEL")
        refuse_reading_options(reading)
        from ..modelfile.textfile import check_destination

        check_destination(output)
        o = options
        return _fit_table(
            corpus_dir, output, o["lowercase"], o["token_pattern"], o["ngram_range"],
            o["stop_words"], o["min_df"], o["max_features"], o["event_model"], o["estimator"],
            o["alpha"], o["beta"], quiet, **table_options,
        )  # fmt: skip
    from ..counting.counts import default_jobs
    from ..modelfile.textfile import check_destination, locked, save

    if scheduler:
        from ..cluster.remote import require_dask

        check_scheduler(ctx, scheduler)
        require_dask()
    start = time.perf_counter()
    if (corpus_dir is None) == (lines_path is None):
        raise UsageError("give a CORPUS_DIR, --lines FILE or --table FILE (one of them)")
    if typicality and (lines_path is not None or update_path is not None):
        raise UsageError(
            "--typicality reads training documents again: use it when fitting a CORPUS_DIR "
            "anew (not with --lines or --update)"
        )
    output = output or update_path
    if output is None:
        raise UsageError("give -o MODEL (or --update MODEL)")
    check_destination(output)  # before reading and counting, which may take long
    codes = None if exit_code_map is None else _exit_code_map(exit_code_map)
    jobs = default_jobs(jobs)
    base = None
    if update_path is not None:
        from ..modelfile.textfile import load

        base = load(update_path)
        if ledger and base.ledger is None:
            raise UsageError(
                f"{update_path!r} keeps no ledger; --ledger needs one from its first fit"
            )
    tokenizer, vocabulary_filter, defaults, auto = fit_settings(ctx, options, base, multi_label)
    keep_ledger = ledger if base is None else base.ledger is not None
    if multi_label or (base is not None and base.multi_label is not None):
        return _fit_multi_label(
            corpus_dir, lines_path, output, base, update_path, tokenizer, vocabulary_filter,
            defaults, auto, keep_ledger, typicality, codes, scheduler, reading, quiet, start,
            jobs,
        )  # fmt: skip
    if base is not None:  # an update of a model that chose: the documents' sample too
        from ..models.learning import chooses

        auto = defaults == base.defaults and chooses(base)
        if defaults == base.defaults:  # no estimator option: the settings of the model as
            defaults = None  # it is under the lock (another writer may have chosen again)
    if base is None:  # the count's sums and the choice make and drop large tables
        keep_freed_memory()
    # Read and count before taking the lock: the input may be a slow pipe, and the lock
    # should be held only while the model is read, changed and written.
    documents, corpus = count_input(
        corpus_dir, lines_path, tokenizer, keep_ledger, jobs, quiet, base, scheduler, reading,
        sample=auto,
    )  # fmt: skip
    before = None
    if base is None:
        from ..models.learning import new_model

        model = new_model(documents, tokenizer, vocabulary_filter, defaults, auto, jobs, codes)
        if typicality and not auto and corpus is not None:  # typical documents (novelty.py)
            from ..models.model import with_typicality

            model = with_typicality(model, corpus, reading[0])
        with locked(output):
            save(model, output)
    else:
        from ..modelfile.textfile import CountedFor
        from ..modelfile.updating import update_file

        before, base = CountedFor.of(base), None  # its counts go before it is read again
        model = update_file(
            update_path, output, before, documents, vocabulary_filter, defaults, codes, jobs
        )
    if not quiet:
        extra = "" if before is None else f"+{documents.counts.n_docs} documents, now "
        summary("update" if before is not None else "fit", model, output, start, extra, auto)


def _fit_multi_label(
    corpus_dir, lines_path, output, base, update_path, tokenizer, vocabulary_filter, defaults,
    auto, ledger, typicality, codes, scheduler, reading, quiet, start, jobs,
):  # fmt: skip
    """fit --multi-label --lines FILE (or --update of a multi-label model); ``jobs``
    threads score the choice's candidates."""
    from ..modelfile.textfile import locked, save
    from ..models import multilabel

    if corpus_dir is not None:
        raise UsageError(
            "--multi-label reads --lines FILE, not a CORPUS_DIR: a folder per class gives "
            "each document one label (docs/multi-label.md)"
        )
    if typicality or codes is not None:
        raise UsageError("--multi-label is fitted without --typicality or --exit-code-map")
    if base is not None and base.multi_label is None:
        raise UsageError(f"{update_path!r} is a single-label model: leave out --multi-label")
    keep_freed_memory()  # the choice makes and drops dozens of tables

    documents, _ = count_input(
        None, lines_path, tokenizer, ledger, jobs, quiet, base, scheduler, reading,
        sample=True, multi_label=True,
    )  # fmt: skip
    if base is None:
        from ..models.model import Model, check_usable, with_sample

        candidates = multilabel.CANDIDATES if auto else (defaults,)
        labels = multilabel.label_names(documents.counts.classes)
        if not labels:
            raise NbclassError("no document has a label: give each some, e.g. A,B<TAB>TEXT")
        model = Model(
            documents.counts, tokenizer, vocabulary_filter, defaults, ledger=documents.ledger,
            column_words=documents.column_words,
            multi_label=multilabel.record(
                labels, candidates, scales=multilabel.BETA_SCALES if auto else (1.0,)
            ),
        )  # fmt: skip
        check_usable(model)
        model = with_sample(model, documents.sample, 0, jobs)
        with locked(output):
            save(model, output)
    else:
        from ..modelfile.textfile import CountedFor
        from ..modelfile.updating import update_file

        model = update_file(update_path, output, CountedFor.of(base), documents,
                            vocabulary_filter, None, None, jobs)  # fmt: skip
    if not quiet:
        extra = "" if base is None else f"+{documents.counts.n_docs} documents, now "
        summary("update" if base is not None else "fit", model, output, start, extra, True)


def _exit_code_map(value: str) -> dict[str, int]:
    """--exit-code-map: the file at ``value`` when there is one, else ``value`` itself."""
    import os

    from ..models.exitcodes import parse_map

    if os.path.isfile(value):
        limit = 1 << 20  # 115 classes and codes take a few kB
        try:
            with open(value, "rb") as handle:
                data = handle.read(limit + 1)
        except OSError as exc:
            raise NbclassError(f"cannot read --exit-code-map {value!r}: {exc.strerror}") from None
        if len(data) > limit:
            raise UsageError(f"--exit-code-map {value!r} is over 1 MB: it is not a code map")
        return parse_map(data.decode("utf-8", "replace"), repr(value))
    if "=" not in value:
        raise UsageError(
            f"--exit-code-map {value!r}: no such file, and not CLASS=CODE pairs; give a file "
            "of CLASS<TAB>CODE lines or e.g. --exit-code-map billing=11,account=10"
        )
    return parse_map(value, "--exit-code-map")


def _update_table(ctx, update_path, output, quiet, table_options):
    """fit --table FILE --update MODEL: add the rows to a table model, under its lock."""
    settings = {
        "lowercase": "--lowercase", "token_pattern": "--token-pattern", "unspaced": "--unspaced",
        "symbols": "--symbols", "ngram_range": "--ngram-range",
        "ngram_doc_limit": "--ngram-doc-limit", "stop_words": "--stop-words",
        "min_df": "--min-df",
        "max_features": "--max-features", "event_model": "--model", "estimator": "--estimator",
        "alpha": "--alpha", "beta": "--beta", "tf": "--tf", "idf": "--idf", "norm": "--norm",
        "prior_fit": "--prior-fit", "class_prior": "--class-prior",
        "column_types": "--column-types", "var_smoothing": "--var-smoothing",
    }  # fmt: skip
    named = first_given(ctx, settings)
    if named:
        raise UsageError(
            f"--update adds rows with the table model's own settings: leave out {named}"
        )
    from ..modelfile.tablefile import load, save
    from ..modelfile.textfile import check_destination, locked
    from ..models.tablemodel import merge_tables, table_part
    from ..reading.table import read_table

    start = time.perf_counter()
    output = output or update_path
    check_destination(output)
    base = load(update_path)
    part = table_part(base, read_table(table_options["table"], table_options["table_format"]),
                      table_options["label"])  # fmt: skip
    with locked(output):
        model = merge_tables(load(update_path), part)
        save(model, output)
    if not quiet:
        click.echo(
            f"update: +{part.n_rows} rows, now {model.n_rows} rows, {len(model.classes)} "
            f"classes, {time.perf_counter() - start:.2f} s -> {shown(output)}",
            err=True,
        )


def _fit_table(
    corpus_dir, output, lowercase, token_pattern, ngram_range, stop_words, min_df,
    max_features, event_model, estimator, alpha, beta, quiet, table, label, table_format,
    column_types, var_smoothing,
):  # fmt: skip
    if corpus_dir is not None and table is not None:
        raise UsageError("give a CORPUS_DIR or --table FILE, not both")
    if table is None:
        raise UsageError("give a CORPUS_DIR to learn from, or --table FILE --label COLUMN")
    if label is None:
        raise UsageError("--table needs --label COLUMN, the column that holds the class")
    if min_df != 1 or max_features is not None:
        raise UsageError("--min-df and --max-features apply to text corpora, not --table")
    from ..modelfile.tablefile import save
    from ..modelfile.textfile import locked
    from ..models.tablemodel import fit_table
    from ..reading.table import parse_column_types, read_table
    from ..text.tokenizer import TokenizerSettings, load_stop_words

    start = time.perf_counter()
    defaults = resolve_settings(TABLE_DEFAULTS, event_model, estimator, alpha, beta)
    words, source = load_stop_words(stop_words, lowercase)
    tokenizer = TokenizerSettings(
        lowercase=lowercase,
        token_pattern=DEFAULT_TOKEN_PATTERN if token_pattern is None else token_pattern,
        ngram_range=ngram_range or DEFAULT_NGRAM_RANGE,
        stop_words=words,
        stop_words_source=source,
    )
    types = parse_column_types(column_types)
    model = fit_table(
        read_table(table, table_format),
        label,
        types,
        tokenizer,
        defaults,
        DEFAULT_VAR_SMOOTHING if var_smoothing is None else var_smoothing,
    )
    with locked(output):
        save(model, output)
    if not quiet:
        seconds = time.perf_counter() - start
        kinds = [c.type for c in model.columns]
        described = ", ".join(
            f"{kinds.count(t)} {t}" for t in ("numeric", "categorical", "text") if t in kinds
        )
        click.echo(
            f"fit: {model.n_rows} rows, {len(model.classes)} classes, {len(kinds)} columns "
            f"({described}), {seconds:.2f} s -> {shown(output)}",
            err=True,
        )
