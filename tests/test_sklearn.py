"""nbclass equals scikit-learn on a sample of 20 Newsgroups (4 groups, 60 + 30 documents each).

scikit-learn is the independent reference: same tokens (CountVectorizer with nbclass's
default pattern), same counts, and MultinomialNB / BernoulliNB with alpha = 1 and the class
prior set to nbclass's posterior-mean π = (N_c + 1) / (N + C) give the same probabilities.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.naive_bayes import BernoulliNB, MultinomialNB

from nbclass.counting.counts import as_table
from nbclass.models.estimators import EstimatorSettings
from nbclass.models.model import Classifier, fit
from nbclass.reading.corpus import list_corpus, walk_files

pytestmark = pytest.mark.corpus

ATOL = 1e-9


def read(path: str) -> str:
    return Path(path).read_bytes().decode("utf-8", errors="replace")


@pytest.fixture(scope="module")
def fitted(news_sample):
    train, test = news_sample
    corpus = list_corpus(str(train))
    model = fit(corpus)
    train_texts = [read(p) for p in corpus.paths]
    # Labels by folder: the class folder is the parent of each training file.
    train_labels = [Path(p).parent.name for p in corpus.paths]
    test_paths = walk_files(str(test))
    test_texts = [read(p) for p in test_paths]
    test_labels = [Path(p).parent.name for p in test_paths]
    vectorizer = CountVectorizer(
        token_pattern=r"(?u)\b\w\w+\b", lowercase=True, decode_error="replace"
    )
    X_train = vectorizer.fit_transform(train_texts)
    X_test = vectorizer.transform(test_texts)
    N_c = model.counts.class_count
    prior = (N_c + 1) / (N_c.sum() + len(N_c))
    return {
        "corpus": corpus,
        "model": model,
        "labels": train_labels,
        "test_texts": test_texts,
        "test_labels": test_labels,
        "vectorizer": vectorizer,
        "X_train": X_train,
        "X_test": X_test,
        "prior": prior,
    }


def test_sample_shape(fitted):
    corpus = fitted["corpus"]
    assert corpus.classes == ["alt.atheism", "comp.graphics", "sci.space", "talk.religion.misc"]
    assert fitted["model"].counts.class_count.tolist() == [60, 60, 60, 60]
    assert len(fitted["test_texts"]) == 4 * 30
    assert fitted["labels"] == [corpus.classes[i] for i in corpus.labels]


def test_vocabulary_equals_countvectorizer(fitted):
    vocabulary = fitted["model"].counts.vocabulary
    assert len(vocabulary) > 5000
    assert vocabulary == tuple(fitted["vectorizer"].get_feature_names_out().tolist())


def test_token_counts_equal_multinomialnb_feature_count(fitted):
    nb = MultinomialNB(alpha=1.0, class_prior=fitted["prior"])
    nb.fit(fitted["X_train"], fitted["labels"])
    assert tuple(nb.classes_.tolist()) == fitted["model"].counts.classes
    assert np.array_equal(nb.feature_count_, as_table(fitted["model"].counts.token_count).T)
    assert np.array_equal(nb.class_count_, fitted["model"].counts.class_count)


def test_doc_counts_equal_bernoullinb_feature_count(fitted):
    nb = BernoulliNB(alpha=1.0, binarize=0.0, class_prior=fitted["prior"])
    nb.fit(fitted["X_train"], fitted["labels"])
    assert np.array_equal(nb.feature_count_, as_table(fitted["model"].counts.doc_count).T)
    assert np.array_equal(nb.class_count_, fitted["model"].counts.class_count)


@pytest.mark.parametrize(
    ("model_name", "reference"),
    [
        ("multinomial", lambda prior: MultinomialNB(alpha=1.0, class_prior=prior)),
        ("bernoulli", lambda prior: BernoulliNB(alpha=1.0, binarize=0.0, class_prior=prior)),
    ],
)
def test_probabilities_equal_sklearn(fitted, model_name, reference):
    nb = reference(fitted["prior"]).fit(fitted["X_train"], fitted["labels"])
    X_test = fitted["X_test"]
    expected = nb.predict_proba(X_test)
    clf = Classifier(fitted["model"], EstimatorSettings(model=model_name))
    predictions = clf.predict(fitted["test_texts"])
    assert predictions.classes == tuple(nb.classes_.tolist())
    proba = np.exp(predictions.log_proba)
    np.testing.assert_allclose(proba, expected, rtol=0, atol=ATOL)
    # The joint log-likelihoods agree too (both leave out the multinomial coefficient).
    np.testing.assert_allclose(
        clf.joint_log_likelihood(fitted["test_texts"]),
        nb.predict_joint_log_proba(X_test),
        rtol=1e-10,
    )
    # Same decisions, and the decisions are informative (not a trivial agreement).
    decisions = np.searchsorted(nb.classes_, nb.predict(X_test))
    assert predictions.best.tolist() == decisions.tolist()
    truth = [predictions.classes.index(label) for label in fitted["test_labels"]]
    # Chance is 1/4; on this sample multinomial gets ~0.68 and Bernoulli ~0.46.
    assert np.mean(np.asarray(truth) == predictions.best) > 0.4
