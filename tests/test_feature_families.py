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
from conftest import DEMO_CORPUS, assert_changes_write_fresh_fits, nbclass_command
from test_damage import edit_header, one_error_line
from test_sample import sms  # noqa: F401 - the SMS spam halves fixture

from nbclass.errors import ModelFileError
from nbclass.modelfile.textfile import dumps, load, loads
from nbclass.models.estimators import EstimatorSettings
from nbclass.models.model import PRUNE_MI, Classifier, VocabularyFilter, fit
from nbclass.models.selection import informative_rows
from nbclass.models.sparsity import dense, row_sums
from nbclass.reading.corpus import list_corpus
from nbclass.text.families import feature_sets, rows_of, spaces_of
from nbclass.text.tokenizer import TokenizerSettings


def without_offsets(table: list[dict]) -> list[dict]:
    """The candidates' rows of a choice table: the winner with class offsets is the one
    row after them (choosing.OFFSETS_NAME), on every corpus of at most 100 classes."""
    *rows, last = table
    assert last.get("offsets") and last["name"].endswith(", class offsets"), last["name"]
    assert not any(row.get("offsets") for row in rows)
    return rows


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


def test_the_unspaced_points_are_those_of_the_table_of_every_point():
    """The code points looked up only from the first unspaced script's first one up are
    the points the look-up of every point finds: every range's first and last point and
    their neighbours, and points of every plane."""
    from nbclass.text.families import _unspaced_points
    from nbclass.text.runs import is_unspaced
    from nbclass.text.tokenizer import UNSPACED_RANGES

    edges = [p + d for low, high in UNSPACED_RANGES for p in (low, high) for d in (-1, 0, 1)]
    rng = np.random.default_rng(7)
    points = np.concatenate([
        np.array([0, 32, 127, 0xE9, 0x10FFFF] + edges, dtype="<u4"),
        rng.integers(0, 0x110000, 20_000).astype("<u4"),
        rng.integers(0, 0x3100, 20_000).astype("<u4"),
    ])  # fmt: skip
    rng.shuffle(points)
    expected = np.flatnonzero(is_unspaced(points))
    assert expected.size > 1000
    assert np.array_equal(_unspaced_points(points), expected)
    vocabulary = ["ab", "日本語", "日本語 東京", "é日", "x"]
    assert rows_of(vocabulary, ("words",)).tolist() == [True, True, False, True, True]


@pytest.mark.parametrize("symbols", [False, True, "spaced"])
def test_the_masks_of_a_vocabularys_utf8_bytes_are_those_of_its_entries(symbols):
    """The families' masks found in the entries' UTF-8 bytes (as the model loader holds
    them) are those found in the entries: random entries of characters of one to four
    bytes, among them the first and last of each unspaced range and their neighbours,
    spaces (ASCII and others), punctuation and word characters; and by hand."""
    from nbclass.text import families
    from nbclass.text.families import FAMILIES, masks
    from nbclass.text.tokenizer import UNSPACED_RANGES

    def both(vocabulary):
        joined = np.frombuffer("\x00".join(vocabulary).encode(), dtype=np.uint8)
        ends = np.append(np.flatnonzero(joined == 0), joined.size)
        families._LAST_MASKS[:] = [None, None, None]  # neither found in the other's cache
        of_entries = masks(list(vocabulary), symbols)
        of_bytes = masks(list(vocabulary), symbols, (joined, ends))
        return of_entries, of_bytes

    edges = [chr(p + d) for low, high in UNSPACED_RANGES for p in (low, high) for d in (-1, 0, 1)]
    alphabet = ["a", "Z", "_", "7", " ", "?", "-", "é", "ß", "\u00a0", "\u3000", "\U0001f600",
                "日", "本", "ก", "\u0e31", "ー", *edges]  # fmt: skip
    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(0, 40))
        entries = {"".join(rng.choice(alphabet, int(rng.integers(1, 5)))) for _ in range(n)}
        of_entries, of_bytes = both(sorted(entries))
        for name in FAMILIES:
            assert np.array_equal(of_entries[name], of_bytes[name]), name
    of_entries, of_bytes = both(["a b", "ab", "?", "é", "日本", "日", "日 本", "x!"])
    expected = {
        "words": [False, True, not symbols, not symbols, False, False, False, True],
        "runs": [False, False, False, False, True, False, False, False],
        "characters": [False, False, False, False, False, True, False, False],
        "symbols": [False, False, bool(symbols), bool(symbols), False, symbols is True, False,
                    False],  # (日 is a symbol too, but for "spaced")
        "pairs": [True, False, False, False, False, False, True, False],
        "ngrams": [False] * 8,
    }
    for name in FAMILIES:
        assert of_bytes[name].tolist() == expected[name], name
        assert of_entries[name].tolist() == expected[name], name


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


