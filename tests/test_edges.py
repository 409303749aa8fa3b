"""Edge cases through the library: empty and huge documents, unbalanced classes, MLE zeros
and ones, and the tokenizer and vectorizer rules. Expected values are literal fractions."""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest
from conftest import CHINESE, write_corpus

from nbclass.counting.counts import as_table
from nbclass.models.estimators import EstimatorSettings, log_class_prior
from nbclass.models.model import Classifier, fit
from nbclass.models.posterior import log_posterior
from nbclass.reading.corpus import list_corpus
from nbclass.text.tokenizer import TokenizerSettings, load_stop_words, make_tokenizer
from nbclass.text.vectorizer import GrowingVocabulary, count_matrix

RTOL = 1e-12
NEG_INF = -math.inf


def log(p: F) -> float:
    return NEG_INF if p == 0 else math.log(p)


def normalise(scores: list[F]) -> list[F]:
    total = sum(scores)
    return [s / total for s in scores]


def assert_posterior(log_proba_row, expected: list[F]) -> None:
    np.testing.assert_allclose(log_proba_row, [log(p) for p in expected], rtol=RTOL, atol=0)
    np.testing.assert_allclose(np.exp(log_proba_row), [float(p) for p in expected], rtol=RTOL)


@pytest.fixture
def chinese_model(chinese_corpus):
    return fit(list_corpus(str(chinese_corpus)))


MULTINOMIAL = EstimatorSettings(model="multinomial")
BERNOULLI = EstimatorSettings(model="bernoulli")
# posterior-mean, α = 1: π = (3 + 1)/(4 + 2), (1 + 1)/(4 + 2).
PI = [F(3 + 1, 4 + 2), F(1 + 1, 4 + 2)]
# posterior-mean Bernoulli, β = (1, 1): 1 − θ_jc = (N_c − D_jc + 1)/(N_c + 2), rows beijing,
# chinese, japan, macao, shanghai, tokyo.
NOT_THETA_CHINA = [F(2 + 1, 5), F(0 + 1, 5), F(3 + 1, 5), F(2 + 1, 5), F(2 + 1, 5), F(3 + 1, 5)]
NOT_THETA_JAPAN = [F(1 + 1, 3), F(0 + 1, 3), F(0 + 1, 3), F(1 + 1, 3), F(1 + 1, 3), F(0 + 1, 3)]


# ---------------------------------------------------------------------------------------------
# Empty documents and documents of unseen words


def test_empty_document_multinomial_gives_the_prior(chinese_model):
    predictions = Classifier(chinese_model, MULTINOMIAL).predict([""])
    assert_posterior(predictions.log_proba[0], PI)


def test_empty_document_multinomial_mle_gives_the_mle_prior(chinese_model):
    settings = EstimatorSettings(model="multinomial", estimator="mle")
    predictions = Classifier(chinese_model, settings).predict([""])
    assert_posterior(predictions.log_proba[0], [F(3, 4), F(1, 4)])


def test_empty_document_bernoulli_scores_absences_but_reports_the_prior(chinese_model):
    clf = Classifier(chinese_model, BERNOULLI)
    # The formula's score counts every word absent: b_c = log π_c + Σ_j log(1 − θ_jc) ...
    china = PI[0] * math.prod(NOT_THETA_CHINA)
    japan = PI[1] * math.prod(NOT_THETA_JAPAN)
    assert_posterior(log_posterior(clf.joint_log_likelihood([""]))[0], normalise([china, japan]))
    # ... but a document with no known word is no evidence: its posterior is the prior.
    assert_posterior(clf.predict([""]).log_proba[0], PI)


@pytest.mark.parametrize("settings", [MULTINOMIAL, BERNOULLI], ids=["multinomial", "bernoulli"])
def test_document_of_unseen_words_equals_the_empty_document(chinese_model, settings):
    clf = Classifier(chinese_model, settings)
    # Unseen words, one-character tokens and punctuation: nothing in the vocabulary.
    texts = ["", "Osaka Kyoto 東京 a b c !!! ...", "\x00\n\t "]
    log_proba = clf.predict(texts).log_proba
    assert log_proba[1].tolist() == log_proba[0].tolist()
    assert log_proba[2].tolist() == log_proba[0].tolist()


