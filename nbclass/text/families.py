"""Feature families: the kinds of token a model counts, told apart by the entry alone.

A tokenizer can make tokens of several kinds at once: words, and with ``--ngram-range
1,2`` word pairs (two words joined by a space). They are rows of the same count tables.
fit's choice (:mod:`nbclass.models.choosing`) compares **feature sets**, each a tuple of
family names, as row masks over that one count: a set's model is the counts of its rows,
exactly what a fit counting only those tokens would hold (a pair's counts never touch a
word's row). The chosen set is stored by name in the model's vocabulary filter and its
rows are found again from the vocabulary on every path, so no mask is stored.

A family is a registry entry (:data:`FAMILIES`, :func:`register`): its name, what it
is, and how its rows are recognised from the vocabulary (a bool mask, shape (V,)). A
family marked ``optional`` is one the choice may leave out: the candidate sets
(:func:`feature_sets`) are the families that are not optional, then each optional
family present added in turn, simplest first. A count of ``--unspaced all`` (runs and
single characters of the scripts written without spaces, both) is the exception: its
sets are the words with one of the tokenizations of those scripts
(:data:`UNSPACED_SETS`), which are alternatives, not additions.

The symbols of ``--symbols`` (single word characters and runs of punctuation,
:func:`nbclass.text.tokenizer.symbol_tokens`) are told apart by the entry too (one word
character, or none), but only in the vocabulary of a tokenizer with ``symbols`` on
(``symbols=True`` below): a model of another token pattern (``(?u)\\w+``, say) keeps
its single characters among its words, as it always did.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .tokenizer import FAMILY_NAMES, UNSPACED_RANGES


@dataclass(frozen=True)
class Family:
    """One kind of token.

    Attributes
    ----------
    name : str
        Its name in the model file and in fit's table (no space, no ``+``).
    what : str
        What its tokens are, for people.
    rows : callable
        ``rows(vocabulary, spaces, unspaced, symbols)`` -> bool ndarray of shape (V,):
        which entries are its tokens; ``spaces`` (int64, shape (V,)) is the number of
        spaces of each entry, ``unspaced`` the pair of masks ``(runs, characters)`` of
        :func:`_unspaced`, ``symbols`` the mask of
        :func:`nbclass.text.runs.symbol_rows` (computed once for
        every family).
    optional : bool
        Whether the choice may leave it out.
    """

    name: str
    what: str
    rows: Callable[
        [Sequence[str], np.ndarray, tuple[np.ndarray, np.ndarray], np.ndarray], np.ndarray
    ]
    optional: bool = True


FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add ``family`` to the registry (after those there: the order of the candidates)."""
    if not family.name or " " in family.name or "+" in family.name:
        raise ValueError(f"a family's name has no space and no '+': {family.name!r}")
    FAMILIES[family.name] = family
    return family


def holds_unspaced(vocabulary: Sequence[str]) -> bool:
    """Whether an entry of ``vocabulary`` holds a character of a script written without
    spaces (:data:`nbclass.text.tokenizer.UNSPACED_RANGES`).

    >>> holds_unspaced(["ab", "été"]), holds_unspaced(["ab", "x日"])
    (False, True)
    """
    joined = "\x00".join(vocabulary)
    if joined.isascii():
        return False
    from .runs import is_unspaced

    points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    return bool(is_unspaced(points).any())


def _holding_unspaced(vocabulary: Sequence[str], encoded) -> np.ndarray:
    """Which entries hold a character of a script written without spaces, bool (V,)
    (``encoded``: the vocabulary's :func:`nbclass.text.runs.entry_points`)."""
    points, ends = encoded
    if points.dtype == np.uint8:  # all ASCII
        return np.zeros(len(vocabulary), dtype=bool)
    at = _entry_of(_unspaced_points(points), ends)
    return np.bincount(at, minlength=len(vocabulary)) > 0


def _unspaced_points(points: np.ndarray) -> np.ndarray:
    """The positions of the code points of ``points`` (uint32) of the scripts written
    without spaces, ascending: those at or above the first such script's first code
    point looked up alone (a corpus's points are mostly below it, 20 Newsgroups with
    pairs' 14 million: 5 ms against 26 ms for the look-up of every one)."""
    from .runs import is_unspaced

    above = np.flatnonzero(points >= min(low for low, _ in UNSPACED_RANGES))
    return above[is_unspaced(points[above])]


