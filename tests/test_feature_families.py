"""fit chooses its features: words only, or words and pairs, as row masks over one count.

A model counted with ``--ngram-range 1,2`` holds the rows of its words and of its word
pairs. At the defaults fit's choice scores every candidate on each feature set
(:mod:`nbclass.text.families`), and the chosen set is stored by name in the vocabulary
filter: the pair rows stay in the file (counts stay additive), the model uses the rows
of its families. Update, merge and unlearn choose again from counts and sample: the file
is a fresh fit's, byte for byte.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace

import numpy as np
import pytest
from conftest import DEMO_CORPUS, nbclass_command
from test_damage import edit_header, one_error_line
from test_sample import sms  # noqa: F401 - the SMS spam halves fixture

from nbclass.errors import ModelFileError
from nbclass.modelfile.textfile import dumps, load, loads
from nbclass.models.estimators import EstimatorSettings
from nbclass.models.model import Classifier, VocabularyFilter, fit
from nbclass.models.sparsity import dense, row_sums
from nbclass.reading.corpus import list_corpus
from nbclass.text.families import feature_sets, rows_of, spaces_of
from nbclass.text.tokenizer import TokenizerSettings


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *map(str, args)], capture_output=True, timeout=900
    )


def test_families_are_told_by_their_spaces():
    vocabulary = ["ab", "ab cd", "日本語 東京", "x y z", "été"]
    assert spaces_of(vocabulary).tolist() == [0, 1, 1, 2, 0]
    assert rows_of(vocabulary, ("words",)).tolist() == [True, False, False, False, True]
    assert rows_of(vocabulary, ("words", "pairs")).tolist() == [True, True, True, False, True]
    assert feature_sets(vocabulary) == [
        ("words",), ("words", "pairs"), ("words", "pairs", "ngrams")
    ]  # fmt: skip
    assert feature_sets(["ab", "cd"]) == [("words",)]  # one kind of token: no choice
    assert feature_sets([]) == [()]


@pytest.mark.parametrize(
    "settings",
    [
        EstimatorSettings(model="multinomial"),
        EstimatorSettings(model="bernoulli"),
        EstimatorSettings(model="complement", tf="log", class_prior=False),
        EstimatorSettings(model="dcm", prior_fit=True),
    ],
)
def test_a_model_keeping_words_scores_as_a_model_of_words(settings):
    """The row mask is the count of those tokens alone: a model counted with pairs that
    keeps its words scores every document exactly as a model counted with words alone
    (the pairs in the texts are not in its used vocabulary)."""
    corpus = list_corpus(str(DEMO_CORPUS))
    words = fit(corpus, TokenizerSettings(), defaults=settings)
    both = fit(corpus, TokenizerSettings(ngram_range=(1, 2)), defaults=settings)
    kept = replace(both, vocabulary_filter=VocabularyFilter(features=("words",)))
    assert len(both.counts.vocabulary) > len(words.counts.vocabulary)
    assert kept.active_counts.vocabulary == words.counts.vocabulary
    texts = [p.read_text("utf-8") for p in sorted((DEMO_CORPUS / "billing").glob("*"))[:5]]
    texts += ["the server is down, refund my invoice", ""]
    expected = Classifier(words).joint_log_likelihood(texts)
    assert np.array_equal(Classifier(kept).joint_log_likelihood(texts), expected)
    assert not np.array_equal(Classifier(both).joint_log_likelihood(texts), expected)
    reread = loads(dumps(kept), "kept.nbc")  # the features are stored, the pairs kept
    assert reread.vocabulary_filter.features == ("words",)
    assert len(reread.counts.vocabulary) == len(both.counts.vocabulary)
    assert np.array_equal(Classifier(reread).joint_log_likelihood(texts), expected)


def test_the_default_fit_chooses_among_words_and_pairs(tmp_path):
    """At the defaults with --ngram-range 1,2 every candidate is scored on words and on
    words + pairs; the words' rows are those of a fit of words alone, and the chosen set
    is in the file, its rows the used ones."""
    words, both = tmp_path / "words.nbc", tmp_path / "both.nbc"
    assert run("fit", DEMO_CORPUS, "-o", words, "-q").returncode == 0
    assert run("fit", DEMO_CORPUS, "--ngram-range", "1,2", "-o", both, "-q").returncode == 0
    alone, model = load(str(words)), load(str(both))
    table = model.choice["candidates"]
    assert len(table) == 24
    assert [row["features"] for row in table] == [["words"]] * 8 + [["words", "pairs"]] * 16
    assert [row.get("min_df") for row in table] == [None] * 16 + [2] * 8
    assert table[16]["name"] == "multinomial, words+pairs, df≥2"
    for mine, theirs in zip(table[:8], alone.choice["candidates"]):
        assert mine["name"] == theirs["name"] + ", words"
        for key in ("accuracy", "macro_f1", "log_loss"):
            assert mine[key] == theirs[key]
    chosen = next(row for row in table if row["chosen"])
    assert model.choice["chosen"] == chosen["name"]
    assert model.vocabulary_filter.features == tuple(chosen["features"])
    assert model.vocabulary_filter.prune_df == chosen.get("min_df")
    used = rows_of(model.counts.vocabulary, model.vocabulary_filter.features)
    used &= row_sums(model.counts.doc_count) >= (model.vocabulary_filter.prune_df or 1)
    assert np.array_equal(model.active_rows, np.flatnonzero(used))
    info = run("info", "-m", both).stdout.decode()
    assert f"features {'+'.join(chosen['features'])})" in info


def test_update_merge_unlearn_with_pairs_write_a_fresh_fits_bytes(sms, tmp_path):  # noqa: F811
    """SMS spam in halves, counted with pairs: fit b --update a, merge and unlearn write
    the fresh fit's bytes (its chosen features included)."""
    full, half_a, half_b = tmp_path / "all.nbc", tmp_path / "a.nbc", tmp_path / "b.nbc"
    for corpus, out in ((sms / "all", full), (sms / "a", half_a), (sms / "b", half_b)):
        assert run("fit", corpus, "--ngram-range", "1,2", "-o", out, "-q").returncode == 0
    fresh = load(str(full))
    assert fresh.vocabulary_filter.features is not None
    assert len(fresh.choice["candidates"]) == 24
    updated = tmp_path / "updated.nbc"
    shutil.copy(half_a, updated)
    assert run("fit", sms / "b", "--update", updated, "-q").returncode == 0
    assert updated.read_bytes() == full.read_bytes()
    merged = tmp_path / "merged.nbc"
    result = run("merge", half_b, half_a, "-o", merged, "-q")
    assert result.returncode == 0 and result.stderr == b""
    assert merged.read_bytes() == full.read_bytes()
    unlearned = tmp_path / "unlearned.nbc"
    assert run("unlearn", sms / "b", "-m", full, "-o", unlearned, "-q").returncode == 0
    assert unlearned.read_bytes() == half_a.read_bytes()


