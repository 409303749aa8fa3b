"""The one-document path (no numpy) gives what the batch path gives."""

from __future__ import annotations

import math
import struct
from collections import Counter

import numpy as np
import pytest
from conftest import CHINESE_TEST
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from nbclass.modelfile import quick
from nbclass.modelfile.quick import QuickModel, reported
from nbclass.modelfile.textfile import save
from nbclass.models.estimators import DEFAULTS, EstimatorSettings
from nbclass.models.model import Classifier, VocabularyFilter, fit, select_features
from nbclass.reading.corpus import list_corpus

ESTIMATES = (  # (estimator, α, β) of every model
    ("posterior-mean", 1.0, (1.0, 1.0)),
    ("posterior-mean", 0.5, (0.25, 0.25)),
    ("map", 2.0, (2.0, 2.0)),
    ("map", 1.0, (1.0, 1.0)),
    ("mle", 1.0, (1.0, 1.0)),
)
SETTINGS = [
    EstimatorSettings(model=m, estimator=e, alpha=a, beta=b)
    for m in ("multinomial", "bernoulli")
    for e, a, b in ESTIMATES
] + [EstimatorSettings(model="bernoulli", estimator="posterior-mean", beta=(2.0, 3.0))]
SETTINGS += [
    EstimatorSettings(model="poisson", estimator=e, alpha=a, beta=b)
    for e, a, b in (
        *ESTIMATES,
        ("predictive", 1.0, (1.0, 1.0)),
        ("predictive", 1.0, (0.1, 0.1)),
    )
]


def assert_same(quick: list[float], batch: np.ndarray) -> None:
    """Equal to the last few bits: same infinities, finite values within 1e-12 relative."""
    batch = batch.tolist()
    assert [math.isinf(v) for v in quick] == [math.isinf(v) for v in batch]
    for q, b in zip(quick, batch):
        if math.isinf(b):
            assert q == b
        else:
            assert q == pytest.approx(b, rel=1e-12, abs=1e-12)


def both_paths(model, path, texts, settings):
    save(model, path)
    quick = QuickModel(path)
    batch = Classifier(model, settings)
    for text in texts:
        jll = batch.joint_log_likelihood([text])[0]
        assert_same(quick.joint_log_likelihood(text, settings), jll)
        jll, known = quick.joint_log_likelihood(text, settings), quick.known_tokens(text)[0]
        assert_same(
            reported(jll, known, quick.class_count, settings), batch.predict([text]).log_proba[0]
        )


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: f"{s.model}-{s.estimator}-{s.alpha}")
def test_chinese_corpus(chinese_corpus, tmp_path, settings):
    model = fit(list_corpus(str(chinese_corpus)))
    texts = [
        CHINESE_TEST,
        "",
        "unseen words only",
        "Chinese Macao",
        "Tokyo Japan Chinese",
        "Beijing",
    ]
    both_paths(model, str(tmp_path / "m.nbc"), texts, settings)


@pytest.mark.parametrize("settings", SETTINGS[:3] + SETTINGS[5:8] + SETTINGS[11:], ids=str)
def test_news_sample_with_a_vocabulary_filter(news_sample, tmp_path, settings):
    train, test = news_sample
    model = fit(
        list_corpus(str(train)), vocabulary_filter=VocabularyFilter(min_df=2, max_features=3000)
    )
    texts = [
        p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(test.rglob("*"))[:40]
        if p.is_file()
    ]
    both_paths(model, str(tmp_path / "m.nbc"), texts, settings)


def test_selected_model(news_sample, tmp_path):
    train, test = news_sample
    model = select_features(fit(list_corpus(str(train))), 200)
    texts = [
        p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(test.rglob("*"))[:20]
        if p.is_file()
    ]
    both_paths(model, str(tmp_path / "m.nbc"), texts, EstimatorSettings())
    both_paths(model, str(tmp_path / "m.nbc"), texts, EstimatorSettings(model="bernoulli"))