def second_round(words: list[dict], many: int | None = None) -> list[str]:
    """The names of the formulas the second round scores on the sets with pairs, given
    the first round's table rows ``words``: the SECOND_ROUND best by the criterion
    (shortfall, log loss, order), or the ``many`` best, and their evidence formulas, in
    the candidates' order."""
    from nbclass.models.choosing import CANDIDATES, SECOND_ROUND, describe, shortfall
    from nbclass.models.novelty import evidence_settings

    gaps = shortfall([r["accuracy"] for r in words], [r["macro_f1"] for r in words])
    order = sorted(range(len(words)), key=lambda i: (gaps[i], words[i]["log_loss"], i))
    best = []
    for i in order:
        if words[i]["settings"] not in best:
            best.append(words[i]["settings"])
    best = [EstimatorSettings.from_dict(s) for s in best[: many or SECOND_ROUND]]
    wanted = set(best) | {evidence_settings(s) for s in best}
    return [describe(s) for s in CANDIDATES if s in wanted]


def test_the_default_fit_chooses_among_words_and_pairs(tmp_path):
    """At the defaults with --ngram-range 1,2 every candidate is scored on words, and the
    best two formulas there (and the evidence formula) on words + pairs and its prunings;
    the words' rows are those of a fit of words alone, and the chosen set is in the file,
    its rows the used ones."""
    words, both = tmp_path / "words.nbc", tmp_path / "both.nbc"
    # (without the symbols, whose sets double these: tests/test_symbols.py; the words
    # alone, without the pairs of short documents fit counts by default)
    alone_options = ["--no-symbols", "--ngram-range", "1,1"]
    assert run("fit", DEMO_CORPUS, *alone_options, "-o", words, "-q").returncode == 0
    assert run(
        "fit", DEMO_CORPUS, "--no-symbols", "--ngram-range", "1,2", "-o", both, "-q"
    ).returncode == 0
    alone, model = load(str(words)), load(str(both))
    table = without_offsets(model.choice["candidates"])
    # The words (534 entries) and the words with pairs, the latter pruned to df >= 2, then
    # each set of more than 1,000 entries (the pairs') pruned to its 1,000 of highest MI.
    n_pairs = int(rows_of(model.counts.vocabulary, ("words", "pairs")).sum())
    assert len(alone.counts.vocabulary) < 1000 < n_pairs < 3000
    formulas = second_round(table[:8])
    f = len(formulas)
    assert f == 3  # on this corpus: the two best and multinomial, their evidence model
    assert len(table) == 8 + 3 * f
    assert [row["features"] for row in table] == [["words"]] * 8 + [["words", "pairs"]] * 3 * f
    assert [row.get("min_df") for row in table] == [None] * (8 + f) + [2] * f + [None] * f
    assert [row.get("top_mi") for row in table] == [None] * (8 + 2 * f) + [1000] * f
    suffixes = (", words+pairs", ", words+pairs, df≥2", ", words+pairs, MI top 1000")
    assert [row["name"] for row in table[8:]] == [
        name + suffix for suffix in suffixes for name in formulas
    ]
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
    used = np.flatnonzero(used)
    assert model.vocabulary_filter.prune_mi == chosen.get("top_mi")
    if chosen.get("top_mi"):
        used = used[informative_rows(model.counts.restrict(used), chosen["top_mi"])]
    assert np.array_equal(model.active_rows, used)
    info = run("info", "-m", both).stdout.decode()
    pruning = f", pruned to the {chosen['top_mi']} of highest MI" if chosen.get("top_mi") else ""
    assert f"features {'+'.join(chosen['features'])}{pruning})" in info


