"""fit --model auto: the named formulas, the choice from the data, and the calibration.

- A model name means its formula: through the real command, --model multinomial /
  bernoulli with --beta 1 give scikit-learn's MultinomialNB / BernoulliNB probabilities,
  and --model complement --no-class-prior ComplementNB's decisions.
- The folds' training counts are exactly a refit without the fold.
- On planted corpora (documents drawn from a Bernoulli, a multinomial and a bursty
  model) fit chooses a model of the right kind.
- The calibration lowers the held-out log loss of an overconfident model, never
  changes a label, and travels with the model file (kept by update, merge and unlearn,
  chosen again by sync).
- Selection reads only training documents.
"""

from __future__ import annotations

import json
import math
import subprocess
from fractions import Fraction as F

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner
from conftest import DEMO_CORPUS, DEMO_DOCS, nbclass_command, write_corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nbclass.cli.app import cli
from nbclass.counting.counts import CountAccumulator, as_table
from nbclass.counting.csr import as_csr
from nbclass.modelfile.textfile import load
from nbclass.models import choosing, chosen
from nbclass.models.choosing import (
    CANDIDATES,
    choose,
    fit_calibration,
    fold_of,
    stratified_fold_ids,
)
from nbclass.models.estimators import Calibration, EstimatorSettings
from nbclass.text.vectorizer import count_matrix


def run(*args, input: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *map(str, args)], input=input, capture_output=True, timeout=300
    )


def invoke(*args, input=None):
    return CliRunner().invoke(cli, [str(a) for a in args], input=input)


def jsonl_probabilities(model, folder, *options) -> dict[str, dict[str, float]]:
    result = run("predict", "-m", model, folder, "--format", "jsonl", *options)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.decode().splitlines()]
    return {r["source"]: r["probabilities"] for r in records}


# --- a model name means its formula ---------------------------------------------------------


@pytest.fixture(scope="module")
def news_vectors(news_sample):
    """scikit-learn's view of the 20 Newsgroups sample: X_train, y_train, X_test, paths."""
    from sklearn.feature_extraction.text import CountVectorizer

    train, test = news_sample
    classes = sorted(p.name for p in train.iterdir())

    def documents(root):
        paths = sorted(p for c in classes for p in (root / c).iterdir())
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in paths]
        return paths, texts, [classes.index(p.parent.name) for p in paths]

    _, train_texts, y = documents(train)
    test_paths, test_texts, _ = documents(test)
    vectorizer = CountVectorizer()
    X = vectorizer.fit_transform(train_texts)
    return X, np.array(y), vectorizer.transform(test_texts), test_paths, classes


@pytest.mark.corpus
@pytest.mark.parametrize(
    "options, estimator",
    [
        (["--model", "multinomial", "--beta", "1"], "MultinomialNB"),
        (["--model", "bernoulli", "--beta", "1"], "BernoulliNB"),
        (["--model", "multinomial"], "MultinomialNB"),  # β = 1 is the formula's default
    ],
)
def test_a_named_model_gives_scikit_learns_probabilities(
    news_sample, news_vectors, tmp_path, options, estimator
):
    import sklearn.naive_bayes as nb

    train, test = news_sample
    X, y, X_test, test_paths, classes = news_vectors
    model = tmp_path / "m.nbc"
    assert run("fit", train, "-o", model, "-q", *options).returncode == 0
    assert load(str(model)).calibration is None and load(str(model)).choice is None
    ours = jsonl_probabilities(model, test)
    theirs = getattr(nb, estimator)(alpha=1.0).fit(X, y).predict_proba(X_test)
    for path, row in zip(test_paths, theirs):
        got = ours[str(path)]
        assert max(abs(got[c] - row[k]) for k, c in enumerate(classes)) <= 1e-9


@pytest.mark.corpus
def test_named_complement_without_the_prior_decides_as_complementnb(
    news_sample, news_vectors, tmp_path
):
    from sklearn.naive_bayes import ComplementNB

    train, test = news_sample
    X, y, X_test, test_paths, classes = news_vectors
    model = tmp_path / "m.nbc"
    options = ["--model", "complement", "--beta", "1", "--no-class-prior"]
    assert run("fit", train, "-o", model, "-q", *options).returncode == 0
    result = run("predict", "-m", model, test)
    labels = dict(line.split("\t")[:2] for line in result.stdout.decode().splitlines())
    theirs = ComplementNB(alpha=1.0).fit(X, y).predict(X_test)
    assert [labels[str(p)] for p in test_paths] == [classes[k] for k in theirs]


def test_predict_with_a_model_name_scores_that_formula_not_the_stored_transform(tmp_path):
    """A model fit chose (complement, log tf, ...) scored with --model multinomial is the
    plain multinomial: the same as a model fitted with --model multinomial (and the
    features the choice kept: on the demo corpus the words, the symbols and the pairs of
    its short documents, in two documents at least)."""
    chosen, plain = tmp_path / "auto.nbc", tmp_path / "plain.nbc"
    assert run("fit", DEMO_CORPUS, "-o", chosen, "-q").returncode == 0
    assert load(str(chosen)).vocabulary_filter.features == ("words", "symbols", "pairs")
    kept = ["--symbols", "--ngram-range", "1,2", "--ngram-doc-limit", "64", "--min-df", "2"]
    assert run(
        "fit", DEMO_CORPUS, "-o", plain, "-q", "--model", "multinomial", *kept
    ).returncode == 0
    assert jsonl_probabilities(chosen, DEMO_DOCS, "--model", "multinomial") == (
        jsonl_probabilities(plain, DEMO_DOCS)
    )


