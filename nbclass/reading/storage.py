"""Object storage: corpora, ``--lines`` files, models and output folders at URLs.

A path with a scheme (``s3://bucket/corpus``, ``gs://...``, ``file:///srv/corpus``,
``memory://...``) is read and written through fsspec, an optional dependency
(``pip install 'nbclass[storage]'``, plus the filesystem of the scheme: ``s3fs`` for
``s3://``, ``gcsfs`` for ``gs://``). Anything else is a local path, handled by the
standard library as before: this module imports fsspec only when a URL is met, so a
local run neither needs it nor pays for it.

Credentials and endpoints come from each machine's own environment, as the filesystem
reads them (for S3: ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_ENDPOINT_URL``, ``~/.aws``), or from fsspec's configuration
(``FSSPEC_S3_ENDPOINT_URL`` and the like). Dask workers read and write the same URLs
with their own.

Folders are prefixes: a corpus folder ``s3://b/train`` holds a class folder for each
``s3://b/train/NAME/`` prefix. The reading policy (:mod:`nbclass.reading.policy`) applies to
objects as to files: size limit, binaries, encodings, errors.

Every request to a store is bounded in time: one that has not finished within
``NBCLASS_STORAGE_TIMEOUT`` seconds (60 by default), a server that accepts and never
answers or sends a byte a second included, is an OSError (``ETIMEDOUT``) that the command
reports in one line. Objects are read in ranges of at most :data:`BLOCK` bytes, each a
request of its own, so the bound holds for an object of any size, and no more than the
reader asks for is ever held (a model, for instance, is read up to the size its header
declares). The bound applies to the filesystems that fsspec runs asynchronously (``s3://``,
``gs://``, ``http://``, ``az://``...); ``file://`` and ``memory://`` are local.
"""

from __future__ import annotations

import errno
import io
import os
import re
from contextlib import contextmanager

from ..errors import NbclassError, UsageError

INSTALL = "pip install 'nbclass[storage]'"
TIMEOUT_VARIABLE = "NBCLASS_STORAGE_TIMEOUT"
DEFAULT_TIMEOUT = 60.0  # seconds one request to a store may take
BLOCK = 4 * 1024 * 1024  # bytes of an object read by one request
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(path: str) -> bool:
    """True for ``scheme://...`` (read through fsspec), false for a local path.

    >>> is_url("s3://bucket/key"), is_url("file:///tmp/x"), is_url("corpus/a"), is_url("-")
    (True, True, False, False)
    """
    return isinstance(path, str) and _URL.match(path) is not None


def filesystem(url: str):
    """``(fs, path)``: the fsspec filesystem of ``url`` and the path within it.

    Raises
    ------
    UsageError
        When fsspec, or the filesystem of the URL's scheme, is not installed, or the
        scheme is unknown.
    """
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise UsageError(
            f"{url}: reading URLs needs fsspec, which is not installed: {INSTALL}"
        ) from None
    try:
        return url_to_fs(url)
    except ImportError as exc:  # fsspec knows the scheme, its package is missing
        raise UsageError(f"{url}: {_first_line(exc)}") from None
    except ValueError as exc:  # "Protocol not known: xyz"
        raise UsageError(f"{url}: {_first_line(exc)} (fsspec has no filesystem for it)") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def why(exc: BaseException) -> str:
    """A storage error in a few words, lower case (``no such file or directory``)."""
    if isinstance(exc, FileNotFoundError):
        return "no such file or directory"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, IsADirectoryError):
        return "is a folder"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[:1].lower() + exc.strerror[1:]
    return f"{type(exc).__name__}: {_first_line(exc)}"


@contextmanager
def errors():
    """Turn the filesystem's own exceptions into OSError with ``errno`` and ``strerror``
    (a missing object is FileNotFoundError, as for a local file)."""
    try:
        yield
    except NbclassError:
        raise
    except FileNotFoundError as exc:
        if exc.strerror:
            raise
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT)) from None
    except OSError as exc:
        if exc.strerror:
            raise
        raise OSError(exc.errno or errno.EIO, why(exc)) from None
    except Exception as exc:  # network, credentials, the service's own errors
        raise OSError(errno.EIO, why(exc)) from None


def storage_timeout() -> float:
    """Seconds one request to a store may take: ``NBCLASS_STORAGE_TIMEOUT``, else 60 (more
    than 0, at most a day)."""
    from .limits import seconds_variable

    return seconds_variable(TIMEOUT_VARIABLE, DEFAULT_TIMEOUT)


def timed(fs, method: str, *args, **kwargs):
    """``fs.method(*args, **kwargs)``, given at most :func:`storage_timeout` seconds when
    the filesystem is asynchronous; running out of time is ``OSError(ETIMEDOUT)``."""
    seconds = storage_timeout()
    if getattr(fs, "async_impl", False):
        kwargs["timeout"] = seconds
    try:
        return getattr(fs, method)(*args, **kwargs)
    except TimeoutError as exc:  # fsspec's FSTimeoutError is one; so is asyncio's
        if isinstance(exc, OSError) and exc.strerror:
            raise
        raise OSError(
            errno.ETIMEDOUT,
            f"no answer within {seconds:g} s (the store is slow or does not answer; "
            f"{TIMEOUT_VARIABLE} sets the wait)",
        ) from None


