"""Reading: labelled corpora and documents to classify.

A training corpus is a folder with one subfolder per class; the subfolder's name is the
label and every regular file below it, recursively, is one document. How a document's
bytes are read and decoded (encoding, size limit, binaries, errors) is the reading policy
of :mod:`nbclass.reading.policy`; by default UTF-8, with undecodable bytes replaced by U+FFFD and
counted.

Skipped everywhere, by rule: names starting with ``.`` (hidden files and folders, editor
swap files, ``.git``) and names ending in ``~`` (editor backups), and anything that is not
a regular file (FIFOs, sockets, devices). Symbolic links to files are followed; symbolic
links to folders are not, at any depth, class folders included (a warning names them), so
a link loop cannot hang the walk and a link to ``/`` cannot make it walk the file system.
A class folder whose name is not valid UTF-8 is refused (a class name is stored as UTF-8
text), whatever the locale's encoding.

This stage knows nothing about tokens: it yields ``(source, text)`` pairs.
"""

from __future__ import annotations

import os
import stat
import sys
import warnings
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate, count
from operator import add

from ..defaults import DEFAULT_SEED
from ..errors import CorpusError, NbclassError, NbclassWarning, UsageError
from ..names import escape, is_utf8
from ..ranges import check
from .policy import (
    DEFAULT_POLICY,
    UNREADABLE,
    ReadLog,
    ReadPolicy,
    Skip,
    iter_lines,
    read_document,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    import numpy as np

ENCODING = "utf-8"
ERRORS = "replace"
STDIN = "-"


def decode(data: bytes) -> str:
    """Decode bytes as UTF-8, replacing what is not UTF-8 by U+FFFD."""
    return data.decode(ENCODING, ERRORS)


def is_skipped_name(name: str) -> bool:
    """True for hidden names (``.x``) and editor backups (``x~``), which are never documents."""
    return name.startswith(".") or name.endswith("~")


def _is_regular_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _unreadable_folder(exc: OSError):
    raise CorpusError(
        f"cannot read folder {exc.filename!r}: {exc.strerror} (it may hold any number of "
        "documents: make it readable, or move it out of the way)"
    )


def _is_url(path: str) -> bool:
    """Whether ``path`` is a URL (:mod:`nbclass.reading.storage`, imported only for one)."""
    if not isinstance(path, str) or "://" not in path:
        return False
    from .storage import is_url

    return is_url(path)


def walk_files(folder: str) -> list[str]:
    """Every regular file below ``folder``, recursively, sorted by path.

    Skips hidden names, editor backups and non-regular files; does not follow symbolic
    links to folders. A folder that cannot be listed is a :class:`CorpusError`, whatever
    the reading policy: it may hold any number of documents. ``folder`` may be a URL
    (:mod:`nbclass.reading.storage`): its objects are listed as URLs.
    """
    if _is_url(folder):
        from .storage import walk

        try:
            return walk(folder, is_skipped_name)
        except OSError as exc:
            _unreadable_folder(OSError(exc.errno, exc.strerror or str(exc), folder))
    found, folders = [], [folder]
    while folders:
        try:
            with os.scandir(folders.pop()) as listing:
                entries = list(listing)
        except OSError as exc:
            _unreadable_folder(exc)
        for entry in entries:  # (is_skipped_name inlined: a call per file costs)
            name = entry.name
            if name[0] == "." or name[-1] == "~":
                continue
            try:  # the type comes with the listing: no stat, but for a symbolic link
                if entry.is_file():  # a regular file, or a link to one
                    found.append(entry.path)
                elif entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
            except OSError:  # gone since the listing, or a broken link
                continue
    return sorted(found)


class PathList(Sequence):
    """File paths, held as one byte string: a list of str that costs no object per path.

    A corpus of a million files costs about their paths' length in bytes (plus 8 per
    path), not the ~120 bytes of a ``str`` object and its pointer each. And forked worker
    processes that take slices of it write to none of its memory: slicing a list of str
    increments every item's reference count, which copies, page by page, the whole list's
    strings into each worker as it goes (at 522,000 paths, 65 MB more in each worker by
    the end of a fit). Items are decoded as they are asked for, by slice or index.

    >>> paths = PathList(["a/1.txt", "b/\u00e9.txt", "b/2"])
    >>> len(paths), paths[1], paths[1:], list(paths) == ["a/1.txt", "b/\u00e9.txt", "b/2"]
    (3, 'b/\u00e9.txt', ['b/\u00e9.txt', 'b/2'], True)
    """

    _ENCODING = sys.getfilesystemencoding()
    _ERRORS = sys.getfilesystemencodeerrors()

    def __init__(self, paths: Iterable[str] = ()):
        self._data = bytearray()
        self._ends = array("q")  # the end of each path in _data (a NUL follows each)
        self.extend(paths)

    def extend(self, paths: Iterable[str]) -> None:
        """Add ``paths`` at the end (no path holds a NUL: the file system forbids it).

        The paths are encoded at once, joined by NULs (as :func:`os.fsencode` encodes
        each); when that takes one byte a character, each path's bytes are as many as
        its characters, and the ends come from the lengths without a Python loop."""
        paths = paths if isinstance(paths, list) else list(paths)
        if not paths:
            return
        joined = "\x00".join(paths)
        data = joined.encode(self._ENCODING, self._ERRORS)
        lengths = map(len, paths)
        if len(data) != len(joined):  # some character takes several bytes
            lengths = [len(os.fsencode(path)) for path in paths]
        # Path i ends after its own bytes, those of the paths before it and their NULs.
        self._ends.extend(map(add, accumulate(lengths), count(len(self._data))))
        self._data += data
        self._data += b"\x00"

    def __len__(self) -> int:
        return len(self._ends)

    def _span(self, start: int, end: int) -> list[str]:
        if start >= end:
            return []
        begin = self._ends[start - 1] + 1 if start else 0
        text = self._data[begin : self._ends[end - 1]].decode(self._ENCODING, self._ERRORS)
        return text.split("\x00")

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, end, step = index.indices(len(self))
            if step == 1:
                return self._span(start, end)
            return [self[i] for i in range(start, end, step)]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("PathList index out of range")
        return self._span(index, index + 1)[0]

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self), 4096):
            yield from self._span(start, min(len(self), start + 4096))

    def __eq__(self, other) -> bool:
        if isinstance(other, PathList):
            return self._data == other._data
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"PathList({list(self)!r})"


