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
  however small it is).

SHA-256 is uniform over contents, so the first k documents by digest are a uniform
random sample of the set without replacement. The first k of a union are among the
first k of each part (and the first m of a class among the first m of that class in
each part), so the sample of ``A + B`` is the sample of (sample of A + sample of B):
update and merge are exact. The model file keeps the sample as ledger rows
(:class:`nbclass.counting.ledger.Ledger`: digest, class, word counts), so that every path
chooses again from counts and sample alone.

Removing a document that is in the sample cannot be made exact without knowing every
document (the next one by digest takes its place): a model with a ledger takes it from
the ledger; one without records how many sampled documents it lost (``short``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .ledger import DIGEST_SIZE, Ledger, concatenate, match

OVERALL = 6000  # documents of the sample in all (what the choice scores at most)
PER_CLASS = 5  # and at least this many of each class (all of a smaller class)


def order_of(digests: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Indices that sort documents by (digest, class), shape (n,): ``digests`` (n, 32)
    uint8 compared as big-endian numbers, ``labels`` (n,) class indices of sorted
    class names (so the order is that of (digest, class name))."""
    quads = np.ascontiguousarray(digests).view(">u8").reshape(-1, DIGEST_SIZE // 8)
    keys = [labels] + [quads[:, k] for k in range(quads.shape[1] - 1, -1, -1)]
    return np.lexsort(keys)


def kept(labels: np.ndarray, overall: int | None = None, per_class: int | None = None):
    """Which of documents already in (digest, class) order the sample keeps: the first
    ``overall`` (default :data:`OVERALL`) and the first ``per_class`` (default
    :data:`PER_CLASS`) of each class, as sorted indices, shape (k,).

    >>> kept(np.array([0, 0, 0, 1, 0, 1, 1]), overall=2, per_class=2).tolist()
    [0, 1, 3, 5]
    """
    overall = OVERALL if overall is None else overall
    per_class = PER_CLASS if per_class is None else per_class
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


def bottom(ledger: Ledger, overall: int | None = None, per_class: int | None = None) -> Ledger:
    """The sample of the documents of ``ledger`` (any order): its rows, in (digest,
    class) order (:func:`kept`)."""
    ordered = ledger.take(order_of(ledger.digests, ledger.labels))
    return ordered.take(kept(ordered.labels, overall, per_class))


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
    parts: Sequence[Ledger], overall: int | None = None, per_class: int | None = None
) -> Ledger:  # fmt: skip
    """The sample of the union of the sets whose samples are ``parts`` (over the same
    classes and words): the sample of their rows put together."""
    return bottom(concatenate(list(parts)), overall, per_class)


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
    keeps, or more rows of a class than the class has documents."""
    found = sample.problems(n_classes, n_words)
    if found:
        return found
    n = sample.n_documents
    if n > OVERALL + PER_CLASS * n_classes:
        return ["the sample holds more documents than a sample keeps"]
    if not np.array_equal(order_of(sample.digests, sample.labels), np.arange(n)):
        return ["the sample's documents are not in order"]
    if kept(sample.labels).size != n:
        return ["the sample holds documents a sample does not keep"]
    if (np.bincount(sample.labels, minlength=n_classes) > class_count).any():
        return ["the sample holds more documents of a class than the class has"]
    return []


class Keeper:
    """The sample of a stream of documents, kept in bounded memory.

    :meth:`offer` each document's ``(digest, class name, payload)``; :meth:`items` gives
    those of the sample, in (digest, class name) order. Every ``size`` offers the
    candidates are cut back to what the sample keeps of them, so memory holds at most
    about twice the sample. ``keys`` (when asked for) lists every document's
    ``(digest, class name)``, as unlearn needs them.
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
        if len(self.candidates) >= 2 * (OVERALL + PER_CLASS * len(self.classes)):
            self._cut()

    def _cut(self) -> None:
        self.candidates.sort(key=lambda item: (item[0], item[1]))
        at = {name: c for c, name in enumerate(sorted(self.classes))}
        labels = np.array([at[name] for _, name, _ in self.candidates], dtype=np.int64)
        self.candidates = [self.candidates[i] for i in kept(labels).tolist()]

    def items(self) -> list[tuple[bytes, str, object]]:
        self._cut()
        return list(self.candidates)
