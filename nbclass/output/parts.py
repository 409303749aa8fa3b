"""``predict --output-dir``: predictions written as numbered part files, not to stdout.

Each part of the input (a batch locally, a part on a Dask cluster, where each worker
writes its own) becomes one file ``part-NNNNNN.tsv`` (or ``.jsonl``) in the folder, in
the order of the input, so that the files sorted by name and concatenated are what
``predict`` prints to stdout. The folder may be a URL (:mod:`nbclass.reading.storage`).

A part file appears whole or not at all: it is written under a hidden temporary name
and renamed (an object store's put is whole already). A run that fails removes the parts
it wrote (:func:`remove_parts`), so that it can be run again into the same folder.
"""

from __future__ import annotations

import os

from ..errors import NbclassError, UsageError

PREFIX = "part-"
DIGITS = 6


def part_name(index: int, fmt: str, digits: int = DIGITS) -> str:
    """The name of part ``index``: zero-padded, so that names sort in part order.

    >>> part_name(7, "tsv"), part_name(1234567, "jsonl", 7)
    ('part-000007.tsv', 'part-1234567.jsonl')
    """
    return f"{PREFIX}{index:0{digits}d}.{fmt}"


def digits_for(parts: int) -> int:
    """Digits of the part numbers of ``parts`` parts (at least :data:`DIGITS`)."""
    return max(DIGITS, len(str(max(0, parts - 1))))


def _is_url(path: str) -> bool:
    if not isinstance(path, str) or "://" not in path:
        return False
    from ..reading.storage import is_url

    return is_url(path)


def prepare(folder: str) -> str:
    """Create ``folder`` if needed and return it as workers must be given it (a local
    path made absolute, a URL as it is).

    Raises
    ------
    UsageError
        When ``folder`` is a file, or already holds part files (a new run's parts would
        mix with them).
    NbclassError
        When it cannot be created.
    """
    if _is_url(folder):
        from ..reading.storage import info, listdir, makedirs

        found = info(folder)
        if found is not None and found.get("type") != "directory":
            raise UsageError(f"--output-dir {folder!r} is a file: give a folder")
        try:
            makedirs(folder)
            names = [name for name, _ in listdir(folder)] if found is not None else []
        except OSError as exc:
            raise NbclassError(f"cannot write to {folder!r}: {exc.strerror}") from None
        target = folder
    else:
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise UsageError(f"--output-dir {folder!r} is a file: give a folder")
        try:
            os.makedirs(folder, exist_ok=True)
            names = os.listdir(folder)
        except OSError as exc:
            raise NbclassError(f"cannot write to {folder!r}: {exc.strerror}") from None
        target = os.path.abspath(folder)
    if any(name.startswith(PREFIX) for name in names):
        raise UsageError(
            f"--output-dir {folder!r} already holds part files: remove them or give a new "
            "folder (the parts of two runs would mix)"
        )
    return target


def write_part(folder: str, name: str, lines) -> None:
    """Write ``lines`` (each followed by a newline) as the file ``name`` in ``folder``.

    Raises
    ------
    NbclassError
        When it cannot be written.
    """
    data = "".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape")
    if _is_url(folder):
        from ..reading.storage import join, write_bytes

        path = join(folder, name)
        try:
            write_bytes(path, data)
        except OSError as exc:
            raise NbclassError(f"cannot write {path!r}: {exc.strerror}") from None
        return
    path = os.path.join(folder, name)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")  # hidden: not a part file
    try:
        try:
            with open(tmp, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise NbclassError(f"cannot write {path!r}: {exc.strerror}") from None


def remove_parts(folder: str, names) -> None:
    """Remove the part files ``names`` of ``folder`` that exist (those of a run that
    failed); a part that cannot be removed is left as it is."""
    for name in names:
        if _is_url(folder):
            from ..reading.storage import remove

            try:
                remove(f"{folder.rstrip('/')}/{name}")
            except OSError:
                pass
            continue
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass
