"""Scoring from sparse counts: the models layer reads D_jc and T_jc as dense ndarrays or
as CSR (V, C) matrices and gives the same numbers for both."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from nbclass.counting.counts import Counts, as_table, count_texts
from nbclass.models.choosing import fold_of, fold_scorer, set_documents
from nbclass.models.estimators import DEFAULTS, EstimatorSettings
from nbclass.models.posterior import make_scorer
from nbclass.models.selection import class_log_ratios, mutual_information
from nbclass.models.textmodels import fit_beta, prepare
from nbclass.text.tokenizer import TokenizerSettings
from nbclass.text.vectorizer import TextCounter

# Every event model and estimator, with the transforms and the prior fit.
SETTINGS = [
    EstimatorSettings(),
    EstimatorSettings(estimator="map", alpha=2.0, beta=(2.0, 2.0)),
    EstimatorSettings(estimator="mle"),
    EstimatorSettings(estimator="predictive"),
    EstimatorSettings(model="bernoulli"),
    EstimatorSettings(model="bernoulli", estimator="map", beta=(2.0, 3.0)),
    EstimatorSettings(model="bernoulli", estimator="mle"),
    EstimatorSettings(model="complement"),
    EstimatorSettings(model="complement", class_prior=False, beta=(0.3, 0.3)),
    DEFAULTS,
    EstimatorSettings(model="complement", tf="log", idf=True, norm="both"),
    EstimatorSettings(tf="log", idf=True, norm="length", prior_fit=True),
    EstimatorSettings(norm="weight"),
    EstimatorSettings(model="dcm"),
    EstimatorSettings(model="dcm", prior_fit=True),
    EstimatorSettings(model="poisson"),
    EstimatorSettings(model="poisson", estimator="predictive"),
]
IDS = [
    "-".join([s.model, s.estimator, s.tf, "idf" * s.idf, s.norm, "fit" * s.prior_fit])
    for s in SETTINGS
]


def as_csr(counts: Counts) -> Counts:
    """The same counts with D_jc and T_jc as canonical CSR matrices."""
    return Counts(
        counts.classes, counts.vocabulary, counts.class_count,
        sp.csr_matrix(counts.doc_count), sp.csr_matrix(counts.token_count),
    )  # fmt: skip


@pytest.fixture(scope="module")
def news(news_sample):
    """Dense counts of the 20 Newsgroups sample's training split, their CSR twin, and
    the test split's documents counted over the vocabulary (with their labels)."""
    train, test = news_sample
    classes = sorted(p.name for p in train.iterdir())

    def documents(root):
        paths = sorted(p for c in classes for p in (root / c).iterdir())
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in paths]
        return texts, [classes.index(p.parent.name) for p in paths]

    tokenizer = TokenizerSettings()
    texts, labels = documents(train)
    counted = count_texts(texts, labels, classes, tokenizer)  # CSR, as fit counts
    counts = Counts(
        counted.classes, counted.vocabulary, counted.class_count,
        as_table(counted.doc_count), as_table(counted.token_count),
    )  # fmt: skip
    test_texts, test_labels = documents(test)
    X, _ = TextCounter(tokenizer, counts.vocabulary).count(test_texts)
    assert isinstance(counts.token_count, np.ndarray)  # the dense form, to compare with
    assert counted.equals(as_csr(counts))  # fit's CSR is scipy's canonical form
    return counts, counted, X, np.array(test_labels)


@pytest.mark.corpus
@pytest.mark.parametrize("settings", SETTINGS, ids=IDS)
def test_models_accept_sparse_counts_with_the_same_scores(news, settings):
    counts, sparse, X, _ = news
    dense_scores = make_scorer(counts, settings).joint_log_likelihood(X)
    sparse_scores = make_scorer(sparse, settings).joint_log_likelihood(X)
    assert np.isfinite(dense_scores).any()
    assert np.array_equal(dense_scores, sparse_scores)
    rows = np.unique(X[:5].indices)
    part = X[:5][:, rows]
    assert np.array_equal(
        make_scorer(counts, settings, rows=rows).joint_log_likelihood(part),
        make_scorer(sparse, settings, rows=rows).joint_log_likelihood(part),
    )
    assert prepare(counts, settings) == prepare(sparse, settings)


@pytest.mark.corpus
@pytest.mark.parametrize("model", ["multinomial", "complement", "bernoulli", "dcm"])
def test_sparse_counts_fit_the_same_beta(news, model):
    counts, sparse, _, _ = news
    assert fit_beta(counts, model) == fit_beta(sparse, model)


def held_out_scores(counts, X, labels, rows, candidates, top_mi=None):
    """The fold holding out ``rows`` (pruned to ``top_mi``), its held-out documents' known
    tokens and every candidate's scores of them, as the choice makes them."""
    fold, held_out = set_documents(fold_of(counts, X, labels, rows), X, None, None, top_mi)
    scores = [fold_scorer(fold, s).joint_log_likelihood(held_out) for s in candidates]
    return fold, np.asarray(held_out.sum(axis=1)).ravel(), scores


