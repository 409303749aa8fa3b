"""Feature selection by mutual information between word presence and the class.

For binary features with θ_jc = p(x_j = 1 | y = c), π_c = p(y = c) and
θ_j = p(x_j = 1) = Σ_c π_c θ_jc (seed 000, last slides; ``docs/maths.md``)::

    I_j = Σ_c [ θ_jc π_c log(θ_jc / θ_j) + (1 − θ_jc) π_c log((1 − θ_jc) / (1 − θ_j)) ]

with 0 · log 0 = 0, in nats. θ and π come from the Bernoulli estimates of the chosen
estimator; with ``mle`` I_j is the empirical mutual information between "word j present"
and the label. Under ``prior_fit`` (nbclass's default) β is the one the leave-one-out
likelihood of the Bernoulli model chooses (:func:`nbclass.models.textmodels.fit_beta`), since θ
here is a presence probability whatever the event model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..counting.counts import BLOCK_CELLS, Counts
from .estimators import (
    EstimatorSettings,
    bernoulli_fraction,
    bernoulli_fractions,
    class_prior_fractions,
)
from .sparsity import column_sums, dense, dense_cells


def mutual_information(counts: Counts, settings: EstimatorSettings) -> np.ndarray:
    """I_j for every word, ndarray of shape (V,), in nats.

    Only ``settings.estimator``, ``alpha`` and ``beta`` matter; θ is always the Bernoulli
    (presence) probability, whatever the event model. Rounding can leave a word that is
    independent of the class a hair below 0; such values are returned as 0.
    """
    from ..compiled import rel_entr

    settings = presence_settings(counts, settings)
    if not dense_cells(*counts.doc_count.shape):
        return _sparse_mutual_information(counts, settings)
    present, absent, denominator = bernoulli_fractions(
        dense(counts.doc_count), counts.class_count, settings.estimator, settings.beta
    )
    pi_numerator, pi_denominator = class_prior_fractions(
        counts.class_count, settings.estimator, settings.alpha
    )
    pi = pi_numerator / pi_denominator  # (C,)
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = np.where(denominator > 0, present / denominator, 0.0)  # (V, C)
        not_theta = np.where(denominator > 0, absent / denominator, 1.0)  # (V, C)
    theta_j = theta @ pi  # (V,)
    not_theta_j = not_theta @ pi  # (V,)
    I = (rel_entr(theta, theta_j[:, None]) + rel_entr(not_theta, not_theta_j[:, None])) @ pi
    return np.maximum(I, 0.0)


def _sparse_mutual_information(counts: Counts, settings: EstimatorSettings) -> np.ndarray:
    """:func:`mutual_information` from the nonzero pairs, memory in proportion to them.

    Off the pairs θ_jc = θ⁰_c = β_1 / (N_c + β_1 + β_0) (the estimator's fraction at
    D_jc = 0), the same for every word. With P_j the classes of word j's pairs,
    θ_j = Σ_c π_c θ⁰_c + Σ_{c ∈ P_j} π_c (θ_jc − θ⁰_c), and the classes off P_j add
    Σ_{c ∉ P_j} π_c θ⁰_c (log θ⁰_c − log θ_j) = (A − A_j) − (B − B_j) log θ_j, with
    A = Σ_c π_c θ⁰_c log θ⁰_c and B = Σ_c π_c θ⁰_c over every class and A_j, B_j over P_j
    (the same for 1 − θ). The same I_j as the dense formula to rounding.

    I_j is a function of word j's own pairs and of the class counts alone, each word's
    terms summed in the same order whatever the other words: words of the same pairs (the
    same classes and D_jc, as the words of one document of one class, D_jc = 1 for one
    c) all have one I_j, to the bit, and so do the words of no document. Each of those
    values is computed once, from one such word (:func:`_one_of_each`), the other words
    each on their own: in a fold of 20 Newsgroups with word pairs, 714,000 of the 1.04
    million entries are of one document.
    """
    from ..compiled import rel_entr, xlogy

    V, C = counts.doc_table.shape
    rows, cols = counts.nonzero
    D = counts.at_nonzero(counts.doc_table, np.float64)  # (the table as kept: no scipy)
    alike = _one_of_each(rows, cols, D, V, C)
    if alike is not None:  # the pairs of the words computed, their rows renumbered
        kept, rows, value_of = alike
        cols, D, V = cols[kept], D[kept], int(value_of.max()) + 1
    N_c = counts.class_count.astype(np.float64)
    pi_numerator, pi_denominator = class_prior_fractions(
        counts.class_count, settings.estimator, settings.alpha
    )
    pi = pi_numerator / pi_denominator  # (C,)

    def probabilities(d, n):
        present, absent, denominator = bernoulli_fraction(d, n, settings.estimator,
                                                          settings.beta)  # fmt: skip
        with np.errstate(invalid="ignore", divide="ignore"):
            return (np.where(denominator > 0, present / denominator, 0.0),
                    np.where(denominator > 0, absent / denominator, 1.0))  # fmt: skip

    theta, not_theta = probabilities(D, N_c[cols])  # at the pairs, (nnz,)
    theta0, not_theta0 = probabilities(np.zeros(C), N_c)  # off them, (C,)
    I = np.zeros(V)
    for at, at0 in ((theta, theta0), (not_theta, not_theta0)):
        weighted0 = pi * at0  # π_c θ⁰_c, (C,)
        B_j = np.bincount(rows, weights=weighted0[cols], minlength=V)
        A_j = np.bincount(rows, weights=xlogy(weighted0, at0)[cols], minlength=V)
        mean = weighted0.sum() + np.bincount(rows, weights=pi[cols] * at - weighted0[cols],
                                             minlength=V)  # θ_j, (V,)  # fmt: skip
        pairs = np.bincount(rows, weights=pi[cols] * rel_entr(at, mean[rows]), minlength=V)
        off = (xlogy(weighted0, at0).sum() - A_j) - xlogy(np.maximum(weighted0.sum() - B_j, 0.0),
                                                          mean)  # fmt: skip
        I += pairs + off
    I = np.maximum(I, 0.0)
    return I if alike is None else I[value_of]


# Words of one pair are told alike by their pair (class and D_jc) looked up in a table of
# every such pair, where it has at most this many cells (32 MB of int64); those of two
# pairs by sorting the keys of their pairs.
SIGNATURE_CELLS = 2**22


def _one_of_each(rows: np.ndarray, cols: np.ndarray, D: np.ndarray, V: int, C: int):
    """Which words :func:`_sparse_mutual_information` computes: one word of each
    signature (the classes and D_jc of its pairs, in order) among the words of one pair
    and of two (where the pairs of one fit a table of :data:`SIGNATURE_CELLS`) and of
    none, and every other word. ``(kept, rows, value_of)``: the pairs of the words
    computed (bool, (nnz,)), their rows renumbered in order, and the renumbered row whose
    I_j is each word's (V,); None where fewer than a quarter of the words are alike
    (every word is computed). Movie reviews with pairs (2 classes): a fold's 390,000
    entries hold 34 signatures of one pair and 2,600 of two, where the words of one
    document (D_jc = 1, one class) left 162,000 to compute."""
    n_pairs = np.bincount(rows, minlength=V)
    first = np.cumsum(n_pairs)
    first -= n_pairs  # each word's first pair
    d = D.astype(np.int64)
    width = int(d.max(initial=0)) + 1  # the values of D_jc, 0 to the largest
    one = np.flatnonzero(n_pairs == 1)
    groups = []  # (words, the word whose I_j each takes)
    if C * width <= SIGNATURE_CELLS and np.array_equal(d, D):
        at = first[one]
        key = cols[at].astype(np.int64) * width + d[at]
        word_of = np.full(C * width, -1, dtype=np.int64)
        word_of[key] = one  # (whichever is written last: they are alike)
        groups.append((one, word_of[key]))
        two = np.flatnonzero(n_pairs == 2)
        if two.size:
            at = first[two]
            key = (cols[at].astype(np.int64) * width + d[at]) * (C * width)
            key += cols[at + 1].astype(np.int64) * width + d[at + 1]
            _, where, inverse = np.unique(key, return_index=True, return_inverse=True)
            groups.append((two, two[where][inverse.ravel()]))
    else:  # the words of one document (D_jc = 1) of each class alone
        one = one[D[first[one]] == 1]
        word_of = np.full(C, -1, dtype=np.int64)
        word_of[cols[first[one]]] = one
        groups.append((one, word_of[cols[first[one]]]))
    empty = np.flatnonzero(n_pairs == 0)
    if sum(words.size for words, _ in groups) + empty.size < max(V // 4, 1):
        return None
    own = n_pairs > 0
    for words, word in groups:
        own[words] = False
        own[word] = True
    if empty.size:
        own[empty[0]] = True
    renumbered = np.cumsum(own)
    renumbered -= 1
    value_of = np.where(own, renumbered, 0)
    for words, word in groups:
        value_of[words] = renumbered[word]
    if empty.size:
        value_of[empty] = renumbered[empty[0]]
    kept = own[rows]
    return kept, renumbered[rows[kept]], value_of


def presence_settings(counts: Counts, settings: EstimatorSettings) -> EstimatorSettings:
    """``settings`` with the presence probabilities' β: fitted for bernoulli under prior_fit."""
    if not settings.prior_fit:
        return settings
    from .textmodels import fit_beta

    beta = fit_beta(counts, "bernoulli")
    return replace(settings, beta=(beta, beta), prior_fit=False)


