"""Tally: per-class word counts of a batch of documents.

This is the unit of work of a fitting worker process: :func:`tally` counts token lists
in plain Python (``Counter``), and :func:`tally_paths` reads documents and counts those
that are all ASCII with numpy instead, when the tokenizer allows it
(:class:`nbclass.text.runs.RunTally`). The main process adds the packed tallies into its count
arrays (:class:`nbclass.counting.counts.CountAccumulator`).
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable
from itertools import chain, compress, repeat, tee
from operator import not_

from ..reading.corpus import decode
from ..reading.policy import DEFAULT_POLICY, ReadLog, ReadPolicy, read_documents
from ..text.tokenizer import AsciiSplitter, TokenizerSettings, ascii_splitter, make_tokenizer

# (N_c as list, [Counter word -> D_jc] per class, [Counter word -> T_jc] per class), and with
# a ledger a fourth item: [(SHA-256 digest, class index, Counter word -> x_j)] per document.
Tally = tuple
DIGEST_WORDS = 4  # a digest's 32 bytes as 8-byte words (its first: DigestMarks' test)


def digest(data: bytes) -> bytes:
    """The ledger's name for a document: the SHA-256 of its bytes (32 bytes)."""
    return hashlib.sha256(data).digest()


class DigestMarks:
    """The sample's documents marked as a counting process reads them
    (:class:`nbclass.counting.counts.SampleRows`): each document read is hashed
    (:func:`digest`), its ``(index, digest)`` kept for the process that chooses the
    sample, and it is marked (by its index among the corpus's paths) when the first 8
    bytes of its digest, read as a big-endian number, are below its class's bound
    (:func:`nbclass.counting.sketch.bounds`): its rows are then kept as it is counted.

    ``offset``: the index of the first path of the part being read."""

    def __init__(self, bounds: list[int]):
        self.bounds = bounds
        self.offset = 0
        self._indices: list[int] = []
        self._digests: list[bytes] = []
        self._top = self._whole = None  # the bounds as arrays, once many() needs them

    def __call__(self, i: int, data: bytes, c: int) -> int:
        """The mark of document ``i`` of the part (of class ``c``), −1 for none."""
        found = hashlib.sha256(data).digest()
        at = self.offset + i
        self._indices.append(at)
        self._digests.append(found)
        return at if int.from_bytes(found[:8], "big") < self.bounds[c] else -1

    def many(self, indices: list[int], datas: list[bytes], classes: list[int]) -> list[int]:
        """The marks of documents ``datas`` (indices ``indices`` in the part, of classes
        ``classes``), as :meth:`__call__` gives them one at a time: the digests made in
        one pass, and the bounds compared by numpy (a call per document, hashing and
        testing it, took 0.08 s of multilingual's 77,057 documents, this 0.04)."""
        import numpy as np

        sha256 = hashlib.sha256
        found = [sha256(data).digest() for data in datas]
        at = np.asarray(indices, dtype=np.int64) + self.offset
        self._indices.extend(at.tolist())
        self._digests.extend(found)
        if self._top is None:  # a bound of 2^64 (every digest) does not fit a uint64
            self._top = np.array([min(b, (1 << 64) - 1) for b in self.bounds], np.uint64)
            self._whole = np.array([b >= 1 << 64 for b in self.bounds], dtype=bool)
        first = np.frombuffer(b"".join(found), dtype=">u8")[:: DIGEST_WORDS]
        c = np.asarray(classes, dtype=np.int64)
        return np.where((first < self._top[c]) | self._whole[c], at, -1).tolist()

    def take(self) -> tuple[list[int], bytes]:
        """The indices and the digests (joined) of the documents read since the last
        call; then cleared."""
        found = (self._indices, b"".join(self._digests))
        self._indices, self._digests = [], []
        return found


class FirstCallTokenizer:
    """:func:`nbclass.text.tokenizer.make_tokenizer` of ``settings``, made when first
    called: a count by runs tokenizes in Python only the documents longer than a chunk
    and those of a chunk with a hash clash, most often none, and the default fit's
    tokenizer (the symbols, ``unspaced="all"``) compiled its patterns in 10 ms of every
    counting process. Not for a hashing tokenizer (its ``take_seen``)."""

    __slots__ = ("settings", "_tokenize")

    def __init__(self, settings: TokenizerSettings):
        self.settings = settings
        self._tokenize = None

    def __call__(self, text: str) -> list[str]:
        if self._tokenize is None:
            self._tokenize = make_tokenizer(self.settings)
        return self._tokenize(text)