def test_a_given_option_turns_the_calibration_off(tmp_path):
    model = tmp_path / "m.nbc"
    assert run("fit", DEMO_CORPUS, "-o", model, "-q").returncode == 0
    stored = load(str(model))
    assert stored.calibration is not None
    plain = jsonl_probabilities(model, DEMO_DOCS, "--no-calibration")
    formula = {"--model": stored.defaults.model}
    given = jsonl_probabilities(model, DEMO_DOCS, *sum(map(list, formula.items()), []))
    calibrated = jsonl_probabilities(model, DEMO_DOCS)
    assert calibrated != plain
    for source, row in calibrated.items():  # the same order of the classes, other numbers
        assert sorted(row, key=row.get) == sorted(plain[source], key=plain[source].get)
    if stored.defaults == EstimatorSettings(model=stored.defaults.model):
        assert given == plain  # the stored settings are the formula itself


# --- the folds ------------------------------------------------------------------------------


def counts_of(documents: list[list[str]], labels: list[int], classes=("a", "b")):
    accumulator = CountAccumulator(list(classes))
    accumulator.add(count_matrix(documents, accumulator.vocabulary), labels)
    return accumulator.result()


def test_a_folds_training_counts_are_a_refit_without_it():
    documents = [["x", "y", "y"], ["y", "z"], ["x", "w"], ["w", "w", "v"], ["v"]]
    labels = [0, 0, 1, 1, 0]
    counts = counts_of(documents, labels)
    at = {w: j for j, w in enumerate(counts.vocabulary)}
    X = count_matrix(documents, at)
    held = np.array([1, 4])  # the second and the last document
    fold = fold_of(counts, sp.csr_matrix(X), np.array(labels), held)
    rest = [0, 2, 3]
    refit = counts_of([documents[i] for i in rest], [labels[i] for i in rest])
    assert fold.counts.equals(refit)  # "z" and "v" are gone, as a refit never saw them
    assert [counts.vocabulary[j] for j in fold.words] == list(refit.vocabulary)


# Small corpora of three classes: (the words of a document, its class).
CORPORA = st.lists(
    st.tuples(st.lists(st.sampled_from("uvwxyz"), max_size=6), st.integers(0, 2)),
    min_size=2,
    max_size=12,
)


def drawn_fold(corpus, data):
    """``(documents, labels, counts, X, held)`` of a drawn corpus and held-out rows."""
    documents, labels = [d for d, _ in corpus], [c for _, c in corpus]
    counts = counts_of(documents, labels, classes=("a", "b", "c"))
    X = sp.csr_matrix(count_matrix(documents, {w: j for j, w in enumerate(counts.vocabulary)}))
    held = np.array(
        sorted(data.draw(st.sets(st.integers(0, len(documents) - 1), min_size=1,
                                 max_size=len(documents) - 1)))
    )  # fmt: skip
    return documents, labels, counts, X, held


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CORPORA, st.data())
def test_any_fold_is_a_refit_of_the_documents_it_keeps(corpus, data):
    """A law: held-out counts subtracted cell by cell equal a count of the rest, and the
    fold's used rows are exactly the held-out documents' words that the rest knows."""
    documents, labels, counts, X, held = drawn_fold(corpus, data)
    rest = [i for i in range(len(documents)) if i not in set(held.tolist())]
    refit = counts_of([documents[i] for i in rest], [labels[i] for i in rest], ("a", "b", "c"))
    fold = fold_of(counts, X, np.array(labels), held)
    training_classes = [n for n, k in zip(refit.classes, refit.class_count.tolist()) if k]
    keep = np.flatnonzero(refit.class_count)
    assert fold.counts.classes == tuple(training_classes)
    assert fold.counts.vocabulary == refit.vocabulary
    assert np.array_equal(as_table(fold.counts.token_count), as_table(refit.token_count)[:, keep])
    assert np.array_equal(as_table(fold.counts.doc_count), as_table(refit.doc_count)[:, keep])
    assert fold.counts.class_count.tolist() == refit.class_count[keep].tolist()
    held_words = {w for i in held.tolist() for w in documents[i]}
    used = [fold.counts.vocabulary[j] for j in fold.used]
    assert used == sorted(held_words & set(refit.vocabulary))


def _csr(counts):
    from nbclass.counting.counts import Counts

    return Counts(counts.classes, counts.vocabulary, counts.class_count,
                  sp.csr_matrix(as_table(counts.doc_count)),
                  sp.csr_matrix(as_table(counts.token_count)))  # fmt: skip