# ---------------------------------------------------------------------------------------------
# A very long document


def test_document_of_100000_tokens_multinomial(chinese_model):
    text = " ".join(["Chinese", "Tokyo"] * 50_000)
    clf = Classifier(chinese_model, MULTINOMIAL)
    jll = clf.joint_log_likelihood([text])[0]
    # b_c = log π_c + 50000 log θ_chinese,c + 50000 log θ_tokyo,c, Laplace θ.
    expected = [
        log(F(4, 6)) + 50_000 * log(F(5 + 1, 8 + 6)) + 50_000 * log(F(0 + 1, 8 + 6)),
        log(F(2, 6)) + 50_000 * log(F(1 + 1, 3 + 6)) + 50_000 * log(F(1 + 1, 3 + 6)),
    ]
    np.testing.assert_allclose(jll, expected, rtol=RTOL)
    log_proba = clf.predict([text]).log_proba[0]
    assert np.isfinite(log_proba).all()
    np.testing.assert_allclose(log_proba[0] - log_proba[1], expected[0] - expected[1], rtol=RTOL)
    assert np.exp(log_proba).sum() == 1.0
    # japan wins by ≈ 24000 nats: p(japan) is 1.0 and p(china) underflows to 0.0, yet its
    # log is still a finite number.
    assert log_proba[1] == 0.0


def test_document_of_100000_tokens_bernoulli(chinese_model):
    text = " ".join(["Chinese", "Tokyo"] * 50_000)
    predictions = Classifier(chinese_model, BERNOULLI).predict([text])
    # Presence only: the same as the two-word document.
    assert predictions.log_proba.tolist() == (
        Classifier(chinese_model, BERNOULLI).predict(["Chinese Tokyo"]).log_proba.tolist()
    )
    china = PI[0] * F(3 + 1, 5) * F(0 + 1, 5) * math.prod(NOT_THETA_CHINA[j] for j in (0, 2, 3, 4))
    japan = PI[1] * F(1 + 1, 3) * F(1 + 1, 3) * math.prod(NOT_THETA_JAPAN[j] for j in (0, 2, 3, 4))
    assert_posterior(predictions.log_proba[0], normalise([china, japan]))


# ---------------------------------------------------------------------------------------------
# A huge class beside a tiny one


@pytest.fixture
def unbalanced_model(tmp_path):
    root = write_corpus(
        tmp_path / "unbalanced",
        {"big": ["alpha beta"] * 500, "small": ["gamma delta"]},
    )
    return fit(list_corpus(str(root)))


def test_unbalanced_counts_and_prior(unbalanced_model):
    counts = unbalanced_model.counts
    assert counts.class_count.tolist() == [500, 1]
    assert counts.vocabulary == ("alpha", "beta", "delta", "gamma")
    assert as_table(counts.token_count).tolist() == [[500, 0], [500, 0], [0, 1], [0, 1]]
    np.testing.assert_allclose(
        log_class_prior(counts.class_count, "posterior-mean", 1.0),
        [log(F(500 + 1, 501 + 2)), log(F(1 + 1, 501 + 2))],
        rtol=RTOL,
    )
    np.testing.assert_allclose(
        log_class_prior(counts.class_count, "mle", 1.0),
        [log(F(500, 501)), log(F(1, 501))],
        rtol=RTOL,
    )


def test_unbalanced_predictions(unbalanced_model):
    clf = Classifier(unbalanced_model, MULTINOMIAL)
    predictions = clf.predict(["gamma", "alpha", "alpha gamma", ""])
    np.testing.assert_allclose(np.exp(predictions.log_proba).sum(axis=1), 1.0, rtol=0, atol=1e-12)
    # "gamma": big (500+1)/503 · (0+1)/(1000+4), small (1+1)/503 · (1+1)/(2+4).
    big = F(501, 503) * F(0 + 1, 1000 + 4)
    small = F(2, 503) * F(1 + 1, 2 + 4)
    assert_posterior(predictions.log_proba[0], normalise([big, small]))
    assert predictions.best.tolist()[:2] == [1, 0]