@dataclass(frozen=True)
class Corpus:
    """A labelled corpus: file paths and the index of each one's class.

    Attributes
    ----------
    classes : list of str, length C
        Class names (folder names), sorted.
    paths : sequence of str, length N
        One path per document, grouped by class, sorted within a class: a
        :class:`PathList` from :func:`list_corpus`, or a list.
    labels : list of int, length N
        ``labels[i]`` is the index into ``classes`` of document ``paths[i]``.
    texts : sequence of str, length N, or None
        The documents themselves, when they were read already (labelled lines, ``--lines``:
        ``paths`` then holds their sources, ``FILE:LINE``); ``None`` for files to read.
    """

    classes: list[str]
    paths: Sequence[str]
    labels: list[int]
    texts: Sequence[str] | None = None

    def subset(self, indices: Sequence[int]) -> Corpus:
        """The corpus of the documents at ``indices`` (same classes)."""
        return Corpus(
            classes=list(self.classes),
            paths=[self.paths[i] for i in indices],
            labels=[self.labels[i] for i in indices],
            texts=None if self.texts is None else [self.texts[i] for i in indices],
        )


def list_corpus(root: str, min_classes: int = 2) -> Corpus:
    """List a training corpus laid out as one subfolder per class.

    ``min_classes`` is 2 for a new model; documents added to (or removed from) an existing
    model, or a test corpus (``nbclass evaluate``), may all belong to one class. ``root``
    may be a URL (:mod:`nbclass.reading.storage`).

    Raises
    ------
    CorpusError
        When ``root`` is missing or not a folder, has fewer than ``min_classes`` class
        folders, or a class folder holds no documents.
    """
    class_dirs = class_folders(root)
    classes, paths, labels = [], PathList(), []
    for name, path in class_dirs:
        files = walk_files(path)
        if not files:
            raise CorpusError(empty_class(path))
        index = len(classes)
        classes.append(name)
        paths.extend(files)
        labels.extend([index] * len(files))
    check_classes(root, classes, min_classes)
    return Corpus(classes=classes, paths=paths, labels=labels)