def _same_folds(a, b):
    for x, z in ((a.counts.token_count, b.counts.token_count),
                 (a.counts.doc_count, b.counts.doc_count)):  # fmt: skip
        assert (x.dtype, x.indices.dtype, x.indptr.dtype, x.shape) == (
            z.dtype, z.indices.dtype, z.indptr.dtype, z.shape)  # fmt: skip
        for u, v in ((x.data, z.data), (x.indices, z.indices), (x.indptr, z.indptr)):
            assert u.tobytes() == v.tobytes()
    assert a.words.tolist() == b.words.tolist() and a.used.tolist() == b.used.tolist()
    assert a.counts.equals(b.counts) and a.classes.tolist() == b.classes.tolist()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CORPORA, st.data())
def test_a_fold_of_csr_counts_subtracts_tokens_and_documents_packed_as_one(corpus, data):
    """T_jc and D_jc summed and subtracted as one int64 (T << 32 | D) give the fold's
    tables array for array as when each is subtracted on its own."""
    _, labels, counts, X, held = drawn_fold(corpus, data)
    counts = _csr(counts)
    assert choosing._packed(counts, sp.csr_matrix(X[held])) is not None
    packed = fold_of(counts, X, np.array(labels), held)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(choosing, "_packed", lambda *args: None)
        apart = fold_of(counts, X, np.array(labels), held)
    _same_folds(packed, apart)


NARROW = [np.uint8, np.uint16, np.uint32, np.int32, np.int64]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_fold_of_narrow_counts_near_their_types_top_is_the_plain_subtraction(data):
    """Counts of a model file's narrow types (one byte to eight), some documents' counts
    near the type's largest value: the fold found in the counts' pattern and subtracted
    in their own type gives, array for array, the fold subtracted table by table, and
    its tokens are those of a refit of the documents kept (the int64 sums of their rows)."""
    from nbclass.counting.counts import Counts

    dtype = data.draw(st.sampled_from(NARROW))
    top = 2**40 if dtype == np.int64 else int(np.iinfo(dtype).max)
    n, V, C = data.draw(st.integers(2, 10)), data.draw(st.integers(1, 5)), 3
    cell = st.integers(0, 3)
    X = np.array(data.draw(st.lists(st.lists(cell, min_size=V, max_size=V), min_size=n,
                                    max_size=n)), dtype=np.int64)  # fmt: skip
    for i, j in data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, V - 1)),
                                   max_size=3)):  # fmt: skip
        X[i, j] = data.draw(st.integers(0, top // n))  # the column's sum stays within top
    labels = np.array(data.draw(st.lists(st.integers(0, C - 1), min_size=n, max_size=n)))
    members = np.eye(C, dtype=np.int64)[labels].T  # (C, n)
    T, D = (members @ X).T, (members @ (X > 0)).T
    counts = Counts(("a", "b", "c"), tuple(f"w{j}" for j in range(V)),
                    np.bincount(labels, minlength=C), sp.csr_matrix(D.astype(dtype)),
                    sp.csr_matrix(T.astype(dtype)))  # fmt: skip
    assert counts.token_count.dtype == dtype
    held = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1,
                                             max_size=n - 1))))  # fmt: skip
    X = sp.csr_matrix(X)
    got = fold_of(counts, X, labels, held)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(choosing, "_packed", lambda *args: None)
        apart = fold_of(counts, X, labels, held)
    _same_folds(got, apart)
    rest = np.setdiff1d(np.arange(n), held)
    kept = (members[:, rest] @ X[rest].toarray()).T  # (V, C) in int64
    words, classes = np.flatnonzero(kept.sum(axis=1)), np.flatnonzero(members[:, rest].sum(1))
    assert as_table(got.counts.token_count).tolist() == kept[np.ix_(words, classes)].tolist()


def test_counts_short_of_the_held_out_documents_are_subtracted_apart():
    """Counts that do not hold the held-out documents' (a D_jc left at 0 where T_jc is
    not, which one packed cell cannot say) are subtracted table by table, as always."""
    from nbclass.counting.counts import Counts

    documents, labels = [["x", "x", "y"], ["x", "z"], ["x"]], [0, 0, 1]
    counts = _csr(counts_of(documents, labels))
    X = sp.csr_matrix(count_matrix(documents, {w: j for j, w in enumerate(counts.vocabulary)}))
    D = as_table(counts.doc_count).copy()
    D[0, 0] = 1  # "x" in one document of "a", where the two of "a" hold it
    short = Counts(counts.classes, counts.vocabulary, counts.class_count, sp.csr_matrix(D),
                   counts.token_count)  # fmt: skip
    held = np.array([1])  # ["x", "z"], of "a"
    cells = choosing._Cells(*as_csr(np.array([[1], [0]])).matmul_sparse(choosing._packed(
        short, sp.csr_matrix(X[held]))).entries())  # fmt: skip
    assert choosing._packed_fold(short, cells, np.array([2])) is None
    got = fold_of(short, X, np.array(labels), held)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(choosing, "_packed", lambda *args: None)
        apart = fold_of(short, X, np.array(labels), held)
    _same_folds(got, apart)
    assert got.counts.vocabulary == ("x", "y")
    assert as_table(got.counts.token_count).tolist() == [[2, 1], [1, 0]]
    assert as_table(got.counts.doc_count).tolist() == [[0, 1], [1, 0]]