@dataclass(frozen=True)
class RankedFeature:
    """One word of a mutual-information ranking."""

    word: str
    mi: float
    label: str


def top_features(counts: Counts, settings: EstimatorSettings, k: int) -> list[RankedFeature]:
    """The ``k`` words with the highest I_j, best first (ties: alphabetical).

    Each comes with the class it points to most: the class with the highest θ_jc, i.e. the
    class whose posterior rises most when the word is present (θ_jc / θ_j is the lift).
    """
    settings = presence_settings(counts, settings)
    I = mutual_information(counts, settings)
    rows = rank_features(I, k)
    present, _, denominator = bernoulli_fractions(
        dense(counts.doc_count, rows), counts.class_count, settings.estimator, settings.beta
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = np.where(denominator > 0, present / denominator, 0.0)
    best = theta.argmax(axis=1)
    return [
        RankedFeature(counts.vocabulary[j], float(I[j]), counts.classes[c])
        for j, c in zip(rows.tolist(), best.tolist())
    ]


def rank_features(I: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest values of ``I``, largest first; ties keep index order.

    When ``k`` is a part of ``I``, only the values above the k-th largest are sorted
    (found by a partition), and those tied with it follow them in index order: the same
    indices as a stable sort of them all, which orders ties by index (the choice's
    ranking of a fold's 33,000 entries of movie reviews for its 10,000 best: 1.4 ms
    sorted whole).

    >>> rank_features(np.array([0.5, 2.0, 0.5, 1.0, 0.5, 0.1]), 3).tolist()
    [1, 3, 0]
    """
    minus = -I
    if 0 < k < minus.size:
        kth = np.partition(minus, k - 1)[k - 1]
        if not np.isnan(kth):
            better = np.flatnonzero(minus < kth)  # fewer than k
            tied = np.flatnonzero(minus == kth)  # at least the k − |better| left
            return np.concatenate(
                [better[np.argsort(minus[better], kind="stable")], tied[: k - better.size]]
            )
    order = np.argsort(minus, kind="stable")
    return order[:k]


#: The estimates the pruning by mutual information ranks with: word presence under the
#: posterior mean with β = 1 (and α = 1 for π), whatever the model's own settings, so
#: that the kept entries are a function of the counts alone.
PRUNE_MI_SETTINGS = EstimatorSettings()


def pruning_information(counts: Counts) -> np.ndarray:
    """I_j of every entry of ``counts`` under :data:`PRUNE_MI_SETTINGS`, shape (V,), as the
    pruning by mutual information ranks them: always from the nonzero pairs
    (:func:`_sparse_mutual_information`, the dense formula's values to rounding, in time
    and memory of the pairs), so that entries with the same counts tie exactly."""
    return _sparse_mutual_information(counts, PRUNE_MI_SETTINGS)


def informative_rows(counts: Counts, k: int) -> np.ndarray:
    """Sorted indices of the ``k`` entries of ``counts`` with the highest mutual
    information I_j between their presence and the class (:func:`pruning_information`);
    ties go to the earlier entry, as ``select-features`` ranks them. Every entry when
    there are at most ``k``."""
    if len(counts.vocabulary) <= k:
        return np.arange(len(counts.vocabulary))
    return np.sort(rank_features(pruning_information(counts), k))


# --- Per-class features: the words that most favour each class -----------------------------


#: How ``top-features --per-class`` ranks a class's words (``--rank-by``): the name, which
#: is also the JSON key of the number printed.
CLASS_CRITERIA = ("z", "log_ratio")


@dataclass(frozen=True)
class ClassFeature:
    """One word of a class's ranking and its number under ``criterion`` (one of
    :data:`CLASS_CRITERIA`): the z-score of the shrunk log-odds, or log θ_jc − log θ_j,rest
    (nats)."""

    label: str
    word: str
    value: float
    criterion: str = "z"


def class_log_ratios(counts: Counts, settings: EstimatorSettings) -> np.ndarray:
    """log θ_jc − log θ_j,rest for every word and class, ndarray of shape (V, C).

    "rest" is every other class pooled: its counts are the totals minus class c's.
    θ is the event model's word probability under ``settings.estimator`` and β:

    - bernoulli: p(word j present | c) = (D_jc + β_1) / (N_c + β_1 + β_0) (posterior mean),
      against (D_j − D_jc + β_1) / (N − N_c + β_1 + β_0);
    - every other model: p(a token is word j | c) = (T_jc + β) / (T_c + Vβ), against
      (T_j − T_jc + β) / (T − T_c + Vβ), on raw counts (--tf, --idf and --norm do not
      apply; complement's weights are this ratio's "rest" half).

    Under ``prior_fit`` β is the one the leave-one-out likelihood of that event model
    chooses. A positive value is the log-odds a word adds to class c against the rest each
    time it occurs (bernoulli: when it is present). Under ``mle`` a word never seen outside
    c has +inf, one never seen in c −inf (also when it is seen nowhere).
    """
    from .estimators import log_fraction, multinomial_fraction

    bernoulli = settings.model == "bernoulli"
    if settings.prior_fit:
        from .textmodels import fit_beta

        beta = fit_beta(counts, "bernoulli" if bernoulli else "multinomial")
        settings = replace(settings, beta=(beta, beta), prior_fit=False)
    if bernoulli:
        D = dense(counts.doc_count).astype(np.float64)
        N_c = counts.class_count.astype(np.float64)
        inside, _, inside_total = bernoulli_fraction(D, N_c, settings.estimator, settings.beta)
        rest, _, rest_total = bernoulli_fraction(
            D.sum(axis=1, keepdims=True) - D, N_c.sum() - N_c, settings.estimator, settings.beta
        )
    else:
        T = dense(counts.token_count).astype(np.float64)
        V, T_c, beta = T.shape[0], T.sum(axis=0), settings.beta[0]
        inside, inside_total = multinomial_fraction(T, T_c, V, settings.estimator, beta)
        rest, rest_total = multinomial_fraction(
            T.sum(axis=1, keepdims=True) - T, T_c.sum() - T_c, V, settings.estimator, beta
        )
    log_inside = log_fraction(inside, np.broadcast_to(inside_total, inside.shape))
    log_rest = log_fraction(rest, np.broadcast_to(rest_total, rest.shape))
    with np.errstate(invalid="ignore"):
        out = log_inside - log_rest
    out[np.isneginf(log_inside)] = -np.inf  # never in c: it favours c in no way
    return out


def class_z_scores(counts: Counts) -> np.ndarray:
    """z_jc, the z-score of word j's log-odds in class c against the rest, shrunk towards the
    corpus by an informative Dirichlet prior (Monroe, Colaresi & Quinn 2008), ndarray of
    shape (V, C).

    With D_jc the documents of class c that contain word j, D_c = Σ_j D_jc, D_j = Σ_c D_jc,
    D = Σ_j D_j, and the informative prior γ_j = D_j (the corpus itself, weighing as much
    as the data; γ_0 = Σ_j γ_j = D)::

        δ_jc = log (D_jc + γ_j) / (D_c + γ_0 − D_jc − γ_j)
             − log (D_j − D_jc + γ_j) / (D − D_c + γ_0 − (D_j − D_jc) − γ_j)
        σ²_jc = 1 / (D_jc + γ_j) + 1 / (D_j − D_jc + γ_j)
        z_jc = δ_jc / σ_jc

    "rest" pools every other class. Dividing by σ, the standard error of δ, is what keeps
    a word seen in a handful of documents from leading: its δ may be large, its σ is
    larger. Documents, not tokens: a uuencoded file repeats its junk thousands of times in
    one document. Only the counts matter, not the estimator, β or event model. A word seen
    nowhere gets −inf (it favours no class); a vocabulary of one word, 0 (nothing to
    contrast).

    Word a, in 3 documents of class x and none of y: δ = log 6/3 − log 3/3 = log 2 and
    σ² = 1/6 + 1/3, so z = log 2 · √2:

    >>> from nbclass.counting.counts import Counts
    >>> D = np.array([[3, 0], [1, 1]])
    >>> counts = Counts(("x", "y"), ("a", "b"), np.array([3, 1]), D, 2 * D)
    >>> z = class_z_scores(counts)
    >>> round(float(z[0, 0]), 6), round(float(z[0, 1]), 6), round(float(np.log(2) * np.sqrt(2)), 6)
    (0.980258, -0.980258, 0.980258)
    """
    D_c = column_sums(counts.doc_count).astype(np.float64)
    return _z_scores(dense(counts.doc_count).astype(np.float64), D_c)


def _z_scores(D_jc: np.ndarray, D_c: np.ndarray) -> np.ndarray:
    """:func:`class_z_scores` of some rows: D_jc (R, C) float64, D_c (C,) over the whole
    table; z (R, C), every cell set (z is nonzero in every cell: no sparse form)."""
    D_j = D_jc.sum(axis=1, keepdims=True)  # (R, 1)
    D = D_c.sum()
    gamma, gamma_0 = D_j, D  # the informative prior: the corpus's own counts
    rest = D_j - D_jc  # (R, C)
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = (
            np.log(D_jc + gamma)
            - np.log(D_c + gamma_0 - D_jc - gamma)
            - np.log(rest + gamma)
            + np.log(D - D_c + gamma_0 - rest - gamma)
        )
        z = delta / np.sqrt(1.0 / (D_jc + gamma) + 1.0 / (rest + gamma))
    z[np.isnan(z)] = 0.0  # one word in the vocabulary: both odds are x / 0
    z[D_j[:, 0] == 0] = -np.inf
    return z


def class_top_features(
    counts: Counts, settings: EstimatorSettings, k: int, criterion: str = "z"
) -> list[ClassFeature]:
    """The ``k`` words with the largest :func:`class_z_scores` (``criterion`` "z") or
    :func:`class_log_ratios` ("log_ratio") of each class, class by class (in the counts'
    order), best first; ties keep vocabulary (alphabetical) order."""
    if criterion == "z":
        return _top_z(counts, k)
    if criterion != "log_ratio":
        raise ValueError(f"criterion must be one of {CLASS_CRITERIA}, not {criterion!r}")
    values = class_log_ratios(counts, settings)
    out = []
    for c, label in enumerate(counts.classes):
        for j in rank_features(values[:, c], k).tolist():
            out.append(ClassFeature(label, counts.vocabulary[j], float(values[j, c]), criterion))
    return out


def _top_z(counts: Counts, k: int) -> list[ClassFeature]:
    """:func:`class_top_features` by z, a block of rows at a time: the candidates kept are
    each class's best ``k`` so far (with any ties at the k-th value), so memory stays at a
    block's cells plus k per class, not V × C (a model with word pairs has millions of
    rows). The same words and numbers as ranking :func:`class_z_scores` whole."""
    table = counts.doc_count
    V, C = table.shape
    D_c = column_sums(table).astype(np.float64)
    kept_rows = [np.empty(0, dtype=np.int64) for _ in range(C)]
    kept_z = [np.empty(0, dtype=np.float64) for _ in range(C)]
    step = max(1, BLOCK_CELLS // max(C, 1))
    for start in range(0, V, step):
        stop = min(V, start + step)
        z = _z_scores(dense(table, slice(start, stop)).astype(np.float64), D_c)  # (R, C)
        rows = np.arange(start, stop, dtype=np.int64)
        for c in range(C):
            values = np.concatenate([kept_z[c], z[:, c]])
            where = np.concatenate([kept_rows[c], rows])
            if values.size > k:  # keep the k largest and whatever ties the k-th
                kth = np.partition(values, values.size - k)[values.size - k]
                keep = values >= kth
                values, where = values[keep], where[keep]
            kept_z[c], kept_rows[c] = values, where
    out = []
    for c, label in enumerate(counts.classes):
        order = np.lexsort((kept_rows[c], -kept_z[c]))[:k]  # best first; ties: row order
        for j, value in zip(kept_rows[c][order].tolist(), kept_z[c][order].tolist()):
            out.append(ClassFeature(label, counts.vocabulary[j], value, "z"))
    return out
