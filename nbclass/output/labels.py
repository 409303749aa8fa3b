"""The lines of a multi-label model's predictions (``docs/multi-label.md``).

- TSV: ``source<TAB>LABELS<TAB>PROBABILITIES``, the labels a document gets joined by
  ``,`` (most probable first) and their probabilities in the same order, joined by ``,``;
  a document with no label (``--allow-empty``) has two empty fields;
- JSONL: ``{"source", "labels": [...], "probabilities": {label: p}}`` with every label's
  probability, most probable first; with ``--explain N``, ``"explanation": {label:
  [[word, contribution], ...]}`` for each label given.

Numbers are ``repr(float)``, the shortest text that reads back as the same float.
"""

from __future__ import annotations

import json

SEPARATOR = ","  # between labels, and between probabilities, in a TSV line


def shows_explanations(fmt: str) -> bool:
    """Whether label lines in ``fmt`` can hold ``--explain``'s words per label: JSONL
    can; a TSV line has no field for them."""
    return fmt == "jsonl"


def label_lines(predictions, fmt: str) -> list[str]:
    """One line per document of a :class:`nbclass.models.multilabel.LabelPredictions`."""
    labels, lines = predictions.labels, []
    why = predictions.explanations or [None] * len(predictions.sources)
    for source, p, chosen, explanation in zip(
        predictions.sources, predictions.probabilities.tolist(), predictions.chosen.tolist(), why
    ):
        order = sorted(range(len(labels)), key=lambda l: (-p[l], l))
        mine = [l for l in order if chosen[l]]
        if fmt == "jsonl":
            record = {
                "source": source,
                "labels": [labels[l] for l in mine],
                "probabilities": {labels[l]: p[l] for l in order},
            }
            if explanation is not None:
                record["explanation"] = {labels[l]: explanation[labels[l]] for l in mine}
            lines.append(json.dumps(record, ensure_ascii=False))
        else:
            names = SEPARATOR.join(labels[l] for l in mine)
            numbers = SEPARATOR.join(repr(float(p[l])) for l in mine)
            lines.append(f"{source}\t{names}\t{numbers}")
    return lines


def label_report(data: dict, title: str, all_classes: bool = False) -> list[str]:
    """The text report of a multi-label evaluation (``evaluate``'s, ``cv``'s): the
    figures, then precision, recall, F1, support and ECE per label, most frequent first;
    past ``TABLE_CLASSES`` labels the most frequent, then those of lowest F1, unless
    ``all_classes``."""
    from .report import LEFT_OUT, rows_heading, shown_rows

    lines = [
        title,
        "",
        f"micro-F1         {data['micro_f1']:.4f}  (precision {data['micro_precision']:.4f}, "
        f"recall {data['micro_recall']:.4f})",
        f"macro-F1         {data['macro_f1']:.4f}",
        f"Hamming loss     {data['hamming_loss']:.4f}",
        f"subset accuracy  {data['subset_accuracy']:.4f}",
        f"ECE              {data['ece']:.4f}  (every document-label pair, 10 bins)",
        f"labels per doc   {data['labels_per_document']:.2f} true, "
        f"{data['predicted_per_document']:.2f} predicted",
        "",
    ]
    items = list(data["per_label"].items())
    sections = shown_rows(*(
        [m[key] for _, m in items] for key in ("support", "predicted", "f1")
    ), all_classes)  # fmt: skip
    if sections is None:
        order = sorted(range(len(items)), key=lambda l: (-items[l][1]["support"], items[l][0]))
        sections = [order]
    else:
        lines[-1:] = ["", rows_heading("label", sections)]
    rows = [[items[l] for l in section] for section in sections]
    width = max([len("label"), *(len(label) for section in rows for label, _ in section)])
    lines.append(f"{'label':<{width}}  precision  recall      F1  support  predicted     ECE")
    for k, section in enumerate(rows):
        if k:
            lines.append("")
        for label, m in section:
            lines.append(
                f"{label:<{width}}  {m['precision']:9.4f}  {m['recall']:6.4f}  {m['f1']:6.4f}  "
                f"{m['support']:7d}  {m['predicted']:9d}  {m['ece']:6.4f}"
            )
    if len(sections) > 1:
        left = len(items) - sum(map(len, sections))
        lines.append(LEFT_OUT.format(n=left, what="labels"))
    return lines
