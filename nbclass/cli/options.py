"""The click options shared by the commands: paths, estimator, text, reading and table options.

Each option is declared once here (the options of ``predict`` that the one-document fast
start also reads are rows of :mod:`nbclass.cli.predict_options`).
"""

from __future__ import annotations

import os
import sys

import click

from ..defaults import DEFAULT_VAR_SMOOTHING, NOTE_NAMES, SHOWN_CLASSES, TABLE_CLASSES
from ..errors import (
    UsageError,
)
from ..models.estimators import (
    AUTO,
    TABLE_DEFAULTS,
    as_options,
)
from ..ranges import MAX_JOBS, RANGES
from ..text.tokenizer import DEFAULT_NGRAM_RANGE, DEFAULT_TOKEN_PATTERN, UNSPACED_MODES
from . import predict_options as spec

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


class Ranged(click.ParamType):
    """A number in the range of its row of :data:`nbclass.ranges.RANGES`: a value of the
    wrong type is click's usage error, one out of range the library's one line."""

    def __init__(self, name: str):
        self.range = RANGES[name]
        self.name = "integer" if self.range.kind == "int" else self.range.kind

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return self.range.check(value)
        kind = int if self.range.kind == "int" else float
        try:
            number = kind(value)
        except ValueError:
            self.fail(f"{value!r} is not {'a whole number' if kind is int else 'a number'}",
                      param, ctx)  # fmt: skip
        return self.range.check(number)  # named as the library names it: 2.0, nan


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


def format_option(*choices: str):
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
    keywords = {"metavar": option.metavar, "help": option.help}
    if not changes.get("required"):  # a default, even None, would satisfy required=True
        keywords["default"] = option.default  # (None for a switch: neither --x nor --no-x)
    if option.show_default:
        keywords["show_default"] = True
    if kind == "path":
        keywords["type"] = FILE
    elif kind in ("int", "float") and option.names[0] in RANGES and option is not spec.ALPHA:
        # (α's range is checked with the estimator's, whose message says more)
        keywords["type"] = Ranged(option.names[0])
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


def model_option(command):
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
        table_format_option,
        click.option(
            "--column-types",
            metavar="NAME=TYPE,...",
            help="With --table: numeric, categorical, text or ignore per column, overriding "
            "the detection.",
        ),
        click.option(
            "--var-smoothing",
            type=Ranged("--var-smoothing"),
            default=None,
            metavar="EPS",
            help="With --table: variance floor of numeric columns, EPS times the largest "
            f"column variance.  [default: {DEFAULT_VAR_SMOOTHING!r}]",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


table_format_option = click.option(
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
        table_format_option,
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
            "--ngram-doc-limit",
            type=int,
            default=None,
            metavar="N",
            help="Form the n-grams of --ngram-range longer than one word only in documents "
            "of at most N tokens (counted after the stop words); a longer document counts "
            "its single words. Needs --ngram-range from 1; the character pairs of "
            "--unspaced are not affected.  [default: no limit]",
        ),
        click.option(
            "--unspaced",
            type=click.Choice(UNSPACED_MODES),
            default=None,
            help="Scripts written without spaces (Chinese, Japanese, Thai...): their runs, "
            "single characters, characters and adjacent pairs, or all three; other "
            "scripts' words stay words.  [default: chosen by --model auto, else the token "
            "pattern's runs]",
        ),
        click.option(
            "--symbols/--no-symbols",
            default=None,
            help="Add single characters (\"i\", \"u\") and runs of punctuation and other "
            "symbols (\"?\", \"!!\", \":)\") to the default pattern's words: the tokens of "
            "(?u)\\w+|[^\\w\\s]+ it lacks. With --model auto the choice keeps them or not.  "
            "[default: symbols with --model auto (but with --token-pattern, --unspaced, "
            "--hash-features, --ngram-range from 2, --multi-label or --table), else "
            "no-symbols]",
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
            type=Ranged("--min-df"),
            default=1,
            show_default=True,
            help="Use only words found in at least this many documents.",
        ),
        click.option(
            "--max-features",
            type=Ranged("--max-features"),
            default=None,
            metavar="K",
            help="Use only the K most frequent words (after --min-df).",
        ),
        estimator_options(
            "Stored as the model's default; --update and sync keep the model's own.  "
            f"[default: --model {AUTO}; with --table: {as_options(TABLE_DEFAULTS)}]"
        ),
        jobs_option("Processes that read and count. The model is the same for any number."),
        click.option("-q", "--quiet", is_flag=True, help="Print no summary and no progress bar."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def jobs_option(what: str):
    """-j/--jobs: how many processes do ``what`` (a sentence of help); unset, the
    environment's NBCLASS_JOBS or every core."""
    return click.option(
        "-j",
        "--jobs",
        type=Ranged("--jobs"),
        default=None,
        help=f"{what}  [default: $NBCLASS_JOBS, else every core; up to {MAX_JOBS}, taken "
        "as the usable cores when above them]",
    )


def all_classes_option(which: str = ""):
    """--all-classes of evaluate and cv: every class's row in the text report; ``which``
    says in the help which reports have the table."""
    return click.option(
        "--all-classes",
        "all_classes",
        is_flag=True,
        help=f"Give every class a row in the text report's per-class table{which}. Past "
        f"{TABLE_CLASSES} classes the table shows the {SHOWN_CLASSES} with the most test "
        f"documents and the {SHOWN_CLASSES} of lowest F1, and a note names {NOTE_NAMES} of "
        "its classes; --format json always has every class.",
    )


def lines_option(what: str):
    """--lines FILE|- of evaluate, cv and check: labelled documents, read as fit --lines."""
    return click.option(
        "--lines",
        "lines_path",
        type=FILE,
        metavar="FILE|-",
        help=f"{what} one document per line of FILE (- for standard input): "
        "LABEL<TAB>TEXT or fastText's __label__LABEL TEXT, as fit --lines reads them.",
    )