def empty_class(path: str) -> str:
    """The error of a class folder with no documents."""
    return f"class folder {path!r} has no documents: add files to it or remove it"


def check_classes(root: str, classes: Sequence[str], min_classes: int) -> None:
    """Refuse a corpus with fewer than ``min_classes`` classes (:class:`CorpusError`)."""
    if len(classes) < min_classes:
        raise CorpusError(
            f"{root!r} has only one class folder ({classes[0]!r}): a classifier needs at "
            "least two classes"
        )


def class_folders(root: str) -> list[tuple[str, str]]:
    """``(class name, folder)`` of each class folder of the corpus ``root``, sorted by
    name: the top level of the corpus only (loose files there are warned about).

    Raises
    ------
    CorpusError
        When ``root`` is missing, not a folder, or has no class folders.
    """
    if _is_url(root):
        return _class_urls(root)
    if not os.path.exists(root):
        raise CorpusError(f"corpus folder {root!r} does not exist")
    if not os.path.isdir(root):
        raise CorpusError(
            f"{root!r} is a file, not a corpus folder: give a folder with one subfolder per class"
        )
    try:
        entries = sorted(os.listdir(root))
    except OSError as exc:
        raise CorpusError(f"cannot read corpus folder {root!r}: {exc.strerror}") from None
    class_dirs = []
    loose_files, links = 0, []
    for name in entries:
        if is_skipped_name(name):
            continue
        path = os.path.join(root, name)
        if os.path.isdir(path):
            if os.path.islink(path):  # a folder elsewhere (a link to / would walk it all)
                links.append(path)
                continue
            label = class_name(name)
            if label is None:
                raise CorpusError(
                    f"class folder name '{escape(name)}' in '{escape(root)}' is not valid "
                    "UTF-8: rename the folder (a class name is stored as UTF-8 text)"
                )
            class_dirs.append((label, path))
        elif _is_regular_file(path):
            loose_files += 1
    if links:
        warnings.warn(
            f"ignoring {len(links)} symbolic link(s) to folders in '{escape(root)}' (first "
            f"'{escape(links[0])}'): links to folders are not followed; move or copy the "
            "folder into the corpus",
            NbclassWarning,
            stacklevel=3,
        )
    return _checked_classes(root, class_dirs, loose_files)


def class_name(name: str) -> str | None:
    """The class name of the folder ``name`` (as :func:`os.listdir` gives it): its bytes
    decoded as UTF-8 whatever the locale's encoding (under ``LC_ALL=C`` without UTF-8
    mode, Python gives the bytes of ``café`` as surrogates), or None when they are not
    UTF-8.

    >>> class_name("caf\\udcc3\\udca9"), class_name("caf\\udce9"), class_name("café")
    ('café', None, 'café')
    """
    if is_utf8(name):
        return name
    try:
        return os.fsencode(name).decode("utf-8")
    except (UnicodeDecodeError, UnicodeEncodeError):
        return None


def _checked_classes(root: str, class_dirs: list, loose_files: int) -> list[tuple[str, str]]:
    if not class_dirs:
        raise CorpusError(
            f"no class folders in {root!r}: put each class's documents in a subfolder "
            "named after the class"
        )
    if loose_files:
        warnings.warn(
            f"ignoring {loose_files} file(s) at the top of {root!r}: documents belong in "
            "class folders",
            NbclassWarning,
            stacklevel=4,
        )
    return class_dirs


