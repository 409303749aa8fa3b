"""Reports for people: tables, a confusion heat map, a reliability diagram, a learning curve.

Drawn with rich, at most 80 columns wide. On a terminal they are coloured (unless
``NO_COLOR`` is set); when standard output is not a terminal the same layout is written
as plain text, without colour codes and without trailing spaces, so it can be read in a
file or a mail from cron. Scripts should use ``--format json`` instead.

Bars are made of eighth blocks (``█▉▊▋▌▍▎▏``), so a bar of 30 cells resolves 1/240.
"""

from __future__ import annotations

import io
import math
import sys
from collections.abc import Sequence

from rich import box
from rich.console import Console, Group
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

from ..defaults import NOTE_NAMES, SHOWN_CLASSES, TABLE_CLASSES
from ..names import escape

WIDTH = 80
BAR = 30
_EIGHTHS = " ▏▎▍▌▋▊▉"


def show(*renderables, file=None) -> None:
    """Print renderables: coloured on a terminal, plain text (no trailing spaces) otherwise.
    Strings are printed as they are: class names and paths are the user's, so rich's
    markup (``[red]x`` would print ``x``) and emoji codes (``:smile:``) are off."""
    file = file or sys.stdout
    if file.isatty():
        console = Console(file=file, highlight=False, markup=False, emoji=False)
        console.width = min(WIDTH, console.width)
        console.print(Group(*renderables))
        return
    buffer = io.StringIO()
    Console(
        file=buffer, width=WIDTH, color_system=None, highlight=False, markup=False, emoji=False
    ).print(Group(*renderables))
    file.write("".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines()))
    file.flush()


def title_text(title: str) -> Text:
    """A report's bold title; a line longer than the width breaks after a comma.

    Breaking only between comma-separated parts keeps each ``name value`` pair (``tf log``)
    on one line.

    >>> title_text("a, b, c").plain
    'a, b, c'
    >>> [len(line) for line in title_text(", ".join(["word"] * 20)).plain.splitlines()]
    [77, 40]
    """
    lines = []
    for line in title.split("\n"):
        current = ""
        for part in line.split(", "):
            candidate = f"{current}, {part}" if current else part
            if current and len(candidate) + 1 > WIDTH:
                lines.append(current + ",")
                current = part
            else:
                current = candidate
        lines.append(current)
    return Text("\n".join(lines), style="bold")


