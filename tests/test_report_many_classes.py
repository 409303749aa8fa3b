"""The text report of evaluate (and of cv of multi-label lines) past 50 classes: its
per-class table shows the 25 classes with the most test documents, then the 25 of lowest
F1, and one line says how many rows it left out and how to see them (--all-classes, or
--format json, which always has every class); a note names 10 classes of a longer list.
Up to 50 classes the report is what it always was: every row, in label order."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import nbclass_command

CLASSES = 300


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *args], capture_output=True, text=True, timeout=300
    )


def fitted(root, classes: int, *options: str):
    """A multinomial model of ``classes`` classes, c_i trained on "w_i w_i shared"."""
    train, model = root / f"train{classes}.tsv", root / f"model{classes}.nbc"
    train.write_text("".join(f"c{i:03d}\tw{i} w{i} shared\n" for i in range(classes)))
    done = run("fit", "--lines", str(train), "--model", "multinomial", "-o", str(model), *options)
    assert done.returncode == 0, done.stderr
    return model


def test_lines() -> list[str]:
    """The test lines of the 300-class model (a line "LABEL<TAB>w_k" is predicted c_k):

    - c000..c009: four lines each of their own word (support 4, F1 1);
    - c010..c039: two lines each of their own word (support 2, F1 1);
    - c040..c099: one line each of their own word (support 1, F1 1);
    - c100..c139: one line each of the word of c_(i+100) (F1 0 for c100..c139 and
      c200..c239, one document each, true or predicted);
    - c140: three lines of the word of c250 (F1 0, support 3; c250 predicted 3 times);
    - c141: one line of its own word and one of c000's (F1 2/3; c000 predicted 5 times).
    """
    lines = [f"c{i:03d}\tw{i}\n" for i in range(10) for _ in range(4)]
    lines += [f"c{i:03d}\tw{i}\n" for i in range(10, 40) for _ in range(2)]
    lines += [f"c{i:03d}\tw{i}\n" for i in range(40, 100)]
    lines += [f"c{i:03d}\tw{i + 100}\n" for i in range(100, 140)]
    lines += ["c140\tw250\n"] * 3 + ["c141\tw141\n", "c141\tw0\n"]
    return lines


test_lines.__test__ = False  # a helper, not a test


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    test = root / "test.tsv"
    test.write_text("".join(test_lines()))
    return fitted(root, CLASSES), test


def row(label: str, precision: str, recall: str, f1: str, support: int, predicted: int) -> str:
    """A row of the per-class table as the report draws it (labels of 4 characters)."""
    return (
        f" {label:<5}   {precision:>9}   {recall:>6}   {f1:>6}   {support:>7}   "
        f"{predicted:>9}"
    ).rstrip()


RIGHT = ("1.0000", "1.0000", "1.0000")
WRONG = ("0.0000", "0.0000", "0.0000")
HEADER = [
    " class   precision   recall       F1   support   predicted",
    " " + "─" * 57,
]


def per_class_section(text: str) -> list[str]:
    """The report's lines from the per-class heading to the confusions' heading."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("per class"))
    end = next(i for i, line in enumerate(lines) if line.startswith("largest confusions"))
    return lines[start:end]


def test_past_50_classes_the_table_shows_the_most_frequent_then_the_lowest_f1(many):
    model, test = many
    done = run("evaluate", "-m", str(model), "--lines", str(test))
    assert done.returncode == 0, done.stderr
    frequent = [row(f"c{i:03d}", "0.8000", "1.0000", "0.8889", 4, 5) for i in range(1)]
    frequent += [row(f"c{i:03d}", *RIGHT, 4, 4) for i in range(1, 10)]
    frequent += [row("c140", *WRONG, 3, 0)]
    frequent += [row(f"c{i:03d}", *RIGHT, 2, 2) for i in range(10, 24)]
    # F1 0, the most documents true or predicted first (c250: 3), then in label order
    worst = [row("c250", *WRONG, 0, 3)]
    worst += [row(f"c{i:03d}", *WRONG, 1, 0) for i in range(100, 124)]
    assert per_class_section(done.stdout) == [
        "per class: the 25 with the most test documents, then the 25 of lowest F1",
        "",
        *HEADER,
        *frequent,
        "",
        *worst,
        "",
        "250 classes left out: every row with --all-classes, or in --format json",
        "",
    ]
    # The note names 10 of the 158 classes without a test document (and how many more).
    missing = [f"c{i:03d}" for i in range(142, CLASSES)]
    note = done.stdout.split("note: ")[1].split("\n\n")[0].replace("\n", " ")
    assert note == (
        f"model classes with no test document: {', '.join(missing[:10])} and 148 more"
    )


