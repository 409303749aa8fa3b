"""Why a document got its label: each word's share of the log-odds, and what predict adds.

For a linear scorer (jll = f(X) @ W + b, :class:`nbclass.models.posterior.LinearScorer`), the
log-odds of the chosen class a against the runner-up r is

    log p(a | x) − log p(r | x) = b_a − b_r = Σ_j f(x_j) (W[j, a] − W[j, r]) + (b_a − b_r)

with f the identity (multinomial) or 1[x > 0] (Bernoulli): word j's contribution is its
term of the sum. The explanation lists the ``n`` words with the largest contributions
(the words that pushed the decision most towards a; ties to the alphabetically first
word); the full sum plus the bias difference is the log-odds. A scorer that is not
linear provides its own ``contributions(X, a, b)`` and ``bias_difference(a, b)``.

The runner-up is the second class by log posterior (ties to the first in class order),
so it stays meaningful when its probability underflows to 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import UsageError
from .abstain import NO_KNOWN_WORDS, Abstention
from .chosen import offsets, temperatures
from .model import Classifier


@dataclass(frozen=True, eq=False)
class ScoredBatch:
    """A batch of documents scored, with what abstention and explanations need.

    Attributes
    ----------
    sources : list of str, length n
    jll : ndarray of shape (n, C)
    log_proba : ndarray of shape (n, C)
    tokens : ndarray of shape (n,)
        Tokens per document (n-grams included), known to the model or not.
    known : ndarray of shape (n,)
        Known tokens per document (int64).
    matrix : csr_matrix or :class:`nbclass.counting.csr.CSR` of shape (n, V), or None
        Token counts over the model's (used) vocabulary, when they were counted so;
        else ``entries`` holds them, and :attr:`X` makes the matrix when asked.
    entries : tuple, or None
        ``(rows, cols, values, n, V)``: the nonzero counts, sorted by row then column.
    """

    sources: list[str]
    jll: np.ndarray
    log_proba: np.ndarray
    tokens: np.ndarray
    known: np.ndarray
    matrix: object = None
    entries: tuple | None = None

    @cached_property
    def X(self):
        """The token counts as a csr_matrix of shape (n, V) (made from :attr:`entries`,
        or of the arrays of a :class:`~nbclass.counting.csr.CSR` :attr:`matrix`, when
        first asked: only explanations need it)."""
        from ..counting.csr import CSR

        if isinstance(self.matrix, CSR):
            import scipy.sparse as sp

            X = self.matrix
            return sp.csr_matrix((X.data, X.indices, X.indptr), shape=X.shape)
        if self.matrix is not None:
            return self.matrix
        from ..text.vectorizer import entries_matrix

        return entries_matrix(*self.entries)

    @cached_property
    def counts(self):
        """The token counts as :attr:`matrix` holds them, a csr_matrix or a
        :class:`~nbclass.counting.csr.CSR` of shape (n, V), for a
        :class:`nbclass.models.posterior.LinearScorer` (the evidence's): a CSR made from
        :attr:`entries` (no scipy.sparse) if there is no matrix."""
        if self.matrix is not None:
            return self.matrix
        return entries_csr(*self.entries)


def entries_csr(rows, columns, values, n: int, V: int):
    """:func:`nbclass.text.vectorizer.entries_matrix` as a
    :class:`nbclass.counting.csr.CSR` (the same arrays, without importing
    ``scipy.sparse``: 0.14-0.19 s of CPU), for the scorers that take one
    (:class:`nbclass.models.posterior.LinearScorer`, as fit's choice gives them)."""
    from ..counting.csr import CSR
    from ..text.vectorizer import entries_by_rows

    X = CSR(*entries_by_rows(rows, columns, values, n), (n, V))
    X.sort_indices()
    return X


# Documents × classes scored at once: a batch of a thousand documents against 20,000
# classes is scored a block of 52 documents at a time, each of its (documents, classes)
# arrays 8 MB (their memory is reused from block to block, and stays in the caches),
# not 160 MB a batch. Each document's scores are its own: the same floats either way.
BLOCK_CELLS = 2**20


def block_rows(classes: int) -> int:
    """Documents a block: at most :data:`BLOCK_CELLS` (document, class) cells, one
    document at least."""
    return max(1, BLOCK_CELLS // max(classes, 1))


def scored_blocks(
    classifier: Classifier, sources: list[str], entries: tuple, tokens
) -> Iterator[ScoredBatch]:
    """:func:`score_entries` of a batch, in blocks of :func:`block_rows` documents
    (one block, as a rule, for a model of few classes)."""
    for block in blocks_of(classifier, sources, entries, tokens):
        yield score_block(classifier, *block)


def blocks_of(
    classifier: Classifier, sources: list[str], entries: tuple, tokens
) -> Iterator[tuple]:
    """The blocks :func:`scored_blocks` scores, each as what :func:`score_block` takes
    after the classifier: ``(sources, entries, None, tokens)`` for a batch of one block,
    else ``(sources, None, X, tokens)`` for each block of :func:`block_rows` documents
    of its counts X (n, V)."""
    from ..text.vectorizer import entries_matrix

    n, size = len(sources), block_rows(len(classifier.classes))
    if n <= size:
        yield sources, entries, None, tokens
        return
    X = entries_matrix(*entries, n, len(classifier.counts.vocabulary))
    for start in range(0, n, size):
        end = start + size
        yield sources[start:end], None, X[start:end], tokens[start:end]


def score_block(classifier: Classifier, sources: list[str], entries, X, tokens) -> ScoredBatch:
    """A block of :func:`blocks_of` scored: :func:`score_entries` of its ``entries``, or
    :func:`score_counts` of its counts ``X``."""
    if X is None:
        return score_entries(classifier, sources, entries, tokens)
    return score_counts(classifier, sources, X, tokens)


def texts_scored(classifier: Classifier, sources: list[str], texts) -> Iterator[ScoredBatch]:
    """The documents ``texts`` (one per source) counted over the classifier's vocabulary
    and scored a block of :func:`block_rows` documents at a time (:func:`scored_blocks`):
    what every path that scores texts in its own process calls (predict at one job, the
    Python API, the service, a cluster worker), and what bulk predict's main process
    does with the entries its workers count. No ``scipy.sparse`` is imported to score a
    batch of a linear model (:func:`score_entries`)."""
    texts = texts if isinstance(texts, list) else list(texts)
    rows, columns, values, tokens = classifier.counter.counted_entries(texts)
    return scored_blocks(classifier, sources, (rows, columns, values), tokens)


def score_batch(classifier: Classifier, batch: list[tuple[str, str]]) -> ScoredBatch:
    """Score ``(source, text)`` pairs as one block (:func:`score_entries` of their counts),
    as :meth:`Classifier.predict` scores them."""
    rows, columns, values, tokens = classifier.counter.counted_entries([t for _, t in batch])
    return score_entries(classifier, [s for s, _ in batch], (rows, columns, values), tokens)


def score_counts(classifier: Classifier, sources: list[str], X, tokens) -> ScoredBatch:
    """Score documents already counted: ``X`` (n, V) and their token numbers (n,)."""
    jll = classifier.scorer.joint_log_likelihood(X)
    known = np.asarray(X.sum(axis=1)).ravel().astype(np.int64)
    return ScoredBatch(
        sources=sources, jll=jll, log_proba=classifier.log_proba_of_known(known, jll),
        tokens=tokens, known=known, matrix=X,
    )  # fmt: skip


# A batch of at most this many (nonzero count, class) products is scored by numpy alone.
NUMPY_PRODUCTS = 1 << 19


def score_entries(
    classifier: Classifier, sources: list[str], entries: tuple, tokens
) -> ScoredBatch:
    """:func:`score_counts` of documents given by their nonzero counts ``(rows, columns,
    values)`` (int64, in any order).

    A small batch (at most :data:`NUMPY_PRODUCTS` products of a count and a class's
    weight: a thousand short documents) is scored by numpy alone when the scorer can
    (:meth:`nbclass.models.posterior.LinearScorer.entry_scores`) and scipy is not loaded
    yet: a bulk predict of short documents that prints labels and probabilities then
    never imports scipy, 0.1 s of its main process. Larger batches take the sparse
    product, seven times as fast. The same floats either way.
    """
    import sys

    from ..text.vectorizer import entries_matrix, sorted_entries

    n, V = len(sources), len(classifier.counts.vocabulary)
    entry_scores = getattr(classifier.scorer, "entry_scores", None)
    small = entries[2].size * len(classifier.classes) <= NUMPY_PRODUCTS
    jll = None
    if entry_scores is not None and small and "scipy.sparse" not in sys.modules:
        entries = sorted_entries(*entries, V)
        jll = entry_scores(*entries, n)
    if jll is None:
        # A linear scorer (one with entry_scores) takes a CSR of nbclass.counting.csr, as
        # fit's choice gives it: the same arrays and floats as scipy's, without importing
        # scipy.sparse (0.14-0.19 s of CPU, of a bulk predict's main process).
        matrix = entries_matrix if entry_scores is None else entries_csr
        return score_counts(classifier, sources, matrix(*entries, n, V), tokens)
    rows, cols, values = entries
    known = np.bincount(rows, weights=values, minlength=n).astype(np.int64)
    return ScoredBatch(
        sources=sources, jll=jll, log_proba=classifier.log_proba_of_known(known, jll),
        tokens=tokens, known=known, entries=(rows, cols, values, n, V),
    )  # fmt: skip


def explanations(classifier: Classifier, scored: ScoredBatch, n: int) -> list[dict | None]:
    """The ``n`` words that pushed each document most towards its class (None: no label).

    Returns
    -------
    list of dict, one per document
        ``{"versus": runner-up class, "log_odds": b_a − b_r, "bias": bias difference,
        "words": [(word, x_j, contribution), ...]}``, largest contribution first. A
        document with no known word has no words and the prior's log-odds as its bias.
    """
    order = np.argsort(-scored.log_proba, axis=1, kind="stable")
    a, r = order[:, 0], order[:, 1]
    scorer = classifier.scorer
    if not hasattr(scorer, "contributions"):
        raise UsageError(
            f"--explain is not available for --model {classifier.settings.model}: its "
            "scorer does not split the log-odds into word contributions"
        )
    contributions = scorer.contributions(scored.X, a, r)
    bias = scorer.bias_difference(a, r)
    if classifier.calibration is not None:
        # Calibrated probabilities divide a document's scores by T(x): so do its parts,
        # which then add up to the log-odds of the probabilities printed.
        scale = 1.0 / temperatures(classifier.calibration, scored.known, scored.jll)
        contributions = contributions.copy()
        contributions.data *= np.repeat(scale, np.diff(contributions.indptr))
        bias = bias * scale
        shift = offsets(classifier.calibration, scored.known)
        if shift is not None:  # the class offsets move the log-odds as a bias does
            rows = np.arange(shift.shape[0])
            bias = bias + shift[rows, a] - shift[rows, r]
    # A document with no known word has the prior's posterior: no word moved it, and
    # its log-odds are the prior's (nbclass.models.chosen.reported).
    empty = scored.known == 0
    bias = np.where(empty, classifier.prior[a] - classifier.prior[r], bias)
    words = list(classifier.vocabulary)  # insertion order: word j at position j
    out: list[dict | None] = []
    for i in range(scored.X.shape[0]):
        if np.isneginf(scored.log_proba[i, a[i]]):
            out.append(None)
            continue
        start, end = contributions.indptr[i], contributions.indptr[i + 1]
        if empty[i]:
            start = end
        cols = contributions.indices[start:end]
        values = contributions.data[start:end]
        counts = scored.X.data[scored.X.indptr[i] : scored.X.indptr[i + 1]]
        # cols are sorted, i.e. alphabetical; a stable sort keeps that order on ties.
        best = np.argsort(-values, kind="stable")[:n]
        out.append(
            {
                "versus": classifier.classes[r[i]],
                "log_odds": float(scored.log_proba[i, a[i]] - scored.log_proba[i, r[i]]),
                "bias": float(bias[i]),
                "words": [
                    (words[cols[k]], int(counts[k]), float(values[k])) for k in best.tolist()
                ],
            }
        )
    return out


def top_two(log_proba: np.ndarray) -> np.ndarray:
    """Each row's two largest entries, largest first, shape (n, min(C, 2)): all that
    :meth:`nbclass.models.abstain.Abstention.reason` reads of a row (its largest, and the
    two largest probabilities), without a list of C floats a document."""
    if log_proba.shape[1] <= 2:
        return -np.sort(-log_proba, axis=1)
    return -np.sort(-np.partition(log_proba, -2, axis=1)[:, -2:], axis=1)


def extras(
    classifier: Classifier,
    scored: ScoredBatch,
    abstention: Abstention,
    explain: int | None = None,
    evidence: bool = True,
) -> list[dict] | None:
    """Per document: ``log_evidence``, ``evidence_model``, ``reason`` and, if asked,
    ``explanation``; None when none of them is shown or used (no ``evidence``, no
    abstention option, no ``explain``: every document's reason is None).

    ``log_evidence`` comes from the chosen model when its settings are generative (see
    :attr:`nbclass.models.estimators.EstimatorSettings.generative`), else from the multinomial of
    the same counts (:func:`nbclass.models.novelty.evidence_of`); ``evidence_model`` names it.
    It is 0.0 for a document with no known token. Without ``evidence`` (TSV prints none)
    it is not computed unless ``--min-typicality`` needs it: both are then None.
    """
    from .novelty import evidence_of

    if not (evidence or explain or abstention.active):
        return None
    n = scored.jll.shape[0]
    if evidence or abstention.min_typicality is not None:
        values, evidence_model = evidence_of(
            classifier, scored.counts, scored.jll, scored.known
        )  # fmt: skip
        evidence = values.tolist()
    else:
        evidence, evidence_model = [None] * n, None
    abstention = abstention.for_model(classifier.typicality, classifier.settings)
    if abstention.thresholds:
        known, tokens = scored.known.tolist(), scored.tokens.tolist()
        rows = top_two(scored.log_proba).tolist()
        reasons = [
            abstention.reason(rows[i], known[i], tokens[i], evidence[i]) for i in range(n)
        ]
    elif abstention.no_known:  # no threshold given: unsure only without a known word
        # (what reason() says then, without a row of C floats a document: its posterior
        # is the prior, which no class rules out)
        reasons = [NO_KNOWN_WORDS if k == 0 else None for k in scored.known.tolist()]
    else:  # --min-known 0 and no threshold: never unsure
        reasons = [None] * n
    out = [
        {"log_evidence": value, "evidence_model": evidence_model, "reason": reason}
        for value, reason in zip(evidence, reasons)
    ]
    if explain:
        for record, explanation in zip(out, explanations(classifier, scored, explain)):
            record["explanation"] = explanation
    return out
