"""Reading tables: CSV, TSV and JSON lines to rows of cells, and each column's type.

A table is a header naming the columns and one row per example. Three formats, chosen by
the file's extension or forced by the caller:

=========  =====================  ===========================================================
format     extensions             reading
=========  =====================  ===========================================================
``csv``    ``.csv``               RFC 4180: comma-separated, ``"`` quotes cells (with commas,
                                  newlines or ``""`` inside); the first record is the header
``tsv``    ``.tsv``, ``.tab``     tab-separated, no quoting (IANA text/tab-separated-values);
                                  the first line is the header
``jsonl``  ``.jsonl``,            one JSON object per line; the columns are the keys, in the
           ``.ndjson``            order first met; a key absent from a record is missing there
=========  =====================  ===========================================================

Files are decoded as UTF-8 (a byte order mark is skipped; bytes that are not UTF-8 become
U+FFFD, as for text corpora). Every cell becomes a ``str`` with surrounding white space
removed, or ``None`` when it is *missing*: an empty cell, or one of ``NA``, ``N/A``,
``NaN``, ``nan``, ``null``, ``NULL`` (and JSON ``null``). A JSON number becomes its
shortest text (``3``, ``0.25``), ``true``/``false`` the strings ``"true"``/``"false"``;
arrays and objects are refused. NUL characters become spaces (NUL separates strings in
the model file). Rows are numbered from 1, the header excluded; in JSON lines blank lines
are skipped and not counted.

Column types (:func:`detect_type`), decided from the training table's non-missing cells:

- ``numeric`` when every one is a finite decimal number (``-1``, ``2.5``, ``.5``,
  ``1e-3``; not ``inf``, hex or ``1_000``);
- otherwise ``text`` when at least half of them hold white space (two words or more);
- otherwise ``categorical``.

A column with no value at all is ``ignore``\\ d. ``--column-types`` overrides the rule
(:func:`parse_column_types`); ``ignore`` leaves a column out of the model (an id, say).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..errors import NbclassError, UsageError

FORMATS = ("csv", "tsv", "jsonl")
EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
MISSING = frozenset({"", "NA", "N/A", "NaN", "nan", "null", "NULL"})
COLUMN_TYPES = ("numeric", "categorical", "text", "ignore")
STDIN = "-"
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_SPACE = re.compile(r"\s")

Cell = str | None


def table_format(path: str, fmt: str | None = None) -> str:
    """The format of ``path``: ``fmt`` if given, else from the extension.

    Raises
    ------
    UsageError
        When ``fmt`` is unknown, or not given and the extension says nothing.
    """
    if fmt is not None:
        if fmt not in FORMATS:
            raise UsageError(f"unknown table format {fmt!r}: use one of {', '.join(FORMATS)}")
        return fmt
    if path == STDIN:
        raise UsageError("a table read from standard input needs --table-format csv|tsv|jsonl")
    extension = os.path.splitext(path)[1].lower()
    if extension not in EXTENSIONS:
        raise UsageError(
            f"cannot tell the format of {path!r} from its extension (.csv, .tsv, .tab, "
            ".jsonl, .ndjson): give --table-format csv|tsv|jsonl"
        )
    return EXTENSIONS[extension]


def cell(text: str) -> Cell:
    """One cell: stripped text, or ``None`` when missing.

    >>> cell("  red "), cell("NA"), cell(""), cell("a\\x00b")
    ('red', None, None, 'a b')
    """
    text = text.replace("\x00", " ").strip()
    return None if text in MISSING else text


def _json_cell(value, row: int, key: str, source: str) -> Cell:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return cell(repr(value))
    if isinstance(value, str):
        return cell(value)
    raise NbclassError(
        f"{source!r} row {row}: column {key!r} holds a JSON {type(value).__name__}; a cell "
        "must be a number, a string, true, false or null"
    )


def _open_lines(path: str, total_limit: int | None) -> Iterator[str]:
    """The decoded lines of a table file, or of standard input for ``-``, read as they are
    needed and within the limits of :mod:`nbclass.reading.limits`."""
    from .limits import bounded_lines, open_named

    if path == STDIN:
        from .process import standard_input

        return bounded_lines(standard_input(), path, total_limit)
    if "://" in path:
        from .storage import is_url

        if is_url(path):
            raise UsageError(
                f"--table {path!r} is a URL: a table is read from a local file or from "
                "standard input; copy it here first, or pipe it in with --table -"
            )

    def opened():
        try:
            return os.fdopen(open_named(path), "rb")  # closed by lines() below
        except FileNotFoundError:
            raise NbclassError(f"table {path!r} does not exist") from None
        except IsADirectoryError:
            raise NbclassError(f"{path!r} is a folder, not a table") from None
        except OSError as exc:
            raise NbclassError(f"cannot read table {path!r}: {exc.strerror}") from None

    def lines():
        with opened() as handle:
            try:
                yield from bounded_lines(handle, path, total_limit)
            except IsADirectoryError:
                raise NbclassError(f"{path!r} is a folder, not a table") from None
            except OSError as exc:
                raise NbclassError(f"cannot read table {path!r}: {exc.strerror}") from None

    if os.path.isdir(path) or not os.path.lexists(path):
        opened()  # the error now, not at the first row
    return lines()


def iter_rows(
    path: str, fmt: str, total_limit: int | None = None
) -> tuple[tuple[str, ...] | None, Iterator[dict[str, Cell]]]:
    """The header and an iterator of rows (``{column: cell}``) of a table.

    For CSV and TSV the header is known at once; for JSON lines it is ``None`` (the keys
    of each record are its columns). A row of CSV/TSV with another number of cells than
    the header is an :class:`NbclassError` naming the row. Rows are read as they are
    needed (a line is at most :data:`nbclass.reading.limits.MAX_ROW_BYTES`); ``total_limit``
    bounds the bytes read in all (``None``: no bound, for a table that is streamed).
    """
    handle = _open_lines(path, total_limit)
    if fmt == "jsonl":
        return None, _jsonl_rows(handle, path)
    if fmt == "csv":
        reader = csv.reader(handle, strict=True)
    else:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
    try:
        names = next(reader, None)
    except csv.Error as exc:
        raise NbclassError(f"{path!r} is not valid {fmt.upper()}: {exc}") from None
    if not names or names == [""]:
        raise NbclassError(f"table {path!r} is empty: its first line must name the columns")
    header = tuple(name.replace("\x00", " ").strip() for name in names)
    _check_header(header, path)
    return header, _delimited_rows(reader, header, path, fmt)


def _check_header(header: Sequence[str], path: str) -> None:
    seen = set()
    for i, name in enumerate(header, start=1):
        if not name:
            raise NbclassError(f"table {path!r}: column {i} of the header has no name")
        if name in seen:
            raise NbclassError(f"table {path!r}: the header names column {name!r} twice")
        seen.add(name)


def _delimited_rows(reader, header, path: str, fmt: str) -> Iterator[dict[str, Cell]]:
    row = 0
    try:
        for cells in reader:
            if not cells:  # a blank line
                continue
            row += 1
            if len(cells) != len(header):
                raise NbclassError(
                    f"table {path!r} row {row} has {len(cells)} cells but the header names "
                    f"{len(header)} columns"
                )
            yield dict(zip(header, map(cell, cells)))
    except csv.Error as exc:
        raise NbclassError(
            f"{path!r} is not valid {fmt.upper()} near row {row + 1}: {exc}"
        ) from None


def _jsonl_rows(handle, path: str) -> Iterator[dict[str, Cell]]:
    row = 0
    for lineno, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        row += 1
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise NbclassError(f"{path!r} line {lineno} is not JSON: {exc}") from None
        if not isinstance(record, dict):
            raise NbclassError(f"{path!r} line {lineno} is not a JSON object")
        yield {
            str(key).replace("\x00", " ").strip(): _json_cell(value, row, key, path)
            for key, value in record.items()
        }


@dataclass(frozen=True, eq=False)
class Table:
    """A whole table in memory.

    Attributes
    ----------
    path : str
    columns : tuple of str
        Column names: the header, or for JSON lines every key in the order first met.
    rows : list of tuple
        One tuple of ``len(columns)`` cells per row (``None`` = missing).
    """

    path: str
    columns: tuple[str, ...]
    rows: list[tuple[Cell, ...]]

    def column(self, name: str) -> list[Cell]:
        """The cells of one column, in row order."""
        k = self.columns.index(name)
        return [row[k] for row in self.rows]


def read_table(path: str, fmt: str | None = None) -> Table:
    """Read a whole table (the format from the extension unless ``fmt`` is given), at most
    :func:`nbclass.reading.limits.table_limit` bytes."""
    from .limits import table_limit

    fmt = table_format(path, fmt)
    header, rows = iter_rows(path, fmt, table_limit())
    records = list(rows)
    if header is None:
        names: dict[str, None] = {}
        for record in records:
            names.update(dict.fromkeys(record))
        header = tuple(names)
        _check_header(header, path)
    return Table(path, header, [tuple(r.get(name) for name in header) for r in records])


def is_number(text: str) -> bool:
    """True for a finite decimal number (the ``numeric`` rule).

    >>> [is_number(t) for t in ("-1", "2.5", ".5", "1e-3", "inf", "0x10", "1_000", "1e999")]
    [True, True, True, True, False, False, False, False]
    """
    return _NUMBER.fullmatch(text) is not None and math.isfinite(float(text))


def detect_type(cells: Iterable[Cell]) -> str:
    """``numeric``, ``text``, ``categorical`` or ``ignore`` (no value), by the rule above.

    >>> detect_type(["1", None, "2.5"]), detect_type(["red", "blue"])
    ('numeric', 'categorical')
    >>> detect_type(["late again", "ok", "no signal at all"]), detect_type([None])
    ('text', 'ignore')
    """
    present = [c for c in cells if c is not None]
    if not present:
        return "ignore"
    if all(map(is_number, present)):
        return "numeric"
    spaced = sum(1 for c in present if _SPACE.search(c))
    return "text" if 2 * spaced >= len(present) else "categorical"


def parse_column_types(text: str | None) -> dict[str, str]:
    """``name=type,other=type`` to ``{name: type}``.

    >>> parse_column_types("age=numeric,zip=categorical")
    {'age': 'numeric', 'zip': 'categorical'}
    """
    if not text:
        return {}
    types: dict[str, str] = {}
    for item in text.split(","):
        name, sep, kind = item.rpartition("=")
        name, kind = name.strip(), kind.strip()
        if not sep or not name:
            raise UsageError(
                f"--column-types {text!r}: {item!r} is not NAME=TYPE "
                "(e.g. age=numeric,zip=categorical)"
            )
        if kind not in COLUMN_TYPES:
            raise UsageError(
                f"--column-types: unknown type {kind!r} for column {name!r}: use one of "
                f"{', '.join(COLUMN_TYPES)}"
            )
        if name in types:
            raise UsageError(f"--column-types names column {name!r} twice")
        types[name] = kind
    return types