def test_all_classes_shows_every_row_and_every_name(many):
    model, test = many
    done = run("evaluate", "-m", str(model), "--lines", str(test), "--all-classes")
    assert done.returncode == 0, done.stderr
    data = json.loads(
        run("evaluate", "-m", str(model), "--lines", str(test), "--format", "json").stdout
    )
    expected = [
        row(label, f"{m['precision']:.4f}", f"{m['recall']:.4f}", f"{m['f1']:.4f}",
            m["support"], m["predicted"])
        for label, m in data["per_class"].items()
    ]  # fmt: skip
    assert len(expected) == CLASSES
    assert expected[141] == row("c141", "1.0000", "0.5000", "0.6667", 2, 1)
    assert per_class_section(done.stdout) == ["per class", "", *HEADER, *expected, ""]
    note = done.stdout.split("note: ")[1].split("\n\n")[0].replace("\n", " ")
    missing = ", ".join(f"c{i:03d}" for i in range(142, CLASSES))
    assert note == f"model classes with no test document: {missing}"
    # --all-classes changes nothing in the JSON, which has every class
    with_all = run(
        "evaluate", "-m", str(model), "--lines", str(test), "--format", "json", "--all-classes"
    )
    assert json.loads(with_all.stdout) == data


def test_up_to_50_classes_every_row_in_label_order(tmp_path):
    """At 50 classes the table is whole without --all-classes, and the same with it."""
    model = fitted(tmp_path, 50)
    test = tmp_path / "test.tsv"
    test.write_text("".join(f"c{i:03d}\tw{i}\n" for i in range(0, 50, 2)))
    done = run("evaluate", "-m", str(model), "--lines", str(test))
    assert done.returncode == 0, done.stderr
    rows = [
        row(f"c{i:03d}", *(RIGHT if i % 2 == 0 else WRONG), 1 - i % 2, 1 - i % 2)
        for i in range(50)
    ]
    assert per_class_section(done.stdout.replace("confusion matrix", "largest confusions")) == [
        "per class",
        "",
        *HEADER,
        *rows,
        "",
    ]
    odd = ", ".join(f"c{i:03d}" for i in range(1, 50, 2))
    note = done.stdout.split("note: ")[1].split("\n\n")[0].replace("\n", " ")
    assert note == f"model classes with no test document: {odd}"
    every = run("evaluate", "-m", str(model), "--lines", str(test), "--all-classes")
    assert every.stdout == done.stdout


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """A multi-label model of 60 labels l00..l59, each trained on two lines "l_i: w_i";
    test lines: l00..l29 twice each with their own word (support 2), l30..l59 once."""
    root = tmp_path_factory.mktemp("labels")
    train, test, model = root / "train.txt", root / "test.txt", root / "model.nbc"
    train.write_text("".join(f"l{i:02d}\tw{i} w{i}\n" for i in range(60) for _ in range(2)))
    test.write_text(
        "".join(f"l{i:02d}\tw{i}\n" for i in range(30) for _ in range(2))
        + "".join(f"l{i:02d}\tw{i}\n" for i in range(30, 60))
    )
    done = run("fit", "--multi-label", "--lines", str(train), "-o", str(model), "-q")
    assert done.returncode == 0, done.stderr
    return model, test


