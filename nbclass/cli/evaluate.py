"""``nbclass evaluate``, ``nbclass cv`` and ``nbclass check``: a model judged on labelled
documents.
"""

from __future__ import annotations

import click

from ..defaults import DEFAULT_FOLDS, DEFAULT_SEED
from ..errors import (
    ModelKindError,
    NbclassError,
    UsageError,
)
from ..models.estimators import (
    AUTO,
)
from . import predict_options as spec
from .common import estimator_overrides, refuse_reading_options, resolve_settings, shown
from .options import (
    CONTEXT,
    FILE,
    FOLDER,
    Ranged,
    all_classes_option,
    click_option,
    estimator_options,
    format_option,
    jobs_option,
    lines_option,
    model_option,
    reading_options,
    table_format_option,
)


def _one_source(folder: str | None, lines_path: str | None, name: str) -> str:
    """The folder or the --lines file, whichever was given (a usage error unless one)."""
    if (folder is None) == (lines_path is None):
        raise UsageError(f"give a {name} or --lines FILE (one of them)")
    return folder if folder is not None else lines_path


@click.command(context_settings=CONTEXT)
@model_option
@click.argument("test_dir", type=FOLDER, metavar="[TEST_DIR]", required=False)
@click.option(
    "--table",
    type=FILE,
    metavar="FILE",
    help="With a table model: evaluate on the labelled rows of FILE (CSV, TSV or JSON lines).",
)
@table_format_option
@lines_option("Evaluate on")
@format_option("text", "json")
@click.option(
    "--errors",
    "list_errors",
    is_flag=True,
    help="Also list the misclassified documents: source, true and predicted class, and the "
    "probability of each (JSON: errors).",
)
@all_classes_option()
@estimator_options("Overrides the model's default without refitting.")
@click_option(spec.NO_CALIBRATION)
@reading_options
def evaluate(
    model_path, test_dir, table, table_format, lines_path, fmt, list_errors, all_classes,
    event_model, estimator, alpha, beta, text_options, no_calibration, reading,
):  # fmt: skip
    """Measure a model on TEST_DIR, labelled documents laid out like a training corpus.

    With --lines FILE, the test documents are the lines of FILE instead, each with its
    label (as for fit --lines). A table model (fit --table) is measured on --table FILE,
    whose label column holds each row's true class.

    Every document is scored as predict scores it (the model's settings and calibration;
    a document with no known word gets the class prior), and labelled with its most
    probable class, as predict --min-known 0 labels it. Prints accuracy, macro- and
    micro-F1, log loss, Brier score (multiclass sum form, 0 to 2), expected calibration
    error (10 equal-width confidence bins), precision, recall and F1 per class, the
    confusion matrix and a reliability diagram. On a terminal the matrix is a coloured
    heat map; --format json prints one object.

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
        refuse_reading_options(reading)
    try:
        return _evaluate(
            model_path, test_dir, table, table_format, lines_path, fmt, event_model, estimator,
            alpha, beta, text_options, no_calibration, reading, list_errors, all_classes,
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
    beta, text_options, no_calibration, reading, list_errors=False, all_classes=False,
):  # fmt: skip
    from ..evaluation.judging import evaluate as run
    from ..modelfile.textfile import load

    if table is not None:
        from ..evaluation.judging import evaluate_table
        from ..modelfile.tablefile import load as load_table
        from ..reading.table import read_table

        model = load_table(model_path)
        settings = resolve_settings(model.defaults, event_model, estimator, alpha, beta)
        evaluation = evaluate_table(model, settings, read_table(table, table_format))
        test_dir, n_classes = table, len(model.classes)
        sources = [f"{table}:{row}" for row in range(1, evaluation.n_docs + 1)]
    else:
        from ..models.model import scoring_settings

        model = load(model_path)
        overrides = estimator_overrides(event_model, estimator, alpha, beta, text_options)
        if model.multi_label is not None:
            return _evaluate_labels(
                model, model_path, test_dir, lines_path, fmt, overrides, not no_calibration,
                reading, list_errors, all_classes,
            )  # fmt: skip
        settings, calibrate = scoring_settings(model, overrides, not no_calibration)
        from ..models.learning import labelled_documents

        corpus = labelled_documents(test_dir, lines_path, *reading, min_classes=1)
        evaluation = run(model, settings, corpus, reading[0], calibrate)
        n_classes = len(corpus.classes)
        sources = list(corpus.paths)
        test_dir = _one_source(test_dir, lines_path, "TEST_DIR")
    from ..output.formats import Output

    # Whether the stored calibration scored the documents (table models have none).
    calibrated = table is None and calibrate and model.calibration is not None

    def report(data):  # rich is imported only when the report is drawn
        from ..output.report import errors_report, evaluation_report

        title = (
            f"{shown(model_path)} on {shown(test_dir)}: {evaluation.n_docs} "
            f"{'rows' if table else 'documents'}, "
            f"{n_classes} classes\n{_describe_settings(settings, model, calibrated)}"
        )
        out = evaluation_report(evaluation, title, all_classes)
        if list_errors:
            out += errors_report(data["errors"], evaluation.n_docs)
        return out

    data = {"model": model_path, "test_dir": test_dir, "calibrated": calibrated}
    data.update(evaluation.to_dict())
    if list_errors:
        from ..evaluation.judging import misclassified

        data["errors"] = misclassified(evaluation, sources)
    Output(fmt).document(data, report=report)


def _evaluate_labels(
    model, model_path, test_dir, lines_path, fmt, overrides, calibrate, reading, list_errors,
    all_classes,
):  # fmt: skip
    """evaluate with a multi-label model, on --lines FILE."""
    from ..evaluation.labels import evaluate_labels
    from ..models.learning import multi_label_documents
    from ..output.formats import Output
    from ..output.labels import label_report
    from .common import line_documents

    if lines_path is None or list_errors:
        raise UsageError(
            f"{model_path!r} is a multi-label model: evaluate it on --lines FILE of labelled "
            "lines (A,B<TAB>TEXT, __label__A __label__B TEXT or JSON), without --errors"
        )
    documents = multi_label_documents(line_documents(lines_path, reading))
    evaluation = evaluate_labels(model, documents, overrides, calibrate)
    data = {"model": model_path, "test_dir": lines_path, "multi_label": True}
    data.update(evaluation.metrics())
    title = (
        f"{shown(model_path)} on {shown(lines_path)}: {data['documents']} documents, "
        f"{data['labels']} labels"
    )
    Output(fmt).document(data, text=lambda d: label_report(d, title, all_classes))


def _check_labels(new, baseline, model_path, baseline_path, lines_path, max_drop, max_ece,
                  overrides, calibrate, reading):  # fmt: skip
    """check of two multi-label models, on --lines FILE of labelled lines."""
    from ..evaluation.labels import check_labels
    from ..models.learning import multi_label_documents
    from .common import line_documents

    if new.multi_label is None or baseline.multi_label is None:
        single = model_path if new.multi_label is None else baseline_path
        raise UsageError(
            f"{single!r} is a single-label model and the other a multi-label one: check "
            "compares two models of the same kind"
        )
    if lines_path is None:
        raise UsageError(
            "check of multi-label models reads --lines FILE of labelled lines (A,B<TAB>TEXT, "
            "__label__A __label__B TEXT or JSON), not a TEST_DIR"
        )
    documents = multi_label_documents(line_documents(lines_path, reading))
    return check_labels(new, baseline, documents, max_drop, max_ece, overrides, calibrate)


def _cv_labels(
    corpus_dir, lines_path, like, tokenizer, vocabulary_filter, settings, folds, seed,
    learning_curve, fmt, reading, all_classes,
):  # fmt: skip
    """cv --multi-label --lines FILE (or --like a multi-label model)."""
    from ..evaluation.labels import cross_validate_labels
    from ..models.learning import multi_label_documents
    from ..models.multilabel import BETA_SCALES, CANDIDATES, candidates_of
    from ..output.formats import Output
    from ..output.labels import label_report
    from .common import line_documents

    if lines_path is None or learning_curve:
        raise UsageError(
            "cv of multi-label documents reads --lines FILE (not a CORPUS_DIR), without "
            "--learning-curve"
        )
    scales = (1.0,)
    if settings is not None:
        candidates = (settings,)
    elif like is not None and like.multi_label is not None:
        candidates = candidates_of(like.multi_label)
        scales = tuple(like.multi_label.get("beta_scales", scales))
    else:
        candidates, scales = CANDIDATES, BETA_SCALES
    documents = multi_label_documents(line_documents(lines_path, reading))
    evaluation, per_fold = cross_validate_labels(
        documents, tokenizer, vocabulary_filter, candidates, folds, seed, scales
    )
    data = {"corpus": lines_path, "folds": folds, "seed": seed, "multi_label": True}
    data.update(evaluation.metrics())
    data["per_fold"] = per_fold
    title = (
        f"{folds}-fold cross-validation of {shown(lines_path)} (seed {seed}): "
        f"{data['documents']} documents, {data['labels']} labels; every held-out document "
        "together"
    )
    Output(fmt).document(data, text=lambda d: label_report(d, title, all_classes))


_AUTO_TEXT = "model auto: each fold's training documents choose and calibrate, as fit does"


def _describe_settings(settings, model=None, calibrated: bool = False) -> str:
    """The settings line of a report; with ``model``, its fitted β when they are its
    defaults; a second line when its calibration scored the documents."""
    from ..output.render import settings_text

    fitted = None
    prepared = getattr(model, "prepared", None)  # table models keep none
    if prepared is not None and settings == model.defaults:
        fitted = prepared.beta
    text = settings_text(settings.to_dict(), fitted)
    if calibrated:
        text += "\ncalibrated as fit chose (--no-calibration: the formula's own)"
    return text


@click.command(context_settings=CONTEXT)
@click.argument("corpus_dir", type=FOLDER, metavar="[CORPUS_DIR]", required=False)
@lines_option("Cross-validate")
@click.option(
    "-k",
    "--folds",
    type=Ranged("--folds"),
    default=DEFAULT_FOLDS,
    show_default=True,
    help="Number of folds; every class needs at least this many documents.",
)
@click.option(
    "--seed",
    type=Ranged("--seed"),
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
@click_option(spec.NO_CALIBRATION)
@format_option("text", "json")
@jobs_option("Processes that read and count.")
@click.option(
    "--multi-label",
    "multi_label",
    is_flag=True,
    help="The lines have any number of labels (as fit --multi-label reads them): each "
    "fold is fitted as fit --multi-label fits; micro-/macro-F1, Hamming loss, subset "
    "accuracy over every held-out document.",
)
@all_classes_option(" (with --multi-label)")
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
    no_calibration,
    fmt,
    jobs,
    multi_label,
    all_classes,
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
    from ..evaluation.judging import cross_validate, cv_settings

    overrides = estimator_overrides(event_model, estimator, alpha, beta, text_options)
    like = None
    if like_path:
        from ..modelfile.textfile import load

        like = load(like_path)
    tokenizer, vocabulary_filter, settings = cv_settings(like, overrides, multi_label)
    if multi_label or (like is not None and like.multi_label is not None):
        return _cv_labels(
            corpus_dir, lines_path, like, tokenizer, vocabulary_filter, settings, folds, seed,
            learning_curve, fmt, reading, all_classes,
        )  # fmt: skip
    if all_classes:
        raise UsageError(
            "--all-classes is for cv --multi-label (every label a row in its per-label table): "
            "cv of single-label documents has no per-class table, leave the option out"
        )
    from ..models.learning import labelled_documents

    corpus = labelled_documents(corpus_dir, lines_path, *reading, min_classes=2)
    result = cross_validate(
        corpus,
        tokenizer,
        vocabulary_filter,
        settings,
        folds,
        seed,
        learning_curve,
        default_jobs(jobs),
        reading[0],
        calibrate=not no_calibration,
    )
    data = {
        "corpus": source,
        "documents": len(corpus.paths),
        "classes": list(corpus.classes),
        "seed": seed,
        "settings": AUTO if settings is None else settings.to_dict(),
        "calibrated": settings is None and not no_calibration,
        **result.to_dict(),
    }
    from ..output.formats import Output

    def report(data):  # rich is imported only when the report is drawn
        from ..output.report import cross_validation_report

        title = (
            f"{shown(source)}: {data['documents']} documents, {len(corpus.classes)} classes, "
            f"{folds} stratified folds (seed {seed})\n"
            + (_AUTO_TEXT if settings is None else _describe_settings(settings))
            + (", scored without the calibration" if settings is None and no_calibration else "")
        )
        return cross_validation_report(data, title)

    Output(fmt).document(data, report=report)


@click.command(context_settings=CONTEXT)
@model_option
@click.option(
    "--baseline",
    "baseline_path",
    required=True,
    type=FILE,
    metavar="OLD",
    help="The model in production, that MODEL would replace.",
)
@click.argument("test_dir", type=FOLDER, metavar="[TEST_DIR]", required=False)
@lines_option("Test on")
@click.option(
    "--max-drop",
    type=Ranged("--max-drop"),
    default=0.0,
    show_default=True,
    help="Largest allowed fall of accuracy and of macro-F1 (e.g. 0.01 for one point).",
)
@click.option(
    "--max-ece",
    type=Ranged("--max-ece"),
    default=None,
    help="Also fail if the new model's expected calibration error is above this.",
)
@format_option("text", "json")
@estimator_options("Overrides both models' defaults.")
@click_option(spec.NO_CALIBRATION)
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
    no_calibration,
    reading,
):
    """Gate a new MODEL against the BASELINE on TEST_DIR before it replaces it.

    Evaluates both models on the same labelled documents (TEST_DIR, or the lines of
    --lines FILE), each scored as predict and evaluate score it (its own settings and
    calibration), and prints them side by side.
    Exits 0 if the new model's accuracy and macro-F1 are each at most --max-drop below
    the baseline's (and its ECE at most --max-ece, if given), 3 if not; 1 and 2 are
    errors, as for every command. Two multi-label models are compared on --lines FILE
    by micro- and macro-F1 instead.

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
    overrides = estimator_overrides(event_model, estimator, alpha, beta, text_options)
    if new.multi_label is not None or baseline.multi_label is not None:
        result = _check_labels(new, baseline, model_path, baseline_path, lines_path, max_drop,
                               max_ece, overrides, not no_calibration, reading)  # fmt: skip
    else:
        from ..models.learning import labelled_documents

        corpus = labelled_documents(test_dir, lines_path, *reading, min_classes=1)
        result = run(
            new, baseline, corpus, max_drop, max_ece, overrides, reading[0], not no_calibration
        )
    data = {"model": model_path, "baseline": baseline_path, "test_dir": source}
    data.update(result.to_dict())
    from ..output.formats import Output

    def report(data):  # rich is imported only when the report is drawn
        from ..output.report import check_report

        title = (
            f"{shown(model_path)} (new) against {shown(baseline_path)} (baseline) on "
            f"{shown(source)}: "
            f"{result.new.n_docs} documents"
        )
        return check_report(data, title)

    Output(fmt).document(data, report=report)
    if not result.passed:
        raise click.exceptions.Exit(EXIT_CHECK_FAILED)
