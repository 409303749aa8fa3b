"""Cross-validation: the stratified split, subtraction equals refitting, the command."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from conftest import CHINESE, DEMO_CORPUS, write_corpus

from nbclass.cli.app import cli
from nbclass.counting.counts import count_corpus, merge, subtract
from nbclass.errors import UsageError
from nbclass.evaluation.judging import cross_validate, evaluation_of, stratified_folds
from nbclass.modelfile.textfile import save
from nbclass.models.estimators import DEFAULTS, EstimatorSettings
from nbclass.models.model import Classifier, VocabularyFilter, fit
from nbclass.reading.corpus import Corpus, list_corpus
from nbclass.text.tokenizer import TokenizerSettings


@pytest.fixture(scope="module")
def demo() -> Corpus:
    return list_corpus(str(DEMO_CORPUS))


def subset(corpus: Corpus, indices) -> Corpus:
    indices = sorted(int(i) for i in indices)
    return Corpus(
        corpus.classes, [corpus.paths[i] for i in indices], [corpus.labels[i] for i in indices]
    )


# --- the split -------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [2, 3, 5, 14])
def test_folds_partition_the_corpus_and_are_stratified(demo, k):
    folds = stratified_folds(demo, k, seed=3)
    assert sorted(np.concatenate(folds).tolist()) == list(range(len(demo.paths)))
    sizes = [f.size for f in folds]
    assert max(sizes) - min(sizes) <= 1
    labels = np.asarray(demo.labels)
    for c in range(len(demo.classes)):
        N_c = int((labels == c).sum())
        per_fold = [int((labels[f] == c).sum()) for f in folds]
        assert set(per_fold) <= {N_c // k, -(-N_c // k)}


def test_the_split_depends_on_the_seed_not_on_the_listing_order(demo):
    order = list(range(len(demo.paths)))
    random.Random(1).shuffle(order)
    shuffled = Corpus(
        demo.classes, [demo.paths[i] for i in order], [demo.labels[i] for i in order]
    )

    def as_paths(corpus, folds):
        return [sorted(corpus.paths[i] for i in f) for f in folds]

    assert as_paths(demo, stratified_folds(demo, 5, 0)) == as_paths(
        shuffled, stratified_folds(shuffled, 5, 0)
    )
    assert as_paths(demo, stratified_folds(demo, 5, 0)) == as_paths(
        demo, stratified_folds(demo, 5, 0)
    )
    assert as_paths(demo, stratified_folds(demo, 5, 0)) != as_paths(
        demo, stratified_folds(demo, 5, 1)
    )


def test_too_many_folds_for_a_class_is_refused(tmp_path):
    corpus = list_corpus(str(write_corpus(tmp_path / "c", CHINESE)))
    with pytest.raises(UsageError, match="class 'japan' has 1 document"):
        stratified_folds(corpus, 2)
    with pytest.raises(UsageError, match="--folds 1 is out of range: give a whole number from 2"):
        stratified_folds(corpus, 1)


# --- subtraction gives exactly the refit ------------------------------------------------------


@pytest.mark.parametrize("k", [3, 5])
def test_fold_counts_by_subtraction_equal_a_refit(demo, k):
    tokenizer = TokenizerSettings()
    folds = stratified_folds(demo, k, seed=11)
    parts = [
        count_corpus(
            [demo.paths[i] for i in f], [demo.labels[i] for i in f], demo.classes, tokenizer
        )
        for f in folds
    ]
    total = merge(*parts)
    assert total.equals(fit(demo).counts)
    everything = set(range(len(demo.paths)))
    for f, part in zip(folds, parts):
        refit = fit(subset(demo, everything - set(f.tolist())))
        assert subtract(total, part).equals(refit.counts)


SETTINGS = [
    EstimatorSettings(),
    EstimatorSettings(model="bernoulli"),
    EstimatorSettings(estimator="map", alpha=2.0, beta=(2.0, 2.0)),
]


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: f"{s.model}-{s.estimator}")
def test_cv_metrics_equal_those_of_refits(demo, settings):
    k, seed = 4, 5
    vf = VocabularyFilter(min_df=2)
    result = cross_validate(demo, TokenizerSettings(), vf, settings, k, seed, learning_curve=True)
    folds = stratified_folds(demo, k, seed)
    everything = set(range(len(demo.paths)))
    for i, f in enumerate(folds):
        test_paths = [demo.paths[j] for j in f]
        test_names = [demo.classes[demo.labels[j]] for j in f]
        refit = fit(subset(demo, everything - set(f.tolist())), vocabulary_filter=vf)
        expected = evaluation_of(Classifier(refit, settings), test_paths, test_names)
        assert result.evaluations[i].summary() == expected.summary()
        for name in ("best", "best_log", "true_log", "brier"):
            ours = getattr(result.evaluations[i].scores, name)
            assert np.array_equal(ours, getattr(expected.scores, name), equal_nan=True)
        # Learning curve: m training folds are the m folds after fold i, cyclically.
        for m in range(1, k):
            train = set().union(*(folds[(i + 1 + s) % k].tolist() for s in range(m)))
            refit = fit(subset(demo, train), vocabulary_filter=vf)
            sizes, accuracies = result.curve[m - 1]
            assert sizes[i] == len(train)
            assert (
                accuracies[i]
                == evaluation_of(Classifier(refit, settings), test_paths, test_names).accuracy
            )
    summary = result.summary()
    accuracy = [ev.accuracy for ev in result.evaluations]
    assert summary["accuracy"]["mean"] == pytest.approx(np.mean(accuracy), abs=1e-15)
    assert summary["accuracy"]["std"] == pytest.approx(np.std(accuracy, ddof=1), abs=1e-15)
    assert summary["accuracy"]["folds"] == accuracy


# --- the command ---------------------------------------------------------------------------


def test_cv_json(runner):
    result = runner.invoke(
        cli, ["cv", str(DEMO_CORPUS), "--folds", "3", "--seed", "2", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["folds"] == 3 and data["seed"] == 2 and data["documents"] == 42
    assert sum(data["fold_documents"]) == 42
    expected = cross_validate(
        list_corpus(str(DEMO_CORPUS)),
        # counted as fit counts at its defaults: the symbols, and the pairs of the
        # documents of at most 64 tokens
        TokenizerSettings(symbols=True, ngram_range=(1, 2), ngram_doc_limit=64),
        VocabularyFilter(),
        None,  # --model auto, fit's default
        3,
        2,
    ).summary()
    assert data["metrics"] == expected
    assert data["learning_curve"] == []


def test_cv_like_a_model_uses_its_tokenizer_and_filter(tmp_path, runner):
    model = tmp_path / "m.nbc"
    tokenizer = TokenizerSettings(ngram_range=(1, 2))
    save(fit(list_corpus(str(DEMO_CORPUS)), tokenizer, VocabularyFilter(min_df=2)), str(model))
    result = runner.invoke(
        cli, ["cv", str(DEMO_CORPUS), "-k", "3", "--like", str(model), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    expected = cross_validate(
        list_corpus(str(DEMO_CORPUS)),
        tokenizer,
        VocabularyFilter(min_df=2),
        DEFAULTS,
        3,
    ).summary()
    assert json.loads(result.stdout)["metrics"] == expected


def test_cv_text_with_learning_curve_is_plain_and_narrow(runner):
    result = runner.invoke(cli, ["cv", str(DEMO_CORPUS), "-k", "3", "--learning-curve"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "\x1b[" not in result.stdout
    assert all(len(line) <= 80 and line == line.rstrip() for line in lines)
    assert any(line.startswith("learning curve") for line in lines)
    assert sum("█" in line for line in lines) == 2  # one bar per training size (1, 2 folds)


def test_cv_with_too_many_folds_is_a_usage_error(runner):
    result = runner.invoke(cli, ["cv", str(DEMO_CORPUS), "--folds", "15"])
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: class 'account' has 14 document(s), fewer than")
