"""Laws on random inputs (hypothesis) that tests/test_properties.py does not cover yet.

- tokenizer: every token is a substring of the (lower-cased) text; lower-casing first
  changes nothing; text joined by a space tokenizes into the concatenation of the parts
  (single words); NUL is a separator.
- vectorizer: each row of the count matrix sums to the document's number of tokens.
- model file: write → read → write gives the same bytes, for random counts, settings and
  ledgers; the file never depends on anything but the model.
- predict: a batch's probabilities do not depend on the order of its documents, and the
  numpy-free one-document path gives what the batch path gives.

The coverage-guided fuzz targets (``make fuzz``, ``fuzz/``) run the loaders and readers on
arbitrary bytes; these tests check laws on well-formed inputs.
"""

from __future__ import annotations

import math
import os
import tempfile

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from test_properties import VOCAB, random_counts

from nbclass.modelfile.quick import QuickModel
from nbclass.modelfile.textfile import dumps, loads
from nbclass.models.estimators import EstimatorSettings
from nbclass.models.model import Classifier, Model
from nbclass.text.tokenizer import TokenizerSettings, make_tokenizer
from nbclass.text.vectorizer import GrowingVocabulary, count_matrix

FAST = settings(max_examples=80, deadline=None, database=None)

# Text with letters of many scripts, digits, punctuation, spaces and NUL.
TEXT = st.text(
    st.characters(blacklist_categories=("Cs",)) | st.sampled_from(" \t\n\x00-_.,"),
    max_size=40,
)
PATTERNS = st.sampled_from([r"(?u)\b\w\w+\b", r"(?u)\b\w+\b", r"\S+", r"[a-z]+"])


# --- tokenizer -----------------------------------------------------------------------------


@FAST
@given(TEXT, PATTERNS, st.booleans())
@example("Straße ΣΑΣ İstanbul", r"(?u)\b\w\w+\b", True)
def test_tokens_are_substrings_of_the_text(text, pattern, lowercase):
    tokenize = make_tokenizer(TokenizerSettings(lowercase=lowercase, token_pattern=pattern))
    seen = text.replace("\x00", " ")
    seen = seen.lower() if lowercase else seen
    for token in tokenize(text):
        assert token and token in seen


@FAST
@given(TEXT, PATTERNS)
@example("ΣΑΣ ΟΔΟΣ", r"(?u)\b\w\w+\b")
def test_lower_casing_first_changes_nothing(text, pattern):
    tokenize = make_tokenizer(TokenizerSettings(lowercase=True, token_pattern=pattern))
    assert tokenize(text.lower()) == tokenize(text)


@FAST
@given(st.lists(TEXT, min_size=1, max_size=4), PATTERNS, st.sampled_from([" ", "\n", "\x00"]))
def test_joined_texts_tokenize_into_the_concatenation(parts, pattern, separator):
    """Additivity, the law that lets counts of documents add up (single words only).

    Holds when no part starts or ends inside a word that the separator would cut; the
    separator is whitespace or NUL, so a token (which the patterns keep within \\S) never
    spans it. Lower-casing is per character, except the Greek final sigma, whose form
    depends on the next letter: parts with a Σ are skipped for that reason.
    """
    assume(not any("Σ" in part for part in parts))
    tokenize = make_tokenizer(TokenizerSettings(token_pattern=pattern))
    joined = tokenize(separator.join(parts))
    assert joined == [token for part in parts for token in tokenize(part)]


@FAST
@given(TEXT, TEXT)
def test_nul_separates_like_a_space(a, b):
    tokenize = make_tokenizer(TokenizerSettings())
    assert tokenize(a + "\x00" + b) == tokenize(a + " " + b)


# --- vectorizer ----------------------------------------------------------------------------


@FAST
@given(st.lists(TEXT, min_size=1, max_size=6), st.sampled_from([(1, 1), (1, 2), (2, 3)]))
def test_row_sums_are_token_counts(texts, ngram_range):
    tokenize = make_tokenizer(TokenizerSettings(ngram_range=ngram_range))
    token_lists = [tokenize(t) for t in texts]
    vocabulary = GrowingVocabulary()
    X = count_matrix(token_lists, vocabulary)
    assert X.shape == (len(texts), len(vocabulary))
    assert np.asarray(X.sum(axis=1)).ravel().tolist() == [len(t) for t in token_lists]
    # with a fixed vocabulary, a row sums to the tokens that are in it
    fixed = {word: j for j, word in enumerate(sorted(vocabulary)[::2])}
    Y = count_matrix(token_lists, fixed)
    expected = [sum(1 for token in tokens if token in fixed) for tokens in token_lists]
    assert np.asarray(Y.sum(axis=1)).ravel().tolist() == expected


