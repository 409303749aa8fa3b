"""The output decision, in one place: a command's results in the format the user chose.

A command hands its results to :class:`Output` with the value of its ``--format`` option
and says what each format would show; it never branches on the format itself. Results
come in two shapes:

- **records** (``tsv``, ``jsonl``): one line per record, written as they come, so that a
  pipe sees the first documents' labels before the last is read. The command gives, per
  record, its JSON object and its TSV cells; :func:`record_lines` picks one.
- **a document** (``text``, ``json``): one result. ``json`` is one JSON text (indented,
  non-finite numbers as ``null``, unless the command names another encoder); ``text`` is
  for people: aligned lines, or a report drawn with rich (:func:`nbclass.output.report.show`
  colours it only on a terminal, and writes plain text without trailing spaces to a file
  or a pipe).

Imports nothing heavy (rich only when a report is drawn, json only when JSON is written):
the one-document path writes its line through :func:`record_lines`.
"""

from __future__ import annotations

import math
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (one document)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

RECORD_FORMATS = ("tsv", "jsonl")
DOCUMENT_FORMATS = ("text", "json")


def record_lines(fmt: str, items: Iterable, record: Callable, row: Callable) -> Iterator[str]:
    """One line per item of ``items``: ``json.dumps(record(item))`` for ``jsonl`` (UTF-8
    kept as it is), the cells ``row(item)`` joined by tabs for ``tsv``.

    ``row`` returns the cells already escaped (:func:`nbclass.output.render.field`), so
    every record stays on one line.

    >>> list(record_lines("tsv", [1, 2], lambda n: {"n": n}, lambda n: [str(n), "é"]))
    ['1\\té', '2\\té']
    >>> list(record_lines("jsonl", [1], lambda n: {"n": n, "w": "é"}, None))
    ['{"n": 1, "w": "é"}']
    """
    if fmt == "jsonl":
        from json import dumps  # here: a TSV line (one document) imports no json
        for item in items:
            yield dumps(record(item), ensure_ascii=False)
    elif fmt == "tsv":
        for item in items:
            yield "\t".join(row(item))
    else:
        raise ValueError(f"{fmt!r} is not a record format ({', '.join(RECORD_FORMATS)})")


def finite(value):
    """``value`` with every NaN or infinite float replaced by ``None`` (JSON ``null``).

    >>> finite({"a": [1.0, float("inf")], "b": float("nan")})
    {'a': [1.0, None], 'b': None}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def json_text(value) -> str:
    """One strict JSON document (non-finite numbers as ``null``), indented."""
    import json

    return json.dumps(finite(value), ensure_ascii=False, indent=2, allow_nan=False)


class Output:
    """Where a command's results go (``stream``, standard output by default) and in what
    format (``fmt``, the value of its ``--format`` option).

    >>> import io
    >>> out = Output("json", io.StringIO())
    >>> out.document({"a": 1}, text=lambda data: ["a is 1"])
    >>> out.stream.getvalue()
    '{\\n  "a": 1\\n}\\n'
    """

    def __init__(self, fmt: str, stream=None):
        self.fmt = fmt
        self._stream = stream

    @property
    def stream(self):
        """The stream written to: standard output as it is when written to, unless given."""
        return self._stream if self._stream is not None else sys.stdout

    def lines(self, lines: Iterable[str]) -> None:
        """Write each line and a newline, then flush (a pipe's reader sees them now)."""
        stream = self.stream
        write = stream.write
        for line in lines:
            write(line)
            write("\n")
        stream.flush()

    def records(self, items: Iterable, record: Callable, row: Callable) -> None:
        """Write a stream of records (``tsv`` or ``jsonl``): see :func:`record_lines`."""
        self.lines(record_lines(self.fmt, items, record, row))

    def document(
        self,
        data,
        text: Callable | None = None,
        report: Callable | None = None,
        as_json: Callable | None = None,
    ) -> None:
        """Write one result (``text`` or ``json``).

        ``json``: the line ``as_json(data)`` (:func:`json_text` unless given). ``text``:
        the lines ``text(data)``, or the rich renderables ``report(data)`` drawn by
        :func:`nbclass.output.report.show` (give one of ``text`` and ``report``).
        """
        if self.fmt == "json":
            self.lines([(as_json or json_text)(data)])
        elif self.fmt != "text":
            formats = ", ".join(DOCUMENT_FORMATS)
            raise ValueError(f"{self.fmt!r} is not a document format ({formats})")
        elif report is not None:
            from .report import show

            show(*report(data), file=self.stream)
        else:
            self.lines(text(data))
