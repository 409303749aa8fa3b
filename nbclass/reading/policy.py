"""The reading policy: how the bytes of one document become text, or are skipped.

Every command that reads documents applies the same :class:`ReadPolicy` (in this process,
in forked worker processes and on Dask workers, which receive it with their work):

* ``encoding`` (``--encoding``, default UTF-8): bytes that do not decode are replaced by
  U+FFFD and *counted*; the command ends with one line saying how many.
* binary documents, those with a NUL byte in their first :data:`BINARY_PROBE` bytes (the
  rule of grep and git), are skipped with a warning, unless ``binary`` is true
  (``--binary``). Encodings that write text with NUL bytes (UTF-16, UTF-32) turn the
  rule off.
* ``max_bytes`` (``--max-bytes``, default :data:`DEFAULT_MAX_BYTES`): a longer document
  is an error. Reading stops at ``max_bytes + 1`` bytes, so memory stays bounded
  whatever arrives through a pipe.
* ``on_error`` (``--on-error``): ``fail`` stops at the first unreadable, vanished or
  over-size document (an :class:`NbclassError`, exit 1); ``skip`` skips it with a
  warning and the command ends with one summary line.

Skips and replacements are recorded in a :class:`ReadLog`, which a worker returns with
its results and the main process merges, printing one warning per skipped document.
"""

from __future__ import annotations

import codecs
import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cached_property, partial

from ..errors import NbclassError, UsageError
from ..ranges import _SUFFIXES, check, parse_size  # noqa: F401 - parse_size: read here by its users
from ..records import Record, field
from .limits import open_named

BINARY_PROBE = 8 * 1024  # bytes looked at for a NUL byte, as grep and git do
CHUNK = 1024 * 1024  # bytes read at a time
# A listed file shorter than this is read in one system call (read_documents): asking for
# more costs nothing until the buffer is large enough to be a fresh mmap (256 KiB took
# four times as long a file as 64 KiB).
READ_AT_ONCE = 64 * 1024
HAS_BYTES_SAMPLE = 200  # files stat-ed to estimate the size of a longer list
# 16 MiB is several times the largest books (the King James Bible is 4.4 MB of text) and
# tokenizing it takes a few hundred MB of memory; a log file or disk image that strays
# into a corpus is refused instead of filling the memory of a cron job.
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
ON_ERROR = ("fail", "skip")

# Skip reasons, in the order the summary lists them.
UNREADABLE = "unreadable"
VANISHED = "vanished"
NOT_REGULAR = "not a regular file"
BINARY = "binary"
TOO_LARGE = "too large"
REASONS = (UNREADABLE, VANISHED, NOT_REGULAR, BINARY, TOO_LARGE)


def format_size(n: int) -> str:
    """The shortest exact size text: ``16M`` for 16 MiB, ``1000`` for 1000 bytes."""
    for suffix in "TGMK":
        if n % _SUFFIXES[suffix] == 0:
            return f"{n // _SUFFIXES[suffix]}{suffix}"
    return str(n)


class ReadPolicy(Record, frozen=True):
    """How documents are read: an input option, never stored in a model.

    Attributes
    ----------
    encoding : str
        Codec name for :meth:`bytes.decode`.
    max_bytes : int
        Largest document (or line, with ``--lines``) in bytes.
    binary : bool
        Read documents with a NUL byte as text instead of skipping them.
    on_error : str
        ``"fail"`` or ``"skip"``: what an unreadable, vanished or over-size document does.
    """

    encoding: str = "utf-8"
    max_bytes: int = DEFAULT_MAX_BYTES
    binary: bool = False
    on_error: str = "fail"

    def __post_init__(self):
        try:
            info = codecs.lookup(self.encoding)
        except LookupError:
            raise UsageError(
                f"--encoding {self.encoding!r} is not an encoding Python knows: give e.g. "
                "utf-8, latin-1, cp1252 or utf-16"
            ) from None
        if not getattr(info, "_is_text_encoding", True):
            raise UsageError(
                f"--encoding {self.encoding!r} is not a text encoding: give e.g. utf-8 or "
                "latin-1"
            )
        check("--max-bytes", self.max_bytes)
        if self.on_error not in ON_ERROR:
            raise UsageError(f"--on-error must be fail or skip, not {self.on_error!r}")

    @cached_property
    def detects_binary(self) -> bool:
        """True when a NUL byte marks a binary document (not for UTF-16 or UTF-32 text)."""
        return not self.binary and b"\0" not in "\n".encode(self.encoding)

    @property
    def utf8(self) -> bool:
        """True when the encoding is UTF-8 (whatever its spelling: utf8, UTF-8, ...)."""
        return codecs.lookup(self.encoding).name == "utf-8"

    @property
    def splits_lines(self) -> bool:
        """True when a line ends at the byte ``\\n`` (ASCII-compatible encodings)."""
        return "\n".encode(self.encoding) == b"\n"

    def is_binary(self, head: bytes) -> bool:
        return self.detects_binary and head.find(b"\0", 0, BINARY_PROBE) >= 0


