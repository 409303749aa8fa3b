"""Runs counted with numpy: the default tokenizer at array speed, for many texts.

Counting a batch token by token in Python costs a dictionary operation per token (a
``Counter``) and one per distinct word (the vocabulary lookup), a few hundred
nanoseconds each. For the settings :class:`nbclass.text.tokenizer.AsciiSplitter` applies to
(the default token pattern, single words), this module does the same counting in a few
numpy passes over the bytes of a chunk of texts, with no Python object per token:

1. the texts of a chunk become one array of bytes where the tokens are the runs of
   bytes above the space. Texts all ASCII are joined by spaces and translated by the
   splitter's table (word bytes kept, lower-cased as the settings say; every other byte
   a space). Other texts (any script, as str) are lower-cased as ``str.lower`` does,
   joined, viewed as code points (UTF-32) and classified by a table of the regex
   engine's own ``\\w`` (:func:`is_word`); the word characters that stand alone
   (runs of one character, never tokens) and every other character become spaces, each
   text ends with a newline, and the result is encoded as UTF-8
   (:func:`_text_chunk_runs`);
2. the runs are found where the bytes go from separators (space, newline) to others and
   back;
3. each run gets a 64-bit key (:func:`run_keys`): a run of at most 8 bytes starting with
   an ASCII byte is its own key (its bytes, big-endian: exact, and in the words' order);
   any other run's key is a hash of its bytes (a polynomial over its blocks of 8 bytes,
   modulo 2**64, mixed by splitmix64's finaliser) with the top bit set;
4. predict (:class:`RunCounter`) looks the keys up in an open-addressing table of the
   vocabulary's and the stop words' keys (:class:`WordTable`, linear probing, all runs
   at once); fit (:class:`RunTally`) finds each chunk's distinct words by sorting the
   keys and numbers them by binary search among the words met before;
5. a hashed run is compared byte for byte with the word it was taken for: in predict,
   one whose hash equals a word's but whose bytes differ is unknown, and a table where
   two words share a key is refused (:meth:`WordTable.build` returns None, and the
   caller counts in Python); in fit, a chunk where two different words share a hash is
   given back to be tokenized. A hash never stands for two words: the counts are exact
   whatever the hash function does (tests replace it by a constant);
6. runs of one character and stop words are dropped (they are never tokens), and the
   (text, word) pairs are counted by sorting.

With word n-grams (``--ngram-range 1,2``), the n consecutive tokens of a text that make
an n-gram are copied, joined by the byte 0x01 (never a word byte, and below every word
byte as the space is), into runs of their own after the chunk's words
(:func:`with_ngrams`): an n-gram is then one more run, keyed, looked up, numbered and
counted as a word is, and its name takes its spaces back when the words are named. The
bytes copied are a few times the tokens' bytes, so words and pairs cost about twice words
alone, against the tokenizer's Python loop over every n-gram. Word pairs alone (``1,2``
or ``2,2``) are made of no bytes: predict finds a pair by its two tokens' ids in the run
table, one 64-bit key looked up in a table of the vocabulary's pairs
(:attr:`RunCounter.pairs`), and fit numbers it by its two words' numbers. With an
``ngram_doc_limit``, each text's number of tokens is counted from its runs
and no n-gram starts in a text of more (:func:`ngram_firsts`).

With ``unspaced`` "pairs" or "all", the characters and pairs of the scripts written
without spaces are runs after a chunk's words (:func:`_text_chunk_runs`, which says how
many of its runs are words): the n-grams are made of the words alone, the limit counts
the words alone, and the characters and pairs come after the n-grams, as
:func:`nbclass.text.tokenizer.make_tokenizer` gives them. Word pairs by numbers go
beside "all" (a pair of its words holds a run of two characters or more on each side,
never the name of a pair of characters), not beside "pairs", whose words are characters
too: there "日 本" is one token, a pair of words and a pair of characters, counted by the
bytes of its run.

With ``symbols`` (:func:`nbclass.text.tokenizer.symbol_tokens`), each chunk's single
word characters and runs of characters neither word nor space are counted after the
words and their n-grams, never joined into n-grams. In ASCII text they are runs of the
same bytes as the words, keyed where they lie (:func:`_ascii_words_and_symbols`: the
words' runs of one byte, and the runs of the text translated by a second table that
keeps only the other bytes); in text of other scripts they are found by a
classification of its characters (:func:`_symbol_runs`) and copied into runs of their own.

The result is the tokenizer's, exactly (hypothesis tests in ``tests/test_runs.py`` and,
for text of many scripts, ``tests/test_runs_unicode.py``; the symbols in
``tests/test_symbols.py``).
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat

import numpy as np

from .tokenizer import AsciiSplitter

# Texts are joined into chunks of about this many bytes: the arrays of a chunk (8 bytes
# per byte of text, a few of them at once) stay a few tens of MB. A longer text is
# counted by the caller in Python.
CHUNK_BYTES = 1 << 20
_SPACE = 32
_MERGE_AT = 8  # a run tally sums its chunks' counts together when it holds this many
_PAIR_BLOCK = 1 << 15  # word pairs named at a time (pair_names: 3-4 MB of indices an array)
_RECENT = 1 << 15  # a run tally's latest words, kept apart from the others up to this many
_BASE = 0x9E3779B97F4A7C15  # odd: its powers modulo 2**64 never vanish
_powers_cache = np.ones(1, dtype=np.uint64)


def _powers(n: int) -> np.ndarray:
    """BASE**t modulo 2**64 for t < n at least (uint64; products wrap modulo 2**64)."""
    global _powers_cache
    if _powers_cache.size < n:
        size = max(n, 2 * _powers_cache.size)
        powers = np.full(size, _BASE, dtype=np.uint64)
        powers[0] = 1
        _powers_cache = np.cumprod(powers, out=powers)
    return _powers_cache


def run_bounds(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, ends)`` of the runs of non-space bytes of ``codes`` (uint8, shape (N,)),
    each int64 of shape (R,): run r is ``codes[starts[r]:ends[r]]``."""
    word = codes != _SPACE
    # Where the bytes go from space to word and back, alternately: start, end, ... (a
    # comparison of neighbours: numpy's diff of int8 with prepend and append took 5 times
    # as long), with a run at either edge closed there.
    change = np.flatnonzero(word[1:] != word[:-1]) + 1
    if word.size and word[0]:
        change = np.concatenate(([0], change))
    if word.size and word[-1]:
        change = np.append(change, word.size)
    return change[0::2], change[1::2]


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place: every input bit reaches every output bit."""
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    return h


def _eight(codes: np.ndarray) -> np.ndarray:
    """The 8 bytes from each position of ``codes`` as one big-endian integer (first byte
    highest; past the end, zero bytes): a ``>u8`` view of a padded copy, stride 1."""
    padded = np.zeros(codes.size + 8, dtype=np.uint8)
    padded[: codes.size] = codes
    return np.ndarray((codes.size,), dtype=">u8", buffer=padded, strides=(1,))


def _blocks(starts: np.ndarray, length: np.ndarray):
    """The runs cut into blocks of 8 bytes: ``(offsets, at, j, mask)``: run r's blocks
    are those from ``offsets[r]``; each block's position, its number j in its run, and
    the mask of the run's bytes in it (:data:`_PREFIX_MASKS`). Runs are not empty."""
    blocks = (length + 7) >> 3
    offsets = np.cumsum(blocks) - blocks
    j = np.arange(int(offsets[-1] + blocks[-1])) - np.repeat(offsets, blocks)
    left = np.repeat(length, blocks) - 8 * j  # bytes of the run from the block on
    at = np.repeat(starts, blocks) + 8 * j
    return offsets, at, j, _PREFIX_MASKS[np.minimum(left, 8)]


def run_hashes(
    codes: np.ndarray, starts: np.ndarray, ends: np.ndarray, eight: np.ndarray | None = None
) -> np.ndarray:
    """A 64-bit hash of each run, shape (R,): Σ_j f(b_j) BASE**j + length, mixed, all
    modulo 2**64, where b_j is the run's j-th block of 8 bytes (big-endian, the bytes
    past the run's end zero) and f(b) = b XOR (b >> 32): the same for the same bytes
    anywhere. The blocks of all
    runs are laid end to end and each run's terms summed (``numpy.add.reduceat``).
    ``eight`` is :func:`_eight` of ``codes``, if already made."""
    length = ends - starts
    if not length.size:
        return np.zeros(0, dtype=np.uint64)
    eight = _eight(codes) if eight is None else eight
    offsets, at, j, mask = _blocks(starts, length)
    terms = eight[at].astype(np.uint64)
    terms &= mask
    # Each block's high half folded into its low half first (a bijection): a product
    # carries a difference only upwards, so blocks that differ only in their top byte
    # (``a000 ffff`` and ``f000 fff5``, cut after 8 bytes) would otherwise differ in
    # Σ b_j BASE**j by a multiple of 2**56 that the low byte of BASE can cancel.
    terms ^= terms >> np.uint64(32)
    terms *= _powers(int(j.max()) + 1)[j]
    h = np.add.reduceat(terms, offsets)
    h += length.astype(np.uint64)
    return _mix(h)


