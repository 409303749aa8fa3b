"""The lines of a multi-label model's predictions (``docs/multi-label.md``).

- TSV: ``source<TAB>LABELS<TAB>PROBABILITIES``, the labels a document gets joined by
  ``,`` (most probable first) and their probabilities in the same order, joined by ``,``;
  a document with no label (``--allow-empty``) has two empty fields;
- JSONL: ``{"source", "labels": [...], "probabilities": {label: p}}`` with every label's
  probability, most probable first.

Numbers are ``repr(float)``, the shortest text that reads back as the same float.
"""

from __future__ import annotations

import json

SEPARATOR = ","  # between labels, and between probabilities, in a TSV line


def label_lines(predictions, fmt: str) -> list[str]:
    """One line per document of a :class:`nbclass.models.multilabel.LabelPredictions`."""
    labels, lines = predictions.labels, []
    for source, p, chosen in zip(
        predictions.sources, predictions.probabilities.tolist(), predictions.chosen.tolist()
    ):
        order = sorted(range(len(labels)), key=lambda l: (-p[l], l))
        mine = [l for l in order if chosen[l]]
        if fmt == "jsonl":
            record = {
                "source": source,
                "labels": [labels[l] for l in mine],
                "probabilities": {labels[l]: p[l] for l in order},
            }
            lines.append(json.dumps(record, ensure_ascii=False))
        else:
            names = SEPARATOR.join(labels[l] for l in mine)
            numbers = SEPARATOR.join(repr(float(p[l])) for l in mine)
            lines.append(f"{source}\t{names}\t{numbers}")
    return lines
