"""``nbclass info`` and ``nbclass diff``: what a model holds, and how two models differ.
"""

from __future__ import annotations

import click

from ..errors import (
    ModelKindError,
)
from .common import _shown
from .options import CONTEXT, FILE, _format_option, _model_option
from .single import echo_lines as _echo_lines


@click.command(context_settings=CONTEXT)
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


def _table_info(model_path, fmt):
    from ..modelfile.tablefile import load_with_header
    from ..output.render import table_info_lines, table_model_info

    model, header = load_with_header(model_path)
    fmt_header = {k: header[k] for k in ("format", "version", "nbclass_version", "kind")}
    _echo_lines(table_info_lines(table_model_info(model, model_path, fmt_header), fmt))


@click.command(context_settings=CONTEXT)
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
