"""``nbclass info`` and ``nbclass diff``: what a model holds, and how two models differ.
"""

from __future__ import annotations

import click

from ..errors import (
    ModelKindError,
)
from .common import shown
from .options import CONTEXT, FILE, Ranged, format_option, model_option


@click.command(context_settings=CONTEXT)
@model_option
@format_option("text", "json")
def info(model_path, fmt):
    """Describe a model: classes with their document counts, vocabulary, settings."""
    from ..modelfile.textfile import load_with_header
    from ..output.formats import Output
    from ..output.render import info_json, info_lines, model_info

    try:
        model, header = load_with_header(model_path)
    except ModelKindError as exc:
        if exc.kind != "table":
            raise
        return _table_info(model_path, fmt)
    fmt_header = {k: header[k] for k in ("format", "version", "nbclass_version")}
    info = model_info(model, model_path, fmt_header)
    Output(fmt).document(info, text=info_lines, as_json=info_json)


def _table_info(model_path, fmt):
    from ..modelfile.tablefile import load_with_header
    from ..output.formats import Output
    from ..output.render import info_json, table_info_lines, table_model_info

    model, header = load_with_header(model_path)
    fmt_header = {k: header[k] for k in ("format", "version", "nbclass_version", "kind")}
    info = table_model_info(model, model_path, fmt_header)
    Output(fmt).document(info, text=table_info_lines, as_json=info_json)


@click.command(context_settings=CONTEXT)
@click.argument("old_path", type=FILE, metavar="A")
@click.argument("new_path", type=FILE, metavar="B")
@click.option(
    "-k",
    "k",
    type=Ranged("-k"),
    default=5,
    show_default=True,
    help="Words listed per class, and new words listed.",
)
@format_option("text", "json")
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
    from ..evaluation.judging import diff_notes, scoring_diff
    from ..modelfile.textfile import load
    from ..output.formats import Output

    old, new = load(old_path), load(new_path)
    data = {"old": old_path, "new": new_path, "notes": diff_notes(old, new)}
    data.update(compare(old, new, k).to_dict())
    data["scoring"] = scoring_diff(old, new)

    def report(data):  # rich is imported only when the report is drawn
        from ..output.report import diff_report

        return diff_report(data, f"{shown(old_path)} (old) -> {shown(new_path)} (new)")

    Output(fmt).document(data, report=report)
