"""The sample a default model chooses from: a bottom-k sketch of its documents by content.

``fit --model auto`` chooses its settings, calibration and typicality by cross-validating
on a sample of the training documents (:mod:`nbclass.models.choosing`). For update, merge,
unlearn, sync and a Dask fit to give what a fresh fit gives, that sample must be a
function of the *set* of documents, and computable from the parts of a set. So it is
defined by the documents' content, not by a random draw or by reading order:

- each document is named by the SHA-256 of its bytes (the ledger's digest,
  :func:`nbclass.counting.tally.digest`), and documents are ordered by (digest, class);
- the sample is the first :data:`OVERALL` documents of that order, together with the
  first :data:`PER_CLASS` documents of each class (so that every class is represented,
  however small it is), up to :data:`REPRESENTATIVES` such documents in all: past 2,000
  classes, fewer of each class (:func:`per_class_for`; none past 10,000 classes), so
  that the sample stays within 16,000 documents whatever the number of classes.

SHA-256 is uniform over contents, so the first k documents by digest are a uniform
random sample of the set without replacement. The first k of a union are among the
first k of each part (and the first m of a class among the first m of that class in
each part; a union has at least the classes of each part, so its m is at most theirs),
so the sample of ``A + B`` is the sample of (sample of A + sample of B): update and
merge are exact. The model file keeps the sample as ledger rows
(:class:`nbclass.counting.ledger.Ledger`: digest, class, word counts), so that every path
chooses again from counts and sample alone.

Removing a document that is in the sample cannot be made exact without knowing every
document (the next one by digest takes its place): a model with a ledger takes it from
the ledger; one without records how many sampled documents it lost (``short``).
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter

import numpy as np

from .ledger import DIGEST_SIZE, Ledger, concatenate, match

OVERALL = 6000  # documents of the sample in all (what the choice scores at most)
PER_CLASS = 5  # and at least this many of each class (all of a smaller class)
# The first few of each class are at most this many documents (5 of each of 2,000
# classes): at 20,000 classes of 4 documents each, 5 of each made the sample 75,045
# documents, nearly the whole corpus (memory, file and choice growing with the classes),
# while the choice can score only so many documents against that many classes.
REPRESENTATIVES = 10_000


def per_class_for(n_classes: int) -> int:
    """How many of each class's first documents the sample of a set of documents of
    ``n_classes`` classes keeps: :data:`PER_CLASS`, or fewer where that would be more
    than :data:`REPRESENTATIVES` documents (⌊10,000 / C⌋: 4 of each up to 2,500 classes,
    1 up to 10,000, none past). It never grows with the classes, so the sample of a
    union (as many classes or more) is within its parts' samples.

    >>> [per_class_for(C) for C in (2, 2000, 2001, 5000, 10000, 10001, 20000)]
    [5, 5, 4, 2, 1, 0, 0]
    """
    return min(PER_CLASS, REPRESENTATIVES // max(n_classes, 1))


def bounds(labels: Sequence[int], n_classes: int) -> list[int]:
    """For each class of a corpus whose documents have classes ``labels`` (before they
    are read), a bound on the first 8 bytes of a digest (a big-endian number) below
    which a document may be in the sample: the count keeps those documents' rows as it
    hashes and counts them (:class:`nbclass.counting.counts.SampleRows`).

    The sample is the first :data:`OVERALL` of ``n`` documents by digest and the first
    m (:func:`per_class_for`) of each class of ``n_c``: SHA-256 is uniform, so the k-th
    smallest of n digests lies near the share k / n of the range, within about √k / n.
    The bound is the share (k + 4 √k + 4) / n of the range for the first k = 6,000
    (about 5 % more documents than those; 4 standard deviations past them), and for a
    class the larger of that and 2 m / n_c (twice the documents its first m need, so
    that at most 2 × 10,000 documents are kept for the classes, as many as
    :data:`REPRESENTATIVES` twice, whatever their number); every digest where it
    reaches the whole. A document of the sample beyond its bound is read and counted
    again after the count (:func:`nbclass.models.learning.marked_sample`), so the sample
    never depends on the bounds, only the work.

    >>> top = 1 << 64
    >>> [b == top for b in bounds([0] * 10 + [1] * 9000, 2)]
    [True, False]
    >>> bounds([0] * 20000, 1)[0] / top
    0.3156...
    """
    whole = 1 << 64

    def share(part: float, n: int) -> int:
        return whole if n <= part else int(part / n * whole)

    sizes = np.bincount(np.asarray(labels, dtype=np.int64), minlength=n_classes).tolist()
    overall = share(OVERALL + 4 * OVERALL**0.5 + 4, len(labels))
    m = per_class_for(n_classes)
    return [max(overall, share(2 * m, size)) if m else overall for size in sizes]


def order_of(digests: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Indices that sort documents by (digest, class), shape (n,): ``digests`` (n, 32)
    uint8 compared as big-endian numbers, ``labels`` (n,) class indices of sorted
    class names (so the order is that of (digest, class name)); documents of one digest
    and class in their order in ``digests`` (a stable sort).

    Sorted by the digests' first 8 bytes alone (a uniform number: two documents share
    them only when they share the digest, a document held twice), and only the
    documents sharing those with another sorted again by the whole key, in their places:
    the order of a sort of the five keys (a lexsort took 15 ms of 38,600 documents, this
    2 to 4)."""
    labels = np.asarray(labels)
    quads = np.ascontiguousarray(digests).view(">u8").reshape(-1, DIGEST_SIZE // 8)
    first = quads[:, 0].astype(np.uint64)
    order = np.argsort(first)
    ranked = first[order]
    same = ranked[1:] == ranked[:-1]
    if same.any():  # the runs of one first word, in places: by the whole key, stably
        tied = np.zeros(order.size, dtype=bool)
        tied[1:] = same
        tied[:-1] |= same
        at = np.flatnonzero(tied)
        rows = np.sort(order[at])  # (each run's in their order in digests)
        keys = [labels[rows]] + [quads[rows, k] for k in range(quads.shape[1] - 1, -1, -1)]
        order[at] = rows[np.lexsort(keys)]
    return order


def kept(labels: np.ndarray, overall: int | None = None, per_class: int | None = None,
         *, n_classes: int | None = None):  # fmt: skip
    """Which of documents already in (digest, class) order the sample keeps: the first
    ``overall`` (default :data:`OVERALL`) and the first ``per_class`` (default
    :func:`per_class_for` the ``n_classes`` classes of the set) of each class, as sorted
    indices, shape (k,).

    >>> kept(np.array([0, 0, 0, 1, 0, 1, 1]), overall=2, per_class=2).tolist()
    [0, 1, 3, 5]
    """
    overall = OVERALL if overall is None else overall
    if per_class is None:
        if n_classes is None:
            raise TypeError("kept() needs per_class or n_classes")
        per_class = per_class_for(n_classes)
    labels = np.asarray(labels, dtype=np.int64)
    keep = np.zeros(labels.size, dtype=bool)
    keep[:overall] = True
    if labels.size:
        order = np.argsort(labels, kind="stable")  # each class's documents, in order
        sorted_labels = labels[order]
        starts = np.searchsorted(sorted_labels, sorted_labels, side="left")
        rank = np.arange(labels.size) - starts  # the place of each within its class
        keep[order[rank < per_class]] = True
    return np.flatnonzero(keep)


def bottom(ledger: Ledger, overall: int | None = None, per_class: int | None = None,
           *, n_classes: int | None = None) -> Ledger:  # fmt: skip
    """The sample of the documents of ``ledger`` (any order), a set of ``n_classes``
    classes: its rows, in (digest, class) order (:func:`kept`)."""
    ordered = ledger.take(order_of(ledger.digests, ledger.labels))
    return ordered.take(kept(ordered.labels, overall, per_class, n_classes=n_classes))


def onto(
    sample: Ledger, classes: Sequence[str], vocabulary: Sequence[str],
    new_classes: Sequence[str], new_vocabulary: Sequence[str],
) -> Ledger:  # fmt: skip
    """``sample`` (over ``classes`` and ``vocabulary``) with its indices moved onto
    ``new_classes`` and ``new_vocabulary`` (sorted), which hold every class and word it
    uses. The order of (digest, class name) is unchanged."""
    class_at = {name: c for c, name in enumerate(new_classes)}
    word_at = {word: j for j, word in enumerate(new_vocabulary)}
    used_classes = np.unique(sample.labels)
    used_words = np.unique(sample.words)
    class_map = np.full(len(classes), -1, dtype=np.int64)
    word_map = np.full(len(vocabulary), -1, dtype=np.int64)
    class_map[used_classes] = [class_at[classes[c]] for c in used_classes.tolist()]
    word_map[used_words] = [word_at[vocabulary[j]] for j in used_words.tolist()]
    return sample.relabel(class_map, word_map)


def union(
    parts: Sequence[Ledger], overall: int | None = None, per_class: int | None = None,
    *, n_classes: int | None = None,
) -> Ledger:  # fmt: skip
    """The sample of the union (of ``n_classes`` classes) of the sets whose samples are
    ``parts`` (over the same classes and words): the sample of their rows put together."""
    return bottom(concatenate(list(parts)), overall, per_class, n_classes=n_classes)


def without(
    sample: Ledger, classes: Sequence[str], keys: Sequence[tuple[bytes, str]]
) -> tuple[Ledger, int]:
    """``sample`` less the documents named by ``keys`` (digest, class name), as multisets;
    and how many of its rows went."""
    rest, _ = match(sample.keys(classes), keys)
    return sample.take(rest), sample.n_documents - len(rest)


def problems(sample: Ledger, n_classes: int, n_words: int, class_count: np.ndarray) -> list[str]:
    """What makes a stored sample impossible for counts with ``class_count`` (C,): the
    ledger's own problems, rows out of (digest, class) order or more than the sample
    keeps, or more rows of a class than the class has documents. A sample of the first
    :data:`PER_CLASS` of each class whatever the number of classes (as files written
    before :data:`REPRESENTATIVES` hold) is a sample too: every choice takes the same
    documents from it as from the sample of today's rule, which it holds."""
    found = sample.problems(n_classes, n_words)
    if found:
        return found
    n = sample.n_documents
    if n > OVERALL + PER_CLASS * n_classes:
        return ["the sample holds more documents than a sample keeps"]
    if not np.array_equal(order_of(sample.digests, sample.labels), np.arange(n)):
        return ["the sample's documents are not in order"]
    if kept(sample.labels, per_class=PER_CLASS).size != n:
        return ["the sample holds documents a sample does not keep"]
    if (np.bincount(sample.labels, minlength=n_classes) > class_count).any():
        return ["the sample holds more documents of a class than the class has"]
    return []


class Keeper:
    """The sample of a stream of documents, kept in bounded memory.

    :meth:`offer` each document's ``(digest, class name, payload)``; :meth:`items` gives
    those of the sample, in (digest, class name) order. Every ``size`` offers the
    candidates are cut back to what the sample keeps of them, so memory holds at most
    about twice the sample. A cut counts the classes offered so far, never more than the
    set's, so it keeps as many of each class as the sample of the set, or more. ``keys``
    (when asked for) lists every document's ``(digest, class name)``, as unlearn needs
    them.
    """

    def __init__(self, keys: bool = False):
        self.candidates: list[tuple[bytes, str, object]] = []
        self.keys: list[tuple[bytes, str]] | None = [] if keys else None
        self.classes: set[str] = set()
        self.decode = None  # bytes -> text of a payload, if payloads are bytes

    def offer(self, digest: bytes, name: str, payload) -> None:
        self.candidates.append((digest, name, payload))
        self.classes.add(name)
        if self.keys is not None:
            self.keys.append((digest, name))
        self._cut_if_full()

    def offer_many(self, digests: bytes, names: Sequence[str], payloads: Sequence) -> None:
        """:meth:`offer` documents ``names`` and ``payloads`` of ``digests`` (joined,
        :data:`DIGEST_SIZE` bytes each) at once. What the sample keeps does not depend on
        when the candidates are cut (each cut keeps a superset of what the set's sample
        keeps of them), so the offers of a window of a count take one test of the size,
        not one a document (95,238 offers took 0.3 s of the count's main process).

        A window of more documents than a sample is first cut to its own sample (by
        numpy, over the classes offered so far): the sample of the set is within the
        samples of its parts, and the order of documents of one digest and class (the
        order they were offered in) is kept, so the same items are kept, and only
        those are made tuples (multilingual's 77,057 offers in two windows took 75 ms,
        13 of them making and cutting tuples of documents never kept)."""
        size = DIGEST_SIZE
        self.classes.update(names)
        if self.keys is not None:
            found = [digests[k : k + size] for k in range(0, len(names) * size, size)]
            self.keys.extend(zip(found, names))
        C = len(self.classes)
        if len(names) > OVERALL + per_class_for(C) * C:
            at = {name: c for c, name in enumerate(sorted(self.classes))}
            labels = np.fromiter(map(at.__getitem__, names), dtype=np.int64, count=len(names))
            order = order_of(np.frombuffer(digests, dtype=np.uint8).reshape(-1, size), labels)
            keep = order[kept(labels[order], n_classes=C)].tolist()
            self.candidates.extend(
                (digests[k * size : (k + 1) * size], names[k], payloads[k]) for k in keep
            )
        else:
            found = [digests[k : k + size] for k in range(0, len(names) * size, size)]
            self.candidates.extend(zip(found, names, payloads))
        self._cut_if_full()

    def _cut_if_full(self) -> None:
        C = len(self.classes)
        if len(self.candidates) >= 2 * (OVERALL + per_class_for(C) * C):
            self._cut()

    def _cut(self, n_classes: int | None = None) -> None:
        """Keep of the candidates, in (digest, class name) order, those the sample of a
        set of ``n_classes`` classes (default: those offered) keeps of them: the order by
        numpy (:func:`order_of`; a sort of 32,000 tuples took 30 ms a cut)."""
        at = {name: c for c, name in enumerate(sorted(self.classes))}
        labels = np.fromiter(
            map(at.__getitem__, map(itemgetter(1), self.candidates)),
            dtype=np.int64, count=len(self.candidates),
        )  # fmt: skip
        digests = np.frombuffer(
            b"".join(map(itemgetter(0), self.candidates)), dtype=np.uint8
        ).reshape(-1, DIGEST_SIZE)
        order = order_of(digests, labels)
        C = len(self.classes) if n_classes is None else n_classes
        keep = order[kept(labels[order], n_classes=C)]
        self.candidates = list(map(self.candidates.__getitem__, keep.tolist()))

    def items(self, n_classes: int | None = None) -> list[tuple[bytes, str, object]]:
        """The sample's items; ``n_classes``: the classes of the whole set, when more
        than those offered here (a worker's share of a corpus sends only its sample)."""
        self._cut(n_classes)
        return list(self.candidates)