BIG = 2**31


@pytest.mark.parametrize(
    "x0, t_xa, n_a, dtype, packs",
    [
        (BIG - 10, BIG - 5, 2, np.int64, True),  # every value just below 2^31: packed
        (BIG - 10, BIG - 1, 2, np.int32, True),  # T_jc at 2^31 - 1 (int32 counts)
        (BIG - 10, BIG, 2, np.int64, False),  # a T_jc of 2^31: apart
        (BIG - 1, BIG + 4, 2, np.int64, False),  # held-out tokens 2^31 in all: apart
        (BIG - 10, BIG - 5, BIG, np.int64, False),  # a class of 2^31 documents: apart
        (40_000, 40_005, 2, np.uint16, True),  # a model file's narrow counts
        (40_000, 40_005, 2, np.uint64, False),  # not int64 once subtracted: apart
    ],
)  # fmt: skip
def test_a_packed_fold_at_the_edges_of_32_bits_is_the_fold_subtracted_apart(
    x0, t_xa, n_a, dtype, packs
):
    """Counts near 2^31 (the packed cell's halves) and of narrow or unsigned types: the
    fold holding out a document of x0 tokens of "x" packs where its values fit and
    subtracts table by table where they do not, with the same tables either way and the
    values of a refit: "x" of "a" keeps t_xa - x0 tokens in 1 document, "y" of "a" goes
    (its one token held out), "b" keeps its own."""
    from nbclass.counting.counts import Counts

    X = sp.csr_matrix(np.array([[x0, 1], [t_xa - x0, 0], [3, 2]], dtype=np.int64))
    labels = np.array([0, 0, 1])
    T = np.array([[t_xa, 3], [1, 2]], dtype=np.int64)
    D = np.array([[2, 1], [1, 1]], dtype=np.int64)
    counts = Counts(("a", "b"), ("x", "y"), np.array([n_a, 1], dtype=np.int64),
                    sp.csr_matrix(D.astype(dtype)), sp.csr_matrix(T.astype(dtype)))  # fmt: skip
    held = np.array([0])
    assert (choosing._packed(counts, sp.csr_matrix(X[held])) is not None) == packs
    got = fold_of(counts, X, labels, held)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(choosing, "_packed", lambda *args: None)
        apart = fold_of(counts, X, labels, held)
    _same_folds(got, apart)
    assert got.counts.vocabulary == ("x", "y") and got.counts.classes == ("a", "b")
    assert as_table(got.counts.token_count).tolist() == [[t_xa - x0, 3], [0, 2]]
    assert as_table(got.counts.doc_count).tolist() == [[1, 1], [0, 1]]
    assert got.counts.class_count.tolist() == [n_a - 1, 1]


def test_counts_short_of_the_held_out_tokens_near_2_to_the_32_are_subtracted_apart():
    """A T_jc below the held-out documents' 9 tokens (a negative high half), or a D_jc
    below their 2 documents (a borrow from the high half: T_jc of 10 left looking 0 and
    of 11 looking 1, D_jc 2^32 - 1 in the low half) is no count of a refit: the packed
    fold gives None and the fold is subtracted table by table, the same tables."""
    from nbclass.counting.counts import Counts

    X = sp.csr_matrix(np.array([[7, 1], [2, 0], [3, 2]], dtype=np.int64))
    labels = np.array([0, 0, 1])
    for T_xa, D_xa in ((5, 2), (10, 1), (11, 1)):
        T = np.array([[T_xa, 3], [1, 2]], dtype=np.int64)
        D = np.array([[D_xa, 1], [1, 1]], dtype=np.int64)
        counts = Counts(("a", "b"), ("x", "y"), np.array([2, 1], dtype=np.int64),
                        sp.csr_matrix(D), sp.csr_matrix(T))  # fmt: skip
        held = np.array([0, 1])
        both = choosing._packed(counts, sp.csr_matrix(X[held]))
        assert both is not None
        members = as_csr(np.array([[1, 1], [0, 0]], dtype=np.int64))
        cells = choosing._Cells(*members.matmul_sparse(both).entries())
        assert choosing._packed_fold(counts, cells, np.array([1])) is None
        got = fold_of(counts, X, labels, held)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(choosing, "_packed", lambda *args: None)
            apart = fold_of(counts, X, labels, held)
        _same_folds(got, apart)


def test_a_class_left_without_documents_is_dropped_from_the_fold():
    documents = [["x"], ["y"], ["x", "y"]]
    counts = counts_of(documents, [0, 0, 1])
    X = sp.csr_matrix(count_matrix(documents, {w: j for j, w in enumerate(counts.vocabulary)}))
    fold = fold_of(counts, X, np.array([0, 0, 1]), np.array([2]))
    assert fold.counts.classes == ("a",) and fold.classes.tolist() == [0]


