"""Feature hashing: a fixed number of columns for a vocabulary that never stops growing.

With ``--hash-features N``, every token is replaced by the name of its column,
``#`` followed by ``h(token) mod N`` in fixed-width hexadecimal (so columns sort in
order), where h is the first 8 bytes of BLAKE2b of the token's UTF-8 bytes, read
little-endian: a hash that is the same on every machine and in every process (Python's
``hash`` is salted per process). Counts stay non-negative integers: a column's count is
the sum of its words' counts, and a document "contains" a column when it contains one of
its words, so both event models stay valid. Memory and file size are then bounded by N
whatever the text.

So that ``top-features`` still prints words, the model keeps, for each column, a sample of
the words seen in it: the ``REPRESENTATIVES`` words with the smallest BLAKE2b value (a
bottom-k sketch). That choice is the same whatever the order of the documents and merges
exactly (the bottom k of a union is the bottom k of the parts' bottom k), so update and
merge stay bit-identical to one fit. A column with no collision shows its one word.
Unlearning does not forget a word once seen (the sketch cannot be subtracted): after
unlearn or sync the counts equal a fresh fit's, the word samples may hold more.

Standard library only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable

REPRESENTATIVES = 3
CACHE_LIMIT = 1 << 16  # words remembered between calls; bounded, then forgotten


def parse_hash_features(text: str) -> int:
    """``"2^18"``, ``"2**18"`` or ``"262144"`` to a number of columns (at least 2).

    Raises ``ValueError`` with a message for the user.
    """
    spec = text.strip().replace("**", "^")
    try:
        if "^" in spec:
            base, exponent = spec.split("^")
            n = int(base) ** int(exponent)
        else:
            n = int(spec)
    except ValueError:
        raise ValueError(f"{text!r} is not a number of columns such as 2^18 or 262144") from None
    if not 2 <= n <= 2**40:
        raise ValueError(f"{text!r} must be between 2 and 2^40 columns")
    return n


def word_key(word: str) -> bytes:
    """The 8-byte BLAKE2b digest that places and ranks ``word``."""
    return hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def column_namer(n: int) -> Callable[[int], str]:
    width = len(f"{n - 1:x}")
    return lambda index: f"#{index:0{width}x}"


class HashedTokenizer:
    """Wraps a tokenizer: tokens become column names; words seen are sampled per column.

    ``take_seen()`` returns and forgets ``{column: [(key, word), ...]}``, the bottom
    ``REPRESENTATIVES`` words per column seen since the last call.
    """

    def __init__(self, tokenize: Callable[[str], list[str]], n: int):
        self.tokenize, self.n = tokenize, n
        self.name = column_namer(n)
        self.cache: dict[str, str] = {}
        self.seen: dict[str, list[tuple[bytes, str]]] = {}

    def _column(self, word: str) -> str:
        key = word_key(word)
        column = self.name(int.from_bytes(key, "little") % self.n)
        add_representative(self.seen, column, key, word)
        if len(self.cache) >= CACHE_LIMIT:
            self.cache.clear()
        self.cache[word] = column
        return column

    def __call__(self, text: str) -> list[str]:
        cache, column = self.cache, self._column
        return [cache[w] if w in cache else column(w) for w in self.tokenize(text)]

    def take_seen(self) -> dict[str, list[tuple[bytes, str]]]:
        seen, self.seen = self.seen, {}
        return seen


def add_representative(
    seen: dict[str, list[tuple[bytes, str]]], column: str, key: bytes, word: str
) -> None:
    """Keep ``(key, word)`` among the ``REPRESENTATIVES`` smallest keys of ``column``."""
    sample = seen.setdefault(column, [])
    if (key, word) in sample:
        return
    if len(sample) < REPRESENTATIVES or (key, word) < sample[-1]:
        sample.append((key, word))
        sample.sort()
        del sample[REPRESENTATIVES:]


def merge_representatives(
    parts: Iterable[dict[str, list[tuple[bytes, str]]]],
) -> dict[str, list[tuple[bytes, str]]]:
    """The per-column bottom-k of the union of samples."""
    merged: dict[str, list[tuple[bytes, str]]] = {}
    for part in parts:
        for column, sample in part.items():
            for key, word in sample:
                add_representative(merged, column, key, word)
    return merged


def words_of(seen: dict[str, list[tuple[bytes, str]]]) -> dict[str, tuple[str, ...]]:
    """``{column: (words...)}`` ordered by key, for display and storage."""
    return {column: tuple(w for _, w in sample) for column, sample in seen.items()}


def keyed(words: dict[str, tuple[str, ...]]) -> dict[str, list[tuple[bytes, str]]]:
    """The inverse of :func:`words_of` (keys recomputed from the words)."""
    return {c: sorted((word_key(w), w) for w in ws) for c, ws in words.items()}