# --- model file ----------------------------------------------------------------------------

SETTINGS = st.builds(
    EstimatorSettings,
    model=st.just("multinomial"),
    estimator=st.just("posterior-mean"),
    alpha=st.sampled_from([0.5, 1.0, 2.0]),
    beta=st.sampled_from([(1.0, 1.0), (0.25, 0.25)]),
) | st.builds(
    EstimatorSettings,
    model=st.just("bernoulli"),
    estimator=st.just("posterior-mean"),
    alpha=st.sampled_from([0.5, 1.0, 2.0]),
    beta=st.sampled_from([(1.0, 1.0), (0.25, 0.25), (2.0, 3.0)]),
)
TOKENIZERS = st.builds(
    TokenizerSettings,
    lowercase=st.booleans(),
    token_pattern=PATTERNS,
    ngram_range=st.sampled_from([(1, 1), (1, 2)]),
)


@FAST
@given(random_counts(), SETTINGS, TOKENIZERS)
def test_write_read_write_gives_the_same_bytes(counts, defaults, tokenizer):
    model = Model(counts, tokenizer, defaults=defaults)
    data = dumps(model)
    again = loads(data)
    assert dumps(again) == data
    assert again.counts.equals(counts) and again.defaults == defaults


def test_settings_that_cannot_load_are_never_written():
    """A writer must not make a file its own reader refuses (found by the test above)."""
    from test_modelfile import chinese_counts

    from nbclass.errors import UsageError

    bad = EstimatorSettings(model="multinomial", beta=(2.0, 3.0))
    with pytest.raises(UsageError, match="the multinomial model takes one --beta"):
        dumps(Model(chinese_counts(), TokenizerSettings(), defaults=bad))


@FAST
@given(st.lists(st.tuples(st.lists(st.sampled_from(VOCAB), max_size=5).map(" ".join),
                          st.sampled_from(["ham", "spam"])), min_size=2, max_size=8))  # fmt: skip
def test_write_read_write_of_a_ledger_model_gives_the_same_bytes(documents):
    from nbclass.models.learning import count_lines

    assume(len({label for _, label in documents}) == 2)
    tokenizer = TokenizerSettings()
    lines = [(str(i), f"{label}\t{text}") for i, (text, label) in enumerate(documents)]
    counted = count_lines(iter(lines), tokenizer, True)
    model = Model(counted.counts, tokenizer, ledger=counted.ledger)
    data = dumps(model)
    assert dumps(loads(data)) == data


# --- predict -------------------------------------------------------------------------------

TEXTS = st.lists(
    st.lists(st.sampled_from([*VOCAB, "unseen"]), max_size=6).map(" ".join),
    min_size=1,
    max_size=6,
)


@FAST
@given(random_counts(), TEXTS, SETTINGS, st.randoms(use_true_random=False))
def test_a_batch_does_not_depend_on_document_order(counts, texts, estimator, rnd):
    classifier = Classifier(Model(counts, TokenizerSettings()), estimator)
    order = list(range(len(texts)))
    rnd.shuffle(order)
    straight = classifier.predict(texts).log_proba
    shuffled = classifier.predict([texts[i] for i in order]).log_proba
    assert np.array_equal(shuffled, straight[order])
    finite = np.isfinite(straight)
    assert finite.all()  # posterior-mean: every class possible
    assert np.allclose(np.exp(straight).sum(axis=1), 1.0, rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def model_path():
    with tempfile.TemporaryDirectory() as folder:
        yield os.path.join(folder, "m.nbc")


@FAST
@given(counts=random_counts(), texts=TEXTS, estimator=SETTINGS)
def test_the_one_document_path_equals_the_batch(model_path, counts, texts, estimator):
    from nbclass.modelfile.quick import reported
    from nbclass.modelfile.textfile import save

    model = Model(counts, TokenizerSettings())
    save(model, model_path)
    quick = QuickModel(model_path)
    batch = Classifier(model, estimator).predict(texts).log_proba
    for text, row in zip(texts, batch):
        jll, known = quick.joint_log_likelihood(text, estimator), quick.known_tokens(text)[0]
        one = reported(jll, known, quick.class_count, estimator)
        assert [math.isinf(v) for v in one] == [math.isinf(v) for v in row.tolist()]
        assert one == pytest.approx(row.tolist(), rel=1e-12, abs=1e-12)