def new_tally(n_classes: int) -> Tally:
    """An empty :func:`tally` of ``n_classes`` classes, to add documents into.

    Its empty Counters are made by ``Counter.__new__`` alone (an empty dict of that
    type: what ``Counter()`` is once its ``__init__`` has added nothing) in a tenth of
    the time: a worker makes two for every class with every window, and at 2,000
    classes ``Counter()`` took 4 ms a window, most of them never filled (the documents
    counted by runs are not in them).

    >>> class_count, docs, tokens = new_tally(2)
    >>> class_count, docs, type(tokens[1]), docs[0] is docs[1]
    ([0, 0], [Counter(), Counter()], <class 'collections.Counter'>, False)
    """
    return (
        [0] * n_classes,
        list(map(Counter.__new__, repeat(Counter, n_classes))),
        list(map(Counter.__new__, repeat(Counter, n_classes))),
    )


class _NoCounts(Counter):
    """The empty Counter every class of a tally counted by runs starts with, one object
    shared by all (:func:`_tally_split`): most classes' documents are all counted by
    runs, and at 20,000 classes two new Counters a class took 8 ms of a window's 60.
    :func:`_tokenized` gives a class Counters of its own before it counts into them;
    anything else that writes to this one is refused."""

    def _refused(self, *args, **kwargs):
        raise TypeError("the shared empty Counter of a run tally's classes is not written to")

    def update(self, iterable=None, /, **kwds):
        if iterable or kwds:  # (Counter's __init__ updates with nothing)
            self._refused()

    subtract = pop = popitem = setdefault = __setitem__ = __delitem__ = _refused

    def __reduce__(self):
        return "_NO_COUNTS"  # pickled and copied as the one shared object


_NO_COUNTS = _NoCounts()


def tally(
    token_lists: Iterable[list[str]], labels: Iterable[int], n_classes: int, into=None
) -> Tally:
    """Per-class counts of a batch of documents, in plain Python (no numpy needed).

    Returns ``(class_count, docs, tokens)``: N_c as a list, and for each class c a
    ``Counter`` of documents per word (D_jc) and one of tokens per word (T_jc). Both
    updates run at C speed (``Counter.update`` over a list or a set), and a worker
    process that only tallies never imports numpy. With ``into`` (a tally), the
    documents are added to it and it is returned.

    Examples
    --------
    >>> class_count, docs, tokens = tally([["a", "b", "a"], ["a"]], [0, 1], 2)
    >>> class_count, sorted(docs[0].items()), sorted(tokens[0].items()), dict(docs[1])
    ([1, 1], [('a', 1), ('b', 1)], [('a', 2), ('b', 1)], {'a': 1})
    """
    class_count, docs, tokens = into[:3] if into is not None else new_tally(n_classes)
    add_docs = [d.update for d in docs]
    add_tokens = [t.update for t in tokens]
    for words, c in zip(token_lists, labels):
        class_count[c] += 1
        add_tokens[c](words)  # hashes each token once (str caches it) ...
        add_docs[c](set(words))  # ... for the set and both counts
    return class_count, docs, tokens


def tally_ledger(
    documents: Iterable[bytes], labels, n_classes: int, tokenize, into=None, decode=decode
) -> Tally:
    """:func:`tally` of raw documents, plus each document's ledger entry.

    The fourth item lists ``(digest, c, Counter)`` per document: what the model learned
    from it, enough to unlearn it later without reading it again.
    """
    if into is None:
        into = (*new_tally(n_classes), [])
    class_count, docs, tokens, entries = into[:4]
    for data, c in zip(documents, labels):
        bag = Counter(tokenize(decode(data)))
        class_count[c] += 1
        tokens[c].update(bag)
        docs[c].update(bag.keys())
        entries.append((digest(data), c, bag))
    return class_count, docs, tokens, entries


def read_labelled(paths, labels, policy: ReadPolicy, log: ReadLog):
    """``(bytes, label)`` of each document at ``paths`` that the policy reads, one at a
    time; what it skips is recorded in ``log`` (:mod:`nbclass.reading.policy`)."""
    for i, data in read_documents(paths, policy, log):
        yield data, labels[i]


