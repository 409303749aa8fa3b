"""Vectorizer: token lists to a sparse bag-of-words matrix.

Rows are documents and columns are vocabulary words; entry ``X[i, j]`` is the number of
times word j occurs in document i (the multinomial event model's ``x``). The Bernoulli
event model uses the same matrix binarised, ``x_j = 1[X[i, j] > 0]``. The matrix is a
``scipy.sparse.csr_matrix`` with sorted column indices and no stored zeros, and is never
made dense.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from itertools import compress, repeat
from operator import not_
from typing import TYPE_CHECKING

import numpy as np

from .tokenizer import TokenizerSettings, ascii_splitter, make_tokenizer

if TYPE_CHECKING:  # scipy is imported where it is used: fitting never needs it
    import scipy.sparse as sp


class GrowingVocabulary(dict):
    """A ``word -> column`` mapping that gives an unseen word the next free column.

    Examples
    --------
    >>> vocabulary = GrowingVocabulary()
    >>> vocabulary["ham"], vocabulary["spam"], vocabulary["ham"]
    (0, 1, 0)
    """

    def __missing__(self, word: str) -> int:
        index = self[word] = len(self)
        return index


def count_matrix(token_lists: Iterable[list[str]], vocabulary: Mapping[str, int]) -> sp.csr_matrix:
    """Count tokens per document.

    Parameters
    ----------
    token_lists : iterable of list of str
        One list of tokens per document.
    vocabulary : mapping of str to int
        Column of each word. A :class:`GrowingVocabulary` learns new words as it meets
        them; any other mapping is fixed and words outside it are ignored.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_documents, len(vocabulary)), dtype int64
        Token counts; rows with no known word are empty.

    Examples
    --------
    >>> X = count_matrix([["b", "a", "b"], ["c"]], {"a": 0, "b": 1})
    >>> X.toarray().tolist()
    [[1, 2], [0, 0]]
    """
    rows, columns, values, n_tokens = count_entries(token_lists, vocabulary)
    return entries_matrix(rows, columns, values, n_tokens.size, len(vocabulary))


def count_entries(
    token_lists: Iterable[list[str]], vocabulary: Mapping[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, columns, values, n_tokens)``: the nonzero counts of the token lists (row i
    is the i-th list; int64, each (row, column) once) and each list's length, as
    :func:`count_matrix` takes its vocabulary (a word outside a fixed one is left out)."""
    indptr, indices, data, n_tokens = [0], [], [], []
    growing = isinstance(vocabulary, GrowingVocabulary)
    lookup, get, unknown = vocabulary.__getitem__, vocabulary.get, repeat(-1)
    known = None if growing else vocabulary.__contains__
    for tokens in token_lists:
        # A fixed vocabulary counts only the words it has: the n-grams of a long document
        # (nbclass.text.tokenizer.Ngrams) are made one at a time and never all held.
        counts = Counter(tokens) if growing else Counter(filter(known, tokens))
        n_tokens.append(len(tokens))
        if growing:
            indices.extend(map(lookup, counts))
        else:
            indices.extend(map(get, counts, unknown))  # -1 for a word outside the vocabulary
        data.extend(counts.values())
        indptr.append(len(indices))
    rows = np.repeat(np.arange(len(n_tokens), dtype=np.int64), np.diff(indptr))
    columns, values = np.array(indices, dtype=np.int64), np.array(data, dtype=np.int64)
    known = columns >= 0
    if not known.all():
        rows, columns, values = rows[known], columns[known], values[known]
    return rows, columns, values, np.array(n_tokens, dtype=np.int64)


