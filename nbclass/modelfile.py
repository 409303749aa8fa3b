"""The model file: one self-describing binary file that loading can never execute.

Layout (all integers little-endian)::

    offset  size  field
    0       8     magic  b"\\x89NBC\\r\\n\\x1a\\n"
    8       4     format version (uint32), currently 1
    12      4     header length H (uint32)
    16      4     CRC-32 of the header (uint32)
    20      8     total file size in bytes (uint64)
    28      4     reserved, zero
    32      H     header: a UTF-8 JSON object (settings, classes, section table)
    ...           sections, each starting at a multiple of 64 bytes

The magic number starts with a non-ASCII byte and holds CR LF, SUB and LF, so a file that
went through a text-mode or 7-bit transfer is recognised as damaged (the PNG trick). Each
section is a flat array of a fixed-width little-endian unsigned integer type, described
in the header by name, dtype, shape, offset, length and CRC-32:

=============  ==========  ===============================================================
section        shape       content
=============  ==========  ===============================================================
class_count    (C,)        N_c, documents per class
vocabulary     (bytes,)    the V words, UTF-8, sorted, separated by NUL bytes
word_ptr       (V + 1,)    entries of word j are ``word_ptr[j]:word_ptr[j+1]`` below
class_index    (nnz,)      class c of each non-zero (word, class) entry
doc_count      (nnz,)      D_jc, documents of class c containing word j
token_count    (nnz,)      T_jc, tokens of word j in class c
=============  ==========  ===============================================================

The counts are stored sparse (a word is usually seen in few classes) with the smallest
integer type that holds them, so a file is small and its arrays load with
``numpy.frombuffer`` without parsing. The header's JSON carries no code and the sections
only integers: no pickle is involved anywhere. Every byte is covered by a check: the
magic, the version, the declared size (truncation), the reserved field and all padding
must be zero, a CRC-32 per section and one for the header (corruption), the settings must
be valid, and the counts must be consistent (for example D_jc <= N_c).

Writing is atomic: the file is written to a temporary name in the same folder, flushed to
disk, then renamed over the target, so a crash or a concurrent reader never sees half a
file.
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
import zlib

import numpy as np

from . import __version__
from .counts import Counts
from .errors import ModelFileError, NbclassError
from .estimators import EstimatorSettings
from .model import Model, VocabularyFilter
from .tokenizer import TokenizerSettings, make_tokenizer

MAGIC = b"\x89NBC\r\n\x1a\n"
FORMAT_NAME = "nbclass-model"
FORMAT_VERSION = 1
PREFIX = struct.Struct("<8sIIIQI")  # magic, version, header length, header crc, size, 0
ALIGN = 64
DTYPES = ("|u1", "<u2", "<u4", "<u8")
SECTIONS = ("class_count", "vocabulary", "word_ptr", "class_index", "doc_count", "token_count")


def _smallest_uint(values: np.ndarray) -> np.dtype:
    top = int(values.max()) if values.size else 0
    for name in DTYPES:
        if top <= np.iinfo(np.dtype(name)).max:
            return np.dtype(name)
    raise ValueError("count too large for 64 bits")  # pragma: no cover


def _pad(n: int) -> int:
    return (-n) % ALIGN


def _sections(counts: Counts) -> dict[str, np.ndarray]:
    present = counts.doc_count > 0  # D_jc > 0 exactly when T_jc > 0
    rows, cols = np.nonzero(present)  # row-major: grouped by word, classes ascending
    word_ptr = np.zeros(len(counts.vocabulary) + 1, dtype=np.int64)
    np.cumsum(present.sum(axis=1), out=word_ptr[1:])
    vocabulary = "\x00".join(counts.vocabulary).encode("utf-8")
    arrays = {
        "class_count": counts.class_count,
        "vocabulary": np.frombuffer(vocabulary, dtype=np.uint8),
        "word_ptr": word_ptr,
        "class_index": cols,
        "doc_count": counts.doc_count[rows, cols],
        "token_count": counts.token_count[rows, cols],
    }
    return {name: a.astype(_smallest_uint(a)) for name, a in arrays.items()}


def dumps(model: Model) -> bytes:
    """The bytes of the model file for ``model``; impossible counts raise ``ValueError``."""
    problems = model.counts.problems()
    if problems:
        raise ValueError("cannot write impossible counts: " + "; ".join(problems))
    arrays = _sections(model.counts)
    table = []
    # The header's length depends on the offsets it lists; lay out sections relative to
    # the end of the header, then fix the header size by padding it to a multiple of 64.
    relative = 0
    for name in SECTIONS:
        a = arrays[name]
        table.append(
            {
                "name": name,
                "dtype": a.dtype.str,
                "shape": list(a.shape),
                "offset": relative,
                "length": a.nbytes,
                "crc32": zlib.crc32(a.tobytes()),
            }
        )
        relative += a.nbytes + _pad(a.nbytes)
    header = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "nbclass_version": __version__,
        "classes": list(model.counts.classes),
        "n_features": len(model.counts.vocabulary),
        "tokenizer": model.tokenizer.to_dict(),
        "vocabulary_filter": model.vocabulary_filter.to_dict(),
        "defaults": model.defaults.to_dict(),
        "selection": model.selection,
        "sections_start": 0,
        "sections": table,
    }
    for _ in range(2):  # the start depends on the header's own length: converge
        text = json.dumps(header, ensure_ascii=True, sort_keys=True).encode("ascii")
        start = PREFIX.size + len(text)
        start += _pad(start)
        header["sections_start"] = start
    text = json.dumps(header, ensure_ascii=True, sort_keys=True).encode("ascii")
    assert PREFIX.size + len(text) <= start
    body = bytearray()
    for name in SECTIONS:
        a = arrays[name]
        body += a.tobytes()
        body += b"\x00" * _pad(a.nbytes)
    head_pad = start - PREFIX.size - len(text)
    size = start + len(body)
    header_bytes = text + b" " * head_pad
    prefix = PREFIX.pack(
        MAGIC, FORMAT_VERSION, len(header_bytes), zlib.crc32(header_bytes), size, 0
    )
    return prefix + header_bytes + bytes(body)


def save(model: Model, path: str) -> int:
    """Write ``model`` to ``path`` atomically; returns the number of bytes written."""
    data = dumps(model)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(
            dir=folder, prefix="." + os.path.basename(path) + ".", suffix=".tmp"
        )
    except OSError as exc:
        raise ModelFileError(f"cannot write model {path!r}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise ModelFileError(f"cannot write model {path!r}: {exc.strerror}") from None
        raise
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:  # pragma: no cover - some filesystems refuse fsync on folders
        pass
    return len(data)


def _refuse(path: str, problem: str) -> ModelFileError:
    return ModelFileError(f"{path!r} {problem}")


def loads(data: bytes, path: str = "<bytes>") -> Model:
    """Parse model-file bytes; raise :class:`ModelFileError` naming any problem."""
    return loads_with_header(data, path)[0]


def loads_with_header(data: bytes, path: str = "<bytes>") -> tuple[Model, dict]:
    """Parse model-file bytes into the model and the file's JSON header."""
    view = memoryview(data)
    if not data.startswith(MAGIC):
        if data and MAGIC.startswith(data):
            raise _refuse(path, f"is truncated ({len(data)} bytes): fit the model again")
        if data[:1] == b"\x80":
            raise _refuse(
                path, "is a Python pickle, not an nbclass model; nbclass never loads pickles"
            )
        raise _refuse(path, "is not an nbclass model file (no nbclass magic number)")
    if len(data) < PREFIX.size:
        raise _refuse(path, f"is truncated ({len(data)} bytes): fit the model again")
    _magic, version, header_length, header_crc, size, reserved = PREFIX.unpack_from(view)
    if version != FORMAT_VERSION:
        raise _refuse(
            path,
            f"has model format version {version}; this nbclass {__version__} reads version "
            f"{FORMAT_VERSION}: fit the model again with this version",
        )
    if len(data) < size:
        raise _refuse(path, f"is truncated ({len(data)} of {size} bytes): fit the model again")
    if len(data) > size:
        raise _refuse(path, f"is corrupted ({len(data) - size} bytes after its end)")
    if reserved != 0:
        raise _refuse(path, "is corrupted (reserved bytes are not zero): fit the model again")
    header_bytes = view[PREFIX.size : PREFIX.size + header_length]
    if (
        len(header_bytes) != header_length
        or zlib.crc32(header_bytes) != header_crc
    ):
        raise _refuse(path, "is corrupted (header checksum mismatch): fit the model again")
    try:
        header = json.loads(bytes(header_bytes))
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
        if header.get("format") != FORMAT_NAME or header.get("version") != FORMAT_VERSION:
            raise ValueError("format name")
        arrays = _read_sections(view, header, path)
        return _build(header, arrays), header
    except ModelFileError:
        raise
    except RecursionError:
        raise _refuse(path, "is not a valid nbclass model (the header nests too deeply)") from None
    except (
        KeyError,
        TypeError,
        ValueError,
        IndexError,
        AttributeError,
        UnicodeDecodeError,
        NbclassError,
    ) as exc:
        raise _refuse(path, f"is not a valid nbclass model ({exc})") from None


