"""Laws the maths guarantees, checked on random inputs with hypothesis.

- counts are additive: merge(counts(A), counts(B)) == counts(A ∪ B), and subtract undoes it;
- counts do not depend on document order or on how documents are batched;
- T_jc and D_jc are what their definitions say (a Counter over the documents);
- posterior probabilities are never NaN and sum to one, or the document is impossible for
  every class (all −inf, best == −1);
- log_posterior is invariant under adding a constant to a row, and handles the edges exactly.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbclass.counting.counts import CountAccumulator, Counts, as_table, merge, subtract
from nbclass.models.estimators import ESTIMATORS, EstimatorSettings
from nbclass.models.model import Classifier, Model
from nbclass.models.posterior import log_evidence, log_posterior
from nbclass.text.tokenizer import TokenizerSettings
from nbclass.text.vectorizer import count_matrix

FAST = settings(max_examples=60, deadline=None, database=None)

WORD = st.sampled_from(["ant", "bee", "cat", "dog", "eel", "fox", "gnu"])
LABEL = st.sampled_from(["ham", "spam", "eggs"])
DOCUMENT = st.lists(WORD, max_size=6)
LABELLED = st.tuples(DOCUMENT, LABEL)
CORPUS = st.lists(LABELLED, min_size=1, max_size=8)


def counts_of(documents: list[tuple[list[str], str]], batch_size: int | None = None) -> Counts:
    """Counts of labelled token lists through CountAccumulator + count_matrix."""
    classes = sorted({label for _, label in documents})
    at = {c: i for i, c in enumerate(classes)}
    accumulator = CountAccumulator(classes)
    size = batch_size or len(documents)
    for start in range(0, len(documents), size):
        batch = documents[start : start + size]
        X = count_matrix([tokens for tokens, _ in batch], accumulator.vocabulary)
        accumulator.add(X, [at[label] for _, label in batch])
    return accumulator.result()


@FAST
@given(CORPUS, CORPUS)
def test_counts_are_additive(a, b):
    merged = merge(counts_of(a), counts_of(b))
    whole = counts_of(a + b)
    assert merged.equals(whole)
    assert merged.problems() == []


@FAST
@given(
    st.lists(LABELLED, min_size=1, max_size=8).flatmap(
        lambda docs: st.tuples(st.just(docs), st.permutations(docs))
    )
)
def test_counts_do_not_depend_on_document_order(pair):
    documents, shuffled = pair
    assert counts_of(documents).equals(counts_of(shuffled))


@FAST
@given(CORPUS, st.integers(min_value=1, max_value=3))
def test_counts_do_not_depend_on_batching(documents, batch_size):
    assert counts_of(documents, batch_size).equals(counts_of(documents))


@FAST
@given(CORPUS)
def test_counts_match_their_definitions(documents):
    counts = counts_of(documents)
    assert counts.vocabulary == tuple(sorted({w for tokens, _ in documents for w in tokens}))
    for c, label in enumerate(counts.classes):
        in_class = [tokens for tokens, y in documents if y == label]
        assert counts.class_count[c] == len(in_class)
        tokens_c = Counter(w for tokens in in_class for w in tokens)
        docs_c = Counter(w for tokens in in_class for w in set(tokens))
        for j, word in enumerate(counts.vocabulary):
            assert as_table(counts.token_count)[j, c] == tokens_c[word]  # T_jc: tokens
            assert as_table(counts.doc_count)[j, c] == docs_c[word]  # D_jc: documents
    assert counts.n_docs == len(documents)
    assert counts.problems() == []


# ---------------------------------------------------------------------------------------------
# Probabilities for random consistent counts, every estimator and event model

VOCAB = ("ant", "bee", "cat", "dog", "eel")


@st.composite
def random_counts(draw) -> Counts:
    C = draw(st.integers(min_value=2, max_value=3))
    V = draw(st.integers(min_value=1, max_value=len(VOCAB)))
    class_count = np.array(draw(st.lists(st.integers(0, 4), min_size=C, max_size=C)))
    doc_count = np.zeros((V, C), dtype=np.int64)
    token_count = np.zeros((V, C), dtype=np.int64)
    for c in range(C):
        for j in range(V):
            d = draw(st.integers(0, int(class_count[c])))
            doc_count[j, c] = d
            token_count[j, c] = d + (draw(st.integers(0, 3)) if d else 0)
    counts = Counts(
        classes=tuple(f"class{c}" for c in range(C)),
        vocabulary=VOCAB[:V],
        class_count=class_count.astype(np.int64),
        doc_count=doc_count,
        token_count=token_count,
    )
    assert counts.problems() == []
    return counts


def pseudo_counts(estimator: str):
    if estimator == "map":
        return st.sampled_from([1.0, 1.5, 2.0])
    # mle ignores them; posterior-mean takes any positive value
    return st.sampled_from([0.01, 0.5, 1.0, 2.0])


TEXTS = st.lists(
    st.lists(st.sampled_from([*VOCAB, "unseen"]), max_size=6).map(" ".join),
    min_size=1,
    max_size=5,
)


@pytest.mark.parametrize("estimator_name", ESTIMATORS)
@pytest.mark.parametrize("model_name", ["multinomial", "bernoulli"])
@settings(max_examples=30, deadline=None, database=None)
@given(data=st.data())
def test_probabilities_sum_to_one_or_document_is_impossible(model_name, estimator_name, data):
    counts = data.draw(random_counts())
    texts = data.draw(TEXTS)
    alpha = data.draw(pseudo_counts(estimator_name))
    beta1 = data.draw(pseudo_counts(estimator_name))
    beta0 = beta1 if model_name == "multinomial" else data.draw(pseudo_counts(estimator_name))
    estimator = EstimatorSettings(model_name, estimator_name, alpha, (beta1, beta0)).validate()
    predictions = Classifier(Model(counts, TokenizerSettings()), estimator).predict(texts)
    log_proba = predictions.log_proba
    assert log_proba.shape == (len(texts), len(counts.classes))
    assert not np.isnan(log_proba).any()
    assert not np.isposinf(log_proba).any()
    best = predictions.best
    for i in range(len(texts)):
        row = log_proba[i]
        if np.isneginf(row).all():
            assert best[i] == -1
        else:
            assert abs(np.exp(row).sum() - 1.0) <= 1e-12
            assert 0 <= best[i] < len(counts.classes)
            assert row[best[i]] == row.max()
    if estimator.estimator == "posterior-mean":
        # Smoothing with positive pseudo-counts leaves every class possible.
        assert np.isfinite(log_proba).all()


# ---------------------------------------------------------------------------------------------
# log_posterior

JLL_ENTRY = st.one_of(
    st.floats(min_value=-50.0, max_value=50.0, allow_nan=False),
    st.just(-math.inf),
)
JLL = st.integers(min_value=1, max_value=4).flatmap(
    lambda C: st.lists(st.lists(JLL_ENTRY, min_size=C, max_size=C), min_size=1, max_size=4)
)


@FAST
@given(JLL)
def test_log_posterior_is_translation_invariant(rows):
    jll = np.array(rows)
    shifted = log_posterior(jll + 100.0)
    plain = log_posterior(jll)
    np.testing.assert_array_equal(np.isneginf(shifted), np.isneginf(plain))
    np.testing.assert_allclose(shifted, plain, rtol=0, atol=1e-12)


@FAST
@given(JLL)
def test_log_posterior_normalises_or_keeps_minus_infinity(rows):
    jll = np.array(rows)
    out = log_posterior(jll)
    assert not np.isnan(out).any()
    for i, row in enumerate(jll):
        if np.isneginf(row).all():
            assert np.isneginf(out[i]).all()
        else:
            assert abs(np.exp(out[i]).sum() - 1.0) <= 1e-12
            # −inf in, −inf out: an impossible class stays exactly impossible.
            np.testing.assert_array_equal(np.isneginf(out[i]), np.isneginf(row))


def test_log_posterior_of_large_equal_scores_is_exactly_one_half():
    out = log_posterior(np.array([[1000.0, 1000.0]]))
    assert out.tolist() == [[math.log(0.5), math.log(0.5)]]
    assert log_evidence(np.array([[1000.0, 1000.0]])).tolist() == [1000.0 + math.log(2.0)]


SCORE = st.one_of(
    st.floats(-800.0, 800.0), st.sampled_from([0.0, -0.0, 1.0, -745.5, 709.8, 1e308, -1e308,
                                               -math.inf, math.inf, math.nan]),
)  # fmt: skip


@settings(max_examples=400, deadline=None, database=None)
@given(st.integers(0, 5), st.integers(0, 40), st.data())
def test_logsumexp_rows_is_scipys_to_the_bit(n, C, data):
    """scipy.special.logsumexp(a, axis=1)'s floats, whatever the scores: ties at the top,
    rows of −inf, +inf and NaN, overflowing exps, no class or no row; C and Fortran
    order and a strided view (their sums run in other orders: scipy's and these alike)."""
    from scipy.special import logsumexp

    from nbclass.models.posterior import logsumexp_rows

    a = np.array(data.draw(st.lists(SCORE, min_size=n * C, max_size=n * C))).reshape(n, C)
    for layout in (a, np.asfortranarray(a), np.repeat(a, 2, axis=1)[:, ::2]):
        with np.errstate(all="ignore"):
            want = logsumexp(layout, axis=1)
        assert np.array_equal(logsumexp_rows(layout).view(np.int64), want.view(np.int64))


def test_logsumexp_rows_of_long_rows_in_each_layout_is_scipys():
    """Rows of 300 classes, where a sum along the rows of a Fortran-ordered array or of a
    strided view adds in another order than along C-ordered rows (45 of these 50 row
    sums of exps differ in their last bits): each layout's floats are scipy's."""
    from scipy.special import logsumexp

    from nbclass.models.posterior import logsumexp_rows

    a = np.random.default_rng(1).normal(size=(50, 300)) * 3
    for layout in (a, np.asfortranarray(a), np.repeat(a, 2, axis=1)[:, ::2]):
        want = logsumexp(layout, axis=1).view(np.int64)
        assert np.array_equal(logsumexp_rows(layout).view(np.int64), want)


def test_logsumexp_rows_by_hand():
    """Two equal largest scores (k = 2): log 2 added, nothing summed; the tail's terms
    summed and divided by k; a row of −inf gives −inf, of +inf +inf, with NaN NaN."""
    from nbclass.models.posterior import logsumexp_rows

    a = np.array([[3.0, 3.0, -np.inf], [0.0, -1.0, -1.0], [-np.inf] * 3,
                  [np.inf, 0.0, 0.0], [np.nan, 0.0, 0.0]])  # fmt: skip
    got = logsumexp_rows(a)
    assert got[0] == math.log(2.0) + 3.0
    assert got[1] == math.log1p(2 * math.exp(-1.0))
    assert got[2] == -math.inf and got[3] == math.inf and math.isnan(got[4])
    assert logsumexp_rows(np.zeros((2, 0))).tolist() == [-math.inf, -math.inf]


def test_log_posterior_of_an_impossible_document_is_minus_infinity_not_nan():
    jll = np.array([[-math.inf, -math.inf, -math.inf], [0.0, -math.inf, -math.inf]])
    out = log_posterior(jll)
    assert out.tolist() == [[-math.inf] * 3, [0.0, -math.inf, -math.inf]]
    assert log_evidence(jll).tolist() == [-math.inf, 0.0]


@FAST
@given(CORPUS, CORPUS)
def test_subtract_undoes_merge(a, b):
    """subtract(merge(A, B), B) is the fit of A alone: words only B had are dropped."""
    rest = subtract(merge(counts_of(a), counts_of(b)), counts_of(b))
    assert rest.equals(counts_of(a))


def test_subtract_refuses_what_was_never_learned():
    total = counts_of([(["hi", "mum"], "ham"), (["win", "cash"], "spam")])
    with pytest.raises(ValueError, match="never learned"):
        subtract(total, counts_of([(["hi", "hi"], "spam")]))
    with pytest.raises(ValueError, match="class 'eggs' is not in the model"):
        subtract(total, counts_of([(["hi"], "eggs")]))
    with pytest.raises(ValueError, match="word 'bye' is not in the model"):
        subtract(total, counts_of([(["bye"], "ham")]))


# A scorer made for some words only (the held-out folds of fit's choice use it) gives the
# documents that hold only those words the scores of the whole model: every total still
# covers the whole vocabulary.
SCORED_SETTINGS = [
    EstimatorSettings(model="multinomial"),
    EstimatorSettings(model="multinomial", estimator="mle"),
    EstimatorSettings(model="bernoulli"),
    EstimatorSettings(model="bernoulli", estimator="mle"),
    EstimatorSettings(model="complement", class_prior=False),
    EstimatorSettings(model="multinomial", prior_fit=True),
    EstimatorSettings(model="multinomial", tf="log", prior_fit=True),
    EstimatorSettings(model="complement", tf="log", idf=True, norm="length"),
    EstimatorSettings(model="complement", tf="log", norm="weight"),
    EstimatorSettings(model="dcm", prior_fit=True),
    EstimatorSettings(model="multinomial", estimator="predictive"),
    EstimatorSettings(model="poisson"),
    EstimatorSettings(model="poisson", estimator="predictive"),
]


@FAST
@given(CORPUS, st.lists(DOCUMENT, min_size=1, max_size=4), st.sampled_from(SCORED_SETTINGS))
def test_a_scorer_of_some_words_scores_their_documents_as_the_whole_model(
    documents, probes, estimator
):
    import scipy.sparse as sp

    from nbclass.models.posterior import make_scorer
    from nbclass.models.textmodels import prepare

    counts = counts_of(documents)
    at = {w: j for j, w in enumerate(counts.vocabulary)}
    X = sp.csr_matrix(count_matrix([[w for w in d if w in at] for d in probes], at))
    rows = np.unique(X.indices)
    prepared = prepare(counts, estimator)
    whole = make_scorer(counts, estimator, prepared).joint_log_likelihood(X)
    part = make_scorer(counts, estimator, prepared, rows=rows).joint_log_likelihood(X[:, rows])
    assert part.shape == whole.shape
    assert np.array_equal(np.isneginf(part), np.isneginf(whole))
    finite = np.isfinite(whole)
    assert np.allclose(part[finite], whole[finite], rtol=1e-12, atol=1e-12)


LINEAR_SETTINGS = [
    s
    for s in SCORED_SETTINGS
    if s.model in ("multinomial", "bernoulli", "complement") and s.estimator != "predictive"
] + [
    EstimatorSettings(model="multinomial", tf="log", idf=True, norm="both"),
    EstimatorSettings(model="complement", idf=True),
    EstimatorSettings(model="bernoulli", estimator="map", beta=(2.0, 1.0)),
]


@FAST
@given(
    CORPUS,
    st.lists(DOCUMENT, min_size=1, max_size=6),
    st.sampled_from(LINEAR_SETTINGS),
    st.integers(0, 1000),
)
def test_scores_of_nonzero_counts_are_the_sparse_products_floats(
    documents, probes, estimator, seed
):
    """A law of bulk predict's scipy-free scoring: b_c from the nonzero counts, given
    in any order, is the sparse product's, bit for bit, for every linear scorer, and a
    scorer that needs the sparse matrix says so (None)."""
    import scipy.sparse as sp

    from nbclass.models.posterior import make_scorer
    from nbclass.models.textmodels import prepare

    counts = counts_of(documents)
    at = {w: j for j, w in enumerate(counts.vocabulary)}
    X = sp.csr_matrix(count_matrix([[w for w in d if w in at] for d in probes], at))
    scorer = make_scorer(counts, estimator, prepare(counts, estimator))
    coo = X.tocoo()
    order = np.random.default_rng(seed).permutation(coo.nnz)  # the workers' any order
    from nbclass.text.vectorizer import sorted_entries

    rows, cols, values = sorted_entries(
        coo.row.astype(np.int64)[order], coo.col.astype(np.int64)[order],
        coo.data.astype(np.int64)[order], len(counts.vocabulary),
    )  # fmt: skip
    fast = scorer.entry_scores(rows, cols, values, X.shape[0])
    if scorer.required is not None:
        assert fast is None
        return
    expected = scorer.joint_log_likelihood(X)
    assert fast.shape == expected.shape
    assert fast.tobytes() == expected.tobytes()  # the same floats, signs of zero included