def _hashed(documents, labels, marks: DigestMarks):
    """``(bytes, label)`` of each ``(i, bytes)`` of ``documents``, each hashed by ``marks``
    (its mark unused)."""
    for i, data in documents:
        marks(i, data, labels[i])
        yield data, labels[i]


def pack(part: Tally, origin=None) -> tuple:
    """A :func:`tally` (or :func:`tally_paths` result) in a compact form, cheap to send.

    Returns ``(class_count, words, lengths, rows, doc_counts, token_counts, *rest)``:
    ``words`` holds the distinct words of the tally, sorted, joined by NUL characters
    (no token holds one; one string pickles and unpickles far faster than many); for
    class c, the next ``lengths[c]`` items of ``rows`` (indices into the words),
    ``doc_counts`` (D_jc) and ``token_counts`` (T_jc) are its nonzero counts (int32
    arrays, int64 where a value needs it; in no particular order). ``rest`` holds the
    tally's items after the third (ledger entries, sampled words, read log) unchanged.
    Adding this costs one dictionary look-up per word rather than one per word and class
    (:meth:`nbclass.counting.counts.CountAccumulator.add_packed`).

    The ASCII documents a :func:`tally_paths` with a splitter counted by runs (its
    :class:`nbclass.text.runs.RunTally`) are added too; a word met both there and in a document
    that is not ASCII has two entries for a class, and the receiver adds both.

    >>> packed = pack(tally([["b", "a", "b"], ["a"]], [0, 1], 2))
    >>> packed[0], packed[1].split("\\x00"), packed[2].tolist(), packed[3].tolist()
    ([1, 1], ['a', 'b'], [2, 1], [1, 0, 0])
    >>> packed[4].tolist(), packed[5].tolist()
    ([1, 1, 1], [2, 1, 1])

    With an ``origin`` (a name for the run tally, the same for every window it counts:
    the receiver keeps its numbers of the words), ``words`` is instead ``(origin,
    new_words, new_ids, others, new_keys)``: the run tally's words numbered since its
    last pack, sorted, NUL-joined, with their numbers
    (:meth:`nbclass.text.runs.RunTally.packed_new`), the other documents' words,
    NUL-joined, and the keys of the new words (uint64,
    :meth:`nbclass.text.runs.RunTally.keys_of`); a row below ``len(others)`` is one of
    those, a row ``len(others) + i`` is the run tally's word number i. The run tally's
    words then cost a look-up once per fit, not once per window, and the receiver
    places them by their keys. Its sixth item is the sample's rows (:func:`_sampled_rows`),
    its seventh the word pairs the run tally numbered since its last pack (by the
    numbers of their two words, ``--ngram-range 1,2``), ``(pair_ids, first, second)``:
    their numbers and those of their two words, no names (the receiver names each
    distinct pair once, at the end).
    """
    import numpy as np

    class_count, docs, tokens = part[:3]
    keys = list(dict.fromkeys(chain.from_iterable(tokens)))  # first-seen order
    index = dict(zip(keys, range(len(keys)))).__getitem__
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    rows, doc_counts, token_counts = [], [], []
    for c in np.flatnonzero(lengths).tolist():  # the classes with a Counter's words only
        d, t, n = docs[c], tokens[c], int(lengths[c])
        rows.append(np.fromiter(map(index, t), dtype=np.int64, count=n))
        doc_counts.append(np.fromiter(map(d.__getitem__, t), dtype=np.int64, count=n))
        token_counts.append(np.fromiter(t.values(), dtype=np.int64, count=n))
    rows, doc_counts, token_counts = (
        np.concatenate(p) if p else np.zeros(0, dtype=np.int64)
        for p in (rows, doc_counts, token_counts)
    )
    runs = part[6] if len(part) > 6 else None
    if origin is not None and runs is not None:
        return _pack_by_numbers(part, origin, keys, lengths, rows, doc_counts, token_counts)
    run_words = []
    if runs is not None:  # the documents counted by runs
        run_words, run_lengths, run_rows, run_docs, run_tokens = runs.packed()
        rows += len(run_words)
        if not rows.size:  # all ASCII: the run tally's counts are all there is
            rows, doc_counts, token_counts = run_rows, run_docs, run_tokens
        else:
            classes = np.arange(len(class_count))
            by_class = (np.repeat(classes, run_lengths), np.repeat(classes, lengths))
            order = np.argsort(np.concatenate(by_class), kind="stable")
            rows, doc_counts, token_counts = (
                np.concatenate(pair)[order]
                for pair in ((run_rows, rows), (run_docs, doc_counts), (run_tokens, token_counts))
            )
        lengths = lengths + run_lengths
    # The words sorted (in the worker, while the others work): the receiver's vocabulary
    # then comes in sorted runs, which its final sort merges in a few milliseconds. The
    # run tally's words come sorted already; the others are merged in.
    names = run_words
    if keys:
        names, at_runs, at_keys = _union(run_words, keys)
        rows = np.concatenate((at_runs, at_keys))[rows]
    words = "\x00".join(names)
    rest = part[3:6] if len(part) > 6 else part[3:]
    arrays = map(narrow, (lengths, rows, doc_counts, token_counts))
    return (class_count, words, *arrays, *rest)


