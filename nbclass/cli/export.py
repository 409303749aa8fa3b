"""``nbclass export``: a model as a linear function, readable without nbclass.
"""

from __future__ import annotations

import time

import click

from . import predict_options as spec
from .common import estimator_overrides
from .options import (
    CONTEXT,
    FILE,
    click_option,
    estimator_options,
    format_option,
    model_option,
)


@click.command(context_settings=CONTEXT)
@model_option
@click.option(
    "-o", "--output", required=True, type=FILE, metavar="FILE", help="Export file to write."
)
@format_option("json", "npz")
@estimator_options("Default: the model's own, as predict uses them.")
@click_option(spec.NO_CALIBRATION)
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
    overrides = estimator_overrides(event_model, estimator, alpha, beta, text_options)
    settings, calibrate = scoring_settings(model, overrides, not no_calibration)
    write_export(model, settings, output, fmt, calibrate)
    if not quiet:
        classes = f"{len(model.active_counts.classes)} classes"
        if model.multi_label is not None:
            classes = f"{len(model.multi_label['labels'])} labels"
        click.echo(
            f"export: {len(model.active_counts.vocabulary)} words, "
            f"{classes}, {settings.model} model, "
            f"{time.perf_counter() - start:.2f} s -> {output}",
            err=True,
        )
