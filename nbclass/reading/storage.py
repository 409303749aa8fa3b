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
"""

from __future__ import annotations

import errno
import os
import re
from contextlib import contextmanager

from ..errors import NbclassError, UsageError

INSTALL = "pip install 'nbclass[storage]'"
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
        return exc.strerror.lower()
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


def join(url: str, *names: str) -> str:
    """``url`` followed by ``/name`` for each name."""
    return "/".join([url.rstrip("/"), *names])


def _relative(base: str, path: str) -> str:
    return path[len(base) :].lstrip("/")


def info(url: str) -> dict | None:
    """fsspec's ``info`` of ``url`` (``type`` is ``file`` or ``directory``), None if absent."""
    fs, path = filesystem(url)
    try:
        return fs.info(path)
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
        entries = fs.ls(path, detail=True)
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
        found = fs.find(path, detail=True)
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
    """The object at ``url`` open in binary ``mode`` (``rb`` or ``wb``)."""
    fs, path = filesystem(url)
    with errors():
        return fs.open(path, mode)


def read_bytes(url: str) -> bytes:
    """The whole object at ``url``; OSError when it cannot be read."""
    with open_binary(url) as handle, errors():
        return handle.read()


def write_bytes(url: str, data: bytes) -> None:
    """Write ``data`` as the object at ``url`` (one put: readers see it whole or not at all
    on object stores); OSError when it cannot be written."""
    fs, path = filesystem(url)
    with errors():
        fs.pipe_file(path, data)


def remove(url: str) -> None:
    """Remove the object at ``url`` (nothing when it is absent); OSError when it cannot."""
    fs, path = filesystem(url)
    try:
        with errors():
            fs.rm_file(path)
    except FileNotFoundError:
        pass


def size(url: str) -> int:
    """The size of the object at ``url`` in bytes; OSError when it cannot be read."""
    fs, path = filesystem(url)
    with errors():
        return int(fs.size(path))


def makedirs(url: str) -> None:
    fs, path = filesystem(url)
    with errors():
        fs.makedirs(path, exist_ok=True)
