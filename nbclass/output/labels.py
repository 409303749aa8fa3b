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


def label_report(data: dict, title: str) -> list[str]:
    """The text report of a multi-label evaluation (``evaluate``'s, ``cv``'s): the
    figures, then precision, recall, F1, support and ECE per label, most frequent first."""
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
    rows = sorted(data["per_label"].items(), key=lambda item: (-item[1]["support"], item[0]))
    width = max([len("label"), *(len(label) for label, _ in rows)])
    lines.append(f"{'label':<{width}}  precision  recall      F1  support  predicted     ECE")
    for label, m in rows:
        lines.append(
            f"{label:<{width}}  {m['precision']:9.4f}  {m['recall']:6.4f}  {m['f1']:6.4f}  "
            f"{m['support']:7d}  {m['predicted']:9d}  {m['ece']:6.4f}"
        )
    return lines
