"""The choice's held-out scores, made and reduced a block of documents at a time.

fit's choice scores every candidate on every held-out document; it reduces each block of
documents at once to what the criterion, the calibration and the typicality need
(choosing.SCORE_CELLS cells a block), keeps the whole scores only while every candidate's
fit in choosing.KEEP_CELLS cells, and otherwise makes the winner's again (on demand past
choosing.WINNER_CELLS). Every number a document gets is a function of its own row, so
the blocks never change a float: here
blocks of one document, with the winner's scores made again, give the choice, its table,
calibration and typicality of the whole scores exactly (==, not approximately), on real
model files with one and several feature sets; so do the winner's scores made again on
demand from its folds' scorers (choosing.HeldOutScores), row by row in any order.
"""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import DEMO_CORPUS, write_corpus

from nbclass.cli.app import cli
from nbclass.modelfile.textfile import dumps, load
from nbclass.models import choosing
from nbclass.models.choosing import fit_calibration
from nbclass.models.chosen import score_gaps
from nbclass.models.estimators import Calibration
from nbclass.models.model import with_choice


def fitted(tmp_path, corpus, *options):
    model = tmp_path / "m.nbc"
    args = ["fit", str(corpus), "-o", str(model), "-j", "1", *options]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return load(str(model))


def unequal_corpus(root):
    """Four classes of 30, 12, 5 and 2 short documents, some words shared."""
    rng = np.random.default_rng(7)
    words = [f"w{j}" for j in range(40)]
    documents = {}
    for c, size in enumerate([30, 12, 5, 2]):
        theta = np.ones(40)
        theta[c * 8 : c * 8 + 8] = 4.0
        theta /= theta.sum()
        documents[f"k{c}"] = [
            " ".join(rng.choice(words, size=int(rng.integers(3, 30)), p=theta))
            for _ in range(size)
        ]
    return write_corpus(root, documents)


def unequal_sample(tmp_path):
    """The model fitted on :func:`unequal_corpus`, its sample's counts X (n, V) and
    classes y (n,)."""
    import scipy.sparse as sp

    model = fitted(tmp_path, unequal_corpus(tmp_path / "c"))
    sample = model.sample
    X = sp.csr_matrix((sample.counts, sample.words, sample.ptr),
                      shape=(sample.n_documents, len(model.counts.vocabulary)))  # fmt: skip
    return model, X, sample.labels.astype(np.int64)


@pytest.mark.parametrize(
    "corpus, options",
    [
        ("demo", []),
        ("demo", ["--ngram-range", "1,2"]),  # 24 candidates on three feature sets
        ("unequal", ["--ngram-range", "1,2"]),
    ],
)
@pytest.mark.parametrize("winner_cells", [0, 10**9])  # made again on demand, or whole
def test_blocks_of_one_document_choose_as_the_whole_scores(tmp_path, monkeypatch, corpus,
                                                           options, winner_cells):  # fmt: skip
    root = DEMO_CORPUS if corpus == "demo" else unequal_corpus(tmp_path / "c")
    model = fitted(tmp_path, root, *options)
    whole = with_choice(model)
    assert whole.choice["documents"] > 0
    monkeypatch.setattr(choosing, "SCORE_CELLS", 1)  # one document a block
    monkeypatch.setattr(choosing, "KEEP_CELLS", 0)  # the winner's scores made again
    monkeypatch.setattr(choosing, "WINNER_CELLS", winner_cells)
    blocks = with_choice(model)
    assert blocks.choice == whole.choice
    assert blocks.calibration == whole.calibration
    assert blocks.typicality == whole.typicality
    assert dumps(blocks) == dumps(whole) == dumps(model)  # the file fit wrote, byte for byte


