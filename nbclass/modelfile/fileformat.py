"""The model file's container, at the level of bytes: layout, writing and every check.

This module needs nothing beyond the standard library, so a command that scores one
document can read a model without importing numpy (see :mod:`nbclass.modelfile.quick`).

Layout (all integers little-endian)::

    offset  size  field
    0       8     magic  b"\\x89NBC\\r\\n\\x1a\\n"
    8       4     format version (uint32), currently 1
    12      4     header length H (uint32), padded with spaces to end on a 64-byte boundary
    16      4     CRC-32 of the header (uint32)
    20      8     total file size in bytes (uint64)
    28      4     reserved, zero
    32      H     header: a UTF-8 JSON object (settings, classes, section table)
    ...           sections, each starting at a multiple of 64 bytes, zero padding between

The magic number starts with a non-ASCII byte and holds CR LF, SUB and LF, so a file that
went through a text-mode or 7-bit transfer is recognised as damaged (the PNG trick). Each
section is a flat array of a fixed-width little-endian unsigned integer type, listed in
the header with its name, dtype, shape, offset (from the first section), length and
CRC-32. Every byte is checked on reading: the magic, the version, the declared size
(truncation), the reserved field and all padding (zero), the header's CRC-32 and each
section's (corruption), and that the sections fit the file without overlapping.
"""

from __future__ import annotations

import math
import os
import stat
import sys
import zlib

from ..errors import ModelFileError, ModelKindError
from ..version import __version__

MAGIC = b"\x89NBC\r\n\x1a\n"
FORMAT_NAME = "nbclass-model"
FORMAT_VERSION = 1


class Prefix:
    """The fixed start of the file, ``struct`` format ``<8sIIIQI``: the magic, then the
    version, header length, header CRC-32, total size and the reserved 0, little-endian.
    Read with ``int.from_bytes``: importing struct costs a one-document start more than
    reading these 32 bytes."""

    size = 32
    WIDTHS = (4, 4, 4, 8, 4)  # bytes of each number after the 8 of the magic

    def unpack_from(self, data) -> tuple:
        """``(magic, version, header length, header crc, size, reserved)`` of ``data``'s
        first 32 bytes, as ``struct.unpack_from`` gives them."""
        head = bytes(memoryview(data)[: self.size])
        if len(head) < self.size:
            raise ValueError(f"the prefix needs {self.size} bytes, not {len(head)}")
        fields, at = [head[:8]], 8
        for width in self.WIDTHS:
            fields.append(int.from_bytes(head[at : at + width], "little"))
            at += width
        return tuple(fields)

    def pack(self, magic: bytes, *numbers: int) -> bytes:
        """The 32 bytes of ``magic`` (8 bytes) and the five numbers."""
        if len(magic) != 8 or len(numbers) != len(self.WIDTHS):
            raise ValueError("a prefix is a magic of 8 bytes and 5 numbers")
        return magic + b"".join(n.to_bytes(w, "little") for n, w in zip(numbers, self.WIDTHS))


PREFIX = Prefix()
ALIGN = 64
TYPECODES = {"|u1": "B", "<u2": "H", "<u4": "I", "<u8": "Q"}  # dtype -> memoryview format
ITEMSIZE = {"|u1": 1, "<u2": 2, "<u4": 4, "<u8": 8}
# From this size on, ``read(mapped=True)`` maps memory for the file (below it, faulting
# the pages of a buffer costs less than importing mmap).
MAPPED_FROM = 1 << 20
# The sections of a model file, in order (their content: nbclass.modelfile.textfile).
MODEL_SECTIONS = (
    "class_count",
    "vocabulary",
    "vocabulary_offsets",
    "word_ptr",
    "class_index",
    "doc_count",
    "token_count",
    "used",
    "class_tokens",
    "histogram_ptr",
    "histogram_value",
    "histogram_count",
)
# Present only in a model that keeps a ledger of its documents (nbclass.counting.ledger).
LEDGER_SECTIONS = ("ledger_digest", "ledger_label", "ledger_ptr", "ledger_word", "ledger_count")
# Present only in a model with feature hashing: the words sampled per column.
HASHING_SECTIONS = ("column_words", "column_words_ptr")
# Present only in a model whose settings fit chose: the sample it chooses from.
SAMPLE_SECTIONS = ("sample_digest", "sample_label", "sample_ptr", "sample_word", "sample_count")
OPTIONAL_SECTIONS = LEDGER_SECTIONS + HASHING_SECTIONS + SAMPLE_SECTIONS


