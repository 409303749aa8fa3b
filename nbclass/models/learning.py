"""A model is a sum of counts: update it, merge models, unlearn documents, sync a folder.

Naive Bayes counts are additive (:func:`nbclass.counting.counts.merge`,
:func:`~nbclass.counting.counts.subtract`),
so every operation here gives, bit for bit, the model a fresh fit of the resulting set of
documents would give:

- :func:`update`: add documents to a model (new words and classes welcome);
- :func:`combine`: sum models fitted on different shards;
- :func:`unlearn`: subtract documents learned by mistake;
- :func:`sync`: make a model with a ledger equal to a folder as it is now.

With a ledger (:mod:`nbclass.counting.ledger`) the operations work on documents and the counts are
recomputed as the ledger's sum; without one they work on the counts directly, and a
document the model never learned is caught only when a count would become impossible.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..counting.counts import (
    CountAccumulator,
    Counts,
    SampleRows,
    count_corpus,
    merge,
    subtract,
)
from ..counting.ledger import DIGEST_SIZE, EntryBook, Ledger, canonical, match, unify
from ..counting.sketch import Keeper, bottom, bounds, onto, per_class_for, union, without
from ..counting.tally import digest, tally, tally_ledger
from ..errors import CorpusError, NbclassError, NbclassWarning, UsageError
from ..reading.corpus import Corpus, decode, iter_documents, list_corpus, readable
from ..reading.policy import DEFAULT_POLICY, ReadLog, ReadPolicy, read_document
from ..text.hashing import keyed, merge_representatives, words_of
from ..text.tokenizer import (
    CHOICE_NGRAM_DOC_LIMIT,
    CHOICE_NGRAM_RANGE,
    DEFAULT_NGRAM_RANGE,
    DEFAULT_TOKEN_PATTERN,
    TokenizerSettings,
    load_stop_words,
    make_tokenizer,
)
from ..text.vectorizer import TextCounter, sorted_entries
from . import exitcodes
from .estimators import AUTO, DEFAULTS, EstimatorSettings, as_options, overridden, resolve
from .model import Model, VocabularyFilter, check_usable, with_sample

BATCH_SIZE = 1000


@dataclass
class Documents:
    """Labelled documents to learn or unlearn, counted once.

    Attributes
    ----------
    counts : Counts
        Their counts (classes: only those they hold).
    ledger : Ledger or None
        Their ledger entries over ``counts``' classes and vocabulary, if asked for.
    seen : dict or None
        With feature hashing, the words sampled per column (:mod:`nbclass.text.hashing`).
    sample : Ledger or None
        Their sample for choosing the model (:mod:`nbclass.counting.sketch`), as ledger rows
        over ``counts``' classes and vocabulary, when asked for.
    keys : list of (digest, class name), or None
        Every document's SHA-256 and class, when asked for (unlearn takes them out of a
        model's sample).
    """

    counts: Counts
    ledger: Ledger | None
    seen: dict | None = None
    sample: Ledger | None = None
    keys: list[tuple[bytes, str]] | None = None

    @property
    def column_words(self) -> dict | None:
        return None if self.seen is None else words_of(self.seen)


Keys = list  # [(SHA-256 digest, class name)] per document, and a parallel list of sources


def tokenizer_difference(a: TokenizerSettings, b: TokenizerSettings) -> str | None:
    """The first tokenizer setting in which ``a`` and ``b`` differ, said for a user.

    ``unspaced`` comes last: a model fitted at the defaults counts new documents with
    ``unspaced="all"`` (:func:`counting_tokenizer`), so it differs whenever another setting
    does, and the setting the user chose is the one to name."""
    left, right = a.to_dict(), b.to_dict()
    keys = (
        "lowercase", "token_pattern", "ngram_range", "ngram_doc_limit", "stop_words",
        "hash_features", "symbols", "unspaced",
    )  # fmt: skip
    for key in keys:
        if left.get(key) != right.get(key):
            shown = {
                "stop_words": lambda d: f"{len(d['stop_words'])} stop words "
                f"({d['stop_words_source']})",
                "ngram_range": lambda d: "{},{}".format(*d["ngram_range"]),
                "ngram_doc_limit": lambda d: str(d.get("ngram_doc_limit") or "none"),
                "hash_features": lambda d: str(d.get("hash_features") or "off"),
                "unspaced": lambda d: str(d.get("unspaced") or "none"),
                "symbols": lambda d: "on" if d.get("symbols") else "off",
            }.get(key, lambda d, key=key: repr(d[key]))
            return f"{key.replace('_', ' ')}: {shown(left)} vs {shown(right)}"
    return None


def check_same_tokenizer(model: Model, tokenizer: TokenizerSettings, what: str) -> None:
    difference = tokenizer_difference(model.tokenizer, tokenizer)
    if difference:
        raise UsageError(
            f"{what} has different tokenizer settings ({difference}): counts made with "
            "different tokenizers cannot be added; use the same settings"
        )


def _refuse_selected(model: Model, name: str) -> None:
    if model.selection is not None:
        raise UsageError(
            f"{name} was pruned by select-features, so its counts are no longer those of its "
            "documents; update or merge the full models, then select features again"
        )


def count_documents(
    corpus: Corpus, tokenizer: TokenizerSettings, ledger: bool, jobs: int = 1,
    on_progress: Callable[[int, int], None] | None = None,
    cluster: Callable[..., tuple] | None = None, policy: ReadPolicy = DEFAULT_POLICY,
    log: ReadLog | None = None, sample: bool = False, keys: bool = False,
) -> Documents:  # fmt: skip
    """Count the documents of ``corpus`` (with their ledger entries if ``ledger``), locally
    or by the counting function ``cluster`` (of a Dask cluster:
    :func:`nbclass.cluster.remote.counter`), read under ``policy`` (skips go to ``log``).

    With ``sample``, the documents' sample for choosing the model (:mod:`nbclass.counting.sketch`)
    is made too, and with ``keys`` every document's ``(digest, class)``: from the ledger
    when there is one, else by reading every document again (each is hashed), while the
    workers count, by a thread of this process that first imports what the choice needs
    (:func:`nbclass.counting.counts.count_corpus`'s ``meanwhile``), or after the count.
    A folder's documents are hashed by the counting processes instead, as they read
    them, which keep the rows of those that may be in the sample as they count them
    (:class:`nbclass.counting.counts.SampleRows`, :func:`nbclass.counting.sketch.bounds`);
    the sample is chosen here from the digests, and only its documents whose rows were
    not kept (tokenized without runs, or past the bound) are read and counted again."""
    entries = EntryBook() if ledger else None
    seen = {} if tokenizer.hash_features else None
    ahead: list = []
    reread = (sample or keys) and not ledger
    marked = None
    if reread and sample and cluster is None and corpus.texts is None:
        ahead.append(Keeper(keys))
        offered: list[int] = []  # with keys, the index of each document offered, in turn
        items: list = []  # the sample's, once chosen
        marked = SampleRows(bounds(corpus.labels, len(corpus.classes)),
                            _offered(ahead[0], corpus, offered if keys else None),
                            _chosen(ahead[0], len(corpus.classes), items))  # fmt: skip

    def meanwhile() -> None:
        _import_for_choosing()
        if ahead:
            return
        try:
            ahead.append(read_sketch(corpus, policy, keys))
        except Exception:  # noqa: S110 - read again after the count, which reports it
            pass

    counts = count_corpus(
        corpus.paths, corpus.labels, corpus.classes, tokenizer, jobs, on_progress, entries, seen,
        cluster=cluster, policy=policy, log=log,
        meanwhile=meanwhile if reread and cluster is None else None, sample=marked,
    )
    if entries is None:
        documents = Documents(counts, None, seen)
        if marked is not None:
            keeper = ahead[0]
            documents.sample = marked_sample(items or keeper.items(len(corpus.classes)), marked,
                                             counts, tokenizer, corpus, policy, jobs)  # fmt: skip
            if keys:  # in the order of the paths, as a reading of them gives them
                order = np.argsort(np.asarray(offered, dtype=np.int64), kind="stable")
                documents.keys = [keeper.keys[k] for k in order.tolist()]
        elif reread:
            keeper = ahead[0] if ahead else read_sketch(corpus, policy, keys)
            documents = sketched(documents, keeper, tokenizer, sample, jobs)
        return documents
    book, counts = canonical(
        entries.ledger(counts.vocabulary), counts.classes, counts.vocabulary
    )
    return from_ledger(Documents(counts, book, seen), sample, keys)


def from_ledger(documents: Documents, sample: bool, keys: bool) -> Documents:
    """``documents`` (with a ledger) with their sample and keys taken from the ledger."""
    book, counts = documents.ledger, documents.counts
    if sample:
        documents.sample = bottom(book, n_classes=len(counts.classes))
    if keys:
        documents.keys = book.keys(counts.classes)
    return documents


def read_sketch(
    corpus: Corpus, policy: ReadPolicy = DEFAULT_POLICY, keys: bool = False
) -> Keeper:
    """Every document of ``corpus`` hashed, and the sample's kept with their texts
    (:class:`nbclass.counting.sketch.Keeper`; ``keys``: every document's key too).

    Documents ``policy`` skips are left out without a word: the count skipped them too,
    and said so. A corpus held in memory (labelled lines) is named by the UTF-8 bytes of
    each text, as a line is (:func:`labelled_lines`).
    """
    keeper = Keeper(keys)
    if corpus.texts is not None:
        for text, label in zip(corpus.texts, corpus.labels):
            keeper.offer(digest(text.encode("utf-8")), corpus.classes[label], text)
        return keeper
    log, quiet = ReadLog(), replace(policy, on_error="skip")
    for path, label in zip(corpus.paths, corpus.labels):
        data = read_document(path, quiet, log)
        if data is not None:
            keeper.offer(digest(data), corpus.classes[label], data)
    keeper.decode = lambda data: log.decode(data, policy.encoding)
    return keeper


def _offered(keeper: Keeper, corpus: Corpus,
             offered: list[int] | None) -> Callable[[list, bytes], None]:  # fmt: skip
    """The ``offer`` of :class:`SampleRows`: each window's documents (indices among the
    paths of ``corpus``, digests joined) offered to ``keeper`` with their class names,
    their indices as payloads, and the indices added to ``offered`` (when a list)."""
    names, labels = corpus.classes, corpus.labels

    def offer(indices: list, digests: bytes) -> None:
        keeper.offer_many(digests, [names[labels[i]] for i in indices], indices)
        if offered is not None:
            offered.extend(indices)

    return offer


def _chosen(keeper: Keeper, n_classes: int, items: list) -> Callable[[], list[int]]:
    """The ``chosen`` of :class:`SampleRows`: the sample of the documents offered to
    ``keeper`` (a set of ``n_classes`` classes) put in ``items``, and their indices among
    the paths, in its order."""

    def chosen() -> list[int]:
        items[:] = keeper.items(n_classes)
        return [i for _, _, i in items]

    return chosen


def marked_sample(
    items: Sequence[tuple[bytes, str, int]], marked: SampleRows, counts: Counts,
    tokenizer: TokenizerSettings, corpus: Corpus, policy: ReadPolicy = DEFAULT_POLICY,
    threads: int = 1,
) -> Ledger:  # fmt: skip
    """The ledger rows of the sampled documents ``items`` (``(digest, class name, index
    among the paths of corpus)``, in their order) over the classes and vocabulary of
    ``counts``: the rows the count kept of them (:class:`SampleRows`, already in
    (place, column) order), and those of the sampled documents it did not keep read
    again and counted here (:func:`sample_rows`), the same rows."""
    n = len(items)
    empty = np.zeros(0, dtype=np.int64)
    counted = empty if marked.counted is None else marked.counted
    places, columns, values = marked.rows if marked.rows is not None else (empty,) * 3
    # (not np.setdiff1d: its np.unique imports numpy.ma, 20 ms, which a fit never needs)
    kept = np.zeros(n, dtype=bool)
    kept[counted] = True
    left = np.flatnonzero(~kept)
    if left.size:
        texts = [_read_again(items[p], corpus, policy) for p in left.tolist()]
        again = sample_rows(texts, counts, tokenizer, threads)
        places = np.concatenate((places, np.repeat(left, np.diff(again.ptr))))
        columns = np.concatenate((columns, again.words))
        values = np.concatenate((values, again.counts))
        order = np.lexsort((columns, places))
        places, columns, values = places[order], columns[order], values[order]
    at = {name: c for c, name in enumerate(counts.classes)}
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(places, minlength=n), out=ptr[1:])
    return Ledger(
        digests=np.frombuffer(b"".join(d for d, _, _ in items), dtype=np.uint8).reshape(
            -1, DIGEST_SIZE
        ),
        labels=np.array([at[name] for _, name, _ in items], dtype=np.int64),
        ptr=ptr, words=columns.astype(np.int64), counts=values.astype(np.int64),
    )


def _read_again(item: tuple[bytes, str, int], corpus: Corpus,
                policy: ReadPolicy) -> tuple[bytes, str, str]:  # fmt: skip
    """``(digest, class name, text)`` of a sampled document ``item`` (its index among the
    paths of ``corpus``) read again; refused if it changed since it was counted."""
    found, name, i = item
    log = ReadLog()
    data = read_document(corpus.paths[i], replace(policy, on_error="skip"), log)
    if data is None or digest(data) != found:
        raise CorpusError(
            f"{corpus.paths[i]!r} changed while fit read it: fit again once the corpus is "
            "left as it is"
        )
    return found, name, log.decode(data, policy.encoding)


def sample_rows(
    items: Sequence[tuple[bytes, str, str]], counts: Counts, tokenizer: TokenizerSettings,
    threads: int = 1, met_only: bool | None = None,
) -> Ledger:  # fmt: skip
    """The ledger rows of sampled documents ``(digest, class name, text)`` (in their
    order) over the classes and vocabulary of ``counts``, which counted them.

    ``met_only``: count them over the words their tokens meet alone (:func:`words_met`),
    not the whole vocabulary: the same rows, without making a counter of every word (0.6 s
    at 2,000,000 words, for the few dozen documents the count did not keep). ``None``:
    when their text is shorter than the vocabulary has words."""
    at = {name: c for c, name in enumerate(counts.classes)}
    texts = [t for _, _, t in items]
    if met_only is None:
        met_only = sum(map(len, texts)) < len(counts.vocabulary)
    words, columns = counts.vocabulary, None
    if met_only:
        words, columns = words_met(texts, counts.vocabulary, tokenizer)
    # The nonzero counts in (document, column) order, each position once: the arrays of
    # their canonical CSR matrix, made without one (no scipy).
    rows, found, values, _ = TextCounter(tokenizer, words).counted_entries(texts, threads)
    rows, found, values = sorted_entries(rows, found, values, len(words))
    nonzero = values != 0
    if not nonzero.all():
        rows, found, values = rows[nonzero], found[nonzero], values[nonzero]
    ptr = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=len(texts)), out=ptr[1:])
    # (columns increase: each row stays in column order)
    words = found if columns is None else columns[found]
    return Ledger(
        digests=np.frombuffer(b"".join(d for d, _, _ in items), dtype=np.uint8).reshape(
            -1, DIGEST_SIZE
        ),
        labels=np.array([at[name] for _, name, _ in items], dtype=np.int64),
        ptr=ptr,
        words=words.astype(np.int64),
        counts=values.astype(np.int64),
    )


def words_met(
    texts: Sequence[str], vocabulary: Sequence[str], tokenizer: TokenizerSettings
) -> tuple[tuple[str, ...], np.ndarray]:
    """``(words, columns)``: the words of the sorted ``vocabulary`` that the tokens of
    ``texts`` under ``tokenizer`` meet, and their columns, in column order (increasing).
    A counter of these words alone counts ``texts`` as a counter of the whole vocabulary
    does, column for column: it counts the tokenizer's tokens, and no other word can be
    one of them."""
    from bisect import bisect_left

    tokenize = make_tokenizer(tokenizer)
    met: set[str] = set()
    for text in texts:
        met.update(tokenize(text))
    V = len(vocabulary)
    found = []
    for token in met:
        j = bisect_left(vocabulary, token)
        if j < V and vocabulary[j] == token:
            found.append(j)
    columns = np.array(sorted(found), dtype=np.int64)
    return tuple(vocabulary[j] for j in columns.tolist()), columns


def sketched(
    documents: Documents, keeper: Keeper, tokenizer: TokenizerSettings, sample: bool,
    threads: int = 1,
) -> Documents:  # fmt: skip
    """``documents`` with the sample (if ``sample``) and keys that ``keeper`` kept."""
    if sample:
        items = keeper.items(len(documents.counts.classes))
        if keeper.decode is not None:
            items = [(d, name, keeper.decode(data)) for d, name, data in items]
        documents.sample = sample_rows(items, documents.counts, tokenizer, threads)
    documents.keys = keeper.keys
    return documents


def _import_for_choosing() -> None:
    """Import what choosing the model needs while workers count: the choice comes after
    the count, and this process mostly waits on the workers. The choice imports neither
    ``scipy.sparse`` nor ``scipy.special`` (0.1 s or more): its matrices are
    :mod:`nbclass.counting.csr`'s, and scipy's compiled kernels and special functions
    are loaded from their files (:mod:`nbclass.compiled`)."""
    try:
        from .. import compiled
        from . import choosing  # noqa: F401

        compiled.load()
    except Exception:  # noqa: S110 - the choice imports them again and reports
        pass


def corpus_sample(
    corpus: Corpus, counts: Counts, tokenizer: TokenizerSettings,
    policy: ReadPolicy = DEFAULT_POLICY, threads: int = 1,
) -> Ledger:  # fmt: skip
    """The sample of ``corpus`` (:mod:`nbclass.counting.sketch`) as ledger rows over the
    classes and vocabulary of ``counts``, which counted it (read again here)."""
    documents = sketched(Documents(counts, None), read_sketch(corpus, policy), tokenizer, True,
                         threads)  # fmt: skip
    return documents.sample


def documents_of(
    classes: Sequence[str], packed: tuple, ledger: bool, log: ReadLog | None = None,
    lines: bool = False,
) -> Documents:  # fmt: skip
    """The :class:`Documents` of one packed tally over ``classes`` (the sum that a Dask
    cluster sends back, :mod:`nbclass.cluster.remote`), as :func:`count_documents` makes them
    of a corpus folder, or :func:`count_lines` of labelled lines if ``lines``; the read
    log of the tally is merged into ``log``."""
    entries = EntryBook() if ledger else None
    seen = {} if len(packed) > 7 and packed[7] is not None else None
    accumulator = CountAccumulator(classes)
    accumulator.add_packed(packed, entries, seen)
    if log is not None and len(packed) > 8:
        log.add(packed[8])
    counts = accumulator.result()
    if lines:
        counts = merge(counts).pruned()  # classes sorted, as count_lines gives them
    if entries is None:
        return Documents(counts, None, seen)
    book = entries.ledger(counts.vocabulary)
    if lines:
        book, classes, vocabulary = unify([(book, list(classes), counts.vocabulary)])
    else:
        classes, vocabulary = counts.classes, counts.vocabulary
    book, counts = canonical(book, classes, vocabulary)
    return Documents(counts, book, seen)


def corpus_keys(
    corpus: Corpus, policy: ReadPolicy = DEFAULT_POLICY, log: ReadLog | None = None
) -> tuple[Keys, list[str]]:
    """``(digest, class)`` of every document of ``corpus`` that ``policy`` reads, and its
    path (skipped documents are recorded in ``log``)."""
    keys, kept = _keyed(corpus, policy, ReadLog() if log is None else log)
    return keys, kept.paths


def _keyed(corpus: Corpus, policy: ReadPolicy, log: ReadLog) -> tuple[Keys, Corpus]:
    keys, paths, labels = [], [], []
    for path, label in zip(corpus.paths, corpus.labels):
        data = read_document(path, policy, log)
        if data is not None:
            keys.append((digest(data), corpus.classes[label]))
            paths.append(path)
            labels.append(label)
    return keys, Corpus(classes=list(corpus.classes), paths=paths, labels=labels)


def parse_labelled_line(line: str, where: str) -> tuple[str, str]:
    """``(label, text)`` of a training line: ``LABEL<TAB>TEXT`` or ``__label__LABEL TEXT``.

    Raises
    ------
    NbclassError
        Naming ``where`` when the line has no label, or several fastText labels.
    """
    if line.startswith("__label__"):
        label, _, text = line[len("__label__") :].partition(" ")
        if text.startswith("__label__"):
            raise NbclassError(
                f"{where} has more than one __label__: a single-label model gives each "
                "document one class; keep one label per line, or fit --multi-label"
            )
    else:
        label, tab, text = line.partition("\t")
        if not tab:
            raise NbclassError(
                f"{where} has no label: write LABEL<TAB>TEXT or __label__LABEL TEXT"
            )
    label = label.strip()
    if not label:
        raise NbclassError(f"{where} has an empty label")
    return label, text


# The column names a table's header row gives its label and its text (lower case): a first
# line made of one of each is a header, not a document (:func:`is_header`).
HEADER_NAMES = frozenset({
    "label", "labels", "class", "classes", "category", "categories", "target", "y", "tag",
    "tags", "intent", "topic", "sentiment", "text", "texts", "document", "doc", "sentence",
    "message", "content", "body", "review", "comment", "x", "question", "tweet", "email",
})  # fmt: skip


def is_header(line: str) -> bool:
    """Whether ``line`` is a header row: two different column names of :data:`HEADER_NAMES`
    separated by a tab, a comma, a semicolon or spaces, each perhaps in double quotes.

    >>> [is_header(x) for x in ("label\ttext", '"class","text"', "text label", "billing\ttext")]
    [True, True, True, False]
    """
    import re

    fields = [f.strip().strip('"').lower() for f in re.split(r"[\t,;]| +", line.strip())]
    return len(fields) == 2 and fields[0] != fields[1] and set(fields) <= HEADER_NAMES


def without_header(
    lines: Iterable[tuple[str, str]], headers: bool = True
) -> Iterator[tuple[str, str]]:
    """``lines`` ``(source, text)`` without the first line of a file (source ``FILE:1``)
    when it is a header row (:func:`is_header`), skipped with a warning: a table exported
    with its column names would otherwise give a class named after its label column."""
    for source, line in lines:
        if headers and source.endswith(":1") and is_header(line):
            _warn_header(source, line)
            continue
        yield source, line


def _warn_header(source: str, line: str) -> None:
    warnings.warn(
        f"line {source} is a header row ({line.strip()!r}), not a labelled document: skipped",
        NbclassWarning,
        stacklevel=3,
    )


def labelled_lines(
    lines: Iterable[tuple[str, str]], headers: bool = True
) -> Iterator[tuple[str, str, bytes]]:
    """``(source, label, text bytes)`` of each non-blank labelled line ``(source, text)``,
    a header row first skipped (:func:`without_header`, when ``headers``).

    A document is named by the UTF-8 bytes of its text without the label, so the same
    text learned from a file or from a line is the same document in a ledger.
    """
    for source, line in without_header(lines, headers):
        if line.strip():
            label, text = parse_labelled_line(line, f"line {source}")
            yield source, label, text.encode("utf-8")


LABELLED = ("auto", "yes", "no")  # predict --lines --labelled


def _looks_labelled(line: str, classes: Collection[str]) -> bool:
    """Whether ``line`` is a labelled line as fit reads it, with a label among
    ``classes`` (or fastText's ``__label__``, which no text to classify starts with)."""
    if line.startswith("__label__"):
        return True
    label, tab, _ = line.partition("\t")
    return bool(tab) and label.strip() in classes


def texts_of_lines(
    lines: Iterable[tuple[str, str]], classes: Callable[[], Collection[str]], labelled: str
) -> Iterator[tuple[str, str]]:
    """``(source, text)`` of the lines ``(source, line)`` to classify: labelled lines (a
    file of the form fit reads) without their labels, so that a label is never read as
    text.

    ``labelled`` is ``"no"`` (every line is a text, as it is), ``"yes"`` (every line is
    labelled: a line without a label is an error, a header row is skipped, blank lines
    too, as fit does) or ``"auto"``: a file whose first line (after blank ones and a header
    row) is ``LABEL<TAB>TEXT`` with a label among ``classes()`` (the model's, asked for
    when the first line comes), or ``__label__LABEL TEXT``, is read as ``"yes"`` with a
    warning that says so; any other file as ``"no"``.
    """
    if labelled == "no":
        yield from lines
        return
    current, mode, waiting = None, labelled, []
    for source, line in lines:
        name = source.rpartition(":")[0]
        if name != current:  # a new file decides anew
            if mode == "auto":
                yield from waiting  # the blank lines of a file without any other
            current, mode, waiting = name, labelled, []
            if source.endswith(":1") and is_header(line):
                _warn_header(source, line)
                mode = "yes"  # a label column's header: the file is labelled
                continue
        if mode == "auto":
            if not line.strip():
                waiting.append((source, line))
                continue
            mode = "yes" if _looks_labelled(line, classes()) else "no"
            if mode == "yes":
                warnings.warn(
                    f"{name} holds labelled lines (LABEL<TAB>TEXT or __label__LABEL TEXT): "
                    "their labels are not read as text (--labelled no reads every line "
                    "whole)",
                    NbclassWarning,
                    stacklevel=2,
                )
            else:
                yield from waiting
            waiting = []
        if mode == "no":
            yield source, line
        elif line.strip():
            yield source, parse_labelled_line(line, f"line {source}")[1]
    if mode == "auto":
        yield from waiting


def labelled_corpus(lines: Iterable[tuple[str, str]], min_classes: int = 1) -> Corpus:
    """The labelled lines ``(source, text)`` as a :class:`Corpus` held in memory.

    Each non-blank line is one document (``LABEL<TAB>TEXT`` or ``__label__LABEL TEXT``);
    its source ``FILE:LINE`` stands for its path, its text is kept in ``texts``. Classes
    are sorted, as a folder corpus's are. A header row is skipped (:func:`without_header`).

    Raises
    ------
    NbclassError
        When a line has no label, or there is no labelled line; a :class:`CorpusError`
        when there are fewer than ``min_classes`` classes.
    """
    sources, names, texts = [], [], []
    for source, line in without_header(lines):
        if line.strip():
            label, text = parse_labelled_line(line, f"line {source}")
            sources.append(source)
            names.append(label)
            texts.append(text)
    if not sources:
        raise NbclassError(
            "no labelled lines in the input: write LABEL<TAB>TEXT or __label__LABEL TEXT per line"
        )
    classes = sorted(set(names))
    if len(classes) < min_classes:
        raise CorpusError(
            f"the lines have only one class ({classes[0]!r}): a classifier needs at least "
            "two classes"
        )
    at = {name: c for c, name in enumerate(classes)}
    return Corpus(classes, sources, [at[name] for name in names], texts)


def labelled_documents(
    folder: str | None,
    lines_path: str | None,
    policy: ReadPolicy,
    log: ReadLog,
    min_classes: int = 1,
) -> Corpus:
    """The labelled documents of a corpus ``folder`` or, when it is None, of the labelled
    lines of ``lines_path`` (``-``: standard input), without those ``policy`` skips
    (recorded in ``log``). Lines are held in memory: evaluate, cv and check read the
    documents more than once.
    """
    if lines_path is not None:
        lines = iter_documents([lines_path], True, policy, log)
        return labelled_corpus(lines, min_classes)
    return readable(list_corpus(folder, min_classes=min_classes), policy, log)


def line_keys(lines: Iterable[tuple[str, str]]) -> tuple[Keys, list[str]]:
    """``(digest, class)`` of every labelled line, and its source."""
    keys, sources = [], []
    for source, label, data in labelled_lines(lines):
        keys.append((digest(data), label))
        sources.append(source)
    return keys, sources


def lines_sketch(
    lines: Iterable[tuple[str, str]], keys: bool = False, multi_label: bool = False
) -> Keeper:  # fmt: skip
    """The sample of labelled lines (:class:`nbclass.counting.sketch.Keeper`), read alone
    (when the lines were counted elsewhere, on a cluster); ``multi_label``: multi-label
    lines, each under its label set (:func:`document_lines`)."""
    keeper = Keeper(keys)
    for _source, label, data in document_lines(lines, multi_label):
        keeper.offer(digest(data), label, data)
    keeper.decode = decode
    return keeper


def count_lines(
    lines: Iterable[tuple[str, str]], tokenizer: TokenizerSettings, ledger: bool,
    sample: bool = False, keys: bool = False,
) -> Documents:  # fmt: skip
    """Count labelled lines ``(source, text)``, one document per non-blank line
    (:func:`count_labelled` of their labels and texts).

    The input is read once, in batches, so it may be a stream of any length. With
    ``sample``, the sample of the lines (:mod:`nbclass.counting.sketch`: every line is
    hashed, at most about twice the sample held) is kept for choosing the model; with
    ``keys``, every line's ``(digest, class)``.
    """
    documents = ((label, data) for _source, label, data in labelled_lines(lines))
    return count_labelled(documents, tokenizer, ledger, sample, keys)


def multi_label_documents(lines: Iterable[tuple[str, str]]) -> list[tuple[str, tuple, str]]:
    """``(source, labels, text)`` of each non-blank multi-label line ``(source, line)``
    (:func:`nbclass.models.labelsets.parse_line`), a header row skipped; held in memory
    (evaluate and cv read them more than once)."""
    from .labelsets import parse_line

    documents = []
    for source, line in without_header(lines):
        if line.strip():
            labels, text = parse_line(line, f"line {source}")
            documents.append((source, labels, text))
    if not documents:
        raise NbclassError(
            'no labelled lines in the input: write A,B<TAB>TEXT, __label__A __label__B TEXT '
            'or {"labels": [...], "text": ...} per line'
        )
    return documents


def document_lines(
    lines: Iterable[tuple[str, str]], multi_label: bool = False, headers: bool = True
) -> Iterator[tuple[str, str, bytes]]:
    """``(source, class, text bytes)`` of each non-blank line: a labelled line and its
    label (:func:`labelled_lines`), or with ``multi_label`` a multi-label line and its
    label set (:func:`_label_set_lines`); a header row first skipped when ``headers``."""
    if multi_label:
        return _label_set_lines(lines, headers)
    return labelled_lines(lines, headers)


def _label_set_lines(
    lines: Iterable[tuple[str, str]], headers: bool = True
) -> Iterator[tuple[str, str, bytes]]:  # fmt: skip
    """``(source, label set, text bytes)`` of each non-blank multi-label line."""
    from .labelsets import label_set, parse_line

    for source, line in without_header(lines, headers):
        if line.strip():
            labels, text = parse_line(line, f"line {source}")
            yield source, label_set(labels), text.encode("utf-8", "surrogatepass")


def count_multi_label_lines(
    lines: Iterable[tuple[str, str]], tokenizer: TokenizerSettings, ledger: bool,
    keys: bool = False,
) -> Documents:  # fmt: skip
    """Count multi-label lines ``(source, line)``
    (:func:`nbclass.models.labelsets.parse_line`), each document under its label set, with
    the sample a multi-label model chooses from (:func:`count_labelled`; with ``keys``,
    every line's ``(digest, label set)``); a header row is skipped."""
    documents = ((name, data) for _, name, data in _label_set_lines(lines))
    return count_labelled(documents, tokenizer, ledger, sample=True, keys=keys)


def multi_label_keys(lines: Iterable[tuple[str, str]]) -> tuple[Keys, list[str]]:
    """``(digest, label set)`` of every multi-label line, and its source."""
    keys, sources = [], []
    for source, name, data in _label_set_lines(lines):
        keys.append((digest(data), name))
        sources.append(source)
    return keys, sources


def count_labelled(
    documents: Iterable[tuple[str, bytes]], tokenizer: TokenizerSettings, ledger: bool,
    sample: bool = False, keys: bool = False,
) -> Documents:  # fmt: skip
    """Count labelled documents ``(class name, UTF-8 bytes of the text)``, as
    :func:`count_lines` counts lines (the Python library's texts and labels are counted
    here, so that they make the model of the same documents given as lines)."""
    keeper = Keeper(keys) if (sample or keys) and not ledger else None
    tokenize = make_tokenizer(tokenizer)
    take_seen = getattr(tokenize, "take_seen", None)
    seen = {} if take_seen else None
    class_at: dict[str, int] = {}
    parts: list[Counts] = []
    entries = EntryBook()
    batch: list[tuple[str, bytes]] = []

    def flush():
        classes = list(class_at)
        labels = [class_at[label] for label, _ in batch]
        texts = [data for _, data in batch]
        if ledger:
            part = tally_ledger(texts, labels, len(classes), tokenize)
        else:
            part = tally((tokenize(decode(t)) for t in texts), labels, len(classes))
        accumulator = CountAccumulator(classes)
        accumulator.add_tally(part, entries if ledger else None)
        if take_seen:
            seen.update(merge_representatives([seen, take_seen()]))
        parts.append(accumulator.result())
        batch.clear()

    for label, data in documents:
        class_at.setdefault(label, len(class_at))
        batch.append((label, data))
        if keeper is not None:
            keeper.offer(digest(data), label, data)
        if len(batch) == BATCH_SIZE:
            flush()
    if batch:
        flush()
    if not class_at:
        raise NbclassError(
            "no labelled lines in the input: write LABEL<TAB>TEXT or __label__LABEL TEXT per line"
        )
    counts = merge(*parts).pruned()
    if not ledger:
        documents = Documents(counts, None, seen)
        if keeper is not None:
            keeper.decode = decode
            documents = sketched(documents, keeper, tokenizer, sample)
        return documents
    book = entries.ledger(counts.vocabulary)
    book, classes, vocabulary = unify([(book, list(class_at), counts.vocabulary)])
    book, counts = canonical(book, classes, vocabulary)
    return from_ledger(Documents(counts, book, seen), sample, keys)


UNLEARNED_ALL = (
    "unlearning these documents would leave the model without a word: they are every "
    "document it learned (or every one that held a word); nothing was changed. To start "
    "again, fit a new model"
)


def _from_ledger(
    model: Model, ledger: Ledger, classes, vocabulary, empty=None
) -> tuple[Model, Ledger | None, int]:  # fmt: skip
    """``model`` with the counts of ``ledger`` (over ``classes`` and ``vocabulary``), and
    the sample to choose its settings again from and its shortfall, for
    :func:`nbclass.models.model.with_sample`: a model that chooses takes its sample from
    the ledger, exactly (None and 0 for one that does not). The choice is left to the
    caller, as :func:`added` leaves it, so that the models read for the change are
    dropped before it (at 20,000 classes × 200,000 words, the old model held through the
    choice of a ledger's update, merge, unlearn or sync cost hundreds of MB). ``empty``:
    what to say when no word is left (:func:`nbclass.models.model.check_usable`)."""
    book, counts = canonical(ledger, classes, vocabulary)
    del ledger
    result = replace(model, counts=counts, ledger=book)
    check_usable(result, empty)
    if not chooses(model):
        return result, None, 0
    return result, bottom(book, n_classes=len(counts.classes)), 0


def counting_tokenizer(model: Model) -> TokenizerSettings:
    """The tokenizer that counts new documents for ``model``: its own, but for a model
    that chooses (:func:`chooses`), counted at the defaults and holding no character of
    the scripts written without spaces, whose tokenizer is the pattern alone only because
    its counts held none (:func:`nbclass.models.model.settled_unspaced`): documents added
    to it are counted as a fresh fit at the defaults counts them, ``unspaced="all"``
    (its counts are the same under either)."""
    tokenizer = model.tokenizer
    if not (at_defaults(tokenizer) and chooses(model) and model.multi_label is None):
        return tokenizer
    from ..text.families import holds_unspaced

    if holds_unspaced(model.counts.vocabulary):
        return tokenizer  # a model whose clauses are words (written before the choice)
    return replace(tokenizer, unspaced="all")


def at_defaults(tokenizer: TokenizerSettings) -> bool:
    """Whether fit at its defaults counts with ``unspaced="all"`` under ``tokenizer``
    (the choice among the tokenizations of the scripts written without spaces): the
    default pattern, no hashing, no ``--unspaced`` given (the symbols on or off), and
    single words or the word pairs a fit that chooses counts by default
    (:func:`counted_to_choose`)."""
    grams = (tuple(tokenizer.ngram_range), tokenizer.ngram_doc_limit)
    return (
        tokenizer.unspaced is None
        and tokenizer.token_pattern == DEFAULT_TOKEN_PATTERN
        and grams in (((1, 1), None), (CHOICE_NGRAM_RANGE, CHOICE_NGRAM_DOC_LIMIT))
        and tokenizer.hash_features is None
    )  # fmt: skip


def symbols_by_default(tokenizer: TokenizerSettings) -> bool:
    """Whether a fit that chooses its settings (``--model auto``) counts the symbols
    (``symbols``) under ``tokenizer`` when ``--symbols`` is not given, for the choice to
    keep them or not: with the default pattern, no ``--unspaced``, no hashing and
    n-grams from single words (where the words are a feature set of their own); off
    wherever ``--symbols`` would be refused or could not be left out."""
    return (
        tokenizer.token_pattern == DEFAULT_TOKEN_PATTERN and tokenizer.unspaced is None
        and tokenizer.hash_features is None and tokenizer.ngram_range[0] == 1
    )  # fmt: skip


def counted_to_choose(
    tokenizer: TokenizerSettings, symbols_given: bool, multi_label: bool = False,
    ngrams_given: bool = False,
) -> TokenizerSettings:  # fmt: skip
    """The tokenizer a fit that chooses its settings counts with, from the one its options
    give: the symbols too (:func:`symbols_by_default`, unless ``--symbols`` or
    ``--no-symbols`` is given or the documents are multi-label, whose choice compares no
    feature sets), the word pairs of short documents (``CHOICE_NGRAM_RANGE`` with
    ``CHOICE_NGRAM_DOC_LIMIT``, unless ``--ngram-range`` or ``--ngram-doc-limit`` is given,
    the documents are multi-label, or the tokens are not the default pattern's words),
    and every tokenization of the scripts written without spaces (:func:`at_defaults`),
    for the choice to keep what the data says."""
    if not symbols_given and not multi_label and symbols_by_default(tokenizer):
        tokenizer = replace(tokenizer, symbols=True)
    if not ngrams_given and not multi_label and at_defaults(tokenizer):
        tokenizer = replace(
            tokenizer, ngram_range=CHOICE_NGRAM_RANGE, ngram_doc_limit=CHOICE_NGRAM_DOC_LIMIT
        )
    if at_defaults(tokenizer):  # runs, characters or pairs: chosen from the data
        tokenizer = replace(tokenizer, unspaced="all")
    return tokenizer


def chooses(model: Model) -> bool:
    """True when ``model``'s settings were chosen from its documents (``--model auto``)
    and can be chosen again after its counts change: it keeps their sample, or a ledger
    to take the sample from."""
    return model.sample is not None or (model.choice is not None and model.ledger is not None)


def _sample_onto(model: Model, counts: Counts) -> tuple[Ledger, int]:
    """``model``'s sample moved onto the classes and vocabulary of ``counts``; rows of a
    class or word ``counts`` lacks (documents that cannot still be there) are dropped,
    and their number returned."""
    sample, old = model.sample, model.counts
    classes, words = set(counts.classes), set(counts.vocabulary)
    at = np.array([old.classes[c] in classes for c in sample.labels.tolist()], dtype=bool)
    present = np.array([w in words for w in old.vocabulary], dtype=bool)
    missing = np.repeat(np.arange(sample.n_documents), np.diff(sample.ptr))[
        ~present[sample.words]
    ]
    at[missing] = False
    rows = np.flatnonzero(at)
    return (
        onto(sample.take(rows), old.classes, old.vocabulary, counts.classes, counts.vocabulary),
        sample.n_documents - rows.size,
    )


def _joined_words(*samples: dict | None) -> dict | None:
    """Words sampled per hashed column of several models or batches, merged."""
    present = [s for s in samples if s is not None]
    if not present:
        return None
    return words_of(merge_representatives(keyed(s) for s in present))


def _coded(before: Model, after: Model) -> Model:
    """``after`` with the exit codes of ``before``, and new ones for the classes it adds
    (:mod:`.exitcodes`: a class's code never changes; a class left with no document
    keeps its code)."""
    return replace(after, exit_codes=exitcodes.extended(before.codes, after.counts.classes))


def update(model: Model, documents: Documents, threads: int = 1) -> Model:
    """``model`` with ``documents`` added: the model of both sets of documents (a new
    class takes the smallest free exit code, :mod:`.exitcodes`).

    A model that chooses its settings (:func:`chooses`) chooses again, from the sample
    of both sets (:func:`nbclass.counting.sketch.union`), which ``documents`` must hold
    when the model has no ledger; ``threads`` score the candidates."""
    return with_sample(*added(model, documents, threads), threads)


def added(
    model: Model, documents: Documents, threads: int = 1
) -> tuple[Model, Ledger | None, int]:  # fmt: skip
    """:func:`update` but for the choice: ``model`` with ``documents`` added, and the
    sample to choose its settings again from and its shortfall (None and 0 when there is
    nothing left to choose: the model is then the update's), for
    :func:`nbclass.models.model.with_sample`.

    Apart so that a caller holding ``model`` only to update it drops it before the
    choice, which then runs beside the new counts alone (at 20,000 classes × 200,000
    words, fit --update peaked 265 MB higher with the old counts held through it)."""
    _refuse_selected(model, "the model")
    model = replace(model, column_words=_joined_words(model.column_words, documents.column_words),
                    tokenizer=counting_tokenizer(model))  # fmt: skip
    counts = model.counts
    if model.ledger is not None:
        if documents.ledger is None:  # pragma: no cover - callers count with a ledger
            raise ValueError("a model with a ledger needs the documents' ledger entries")
        parts = [
            (model.ledger, counts.classes, counts.vocabulary),
            (documents.ledger, documents.counts.classes, documents.counts.vocabulary),
        ]
        result, sample, short = _from_ledger(model, *unify(parts))
        return _coded(model, result), sample, short
    result = _coded(model, replace(model, counts=merge(counts, documents.counts)))
    check_usable(result)
    if model.sample is None:
        return result, None, 0
    if documents.sample is None:  # pragma: no cover - callers count with a sample
        raise ValueError("a model that chooses needs the documents' sample")
    total = result.counts
    mine, lost = _sample_onto(model, total)
    theirs = onto(documents.sample, documents.counts.classes, documents.counts.vocabulary,
                  total.classes, total.vocabulary)  # fmt: skip
    short = model.sample_short + lost
    return result, union([mine, theirs], n_classes=len(total.classes)), short


def combine(models: Sequence[Model], names: Sequence[str], threads: int = 1) -> Model:
    """The sum of models fitted on different shards (``names`` are for messages).

    The first model's vocabulary filter is kept, and its exit codes
    (:func:`nbclass.models.exitcodes.merged`; a class whose code differs in another model
    is warned of). When every model chose its settings from its documents and keeps their
    sample (or every one keeps a ledger), the sum chooses again from the sample of all of
    them (:func:`nbclass.counting.sketch.union`), as a fit of all the documents does;
    otherwise the first model's default settings are kept (with a warning when the others
    differ). The result has a ledger when every part has one.
    """
    return with_sample(*combined(models, names, threads), threads)


def combined(
    models: Sequence[Model], names: Sequence[str], threads: int = 1
) -> tuple[Model, Ledger | None, int]:  # fmt: skip
    """:func:`combine` but for the choice, as :func:`added` is :func:`update`'s: the sum,
    and the sample to choose again from and its shortfall (None and 0 when the sum is
    not chosen again here)."""
    models = [replace(m, tokenizer=counting_tokenizer(m)) for m in models]
    first = models[0]
    for model, name in zip(models, names):
        _refuse_selected(model, name)
        check_same_tokenizer(first, model.tokenizer, f"{name} (compared with {names[0]})")
    all_ledgers = all(m.ledger is not None for m in models)
    again = chooses(first) and all(
        (m.ledger is not None and all_ledgers) or m.sample is not None for m in models
    )
    if chooses(first) and not again:
        lacking = next(n for m, n in zip(models, names) if m.sample is None)
        warnings.warn(
            f"{lacking} keeps no sample of its documents (fitted with a named --model, or by "
            f"an older version), so the merged model keeps {names[0]}'s choice of settings, "
            "made on its documents alone; fit the whole corpus to choose again",
            NbclassWarning,
            stacklevel=2,
        )
        first = replace(first, sample=None, sample_short=0)
    for model, name in zip(models[1:], names[1:]):
        for what, a, b in (
            ("vocabulary filter", first.vocabulary_filter.chosen_apart,
             model.vocabulary_filter.chosen_apart),  # fmt: skip
            ("default estimator settings", first.defaults, model.defaults),
        ):
            if a != b and not (again and what.startswith("default")):
                warnings.warn(
                    f"{name} has a different {what} from {names[0]}; the merged model keeps "
                    f"{names[0]}'s",
                    NbclassWarning,
                    stacklevel=2,
                )
    stored = [exitcodes.stored_form(m.codes, m.counts.classes) is not None for m in models]
    codes, moved = exitcodes.merged([m.codes for m in models], list(names), stored)
    for note in moved:
        warnings.warn(note, NbclassWarning, stacklevel=2)
    first = replace(
        first, column_words=_joined_words(*(m.column_words for m in models)), exit_codes=codes
    )
    with_ledger = [m.ledger is not None for m in models]
    if all(with_ledger):
        parts = [(m.ledger, m.counts.classes, m.counts.vocabulary) for m in models]
        return _from_ledger(first, *unify(parts))
    if any(with_ledger):
        warnings.warn(
            "not every model keeps a ledger, so the merged model keeps none (sync and exact "
            "unlearn need one)",
            NbclassWarning,
            stacklevel=2,
        )
    result = replace(first, counts=merge(*(m.counts for m in models)), ledger=None)
    if not again:
        return result, None, 0
    samples, short = [], 0
    for model in models:
        if model.sample is None:  # a ledger's (the first model keeps a sample)
            model = replace(model, sample=bottom(model.ledger,
                                                 n_classes=len(model.counts.classes)))
        rows, lost = _sample_onto(model, result.counts)
        samples.append(rows)
        short += model.sample_short + lost
    return result, union(samples, n_classes=len(result.counts.classes)), short


def unlearn_keys(
    model: Model, keys: Keys, sources: Sequence[str], threads: int = 1
) -> Model:  # fmt: skip
    """``model`` (which keeps a ledger) without the documents ``keys``.

    Raises
    ------
    NbclassError
        Naming the first document the model never learned: no entry of its digest and
        class is left in the ledger.
    """
    return with_sample(*unlearned_keys(model, keys, sources), threads)


def unlearned_keys(
    model: Model, keys: Keys, sources: Sequence[str]
) -> tuple[Model, Ledger | None, int]:  # fmt: skip
    """:func:`unlearn_keys` but for the choice, as :func:`added` is :func:`update`'s: the
    model without the documents ``keys``, and the sample to choose again from and its
    shortfall.

    Raises
    ------
    NbclassError
        Naming the first document the model never learned: no entry of its digest and
        class is left in the ledger.
    """
    _refuse_selected(model, "the model")
    counts = model.counts
    rest, missing = match(model.ledger.keys(counts.classes), keys)
    if missing:
        i = missing[0]
        raise NbclassError(
            f"{sources[i]!r} was never learned as class {keys[i][1]!r} (no document with its "
            "content and class in the model's ledger); nothing was changed"
        )
    result, sample, short = _from_ledger(model, model.ledger.take(rest), counts.classes,
                                         counts.vocabulary, UNLEARNED_ALL)  # fmt: skip
    return _coded(model, result), sample, short


def unlearn_counts(model: Model, documents: Documents, threads: int = 1) -> Model:
    """``model`` (without a ledger) less the counts of ``documents``.

    A model that keeps a sample loses from it the documents of ``documents.keys``
    (:func:`nbclass.counting.sketch.without`) and chooses again. When the sample did not
    hold every document, the documents that would take their places are unknown: the
    model then counts them in :attr:`Model.sample_short` and chooses from what is left.

    Raises
    ------
    NbclassError
        Naming the count that would become impossible (negative, or a word in more
        documents of a class than the class has): the model cannot have learned them.
    """
    return with_sample(*unlearned(model, documents), threads)


def unlearned(model: Model, documents: Documents) -> tuple[Model, Ledger | None, int]:
    """:func:`unlearn_counts` but for the choice, as :func:`added` is :func:`update`'s:
    the model less the counts of ``documents``, and the sample to choose again from and
    its shortfall (None and 0 for a model that keeps no sample)."""
    _refuse_selected(model, "the model")
    counts = model.counts
    try:
        remaining = subtract(counts, documents.counts)
    except ValueError as exc:
        raise NbclassError(
            f"cannot unlearn: {exc}; nothing was changed (a model fitted with --ledger "
            "names the document)"
        ) from None
    result = _coded(model, replace(model, counts=remaining))
    check_usable(result, UNLEARNED_ALL)
    if model.sample is None:
        return result, None, 0
    if documents.keys is None:  # pragma: no cover - callers count with keys
        raise ValueError("a model with a sample needs the documents' keys")
    sample, removed = without(model.sample, counts.classes, documents.keys)
    short = model.sample_short
    if removed and model.sample.n_documents < counts.n_docs:
        short += removed  # the documents next by digest would have taken their places
    rows, lost = _sample_onto(replace(model, sample=sample), remaining)
    if model.sample.n_documents < counts.n_docs:
        short += _unsampled(rows, remaining, per_class_for(len(counts.classes)))
    return result, rows, short + lost


def _unsampled(sample: Ledger, counts: Counts, before: int) -> int:
    """How many more of the first documents of each class than ``before`` of each the
    sample of ``counts``'s documents keeps (:func:`nbclass.counting.sketch.per_class_for`)
    ``sample`` lacks: none, unless classes were unlearned whole past 2,000 classes, so
    that the sample keeps more of each class left than it did (documents unknown without
    a ledger; the holes of those it kept are counted as they are made)."""
    C = len(counts.classes)
    now = per_class_for(C)
    if now <= before:
        return 0
    need = np.minimum(now, counts.class_count)
    held = np.maximum(np.bincount(sample.labels, minlength=C), np.minimum(before, need))
    return int(np.maximum(need - held, 0).sum())


@dataclass
class SyncReport:
    """What :func:`sync` did, in documents."""

    added: int = 0
    removed: int = 0
    relabelled: int = 0
    unchanged: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.relabelled)


def sync(
    model: Model, corpus: Corpus, jobs: int = 1, policy: ReadPolicy = DEFAULT_POLICY,
    log: ReadLog | None = None,
) -> tuple[Model, SyncReport]:  # fmt: skip
    """Make ``model`` (which keeps a ledger) equal to a fit of ``corpus`` as it is now.

    Documents are read under ``policy``; one it skips is not part of the corpus now (a
    skipped document that was learned before is unlearned), and is recorded in ``log``.

    New files are learned, deleted ones unlearned (from the ledger: their files are gone),
    and a file moved to another class folder moves its counts. Only new content is read
    twice (once to hash, once to tokenize); the rest is hashed.
    """
    model, sample, short, report = synced(model, corpus, jobs, policy, log)
    return with_sample(model, sample, short, jobs), report


def synced(
    model: Model, corpus: Corpus, jobs: int = 1, policy: ReadPolicy = DEFAULT_POLICY,
    log: ReadLog | None = None,
) -> tuple[Model, Ledger | None, int, SyncReport]:  # fmt: skip
    """:func:`sync` but for the choice, as :func:`added` is :func:`update`'s: the model
    as the folder now is, the sample to choose again from and its shortfall, and what
    was done."""
    if model.ledger is None:
        raise UsageError(
            "the model keeps no ledger, so sync cannot tell what it learned: fit it again "
            "with --ledger, or let sync create it (give a model path that does not exist)"
        )
    _refuse_selected(model, "the model")
    counts = model.counts
    model = replace(model, tokenizer=counting_tokenizer(model))
    have = model.ledger.keys(counts.classes)
    log = ReadLog() if log is None else log
    want, corpus = _keyed(corpus, policy, log)
    stale, new = match(have, want)
    kept = sorted(set(range(len(have))).difference(stale))
    gone = Counter(have[i][0] for i in stale)
    came = Counter(want[i][0] for i in new)
    moved = sum(min(n, came[d]) for d, n in gone.items())
    report = SyncReport(
        added=len(new) - moved, removed=len(stale) - moved, relabelled=moved, unchanged=len(kept)
    )
    if not report.changed:
        return model, None, 0, report
    parts = [(model.ledger.take(kept), counts.classes, counts.vocabulary)]
    if new:
        fresh = Corpus(
            classes=list(corpus.classes),
            paths=[corpus.paths[i] for i in new],
            labels=[corpus.labels[i] for i in new],
        )
        documents = count_documents(
            fresh, model.tokenizer, ledger=True, jobs=jobs, policy=policy, log=log
        )
        parts.append((documents.ledger, documents.counts.classes, documents.counts.vocabulary))
        words = _joined_words(model.column_words, documents.column_words)
        model = replace(model, column_words=words)
    result, sample, short = _from_ledger(model, *unify(parts))
    return _coded(model, result), sample, short, report


# --- from fit's options to a model ----------------------------------------------------------


def fit_settings(
    options: dict, given: Collection[str] = (), base: Model | None = None,
    multi_label: bool = False,
) -> tuple[TokenizerSettings, VocabularyFilter, EstimatorSettings, bool]:  # fmt: skip
    """``(tokenizer, vocabulary_filter, defaults, auto)`` of a fit with ``options``.

    ``options`` holds fit's option values by name: ``lowercase``, ``token_pattern``,
    ``unspaced``, ``symbols`` and ``ngram_doc_limit`` (may be left out), ``ngram_range``,
    ``stop_words``,
    ``hash_features``, ``min_df``, ``max_features``,
    ``event_model``, ``estimator``, ``alpha``, ``beta`` and ``text_options`` (a dict of the
    transform options), ``None`` for an option left out where that means "the default".
    ``auto`` is True when the settings are to be chosen from the data (``--model auto``,
    the default when no estimator option is given); ``defaults`` is then a stand-in.

    ``symbols`` None (not given) is on for a fit that chooses (:func:`symbols_by_default`)
    and off otherwise; ``multi_label``: the fit is of a multi-label model, whose choice
    does not compare feature sets (the symbols stay off unless given).

    With a ``base`` model (an update, a sync), only the options named in ``given`` (those
    the user gave) change the model's settings: the others keep the model's, and a
    tokenizer option that differs from the model's is refused (counts made by different
    tokenizers cannot be added).

    Raises
    ------
    UsageError
        For ``--model auto`` with estimator options, or with a base model.
    """
    words, source = load_stop_words(options["stop_words"], options["lowercase"])
    pattern, symbols = options["token_pattern"], options.get("symbols")
    if symbols and options.get("unspaced") is not None:
        raise UsageError("--symbols cannot be combined with --unspaced: leave out one of them")
    tokenizer = TokenizerSettings(
        lowercase=options["lowercase"],
        token_pattern=DEFAULT_TOKEN_PATTERN if pattern is None else pattern,
        ngram_range=options["ngram_range"] or DEFAULT_NGRAM_RANGE,
        stop_words=words,
        stop_words_source=source,
        hash_features=options["hash_features"],
        unspaced=options.get("unspaced"),
        symbols=bool(symbols),
        ngram_doc_limit=options.get("ngram_doc_limit"),
    )
    make_tokenizer(tokenizer)  # refuse a pattern that cannot work before reading anything
    vocabulary_filter = VocabularyFilter(
        min_df=options["min_df"], max_features=options["max_features"]
    ).validate()
    overrides = dict(
        model=options["event_model"], estimator=options["estimator"], alpha=options["alpha"],
        beta=options["beta"], **(options["text_options"] or {}),
    )  # fmt: skip
    if options["event_model"] == AUTO and overridden(**dict(overrides, model=None)):
        raise UsageError(
            "--model auto chooses the estimator, priors and transforms itself: give "
            "--model NAME to set them"
        )
    if base is None:
        if not overridden(**overrides):
            grams = options["ngram_range"] is not None or options.get("ngram_doc_limit")
            tokenizer = counted_to_choose(
                tokenizer, symbols is not None, multi_label, ngrams_given=bool(grams)
            )
            return tokenizer, vocabulary_filter, DEFAULTS, True
        return tokenizer, vocabulary_filter, resolve(EstimatorSettings(), **overrides), False
    if options["event_model"] == AUTO and not chooses(base):
        raise UsageError(
            "--model auto chooses from a sample of the whole corpus, which this model does "
            "not keep (it was fitted with a named --model, or by an older version): fit the "
            "whole corpus anew to choose"
        )
    named = (
        "lowercase", "token_pattern", "ngram_range", "hash_features", "unspaced", "symbols",
        "ngram_doc_limit",
    )  # fmt: skip
    changed = {name: getattr(tokenizer, name) for name in named if name in given}
    if "stop_words" in given:
        changed.update(stop_words=tokenizer.stop_words, stop_words_source=source)
    check_same_tokenizer(base, replace(base.tokenizer, **changed), "the model")
    filters = {k: options[k] for k in ("min_df", "max_features") if k in given}
    vocabulary_filter = replace(base.vocabulary_filter, **filters)
    if options["event_model"] == AUTO:
        overrides["model"] = None
    defaults = resolve(base.defaults, **overrides)
    tokenizer = base.tokenizer
    if not overridden(**dict(overrides, model=None)) and options["event_model"] in (None, AUTO):
        tokenizer = counting_tokenizer(base)  # as the update will count them
    return tokenizer, vocabulary_filter.validate(), defaults, False


def changed_options(
    model: Model, vocabulary_filter: VocabularyFilter, defaults: EstimatorSettings
) -> list[str]:
    """The options (as :func:`nbclass.models.estimators.as_options` spells them) by which
    ``vocabulary_filter`` and ``defaults`` differ from ``model``'s own; empty when none do.

    >>> from nbclass.counting.counts import Counts
    >>> from nbclass.text.tokenizer import TokenizerSettings
    >>> import numpy as np
    >>> none = np.zeros((0, 2), dtype=np.int64)
    >>> empty = Counts(("a", "b"), (), np.ones(2, dtype=np.int64), none, none)
    >>> m = Model(empty, TokenizerSettings(), defaults=EstimatorSettings())
    >>> changed_options(m, VocabularyFilter(min_df=2), EstimatorSettings(model="bernoulli"))
    ['--min-df 2', '--model bernoulli']
    """
    def groups(text: str) -> list[str]:
        return ["--" + part.strip() for part in text.split("--") if part.strip()]

    before, after = model.vocabulary_filter, vocabulary_filter
    found = [
        f"--{name.replace('_', '-')} {getattr(after, name)}"
        for name in ("min_df", "max_features")
        if getattr(after, name) != getattr(before, name)
    ]
    if defaults != model.defaults:
        old = set(groups(as_options(model.defaults)))
        found += [group for group in groups(as_options(defaults)) if group not in old]
    return found


def new_model(
    documents: Documents,
    tokenizer: TokenizerSettings,
    vocabulary_filter: VocabularyFilter,
    defaults: EstimatorSettings,
    auto: bool,
    jobs: int = 1,
    codes: dict[str, int] | None = None,
) -> Model:
    """The model of freshly counted ``documents``; with ``auto``, its settings chosen by
    cross-validation on the documents' sample (:func:`nbclass.models.model.with_sample`,
    ``jobs`` threads), which the model keeps. Its exit codes are ``codes`` (``fit
    --exit-code-map``) and, for the classes they leave out, the smallest free ones
    (:mod:`.exitcodes`); 10, 11, ... in sorted order without ``codes``. A class of
    ``codes`` the documents do not have keeps its code (a warning says so: it may be a
    misspelt name).

    Raises
    ------
    NbclassError
        When the documents hold one class only, or no usable word.
    """
    if len(documents.counts.classes) < 2:
        raise NbclassError(
            f"the input has only one class ({documents.counts.classes[0]!r}): a "
            "classifier needs at least two classes"
        )
    model = Model(
        documents.counts, tokenizer, vocabulary_filter, defaults, ledger=documents.ledger,
        column_words=documents.column_words,
    )  # fmt: skip
    check_usable(model)
    if codes is not None:
        for name in sorted(set(codes).difference(documents.counts.classes)):
            warnings.warn(
                f"--exit-code-map gives exit code {codes[name]} to {name!r}, which is not a "
                "class of the input: the code is kept for that class",
                NbclassWarning,
                stacklevel=2,
            )
        model = replace(model, exit_codes=exitcodes.extended(codes, documents.counts.classes))
    return with_sample(model, documents.sample, 0, jobs) if auto else model