def test_the_summaries_are_the_rows_of_the_whole_scores(tmp_path, monkeypatch):
    """Each candidate's summary (scored, predicted class, log p of the true class, log p(x))
    equals what the whole scores give, for blocks of 1, 2 and 5 documents."""
    from scipy.special import logsumexp

    from nbclass.models.posterior import log_posterior

    model, X, y = unequal_sample(tmp_path)
    folds = choosing.stratified_fold_ids(y, 5)
    candidates = choosing.CANDIDATES
    [(whole, known)] = choosing.held_out_summaries(
        model.counts, X, y, folds, candidates, evidence=set(candidates), keep=True
    )
    for cells in (4, 8, 20):  # 4 classes: 1, 2 and 5 documents a block
        monkeypatch.setattr(choosing, "SCORE_CELLS", cells)
        [(parts, known_parts)] = choosing.held_out_summaries(
            model.counts, X, y, folds, candidates, evidence=set(candidates), keep=True
        )
        assert np.array_equal(known_parts, known)
        for a, b in zip(parts, whole):
            assert np.array_equal(a.jll, b.jll)
            for name in ("scored", "pred", "picked", "evidence"):
                assert np.array_equal(getattr(a, name), getattr(b, name)), name
    rng = np.random.default_rng(3)
    for settings, summary in zip(candidates, whole):  # made again, in any order of rows
        monkeypatch.setattr(choosing, "WINNER_CELLS", 0)
        again = choosing.winner_scores(model.counts, X, y, folds, settings)
        assert isinstance(again, choosing.HeldOutScores)
        at = rng.permutation(y.size)[: y.size // 2]
        assert np.array_equal(again[at], summary.jll[at])
    for summary in whole:  # and they are the whole scores' rows
        jll = summary.jll
        ok = np.isfinite(jll[np.arange(y.size), y])
        assert np.array_equal(summary.scored, ok)
        log_proba = log_posterior(jll[ok])
        assert np.array_equal(summary.pred[ok], log_proba.argmax(axis=1))
        assert np.array_equal(summary.picked[ok], log_proba[np.arange(ok.sum()), y[ok]])
        has = known > 0
        assert np.array_equal(summary.evidence[has], logsumexp(jll[has], axis=1))


def test_a_summary_keeps_its_blocks_and_puts_the_whole_scores_together_when_read():
    """Summary.add keeps each block of scores as it was given (no (n, C) array filled
    for every candidate) and .jll puts them together when read: each row the block's
    row, −inf where no block gave one; the evidence of the kept blocks is
    posterior_and_evidence's of their rows, read before or after the scores."""
    from nbclass.models.posterior import log_posterior, posterior_and_evidence

    rng = np.random.default_rng(7)
    n, C = 40, 5
    order = rng.permutation(n)[:33]  # 7 rows never added
    for read_first in (False, True):
        summary = choosing.Summary.empty(n, C, evidence=True, keep=True)
        want = np.full((n, C), -np.inf)
        known = rng.integers(0, 3, n)
        truth = rng.integers(0, C, n)
        given = []
        for at in np.split(order, [4, 15, 16, 30]):
            jll = rng.normal(-50, 20, (at.size, C))
            jll[rng.random(jll.shape) < 0.2] = -np.inf
            want[at] = jll
            summary.add(at, jll, truth[at], known[at])
            given.append(jll)
        assert all(kept is block for (_, kept), block in zip(summary.blocks, given))
        if read_first:
            assert np.array_equal(summary.jll, want)
        has = np.zeros(n, dtype=bool)
        has[order] = known[order] > 0
        rows = np.flatnonzero(has)
        evidence = summary.evidence
        for row in rows:
            assert evidence[row] == posterior_and_evidence(want[row : row + 1])[1][0]
        assert np.isnan(evidence[~has]).all()
        assert np.array_equal(summary.jll, want) and summary.jll is summary.jll
        ok = np.isfinite(want[order, truth[order]])
        assert np.array_equal(summary.scored[order], ok)
        log_proba = log_posterior(want[order][ok])
        assert np.array_equal(summary.picked[order[ok]],
                              log_proba[np.arange(ok.sum()), truth[order][ok]])  # fmt: skip


def test_the_candidates_of_a_set_share_their_features_and_score_the_same_floats(tmp_path):
    """A set's candidates make each kind of features of its held-out documents once
    (the presences of Bernoulli and DCM, the log tf of three, the raw counts), as CSR
    and as CSC, and each scores the documents with them bit for bit as with its own;
    a block that is not all the documents makes its own."""
    from nbclass.counting.csr import as_csr

    model, X, y = unequal_sample(tmp_path)
    X = as_csr(X)
    folds = choosing.stratified_fold_ids(y, 5)
    rows = np.flatnonzero(folds == 0)
    C = len(model.counts.classes)
    fold, held_out = choosing.set_documents(choosing.fold_of(model.counts, X, y, rows), X,
                                            None, None, None)  # fmt: skip
    columns = held_out.tocsc()
    made: dict = {}
    for settings in choosing.CANDIDATES:
        scorer = choosing.fold_scorer(fold, settings)
        for by_columns in (None, columns):
            alone = choosing._block_scores(scorer, fold, held_out, 0, rows.size, C, by_columns)
            shared = choosing._block_scores(scorer, fold, held_out, 0, rows.size, C, by_columns,
                                            made)  # fmt: skip
            assert alone.tobytes() == shared.tobytes(), settings
            part = choosing._block_scores(scorer, fold, held_out, 1, rows.size, C, by_columns,
                                          made)  # fmt: skip
            assert part.tobytes() == alone[1:].tobytes()
    kinds = sorted(made, key=str)
    assert [kind for kind, _ in kinds] == ["log", "log", "presence", "presence", "raw", "raw"]
    assert made[("raw", False)] is held_out


def impossible_scores(seed: int, C: int, impossible: float):
    """(jll, y, lengths) of 300 documents: scores growing with the length, a share
    ``impossible`` of the cells −inf, the true class the best in 70 % of the rows."""
    rng = np.random.default_rng(seed)
    n = 300
    lengths = rng.integers(0, 300, size=n)
    jll = rng.normal(size=(n, C)) * np.sqrt(lengths + 1)[:, None] * 3
    jll[rng.random((n, C)) < impossible] = -np.inf
    y = np.where(rng.random(n) < 0.7, jll.argmax(axis=1), rng.integers(0, C, size=n))
    return jll, y, lengths


@pytest.mark.parametrize("cells", [1, 7, 64])
def test_the_calibration_fitted_block_by_block_is_the_whole_ones(monkeypatch, cells):
    """Scores with impossible classes (−inf) and documents whose true class is one of
    them: the (t0, t1, t2) of blocks of 1, 2 and 16 documents are the whole array's."""
    jll, y, lengths = impossible_scores(12, 4, 0.1)
    monkeypatch.setattr(choosing, "SCORE_CELLS", 10**9)
    whole = fit_calibration(jll, y, lengths)
    assert whole.t0 != 0.0 and whole.t1 != 0.0
    monkeypatch.setattr(choosing, "SCORE_CELLS", cells)
    assert fit_calibration(jll, y, lengths) == whole


def test_the_calibrations_log_softmax_of_impossible_classes_is_scipys(monkeypatch):
    """Blocks of scores with impossible classes (−inf) take the general steps, whose log
    softmax is :func:`nbclass.models.posterior.log_posterior` (no scipy.special): the
    loss, gradient and Hessian at several points, and the fitted (t0, t1, t2), are those
    of ``scipy.special.log_softmax``'s floats, bit for bit."""
    from scipy.special import log_softmax

    jll, y, lengths = impossible_scores(21, 5, 0.2)
    n = y.size
    ok = np.flatnonzero(np.isfinite(jll[np.arange(n), y]))
    features = np.stack([np.log1p(lengths[ok]), np.log1p(score_gaps(jll[ok]))], axis=1)
    points = [np.zeros(3), np.array([0.7, 0.3, -0.2]), np.array([-3.0, 1.0, 1.0])]

    def evaluated():
        loss = choosing._calibration_loss(jll, ok, y[ok], features, [(0, 100), (100, ok.size)])
        return [np.concatenate([[v], g, h.ravel()]).view(np.uint64)
                for v, g, h in map(loss, points)]  # fmt: skip

    ours, fitted = evaluated(), fit_calibration(jll, y, lengths)
    monkeypatch.setattr(choosing, "log_posterior", lambda z: log_softmax(z, axis=1))
    theirs = evaluated()
    assert all(np.array_equal(a, b) for a, b in zip(ours, theirs, strict=True))
    assert fit_calibration(jll, y, lengths) == fitted and fitted.t0 != 0.0


def test_the_calibration_of_its_first_documents_is_that_of_those_documents_alone():
    """most=m fits on the first m documents whose true class is possible: the
    documents of an impossible true class before them are skipped and not counted, and
    those after them change nothing but the targets' ε, which counts every document
    whose true class is possible (297 here, not 120)."""
    rng = np.random.default_rng(5)
    n, C = 300, 6
    lengths = rng.integers(0, 300, size=n)
    jll = rng.normal(size=(n, C)) * np.sqrt(lengths + 1)[:, None] * 3
    y = np.where(rng.random(n) < 0.7, jll.argmax(axis=1), rng.integers(0, C, size=n))
    jll[[3, 10, 50], y[[3, 10, 50]]] = -np.inf  # three documents no fold could score
    first = np.flatnonzero(np.isfinite(jll[np.arange(n), y]))[:120]
    assert first[-1] == 122
    features = np.stack([np.log1p(lengths[first]), np.log1p(score_gaps(jll[first]))], axis=1)
    loss = choosing._calibration_loss(jll, first, y[first], features, [(0, 120)], None, 297)
    gap = Calibration.GAP_BOUND
    t = choosing._minimise(loss, [(-Calibration.BOUND, Calibration.BOUND), choosing.T1_RANGE,
                                  (-gap, gap)])  # fmt: skip
    alone = Calibration(float(t[0]), float(t[1]), float(t[2]))
    assert fit_calibration(jll, y, lengths, most=120) == alone
    assert alone != fit_calibration(jll[first], y[first], lengths[first])  # ε of 120
    assert alone != fit_calibration(jll, y, lengths)
    assert fit_calibration(jll, y, lengths, most=None) == fit_calibration(jll, y, lengths)


@pytest.mark.parametrize("classes, most", [(524, None), (525, 3994), (2000, 1048), (5000, 1000)])
def test_the_choice_calibrates_on_its_first_documents_past_524_classes(classes, most):
    """Where the choice's cells are bounded (more than 524 classes), its calibration
    is fitted on the first 2^21 / C scored documents, at least 1,000; up to 524 classes
    on every one."""
    assert choosing.calibration_documents(classes) == most


def test_a_choice_of_many_classes_is_calibrated_on_its_first_documents(tmp_path, monkeypatch):
    """A real default fit of 600 classes of 8 documents (the bound at 2^21 cells scaled
    down to 40 documents): the stored calibration is fit_calibration of the winner's
    held-out scores on its first 40 scored documents (the others' scores do not move
    it), not on all of them."""
    rng = np.random.default_rng(9)
    documents = {
        f"c{c:03d}": [" ".join(f"w{c}x{k}" for k in rng.integers(0, 6, size=8))
                      + f" common{rng.integers(0, 3)}" for _ in range(8)]
        for c in range(600)
    }  # fmt: skip
    corpus = write_corpus(tmp_path / "corpus", documents)
    calls = []
    real = choosing.fit_calibration

    def spy(jll, y, n_tokens, threads=1, most=None):
        calls.append((np.array(jll), y.copy(), n_tokens.copy(), most))
        return real(jll, y, n_tokens, threads, most)

    monkeypatch.setattr(choosing, "CALIBRATION_CELLS", 40 * 600)
    monkeypatch.setattr(choosing, "CALIBRATION_LEAST", 10)
    monkeypatch.setattr(choosing, "fit_calibration", spy)
    model = fitted(tmp_path, corpus)
    assert model.choice["documents"] > 0, model.choice
    (jll, y, n_tokens, most), = calls
    assert most == 40 and y.size > 1000
    first = real(jll, y, n_tokens, most=40)
    other = jll.copy()  # the documents past the first 40 other scores: the same numbers
    other[40:] = np.random.default_rng(1).normal(size=other[40:].shape) * 30
    assert real(other, y, n_tokens, most=40) == first
    assert model.calibration.t0 == first.t0 and model.calibration.t1 == first.t1
    assert model.calibration.t2 == first.t2
    assert first != real(jll, y, n_tokens)


def test_a_fold_restricted_to_a_feature_set_is_the_fold_of_the_sets_counts(tmp_path):
    """One fold of the whole vocabulary serves every feature set: restricted to the set's
    rows (and pruned), it is the fold of the counts restricted first, to the integer."""
    import scipy.sparse as sp

    from nbclass.text.families import feature_sets, rows_of

    model = fitted(tmp_path, DEMO_CORPUS, "--ngram-range", "1,2")
    counts, sample = model.counts, model.sample
    X = sp.csr_matrix((sample.counts, sample.words, sample.ptr),
                      shape=(sample.n_documents, len(counts.vocabulary)))  # fmt: skip
    y = sample.labels.astype(np.int64)
    held = np.arange(0, y.size, 5)
    whole = choosing.fold_of(counts, X, y, held)
    sets = feature_sets(counts.vocabulary)
    assert sets == [("words",), ("words", "pairs")]
    for names in sets:
        rows = np.flatnonzero(rows_of(counts.vocabulary, names))
        for min_df in (None, 2):
            fold, documents = choosing.set_documents(whole, X, rows, min_df)
            alone = choosing.fold_of(counts.restrict(rows), X[:, rows], y, held)
            if min_df is not None:
                alone = choosing.pruned(alone, min_df)
            assert fold.counts.equals(alone.counts)
            assert np.array_equal(fold.words, rows[alone.words])  # X's columns
            assert np.array_equal(fold.used, alone.used)
            assert np.array_equal(fold.classes, alone.classes)
            expected = X[:, rows][held][:, alone.words[alone.used]]
            assert (documents != expected).nnz == 0 and documents.shape == expected.shape


def test_a_prunings_documents_from_its_unpruned_sets_are_those_from_x(tmp_path):
    """A pruned set's held-out documents taken from the columns of its set unpruned
    (choosing._Columns) are the matrix taken from X's rows, array for array: the same
    values, columns, row pointers and types."""
    import scipy.sparse as sp

    from nbclass.counting.csr import as_csr
    from nbclass.text.families import feature_sets, rows_of

    model = fitted(tmp_path, DEMO_CORPUS, "--ngram-range", "1,2", "--symbols")
    counts, sample = model.counts, model.sample
    X = as_csr(sp.csr_matrix((sample.counts, sample.words, sample.ptr),
                             shape=(sample.n_documents, len(counts.vocabulary))))  # fmt: skip
    y = sample.labels.astype(np.int64)
    held = np.arange(1, y.size, 4)
    whole = choosing.fold_of(counts, X, y, held)
    taken = 0
    for names in feature_sets(counts.vocabulary, model.tokenizer.symbol_entries):
        rows = np.flatnonzero(rows_of(counts.vocabulary, names,
                                      model.tokenizer.symbol_entries))  # fmt: skip
        inside = choosing.restricted(whole, rows)
        unpruned, documents = choosing.set_documents(inside, X, None, None, None, None,
                                                     X[held])  # fmt: skip
        base = choosing._Columns(unpruned.words[unpruned.used], documents)
        for min_df, top_mi in ((2, None), (None, 5), (None, 20), (2, 10), (None, 10**6)):
            fold, got = choosing.set_documents(inside, X, None, min_df, top_mi, None, base)
            _, expected = choosing.set_documents(inside, X, None, min_df, top_mi, None, X[held])
            assert got.shape == expected.shape and got.dtype == expected.dtype
            for a, b in ((got.data, expected.data), (got.indices, expected.indices),
                         (got.indptr, expected.indptr)):  # fmt: skip
                assert a.dtype == b.dtype and np.array_equal(a, b)
            taken += got.shape[1] < documents.shape[1]
    assert taken >= 4


def test_a_restricted_folds_mutual_information_is_the_whole_folds_at_its_entries(tmp_path):
    """The choice computes I_j of a fold's entries once and ranks each feature set's
    entries by those values at its rows: they are the values of the set's fold computed
    on its own, to the bit (an entry's I_j is a function of its own counts and of the
    classes' documents), so the rankings (ties to the earlier entry) are the same."""
    import scipy.sparse as sp

    from nbclass.models.selection import pruning_information
    from nbclass.text.families import feature_sets, rows_of

    model = fitted(tmp_path, DEMO_CORPUS, "--ngram-range", "1,2", "--symbols")
    counts, sample = model.counts, model.sample
    symbols = model.tokenizer.symbol_entries
    X = sp.csr_matrix((sample.counts, sample.words, sample.ptr),
                      shape=(sample.n_documents, len(counts.vocabulary)))  # fmt: skip
    y = sample.labels.astype(np.int64)
    sets = feature_sets(counts.vocabulary, symbols)
    assert len(sets) == 4
    for held in (np.arange(0, y.size, 3), np.arange(1, y.size, 3)):
        whole = choosing.fold_of(counts, X, y, held)
        information = pruning_information(whole.counts)
        for names in sets:
            rows = np.flatnonzero(rows_of(counts.vocabulary, names, symbols))
            fold = choosing.restricted(whole, rows)
            alone = pruning_information(fold.counts)
            shared = information[np.searchsorted(whole.words, fold.words)]
            assert shared.tobytes() == alone.tobytes()
            for k in (None, 5, 40):
                assert np.array_equal(choosing.mi_ranking(fold, k, (whole, information)),
                                      choosing.mi_ranking(fold, k))  # fmt: skip


def _general_loss(jll, y, features, t):
    """The calibration's loss, gradient and Hessian by its general steps (every cell
    through np.where, log_softmax and exp), written out here as a reference."""
    from scipy.special import log_softmax

    design = np.hstack([np.ones((features.shape[0], 1)), features])
    n = design.shape[0]
    epsilon = 1.0 / (n + 2)
    finite = np.isfinite(jll)
    shifted = np.where(finite, jll - jll.max(axis=1, keepdims=True), 0.0)
    others = finite.sum(axis=1, keepdims=True) - 1.0
    target = np.where(finite, epsilon / np.maximum(others, 1.0), 0.0)
    target[np.arange(n), y] = np.where(others[:, 0] > 0, 1.0 - epsilon, 1.0)
    scales = np.exp(-(design @ t))[:, None]
    z = np.where(finite, shifted * scales, 0.0)
    log_p = np.where(finite, log_softmax(np.where(finite, z, -np.inf), axis=1), 0.0)
    p = np.where(finite, np.exp(log_p), 0.0)
    pz, tz = (p * z).sum(axis=1), (target * z).sum(axis=1)
    first = tz - pz
    second = (p * z * z).sum(axis=1) - pz * pz + pz - tz
    rows = (target * log_p).sum(axis=1)
    return float(-rows.mean()), design.T @ first / n, (design * second[:, None]).T @ design / n


@pytest.mark.parametrize("C", [1, 2, 50, 3000])
@pytest.mark.parametrize("kept", [True, False])
def test_the_calibration_of_finite_scores_takes_the_general_steps_floats(monkeypatch, C, kept):
    """Every score finite (the rule at many classes): the calibration's loss, gradient
    and Hessian are those of its general steps bit for bit, at temperatures that put
    most cells far below exp's underflow, some near it and none (t = 0), with rows
    whose best score is tied and a block of one class; the blocks kept between
    evaluations (few cells) or made again from the scores (many)."""
    if not kept:
        monkeypatch.setattr(choosing, "SCORE_CELLS", 1)
    rng = np.random.default_rng(C)
    n = 40
    jll = -rng.exponential(400.0, size=(n, C)) * rng.uniform(0.01, 3, size=(n, 1))
    jll[::7, :] = np.round(jll[::7, :])  # ties, at the top too
    jll[3, :] = 0.0
    y = rng.integers(0, C, size=n)
    features = np.stack([np.log1p(rng.integers(1, 500, n)), rng.uniform(0, 3, n)], axis=1)
    for ok in (np.arange(n), np.arange(0, n, 3)):  # every row, or some (then gathered)
        m = ok.size
        loss = choosing._calibration_loss(jll, ok, y[ok], features[ok],
                                          choosing.row_blocks(m, C, 997))  # fmt: skip
        for t in ([0.0, 0.0, 0.0], [-2.6, 0.13, 0.87], [1.5, 1.0, -0.5], [-6.0, 0.0, 2.0]):
            t = np.array(t)
            value, gradient, hessian = loss(t)  # the blocks made again after the first t
            want = _general_loss(jll[ok], y[ok], features[ok], t)
            assert value == want[0]
            assert np.array_equal(gradient, want[1]) and np.array_equal(hessian, want[2])


@pytest.mark.parametrize("k", [1, 3])
def test_the_winners_scores_made_again_are_the_scores_it_was_chosen_by(tmp_path, k):
    """The winner's (n, C) scores made again, from its folds made afresh or from the
    last fold the candidates were scored on (choosing.LastFold), are each candidate's
    whole held-out scores, −inf where a fold lacks the class: one fold (the sample
    held out at once) and three."""
    import scipy.sparse as sp

    model = fitted(tmp_path, unequal_corpus(tmp_path / "c"))
    sample = model.sample
    X = sp.csr_matrix((sample.counts, sample.words, sample.ptr),
                      shape=(sample.n_documents, len(model.counts.vocabulary)))  # fmt: skip
    y = sample.labels.astype(np.int64)
    if k == 1:  # every other document held out at once, the rest of the corpus trains
        X, y = X[::2], y[::2]
    folds = choosing.stratified_fold_ids(y, k)
    kept = choosing.keeps_its_class(folds, y, model.counts.class_count)  # as choose does
    X, y, folds = X[kept], y[kept], folds[kept]
    candidates = choosing.CANDIDATES
    last = choosing.LastFold()
    [(whole, _)] = choosing.held_out_summaries(
        model.counts, X, y, folds, candidates, keep=True, last=last
    )
    assert last.get(model.counts, X, k - 1) is not None
    assert last.get(model.counts, X[:], k - 1) is None  # another sample: made afresh
    assert all(np.isfinite(s.jll).any() for s in whole)
    for settings, summary in zip(candidates, whole):
        for kept in (None, last):
            again = choosing.winner_scores(model.counts, X, y, folds, settings, last=kept)
            assert np.array_equal(again, summary.jll)


def test_the_posterior_and_evidence_from_one_exp_are_the_two_functions_floats():
    """posterior_and_evidence gives log_posterior's and scipy's logsumexp's floats bit
    for bit: rows far apart and close, ties at the top, rows of one class, rows with
    impossible classes and rows with none possible; rows whose other classes all lie
    just past the bounded tail (e^-64), and best scores near 0, where the bounds of the
    evidence are not one float and every exp is taken."""
    from scipy.special import logsumexp

    from nbclass.models.posterior import log_posterior, posterior_and_evidence

    rng = np.random.default_rng(5)
    for trial in range(400):
        n, C = int(rng.integers(1, 30)), int(rng.choice([1, 2, 3, 20, 500, 3000]))
        spread = rng.choice([0.5, 5.0, 50.0, 70.0, 400.0, 2000.0])
        jll = rng.normal(0, 1000) * rng.choice([1e-9, 1.0]) - rng.exponential(spread, (n, C))
        if trial % 3 == 0:
            jll = np.round(jll)
        if trial % 5 == 0:
            jll[:, : C // 2] = jll[:, :1]
        if trial % 7 == 0:
            jll[rng.random(jll.shape) < 0.3] = -np.inf
        if trial % 11 == 0:
            jll[0] = -np.inf
        if trial % 13 == 0:
            jll[:, 1:] -= 60 + rng.uniform(0, 30)
        log_proba, evidence = posterior_and_evidence(jll)
        with np.errstate(divide="ignore"):
            want = logsumexp(jll, axis=1)
        assert np.array_equal(log_proba.view(np.int64), log_posterior(jll).view(np.int64))
        assert np.array_equal(evidence.view(np.int64), want.view(np.int64))


@pytest.mark.parametrize("impossible", [0.0, 0.1])
def test_the_calibration_on_two_threads_is_the_one_threads(monkeypatch, impossible):
    """Blocks shared by two threads give the (t0, t1, t2) of one thread, with every
    score finite (the blocks' fast steps) and with impossible classes."""
    rng = np.random.default_rng(4)
    n, C = 400, 30
    lengths = rng.integers(0, 300, size=n)
    jll = rng.normal(size=(n, C)) * np.sqrt(lengths + 1)[:, None] * 3
    jll[rng.random((n, C)) < impossible] = -np.inf
    y = np.where(rng.random(n) < 0.7, jll.argmax(axis=1), rng.integers(0, C, size=n))
    monkeypatch.setattr(choosing, "SCORE_CELLS", 7 * C)  # 58 blocks of 7 documents
    alone = fit_calibration(jll, y, lengths)
    assert alone.t0 != 0.0 and alone.t1 != 0.0
    assert fit_calibration(jll, y, lengths, threads=2) == alone



def test_the_finite_blocks_steps_keep_the_subnormal_exps_at_the_underflow():
    """_finite_block against the general steps written out (log_softmax of z, exp of it,
    the target τ · z and τ · log p sums) on rows whose every cell but the best lies where
    exp underflows (its last subnormals near −745.13, the cut at −746, the floats either
    side of it, and below), with every target on the best cell (τ · z = 0): the sums are
    then made of subnormal terms alone, and each must be the general steps' bit for bit
    (a cut above −745.14 loses the last subnormals and fails)."""
    from scipy.special import log_softmax

    edge = [
        -745.0, -745.1, -745.1332, -745.13321, -745.1333, -745.14, -745.5, -745.99,
        np.nextafter(-746.0, 0.0), -746.0, np.nextafter(-746.0, -np.inf), -746.5, -1000.0,
    ]  # fmt: skip
    rng = np.random.default_rng(5)
    shifted = np.array([[0.0, *rng.permutation(edge)] for _ in range(6)]
                       + [[0.0] + edge[:3] * 4 + [-744.9]])  # fmt: skip
    m, C = shifted.shape
    y = np.zeros(m, dtype=np.int64)
    for scale in (1.0, 1.0 + 2**-40, 1.0 - 2**-40, 0.9995, 0.9999):
        scales = np.full((m, 1), scale)
        first, second, rows = choosing._finite_block(shifted, scales, y, 0.0, 1.0)
        z = shifted * scales
        log_p = log_softmax(z, axis=1)
        p = np.exp(log_p)
        target = np.zeros((m, C))
        target[:, 0] = 1.0
        pz, tz = (p * z).sum(axis=1), (target * z).sum(axis=1)
        assert (pz != 0).all()  # subnormal terms, the sums' whole value
        assert np.array_equal(first, tz - pz)
        assert np.array_equal(second, (p * z * z).sum(axis=1) - pz * pz + pz - tz)
        assert np.array_equal(rows, (target * log_p).sum(axis=1))


def test_the_calibration_of_scores_at_exps_underflow_takes_the_general_steps_floats():
    """Cells placed where exp underflows (its last subnormal near −745.13, the cut at
    −746 and the floats either side of it), subnormal and signed zero scores, far below
    (−1000): the finite blocks' loss, gradient and Hessian are the general steps' bit for
    bit at t = 0 (the scores as they are) and at scales a little above and below 1 (cells
    moved across the cut); a block holding −inf (a class impossible) with them too."""
    edge = [
        0.0, -745.0, -745.1332, -745.13321, -745.1333, -745.14, -745.5, -745.99,
        np.nextafter(-746.0, 0.0), -746.0, np.nextafter(-746.0, -np.inf), -746.5, -1000.0,
        -1e-310, -5e-324, -0.0, -708.4, -709.8,
    ]  # fmt: skip
    rows = [edge, [e + 3.5 for e in edge], [e * 1.0005 for e in edge], edge[::-1]]
    jll = np.array(rows * 3)
    n, C = jll.shape
    features = np.stack([np.linspace(0.1, 2.0, n), np.linspace(1.0, 0.0, n)], axis=1)
    times = ([0.0, 0.0, 0.0], [-0.0004, 0.0, 0.0], [0.0007, 0.0, 0.0], [0.0, 0.0002, -0.0003])
    for scores in (jll, np.vstack([jll, np.where(np.arange(C) == 5, -np.inf, jll[:1])])):
        m = scores.shape[0]
        labels = np.arange(m) % C
        feats = np.vstack([features, features[:1]])[:m]
        for ok in (np.arange(m), np.arange(0, m, 2)):
            loss = choosing._calibration_loss(scores, ok, labels[ok], feats[ok],
                                              choosing.row_blocks(ok.size, C, 997))  # fmt: skip
            for t in times:
                t = np.array(t)
                value, gradient, hessian = loss(t)
                want = _general_loss(scores[ok], labels[ok], feats[ok], t)
                assert value == want[0]
                assert np.array_equal(gradient, want[1]) and np.array_equal(hessian, want[2])


@pytest.mark.parametrize("options", [[], ["--ngram-range", "1,2"]])
def test_two_threads_share_the_candidates_only_from_thread_cells(tmp_path, monkeypatch,
                                                                  options):  # fmt: skip
    """With two threads, the candidates of counts below THREAD_CELLS words × classes are
    scored in the calling thread (no pool); from it on by a pool of two, and the choice
    is the same, byte for byte, as one thread's."""
    import concurrent.futures

    model = fitted(tmp_path, unequal_corpus(tmp_path / "c"), *options)
    pools = []

    class Recorded(concurrent.futures.ThreadPoolExecutor):
        def __init__(self, workers, *args, **kwargs):
            pools.append(workers)
            super().__init__(workers, *args, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ThreadPoolExecutor", Recorded)
    one = with_choice(model, threads=1)
    assert pools == []
    two = with_choice(model, threads=2)  # 40 words × 4 classes: one thread
    assert pools == []
    assert dumps(two) == dumps(one) == dumps(model)
    size = len(model.counts.vocabulary) * len(model.counts.classes)
    monkeypatch.setattr(choosing, "THREAD_CELLS", size)  # the counts hold as many: two
    shared = with_choice(model, threads=2)
    assert pools and set(pools) == {2}
    assert dumps(shared) == dumps(one)


def test_the_candidates_posteriors_made_at_once_are_each_ones_own(tmp_path, monkeypatch):
    """A small corpus's fold has its candidates' posteriors made by one log_posterior of
    their scores stacked (Summary.add_together): every summary (scored, predicted class,
    log p of the true class, log p(x), the kept scores) is the one each candidate makes
    alone (STACK_CELLS 0), bit for bit, on several feature sets, in the unequal corpus
    whose folds lack a class (−inf scores, documents not scored)."""
    model, X, y = unequal_sample(tmp_path)
    folds = choosing.stratified_fold_ids(y, 5)
    folds[y == 3] = 0  # the class of 2 documents held out whole: its fold lacks it
    candidates = choosing.CANDIDATES
    sets = [(None, None, None), (None, 2, None), (None, None, 5)]

    def summaries():
        return choosing.held_out_summaries(model.counts, X, y, folds, candidates, sets=sets,
                                           evidence=set(candidates[:4]), keep=True)  # fmt: skip

    together = summaries()
    monkeypatch.setattr(choosing, "STACK_CELLS", 0)
    alone = summaries()
    assert any(not s.scored.all() for s in together[0][0])  # some document not scored
    for (a, known_a), (b, known_b) in zip(together, alone):
        assert np.array_equal(known_a, known_b)
        for x, z in zip(a, b):
            for name in ("scored", "pred", "picked", "jll"):
                assert getattr(x, name).tobytes() == getattr(z, name).tobytes(), name
            assert (x.evidence is None) == (z.evidence is None)
            if x.evidence is not None:
                assert x.evidence.tobytes() == z.evidence.tobytes()


def test_the_held_out_documents_by_columns_score_the_floats_of_their_rows():
    """A scorer of dense weights gives a CSC matrix of the documents the floats it gives
    the CSR matrix whose rows are in column order (scipy adds each cell's terms column by
    column either way): the multinomial, Bernoulli, log-tf and DCM scorers, on long rows
    of weights of mixed magnitudes whose sums round differently in another order (as
    the rows shuffled show: the reason _held_columns asks for sorted rows). A scorer
    whose features read the entries' columns or rows (idf, length norm) does not take
    columns."""
    import scipy.sparse as sp

    from nbclass.models.posterior import LinearScorer
    from nbclass.models.textmodels import DcmScorer

    rng = np.random.default_rng(11)
    n, V, C = 40, 3000, 7
    X = sp.random(n, V, density=0.15, format="csr", random_state=rng,
                  data_rvs=lambda k: rng.integers(1, 9, k)).astype(np.int64)  # fmt: skip
    X.sort_indices()
    W = rng.normal(0.0, 1.0, (V, C)) * 10.0 ** rng.integers(-6, 6, (V, 1))
    bias = rng.normal(size=C)
    scorers = [
        LinearScorer(W, bias, binary=False),
        LinearScorer(W, bias, binary=True),
        LinearScorer(W, bias, binary=False, tf="log"),
        DcmScorer(W, bias, concentration=np.full(C, 50.0)),
    ]
    for scorer in scorers:
        assert scorer.takes_columns()
        by_rows = scorer.joint_log_likelihood(X)
        assert by_rows.tobytes() == scorer.joint_log_likelihood(X.tocsc()).tobytes()
    shuffled = X.copy()
    for i in range(n):  # each row's entries in another order: other roundings
        a, b = shuffled.indptr[i], shuffled.indptr[i + 1]
        order = a + rng.permutation(b - a)
        shuffled.indices[a:b], shuffled.data[a:b] = X.indices[order], X.data[order]
    shuffled.has_sorted_indices = False
    assert not np.array_equal(scorers[0].joint_log_likelihood(shuffled),
                              scorers[0].joint_log_likelihood(X))  # fmt: skip
    assert choosing._held_columns(shuffled, 1) is None
    assert choosing._held_columns(X, 2) is None  # blocks of rows: scored by rows
    assert not LinearScorer(W, bias, binary=False, idf=np.ones(V)).takes_columns()
    assert not LinearScorer(W, bias, binary=False, length_norm=True).takes_columns()


def test_the_summaries_by_columns_are_those_by_rows(tmp_path, monkeypatch):
    """held_out_summaries scores every candidate of every feature set from the fold's
    held-out documents as a CSC matrix (every candidate's weights are dense here, and
    held by columns at any size: COLUMN_CELLS 0), and every summary is bit for bit the
    one the CSR rows give (_held_columns None)."""
    monkeypatch.setattr(choosing, "COLUMN_CELLS", 0)
    model, X, y = unequal_sample(tmp_path)
    folds = choosing.stratified_fold_ids(y, 5)
    candidates = choosing.CANDIDATES
    sets = [(None, None, None), (None, 2, None), (None, None, 5)]
    taken = []
    given = choosing._block_input

    def counted(scorer, held_out, start, stop, columns=None, made=None):
        taken.append(columns is not None)
        return given(scorer, held_out, start, stop, columns, made)

    monkeypatch.setattr(choosing, "_block_input", counted)

    def summaries():
        return choosing.held_out_summaries(model.counts, X, y, folds, candidates, sets=sets,
                                           evidence=set(candidates), keep=True)  # fmt: skip

    by_columns = summaries()
    assert len(taken) == 5 * 3 * len(candidates) and all(taken)
    monkeypatch.setattr(choosing, "_held_columns", lambda held, blocks: None)
    by_rows = summaries()
    for (a, known_a), (b, known_b) in zip(by_columns, by_rows):
        assert np.array_equal(known_a, known_b)
        for x, z in zip(a, b):
            for name in ("scored", "pred", "picked", "jll", "evidence"):
                assert getattr(x, name).tobytes() == getattr(z, name).tobytes(), name


def test_the_finite_blocks_known_row_maxima_are_numpys_floats():
    """_finite_block told the least negative magnitude of its shifted scores (so that it
    skips the row maxima of z where they are +0 for certain) gives the floats, signs of
    zero included, that it gives when it takes them: on rows with ties at 0, −0 cells,
    negative subnormals that underflow to −0 at scales below 1, scores that overflow to
    −inf at huge scales, and scales of 0 and inf (the pass taken then). (A row whose
    largest shifted score is not 0, outside the contract, gives other floats.)"""
    rng = np.random.default_rng(11)
    m, C = 40, 15
    blocks = []
    for _ in range(3):
        jll = rng.normal(size=(m, C)) * 40.0
        jll[::7, 3] = jll[::7].max(axis=1)  # ties at the top
        blocks.append(jll - jll.max(axis=1, keepdims=True))
    tiny = blocks[0].copy()
    tiny[::3, 5] = -5e-324  # negative subnormals
    tiny[1::3, 6] = -1e-310
    zero = blocks[1].copy()
    zero[::4, 2] = -0.0  # the largest tied with −0
    two = blocks[2][:, :2] - blocks[2][:, :2].max(axis=1, keepdims=True)  # (each row's largest 0)
    blocks += [tiny, zero, np.zeros((m, C)), two, np.zeros((m, 1))]
    assert choosing._least_negative(zero) == 0.0 and choosing._least_negative(tiny) == 5e-324
    assert choosing._least_negative(np.zeros((m, C))) == np.inf
    y = rng.integers(0, 1, size=m)
    for shifted in blocks:
        least = choosing._least_negative(shifted)
        scaled = [np.full((m, 1), s) for s in (1.0, 1e-300, 1e306, 0.0, np.inf)]
        scaled += [rng.uniform(0.5, 2.0, (m, 1)), np.geomspace(1e-10, 1e10, m)[:, None]]
        for scales in scaled:
            with np.errstate(all="ignore"):
                known = choosing._finite_block(shifted, scales, y, 0.01, 0.9, least)
                taken = choosing._finite_block(shifted, scales, y, 0.01, 0.9)
            for a, b in zip(known, taken):
                assert np.array_equal(a.view(np.int64), b.view(np.int64))


def test_the_candidates_scored_together_are_the_floats_each_scores_alone(tmp_path, monkeypatch):
    """_scores_together (the small corpora's folds: the linear scorers reading one
    matrix of shared features multiplied by their weights side by side, one product)
    gives every candidate's scores bit for bit as _block_scores gives them one by one,
    by rows and by columns, on a fold with every class and on one lacking a class; the
    raw counts', the log tf's and the presences' scorers are multiplied together."""
    from nbclass.counting.csr import as_csr

    model, X, y = unequal_sample(tmp_path)
    X = as_csr(X)
    C = len(model.counts.classes)
    products = []
    matmul = type(X).__matmul__

    def counted(self, other):
        products.append(np.shape(other))
        return matmul(self, other)

    folds = choosing.stratified_fold_ids(y, 5)
    lacking = np.flatnonzero((folds == 0) | (y == y.max()))  # every document of a class
    for rows in (np.flatnonzero(folds == 0), lacking):
        fold, held_out = choosing.set_documents(choosing.fold_of(model.counts, X, y, rows), X,
                                                None, None, None)  # fmt: skip
        for columns in (None, held_out.tocsc()):
            made: dict = {}  # one set: one dict of features
            items = [(s, None, fold, held_out, None, columns, made) for s in choosing.CANDIDATES]
            alone = [
                choosing._block_scores(choosing.fold_scorer(fold, s), fold, held_out, 0,
                                       rows.size, C, columns, {})
                for s in choosing.CANDIDATES
            ]  # fmt: skip
            products.clear()
            with monkeypatch.context() as patched:
                patched.setattr(type(X), "__matmul__", counted)
                patched.setattr(type(held_out.tocsc()), "__matmul__", counted)
                together = choosing._scores_together(items, rows.size, C)
            for a, b in zip(alone, together):
                assert a.shape == b.shape == (rows.size, C)
                assert a.tobytes() == b.tobytes()
            assert any(shape[1] > fold.classes.size for shape in products if len(shape) == 2)
        assert (fold.classes.size < C) == (rows is lacking)


def test_the_ranking_by_information_is_a_stable_sorts_first_k():
    """rank_features (the choice's MI prunings: a partition, the values above the k-th
    sorted, those tied with it after them in index order) gives the first k indices of
    a stable sort of −I at every k, with ties, ±0, NaN and a tie at the k-th across it."""
    from nbclass.models.selection import rank_features

    rng = np.random.default_rng(8)
    values = np.array([0.0, -0.0, 0.5, 1.0, 2.0, np.nan, 1e-300])
    for trial in range(600):
        n = int(rng.integers(1, 300))
        if trial % 2:
            I = rng.choice(values, n)
        else:
            I = np.round(rng.random(n), int(rng.integers(1, 4)))
        for k in sorted({1, 2, n // 4, n // 3, n // 2, n - 1, n, n + 1} - {0}):
            assert np.array_equal(rank_features(I, k), np.argsort(-I, kind="stable")[:k])