class TextCounter:
    """Texts to token counts over a fixed vocabulary: what predict does before scoring.

    Holds the tokenizer of ``settings``, the vocabulary (word -> column, in column order)
    and, when the tokenizer has an :class:`nbclass.text.tokenizer.AsciiSplitter`, its
    :class:`nbclass.text.runs.RunCounter` (built when first needed), which counts the texts
    with numpy (of any script). Needs numpy but not scipy until :meth:`count`:
    :meth:`entries` is what a worker process computes (:mod:`nbclass.models.scoring`).

    Examples
    --------
    >>> from nbclass.text.tokenizer import TokenizerSettings
    >>> counter = TextCounter(TokenizerSettings(), ("café", "server"))
    >>> X, n = counter.count(["The server, a server!", "Café server"])
    >>> X.toarray().tolist(), n.tolist()
    ([[0, 2], [1, 1]], [3, 2])
    """

    def __init__(
        self, settings: TokenizerSettings, words: Sequence[str] = (), *,
        joined: tuple[bytes, int] | None = None,
    ):  # fmt: skip
        """``joined``: instead of ``words``, ``(their UTF-8 separated by NULs, their
        number)``, as a model file keeps them (none holds a NUL). The run counter is then
        made from those bytes, and :attr:`words` only when asked for: a predict worker of
        a model of 1.18 million words and pairs never makes their 1.18 million strings."""
        self.settings = settings
        self._joined = joined
        self._words = None if joined is not None else tuple(words)
        self.n_words = joined[1] if joined is not None else len(self._words)
        self.tokenize = make_tokenizer(settings, lazy=True)  # counts a fixed vocabulary
        # Texts are str here: an ASCII one is encoded to ASCII for the splitter.
        self.splitter = ascii_splitter(settings, "ascii")

    @cached_property
    def words(self) -> tuple[str, ...]:
        """The words, in column order (made from the joined bytes when first asked for)."""
        if self._joined is None:
            return self._words
        blob, n_words = self._joined
        return tuple(blob.decode("utf-8").split("\x00")) if n_words else ()

    @cached_property
    def vocabulary(self) -> dict[str, int]:
        """Word -> column; made when first needed (texts the run counter cannot count,
        stop words): for 130,000 words it takes longer than counting a few documents."""
        return dict(zip(self.words, range(len(self.words))))

    @cached_property
    def runs(self):
        """The :class:`nbclass.text.runs.RunCounter` of the vocabulary, or None (no splitter,
        or words the table cannot tell apart): every text is then tokenized."""
        if self.splitter is None:
            return None
        from .runs import RunCounter

        if self._joined is not None:
            return RunCounter.for_vocabulary(
                None, self.splitter, lambda: self.vocabulary, self._joined
            )
        return RunCounter.for_vocabulary(self.words, self.splitter, lambda: self.vocabulary)

    def count(self, texts: Iterable[str], threads: int = 1) -> tuple[sp.csr_matrix, np.ndarray]:
        """``(X, n_tokens)``: :func:`count_matrix` of ``map(tokenize, texts)``, shape
        (n, V), and each text's number of tokens, known words or not, shape (n,).

        ``threads`` > 1 count as many consecutive parts of ``texts`` at once (the run
        counter's numpy work leaves the interpreter lock); the result is the same."""
        texts = texts if isinstance(texts, list) else list(texts)
        rows, columns, values, n_tokens = self.counted_entries(texts, threads)
        return entries_matrix(rows, columns, values, len(texts), self.n_words), n_tokens

    def counted_entries(self, texts: list[str], threads: int = 1) -> tuple[np.ndarray, ...]:
        """:meth:`entries` of ``texts``, counted by ``threads`` threads as :meth:`count`
        counts them (each thread's rows in their place): no matrix made, so no scipy."""
        if threads > 1 and len(texts) >= 2 * threads:
            from concurrent.futures import ThreadPoolExecutor

            step = -(-len(texts) // threads)
            starts = range(0, len(texts), step)
            self.runs  # noqa: B018 - built once, before the threads ask for it
            with ThreadPoolExecutor(threads) as pool:
                parts = list(pool.map(self.entries, (texts[i : i + step] for i in starts)))
            rows = np.concatenate([part[0] + start for part, start in zip(parts, starts)])
            columns, values, n_tokens = (np.concatenate(p) for p in list(zip(*parts))[1:])
        else:
            rows, columns, values, n_tokens = self.entries(texts)
        return rows, columns, values, n_tokens

    def entries(self, texts: Sequence[str]) -> tuple[np.ndarray, ...]:
        """``(rows, columns, values, n_tokens)``: the nonzero counts of ``texts`` (int64,
        each (row, column) once, in no particular order) and their numbers of tokens.

        The texts of at most ``CHUNK_BYTES`` characters are counted by :attr:`runs` (those
        all ASCII as bytes, the others as str), the longer ones tokenized one by one; the
        same counts either way.
        """
        groups = []
        if self.runs is not None:
            from .runs import CHUNK_BYTES

            ascii_, other = [], []
            for i, text in enumerate(texts):
                if len(text) <= CHUNK_BYTES:
                    (ascii_ if text.isascii() else other).append(i)
            if ascii_:
                groups.append((ascii_, [texts[i].encode("ascii") for i in ascii_]))
            if other:
                groups.append((other, [texts[i] for i in other]))
        return self._entries(len(texts), groups, texts.__getitem__)

    def document_entries(
        self, documents: Sequence[bytes], decode, encoding: str
    ) -> tuple[np.ndarray, ...]:
        """:meth:`entries` of the raw ``documents`` in ``encoding``, ``decode`` giving a
        document's text (and counting what it replaces). Under an encoding that reads
        ASCII as ASCII, a document all ASCII is counted as its bytes, never decoded, and
        the others of the batch, under UTF-8, are decoded all at once
        (:class:`nbclass.text.runs.JoinedTexts`, unless one of them is not UTF-8); a batch
        with a document longer than a chunk, or another tokenizer, is decoded text by
        text."""
        from .runs import CHUNK_BYTES, JoinedTexts

        runs, n = self.runs, len(documents)
        if (
            runs is None
            or ascii_splitter(self.settings, encoding) is None
            or max(map(len, documents), default=0) > CHUNK_BYTES
        ):
            return self.entries([decode(data) for data in documents])
        ascii_ = list(map(bytes.isascii, documents))
        groups = []
        fast = list(compress(range(n), ascii_))
        if fast:
            groups.append((fast, [documents[i] for i in fast]))
        if len(fast) < n:
            other = list(compress(range(n), map(not_, ascii_)))
            wide = [documents[i] for i in other]
            groups.append((other, JoinedTexts.read(wide, encoding, decode)))
        return self._entries(n, groups, None)

    def _entries(self, n: int, groups: list, text_of) -> tuple[np.ndarray, ...]:
        """:meth:`entries` of ``n`` texts: ``groups`` of ``(indices, texts)`` counted by
        :attr:`runs`, every other text (``text_of(i)``) tokenized one by one."""
        runs = self.runs
        n_tokens = np.zeros(n, dtype=np.int64)
        fast = [i for indices, _ in groups for i in indices]
        slow = range(n) if not fast else sorted(set(range(n)).difference(fast))
        parts = []
        if slow:  # the word -> column dict is made only for texts tokenized one by one
            tokenize = self.tokenize
            rows, columns, values, slow_tokens = count_entries(
                (tokenize(text_of(i)) for i in slow), self.vocabulary
            )
            slow = np.asarray(slow, dtype=np.int64)
            rows, n_tokens[slow] = slow[rows], slow_tokens
            parts.append((rows, columns, values))
        for indices, group in groups:
            fast_rows, fast_columns, fast_values, fast_tokens = runs.count(group)
            indices = np.asarray(indices, dtype=np.int64)
            n_tokens[indices] = fast_tokens
            parts.append((indices[fast_rows], fast_columns, fast_values))
        if len(parts) > 1:
            rows, columns, values = (np.concatenate(p) for p in zip(*parts))
        elif parts:
            rows, columns, values = parts[0]
        else:
            rows = columns = values = np.zeros(0, dtype=np.int64)
        return rows, columns, values, n_tokens


def entries_matrix(rows, columns, values, n: int, V: int) -> sp.csr_matrix:
    """The (n, V) CSR matrix of the entries (rows, columns, values), each position once,
    with sorted indices."""
    import scipy.sparse as sp

    X = sp.csr_matrix(entries_by_rows(rows, columns, values, n), shape=(n, V))
    X.sort_indices()
    return X


def entries_by_rows(rows, columns, values, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(values, columns, indptr)`` of the entries in the order of their rows (the
    entries of a row in the order given)."""
    if (np.diff(rows) < 0).any():  # rows in order; sort_indices orders each row's columns
        order = np.argsort(rows, kind="stable")
        rows, columns, values = rows[order], columns[order], values[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return values, columns, indptr


def sorted_entries(rows, columns, values, V: int) -> tuple[np.ndarray, ...]:
    """``(rows, columns, values)`` ordered by row, then column (the order of a CSR
    matrix with sorted indices), each position once: V is the number of columns."""
    keys = rows * V + columns
    if keys.size and (np.diff(keys) <= 0).any():
        order = np.argsort(keys, kind="stable")  # runs already in order are merged
        rows, columns, values = rows[order], columns[order], values[order]
    return rows, columns, values


def binarize(X: sp.csr_matrix) -> sp.csr_matrix:
    """Presence matrix ``1[X > 0]`` of the same shape (the Bernoulli event model's ``x``)."""
    B = X.copy()
    B.data = np.ones_like(B.data)
    return B