def whole(value, name: str) -> int:
    """``value`` if it is a whole number from 0 to 2^63 − 1 (as ``pack`` writes every
    size and offset), else ``ValueError``: a float, ``true``, ``Infinity`` or ``1e400``
    in a forged header is refused, never rounded or overflowed."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise ValueError(f"the header's {name} is not a whole number from 0 to 2^63-1")
    return value


def _pad(n: int) -> int:
    return (-n) % ALIGN


def refuse(path: str, problem: str) -> ModelFileError:
    return ModelFileError(f"{path!r} {problem}")


def problem_of(exc: Exception) -> str:
    """What a loader's ``exc`` says of a malformed file, for its one line: a missing field
    by its name (a ``KeyError``'s text is the bare key, ``'t0'``), else the message."""
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        return f"{exc.args[0]!r} is missing"
    return str(exc)


def section(name: str, values) -> tuple[str, str, int, memoryview]:
    """A section of :func:`pack` holding the 1-d array ``values`` (numpy's, in the type
    to store), as a view of its bytes: no copy of the array is made."""
    data = memoryview(values)
    if not data.c_contiguous:
        data = memoryview(values.copy())
    return name, values.dtype.str, values.size, data.cast("B")


def pack(header: dict, sections: list[tuple[str, str, int, bytes]]) -> bytes:
    """The bytes of a model file: :func:`pack_pieces` joined (one copy of the sections'
    data)."""
    return b"".join(pack_pieces(header, sections))


def pack_pieces(header: dict, sections: list[tuple[str, str, int, bytes]]) -> list:
    """Lay out a model file: its bytes as a list of bytes-like pieces, in order.

    Parameters
    ----------
    header : dict
        JSON-serialisable fields; ``format``, ``version``, ``sections_start`` and
        ``sections`` are filled in here.
    sections : list of (name, dtype, length, data)
        ``dtype`` is a key of ``TYPECODES``, ``length`` the number of integers and
        ``data`` their little-endian bytes (any bytes-like object, see :func:`section`).

    The pieces are the prefix, the header, then each section's ``data`` as given (not
    copied) and its zero padding: :func:`nbclass.modelfile.textfile.write_atomic` writes
    them one after another, without a copy of the whole file first.
    """
    table, relative = [], 0
    for name, dtype, length, data in sections:
        table.append(
            {
                "name": name,
                "dtype": dtype,
                "shape": [length],
                "offset": relative,
                "length": len(data),
                "crc32": zlib.crc32(data),
            }
        )
        relative += len(data) + _pad(len(data))
    header = {**header, "format": FORMAT_NAME, "version": FORMAT_VERSION, "sections": table}
    header["sections_start"] = 0
    import json

    for _ in range(3):  # the start depends on the header's own length: converge
        text = json.dumps(header, ensure_ascii=True, sort_keys=True).encode("ascii")
        start = PREFIX.size + len(text)
        start += _pad(start)
        header["sections_start"] = start
    text = json.dumps(header, ensure_ascii=True, sort_keys=True).encode("ascii")
    if PREFIX.size + len(text) > start:  # pragma: no cover - the loop above converges
        raise AssertionError("model header did not converge")
    header_bytes = text + b" " * (start - PREFIX.size - len(text))
    size = start + relative
    prefix = PREFIX.pack(
        MAGIC, FORMAT_VERSION, len(header_bytes), zlib.crc32(header_bytes), size, 0
    )
    pieces = [prefix, header_bytes]
    for _name, _dtype, _shape, data in sections:
        pieces += (data, b"\x00" * _pad(len(data)))
    return pieces


def file_kind(mode: int) -> str:
    """What a ``st_mode`` is, in words: ``"regular file"``, ``"named pipe (FIFO)"``, ...

    >>> import stat
    >>> file_kind(stat.S_IFCHR | 0o666)
    'character device'
    """
    for test, name in (
        (stat.S_ISREG, "regular file"),
        (stat.S_ISDIR, "folder"),
        (stat.S_ISFIFO, "named pipe (FIFO)"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return name
    return "special file"  # pragma: no cover - every kind Linux has is above


def read(path: str, mapped: bool = False) -> bytes:
    """The bytes of a model file, read with a bound; a problem is a :class:`ModelFileError`.

    A model file is untrusted input, so reading it never blocks and never grows without
    bound: the path must name a regular file (the null device reads as empty; a named
    pipe, a device such as /dev/zero or a socket is refused before anything is read; it
    is opened with ``O_NONBLOCK`` and checked again with ``fstat``, so a file swapped in
    meanwhile is refused too), and at
    most the size its fixed 32-byte prefix declares is read. A file longer than that is
    refused without reading the rest; a shorter one is read whole and refused as
    truncated by :func:`parse`. ``path`` may be a URL (:mod:`nbclass.reading.storage`): the object
    is read by the same rule, in ranges, each request bounded in time.

    ``mapped``: a large file of the size it declares is read into anonymous memory mapped
    for it (where the system can map it populated, in one call) and returned as a
    memoryview of it, not as bytes: the same bytes, without a fault for every page of a
    fresh buffer (a millisecond for 3.5 MB, a tenth of the interpreter's start). Only
    what the file holds is mapped, never the size a damaged prefix declares; and the
    file itself is never mapped (one truncated while mapped would end the process with
    SIGBUS).
    """
    try:
        if isinstance(path, str) and "://" in path:
            from ..reading.storage import is_url

            if is_url(path):
                return _read_url(path)
        before = os.stat(path)
    except OSError as exc:
        raise _read_error(exc, path) from None
    if _is_devnull(before):
        return b""  # parse() says "is empty (0 bytes)", as for an empty file
    _require_regular(path, before.st_mode)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise _read_error(exc, path) from None
    try:
        status = os.fstat(fd)
        _require_regular(path, status.st_mode)
        prefix = _read_exactly(fd, PREFIX.size, path)
        if len(prefix) < PREFIX.size or not prefix.startswith(MAGIC):
            return prefix  # parse() says what it is (empty, truncated, a pickle, not ours)
        declared = PREFIX.unpack_from(prefix)[4]
        if status.st_size > declared:
            raise refuse(path, f"is corrupted ({status.st_size - declared} bytes after its end)")
        os.lseek(fd, 0, os.SEEK_SET)  # one read of the whole file: one buffer, no copy
        if mapped and status.st_size == declared >= MAPPED_FROM:  # the size of the file
            buffer = _populated(declared)
            if buffer is not None:
                return _read_into(fd, memoryview(buffer), path)
        return _read_exactly(fd, max(declared, PREFIX.size), path)
    finally:
        os.close(fd)


def _read_url(path: str) -> bytes:
    """The bytes of the model at the URL ``path``, read as a local one is: the prefix,
    then no more than the size it declares (an object longer than that is refused from
    its size, unread), each request bounded in time (:mod:`nbclass.reading.storage`)."""
    from ..reading.storage import isdir, read_range, size

    try:
        prefix = read_range(path, 0, PREFIX.size)
    except (FileNotFoundError, IsADirectoryError):
        prefix = None
    if not prefix and isdir(path):  # a folder, or a prefix of objects (s3://bucket/dir)
        raise ModelFileError(f"{path!r} is a folder (a prefix of objects), not a model file")
    if prefix is None:
        raise _read_error(FileNotFoundError(), path)
    if len(prefix) < PREFIX.size or not prefix.startswith(MAGIC):
        return prefix  # parse() says what it is (empty, truncated, a pickle, not ours)
    declared = PREFIX.unpack_from(prefix)[4]
    total = size(path)
    if total > declared:
        raise refuse(path, f"is corrupted ({total - declared} bytes after its end)")
    return prefix + read_range(path, PREFIX.size, max(declared, PREFIX.size))


def _read_error(exc: OSError, path: str) -> ModelFileError:
    """The one-line error of a model file that cannot be looked at or opened."""
    if isinstance(exc, FileNotFoundError):
        return ModelFileError(f"model file {path!r} does not exist: create one with 'nbclass fit'")
    return ModelFileError(f"cannot read model file {path!r}: {exc.strerror}")


def _is_devnull(status: os.stat_result) -> bool:
    """Whether ``status`` is the null device's (it reads as empty, without side effects)."""
    try:
        null = os.stat(os.devnull)
    except OSError:  # pragma: no cover - no /dev/null
        return False
    return stat.S_ISCHR(status.st_mode) and status.st_rdev == null.st_rdev


def _require_regular(path: str, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise ModelFileError(f"{path!r} is a folder, not a model file")
    if not stat.S_ISREG(mode):
        raise ModelFileError(
            f"{path!r} is not an nbclass model file: it is a {file_kind(mode)}, and a model "
            "must be a regular file (nbclass never reads a model from a pipe or a device)"
        )


def _read_exactly(fd: int, n: int, path: str) -> bytes:
    """Up to ``n`` bytes of ``fd`` (fewer only at the end of the file); one buffer when a
    single read returns them all, as it does for a regular file on Linux below 2 GB."""
    pieces, left = [], n
    try:
        while left > 0:
            chunk = os.read(fd, min(left, 0x7FFFF000))
            if not chunk:
                break
            pieces.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise ModelFileError(f"cannot read model file {path!r}: {exc.strerror}") from None
    return b"".join(pieces)


def _populated(n: int):
    """``n`` bytes of anonymous memory, its pages made present at once; None where the
    system has no ``MAP_POPULATE`` (Linux only), or cannot map them."""
    import mmap

    populate = getattr(mmap, "MAP_POPULATE", 0)
    if not populate:  # pragma: no cover - not Linux
        return None
    try:
        return mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
    except (OSError, ValueError):  # pragma: no cover - no memory to map
        return None


def _read_into(fd: int, view: memoryview, path: str) -> memoryview:
    """The bytes of ``fd`` read into ``view``, up to its length (fewer only at the end
    of the file): ``view`` cut to what was read."""
    got = 0
    try:
        while got < len(view):
            n = os.readv(fd, [view[got : got + 0x7FFFF000]])
            if not n:
                break
            got += n
    except OSError as exc:
        raise ModelFileError(f"cannot read model file {path!r}: {exc.strerror}") from None
    return view[:got]


def parse(
    data: bytes,
    path: str,
    required: tuple[str, ...],
    optional: tuple[str, ...] = (),
    kind: str = "text",
) -> tuple[dict, dict]:
    """Check every byte of a model file and return ``(header, sections)``.

    Every name in ``required`` must be present; those in ``optional`` may be; any other
    section is refused. The header's ``kind`` (absent in text models: ``"text"``) must be
    ``kind``, else a :class:`ModelKindError` says what the file is and how to use it.

    ``sections`` maps each section name to a memoryview of its integers (format from
    ``TYPECODES``), with the shape in the header. Damage is a :class:`ModelFileError`
    saying what is wrong; so is a header that is not a model header (``ValueError`` from
    the checks below is turned into "is not a valid nbclass model").
    """
    view = memoryview(data)
    head = bytes(view[: PREFIX.size])  # any bytes-like data: bytes, a view of a mapping
    if not head:
        raise refuse(path, "is empty (0 bytes), not an nbclass model file")
    if not head.startswith(MAGIC):
        if MAGIC.startswith(head):
            raise refuse(path, f"is truncated ({len(data)} bytes): fit the model again")
        if head[:1] == b"\x80":
            raise refuse(
                path, "is a Python pickle, not an nbclass model; nbclass never loads pickles"
            )
        raise refuse(path, "is not an nbclass model file (no nbclass magic number)")
    if len(data) < PREFIX.size:
        raise refuse(path, f"is truncated ({len(data)} bytes): fit the model again")
    _magic, version, header_length, header_crc, size, reserved = PREFIX.unpack_from(view)
    if version != FORMAT_VERSION:
        raise refuse(
            path,
            f"has model format version {version}; this nbclass {__version__} reads version "
            f"{FORMAT_VERSION}: fit the model again with this version",
        )
    if len(data) < size:
        raise refuse(path, f"is truncated ({len(data)} of {size} bytes): fit the model again")
    if len(data) > size:
        raise refuse(path, f"is corrupted ({len(data) - size} bytes after its end)")
    if reserved != 0:
        raise refuse(path, "is corrupted (reserved bytes are not zero): fit the model again")
    header_bytes = view[PREFIX.size : PREFIX.size + header_length]
    if len(header_bytes) != header_length or zlib.crc32(header_bytes) != header_crc:
        raise refuse(path, "is corrupted (header checksum mismatch): fit the model again")
    try:
        header = _json_object(bytes(header_bytes))
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
        if header.get("format") != FORMAT_NAME or header.get("version") != FORMAT_VERSION:
            raise ValueError("format name")
        _check_kind(header.get("kind", "text"), kind, path)
        sections = _sections(view, header, path, required, optional)
    except RecursionError:
        raise refuse(path, "is not a valid nbclass model (the header nests too deeply)") from None
    except (
        KeyError,
        TypeError,
        ValueError,
        IndexError,
        AttributeError,
        UnicodeDecodeError,
    ) as exc:
        raise refuse(path, f"is not a valid nbclass model ({problem_of(exc)})") from None
    return header, sections


class _Decoding:
    """The settings of ``json.loads`` (its default decoder's), for the C scanner."""

    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int = float, int
    parse_constant = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.__getitem__


def _json_object(data: bytes):
    """``json.loads(data)``, the same value or the same exception.

    A header as :func:`pack` writes it (an ASCII object, spaces after it) is read by the
    C scanner that ``json.loads`` itself uses, without importing the :mod:`json` package,
    whose import compiles six regular expressions: a millisecond of a one-document
    start. Anything else, and any text the scanner does not read to its end (where
    ``json.loads`` raises the error that says why), is handed to ``json.loads``.
    """
    if data[:1] == b"{" and data.isascii() and b"\0" not in data:
        try:
            from _json import make_scanner

            text = data.decode("ascii")
            value, end = make_scanner(_Decoding())(text, 0)
            if not text[end:].strip(" \t\n\r"):
                return value
        except Exception:  # noqa: BLE001 - json.loads says what is wrong
            pass
    import json

    return json.loads(data)


def _check_kind(actual, wanted: str, path: str) -> None:
    if actual == wanted:
        return
    if actual == "table":
        message = (
            f"{path!r} is a table model (fitted with 'nbclass fit --table'), not a text "
            f"model: classify rows with 'nbclass predict -m {path} --table FILE'"
        )
    elif actual == "text":
        message = (
            f"{path!r} is a text model, not a table model: classify documents with "
            f"'nbclass predict -m {path} PATH...'"
        )
    else:
        message = (
            f"{path!r} is a model of unknown kind {actual!r}: this nbclass {__version__} "
            "reads text and table models"
        )
    raise ModelKindError(message, str(actual))


def _sections(
    view: memoryview, header: dict, path: str, required: tuple[str, ...], optional: tuple[str, ...]
) -> dict:
    start = whole(header["sections_start"], "sections_start")
    if start < PREFIX.size + 2 or start % ALIGN:
        raise ValueError("sections start at a wrong offset")
    sections, spans = {}, []
    for entry in header["sections"]:
        name, dtype = entry["name"], entry["dtype"]
        known = name in required or name in optional
        if not known or dtype not in TYPECODES or name in sections:
            raise ValueError(f"unexpected section {name!r} of type {dtype!r}")
        offset = start + whole(entry["offset"], f"offset of section {name!r}")
        length = whole(entry["length"], f"length of section {name!r}")
        shape = entry["shape"]
        if not isinstance(shape, list) or len(shape) != 1:
            raise ValueError(f"section {name!r} is not a flat array")
        shape = [whole(shape[0], f"shape of section {name!r}")]
        items = shape[0]
        if offset < start or offset + length > len(view) or length != ITEMSIZE[dtype] * items:
            raise ValueError(f"section {name!r} does not fit the file")
        chunk = view[offset : offset + length]
        if zlib.crc32(chunk) != entry["crc32"]:
            raise refuse(path, f"is corrupted (section {name!r} checksum mismatch)")
        sections[name] = _integers(chunk, dtype)
        spans.append((offset, offset + length))
    missing = [name for name in required if name not in sections]
    if missing:
        raise ValueError(f"missing sections {', '.join(missing)}")
    position = start
    for begin, end in sorted(spans):
        if begin < position:
            raise ValueError("sections overlap")
        if bytes(view[position:begin]).strip(b"\x00"):
            raise refuse(path, "is corrupted (non-zero padding between sections)")
        position = end
    if bytes(view[position:]).strip(b"\x00"):
        raise refuse(path, "is corrupted (non-zero padding after the sections)")
    return sections


def _integers(chunk: memoryview, dtype: str):
    """The section's unsigned integers, in the machine's byte order."""
    code = TYPECODES[dtype]
    if sys.byteorder == "little" or code == "B":
        return chunk.cast(code)
    from array import array  # pragma: no cover - big-endian machines

    values = array(code, chunk)  # pragma: no cover
    values.byteswap()  # pragma: no cover
    return memoryview(values)  # pragma: no cover


