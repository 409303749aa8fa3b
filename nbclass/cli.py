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
    """--model, --estimator, --alpha, --beta; ``None`` when not given."""

    def decorate(command):
        options = [
            click.option(
                "--model",
                "event_model",
                type=click.Choice(["multinomial", "bernoulli"]),
                help=f"Event model: word counts or word presence. {defaults_note}",
            ),
            click.option(
                "--estimator",
                type=click.Choice(["posterior-mean", "map", "mle"]),
                help="How π and θ are estimated from the counts (see MATH in the README).",
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
                "symmetric Dirichlet(B) for multinomial.",
            ),
        ]
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def _settings(base, event_model, estimator, alpha, beta):
    return base.with_overrides(
        model=event_model, estimator=estimator, alpha=alpha, beta=beta
    ).validate()


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

    \b
    Trust a model before cron does:
      nbclass evaluate -m model.nbc test/        # accuracy, F1, calibration
      nbclass cv corpus/ --folds 10              # cross-validation
      nbclass check -m new.nbc --baseline prod.nbc test/ --max-drop 0.01   # exit 0 or 3
      nbclass predict -m model.nbc --min-probability 0.9 --exit-code ticket.txt  # 10+k, 9
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
    "Stored as the model's default.  [defaults: multinomial, posterior-mean, α=1, β=1]"
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
    from .estimators import EstimatorSettings
    from .model import VocabularyFilter
    from .model import fit as fit_model
    from .modelfile import save
    from .tokenizer import DEFAULT_TOKEN_PATTERN, TokenizerSettings, load_stop_words

    start = time.perf_counter()
    defaults = _settings(EstimatorSettings(), event_model, estimator, alpha, beta)
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
@click.option(
    "--explain",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Add the N words that pushed each document most towards its class (their "
    "contribution to the log-odds against the runner-up).",
)
@click.option(
    "--min-probability",
    type=float,
    default=None,
    metavar="P",
    help="Label a document unsure when its top probability is below P.",
)
@click.option(
    "--min-margin",
    type=float,
    default=None,
    metavar="M",
    help="Label a document unsure when its top two probabilities differ by less than M.",
)
@click.option(
    "--min-known",
    multiple=True,
    metavar="N|P%",
    help="Label a document unsure when fewer than N of its tokens, or less than P% of "
    "them, are words the model knows. May be given twice (N and P%).",
)
@click.option(
    "--unsure-label",
    default="unsure",
    show_default=True,
    help="The label of a document the thresholds reject.",
)
@click.option(
    "--exit-code",
    "use_exit_code",
    is_flag=True,
    help="One document only: exit 10+k for the k-th class (as 'nbclass info' lists "
    "them), 9 for unsure or no label; 1 and 2 stay errors.",
)
def predict(
    model_path,
    paths,
    lines,
    fmt,
    top_k,
    event_model,
    estimator,
    alpha,
    beta,
    explain,
    min_probability,
    min_margin,
    min_known,
    unsure_label,
    use_exit_code,
):
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
      nbclass predict -m model.nbc ticket.txt --min-probability 0.9 --exit-code
    """
    if not paths and sys.stdin.isatty():
        raise click.UsageError(
            "no input: give files or folders to classify, or pipe a document into "
            "standard input, e.g.  echo 'some text' | nbclass predict -m MODEL"
        )
    from .abstain import Abstention, check_exit_classes, exit_code
    from .corpus import iter_documents

    abstention = Abstention.from_options(min_probability, min_margin, min_known, unsure_label)
    single = not lines and (
        not paths or paths == ("-",) or (len(paths) == 1 and os.path.isfile(paths[0]))
    )
    if use_exit_code and not single:
        raise UsageError(
            "--exit-code needs exactly one document (standard input or one file, without "
            "--lines): an exit code can only name one label"
        )
    documents = iter_documents(paths or ["-"], lines)
    if single and not explain:
        # One document: score it without numpy, which would take most of the time to import.
        from .abstain import log_sum_exp
        from .quick import QuickModel, log_posterior

        model = QuickModel(model_path)
        settings = _settings(model.defaults, event_model, estimator, alpha, beta)
        abstention.check_classes(model.classes)
        if use_exit_code:
            check_exit_classes(model.classes)
        source, text = next(documents)
        jll = model.joint_log_likelihood(text, settings)
        row = log_posterior(jll)
        # Counting known tokens tokenizes again: only when a threshold needs them.
        known, tokens = model.known_tokens(text) if abstention.needs_known else (0, 0)
        extra = {"log_evidence": log_sum_exp(jll), "reason": abstention.reason(row, known, tokens)}
        labels = _print_predictions(
            [source], model.classes, [row], fmt, top_k, settings, [extra], unsure_label
        )
        if use_exit_code:
            raise click.exceptions.Exit(exit_code(model.classes, labels[0]))
        return
    from .explain import extras, score_batch
    from .model import BATCH_SIZE, Classifier
    from .modelfile import load

    model = load(model_path)
    settings = _settings(model.defaults, event_model, estimator, alpha, beta)
    classifier = Classifier(model, settings)
    abstention.check_classes(classifier.classes)
    if use_exit_code:
        check_exit_classes(classifier.classes)
    labels = []
    for batch in _batches(documents, BATCH_SIZE):
        scored = score_batch(classifier, batch)
        labels = _print_predictions(
            scored.sources,
            classifier.classes,
            scored.log_proba.tolist(),
            fmt,
            top_k,
            settings,
            extras(classifier, scored, abstention, explain),
            unsure_label,
        )
    if use_exit_code:
        raise click.exceptions.Exit(exit_code(classifier.classes, labels[0]))


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
    from .render import prediction_lines

    _echo_lines(prediction_lines(sources, classes, rows, fmt, top_k, extras, unsure_label))
    labels = []
    for i, (source, row) in enumerate(zip(sources, rows)):
        if max(row) == float("-inf"):
            labels.append("")
            warnings.warn(
                f"every class has probability 0 for {source!r} under "
                f"--estimator {settings.estimator}: each class rules it out (it holds a word "
                "the class never saw, or lacks a word every document of the class had); its "
                "label is empty. Use --estimator posterior-mean to smooth.",
                NbclassWarning,
                stacklevel=1,
            )
        elif extras is not None and extras[i]["reason"]:
            labels.append(unsure_label)
        else:
            labels.append(classes[max(range(len(row)), key=row.__getitem__)])
    return labels


@cli.command("top-features", context_settings=CONTEXT)
@_model_option
@click.option(
    "-k", "k", type=click.IntRange(min=1), default=20, show_default=True, help="How many words."
)
@_format_option("tsv", "jsonl")
@estimator_options("Only --estimator, --alpha and --beta matter here.")
def top_features(model_path, k, fmt, event_model, estimator, alpha, beta):
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
    settings = _settings(model.defaults, event_model, estimator, alpha, beta)
    _echo_lines(feature_lines(rank(model.active_counts, settings, k), fmt))


@cli.command("select-features", context_settings=CONTEXT)
@_model_option
@click.option("-k", "k", type=click.IntRange(min=1), required=True, help="How many words to keep.")
@click.option("-o", "--output", required=True, metavar="PRUNED", help="Model file to write.")
@estimator_options("Only --estimator, --alpha and --beta matter here.")
@click.option("-q", "--quiet", is_flag=True, help="Print no summary.")
def select_features(model_path, k, output, event_model, estimator, alpha, beta, quiet):
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
    settings = _settings(model.defaults, event_model, estimator, alpha, beta)
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


def _test_corpus(test_dir: str):
    from .corpus import list_corpus

    return list_corpus(test_dir, min_classes=1)


@cli.command(context_settings=CONTEXT)
@_model_option
@click.argument("test_dir", metavar="TEST_DIR")
@_format_option("text", "json")
@estimator_options("Overrides the model's default without refitting.")
def evaluate(model_path, test_dir, fmt, event_model, estimator, alpha, beta):
    """Measure a model on TEST_DIR, labelled documents laid out like a training corpus.

    Prints accuracy, macro- and micro-F1, log loss, Brier score (multiclass sum form,
    0 to 2), expected calibration error (10 equal-width confidence bins), precision,
    recall and F1 per class, the confusion matrix and a reliability diagram. On a
    terminal the matrix is a coloured heat map; --format json prints one object.

    \b
    Examples:
      nbclass evaluate -m model.nbc test/
      nbclass evaluate -m model.nbc test/ --format json | jq .accuracy
    """
    from .evaluation import evaluate as run
    from .modelfile import load

    model = load(model_path)
    settings = _settings(model.defaults, event_model, estimator, alpha, beta)
    corpus = _test_corpus(test_dir)
    evaluation = run(model, settings, corpus)
    if fmt == "json":
        from .render import json_text

        _echo_lines(
            [json_text({"model": model_path, "test_dir": test_dir, **evaluation.to_dict()})]
        )
        return
    from .report import evaluation_report, show

    title = (
        f"{model_path} on {test_dir}: {evaluation.n_docs} documents, "
        f"{len(corpus.classes)} classes\n{_describe_settings(settings)}"
    )
    show(*evaluation_report(evaluation, title))


def _describe_settings(settings) -> str:
    beta = settings.beta[0] if settings.beta[0] == settings.beta[1] else settings.beta
    return (
        f"model {settings.model}, estimator {settings.estimator}, alpha {settings.alpha}, "
        f"beta {beta}"
    )


@cli.command(context_settings=CONTEXT)
@click.argument("corpus_dir", metavar="CORPUS_DIR")
@click.option(
    "-k",
    "--folds",
    type=int,
    default=5,
    show_default=True,
    help="Number of folds; every class needs at least this many documents.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
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
    metavar="MODEL",
    help="Tokenize, filter the vocabulary and estimate as this model file does.  "
    "[default: fit's defaults]",
)
@estimator_options("Overrides the defaults (of --like's model, if given).")
@_format_option("text", "json")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Processes that read and count.  [default: $NBCLASS_JOBS, else every core]",
)
def cv(
    corpus_dir,
    folds,
    seed,
    learning_curve,
    like_path,
    event_model,
    estimator,
    alpha,
    beta,
    fmt,
    jobs,
):
    """Stratified K-fold cross-validation of CORPUS_DIR (laid out as for fit).

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
    """
    from .corpus import list_corpus
    from .counts import default_jobs
    from .estimators import EstimatorSettings
    from .evaluation import cross_validate
    from .model import VocabularyFilter
    from .tokenizer import TokenizerSettings

    if like_path:
        from .modelfile import load

        like = load(like_path)
        tokenizer, vocabulary_filter, defaults = (
            like.tokenizer,
            like.vocabulary_filter,
            like.defaults,
        )
    else:
        tokenizer, vocabulary_filter, defaults = (
            TokenizerSettings(),
            VocabularyFilter(),
            EstimatorSettings(),
        )
    settings = _settings(defaults, event_model, estimator, alpha, beta)
    corpus = list_corpus(corpus_dir)
    result = cross_validate(
        corpus,
        tokenizer,
        vocabulary_filter,
        settings,
        folds,
        seed,
        learning_curve,
        jobs or default_jobs(),
    )
    data = {
        "corpus": corpus_dir,
        "documents": len(corpus.paths),
        "classes": list(corpus.classes),
        "seed": seed,
        "settings": settings.to_dict(),
        **result.to_dict(),
    }
    if fmt == "json":
        from .render import json_text

        _echo_lines([json_text(data)])
        return
    from .report import cross_validation_report, show

    title = (
        f"{corpus_dir}: {data['documents']} documents, {len(corpus.classes)} classes, "
        f"{folds} stratified folds (seed {seed})\n{_describe_settings(settings)}"
    )
    show(*cross_validation_report(data, title))


@cli.command(context_settings=CONTEXT)
@_model_option
@click.option(
    "--baseline",
    "baseline_path",
    required=True,
    metavar="OLD",
    help="The model in production, that MODEL would replace.",
)
@click.argument("test_dir", metavar="TEST_DIR")
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
def check(
    model_path,
    baseline_path,
    test_dir,
    max_drop,
    max_ece,
    fmt,
    event_model,
    estimator,
    alpha,
    beta,
):
    """Gate a new MODEL against the BASELINE on TEST_DIR before it replaces it.

    Evaluates both models on the same labelled documents and prints them side by side.
    Exits 0 if the new model's accuracy and macro-F1 are each at most --max-drop below
    the baseline's (and its ECE at most --max-ece, if given), 3 if not; 1 and 2 are
    errors, as for every command.

    \b
    Example (cron: retrain, then replace the model only if it is not worse):
      nbclass fit corpus/ -o new.nbc &&
        nbclass check -m new.nbc --baseline prod.nbc test/ --max-drop 0.01 &&
        mv new.nbc prod.nbc
    """
    from .errors import EXIT_CHECK_FAILED
    from .evaluation import check as run
    from .modelfile import load

    new, baseline = load(model_path), load(baseline_path)
    overrides = {"model": event_model, "estimator": estimator, "alpha": alpha, "beta": beta}
    result = run(new, baseline, _test_corpus(test_dir), max_drop, max_ece, overrides)
    data = {"model": model_path, "baseline": baseline_path, "test_dir": test_dir}
    data.update(result.to_dict())
    if fmt == "json":
        from .render import json_text

        _echo_lines([json_text(data)])
    else:
        from .report import check_report, show

        title = (
            f"{model_path} (new) against {baseline_path} (baseline) on {test_dir}: "
            f"{result.new.n_docs} documents"
        )
        show(*check_report(data, title))
    if not result.passed:
        raise click.exceptions.Exit(EXIT_CHECK_FAILED)


@cli.command(context_settings=CONTEXT)
@click.argument("old_path", metavar="A")
@click.argument("new_path", metavar="B")
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
    from .evaluation import diff as compare
    from .modelfile import load

    old, new = load(old_path), load(new_path)
    data = {"old": old_path, "new": new_path, "notes": []}
    data.update(compare(old, new, k).to_dict())
    if old.tokenizer.to_dict() != new.tokenizer.to_dict():
        data["notes"].append("the models tokenize differently: words may differ for that reason")
    if old.vocabulary_filter != new.vocabulary_filter or old.selection != new.selection:
        data["notes"].append("the models use different vocabulary filters or selections")
    if fmt == "json":
        from .render import json_text

        _echo_lines([json_text(data)])
        return
    from .report import diff_report, show

    show(*diff_report(data, f"{old_path} (old) -> {new_path} (new)"))


def _show_warning(message, category, filename, lineno, file=None, line=None):
    if issubclass(category, NbclassWarning):
        sys.stderr.write(f"Warning: {message}\n")
    else:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def main(argv=None) -> None:
    """Entry point of the ``nbclass`` console script."""
    warnings.showwarning = _show_warning
    cli.main(args=argv, prog_name="nbclass")