def test_stratified_folds_deal_each_class_in_turn():
    y = np.array([0] * 7 + [1] * 3)
    fold = stratified_fold_ids(y, 5)
    assert np.bincount(fold, minlength=5).tolist() == [2, 2, 2, 2, 2]
    for c in (0, 1):
        sizes = np.bincount(fold[y == c], minlength=5)
        assert sizes.max() - sizes.min() <= 1


def test_a_sample_of_single_document_classes_chooses_the_first_candidate():
    documents = [["x"], ["y"]]
    counts = counts_of(documents, [0, 1])
    X = sp.csr_matrix(count_matrix(documents, {w: j for j, w in enumerate(counts.vocabulary)}))
    choice = choose(counts, X, np.array([0, 1]))
    assert choice.settings == CANDIDATES[0] and choice.documents == 0
    assert choice.calibration == Calibration(0.0, 0.0)


# --- planted corpora: the right kind of model wins -------------------------------------------


def planted(tmp_path, kind: str, seed: int = 7):
    """Two classes over 60 words, 150 documents each, drawn from one generative model."""
    rng = np.random.default_rng(seed)
    words = [f"w{j:02d}" for j in range(60)]
    # each class favours its own 12 words a little; the rest are shared
    profiles = []
    for c in range(2):
        theta = np.full(60, 1.0)
        theta[c * 12 : c * 12 + 12] = 1.6
        profiles.append(theta / theta.sum())
    documents = {}
    for c, theta in enumerate(profiles):
        texts = []
        for _ in range(150):
            if kind == "bernoulli":  # each word present or not, once at most; the classes
                # differ only in how many words a document holds (the same proportions), so
                # only the absent words tell them apart
                present = rng.random(60) < (0.2 if c == 0 else 0.45)
                tokens = [w for w, p in zip(words, present) if p]
            elif kind == "multinomial":  # 40 independent draws
                tokens = list(rng.choice(words, size=40, p=theta))
            else:  # bursty: 6 distinct words, each repeated many times
                distinct = rng.choice(60, size=6, replace=False, p=theta)
                tokens = [words[j] for j in distinct for _ in range(int(rng.integers(3, 12)))]
            rng.shuffle(tokens)
            texts.append(" ".join(tokens) or "w00")
        documents[f"c{c}"] = texts
    return write_corpus(tmp_path / kind, documents)


@pytest.mark.parametrize(
    "kind, expected",
    [
        ("bernoulli", {"bernoulli", "dcm"}),  # absences (or the DCM's length term) tell
        ("multinomial", {"multinomial", "complement"}),  # models of counts
        ("bursty", {"dcm", "bernoulli", "log"}),  # repeats carry no news: presence, the
    ],  # DCM, or counts damped by log(1 + tf)
)
def test_fit_chooses_a_model_of_the_kind_the_documents_were_drawn_from(tmp_path, kind, expected):
    corpus = planted(tmp_path, kind)
    model = tmp_path / "m.nbc"
    result = invoke("fit", corpus, "-o", model, "-j", "1")
    assert result.exit_code == 0, result.output
    chosen = load(str(model))
    kind_of = {chosen.defaults.model, chosen.defaults.tf}
    assert kind_of & expected, chosen.choice["chosen"]
    assert f"chose {chosen.choice['chosen']}, " in result.output
    table = {row["name"]: row for row in chosen.choice["candidates"]}
    # the candidates on the words, and the winner with class offsets after them (at most
    # one row)
    formulas = [row for row in table.values() if not row.get("offsets")]
    words = [row for row in formulas if row["features"] == ["words"]]
    assert len(words) == len(CANDIDATES) and len(table) - len(formulas) <= 1
    # and a second round on the words and their pairs: the documents are short (at most
    # 60 tokens, 66 for the bursty ones), so fit counts the pairs of most of them
    second = [row for row in formulas if row["features"] != ["words"]]
    assert second and all(row["features"] == ["words", "pairs"] for row in second)
    assert sum(r["chosen"] for r in table.values()) == 1


def test_the_shortfall_is_the_larger_gap_to_the_best_accuracy_and_macro_f1():
    accuracy = [F(74, 100), F(72, 100), F(70, 100)]
    macro_f1 = [F(38, 100), F(43, 100), F(40, 100)]
    # gaps: (0, 5/100), (2/100, 0), (4/100, 3/100)
    assert choosing.shortfall(accuracy, macro_f1) == [0.05, 0.02, 0.04]
    assert choosing.shortfall([0.5, 0.5], [0.25, 0.25]) == [0.0, 0.0]  # a tie stays a tie


