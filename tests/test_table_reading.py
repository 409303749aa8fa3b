"""Reading tables: the three formats give the same rows, missing cells, type detection."""

from __future__ import annotations

import doctest

import pytest

import nbclass.models.columns
import nbclass.reading.table
from nbclass.errors import NbclassError, UsageError
from nbclass.reading.table import detect_type, parse_column_types, read_table, table_format

CSV = (
    "id,age,colour,comment,label\n"
    '1,34,red,"arrived late, box torn",bad\n'
    "2,,blue,fine,good\n"
    '3,NA,  red ,"said ""thanks"" twice",good\n'
)
TSV = (
    "id\tage\tcolour\tcomment\tlabel\n"
    "1\t34\tred\tarrived late, box torn\tbad\n"
    "2\t\tblue\tfine\tgood\n"
    '3\tNA\t  red \tsaid "thanks" twice\tgood\n'
)
JSONL = (
    '{"id": 1, "age": 34, "colour": "red", "comment": "arrived late, box torn", "label": "bad"}\n'
    "\n"
    '{"id": 2, "age": null, "colour": "blue", "comment": "fine", "label": "good"}\n'
    '{"id": 3, "colour": " red", "comment": "said \\"thanks\\" twice", "label": "good"}\n'
)
ROWS = [
    ("1", "34", "red", "arrived late, box torn", "bad"),
    ("2", None, "blue", "fine", "good"),
    ("3", None, "red", 'said "thanks" twice', "good"),
]


@pytest.mark.parametrize("name,text", [("t.csv", CSV), ("t.tsv", TSV), ("t.jsonl", JSONL)])
def test_the_three_formats_read_the_same_rows(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    table = read_table(str(path))
    assert table.columns == ("id", "age", "colour", "comment", "label")
    assert table.rows == ROWS


def test_the_format_can_be_forced_and_is_refused_when_unknown(tmp_path):
    path = tmp_path / "data.txt"
    path.write_text(CSV, encoding="utf-8")
    assert read_table(str(path), "csv").rows == ROWS
    with pytest.raises(UsageError, match="--table-format"):
        read_table(str(path))
    with pytest.raises(UsageError, match="standard input needs --table-format"):
        table_format("-")
    with pytest.raises(UsageError, match="unknown table format 'xls'"):
        table_format("a.csv", "xls")


def test_jsonl_numbers_booleans_and_nulls(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"x": 0.1, "b": true, "n": null, "big": 12345678901234567890, "s": "NaN"}\n'
        '{"x": 1e-3, "b": false}\n',
        encoding="utf-8",
    )
    table = read_table(str(path))
    assert table.columns == ("x", "b", "n", "big", "s")
    assert table.rows == [
        ("0.1", "true", None, "12345678901234567890", None),
        ("0.001", "false", None, None, None),
    ]


@pytest.mark.parametrize(
    "name,text,message",
    [
        ("t.csv", "a,b\n1,2,3\n", "row 1 has 3 cells but the header names 2 columns"),
        ("t.csv", "a,a\n1,2\n", "names column 'a' twice"),
        ("t.csv", "", "is empty"),
        ("t.csv", 'a,b\n"1,2\n', "not valid CSV"),
        ("t.tsv", "a\t\n1\t2\n", "column 2 of the header has no name"),
        ("t.jsonl", '{"a": 1}\n[1]\n', "line 2 is not a JSON object"),
        ("t.jsonl", '{"a": 1\n', "line 1 is not JSON"),
        ("t.jsonl", '{"a": [1]}\n', "row 1: column 'a' holds a JSON list"),
    ],
)
def test_malformed_tables_are_refused_with_the_row(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(NbclassError, match=message.replace("[", r"\[")):
        read_table(str(path))


def test_a_missing_table_is_named(tmp_path):
    with pytest.raises(NbclassError, match="does not exist"):
        read_table(str(tmp_path / "absent.csv"))


def test_detection_rule():
    assert detect_type(["1", "-2.5", ".5", "1e3", None]) == "numeric"
    assert detect_type(["1", "two"]) == "categorical"
    assert detect_type(["1", "inf"]) == "categorical"
    assert detect_type(["New York", "Paris", "Rome"]) == "categorical"  # 1 of 3 spaced
    assert detect_type(["New York", "Paris"]) == "text"  # half spaced
    assert detect_type([None, None]) == "ignore"


def test_column_types_option():
    assert parse_column_types("a=numeric, b = text,c=ignore") == {
        "a": "numeric",
        "b": "text",
        "c": "ignore",
    }
    assert parse_column_types("x=y=categorical") == {"x=y": "categorical"}
    with pytest.raises(UsageError, match="unknown type 'number'"):
        parse_column_types("a=number")
    with pytest.raises(UsageError, match="is not NAME=TYPE"):
        parse_column_types("a")
    with pytest.raises(UsageError, match="twice"):
        parse_column_types("a=text,a=numeric")


@pytest.mark.parametrize("module", [nbclass.reading.table, nbclass.models.columns])
def test_docstring_examples_run(module):
    failures, tried = doctest.testmod(module)
    assert tried > 0 and failures == 0