def _pack_by_numbers(part, origin, keys, lengths, rows, doc_counts, token_counts) -> tuple:
    """:func:`pack` with an ``origin``: the Counters' counts (``keys``, rows into them)
    and the run tally's by its own numbers of the words, class by class."""
    import numpy as np

    new_words, new_ids, run_lengths, run_rows, run_docs, run_tokens, new_pairs = (
        part[6].packed_new()
    )
    run_rows = run_rows + len(keys)
    if not rows.size:
        rows, doc_counts, token_counts = run_rows, run_docs, run_tokens
    else:
        classes = np.arange(len(part[0]))
        by_class = (np.repeat(classes, run_lengths), np.repeat(classes, lengths))
        order = np.argsort(np.concatenate(by_class), kind="stable")
        rows, doc_counts, token_counts = (
            np.concatenate(pair)[order]
            for pair in ((run_rows, rows), (run_docs, doc_counts), (run_tokens, token_counts))
        )
    new_keys = part[6].keys_of(new_ids)
    words = (origin, "\x00".join(new_words), narrow(new_ids), "\x00".join(keys), new_keys,
             _sampled_rows(part[6], keys), tuple(map(narrow, new_pairs)))  # fmt: skip
    arrays = map(narrow, (lengths + run_lengths, rows, doc_counts, token_counts))
    return (part[0], words, *arrays, *part[3:6])


def _sampled_rows(runs, keys: list[str]) -> tuple | None:
    """``(counted, marks, rows, counts)`` of the sample's documents the run tally ``runs``
    kept since its last pack (:meth:`nbclass.text.runs.RunTally.take_sampled`, and its
    ``sampled_bags``), rows as the pack's: below ``len(keys)`` one of the Counters' words
    ``keys``, else ``len(keys)`` + a run tally number (each array :func:`narrow`); None
    when there are none."""
    import numpy as np

    counted, marks, ids, counts = runs.take_sampled()
    bags, runs.sampled_bags = runs.sampled_bags, []
    if not counted.size and not bags:
        return None
    rows = ids + len(keys)
    if bags:
        index = dict(zip(keys, range(len(keys)))).__getitem__
        sizes = np.fromiter((len(bag) for _, bag in bags), dtype=np.int64, count=len(bags))
        mark = np.fromiter((m for m, _ in bags), dtype=np.int64, count=len(bags))
        words = list(chain.from_iterable(bag.keys() for _, bag in bags))
        values = list(chain.from_iterable(bag.values() for _, bag in bags))
        counted = np.concatenate((counted, mark))
        marks = np.concatenate((marks, np.repeat(mark, sizes)))
        rows = np.concatenate((rows, np.fromiter(map(index, words), np.int64, len(words))))
        counts = np.concatenate((counts, np.array(values, dtype=np.int64)))
    # int32 where they fit, as the pack's counts: a worker sends them through a pipe (20
    # Newsgroups' sample: 1.1 million rows, 27 MB as int64, whose pickling alone took 14 ms)
    return tuple(map(narrow, (counted, marks, rows, counts)))