@pytest.mark.corpus
def test_sparse_counts_give_the_same_features_and_folds(news):
    counts, sparse, X, y = news
    settings = EstimatorSettings(prior_fit=True)
    assert np.array_equal(
        mutual_information(counts, settings), mutual_information(sparse, settings)
    )
    for model in ("multinomial", "bernoulli"):
        s = EstimatorSettings(model=model)
        assert np.array_equal(class_log_ratios(counts, s), class_log_ratios(sparse, s))
    # Cross-validation by subtraction: the test split taken as held-out documents of a
    # corpus whose counts include them.
    labels, Y = y, np.eye(4, dtype=np.int64)[y]
    held = Counts(
        counts.classes, counts.vocabulary, counts.class_count + Y.sum(axis=0),
        counts.doc_count + (X > 0).astype(np.int64).T @ Y, counts.token_count + X.T @ Y,
    )  # fmt: skip
    rows = np.arange(0, X.shape[0], 3)
    candidates = [EstimatorSettings(), DEFAULTS, EstimatorSettings(model="bernoulli")]
    fold, known, scores = held_out_scores(held, X, labels, rows, candidates)
    fold_s, known_s, scores_s = held_out_scores(as_csr(held), X, labels, rows, candidates)
    assert np.array_equal(fold_s.counts.token_count.toarray(), fold.counts.token_count)
    assert np.array_equal(fold_s.counts.doc_count.toarray(), fold.counts.doc_count)
    assert np.array_equal(fold_s.words, fold.words) and np.array_equal(fold_s.used, fold.used)
    assert np.array_equal(known, known_s)
    for a, b in zip(scores, scores_s):
        assert np.array_equal(a, b)


@pytest.mark.corpus
@pytest.mark.parametrize("settings", SETTINGS, ids=IDS)
@pytest.mark.parametrize("form", ["dense", "csr"])
def test_scores_from_the_nonzero_pairs_are_the_dense_tables_scores(news, settings, form):
    """Per-class constants plus corrections at the pairs give the scores of the (V, C)
    table to rounding (relative 1e-12), −inf where the table's are, for dense and CSR
    counts, whole vocabulary and the rows= path alike; and the weights themselves are
    the table's, cell for cell."""
    counts, sparse, X, _ = news
    counts = sparse if form == "csr" else counts
    X = sp.vstack([sp.csr_matrix((1, X.shape[1]), dtype=X.dtype), X], format="csr")
    # (the first document has no known word)
    table = make_scorer(counts, settings, layout="dense")
    pairs = make_scorer(counts, settings, layout="sparse")
    expected, got = table.joint_log_likelihood(X), pairs.joint_log_likelihood(X)
    assert np.array_equal(np.isneginf(expected), np.isneginf(got))
    finite = np.isfinite(expected)
    assert finite.any()
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-12, atol=0)
    weights = getattr(pairs, "weights", None)
    if weights is not None and settings.model == "complement":  # −log(S_j + β) + log(S̃_c + Vβ)
        np.testing.assert_allclose(weights.toarray(), table.weights, rtol=1e-13, atol=0)
    elif weights is not None and settings.norm not in ("weight", "both"):
        assert np.array_equal(weights.toarray(), table.weights)  # the same fractions
    rows = np.unique(X[:5].indices)
    part = X[:5][:, rows]
    np.testing.assert_allclose(
        make_scorer(counts, settings, rows=rows, layout="sparse").joint_log_likelihood(part),
        make_scorer(counts, settings, rows=rows, layout="dense").joint_log_likelihood(part),
        rtol=1e-12, atol=0,
    )  # fmt: skip


LARGE = r"""
import resource
import numpy as np, scipy.sparse as sp
from nbclass.counting.counts import Counts
from nbclass.models.estimators import DEFAULTS, EstimatorSettings
from nbclass.models.explain import explanations, score_batch
from nbclass.models.model import Classifier, Model, select_features
from nbclass.models.posterior import make_scorer
from nbclass.models.selection import top_features
from nbclass.text.tokenizer import TokenizerSettings

V, C = 50_000, 5_000  # a (V, C) float64 table is 2 GB
rng = np.random.default_rng(0)
rows = np.repeat(np.arange(V), 3)  # each word in about 3 classes: 150,000 pairs
T = sp.csr_matrix((rng.integers(1, 9, rows.size), (rows, rng.integers(0, C, rows.size))),
                  shape=(V, C), dtype=np.int64)
T.sum_duplicates()
D = T.copy()
D.data = np.minimum(D.data, 2)
N = np.full(C, 3, dtype=np.int64)
words = tuple(f"w{j:05d}" for j in range(V))
counts = Counts(tuple(f"c{c:04d}" for c in range(C)), words, N, D, T)
model = Model(counts, TokenizerSettings())
texts = [" ".join(rng.choice(words, 30)) for _ in range(100)]
scored = []
for s in [EstimatorSettings(), EstimatorSettings(model="bernoulli"), DEFAULTS,
          EstimatorSettings(model="complement", tf="log", idf=True, norm="both"),
          EstimatorSettings(estimator="predictive"), EstimatorSettings(model="dcm"),
          EstimatorSettings(model="poisson"),
          EstimatorSettings(model="poisson", estimator="predictive")]:
    classifier = Classifier(model, s)
    X, _ = classifier.count(texts)
    scored.append((s, X, classifier.scorer.joint_log_likelihood(X)))
    if hasattr(classifier.scorer, "contributions"):
        assert len(explanations(classifier, score_batch(classifier, [("a", texts[0])]), 3)) == 1
assert len(top_features(counts, EstimatorSettings(), 5)) == 5  # mutual information
assert len(select_features(model, 100).counts.vocabulary) == 100
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
worst = 0.0
for s, X, got in scored:  # against the dense tables of the documents' words alone
    if s.model == "poisson" or s.estimator == "predictive" or s.norm != "none":
        continue  # (their dense path makes every word's table)
    used = np.unique(X.indices)
    expected = make_scorer(counts, s, rows=used, layout="dense").joint_log_likelihood(X[:, used])
    worst = max(worst, float(np.max(np.abs(got - expected) / np.abs(expected))))
print(worst, peak)
"""


