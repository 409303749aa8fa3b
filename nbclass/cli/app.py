"""The ``nbclass`` command: parse options, call the library, print.

Results go to stdout; summaries, warnings and errors to stderr. A user's mistake is one
``Error: ...`` line and an exit code from :mod:`nbclass.errors`, never a traceback.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from array import array

import click

from .. import __version__
from ..defaults import DEFAULT_FOLDS, DEFAULT_SEED, DEFAULT_VAR_SMOOTHING
from ..errors import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    ModelKindError,
    NbclassError,
    NbclassWarning,
    Terminated,
    UsageError,
)
from ..models.estimators import (
    AUTO,
    DEFAULTS,
    TABLE_DEFAULTS,
    EstimatorSettings,
    as_options,
)
from ..reading.process import install_sigterm, output_error, reserve_standard_streams
from ..text.tokenizer import DEFAULT_NGRAM_RANGE, DEFAULT_TOKEN_PATTERN
from . import predict_options as spec
from .single import echo_lines as _echo_lines

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a filter cut off by `head`
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class PathName(click.Path):
    """A file or folder name as typed (a URL and - pass too): the shell completes it as a
    path, and nbclass checks it itself, with its own messages and exit codes (click.Path's
    checks would answer with click's)."""

    def convert(self, value, param, ctx):
        return value


FILE = PathName(dir_okay=False)  # completes file names
FOLDER = PathName(file_okay=False)  # completes folder names
FILE_OR_FOLDER = PathName()


class ModelChoice(click.Choice):
    """--model's choices; a model file given to it is pointed at -m."""

    def convert(self, value, param, ctx):
        if value not in self.choices and (
            str(value).endswith(".nbc") or os.path.isfile(str(value))
        ):
            self.fail(
                f"{value!r} looks like a model file: give it with -m (--model names the "
                f"formula: {', '.join(self.choices)})",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


class NbclassGroup(click.Group):
    """Turns library errors, Ctrl-C and a closed output pipe into the documented exits."""

    def make_context(self, *args, **kwargs):
        try:  # click would turn Ctrl-C while parsing the options into "Aborted!", exit 1
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt:
            sys.stderr.write("\nInterrupted\n")
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except NbclassError as exc:
            error = click.ClickException(str(exc))
            error.exit_code = exc.exit_code
            raise error from None
        except BrokenPipeError:
            # The reader went away (`nbclass predict ... | head -1`): stop quietly.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise click.exceptions.Exit(EXIT_BROKEN_PIPE) from None
        except KeyboardInterrupt:
            sys.stderr.write("\nInterrupted\n")
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
        except Terminated as exc:
            sys.stderr.write(exc.message)
            raise click.exceptions.Exit(exc.exit_code) from None
        except OSError as exc:
            # The library turns every file it reads or writes into an NbclassError; what is
            # left is writing the results: stdout on a full disk, /dev/full, or closed.
            sys.stderr.write(output_error(exc))
            raise click.exceptions.Exit(EXIT_ERROR) from None


def _parse_pair(name: str, text: str, kind=int) -> tuple:
    parts = text.split(",")
    try:
        values = tuple(kind(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) == 1:
        values = values * 2
    if len(values) != 2:
        raise click.BadParameter(f"{text!r} is not N or MIN,MAX", param_hint=name)
    return values


def _ngram_range(ctx, param, value):
    return None if value is None else _parse_pair("--ngram-range", value)


def _parsed_by(hint: str, module: str, name: str):
    """A click callback: ``None`` stays ``None``, else ``nbclass.<module>.<name>(value)``,
    whose error becomes click's "Invalid value for <hint>" (imported only when used)."""

    def callback(ctx, param, value):
        if value is None:
            return None
        from importlib import import_module

        parse = getattr(import_module(f"nbclass.{module}"), name)
        try:
            return parse(value)
        except (ValueError, UsageError) as exc:
            raise click.BadParameter(str(exc), param_hint=hint) from None

    return callback


_hash_features = _parsed_by("--hash-features", "text.hashing", "parse_hash_features")
_beta = _parsed_by("--beta", "models.estimators", "parse_beta")


def estimator_options(defaults_note: str):
    """--model, --estimator, --alpha, --beta, --tf, --idf, --norm, --prior-fit.

    Each is ``None`` when not given, so the model's stored defaults hold; the command
    receives them in one keyword argument, ``text_options`` (a dict), besides the first four.
    """

    def decorate(command):
        options = [
            click_option(
                spec.MODEL,
                type=ModelChoice(list(spec.MODEL.kind)),
                help=f"{spec.MODEL.help} {defaults_note}",
            ),
            click_option(spec.ESTIMATOR),
            click_option(spec.ALPHA),
            click.option(
                "--beta",
                callback=_beta,
                metavar="B|B1,B0",
                help="Pseudo-counts of θ: Beta(B1,B0) for bernoulli (present, absent), "
                "symmetric Dirichlet(B) for the others.",
            ),
            click_option(spec.TF_OPTION),
            click_option(spec.IDF),
            click_option(spec.NORM),
            click_option(spec.PRIOR_FIT),
            click_option(spec.CLASS_PRIOR),
        ]
        for option in reversed(options):
            command = option(command)
        return _collect_text_options(command)

    return decorate


TEXT_OPTIONS = ("tf", "idf", "norm", "prior_fit", "class_prior")


def _collect_text_options(command):
    """Gather --tf, --idf, --norm and --prior-fit into one ``text_options`` argument."""
    import functools

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        kwargs["text_options"] = {name: kwargs.pop(name) for name in TEXT_OPTIONS}
        return command(*args, **kwargs)

    return wrapper


def _overrides(event_model, estimator, alpha, beta, text_options=None) -> dict:
    """The estimator options as :func:`nbclass.models.estimators.resolve` takes them."""
    return dict(
        model=event_model, estimator=estimator, alpha=alpha, beta=beta, **(text_options or {})
    )


def _settings(base, event_model, estimator, alpha, beta, text_options=None):
    from ..models.estimators import resolve

    return resolve(base, **_overrides(event_model, estimator, alpha, beta, text_options))


def _format_option(*choices: str):
    """--format, the first choice being the default."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(list(choices)),
        default=choices[0],
        show_default=True,
        help="Output format.",
    )


def click_option(option: spec.Option, **changes):
    """The click option of a row of the options' table (:mod:`nbclass.cli.predict_options`);
    ``changes`` replace the keywords the table gives."""
    kind = option.kind
    keywords = {"metavar": option.metavar, "help": option.help, "show_default": option.show_default}
    if not changes.get("required"):  # click 8.3 takes an explicit None as a given default,
        keywords["default"] = option.default  # and a required option then goes unchecked
    if kind == "path":
        keywords["type"] = FILE
    elif kind == "int":
        keywords["type"] = click.IntRange(min=1)
    elif kind == "float":
        keywords["type"] = float
    elif kind == "flag":
        keywords["is_flag"] = True
    elif kind == "multiple":
        keywords["multiple"] = True
    elif isinstance(kind, tuple):
        keywords["type"] = click.Choice(list(kind))
    keywords.update(changes)
    return click.option(*option.names, option.key, **keywords)


def _model_option(command):
    return click_option(spec.MODEL_FILE, required=True)(command)


READING_OPTIONS = ("encoding", "max_bytes", "binary", "on_error")


def _max_bytes(ctx, param, value):
    from ..reading.policy import parse_size

    try:
        return parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--max-bytes") from None


def reading_options(command):
    """--encoding, --max-bytes, --binary and --on-error (:mod:`nbclass.reading.policy`).

    The command receives them as one ``reading`` argument, ``(ReadPolicy, ReadLog)``; the
    log warns of each skipped document as it happens, and when the command ends the
    summary of what was skipped and replaced is printed on stderr.
    """
    import functools

    from ..reading.policy import DEFAULT_MAX_BYTES, format_size

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from ..reading.policy import ReadLog, ReadPolicy

        policy = ReadPolicy(**{name: kwargs.pop(name) for name in READING_OPTIONS})
        from .single import warn_skip

        log = ReadLog(on_skip=warn_skip)
        kwargs["reading"] = (policy, log)
        try:
            return command(*args, **kwargs)
        except click.exceptions.Exit:
            _echo_summary(policy, log)
            raise
        finally:
            if sys.exc_info()[0] is None:
                _echo_summary(policy, log)

    options = [
        click.option(
            "--encoding",
            default="utf-8",
            show_default=True,
            metavar="NAME",
            help="Encoding of the documents (any Python codec: latin-1, cp1252, utf-16...). "
            "Bytes that do not decode become U+FFFD and are counted.",
        ),
        click.option(
            "--max-bytes",
            default=format_size(DEFAULT_MAX_BYTES),
            show_default=True,
            callback=_max_bytes,
            metavar="SIZE",
            help="Largest document (a line with --lines), e.g. 512K, 64M: a longer one is "
            "an error (see --on-error); memory stays bounded whatever the input.",
        ),
        click.option(
            "--binary",
            is_flag=True,
            help="Read documents with a NUL byte in their first 8 KiB as text, instead of "
            "skipping them with a warning.",
        ),
        click.option(
            "--on-error",
            type=click.Choice(["fail", "skip"]),
            default="fail",
            show_default=True,
            help="An unreadable, vanished or over-size document: stop (exit 1), or skip it "
            "with a warning and a summary line at the end.",
        ),
    ]
    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


def _refuse_reading_options(reading) -> None:
    """--table reads a table, not documents: the reading options would be ignored."""
    from ..reading.policy import DEFAULT_POLICY

    if reading[0] != DEFAULT_POLICY:
        raise UsageError(
            "--encoding, --max-bytes, --binary and --on-error apply to documents, not to "
            "--table (a table is read as UTF-8)"
        )


def _echo_summary(policy, log) -> None:
    for line in log.summary(policy):
        click.echo(line, err=True)


def table_fit_options(command):
    """--table, --label, --table-format, --column-types, --var-smoothing of ``fit``."""
    options = [
        click.option(
            "--table",
            type=FILE,
            metavar="FILE",
            help="Learn from a table (CSV, TSV or JSON lines; - for stdin) instead of a folder.",
        ),
        click.option("--label", metavar="COLUMN", help="With --table: the column of classes."),
        _table_format_option,
        click.option(
            "--column-types",
            metavar="NAME=TYPE,...",
            help="With --table: numeric, categorical, text or ignore per column, overriding "
            "the detection.",
        ),
        click.option(
            "--var-smoothing",
            type=float,
            default=None,
            metavar="EPS",
            help="With --table: variance floor of numeric columns, EPS times the largest "
            f"column variance.  [default: {DEFAULT_VAR_SMOOTHING!r}]",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


_table_format_option = click.option(
    "--table-format",
    type=click.Choice(["csv", "tsv", "jsonl"]),
    default=None,
    help="Format of --table.  [default: from the extension]",
)


def table_predict_options(command):
    """--table, --table-format, --id of ``predict``."""
    options = [
        click.option(
            "--table",
            type=FILE,
            metavar="FILE",
            help="Classify the rows of a table (table models; - for stdin).",
        ),
        _table_format_option,
        click.option(
            "--id",
            "id_column",
            metavar="COLUMN",
            help="With --table: name each row by this column instead of FILE:ROW.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


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


@click.group(cls=NbclassGroup, context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="nbclass")
def cli():
    """Naive Bayes text classification for shell scripts and cron jobs.

    \b
    Learn from a folder with one subfolder per class, then classify:
      nbclass fit corpus/ -o model.nbc
      echo "my invoice is wrong" | nbclass predict -m model.nbc
      nbclass predict -m model.nbc inbox/ > labels.tsv
      nbclass top-features -m model.nbc -k 20

    Exit codes: 0 success, 1 runtime error (corpus, model or input), 2 usage error,
    130 interrupted, 141 output pipe closed.

    \b
    Trust a model before cron does:
      nbclass evaluate -m model.nbc test/        # accuracy, F1, calibration
      nbclass cv corpus/ --folds 10              # cross-validation
      nbclass check -m new.nbc --baseline prod.nbc test/ --max-drop 0.01   # exit 0 or 3
      nbclass predict -m model.nbc --min-probability 0.9 --exit-code ticket.txt  # 10+k, 9
    """


def fit_options(command):
    """The tokenizer, vocabulary filter, estimator and jobs options of fit and sync."""
    options = [
        click.option(
            "--lowercase/--no-lowercase",
            default=True,
            show_default=True,
            help="Lower-case text first.",
        ),
        click.option(
            "--token-pattern",
            default=None,
            metavar="REGEX",
            help=f"Regular expression for one token.  [default: {DEFAULT_TOKEN_PATTERN}]",
        ),
        click.option(
            "--ngram-range",
            callback=_ngram_range,
            metavar="MIN,MAX",
            help="Word n-gram lengths, e.g. 1,2 for words and word pairs.  "
            f"[default: {DEFAULT_NGRAM_RANGE[0]},{DEFAULT_NGRAM_RANGE[1]}]",
        ),
        click.option(
            "--stop-words",
            default="none",
            show_default=True,
            type=FILE,
            metavar="english|FILE|none",
            help="Words to drop: the built-in English list, a file with one word per line, "
            "or none.",
        ),
        click.option(
            "--hash-features",
            callback=_hash_features,
            metavar="N",
            help="Hash words into N columns (e.g. 2^20) for a vocabulary that never stops "
            "growing: memory and file size stay bounded. Off by default.",
        ),
        click.option(
            "--min-df",
            type=int,
            default=1,
            show_default=True,
            help="Use only words found in at least this many documents.",
        ),
        click.option(
            "--max-features",
            type=int,
            default=None,
            metavar="K",
            help="Use only the K most frequent words (after --min-df).",
        ),
        estimator_options(
            "Stored as the model's default; --update and sync keep the model's own.  "
            f"[default: --model {AUTO}; with --table: {as_options(TABLE_DEFAULTS)}]"
        ),
        click.option(
            "-j",
            "--jobs",
            type=click.IntRange(min=1),
            default=None,
            help="Processes that read and count. The model is the same for any number.  "
            "[default: $NBCLASS_JOBS, else every core]",
        ),
        click.option("-q", "--quiet", is_flag=True, help="Print no summary and no progress bar."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


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


@cli.command(context_settings=CONTEXT)
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
    ctx, corpus_dir, output, lines_path, update_path, ledger, typicality, jobs, quiet, scheduler,
    reading, **options,
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
        if lines_path or ledger or options["hash_features"] or typicality:
            raise UsageError(
                "--table cannot be combined with --lines, --ledger, --hash-features or "
                "--typicality"
            )
        if update_path is not None:
            return _update_table(ctx, update_path, output, quiet, table_options)
        if output is None:
            raise UsageError("give -o MODEL")
        _refuse_reading_options(reading)
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

        _check_scheduler(ctx, scheduler)
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
    jobs = jobs or default_jobs()
    base = None
    if update_path is not None:
        from ..modelfile.textfile import load

        base = load(update_path)
        if ledger and base.ledger is None:
            raise UsageError(
                f"{update_path!r} keeps no ledger; --ledger needs one from its first fit"
            )
    tokenizer, vocabulary_filter, defaults, auto = _fit_settings(ctx, options, base)
    keep_ledger = ledger if base is None else base.ledger is not None
    # Read and count before taking the lock: the input may be a slow pipe, and the lock
    # should be held only while the model is read, changed and written.
    documents, corpus = _count(
        corpus_dir, lines_path, tokenizer, keep_ledger, jobs, quiet, base, scheduler, reading,
        sample=auto,
    )  # fmt: skip
    if base is None:
        model = _new_model(documents, tokenizer, vocabulary_filter, defaults, auto, jobs)
        if typicality and not auto and corpus is not None:  # typical documents (novelty.py)
            from ..models.model import with_typicality

            model = with_typicality(model, corpus, reading[0])
    with locked(output):
        if base is not None:
            from dataclasses import replace

            from ..models.learning import update

            current = _reload(update_path, base)
            current = replace(current, vocabulary_filter=vocabulary_filter)
            model = update(_with_defaults(current, defaults), documents)
        save(model, output)
    if not quiet:
        extra = "" if base is None else f"+{documents.counts.n_docs} documents, now "
        _summary("update" if base is not None else "fit", model, output, start, extra, auto)


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


def _update_table(ctx, update_path, output, quiet, table_options):
    """fit --table FILE --update MODEL: add the rows to a table model, under its lock."""
    settings = {
        "lowercase": "--lowercase", "token_pattern": "--token-pattern",
        "ngram_range": "--ngram-range", "stop_words": "--stop-words", "min_df": "--min-df",
        "max_features": "--max-features", "event_model": "--model", "estimator": "--estimator",
        "alpha": "--alpha", "beta": "--beta", "tf": "--tf", "idf": "--idf", "norm": "--norm",
        "prior_fit": "--prior-fit", "class_prior": "--class-prior",
        "column_types": "--column-types", "var_smoothing": "--var-smoothing",
    }  # fmt: skip
    given = [option for name, option in settings.items() if _given(ctx, name)]
    if given:
        raise UsageError(
            f"--update adds rows with the table model's own settings: leave out {given[0]}"
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
            f"classes, {time.perf_counter() - start:.2f} s -> {_shown(output)}",
            err=True,
        )


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


@cli.command(context_settings=CONTEXT)
@_model_option
@click.argument("paths", nargs=-1, type=FILE_OR_FOLDER, metavar="[PATH]...")
@click.option("--lines", is_flag=True, help="Every line of the input is one document.")
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
    type=click.IntRange(min=1),
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
    type=float,
    default=None,
    metavar="P",
    help="Label a document unsure (unlike-training) when its log-evidence per known token "
    "is below the P-th percentile of the training documents' (a model fitted with "
    "--typicality).",
)
@click_option(spec.UNSURE_LABEL)
@click_option(spec.EXIT_CODE)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Processes that read and score files (from 4 MB of them). The output is the "
    "same for any number.  [default: $NBCLASS_JOBS, else every core]",
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
    model_path, paths, lines, fmt, top_k, event_model, estimator, alpha, beta, scheduler,
    no_calibration, explain, min_probability, min_margin, min_known, min_typicality,
    unsure_label, use_exit_code, text_options, jobs, quiet, reading, output_dir, **table_options,
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
    """
    if table_options["table"] is not None or table_options["id_column"] is not None:
        if output_dir is not None:
            raise UsageError("--output-dir writes the predictions of documents: not with --table")
        _refuse_reading_options(reading)
        return _predict_table(
            model_path, paths, lines, fmt, top_k, event_model, estimator, alpha, beta,
            **table_options,
        )  # fmt: skip
    if not paths and sys.stdin.isatty():
        raise click.UsageError(
            "no input: give files or folders to classify, or pipe a document into "
            "standard input, e.g.  echo 'some text' | nbclass predict -m MODEL"
        )
    from ..models.abstain import Abstention, check_exit_classes, exit_code
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
    if single and not explain:
        # One document: score it without numpy, which would take most of the time to import.
        from .single import predict_one

        overrides = _overrides(event_model, estimator, alpha, beta, text_options)
        code = predict_one(
            model_path, documents, overrides, fmt, top_k, abstention, use_exit_code,
            not no_calibration,
        )  # fmt: skip
        if code is not None:
            if use_exit_code:
                raise click.exceptions.Exit(code)
            return
        # Settings that need every count (fitted β, idf, normalised weights): batch path.
    from functools import partial

    from ..modelfile.textfile import load
    from ..models.explain import extras, score_batch
    from ..models.model import BATCH_SIZE, Classifier, scoring_settings
    from ..models.scoring import worth_parallel

    def check_classes(classes) -> None:
        abstention.check_classes(classes)
        if use_exit_code:
            check_exit_classes(classes)

    add_extras = partial(extras, abstention=abstention, explain=explain, evidence=fmt == "jsonl")
    overrides = _overrides(event_model, estimator, alpha, beta, text_options)
    scoring = overrides, not no_calibration
    on_cluster = scheduler and not lines and paths and "-" not in paths
    if on_cluster:
        _check_scheduler(click.get_current_context(), scheduler)
    files, jobs = (None, 1) if on_cluster else _listed_files(paths, lines, jobs)
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
        return _write_on_cluster(
            scheduler, model_path, paths, scoring, abstention, explain, reading, output_dir,
            fmt, top_k,
        )  # fmt: skip
    if on_cluster:
        classes, settings, batches = _predict_on_cluster(
            scheduler, model_path, paths, scoring, abstention, explain, reading
        )
        batches = ((s.sources, s.log_proba.tolist(), extra) for s, extra in batches)
    elif files is not None and jobs > 1 and worth_parallel(files, BATCH_SIZE):
        classes, settings, batches = _predict_in_parallel(
            model_path, files, jobs, scoring, reading, add_extras, check_classes
        )
    else:
        if files is not None:  # listed already: read them without walking again
            documents = iter_documents(paths, lines, *reading, listed=files)
        model = load(model_path)
        settings, calibration = scoring_settings(model, *scoring)
        classifier = Classifier(model, settings, calibration=calibration)
        classes = classifier.classes
        batches = (
            (scored.sources, scored.log_proba.tolist(), add_extras(classifier, scored))
            for scored in map(partial(score_batch, classifier), _batches(documents, BATCH_SIZE))
        )
    check_classes(classes)
    labels = []
    listed = [path for path, _ in files] if bar_wanted else []
    with _progress("predict", listed, not bar_wanted) as bar:
        for index, (sources, rows, extra) in enumerate(batches):
            if output_dir is not None:
                _write_predictions(
                    output_dir, index, sources, classes, rows, fmt, top_k, settings, extra,
                    unsure_label,
                )  # fmt: skip
                continue
            labels = _print_predictions(
                sources, classes, rows, fmt, top_k, settings, extra, unsure_label
            )
            if bar:
                bar.past(sources[-1] if sources else None)
        if bar:
            bar.past(None, finished=True)
    if use_exit_code:
        raise click.exceptions.Exit(exit_code(classes, labels[0] if labels else ""))


def _write_predictions(
    folder, index, sources, classes, rows, fmt, top_k, settings, extras, unsure_label
):  # fmt: skip
    """--output-dir here: one batch of predictions as the part file ``index``."""
    import warnings

    from ..output.parts import part_name, write_part
    from ..output.render import prediction_labels, prediction_lines

    lines = prediction_lines(sources, classes, rows, fmt, top_k, extras, unsure_label)
    write_part(folder, part_name(index, fmt), lines)
    for problem in prediction_labels(sources, classes, rows, settings, extras, unsure_label)[1]:
        warnings.warn(problem, NbclassWarning, stacklevel=1)


def _cluster_model(model_path, paths, scoring):
    """What a predict on a Dask cluster sends: ``(data, settings, calibration, classes,
    files)``, the model file's bytes (the workers get these very bytes), the settings and
    calibration it is scored with, its classes and the files of ``paths``."""
    from ..cluster.remote import require_dask
    from ..modelfile.fileformat import read
    from ..modelfile.textfile import loads
    from ..models.model import scoring_settings
    from ..reading.corpus import expand_paths

    require_dask()
    data = read(model_path)
    model = loads(data, model_path)
    settings, calibration = scoring_settings(model, *scoring)
    files = list(expand_paths(paths))  # a missing path stops before any work is sent
    return data, settings, calibration, model.active_counts.classes, files


def _write_on_cluster(
    scheduler, model_path, paths, scoring, abstention, explain, reading, folder, fmt, top_k
):  # fmt: skip
    """--output-dir with --scheduler: each worker writes the parts it scores."""
    import warnings

    from ..cluster.remote import write_predictions

    data, settings, calibration, classes, files = _cluster_model(model_path, paths, scoring)
    abstention.check_classes(classes)
    _, _, problems = write_predictions(
        scheduler, data, classes, settings, files, abstention, explain, *reading, folder, fmt,
        top_k, abstention.label, calibration=calibration,
    )  # fmt: skip
    for problem in problems:
        warnings.warn(problem, NbclassWarning, stacklevel=1)


def _predict_on_cluster(
    scheduler, model_path, paths, scoring, abstention, explain, reading
):  # fmt: skip
    """``(classes, settings, batches)`` of the files at ``paths``, scored by a Dask cluster."""
    from ..cluster.remote import predict_files

    data, settings, calibration, classes, files = _cluster_model(model_path, paths, scoring)
    batches = predict_files(
        scheduler, data, classes, settings, files, abstention, explain, *reading,
        calibration=calibration,
    )  # fmt: skip
    return classes, settings, batches


def _listed_files(paths, lines: bool, jobs: int | None):
    """``(files, jobs)``: the ``(path, walked)`` files of ``paths``, which ``jobs`` worker
    processes may read and count (:mod:`nbclass.models.scoring`), or None (and one job) for
    standard input, --lines, one job, or a path that does not exist (its error comes in
    its turn, after the documents before it)."""
    from ..counting.counts import default_jobs
    from ..reading.corpus import list_inputs

    if lines or not paths or "-" in paths:
        return None, 1
    jobs = jobs or default_jobs()
    if jobs < 2:
        return None, 1
    try:
        return list_inputs(paths), jobs
    except NbclassError:
        return None, 1


def _predict_in_parallel(model_path, files, jobs, scoring, reading, add_extras, check_classes):
    """``(classes, settings, batches)`` of ``files``, read and counted by ``jobs`` forked
    workers while this process loads the model (:mod:`nbclass.models.scoring`); an error before
    the batches are taken (the model, the options, ``check_classes``) stops the workers."""
    from ..modelfile.fileformat import read
    from ..modelfile.textfile import load_counter, loads
    from ..models.model import BATCH_SIZE, Classifier, scoring_settings
    from ..models.scoring import CountedBatches, score_counted

    data = read(model_path)
    counter = load_counter(data, model_path)  # the model file's damage is refused here
    policy, log = reading
    counted = CountedBatches(counter, files, policy, jobs, BATCH_SIZE)
    try:
        model = loads(data, model_path)
        settings, calibration = scoring_settings(model, *scoring)
        classifier = Classifier(model, settings, counter, calibration)
        check_classes(classifier.classes)
    except BaseException:
        counted.close()
        raise
    return classifier.classes, settings, score_counted(classifier, counted, log, add_extras)


def _batches(items, size: int):
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _print_predictions(
    sources, classes, rows, fmt, top_k, settings, extras=None, unsure_label="unsure"
) -> list[str]:
    """Print the predictions; returns the labels printed ("" for none)."""
    from .single import print_predictions

    return print_predictions(sources, classes, rows, fmt, top_k, settings, extras, unsure_label)


@cli.command("top-features", context_settings=CONTEXT)
@_model_option
@click.option(
    "-k", "k", type=click.IntRange(min=1), default=20, show_default=True, help="How many words."
)
@click.option(
    "--per-class",
    "per_class",
    type=click.IntRange(min=1),
    metavar="K",
    help="Instead: the K words that most favour each class, by log θ_jc − log θ_j,rest "
    "(prints class<TAB>word<TAB>log_ratio).",
)
@_format_option("tsv", "jsonl")
@estimator_options("Only --model, --estimator, --alpha and --beta matter here.")
def top_features(
    model_path, k, per_class, fmt, event_model, estimator, alpha, beta, text_options
):
    """Rank words by mutual information with the class.

    Prints word<TAB>mi<TAB>class, best first: the mutual information (in nats) between
    "the word is present in a document" and the document's class, and the class the word
    points to most (the one whose documents contain it most often). θ and π come from the
    model's estimator unless --estimator says otherwise; with --estimator mle this is the
    empirical mutual information.

    With --per-class K: for each class, the K words with the largest
    log θ_jc − log θ_j,rest, the log-odds an occurrence adds to the class against all
    the others pooled (θ: presence probability for --model bernoulli, token probability
    otherwise), printed class<TAB>word<TAB>log_ratio.

    \b
    Examples:
      nbclass top-features -m model.nbc -k 10
      nbclass top-features -m model.nbc --per-class 5 --format jsonl
    """
    from ..modelfile.textfile import load
    from ..models.selection import top_features as rank
    from ..output.render import feature_lines

    try:
        model = load(model_path)
    except ModelKindError as exc:
        if exc.kind != "table":
            raise
        if per_class is not None:
            raise UsageError(
                "top-features --per-class ranks the words of a text model; this is a table "
                "model: use -k"
            ) from None
        return _table_top_features(model_path, k, fmt, event_model, estimator, alpha, beta)
    settings = _settings(model.defaults, event_model, estimator, alpha, beta, text_options)
    if per_class is not None:
        return _per_class_features(model, settings, per_class, fmt)
    features = rank(model.active_counts, settings, k)
    if k > len(features):  # like head -n: list what there is, and say so
        click.echo(
            f"top-features: -k {k} is more than the model's {len(features)} words: "
            "listing all of them",
            err=True,
        )
    if model.column_words is not None:  # hashed columns: show the words seen in each
        from dataclasses import replace

        features = [replace(f, word=model.display(f.word)) for f in features]
    _echo_lines(feature_lines(features, fmt))


def _per_class_features(model, settings, k: int, fmt: str) -> None:
    from dataclasses import replace

    from ..models.selection import class_top_features
    from ..output.render import class_feature_lines

    features = class_top_features(model.active_counts, settings, k)
    V = len(model.active_counts.vocabulary)
    if k > V:
        click.echo(
            f"top-features: --per-class {k} is more than the model's {V} words: "
            "listing all of them",
            err=True,
        )
    if model.column_words is not None:
        features = [replace(f, word=model.display(f.word)) for f in features]
    _echo_lines(class_feature_lines(features, fmt))


@cli.command("select-features", context_settings=CONTEXT)
@_model_option
@click.option("-k", "k", type=click.IntRange(min=1), required=True, help="How many words to keep.")
@click.option(
    "-o", "--output", required=True, type=FILE, metavar="PRUNED", help="Model file to write."
)
@estimator_options("Only --estimator, --alpha and --beta matter here.")
@click.option("-q", "--quiet", is_flag=True, help="Print no summary.")
def select_features(
    model_path, k, output, event_model, estimator, alpha, beta, text_options, quiet
):
    """Write a model that uses only the K words with the highest mutual information.

    The kept words' counts are unchanged (so are the class counts N_c); prediction with
    the new model uses only those words.

    \b
    Example:
      nbclass select-features -m model.nbc -k 1000 -o small.nbc
    """
    from ..modelfile.textfile import load, save
    from ..models.model import select_features as select

    model = load(model_path)
    settings = _settings(model.defaults, event_model, estimator, alpha, beta, text_options)
    pruned = select(model, k, settings)
    save(pruned, output)
    if not quiet:
        click.echo(
            f"select-features: kept {len(pruned.counts.vocabulary)} of "
            f"{len(model.active_counts.vocabulary)} words -> {_shown(output)}",
            err=True,
        )


@cli.command(context_settings=CONTEXT)
@_model_option
@click.option(
    "-o", "--output", required=True, type=FILE, metavar="FILE", help="Export file to write."
)
@_format_option("json", "npz")
@estimator_options("Default: the model's own, as predict uses them.")
@click.option(
    "--no-calibration",
    is_flag=True,
    help="Export the formula's weights without the model's calibration (as predict "
    "--no-calibration scores).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print no summary.")
def export(
    model_path, output, fmt, event_model, estimator, alpha, beta, text_options, no_calibration,
    quiet,
):  # fmt: skip
    """Write the model as W, b and the document transform, for scoring outside nbclass.

    p(c | x) = softmax(f(x) W + b), exactly predict's probabilities, with f(x) the
    document's counts or presences after --tf, --idf and --norm; the file also holds the
    tokenizer settings and the vocabulary (docs/export.md has a reference scorer).
    Exports the multinomial, bernoulli, complement and poisson models, and dcm (with its
    per-class length term); not --estimator predictive, whose scores are not linear.

    \b
    Examples:
      nbclass export -m model.nbc -o model.json
      nbclass export -m model.nbc -o model.npz --format npz
    """
    from ..modelfile.export import export as write_export
    from ..modelfile.textfile import load
    from ..models.model import scoring_settings

    start = time.perf_counter()
    model = load(model_path)
    overrides = _overrides(event_model, estimator, alpha, beta, text_options)
    settings, calibration = scoring_settings(model, overrides, not no_calibration)
    write_export(model, settings, output, fmt, calibration)
    if not quiet:
        click.echo(
            f"export: {len(model.active_counts.vocabulary)} words, "
            f"{len(model.active_counts.classes)} classes, {settings.model} model, "
            f"{time.perf_counter() - start:.2f} s -> {output}",
            err=True,
        )


@cli.command(context_settings=CONTEXT)
@_model_option
@_format_option("text", "json")
def info(model_path, fmt):
    """Describe a model: classes with their document counts, vocabulary, settings."""
    from ..modelfile.textfile import load_with_header
    from ..output.render import info_lines, model_info

    try:
        model, header = load_with_header(model_path)
    except ModelKindError as exc:
        if exc.kind != "table":
            raise
        return _table_info(model_path, fmt)
    fmt_header = {k: header[k] for k in ("format", "version", "nbclass_version")}
    _echo_lines(info_lines(model_info(model, model_path, fmt_header), fmt))


@cli.command(context_settings=CONTEXT)
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


@cli.command(context_settings=CONTEXT)
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


@cli.command(context_settings=CONTEXT)
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
    fields = {
        "added": report.added,
        "removed": report.removed,
        "relabelled": report.relabelled,
        "unchanged": report.unchanged,
        "documents": model.counts.n_docs,
    }
    if fmt == "json":
        click.echo(json.dumps({**fields, "model": model_path}))
    else:
        click.echo(
            "sync: " + ", ".join(f"{value} {name}" for name, value in fields.items())
            + f" -> {_shown(model_path)}" + ("" if report.changed else " (unchanged)")
        )


# --- tables: fit --table, predict --table, top-features and info of table models -----------


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
    from ..models.tablemodel import fit_table
    from ..reading.table import parse_column_types, read_table
    from ..text.tokenizer import TokenizerSettings, load_stop_words

    start = time.perf_counter()
    defaults = _settings(TABLE_DEFAULTS, event_model, estimator, alpha, beta)
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
    save(model, output)
    if not quiet:
        seconds = time.perf_counter() - start
        kinds = [c.type for c in model.columns]
        described = ", ".join(
            f"{kinds.count(t)} {t}" for t in ("numeric", "categorical", "text") if t in kinds
        )
        click.echo(
            f"fit: {model.n_rows} rows, {len(model.classes)} classes, {len(kinds)} columns "
            f"({described}), {seconds:.2f} s -> {_shown(output)}",
            err=True,
        )


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
    from ..output.render import prediction_lines
    from ..reading.table import iter_rows
    from ..reading.table import table_format as detect_format

    model = load(model_path)
    settings = _settings(model.defaults, event_model, estimator, alpha, beta)
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

    for predictions in classifier.predict_rows(sources()):
        log_rows = predictions.log_proba.tolist()
        _echo_lines(prediction_lines(predictions.sources, model.classes, log_rows, fmt, top_k))
        for source, row in zip(predictions.sources, log_rows):
            if max(row) == float("-inf"):
                warnings.warn(
                    f"every class has probability 0 for {source!r} under --estimator "
                    f"{settings.estimator}: a value the class never had rules each out; its "
                    "label is empty. Use --estimator posterior-mean to smooth.",
                    NbclassWarning,
                    stacklevel=1,
                )


def _table_top_features(model_path, k, fmt, event_model, estimator, alpha, beta):
    from ..modelfile.tablefile import load
    from ..models.tablemodel import table_top_features
    from ..output.render import table_feature_lines

    model = load(model_path)
    settings = _settings(model.defaults, event_model, estimator, alpha, beta)
    _echo_lines(table_feature_lines(table_top_features(model, settings, k), fmt))


def _table_info(model_path, fmt):
    from ..modelfile.tablefile import load_with_header
    from ..output.render import table_info_lines, table_model_info

    model, header = load_with_header(model_path)
    fmt_header = {k: header[k] for k in ("format", "version", "nbclass_version", "kind")}
    _echo_lines(table_info_lines(table_model_info(model, model_path, fmt_header), fmt))


def _lines_option(what: str):
    """--lines FILE|- of evaluate, cv and check: labelled documents, read as fit --lines."""
    return click.option(
        "--lines",
        "lines_path",
        type=FILE,
        metavar="FILE|-",
        help=f"{what} one document per line of FILE (- for standard input): "
        "LABEL<TAB>TEXT or fastText's __label__LABEL TEXT, as fit --lines reads them.",
    )


def _labelled_corpus(folder: str | None, lines_path: str | None, reading, min_classes: int):
    """The labelled documents of a corpus folder or of --lines, without those the reading
    policy skips; lines are held in memory (evaluate, cv and check read them more than
    once)."""
    from ..reading.corpus import list_corpus, readable

    if lines_path is not None:
        from ..models.learning import labelled_corpus

        return labelled_corpus(_line_documents(lines_path, reading), min_classes)
    return readable(list_corpus(folder, min_classes=min_classes), *reading)


def _one_source(folder: str | None, lines_path: str | None, name: str) -> str:
    """The folder or the --lines file, whichever was given (a usage error unless one)."""
    if (folder is None) == (lines_path is None):
        raise UsageError(f"give a {name} or --lines FILE (one of them)")
    return folder if folder is not None else lines_path


@cli.command(context_settings=CONTEXT)
@_model_option
@click.argument("test_dir", type=FOLDER, metavar="[TEST_DIR]", required=False)
@click.option(
    "--table",
    type=FILE,
    metavar="FILE",
    help="With a table model: evaluate on the labelled rows of FILE (CSV, TSV or JSON lines).",
)
@_table_format_option
@_lines_option("Evaluate on")
@_format_option("text", "json")
@estimator_options("Overrides the model's default without refitting.")
@reading_options
def evaluate(
    model_path, test_dir, table, table_format, lines_path, fmt, event_model, estimator, alpha,
    beta, text_options, reading,
):  # fmt: skip
    """Measure a model on TEST_DIR, labelled documents laid out like a training corpus.

    With --lines FILE, the test documents are the lines of FILE instead, each with its
    label (as for fit --lines). A table model (fit --table) is measured on --table FILE,
    whose label column holds each row's true class.

    Prints accuracy, macro- and micro-F1, log loss, Brier score (multiclass sum form,
    0 to 2), expected calibration error (10 equal-width confidence bins), precision,
    recall and F1 per class, the confusion matrix and a reliability diagram. On a
    terminal the matrix is a coloured heat map; --format json prints one object.

    \b
    Examples:
      nbclass evaluate -m model.nbc test/
      nbclass evaluate -m model.nbc test/ --format json | jq .accuracy
      nbclass evaluate -m model.nbc --lines test.tsv
      nbclass evaluate -m table-model.nbc --table test.csv
    """
    if sum(x is not None for x in (test_dir, lines_path, table)) != 1:
        raise UsageError(
            "give a TEST_DIR or --lines FILE (text model), or --table FILE (table model)"
        )
    if table is not None:
        _refuse_reading_options(reading)
    try:
        return _evaluate(
            model_path, test_dir, table, table_format, lines_path, fmt, event_model, estimator,
            alpha, beta, text_options, reading,
        )  # fmt: skip
    except ModelKindError as exc:
        fix = (
            f"evaluate it on labelled rows with 'nbclass evaluate -m {model_path} --table FILE'"
            if exc.kind == "table"
            else f"evaluate it on a folder with 'nbclass evaluate -m {model_path} TEST_DIR'"
        )
        raise NbclassError(f"{model_path!r} is a {exc.kind} model: {fix}") from None


def _evaluate(
    model_path, test_dir, table, table_format, lines_path, fmt, event_model, estimator, alpha,
    beta, text_options, reading,
):  # fmt: skip
    from ..evaluation.judging import evaluate as run
    from ..modelfile.textfile import load

    if table is not None:
        from ..evaluation.judging import evaluate_table
        from ..modelfile.tablefile import load as load_table
        from ..reading.table import read_table

        model = load_table(model_path)
        settings = _settings(model.defaults, event_model, estimator, alpha, beta)
        evaluation = evaluate_table(model, settings, read_table(table, table_format))
        test_dir, n_classes = table, len(model.classes)
    else:
        model = load(model_path)
        settings = _settings(model.defaults, event_model, estimator, alpha, beta, text_options)
        corpus = _labelled_corpus(test_dir, lines_path, reading, min_classes=1)
        evaluation = run(model, settings, corpus, reading[0])
        n_classes = len(corpus.classes)
        test_dir = _one_source(test_dir, lines_path, "TEST_DIR")
    if fmt == "json":
        from ..output.render import json_text

        _echo_lines(
            [json_text({"model": model_path, "test_dir": test_dir, **evaluation.to_dict()})]
        )
        return
    from ..output.report import evaluation_report, show

    title = (
        f"{_shown(model_path)} on {_shown(test_dir)}: {evaluation.n_docs} "
        f"{'rows' if table else 'documents'}, "
        f"{n_classes} classes\n{_describe_settings(settings, model)}"
    )
    show(*evaluation_report(evaluation, title))


_AUTO_TEXT = "model auto: each fold's training documents choose and calibrate, as fit does"


def _describe_settings(settings, model=None) -> str:
    """The settings line of a report; with ``model``, its fitted β when they are its defaults."""
    from ..output.render import settings_text

    fitted = None
    prepared = getattr(model, "prepared", None)  # table models keep none
    if prepared is not None and settings == model.defaults:
        fitted = prepared.beta
    return settings_text(settings.to_dict(), fitted)


@cli.command(context_settings=CONTEXT)
@click.argument("corpus_dir", type=FOLDER, metavar="[CORPUS_DIR]", required=False)
@_lines_option("Cross-validate")
@click.option(
    "-k",
    "--folds",
    type=int,
    default=DEFAULT_FOLDS,
    show_default=True,
    help="Number of folds; every class needs at least this many documents.",
)
@click.option(
    "--seed",
    type=int,
    default=DEFAULT_SEED,
    show_default=True,
    help="Seed of the stratified split (the split never depends on file listing order).",
)
@click.option(
    "--learning-curve",
    is_flag=True,
    help="Also train on 1, 2, ..., K-1 folds and draw accuracy against training size.",
)
@click.option(
    "--like",
    "like_path",
    type=FILE,
    metavar="MODEL",
    help="Tokenize, filter the vocabulary and estimate as this model file does.  "
    "[default: fit's tokenizer and vocabulary filter, the estimator of --model's defaults]",
)
@estimator_options(
    "Overrides the defaults (of --like's model, if given).  "
    f"[default: --model {AUTO}]"
)
@_format_option("text", "json")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Processes that read and count.  [default: $NBCLASS_JOBS, else every core]",
)
@reading_options
def cv(
    corpus_dir,
    lines_path,
    folds,
    seed,
    learning_curve,
    like_path,
    event_model,
    estimator,
    alpha,
    beta,
    text_options,
    fmt,
    jobs,
    reading,
):
    """Stratified K-fold cross-validation of CORPUS_DIR (laid out as for fit), or of the
    labelled lines of --lines FILE.

    Each fold is counted once; fold k's training counts are the total minus fold k's
    (counts add up), exactly what a refit on the other folds would count, so K folds
    cost about one fit plus K predictions. Prints the mean, standard deviation, min and
    max over the folds of accuracy, macro-/micro-F1, log loss, Brier score and ECE
    (as 'nbclass evaluate' defines them), and every fold's values.

    \b
    Examples:
      nbclass cv corpus/ --folds 10 --seed 7
      nbclass cv corpus/ --learning-curve --like model.nbc
      nbclass cv corpus/ --format json | jq .metrics.accuracy.mean
      nbclass cv --lines labelled.tsv
    """
    source = _one_source(corpus_dir, lines_path, "CORPUS_DIR")
    from ..counting.counts import default_jobs
    from ..evaluation.judging import cross_validate
    from ..models.estimators import AUTO, overridden, resolve
    from ..models.model import VocabularyFilter
    from ..text.tokenizer import TokenizerSettings

    overrides = _overrides(event_model, estimator, alpha, beta, text_options)
    if like_path:
        from ..modelfile.textfile import load

        like = load(like_path)
        tokenizer, vocabulary_filter, defaults = (
            like.tokenizer,
            like.vocabulary_filter,
            like.defaults,
        )
        auto = like.choice is not None  # chosen by fit: choose the same way in every fold
    else:
        tokenizer, vocabulary_filter, defaults = (
            TokenizerSettings(),
            VocabularyFilter(),
            EstimatorSettings(),  # the formula of the options given, if any
        )
        auto = True  # fit's default, --model auto
    if event_model == AUTO and overridden(**dict(overrides, model=None)):
        raise UsageError(
            "--model auto chooses the estimator, priors and transforms itself: give "
            "--model NAME to set them"
        )
    auto = event_model == AUTO or (auto and not overridden(**overrides))
    settings = None if auto else resolve(defaults, **overrides)
    corpus = _labelled_corpus(corpus_dir, lines_path, reading, min_classes=2)
    result = cross_validate(
        corpus,
        tokenizer,
        vocabulary_filter,
        settings,
        folds,
        seed,
        learning_curve,
        jobs or default_jobs(),
        reading[0],
    )
    data = {
        "corpus": source,
        "documents": len(corpus.paths),
        "classes": list(corpus.classes),
        "seed": seed,
        "settings": AUTO if settings is None else settings.to_dict(),
        **result.to_dict(),
    }
    if fmt == "json":
        from ..output.render import json_text

        _echo_lines([json_text(data)])
        return
    from ..output.report import cross_validation_report, show

    title = (
        f"{_shown(source)}: {data['documents']} documents, {len(corpus.classes)} classes, "
        f"{folds} stratified folds (seed {seed})\n"
        + (_AUTO_TEXT if settings is None else _describe_settings(settings))
    )
    show(*cross_validation_report(data, title))


@cli.command(context_settings=CONTEXT)
@_model_option
@click.option(
    "--baseline",
    "baseline_path",
    required=True,
    type=FILE,
    metavar="OLD",
    help="The model in production, that MODEL would replace.",
)
@click.argument("test_dir", type=FOLDER, metavar="[TEST_DIR]", required=False)
@_lines_option("Test on")
@click.option(
    "--max-drop",
    type=float,
    default=0.0,
    show_default=True,
    help="Largest allowed fall of accuracy and of macro-F1 (e.g. 0.01 for one point).",
)
@click.option(
    "--max-ece",
    type=float,
    default=None,
    help="Also fail if the new model's expected calibration error is above this.",
)
@_format_option("text", "json")
@estimator_options("Overrides both models' defaults.")
@reading_options
def check(
    model_path,
    baseline_path,
    test_dir,
    lines_path,
    max_drop,
    max_ece,
    fmt,
    event_model,
    estimator,
    alpha,
    beta,
    text_options,
    reading,
):
    """Gate a new MODEL against the BASELINE on TEST_DIR before it replaces it.

    Evaluates both models on the same labelled documents (TEST_DIR, or the lines of
    --lines FILE) and prints them side by side.
    Exits 0 if the new model's accuracy and macro-F1 are each at most --max-drop below
    the baseline's (and its ECE at most --max-ece, if given), 3 if not; 1 and 2 are
    errors, as for every command.

    \b
    Example (cron: retrain, then replace the model only if it is not worse):
      nbclass fit corpus/ -o new.nbc &&
        nbclass check -m new.nbc --baseline prod.nbc test/ --max-drop 0.01 &&
        mv new.nbc prod.nbc
    """
    from ..errors import EXIT_CHECK_FAILED
    from ..evaluation.judging import check as run
    from ..modelfile.textfile import load

    source = _one_source(test_dir, lines_path, "TEST_DIR")
    new, baseline = load(model_path), load(baseline_path)
    overrides = {"model": event_model, "estimator": estimator, "alpha": alpha, "beta": beta}
    overrides.update(text_options)
    corpus = _labelled_corpus(test_dir, lines_path, reading, min_classes=1)
    result = run(new, baseline, corpus, max_drop, max_ece, overrides, reading[0])
    data = {"model": model_path, "baseline": baseline_path, "test_dir": source}
    data.update(result.to_dict())
    if fmt == "json":
        from ..output.render import json_text

        _echo_lines([json_text(data)])
    else:
        from ..output.report import check_report, show

        title = (
            f"{_shown(model_path)} (new) against {_shown(baseline_path)} (baseline) on "
            f"{_shown(source)}: "
            f"{result.new.n_docs} documents"
        )
        show(*check_report(data, title))
    if not result.passed:
        raise click.exceptions.Exit(EXIT_CHECK_FAILED)


@cli.command(context_settings=CONTEXT)
@click.argument("old_path", type=FILE, metavar="A")
@click.argument("new_path", type=FILE, metavar="B")
@click.option(
    "-k",
    "k",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Words listed per class, and new words listed.",
)
@_format_option("text", "json")
def diff(old_path, new_path, k, fmt):
    """What changed from model A (old) to model B (new).

    Documents per class and classes added or removed; vocabulary growth and the new
    words most frequent in B; per class present in both, the KL divergence
    KL(θ_B ‖ θ_A) between the class's word distributions (multinomial, smoothed with
    β = 1 over both vocabularies) and the K words whose log-odds for the class moved
    most (log θ_jc − log θ_j,rest, multinomial posterior mean with β = 1; words in both
    vocabularies). Computed from the counts, whatever the models' default estimators.

    \b
    Example:
      nbclass diff prod.nbc new.nbc -k 10
    """
    from ..evaluation.judging import diff as compare
    from ..modelfile.textfile import load

    old, new = load(old_path), load(new_path)
    data = {"old": old_path, "new": new_path, "notes": []}
    data.update(compare(old, new, k).to_dict())
    if old.tokenizer.to_dict() != new.tokenizer.to_dict():
        data["notes"].append("the models tokenize differently: words may differ for that reason")
    if old.vocabulary_filter != new.vocabulary_filter or old.selection != new.selection:
        data["notes"].append("the models use different vocabulary filters or selections")
    if fmt == "json":
        from ..output.render import json_text

        _echo_lines([json_text(data)])
        return
    from ..output.report import diff_report, show

    show(*diff_report(data, f"{_shown(old_path)} (old) -> {_shown(new_path)} (new)"))


def _show_warning(message, category, filename, lineno, file=None, line=None):
    from .single import show_warning

    show_warning(message, category, filename, lineno, file, line)


def main(argv=None) -> None:
    """Entry point of the ``nbclass`` console script."""
    warnings.showwarning = _show_warning
    reserve_standard_streams()
    install_sigterm()
    try:
        cli.main(args=argv, prog_name="nbclass")
    except KeyboardInterrupt:  # a signal before or after the command itself ran
        sys.stderr.write("\nInterrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    except Terminated as exc:
        sys.stderr.write(exc.message)
        sys.exit(exc.exit_code)