def _union(ordered: list[str], others: list[str]):
    """``(words, at_ordered, at_others)``: the union of ``ordered`` (sorted, distinct)
    and ``others`` (distinct, any order), sorted, and the place in it of each word of
    ``ordered`` and of ``others`` (int64 ndarrays). No dictionary of every word is made:
    the words of ``others`` not in ``ordered`` are placed by binary search.

    >>> words, a, b = _union(["b", "d"], ["e", "a", "d"])
    >>> words, a.tolist(), b.tolist()
    (['a', 'b', 'd', 'e'], [1, 2], [3, 0, 2])
    """
    import numpy as np

    extra = sorted(set(others).difference(ordered))
    insert = np.fromiter(
        (bisect_left(ordered, word) for word in extra), dtype=np.int64, count=len(extra)
    )
    n = len(ordered)
    at_ordered = np.arange(n) + np.searchsorted(insert, np.arange(n), side="right")
    at_extra = dict(zip(extra, (insert + np.arange(len(extra))).tolist()))
    at_others = np.fromiter(
        (
            at_extra[word] if word in at_extra else int(at_ordered[bisect_left(ordered, word)])
            for word in others
        ),
        dtype=np.int64,
        count=len(others),
    )
    return sorted(ordered + extra), at_ordered, at_others  # two sorted runs: a merge


def narrow(values):
    """An integer ndarray with no negative value as int32 when every value fits (half
    the memory, and half the bytes to send), else as it is."""
    if values.size and int(values.max()) >= 2**31:
        return values
    return values.astype("int32", copy=False)


def tally_paths(
    paths, labels, n_classes: int, tokenize, ledger: bool = False,
    policy: ReadPolicy = DEFAULT_POLICY, into=None, splitter: AsciiSplitter | None = None,
    runs=None, marks=None,
) -> Tally:  # fmt: skip
    """Read, tokenize and :func:`tally` the documents at ``paths``.

    Returns ``(class_count, docs, tokens, entries, seen, log)``: ``entries`` are the ledger
    entries (None without ``ledger``), ``seen`` the words sampled per hashed column (None
    unless the tokenizer hashes, :mod:`nbclass.text.hashing`), ``log`` the :class:`ReadLog` of
    the documents skipped and characters replaced. With ``into`` (an earlier result),
    the documents are added to it.

    With a ``splitter`` (:func:`nbclass.text.tokenizer.ascii_splitter` of the tokenizer's
    settings; not with ``ledger``), documents are counted by runs, with numpy, apart
    (those all ASCII never decoded); a seventh item (a :class:`nbclass.text.runs.RunTally`,
    or None) holds those counts, which :func:`pack` adds to the others. The counts are
    the same, in about a third of the time. Without ``into``, ``runs`` (a run tally
    packed before, with an origin) counts them, so that it keeps its words' numbers.

    ``marks`` (a :class:`DigestMarks`): every document read is hashed by it, and with a
    ``splitter`` (not with ``ledger``) the documents it marks, those that may be in the
    sample (:mod:`nbclass.counting.sketch`), have their rows kept by the run tally as it
    counts them (:meth:`nbclass.text.runs.RunTally.take_sampled` and its
    ``sampled_bags``), so that they are never read and tokenized again.
    """
    log = ReadLog()
    if splitter is not None and not ledger:  # read at once, as columns (_tally_split's)
        found = list(read_documents(paths, policy, log))
        at, datas = [i for i, _ in found], [data for _, data in found]
        del found
        classes = [labels[i] for i in at]
        read = (datas, classes, None if marks is None else marks.many(at, datas, classes))
    elif marks is not None:  # hashed only: no row is kept
        read = _hashed(read_documents(paths, policy, log), labels, marks)
    else:
        read = read_labelled(paths, labels, policy, log)

    def decode(data: bytes) -> str:
        return log.decode(data, policy.encoding)

    if splitter is not None and not ledger:
        part = _tally_split(
            read, n_classes, tokenize, decode, splitter, into, runs, policy.encoding
        )
    else:
        texts, kept = tee(read)
        texts, kept = (data for data, _ in texts), (label for _, label in kept)
        if ledger:
            part = tally_ledger(texts, kept, n_classes, tokenize, into, decode)
        else:
            part = tally((tokenize(decode(t)) for t in texts), kept, n_classes, into)
            part = (*part, None)
    take_seen = getattr(tokenize, "take_seen", None)
    seen = take_seen() if take_seen else None
    if seen is not None and into is not None and into[4]:
        from ..text.hashing import add_representative

        for column, sample in seen.items():
            for key, word in sample:
                add_representative(into[4], column, key, word)
        seen = into[4]
    if into is not None:
        into[5].add(log)
        log = into[5]
    return (*part[:4], seen, log, *part[4:])


