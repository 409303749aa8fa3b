"""Scoring from sparse counts: the models layer reads D_jc and T_jc as dense ndarrays or
as CSR (V, C) matrices and gives the same numbers for both."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from nbclass.counting.counts import Counts, count_texts
from nbclass.models.choosing import fold_scores
from nbclass.models.estimators import DEFAULTS, EstimatorSettings
from nbclass.models.posterior import make_scorer
from nbclass.models.selection import class_log_ratios, mutual_information
from nbclass.models.textmodels import fit_beta, prepare
from nbclass.text.tokenizer import TokenizerSettings
from nbclass.text.vectorizer import TextCounter

# Every event model and estimator, with the transforms and the prior fit.
SETTINGS = [
    EstimatorSettings(),
    EstimatorSettings(estimator="map", alpha=2.0, beta=(2.0, 2.0)),
    EstimatorSettings(estimator="mle"),
    EstimatorSettings(estimator="predictive"),
    EstimatorSettings(model="bernoulli"),
    EstimatorSettings(model="bernoulli", estimator="map", beta=(2.0, 3.0)),
    EstimatorSettings(model="bernoulli", estimator="mle"),
    EstimatorSettings(model="complement"),
    EstimatorSettings(model="complement", class_prior=False, beta=(0.3, 0.3)),
    DEFAULTS,
    EstimatorSettings(model="complement", tf="log", idf=True, norm="both"),
    EstimatorSettings(tf="log", idf=True, norm="length", prior_fit=True),
    EstimatorSettings(norm="weight"),
    EstimatorSettings(model="dcm"),
    EstimatorSettings(model="dcm", prior_fit=True),
    EstimatorSettings(model="poisson"),
    EstimatorSettings(model="poisson", estimator="predictive"),
]
IDS = [
    "-".join([s.model, s.estimator, s.tf, "idf" * s.idf, s.norm, "fit" * s.prior_fit])
    for s in SETTINGS
]


def as_csr(counts: Counts) -> Counts:
    """The same counts with D_jc and T_jc as canonical CSR matrices."""
    return Counts(
        counts.classes, counts.vocabulary, counts.class_count,
        sp.csr_matrix(counts.doc_count), sp.csr_matrix(counts.token_count),
    )  # fmt: skip


@pytest.fixture(scope="module")
def news(news_sample):
    """Dense counts of the 20 Newsgroups sample's training split, their CSR twin, and
    the test split's documents counted over the vocabulary (with their labels)."""
    train, test = news_sample
    classes = sorted(p.name for p in train.iterdir())

    def documents(root):
        paths = sorted(p for c in classes for p in (root / c).iterdir())
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in paths]
        return texts, [classes.index(p.parent.name) for p in paths]

    tokenizer = TokenizerSettings()
    texts, labels = documents(train)
    counts = count_texts(texts, labels, classes, tokenizer)
    test_texts, test_labels = documents(test)
    X, _ = TextCounter(tokenizer, counts.vocabulary).count(test_texts)
    assert isinstance(counts.token_count, np.ndarray)  # the dense form, to compare with
    return counts, as_csr(counts), X, np.array(test_labels)


@pytest.mark.corpus
@pytest.mark.parametrize("settings", SETTINGS, ids=IDS)
def test_models_accept_sparse_counts_with_the_same_scores(news, settings):
    counts, sparse, X, _ = news
    dense_scores = make_scorer(counts, settings).joint_log_likelihood(X)
    sparse_scores = make_scorer(sparse, settings).joint_log_likelihood(X)
    assert np.isfinite(dense_scores).any()
    assert np.array_equal(dense_scores, sparse_scores)
    rows = np.unique(X[:5].indices)
    part = X[:5][:, rows]
    assert np.array_equal(
        make_scorer(counts, settings, rows=rows).joint_log_likelihood(part),
        make_scorer(sparse, settings, rows=rows).joint_log_likelihood(part),
    )
    assert prepare(counts, settings) == prepare(sparse, settings)


@pytest.mark.corpus
@pytest.mark.parametrize("model", ["multinomial", "complement", "bernoulli", "dcm"])
def test_sparse_counts_fit_the_same_beta(news, model):
    counts, sparse, _, _ = news
    assert fit_beta(counts, model) == fit_beta(sparse, model)


@pytest.mark.corpus
def test_sparse_counts_give_the_same_features_and_folds(news):
    counts, sparse, X, y = news
    settings = EstimatorSettings(prior_fit=True)
    assert np.array_equal(
        mutual_information(counts, settings), mutual_information(sparse, settings)
    )
    for model in ("multinomial", "bernoulli"):
        s = EstimatorSettings(model=model)
        assert np.array_equal(class_log_ratios(counts, s), class_log_ratios(sparse, s))
    # Cross-validation by subtraction: the test split taken as held-out documents of a
    # corpus whose counts include them.
    labels, Y = y, np.eye(4, dtype=np.int64)[y]
    held = Counts(
        counts.classes, counts.vocabulary, counts.class_count + Y.sum(axis=0),
        counts.doc_count + (X > 0).astype(np.int64).T @ Y, counts.token_count + X.T @ Y,
    )  # fmt: skip
    rows = np.arange(0, X.shape[0], 3)
    candidates = [EstimatorSettings(), DEFAULTS, EstimatorSettings(model="bernoulli")]
    fold, known, scores = fold_scores(held, X, labels, rows, candidates)
    fold_s, known_s, scores_s = fold_scores(as_csr(held), X, labels, rows, candidates)
    assert np.array_equal(fold_s.counts.token_count.toarray(), fold.counts.token_count)
    assert np.array_equal(fold_s.counts.doc_count.toarray(), fold.counts.doc_count)
    assert np.array_equal(fold_s.words, fold.words) and np.array_equal(fold_s.used, fold.used)
    assert np.array_equal(known, known_s)
    for a, b in zip(scores, scores_s):
        assert np.array_equal(a, b)