def _unspaced(
    vocabulary: Sequence[str], spaces: np.ndarray, encoded
) -> tuple[np.ndarray, np.ndarray]:
    """``(runs, characters)``, bool of shape (V,): the entries that are two or more, or
    one, characters of the scripts written without spaces and nothing else, when the
    vocabulary holds both (only ``--unspaced all`` counts both); else none. ``encoded``:
    the vocabulary's :func:`nbclass.text.runs.entry_points`."""
    V = len(vocabulary)
    none = np.zeros(V, dtype=bool)
    points, ends = encoded
    if points.dtype == np.uint8:  # all ASCII
        return none, none
    unspaced = _unspaced_points(points)
    if not unspaced.size:
        return none, none
    alone = np.bincount(_entry_of(unspaced, ends), minlength=V)
    return _runs_and_characters(alone, np.diff(ends, prepend=-1) - 1, spaces)


def _runs_and_characters(alone: np.ndarray, length: np.ndarray, spaces: np.ndarray):
    """:func:`_unspaced`'s ``(runs, characters)`` from each entry's characters of the
    scripts written without spaces (``alone``), its characters (``length``) and its
    spaces, each of shape (V,): the entries of those characters alone, two or more and
    one, where the vocabulary holds both; else none."""
    only = (alone == length) & (length > 0) & (spaces == 0)
    runs, characters = only & (length >= 2), only & (length == 1)
    if not (runs.any() and characters.any()):
        none = np.zeros(length.size, dtype=bool)
        return none, none
    return runs, characters


register(Family(
    "words", "single tokens",
    lambda v, spaces, unspaced, symbols: (spaces == 0) & ~np.logical_or(*unspaced) & ~symbols,
    optional=False,
))  # fmt: skip
register(Family(
    "runs", "runs of two or more characters of a script written without spaces "
    "(--unspaced all)", lambda v, spaces, unspaced, symbols: unspaced[0],
))  # fmt: skip
register(Family(
    "characters", "single characters of a script written without spaces (--unspaced all)",
    lambda v, spaces, unspaced, symbols: unspaced[1],
))  # fmt: skip
register(Family(
    "symbols", "single word characters and runs of punctuation and other symbols (--symbols)",
    lambda v, spaces, unspaced, symbols: symbols,
))  # fmt: skip
register(Family(
    "pairs", "two adjacent tokens joined by a space (--ngram-range 1,2; --unspaced pairs, all)",
    lambda v, spaces, unspaced, symbols: spaces == 1,
))  # fmt: skip
register(Family(
    "ngrams", "three or more consecutive words",
    lambda v, spaces, unspaced, symbols: spaces >= 2,
))  # fmt: skip


if tuple(FAMILIES) != FAMILY_NAMES:  # the names a model file's features are checked against
    raise RuntimeError("the feature families' names differ from FAMILY_NAMES")


def spaces_of(vocabulary: Sequence[str], encoded=None) -> np.ndarray:
    """The number of spaces of each entry, int64 of shape (V,) (no entry holds a NUL);
    ``encoded``: the vocabulary's :func:`nbclass.text.runs.entry_points`, if made."""
    if not len(vocabulary):
        return np.zeros(0, dtype=np.int64)
    if encoded is None:
        from .runs import entry_points

        encoded = entry_points(vocabulary)
    points, ends = encoded
    at = _entry_of(np.flatnonzero(points == 32), ends)
    return np.bincount(at, minlength=len(vocabulary)).astype(np.int64)


