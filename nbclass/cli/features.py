"""``nbclass top-features`` and ``nbclass select-features``: the words that separate the classes.
"""

from __future__ import annotations

import click

from ..errors import (
    ModelKindError,
    UsageError,
)
from .common import resolve_settings, shown
from .options import CONTEXT, FILE, Ranged, estimator_options, format_option, model_option


@click.command("top-features", context_settings=CONTEXT)
@model_option
@click.option(
    "-k", "k", type=Ranged("-k"), default=20, show_default=True, help="How many words."
)
@click.option(
    "--per-class",
    "per_class",
    type=Ranged("--per-class"),
    metavar="K",
    help="Instead: the K words that most favour each class (prints class<TAB>word<TAB>value).",
)
@click.option(
    "--rank-by",
    "rank_by",
    type=click.Choice(["z", "log-ratio"]),
    default="z",
    show_default=True,
    help="--per-class: z, the z-score of the log-odds of the word's documents in the class "
    "against the rest, shrunk towards the corpus (words in a handful of documents stay low); "
    "log-ratio, log θ_jc − log θ_j,rest under the model's estimator.",
)
@format_option("tsv", "jsonl")
@estimator_options("Only --model, --estimator, --alpha and --beta matter here.")
def top_features(
    model_path, k, per_class, rank_by, fmt, event_model, estimator, alpha, beta, text_options
):
    """Rank words by mutual information with the class.

    Prints word<TAB>mi<TAB>class, best first: the mutual information (in nats) between
    "the word is present in a document" and the document's class, and the class the word
    points to most (the one whose documents contain it most often). θ and π come from the
    model's estimator unless --estimator says otherwise; with --estimator mle this is the
    empirical mutual information.

    With --per-class K: for each class, the K words that most favour it against all the
    others pooled, printed class<TAB>word<TAB>value. By default (--rank-by z) the value is
    z, the log-odds of the word's documents in the class against the rest, shrunk towards
    the whole corpus's counts (an informative Dirichlet prior) and divided by its standard
    error, so that a word in a handful of documents does not lead; it depends on the
    document counts only, not on --model or the estimator. --rank-by log-ratio ranks by
    log θ_jc − log θ_j,rest, the log-odds an occurrence adds to the class (θ: presence
    probability for --model bernoulli, token probability otherwise) under the model's
    estimator and β.

    \b
    Examples:
      nbclass top-features -m model.nbc -k 10
      nbclass top-features -m model.nbc --per-class 5 --format jsonl
      nbclass top-features -m model.nbc --per-class 5 --rank-by log-ratio --beta 1
    """
    from ..modelfile.textfile import load
    from ..models.selection import top_features as rank
    from ..output.formats import Output
    from ..output.render import feature_record, feature_row

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
    settings = resolve_settings(model.defaults, event_model, estimator, alpha, beta, text_options)
    if per_class is not None:
        return _per_class_features(model, settings, per_class, rank_by, fmt)
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
    Output(fmt).records(features, feature_record, feature_row)


def _per_class_features(model, settings, k: int, rank_by: str, fmt: str) -> None:
    from dataclasses import replace

    from ..models.selection import class_top_features
    from ..output.formats import Output
    from ..output.render import class_feature_record, class_feature_row

    criterion = rank_by.replace("-", "_")  # the JSON key: z or log_ratio
    if model.multi_label is not None:  # label by label (multilabel.py)
        from ..models.multilabel import label_top_features, scales_of

        own = scales_of(model.multi_label) if settings == model.defaults else None
        features = label_top_features(model.active_counts, settings, k, criterion, own)
    else:
        features = class_top_features(model.active_counts, settings, k, criterion)
    V = len(model.active_counts.vocabulary)
    if k > V:
        click.echo(
            f"top-features: --per-class {k} is more than the model's {V} words: "
            "listing all of them",
            err=True,
        )
    if model.column_words is not None:
        features = [replace(f, word=model.display(f.word)) for f in features]
    Output(fmt).records(features, class_feature_record, class_feature_row)


@click.command("select-features", context_settings=CONTEXT)
@model_option
@click.option("-k", "k", type=Ranged("-k"), required=True, help="How many words to keep.")
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
    from ..modelfile.textfile import check_destination, load, locked, save
    from ..models.model import select_features as select

    check_destination(output)
    with locked(output):  # the model is read under the lock when it is also the output
        model = load(model_path)
        settings = resolve_settings(
            model.defaults, event_model, estimator, alpha, beta, text_options
        )
        pruned = select(model, k, settings)
        save(pruned, output)
    if not quiet:
        click.echo(
            f"select-features: kept {len(pruned.counts.vocabulary)} of "
            f"{len(model.active_counts.vocabulary)} words -> {shown(output)}",
            err=True,
        )


def _table_top_features(model_path, k, fmt, event_model, estimator, alpha, beta):
    from ..modelfile.tablefile import load
    from ..models.tablemodel import table_top_features
    from ..output.formats import Output
    from ..output.render import table_feature_record, table_feature_row

    model = load(model_path)
    settings = resolve_settings(model.defaults, event_model, estimator, alpha, beta)
    features = table_top_features(model, settings, k)
    Output(fmt).records(features, table_feature_record, table_feature_row)