@pytest.mark.parametrize(
    "defaults",
    [DEFAULTS, EstimatorSettings(), EstimatorSettings(model="poisson", estimator="predictive")],
    ids=["defaults", "plain", "poisson-predictive"],
)
def test_quick_path_does_not_import_numpy(tmp_path, chinese_corpus, defaults):
    """nbclass's defaults (fitted β, log tf) are served from the header's prepared numbers."""
    import subprocess
    import sys

    save(fit(list_corpus(str(chinese_corpus)), defaults=defaults), str(tmp_path / "m.nbc"))
    code = (
        "import sys, io\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(b'Chinese Tokyo'))\n"
        "from nbclass.cli.app import main\n"
        "try:\n"
        f"    main(['predict', '-m', {str(tmp_path / 'm.nbc')!r}])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in ('numpy', 'scipy', 'joblib', 'rich') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.splitlines()[-1] == "[]"
    assert result.stdout.splitlines()[0].startswith("-\tchina\t")


# --- the word search and the one-pass sums ----------------------------------------------------


@pytest.fixture(scope="module")
def news_model(news_sample, tmp_path_factory) -> tuple[QuickModel, list[str]]:
    """A model of the news sample (some words unused by a vocabulary filter) and its
    vocabulary, in the file's order."""
    train, _ = news_sample
    model = fit(list_corpus(str(train)), vocabulary_filter=VocabularyFilter(min_df=2))
    path = str(tmp_path_factory.mktemp("quick") / "news.nbc")
    save(model, path)
    return QuickModel(path), list(model.counts.vocabulary)


@pytest.mark.parametrize("block", [1, 2, 7, 512, 10**6])
@hypothesis_settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_the_word_search_finds_the_used_words_a_dictionary_finds(
    news_model, block, data, monkeypatch
):
    """Whatever the block size, the two-step binary search gives the (j, x_j) of a plain
    dictionary of the vocabulary: words of the vocabulary (the first, the last, used or
    not), and tokens that fall before, between and after them."""
    monkeypatch.setattr(quick, "_BLOCK", block)
    model, vocabulary = news_model
    index = {word: j for j, word in enumerate(vocabulary)}
    words = st.sampled_from(
        [vocabulary[0], vocabulary[-1], *vocabulary[:: max(1, len(vocabulary) // 300)]]
    )
    others = st.sampled_from(["aa", "zzzzzz", "00", "__", "space_", "héllo", "東京", "ab12"])
    tokens = data.draw(st.lists(st.one_of(words, others), max_size=30))
    text = " ".join(tokens)
    model._last = None
    expected = Counter(
        t
        for t in model.tokenize(text)
        if t in index and model.used[index[t] >> 3] >> (index[t] & 7) & 1
    )
    assert model._rows(text) == sorted((index[t], n) for t, n in expected.items())


finite = st.floats(-1e6, 1e6, allow_nan=False)


@given(
    rows=st.lists(
        st.tuples(
            finite,
            finite,
            st.one_of(st.floats(-5, 1e6), st.just(0.0)),
            st.one_of(finite, st.none()),
        ),
        min_size=1,
        max_size=8,
    ),
    factor=st.one_of(finite, st.integers(-50, 50)),
)
def test_the_one_pass_sum_is_the_listed_one_to_the_bit(rows, factor):
    """score + factor · log_ratio, in one pass or through the list of ratios: the same
    floats, bit for bit, with zero and negative numerators and unknown denominators."""
    scores, _, numerators, log_denominators = map(list, zip(*rows))
    weights = quick._log_ratios(numerators, log_denominators)
    listed = [score + factor * w for score, w in zip(scores, weights)]
    one_pass = quick._add_log_ratios(scores, factor, numerators, log_denominators)
    assert [struct.pack("<d", v) for v in one_pass] == [struct.pack("<d", v) for v in listed]
    # −x · w is the subtraction the complement scores write
    subtracted = [score - factor * w for score, w in zip(scores, weights)]
    negated = quick._add_log_ratios(scores, -factor, numerators, log_denominators)
    assert [struct.pack("<d", v) for v in negated] == [struct.pack("<d", v) for v in subtracted]


@given(
    rows=st.lists(
        st.tuples(
            finite,
            st.one_of(st.floats(0, 1e6), st.integers(0, 10**6)),
            st.one_of(finite, st.none()),
        ),
        min_size=1,
        max_size=8,
    ),
    total=st.one_of(st.floats(0, 1e6), st.integers(0, 10**6)),
    beta=st.one_of(st.floats(-2, 10), st.just(0.0)),
    factor=st.one_of(finite, st.integers(-50, 50)),
)
def test_the_complement_sum_is_the_listed_one_to_the_bit(rows, total, beta, factor):
    """The complement numerators total − part + β, summed in one pass or listed first:
    the same floats, bit for bit (integer counts and transformed sums alike)."""
    scores, parts, log_denominators = map(list, zip(*rows))
    numerators = [total - part + beta for part in parts]
    weights = quick._log_ratios(numerators, log_denominators)
    listed = [score + factor * w for score, w in zip(scores, weights)]
    one_pass = quick._add_complement(scores, factor, total, parts, beta, log_denominators)
    assert [struct.pack("<d", v) for v in one_pass] == [struct.pack("<d", v) for v in listed]