def test_the_chosen_candidate_has_the_smallest_shortfall_of_its_table(tmp_path):
    """Unequal classes: the winner is read back from the model file's table and checked
    against the criterion computed from the table's own numbers."""
    rng = np.random.default_rng(11)
    words = [f"w{j}" for j in range(30)]
    sizes = {"big": 240, "mid": 40, "small": 12}
    documents = {}
    for c, (name, size) in enumerate(sizes.items()):
        theta = np.ones(30)
        theta[c * 6 : c * 6 + 6] = 2.0
        theta /= theta.sum()
        documents[name] = [" ".join(rng.choice(words, size=12, p=theta)) for _ in range(size)]
    model = tmp_path / "m.nbc"
    result = invoke("fit", write_corpus(tmp_path / "c", documents), "-o", model, "-j", "1")
    assert result.exit_code == 0, result.output
    table = load(str(model)).choice["candidates"]
    gaps = choosing.shortfall([r["accuracy"] for r in table], [r["macro_f1"] for r in table])
    ranked = sorted(range(len(table)), key=lambda i: (gaps[i], table[i]["log_loss"], i))
    assert table[ranked[0]]["chosen"] and sum(r["chosen"] for r in table) == 1


# --- the calibration -------------------------------------------------------------------------


def test_the_calibration_lowers_the_held_out_log_loss_of_an_overconfident_model():
    """Scores ten times too sure (the true log-odds are jll / 10): the fitted temperature
    brings the log loss of new documents from the same source down, labels unchanged."""
    rng = np.random.default_rng(3)

    def draw(n):
        lengths = rng.integers(5, 200, size=n)
        margin = rng.normal(0.0, 1.0, size=n) * np.sqrt(lengths) * 0.3
        p_true = 1 / (1 + np.exp(-margin))
        y = (rng.random(n) > p_true).astype(np.int64)  # class 0 with probability p_true
        jll = np.stack([margin * 10, np.zeros(n)], axis=1)
        return jll, y, lengths

    jll, y, lengths = draw(4000)
    calibration = fit_calibration(jll, y, lengths)
    assert calibration.t0 > 0 or calibration.t1 > 0  # a temperature above 1: less sure
    new_jll, new_y, new_lengths = draw(4000)
    before = choosing.log_loss_of(chosen.calibrated(new_jll, new_lengths, None), new_y)
    after = choosing.log_loss_of(chosen.calibrated(new_jll, new_lengths, calibration), new_y)
    assert after < 0.8 * before
    same = chosen.calibrated(new_jll, new_lengths, calibration).argmax(axis=1)
    assert (same == new_jll.argmax(axis=1)).all()


def test_the_calibration_is_the_minimum_of_its_loss_over_the_box():
    """No point of a grid over t0, t1 ∈ [0, 1] and t2 ∈ [−1, 1] has a lower held-out
    cross-entropy."""
    rng = np.random.default_rng(5)
    n, C = 1500, 4
    lengths = rng.integers(1, 400, size=n)
    jll = rng.normal(size=(n, C)) * np.sqrt(lengths)[:, None]
    y = np.where(rng.random(n) < 0.6, jll.argmax(axis=1), rng.integers(0, C, size=n))
    calibration = fit_calibration(jll, y, lengths)

    def cross_entropy(calibration):
        return choosing.log_loss_of(chosen.calibrated(jll, lengths, calibration), y)

    grid = min(
        cross_entropy(Calibration(t0, t1, t2))
        for t0 in np.linspace(-4, 4, 33)
        for t1 in np.linspace(0, 1, 6)
        for t2 in np.linspace(-1, 1, 9)
    )
    assert cross_entropy(calibration) <= grid + 1e-6
    assert 0 <= calibration.t1 <= 1 and -1 <= calibration.t2 <= 1


def test_the_gap_between_the_two_top_scores_of_each_row():
    """g = b_(1) − b_(2) as a sort of each row gives it: a tie at the top (0, the best
    class counted once), the best class last, one possible class or none (0), and rows
    of 20,000 classes whose two best scores are placed by hand."""
    scores = np.array([
        [1.0, 7.5, 7.5, -2.0],
        [-3.0, -1.0, -2.5, 0.25],
        [-np.inf, 5.0, -np.inf, -np.inf],
        [-np.inf] * 4,
    ])  # fmt: skip
    assert chosen.score_gaps(scores).tolist() == [0.0, 1.25, 0.0, 0.0]
    rng = np.random.default_rng(3)
    many = -rng.uniform(100.0, 200.0, size=(3, 20_000))
    many[0, [17, 19_999]] = [-40.0, -10.5]
    many[1, [0, 12_345]] = [-7.25, -7.0]
    many[2, 3] = -99.0
    gaps = chosen.score_gaps(many)
    assert gaps[:2].tolist() == [29.5, 0.25]
    assert gaps[2] == -99.0 - np.sort(many[2])[-2]


def test_the_temperature_grows_with_the_gap_between_the_two_top_scores_by_hand():
    """T = exp(t0 + t1 log(1 + n) + t2 log(1 + g)): n = 3 tokens, g = 4 − 1 = 3."""
    calibration = Calibration(0.5, 0.25, 0.5)
    assert calibration.temperature(3, 3.0) == pytest.approx(
        math.exp(0.5) * F(4) ** F(1, 4) * F(4) ** F(1, 2), rel=1e-15
    )
    scores = np.array([[4.0, 1.0, -np.inf], [2.0, -np.inf, -np.inf]])
    assert chosen.score_gaps(scores).tolist() == [3.0, 0.0]  # one possible class: no gap
    T = chosen.temperatures(calibration, np.array([3, 3]), scores)
    assert T[0] == pytest.approx(calibration.temperature(3, 3.0), rel=1e-15)
    assert T[1] == pytest.approx(calibration.temperature(3, 0.0), rel=1e-15)