DEFAULT_POLICY = ReadPolicy()


class Skip(Record, frozen=True):
    """A document that was not read: its source, the reason (one of :data:`REASONS`) and
    a detail (``"permission denied"``)."""

    source: str
    reason: str
    detail: str = ""


class ReadLog(Record):
    """What reading skipped and replaced; picklable, so a worker returns its own.

    ``on_skip``, in the main process only, is called with each :class:`Skip` as it is
    recorded (the command prints a warning).
    """

    skipped: list = field(default_factory=list)
    replaced: int = 0  # undecodable byte sequences replaced by U+FFFD
    replaced_docs: int = 0  # documents with at least one
    on_skip: Callable | None = field(default=None, repr=False, compare=False)

    def skip(self, skip: Skip) -> None:
        self.skipped.append(skip)
        if self.on_skip is not None:
            self.on_skip(skip)

    def add(self, other: ReadLog | None) -> None:
        """Merge a worker's log into this one."""
        if other is None:
            return
        for skip in other.skipped:
            self.skip(skip)
        self.replaced += other.replaced
        self.replaced_docs += other.replaced_docs

    def decode(self, data: bytes, encoding: str) -> str:
        """``data`` decoded, undecodable sequences replaced by U+FFFD and counted."""
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            pass
        counter = _counter()
        counter.n = 0
        text = data.decode(encoding, _COUNT_ERRORS)
        self.replaced += counter.n
        self.replaced_docs += 1
        return text

    def summary(self, policy: ReadPolicy) -> list[str]:
        """The lines that end a command: what was skipped, what was replaced (or none)."""
        lines = []
        if self.skipped:
            n = len(self.skipped)
            parts = []
            for reason in REASONS:
                these = [s for s in self.skipped if s.reason == reason]
                if not these:
                    continue
                details = sorted({s.detail for s in these if s.detail})
                why = f" ({', '.join(details)})" if details else ""
                parts.append(f"{len(these)} {reason}{why}")
            lines.append(
                f"nbclass: skipped {n} document{'s' * (n != 1)}: {', '.join(parts)}"
            )
        if self.replaced:
            docs = self.replaced_docs
            lines.append(
                f"nbclass: replaced {self.replaced} undecodable byte sequence"
                f"{'s' * (self.replaced != 1)} by U+FFFD in {docs} document{'s' * (docs != 1)} "
                f"(not {policy.encoding}: give --encoding if they are in another encoding)"
            )
        return lines


_COUNT_ERRORS = "nbclass-count-replace"
_counters = []  # the thread-local counter of replacements, made when first needed


def _counter():
    """This thread's count of replacements (an object with ``n``); threading is
    imported only when a document fails to decode (one document starts faster)."""
    if not _counters:
        import threading

        _counters.append(threading.local())
    return _counters[0]


def _count_replace(exc: UnicodeDecodeError):
    _counter().n += 1
    return "\ufffd", exc.end


codecs.register_error(_COUNT_ERRORS, _count_replace)


def _reason(exc: OSError, walked: bool) -> tuple[str, str]:
    detail = (exc.strerror or type(exc).__name__).lower()
    if walked and exc.errno == errno.ENOENT:
        return VANISHED, "removed after the corpus was listed"
    return UNREADABLE, detail


