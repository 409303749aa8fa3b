"""The ``nbclass`` command: parse options, call the library, print.

Results go to stdout; summaries, warnings and errors to stderr. A user's mistake is one
``Error: ...`` line and an exit code from :mod:`nbclass.errors`, never a traceback.
"""

from __future__ import annotations

import os
import sys
import time
import warnings

import click

from . import __version__
from .errors import EXIT_INTERRUPTED, NbclassError, NbclassWarning, UsageError

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a filter cut off by `head`
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class NbclassGroup(click.Group):
    """Turns library errors, Ctrl-C and a closed output pipe into the documented exits."""

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


def _beta(ctx, param, value):
    if value is None:
        return None
    from .estimators import parse_beta

    try:
        return parse_beta(value)
    except UsageError as exc:
        raise click.BadParameter(str(exc), param_hint="--beta") from None


def estimator_options(defaults_note: str):
    """--model, --estimator, --alpha, --beta, --tf, --idf, --norm, --prior-fit.

    Each is ``None`` when not given, so the model's stored defaults hold; the command
    receives them in one keyword argument, ``text_options`` (a dict), besides the first four.
    """

    def decorate(command):
        options = [
            click.option(
                "--model",
                "event_model",
                type=click.Choice(["multinomial", "bernoulli", "complement", "dcm"]),
                help="Model: word counts (multinomial), word presence (bernoulli), the "
                "other classes' counts (complement, Rennie et al. 2003) or bursty words "
                f"(dcm, Elkan's EDCM). {defaults_note}",
            ),
            click.option(
                "--estimator",
                type=click.Choice(["posterior-mean", "map", "mle", "predictive"]),
                help="How π and θ are estimated from the counts (see MATH in the README); "
                "predictive: the exact Pólya predictive of the whole document.",
            ),
            click.option(
                "--alpha",
                type=float,
                help="Dirichlet pseudo-count α of every class on the class proportions.",
            ),
            click.option(
                "--beta",
                callback=_beta,
                metavar="B|B1,B0",
                help="Pseudo-counts of θ: Beta(B1,B0) for bernoulli (present, absent), "
                "symmetric Dirichlet(B) for the others.",
            ),
            click.option(
                "--tf",
                type=click.Choice(["raw", "log"]),
                help="Term frequency: the count x, or log(1 + x) (multinomial, complement).",
            ),
            click.option(
                "--idf/--no-idf",
                default=None,
                help="Weight words by log(N / documents containing them).",
            ),
            click.option(
                "--norm",
                type=click.Choice(["none", "length", "weight", "both"]),
                help="Divide a document by its length, each class's weights by their sum, "
                "or both (Rennie et al. 2003).",
            ),
            click.option(
                "--prior-fit/--no-prior-fit",
                default=None,
                help="Choose β by maximising the leave-one-out likelihood of the counts.",
            ),
            click.option(
                "--class-prior/--no-class-prior",
                default=None,
                help="Add log π_c to the scores (off: every class equally likely a priori).",
            ),
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


def _settings(base, event_model, estimator, alpha, beta, text_options=None):
    return base.combined(
        model=event_model, estimator=estimator, alpha=alpha, beta=beta, **(text_options or {})
    )


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


def _model_option(command):
    return click.option(
        "-m",
        "--model-file",
        "model_path",
        required=True,
        metavar="MODEL",
        help="Model file written by 'nbclass fit'.",
    )(command)


class _progress:
    """A progress bar over ``paths`` on a terminal's stderr; called with (start, end)."""

    def __init__(self, verb: str, paths: list[str], quiet: bool):
        from .render import ProgressBar

        enabled = not quiet and sys.stderr.isatty()
        self.sizes = [_size(p) for p in paths] if enabled else []
        self.bar = ProgressBar(verb, len(paths), sum(self.sizes), enabled)

    def __enter__(self):
        self.bar.__enter__()
        return self if self.bar.enabled else None

    def __exit__(self, *exc):
        self.bar.__exit__(*exc)

    def __call__(self, start: int, end: int) -> None:
        self.bar.advance(end - start, sum(self.sizes[start:end]))


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _echo_lines(lines) -> None:
    write = sys.stdout.write
    for line in lines:
        write(line)
        write("\n")
    sys.stdout.flush()


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
    """


@cli.command(context_settings=CONTEXT)
@click.argument("corpus_dir", metavar="CORPUS_DIR")
@click.option("-o", "--output", required=True, metavar="MODEL", help="Model file to write.")
@click.option(
    "--lowercase/--no-lowercase", default=True, show_default=True, help="Lower-case text first."
)
@click.option(
    "--token-pattern",
    default=None,
    metavar="REGEX",
    help=r"Regular expression for one token.  [default: (?u)\b\w\w+\b]",
)
@click.option(
    "--ngram-range",
    callback=_ngram_range,
    metavar="MIN,MAX",
    help="Word n-gram lengths, e.g. 1,2 for words and word pairs.  [default: 1,1]",
)
@click.option(
    "--stop-words",
    default="none",
    show_default=True,
    metavar="english|FILE|none",
    help="Words to drop: the built-in English list, a file with one word per line, or none.",
)
@click.option(
    "--min-df",
    type=int,
    default=1,
    show_default=True,
    help="Use only words found in at least this many documents.",
)
@click.option(
    "--max-features",
    type=int,
    default=None,
    metavar="K",
    help="Use only the K most frequent words (after --min-df).",
)
@estimator_options(
    "Stored as the model's default.  [defaults: complement, posterior-mean, α=1, --tf log, "
    "--prior-fit, --class-prior]"
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Processes that read and count. The model is the same for any number.  "
    "[default: $NBCLASS_JOBS, else every core]",
)
@click.option("-q", "--quiet", is_flag=True, help="Print no summary and no progress bar.")
def fit(
    corpus_dir,
    output,
    lowercase,
    token_pattern,
    ngram_range,
    stop_words,
    min_df,
    max_features,
    event_model,
    estimator,
    alpha,
    beta,
    text_options,
    jobs,
    quiet,
):
    """Learn a model from CORPUS_DIR, a folder with one subfolder per class.

    Every regular file below a class folder, recursively, is one document of that class
    (UTF-8; other bytes are replaced). Hidden files and folders (.*) and editor backups
    (*~) are skipped. The tokenizer settings and the estimator settings are stored in the
    model: predict tokenizes exactly as fit did.

    \b
    Examples:
      nbclass fit corpus/ -o model.nbc
      nbclass fit corpus/ -o model.nbc --model bernoulli --stop-words english
      nbclass fit corpus/ -o model.nbc --ngram-range 1,2 --min-df 2
    """
    from .corpus import list_corpus
    from .counts import default_jobs
    from .estimators import DEFAULTS
    from .model import VocabularyFilter
    from .model import fit as fit_model
    from .modelfile import save
    from .tokenizer import DEFAULT_TOKEN_PATTERN, TokenizerSettings, load_stop_words

    start = time.perf_counter()
    defaults = _settings(DEFAULTS, event_model, estimator, alpha, beta, text_options)
    words, source = load_stop_words(stop_words, lowercase)
    tokenizer = TokenizerSettings(
        lowercase=lowercase,
        token_pattern=DEFAULT_TOKEN_PATTERN if token_pattern is None else token_pattern,
        ngram_range=ngram_range or (1, 1),
        stop_words=words,
        stop_words_source=source,
    )
    vocabulary_filter = VocabularyFilter(min_df=min_df, max_features=max_features)
    corpus = list_corpus(corpus_dir)
    with _progress("fit", corpus.paths, quiet) as bar:
        model = fit_model(
            corpus,
            tokenizer,
            vocabulary_filter,
            defaults,
            jobs=jobs or default_jobs(),
            on_progress=bar,
        )
    save(model, output)
    if not quiet:
        seconds = time.perf_counter() - start
        click.echo(
            f"fit: {model.counts.n_docs} documents, {len(model.counts.classes)} classes, "
            f"{len(model.active_counts.vocabulary)} words, {seconds:.2f} s -> {output}",
            err=True,
        )


@cli.command(context_settings=CONTEXT)
@_model_option
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@click.option("--lines", is_flag=True, help="Every line of the input is one document.")
@_format_option("tsv", "jsonl")
@click.option(
    "--top-k",
    type=click.IntRange(min=1),
    default=None,
    metavar="K",
    help="Classes listed per document, most probable first.  [default: 1 for tsv, all for jsonl]",
)
@estimator_options("Overrides the model's default without refitting.")
def predict(
    model_path, paths, lines, fmt, top_k, event_model, estimator, alpha, beta, text_options
):
    """Classify documents: files, folders (walked recursively) or standard input.

    With no PATH, or with -, standard input is one document (with --lines, one document
    per line). Prints one line per document to stdout.

    \b
    TSV (default):  source<TAB>label<TAB>probability
    JSONL:          {"source", "label", "probability", "probabilities": {class: p}}
    The source is the file path, - for standard input, PATH:LINE with --lines.
    Numbers are printed in full (shortest repr that reads back as the same float).

    \b
    Examples:
      echo "refund my card" | nbclass predict -m model.nbc
      nbclass predict -m model.nbc inbox/ --format jsonl --top-k 3
      tail -n 100 app.log | nbclass predict -m model.nbc --lines
    """
    if not paths and sys.stdin.isatty():
        raise click.UsageError(
            "no input: give files or folders to classify, or pipe a document into "
            "standard input, e.g.  echo 'some text' | nbclass predict -m MODEL"
        )
    from .corpus import iter_documents

    documents = iter_documents(paths or ["-"], lines)
    if not lines and (
        not paths or paths == ("-",) or (len(paths) == 1 and os.path.isfile(paths[0]))
    ):
        # One document: score it without numpy, which would take most of the time to import.
        from .quick import QuickModel, log_posterior

        model = QuickModel(model_path)
        settings = _settings(model.defaults, event_model, estimator, alpha, beta, text_options)
        if model.can_score(settings):
            source, text = next(documents)
            rows = [log_posterior(model.joint_log_likelihood(text, settings))]
            _print_predictions([source], model.classes, rows, fmt, top_k, settings)
            return
        # Settings that need every count (fitted β, idf, normalised weights): batch path.
    from .model import Classifier
    from .modelfile import load

    model = load(model_path)
    settings = _settings(model.defaults, event_model, estimator, alpha, beta, text_options)
    classifier = Classifier(model, settings)
    for predictions in classifier.predict_documents(documents):
        rows = predictions.log_proba.tolist()
        _print_predictions(predictions.sources, predictions.classes, rows, fmt, top_k, settings)


def _print_predictions(sources, classes, rows, fmt, top_k, settings) -> None:
    from .render import prediction_lines

    _echo_lines(prediction_lines(sources, classes, rows, fmt, top_k))
    for source, row in zip(sources, rows):
        if max(row) == float("-inf"):
            warnings.warn(
                f"every class has probability 0 for {source!r} under "
                f"--estimator {settings.estimator}: each class rules it out (it holds a word "
                "the class never saw, or lacks a word every document of the class had); its "
                "label is empty. Use --estimator posterior-mean to smooth.",
                NbclassWarning,
                stacklevel=1,
            )


@cli.command("top-features", context_settings=CONTEXT)
@_model_option
@click.option(
    "-k", "k", type=click.IntRange(min=1), default=20, show_default=True, help="How many words."
)
@_format_option("tsv", "jsonl")
@estimator_options("Only --estimator, --alpha and --beta matter here.")
def top_features(model_path, k, fmt, event_model, estimator, alpha, beta, text_options):
    """Rank words by mutual information with the class.

    Prints word<TAB>mi<TAB>class, best first: the mutual information (in nats) between
    "the word is present in a document" and the document's class, and the class the word
    points to most (the one whose documents contain it most often). θ and π come from the
    model's estimator unless --estimator says otherwise; with --estimator mle this is the
    empirical mutual information.

    \b
    Example:
      nbclass top-features -m model.nbc -k 10
    """
    from .modelfile import load
    from .render import feature_lines
    from .selection import top_features as rank

    model = load(model_path)
    settings = _settings(model.defaults, event_model, estimator, alpha, beta, text_options)
    _echo_lines(feature_lines(rank(model.active_counts, settings, k), fmt))


@cli.command("select-features", context_settings=CONTEXT)
@_model_option
@click.option("-k", "k", type=click.IntRange(min=1), required=True, help="How many words to keep.")
@click.option("-o", "--output", required=True, metavar="PRUNED", help="Model file to write.")
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
    from .model import select_features as select
    from .modelfile import load, save

    model = load(model_path)
    settings = _settings(model.defaults, event_model, estimator, alpha, beta, text_options)
    pruned = select(model, k, settings)
    save(pruned, output)
    if not quiet:
        click.echo(
            f"select-features: kept {len(pruned.counts.vocabulary)} of "
            f"{len(model.active_counts.vocabulary)} words -> {output}",
            err=True,
        )


@cli.command(context_settings=CONTEXT)
@_model_option
@_format_option("text", "json")
def info(model_path, fmt):
    """Describe a model: classes with their document counts, vocabulary, settings."""
    from .modelfile import load_with_header
    from .render import info_lines, model_info

    model, header = load_with_header(model_path)
    fmt_header = {k: header[k] for k in ("format", "version", "nbclass_version")}
    _echo_lines(info_lines(model_info(model, model_path, fmt_header), fmt))


def _show_warning(message, category, filename, lineno, file=None, line=None):
    if issubclass(category, NbclassWarning):
        sys.stderr.write(f"Warning: {message}\n")
    else:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def main(argv=None) -> None:
    """Entry point of the ``nbclass`` console script."""
    warnings.showwarning = _show_warning
    cli.main(args=argv, prog_name="nbclass")
