"""Tally: per-class word counts of a batch of documents, in plain Python.

This is the unit of work of a fitting worker process. It needs only the standard
library (no numpy), so a worker starts fast and stays small; the main process adds the
tallies into its count arrays (:class:`nbclass.counts.CountAccumulator`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from .corpus import read_file
from .tokenizer import TokenizerSettings, make_tokenizer

Tally = tuple  # (N_c as list, [Counter word -> D_jc] per class, [Counter word -> T_jc] per class)


def tally(token_lists: Iterable[list[str]], labels: Iterable[int], n_classes: int) -> Tally:
    """Per-class counts of a batch of documents, in plain Python (no numpy needed).

    Returns ``(class_count, docs, tokens)``: N_c as a list, and for each class c a
    ``Counter`` of documents per word (D_jc) and one of tokens per word (T_jc). Both
    updates run at C speed (``Counter.update`` over a list or a set), and a worker
    process that only tallies never imports numpy.

    Examples
    --------
    >>> class_count, docs, tokens = tally([["a", "b", "a"], ["a"]], [0, 1], 2)
    >>> class_count, dict(docs[0]), dict(tokens[0]), dict(docs[1])
    ([1, 1], {'a': 1, 'b': 1}, {'a': 2, 'b': 1}, {'a': 1})
    """
    class_count = [0] * n_classes
    docs = [Counter() for _ in range(n_classes)]
    tokens = [Counter() for _ in range(n_classes)]
    for words, c in zip(token_lists, labels):
        class_count[c] += 1
        tokens[c].update(words)
        docs[c].update(set(words))
    return class_count, docs, tokens


def tally_paths(paths, labels, n_classes: int, tokenize) -> Tally:
    """Read, tokenize and :func:`tally` the documents at ``paths``."""
    return tally((tokenize(read_file(p)) for p in paths), labels, n_classes)


def tally_part(paths, labels, n_classes: int, tokenizer: TokenizerSettings, start: int):
    """A worker's unit of work: ``(start, end, tally)`` of ``paths`` (corpus[start:end])."""
    tokenize = make_tokenizer(tokenizer)
    return start, start + len(paths), tally_paths(paths, labels, n_classes, tokenize)