def test_update_merge_unlearn_with_pairs_write_a_fresh_fits_bytes(sms, tmp_path):  # noqa: F811
    """SMS spam in halves, counted with pairs (without the symbols: with them,
    tests/test_symbols.py): fit b --update a, merge and unlearn write the fresh fit's
    bytes (its chosen features included)."""
    from nbclass.models.choosing import shortfall

    full, half_a, half_b = tmp_path / "all.nbc", tmp_path / "a.nbc", tmp_path / "b.nbc"
    for corpus, out in ((sms / "all", full), (sms / "a", half_a), (sms / "b", half_b)):
        assert run(
            "fit", corpus, "--ngram-range", "1,2", "--no-symbols", "-o", out, "-q"
        ).returncode == 0
    fresh = load(str(full))
    assert fresh.vocabulary_filter.features is not None
    sizes = [int(rows_of(fresh.counts.vocabulary, names).sum())
             for names in (("words",), ("words", "pairs"))]  # fmt: skip
    words_mi, pairs_mi = (sum(size > k for k in PRUNE_MI) for size in sizes)
    assert pairs_mi == 3  # the pairs' three sizes
    table = without_offsets(fresh.choice["candidates"])
    first = 8 * (1 + words_mi)  # every formula on the words; the best on the pairs
    words = [row for row in table if row["features"] == ["words"]]
    formulas = len(second_round(words))
    # The pairs' MI prunings only where the words' won the first round (or were none).
    gaps = shortfall([r["accuracy"] for r in words], [r["macro_f1"] for r in words])
    top = min(range(len(words)), key=lambda i: (gaps[i], words[i]["log_loss"], i))
    pruned = pairs_mi if words_mi == 0 or words[top].get("top_mi") else 0
    assert words_mi > 0 and pruned == 0  # SMS spam: the words chosen whole
    assert len(table) == first + formulas * (2 + pruned)
    assert_changes_write_fresh_fits(run, sms / "b", full, half_a, half_b)


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

    from nbclass.models.choosing import fold_of, pruned

    model, X = sampled_pairs_model()
    sample = model.sample
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


def sampled_pairs_model():
    """The demo corpus's model with pairs and its sample, and the sample's counts X
    (n, V) over the model's vocabulary."""
    import scipy.sparse as sp

    model = load_sampled(fit(list_corpus(str(DEMO_CORPUS)), TokenizerSettings(ngram_range=(1, 2))))
    sample = model.sample
    X = sp.csr_matrix((sample.counts, sample.words, sample.ptr),
                      shape=(sample.n_documents, len(model.counts.vocabulary)))  # fmt: skip
    return model, X


def load_sampled(model):
    """``model`` with its sample (a default fit's), through the file: the corpus's
    documents as ledger rows."""
    from nbclass.models.learning import corpus_sample

    sample = corpus_sample(list_corpus(str(DEMO_CORPUS)), model.counts, model.tokenizer)
    return replace(model, sample=sample)


@pytest.mark.parametrize("field, value, option", [("prune_df", 2, "min-df"),
                                                   ("prune_mi", 100, "max-features")])
def test_a_chosen_pruning_is_stored_and_checked(field, value, option):
    """prune_df and prune_mi in the vocabulary filter: the rows of df >= prune_df, or of
    informative_rows, kept through the file; a forged one out of the range of its option
    (--min-df, --max-features) is refused."""
    corpus = list_corpus(str(DEMO_CORPUS))
    model = fit(corpus, TokenizerSettings(ngram_range=(1, 2)))
    kept = replace(model, vocabulary_filter=VocabularyFilter(features=("words", "pairs"),
                                                             **{field: value}))  # fmt: skip
    expected = (np.flatnonzero(row_sums(model.counts.doc_count) >= value)
                if field == "prune_df" else informative_rows(model.counts, value))  # fmt: skip
    assert np.array_equal(kept.active_rows, expected)
    data = dumps(kept)
    assert loads(data, "kept.nbc").vocabulary_filter == kept.vocabulary_filter
    crafted = edit_header(
        data, "model", lambda h: h["vocabulary_filter"].__setitem__(field, 0)
    )
    with pytest.raises(ModelFileError, match=option):
        loads(crafted, "forged.nbc")