def test_a_calibration_record_is_checked_and_an_older_one_has_no_gap_term():
    assert Calibration.from_dict({"kind": "length-temperature", "t0": 0.5, "t1": 0.25}) == (
        Calibration(0.5, 0.25, 0.0)
    )
    record = Calibration(0.5, 0.25, -0.5).to_dict()
    assert Calibration.from_dict(record) == Calibration(0.5, 0.25, -0.5)
    for bad in ({"t2": 1.5}, {"t2": float("nan")}, {"t0": 21.0}, {"kind": "isotonic"}):
        with pytest.raises(ValueError):
            Calibration.from_dict({**record, **bad})


def test_the_calibrated_gap_grows_with_the_raw_gap():
    """t2 ≤ 1 keeps g / T(g) increasing, so a document further ahead stays surer."""
    for t2 in (-1.0, 0.0, 0.5, 1.0):
        calibration = Calibration(0.3, 0.5, t2)
        gaps = np.linspace(0.0, 500.0, 2001)
        calibrated_gaps = [g / calibration.temperature(20, g) for g in gaps]
        assert all(b >= a for a, b in zip(calibrated_gaps, calibrated_gaps[1:]))


def test_documents_of_one_length_calibrate_with_one_temperature():
    """t0 and t1 then do the same thing (the Hessian is singular): the fit still ends."""
    jll = np.array([[3.0, 0.0], [0.0, 3.0], [3.0, 0.0], [0.0, 3.0]] * 10)
    y = np.array([0, 1, 1, 0] * 10)  # half wrong: the scores are far too sure
    calibration = fit_calibration(jll, y, np.full(40, 25))
    assert calibration.temperature(25) > 10


def test_a_perfect_sample_does_not_drive_the_temperature_to_zero():
    """Platt's targets: n documents all right still leave room for doubt."""
    jll = np.array([[2.0, 0.0]] * 20 + [[0.0, 2.0]] * 20)
    y = np.array([0] * 20 + [1] * 20)
    calibration = fit_calibration(jll, y, np.full(40, 10))
    top = math.exp(chosen.calibrated(jll[:1], np.array([10]), calibration)[0, 0])
    assert top <= 1 - 1 / (40 + 2) + 1e-6


def test_the_temperature_formula_by_hand():
    calibration = Calibration(t0=math.log(2), t1=0.5)
    # T = 2 · (1 + 8)^0.5 = 6 for a document of 8 known tokens
    assert calibration.temperature(8) == pytest.approx(6.0, rel=1e-15)
    row = chosen.calibrated(np.array([[12.0, 0.0]]), np.array([8]), calibration)[0]
    p = F(1) / (1 + F(math.exp(-2.0)))  # softmax of (12/6, 0)
    assert math.exp(row[0]) == pytest.approx(float(p), rel=1e-12)


# --- the choice travels with the model --------------------------------------------------------


def test_the_choice_round_trips_and_update_merge_unlearn_choose_again(tmp_path):
    """At the defaults, fit --update, unlearn and merge write the bytes a fresh fit of the
    documents writes: the choice, β, calibration and typicality are chosen again from the
    counts and the sample the file keeps. A line's document is its text, so the same
    texts as files in the folder are the same documents."""
    import shutil

    model, shard = tmp_path / "m.nbc", tmp_path / "shard.nbc"
    assert invoke("fit", DEMO_CORPUS, "-o", model, "-q").exit_code == 0
    first = load(str(model))
    assert first.choice is not None and first.calibration is not None
    assert first.sample.n_documents == 42 and first.sample_short == 0
    info = json.loads(invoke("info", "-m", model, "--format", "json").stdout)
    assert info["choice"] == first.choice and info["calibration"] == first.calibration.to_dict()
    texts = {"billing": "my invoice was charged twice", "outage": "the api is down"}
    lines = "".join(f"{label}\t{text}\n" for label, text in texts.items())

    def fresh(copies: int) -> bytes:
        folder = tmp_path / f"corpus{copies}"
        shutil.copytree(DEMO_CORPUS, folder)
        for label, text in texts.items():
            for i in range(copies):
                (folder / label / f"new{i}.txt").write_text(text)
        out = tmp_path / f"fresh{copies}.nbc"
        assert invoke("fit", folder, "-o", out, "-q").exit_code == 0
        return out.read_bytes()

    assert invoke("fit", "--lines", "-", "--update", model, input=lines).exit_code == 0
    assert model.read_bytes() == fresh(1) and load(str(model)).choice != first.choice
    assert invoke("unlearn", "--lines", "-", "-m", model, input=lines).exit_code == 0
    assert model.read_bytes() == fresh(0)
    assert invoke("fit", "--lines", "-", "-o", shard, "-q", input=lines * 3).exit_code == 0
    merged = tmp_path / "merged.nbc"
    result = run("merge", model, shard, "-o", merged, "-q")  # both chose: no warning
    assert result.returncode == 0 and result.stderr == b""
    assert merged.read_bytes() == fresh(3)
    # an estimator option on update changes the settings: the choice and sample go
    options = ["--model", "multinomial"]
    assert invoke("fit", "--lines", "-", "--update", model, *options, input=lines).exit_code == 0
    named = load(str(model))
    assert (named.calibration, named.choice, named.sample) == (None, None, None)