def join(url: str, *names: str) -> str:
    """``url`` followed by ``/name`` for each name."""
    return "/".join([url.rstrip("/"), *names])


def _relative(base: str, path: str) -> str:
    return path[len(base) :].lstrip("/")


def info(url: str) -> dict | None:
    """fsspec's ``info`` of ``url`` (``type`` is ``file`` or ``directory``), None if absent."""
    fs, path = filesystem(url)
    try:
        return timed(fs, "info", path)
    except FileNotFoundError:
        return None
    except Exception as exc:  # credentials, network: not the user's path
        raise NbclassError(f"cannot read {url!r}: {why(exc)}") from None


def isdir(url: str) -> bool:
    found = info(url)
    return found is not None and found.get("type") == "directory"


def exists(url: str) -> bool:
    return info(url) is not None


def listdir(url: str) -> list[tuple[str, bool]]:
    """``(name, is_folder)`` of each entry directly in the folder ``url``, sorted by name.

    Raises
    ------
    OSError
        When it cannot be listed.
    """
    fs, path = filesystem(url)
    with errors():
        entries = timed(fs, "ls", path, detail=True)
    base = path.rstrip("/")
    found = {}
    for entry in entries:
        name = _relative(base, entry["name"].rstrip("/"))
        if name and "/" not in name:
            found[name] = entry.get("type") == "directory"
    return sorted(found.items())


def walk(url: str, skipped) -> list[str]:
    """Every file below the folder ``url``, recursively, as URLs in the form of ``url``,
    sorted; a file with any part of its name below ``url`` for which ``skipped(part)`` is
    true is left out (hidden names, editor backups).

    Raises
    ------
    OSError
        When the folder cannot be listed.
    """
    fs, path = filesystem(url)
    base = path.rstrip("/")
    with errors():
        found = timed(fs, "find", path, detail=True)
    prefix = url.rstrip("/")
    files = []
    for name, entry in found.items():
        if entry.get("type") != "file":
            continue
        relative = _relative(base, name)
        if not relative or any(skipped(part) for part in relative.split("/")):
            continue
        files.append(f"{prefix}/{relative}")
    return sorted(files)


def open_binary(url: str, mode: str = "rb"):
    """The object at ``url`` open for reading bytes (``mode`` ``rb``): a buffered stream
    whose every request is bounded in time (:class:`RangeReader`).

    Raises
    ------
    OSError
        When it cannot be found or read.
    """
    if mode != "rb":
        raise ValueError(f"open_binary reads only (mode 'rb', not {mode!r})")
    fs, path = filesystem(url)
    with errors():
        total = int(timed(fs, "size", path))
    return io.BufferedReader(RangeReader(fs, path, total), buffer_size=BLOCK)


class RangeReader(io.RawIOBase):
    """The ``size`` bytes of the object ``path`` of ``fs``, read a range at a time, each
    range one request bounded by :func:`timed` (a stalled store cannot hold a read)."""

    def __init__(self, fs, path: str, size: int):
        super().__init__()
        self.fs, self.path, self.size, self.position = fs, path, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def readinto(self, buffer) -> int:
        end = min(self.size, self.position + min(len(buffer), BLOCK))
        if end <= self.position:
            return 0
        with errors():
            data = timed(self.fs, "cat_file", self.path, start=self.position, end=end)
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)


def read_range(url: str, start: int, end: int) -> bytes:
    """Bytes ``start`` to ``end`` (fewer at the end of the object) of the object at
    ``url``, read a block at a time; OSError when they cannot be read."""
    fs, path = filesystem(url)
    parts = []
    while start < end:
        stop = min(end, start + BLOCK)
        with errors():
            data = timed(fs, "cat_file", path, start=start, end=stop)
        if not data:
            break
        parts.append(data)
        start += len(data)
    return b"".join(parts)


def write_bytes(url: str, data: bytes) -> None:
    """Write ``data`` as the object at ``url`` (one put: readers see it whole or not at all
    on object stores); OSError when it cannot be written."""
    fs, path = filesystem(url)
    with errors():
        timed(fs, "pipe_file", path, data)


def remove(url: str) -> None:
    """Remove the object at ``url`` (nothing when it is absent); OSError when it cannot."""
    fs, path = filesystem(url)
    try:
        with errors():
            timed(fs, "rm_file", path)
    except FileNotFoundError:
        pass


def size(url: str) -> int:
    """The size of the object at ``url`` in bytes; OSError when it cannot be read."""
    fs, path = filesystem(url)
    with errors():
        return int(timed(fs, "size", path))


def makedirs(url: str) -> None:
    fs, path = filesystem(url)
    with errors():
        timed(fs, "makedirs", path, exist_ok=True)
