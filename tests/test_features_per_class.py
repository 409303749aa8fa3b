"""top-features --per-class: each class's words ranked by z, the z-score of the shrunk log-odds
of D_jc (the default), or by log θ_jc − log θ_j,rest (--rank-by log-ratio).

Expected rankings and ratios are worked out by hand from the "Chinese Beijing" corpus
(tests/conftest.py): V = 6 words (beijing, chinese, japan, macao, shanghai, tokyo).

==========  =======================================  ====  ==============================
class       T_jc (tokens)                            T_c   D_jc (documents), N_c
==========  =======================================  ====  ==============================
china       beijing 1, chinese 5, macao 1, shanghai 1  8   beijing 1, chinese 3, macao 1,
                                                           shanghai 1; N_c = 3
japan       chinese 1, japan 1, tokyo 1                3   each 1; N_c = 1
==========  =======================================  ====  ==============================

With two classes, "rest" of china is japan and the other way round.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction as F

import pytest

from nbclass.cli.app import cli


@pytest.fixture
def chinese_model(runner, chinese_corpus, tmp_path):
    path = tmp_path / "chinese.nbc"
    # of words (--ngram-range 1,1): the rankings below are worked out by hand on the 6
    # words, and the default's pairs of short documents are not this file's subject
    words = ["--ngram-range", "1,1"]
    result = runner.invoke(cli, ["fit", str(chinese_corpus), "-o", str(path), "-q", *words])
    assert result.exit_code == 0, result.stderr
    return path


def rows(result) -> list[tuple[str, str, float]]:
    assert result.exit_code == 0, result.stderr
    out = []
    for line in result.stdout.splitlines():
        label, word, value = line.split("\t")
        assert value == repr(float(value))  # the full float, read back exactly
        out.append((label, word, float(value)))
    return out


def log(fraction: F) -> float:
    return math.log(fraction.numerator) - math.log(fraction.denominator)


def sqrt(fraction: F) -> float:
    return math.sqrt(fraction.numerator / fraction.denominator)


def test_z_ranking_by_hand(runner, chinese_model):
    # X_jc = D_jc; X_c: china 6, japan 3; X = 9; the prior α_j = X_j (chinese 4, others 1),
    # α_0 = 9. δ = log (X_jc + α_j) / (X_c + α_0 − X_jc − α_j) − log (rest + α_j) / (...)
    # china against japan:
    #   beijing (macao, shanghai): log (1 + 1)/(6 + 9 − 1 − 1) − log (0 + 1)/(3 + 9 − 0 − 1)
    #     = log 22/13, σ² = 1/2 + 1/1 = 3/2
    #   chinese: log (3 + 4)/(6 + 9 − 3 − 4) − log (1 + 4)/(3 + 9 − 1 − 4) = log 49/40,
    #     σ² = 1/7 + 1/5 = 12/35
    #   japan (tokyo): log (0 + 1)/(6 + 9 − 0 − 1) − log (1 + 1)/(3 + 9 − 1 − 1) = log 5/14,
    #     σ² = 3/2
    # japan against china: the same with the signs turned (two classes).
    result = runner.invoke(cli, ["top-features", "-m", str(chinese_model), "--per-class", "6"])
    got = rows(result)
    beijing = log(F(22, 13)) / sqrt(F(3, 2))
    chinese = log(F(49, 40)) / sqrt(F(12, 35))
    japan = log(F(5, 14)) / sqrt(F(3, 2))
    expected = [
        ("china", "beijing", beijing),
        ("china", "macao", beijing),
        ("china", "shanghai", beijing),
        ("china", "chinese", chinese),
        ("china", "japan", japan),
        ("china", "tokyo", japan),
        ("japan", "japan", -japan),
        ("japan", "tokyo", -japan),
        ("japan", "chinese", -chinese),
        ("japan", "beijing", -beijing),
        ("japan", "macao", -beijing),
        ("japan", "shanghai", -beijing),
    ]
    assert [(c, w) for c, w, _ in got] == [(c, w) for c, w, _ in expected]
    for (_, _, value), (_, _, z) in zip(got, expected):
        assert value == pytest.approx(z, rel=1e-14, abs=1e-15)
    assert beijing == pytest.approx(0.4295532, rel=1e-6)  # the numbers themselves
    assert chinese == pytest.approx(0.3465875, rel=1e-6)


def test_z_of_sparse_counts_is_that_of_dense_counts():
    import numpy as np
    import scipy.sparse

    from nbclass.counting.counts import Counts
    from nbclass.models.selection import class_z_scores

    D = np.array([[1, 0], [3, 1], [0, 1], [1, 0], [1, 0], [0, 1]])  # the Chinese corpus
    T = np.array([[1, 0], [5, 1], [0, 1], [1, 0], [1, 0], [0, 1]])
    words = ("beijing", "chinese", "japan", "macao", "shanghai", "tokyo")
    dense = Counts(("china", "japan"), words, np.array([3, 1]), D, T)
    sparse = Counts(
        dense.classes, words, dense.class_count, scipy.sparse.csr_matrix(D),
        scipy.sparse.csr_matrix(T),
    )
    z = class_z_scores(dense)
    assert np.array_equal(class_z_scores(sparse), z)
    assert z[1, 0] == pytest.approx(log(F(49, 40)) / sqrt(F(12, 35)), rel=1e-14)


@pytest.mark.parametrize("block_cells", [2, 4, 2**18])
@pytest.mark.parametrize("k", [1, 2, 3, 4, 6, 9])
def test_z_ranked_a_block_at_a_time_is_z_ranked_whole(monkeypatch, block_cells, k):
    # ties at the k-th value across blocks (beijing, macao, shanghai; japan, tokyo) keep
    # vocabulary order, as a stable sort of the whole column does
    import numpy as np

    from nbclass.counting.counts import Counts
    from nbclass.models import selection
    from nbclass.models.estimators import EstimatorSettings

    D = np.array([[1, 0], [3, 1], [0, 1], [1, 0], [1, 0], [0, 1]])  # the Chinese corpus
    words = ("beijing", "chinese", "japan", "macao", "shanghai", "tokyo")
    counts = Counts(("china", "japan"), words, np.array([3, 1]), D, 2 * D)
    z = selection.class_z_scores(counts)
    whole = [
        (label, words[j], float(z[j, c]))
        for c, label in enumerate(counts.classes)
        for j in selection.rank_features(z[:, c], k).tolist()
    ]
    monkeypatch.setattr(selection, "BLOCK_CELLS", block_cells)
    got = selection.class_top_features(counts, EstimatorSettings(), k)
    assert [(f.label, f.word, f.value) for f in got] == whole
    assert len(got) == 2 * min(k, 6)


def test_z_depends_on_the_document_counts_only(runner, chinese_model):
    base = ["top-features", "-m", str(chinese_model), "--per-class", "6"]
    default = runner.invoke(cli, base)
    for args in (
        ["--model", "bernoulli"],
        ["--model", "multinomial", "--estimator", "mle"],
        ["--beta", "7"],
        ["--rank-by", "z"],
    ):
        assert runner.invoke(cli, [*base, *args]).stdout == default.stdout, args


def test_a_word_repeated_in_one_document_leads_the_log_ratio_not_z(runner, tmp_path):
    # A uuencoded attachment: "junk" 300 times in one document of class a, while "topic"
    # is in 30 of a's documents and none of b's.
    corpus = tmp_path / "corpus"
    for label, words in (("a", "topic common"), ("b", "other common")):
        (corpus / label).mkdir(parents=True)
        for i in range(30):
            (corpus / label / f"{i}.txt").write_text(words)
    (corpus / "a" / "attachment.txt").write_text("common " + "junk " * 300)
    model = tmp_path / "m.nbc"
    # of words: "topic common" would tie with "topic" (the pairs of the short documents)
    words = ["--ngram-range", "1,1"]
    assert runner.invoke(cli, ["fit", str(corpus), "-o", str(model), "-q", *words]).exit_code == 0
    base = ["top-features", "-m", str(model), "--per-class", "2"]
    z = rows(runner.invoke(cli, base))
    ratio = rows(runner.invoke(cli, [*base, "--rank-by", "log-ratio", "--beta", "1"]))
    assert [w for c, w, _ in z if c == "a"] == ["topic", "junk"]
    assert [w for c, w, _ in ratio if c == "a"] == ["junk", "topic"]
    # topic: X_jc = 30, rest 0, α = 30; X_a = 30 + 31 + 1 = 62, X_b = 60, X = 122 = α_0
    #   δ = log 60/(62 + 122 − 60) − log 30/(60 + 122 − 30) = log (60 · 152)/(124 · 30)
    topic = log(F(60 * 152, 124 * 30)) / sqrt(F(1, 60) + F(1, 30))
    assert z[0][2] == pytest.approx(topic, rel=1e-14)


def test_multinomial_posterior_mean_ranking_by_hand(runner, chinese_model):
    # china: θ = (T_jc + 1) / (8 + 6), rest: (T_j,japan + 1) / (3 + 6)
    #   chinese (6/14)/(2/9) = 27/14; beijing, macao, shanghai (2/14)/(1/9) = 9/7
    #   japan, tokyo (1/14)/(2/9) = 9/28
    # japan: θ = (T_jc + 1) / 9, rest: (T_j,china + 1) / 14
    #   japan, tokyo (2/9)/(1/14) = 28/9; beijing... (1/9)/(2/14) = 7/9; chinese 14/27
    args = ["--model", "multinomial", "--estimator", "posterior-mean", "--beta", "1"]
    args += ["--rank-by", "log-ratio"]
    result = runner.invoke(
        cli, ["top-features", "-m", str(chinese_model), "--per-class", "3", *args]
    )
    got = rows(result)
    expected = [
        ("china", "chinese", F(27, 14)),
        ("china", "beijing", F(9, 7)),  # ties keep alphabetical order
        ("china", "macao", F(9, 7)),
        ("japan", "japan", F(28, 9)),
        ("japan", "tokyo", F(28, 9)),
        ("japan", "beijing", F(7, 9)),
    ]
    assert [(c, w) for c, w, _ in got] == [(c, w) for c, w, _ in expected]
    for (_, _, value), (_, _, ratio) in zip(got, expected):
        assert value == pytest.approx(log(ratio), rel=1e-14, abs=1e-15)


def test_bernoulli_ranks_by_presence(runner, chinese_model):
    # china: θ = (D_jc + 1) / (3 + 2), rest (japan): (D_j,japan + 1) / (1 + 2)
    #   beijing (2/5)/(1/3) = chinese (4/5)/(2/3) = macao = shanghai = 6/5; japan 3/10
    # japan: θ = (D_jc + 1) / 3, rest: (D_j,china + 1) / 5
    #   japan = tokyo (2/3)/(1/5) = 10/3; chinese (2/3)/(4/5) = 5/6; beijing (1/3)/(2/5) = 5/6
    args = ["--model", "bernoulli", "--estimator", "posterior-mean", "--beta", "1"]
    args += ["--rank-by", "log-ratio"]
    result = runner.invoke(
        cli, ["top-features", "-m", str(chinese_model), "--per-class", "4", *args]
    )
    got = rows(result)
    expected = [
        ("china", "beijing", F(6, 5)),
        ("china", "chinese", F(6, 5)),
        ("china", "macao", F(6, 5)),
        ("china", "shanghai", F(6, 5)),
        ("japan", "japan", F(10, 3)),
        ("japan", "tokyo", F(10, 3)),
        ("japan", "beijing", F(5, 6)),
        ("japan", "chinese", F(5, 6)),
    ]
    assert [(c, w) for c, w, _ in got] == [(c, w) for c, w, _ in expected]
    for (_, _, value), (_, _, ratio) in zip(got, expected):
        assert value == pytest.approx(log(ratio), rel=1e-14, abs=1e-15)


def test_mle_words_never_seen_elsewhere_come_first_with_infinity(runner, chinese_model):
    # china, mle: beijing (1/8)/(0/3) = +inf (so macao, shanghai); chinese (5/8)/(1/3) = 15/8;
    # japan (0/8)/(1/3): never in china, -inf
    args = ["--model", "multinomial", "--estimator", "mle", "--rank-by", "log-ratio"]
    result = runner.invoke(
        cli, ["top-features", "-m", str(chinese_model), "--per-class", "6", *args]
    )
    got = [r for r in rows(result) if r[0] == "china"]
    assert [w for _, w, _ in got] == ["beijing", "macao", "shanghai", "chinese", "japan", "tokyo"]
    assert [v for _, _, v in got[:3]] == [math.inf] * 3
    assert got[3][2] == pytest.approx(log(F(15, 8)), rel=1e-14)
    assert [v for _, _, v in got[4:]] == [-math.inf] * 2
    jsonl = runner.invoke(
        cli,
        ["top-features", "-m", str(chinese_model), "--per-class", "1", "--format", "jsonl", *args],
    )
    assert jsonl.exit_code == 0
    assert [json.loads(line) for line in jsonl.stdout.splitlines()] == [
        {"class": "china", "word": "beijing", "log_ratio": "inf"},
        {"class": "japan", "word": "japan", "log_ratio": "inf"},
    ]


@pytest.mark.parametrize("rank_by, key", [("z", "z"), ("log-ratio", "log_ratio")])
def test_jsonl_matches_tsv(runner, chinese_model, rank_by, key):
    base = ["top-features", "-m", str(chinese_model), "--per-class", "2", "--rank-by", rank_by]
    tsv = runner.invoke(cli, base)
    jsonl = runner.invoke(cli, [*base, "--format", "jsonl"])
    assert jsonl.exit_code == 0 and jsonl.stderr == ""
    records = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert all(list(r) == ["class", "word", key] for r in records)
    assert [f"{r['class']}\t{r['word']}\t{r[key]!r}" for r in records] == (
        tsv.stdout.splitlines()
    )
    assert len(records) == 4


def test_rank_by_another_name_is_a_usage_error(runner, chinese_model):
    result = runner.invoke(
        cli, ["top-features", "-m", str(chinese_model), "--per-class", "2", "--rank-by", "mi"]
    )
    assert result.exit_code == 2
    assert "'mi' is not one of 'z', 'log-ratio'" in result.stderr


def test_more_than_the_vocabulary_lists_every_word_and_says_so(runner, chinese_model):
    result = runner.invoke(cli, ["top-features", "-m", str(chinese_model), "--per-class", "9"])
    assert result.exit_code == 0
    assert result.stderr == (
        "top-features: --per-class 9 is more than the model's 6 words: listing all of them\n"
    )
    assert len(result.stdout.splitlines()) == 12


def test_per_class_zero_is_a_usage_error(runner, chinese_model):
    result = runner.invoke(cli, ["top-features", "-m", str(chinese_model), "--per-class", "0"])
    assert result.exit_code == 2
    assert "--per-class 0 is out of range: give a whole number from 1" in result.stderr