def test_sync_chooses_again_and_equals_a_fresh_fit(tmp_path):
    import shutil

    inbox = tmp_path / "inbox"
    shutil.copytree(DEMO_CORPUS, inbox)
    live, fresh = tmp_path / "live.nbc", tmp_path / "fresh.nbc"
    assert invoke("sync", inbox, "-m", live, "-q").exit_code == 0
    for i in range(6):
        (inbox / "outage" / f"new{i}.txt").write_text(f"the api times out again {i}\n")
    assert invoke("sync", inbox, "-m", live, "-q").exit_code == 0
    assert invoke("fit", inbox, "-o", fresh, "--ledger", "-q").exit_code == 0
    assert live.read_bytes() == fresh.read_bytes()


def test_auto_with_other_estimator_options_is_a_usage_error(tmp_path):
    result = run("fit", DEMO_CORPUS, "-o", tmp_path / "m.nbc", "--model", "auto", "--tf", "log")
    assert result.returncode == 2
    assert b"--model auto chooses the estimator, priors and transforms itself" in result.stderr


# --- selection reads only the training documents ---------------------------------------------


def test_fit_reads_only_its_corpus(tmp_path, monkeypatch):
    """Every document fit opens, for counting and for choosing, is in the training folder."""
    from nbclass.reading import policy as reading

    train = write_corpus(
        tmp_path / "train",
        {"a": [f"alpha word{i} common" for i in range(8)], "b": [f"beta w{i}" for i in range(8)]},
    )
    opened = []
    real, real_each = reading.read_document, reading.read_documents

    def spy(path, *args, **kwargs):
        opened.append(str(path))
        return real(path, *args, **kwargs)

    def spy_each(paths, *args, **kwargs):  # the count's reads (a document at a time)
        paths = list(paths)
        opened.extend(map(str, paths))
        return real_each(paths, *args, **kwargs)

    monkeypatch.setattr(reading, "read_document", spy)
    monkeypatch.setattr("nbclass.models.learning.read_document", spy)
    monkeypatch.setattr("nbclass.counting.tally.read_documents", spy_each)
    assert invoke("fit", train, "-o", tmp_path / "m.nbc", "-j", "1", "-q").exit_code == 0
    assert opened and all(p.startswith(str(train)) for p in opened)
    listed = {str(p) for p in train.rglob("*.txt")}
    assert set(opened) == listed  # every document counted, none read from elsewhere


def test_a_model_file_given_to_model_points_at_m(tmp_path):
    model = tmp_path / "demo.nbc"
    assert run("fit", DEMO_CORPUS, "-o", model, "-q").returncode == 0
    for value in (model, "missing.nbc"):
        result = run("predict", "--model", value, input=b"refund")
        assert result.returncode == 2
        assert f"Error: Invalid value for '--model': '{value}' looks like a model file: give it " \
            "with -m (--model names the formula: auto, multinomial," in result.stderr.decode()


def test_a_folds_entries_name_the_words_a_restricted_count_names():
    """A fold's vocabulary is held as the indices of its entries (choosing.Entries): it
    names the words Counts.restrict would, in order, as a tuple of them does, and the
    entries of entries are those of the first vocabulary."""
    words = ("apple", "banana", "cherry", "date", "elder", "fig")
    entries = choosing.Entries(words, np.array([0, 2, 3, 5]))
    assert len(entries) == 4 and list(entries) == ["apple", "cherry", "date", "fig"]
    assert entries[1] == "cherry" and entries[-1] == "fig" and entries[1:3] == ("cherry", "date")
    assert entries == ("apple", "cherry", "date", "fig") and entries != ("apple", "cherry")
    inner = choosing.Entries(entries, np.array([1, 3]))
    assert inner.base is words and inner.at.tolist() == [2, 5] and inner == ["cherry", "fig"]
    acc = CountAccumulator(["a", "b"])
    texts = [["apple", "cherry"], ["banana", "date", "fig"], ["apple", "elder"], ["fig"]]
    acc.add(count_matrix(texts, acc.vocabulary), [0, 1, 0, 1])
    counts = acc.result()
    X = count_matrix(texts, dict(zip(counts.vocabulary, range(6))))
    fold = fold_of(counts, X, np.array([0, 1, 0, 1]), np.array([0]))  # cherry's only text
    assert isinstance(fold.counts.vocabulary, choosing.Entries)
    assert tuple(fold.counts.vocabulary) == ("apple", "banana", "date", "elder", "fig")
    rest = CountAccumulator(["a", "b"])
    rest.add(count_matrix(texts[1:], rest.vocabulary), [1, 0, 1])
    assert fold.counts.equals(rest.result())  # the words as a tuple of them, the counts