def has_bytes(paths: Iterable[str], minimum: int) -> bool:
    """Whether the files at ``paths`` hold at least ``minimum`` bytes together (sizes from
    ``stat``, stopping as soon as they do; a file that cannot be read counts nothing).

    For a list of more than ``HAS_BYTES_SAMPLE`` paths, the answer is estimated from
    that many spread evenly through it: a corpus of many small files is not stat-ed
    whole before it is read."""
    if isinstance(paths, Sequence) and len(paths) > HAS_BYTES_SAMPLE:
        step = len(paths) / HAS_BYTES_SAMPLE
        sample = [paths[int(i * step)] for i in range(HAS_BYTES_SAMPLE)]
        return has_bytes(sample, -(-minimum * HAS_BYTES_SAMPLE // len(paths)))
    total = 0
    for path in paths:
        if total >= minimum:
            return True
        try:
            total += os.path.getsize(path)
        except OSError:
            pass
    return total >= minimum


def mean_bytes(paths: Sequence[str], sample: int = 32) -> float:
    """The mean size of the files at ``paths`` (0.0 for none), from ``stat`` of at most
    ``sample`` of them spread evenly through the list; a file that cannot be stat-ed
    counts nothing.

    >>> mean_bytes([])
    0.0
    """
    if not paths:
        return 0.0
    step = max(1.0, len(paths) / sample)
    total = n = 0
    for i in range(min(len(paths), sample)):
        n += 1
        try:
            total += os.path.getsize(paths[int(i * step)])
        except OSError:
            pass
    return total / n


_WALKED_FLAGS = os.O_RDONLY | getattr(os, "O_NOCTTY", 0) | os.O_NONBLOCK


def read_document(
    path: str, policy: ReadPolicy, log: ReadLog, walked: bool = True, handle=None
) -> bytes | None:
    """The bytes of one document, or None when it is skipped (recorded in ``log``).

    ``walked`` says the path was found by listing a folder: then it must still be a
    regular file when opened (a FIFO put in its place is skipped, never waited on), and
    a file gone since the listing is *vanished*. A path the user named is read whatever
    it is (``<(command)`` is a pipe). ``handle`` reads an open binary stream instead
    (standard input), named ``path``.

    Raises
    ------
    NbclassError
        Under ``on_error="fail"``, for an unreadable, vanished or over-size document.
    """
    try:
        if handle is not None:
            return _read_limited(path, handle, policy, log)
        if isinstance(path, str) and "://" in path:  # maybe a URL: fsspec, imported only then
            from .storage import is_url

            if is_url(path):
                return _read_url(path, policy, log)
        # Opening a FIFO found by a listing must not wait for a writer; one the user
        # named is waited on for a bounded time (limits.open_named).
        fd = os.open(path, _WALKED_FLAGS) if walked else open_named(path)
        try:
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode):
                return _read_file(path, fd, info.st_size, policy, log)
            if walked:
                log.skip(Skip(path, NOT_REGULAR, "changed while the corpus was read"))
                return None
            stream, fd = os.fdopen(fd, "rb", buffering=0), None  # the stream closes it
            with stream:
                return _read_limited(path, stream, policy, log)
        finally:
            if fd is not None:
                os.close(fd)
    except OSError as exc:
        if policy.on_error == "fail":
            raise NbclassError(
                f"cannot read {path!r}: {exc.strerror}; --on-error skip skips such documents"
            ) from None
        log.skip(Skip(path, *_reason(exc, walked)))
        return None


def read_documents(
    paths: Sequence[str], policy: ReadPolicy, log: ReadLog
) -> Iterator[tuple[int, bytes]]:
    """``(i, bytes)`` of each document ``paths[i]`` that :func:`read_document` reads,
    found by listing folders (``walked``), in order: the same bytes, skips and errors,
    in fewer system calls and less Python a file.

    A file shorter than :data:`READ_AT_ONCE` bytes (and ``max_bytes``) costs an
    ``open``, one ``pread`` and a ``close``: no ``fstat``. A regular file's read comes
    back short only at its end, so a read shorter than asked is the whole file; and
    ``pread`` reads only what can seek, so a FIFO or socket put in the file's place
    fails it (as a folder does). Every other case (a read that fills the buffer, an
    empty one, an error, a URL) is :func:`read_document`'s, which opens the path again
    and says what it is.
    """
    want = min(READ_AT_ONCE, policy.max_bytes + 1)
    probe = policy.detects_binary
    open_, pread, close = os.open, os.pread, os.close
    for i, path in enumerate(paths):
        data = None
        if "://" not in path:
            try:
                fd = open_(path, _WALKED_FLAGS)
                try:
                    data = pread(fd, want, 0)
                finally:
                    close(fd)
            except OSError:
                data = None
        if data and len(data) < want:
            if probe and data.find(b"\0", 0, BINARY_PROBE) >= 0:
                log.skip(Skip(path, BINARY, ""))
                continue
            yield i, data
            continue
        data = read_document(path, policy, log)
        if data is not None:
            yield i, data


def _read_url(path: str, policy: ReadPolicy, log: ReadLog) -> bytes | None:
    """:func:`_read_limited` of the object at the URL ``path`` (:mod:`nbclass.reading.storage`);
    a storage error is an OSError naming what went wrong."""
    from .storage import open_binary, why

    try:
        with open_binary(path) as handle:
            return _read_limited(path, handle, policy, log)
    except NbclassError:
        raise
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT)) from None
    except Exception as exc:  # the filesystem's own errors (network, credentials)
        code = exc.errno if isinstance(exc, OSError) and exc.errno else errno.EIO
        raise OSError(code, why(exc)) from None