def _positions(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The positions of the bytes of the runs, run after run."""
    length = ends - starts
    total = np.cumsum(length)
    return np.repeat(starts - (total - length), length) + np.arange(total[-1] if total.size else 0)


def _joined(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bytes:
    """The runs ``codes[starts[r]:ends[r]]`` joined by NUL bytes (at least one run).

    >>> _joined(np.frombuffer(b"ab cde f", dtype=np.uint8), np.array([3, 0]), np.array([6, 2]))
    b'cde\\x00ab'
    """
    length = ends - starts
    out = np.zeros(int(length.sum()) + length.size - 1, dtype=np.uint8)
    # Run r's bytes move right by r: one NUL before each run but the first.
    where = np.arange(out.size - length.size + 1) + np.repeat(np.arange(length.size), length)
    out[where] = codes[_positions(starts, ends)]
    return out.tobytes()


_JOIN = 1  # the byte between the words of an n-gram run (a space in its name)


def _copy_segments(out: np.ndarray, at: np.ndarray, codes: np.ndarray, starts, lengths) -> None:
    """Copy the segments ``codes[starts[s]:starts[s] + lengths[s]]`` to ``out[at[s]:...]``."""
    total = int(lengths.sum())
    if not total:
        return
    within = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    out[np.repeat(at, lengths) + within] = codes[np.repeat(starts, lengths) + within]


def ngram_firsts(text: np.ndarray, n: int, limit: int | None = None) -> np.ndarray:
    """The first token of each n-gram of ``n`` consecutive tokens of one text (the tokens
    of texts ``text``, nondecreasing; ``text.size`` at least ``n``), with ``limit``
    (``ngram_doc_limit``) none of a text of more than ``limit`` tokens.

    >>> ngram_firsts(np.array([0, 0, 1, 1, 1, 3]), 2).tolist()
    [0, 2, 3]
    >>> ngram_firsts(np.array([0, 0, 1, 1, 1, 3]), 2, limit=2).tolist()
    [0]
    """
    first = np.flatnonzero(text[n - 1 :] == text[: text.size - n + 1])
    if limit is not None:
        first = first[np.bincount(text)[text[first]] <= limit]
    return first


def with_ngrams(
    codes: np.ndarray, starts: np.ndarray, ends: np.ndarray, text: np.ndarray, ngram_range,
    limit: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(codes, starts, ends, text)`` of the n-grams of the tokens ``codes[starts[r]:
    ends[r]]`` (the tokens of a chunk in order, those of text ``text[r]``; ``text``
    nondecreasing), for every n of ``ngram_range`` from 2: each n-gram is the bytes of n
    consecutive tokens of one text joined by the byte 0x01, a run of new ``codes``
    (uint8; runs separated by spaces), grams of length 2 first, then 3, ...: the
    tokenizer's n-grams, in its order within each length, with 0x01 for its spaces.
    ``limit`` (``ngram_doc_limit``): none of a text of more than ``limit`` tokens.

    >>> codes = np.frombuffer(b"ab cd ef gh", dtype=np.uint8)
    >>> grams = with_ngrams(codes, np.array([0, 3, 6, 9]), np.array([2, 5, 8, 11]),
    ...                     np.array([0, 0, 0, 1]), (1, 2))
    >>> bytes(grams[0]).replace(b"\x01", b"+"), grams[1].tolist(), grams[3].tolist()
    (b'ab+cd cd+ef ', [0, 6], [0, 0])
    """
    low, high = ngram_range
    length = ends - starts
    parts = []  # per n: (first token of each gram, n)
    for n in range(max(2, low), high + 1):
        if length.size < n:
            break
        first = ngram_firsts(text, n, limit)
        if first.size:
            parts.append((first, n))
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return np.zeros(0, dtype=np.uint8), empty, empty, empty
    sizes = []  # each gram's bytes (its tokens and the n - 1 joins)
    for first, n in parts:
        size = np.full(first.size, n - 1, dtype=np.int64)
        for k in range(n):
            size += length[first + k]
        sizes.append(size)
    size = np.concatenate(sizes)
    gram_starts = np.cumsum(size + 1) - size - 1  # each gram followed by a space
    out = np.full(int(size.sum()) + size.size, _SPACE, dtype=np.uint8)
    at_parts, from_parts, length_parts = [], [], []
    done = 0
    for first, n in parts:
        at = gram_starts[done : done + first.size].copy()
        for k in range(n):
            token = first + k
            at_parts.append(at.copy())
            from_parts.append(starts[token])
            length_parts.append(length[token])
            at += length[token]
            if k < n - 1:
                out[at] = _JOIN
                at += 1
        done += first.size
    _copy_segments(
        out, np.concatenate(at_parts), codes, np.concatenate(from_parts),
        np.concatenate(length_parts),
    )  # fmt: skip
    gram_text = np.concatenate([text[first] for first, _ in parts])
    return out, gram_starts, gram_starts + size, gram_text


def _plus_ngrams(codes, starts, ends, text, keys, ngram_range, ascii: bool, limit=None):
    """The tokens ``(codes, starts, ends, text, keys)`` of a chunk with its n-grams
    (:func:`with_ngrams`, none in a text of more than ``limit`` tokens) after them, in one
    array of codes; without the single words when ``ngram_range`` starts above 1."""
    grams, gram_starts, gram_ends, gram_text = with_ngrams(
        codes, starts, ends, text, ngram_range, limit
    )
    gram_keys = run_keys(grams, gram_starts, gram_ends, ascii)
    gram_starts, gram_ends = gram_starts + codes.size, gram_ends + codes.size
    if ngram_range[0] > 1:
        return np.concatenate((codes, grams)), gram_starts, gram_ends, gram_text, gram_keys
    return (
        np.concatenate((codes, grams)), np.concatenate((starts, gram_starts)),
        np.concatenate((ends, gram_ends)), np.concatenate((text, gram_text)),
        np.concatenate((keys, gram_keys)),
    )  # fmt: skip


_LONG = np.uint64(1 << 63)  # the flag of a key that is a hash
_BLOCK = np.dtype(">u8")  # the type of the view of :func:`_eight`
# The mask of the first n of 8 big-endian bytes, for n = 0..8.
_PREFIX_MASKS = np.array(
    [(1 << 64) - (1 << 8 * (8 - n)) for n in range(9)], dtype=np.uint64
)


def run_keys(
    codes: np.ndarray, starts: np.ndarray, ends: np.ndarray, ascii: bool = False
) -> np.ndarray:
    """The key of each run, uint64 of shape (R,).

    A run of at most 8 bytes whose first byte is ASCII is its own key: its bytes,
    big-endian, padded with zero bytes. The bytes of a run (ASCII, or UTF-8 of word
    characters) are never 0, so the key tells the bytes and the length, its top bit is
    0, and the keys of such runs are in the order of their words. Another run's key
    (longer, or starting with a byte of a UTF-8 sequence) is its :func:`run_hashes` with
    the top bit set, which another run may share: only such keys need their bytes
    compared (:func:`is_long`). ``ascii`` says every byte is ASCII (no test needed).
    """
    eight = _eight(codes)
    length = ends - starts
    keys = eight[starts].astype(np.uint64)
    keys &= _PREFIX_MASKS[np.minimum(length, 8)]  # the run's own bytes
    if ascii:
        long = np.flatnonzero(length > 8)
    else:
        long = np.flatnonzero((length > 8) | (keys >= _LONG))  # first byte not ASCII
    if long.size:
        keys[long] = run_hashes(codes, starts[long], ends[long], eight) | _LONG
    return keys


def word_order(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray, names) -> np.ndarray:
    """The order of the distinct runs ``codes[starts[r]:ends[r]]``, named ``names[r]``, by
    their names: their sorted places, int64 of shape (R,).

    The runs are sorted by their first 16 bytes with numpy (UTF-8's byte order is the
    code points', a zero byte past a run's end sorts it before the runs it begins, and
    the byte 0x01 that joins an n-gram's words sorts below every word byte, as the
    space of its name does); only runs sharing their first 16 bytes are then compared
    by name. On 20 Newsgroups with word pairs that is a few thousand of 1.18 million, and
    this takes a fifth of the time of Python's sort of the names.

    >>> codes = np.frombuffer(b"b\x01a ab a", dtype=np.uint8)
    >>> word_order(codes, np.array([0, 4, 7]), np.array([3, 6, 8]), ["b a", "ab", "a"]).tolist()
    [2, 1, 0]
    """
    if not starts.size:
        return np.zeros(0, dtype=np.int64)
    eight, length = _eight(codes), ends - starts
    first = eight[starts].astype(np.uint64)
    first &= _PREFIX_MASKS[np.minimum(length, 8)]
    second = eight[np.minimum(starts + 8, codes.size - 1)].astype(np.uint64)
    second &= _PREFIX_MASKS[np.clip(length - 8, 0, 8)]
    order = np.lexsort((second, first))
    first, second = first[order], second[order]
    same = (first[1:] == first[:-1]) & (second[1:] == second[:-1])
    if same.any():  # runs of neighbours that share 16 bytes: sorted by name
        tied = np.zeros(order.size + 2, dtype=np.int8)
        tied[1:-2] |= same
        tied[2:-1] |= same
        edges = np.flatnonzero(np.diff(tied))
        for start, end in zip(edges[0::2].tolist(), edges[1::2].tolist()):
            order[start:end] = sorted(order[start:end].tolist(), key=names.__getitem__)
    return order


def pair_names(names: Sequence[str], first: np.ndarray, second: np.ndarray) -> list[str]:
    """The names of the word pairs of words ``first`` and ``second`` (indices into
    ``names``, whose other entries may be empty): the two names joined by a space, as
    the tokenizer names a pair. Made as bytes with numpy, a block of pairs at a time,
    and decoded at once: a third less time than joining a million pairs' names in
    Python.

    >>> pair_names(["a", "", "bé"], np.array([2, 0]), np.array([0, 0]))
    ['bé a', 'a a']
    """
    if not len(first):
        return []
    data = np.frombuffer(("\x00".join(names) + "\x00").encode("utf-8", "surrogatepass"), np.uint8)
    ends = np.flatnonzero(data == 0)
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts
    joined: list[str] = []
    for low in range(0, len(first), _PAIR_BLOCK):
        one, two = first[low : low + _PAIR_BLOCK], second[low : low + _PAIR_BLOCK]
        size_one, size_two = lengths[one], lengths[two]
        size = size_one + 1 + size_two
        at = np.cumsum(size + 1) - size - 1  # each pair followed by a NUL, the last not
        out = np.zeros(int(at[-1] + size[-1]), dtype=np.uint8)
        _copy_segments(out, at, data, starts[one], size_one)
        out[at + size_one] = _SPACE
        _copy_segments(out, at + size_one + 1, data, starts[two], size_two)
        joined += out.tobytes().decode("utf-8", "surrogatepass").split("\x00")
    return joined


def is_long(keys: np.ndarray) -> np.ndarray:
    """Which keys are hashes (runs of more than 8 bytes, or not starting with an ASCII
    byte), bool of the keys' shape."""
    return keys >= _LONG


def same_bytes(codes, starts, ends, other_codes, other_starts) -> np.ndarray:
    """Whether run r of ``codes`` has the bytes of the run of ``other_codes`` at
    ``other_starts[r]`` with the same length, bool of shape (R,). (``codes`` and
    ``other_codes`` may be their :func:`_eight` views instead.) The runs are compared 8
    bytes at a time."""
    length = ends - starts
    if not length.size:
        return np.ones(0, dtype=bool)
    eight = codes if codes.dtype == _BLOCK else _eight(codes)
    other = other_codes if other_codes.dtype == _BLOCK else _eight(other_codes)
    offsets, at, j, mask = _blocks(starts, length)
    differ = eight[at].astype(np.uint64)
    differ ^= other[at + np.repeat(other_starts - starts, (length + 7) >> 3)]
    differ &= mask
    equal = differ == 0
    if equal.all():
        return np.ones(length.size, dtype=bool)
    return np.logical_and.reduceat(equal, offsets)


@dataclass(frozen=True, eq=False)
class WordTable:
    """A set of ASCII words, found exactly by the key of a run (:func:`run_keys`).

    Attributes
    ----------
    keys : uint64 ndarray of shape (S,)
        The key in each slot. A key's home slot is the top ``bits`` bits of the mix of
        the key XOR ``salt``, with 2**bits at least four times the number of words; the
        last slot is empty.
    ids : int64 ndarray of shape (S,)
        The word in each slot, −1 for an empty slot.
    codes : uint8 ndarray
        The words' bytes, joined by spaces; word k is ``codes[starts[k]:ends[k]]``.
    starts, ends : int64 ndarray of shape (K,)
    bits : int
    salt : numpy.uint64
        Drawn at random for each table: the words come from a model file, maybe from
        elsewhere, and under a fixed home function its words could be chosen to share a
        few home slots, every look-up then probing past all of them. A word's id is its
        place in the list, wherever it sits, so the counts are the same whatever the salt.
    """

    keys: np.ndarray
    ids: np.ndarray
    codes: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    bits: int
    salt: np.uint64

    @classmethod
    def build(cls, codes: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> WordTable | None:
        """The table of the words ``codes[starts[k]:ends[k]]`` (distinct, non-empty, no
        space byte), word k with id k; None when two of them share a key."""
        return cls.of_keys(run_keys(codes, starts, ends), codes, starts, ends)

    @classmethod
    def of_keys(
        cls, keys: np.ndarray, codes: np.ndarray | None = None, starts=None, ends=None
    ) -> WordTable | None:
        """The table of the keys ``keys`` (uint64), key k with id k; None when two are the
        same. Without ``codes``, every key must be below 2**63 (not a hash: nothing to
        compare), as the keys of word pairs by their words' ids are."""
        if codes is None:
            codes = np.zeros(0, dtype=np.uint8)
            starts = ends = np.zeros(0, dtype=np.int64)
        bits = max(4, int(keys.size * 4).bit_length())
        salt = np.uint64(int.from_bytes(os.urandom(8), "little"))
        # In the order of the mixed keys, which is that of the home slots (their top
        # bits): one sort of one array. The mix is a bijection, so keys mixed alike are
        # the same key; should two be (or a mix that is not one put them there), the
        # keys are sorted by home slot and key, which puts equal keys side by side.
        mixed = _mix(keys ^ salt)
        order = np.argsort(mixed)
        home = (mixed >> np.uint64(64 - bits)).astype(np.int64)
        if (mixed[order[1:]] == mixed[order[:-1]]).any():
            order = np.lexsort((keys, home))
        del mixed
        ordered = keys[order]
        if (ordered[1:] == ordered[:-1]).any():
            return None
        # Linear probing, filled in the order of the home slots: each word takes the
        # first free slot from its home, that is slot[i] = max(home[i], slot[i − 1] + 1).
        # Past the last home slot the table goes on (no wrapping round), and it ends
        # with an empty slot, where probing stops.
        home = home[order]
        rank = np.arange(keys.size)
        slot = np.maximum.accumulate(home - rank) + rank if keys.size else home
        size = max(1 << bits, int(slot[-1]) + 1 if keys.size else 0) + 1
        table = np.zeros(size, dtype=np.uint64)
        ids = np.full(size, -1, dtype=np.int64)
        table[slot], ids[slot] = ordered, order
        return cls(table, ids, codes, starts, ends, bits, salt)

    @classmethod
    def of(cls, words: Sequence[bytes]) -> WordTable | None:
        """:meth:`build` for a list of words."""
        codes = np.frombuffer(b" ".join(words), dtype=np.uint8)
        starts, ends = run_bounds(codes)
        if starts.size != len(words):
            raise ValueError("a word is empty or holds a space")
        return cls.build(codes, starts, ends)

    def find(
        self, codes: np.ndarray, starts: np.ndarray, ends: np.ndarray, keys: np.ndarray
    ) -> np.ndarray:
        """The id of each run of ``codes`` (keys from :func:`run_keys`), −1 for a run
        not in the table. A long run found by its hash is compared byte for byte with
        the word, and is −1 when they differ."""
        long = is_long(keys)
        slots = _slots(keys ^ self.salt, self.bits)
        ids = self.ids[slots]
        hit = self.keys[slots] == keys
        found = np.where(hit, ids, -1)  # an empty slot's id is −1 too
        todo = np.flatnonzero(~hit & (ids >= 0))  # another word there: probe on
        keys, slots = keys[todo], slots[todo] + 1
        while todo.size:  # linear probing: stop at the word's key or an empty slot
            ids = self.ids[slots]
            hit = (self.keys[slots] == keys) & (ids >= 0)
            found[todo[hit]] = ids[hit]
            again = ~hit & (ids >= 0)
            todo, keys = todo[again], keys[again]
            slots = slots[again] + 1
        long = np.flatnonzero((found >= 0) & long)
        if long.size:
            words = found[long]
            same = (ends[long] - starts[long]) == (self.ends[words] - self.starts[words])
            found[long[~same]] = -1
            long, words = long[same], words[same]
            equal = same_bytes(codes, starts[long], ends[long], self.codes, self.starts[words])
            found[long[~equal]] = -1
        return found


_BY_WORDS = ((1, 2), (2, 2))  # the n-grams of a run counter that finds pairs by their words


def _pairs_by_words(codes, starts, ends, rows, V: int, n_stop: int):
    """``(words, columns, pairs, pair_columns)`` of :class:`RunCounter` for word pairs
    found by their words' ids, or None when a table cannot be made (two words with one
    key). ``codes[starts[k]:ends[k]]`` is entry k: the vocabulary's V entries (a pair's
    words joined by 0x01), then the ``n_stop`` stop words; ``rows``, the entries that can
    be runs (sorted).

    The entries of ``rows`` without a 0x01 are words, with their columns; those with
    one are pairs, whose two words are found among the words and the stop words, or
    added after them with column −1 (the words of pairs that are not counted alone, by
    a vocabulary filter). A pair one of whose words is a stop word is never counted (the
    stop words are dropped before the pairs are made), nor is an entry of more words."""
    join = np.flatnonzero(codes == _JOIN)
    entry = np.searchsorted(starts, join, side="right") - 1  # the entry of each join
    joins = np.bincount(entry, minlength=starts.size)[rows]
    single, pair = rows[joins == 0], rows[joins == 1]
    at = join[np.searchsorted(entry, pair)]  # each pair's join (the first of its entry's)
    whole = (at > starts[pair]) & (at + 1 < ends[pair])  # two words, neither empty
    pair, at = pair[whole], at[whole]
    word_rows = np.concatenate((single, np.arange(V, V + n_stop)))
    words = WordTable.build(codes, starts[word_rows], ends[word_rows])
    if words is None:
        return None
    half_starts = np.concatenate((starts[pair], at + 1))
    half_ends = np.concatenate((at, ends[pair]))
    keys = run_keys(codes, half_starts, half_ends)
    ids = words.find(codes, half_starts, half_ends, keys)
    new = np.flatnonzero(ids < 0)
    n_words = word_rows.size
    if new.size:  # the words of pairs alone, by sorting their keys (as RunTally does)
        order = new[np.argsort(keys[new], kind="stable")]
        ordered = keys[order]
        group = np.concatenate(([True], ordered[1:] != ordered[:-1]))
        first, which = order[group], np.cumsum(group) - 1
        long = np.flatnonzero(is_long(ordered))
        if long.size:  # a long word's runs share a hash: each must have the bytes of one
            runs, other = order[long], first[which[long]]
            length = half_ends[runs] - half_starts[runs]
            if not (length == half_ends[other] - half_starts[other]).all() or not same_bytes(
                codes, half_starts[runs], half_ends[runs], codes, half_starts[other]
            ).all():
                return None
        ids[order] = n_words + which
        words = WordTable.of_keys(
            np.concatenate((words.keys[words.ids >= 0][np.argsort(words.ids[words.ids >= 0])],
                            keys[first])),
            codes, np.concatenate((starts[word_rows], half_starts[first])),
            np.concatenate((ends[word_rows], half_ends[first])),
        )  # fmt: skip
        if words is None:
            return None
    one, two = ids[: pair.size], ids[pair.size :]
    stop = ((one >= single.size) & (one < n_words)) | ((two >= single.size) & (two < n_words))
    pair, one, two = pair[~stop], one[~stop], two[~stop]
    pair_keys = one.astype(np.uint64) << np.uint64(32)
    pair_keys |= two.astype(np.uint64)
    pairs = WordTable.of_keys(pair_keys)
    if pairs is None or words.ids.max(initial=0) >= 1 << 31:
        return None
    added = words.starts.size - n_words
    columns = np.concatenate((single, np.full(n_stop, V), np.full(added, -1), [-1]))
    return words, columns.astype(np.int64), pairs, np.append(pair, -1).astype(np.int64)


def _slots(keys: np.ndarray, bits: int) -> np.ndarray:
    """The home slot of each key (salted) in a table of 2**bits slots: the top bits,
    mixed, in place."""
    return (_mix(keys) >> np.uint64(64 - bits)).astype(np.int64)


def _stop_runs(splitter: AsciiSplitter) -> list[bytes]:
    """The stop words that a run can be, as UTF-8, sorted: those that are ASCII, more
    than one byte and left as they are by the translation, and the others of two or
    more word characters. (The runs one character long are dropped by their length.)
    With ``symbols``, also those that are symbols (one word character, or none)."""
    table = splitter.table
    words = [w for w in splitter.dropped if len(w) > 1 and w.translate(table) == w]
    single = splitter.unspaced in ("characters", "pairs", "all")  # a character can be a token
    words += [
        w.encode("utf-8")
        for w in splitter.stop_words
        if not w.isascii() and (len(w) > 1 or single) and _WORDS.fullmatch(w)
    ]
    if splitter.symbols:
        from .tokenizer import is_symbol

        words += [w.encode("utf-8") for w in splitter.stop_words if is_symbol(w)]
    return sorted(set(words))


def _chunks(lengths: np.ndarray) -> Iterator[tuple[int, int]]:
    """``(first, last)`` of consecutive texts of ``lengths`` (int64 ndarray) joined, one
    separator after each, into chunks of at most about ``CHUNK_BYTES`` (a longer text
    alone)."""
    ends = np.cumsum(lengths + 1)  # the end of each text and its separator
    first, n = 0, lengths.size
    while first < n:
        base = int(ends[first - 1]) if first else 0
        last = max(first + 1, int(np.searchsorted(ends, base + CHUNK_BYTES, side="right")))
        yield first, last
        first = last


class JoinedTexts(Sequence):
    """Texts of any script held as one str: ``text`` is the texts joined by newlines,
    ``lengths`` (int64 ndarray) the characters of each; text i is a slice of it.

    Many short texts cost one ``str`` rather than one each: UTF-8 documents are decoded
    all at once (:meth:`decode`), and a chunk of them is lower-cased at once.

    >>> texts = JoinedTexts.decode([b"caf\\xc3\\xa9", b"", "\\u65e5\\u672c".encode()])
    >>> len(texts), list(texts), texts[1:].text, texts.lengths.tolist()
    (3, ['café', '', '日本'], '\\n日本', [4, 0, 2])
    """

    def __init__(self, text: str, lengths: np.ndarray):
        self.text, self.lengths = text, lengths
        self._starts = None

    @classmethod
    def of(cls, texts: Sequence[str]) -> JoinedTexts:
        """The texts ``texts`` (str) joined."""
        return cls("\n".join(texts), np.fromiter(map(len, texts), np.int64, len(texts)))

    @classmethod
    def decode(cls, documents: Sequence[bytes]) -> JoinedTexts | None:
        """UTF-8 ``documents`` decoded in one call; None when one of them is not UTF-8
        (the caller then decodes each, counting what it replaces). A document's
        characters are its bytes that do not continue a UTF-8 sequence (``10xxxxxx``)."""
        blob = b"\n".join(documents)
        try:
            text = blob.decode("utf-8")
        except UnicodeDecodeError:
            return None
        sizes = np.fromiter(map(len, documents), np.int64, len(documents))
        leads = np.zeros(len(blob) + 1, dtype=np.int64)  # leading bytes before each byte
        np.cumsum((np.frombuffer(blob, np.uint8) & 0xC0) != 0x80, out=leads[1:])
        starts = np.cumsum(sizes + 1) - sizes - 1
        return cls(text, leads[starts + sizes] - leads[starts])

    @classmethod
    def read(cls, documents: Sequence[bytes], encoding: str, decode) -> JoinedTexts:
        """The texts of ``documents`` in ``encoding``: all decoded in one call when it is
        UTF-8 and every document is (:meth:`decode`), else each by ``decode`` (which
        counts what it replaces)."""
        texts = cls.decode(documents) if codecs.lookup(encoding).name == "utf-8" else None
        return texts if texts is not None else cls.of([decode(data) for data in documents])

    @classmethod
    def concat(cls, parts: Sequence[JoinedTexts]) -> JoinedTexts:
        """The texts of ``parts``, one after the other."""
        if len(parts) == 1:
            return parts[0]
        return cls("\n".join(p.text for p in parts), np.concatenate([p.lengths for p in parts]))

    def __len__(self) -> int:
        return self.lengths.size

    def _start(self, i: int) -> int:
        """Where text i starts in :attr:`text` (for i = len(self), one past its end)."""
        if self._starts is None:
            self._starts = np.cumsum(self.lengths + 1) - self.lengths - 1
        return int(self._starts[i]) if i < self.lengths.size else len(self.text) + 1

    def __getitem__(self, index):
        if isinstance(index, slice):
            first, last, step = index.indices(len(self))
            if step != 1:
                raise ValueError("a slice of JoinedTexts has step 1")
            last = max(first, last)
            text = self.text[self._start(first) : self._start(last) - 1] if last > first else ""
            return JoinedTexts(text, self.lengths[first:last])
        i = index + len(self) if index < 0 else index
        if not 0 <= i < len(self):
            raise IndexError("JoinedTexts index out of range")
        start = self._start(i)
        return self.text[start : start + int(self.lengths[i])]


def _runs_by_chunk(
    texts, table: bytes, lowercase: bool, unspaced: str | None = None, symbols: bool = False
):
    """``(first, last, runs, ascii, symbols, words)`` per chunk of :func:`_chunks`: the
    runs of texts ``first``..``last - 1`` (:func:`_chunk_runs` for ASCII bytes,
    :func:`_text_chunk_runs` for str of any script, or :class:`JoinedTexts`), whether
    they were bytes, with ``symbols`` their symbols (:func:`_ascii_words_and_symbols`,
    in the words' codes, or :func:`_symbol_runs`; None without ``symbols`` or when an
    ASCII chunk has none), and how many of the runs are the words, the first ones (the
    others: the characters and pairs of ``unspaced``, which n-grams are not made of)."""
    if isinstance(texts, JoinedTexts) or (bool(texts) and isinstance(texts[0], str)):
        joined = texts if isinstance(texts, JoinedTexts) else JoinedTexts.of(texts)
        for first, last in _chunks(joined.lengths):
            found: list | None = [] if symbols else None
            *runs, words = _text_chunk_runs(joined[first:last], lowercase, unspaced, found)
            yield first, last, tuple(runs), False, (found[0] if found else None), words
        return
    for first, last in _chunks(np.fromiter(map(len, texts), np.int64, len(texts))):
        part = texts[first:last]
        if symbols:
            runs, found = _ascii_words_and_symbols(part, table, lowercase)
            yield first, last, runs, True, (found if found[1].size else None), runs[2].size
        else:
            runs = _chunk_runs(part, table)
            yield first, last, runs, True, None, runs[2].size


# The kind of each character for the symbols: a space (``\s``, and NUL, which the
# tokenizer makes a space), a word character (``\w``), or another character.
_S, _W, _P = 0, 1, 2
_ASCII_OTHERS: bytes | None = None  # bytes.translate's table marking the other bytes
_IS_SPACE: np.ndarray | None = None  # \s (or NUL) for each code point of the BMP


def _spaces() -> np.ndarray:
    """Whether each code point of the Basic Multilingual Plane is a space (``\\s`` of
    Python's re on str, or NUL), as the regex engine sees it; no code point above it is
    (the test compares every plane). The engine finds the 30 spaces of the plane's text
    (a substitution of the 65,506 others took 5 ms of every process counting the
    symbols, this 1)."""
    global _IS_SPACE
    if _IS_SPACE is None:
        points = np.arange(0x10000, dtype="<u4")
        text = str(points.data, "utf-32-le", "surrogatepass")
        space = np.zeros(points.size, dtype=bool)
        space[[found.start() for found in re.finditer(r"\s", text)]] = True
        space[0] = True
        _IS_SPACE = space
    return _IS_SPACE


def is_space(points: np.ndarray) -> np.ndarray:
    """Whether each code point of ``points`` (uint32) is a space (``\\s``) or NUL, bool."""
    space = np.zeros(points.size, dtype=bool)
    low = points < 0x10000
    space[low] = _spaces()[points[low]]
    return space


def _kinds(points: np.ndarray) -> np.ndarray:
    """The kind (``_S``, ``_W``, ``_P``) of each code point of ``points``, uint8."""
    space = is_space(points)
    kinds = np.where(is_word(points), np.uint8(_W), np.uint8(_P))
    kinds[space] = _S
    return kinds


def _symbol_runs(
    values: np.ndarray, word: np.ndarray, space: np.ndarray, text_starts: np.ndarray,
    dropped=None,
):  # fmt: skip
    """``(values, starts, ends, text)``: the symbols of text (a word character alone, a
    run of characters neither word nor space: :func:`nbclass.text.tokenizer.symbol_tokens`)
    in ``values`` (bytes or code points, already lower-cased as the settings say; which
    are word characters and which spaces: ``word`` and ``space``, bool), copied one
    after the other into a new array, each followed by a space; where each starts and
    ends there and the text it is in (texts start at ``text_starts``, ascending; a space
    between two texts). ``dropped`` (bool, one per
    value, or None): a symbol holding one of those is left out
    (:func:`nbclass.text.tokenizer.spaced_symbols`)."""
    # Each character marked 1 in a run of others (neither word nor space), 2 if a word
    # character alone (no word character either side), else 0: the symbols are the runs
    # of marks 1 and 2 (two lone word characters are never adjacent), and only the
    # bounds of those are found, not those of every word and space.
    alone = word.copy()
    alone[1:] &= ~word[:-1]
    alone[:-1] &= ~word[1:]
    other = word | space
    np.logical_not(other, out=other)
    marks = other.view(np.uint8)
    marks += alone.view(np.uint8)
    marks += alone.view(np.uint8)
    change = np.flatnonzero(marks[1:] != marks[:-1]) + 1
    bounds = np.concatenate(([0], change, [marks.size]))
    starts, ends = bounds[:-1], bounds[1:]
    keep = marks[starts] != 0
    starts, ends = starts[keep], ends[keep]
    if dropped is not None and dropped.any():
        held = np.concatenate(([0], np.cumsum(dropped, dtype=np.int64)))
        clear = held[ends] == held[starts]
        starts, ends = starts[clear], ends[clear]
    length = ends - starts
    at = np.cumsum(length + 1) - length - 1
    out = np.full(int(length.sum() + length.size), _SPACE, dtype=values.dtype)
    _copy_segments(out, at, values, starts, length)
    text = np.searchsorted(text_starts, starts, side="right") - 1
    return out, at, at + length, text


_ASCII_LOWER = bytes(range(256)).lower()
_P_BYTE = bytes([_P])


def _ascii_words_and_symbols(texts: Sequence[bytes], table: bytes, lowercase: bool):
    """``(runs, symbols)`` of ASCII ``texts``: ``runs`` as :func:`_chunk_runs` gives
    them (``table`` its own, which keeps the word bytes, lower-cased if ``lowercase``),
    and ``symbols`` as :func:`_symbol_runs`, ``(codes, starts, ends, text)``, all
    in the same ``codes``: the texts joined by spaces (lower-cased if ``lowercase``), where
    nothing is copied: a run's key is a function of its bytes wherever they lie, and the
    bytes between runs are never read. The symbols are the runs of bytes neither word
    nor space (found as the words are, from the texts translated by a table that marks
    those bytes), then the words' runs of one byte, each part in the texts' order. In text of
    word characters and spaces only (no other byte), the symbols are those runs of one
    byte alone, in the words' codes, and the text is not lower-cased again.

    >>> table = bytes(b if chr(b).isalnum() else 32 for b in range(256)).lower()
    >>> runs, symbols = _ascii_words_and_symbols([b"Hi, u OK?!", b":) ab"], table, True)
    >>> [bytes(runs[1][a:b]) for a, b in zip(runs[2], runs[3])], runs[4].tolist()
    ([b'hi', b'u', b'ok', b'ab'], [0, 0, 0, 1])
    >>> [bytes(symbols[0][a:b]) for a, b in zip(symbols[1], symbols[2])], symbols[3].tolist()
    ([b',', b'?!', b':)', b'u'], [0, 0, 1, 0])
    """
    global _ASCII_OTHERS
    if _ASCII_OTHERS is None:  # each byte neither word nor space _P, the others spaces
        kinds = np.full(256, _P, dtype=np.uint8)
        kinds[:128] = _kinds(np.arange(128, dtype="<u4"))
        _ASCII_OTHERS = np.where(kinds == _P, _P, _SPACE).astype(np.uint8).tobytes()
    joined = b" ".join(texts) + b" "  # a space ends every run, the last one's too
    words = _chunk_runs(texts, table, joined)
    translated, codes, starts, ends, text = words
    one = np.flatnonzero(ends - starts == 1)  # a word character alone
    others = joined.translate(_ASCII_OTHERS)
    if _P_BYTE not in others:  # text of word characters and spaces only: no other symbol
        return words, (codes, starts[one], ends[one], text[one])
    # The words' bytes are the same there (each word byte lower-cased as the table does).
    codes = np.frombuffer(joined.translate(_ASCII_LOWER) if lowercase else joined, np.uint8)
    words = (translated, codes, starts, ends, text)
    other_starts, other_ends = run_bounds(np.frombuffer(others, np.uint8))
    symbols = (
        codes, np.concatenate((other_starts, starts[one])),
        np.concatenate((other_ends, ends[one])),
        np.concatenate((_run_texts(texts, other_starts, codes.size), text[one])),
    )  # fmt: skip
    return words, symbols


def _run_texts(texts: Sequence[bytes], starts: np.ndarray, size: int) -> np.ndarray:
    """The text of each run starting at ``starts`` (ascending) in ``texts`` joined by one
    byte each (``size`` bytes in all, the last one's too), int64."""
    n = len(texts)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    text_start = np.cumsum(lengths + 1) - lengths - 1
    per_text = np.diff(np.searchsorted(starts, np.append(text_start, size)))
    return np.repeat(np.arange(n), per_text)


def _chunk_runs(texts: Sequence[bytes], table: bytes, joined: bytes | None = None):
    """``(translated, codes, starts, ends, text)``: the texts joined by spaces and
    translated by ``table`` (bytes and uint8 ndarray), its runs, and the text of each run
    (int64, in order: text i is bytes [start_i, start_i + len) of the chunk). ``joined``:
    the texts joined by spaces with one at the end, if already made."""
    joined = b" ".join(texts) + b" " if joined is None else joined
    translated = joined.translate(table)
    codes = np.frombuffer(translated, dtype=np.uint8)
    starts, ends = run_bounds(codes)
    return translated, codes, starts, ends, _run_texts(texts, starts, codes.size)


# Whether each code point is a word character of the token pattern (``\w`` of Python's
# re on str: letters, digits and underscore of every script), filled a plane (65,536
# code points) at a time, when a text first holds one of the plane's code points: the
# Basic Multilingual Plane costs a few milliseconds, all 17 planes about 0.15 s.
_PLANE_BITS = 16
_IS_WORD = np.zeros(0x110000, dtype=bool)
_PLANES_DONE = np.zeros(0x110000 >> _PLANE_BITS, dtype=bool)
_NOT_WORD = re.compile(r"\W")
_LINE = 10  # ends each text of a chunk of str texts
_WORDS = re.compile(r"\w+")
_HIGH_BYTES = bytes(range(128, 256))
# The ASCII word characters (\\w: letters, digits, underscore) and NUL, deleted from a
# vocabulary joined by NULs to find whether its entries hold anything else.
_ASCII_WORD_OR_NUL = bytes(
    [0] + [b for b in range(128) if chr(b).isalnum() or chr(b) == "_"]
)


def _fill_plane(plane: int) -> None:
    """Mark the word characters of ``plane`` in ``_IS_WORD``, as the regex engine sees
    them: every other code point of the plane replaced by a space, what is left is \\w."""
    first = plane << _PLANE_BITS
    points = np.arange(first, first + (1 << _PLANE_BITS), dtype="<u4")
    text = str(points.data, "utf-32-le", "surrogatepass")
    kept = _NOT_WORD.sub(" ", text).encode("utf-32-le", "surrogatepass")
    _IS_WORD[first : first + points.size] = np.frombuffer(kept, dtype="<u4") != _SPACE
    _PLANES_DONE[plane] = True


def is_word(points: np.ndarray) -> np.ndarray:
    """Whether each code point of ``points`` (uint32) is a word character (``\\w``), bool
    of the same shape."""
    if not _PLANES_DONE[0]:
        _fill_plane(0)
    if points.size and int(points.max()) >> _PLANE_BITS:
        for plane in np.unique(points[points >> _PLANE_BITS > 0] >> _PLANE_BITS).tolist():
            if not _PLANES_DONE[plane]:
                _fill_plane(plane)
    return _IS_WORD[points]


# Whether each code point is of a script written without spaces
# (:data:`nbclass.text.tokenizer.UNSPACED_RANGES`), made when first asked for.
_IS_UNSPACED: np.ndarray | None = None


def is_unspaced(points: np.ndarray) -> np.ndarray:
    """Whether each code point of ``points`` (uint32) is of a script written without
    spaces, bool of the same shape."""
    global _IS_UNSPACED
    if _IS_UNSPACED is None:
        from .tokenizer import UNSPACED_RANGES

        table = np.zeros(0x110000, dtype=bool)
        for low, high in UNSPACED_RANGES:
            table[low : high + 1] = True
        _IS_UNSPACED = table
    return _IS_UNSPACED[points]


_DOTTED_I = 0x130  # 'İ', the one character that str.lower() makes two ('i' and U+0307)


def _lowered(joined: str, lengths: np.ndarray, texts: JoinedTexts) -> tuple[str, np.ndarray]:
    """``(joined.lower(), the new length of each text)``, ``joined`` being ``texts``
    joined by newlines, with a newline at the end. A text's length grows by one for each
    ``İ`` it holds; if the whole grew otherwise, or a text's end does not fall on its
    newline, the texts are lower-cased one by one instead."""
    lowered = joined.lower()
    if len(lowered) == len(joined):
        return lowered, lengths
    points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    dotted = np.flatnonzero(points == _DOTTED_I)
    if len(lowered) == len(joined) + dotted.size:
        ends = np.cumsum(lengths + 1)  # of each text with its newline, in ``joined``
        lengths = lengths + np.bincount(
            np.searchsorted(ends, dotted, side="right"), minlength=lengths.size
        )
        lowered_points = np.frombuffer(lowered.encode("utf-32-le", "surrogatepass"), "<u4")
        if (lowered_points[np.cumsum(lengths + 1) - 1] == _LINE).all():
            return lowered, lengths
    each = JoinedTexts.of([text.lower() for text in texts])
    return each.text + "\n", each.lengths


def _text_chunk_runs(
    texts: JoinedTexts, lowercase: bool, unspaced: str | None = None, symbols: list | None = None
):
    """:func:`_chunk_runs` of texts of any script (:class:`JoinedTexts`), with the
    regex's ``\\w``: ``(translated, codes, starts, ends, text, n_words)``, where ``translated``
    holds the UTF-8 bytes of the texts' tokens (lower-cased if ``lowercase``, as
    ``str.lower`` does), every other character a space and each text ended by a newline.

    The joined texts are lower-cased at once: ``str.lower`` looks at a character's
    neighbours only for a capital sigma (final or not), past case-ignorable characters,
    and a newline is neither cased nor case-ignorable, so each text is lower-cased as on
    its own. Where that changes the length (``'İ'.lower()`` is two code points), the
    texts are lower-cased one by one to know their new lengths. The result is viewed as
    code points; a word character next to another one is part of a run of two or more,
    a token; every other code point becomes a space (a newline at the end of a text),
    and the result is encoded as UTF-8. The runs of bytes above the space are the
    tokens, whole, and never one character long.

    With an ``unspaced`` mode, the word characters of the scripts written without spaces
    (:func:`is_unspaced`) and the others are two kinds: a word character is kept beside
    one of its own kind (``"runs"``; the others as before), and a space is put between
    two kept characters of different kinds; ``"characters"`` and ``"pairs"`` keep every
    unspaced one, with a space after each. ``"pairs"`` adds after the texts one run for
    each two adjacent unspaced characters, joined by the byte 0x01, as the words of an
    n-gram are (:func:`with_ngrams`): a space in its name. ``"all"`` keeps the runs as
    ``"runs"`` does and adds one run for each unspaced character, then the pairs.

    The sixth item is the number of runs that are the words (``words`` of
    :func:`nbclass.text.tokenizer.make_tokenizer`: the runs a text's word n-grams are made
    from, and its tokens an ``ngram_doc_limit`` counts): the first ones; those after them
    are the characters and pairs.

    With a list ``symbols``, the texts' symbols (:func:`_symbol_runs`, as UTF-8: ``(codes,
    starts, ends, text)``) are appended to it; beside an ``unspaced`` mode, those holding no
    character of those scripts (:func:`nbclass.text.tokenizer.spaced_symbols`)."""
    joined, lengths = texts.text + "\n", texts.lengths
    if lowercase:
        joined, lengths = _lowered(joined, lengths, texts)
    points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    word = is_word(points)
    if symbols is not None:
        text_starts = np.cumsum(lengths + 1) - lengths - 1
        dropped = None if unspaced is None else is_unspaced(points)  # only "all" has both
        out, _, _, text = _symbol_runs(points, word, is_space(points), text_starts, dropped)
        codes = np.frombuffer(str(out.data, "utf-32-le").encode("utf-8"), dtype=np.uint8)
        starts, ends = run_bounds(codes)  # (a symbol's UTF-8 never holds a space byte)
        symbols.append((codes, starts, ends, text))
    if unspaced is None:
        token = _beside(word)  # a word character beside another one
        cut = None
    else:
        alone = word & is_unspaced(points)
        other = word & ~alone
        if unspaced in ("runs", "all"):
            token = _beside(alone) | _beside(other)
            cut = token[:-1] & token[1:] & (alone[:-1] != alone[1:])
        else:
            token = alone | _beside(other)
            cut = token[:-1] & token[1:] & (alone[:-1] | alone[1:])
    ends_of_texts = np.cumsum(lengths + 1) - 1
    kept = np.where(token, points, np.uint32(_SPACE))
    kept[ends_of_texts] = _LINE  # the end of each text
    if cut is not None and cut.any():
        kept = np.insert(kept, np.flatnonzero(cut) + 1, np.uint32(_SPACE))
    translated = str(kept.data, "utf-32-le").encode("utf-8")
    codes = np.frombuffer(translated, dtype=np.uint8)
    word = codes > _SPACE
    change = np.flatnonzero(word[1:] != word[:-1]) + 1
    if word.size and word[0]:
        change = np.concatenate(([0], change))
    starts, ends = change[0::2], change[1::2]  # the last byte is a newline: runs close
    text = np.searchsorted(np.flatnonzero(codes == _LINE), starts)
    n_words = starts.size
    if unspaced in ("pairs", "all"):
        first = np.flatnonzero(alone[:-1] & alone[1:])  # a pair's first character
        pairs = np.empty((first.size, 4), dtype="<u4")
        pairs[:, 0], pairs[:, 1] = points[first], _JOIN
        pairs[:, 2], pairs[:, 3] = points[first + 1], _SPACE
        extra, where = [pairs.ravel()], [first]
        if unspaced == "all":  # the characters, before the pairs
            single = np.flatnonzero(alone)
            characters = np.empty((single.size, 2), dtype="<u4")
            characters[:, 0], characters[:, 1] = points[single], _SPACE
            extra, where = [characters.ravel(), *extra], [single, *where]
        more = str(np.concatenate(extra).data, "utf-32-le").encode("utf-8")
        if more:  # one run a character or pair (0x01 is not a space)
            more_starts, more_ends = run_bounds(np.frombuffer(more, dtype=np.uint8))
            translated += more
            codes = np.frombuffer(translated, dtype=np.uint8)
            starts = np.concatenate((starts, more_starts + len(translated) - len(more)))
            ends = np.concatenate((ends, more_ends + len(translated) - len(more)))
            text = np.concatenate((text, np.searchsorted(ends_of_texts, np.concatenate(where))))
    return translated, codes, starts, ends, text, n_words


def _beside(kind: np.ndarray) -> np.ndarray:
    """Which characters of ``kind`` (bool) have a neighbour of the kind, bool."""
    token = np.zeros(kind.size, dtype=bool)
    np.logical_and(kind[1:], kind[:-1], out=token[1:])
    token[:-1] |= token[1:]
    return token


@dataclass(frozen=True, eq=False)
class RunCounter:
    """Counts ASCII texts over a vocabulary as the tokenizer would (see the module).

    Built by :meth:`for_vocabulary`; :meth:`count` takes the texts as ASCII bytes.

    Attributes
    ----------
    table : bytes
        The splitter's translation table.
    words : WordTable
        The vocabulary's ASCII words, then the stop words.
    columns : int64 ndarray of shape (K + 1,)
        The column of each word of ``words`` (``n_words`` for a stop word), then −1:
        ``columns[found]`` is −1 for an unknown run.
    n_words : int
        V, the number of columns.
    lowercase : bool
        Whether str texts are lower-cased before their runs are found.
    ngram_range : tuple of int
        The n-grams counted besides (or, from 2, instead of) the words; an n-gram of the
        vocabulary is in ``words`` with 0x01 for its spaces (:func:`with_ngrams`).
    unspaced : str or None
        How the scripts written without spaces are cut (the settings' own).
    symbols : bool
        Whether the symbols are tokens too (the settings' own); the vocabulary's symbols
        are in ``words``.
    pairs : WordTable or None
        With word pairs and no longer n-grams (``ngram_range`` (1, 2) or (2, 2), no
        ``unspaced`` mode: its pairs of characters are runs, found by their bytes): the
        vocabulary's pairs, keyed by the ids of their two words
        in ``words`` (first << 32 | second: exact, no hash and no bytes to compare).
        ``words`` then holds the pairs' words too, those not counted alone with column
        −1 (:func:`_pairs_by_words`), and a pair of a text is found from its two tokens'
        ids: no run of its bytes is made (:func:`with_ngrams`), keyed or compared.
    pair_columns : int64 ndarray of shape (P + 1,) or None
        The column of each pair of ``pairs``, then −1.
    ngram_doc_limit : int or None
        The settings' own: no n-gram in a text of more tokens (:func:`ngram_firsts`).
    """

    table: bytes
    words: WordTable
    columns: np.ndarray
    n_words: int
    lowercase: bool = True
    ngram_range: tuple = (1, 1)
    unspaced: str | None = None
    symbols: bool = False
    pairs: WordTable | None = None
    pair_columns: np.ndarray | None = None
    ngram_doc_limit: int | None = None

    @classmethod
    def for_vocabulary(
        cls, vocabulary: Sequence[str] | None, splitter: AsciiSplitter, columns=None,
        joined: tuple[bytes, int] | None = None,
    ) -> RunCounter | None:
        """The counter of ``vocabulary`` (the words of the columns 0..V−1, in order) under
        ``splitter``'s tokens, or None when its table cannot be made (two words with one
        hash, or a word holding a space). ``columns()`` gives the word -> column mapping,
        asked for only when there are stop words (by default, made from the words).
        ``joined``: instead of ``vocabulary``, ``(their UTF-8 separated by NULs, V)``, as
        a model file keeps them (the same counter, made without a string per word)."""
        table = splitter.table
        ngrams = tuple(splitter.ngram_range) != (1, 1)
        pairs = splitter.unspaced in ("pairs", "all")
        stop = _stop_runs(splitter)
        odd = None  # n-gram and pair models: words holding 0x01 (no token does) are never found
        if joined is not None:
            blob, V = joined
            if (ngrams or pairs) and b"\x01" in blob:
                codes = np.frombuffer(blob, np.uint8)
                odd = np.zeros(V, dtype=bool)  # the words holding a 0x01, as above
                odd[np.searchsorted(np.flatnonzero(codes == 0), np.flatnonzero(codes == 1))] = True
            if ngrams or pairs:
                blob = blob.replace(b" ", b"\x01")
            blob = blob.replace(b"\x00", b" ")
        else:
            V = len(vocabulary)
            if ngrams or pairs:
                # (No word holds a NUL: the model file separates its words by NULs.)
                text = "\x00".join(vocabulary)
                if "\x01" in text:
                    odd = np.array(["\x01" in word for word in vocabulary], dtype=bool)
                text = text.replace(" ", "\x01").replace("\x00", " ")
            else:
                text = " ".join(vocabulary)
            blob = text.encode("utf-8", "surrogatepass")
        codes = np.frombuffer(b" ".join([blob, *stop]) if stop else blob, dtype=np.uint8)
        starts, ends = run_bounds(codes)
        if starts.size != V + len(stop):
            return None
        # Only a word whose ASCII bytes the translation leaves as they are can be a run
        # (never "AB" when text is lower-cased, nor "a-b" or a word with a NUL), and a
        # dropped run (one character, a stop word) is never a token: no other word is
        # looked for. (A word with other bytes that are not a run's is never found.)
        low = table[:128]
        if ngrams or pairs:  # the joins of an n-gram's words, of a pair's characters
            low = low[:_JOIN] + bytes([_JOIN]) + low[_JOIN + 1 :]
        kept = bytes(codes).translate(low + _HIGH_BYTES)
        words = ends[:V] - starts[:V] > 1
        # The runs holding a changed byte, found by a binary search of those bytes alone.
        changed = np.flatnonzero(np.frombuffer(kept, np.uint8) != codes)
        run = np.searchsorted(starts, changed, side="right") - 1
        inside = run >= 0
        inside[inside] &= changed[inside] < ends[run[inside]]
        run = run[inside]
        words[run[run < V]] = False
        if splitter.symbols:  # the symbols (a symbol holding a 0x01 is counted in Python)
            if odd is not None and odd.any():
                return None
            if joined is not None:
                vocabulary = joined[0].decode("utf-8", "surrogatepass").split("\x00")
            words |= symbol_rows(vocabulary)
        if odd is not None:
            words &= ~odd
        at = None
        if stop:
            at = columns() if columns else dict(zip(vocabulary, range(V)))
        for word in stop:
            j = at.get(word.decode("utf-8"))
            if j is not None:
                words[j] = False
        columns = np.flatnonzero(words)
        if tuple(splitter.ngram_range) in _BY_WORDS and splitter.unspaced is None:
            made = _pairs_by_words(codes, starts, ends, columns, V, len(stop))
            if made is None:
                return None
            return cls(
                table, made[0], made[1], V, splitter.lowercase, tuple(splitter.ngram_range),
                splitter.unspaced, splitter.symbols, made[2], made[3], splitter.ngram_doc_limit,
            )  # fmt: skip
        found = np.concatenate((columns, np.arange(V, V + len(stop))))
        table_words = WordTable.build(codes, starts[found], ends[found])
        if table_words is None:
            return None
        columns = np.concatenate((columns, np.full(len(stop), V), [-1]))
        return cls(
            table, table_words, columns.astype(np.int64), V, splitter.lowercase,
            tuple(splitter.ngram_range), splitter.unspaced, splitter.symbols,
            ngram_doc_limit=splitter.ngram_doc_limit,
        )  # fmt: skip

    def count(
        self, texts: Sequence[bytes] | Sequence[str]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(rows, columns, values, n_tokens)`` of ``texts``, all ASCII bytes or all str
        (any script): the nonzero counts, int64 of shape (nnz,) sorted by row then
        column, and each text's number of tokens, shape (n,). Texts are counted in
        chunks of about ``CHUNK_BYTES`` (characters, for str)."""
        parts, n_tokens = [], np.zeros(len(texts), dtype=np.int64)
        chunks = _runs_by_chunk(texts, self.table, self.lowercase, self.unspaced, self.symbols)
        for first, last, runs, ascii_, symbols, words in chunks:
            rows, columns, values, tokens = self._count_chunk(
                last - first, runs, ascii_, symbols, words
            )
            parts.append((rows + first, columns, values))
            n_tokens[first:last] = tokens
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty, n_tokens
        rows, columns, values = (np.concatenate(p) for p in zip(*parts))
        return rows, columns, values, n_tokens

    def _count_chunk(self, n: int, runs, ascii: bool, symbols=None, words: int | None = None):
        """``count``'s arrays of one chunk of ``n`` texts: ``runs``, ``ascii``,
        ``symbols`` and ``words`` (the runs that are words, the first ones) as
        :func:`_runs_by_chunk` gives them."""
        V = self.n_words
        _, codes, starts, ends, text = runs
        found = self.words.find(codes, starts, ends, run_keys(codes, starts, ends, ascii))
        column = self.columns[found]
        token = (ends - starts > 1) & (column != V)  # not one character, not a stop word
        after = None  # unspaced's characters and pairs: after the words' n-grams, in none
        if self.ngram_range != (1, 1) and words is not None and words < starts.size:
            after = text[words:], column[words:], token[words:]
            found, starts, ends = found[:words], starts[:words], ends[:words]
            text, column, token = text[:words], column[:words], token[:words]
        if self.pairs is not None:  # each two tokens of a text in turn: a pair
            kept = np.flatnonzero(token)
            found, text, column = found[kept], text[kept], column[kept]
            first = ngram_firsts(text, 2, self.ngram_doc_limit)
            one, two = found[first], found[first + 1]
            gram_column = np.full(first.size, -1, dtype=np.int64)
            both = np.flatnonzero((one >= 0) & (two >= 0))  # a pair of unknown words is too
            if both.size:
                keys = one[both].astype(np.uint64) << np.uint64(32)
                keys |= two[both].astype(np.uint64)
                gram_column[both] = self.pair_columns[self.pairs.find(None, None, None, keys)]
            if self.ngram_range[0] > 1:
                text, column = text[first], gram_column
            else:
                text = np.concatenate((text, text[first]))
                column = np.concatenate((column, gram_column))
            token = np.ones(text.size, dtype=bool)
        elif self.ngram_range != (1, 1):
            starts, ends, text, column = starts[token], ends[token], text[token], column[token]
            grams, gram_starts, gram_ends, gram_text = with_ngrams(
                codes, starts, ends, text, self.ngram_range, self.ngram_doc_limit
            )
            gram_keys = run_keys(grams, gram_starts, gram_ends, ascii)
            gram_column = self.columns[self.words.find(grams, gram_starts, gram_ends, gram_keys)]
            if self.ngram_range[0] > 1:
                text, column = gram_text, gram_column
            else:
                text = np.concatenate((text, gram_text))
                column = np.concatenate((column, gram_column))
            token = np.ones(text.size, dtype=bool)
        if after is not None:
            text, column, token = (np.concatenate(p) for p in zip((text, column, token), after))
        if symbols is not None:  # after the words and n-grams; stop words dropped
            codes, starts, ends, symbol_text = symbols
            keys = run_keys(codes, starts, ends, ascii)
            symbol_column = self.columns[self.words.find(codes, starts, ends, keys)]
            text = np.concatenate((text, symbol_text))
            column = np.concatenate((column, symbol_column))
            token = np.concatenate((token, symbol_column != V))
        n_tokens = np.bincount(text[token], minlength=n)
        known = token & (column >= 0)
        keys = text[known] * V + column[known]
        if n * V <= 1 << 32:  # sorted as 32-bit numbers: 0.6 x the time of 64-bit ones
            keys = keys.astype(np.uint32)
        keys, values = np.unique(keys, return_counts=True)
        keys = keys.astype(np.int64, copy=False)
        return keys // V, keys % V, values.astype(np.int64), n_tokens


class RunTally:
    """Per-class counts of ASCII texts by runs, with numpy: a fitting worker's tally of
    the texts the splitter applies to (:func:`nbclass.counting.tally.tally_paths`).

    For each chunk of texts (about ``CHUNK_BYTES``): the runs and their keys as for
    :class:`RunCounter`; runs of one character and stop words dropped; the chunk's
    distinct words found by sorting the keys (each run of a long word compared byte
    for byte with one run of the word); each distinct word given the tally's number
    for it (the words met before found by binary search in their sorted keys, a long
    one compared with the bytes kept); the (text, word) pairs counted by sorting, and
    summed per (word, class) into D_jc (pairs) and T_jc (tokens). A chunk where two
    different long words share a hash is not counted: :meth:`add` gives its texts back
    and the caller tokenizes them, so the counts are exact whatever the hash does.

    Attributes
    ----------
    n_words : int
        The words met, numbered in the order met.
    pairs : int
        At least the (word, class) pairs held (summed over the chunks).
    ngram_doc_limit : int or None
        The splitter's: no n-gram (nor word pair) in a text of more tokens.
    """

    def __init__(self, splitter: AsciiSplitter, n_classes: int, stop: WordTable | None):
        self.table, self.n_classes, self.stop = splitter.table, n_classes, stop
        self.lowercase, self.ngram_range = splitter.lowercase, tuple(splitter.ngram_range)
        self.unspaced, self.symbols = splitter.unspaced, splitter.symbols
        self.ngram_doc_limit = splitter.ngram_doc_limit
        self.n_words = self.pairs = 0
        # The words' keys and the number of each, in a table where each run is looked up.
        self._numbers = _KeyTable()
        # Word pairs (--ngram-range 1,2), numbered among the words, found by the numbers
        # of their two words (exact: no hash, no bytes compared) and sent as them: a pair
        # has no bytes of its own (an empty entry in the words' bytes below); its name,
        # its words' joined by a space, is made by whoever needs it (pair_names).
        self._bigrams = _Numbers()
        # (Not beside unspaced "pairs": a pair of its characters, a run of bytes, can be
        # a pair of its words, which are characters too: one token, by bytes alone.)
        self._by_numbers = self.ngram_range == (1, 2) and self.unspaced != "pairs"
        self._sent = 0  # the words numbered before the last packed_new()
        self._bytes = bytearray()  # the words' bytes, each followed by a NUL, by number
        self._starts = np.zeros(1024, dtype=np.int64)  # where each word starts in them
        self._word_keys = np.zeros(1024, dtype=np.uint64)  # each word's key, by number
        self._pair_words = np.full((1024, 2), -1, dtype=np.int64)  # a pair's two words
        self._cells: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        # By kind (ASCII bytes, text): the texts gathered, their labels, their marks (−1
        # for none) and their size.
        self._waiting = {False: [[], [], [], 0], True: [[], [], [], 0]}
        # The rows of the sampled texts counted since the last take_sampled() (add's
        # marks): the marks of those counted, and (mark, word number, count) triples.
        self._sampled: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        # And those of marked texts its caller tokenized instead: (mark, Counter).
        self.sampled_bags: list[tuple[int, dict]] = []

    @classmethod
    def make(cls, splitter: AsciiSplitter, n_classes: int) -> RunTally | None:
        """A tally for ``splitter``'s tokens, or None when its stop words cannot be told
        apart by their keys."""
        stop = _stop_runs(splitter)
        words = WordTable.of(stop) if stop else None
        if stop and words is None:
            return None
        return cls(splitter, n_classes, words)

    def gather(
        self, texts: Sequence[bytes] | Sequence[str] | JoinedTexts, labels: Sequence[int],
        marks: Sequence[int] | None = None,
    ) -> list:  # fmt: skip
        """:meth:`add` ``texts`` (all ASCII bytes, or all str, or :class:`JoinedTexts`)
        once about ``CHUNK_BYTES`` of their kind are gathered, so that many short texts
        still make full chunks (a chunk has a fixed cost of a few dozen numpy calls);
        returns the ``(text, label)`` pairs not counted, from this call or earlier ones.
        :meth:`flush` counts the rest.

        ``marks`` (one per text, −1 for none; :meth:`add`'s): the marked texts' rows are
        kept as they are counted, and a marked text not counted comes back as ``(text,
        label, mark)``. Marked texts are gathered with the others, into the same full
        chunks: counted apart, a part's few marked texts made chunks of their own (151
        chunks of multilingual's fit where 6 hold all its texts).
        """
        text = isinstance(texts, JoinedTexts) or (bool(texts) and isinstance(texts[0], str))
        waiting = self._waiting[text]
        if text:
            texts = texts if isinstance(texts, JoinedTexts) else JoinedTexts.of(texts)
            waiting[0].append(texts)
            waiting[3] += len(texts.text)
        else:
            waiting[0].extend(texts)
            waiting[3] += sum(map(len, texts))
        waiting[1].extend(labels)
        waiting[2].extend(repeat(-1, len(labels)) if marks is None else marks)
        return self._add_waiting(text) if waiting[3] >= CHUNK_BYTES else []

    def flush(self) -> list:
        """Count the texts :meth:`gather` holds; the ``(text, label)`` pairs not counted
        (``(text, label, mark)`` of a marked one)."""
        return self._add_waiting(False) + self._add_waiting(True)

    def _add_waiting(self, text: bool) -> list:
        texts, labels, marks, _ = self._waiting[text]
        self._waiting[text] = [[], [], [], 0]
        if text and texts:
            texts = JoinedTexts.concat(texts)
        marked = np.array(marks, dtype=np.int64)
        if not marked.size or marked.max() < 0:
            marked = None
        refused = self.add(texts, labels, marked)
        if marked is None:
            return [(texts[i], labels[i]) for i in refused]
        return [
            (texts[i], labels[i]) if marks[i] < 0 else (texts[i], labels[i], marks[i])
            for i in refused
        ]

    @property
    def waiting(self) -> bool:
        """Whether :meth:`gather` holds texts not counted yet."""
        return bool(self._waiting[False][0] or self._waiting[True][0])

    def add(
        self, texts: Sequence[bytes] | Sequence[str] | JoinedTexts, labels: Sequence[int],
        marks: np.ndarray | None = None,
    ) -> list[int]:  # fmt: skip
        """Count ``texts`` (all ASCII bytes, or all str of any script; each at most
        ``CHUNK_BYTES``) of classes ``labels``; returns the indices of those not counted
        (a chunk with a hash clash). ``marks`` (int64, one per text, −1 for none): the
        rows of the texts marked are kept as well, by their marks (:meth:`take_sampled`)."""
        refused = []
        chunks = _runs_by_chunk(texts, self.table, self.lowercase, self.unspaced, self.symbols)
        for first, last, runs, ascii_, symbols, words in chunks:
            mine = None if marks is None else marks[first:last]
            if not self._add_chunk(runs, labels[first:last], ascii_, mine, symbols, words):
                refused.extend(range(first, last))
        return refused

    def take_sampled(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(counted, marks, ids, counts)``: the marks of the marked texts counted since
        the last call, and their rows as (mark, word number, count) triples, each
        (mark, word) once; then cleared."""
        parts = self._sampled or [(np.zeros(0, dtype=np.int64),) * 4]
        self._sampled = []
        return tuple(np.concatenate(p) for p in zip(*parts))

    def _add_chunk(
        self, runs, labels: Sequence[int], ascii: bool, marks=None, symbols=None,
        words: int | None = None,
    ) -> bool:  # fmt: skip
        """Count one chunk of :func:`_runs_by_chunk` (its ``runs``, ``ascii``,
        ``symbols`` and ``words``, the number of runs that are words); False when a
        hash clash leaves it uncounted."""
        C = self.n_classes
        translated, codes, starts, ends, text = runs
        keep = ends - starts > 1  # a run of one character is never a token
        if words is not None and words < keep.size:  # the words: those before the others
            words = int(np.count_nonzero(keep[:words]))
        starts, ends, text = starts[keep], ends[keep], text[keep]
        keys = run_keys(codes, starts, ends, ascii)
        if self.stop is not None:
            keep = self.stop.find(codes, starts, ends, keys) < 0
            if words is not None and words < keep.size:
                words = int(np.count_nonzero(keep[:words]))
            starts, ends, text, keys = starts[keep], ends[keep], text[keep], keys[keep]
        n_runs = keys.size if words is None else min(words, keys.size)
        if self.ngram_range != (1, 1) and not self._by_numbers:
            # The n-grams of the words, before the characters and pairs of ``unspaced``.
            after = starts[n_runs:], ends[n_runs:], text[n_runs:], keys[n_runs:]
            codes, starts, ends, text, keys = _plus_ngrams(
                codes, starts[:n_runs], ends[:n_runs], text[:n_runs], keys[:n_runs],
                self.ngram_range, ascii, self.ngram_doc_limit,
            )  # fmt: skip
            if after[0].size:  # (their codes are the first ones of ``codes``, as they were)
                starts, ends, text, keys = (
                    np.concatenate(p) for p in zip((starts, ends, text, keys), after)
                )
        ones = None  # the symbols of one byte, counted apart (_one_byte_symbols)
        if symbols is not None:
            symbol_codes, symbol_starts, symbol_ends, symbol_text = symbols
            if self._joins and (symbol_codes == _JOIN).any():
                return False  # its name would take a space for the 0x01: tokenized instead
            symbol_starts, symbol_ends, symbol_text, ones = _one_byte_symbols(
                symbol_codes, symbol_starts, symbol_ends, symbol_text
            )
            if ones is not None:  # a run of each byte, numbered with the others, then left
                K = ones[0].size
                symbol_starts = np.concatenate((symbol_starts, ones[0]))
                symbol_ends = np.concatenate((symbol_ends, ones[0] + 1))
                symbol_text = np.concatenate((symbol_text, np.zeros(K, dtype=np.int64)))
            symbol_keys = run_keys(symbol_codes, symbol_starts, symbol_ends, ascii)
            if self.stop is not None:
                keep = self.stop.find(symbol_codes, symbol_starts, symbol_ends, symbol_keys) < 0
                if ones is not None and not keep[keep.size - K :].all():  # stop words
                    kept = keep[keep.size - K :]
                    place = np.cumsum(kept) - 1
                    held = kept[ones[1]]
                    ones = (ones[0][kept], place[ones[1][held]], ones[2][held], ones[3][held])
                    K = ones[0].size
                symbol_starts, symbol_ends = symbol_starts[keep], symbol_ends[keep]
                symbol_text, symbol_keys = symbol_text[keep], symbol_keys[keep]
            if symbol_codes is not runs[1]:  # in codes of their own: put after the words'
                codes = np.concatenate((codes, symbol_codes))
                symbol_starts = symbol_starts + (codes.size - symbol_codes.size)
                symbol_ends = symbol_ends + (codes.size - symbol_codes.size)
            starts = np.concatenate((starts, symbol_starts))
            ends = np.concatenate((ends, symbol_ends))
            text = np.concatenate((text, symbol_text))
            keys = np.concatenate((keys, symbol_keys))
        if not keys.size:
            self._keep_sampled(marks, text, text)
            return True
        # The tally's number of each run's word: those met before looked up in the table
        # of their keys; a long one must have the bytes of the word met.
        numbers = self._numbers.find(keys)
        met = np.flatnonzero(numbers >= 0)
        met = met[is_long(keys[met])]
        if met.size:
            known = numbers[met]
            lengths = ends[met] - starts[met]
            if not (lengths == self._starts[known + 1] - self._starts[known] - 1).all():
                return False
            held = np.frombuffer(self._bytes, dtype=np.uint8)
            same = same_bytes(codes, starts[met], ends[met], held, self._starts[known])
            del held  # the byte array grows below
            if not same.all():
                return False
        new = np.flatnonzero(numbers < 0)
        if new.size:  # the new words, by sorting their runs' keys (numbered in key order)
            # (a stable sort: numpy's default one slows on many equal keys, 54 ms of a
            # chunk's 250,000 against 14; any run of a word stands for it)
            order = new[np.argsort(keys[new], kind="stable")]
            ordered = keys[order]
            group = np.concatenate(([True], ordered[1:] != ordered[:-1]))
            words, first = ordered[group], order[group]  # first: one run of each word
            which = np.cumsum(group) - 1
            # A long word's runs share a hash: each must have the bytes of the word's run.
            long = np.flatnonzero(is_long(ordered))
            if long.size:
                runs, other = order[long], first[which[long]]
                same = ends[runs] - starts[runs] == ends[other] - starts[other]
                if (
                    not same.all()
                    or not same_bytes(codes, starts[runs], ends[runs], codes, starts[other]).all()
                ):
                    return False
            joined = _joined(codes, starts[first], ends[first]) + b"\x00"  # at once
            ids = self._store(joined, ends[first] - starts[first], words)
            self._numbers.insert(words, ids)
            numbers[order] = ids[which]
        if ones is not None:  # the runs standing for the bytes counted apart: numbered
            one_ids = numbers[numbers.size - K :]
            text, numbers = text[: text.size - K], numbers[: numbers.size - K]
        if self._by_numbers:  # the word pairs, by the numbers of their words
            pair_text, pair_of, pair_ids = self._add_bigrams(text[:n_runs], numbers[:n_runs])
            text = np.concatenate((text, pair_text))
            numbers = np.concatenate((numbers, pair_ids[pair_of]))
        marked = _marked(marks)
        if text.size:
            cells, docs, tokens, rows = _cell_sums(text, numbers, labels, self.n_words, C, marked)
        else:  # only symbols of one byte
            empty = np.zeros(0, dtype=np.int64)
            cells, docs, tokens = empty, empty.astype(np.int32), empty.astype(np.int32)
            rows = None if marked is None else (empty, empty, empty)
        if ones is not None:
            more = _one_byte_cells(ones, one_ids, np.asarray(labels, dtype=np.int64), C, marked)
            cells, docs, tokens = (np.concatenate(p) for p in zip((cells, docs, tokens), more))
            if rows is not None:
                rows = tuple(np.concatenate(p) for p in zip(rows, more[3]))
        if rows is not None:  # the marked texts' rows, from the same sort of the tokens
            self._sampled.append((marked[marked >= 0], *rows))
        self._cells.append((cells, docs, tokens))
        self.pairs += cells.size
        if len(self._cells) >= _MERGE_AT:  # keep the memory near that of the sums
            self._cells = [self._merged()]
        return True

    def _keep_sampled(self, marks, text, numbers) -> None:
        """Keep the rows of a counted chunk's marked texts (``marks``, one per text, −1
        for none): each token's text and the tally's number of its word (a chunk of no
        token: the marked texts, with no row)."""
        marks = _marked(marks)
        if marks is None:
            return
        kept = np.flatnonzero(marks[text] >= 0)
        N = max(self.n_words, 1)
        cells, counts = np.unique(text[kept] * N + numbers[kept], return_counts=True)
        self._sampled.append((marks[marks >= 0], marks[cells // N], cells % N, counts))

    def _store(self, joined: bytes, lengths, keys, pairs: np.ndarray | None = None) -> np.ndarray:
        """Number new words: ``joined`` holds their bytes, each followed by a NUL,
        ``lengths`` their lengths (without it), ``keys`` their keys (:func:`run_keys`);
        or new word pairs: ``pairs`` (m, 2) the numbers of their two words, each an
        empty entry of the bytes. Returns their numbers, the next ones in order."""
        n, m = self.n_words, lengths.size
        if self._starts.size < n + m + 1:
            size = 2 * (n + m + 1)
            grown = np.zeros(size, dtype=np.int64)
            grown[: n + 1] = self._starts[: n + 1]
            self._starts = grown
            grown = np.zeros(size, dtype=np.uint64)
            grown[:n] = self._word_keys[:n]
            self._word_keys = grown
            grown = np.full((size, 2), -1, dtype=np.int64)
            grown[:n] = self._pair_words[:n]
            self._pair_words = grown
        self._word_keys[n : n + m] = keys
        if pairs is not None:
            self._pair_words[n : n + m] = pairs
        self._starts[n + 1 : n + m + 1] = len(self._bytes) + np.cumsum(lengths + 1)
        self._bytes += joined
        self.n_words += m
        return np.arange(n, n + m, dtype=np.int64)

    def _add_bigrams(self, text, numbers):
        """``(text, pair, ids)`` of the word pairs of a chunk: for each pair of
        consecutive tokens of one text (of texts ``text``, whose words are numbered
        ``numbers``), its text and which of the chunk's distinct pairs it is; and the
        tally's number of each distinct pair, new ones numbered now, in the order of
        their words' numbers. A pair is found by the numbers of its two words, exactly,
        and kept as them: no bytes are made. None of a text of more tokens than the
        ``ngram_doc_limit``."""
        first = ngram_firsts(text, 2, self.ngram_doc_limit)
        if not first.size:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty
        # Numbers hold 32 bits: 2**32 words would take a tally more than 12 GB of bytes.
        # Sorted as left N + right (N: every number is below it) by its 16-bit digits
        # (stable_order: 3 passes at 20 Newsgroups' 1.2 million numbers, 41 bits), equal
        # pairs in the tokens' order; each distinct pair's key is then left 2^32 + right.
        # (sort_order, which packs each index into one int64 with its pair and sorts
        # that, took 0.14 s of that fit's 3.36 million pairs, these passes and the
        # gather of the sorted pairs 0.066-0.069 s.)
        N = self.n_words
        dense = numbers[first] * N
        dense += numbers[first + 1]
        order = stable_order(dense, N * N)
        ordered = dense[order]
        del dense
        group = np.empty(order.size, dtype=bool)
        group[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=group[1:])
        left, right = np.divmod(ordered[group], N)
        del ordered
        pairs = left.astype(np.uint64) << np.uint64(32)
        pairs |= right.astype(np.uint64)
        inverse = np.empty(order.size, dtype=np.int64)
        inverse[order] = np.cumsum(group) - 1
        ids = self._bigrams.find(pairs)
        new = np.flatnonzero(ids < 0)
        if new.size:
            words = np.stack((left[new], right[new]), axis=1)
            none = np.zeros(new.size, dtype=np.int64)
            ids[new] = self._store(b"\x00" * new.size, none, none.view(np.uint64), words)
            self._bigrams.insert(pairs[new], ids[new])
        return text[first], inverse, ids

    def _merged(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The chunks' (word, class) cells, D and T summed into one triple."""
        cells, docs, tokens = (np.concatenate(p) for p in zip(*self._cells))
        return _sums(cells, docs, tokens)

    def packed(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(words, lengths, rows, doc_counts, token_counts)`` as in
        :func:`nbclass.counting.tally.pack`, but ``words`` a list: the words met, sorted; for
        class c, the next ``lengths[c]`` entries of the others are its nonzero counts
        (row = the word's place in ``words``).

        The words whose keys are their bytes are already in order in the sorted keys;
        the others are sorted apart, and Python's sort merges the two runs."""
        if self.waiting:
            raise ValueError("a run tally with gathered texts not counted: flush it first")
        names = self._names(self._bytes[:-1]) if self._bytes else []
        pairs = np.flatnonzero(self._pair_words[: self.n_words, 0] >= 0)
        if pairs.size:  # named by their words
            words = self._pair_words[pairs]
            joined = pair_names(names, words[:, 0], words[:, 1])
            for at, name in zip(pairs.tolist(), joined):
                names[at] = name
        keys, ids = self._numbers.items()
        n_short = int(np.searchsorted(keys, _LONG))
        order = ids[:n_short].tolist()
        others = np.ones(len(names), dtype=bool)
        others[ids[:n_short]] = False  # long words and word pairs: sorted by name
        order += sorted(np.flatnonzero(others).tolist(), key=names.__getitem__)
        order.sort(key=names.__getitem__)
        rank = np.empty(len(names), dtype=np.int64)
        rank[order] = np.arange(len(names), dtype=np.int64)
        words = list(map(names.__getitem__, order))
        lengths, ids, docs, tokens = self._by_class()
        return words, lengths, rank[ids], docs, tokens

    def packed_new(self) -> tuple:
        """``(new_words, new_ids, lengths, rows, doc_counts, token_counts, new_pairs)``:
        the counts added since the last call, as :meth:`packed` gives them but with each
        row the tally's own number of the word, the words numbered since the last call,
        sorted, with their numbers (the receiver learns each word once), and the word
        pairs numbered since then, ``(ids, first, second)``: each pair's number and the
        numbers of its two words, numbered before it (sent in this call or an earlier
        one). The counts are then cleared; the words are kept, with their numbers."""
        if self.waiting:
            raise ValueError("a run tally with gathered texts not counted: flush it first")
        sent, n = self._sent, self.n_words
        new_words, new_ids = [], np.zeros(0, dtype=np.int64)
        new_pairs = (new_ids, new_ids, new_ids)
        if n > sent:
            held = self._bytes[self._starts[sent] : self._starts[n] - 1]
            names = self._names(held)
            starts = self._starts[sent:n] - self._starts[sent]
            ends = self._starts[sent + 1 : n + 1] - 1 - self._starts[sent]
            paired = self._pair_words[sent:n, 0] >= 0
            words = np.flatnonzero(~paired)
            if words.size < paired.size:  # the pairs' empty entries left out
                pairs = np.flatnonzero(paired) + sent
                new_pairs = (pairs, *self._pair_words[pairs].T)
                starts, ends = starts[words], ends[words]
                names = list(map(names.__getitem__, words.tolist()))
            order = word_order(np.frombuffer(held, dtype=np.uint8), starts, ends, names)
            new_words = list(map(names.__getitem__, order.tolist()))
            new_ids = (words[order] if words.size < paired.size else order) + sent
        counts = self._by_class()
        self._cells, self.pairs, self._sent = [], 0, n
        return (new_words, new_ids, *counts, new_pairs)

    def keys_of(self, ids: np.ndarray) -> np.ndarray:
        """The key (:func:`run_keys`) of each of the words numbered ``ids``: a function
        of the word's bytes alone, so another tally gives the same word the same key (and
        two words of two tallies may share a hashed key)."""
        return self._word_keys[: self.n_words][ids]

    def _names(self, held: bytes | bytearray) -> list[str]:
        """The words of ``held`` (NUL-separated bytes), an n-gram's joins made spaces."""
        text = held.decode("utf-8")
        if self._joins:
            text = text.replace("\x01", " ")
        return text.split("\x00")

    @property
    def _joins(self) -> bool:
        """Whether a 0x01 in a word's bytes is a space of its name (n-grams, pairs)."""
        return self.ngram_range != (1, 1) or self.unspaced in ("pairs", "all")

    def _by_class(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(lengths, ids, doc_counts, token_counts)`` of the counts: class by class,
        ``lengths[c]`` (word number, D, T) of class c, by word number.

        The chunks' cells (each chunk's ascending, word-major: ``id C + c``) are merged
        by a stable sort of the keys (timsort: it takes each chunk's run as it is and
        merges the runs), equal neighbours summed, and the distinct cells put in class
        order by a stable sort of the class's 16-bit digits (:func:`stable_order`),
        which keeps each class's words in order. (The number's two digits' passes and
        then the class's over every cell, before they were summed, took 25-30 % more:
        the tallies' 12 calls of 20 Newsgroups with --ngram-range 1,2, 0.094 s against
        0.074; one sort of the class-major keys ``c n_words + id`` about twice as long
        again.)"""
        C = self.n_classes
        if not self._cells:
            empty = np.zeros(0, dtype=np.int64)
            return np.zeros(C, dtype=np.int64), empty, empty, empty
        cells, docs, tokens = (np.concatenate(p) for p in zip(*self._cells))
        order = np.argsort(cells, kind="stable")
        cells = cells[order]
        cell = np.empty(cells.size, dtype=bool)
        cell[0] = True
        np.not_equal(cells[1:], cells[:-1], out=cell[1:])
        starts = np.flatnonzero(cell)
        docs = np.add.reduceat(docs[order], starts, dtype=np.int64)
        tokens = np.add.reduceat(tokens[order], starts, dtype=np.int64)
        ids, classes = np.divmod(cells[starts], C)
        del cells, order
        order = stable_order(classes, C)
        ids, classes, docs, tokens = ids[order], classes[order], docs[order], tokens[order]
        self._cells = [(ids * C + classes, docs, tokens)]
        return np.bincount(classes, minlength=C).astype(np.int64), ids, docs, tokens


class _KeyTable:
    """Keys (uint64, never 0) and the number of each, in a table of open addressing
    (linear probing from the key's home slot, the top bits of the mix of the key XOR the
    table's salt, wrapping round; a key of 0 marks an empty slot), kept at most a quarter
    full. The salt is drawn at random for each table: a short word's key is its bytes and
    the mix is public, so a corpus could be written whose words share a few home slots
    under a fixed home function, and each look-up and insertion would then probe past all
    of them; nothing else depends on where a key sits (words are numbered in key order,
    :meth:`items` sorts), so the counts and files are the same whatever the salt.
    64 to 128 bytes a word (half full, the count of 2,000,000 words took 0.3 s more of
    its 5 s, the look-ups probing further). A slot holds its key and its number side by side, so
    that a look-up reads one place of the table, and the runs of a chunk are looked
    up where they are: at 2,000,000 words, sorting a chunk's
    107,000 keys to search its 29,000 words among the sorted keys took about 10 ms of a
    chunk's 30, looking them up about 1.

    >>> table = _KeyTable()
    >>> table.insert(np.array([7, 3], dtype=np.uint64), np.array([0, 1]))
    >>> table.find(np.array([3, 5, 7, 3], dtype=np.uint64)).tolist()
    [1, -1, 0, 1]
    """

    _SLOT = np.dtype([("key", "<u8"), ("id", "<i8")])

    def __init__(self):
        self.bits, self.size = 10, 0
        self.salt = np.uint64(int.from_bytes(os.urandom(8), "little"))
        self.slots = np.zeros(1 << self.bits, dtype=self._SLOT)

    def _homes(self, keys: np.ndarray) -> np.ndarray:
        return (_mix(keys ^ self.salt) >> np.uint64(64 - self.bits)).astype(np.int64)

    def find(self, keys: np.ndarray) -> np.ndarray:
        """The number of each of ``keys``, −1 for a key not in the table, int64."""
        if not self.size:
            return np.full(keys.size, -1, dtype=np.int64)
        slots, mask = self._homes(keys), (1 << self.bits) - 1
        held = self.slots.take(slots)  # (numpy's take gathers records faster than [])
        hit = held["key"] == keys
        found = np.where(hit, held["id"], -1)
        todo = np.flatnonzero(~hit & (held["key"] != 0))  # another key there: probe on
        slots, keys = slots[todo], keys[todo]
        while todo.size:
            slots += 1
            slots &= mask
            held = self.slots.take(slots)
            hit = held["key"] == keys
            found[todo[hit]] = held["id"][hit]
            again = ~hit & (held["key"] != 0)
            todo, slots, keys = todo[again], slots[again], keys[again]
        return found

    def insert(self, keys: np.ndarray, ids: np.ndarray) -> None:
        """Add ``keys`` (distinct, none in the table) numbered ``ids``."""
        if 4 * (self.size + keys.size) > self.slots.size:  # grow: every key placed again
            old = self.slots[self.slots["key"] != 0]
            self.bits = max(self.bits, int(4 * (self.size + keys.size) - 1).bit_length())
            self.slots = np.zeros(1 << self.bits, dtype=self._SLOT)
            self._place(old["key"], old["id"])
        self._place(keys, ids)
        self.size += keys.size

    def _place(self, keys: np.ndarray, ids: np.ndarray) -> None:
        """Put each key in the first empty slot from its home; of keys that find the same
        empty slot at once, one takes it (the one written last) and the others probe on."""
        slots, mask = self._homes(keys), (1 << self.bits) - 1
        held, numbers = self.slots["key"], self.slots["id"]
        while keys.size:
            free = np.flatnonzero(held[slots] == 0)
            held[slots[free]] = keys[free]
            won = free[held[slots[free]] == keys[free]]
            numbers[slots[won]] = ids[won]
            left = np.ones(keys.size, dtype=bool)
            left[won] = False
            keys, ids, slots = keys[left], ids[left], slots[left]
            slots += 1
            slots &= mask

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """``(keys, ids)``: every key, sorted, and its number (int64)."""
        held = np.sort(self.slots[self.slots["key"] != 0], order="key")
        return held["key"].copy(), held["id"].copy()


class _Numbers:
    """Keys (uint64) and the number of each, sorted by key: most in one pair of arrays,
    the latest in a second, merged into the first when it holds ``_RECENT`` (a chunk's
    new keys are inserted into a short array)."""

    def __init__(self):
        self.keys = np.zeros(0, dtype=np.uint64)
        self.ids = np.zeros(0, dtype=np.int64)
        self.recent_keys = np.zeros(0, dtype=np.uint64)
        self.recent_ids = np.zeros(0, dtype=np.int64)

    def find(self, keys: np.ndarray) -> np.ndarray:
        """The number of each of ``keys`` (sorted, distinct), −1 for a new one."""
        ids = np.full(keys.size, -1, dtype=np.int64)
        for known, numbers in ((self.keys, self.ids), (self.recent_keys, self.recent_ids)):
            if known.size:
                at = np.minimum(np.searchsorted(known, keys), known.size - 1)
                hit = np.flatnonzero(known[at] == keys)
                ids[hit] = numbers[at[hit]]
        return ids

    def insert(self, keys: np.ndarray, ids: np.ndarray) -> None:
        """Add new ``keys`` (sorted) numbered ``ids``."""
        at = np.searchsorted(self.recent_keys, keys)
        self.recent_keys, self.recent_ids = inserted(
            at, (self.recent_keys, self.recent_ids), (keys, ids)
        )
        if self.recent_keys.size >= _RECENT:
            self.merged()

    def merged(self) -> tuple[np.ndarray, np.ndarray]:
        """``(keys, ids)``: every key, sorted, and its number."""
        at = np.searchsorted(self.keys, self.recent_keys)
        self.keys, self.ids = inserted(
            at, (self.keys, self.ids), (self.recent_keys, self.recent_ids)
        )
        self.recent_keys = self.recent_keys[:0]
        self.recent_ids = self.recent_ids[:0]
        return self.keys, self.ids


def _one_byte_symbols(codes, starts, ends, text):
    """The symbols ``codes[starts[r]:ends[r]]`` of texts ``text[r]``, those of one byte
    counted per (byte, text) apart: ``(starts, ends, text, ones)``, the others as they
    were and ``ones`` ``(at, byte, in_text, count)``: where a run of each distinct byte
    starts (K of them), and for each (byte, text) with a token the byte's place in
    ``at``, the text and the tokens, in the order of the byte and then the text; ``ones``
    None where no symbol is one byte. A byte's runs must come in the texts' order (the
    symbols come in that order, or in parts each in that order where no byte is in two):
    they are put in order by byte only (a stable sort of 8-bit numbers, by counting).

    Most symbols are one byte (86 % of 20 Newsgroups', 99 % of the movie reviews'), and
    repeated in a text (20 Newsgroups: 1,671,065 symbols, 280,362 (text, symbol)
    pairs): counted so, they are never looked up, numbered or sorted one by one.

    >>> codes = np.frombuffer(b"!! ? . ? ? .", dtype=np.uint8)
    >>> starts, ends, text, ones = _one_byte_symbols(
    ...     codes, np.array([0, 3, 5, 7, 9, 11]), np.array([2, 4, 6, 8, 10, 12]),
    ...     np.array([0, 0, 0, 1, 1, 1]))
    >>> starts.tolist(), [bytes(codes[a : a + 1]) for a in ones[0]]
    ([0], [b'.', b'?'])
    >>> [a.tolist() for a in ones[1:]]
    [[0, 0, 1, 1], [0, 1, 0, 1], [1, 1, 1, 2]]
    """
    single = ends - starts == 1
    one = np.flatnonzero(single)
    if not one.size:
        return starts, ends, text, None
    at = starts[one]
    byte = codes[at]
    order = np.argsort(byte, kind="stable")
    at, byte, in_text = at[order], byte[order], text[one[order]]
    new = np.empty(one.size, dtype=bool)
    new[0] = True
    np.not_equal(in_text[1:], in_text[:-1], out=new[1:])
    other = byte[1:] != byte[:-1]  # a byte's first
    new[1:] |= other
    first = np.flatnonzero(new)
    count = np.diff(np.append(first, one.size))
    byte_first = np.concatenate(([True], other))[first]
    place = np.cumsum(byte_first) - 1
    rest = np.flatnonzero(~single)
    ones = (at[first[byte_first]], place, in_text[first], count)
    return starts[rest], ends[rest], text[rest], ones


def _one_byte_cells(ones, ids, labels: np.ndarray, C: int, marks):
    """``(cells, D, T, rows)`` as :func:`_cell_sums` gives them, of the symbols of one
    byte counted by :func:`_one_byte_symbols` (``ones``), the bytes numbered ``ids``."""
    _, byte, text, count = ones
    K = ids.size
    where = byte * C + labels[text]
    docs = np.bincount(where, minlength=K * C)
    cell = np.flatnonzero(docs)
    tokens = np.bincount(where, weights=count, minlength=K * C)[cell]
    cells = ids[cell // C] * C + cell % C
    rows = None
    if marks is not None:
        mark = marks[text]
        keep = mark >= 0
        rows = (mark[keep], ids[byte[keep]], count[keep])
    return cells, docs[cell].astype(np.int32), tokens.astype(np.int32), rows


def _marked(marks) -> np.ndarray | None:
    """A chunk's ``marks`` (one per text, −1 for none) as int64, or None when no text of
    the chunk is marked."""
    if marks is None:
        return None
    marks = np.asarray(marks, dtype=np.int64)
    return marks if (marks >= 0).any() else None


def _cell_sums(text: np.ndarray, word: np.ndarray, labels: Sequence[int], N: int, C: int,
               marks: np.ndarray | None = None):  # fmt: skip
    """``(cells, D, T, rows)`` of one chunk: each (word, class) cell with a token, as word
    C + class (int64, ascending), the texts holding the word and its tokens (int32), from
    the text and the word (< N) of each token and the texts' ``labels`` (< C). ``rows``:
    with ``marks`` (int64, one per text, −1 for none), the marked texts' rows as
    ``(mark, word, count)`` arrays (int64), each (text, word) once, in (word, class,
    text) order; else None.

    The tokens are put in (word, class, text) order by stable sorts of 16-bit digits,
    which numpy makes by counting, in time linear in the tokens (a sort of their 64-bit
    (class, word, text) codes took 4 ms of 107,000 tokens, two such passes about 1.5):
    by class where the labels are not in order, then by word. Equal (word, class)
    neighbours are a cell's tokens, equal (word, text) ones a text's tokens of the word,
    when each word's tokens came in the texts' order. A chunk's tokens come in parts
    (its words, its symbols, its word pairs: each in the texts' order, no word in two
    parts), so that holds without a sort by text; where a word's texts (a cell's, when
    sorted by class) are found out of order after the sorts, the tokens are sorted by
    text first and again (20 Newsgroups' chunks with the symbols: a quarter of this
    function's time saved).

    A text's tokens of a word are neighbours in that order too (a text has one class):
    the marked texts' rows are read from the same order, in linear time, where sorting
    their tokens again by (text, word) took the workers 0.2 s of 20 Newsgroups' fit.

    >>> cells, D, T, rows = _cell_sums(np.array([0, 0, 1, 1, 1]), np.array([1, 1, 0, 1, 1]),
    ...                                [0, 0], 2, 1, np.array([-1, 7]))
    >>> [a.tolist() for a in (cells, D, T, *rows)]
    [[0, 1], [1, 2], [1, 4], [7, 7], [0, 1], [1, 2]]
    """
    labels = np.asarray(labels, dtype=np.int64)
    unsorted = (labels[1:] < labels[:-1]).any()
    by_text = None  # the order by text, when it is sorted by text first
    while True:
        order = by_text
        if unsorted:
            order = stable_order(labels[text], C, order)
        order = stable_order(word, N, order)
        sorted_word, sorted_text = word[order], text[order]
        classes = labels[sorted_text]
        cell = np.empty(sorted_word.size, dtype=bool)
        cell[0] = True
        np.not_equal(sorted_word[1:], sorted_word[:-1], out=cell[1:])
        # Out of order: a word's texts where the labels are in order (its classes follow
        # its texts), else a cell's texts (sorted by class).
        out = sorted_text[1:] < sorted_text[:-1]
        out &= ~cell[1:]
        cell[1:] |= classes[1:] != classes[:-1]
        if unsorted:
            out &= ~cell[1:]
        if by_text is not None or not out.any():
            break
        by_text = stable_order(text, labels.size)  # a word's texts out of order
    word, text = sorted_word, sorted_text
    n = word.size
    pair = np.empty(n, dtype=bool)  # a text's first token of the word (or of the cell)
    pair[0] = True
    np.not_equal(text[1:], text[:-1], out=pair[1:])
    pair[1:] |= cell[1:]
    starts = np.flatnonzero(cell)
    tokens = np.diff(starts, append=n).astype(np.int32)
    docs = np.add.reduceat(pair, starts, dtype=np.int32)
    cells = word[starts] * C
    cells += classes[starts]
    if marks is None:
        return cells, docs, tokens, None
    # The marked texts' tokens alone (a text's tokens of a word are all marked or none),
    # and among them each (word, text)'s first: about half the tokens where every
    # (word, text)'s first was found and its mark read.
    marked = np.flatnonzero((marks >= 0)[text])
    first = np.flatnonzero(pair[marked])
    sizes = np.diff(first, append=marked.size)
    first = marked[first]
    return cells, docs, tokens, (marks[text[first]], word[first], sizes)


def stable_order(values: np.ndarray, top: int, order: np.ndarray | None = None) -> np.ndarray:
    """The stable order of ``values`` (integers in [0, ``top``)) taken in ``order`` (a
    permutation, None for their own): ``order[result]`` sorts ``values[order]``, equal
    values kept in ``order``'s order. One stable sort of each 16-bit digit of the values,
    lowest first (a radix sort: numpy sorts 16-bit integers stably by counting, in
    linear time, where it sorts wider ones by comparisons).

    >>> stable_order(np.array([70000, 3, 70000, 1]), 70001).tolist()
    [3, 1, 0, 2]
    """
    shift = 0
    while True:  # each digit cut to 16 bits before it is gathered in order: a narrower gather
        digits = (values >> shift if shift else values).astype(np.uint16)
        if order is not None:
            digits = digits[order]
        step = np.argsort(digits, kind="stable")  # the low 16 bits
        order = step if order is None else order[step]
        shift += 16
        if top <= 1 << shift:
            return order


def _sums(keys: np.ndarray, *values: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(the distinct keys, sorted; for each array of values, its sum per key)``; the
    sums are int64, whatever the type of the values."""
    if not keys.size:
        return (keys, *(v.astype(np.int64) for v in values))
    keys, order = sort_order(keys)
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    return (keys[starts], *(np.add.reduceat(v[order], starts, dtype=np.int64) for v in values))


def inserted(at: np.ndarray, olds: Sequence[np.ndarray], news: Sequence[np.ndarray]) -> tuple:
    """``np.insert(old, at, new)`` of each array of ``olds`` with the one of ``news`` in
    its place (``news`` all of ``at``'s length), ``at`` ascending (``np.searchsorted`` of
    sorted values): the places are found once for all the arrays, where ``np.insert``
    sorts ``at`` again for each (most of its time).

    >>> merged = inserted(np.array([0, 2, 2]), (np.array([1, 3]),), (np.array([0, 4, 5]),))
    >>> merged[0].tolist()
    [0, 1, 3, 4, 5]
    """
    place = np.arange(at.size)
    place += at
    kept = np.ones(at.size + olds[0].size, dtype=bool)
    kept[place] = False
    merged = []
    for old, new in zip(olds, news):
        array = np.empty(kept.size, dtype=old.dtype)
        array[place] = new
        array[kept] = old
        merged.append(array)
    return tuple(merged)


def sort_order(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(keys sorted, order)`` with ``keys[order]`` the sorted keys (equal keys in the
    order of their indices), for integer keys of any sign and size.

    Where the largest key and the largest index fit in 63 bits together (a key below
    2^32 for 2^31 keys), each key is shifted left and its index put in the low bits,
    and the one int64 array is sorted: numpy sorts integers about twice as fast as it
    argsorts them, and no gather of the keys follows. Otherwise, a stable argsort.

    >>> [a.tolist() for a in sort_order(np.array([5, 2, 5, 0]))]
    [[0, 2, 5, 5], [3, 1, 0, 2]]
    >>> [a.tolist() for a in sort_order(np.array([2**62, -1, 2**62]))]
    [[-1, 4611686018427387904, 4611686018427387904], [1, 0, 2]]
    """
    n = keys.size
    shift = max(n - 1, 0).bit_length()
    if n and int(keys.min()) >= 0 and int(keys.max()).bit_length() + shift <= 63:
        packed = keys.astype(np.int64)  # a copy, shifted in place
        packed <<= shift
        packed |= np.arange(n, dtype=np.int64)
        packed.sort()
        order = packed & ((1 << shift) - 1)
        packed >>= shift
        return packed.astype(keys.dtype, copy=False), order
    order = np.argsort(keys, kind="stable")
    return keys[order], order


def entry_points(vocabulary: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(points, ends)``: the entries of ``vocabulary`` joined by NULs as their code
    points (uint8 when all are ASCII, else uint32) and where each entry ends (its NUL,
    or the end), int64 of shape (V,): what the families' masks of one vocabulary share
    (:func:`nbclass.text.families.masks`), one join and one encoding of its entries.

    >>> points, ends = entry_points(["ab", "é"])
    >>> points.tolist(), ends.tolist()
    ([97, 98, 0, 233], [2, 4])
    """
    joined = "\x00".join(vocabulary)
    if joined.isascii():
        points = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    else:
        points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    return points, np.append(np.flatnonzero(points == 0), points.size)


def symbol_rows(vocabulary: Sequence[str], points=None) -> np.ndarray:
    """The entries that are tokens of ``--symbols``, bool of shape (V,): no space (no
    ``\\s``), and one word character (``\\w``) or no word character at all
    (:func:`nbclass.text.tokenizer.is_symbol`, at array speed). ``points``: the
    vocabulary's :func:`entry_points`, if made already.

    >>> symbol_rows(["ab", "?", "a", ":)", "a?", "? !", ""]).tolist()
    [False, True, True, True, False, False, False]
    """
    V = len(vocabulary)
    if not V:
        return np.zeros(0, dtype=bool)
    points, ends = entry_points(vocabulary) if points is None else points
    if points.dtype == np.uint8 and not points.tobytes().translate(None, _ASCII_WORD_OR_NUL):
        # Every character a word character: the symbols are the entries of one.
        return np.diff(ends, prepend=-1) == 2
    starts = np.append(0, ends[:-1] + 1)
    length = ends - starts
    # An entry of one character is a symbol unless it is a space; a longer one when none
    # of its characters is a word character or a space: only the entries whose first
    # character is neither have their others looked at (20 Newsgroups with word pairs:
    # 17,559 of 1.2 million entries, where all their 13 million characters were).
    first = points[np.minimum(starts, points.size - 1)].astype(np.uint32)
    rows = (length > 0) & ~is_space(first)
    longer = np.flatnonzero(rows & (length > 1))
    rows[longer] = ~is_word(first[longer])
    longer = longer[rows[longer]]
    if longer.size:
        size = length[longer] - 1  # the characters after the first
        at = np.repeat(starts[longer] + 1 - (np.cumsum(size) - size), size)
        rest = points[at + np.arange(at.size)].astype(np.uint32)
        bad = np.zeros(at.size + 1, dtype=np.int64)
        np.cumsum(is_word(rest) | is_space(rest), out=bad[1:])
        ends_rest = np.cumsum(size)
        rows[longer] = bad[ends_rest] == bad[ends_rest - size]
    return rows