def _read_sections(view: memoryview, header: dict, path: str) -> dict[str, np.ndarray]:
    start = int(header["sections_start"])
    arrays = {}
    for entry in header["sections"]:
        name = entry["name"]
        dtype = entry["dtype"]
        if name not in SECTIONS or dtype not in DTYPES:
            raise ValueError(f"unknown section {name!r} of type {dtype!r}")
        offset, length = start + int(entry["offset"]), int(entry["length"])
        shape = tuple(int(n) for n in entry["shape"])
        if offset < start or offset + length > len(view) or length != np.dtype(
            dtype
        ).itemsize * int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"section {name!r} does not fit the file")
        chunk = view[offset : offset + length]
        if zlib.crc32(chunk) != int(entry["crc32"]):
            raise _refuse(path, f"is corrupted (section {name!r} checksum mismatch)")
        arrays[name] = np.frombuffer(chunk, dtype=dtype).reshape(shape)
    missing = [name for name in SECTIONS if name not in arrays]
    if missing:
        raise ValueError(f"missing sections {', '.join(missing)}")
    _check_padding(view, start, header["sections"], path)
    return arrays


def _check_padding(view: memoryview, start: int, sections: list, path: str) -> None:
    """Every byte between and after the sections must be a zero, so no byte goes unchecked."""
    position = start
    for entry in sorted(sections, key=lambda e: int(e["offset"])):
        offset = start + int(entry["offset"])
        if offset < position:
            raise ValueError("sections overlap")
        if bytes(view[position:offset]).strip(b"\x00"):
            raise _refuse(path, "is corrupted (non-zero padding between sections)")
        position = offset + int(entry["length"])
    if bytes(view[position:]).strip(b"\x00"):
        raise _refuse(path, "is corrupted (non-zero padding after the sections)")


