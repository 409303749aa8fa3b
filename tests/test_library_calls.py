"""The library functions the commands call, called with plain parameters (no click):
fit's settings over a base model, cross-validation's settings, a model file synced
with a folder under its lock."""

from __future__ import annotations

import shutil
from functools import partial

import pytest
from conftest import DEMO_CORPUS

from nbclass.errors import UsageError
from nbclass.evaluation.judging import cv_settings
from nbclass.modelfile.textfile import load
from nbclass.modelfile.updating import sync_folder
from nbclass.models.estimators import DEFAULTS, EstimatorSettings
from nbclass.models.learning import count_documents, fit_settings, new_model
from nbclass.models.model import VocabularyFilter
from nbclass.reading.corpus import list_corpus
from nbclass.text.tokenizer import TokenizerSettings

NO_OPTIONS = {
    "lowercase": True, "token_pattern": None, "ngram_range": None, "stop_words": "none",
    "hash_features": None, "min_df": 1, "max_features": None, "event_model": None,
    "estimator": None, "alpha": None, "beta": None, "text_options": {},
}  # fmt: skip


@pytest.fixture(scope="module")
def base():
    # the words alone (an ngram range given: no pairs), for a different range to be refused
    tokenizer, vocabulary_filter, _, _ = fit_settings(dict(NO_OPTIONS, ngram_range=(1, 1)))
    documents = count_documents(list_corpus(str(DEMO_CORPUS)), tokenizer, ledger=False)
    settings = EstimatorSettings(model="bernoulli", alpha=2.0)
    return new_model(documents, tokenizer, VocabularyFilter(min_df=2), settings, auto=False)


def test_a_fit_without_options_chooses_its_settings_from_the_data():
    tokenizer, vocabulary_filter, defaults, auto = fit_settings(NO_OPTIONS)
    # At the defaults the scripts written without spaces are counted every way, and the
    # symbols and the word pairs of documents of at most 64 tokens beside the words, to
    # choose.
    assert (tokenizer, vocabulary_filter, defaults, auto) == (
        TokenizerSettings(unspaced="all", symbols=True, ngram_range=(1, 2), ngram_doc_limit=64),
        VocabularyFilter(), DEFAULTS, True,
    )  # fmt: skip


def test_over_a_base_model_only_the_options_given_change_its_settings(base):
    options = dict(NO_OPTIONS, min_df=1, max_features=50, alpha=3.0)
    _, vocabulary_filter, defaults, auto = fit_settings(options, {"alpha"}, base)
    assert vocabulary_filter == VocabularyFilter(min_df=2)  # min_df, max_features not given
    assert (defaults.model, defaults.alpha, auto) == ("bernoulli", 3.0, False)
    _, vocabulary_filter, _, _ = fit_settings(options, {"max_features"}, base)
    assert vocabulary_filter == VocabularyFilter(min_df=2, max_features=50)


def test_a_different_tokenizer_given_over_a_base_model_is_refused(base):
    options = dict(NO_OPTIONS, ngram_range=(1, 2))
    fit_settings(options, set(), base)  # not given: the model's tokenizer is kept
    with pytest.raises(UsageError, match=r"ngram range: 1,1 vs 1,2"):
        fit_settings(options, {"ngram_range"}, base)


def test_model_auto_is_refused_with_estimator_options_and_over_a_base_model(base):
    with pytest.raises(UsageError, match="--model auto chooses the estimator"):
        fit_settings(dict(NO_OPTIONS, event_model="auto", alpha=2.0))
    with pytest.raises(UsageError, match="which this model does not keep"):
        fit_settings(dict(NO_OPTIONS, event_model="auto"), {"event_model"}, base)


def test_cross_validation_chooses_per_fold_unless_an_estimator_option_is_given(base):
    none = {"model": None, "estimator": None, "alpha": None, "beta": None}
    # Each fold chooses as fit does, the tokenization of unspaced scripts, the symbols and
    # the word pairs of short documents too.
    chosen = TokenizerSettings(
        unspaced="all", symbols=True, ngram_range=(1, 2), ngram_doc_limit=64
    )
    assert cv_settings(None, none) == (chosen, VocabularyFilter(), None)
    assert cv_settings(None, none, multi_label=True)[0] == TokenizerSettings(unspaced="all")
    tokenizer, _, settings = cv_settings(None, dict(none, alpha=0.5))
    assert settings == EstimatorSettings(alpha=0.5) and tokenizer == TokenizerSettings()
    tokenizer, vocabulary_filter, settings = cv_settings(base, none)  # not chosen by fit
    assert (tokenizer, vocabulary_filter, settings) == (
        base.tokenizer, base.vocabulary_filter, base.defaults
    )
    assert cv_settings(base, dict(none, model="auto"))[2] is None


def test_sync_creates_then_follows_the_folder_and_equals_a_fresh_fit(tmp_path):
    folder, path = tmp_path / "corpus", str(tmp_path / "model.nbc")
    shutil.copytree(DEMO_CORPUS, folder)
    options = dict(NO_OPTIONS, event_model="multinomial")
    settings = partial(fit_settings, options, set())
    model, report = sync_folder(path, partial(list_corpus, str(folder)), settings)
    assert (report.added, report.changed, model.counts.n_docs) == (42, True, 42)
    gone = sorted((folder / "billing").iterdir())[0]
    gone.unlink()
    model, report = sync_folder(path, partial(list_corpus, str(folder)), settings)
    assert (report.added, report.removed, report.unchanged) == (0, 1, 41)
    fresh = str(tmp_path / "fresh.nbc")
    sync_folder(fresh, partial(list_corpus, str(folder)), settings)
    assert load(path).counts.equals(load(fresh).counts)
    _, report = sync_folder(path, partial(list_corpus, str(folder)), settings)
    assert not report.changed


def test_bulk_predict_in_workers_and_in_turn_gives_the_batches_of_the_classifier(
    base, tmp_path, monkeypatch
):
    """predict_documents, with forked workers and without, yields what the classifier
    itself gives the same documents, in their order."""
    import numpy as np

    import nbclass.models.scoring
    from nbclass.modelfile.predicting import listed_files, predict_documents
    from nbclass.modelfile.textfile import save
    from nbclass.models.model import Classifier
    from nbclass.reading.corpus import iter_documents
    from nbclass.reading.policy import DEFAULT_POLICY, ReadLog

    monkeypatch.setattr(nbclass.models.scoring, "PARALLEL_MIN_BYTES", 0)
    path = str(tmp_path / "m.nbc")
    save(base, path)
    paths = [str(DEMO_CORPUS)]
    files, jobs = listed_files(paths, lines=False, jobs=2)
    texts = {source: text for source, text in iter_documents(paths, False)}
    expected = Classifier(load(path)).predict(list(texts.values()), list(texts)).log_proba
    for workers, listed in ((2, files), (1, None)):
        seen = []
        classes, _, batches = predict_documents(
            path, iter_documents(paths, False), listed, workers, ({}, True),
            (DEFAULT_POLICY, ReadLog()), lambda classifier, scored: None, seen.append,
        )  # fmt: skip
        assert seen == [classes] and list(classes) == list(base.active_counts.classes)
        rows = [(s, row) for sources, rows, _ in batches for s, row in zip(sources, rows)]
        assert [s for s, _ in rows] == list(texts)
        assert np.allclose([row for _, row in rows], expected, rtol=0, atol=1e-12)