def _tally_split(columns, n_classes, tokenize, decode, splitter, into, runs, encoding):
    """:func:`tally` of raw documents, counted by runs with numpy
    (:class:`nbclass.text.runs.RunTally`): those all ASCII as bytes, never decoded, the others
    decoded and counted as str (:meth:`nbclass.text.runs.JoinedTexts.read`: under UTF-8,
    all of a part in one call unless one of them is not UTF-8); only documents longer
    than ``CHUNK_BYTES`` (or a chunk with a hash clash) are tokenized in Python. Returns
    ``(class_count, docs, tokens, None, runs)`` (see :func:`tally_paths`).

    ``columns``: ``(documents, labels, marks)``, lists (a part's pairs made columns by
    zip(*pairs), and again for its marks, took 15-20 ms of each 38,500 documents of
    multilingual's; comprehensions 2), ``marks`` None or one per document
    (:class:`DigestMarks`, −1 for none): the marked documents' rows are kept as they are
    counted (gathered with the others, :meth:`nbclass.text.runs.RunTally.gather`), or
    their Counters in the run tally's ``sampled_bags`` where they are tokenized."""
    from ..text.runs import CHUNK_BYTES, JoinedTexts

    if into is None:  # each class's Counters made when a document is tokenized into them
        class_count = [0] * n_classes
        docs, tokens = [_NO_COUNTS] * n_classes, [_NO_COUNTS] * n_classes
    else:
        class_count, docs, tokens = into[:3]
        runs = into[6]
    if runs is None:
        from ..text.runs import RunTally

        runs = RunTally.make(splitter, n_classes)
    datas, labels, marks = columns
    if not datas:
        return class_count, docs, tokens, None, runs
    for c, n in Counter(labels).items():
        class_count[c] += n
    # The marks, when some document is marked and a run tally keeps their rows.
    marks = marks if marks is not None and runs is not None and max(marks) >= 0 else None
    others = []  # to tokenize in Python: (text, label), or (text, label, mark) if marked
    if runs is None or max(map(len, datas)) > CHUNK_BYTES:  # tokenized in Python
        short = [runs is not None and len(data) <= CHUNK_BYTES for data in datas]
        if marks is None:
            others = [(decode(d), c) for d, c, s in zip(datas, labels, short) if not s]
        else:
            others = [
                (decode(d), c) if m < 0 else (decode(d), c, m)
                for d, c, m, s in zip(datas, labels, marks, short) if not s
            ]  # fmt: skip
            marks = list(compress(marks, short))
        datas, labels = list(compress(datas, short)), list(compress(labels, short))
    ascii_ = list(map(bytes.isascii, datas))
    fast = list(compress(datas, ascii_))
    if fast:
        mine = None if marks is None else list(compress(marks, ascii_))
        others.extend(runs.gather(fast, list(compress(labels, ascii_)), mine))
    if len(fast) < len(datas):
        wide = list(map(not_, ascii_))
        texts = JoinedTexts.read(list(compress(datas, wide)), encoding, decode)
        mine = None if marks is None else list(compress(marks, wide))
        others.extend(runs.gather(texts, list(compress(labels, wide)), mine))
    _tokenized(others, tokenize, docs, tokens, None if runs is None else runs.sampled_bags)
    return class_count, docs, tokens, None, runs


def _tokenized(documents, tokenize, docs, tokens, bags: list | None = None) -> None:
    """Add ``(text, label)`` pairs, tokenized, to the Counters ``docs`` and ``tokens``
    (by class); a text may still be ASCII bytes (any ASCII-compatible encoding, which
    a splitter needs, decodes them as ASCII does). An item ``(text, label, mark)`` (a
    marked document) also adds ``(mark, Counter of its tokens)`` to ``bags``. A class
    whose Counters are the shared empty one (:class:`_NoCounts`) is given two of its
    own first."""
    for text, c, *mark in documents:
        tokens_of = tokenize(text if isinstance(text, str) else text.decode("ascii"))
        if tokens[c] is _NO_COUNTS:
            tokens[c], docs[c] = Counter(), Counter()
        tokens[c].update(tokens_of)
        docs[c].update(set(tokens_of))
        if mark and bags is not None:
            bags.append((mark[0], Counter(tokens_of)))


def settle(part, tokenize) -> None:
    """Count what the run tally of a :func:`tally_paths` result still gathers (see
    :meth:`nbclass.text.runs.RunTally.gather`); what it gives back is tokenized into the
    part's Counters. Call before :func:`pack`."""
    if len(part) > 6 and part[6] is not None:
        runs = part[6]
        _tokenized(runs.flush(), tokenize, part[1], part[2], runs.sampled_bags)