def _build(header: dict, arrays: dict[str, np.ndarray]) -> Model:
    classes = tuple(str(c) for c in header["classes"])
    C, V = len(classes), int(header["n_features"])
    text = arrays["vocabulary"].tobytes().decode("utf-8")
    vocabulary = tuple(text.split("\x00")) if V else ()
    word_ptr = arrays["word_ptr"].astype(np.int64)
    class_index = arrays["class_index"].astype(np.int64)
    nnz = class_index.shape[0]
    if (
        len(vocabulary) != V
        or word_ptr.shape != (V + 1,)
        or word_ptr[0] != 0
        or word_ptr[-1] != nnz
        or (np.diff(word_ptr) < 0).any()
        or (class_index >= C).any()
        or arrays["doc_count"].shape != (nnz,)
        or arrays["token_count"].shape != (nnz,)
        or arrays["class_count"].shape != (C,)
    ):
        raise ValueError("inconsistent section sizes")
    rows = np.repeat(np.arange(V, dtype=np.int64), np.diff(word_ptr))
    doc_count = np.zeros((V, C), dtype=np.int64)
    token_count = np.zeros((V, C), dtype=np.int64)
    doc_count[rows, class_index] = arrays["doc_count"]
    token_count[rows, class_index] = arrays["token_count"]
    for name in ("doc_count", "token_count", "class_count"):
        if arrays[name].dtype == np.uint64 and (arrays[name] > np.iinfo(np.int64).max).any():
            raise ValueError("count too large")
    counts = Counts(
        classes=classes,
        vocabulary=vocabulary,
        class_count=arrays["class_count"].astype(np.int64),
        doc_count=doc_count,
        token_count=token_count,
    )
    problems = counts.problems()
    if problems:
        raise ValueError("; ".join(problems))
    tokenizer = TokenizerSettings.from_dict(header["tokenizer"])
    make_tokenizer(tokenizer)  # raises UsageError for a pattern or range that cannot work
    selection = header["selection"]
    if selection is not None and not isinstance(selection, dict):
        raise ValueError("the selection record is not an object")
    return Model(
        counts=counts,
        tokenizer=tokenizer,
        vocabulary_filter=VocabularyFilter.from_dict(header["vocabulary_filter"]).validate(),
        defaults=EstimatorSettings.from_dict(header["defaults"]).validate(),
        selection=selection,
    )


def load(path: str) -> Model:
    """Read a model file; raise :class:`ModelFileError` naming any problem."""
    return load_with_header(path)[0]


def load_with_header(path: str) -> tuple[Model, dict]:
    """Read a model file into the model and the file's JSON header."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise ModelFileError(
            f"model file {path!r} does not exist: create one with 'nbclass fit'"
        ) from None
    except IsADirectoryError:
        raise ModelFileError(f"{path!r} is a folder, not a model file") from None
    except OSError as exc:
        raise ModelFileError(f"cannot read model file {path!r}: {exc.strerror}") from None
    return loads_with_header(data, path)