def _entry_of(positions: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The entry each of ``positions`` (in the entries joined by NULs) lies in, given
    where the NULs that end the entries are (``ends``, ascending): a binary search of
    the positions of interest, not an index of every byte (on 1.18 million entries of
    words and pairs, 14 MB of bytes, the cumulative sum of NULs took 0.2 to 0.4 s)."""
    return np.searchsorted(ends, positions)


# The masks of the last vocabulary asked about (a tuple, never changed in place): fit's
# choice asks for the same vocabulary's families several times (its feature sets, each
# set's rows, the model's active rows), and on 20 Newsgroups with word pairs (1.18 M
# entries, some not ASCII) each time cost about 2 s of CPU.
_LAST_MASKS: list = [None, None, None]
_MASKS_LOCK = threading.Lock()


def masks(
    vocabulary: Sequence[str], symbols: bool | str = False, utf8: tuple | None = None
) -> dict[str, np.ndarray]:
    """Each registered family's rows of ``vocabulary``, bool of shape (V,) (read-only:
    the arrays of a tuple vocabulary are kept for the next call on the same tuple);
    ``symbols``: the vocabulary is of a tokenizer with ``symbols`` on (else no entry is
    one of the ``symbols`` family), ``"spaced"`` beside ``unspaced="all"``, whose symbols
    hold no character of the scripts written without spaces
    (:attr:`nbclass.text.tokenizer.TokenizerSettings.symbol_entries`).

    ``utf8``: ``(joined, ends)``, the entries joined by NULs as valid UTF-8 (uint8) and
    where each ends (its NUL, or the end: int64 of shape (V,)), if the caller holds them
    (the model loader does): the same masks are then found in those bytes
    (:func:`_of_utf8`), not in the entries joined and encoded again.

    >>> words = ("a b", "ab", "?", "日本", "日", "x")
    >>> joined = np.frombuffer("\\x00".join(words).encode(), dtype=np.uint8)
    >>> utf8 = joined, np.append(np.flatnonzero(joined == 0), joined.size)
    >>> all((masks(words, True)[name] == masks(list(words), True, utf8)[name]).all()
    ...     for name in FAMILIES)
    True
    """
    with _MASKS_LOCK:
        if _LAST_MASKS[0] is vocabulary and _LAST_MASKS[2] == symbols:
            return _LAST_MASKS[1]
    if utf8 is not None:
        spaces, unspaced, kept = _of_utf8(vocabulary, utf8, symbols)
    else:
        from .runs import entry_points, symbol_rows

        encoded = entry_points(vocabulary)  # one join and encoding of 1.2 million entries
        spaces = spaces_of(vocabulary, encoded)
        unspaced = _unspaced(vocabulary, spaces, encoded)
        if symbols:
            kept = symbol_rows(vocabulary, encoded)
            if symbols == "spaced":  # beside unspaced="all": none holds those characters
                kept &= ~_holding_unspaced(vocabulary, encoded)
        else:
            kept = np.zeros(len(vocabulary), dtype=bool)
    found = {}
    for name, family in FAMILIES.items():
        rows = np.asarray(family.rows(vocabulary, spaces, unspaced, kept), dtype=bool)
        rows.setflags(write=False)
        found[name] = rows
    if isinstance(vocabulary, tuple):
        with _MASKS_LOCK:
            _LAST_MASKS[:] = [vocabulary, found, symbols]
    return found


# The bytes that are neither an ASCII word character, a space nor a NUL: an entry without
# a space is a symbol only if it is one character or holds one of them.
_OTHER_BYTES = np.ones(256, dtype=bool)
_OTHER_BYTES[[0, 32] + [b for b in range(128) if chr(b).isalnum() or chr(b) == "_"]] = False


def _of_utf8(
    vocabulary: Sequence[str], utf8: tuple, symbols: bool | str
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray], np.ndarray]:
    """``(spaces, unspaced, symbols)`` of :func:`masks` (:func:`spaces_of`,
    :func:`_unspaced` and the symbols' mask), found in ``utf8`` (``(joined, ends)``: the
    entries of ``vocabulary`` joined by NULs as valid UTF-8, as :func:`masks` takes it),
    without an array of their code points (on 20 Newsgroups with word pairs, 1.18
    million entries of which some are not ASCII, joining and encoding them as UTF-32
    made 57 MB and took 0.07-0.13 s).

    A space is byte 32 alone in UTF-8. Every script written without spaces is above
    U+0800, so its characters are among those of three and four bytes, whose code
    points alone are decoded; an entry's length in characters is its bytes but the
    continuation bytes. The symbols are the entries :func:`nbclass.text.runs.symbol_rows`
    finds among those that can be: without a space, and one byte long or holding a byte
    that is not an ASCII word character (an entry of two or more ASCII word characters
    is none)."""
    from .runs import is_unspaced, symbol_rows

    V = len(vocabulary)
    blob, ends = utf8
    blob = np.asarray(blob, dtype=np.uint8).reshape(-1)
    if ends.shape != (max(V, 1),) or (not V and blob.size):
        raise ValueError("the joined bytes do not hold the vocabulary's entries")
    if not V:
        none = np.zeros(0, dtype=bool)
        return np.zeros(0, dtype=np.int64), (none, none), none
    spaces = np.bincount(_entry_of(np.flatnonzero(blob == 32), ends), minlength=V)
    spaces = spaces.astype(np.int64)
    none = np.zeros(V, dtype=bool)
    wide = np.flatnonzero(blob >= 0xE0)  # the first bytes of characters above U+07FF
    last = blob.size - 1
    lead = blob[wide].astype(np.uint32)
    points = (lead & 0x0F) << 12
    points |= (blob[np.minimum(wide + 1, last)].astype(np.uint32) & 0x3F) << 6
    points |= blob[np.minimum(wide + 2, last)].astype(np.uint32) & 0x3F
    four = np.flatnonzero(lead >= 0xF0)
    if four.size:
        at = wide[four]
        points[four] = (
            ((lead[four] & 0x07) << 18)
            | ((blob[np.minimum(at + 1, last)].astype(np.uint32) & 0x3F) << 12)
            | ((blob[np.minimum(at + 2, last)].astype(np.uint32) & 0x3F) << 6)
            | (blob[np.minimum(at + 3, last)].astype(np.uint32) & 0x3F)
        )
    held = _entry_of(wide[is_unspaced(points)], ends)  # the entry of each such character
    unspaced = none, none
    if held.size:
        alone = np.bincount(held, minlength=V)
        continuing = np.flatnonzero((blob & 0xC0) == 0x80)
        length = np.diff(ends, prepend=-1) - 1
        length -= np.bincount(_entry_of(continuing, ends), minlength=V)
        unspaced = _runs_and_characters(alone, length, spaces)
    kept = np.zeros(V, dtype=bool)
    if symbols:
        other = np.flatnonzero(_OTHER_BYTES[blob])
        other = np.bincount(_entry_of(other, ends), minlength=V)
        one = np.diff(ends, prepend=-1) == 2
        may = np.flatnonzero((spaces == 0) & (one | (other > 0)))
        if may.size:
            kept[may] = symbol_rows([vocabulary[i] for i in may.tolist()])
        if symbols == "spaced":  # beside unspaced="all": none holds those characters
            kept[held] = False
    return spaces, unspaced, kept


def rows_of(
    vocabulary: Sequence[str], names: Sequence[str], symbols: bool | str = False
) -> np.ndarray:
    """The rows of the families ``names`` (their union), bool of shape (V,).

    >>> rows_of(["ab", "ab cd", "cd", "ab cd ef"], ("words", "pairs")).tolist()
    [True, True, True, False]
    >>> rows_of(["ab", "?", "a", "ab ?"], ("words",), symbols=True).tolist()
    [True, False, False, False]
    """
    found = masks(vocabulary, symbols)
    out = np.zeros(len(vocabulary), dtype=bool)
    for name in names:
        out |= found[name]
    return out


# The tokenizations of the scripts written without spaces that ``--unspaced all`` counts
# at once, each beside the words of the other scripts: the choice takes one of them.
UNSPACED_SETS = (("runs",), ("characters",), ("characters", "pairs"))


def feature_sets(
    vocabulary: Sequence[str], symbols: bool | str = False
) -> list[tuple[str, ...]]:
    """The feature sets fit's choice compares on ``vocabulary``, simplest first: the
    families that are not optional (those present), then each optional family present
    added in turn. One set when the tokenizer makes one kind of token. ``symbols``: as
    for :func:`masks`; the symbols, when present, are an addition to each of those sets
    (each set without them, then with them: with pairs, ``words``, ``words+symbols``,
    ``words+pairs``, ``words+symbols+pairs``).

    >>> feature_sets(["ab", "ab cd", "cd"]), feature_sets(["ab", "cd"])
    ([('words',), ('words', 'pairs')], [('words',)])
    >>> feature_sets(["ab cd", "cd ef"])
    [('pairs',)]
    >>> feature_sets(["ab", "?", "ab cd"], symbols=True)  # doctest: +NORMALIZE_WHITESPACE
    [('words',), ('words', 'symbols'), ('words', 'pairs'), ('words', 'symbols', 'pairs')]
    """
    found = masks(vocabulary, symbols)
    present = [name for name in FAMILIES if found[name].any()]
    base = tuple(name for name in present if not FAMILIES[name].optional)
    if "runs" in present:  # --unspaced all: runs, characters, or characters and pairs
        sets = [base + alternative for alternative in UNSPACED_SETS]
        if "pairs" not in present:
            sets.pop()
    elif not base:  # no word of the families always kept (--ngram-range 2,2): all at once
        return [tuple(present)]
    else:
        sets = [base]
        for name in present:
            if FAMILIES[name].optional and name != "symbols":
                sets.append(sets[-1] + (name,))
    if "symbols" in present:  # each set, then it with the symbols
        sets = [
            kind for names in sets
            for kind in (names, tuple(n for n in FAMILIES if n in names or n == "symbols"))
        ]  # fmt: skip
    return sets


def describe(names: Sequence[str]) -> str:
    """``words+pairs``: the names of a feature set joined."""
    return "+".join(names)