def test_stored_features_are_checked_on_load(tmp_path):
    """A model file naming a family nbclass does not know, or one twice, or not a list,
    is refused by both loaders with one line."""
    path = tmp_path / "both.nbc"
    assert run("fit", DEMO_CORPUS, "--ngram-range", "1,2", "-o", path, "-q").returncode == 0
    data = path.read_bytes()
    for bad in (["words", "triples"], ["words", "words"], "words", []):
        crafted = edit_header(
            data, "model", lambda h, bad=bad: h["vocabulary_filter"].__setitem__("features", bad)
        )
        with pytest.raises(ModelFileError, match="feature families"):
            loads(crafted, "forged.nbc")
        forged = tmp_path / "forged.nbc"
        forged.write_bytes(crafted)
        document = sorted((DEMO_CORPUS / "billing").glob("*"))[0]
        one_error_line(run("predict", "-m", forged, document), forged)  # the quick reader
        one_error_line(run("predict", "-m", forged, DEMO_CORPUS), forged)  # the full one
        one_error_line(run("info", "-m", forged), forged)


def test_a_pruned_fold_is_the_fold_of_its_frequent_words():
    """The df≥2 candidates' fold: the fold's counts less the words of one training
    document (counted in the fold's own documents, the held-out ones never decide), the
    held-out documents' words found in it as before."""
    import scipy.sparse as sp

    from nbclass.models.choosing import fold_of, pruned

    corpus = list_corpus(str(DEMO_CORPUS))
    model = fit(corpus, TokenizerSettings(ngram_range=(1, 2)))
    model = load_sampled(model)
    sample = model.sample
    X = sp.csr_matrix((sample.counts, sample.words, sample.ptr),
                      shape=(sample.n_documents, len(model.counts.vocabulary)))  # fmt: skip
    rows = np.arange(0, sample.n_documents, 5)
    fold = fold_of(model.counts, X, sample.labels, rows)
    small = pruned(fold, 2)
    df = row_sums(fold.counts.doc_count)
    kept = [w for w, d in zip(fold.counts.vocabulary, df.tolist()) if d >= 2]
    assert list(small.counts.vocabulary) == kept and 0 < len(kept) < len(df)
    assert np.array_equal(dense(small.counts.token_count), dense(fold.counts.token_count)[df >= 2])
    vocabulary = model.counts.vocabulary
    assert [vocabulary[j] for j in small.words] == kept
    held = X[rows]
    present = {vocabulary[j] for j in np.unique(held.indices)}
    assert [small.counts.vocabulary[i] for i in small.used] == [w for w in kept if w in present]


def load_sampled(model):
    """``model`` with its sample (a default fit's), through the file: the corpus's
    documents as ledger rows."""
    from nbclass.models.learning import corpus_sample

    sample = corpus_sample(list_corpus(str(DEMO_CORPUS)), model.counts, model.tokenizer)
    return replace(model, sample=sample)


def test_a_chosen_pruning_is_stored_and_checked():
    """prune_df in the vocabulary filter: the rows of df >= prune_df, kept through the
    file; a forged one out of --min-df's range is refused."""
    corpus = list_corpus(str(DEMO_CORPUS))
    model = fit(corpus, TokenizerSettings(ngram_range=(1, 2)))
    kept = replace(model, vocabulary_filter=VocabularyFilter(features=("words", "pairs"),
                                                             prune_df=2))  # fmt: skip
    df = row_sums(model.counts.doc_count)
    assert np.array_equal(kept.active_rows, np.flatnonzero(df >= 2))
    data = dumps(kept)
    assert loads(data, "kept.nbc").vocabulary_filter == kept.vocabulary_filter
    crafted = edit_header(
        data, "model", lambda h: h["vocabulary_filter"].__setitem__("prune_df", 0)
    )
    with pytest.raises(ModelFileError, match="min-df"):
        loads(crafted, "forged.nbc")