# ---------------------------------------------------------------------------------------------
# MLE zeros: impossible classes


@pytest.mark.parametrize("model_name", ["multinomial", "bernoulli"])
def test_mle_one_class_impossible(chinese_model, model_name):
    settings = EstimatorSettings(model=model_name, estimator="mle")
    # "beijing" never occurs in japan: θ = 0, p(japan | x) = 0 exactly.
    predictions = Classifier(chinese_model, settings).predict(["Chinese Beijing"])
    assert predictions.log_proba.tolist() == [[0.0, NEG_INF]]
    assert np.exp(predictions.log_proba).tolist() == [[1.0, 0.0]]
    assert predictions.best.tolist() == [0]


@pytest.mark.parametrize("model_name", ["multinomial", "bernoulli"])
def test_mle_every_class_impossible(chinese_model, model_name):
    settings = EstimatorSettings(model=model_name, estimator="mle")
    # beijing is unseen in japan and tokyo unseen in china: no class is possible.
    predictions = Classifier(chinese_model, settings).predict(["Beijing Tokyo", "Chinese"])
    assert predictions.log_proba[0].tolist() == [NEG_INF, NEG_INF]
    assert not np.isnan(predictions.log_proba).any()
    # "Chinese" stays possible for china (multinomial 3/4 · 5/8 against 1/4 · 1/3; Bernoulli:
    # japan needs "japan" and "tokyo", which it has in every document).
    assert predictions.best.tolist() == [-1, 0]


@pytest.fixture
def certain_word_model(tmp_path):
    # "spam" is in every document of class a (Bernoulli mle θ_spam,a = 2/2 = 1).
    root = write_corpus(
        tmp_path / "certain",
        {"a": ["spam eggs", "spam ham"], "b": ["eggs toast", "ham toast", "eggs ham"]},
    )
    return fit(list_corpus(str(root)))


def test_bernoulli_mle_theta_one_makes_a_lacking_document_impossible(certain_word_model):
    assert as_table(certain_word_model.counts.doc_count).tolist() == [
        [1, 2],
        [1, 2],
        [2, 0],
        [0, 2],
    ]
    settings = EstimatorSettings(model="bernoulli", estimator="mle")
    predictions = Classifier(certain_word_model, settings).predict(["eggs", "spam eggs"])
    # "eggs" lacks spam: impossible for a. For b: 3/5 · 2/3 · (1 − 2/3) · 1 · (1 − 2/3) > 0.
    assert predictions.log_proba[0].tolist() == [NEG_INF, 0.0]
    # "spam eggs": b never has spam (θ = 0); a: 2/5 · 1 · 1/2 · (1 − 1/2) · (1 − 0) > 0.
    assert predictions.log_proba[1].tolist() == [0.0, NEG_INF]
    assert predictions.best.tolist() == [1, 0]
    jll = Classifier(certain_word_model, settings).joint_log_likelihood(["spam eggs", "eggs"])
    np.testing.assert_allclose(
        jll,
        [
            [log(F(2, 5) * 1 * F(1, 2) * (1 - F(1, 2)) * 1), NEG_INF],
            [NEG_INF, log(F(3, 5) * F(2, 3) * (1 - F(2, 3)) * 1 * (1 - F(2, 3)))],
        ],
        rtol=RTOL,
    )