def test_informative_rows_by_hand():
    """Two classes of two documents each: "aa" in both documents of the first class alone,
    "bb" in every document, "cc" in one document of the first class, "dd" in one of the
    second. With β = 1 and α = 1, π = (1/2, 1/2) and θ_jc = (D_jc + 1) / (N_c + 2):
    aa (3/4, 1/4), bb (3/4, 3/4), cc (1/2, 1/4), dd (1/4, 1/2). bb is independent of the
    class (I = 0); cc and dd have the same I (mirror images), below aa's."""
    from fractions import Fraction as F
    from math import log

    from nbclass.counting.counts import Counts
    from nbclass.models.selection import (
        PRUNE_MI_SETTINGS,
        mutual_information,
        pruning_information,
    )

    counts = Counts(
        classes=("x", "y"), vocabulary=("aa", "bb", "cc", "dd"),
        class_count=np.array([2, 2]),
        doc_count=np.array([[2, 0], [2, 2], [1, 0], [0, 1]]),
        token_count=np.array([[2, 0], [2, 2], [1, 0], [0, 1]]),
    )  # fmt: skip

    def mi(t0, t1):
        mean = (t0 + t1) / 2
        return sum(float(p) / 2 * log(p / m) for p, m in ((t0, mean), (t1, mean),
                   (1 - t0, 1 - mean), (1 - t1, 1 - mean)))  # fmt: skip

    expected = [mi(F(3, 4), F(1, 4)), 0.0, mi(F(1, 2), F(1, 4)), mi(F(1, 4), F(1, 2))]
    for I in (mutual_information(counts, PRUNE_MI_SETTINGS), pruning_information(counts)):
        assert np.allclose(I, expected, rtol=1e-12, atol=1e-15)
    assert expected[0] > expected[2] > expected[1] and np.isclose(expected[2], expected[3])
    assert informative_rows(counts, 1).tolist() == [0]
    assert informative_rows(counts, 2).tolist() == [0, 2]  # the tie goes to the earlier
    assert informative_rows(counts, 3).tolist() == [0, 2, 3]
    assert informative_rows(counts, 4).tolist() == [0, 1, 2, 3]
    kept = VocabularyFilter(prune_mi=2).rows(counts)
    assert kept.tolist() == [0, 2]


@pytest.mark.parametrize("form", ["dense", "csr"])
def test_the_entries_of_one_document_share_their_classs_mutual_information(monkeypatch, form):
    """The words of one document of one class (and those of none) are computed once a
    class: every word gets, bit for bit, the I_j it gets when each word is computed on its
    own, and the words of one document of a class have one value."""
    import scipy.sparse as sp

    from nbclass.counting.counts import Counts
    from nbclass.models import selection

    rng = np.random.default_rng(7)
    V, C = 400, 4
    D = np.zeros((V, C), dtype=np.int64)
    D[:300, :][np.arange(300), rng.integers(0, C, 300)] = 1  # 300 words of one document
    D[300:320, 1] = 2  # one class, two documents: computed each on its own
    D[320:390] = rng.integers(0, 6, (70, C))  # several classes (some rows all 0)
    D[390:] = 0  # words of no document
    T = D * rng.integers(1, 4, D.shape)
    counts = Counts(("a", "b", "c", "d"), tuple(f"w{j:03d}" for j in range(V)),
                    np.array([40, 30, 20, 10]), D, T)  # fmt: skip
    if form == "csr":
        counts = Counts(counts.classes, counts.vocabulary, counts.class_count,
                        sp.csr_matrix(D), sp.csr_matrix(T))  # fmt: skip
    alike = selection._one_of_each(*counts.nonzero, counts.at_nonzero(counts.doc_count, float),
                                   V, C)  # fmt: skip
    assert alike is not None and alike[0].sum() < counts.nonzero[0].size
    got = selection.pruning_information(counts)
    monkeypatch.setattr(selection, "_one_of_each", lambda *args: None)
    alone = selection.pruning_information(counts)
    assert got.dtype == alone.dtype and got.tobytes() == alone.tobytes()
    for c in range(C):
        mine = got[:300][D[:300, c] == 1]
        assert mine.size and (mine == mine[0]).all()
    assert (got[390:] == got[390]).all()
    assert len(set(got[300:320].tolist())) == 1  # alike too, though each computed


