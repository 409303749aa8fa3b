"""Evidence p(x) for every model, and how typical a document is of the training corpus.

A generative model gives the evidence log p(x) = logsumexp_c [log π_c + log p(x | c)]
(seed 004: "can use p(x) for outlier or novelty detection"). Complement weights and
transformed counts give a posterior but no probability of the document; for them the
evidence comes from the generative multinomial of the same counts (posterior mean,
Laplace's β = 1, the model's α): :func:`evidence_settings`.

Per-token evidence. log p(x) grows more negative with every token, so documents of
different lengths are compared by e(x) = log p(x) / ℓ, ℓ the document's known tokens (its
words in the model's vocabulary; a document without one has no e(x)). Every term that
does not depend on the class is left out of log p(x) as it is left out of the scores
(the multinomial coefficient), so e(x) is comparable between documents under one model,
not between models.

Typicality. ``fit`` scores a bounded stratified sample of the training documents with
models that did not see them (cross-validation folds by count subtraction: the fold's
model is the total counts minus the fold's rows, exactly the counts of a refit without
them) and stores the percentiles 0, 1, ..., 100 of their e(x) in the model file
(:func:`typicality_record`). ``predict --min-typicality P`` then abstains with the reason
``unlike-training`` when a document's e(x) is below the P-th percentile: P = 1 lets 99 %
of documents like the training ones through.

The record is kept only while it describes the model: it names the counts it was made
from (documents, tokens, words, per class) and the evidence settings; a model updated,
merged, pruned or given other defaults loses it (:func:`record_applies`). Plain Python
where the one-document path needs it (no numpy at import).
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # the one-document path imports this module: no typing import
if TYPE_CHECKING:
    import numpy as np
    import scipy.sparse as sp

    from ..counting.counts import Counts
    from ..reading.corpus import Corpus
    from ..reading.policy import ReadPolicy
    from ..text.tokenizer import TokenizerSettings
    from .estimators import EstimatorSettings

MAX_SAMPLE = 1000  # training documents scored out of fold at fit time, at most
MAX_FOLDS = 5
PERCENTILES = tuple(range(101))


def evidence_settings(settings: EstimatorSettings) -> EstimatorSettings:
    """The settings whose scores give log p(x): ``settings`` itself when generative, else
    the multinomial posterior mean with β = 1 and the same α."""
    from .estimators import EstimatorSettings

    if settings.generative:
        return settings
    return EstimatorSettings(model="multinomial", alpha=settings.alpha).validate()


def out_of_fold_evidence(
    counts: Counts,
    X: sp.csr_matrix,
    labels: np.ndarray,
    folds: list[np.ndarray],
    settings: EstimatorSettings,
) -> np.ndarray:
    """Per-token log-evidence e(x) of sample documents, each under a model that lacks it.

    Parameters
    ----------
    counts : Counts
        The training counts (V words, C classes), the sample's documents included.
    X : csr_matrix of shape (n, V)
        Token counts of n training documents over ``counts.vocabulary``.
    labels : int ndarray of shape (n,)
        Their class indices into ``counts.classes``.
    folds : list of int ndarray
        Row indices of X, one array per fold (each row in one fold).
    settings : EstimatorSettings
        Generative settings (:func:`evidence_settings`).

    Returns
    -------
    ndarray of shape (n,)
        e(x) = log p(x) / ℓ under ``subtract(counts, fold's counts)``, the counts of the
        other documents; words only the fold had are unknown to that model, as words never
        seen are to the full one. NaN where ℓ = 0; −inf where the evidence is 0.
    """
    import numpy as np

    from ..counting.counts import Counts, count_documents, subtract
    from .posterior import log_evidence, make_scorer
    from .sparsity import column_sums

    out = np.full(X.shape[0], np.nan)
    C, V = len(counts.classes), len(counts.vocabulary)
    fast = settings.model == "multinomial" and not settings.prior_fit
    class_tokens = counts.class_tokens
    for rows in folds:
        part_X = X[rows]
        if fast:  # only the fold's words: their rows of the counts, minus the fold's
            words = np.unique(part_X.indices)
            total, part_X = counts.restrict(words), part_X[:, words]
        else:
            total = counts
        class_count, doc_count, token_count = count_documents(part_X, labels[rows], C)
        part = Counts(counts.classes, total.vocabulary, class_count, doc_count, token_count)
        rest = subtract(total, part)
        at = {w: j for j, w in enumerate(total.vocabulary)}
        Xf = part_X[:, np.array([at[w] for w in rest.vocabulary], dtype=np.int64)]
        if fast:
            jll = _multinomial_scores(
                rest, Xf, class_tokens - column_sums(token_count),
                V - (len(total.vocabulary) - len(rest.vocabulary)), settings,
            )  # fmt: skip
        else:
            jll = make_scorer(rest, settings).joint_log_likelihood(Xf)
        known = np.asarray(Xf.sum(axis=1)).ravel().astype(np.float64)
        evidence = log_evidence(jll)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[rows] = np.where(known > 0, evidence / np.maximum(known, 1), np.nan)
    return out


def _multinomial_scores(rest: Counts, X, T_c, V: int, settings: EstimatorSettings):
    """log π_c + Σ_j x_j log θ_jc of the multinomial whose counts restricted to X's columns
    are ``rest`` and whose class totals and vocabulary size are ``T_c`` and ``V``: (n, C).
    The same fractions as :func:`nbclass.models.estimators.multinomial_log_theta`."""
    import numpy as np

    from .estimators import log_class_prior, log_fraction, multinomial_fraction
    from .sparsity import dense

    T = dense(rest.token_count).astype(np.float64)
    fraction = multinomial_fraction(T, T_c.astype(np.float64), V, settings.estimator,
                                    settings.beta[0])  # fmt: skip
    log_pi = log_class_prior(rest.class_count, settings.estimator, settings.alpha)
    if not settings.class_prior:
        log_pi = np.zeros(len(log_pi))
    return np.asarray(X @ log_fraction(*fraction)) + log_pi


def sample_rows(corpus: Corpus, limit: int = MAX_SAMPLE) -> np.ndarray:
    """Indices of at most about ``limit`` documents of ``corpus``, stratified by class.

    One fold of :func:`nbclass.reading.corpus.stratified_folds` with ⌈N / limit⌉ folds (all
    documents when N <= limit); when a class is too small for that many folds, every
    document of the corpus up to ``limit``, a seeded shuffle.
    """
    import numpy as np

    from ..defaults import DEFAULT_SEED
    from ..errors import UsageError
    from ..reading.corpus import stratified_folds

    n = len(corpus.paths)
    k = -(-n // limit)
    if k < 2:
        return np.arange(n, dtype=np.int64)
    try:
        return stratified_folds(corpus, k)[0]
    except UsageError:
        rng = np.random.default_rng(DEFAULT_SEED)
        return np.sort(rng.permutation(n)[:limit])


def fit_typicality(
    counts: Counts, tokenizer: TokenizerSettings, defaults: EstimatorSettings, corpus: Corpus,
    policy: ReadPolicy,
) -> dict | None:  # fmt: skip
    """The typicality record of a model of ``counts`` (its active counts), ``tokenizer``
    and default settings ``defaults``, fitted on ``corpus``; None when a class has fewer
    than 2 documents in the sample (no fold could leave one out)."""
    import numpy as np

    from ..reading.corpus import Corpus, stratified_folds
    from ..reading.policy import ReadLog, read_document
    from ..text.vectorizer import TextCounter

    texts, kept, log = [], [], ReadLog()
    for i in sample_rows(corpus).tolist():  # the documents the fit read, as it read them
        data = read_document(corpus.paths[i], policy, log)
        if data is not None:
            texts.append(log.decode(data, policy.encoding))
            kept.append(i)
    labels = np.asarray(corpus.labels, dtype=np.int64)[np.array(kept, dtype=np.int64)]
    sizes = np.bincount(labels, minlength=len(corpus.classes))
    k = min(MAX_FOLDS, int(sizes.min()))
    if k < 2:
        return None
    X, _ = TextCounter(tokenizer, counts.vocabulary).count(texts)
    sample = Corpus(list(corpus.classes), [corpus.paths[i] for i in kept], labels.tolist())
    folds = stratified_folds(sample, k)
    settings = evidence_settings(defaults)
    try:
        values = out_of_fold_evidence(counts, X.tocsr(), labels, folds, settings)
    except ValueError:  # a document changed since it was counted: no record
        return None
    return typicality_record(values, settings, counts, k)


def fingerprint(counts: Counts) -> dict:
    """What a typicality record was made from: documents and tokens per class, words."""
    return {
        "class_count": [int(v) for v in counts.class_count.tolist()],
        "class_tokens": [int(v) for v in counts.class_tokens.tolist()],
        "words": len(counts.vocabulary),
    }


def percentiles(values: np.ndarray, q) -> np.ndarray:
    """``np.percentile(values, q)`` (its default, linear interpolation) of a 1-d float
    array without NaN, the same floats, without the ``np.unique`` inside numpy's
    (which imports numpy.ma, 7 ms of a fit): for n sorted values x and each p of ``q``,
    the virtual index v = (n − 1) · p / 100, i = ⌊v⌋ (the last value at v ≥ n − 1),
    g = v − i, and x_i + (x_{i+1} − x_i) g, or x_{i+1} − (x_{i+1} − x_i)(1 − g) where
    g ≥ ½, as numpy's steps compute them.

    >>> import numpy as np
    >>> percentiles(np.array([4.0, 1.0, 2.0, 3.0]), (0, 25, 50, 100)).tolist()
    [1.0, 1.75, 2.5, 4.0]
    """
    import numpy as np

    x = np.sort(values)
    n = x.size
    virtual = (n - 1) * np.true_divide(np.asarray(q), 100)
    previous = np.floor(virtual)
    following = previous + 1
    last = virtual >= n - 1
    previous[last] = following[last] = -1
    previous, following = previous.astype(np.intp), following.astype(np.intp)
    gamma = virtual - previous
    a, b = x[previous], x[following]
    difference = b - a
    out = a + difference * gamma
    np.subtract(b, difference * (1 - gamma), out=out, where=gamma >= 0.5)
    return out


def typicality_record(
    values: np.ndarray, settings: EstimatorSettings, counts: Counts, folds: int
) -> dict | None:
    """The header record: percentiles 0..100 of the finite values of e(x) and what they
    describe; None when no document has one."""
    import numpy as np

    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    return {
        "evidence_settings": settings.to_dict(),
        "percentiles": [float(v) for v in percentiles(finite, PERCENTILES)],
        "documents": int(finite.size),
        "folds": folds,
        "counts": fingerprint(counts),
    }


def record_applies(record, defaults: EstimatorSettings, print_: dict) -> bool:
    """Whether ``record`` (from a model file's header) describes a model of these default
    settings and counts (``print_``: :func:`fingerprint` of its active counts)."""
    from .estimators import EstimatorSettings

    try:
        settings = EstimatorSettings.from_dict(record["evidence_settings"])
        values = record["percentiles"]
        ok = len(values) == len(PERCENTILES) and all(
            isinstance(v, float) and math.isfinite(v) for v in values
        )
        ordered = all(a <= b for a, b in zip(values, values[1:]))
        return (
            ok and ordered and settings == evidence_settings(defaults)
            and record["counts"] == print_
        )  # fmt: skip
    except (KeyError, TypeError, ValueError):
        return False


def threshold(record: dict, P: float) -> float:
    """The P-th percentile of the stored e(x), linear between whole percentiles."""
    values = record["percentiles"]
    low = min(int(math.floor(P)), 99)
    return values[low] + (P - low) * (values[low + 1] - values[low])


def quick_fingerprint(class_count, class_tokens, n_used: int) -> dict:
    """:func:`fingerprint` from a model file's sections, without numpy."""
    return {
        "class_count": [int(v) for v in class_count],
        "class_tokens": [int(v) for v in class_tokens],
        "words": int(n_used),
    }


def typicality_threshold(record: dict | None, settings: EstimatorSettings, P: float) -> float:
    """The e(x) below which ``--min-typicality P`` abstains, for a model scored under
    ``settings``; :class:`UsageError` when the model has no record, or these settings
    score the evidence with another model than the record's."""
    from ..errors import UsageError
    from .estimators import EstimatorSettings

    if record is None:
        raise UsageError(
            "--min-typicality needs the training documents' typicality, which this model "
            "does not store: fit it with --typicality"
        )
    stored = EstimatorSettings.from_dict(record["evidence_settings"])
    if evidence_settings(settings) != stored:
        raise UsageError(
            "--min-typicality compares with the training documents' evidence under the "
            "model's own settings: leave out --model, --estimator, --alpha and --beta, or "
            "fit again with the settings you want"
        )
    return threshold(record, P)


def evidence_of(classifier, X, jll, known=None) -> tuple[np.ndarray, str]:
    """log p(x) per document, shape (n,), and the name of the model it comes from.

    ``jll`` (n, C) are the classifier's scores of ``X`` (n, V); when its settings are not
    generative, the multinomial of :func:`evidence_settings` scores ``X`` again (its
    scorer built once per classifier). A document with no known token (``known``, shape
    (n,), its known tokens; counted from ``X`` when not given) has log p(x) = 0.0: no
    observation, as its posterior is the prior (:func:`nbclass.models.chosen.reported`).
    """
    import numpy as np

    from .posterior import log_evidence, make_scorer

    settings = classifier.settings
    if known is None:
        known = np.asarray(X.sum(axis=1)).ravel()
    if settings.generative:
        values, name = log_evidence(jll), settings.model
    else:
        scorer = getattr(classifier, "evidence_scorer", None)
        if scorer is None:
            scorer = make_scorer(classifier.counts, evidence_settings(settings))
            classifier.evidence_scorer = scorer
        values, name = log_evidence(scorer.joint_log_likelihood(X)), "multinomial"
    values[np.asarray(known) == 0] = 0.0
    return values, name