def test_a_model_of_thousands_of_classes_is_scored_without_a_table_of_every_cell():
    """5,000 classes × 50,000 words with 150,000 pairs: every event model scores 100
    documents (and explains one), and the mutual information ranks the words, in a
    process that never holds a (V, C) table (2 GB of float64): its peak stays under
    1 GB, half of one such table (about 140 MB alone; up to 430 MB was seen inside the
    whole suite), and the scores are those of the dense tables of the documents' words."""
    result = subprocess.run(
        [sys.executable, "-c", LARGE], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    worst, peak_mb = result.stdout.split()
    assert float(worst) < 1e-12
    assert int(peak_mb) < 1000


@pytest.mark.parametrize("form", ["dense", "csr"])
def test_the_complement_prior_fit_reads_every_block_of_pairs(form):
    """More nonzero pairs than one block (2**18): the complement's leave-one-out
    likelihood from the pairs is that of the complement counts T_j − T_jc formed whole."""
    from nbclass.counting.counts import BLOCK_CELLS
    from nbclass.models.textmodels import loo_objective, multinomial_loo

    rng = np.random.default_rng(1)
    V, C = BLOCK_CELLS // 2, 5
    T = rng.integers(0, 4, (V, C)) * (rng.random((V, C)) < 0.6)
    T[T.sum(axis=1) == 0, 0] = 1
    counts = Counts(("a", "b", "c", "d", "e"), tuple(f"w{j:06d}" for j in range(V)),
                    np.full(C, 10**6), np.minimum(T, 1), T)  # fmt: skip
    assert np.count_nonzero(T) > BLOCK_CELLS
    counts = as_csr(counts) if form == "csr" else counts
    betas = np.array([0.01, 0.3, 1.0, 7.0])
    complement = T.sum(axis=1, keepdims=True) - T
    np.testing.assert_allclose(
        loo_objective(counts, "complement")(betas), multinomial_loo(complement, betas),
        rtol=1e-12,
    )  # fmt: skip


# --- The identity by hand: 3 words (x, y, z), 2 classes (a, b) -----------------------------
#     T = x: 2 0   D = x: 1 0   N_c = 2 2, so π_c = 1/2 under α = 1 (and under mle)
#         y: 1 3       y: 1 2
#         z: 0 1       z: 0 1
SMALL_T = np.array([[2, 0], [1, 3], [0, 1]])
SMALL_D = np.array([[1, 0], [1, 2], [0, 1]])
SMALL = Counts(("a", "b"), ("x", "y", "z"), np.array([2, 2]), SMALL_D, SMALL_T)
DOCS = sp.csr_matrix(np.array([[1, 1, 2], [1, 0, 0], [0, 1, 1]]))  # x y z z; x; y z
L = np.log


def by_hand(settings: EstimatorSettings) -> np.ndarray:
    """The scores b_c of DOCS, fractions written out (the prior 1/2 everywhere)."""
    half = L(1 / 2)
    if settings.model == "bernoulli":  # θ = (D + 1) / (N + 2): a (2, 2, 1)/4, b (1, 3, 2)/4
        return half + L([[2 * 2 * 1 / 64, 1 * 3 * 2 / 64],
                         [2 * 2 * 3 / 64, 1 * 1 * 2 / 64],
                         [2 * 2 * 1 / 64, 3 * 3 * 2 / 64]])  # fmt: skip
    if settings.model == "complement":  # θ̃ = (T_j − T_jc + 1)/(S̃_c + 3): a (1,4,2)/7, b (3,2,1)/6
        return half - L([[1 * 4 * 2 * 2 / 7**4, 3 * 2 * 1 * 1 / 6**4],
                         [1 / 7, 3 / 6],
                         [4 * 2 / 7**2, 2 * 1 / 6**2]])  # fmt: skip
    if settings.estimator == "predictive":  # Γ ratios: a = T + 1, A = T_c + 3
        return half + L([[3 * 2 * 2 / (6 * 7 * 8 * 9), 1 * 4 * 2 * 3 / (7 * 8 * 9 * 10)],
                         [3 / 6, 1 / 7],
                         [2 * 1 / (6 * 7), 4 * 2 / (7 * 8)]])  # fmt: skip
    if settings.estimator == "mle":  # θ = T / T_c: a (2, 1, 0)/3, b (0, 3, 1)/4
        return half + L([[0.0, 0.0], [2 / 3, 0.0], [0.0, 3 * 1 / 16]])
    # multinomial and Poisson: θ = (T + 1) / (T_c + 3): a (3, 2, 1)/6, b (1, 4, 2)/7;
    # Poisson's weights are log λ − Λ_c with Λ_c = 1, one per token.
    tokens = np.array([[4.0], [1.0], [2.0]]) if settings.model == "poisson" else 0.0
    return half - tokens + L([[3 * 2 * 1 * 1 / 6**4, 1 * 4 * 2 * 2 / 7**4],
                              [3 / 6, 1 / 7],
                              [2 * 1 / 6**2, 4 * 2 / 7**2]])  # fmt: skip


HAND = [
    EstimatorSettings(),
    EstimatorSettings(estimator="mle"),
    EstimatorSettings(estimator="predictive"),
    EstimatorSettings(model="bernoulli"),
    EstimatorSettings(model="complement"),
    EstimatorSettings(model="poisson"),
]


@pytest.mark.parametrize("settings", HAND, ids=[f"{s.model}-{s.estimator}" for s in HAND])
@pytest.mark.parametrize("form", ["dense", "csr"])
@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_the_identity_by_hand(settings, form, layout):
    counts = as_csr(SMALL) if form == "csr" else SMALL
    with np.errstate(divide="ignore"):
        expected = by_hand(settings)
    got = make_scorer(counts, settings, layout=layout).joint_log_likelihood(DOCS)
    assert np.array_equal(np.isneginf(got), np.isneginf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-13)


def test_the_multinomial_constant_and_corrections_by_hand():
    """log θ_jc = log(β / (T_c + Vβ)) + log((T_jc + β) / β): the constants log 1/6 and
    log 1/7, the corrections log 3, log 2 (class a), log 4, log 2 (class b)."""
    W = make_scorer(as_csr(SMALL), EstimatorSettings(), layout="sparse").weights
    np.testing.assert_allclose(W.constant, L([1 / 6, 1 / 7]), rtol=1e-15)
    delta = W.corrections().toarray()
    np.testing.assert_allclose(delta, L([[3, 1], [2, 4], [1, 2]]), rtol=1e-15, atol=1e-15)


def test_dcm_by_hand_around_its_concentrations():
    """EDCM: log β_jc = log s_c + log((D_jc + 1) / (D_c + 3)), D_c = 2, 3; the score of
    x y z z is log π_c + lnΓ(s_c) − lnΓ(s_c + 4) + Σ_j log β_jc (each present word once)."""
    from scipy.special import gammaln

    settings = EstimatorSettings(model="dcm")
    for layout in ("dense", "sparse"):
        scorer = make_scorer(as_csr(SMALL), settings, layout=layout)
        s = scorer.concentration
        fractions = np.array([2 * 2 * 1 / 5**3, 1 * 3 * 2 / 6**3])
        expected = L(1 / 2) + gammaln(s) - gammaln(s + 4) + 3 * L(s) + L(fractions)
        np.testing.assert_allclose(scorer.joint_log_likelihood(DOCS[:1])[0], expected,
                                   rtol=1e-13)  # fmt: skip


@pytest.mark.corpus
@pytest.mark.parametrize(
    "settings",
    [EstimatorSettings(), EstimatorSettings(estimator="mle"),
     EstimatorSettings(estimator="map", alpha=2.0, beta=(2.0, 3.0)),
     EstimatorSettings(prior_fit=True)],
    ids=["posterior-mean", "mle", "map", "prior-fit"],
)  # fmt: skip
@pytest.mark.parametrize("form", ["dense", "csr"])
def test_mutual_information_from_the_pairs_is_the_dense_formulas(news, settings, form):
    """I_j from the nonzero pairs (the classes off a word's pairs summed in closed form)
    equals the formula over the (V, C) table to 1e-12 of the largest I_j, and ranks the
    same top words."""
    from nbclass.models.selection import _sparse_mutual_information, presence_settings

    counts, sparse, _, _ = news
    counts = sparse if form == "csr" else counts
    expected = mutual_information(counts, settings)
    got = _sparse_mutual_information(counts, presence_settings(counts, settings))
    assert expected.max() > 0
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 * expected.max())
    top = np.argsort(-expected, kind="stable")[:20]
    assert set(np.argsort(-got, kind="stable")[:20]) == set(top)