def _class_urls(root: str) -> list[tuple[str, str]]:
    """:func:`class_folders` of a corpus at a URL: its prefixes are the class folders."""
    from .storage import info, join, listdir

    found = info(root)
    if found is None:
        raise CorpusError(f"corpus folder {root!r} does not exist")
    if found.get("type") != "directory":
        raise CorpusError(
            f"{root!r} is a file, not a corpus folder: give a folder with one subfolder per class"
        )
    try:
        entries = listdir(root)
    except OSError as exc:
        raise CorpusError(f"cannot read corpus folder {root!r}: {exc.strerror or exc}") from None
    class_dirs = [
        (name, join(root, name)) for name, folder in entries
        if folder and not is_skipped_name(name)
    ]  # fmt: skip
    loose = sum(1 for name, folder in entries if not folder and not is_skipped_name(name))
    return _checked_classes(root, class_dirs, loose)


def read_bytes(path: str) -> bytes:
    """The bytes of one document; an unreadable file is an :class:`NbclassError` naming it."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise NbclassError(f"cannot read {path!r}: {exc.strerror}") from None


def read_file(path: str) -> str:
    """Read one document as text (see :func:`decode`)."""
    return decode(read_bytes(path))


def read_text(path: str, policy: ReadPolicy = DEFAULT_POLICY) -> str:
    """The text of a document already found readable by :func:`readable`.

    Raises
    ------
    NbclassError
        When it is no longer readable (it changed since).
    """
    log = ReadLog()
    data = read_document(path, replace(policy, on_error="fail"), log)
    if data is None:
        raise NbclassError(f"{path!r} changed while it was read: run the command again")
    return log.decode(data, policy.encoding)


def readable(corpus: Corpus, policy: ReadPolicy, log: ReadLog) -> Corpus:
    """``corpus`` without the documents ``policy`` skips (recorded in ``log``).

    For commands that read each document more than once (evaluate, cv, check), so that
    every reading sees the same documents.
    """
    paths, labels = [], []
    for path, label in zip(corpus.paths, corpus.labels):
        if read_document(path, policy, log) is not None:
            paths.append(path)
            labels.append(label)
    return Corpus(classes=list(corpus.classes), paths=paths, labels=labels)


def expand_paths(paths: Iterable[str]) -> Iterator[str]:
    """Paths to classify: files as given, folders walked recursively, ``-`` for stdin."""
    for path in paths:
        if path == STDIN:
            yield path
        elif _is_url(path):
            from .storage import info

            found = info(path)
            if found is None:
                raise NbclassError(f"{path!r} does not exist")
            if found.get("type") == "directory":
                yield from walk_files(path)
            else:
                yield path
        elif os.path.isdir(path):
            yield from walk_files(path)
        elif os.path.exists(path):
            yield path
        else:
            raise NbclassError(f"{path!r} does not exist")


def _stdin_bytes():
    from .process import standard_input

    return standard_input()


def iter_documents(
    paths: Iterable[str],
    lines: bool = False,
    policy: ReadPolicy = DEFAULT_POLICY,
    log: ReadLog | None = None,
    listed: list[tuple[str, bool]] | None = None,
) -> Iterator[tuple[str, str]]:
    """Yield ``(source, text)`` for every document named by ``paths``.

    Parameters
    ----------
    paths : iterable of str
        Files, folders (walked recursively) or ``-`` for standard input.
    lines : bool
        If true, every line of every input is a document and its source is
        ``path:lineno`` (1-based); a trailing ``\\r`` is dropped from each line.
    policy : ReadPolicy
        Encoding, size limit, binary and error rules (:mod:`nbclass.reading.policy`).
    log : ReadLog, optional
        Receives the documents skipped and the characters replaced.
    listed : list of (str, bool), optional
        :func:`list_inputs` of ``paths``, when already made (the folders are not walked
        again).
    """
    log = ReadLog() if log is None else log
    if lines and not policy.splits_lines:
        raise UsageError(
            f"--lines splits at the byte \\n, which is not a line end in {policy.encoding}: "
            "convert the input to UTF-8 first (iconv)"
        )
    for path, walked in _expand(paths) if listed is None else listed:
        if not lines:
            handle = _stdin_bytes() if path == STDIN else None
            data = read_document(path, policy, log, walked, handle)
            if data is not None:
                yield path, log.decode(data, policy.encoding)
            continue
        if path == STDIN:
            yield from iter_lines(STDIN, _stdin_bytes(), policy, log)
            continue
        try:
            handle = _open_lines(path)
        except OSError as exc:
            if policy.on_error == "fail":
                raise NbclassError(
                    f"cannot read {path!r}: {exc.strerror}; --on-error skip skips such "
                    "documents"
                ) from None
            log.skip(Skip(path, UNREADABLE, (exc.strerror or "").lower()))
            continue
        with handle:
            yield from iter_lines(path, handle, policy, log)


def _open_lines(path: str):
    """``path`` open for reading bytes (a URL through :mod:`nbclass.reading.storage`)."""
    if _is_url(path):
        from .storage import open_binary

        return open_binary(path)
    from .limits import open_named

    return os.fdopen(open_named(path), "rb")


def list_inputs(paths: Iterable[str]) -> list[tuple[str, bool]]:
    """``(path, walked)`` of every document that :func:`iter_documents` would read from
    ``paths`` (files and folders), in the same order; ``walked`` says it was found in a
    folder."""
    return list(_expand(paths))


def _expand(paths: Iterable[str]) -> Iterator[tuple[str, bool]]:
    """:func:`expand_paths`, with whether each path was found by walking a folder."""
    for path in paths:
        if path != STDIN and not _is_url(path) and os.path.isdir(path):
            yield from ((found, True) for found in walk_files(path))
        elif _is_url(path):
            from .storage import isdir

            walked = isdir(path)
            yield from ((p, walked) for p in expand_paths([path]))
        else:
            yield from ((p, False) for p in expand_paths([path]))


def stratified_folds(corpus: Corpus, k: int, seed: int = DEFAULT_SEED) -> list[np.ndarray]:
    """Indices into ``corpus.paths`` of each of ``k`` stratified folds.

    Each class's documents are sorted by path (so the split does not depend on the order
    files were listed in), shuffled with ``numpy.random.default_rng(seed)`` (classes in
    sorted order) and dealt to the folds in turn, each class starting where the previous
    one stopped: every fold holds ⌊N_c/k⌋ or ⌈N_c/k⌉ documents of class c, and the fold
    sizes differ by at most one.

    Raises
    ------
    UsageError
        When ``k`` < 2, or a class has fewer than ``k`` documents (some training set
        would lack it).
    """
    import numpy as np

    check("--folds", k)
    check("--seed", seed)
    rng = np.random.default_rng(seed)
    labels = np.asarray(corpus.labels)
    folds: list[list[int]] = [[] for _ in range(k)]
    start = 0
    for c in sorted(range(len(corpus.classes)), key=corpus.classes.__getitem__):
        members = sorted(np.flatnonzero(labels == c).tolist(), key=corpus.paths.__getitem__)
        if len(members) < k:
            raise UsageError(
                f"class {corpus.classes[c]!r} has {len(members)} document(s), fewer than "
                f"--folds {k}: use --folds {max(2, len(members))} or fewer, or add documents"
            )
        for i, p in enumerate(rng.permutation(len(members)).tolist()):
            folds[(start + i) % k].append(members[p])
        start = (start + len(members)) % k
    return [np.array(sorted(f), dtype=np.int64) for f in folds]
