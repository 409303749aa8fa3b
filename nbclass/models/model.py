"""The model: counts plus everything needed to use them, and the fit and predict steps.

A :class:`Model` holds the exact counts of its training documents, the tokenizer settings
that produced them, the vocabulary filter (``min_df``, ``max_features``) and the default
estimator settings. Probabilities are never stored: a :class:`Classifier` derives them from
the counts for whatever estimator and priors are asked for.

The vocabulary filter is applied when the model is *used*, not when it is fitted: the
file keeps the counts of every word, so counts stay additive (two fits can be summed and
give exactly the fit of both corpora) and the filter can be read back from ``info``.
``select-features`` is the way to make a model smaller: it keeps only the chosen words.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..counting.counts import Counts, count_corpus
from ..counting.ledger import EntryBook, Ledger, canonical
from ..defaults import BATCH_SIZE
from ..errors import NbclassError
from ..ranges import check
from ..reading.corpus import Corpus
from ..text.hashing import words_of
from ..text.tokenizer import GRAM_FAMILIES, TokenizerSettings, make_tokenizer
from ..text.vectorizer import TextCounter
from . import exitcodes
from .chosen import reported
from .estimators import (
    DEFAULTS,
    Calibration,
    EstimatorSettings,
    Prepared,
    no_evidence_posterior,
    overridden,
    resolve,
)
from .posterior import best_classes, make_scorer
from .selection import informative_rows, mutual_information, rank_features
from .sparsity import row_sums
from .textmodels import prepare

if TYPE_CHECKING:
    import scipy.sparse as sp

    from ..reading.policy import ReadPolicy


@dataclass(frozen=True)
class VocabularyFilter:
    """Which counted words a model uses.

    Attributes
    ----------
    min_df : int
        Keep words in at least this many training documents (Σ_c D_jc >= min_df).
    max_features : int or None
        Then keep at most this many, the most frequent by tokens (Σ_c T_jc); ties go to
        the alphabetically first word.
    features : tuple of str, or None
        The feature families kept (:mod:`nbclass.text.families`: words, pairs, ...), as
        fit's choice picked them; None: every entry counted. Applied first.
    prune_df : int or None
        The document frequency fit's choice pruned the vocabulary to (words in at least
        this many training documents), on top of ``min_df``; None: no pruning chosen.
    prune_mi : int or None
        The number of entries fit's choice kept of those the rest of the filter keeps:
        the ones of highest mutual information with the class
        (:func:`nbclass.models.selection.informative_rows`); None: no such pruning
        chosen. Applied last.
    """

    min_df: int = 1
    max_features: int | None = None
    features: tuple[str, ...] | None = None
    prune_df: int | None = None
    prune_mi: int | None = None

    def validate(self) -> VocabularyFilter:
        check("--min-df", self.min_df)
        check("--max-features", self.max_features)
        return self

    @property
    def chosen_apart(self) -> VocabularyFilter:
        """The filter without what fit's choice picked (the user's options alone)."""
        if self.features is None and self.prune_df is None and self.prune_mi is None:
            return self
        return replace(self, features=None, prune_df=None, prune_mi=None)

    def rows(self, counts: Counts, symbols: bool | str = False) -> np.ndarray:
        """Sorted indices of the words of ``counts`` that pass the filter (``symbols``:
        the counts' tokenizer has ``symbols`` on, :func:`nbclass.text.families.masks`)."""
        frequent = row_sums(counts.doc_table) >= max(self.min_df, self.prune_df or 1)
        if self.features is not None:
            from ..text.families import rows_of

            frequent &= rows_of(counts.vocabulary, self.features, symbols)
        keep = np.flatnonzero(frequent)
        if self.max_features is not None and keep.size > self.max_features:
            frequency = row_sums(counts.token_table)[keep]
            best = np.argsort(-frequency, kind="stable")[: self.max_features]
            keep = np.sort(keep[best])
        if self.prune_mi is not None and keep.size > self.prune_mi:
            keep = keep[informative_rows(counts.restrict(keep), self.prune_mi)]
        return keep

    def to_dict(self) -> dict:
        data = {"min_df": self.min_df, "max_features": self.max_features}
        if self.features is not None:
            data["features"] = list(self.features)
        if self.prune_df is not None:
            data["prune_df"] = self.prune_df
        if self.prune_mi is not None:
            data["prune_mi"] = self.prune_mi
        return data

    @classmethod
    def from_dict(cls, data: dict) -> VocabularyFilter:
        max_features = data["max_features"]
        features, prune_df = data.get("features"), data.get("prune_df")
        prune_mi = data.get("prune_mi")
        return cls(
            min_df=int(data["min_df"]),
            max_features=None if max_features is None else int(max_features),
            features=None if features is None else tuple(features),
            prune_df=None if prune_df is None else int(prune_df),
            prune_mi=None if prune_mi is None else int(prune_mi),
        )


@dataclass(frozen=True, eq=False)
class Model:
    """A fitted naive Bayes text model.

    Attributes
    ----------
    counts : Counts
        N_c, D_jc and T_jc over every word counted.
    tokenizer : TokenizerSettings
        How text becomes tokens, for fit and predict alike.
    vocabulary_filter : VocabularyFilter
        Which counted words are used.
    defaults : EstimatorSettings
        Event model, estimator and priors used unless a command overrides them.
    selection : dict or None
        How ``select-features`` chose the vocabulary, if it did.
    ledger : Ledger or None
        Every training document's digest, class and bag of words, if the model keeps
        them (:mod:`nbclass.counting.ledger`); then ``counts`` is exactly the ledger's sum.
    column_words : dict or None
        With feature hashing, ``{column: (word, ...)}``: a sample of the words seen in
        each column (:mod:`nbclass.text.hashing`), for display.
    choice : dict or None
        How fit chose ``defaults`` by cross-validation (:meth:`.choosing.Choice.to_dict`),
        when it did.
    calibration : Calibration or None
        The calibration of ``defaults``' probabilities fitted with the choice; it applies
        only when a command scores with the defaults unchanged.
    typicality : dict or None
        The training documents' out-of-fold per-token evidence (:mod:`nbclass.models.novelty`);
        saved only while it still describes the counts and defaults.
    exit_codes : dict or None
        ``{class: exit code}`` of ``predict --exit-code``, classes no longer in the counts
        included (:mod:`nbclass.models.exitcodes`); None: 10, 11, ... in sorted order.
    sample : Ledger or None
        The documents the choice is made on (:mod:`nbclass.counting.sketch`), as ledger rows
        over :attr:`counts`' classes and vocabulary, when the settings were chosen (``fit
        --model auto``); every change of the counts chooses again from it
        (:func:`with_choice`).
    sample_short : int
        How many documents the sample lost to unlearning without a ledger (0: it is the
        sample of the documents counted, exactly).
    multi_label : dict or None
        For a multi-label model (whose classes are label sets,
        :mod:`nbclass.models.multilabel`), its labels, candidates, and the calibrations and
        thresholds chosen from its sample (:func:`nbclass.models.multilabel.record`).
    scoring_only : bool
        Read for scoring alone (:func:`nbclass.modelfile.textfile.loads`): its ledger and
        sample were not read (None here whatever the file keeps), so it cannot be saved.
    """

    counts: Counts
    tokenizer: TokenizerSettings
    vocabulary_filter: VocabularyFilter = field(default_factory=VocabularyFilter)
    defaults: EstimatorSettings = DEFAULTS
    selection: dict | None = None
    ledger: Ledger | None = None
    column_words: dict[str, tuple[str, ...]] | None = None
    choice: dict | None = None
    calibration: Calibration | None = None
    typicality: dict | None = None
    exit_codes: dict[str, int] | None = None
    sample: Ledger | None = None
    sample_short: int = 0
    multi_label: dict | None = None
    scoring_only: bool = False

    @property
    def codes(self) -> dict[str, int]:
        """The exit code of every class this model has had (:mod:`.exitcodes`)."""
        return exitcodes.effective(self.exit_codes, self.counts.classes)

    def display(self, token: str) -> str:
        """How to show a vocabulary entry: the word, or a hashed column's sampled words."""
        if self.column_words is None:
            return token
        return "|".join(self.column_words.get(token, ())) or token

    @cached_property
    def active_rows(self) -> np.ndarray:
        """Sorted indices of the words of :attr:`counts` the vocabulary filter keeps
        (computed once: saving and loading a model want them three times)."""
        return self.vocabulary_filter.rows(self.counts, self.tokenizer.symbol_entries)

    @cached_property
    def active_counts(self) -> Counts:
        """The counts restricted to the words the vocabulary filter keeps."""
        rows = self.active_rows
        if rows.size == len(self.counts.vocabulary):
            return self.counts
        return self.counts.restrict(rows)

    @cached_property
    def prepared(self) -> Prepared | None:
        """The numbers of the default settings that depend on every count (fitted β, ...).

        Computed from the active counts; a loaded model takes them from its file's header,
        where every write stores them (:mod:`nbclass.modelfile.textfile`).
        """
        return prepare(self.active_counts, self.defaults)


def fit(
    corpus: Corpus,
    tokenizer: TokenizerSettings | None = None,
    vocabulary_filter: VocabularyFilter | None = None,
    defaults: EstimatorSettings | None = None,
    jobs: int = 1,
    on_progress: Callable[[int, int], None] | None = None,
    ledger: bool = False,
    cluster: Callable[..., tuple] | None = None,
) -> Model:
    """Fit a model on a labelled corpus, counting on ``jobs`` processes.

    With ``ledger``, the model also keeps every document's ledger entry. With
    ``cluster``, a counting function of a Dask cluster
    (:func:`nbclass.cluster.remote.counter`), the counting runs on that cluster
    (:func:`nbclass.counting.counts.count_corpus`); the model is the same, bit for bit.

    Raises
    ------
    NbclassError
        When no token is found, or the vocabulary filter keeps no word.
    """
    tokenizer = tokenizer or TokenizerSettings()
    make_tokenizer(tokenizer)  # validate before reading anything
    vocabulary_filter = (vocabulary_filter or VocabularyFilter()).validate()
    defaults = (defaults or DEFAULTS).validate()
    entries = EntryBook() if ledger else None
    seen = {} if tokenizer.hash_features else None
    counts = count_corpus(
        corpus.paths, corpus.labels, corpus.classes, tokenizer, jobs, on_progress, entries, seen,
        cluster=cluster,
    )
    book = None
    if entries is not None:
        book, counts = canonical(
            entries.ledger(counts.vocabulary), counts.classes, counts.vocabulary
        )
    words = None if seen is None else words_of(seen)
    model = Model(counts, tokenizer, vocabulary_filter, defaults, ledger=book, column_words=words)
    check_usable(model)
    return model


# The document frequency of the pruned candidates of a model with pairs: an entry of one
# training document (most pairs) is dropped.
PRUNE_DF = 2
#: The sizes the choice prunes each feature set to by mutual information (the entries
#: of highest I_j in each fold's training counts), where the set holds more entries:
#: a few hundred to a few thousand well-chosen words can beat the whole vocabulary on
#: corpora where most words are noise to the class (sentiment, for one).
PRUNE_MI = (1000, 3000, 10000)
#: A pruning is a candidate only where it keeps at least this many entries a class: with
#: fewer, most classes would be told apart by a handful of words, and at thousands of
#: classes each pruned candidate would cost a full scoring of the held-out documents
#: against every class for nothing (20,000 classes: 400 of the choice's 540 s of CPU).
MI_PER_CLASS = 10


def with_choice(model: Model, threads: int = 1) -> Model:
    """``model`` with the settings chosen by cross-validation on its :attr:`Model.sample`
    (:func:`nbclass.models.choosing.choose`), their table and calibration, and the
    typicality of the training documents (:mod:`nbclass.models.novelty`) measured by the
    same folds: a function of the counts and the sample alone, so that fit, update,
    merge, unlearn, sync and a Dask fit of the same documents write the same model.

    The choice scores the first ``n`` sampled documents in (digest, class) order and the
    first few of each class the sample keeps, ``n`` as many as the corpus affords
    (:func:`nbclass.models.choosing.plan`), fewer past 2,000 classes
    (:func:`nbclass.models.choosing.scored_rows`); the folds are dealt in that order.
    ``threads`` score the candidates (the result does not depend on them)."""
    model = settled_unspaced(model)
    if model.multi_label is not None:  # label by label (multilabel.py)
        from .multilabel import chosen_again

        return chosen_again(model, threads)
    from .choosing import choose, first_round_rows  # scipy: imported when it is used

    # The choice starts from the user's filter: the feature families an earlier choice
    # kept are chosen again, from the counts of every family.
    base = model.vocabulary_filter.chosen_apart
    if base is not model.vocabulary_filter:
        model = replace(model, vocabulary_filter=base)
    counts = model.active_counts
    features, second = choice_features(counts, model.tokenizer.symbol_entries,
                                       model.tokenizer.ngram_range[1] >= 2)  # fmt: skip
    X, labels, folds = _sampled(
        counts, model.sample, len(model.counts.vocabulary),
        None if counts is model.counts else model.active_rows,  # the words the filter keeps
        first_round_rows(features, second),  # the documents and folds of the first round's
    )  # fmt: skip
    choice = choose(counts, X, labels, k=folds, threads=threads, features=features,
                    second=second, offsets=True)  # fmt: skip
    if choice.features is not None or choice.top_mi is not None:
        chosen = replace(base, features=choice.features, prune_df=choice.min_df,
                         prune_mi=choice.top_mi)  # fmt: skip
        model = replace(model, vocabulary_filter=chosen)
        counts = model.active_counts
    typicality = None
    if choice.evidence is not None:
        from .novelty import evidence_settings, typicality_record

        settings = evidence_settings(choice.settings)
        typicality = typicality_record(choice.evidence, settings, counts, choice.folds)
    chosen = replace(
        model, defaults=choice.settings, choice=choice.to_dict(), calibration=choice.calibration,
        typicality=typicality,
    )  # fmt: skip
    # The chosen filter's rows and counts, made above from the counts, the filter and the
    # tokenizer, which the new model keeps: it takes them rather than making them again
    # for its file (1.18 million rows of 20 Newsgroups with pairs, their names gathered).
    for name in ("active_rows", "active_counts"):
        if name in model.__dict__:
            chosen.__dict__[name] = model.__dict__[name]
    return chosen


#: The share of the corpus's adjacent words whose pairs must have been counted for the
#: choice to score the sets with word pairs (:func:`pairs_worth_scoring`).
PAIRS_SHARE = 0.5


def pairs_worth_scoring(counts: Counts, sets, symbols: bool | str = False) -> bool:
    """Whether the choice scores the feature sets with word pairs: where the pairs counted
    number at least :data:`PAIRS_SHARE` of the corpus's pairs of adjacent words. A fit
    counting the pairs of short documents only (``ngram_doc_limit``) has them for most
    of a corpus of short texts and for few of a corpus of long documents (20 Newsgroups,
    1 % of its pairs), where scoring them would cost the second round and choose among
    features most documents do not have. From the counts alone: P the tokens of the
    pair rows, W those of the word rows and N the documents; a document of n words holds
    n − 1 pairs, so the corpus W − N. True where no set has pairs, or the scripts written
    without spaces are counted (their character pairs are a tokenization of their own,
    counted in every document).

    >>> from nbclass.counting.counts import Counts
    >>> sets = [("words",), ("words", "pairs")]
    >>> one = np.array([[1], [1], [1]])  # "a b": the words a, b and the pair "a b"
    >>> pairs_worth_scoring(Counts(("x",), ("a", "a b", "b"), np.array([1]), one, one), sets)
    True
    >>> two = np.array([[2], [1], [2]])  # and "a b a b" (3 pairs), over the limit: none
    >>> pairs_worth_scoring(Counts(("x",), ("a", "a b", "b"), np.array([2]), two,
    ...                            np.array([[3], [1], [3]])), sets)
    False
    """
    if all(GRAM_FAMILIES.isdisjoint(names) for names in sets):
        return True
    if any("runs" in names for names in sets):
        return True
    from ..text.families import rows_of

    tokens = counts.word_tokens
    words = int(tokens[rows_of(counts.vocabulary, ("words",), symbols)].sum())
    pairs = int(tokens[rows_of(counts.vocabulary, ("pairs",), symbols)].sum())
    return pairs >= PAIRS_SHARE * (words - counts.n_docs)


def choice_features(counts: Counts, symbols: bool | str = False,
                    words_paired: bool = False) -> tuple[list | None, list]:  # fmt: skip
    """``(features, second)`` of :func:`nbclass.models.choosing.choose` for the counts of
    a model that chooses (:func:`with_choice`): its feature sets as row masks over the one
    count, with their prunings, and which of them are scored in the second round.
    ``words_paired``: the tokenizer forms word n-grams (``ngram_range`` past 1)."""
    from ..text.families import feature_sets, rows_of

    sets = feature_sets(counts.vocabulary, symbols)
    if not pairs_worth_scoring(counts, sets, symbols):
        sets = [names for names in sets if GRAM_FAMILIES.isdisjoint(names)]
    if len(sets) > 1:  # row masks over the one count, simplest first
        named = [
            (names, np.flatnonzero(rows_of(counts.vocabulary, names, symbols))) for names in sets
        ]
    else:  # one kind of token: every entry, unnamed
        named = [(None, None)]
    features = [(names, at, None, None) for names, at in named]
    # The sets with word pairs again, pruned to the entries of two documents or more
    # (not the tokenizations of unspaced scripts, whose sets are their own).
    features += [
        (names, at, PRUNE_DF, None) for names, at in named
        if names is not None and "pairs" in names and "characters" not in names
    ]  # fmt: skip
    # Every set again, pruned to its k most informative entries, where it has more and
    # k leaves MI_PER_CLASS entries a class.
    size = len(counts.vocabulary)
    features += [
        (names, at, None, k)
        for k in PRUNE_MI if k >= MI_PER_CLASS * len(counts.classes)
        for names, at in named if (size if at is None else at.size) > k
    ]  # fmt: skip
    # The sets with word pairs are scored in a second round, with the formulas that did
    # best on the others (choosing.SECOND_ROUND): their entries are many times the words'.
    # Each is scored on top of the first round's best families: its families without
    # the pairs and longer n-grams (with the symbols or without them) must be those.
    # The sets of the unspaced scripts' character pairs are their own tokenization, of
    # the first round, unless words are paired too: the family of pairs (every entry of
    # one space) then holds the word pairs as well (the multilingual corpus: 181,000
    # beside 22,000 pairs of characters).
    second = [
        tuple(name for name in names if name not in GRAM_FAMILIES)
        if names is not None and "pairs" in names and (words_paired or "characters" not in names)
        else False
        for names, _, _, _ in features
    ]  # fmt: skip
    return (features if len(features) > 1 else None), second


def _sampled(counts: Counts, sample: Ledger, width: int, columns: np.ndarray | None,
             planned: np.ndarray | None = None):  # fmt: skip
    """``(X, labels, folds)``: the sampled documents the choice scores for the corpus of
    ``counts`` (:func:`nbclass.models.choosing.plan`, on its rows ``planned`` if given,
    :func:`~.choosing.scored_rows`), their counts over the ``columns`` (sorted, None:
    all) of the sample's ``width`` words, their classes, and the folds."""
    from ..counting.csr import CSR
    from .choosing import plan, scored_rows

    documents, folds = plan(counts, rows=planned)
    part = sample.take(scored_rows(sample.labels, documents, len(counts.classes)))
    X = CSR(part.counts, part.words, part.ptr, (part.n_documents, width))
    return (X if columns is None else X[:, columns]), part.labels, folds


def settled_unspaced(model: Model) -> Model:
    """``model`` with the tokenizer its counts call for: one counted with ``unspaced="all"``
    (as fit counts at its defaults) whose vocabulary holds no character of the scripts
    written without spaces is stored with the pattern alone (None), which counts every
    such text alike: a corpus without those scripts writes the file it always did."""
    if model.tokenizer.unspaced != "all":
        return model
    from ..text.families import holds_unspaced

    if holds_unspaced(model.counts.vocabulary):
        return model
    return replace(model, tokenizer=replace(model.tokenizer, unspaced=None))


def with_sample(model: Model, sample: Ledger | None, short: int = 0, threads: int = 1) -> Model:
    """``model`` with ``sample`` (over its counts' classes and vocabulary), chosen again
    from it (:func:`with_choice`); with ``sample`` None, ``model`` as it is."""
    if sample is None:
        return model
    if short and sample.n_documents == model.counts.n_docs:
        short = 0  # every document is in the sample again: it is exact
    return with_choice(replace(model, sample=sample, sample_short=short), threads)


def with_defaults(model: Model, defaults: EstimatorSettings) -> Model:
    """``model`` with new default estimator settings; a choice and a calibration made for
    other settings are dropped with them."""
    if defaults == model.defaults:
        return model
    return replace(
        model, defaults=defaults, choice=None, calibration=None, sample=None, sample_short=0,
        vocabulary_filter=model.vocabulary_filter.chosen_apart,
    )  # fmt: skip


def with_typicality(model: Model, corpus: Corpus, policy: ReadPolicy) -> Model:
    """``model`` with the typicality of its training documents ``corpus``, read under
    ``policy`` (:func:`nbclass.models.novelty.fit_typicality`; none when a class has too
    few documents)."""
    from .novelty import fit_typicality

    counts = model.active_counts
    record = fit_typicality(counts, model.tokenizer, model.defaults, corpus, policy)
    return replace(model, typicality=record)


def check_usable(model: Model, empty: str | None = None) -> None:
    """Refuse a model with no words at all, or none left by its vocabulary filter;
    ``empty`` says why there is no word when it is not that the corpus had none."""
    counts, vocabulary_filter = model.counts, model.vocabulary_filter
    if not counts.vocabulary:
        raise NbclassError(
            empty
            or "no tokens found in the corpus: check that the documents hold text and that "
            "--token-pattern and --stop-words leave some words"
        )
    if not model.active_counts.vocabulary:
        raise NbclassError(
            f"empty vocabulary after pruning: no word is in --min-df {vocabulary_filter.min_df} "
            "documents; lower --min-df"
        )


def select_features(model: Model, k: int, settings: EstimatorSettings | None = None) -> Model:
    """A model that keeps only the ``k`` words with the highest mutual information.

    Counts are kept as they were, N_c included; the vocabulary filter is replaced by the
    selection, which is recorded in :attr:`Model.selection`.

    The calibration (the temperature and the class offsets) is fitted to scores over the
    words a model has. Where every word is kept, the model scores as it did, and keeps
    its choice, calibration and typicality. Otherwise, where ``model`` keeps its sample,
    the calibration is fitted again for the kept words (:func:`recalibrated`); the sample
    is not kept, nor the typicality (it described the evidence of every word). A model
    without a sample (one written before samples were kept) keeps its calibration as it
    was, and a multi-label model its record.
    """
    check("-k", k)
    settings = (settings or model.defaults).validate()
    counts = model.active_counts
    I = mutual_information(counts, settings)
    rows = np.sort(rank_features(I, k))
    selection = {
        "criterion": "mutual-information",
        "k": int(k),
        "estimator": settings.estimator,
        "alpha": settings.alpha,
        "beta": list(settings.beta),
        "from_vocabulary": len(counts.vocabulary),
    }
    pruned = replace(
        model,
        counts=counts.restrict(rows),
        vocabulary_filter=VocabularyFilter(),
        selection=selection,
        ledger=None,  # a pruned model's counts are no longer the sum of its documents
        sample=None,  # nor is its sample's choice to be made again
        sample_short=0,
    )
    if rows.size == len(counts.vocabulary) or model.sample is None or (
        model.multi_label is not None
    ):
        return pruned
    columns = model.active_rows[rows]
    return recalibrated(pruned, model.sample, columns, len(model.counts.vocabulary))


def recalibrated(model: Model, sample: Ledger, columns: np.ndarray, width: int) -> Model:
    """``model`` with its calibration (the temperature, and the class offsets where they
    pay) fitted again, as fit fits them for its winner: its default settings scored
    alone by :func:`nbclass.models.choosing.choose` on the documents of ``sample`` (a
    ledger over ``width`` words) that the choice of ``model``'s counts scores, counted
    over the ``columns`` that are ``model``'s words (sorted). The choice record is that
    scoring's (the settings, and them with offsets); the typicality is dropped."""
    from .choosing import choose

    counts = model.active_counts
    X, labels, folds = _sampled(counts, sample, width, columns)
    choice = choose(counts, X, labels, candidates=(model.defaults,), k=folds, offsets=True)
    return replace(model, choice=choice.to_dict(), calibration=choice.calibration,
                   typicality=None)  # fmt: skip


@dataclass(frozen=True, eq=False)
class Predictions:
    """Posterior class probabilities of a batch of documents.

    Attributes
    ----------
    sources : list of str, length n
        Where each document came from.
    classes : tuple of str, length C
    log_proba : ndarray of shape (n, C)
        log p(y = c | x); a row of −inf means every class is impossible.
    """

    sources: list[str]
    classes: tuple[str, ...]
    log_proba: np.ndarray

    @property
    def best(self) -> np.ndarray:
        """Index of the most probable class per document, shape (n,); −1 if none is possible."""
        return best_classes(self.log_proba)


def scoring_settings(
    model: Model, overrides: dict, use_calibration: bool = True
) -> tuple[EstimatorSettings, bool]:
    """``(settings, calibrate)``: what a command scores ``model`` with, given its estimator
    options and ``--no-calibration``.

    ``overrides`` are the estimator options given (``None`` = not given), as
    :func:`nbclass.models.estimators.resolve` takes them. The stored calibration applies only
    to the model's own defaults: with any option given, the formula is scored as it is.
    Give both to :class:`Classifier`.
    """
    settings = resolve(model.defaults, **overrides)
    return settings, use_calibration and not overridden(**overrides)


class Classifier:
    """Scores text with a model: the one way every command (predict, evaluate, cv,
    check, explain, export) turns a model and documents into the posterior it reports.

    ``Classifier(model)`` scores as ``nbclass predict -m MODEL`` does: the model's
    default settings, their stored calibration (if fit made one), and the class prior
    for a document with no known word (:func:`nbclass.models.chosen.reported`).

    Examples
    --------
    >>> from nbclass.counting.counts import CountAccumulator
    >>> from nbclass.text.vectorizer import count_matrix
    >>> acc = CountAccumulator(["ham", "spam"])
    >>> acc.add(count_matrix([["hi", "mum"], ["win", "cash"]], acc.vocabulary), [0, 1])
    >>> clf = Classifier(Model(acc.result(), TokenizerSettings()))
    >>> clf.classes[clf.predict(["Win cash now"]).best[0]]
    'spam'
    >>> clf.predict(["no known word"]).log_proba.tolist()  # the prior: N_c = 1, 1
    [[-0.6931471805599453, -0.6931471805599453]]
    """

    def __init__(
        self, model: Model, settings: EstimatorSettings | None = None,
        counter: TextCounter | None = None, calibrate: bool = True,
    ):  # fmt: skip
        """``settings``: the model's defaults when None. ``calibrate``: apply the model's
        stored calibration when the settings are its defaults (``False``: the formula's
        own posterior, as ``--no-calibration``; :func:`scoring_settings` says what a
        command's options ask for). ``counter``: the model's
        :class:`nbclass.text.vectorizer.TextCounter`, if one is built already
        (:func:`nbclass.modelfile.counter.load_counter`); it must hold the model's
        tokenizer settings and (used) vocabulary. Otherwise one is built when first needed
        (bulk predict's main process scores documents its workers counted, and needs
        none)."""
        self.settings = (settings or model.defaults).validate()
        defaults = self.settings == model.defaults
        self.calibration = model.calibration if calibrate and defaults else None
        counts = model.active_counts
        self.classes = counts.classes
        # The tokenizer that counts documents for it (not the symbols it leaves out).
        self.tokenizer = model.tokenizer.scoring(model.vocabulary_filter.features)
        if counter is not None:
            if counter.settings != self.tokenizer or counter.words != counts.vocabulary:
                raise ValueError("the text counter belongs to another model")
            self.counter = counter
        self.counts, self.typicality = counts, model.typicality
        # log p(c | x) of a document with no known word (shape (C,)).
        self.prior = np.array(no_evidence_posterior(counts.class_count.tolist(), self.settings))
        # The file's prepared numbers (fitted β) belong to the defaults: use them then.
        prepared = model.prepared if defaults else None
        self.scorer = make_scorer(counts, self.settings, prepared)

    @cached_property
    def counter(self) -> TextCounter:
        """The :class:`nbclass.text.vectorizer.TextCounter` of the model's tokenizer and
        (used) vocabulary."""
        return TextCounter(self.tokenizer, self.counts.vocabulary)

    @property
    def vocabulary(self) -> dict[str, int]:
        """Word -> column of the (used) vocabulary, V words."""
        return self.counter.vocabulary

    def count(self, texts: Iterable[str]) -> tuple[sp.csr_matrix, np.ndarray]:
        """``(X, n_tokens)``: the texts' counts over the vocabulary, shape (n, V), and
        their numbers of tokens, shape (n,) (:meth:`nbclass.text.vectorizer.TextCounter.count`)."""
        return self.counter.count(texts)

    def joint_log_likelihood(self, texts: Iterable[str]) -> np.ndarray:
        """b_c = log π_c + log p(x | c) per text, ndarray of shape (n, C)."""
        return self.scorer.joint_log_likelihood(self.count(texts)[0])

    def log_proba(self, X: sp.csr_matrix, jll: np.ndarray) -> np.ndarray:
        """log p(y = c | x) of documents counted as ``X`` (n, V) with scores ``jll`` (n, C):
        the softmax of the scores, calibrated when the classifier has a calibration, and
        the prior for a document with no known word."""
        return self.log_proba_of_known(np.asarray(X.sum(axis=1)).ravel(), jll)

    def log_proba_of_known(self, known: np.ndarray, jll: np.ndarray) -> np.ndarray:
        """:meth:`log_proba` of documents of ``known`` tokens in the vocabulary (n,)
        (:func:`nbclass.models.chosen.reported`)."""
        return reported(jll, known, self.calibration, self.prior)

    def predict(self, texts: Sequence[str], sources: Sequence[str] | None = None) -> Predictions:
        """Posterior probabilities of a batch of texts."""
        X = self.count(texts)[0]
        jll = self.scorer.joint_log_likelihood(X)
        if sources is None:
            sources = [str(i) for i in range(len(texts))]
        return Predictions(list(sources), self.classes, self.log_proba(X, jll))

    def predict_documents(
        self, documents: Iterable[tuple[str, str]], batch_size: int = BATCH_SIZE
    ) -> Iterator[Predictions]:
        """Predict a stream of ``(source, text)`` pairs, one batch at a time."""
        batch: list[tuple[str, str]] = []
        for document in documents:
            batch.append(document)
            if len(batch) == batch_size:
                yield self._predict_batch(batch)
                batch = []
        if batch:
            yield self._predict_batch(batch)

    def _predict_batch(self, batch: list[tuple[str, str]]) -> Predictions:
        sources = [source for source, _ in batch]
        return self.predict([text for _, text in batch], sources)