def tally_part(
    paths, labels, n_classes: int, tokenizer: TokenizerSettings, start: int, ledger: bool = False,
    policy: ReadPolicy = DEFAULT_POLICY,
):  # fmt: skip
    """A worker's unit of work: ``(start, end, packed tally)`` of ``paths`` (corpus[start:end]).

    The tally is :func:`pack`-ed, so that sending it back and adding it are cheap.
    """
    tokenize = make_tokenizer(tokenizer)
    splitter = None if ledger else ascii_splitter(tokenizer, policy.encoding)
    part = tally_paths(paths, labels, n_classes, tokenize, ledger, policy, splitter=splitter)
    settle(part, tokenize)
    return start, start + len(paths), pack(part)


def combine(*parts: tuple) -> tuple:
    """The sum of tallies ``(classes, packed)`` (class names, and a :func:`pack`-ed tally
    over them), in the same form: the merge step of a reduction on a Dask cluster.

    Classes are matched by name: when every part has the same classes, in the same
    order, the sum keeps them; otherwise it has the sorted union. Words are matched by
    name too; the sum's words are sorted, and its cells are grouped by class as
    :func:`pack` makes them, one per (word, class) pair, with the counts added. Ledger
    entries are concatenated (their class indices renumbered), sampled words of hashed
    columns merged, read logs merged. Counts are integers, so any grouping of the parts
    gives the same sum.

    >>> a = ("ab", pack(tally([["x", "y"], ["y"]], [0, 1], 2)))
    >>> b = ("b", pack(tally([["y", "z", "z"]], [0], 1)))
    >>> classes, packed = combine(a, b)
    >>> classes, packed[0], packed[1].split("\\x00"), packed[2].tolist()
    (('a', 'b'), [1, 2], ['x', 'y', 'z'], [2, 2])
    >>> packed[3].tolist(), packed[4].tolist(), packed[5].tolist()
    ([0, 1, 1, 2], [1, 1, 2, 1], [1, 1, 2, 2])
    """
    import numpy as np

    named = [tuple(names) for names, _ in parts]
    if all(names == named[0] for names in named):
        classes = named[0]
    else:
        classes = tuple(sorted(set().union(*named)))
    at_class = {name: c for c, name in enumerate(classes)}
    word_lists = [packed[1].split("\x00") if packed[1] else [] for _, packed in parts]
    words = sorted(set().union(*word_lists))
    index = dict(zip(words, range(len(words))))
    C, V = len(classes), max(1, len(words))
    class_count = [0] * C
    keys, doc_counts, token_counts = [], [], []
    entries = seen = None
    log = ReadLog()
    for names, (_, packed), listed in zip(named, parts, word_lists):
        columns = np.array([at_class[name] for name in names], dtype=np.int64)
        for c, n in zip(columns.tolist(), packed[0]):
            class_count[c] += int(n)
        at = np.fromiter(map(index.__getitem__, listed), dtype=np.int64, count=len(listed))
        column = np.repeat(columns, np.asarray(packed[2], dtype=np.int64))
        keys.append(column * V + at[np.asarray(packed[3], dtype=np.int64)])
        doc_counts.append(np.asarray(packed[4], dtype=np.int64))
        token_counts.append(np.asarray(packed[5], dtype=np.int64))
        rest = (*packed[6:9], None, None, None)[:3]  # entries, seen, log (if any)
        if rest[0] is not None:
            mapped = columns.tolist()
            entries = entries if entries is not None else []
            entries.extend((key, mapped[c], bag) for key, c, bag in rest[0])
        if rest[1]:
            from ..text.hashing import add_representative

            seen = seen if seen is not None else {}
            for column_name, sample in rest[1].items():
                for key, word in sample:
                    add_representative(seen, column_name, key, word)
        log.add(rest[2])
    key = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    order = np.argsort(key, kind="stable")
    key = key[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else key
    sums = []
    for values in (doc_counts, token_counts):
        values = np.concatenate(values)[order] if key.size else key
        sums.append(np.add.reduceat(values, first) if key.size else values)
    unique = key[first]
    lengths = np.bincount(unique // V, minlength=C).astype(np.int64)
    packed = (
        class_count, "\x00".join(words), *map(narrow, (lengths, unique % V, *sums)),
        entries, seen, log,
    )  # fmt: skip
    return classes, packed