@pytest.mark.parametrize("C", [2, 3, 20])
@pytest.mark.parametrize("table", [True, False])
def test_words_of_the_same_pairs_share_their_mutual_information(monkeypatch, C, table):
    """Words of one pair or of two with the same classes and D_jc are computed once each
    (looked up in a table of their signatures, or without it only the words of one
    document): every word gets, bit for bit, the I_j it gets when each word is computed
    on its own."""
    from nbclass.counting.counts import Counts
    from nbclass.models import selection

    rng = np.random.default_rng(C)
    V = 3000
    D = np.zeros((V, C), dtype=np.int64)
    one = rng.integers(0, C, V)
    D[np.arange(V), one] = rng.choice([1, 1, 1, 2, 4], V)  # one pair each
    two = rng.random(V) < 0.3
    D[np.flatnonzero(two), (one[two] + 1) % C] = rng.integers(1, 3, int(two.sum()))  # two
    D[: V // 10] = rng.integers(0, 4, (V // 10, C))  # several classes (some rows all 0)
    D[-50:] = 0  # words of no document
    counts = Counts(tuple(f"c{c}" for c in range(C)), tuple(f"w{j:04d}" for j in range(V)),
                    D.max(axis=0) + 5, D, D * 2)  # fmt: skip
    if not table:
        monkeypatch.setattr(selection, "SIGNATURE_CELLS", 1)
    rows, cols = counts.nonzero
    alike = selection._one_of_each(rows, cols, counts.at_nonzero(counts.doc_count, float), V, C)
    assert alike is not None and alike[0].sum() < rows.size * (0.2 if table and C <= 3 else 0.9)
    got = selection.pruning_information(counts)
    monkeypatch.setattr(selection, "_one_of_each", lambda *args: None)
    alone = selection.pruning_information(counts)
    assert got.dtype == alone.dtype and got.tobytes() == alone.tobytes()


def test_an_informative_fold_scores_as_the_model_pruned_by_mi():
    """The MI candidates' fold: the fold's entries of highest mutual information in its own
    training counts (the held-out documents never decide); its candidates score the
    held-out documents exactly as the model of the fold's training documents does when
    its vocabulary filter prunes it by the same rule."""

    from test_sparse_scoring import held_out_scores

    from nbclass.models.choosing import CANDIDATES, fold_of, informative
    from nbclass.models.posterior import make_scorer
    from nbclass.models.textmodels import prepare

    model, X = sampled_pairs_model()
    sample = model.sample
    rows = np.arange(0, sample.n_documents, 5)
    fold = fold_of(model.counts, X, sample.labels, rows)
    small = informative(fold, 300)
    kept = informative_rows(fold.counts, 300)
    assert list(small.counts.vocabulary) == [fold.counts.vocabulary[j] for j in kept]
    assert len(small.counts.vocabulary) == 300 < len(fold.counts.vocabulary)
    vocabulary = model.counts.vocabulary
    assert [vocabulary[j] for j in small.words] == list(small.counts.vocabulary)
    # The same scores as the pruned model of the training documents alone.
    training = replace(model, counts=fold.counts, sample=None,
                       vocabulary_filter=VocabularyFilter(prune_mi=300))  # fmt: skip
    assert np.array_equal(training.active_rows, kept)
    _, known, scores = held_out_scores(model.counts, X, sample.labels, rows, CANDIDATES,
                                       top_mi=300)  # fmt: skip
    held = X[rows][:, fold.words[kept]]
    assert np.array_equal(known, np.asarray(held.sum(axis=1)).ravel())
    active = training.active_counts
    for settings, jll in zip(CANDIDATES, scores):
        reference = make_scorer(active, settings, prepare(active, settings))
        assert np.allclose(jll, reference.joint_log_likelihood(held), rtol=1e-12, atol=1e-9)


@pytest.fixture(scope="module")
def reviews(tmp_path_factory):
    """The first 300 movie reviews of each class (by name) as folders: ``all``, ``a`` (every
    other review of each class, from the first) and ``b`` (the others)."""
    import tarfile

    from conftest import SHARED_CORPORA

    archive = SHARED_CORPORA / "movie_reviews.tar.gz"
    if not archive.exists():
        pytest.skip(f"{archive} is absent (the shared corpora live beside the repository)")
    root = tmp_path_factory.mktemp("reviews")
    seen: dict[str, int] = {}
    with tarfile.open(archive, "r:gz") as tar:
        for member in sorted((m for m in tar if m.isfile()), key=lambda m: m.name):
            _, label, name = member.name.split("/")
            i = seen[label] = seen.get(label, 0) + 1
            if i > 300:
                continue
            data = tar.extractfile(member).read()
            for part in ("all", "ab"[(i - 1) % 2]):
                (root / part / label).mkdir(parents=True, exist_ok=True)
                (root / part / label / name).write_bytes(data)
    return root


def test_a_chosen_mi_pruning_updates_merges_and_unlearns_to_a_fresh_fits_bytes(reviews,
                                                                               tmp_path):
    """600 movie reviews at the defaults choose a pruning by mutual information (the
    pruned rows stay in the file); their halves choose otherwise. fit --update, merge and
    unlearn rank the entries again from the new counts and write the fresh fit's bytes."""
    full, half_a, half_b = tmp_path / "all.nbc", tmp_path / "a.nbc", tmp_path / "b.nbc"
    for corpus, out in ((reviews / "all", full), (reviews / "a", half_a),
                        (reviews / "b", half_b)):  # fmt: skip
        assert run("fit", corpus, "-o", out, "-q").returncode == 0
    fresh = load(str(full))
    k = fresh.vocabulary_filter.prune_mi
    assert k in PRUNE_MI and fresh.choice["chosen"].endswith(f", MI top {k}")
    names = fresh.vocabulary_filter.features  # words, or words and symbols
    at = np.flatnonzero(rows_of(fresh.counts.vocabulary, names, fresh.tokenizer.symbol_entries))
    assert np.array_equal(fresh.active_rows, at[informative_rows(fresh.counts.restrict(at), k)])
    assert len(fresh.counts.vocabulary) > k  # every counted word stays in the file
    assert load(str(half_a)).vocabulary_filter.prune_mi != k
    info = run("info", "-m", full).stdout.decode()
    assert f"pruned to the {k} of highest MI)" in info
    updated = tmp_path / "updated.nbc"
    shutil.copy(half_a, updated)
    assert run("fit", reviews / "b", "--update", updated, "-q").returncode == 0
    assert updated.read_bytes() == full.read_bytes()
    merged = tmp_path / "merged.nbc"
    assert run("merge", half_b, half_a, "-o", merged, "-q").returncode == 0
    assert merged.read_bytes() == full.read_bytes()
    unlearned = tmp_path / "unlearned.nbc"
    assert run("unlearn", reviews / "b", "-m", full, "-o", unlearned, "-q").returncode == 0
    assert unlearned.read_bytes() == half_a.read_bytes()


def test_one_subtraction_serves_every_pruning():
    """held_out_summaries with several sets and prunings (each fold subtracted once, its
    mutual information ranked once per set of rows) gives each what a call of its own
    gives."""

    from nbclass.models import choosing

    model, X = sampled_pairs_model()
    sample = model.sample
    y = sample.labels.astype(np.int64)
    folds = choosing.stratified_fold_ids(y, 5)
    words = np.flatnonzero(rows_of(model.counts.vocabulary, ("words",)))
    sets = [(None, None, None), (None, 2, None), (None, None, 300), (None, None, 1000),
            (None, 2, 300), (words, None, 300), (words, None, 100)]  # fmt: skip
    together = choosing.held_out_summaries(model.counts, X, y, folds, choosing.CANDIDATES,
                                           sets=sets, keep=True)  # fmt: skip
    for spec, (summaries, known) in zip(sets, together):
        [(alone, known_alone)] = choosing.held_out_summaries(
            model.counts, X, y, folds, choosing.CANDIDATES, sets=[spec], keep=True
        )
        assert np.array_equal(known, known_alone)
        for a, b in zip(summaries, alone):
            assert np.array_equal(a.jll, b.jll) and np.array_equal(a.pred, b.pred)
    assert not np.array_equal(together[0][1], together[2][1])  # the pruning did prune


def test_the_largest_choice_table_is_written_and_read(reviews, tmp_path):
    """600 movie reviews counted with word pairs: words and words + pairs each hold more
    than 10,000 entries, so the first round scores 8 formulas on 8 sets of words (with
    and without the symbols, at three sizes by MI and whole). Its best candidate is
    the words pruned to their 1,000 of highest MI, so the second round scores the pairs
    added to its families pruned by MI alone, to 1,000 and 3,000 entries, by its formula
    and that formula's evidence formula alone: a table both loaders read back, and
    predict uses."""
    from nbclass.models.choosing import shortfall

    model_path = tmp_path / "pairs.nbc"
    assert run("fit", reviews / "all", "--ngram-range", "1,2", "-o", model_path,
               "-q").returncode == 0  # fmt: skip
    model = load(str(model_path))
    table = without_offsets(model.choice["candidates"])
    first = [row for row in table if "pairs" not in row["features"]]
    assert len(first) == 2 * 8 * 4
    gaps = shortfall([r["accuracy"] for r in first], [r["macro_f1"] for r in first])
    top = min(range(len(first)), key=lambda i: (gaps[i], first[i]["log_loss"], i))
    assert first[top]["top_mi"] == 1000
    formulas = second_round(first, 1)
    families = "+".join(first[top]["features"] + ["pairs"])
    assert [row["name"] for row in table if "pairs" in row["features"]] == [
        f"{name}, {families}, MI top {k}" for k in (1000, 3000) for name in formulas
    ]
    document = sorted((reviews / "all" / "pos").glob("*"))[0]
    for target in (document, reviews / "a" / "neg"):  # the one-document reader, the full one
        result = run("predict", "-m", model_path, target)
        assert result.returncode == 0 and result.stderr == b"", result.stderr


def test_a_fit_with_pairs_scores_the_documents_and_folds_of_its_words(monkeypatch):
    """The choice plans its documents and folds on the rows of its first round (the
    words): with the folds' budget set to five folds of the demo corpus's words (534
    entries x 3 classes), its entries with the pairs (1,571) afford one fold of 9
    documents, and the fit with pairs still scores the words' five folds of every
    document: its first round's rows are those of the fit of words, to the last digit."""
    from nbclass.models import choosing
    from nbclass.models import model as models

    sampled, _ = sampled_pairs_model()
    words = load_sampled(fit(list_corpus(str(DEMO_CORPUS))))
    counts = sampled.active_counts
    monkeypatch.setattr(choosing, "FREE_CELLS", 5 * 534 * 3)
    assert len(words.counts.vocabulary) == 534 and len(counts.vocabulary) == 1571
    features, second = models.choice_features(counts)
    rows = choosing.first_round_rows(features, second)
    assert rows.tolist() == np.flatnonzero(rows_of(counts.vocabulary, ("words",))).tolist()
    assert choosing.plan(counts) == (9, 1)  # every row: the plan of the pairs
    assert choosing.plan(counts, rows=rows) == choosing.plan(words.counts) == (42, 5)
    assert choosing.plan(counts.restrict(rows)) == (42, 5)
    paired, alone = models.with_choice(sampled).choice, models.with_choice(words).choice
    assert (paired["folds"], paired["documents"]) == (alone["folds"], alone["documents"])
    assert alone["folds"] == 5 and alone["documents"] == 42
    first = [row for row in without_offsets(paired["candidates"]) if row["features"] == ["words"]]
    assert [{key: row[key] for key in ("settings", "accuracy", "macro_f1", "log_loss")}
            for row in first] == [
        {key: row[key] for key in ("settings", "accuracy", "macro_f1", "log_loss")}
        for row in without_offsets(alone["candidates"])
    ]  # fmt: skip


def test_a_pruning_leaves_ten_entries_a_class(monkeypatch):
    """The prunings by MI are candidates only where k >= MI_PER_CLASS x C: the demo corpus
    with pairs (3 classes, more than 1,000 entries with pairs) scores MI top 1000 at the
    default 10 entries a class (with the formulas of the second round: the set is the
    words and pairs'), and not when a class would have fewer than 334."""
    from nbclass.models import model as models

    sampled, _ = sampled_pairs_model()
    table = without_offsets(models.with_choice(sampled).choice["candidates"])
    formulas = len(second_round(table[:8]))
    assert [row.get("top_mi") for row in table].count(1000) == formulas == 3
    monkeypatch.setattr(models, "MI_PER_CLASS", 334)  # 1,000 < 334 x 3
    table = without_offsets(models.with_choice(sampled).choice["candidates"])
    assert len(table) == 8 + 2 * formulas and not any(row.get("top_mi") for row in table)


def test_the_pairs_are_pruned_by_mi_only_where_the_words_pruning_won(monkeypatch):
    """The demo corpus with pairs, its words pruned by MI too (to 100 and 300 entries): the
    first round's best candidate is of all the words, so the second round scores the
    words and pairs and their df >= 2 pruning, not their MI prunings; without the words'
    prunings (none of them a candidate) it scores the pairs' as well."""
    from nbclass.models import model as models
    from nbclass.models.choosing import shortfall

    sampled, _ = sampled_pairs_model()
    monkeypatch.setattr(models, "PRUNE_MI", (100, 300))
    table = without_offsets(models.with_choice(sampled).choice["candidates"])
    first = [row for row in table if "pairs" not in row["features"]]
    assert [row.get("top_mi") for row in first] == [None] * 8 + [100] * 8 + [300] * 8
    gaps = shortfall([r["accuracy"] for r in first], [r["macro_f1"] for r in first])
    top = min(range(len(first)), key=lambda i: (gaps[i], first[i]["log_loss"], i))
    assert first[top]["name"] == "complement no-class-prior, words"
    formulas = second_round(first)
    paired = [row for row in table if "pairs" in row["features"]]
    assert [row["name"] for row in paired] == [
        name + suffix for suffix in (", words+pairs", ", words+pairs, df≥2") for name in formulas
    ]
    monkeypatch.setattr(models, "PRUNE_MI", (1000,))  # more than the words' 534 entries
    table = without_offsets(models.with_choice(sampled).choice["candidates"])
    assert [row.get("top_mi") for row in table].count(1000) == len(formulas)


def test_the_second_round_scores_as_the_full_choice_does():
    """choose with ``second``: every formula on the sets of words (their counts
    restricted to the words before the folds are made), the best two of them and their
    evidence formula on the sets with pairs (not pruned by MI: the words' pruning lost
    the first round); each scored candidate has the numbers the
    full choice gives it, and the winner is the best of the scored ones."""
    from nbclass.models import choosing

    model, X = sampled_pairs_model()
    y = model.sample.labels.astype(np.int64)
    words = np.flatnonzero(rows_of(model.counts.vocabulary, ("words",)))
    both = np.flatnonzero(rows_of(model.counts.vocabulary, ("words", "pairs")))
    assert words.size == 534 < both.size == len(model.counts.vocabulary)
    features = [(("words",), words, None, None), (("words", "pairs"), both, None, None),
                (("words", "pairs"), both, 2, None), (("words",), words, None, 100),
                (("words", "pairs"), both, None, 300)]  # fmt: skip
    second = [False, True, True, False, True]
    full = choosing.choose(model.counts, X, y, features=features)
    narrow = choosing.choose(model.counts, X, y, features=features, second=second)
    assert len(full.table) == 40
    by_name = {row["name"]: row for row in full.table}
    first = [row for row in narrow.table if row["features"] == ["words"]]
    assert [row["name"] for row in first] == [
        row["name"] for row in full.table if row["features"] == ["words"]
    ]  # every formula, both sets of words, in order
    formulas = second_round(first)
    gaps = choosing.shortfall([r["accuracy"] for r in first], [r["macro_f1"] for r in first])
    top = min(range(len(first)), key=lambda i: (gaps[i], first[i]["log_loss"], i))
    assert "top_mi" not in first[top]  # the words' MI pruning lost: the pairs' is not scored
    assert len(narrow.table) == 16 + 2 * len(formulas) < 40
    assert [row["name"] for row in narrow.table[8 : 8 + len(formulas)]] == [
        name + ", words+pairs" for name in formulas
    ]
    for row in narrow.table:
        for key in ("accuracy", "macro_f1", "log_loss"):
            assert row[key] == by_name[row["name"]][key]
    gaps = choosing.shortfall([r["accuracy"] for r in narrow.table],
                              [r["macro_f1"] for r in narrow.table])  # fmt: skip
    best = min(range(len(gaps)), key=lambda i: (gaps[i], narrow.table[i]["log_loss"], i))
    assert [row["chosen"] for row in narrow.table] == [i == best for i in range(len(gaps))]
    if narrow.table[best]["name"] == next(r["name"] for r in full.table if r["chosen"]):
        assert narrow.calibration == full.calibration
        assert np.array_equal(narrow.evidence, full.evidence)