def test_bernoulli_posterior_mean_keeps_the_lacking_document_possible(certain_word_model):
    # Control for the test above: smoothing gives "eggs" a small probability of class a.
    # a: π = (2+1)/(5+2), θ = (D+1)/(2+2): eggs 2/4, ham 2/4, spam 3/4, toast 1/4.
    # b: π = (3+1)/(5+2), θ = (D+1)/(3+2): eggs 3/5, ham 3/5, spam 1/5, toast 3/5.
    predictions = Classifier(certain_word_model, BERNOULLI).predict(["eggs"])
    a = F(3, 7) * F(2, 4) * (1 - F(2, 4)) * (1 - F(3, 4)) * (1 - F(1, 4))
    b = F(4, 7) * F(3, 5) * (1 - F(3, 5)) * (1 - F(1, 5)) * (1 - F(3, 5))
    assert_posterior(predictions.log_proba[0], normalise([a, b]))


# ---------------------------------------------------------------------------------------------
# Tokenizer


def tokens(text: str, **settings) -> list[str]:
    return make_tokenizer(TokenizerSettings(**settings))(text)


def test_default_pattern_drops_one_character_tokens_and_punctuation():
    assert tokens("I am a cat, it's 2 go! x_y 42") == ["am", "cat", "it", "go", "x_y", "42"]


def test_default_lowercases_any_script():
    assert tokens("Hello WORLD Café NAÏVE Ωμέγα") == ["hello", "world", "café", "naïve", "ωμέγα"]


def test_no_lowercase_keeps_case():
    assert tokens("Hello WORLD", lowercase=False) == ["Hello", "WORLD"]


def test_ngram_range_emits_unigrams_then_bigrams():
    text = "One two THREE four"
    unigrams = ["one", "two", "three", "four"]
    bigrams = ["one two", "two three", "three four"]
    trigrams = ["one two three", "two three four"]
    assert tokens(text, ngram_range=(1, 2)) == unigrams + bigrams
    assert tokens(text, ngram_range=(2, 3)) == bigrams + trigrams
    assert tokens(text, ngram_range=(1, 3)) == unigrams + bigrams + trigrams
    assert tokens("single", ngram_range=(2, 2)) == []


def test_stop_words_are_removed_before_ngrams():
    settings = {"stop_words": ("of", "the"), "ngram_range": (1, 2)}
    expected = ["fall", "roman", "empire"] + ["fall roman", "roman empire"]
    assert tokens("The fall of the Roman empire", **settings) == expected


def test_english_stop_words():
    words, source = load_stop_words("english")
    assert source == "english"
    assert list(words) == sorted(set(words))
    assert tokens("The cat is on the mat", stop_words=words) == ["cat", "mat"]


def test_nul_is_whitespace():
    # With a pattern that would otherwise keep NUL inside a token.
    assert tokens("foo\x00bar baz", token_pattern=r"\S+") == ["foo", "bar", "baz"]
    assert tokens("foo\x00bar") == ["foo", "bar"]


# ---------------------------------------------------------------------------------------------
# Vectorizer


def test_count_matrix_with_fixed_vocabulary_ignores_unknown_words():
    vocabulary = {"apple": 0, "pear": 1}
    X = count_matrix([["pear", "kiwi", "apple", "pear"], ["kiwi"], []], vocabulary)
    assert X.shape == (3, 2)
    assert X.toarray().tolist() == [[1, 2], [0, 0], [0, 0]]
    assert X.nnz == 2  # no stored zeros
    assert X.has_sorted_indices
    assert X.dtype == np.int64
    assert vocabulary == {"apple": 0, "pear": 1}  # a fixed vocabulary is not extended


def test_count_matrix_with_growing_vocabulary_learns_words_in_order():
    vocabulary = GrowingVocabulary()
    X = count_matrix([["pear", "kiwi", "pear"], ["apple"]], vocabulary)
    assert dict(vocabulary) == {"pear": 0, "kiwi": 1, "apple": 2}
    assert X.toarray().tolist() == [[2, 1, 0], [0, 0, 1]]


def test_fit_counts_match_conftest_corpus(chinese_model):
    # The tokenizer and vectorizer together: D and T of one class add up to its documents.
    tokenize = make_tokenizer(TokenizerSettings())
    china_tokens = [t for text in CHINESE["china"] for t in tokenize(text)]
    assert int(as_table(chinese_model.counts.token_count)[:, 0].sum()) == len(china_tokens) == 8
