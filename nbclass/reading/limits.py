"""The size limits of inputs that are not documents, and reading within them.

Documents have ``--max-bytes`` (:mod:`nbclass.reading.policy`). Everything else a command reads
has a limit of its own, so that no input, however large or endless (``/dev/zero``, a
``yes`` pipe), can make a command grow until the system runs out of memory:

=====================  ================  ==================================================
input                  limit             rule
=====================  ================  ==================================================
model file (``-m``)    its own size      a regular file, at most the size its fixed header
                                         declares (:func:`nbclass.modelfile.fileformat.read`)
stop-word file         16 MiB            read whole, then split into words
table read whole       256 MiB           ``fit --table``, ``fit --update``, ``evaluate``;
                                         ``NBCLASS_MAX_TABLE_BYTES`` sets another limit
one table row          16 MiB            one line (CSV, TSV, JSON lines); a quoted CSV cell
                                         is at most 128 KiB (Python's csv module)
streamed table         none              ``predict --table`` reads, scores and prints a
                                         batch of 1,000 rows at a time, in bounded memory
=====================  ================  ==================================================

A named pipe (FIFO) that the user names (a document, ``--lines``, ``--stop-words``,
``--table``; ``<(command)`` is one) is read like standard input, but its first byte
(or its writer's end) must come within ``NBCLASS_PIPE_WAIT`` seconds (30 by default):
a pipe that no process writes to is an error, not a wait for ever (:func:`open_named`).
A FIFO found by listing a folder is never opened.

Standard library only (the one-document path imports it).
"""

from __future__ import annotations

import codecs
import io
import os
from collections.abc import Iterator

from ..errors import NbclassError
from ..ranges import environment

MiB = 1024 * 1024
MAX_STOP_WORDS_BYTES = 16 * MiB
MAX_TABLE_BYTES = 256 * MiB
MAX_ROW_BYTES = 16 * MiB
TABLE_BYTES_VARIABLE = "NBCLASS_MAX_TABLE_BYTES"
PIPE_WAIT_VARIABLE = "NBCLASS_PIPE_WAIT"
DEFAULT_PIPE_WAIT = 30.0  # seconds a named pipe may take to give its first byte
_CHUNK = MiB


def format_limit(n: int) -> str:
    """``n`` bytes in words.

    >>> format_limit(16 * MiB), format_limit(1000)
    ('16 MiB', '1000 bytes')
    """
    for unit, size in (("GiB", 1024 * MiB), ("MiB", MiB), ("KiB", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


def table_limit() -> int:
    """The largest table read whole: ``$NBCLASS_MAX_TABLE_BYTES`` (e.g. ``1G``), else 256 MiB."""
    limit = environment(TABLE_BYTES_VARIABLE)
    return MAX_TABLE_BYTES if limit is None else limit


def seconds_variable(name: str, default: float) -> float:
    """The number of seconds ``$name`` gives (``default`` when unset or empty), checked
    against its row of :data:`nbclass.ranges.RANGES` (more than 0, at most a day).

    >>> seconds_variable("NBCLASS_STORAGE_TIMEOUT", 60.0) in (60.0, environment(
    ...     "NBCLASS_STORAGE_TIMEOUT"))
    True
    """
    value = environment(name)
    return default if value is None else value


def open_named(path: str) -> int:
    """A descriptor open for reading (blocking) on ``path``, a file the user named.

    A named pipe is opened without waiting for a writer, then waited on for its first
    byte (or the end its writer makes by closing) for at most ``NBCLASS_PIPE_WAIT``
    seconds: a pipe that no process writes to is an :class:`NbclassError`, never a wait
    for ever. Any other file is opened as :func:`os.open` would.

    Raises
    ------
    OSError
        When ``path`` cannot be opened (as :func:`os.open`).
    NbclassError
        When it is a named pipe that nothing writes to in time.
    """
    import select
    import stat

    flags = os.O_RDONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags | os.O_NONBLOCK)
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            wait = seconds_variable(PIPE_WAIT_VARIABLE, DEFAULT_PIPE_WAIT)
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLPRI)
            if not poller.poll(int(wait * 1000)):
                raise NbclassError(
                    f"nothing was written to the named pipe {path!r} in {wait:g} s: start "
                    f"the process that writes to it first, or set {PIPE_WAIT_VARIABLE} to "
                    "wait longer"
                )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bounded(stream, limit: int, too_large: str) -> bytes:
    """All bytes of the binary ``stream``, at most ``limit``; more is an :class:`NbclassError`
    saying ``too_large`` (no more than ``limit + 1`` bytes are ever held)."""
    parts, total = [], 0
    while total <= limit:
        chunk = stream.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    if total > limit:
        parts.clear()
        raise NbclassError(too_large)
    return b"".join(parts)


def bounded_lines(
    stream, name: str, total_limit: int | None = None, line_limit: int = MAX_ROW_BYTES
) -> Iterator[str]:
    """The lines of the binary ``stream`` decoded as UTF-8 (a leading byte order mark
    dropped, other bytes replaced by U+FFFD), each with its line ending, as
    ``io.StringIO(text, newline="")`` yields them (``\\n``, ``\\r\\n`` or a lone ``\\r``).

    Lines are produced as they arrive, so a pipe is processed while it is written. A line
    longer than ``line_limit`` bytes, or more than ``total_limit`` bytes in all (``None``:
    no total limit), is an :class:`NbclassError`; no more than about one line is held.
    """
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    total, first, number = 0, True, 0
    while True:
        line = stream.readline(line_limit + 1)
        if not line:
            tail = decoder.decode(b"", final=True)
            if tail:
                yield tail
            return
        number += 1
        total += len(line)
        if len(line) > line_limit and not line.endswith(b"\n"):
            raise NbclassError(
                f"{name!r} line {number} is longer than {format_limit(line_limit)}: a table "
                "row must be shorter (is the file a table?)"
            )
        if total_limit is not None and total > total_limit:
            raise NbclassError(
                f"table {name!r} is larger than {format_limit(total_limit)}, the limit of a "
                f"table read whole: set {TABLE_BYTES_VARIABLE} (e.g. 1G) to read it"
            )
        if first:
            first = False
            if line.startswith(codecs.BOM_UTF8):
                line = line[len(codecs.BOM_UTF8) :]
        text = decoder.decode(line)
        if "\r" in text.rstrip("\r\n") or text.endswith("\r"):
            yield from io.StringIO(text, newline="")
        else:
            yield text