def _read_file(path: str, fd: int, size: int, policy: ReadPolicy, log: ReadLog) -> bytes | None:
    """:func:`_read_limited` of a regular file of ``size`` bytes (as ``fstat`` said), open
    as ``fd``, with ``os.read`` and no file object: usually one read of one byte more
    than its size, which comes back short, at the file's end (a regular file's read is
    only short there); a file that has grown since ``fstat`` is read on to its end."""
    if size < policy.max_bytes:
        data = os.read(fd, size + 1)
        if len(data) <= size:
            if policy.is_binary(data):
                log.skip(Skip(path, BINARY, ""))
                return None
            return data
        os.lseek(fd, 0, os.SEEK_SET)
    return _read_limited(path, fd, policy, log, first=min(size, policy.max_bytes) + 1)


def _read_limited(
    path: str, source, policy: ReadPolicy, log: ReadLog, first: int = CHUNK
) -> bytes | None:
    """The bytes of ``source`` (a binary stream, or a file descriptor), at most
    ``max_bytes``, read ``first`` bytes then ``CHUNK`` at a time; None when skipped."""
    read = source.read if hasattr(source, "read") else partial(os.read, source)
    limit, parts, total, want = policy.max_bytes, [], 0, first
    while total <= limit:
        chunk = read(min(want, limit + 1 - total))
        if not chunk:
            break
        if not total and policy.is_binary(chunk):
            log.skip(Skip(path, BINARY, ""))
            return None
        parts.append(chunk)
        total += len(chunk)
        want = CHUNK
    if total > limit:
        parts.clear()
        return _too_large(path, policy, log)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _too_large(path: str, policy: ReadPolicy, log: ReadLog) -> None:
    limit = format_size(policy.max_bytes)
    if policy.on_error == "fail":
        raise NbclassError(
            f"{path!r} is larger than --max-bytes {limit}: give a larger --max-bytes, or "
            "--on-error skip to skip such documents"
        )
    log.skip(Skip(path, TOO_LARGE, f"over {limit}"))
    return None


def iter_lines(
    source: str, handle, policy: ReadPolicy, log: ReadLog
) -> Iterator[tuple[str, str]]:
    """``(source:lineno, text)`` per line of the binary stream ``handle``.

    A line is at most ``max_bytes`` bytes (without its ``\\n``; a trailing ``\\r`` is
    dropped too, and under UTF-8 a leading byte-order mark, which editors and other tools
    write at the start of a file, and ``cat`` of such files at the start of a line);
    a longer one is never held in memory, and is an error or skipped as the policy says.
    A stream with a NUL byte in what is read first (up to :data:`BINARY_PROBE` bytes) is
    binary and skipped whole. Output is produced as lines
    arrive, so a slow pipe is classified line by line.
    """
    limit = policy.max_bytes
    read = getattr(handle, "read1", handle.read)
    pending = bytearray()
    too_long = False
    lineno = 0
    first = True
    bom = policy.utf8

    def finish(raw: bytes | None):
        where = f"{source}:{lineno}"
        if raw is None:
            _too_large(where, policy, log)
            return None
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if bom and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        return where, log.decode(raw, policy.encoding)

    while True:
        chunk = read(CHUNK)
        if not chunk:
            break
        if first:
            first = False
            if policy.is_binary(chunk):
                log.skip(Skip(source, BINARY, ""))
                return
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if not too_long:
                    pending += chunk[start:]
                    if len(pending) > limit:
                        too_long = True
                        pending.clear()
                break
            lineno += 1
            if not too_long:
                pending += chunk[start:end]
            line = finish(None if too_long or len(pending) > limit else bytes(pending))
            pending.clear()
            too_long = False
            if line is not None:
                yield line
            start = end + 1
    if pending or too_long:
        lineno += 1
        line = finish(None if too_long else bytes(pending))
        if line is not None:
            yield line
