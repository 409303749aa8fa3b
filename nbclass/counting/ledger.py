"""The ledger: what a model learned, document by document, so that it can be unlearned.

A model fitted with a ledger (``nbclass fit --ledger``, and every model ``nbclass sync``
keeps) stores, for each training document, the SHA-256 of its bytes, its class, and its
bag of words: the counts x_j of the words it holds. Its counts are then *exactly* the sum
of its ledger (checked when the file is loaded):

    N_c  = number of entries of class c
    T_jc = Σ over the entries of class c of x_j
    D_jc = number of entries of class c with x_j > 0

so a document can be removed later even after its file was deleted (``sync``), and a
document the model never learned is recognised and refused (``unlearn``).

Every operation (fit, update, unlearn, merge, sync) builds a ledger over some classes and
words and hands it to :func:`canonical`, which sorts the entries by (digest, class),
drops the words and classes nothing counts any more, and sums the counts. Whatever the
order of files or the sequence of operations, equal sets of documents give equal ledgers
and equal counts, bit for bit.

Cost: one entry per document and one (word, count) pair per distinct word of each
document; memory and file size grow with the corpus, which is why the ledger is opt-in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np

from .counts import Counts, counts_of_pairs

DIGEST_SIZE = 32  # SHA-256


@dataclass(frozen=True, eq=False)
class Ledger:
    """The documents a model learned.

    Attributes
    ----------
    digests : ndarray of shape (n, 32), uint8
        SHA-256 of each document's bytes.
    labels : ndarray of shape (n,), int64
        Class index of each document (into the model's classes).
    ptr : ndarray of shape (n + 1,), int64
        Document i's words are ``words[ptr[i]:ptr[i+1]]``.
    words : ndarray of shape (nnz,), int64
        Word index (into the model's vocabulary), ascending within a document.
    counts : ndarray of shape (nnz,), int64
        x_j > 0, the tokens of that word in the document.
    """

    digests: np.ndarray
    labels: np.ndarray
    ptr: np.ndarray
    words: np.ndarray
    counts: np.ndarray

    @property
    def n_documents(self) -> int:
        return int(self.labels.shape[0])

    def keys(self, classes: Sequence[str]) -> list[tuple[bytes, str]]:
        """``(digest, class name)`` of every document, in ledger order."""
        return [
            (bytes(row), classes[c]) for row, c in zip(self.digests, self.labels.tolist())
        ]

    def take(self, rows: Sequence[int] | np.ndarray) -> Ledger:
        """The ledger of the documents at ``rows``, in that order."""
        rows = np.asarray(rows, dtype=np.int64)
        lengths = np.diff(self.ptr)[rows]
        ptr = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        gather = np.repeat(self.ptr[rows] - ptr[:-1], lengths)
        gather += np.arange(ptr[-1])
        return Ledger(
            digests=self.digests[rows],
            labels=self.labels[rows],
            ptr=ptr,
            words=self.words[gather],
            counts=self.counts[gather],
        )

    def relabel(self, class_map: np.ndarray, word_map: np.ndarray) -> Ledger:
        """The same documents with class c renamed ``class_map[c]`` and word j ``word_map[j]``.

        ``word_map`` must be increasing, so words stay ascending within a document.
        """
        return Ledger(
            self.digests, class_map[self.labels], self.ptr, word_map[self.words], self.counts
        )

    def narrowed(self) -> Ledger:
        """The same ledger in the narrowest integer types that hold it (a third of its
        size or less), to be kept aside; :meth:`widened` gives it back in the types every
        function here takes."""
        return Ledger(
            self.digests, *(a.astype(_smallest(int(a.max()) + 1 if a.size else 0))
                            for a in (self.labels, self.ptr, self.words, self.counts)),
        )  # fmt: skip

    def widened(self) -> Ledger:
        """The ledger with int64 labels, pointers, words and counts (:meth:`narrowed`'s
        inverse)."""
        return Ledger(
            self.digests,
            *(a.astype(np.int64) for a in (self.labels, self.ptr, self.words, self.counts)),
        )

    def sum_counts(self, classes: Sequence[str], vocabulary: Sequence[str]) -> Counts:
        """N_c, D_jc and T_jc of the documents, over ``classes`` and ``vocabulary``.

        A word is once in a document's entry, so D_jc is the number of entries of the
        cell j C + c: the length of its run once the cells are sorted, with no array of
        ones summed beside the counts (one array of every entry fewer, and its copy).
        """
        from ..text.runs import sort_order

        C = len(classes)
        cells = self.words * C
        cells += np.repeat(self.labels, np.diff(self.ptr))
        keys, order = sort_order(cells)
        del cells
        first = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if keys.size else keys
        tokens = np.add.reduceat(self.counts[order], first) if keys.size else self.counts[:0]
        del order
        docs = np.diff(np.r_[first, keys.size]) if keys.size else tokens
        keys = keys[first]
        return counts_of_pairs(
            classes, vocabulary, np.bincount(self.labels, minlength=C).astype(np.int64),
            keys // C, keys % C, docs, tokens,
        )  # fmt: skip

    def problems(self, n_classes: int, n_words: int) -> list[str]:
        """What makes this ledger malformed (empty when it is well formed)."""
        n, nnz = self.labels.shape[0], self.words.shape[0]
        if (
            self.digests.shape != (n, DIGEST_SIZE)
            or self.ptr.shape != (n + 1,)
            or self.counts.shape != (nnz,)
            or self.ptr[0] != 0
            or self.ptr[-1] != nnz
            or (np.diff(self.ptr) < 0).any()
        ):
            return ["ledger sections have inconsistent sizes"]
        found = []
        if n and (self.labels.min() < 0 or self.labels.max() >= n_classes):
            found.append("a ledger entry names a class the model does not have")
        if nnz and (self.words.min() < 0 or self.words.max() >= n_words):
            found.append("a ledger entry names a word the model does not have")
        if nnz and self.counts.min() < 1:
            found.append("a ledger entry holds a word with no token")
        starts = np.zeros(nnz, dtype=bool)
        starts[self.ptr[:-1][np.diff(self.ptr) > 0]] = True
        if nnz > 1 and (np.diff(self.words)[~starts[1:]] <= 0).any():
            found.append("a ledger entry's words are not in order")
        return found


def empty_ledger() -> Ledger:
    return Ledger(
        digests=np.zeros((0, DIGEST_SIZE), dtype=np.uint8),
        labels=np.zeros(0, dtype=np.int64),
        ptr=np.zeros(1, dtype=np.int64),
        words=np.zeros(0, dtype=np.int64),
        counts=np.zeros(0, dtype=np.int64),
    )


def from_entries(
    entries: Iterable[tuple[bytes, int, Counter]], vocabulary: Sequence[str]
) -> Ledger:
    """A ledger from ``(digest, class index, Counter word -> x_j)`` per document.

    Every word must be in ``vocabulary`` (sorted).
    """
    book = EntryBook()
    book.extend(entries)
    return book.ledger(vocabulary)


class EntryBook:
    """Ledger entries gathered batch by batch, kept as arrays as they come.

    A batch of ``(digest, class index, Counter word -> x_j)`` (what a tally sends per
    document) is turned into arrays at once, its words numbered in the order they were
    first met, so the Counters of one batch at a time are alive, never those of the
    whole corpus (13 million (document, word) items were 1.4 GB as Counters, 0.1 GB
    as arrays). :meth:`ledger` then names the words by their index in the sorted
    vocabulary, as :func:`from_entries` does.

    >>> book = EntryBook()
    >>> book.extend([(bytes(32), 1, Counter({"b": 2, "a": 1}))])
    >>> book.extend([(bytes(32), 0, Counter({"c": 1, "b": 1}))])
    >>> ledger = book.ledger(("a", "b", "c"))
    >>> ledger.labels.tolist(), ledger.ptr.tolist(), ledger.words.tolist(), ledger.counts.tolist()
    ([1, 0], [0, 2, 4], [0, 1, 1, 2], [1, 2, 1, 1])
    """

    def __init__(self):
        self._ids: dict[str, int] = {}  # word -> its number, in the order first met
        self._parts: list[tuple[bytes, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def extend(self, entries: Iterable[tuple[bytes, int, Counter]]) -> None:
        """Add a batch of entries (in any order)."""
        entries = list(entries)
        if not entries:
            return
        bags = [bag for _, _, bag in entries]
        lengths = np.fromiter(map(len, bags), dtype=np.int64, count=len(bags))
        n = int(lengths.sum())
        words = list(chain.from_iterable(bags))
        counts = np.fromiter(chain.from_iterable(bag.values() for bag in bags), np.int64, n)
        ids = self._ids
        numbers = np.fromiter(map(ids.get, words, repeat(-1)), dtype=np.int64, count=n)
        new = np.flatnonzero(numbers < 0)
        if new.size:  # the words met first here get the next numbers, in order
            added = dict.fromkeys(map(words.__getitem__, new.tolist()))
            ids.update(zip(added, range(len(ids), len(ids) + len(added))))
            found = map(ids.__getitem__, map(words.__getitem__, new.tolist()))
            numbers[new] = np.fromiter(found, dtype=np.int64, count=new.size)
        del words, bags
        self._parts.append((
            b"".join(digest for digest, _, _ in entries),
            np.fromiter((c for _, c, _ in entries), dtype=np.int64, count=len(entries)),
            lengths,
            numbers.astype(_smallest(len(ids))),
            counts.astype(_smallest(int(counts.max()) + 1 if n else 0)),
        ))  # fmt: skip

    def ledger(self, vocabulary: Sequence[str]) -> Ledger:
        """The entries as a :class:`Ledger` over ``vocabulary`` (sorted, holding every
        word met), each document's words ascending; the book is spent afterwards."""
        from ..text.runs import sort_order

        word_at = {w: j for j, w in enumerate(vocabulary)}
        index = np.fromiter(map(word_at.__getitem__, self._ids), dtype=np.int64,
                            count=len(self._ids))  # fmt: skip
        del word_at
        self._ids = {}
        V = max(len(vocabulary), 1)
        digests, labels, lengths, words, counts = [], [], [], [], []
        while self._parts:  # each batch's words put in order, then the batch let go
            part_digests, part_labels, part_lengths, numbers, part_counts = self._parts.pop(0)
            at = index[numbers]
            del numbers
            at += np.repeat(np.arange(part_lengths.size, dtype=np.int64) * V, part_lengths)
            at, order = sort_order(at)
            at %= V
            digests.append(part_digests)
            labels.append(part_labels)
            lengths.append(part_lengths)
            words.append(at)
            counts.append(part_counts[order].astype(np.int64))
        if not labels:
            return empty_ledger()
        lengths = np.concatenate(lengths)
        ptr = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        return Ledger(
            digests=np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(-1, DIGEST_SIZE),
            labels=np.concatenate(labels),
            ptr=ptr,
            words=np.concatenate(words),
            counts=np.concatenate(counts),
        )


def _smallest(limit: int) -> type:
    """The smallest of uint8, int32 and int64 holding every whole number below ``limit``."""
    return np.uint8 if limit <= 256 else np.int32 if limit <= 2**31 else np.int64


def concatenate(parts: Sequence[Ledger]) -> Ledger:
    """The documents of every part, one after the other (over the same classes and words)."""
    if not parts:
        return empty_ledger()
    offsets = np.cumsum([0] + [p.words.shape[0] for p in parts[:-1]])
    return Ledger(
        digests=np.concatenate([p.digests for p in parts]),
        labels=np.concatenate([p.labels for p in parts]),
        ptr=np.concatenate([[0]] + [p.ptr[1:] + o for p, o in zip(parts, offsets)]),
        words=np.concatenate([p.words for p in parts]),
        counts=np.concatenate([p.counts for p in parts]),
    )


def unify(
    parts: Sequence[tuple[Ledger, Sequence[str], Sequence[str]]],
) -> tuple[Ledger, tuple[str, ...], tuple[str, ...]]:
    """Put ledgers over different classes and words onto the union of both, and join them.

    Parameters
    ----------
    parts : sequence of (ledger, classes, vocabulary)
        Each ledger with the (sorted) classes and vocabulary its indices refer to.
    """
    classes = tuple(sorted(set().union(*(c for _, c, _ in parts))))
    vocabulary = tuple(sorted(set().union(*(v for _, _, v in parts))))
    class_at = {c: i for i, c in enumerate(classes)}
    word_at = {w: j for j, w in enumerate(vocabulary)}
    moved = []
    for ledger, part_classes, part_vocabulary in parts:
        class_map = np.array([class_at[c] for c in part_classes], dtype=np.int64)
        word_map = np.array([word_at[w] for w in part_vocabulary], dtype=np.int64)
        moved.append(ledger.relabel(class_map, word_map))
    return concatenate(moved), classes, vocabulary


def canonical(
    ledger: Ledger, classes: Sequence[str], vocabulary: Sequence[str]
) -> tuple[Ledger, Counts]:
    """The canonical form of a ledger and the counts it sums to.

    Entries are sorted by (digest, class); classes without a document and words without a
    token are dropped and the indices renumbered. Two ledgers of the same documents give
    the same result, bit for bit.
    """
    quads = ledger.digests.view(">u8").reshape(-1, DIGEST_SIZE // 8)
    order = np.lexsort([ledger.labels] + [quads[:, k] for k in range(quads.shape[1] - 1, -1, -1)])
    ledger = ledger.take(order)
    used_classes = np.flatnonzero(np.bincount(ledger.labels, minlength=len(classes)))
    used_words = np.flatnonzero(np.bincount(ledger.words, minlength=len(vocabulary)))
    class_map = np.full(len(classes), -1, dtype=np.int64)
    class_map[used_classes] = np.arange(used_classes.size)
    word_map = np.full(len(vocabulary), -1, dtype=np.int64)
    word_map[used_words] = np.arange(used_words.size)
    if used_classes.size < len(classes) or used_words.size < len(vocabulary):
        ledger = ledger.relabel(class_map, word_map)  # else every index stays as it is
    classes = tuple(classes[c] for c in used_classes)
    vocabulary = tuple(vocabulary[j] for j in used_words)
    return ledger, ledger.sum_counts(classes, vocabulary)


def match(
    have: Sequence[tuple[bytes, str]], want: Sequence[tuple[bytes, str]]
) -> tuple[list[int], list[int]]:
    """Pair documents by ``(digest, class)``, as multisets (a text may occur twice).

    Returns ``(unmatched_have, unmatched_want)``: the positions in ``have`` that no
    document of ``want`` matches, and the positions in ``want`` that match nothing in
    ``have``, both ascending.
    """
    rows: dict[tuple[bytes, str], list[int]] = {}
    for i, key in enumerate(have):
        rows.setdefault(key, []).append(i)
    matched, unmatched_want = set(), []
    for position, key in enumerate(want):
        candidates = rows.get(key)
        if candidates:
            matched.add(candidates.pop())
        else:
            unmatched_want.append(position)
    return [i for i in range(len(have)) if i not in matched], unmatched_want