def num(x: float, digits: int = 4) -> str:
    """A metric to ``digits`` decimals; ``inf`` or ``-`` (not a number) spelled out."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}f}"


def bar(fraction: float, width: int = BAR) -> str:
    """A horizontal bar of ``fraction`` (clipped to [0, 1]) of ``width`` cells, left-aligned.

    >>> bar(0.5, 4), bar(1 / 16, 2)
    ('██  ', '▏ ')
    """
    fraction = min(1.0, max(0.0, fraction)) if not math.isnan(fraction) else 0.0
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (_EIGHTHS[part] if part else "")
    return text.ljust(width)


def heading(text: str) -> Text:
    return Text(text, style="bold")


def _table(**kwargs) -> Table:
    return Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        **kwargs,
    )


def metrics_table(rows: Sequence[tuple[str, str]], justify: str = "right") -> Table:
    """Two columns, metric and value."""
    table = _table(show_header=False)
    table.add_column("metric")
    table.add_column("value", justify=justify)
    for name, value in rows:
        table.add_row(name, value)
    return table


#: The line that ends a per-class table that left rows out (``cv`` of multi-label lines
#: reads "labels"), and how to see them all.
LEFT_OUT = "{n:,} {what} left out: every row with --all-classes, or in --format json"


def shown_rows(support, predicted, f1, all_classes: bool) -> list[list[int]] | None:
    """The label indices of a per-class table's sections: None for every label in order
    (few labels, or ``--all-classes``), else the most frequent, then the lowest F1."""
    if all_classes or len(support) <= TABLE_CLASSES:
        return None
    from ..models.metrics import report_rows

    return [part.tolist() for part in report_rows(support, predicted, f1, SHOWN_CLASSES)]


def rows_heading(what: str, sections) -> str:
    """The heading of a per-class table, which says which rows it shows."""
    if sections is None:
        return f"per {what}"
    frequent, worst = map(len, sections)
    parts = [f"the {frequent} with the most test documents"] if frequent else []
    parts += [f"the {worst} of lowest F1"] if worst else []
    return f"per {what}: {', then '.join(parts)}"


def named(names: Sequence[str], all_classes: bool) -> str:
    """A note's class names: all of them, or past TABLE_CLASSES the first NOTE_NAMES and
    how many more."""
    if all_classes or len(names) <= TABLE_CLASSES:
        return ", ".join(names)
    return f"{', '.join(names[:NOTE_NAMES])} and {len(names) - NOTE_NAMES:,} more"


class PlainTable(Table):
    """A table of plain text cells that, drawn without colour (piped or redirected), lays
    out its lines itself, the very lines rich draws.

    rich measures and renders each cell as a renderable, about 0.4 ms of CPU a row of six
    cells (13 s for the 30,001 rows of a report of 30,000 classes); this joins strings.
    It is :func:`_table`'s layout (``SIMPLE_HEAD``, no padding at the edges, a blank line
    above and below, a blank line between sections) when the columns fit the width as
    they are; otherwise, on a terminal (colours and bold), or when a cell has anything
    but printable ASCII, begins or ends with a space, or could be read as markup or an
    emoji code (``[``, ``:``), rich draws it.
    """

    PLAIN = frozenset(map(chr, range(0x20, 0x7F))) - {"[", ":"}

    def __init__(self) -> None:
        super().__init__(box=box.SIMPLE_HEAD, pad_edge=False)
        self.plain_rows: list[tuple[str, ...] | None] = []  # None: a section's end

    def add_row(self, *cells: str) -> None:  # type: ignore[override]
        self.plain_rows.append(cells)
        super().add_row(*cells)

    def add_section(self) -> None:
        self.plain_rows.append(None)
        super().add_section()

    def plain_lines(self, width: int) -> list[str] | None:
        """The lines rich would draw without styles, or None where rich must draw them."""
        columns = self.columns
        texts = [c.header for c in columns] + [x for row in self.plain_rows if row for x in row]
        if not all(
            isinstance(x, str) and self.PLAIN.issuperset(x) and x.strip(" ") == x for x in texts
        ):
            return None
        widths = [len(c.header) for c in columns]
        for row in self.plain_rows:
            if row:
                widths = [max(w, len(x)) for w, x in zip(widths, row)]
        last = len(columns) - 1
        inner = sum(widths) + 2 * last + last  # pad 1 inside the edges, one column rule
        if inner + 2 > width:
            return None

        def line(cells) -> str:
            out = []
            for i, (column, text, w) in enumerate(zip(columns, cells, widths)):
                cell = text.rjust(w) if column.justify == "right" else text.ljust(w)
                out.append((" " if i else "") + cell + (" " if i < last else ""))
            return " " + " ".join(out) + " "

        blank = " " * (inner + 2)
        lines = [blank, line([c.header for c in columns]), " " + "─" * inner + " "]
        for row in self.plain_rows:
            lines.append(blank if row is None else line(row))
        if self.plain_rows and self.plain_rows[-1] is None:
            lines.pop()  # rich draws no rule after the last row
        lines.append(blank)
        return lines

    def __rich_console__(self, console, options):
        lines = None if console.color_system else self.plain_lines(options.max_width)
        if lines is None:
            yield from super().__rich_console__(console, options)
            return
        for text in lines:
            yield Segment(text)
            yield Segment.line()


def per_class_table(labels, per_class, sections=None) -> Table:
    """Precision, recall, F1, support and predicted count per label: every label, or the
    labels of each of ``sections`` (lists of indices), a line between sections."""
    table = PlainTable()
    table.add_column("class")
    for name in ("precision", "recall", "F1", "support", "predicted"):
        table.add_column(name, justify="right")
    for k, rows in enumerate([range(len(labels))] if sections is None else sections):
        if k:
            table.add_section()
        for i in rows:
            table.add_row(
                escape(labels[i]),
                num(float(per_class.precision[i])),
                num(float(per_class.recall[i])),
                num(float(per_class.f1[i])),
                str(int(per_class.support[i])),
                str(int(per_class.predicted[i])),
            )
    return table


def _short(label: str, width: int) -> str:
    label = escape(label)
    return label if len(label) <= width else label[: width - 1] + "…"


def confusion_heat_map(labels: Sequence[str], M, no_label=None) -> Table:
    """The confusion matrix, rows true classes, columns predicted; cells shaded by row share.

    A correct cell is shaded green and a wrong one red, deeper for a larger share of the
    row (the true class's documents). Column headers are the row numbers; the rows name
    the classes, unless :func:`confusion_section` moved the names to a legend.
    """
    return _confusion_table(labels, M, no_label, names=True)


def _confusion_table(labels, M, no_label, names: bool) -> Table:
    L = len(labels)
    table = _table() if names else Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 0))
    table.add_column("#", justify="right")
    if names:
        table.add_column("true class")
    largest = max((int(v) for row in M for v in row), default=0)
    width = _count_width(largest, L) + (0 if names else 1)
    for p in range(L):
        table.add_column(str(p + 1), justify="right", min_width=width)
    if no_label is not None:
        table.add_column(" none", justify="right")
    for t in range(L):
        total = sum(int(v) for v in M[t]) + (int(no_label[t]) if no_label is not None else 0)
        cells = []
        for p in range(L):
            value = int(M[t][p])
            share = value / total if total else 0.0
            cells.append(Text(str(value), style=_shade(share, t == p) if value else ""))
        if no_label is not None:
            cells.append(str(int(no_label[t])))
        head = [str(t + 1), _short(labels[t], 24)] if names else [str(t + 1)]
        table.add_row(*head, *cells)
    return table


def _count_width(largest: int, L: int) -> int:
    """Characters of a confusion matrix's widest cell: its ``largest`` count, or a class
    number up to ``L``."""
    return max(len(str(largest)), len(str(L)))


def _cell_width(cells, L: int) -> int:
    """:func:`_count_width` of the matrix of nonzero ``cells``."""
    return _count_width(int(cells.count.max()) if cells.count.size else 0, L)


def confusion_section(
    labels: Sequence[str], cells, no_label=None, width: int = WIDTH, whole_in_json: bool = True
) -> list:
    """The confusion matrix in the first form that fits ``width`` columns.

    ``cells`` are its nonzero cells (:class:`nbclass.models.metrics.Confusion`); the matrix
    is made whole only for the first two forms, which fit a few dozen classes:

    1. the heat map with class names on the rows;
    2. a legend (number: class) and the heat map with numbers only, one space apart;
    3. too many classes for either: the largest confusions as a list (the JSON output
       has the whole matrix, or past ``whole_in_json`` its nonzero cells).
    """
    L = len(labels)
    cell = _cell_width(cells, L)
    extra = 5 if no_label is not None else 0
    name_width = min(24, max(len(label) for label in labels))
    if 1 + len(str(L)) + 3 + name_width + 3 + L * (cell + 3) + extra <= width:
        return [
            heading("confusion matrix (rows: true class, columns: predicted class #)"),
            confusion_heat_map(labels, cells.dense().tolist(), no_label),
        ]
    if len(str(L)) + L * (cell + 1) + extra <= width:
        lines, line = [], ""
        for i, label in enumerate(labels):  # whole entries per line, never split
            entry = f"{i + 1}={_short(label, 36)}"
            if line and len(line) + 2 + len(entry) > width:
                lines.append(line)
                line = ""
            line = f"{line}  {entry}" if line else entry
        lines.append(line)
        return [
            heading("confusion matrix (rows: true class #, columns: predicted class #)"),
            Text("\n".join(lines)),
            _confusion_table(labels, cells.dense().tolist(), no_label, names=False),
        ]
    totals = cells.row_sums()
    table = _table()
    table.add_column("true class")
    table.add_column("predicted as")
    table.add_column("documents", justify="right")
    table.add_column("of the class", justify="right")
    for n, t, p in cells.largest_errors(15):
        total = int(totals[t]) + (int(no_label[t]) if no_label is not None else 0)
        table.add_row(_short(labels[t], 28), _short(labels[p], 28), str(n), f"{n / total:.1%}")
    where = "the matrix is" if whole_in_json else "its nonzero cells are"
    return [
        heading(f"largest confusions ({L} classes: {where} in --format json)"),
        table,
    ]


def _shade(share: float, correct: bool) -> Style:
    strength = 0.25 + 0.75 * share
    if correct:
        rgb = (0, int(40 + 100 * strength), 0)
    else:
        rgb = (int(60 + 140 * strength), 0, 0)
    from rich.color import Color

    return Style(bgcolor=Color.from_rgb(*rgb), color="white", bold=share >= 0.5)


def reliability_diagram(calibration) -> Group:
    """One row per confidence bin: a bar of the bin's accuracy with ``|`` at its confidence.

    A calibrated model has the end of each bar at its ``|``: a bar short of the mark is
    over-confident, a bar beyond it under-confident.
    """
    lines = [heading("reliability (bar: accuracy, |: mean confidence, per confidence bin)")]
    edges = calibration.edges
    filled = [b for b in range(len(calibration.count)) if calibration.count[b]]
    for b in range(filled[0] if filled else 0, len(calibration.count)):
        low, high = edges[b], edges[b + 1]
        label = f"{'[' if b == 0 else '('}{low:.1f}, {high:.1f}]"
        n = int(calibration.count[b])
        line = Text(f"{label:<11}")
        if n:
            cells = list(bar(float(calibration.accuracy[b])))
            mark = min(BAR - 1, int(float(calibration.confidence[b]) * BAR))
            cells[mark] = "|"
            line.append("".join(cells[:mark]), style="green")
            line.append("|", style="bold yellow")
            line.append("".join(cells[mark + 1 :]), style="green")
            line.append(
                f" n {n:>5}  acc {calibration.accuracy[b]:.3f}"
                f"  conf {calibration.confidence[b]:.3f}"
            )
        else:
            line.append(" " * BAR + " n     0")
        lines.append(line)
    return Group(*lines)


def errors_report(errors: list[dict], n_docs: int) -> list:
    """``evaluate --errors``: the misclassified documents, one row each."""
    out: list = [Text(""), heading(f"misclassified documents ({len(errors)} of {n_docs})")]
    if not errors:
        return out
    table = _table()
    for name in ("true", "predicted"):
        table.add_column(name)
    for name in ("p(true)", "p(pred.)"):
        table.add_column(name, justify="right")
    table.add_column("source", overflow="fold")  # whole, wrapped: a script may want it
    for e in errors:
        table.add_row(
            _short(e["true"], 16),
            "(none)" if e["predicted"] is None else _short(e["predicted"], 16),
            num(e["true_probability"]),
            num(e["probability"]),
            escape(e["source"]),
        )
    out.append(table)
    return out


def evaluation_report(evaluation, title: str, all_classes: bool = False) -> list:
    """The renderables of ``nbclass evaluate``'s text output: past TABLE_CLASSES classes
    a selection of the per-class rows and of the notes' names, unless ``all_classes``."""
    ev = evaluation
    out: list = [title_text(title)]
    notes = []
    if ev.unknown_classes:
        notes.append(
            "classes the model does not know (always wrong, left out of log loss, Brier "
            f"and ECE): {named(ev.unknown_classes, all_classes)}"
        )
    if ev.missing_classes:
        missing = named(ev.missing_classes, all_classes)
        notes.append(f"model classes with no test document: {missing}")
    no_label = int((ev.y_pred < 0).sum())
    if no_label:
        notes.append(f"{no_label} document(s) got no label (every class impossible)")
    for note in notes:
        out.append(Text(f"note: {note}"))
    out.append(
        metrics_table(
            [
                ("accuracy", num(ev.accuracy)),
                ("macro F1", num(ev.macro_f1)),
                ("micro F1", num(ev.micro_f1)),
                ("log loss", num(ev.log_loss)),
                ("Brier score", num(ev.brier_score)),
                (f"ECE ({ev.bins} bins)", num(ev.ece)),
            ]
        )
    )
    pc = ev.per_class
    sections = shown_rows(pc.support, pc.predicted, pc.f1, all_classes)
    out.append(heading(rows_heading("class", sections)))
    out.append(per_class_table(ev.labels, pc, sections))
    if sections is not None:
        left = len(ev.labels) - sum(map(len, sections))
        out += [Text(LEFT_OUT.format(n=left, what="classes")), Text("")]
    none = None
    if no_label:
        none = [0] * len(ev.labels)
        for t in ev.y_true[ev.y_pred < 0].tolist():
            none[t] += 1
    out.extend(
        confusion_section(ev.labels, ev.confusions, none, whole_in_json=ev.whole_matrix)
    )
    out.append(reliability_diagram(ev.calibration))
    return out


METRIC_NAMES = {
    "accuracy": "accuracy",
    "macro_f1": "macro F1",
    "micro_f1": "micro F1",
    "log_loss": "log loss",
    "brier_score": "Brier score",
    "ece": "ECE",
}


#: The figures of a multi-label ``check`` beside those of METRIC_NAMES.
LABEL_METRIC_NAMES = {"hamming_loss": "Hamming loss", "subset_accuracy": "subset accuracy"}


def learning_curve_chart(curve: list[dict]) -> Group:
    """Accuracy against training size: one bar per size, on a 0–1 axis of 40 cells."""
    lines = [heading("learning curve (accuracy, mean ± std over the folds; bar: 0 to 1)")]
    lines.append(Text(f"{'train docs':>10}  {'':40}  {'mean':>6}  {'std':>6}"))
    for point in curve:
        docs = sum(point["training_documents"]) / len(point["training_documents"])
        line = Text(f"{docs:>10.1f}  ")
        line.append(bar(point["accuracy_mean"], 40), style="cyan")
        line.append(f"  {point['accuracy_mean']:.4f}  {point['accuracy_std']:.4f}")
        lines.append(line)
    return Group(*lines)


def cross_validation_report(data: dict, title: str) -> list:
    """The renderables of ``nbclass cv``'s text output, from its ``to_dict()``."""
    out: list = [title_text(title)]
    summary = _table()
    summary.add_column("metric")
    for name in ("mean", "std", "min", "max"):
        summary.add_column(name, justify="right")
    for key, name in METRIC_NAMES.items():
        m = data["metrics"][key]
        summary.add_row(name, *(num(m[s]) for s in ("mean", "std", "min", "max")))
    out.append(summary)
    out.append(heading("per fold"))
    folds = _table()
    folds.add_column("fold", justify="right")
    folds.add_column("docs", justify="right")
    for name in METRIC_NAMES.values():
        folds.add_column(name.replace(" score", ""), justify="right")
    for k, size in enumerate(data["fold_documents"]):
        cells = [num(data["metrics"][key]["folds"][k]) for key in METRIC_NAMES]
        folds.add_row(str(k + 1), str(size), *cells)
    out.append(folds)
    if data["learning_curve"]:
        out.append(learning_curve_chart(data["learning_curve"]))
    return out


def check_report(data: dict, title: str) -> list:
    """The renderables of ``nbclass check``: both models side by side and the verdict."""
    out: list = [title_text(title)]
    table = _table()
    table.add_column("metric")
    for name in ("baseline", "new", "change", "limit", ""):
        table.add_column(name, justify="right")
    names = {**METRIC_NAMES, **LABEL_METRIC_NAMES}
    for key, m in data["metrics"].items():
        name, limit, verdict = names.get(key, key), "", ""
        if key in data["checked"]:
            limit = f"-{data['max_drop']}"
            ok = m["baseline"] - m["new"] <= data["max_drop"] + 1e-12
            verdict = Text("ok", style="green") if ok else Text("FAIL", style="bold red")
        elif key == "ece" and data["max_ece"] is not None:
            limit = f"≤ {data['max_ece']}"
            ok = m["new"] <= data["max_ece"] + 1e-12
            verdict = Text("ok", style="green") if ok else Text("FAIL", style="bold red")
        change = m["change"]
        table.add_row(
            name,
            num(m["baseline"]),
            num(m["new"]),
            ("+" if change > 0 else "") + num(change),
            limit,
            verdict,
        )
    out.append(table)
    if data["passed"]:
        out.append(Text("passed: the new model may replace the baseline", style="bold green"))
    else:
        out.append(Text("FAILED: keep the baseline", style="bold red"))
        for failure in data["failures"]:
            out.append(Text(f"  {failure}"))
    return out


def _signed(n: int) -> str:
    return f"+{n}" if n > 0 else str(n)


def _scoring_rows(scoring: dict) -> list[tuple[str, str]]:
    """``diff``'s rows on how the models score at their defaults: old -> new, or same."""

    def defaults(side):
        return escape(side["defaults"]) + (" (chosen by fit)" if side["chosen"] else " (named)")

    def beta(side):
        return "none" if side["fitted_beta"] is None else f"{side['fitted_beta']:.4g}"

    def calibration(side):
        c = side["calibration"]
        if c is None:
            return "none"
        shown = f"t = {c['t0']:.4g}, {c['t1']:.4g}, {c.get('t2', 0.0):.4g}"
        return shown + ", class offsets" if c.get("offsets") else shown

    def typicality(side):
        t = side["typicality"]
        if t is None:
            return "not stored"
        return f"{t['documents']} documents, median {t['median']:.4g}"

    rows = []
    old, new, changed = scoring["old"], scoring["new"], scoring["changed"]
    for name, shown, fields in (
        ("defaults", defaults, ("defaults", "chosen")),
        ("fitted β", beta, ("fitted_beta",)),
        ("calibration", calibration, ("calibration",)),
        ("typicality", typicality, ("typicality",)),
    ):
        a, b = shown(old), shown(new)
        differ = any(field in changed for field in fields)
        rows.append((name, f"{a} -> {b}" if differ or a != b else f"same: {a}"))
    return rows


def diff_report(data: dict, title: str) -> list:
    """The renderables of ``nbclass diff``."""
    out: list = [title_text(title)]
    for note in data.get("notes", []):
        out.append(Text(f"note: {note}"))
    d, v = data["documents"], data["vocabulary"]
    added = ", ".join(map(escape, data["classes_added"])) or "none"
    removed = ", ".join(map(escape, data["classes_removed"])) or "none"
    out.append(
        metrics_table(
            [
                ("documents", f"{d['old']} -> {d['new']} ({_signed(d['new'] - d['old'])})"),
                ("classes added", added),
                ("classes removed", removed),
                (
                    "vocabulary",
                    f"{v['old']} -> {v['new']} words ({_signed(v['new'] - v['old'])}: "
                    f"{v['added']} new, {v['removed']} gone)",
                ),
            ],
            justify="left",
        )
    )
    if "scoring" in data:
        out.append(metrics_table(_scoring_rows(data["scoring"]), justify="left"))
    if v["frequent_new_words"]:
        out.append(Text("new words, most frequent first: " + ", ".join(v["frequent_new_words"])))
    table = _table()
    table.add_column("class")
    for name in ("docs old", "docs new", "change", "KL(new‖old)"):
        table.add_column(name, justify="right")
    for name, entry in data["classes"].items():
        old, new = entry["documents_old"], entry["documents_new"]
        table.add_row(
            _short(name, 30), str(old), str(new), _signed(new - old), num(entry.get("kl"))
        )
    out.append(table)
    moved = [(name, e["moved"]) for name, e in data["classes"].items() if e.get("moved")]
    if moved:
        out.append(heading("words whose log-odds moved most (log θ_jc − log θ_j,rest, in nats)"))
        words = _table()
        words.add_column("class")
        words.add_column("word")
        for name in ("old", "new", "change"):
            words.add_column(name, justify="right")
        for name, rows in moved:
            for i, row in enumerate(rows):
                words.add_row(
                    _short(name, 24) if i == 0 else "",
                    _short(row["word"], 24),
                    num(row["old"]),
                    num(row["new"]),
                    ("+" if row["change"] > 0 else "") + num(row["change"]),
                )
            words.add_section()
        out.append(words)
    return out