def test_multi_label_reports_past_50_labels_likewise(labelled):
    model, test = labelled
    done = run("evaluate", "-m", str(model), "--lines", str(test))
    assert done.returncode == 0, done.stderr
    data = json.loads(
        run("evaluate", "-m", str(model), "--lines", str(test), "--format", "json").stdout
    )
    per = data["per_label"]
    assert len(per) == 60

    def line(label):
        m = per[label]
        return (
            f"{label:<5}  {m['precision']:9.4f}  {m['recall']:6.4f}  {m['f1']:6.4f}  "
            f"{m['support']:7d}  {m['predicted']:9d}  {m['ece']:6.4f}"
        )

    lines = done.stdout.splitlines()
    start = lines.index("per label: the 25 with the most test documents, then the 25 of lowest F1")
    frequent = [f"l{i:02d}" for i in range(25)]
    others = [f"l{i:02d}" for i in range(25, 60)]
    others.sort(key=lambda l: (per[l]["f1"], -(per[l]["support"] + per[l]["predicted"]), l))
    assert lines[start + 1 :] == [
        "label  precision  recall      F1  support  predicted     ECE",
        *map(line, frequent),
        "",
        *map(line, others[:25]),
        "10 labels left out: every row with --all-classes, or in --format json",
    ]
    every = run("evaluate", "-m", str(model), "--lines", str(test), "--all-classes")
    lines = every.stdout.splitlines()
    start = lines.index("label  precision  recall      F1  support  predicted     ECE")
    order = sorted(per, key=lambda l: (-per[l]["support"], l))
    assert lines[start - 1 :] == ["", lines[start], *map(line, order)]


def test_cv_refuses_all_classes_without_a_per_class_table(many):
    model, test = many
    done = run("cv", "--lines", str(test), "--all-classes")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        "Error: --all-classes is for cv --multi-label (every label a row in its per-label "
        "table): cv of single-label documents has no per-class table, leave the option out"
    ]


def drawn_both_ways(rows, justify, width=80, terminal_width=None):
    """The plain text of the same rows drawn by PlainTable and by rich's own Table."""
    import io

    from rich.console import Console

    from nbclass.output.report import PlainTable, _table

    fast, slow = PlainTable(), _table()
    for i, how in enumerate(justify):
        for table in (fast, slow):
            table.add_column(f"col{i}" if i else "class", justify=how)
    for cells in rows:
        for table in (fast, slow):
            table.add_section() if cells is None else table.add_row(*cells)
    out = []
    for table in (fast, slow):
        buffer = io.StringIO()
        Console(file=buffer, width=width, color_system=None, highlight=False).print(table)
        out.append(buffer.getvalue())
    return fast, out


def test_the_plain_table_draws_the_lines_rich_draws():
    """PlainTable lays out the plain lines itself (13 s of rich's layout at 30,000 rows):
    random tables, with and without sections, against rich's own drawing of the same
    rows, trailing spaces included; cells it cannot draw as rich does are rich's."""
    import random

    rng = random.Random(2026)
    letters = "abcxyz_-.0123456789 "
    for trial in range(300):
        columns = rng.randint(1, 7)
        justify = ["left"] + [rng.choice(["left", "right"]) for _ in range(columns - 1)]
        rows = []
        for _ in range(rng.randint(0, 12)):
            if rows and rows[-1] is not None and rng.random() < 0.2:
                rows.append(None)
            else:
                rows.append(tuple(
                    "".join(rng.choice(letters) for _ in range(rng.randint(0, 14)))
                    for _ in range(columns)
                ))  # fmt: skip
        if rows and rows[0] is None:
            rows = rows[1:]
        width = rng.choice([40, 60, 80])
        fast, (mine, theirs) = drawn_both_ways(rows, justify, width)
        assert mine == theirs, (trial, rows, justify, width)
    # what rich reads as markup or emoji, or wider than the width, rich draws
    for cells in [("[bold]x", "1"), ("a:smile:", "1"), ("é", "1"), ("x" * 90, "1"), ("a ", "1")]:
        fast, (mine, theirs) = drawn_both_ways([cells], ["left", "right"])
        assert mine == theirs
        assert fast.plain_lines(80) is None
    fast, _ = drawn_both_ways([("c1", "1"), None, ("c22", "10")], ["left", "right"])
    blank = " " * 14
    assert fast.plain_lines(80) == [
        blank, " class   col1 ", " " + "─" * 12 + " ", " c1         1 ", blank,
        " c22       10 ", blank,
    ]  # fmt: skip
    assert fast.plain_lines(13) is None  # 14 characters wide: rich fits it to 13
