"""The output decision in one place (:mod:`nbclass.output.formats`): what each format
writes, and that no command decides between formats itself."""

from __future__ import annotations

import ast
import io
import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import nbclass
from nbclass.output.formats import Output, json_text, record_lines
from nbclass.output.render import field

CLI = Path(nbclass.__file__).parent / "cli"


def test_records_are_json_objects_or_tab_joined_cells():
    items = [("a\tb", 0.5), ("ü", 1e-300)]

    def record(item):
        return {"name": item[0], "p": item[1]}

    def row(item):
        return [field(item[0]), repr(item[1])]

    assert list(record_lines("jsonl", items, record, row)) == [
        '{"name": "a\\tb", "p": 0.5}',
        '{"name": "ü", "p": 1e-300}',
    ]
    assert list(record_lines("tsv", items, record, row)) == ["a\\tb\t0.5", "ü\t1e-300"]
    with pytest.raises(ValueError, match="'json' is not a record format"):
        list(record_lines("json", items, record, row))


@given(st.lists(st.lists(st.text(), min_size=1, max_size=4), max_size=5))
def test_a_tsv_record_is_one_line_that_splits_back_into_its_cells(rows):
    lines = list(record_lines("tsv", rows, None, lambda cells: [field(c) for c in cells]))
    assert len(lines) == len(rows)
    for line, cells in zip(lines, rows):
        assert "\n" not in line and "\r" not in line
        assert line.split("\t") == [field(c) for c in cells]


@given(st.lists(st.dictionaries(st.text(), st.integers() | st.text()), max_size=5))
def test_a_jsonl_record_reads_back_as_its_object(records):
    lines = list(record_lines("jsonl", records, lambda r: r, None))
    assert [json.loads(line) for line in lines] == records
    assert all("\n" not in line for line in lines)


def test_a_json_document_is_strict_json_unless_the_command_names_its_encoder():
    data = {"accuracy": 0.75, "log_loss": math.inf, "ece": math.nan}
    out = Output("json", io.StringIO())
    out.document(data, text=lambda d: ["never"])
    assert out.stream.getvalue() == (
        '{\n  "accuracy": 0.75,\n  "log_loss": null,\n  "ece": null\n}\n'
    )
    assert json_text(data) + "\n" == out.stream.getvalue()
    compact = Output("json", io.StringIO())
    compact.document({"model": "é"}, text=lambda d: ["never"], as_json=json.dumps)
    assert compact.stream.getvalue() == '{"model": "\\u00e9"}\n'


def test_a_text_document_is_lines_or_a_report_drawn_plain_off_a_terminal():
    from rich.text import Text

    out = Output("text", io.StringIO())
    out.document({"n": 2}, text=lambda d: [f"n is {d['n']}", "done"])
    assert out.stream.getvalue() == "n is 2\ndone\n"
    drawn = Output("text", io.StringIO())
    drawn.document({"n": 2}, report=lambda d: [Text("title   ", style="bold"), Text("x")])
    assert drawn.stream.getvalue() == "title\nx\n"  # no colour codes, no trailing spaces
    with pytest.raises(ValueError, match="'tsv' is not a document format"):
        Output("tsv", io.StringIO()).document({}, text=lambda d: [])


def test_output_writes_to_standard_output_as_it_is_when_written(capsys):
    out = Output("tsv")
    out.records([["a", "b"]], None, lambda cells: cells)
    assert capsys.readouterr().out == "a\tb\n"


def _format_comparisons(path: Path) -> list[str]:
    """Every comparison in ``path`` that involves a name ``fmt`` (the --format option)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
            if "fmt" in names:
                found.append(f"{path.name}:{node.lineno}")
    return found


def test_no_command_decides_between_formats_itself():
    """The commands give their results to nbclass.output.formats.Output (or to the
    renderers of nbclass.output), which pick the format."""
    found = [hit for path in sorted(CLI.glob("*.py")) for hit in _format_comparisons(path)]
    assert found == []


def test_the_check_finds_a_command_that_branches_on_the_format(tmp_path):
    path = tmp_path / "command.py"
    path.write_text('def f(fmt):\n    if fmt == "json":\n        return 1\n', encoding="utf-8")
    assert _format_comparisons(path) == ["command.py:2"]


_LOG_PROBA = st.one_of(
    st.floats(max_value=0.0, allow_nan=False), st.just(-math.inf), st.just(math.nan),
    st.sampled_from([0.0, -0.5, -700.0, -750.0]),  # ties, and probabilities that underflow
)  # fmt: skip


@given(
    st.integers(1, 4).flatmap(
        lambda C: st.lists(
            st.tuples(
                st.text(max_size=6),  # sources with tabs, newlines, surrogates
                st.lists(_LOG_PROBA, min_size=C, max_size=C),
                st.sampled_from([None, "low-probability", "few-known-words"]),
            ),
            max_size=8,
        )
    ),
    st.booleans(),
    st.sampled_from([None, 1]),
)
def test_best_class_lines_are_the_general_renderers_lines(documents, with_extras, top_k):
    """One class a document in TSV, as a batch prints it: the lines of the record
    renderer, for any log posteriors (ties, all impossible, NaN, underflow), sources
    and reasons."""
    from nbclass.output.render import prediction_lines, prediction_views

    classes = ["a", "b\tc", "d", "é"][: len(documents[0][1]) if documents else 1]
    sources = [s for s, _, _ in documents]
    rows = [r for _, r, _ in documents]
    extras = [{"reason": reason, "log_evidence": None} for _, _, reason in documents]
    extras = extras if with_extras else None
    got = list(prediction_lines(sources, classes, rows, "tsv", top_k, extras, "not sure"))
    items = zip(sources, rows, extras) if extras else zip(sources, rows)
    expected = list(record_lines("tsv", items, *prediction_views(classes, top_k, "not sure")))
    assert got == expected
