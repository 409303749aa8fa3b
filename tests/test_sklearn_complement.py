"""Complement NB equals scikit-learn's ComplementNB on a sample of 20 Newsgroups.

Same tokens (CountVectorizer with nbclass's default pattern), same counts; with the
transforms off nbclass's complement model is ComplementNB(alpha=β) exactly, with
``--norm weight`` it is ComplementNB(norm=True).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.naive_bayes import ComplementNB

from nbclass.models.estimators import EstimatorSettings
from nbclass.models.model import Classifier, fit
from nbclass.reading.corpus import list_corpus, walk_files

pytestmark = pytest.mark.corpus


def read(path: str) -> str:
    return Path(path).read_bytes().decode("utf-8", errors="replace")


@pytest.fixture(scope="module")
def news(news_sample):
    train, test = news_sample
    corpus = list_corpus(str(train))
    vectorizer = CountVectorizer(
        token_pattern=r"(?u)\b\w\w+\b", lowercase=True, decode_error="replace"
    )
    X_train = vectorizer.fit_transform([read(p) for p in corpus.paths])
    test_texts = [read(p) for p in walk_files(str(test))]
    return {
        "model": fit(corpus),
        "X_train": X_train,
        "labels": [corpus.classes[i] for i in corpus.labels],
        "test_texts": test_texts,
        "X_test": vectorizer.transform(test_texts),
    }


@pytest.mark.parametrize("beta", [1.0, 0.3])
@pytest.mark.parametrize("norm", [False, True])
def test_complement_equals_complementnb(news, beta, norm):
    nb = ComplementNB(alpha=beta, norm=norm).fit(news["X_train"], news["labels"])
    settings = EstimatorSettings(
        model="complement", beta=(beta, beta), norm="weight" if norm else "none",
        class_prior=False,
    )
    classifier = Classifier(news["model"], settings)
    assert tuple(nb.classes_.tolist()) == classifier.classes
    assert np.allclose(
        classifier.scorer.weights, nb.feature_log_prob_.T, rtol=1e-12, atol=1e-15
    )
    predictions = classifier.predict(news["test_texts"])
    assert np.allclose(
        np.exp(predictions.log_proba), nb.predict_proba(news["X_test"]), rtol=1e-9, atol=1e-12
    )
    expected = np.searchsorted(nb.classes_, nb.predict(news["X_test"]))
    assert predictions.best.tolist() == expected.tolist()