def test_the_choice_plans_its_folds_by_pairs_past_the_dense_size():
    """2,000 classes × 100,000 words, 300,000 pairs and 3,000,000 tokens: scoring a fold
    costs its pairs, so the choice affords the folds of a small model (200 M cells would
    have allowed one, with a fifth of the sample); 20 classes × 1,000 words keep V × C."""
    from nbclass.counting import sketch
    from nbclass.models.choosing import folds_for, plan

    def corpus(V, C, pairs, tokens, N):
        rng = np.random.default_rng(2)
        cells = rng.choice(V * C, pairs, replace=False)
        T = sp.csr_matrix((np.full(pairs, tokens // pairs), (cells // C, cells % C)),
                          shape=(V, C), dtype=np.int64)  # fmt: skip
        return Counts(tuple(f"c{c:04d}" for c in range(C)), tuple(f"w{j:06d}" for j in range(V)),
                      np.full(C, N // C), T.minimum(1), T)  # fmt: skip

    N = 12_000
    n = min(N, sketch.OVERALL)
    assert plan(corpus(100_000, 2_000, 300_000, 3_000_000, N)) == (n, folds_for(n, N))
    assert folds_for(n, N) > 1
    # 500,000 words × 20 classes (10 M cells, below 2**24) keep the V × C rule: the
    # 1 M free cells afford one fold of at most a fifth of the corpus.
    assert plan(corpus(500_000, 20, 5_000, 50_000, N)) == (2_400, 1)


@pytest.fixture(scope="module")
def wide_model():
    """2,000 classes × 10,000 words (20 M weight cells, past 2**24) with 30,000 pairs,
    CSR counts, and texts of its words (each class's words, some of another class's)."""
    from nbclass.models.model import Model

    V, C = 10_000, 2_000
    rng = np.random.default_rng(3)
    rows = np.repeat(np.arange(V), 3)
    T = sp.csr_matrix((rng.integers(1, 9, rows.size), (rows, rng.integers(0, C, rows.size))),
                      shape=(V, C), dtype=np.int64)  # fmt: skip
    T.sum_duplicates()
    D = T.minimum(2).tocsr()
    words = tuple(f"w{j:05d}" for j in range(V))
    counts = Counts(tuple(f"c{c:04d}" for c in range(C)), words, np.full(C, 3), D, T)
    texts = [" ".join(rng.choice(words, 12)) for _ in range(20)] + ["", "w00001 zzz"]
    return Model(counts, TokenizerSettings()), texts


@pytest.mark.parametrize(
    "settings",
    [EstimatorSettings(), EstimatorSettings(model="bernoulli"), DEFAULTS,
     EstimatorSettings(model="complement", tf="log", idf=True, norm="both"),
     EstimatorSettings(model="dcm"), EstimatorSettings(model="poisson")],
    ids=["multinomial", "bernoulli", "defaults", "complement-idf-both", "dcm", "poisson"],
)  # fmt: skip
@pytest.mark.parametrize("fmt", ["json", "npz"])
def test_the_export_of_a_large_model_holds_its_pairs(wide_model, tmp_path, settings, fmt):
    """Past 2**24 cells the export writes W's pairs (version 2, no table) and
    docs/export.md's reference scorer reads them back to predict's probabilities."""
    from test_export import doc_namespace

    from nbclass.modelfile.export import export
    from nbclass.models.model import Classifier

    model, texts = wide_model
    path = tmp_path / f"m.{fmt}"
    size = export(model, settings, str(path), fmt)
    assert size < 2_000_000  # a table of 20 M floats would be 160 MB
    ns = doc_namespace()
    m = ns["load_export"](str(path))
    assert int(m["version"]) == 2
    assert "weights" not in m if fmt == "npz" else isinstance(m["weights"], dict)
    want = np.exp(Classifier(model, settings).predict(texts).log_proba)
    rows = [ns["probabilities"](m, text) for text in texts]
    got = np.array([[row[c] for c in model.counts.classes] for row in rows])
    assert np.abs(got - want).max() <= 1e-12


def test_a_weight_column_is_the_tables_column():
    """SparseWeights.column(c) (what the multi-label log-odds take per label) is column c
    of the dense table, complement's per-word term included."""
    from nbclass.models.sparsity import weights_column

    counts, settings = as_csr(SMALL), EstimatorSettings(model="complement")
    sparse = make_scorer(counts, settings, layout="sparse").weights
    table = sparse.toarray()
    for c in range(2):
        assert np.array_equal(weights_column(sparse, c), table[:, c])


def test_at_most_from_the_csr_pattern_is_the_dense_tables_answer():
    """Loading checks a sample's D_jc and T_jc against the counts' at every pair; from a
    CSR pattern it reads the stored counts, and answers as from the dense tables: yes for
    counts at or below them, no for one count above, or a pair the counts lack."""
    from nbclass.counting.counts import at_most

    D = np.array([[2, 0, 1], [0, 3, 0], [1, 1, 0], [0, 0, 4]])
    T = D * 3
    words, classes = ("w", "x", "y", "z"), ("a", "b", "c")

    def counts(d, t, sparse):
        make = sp.csr_matrix if sparse else np.asarray
        return Counts(classes, words, np.array([3, 3, 4]), make(d), make(t))

    cases = {  # part's (D, T) -> at most the total's
        "below": (np.minimum(D, 1), np.minimum(T, 2), True),
        "equal": (D, T, True),
        "a token more": (D, T + np.eye(4, 3, dtype=int) * (D > 0), False),
        "a document more": (D + (D == 4), T + (D == 4) * 5, False),
        "a pair the counts lack": (D + np.eye(4, 3, k=1, dtype=int) * (D == 0), T + 1 * (
            np.eye(4, 3, k=1, dtype=int) * (D == 0)), False),
        "no pair": (0 * D, 0 * T, True),
    }
    for name, (d, t, expected) in cases.items():
        part = counts(d, t, False)
        for sparse in (False, True):
            assert at_most(part, counts(D, T, sparse)) is expected, (name, sparse)


def test_the_product_into_a_block_adds_what_scipy_multiplies(monkeypatch):
    """add_product adds F T into the block given: by hand, 2 × [1 2 0] + 3 × [0 0 4] and
    1 × [0 5 0] into rows of 10 and 20; on random floats the same floats as scipy's
    F @ T added, with int64 indices or int32, counts of 1 only or not, documents with no
    word first, between and last, a few rows at a time and a row's products in turns
    (its sums carried from one turn to the next), and without scipy's private kernels."""
    from nbclass.models import sparsity
    from nbclass.models.sparsity import add_product

    F = sp.csr_matrix(np.array([[2, 0, 3], [0, 1, 0], [0, 0, 0]], dtype=np.int64))
    T = sp.csr_matrix(np.array([[1.0, 2.0, 0.0], [0.0, 5.0, 0.0], [0.0, 0.0, 4.0]]))
    out = np.array([[10.0] * 3, [20.0] * 3, [30.0] * 3])
    add_product(F, T, out)
    assert out.tolist() == [[12.0, 14.0, 22.0], [20.0, 25.0, 20.0], [30.0] * 3]

    rng = np.random.default_rng(7)
    F = sp.random(40, 300, density=0.05, format="csr", random_state=rng)
    F.data = np.ceil(F.data * 5)
    keep = np.ones(40)
    keep[[0, 17, 39]] = 0  # documents without a word: first, between, last
    F = sp.csr_matrix(sp.diags(keep) @ F)
    F.eliminate_zeros()
    assert F[[0, 17, 39]].nnz == 0 and F.nnz > 500
    ones = F.copy()
    ones.data[:] = 1.0
    T = sp.random(300, 70, density=0.1, format="csr", random_state=rng)
    T.data = rng.normal(size=T.nnz) * 1e3
    start = rng.normal(size=(40, 70))
    shift = rng.normal(size=70) * 1e3
    # (cells, products): the whole block at once; three rows at a time; one row at a
    # time in turns of a few products (every row's sums carried over turns).
    # Each also with the rows of T taken made dense (TOUCHED_FACTOR 10**9), or never (0).
    for cells, products, factor in [
        (2**17, 2**20, 0), (3 * 70, 2**20, 0), (70, 50, 0), (1, 1, 0),
        (2**17, 2**20, 10**9), (3 * 70, 2**20, 10**9), (1, 1, 10**9),
    ]:  # fmt: skip
        monkeypatch.setattr(sparsity, "PRODUCT_CELLS", cells)
        monkeypatch.setattr(sparsity, "PRODUCTS", products)
        monkeypatch.setattr(sparsity, "TOUCHED_FACTOR", factor)
        for counts in (F, ones):
            expected = start + (counts @ T).toarray()
            for index in (np.int32, np.int64):
                G = sp.csr_matrix(
                    (counts.data, counts.indices.astype(index), counts.indptr.astype(index)),
                    counts.shape,
                )
                U = sp.csr_matrix(
                    (T.data, T.indices.astype(index), T.indptr.astype(index)), T.shape
                )
                got = start.copy()
                add_product(G, U, got)
                assert np.array_equal(got, expected), (cells, products, index)
                # the rows filled before (start) and added to after (a vector), a range
                # of rows at a time
                got, seen = np.full_like(start, np.nan), []

                def before(first, last, rows, seen=seen):
                    rows[:] = start[first:last]
                    seen.append((first, last))

                def after(first, last, rows):
                    rows += shift

                add_product(G, U, got, None, before, after)
                assert np.array_equal(got, expected + shift)
                step = max(1, cells // 70)
                assert seen == [(a, min(a + step, 40)) for a in range(0, 40, step)]
    monkeypatch.setattr(sparsity, "_sparse_kernels", lambda: (None, None, None))
    got = start.copy()
    add_product(F, T, got)
    assert np.array_equal(got, start + (F @ T).toarray())
    got = np.empty_like(start)
    add_product(F, T, got, None, lambda a, b, rows: np.copyto(rows, start[a:b]),
                lambda a, b, rows: np.add(rows, shift, out=rows))  # fmt: skip
    assert np.array_equal(got, start + (F @ T).toarray() + shift)


_F_VALUES = [1.0, 1.0, 2.0, 3.0, 0.5, -1.0, 0.0, -0.0, 1e300, 1e-320, np.inf]
_T_VALUES = [0.0, -0.0, 1.0, -2.5, 1e308, -1e308, np.inf, -np.inf, 0.1, -0.3, 7.0]
_OUT_VALUES = [0.0, -0.0, 1.0, -1.0, np.inf, 1e308]


@st.composite
def _product_case(draw):
    """F (n, V) and a table (V, C) as CSR matrices taken as they come: indices unsorted,
    repeated, explicit zeros (+0.0 and -0.0), infinities, counts not 1 and negative,
    int32 or int64; ``out`` with -0.0 and infinities; the cells and products a turn."""
    n, V, C = draw(st.integers(0, 7)), draw(st.integers(1, 6)), draw(st.integers(1, 9))
    index = draw(st.sampled_from([np.int32, np.int64]))

    def raw(rows: int, cols: int, values: list) -> sp.csr_matrix:
        ptr, idx, data = [0], [], []
        for _ in range(rows):
            k = draw(st.integers(0, 5))
            idx += draw(st.lists(st.integers(0, cols - 1), min_size=k, max_size=k))
            data += draw(st.lists(st.sampled_from(values), min_size=k, max_size=k))
            ptr.append(len(idx))
        return sp.csr_matrix(
            (np.array(data, dtype=float), np.array(idx, index), np.array(ptr, index)),
            shape=(rows, cols),
        )

    F, T = raw(n, V, _F_VALUES), raw(V, C, _T_VALUES)
    cells = st.lists(st.sampled_from(_OUT_VALUES), min_size=n * C, max_size=n * C)
    out = np.array(draw(cells), dtype=float).reshape(n, C)
    turns = (draw(st.sampled_from([1, 2, C, 2 * C + 1, 2**17])),
             draw(st.sampled_from([1, 2, 3, 5, 2**20])),
             draw(st.sampled_from([0, 2, 10**9])))  # fmt: skip (TOUCHED_FACTOR: never, always)
    return F, T, out, turns


@settings(max_examples=600, deadline=None, database=None)
@given(_product_case())
def test_the_product_into_a_block_is_scipys_cell_for_cell(case):
    """add_product(F, T, out) gives the floats of out + (F @ T).toarray(), every bit (the
    sign of a zero, NaN where scipy's has one) on any F and T scipy multiplies: a row's
    products carried over turns, one row a turn, no product in a range of rows (where
    -0.0 in out becomes +0.0 as it does with 0 added: it was left -0.0); the rows of T
    taken made dense (TOUCHED_FACTOR 10**9: wherever T's rows are canonical and F
    finite) or never (0)."""
    from nbclass.models import sparsity
    from nbclass.models.sparsity import add_product

    F, T, out, (cells, products, factor) = case
    with np.errstate(all="ignore"):  # (inf - inf, 1e308 + 1e308: as scipy's)
        expected = out + (F @ T).toarray()
        saved = sparsity.PRODUCT_CELLS, sparsity.PRODUCTS, sparsity.TOUCHED_FACTOR
        sparsity.PRODUCT_CELLS, sparsity.PRODUCTS, sparsity.TOUCHED_FACTOR = (
            cells, products, factor)  # fmt: skip
        try:
            add_product(F, T, out)
        finally:
            sparsity.PRODUCT_CELLS, sparsity.PRODUCTS, sparsity.TOUCHED_FACTOR = saved
    assert np.array_equal(out, expected, equal_nan=True)
    assert np.array_equal(np.signbit(out), np.signbit(expected))


@st.composite
def _weights_case(draw):
    """Sparse weights (V, C) with or without the complement's word terms and classes
    with k_c = -inf, features F (n, V) with documents without a word, a bias or none."""
    from nbclass.models.sparsity import SparseWeights

    n, V, C = draw(st.integers(0, 6)), draw(st.integers(1, 6)), draw(st.integers(1, 7))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    density = draw(st.sampled_from([0.0, 0.3, 0.8]))
    values = sp.random(V, C, density=density, format="csr", random_state=rng)
    values.data = -rng.exponential(size=values.nnz) * 3
    constant = -rng.exponential(size=C) * 5
    if draw(st.booleans()):
        constant[rng.random(C) < 0.4] = -np.inf
    word = scale = None
    if draw(st.booleans()):
        word, scale = rng.normal(size=V), rng.normal(size=C)
    F = sp.random(n, V, density=draw(st.sampled_from([0.0, 0.3, 0.7])), format="csr",
                  random_state=rng)  # fmt: skip
    if draw(st.booleans()):
        F.data = np.ceil(F.data * 4)
    bias = rng.normal(size=C) * 10
    turns = (draw(st.sampled_from([1, 2, C, 2**17])), draw(st.sampled_from([1, 3, 2**20])))
    return SparseWeights(values, constant, word, scale), F, bias, turns


@settings(max_examples=300, deadline=None, database=None)
@given(_weights_case())
def test_sparse_weights_add_the_bias_last_as_to_f_w(case):
    """SparseWeights.dot(F, bias), the bias added to each range of rows once its products
    are in, gives the floats of dot(F) + bias (the bias after the complement's word terms
    and the infinite classes' -inf), every bit, a range of rows and a turn of products
    at a time of any size (fails where the bias comes before the word terms)."""
    from nbclass.models import sparsity

    weights, F, bias, (cells, products) = case
    saved = sparsity.PRODUCT_CELLS, sparsity.PRODUCTS
    sparsity.PRODUCT_CELLS, sparsity.PRODUCTS = cells, products
    try:
        plain, biased = weights.dot(F), weights.dot(F, bias)
    finally:
        sparsity.PRODUCT_CELLS, sparsity.PRODUCTS = saved
    with np.errstate(invalid="ignore"):
        expected = plain + bias
    assert np.array_equal(biased, expected, equal_nan=True)
    assert np.array_equal(np.signbit(biased), np.signbit(expected))
    assert plain.shape == (F.shape[0], weights.shape[1])


def test_a_document_without_a_word_scores_the_constant_with_a_positive_zero():
    """t_i = 0: the block starts at t_i k_c = −0.0 (k_c < 0), which the product adds
    nothing to; its cells are +0.0 as 0 + t_i k_c was, and a document's cells t k_c
    plus its corrections."""
    W = make_scorer(as_csr(SMALL), EstimatorSettings(), layout="sparse").weights
    F = sp.csr_matrix(np.array([[0, 0, 0], [1, 0, 0]], dtype=np.int64))
    got = W.dot(F)
    assert got[0].tolist() == [0.0, 0.0] and not np.signbit(got[0]).any()
    delta = W.corrections().toarray()
    assert got[1].tolist() == [W.constant[0] + delta[0, 0], W.constant[1] + delta[0, 1]]


@pytest.mark.parametrize("block", [None, 1, 3])
def test_sums_of_narrow_counts_are_the_int64_sums(block, monkeypatch):
    """count_sums (row_sums, column_sums, T_c, Σ_c T_jc) of CSR counts of one, two and
    four bytes, signed or not: int64, the sums of the same counts as int64, without
    scipy's uint64 copy; and of an empty row, an empty table and a dense one. Blocks of
    2^18 pairs (the 300,000 words' 630,000 pairs in three), and of 1 or 3 pairs (rows
    longer than a block, summed alone)."""
    from nbclass.counting import counts
    from nbclass.counting.counts import count_sums
    from nbclass.models.sparsity import column_sums, row_sums

    if block is not None:
        monkeypatch.setattr(counts, "BLOCK_PAIRS", block)
    rng = np.random.default_rng(11)
    shapes = ((1_000, 50, 0.05), (300_000, 7, 0.3), (5, 5, 0.0), (0, 3, 0.0))
    if block is not None:
        shapes = ((1_000, 50, 0.05), (40, 9, 0.5), (5, 5, 0.0), (0, 3, 0.0))
    for dtype in (np.uint8, np.uint16, np.uint32, np.int32, np.int64):
        top = min(np.iinfo(dtype).max, 2**40)
        for V, C, density in shapes:
            table = sp.random(V, C, density=density, format="csr", random_state=rng)
            table.data = rng.integers(1, top, size=table.nnz, endpoint=True)
            table = table.astype(dtype)
            wide = table.astype(np.int64)
            for axis, sums in ((1, row_sums), (0, column_sums)):
                expected = np.asarray(wide.sum(axis=axis)).ravel()
                for got in (count_sums(table, axis), sums(table)):
                    assert got.dtype == np.int64
                    assert np.array_equal(got, expected)
    dense = np.array([[250, 250, 0], [0, 0, 0]], dtype=np.uint8)
    assert count_sums(dense, 1).tolist() == [500, 0]
    assert count_sums(sp.csr_matrix(dense), 0).tolist() == [250, 250, 0]


def test_a_loaded_model_keeps_its_files_count_types(tmp_path):
    """Loaded counts are the file's own narrow sections (D_jc and T_jc of one byte here,
    a count of 300 in two), the same numbers as the counts fitted; their sums are int64,
    and the model scores and writes as the fitted one does (the same file, byte for
    byte)."""
    from nbclass.modelfile.textfile import dumps, loads
    from nbclass.models.model import Classifier, Model

    texts = ["ant bee cat", "ant ant dog", "bee dog dog dog", "cat " * 300 + "eel"]
    counted = count_texts(texts, [0, 0, 1, 1], ["x", "y"], TokenizerSettings())
    fitted = Model(counted, TokenizerSettings())
    data = dumps(fitted)
    loaded = loads(data)
    counts = loaded.counts
    assert counts.doc_count.dtype == np.uint8
    assert counts.token_count.dtype == np.uint16  # T_jc = 300 for "c" in class y
    assert counted.token_count.dtype == np.int64
    assert counts.equals(counted)
    assert counts.class_tokens.dtype == np.int64
    assert counts.class_tokens.tolist() == counted.class_tokens.tolist() == [6, 305]
    assert counts.word_tokens.tolist() == counted.word_tokens.tolist()
    for setting in SETTINGS:
        for layout in ("dense", "sparse"):
            a = make_scorer(counted, setting, layout=layout)
            b = make_scorer(counts, setting, layout=layout)
            X, _ = TextCounter(TokenizerSettings(), counts.vocabulary).count(
                ["ant cat cat eel", "dog"]
            )
            assert np.array_equal(a.joint_log_likelihood(X), b.joint_log_likelihood(X))
    assert dumps(loaded) == data
    text = ["cat cat ant"]
    assert np.array_equal(
        Classifier(loaded).predict(text).log_proba, Classifier(fitted).predict(text).log_proba
    )


@pytest.mark.parametrize("settings", [
    EstimatorSettings(),
    EstimatorSettings(model="complement"),
    EstimatorSettings(estimator="map", beta=(2.0, 2.0)),
    EstimatorSettings(tf="log", idf=True),
])  # fmt: skip
def test_corrections_made_in_the_weights_array_are_the_corrections(settings, monkeypatch):
    """prepare makes Δ in the values' own array, a block of pairs at a time (blocks of 3
    pairs here): the same floats as Δ made beside the values, the product the same,
    and the values made again when asked for are the values, float for float."""
    from nbclass.models import sparsity

    rng = np.random.default_rng(3)
    T = sp.random(60, 40, density=0.2, format="csr", random_state=rng)
    T.data = np.ceil(T.data * 9)
    T = T.astype(np.int64)
    D = T.copy()
    D.data = np.minimum(D.data, 3)
    counts = Counts(
        tuple(f"c{i:02d}" for i in range(40)), tuple(f"w{j:03d}" for j in range(60)),
        np.full(40, 5, dtype=np.int64), D, T,
    )  # fmt: skip
    F = sp.random(7, 60, density=0.3, format="csr", random_state=rng)
    F.data = np.ceil(F.data * 4)
    plain = make_scorer(counts, settings, layout="sparse").weights
    values = plain.values.data.copy()
    expected = plain.corrections().data.copy()
    scores = plain.dot(F)
    monkeypatch.setattr(sparsity, "CORRECTION_PAIRS", 3)
    weights = make_scorer(counts, settings, layout="sparse").weights
    weights.prepare()
    assert weights._values is None  # given up for the corrections
    assert np.array_equal(weights.corrections().data, expected)
    assert np.array_equal(weights.dot(F), scores)
    assert np.array_equal(weights.values.data, values)  # made again
    assert np.array_equal(weights.at(np.arange(60), np.zeros(60, dtype=int)),
                          plain.at(np.arange(60), np.zeros(60, dtype=int)))  # fmt: skip
