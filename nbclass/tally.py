"""Tally: per-class word counts of a batch of documents, in plain Python.

This is the unit of work of a fitting worker process. It needs only the standard
library (no numpy), so a worker starts fast and stays small; the main process adds the
tallies into its count arrays (:class:`nbclass.counts.CountAccumulator`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from itertools import tee

from .corpus import decode
from .reading import DEFAULT_POLICY, ReadLog, ReadPolicy, read_document
from .tokenizer import TokenizerSettings, make_tokenizer

# (N_c as list, [Counter word -> D_jc] per class, [Counter word -> T_jc] per class), and with
# a ledger a fourth item: [(SHA-256 digest, class index, Counter word -> x_j)] per document.
Tally = tuple


def digest(data: bytes) -> bytes:
    """The ledger's name for a document: the SHA-256 of its bytes (32 bytes)."""
    return hashlib.sha256(data).digest()


def tally(token_lists: Iterable[list[str]], labels: Iterable[int], n_classes: int) -> Tally:
    """Per-class counts of a batch of documents, in plain Python (no numpy needed).

    Returns ``(class_count, docs, tokens)``: N_c as a list, and for each class c a
    ``Counter`` of documents per word (D_jc) and one of tokens per word (T_jc). Both
    updates run at C speed (``Counter.update`` over a list or a set), and a worker
    process that only tallies never imports numpy.

    Examples
    --------
    >>> class_count, docs, tokens = tally([["a", "b", "a"], ["a"]], [0, 1], 2)
    >>> class_count, sorted(docs[0].items()), sorted(tokens[0].items()), dict(docs[1])
    ([1, 1], [('a', 1), ('b', 1)], [('a', 2), ('b', 1)], {'a': 1})
    """
    class_count = [0] * n_classes
    docs = [Counter() for _ in range(n_classes)]
    tokens = [Counter() for _ in range(n_classes)]
    for words, c in zip(token_lists, labels):
        class_count[c] += 1
        tokens[c].update(words)
        docs[c].update(set(words))
    return class_count, docs, tokens


def tally_ledger(
    documents: Iterable[bytes], labels, n_classes: int, tokenize, decode=decode
) -> Tally:
    """:func:`tally` of raw documents, plus each document's ledger entry.

    The fourth item lists ``(digest, c, Counter)`` per document: what the model learned
    from it, enough to unlearn it later without reading it again.
    """
    class_count = [0] * n_classes
    docs = [Counter() for _ in range(n_classes)]
    tokens = [Counter() for _ in range(n_classes)]
    entries = []
    for data, c in zip(documents, labels):
        bag = Counter(tokenize(decode(data)))
        class_count[c] += 1
        tokens[c].update(bag)
        docs[c].update(bag.keys())
        entries.append((digest(data), c, bag))
    return class_count, docs, tokens, entries


def read_labelled(paths, labels, policy: ReadPolicy, log: ReadLog):
    """``(bytes, label)`` of each document at ``paths`` that the policy reads, one at a
    time; what it skips is recorded in ``log`` (:mod:`nbclass.reading`)."""
    for path, label in zip(paths, labels):
        data = read_document(path, policy, log)
        if data is not None:
            yield data, label


def tally_paths(
    paths, labels, n_classes: int, tokenize, ledger: bool = False,
    policy: ReadPolicy = DEFAULT_POLICY,
) -> Tally:  # fmt: skip
    """Read, tokenize and :func:`tally` the documents at ``paths``.

    Returns ``(class_count, docs, tokens, entries, seen, log)``: ``entries`` are the ledger
    entries (None without ``ledger``), ``seen`` the words sampled per hashed column (None
    unless the tokenizer hashes, :mod:`nbclass.hashing`), ``log`` the :class:`ReadLog` of
    the documents skipped and characters replaced.
    """
    log = ReadLog()
    texts, kept = tee(read_labelled(paths, labels, policy, log))
    texts, kept = (data for data, _ in texts), (label for _, label in kept)

    def decode(data: bytes) -> str:
        return log.decode(data, policy.encoding)

    if ledger:
        part = tally_ledger(texts, kept, n_classes, tokenize, decode)
    else:
        part = tally((tokenize(decode(t)) for t in texts), kept, n_classes)
        part = (*part, None)
    take_seen = getattr(tokenize, "take_seen", None)
    return (*part, take_seen() if take_seen else None, log)


def tally_part(
    paths, labels, n_classes: int, tokenizer: TokenizerSettings, start: int, ledger: bool = False,
    policy: ReadPolicy = DEFAULT_POLICY,
):  # fmt: skip
    """A worker's unit of work: ``(start, end, tally)`` of ``paths`` (corpus[start:end])."""
    tokenize = make_tokenizer(tokenizer)
    part = tally_paths(paths, labels, n_classes, tokenize, ledger, policy)
    return start, start + len(paths), part
