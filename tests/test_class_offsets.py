"""The class offsets of a chosen model: p(c | x) = softmax_c(b_c / T(x) + a_c + d_c log(1 + n_x)),
their fit on held-out scores, their record in the model file, and the choice that keeps them."""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import replace
from fractions import Fraction as F

import numpy as np
import pytest
from conftest import DEMO_CORPUS, REPO, nbclass_command

from nbclass.modelfile.quick import reported
from nbclass.modelfile.textfile import load
from nbclass.models import choosing
from nbclass.models.chosen import calibrated
from nbclass.models.estimators import Calibration, EstimatorSettings
from nbclass.models.model import Classifier, recalibrated, select_features
from nbclass.models.posterior import make_scorer

LN2, LN3 = math.log(2), math.log(3)


def test_the_offsets_add_to_the_tempered_scores_as_the_formula_says():
    # T = e^(ln 2) = 2; b = (ln 4, 0) -> b / T = (ln 2, 0); n_x = 1 -> log(1 + n_x) = ln 2;
    # class 0: ln 2 + a_0 + d_0 ln 2 = ln 2 + ln 3 + ln 2 = ln 12, class 1: 0 + 0 + 0.
    # p = (12/13, 1/13).
    calibration = Calibration(LN2, 0.0, 0.0, (LN3, 0.0), (1.0, 0.0))
    jll = np.array([[math.log(4), 0.0]])
    got = np.exp(calibrated(jll, np.array([1]), calibration))[0]
    assert got.tolist() == pytest.approx([F(12, 13), F(1, 13)], rel=1e-15)
    # the one-document path, in plain Python
    quick = reported([math.log(4), 0.0], 1, [5, 5], EstimatorSettings(), calibration)
    assert [math.exp(x) for x in quick] == pytest.approx([F(12, 13), F(1, 13)], rel=1e-15)
    # n_x = 3: log(1 + n_x) = ln 4 = 2 ln 2, d_1 = -1/2 -> class 1 gets a_1 - ln 2;
    # class 0: ln 2 + ln 3 + 0 = ln 6, class 1: ln(1/2) + (-ln 2)... b_1 / T = 0.
    # scores (ln 6, -ln 2): p = (6 / (6 + 1/2), (1/2) / (6 + 1/2)) = (12/13, 1/13).
    calibration = Calibration(LN2, 0.0, 0.0, (LN3, 0.0), (0.0, -0.5))
    got = np.exp(calibrated(jll, np.array([3]), calibration))[0]
    assert got.tolist() == pytest.approx([F(12, 13), F(1, 13)], rel=1e-15)


def test_a_class_ruled_out_stays_ruled_out_and_no_evidence_gives_the_prior():
    calibration = Calibration(0.0, 0.0, 0.0, (5.0, 0.0, 0.0), (1.0, 0.0, 0.0))
    jll = np.array([[-np.inf, math.log(2), 0.0]])
    got = np.exp(calibrated(jll, np.array([7]), calibration))[0]
    assert got.tolist() == pytest.approx([0.0, F(2, 3), F(1, 3)], rel=1e-15)
    assert got[0] == 0.0
    # a document with no known token: the class prior, whatever the offsets
    prior = reported([-1.0, -2.0, -3.0], 0, [1, 1, 2], EstimatorSettings(), calibration)
    assert [math.exp(x) for x in prior] == pytest.approx([F(2, 7), F(2, 7), F(3, 7)], rel=1e-15)


def test_the_fitted_offsets_are_the_minimum_of_the_penalised_log_loss():
    """The objective is convex: a zero gradient is its minimum. Checked on scores of four
    classes, one of them ruled out for some documents, lengths 0 to 200."""
    rng = np.random.default_rng(7)
    n, C = 400, 4
    y = rng.integers(0, C, n)
    n_tokens = rng.integers(0, 200, n)
    L = rng.normal(size=(n, C)) + 2.0 * (np.arange(C)[None, :] == y[:, None])
    L[rng.random(n) < 0.1, 3] = -np.inf
    L[y == 3, 3] = np.log(0.5)  # never the true class's score
    L = L - np.logaddexp.reduce(L, axis=1, keepdims=True)
    a, d = choosing.fit_offsets(L, y, n_tokens)
    u = np.log1p(n_tokens)
    S = L + a + np.outer(u, d)
    P = np.exp(S - np.logaddexp.reduce(S, axis=1, keepdims=True))
    R = P.copy()
    R[np.arange(n), y] -= 1.0
    gradient_a = R.sum(axis=0) + choosing.OFFSET_RIDGE * a
    gradient_d = u @ R + choosing.OFFSET_RIDGE * d
    # zero to the precision of the objective's floats (a first gradient of order n)
    assert max(np.abs(gradient_a).max(), np.abs(gradient_d).max()) <= 1e-9 * n
    assert np.abs(a).max() > 0.05  # they moved: the scores were not already calibrated
    # the same scores give the same floats
    again = choosing.fit_offsets(L, y, n_tokens)
    assert again[0].tolist() == a.tolist() and again[1].tolist() == d.tolist()


def test_cross_fitted_offsets_score_no_document_with_offsets_it_helped_fit():
    """Each fold's documents are scored by the calibration and offsets of the other folds:
    changing one fold's scores leaves its own documents' results as they were."""
    rng = np.random.default_rng(3)
    n, C = 300, 3
    y = np.arange(n) % C
    jll = rng.normal(size=(n, C)) * 5 + 4.0 * (np.arange(C)[None, :] == y[:, None])
    n_tokens = rng.integers(1, 50, n)
    folds = choosing.stratified_fold_ids(y, 3)
    first = choosing.cross_fitted_offsets(jll, y, n_tokens, folds)
    changed = jll.copy()
    changed[folds == 0] = rng.normal(size=((folds == 0).sum(), C))
    second = choosing.cross_fitted_offsets(changed, y, n_tokens, folds)
    # every other fold's offsets were fitted with fold 0's documents: all their numbers move
    assert (first[folds != 0] != second[folds != 0]).all()
    # fold 0's documents are scored by offsets fitted on folds 1 and 2 alone: with its own
    # scores restored, the same floats
    restored = changed.copy()
    restored[folds == 0] = jll[folds == 0]
    third = choosing.cross_fitted_offsets(restored, y, n_tokens, folds)
    assert np.array_equal(third[folds == 0], first[folds == 0])


def test_the_record_keeps_the_offsets_and_an_old_record_reads_as_before():
    plain = Calibration(0.5, 0.25, -0.125)
    assert plain.to_dict() == {"kind": "length-temperature", "t0": 0.5, "t1": 0.25, "t2": -0.125}
    assert Calibration.from_dict(plain.to_dict(), 3) == plain
    shifted = Calibration(0.5, 0.25, -0.125, (0.1, -0.2, 0.3), (1.0, 0.0, -1.0))
    record = shifted.to_dict()
    assert record["kind"] == "length-temperature+class-offsets"
    assert Calibration.from_dict(record, 3) == shifted
    with pytest.raises(ValueError, match="3 class offsets for 2 classes"):
        Calibration.from_dict(record, 2)
    for bad in ({**record, "offsets": [0.1, 0.2]}, {**record, "offsets": "x"},
                {**record, "length_offsets": [1.0, math.inf, 0.0]}):  # fmt: skip
        with pytest.raises(ValueError):
            Calibration.from_dict(bad, 3)


# --- select-features: the calibration of the words it keeps ---------------------------------


@pytest.fixture(scope="module")
def chosen(tmp_path_factory):
    """fit's default model of the demo corpus's words: its choice keeps class offsets, and
    its vocabulary filter keeps every entry (words and symbols, 562), measured with no
    pruning. Pinned to words (``--ngram-range 1,1``): the subject here is the offsets, and
    the default's pairs win the demo's choice pruned to df>=2, without offsets."""
    path = tmp_path_factory.mktemp("chosen") / "model.nbc"
    words = ["--ngram-range", "1,1"]
    result = subprocess.run([*nbclass_command(), "fit", str(DEMO_CORPUS), "-o", str(path), "-q",
                             *words], capture_output=True, cwd=REPO)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return path


def selected(model_path, k: int, out):
    result = subprocess.run(
        [*nbclass_command(), "select-features", "-m", str(model_path), "-k", str(k),
         "-o", str(out)],
        capture_output=True, cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return load(str(out))


def chosen_row(model) -> dict:
    (row,) = [row for row in model.choice["candidates"] if row["chosen"]]
    return row


def test_select_features_keeping_every_word_changes_nothing_that_scores(chosen, tmp_path):
    """The same words score the same: the choice, calibration and typicality are kept."""
    model = load(str(chosen))
    V = len(model.active_counts.vocabulary)
    pruned = selected(chosen, V, tmp_path / "all.nbc")
    assert len(pruned.counts.vocabulary) == V
    assert pruned.calibration == model.calibration and pruned.choice == model.choice
    assert pruned.typicality == model.typicality is not None


def test_the_calibration_fitted_again_is_fits_own_on_the_same_words(chosen):
    """The calibration is fitted again from the sample as fit fits it for its winner:
    over every word of the demo's model (its winner's words and symbols, no pruning), the
    same held-out scores give fit's temperature and class offsets to the bit, and the
    choice's numbers of the winner with offsets."""
    model = load(str(chosen))
    assert model.calibration.offsets and model.sample is not None
    V = len(model.counts.vocabulary)
    assert np.array_equal(model.active_rows, np.arange(V))
    again = recalibrated(model, model.sample, np.arange(V), V)
    assert again.calibration == model.calibration
    mine, fits = chosen_row(again), chosen_row(model)
    assert mine["name"] == "complement tf=log no-class-prior, class offsets"  # one set, unnamed
    assert fits["name"] == "complement tf=log no-class-prior, words+symbols, class offsets"
    for key in ("settings", "accuracy", "macro_f1", "log_loss", "calibrated_log_loss"):
        assert mine[key] == fits[key], key
    assert again.typicality is None


def test_select_features_fits_the_calibration_of_the_words_it_keeps(chosen, tmp_path):
    """50 of 562 words: the temperature and the offsets are fitted again on the held-out
    scores of those words, the stored settings alone (the choice record lists them, and
    them with offsets), and every path scores with them."""
    model = load(str(chosen))
    pruned = selected(chosen, 50, tmp_path / "small.nbc")
    assert pruned.defaults == model.defaults
    assert [row["name"] for row in pruned.choice["candidates"]] == [
        "complement tf=log no-class-prior", "complement tf=log no-class-prior, class offsets"
    ]
    assert [row["settings"] for row in pruned.choice["candidates"]] == [
        model.defaults.to_dict()
    ] * 2
    c, full = pruned.calibration, model.calibration
    assert len(c.offsets) == 3 and (c.t0, c.t1, c.t2) != (full.t0, full.t1, full.t2)
    assert c.offsets != full.offsets and c.length_offsets != full.length_offsets
    # The pruned model's own probabilities: the formula's scores over its 50 words, under
    # its calibration (chosen.calibrated), on the one-document path and in a batch alike.
    text = "I was charged twice for the same invoice, please refund"
    clf = Classifier(pruned)
    counted = clf.count([text])[0]
    n = np.asarray(counted.sum(axis=1)).ravel()
    scorer = make_scorer(pruned.counts, pruned.defaults, pruned.prepared)
    jll = scorer.joint_log_likelihood(counted)
    expected = np.exp(calibrated(jll, n, c))[0]
    assert np.allclose(np.exp(clf.predict([text]).log_proba[0]), expected, rtol=1e-12, atol=0)
    one = subprocess.run([*nbclass_command(), "predict", "-m", str(tmp_path / "small.nbc"),
                          "--format", "jsonl"], input=text.encode(), capture_output=True,
                         cwd=REPO)  # fmt: skip
    probabilities = json.loads(one.stdout)["probabilities"]
    got = [probabilities[name] for name in pruned.counts.classes]
    assert np.allclose(got, expected, rtol=1e-12, atol=0)


def test_select_features_of_a_model_without_a_sample_keeps_its_calibration(chosen):
    """A model that keeps no sample (written before models kept one) cannot be scored
    again: its calibration is kept as fit made it, as before."""
    model = replace(load(str(chosen)), sample=None)
    pruned = select_features(model, 50)
    assert pruned.calibration == model.calibration and pruned.choice == model.choice


@pytest.mark.parametrize("threads", [2, 4])
def test_the_offsets_and_the_calibration_are_the_same_floats_whatever_the_blas_threads(threads):
    """The Newton steps sum over thousands of documents in BLAS products (F.T @ R, a
    vector times P, G.T @ G), which OpenBLAS shares out among its threads and sums in
    another order: at 6,000 documents × 100 classes 2 threads gave other offsets than 1.
    A fit is a function of its documents, not of the caller's BLAS threads (the command
    runs one; the library and a user's OPENBLAS_NUM_THREADS may run more)."""
    from scipy.special import log_softmax
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(4)
    n, C = 6000, 100
    y = rng.integers(0, C, n)
    scores = rng.normal(size=(n, C)) * 2
    scores[np.arange(n), y] += 2.0
    n_tokens = rng.integers(1, 400, n)
    fitted = {}
    for limit in (1, threads):
        with threadpool_limits(limit, user_api="blas"):
            a, d = choosing.fit_offsets(log_softmax(scores, axis=1), y, n_tokens)
            calibration = choosing.fit_calibration(scores * 5, y, n_tokens)
            fitted[limit] = a.tolist(), d.tolist(), calibration
    assert fitted[threads] == fitted[1]
    assert max(map(abs, fitted[1][0])) > 0.01  # offsets of some size were fitted


def _special_cells(rng, rows: int) -> np.ndarray:
    """(rows, 2) normals of every exponent, half the cells special numbers (±0, ±inf,
    NaN, the least subnormals, ±1e308), the first row (−0.0, −0.0)."""
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1e308, -1e308])
    cells = rng.standard_normal((rows, 2)) * 10.0 ** rng.integers(-300, 300, (rows, 2))
    odd = rng.random((rows, 2)) < 0.5
    cells[odd] = rng.choice(special, size=int(odd.sum()))
    cells[0] = (-0.0, -0.0)
    return cells


@pytest.mark.parametrize("rows", [1, 2, 7, 8, 9, 1000, 8193])
def test_the_calibrations_sums_and_maxima_of_two_cells_are_numpys_floats(rows):
    # The calibration's sums and maxima of rows of two cells (choosing._row_sums,
    # _row_maxima: two columns added, not numpy's reduction a row at a time) give numpy's
    # floats bit for bit, the sign of 0, the infinities and NaN included: numpy sums a
    # row as its first cell plus the others summed from 0.0, so -0.0 and -0.0 make +0.0.
    rng = np.random.default_rng(rows)
    with np.errstate(all="ignore"):
        cells = _special_cells(rng, rows)
        for mine, numpys in ((choosing._row_sums, cells.sum), (choosing._row_maxima, cells.max)):
            got, expected = mine(cells), numpys(axis=1, keepdims=True)
            assert got.shape == (rows, 1)
            assert np.array_equal(got.view(np.int64), expected.view(np.int64))
    wide = rng.standard_normal((5, 3))  # more columns: numpy's own reduction
    assert np.array_equal(choosing._row_sums(wide), wide.sum(axis=1, keepdims=True))


@pytest.mark.parametrize("rows", [1, 2, 9, 1000, 8193])
def test_the_posteriors_sums_and_best_classes_of_two_cells_are_numpys(rows):
    # posterior.row_totals (the sums of exp_sums, two columns added) and best_classes of
    # two columns (a comparison, not numpy's argmax a row at a time) give numpy's sums
    # bit for bit and its argmax (the first of the largest; NaN the largest, the first
    # NaN of a row taken), −1 where the best is −inf, on the same special numbers; a
    # log posterior of two columns is scipy's to the bit.
    from scipy.special import log_softmax

    from nbclass.models.posterior import best_classes, log_posterior, row_totals

    rng = np.random.default_rng(rows + 1)
    with np.errstate(all="ignore"):
        cells = _special_cells(rng, rows)
        got, expected = row_totals(cells), cells.sum(axis=1)
        assert got.shape == (rows,)
        assert np.array_equal(got.view(np.int64), expected.view(np.int64))
        best = cells.argmax(axis=1)
        best[np.isneginf(cells[np.arange(rows), best])] = -1
        assert np.array_equal(best_classes(cells), best)
        assert best_classes(cells).dtype == best.dtype
        ties = np.repeat(rng.integers(-3, 3, (rows, 1)).astype(np.float64), 2, axis=1)
        assert np.array_equal(best_classes(ties), np.zeros(rows, dtype=np.intp))
        scores = rng.standard_normal((rows, 2)) * 30.0
        assert np.array_equal(log_posterior(scores), log_softmax(scores, axis=1))
        by_columns = np.asfortranarray(cells)  # not C-contiguous: numpy's own reduction
        assert np.array_equal(row_totals(by_columns).view(np.int64), expected.view(np.int64))


@pytest.mark.parametrize("C", [1, 2, 3, 15, 32, 40])
def test_the_first_two_scores_of_a_row_are_numpys_reductions(C):
    # chosen._first_two (the gaps of the calibration and of calibrated scores) takes a
    # few columns by comparisons and column by column, not numpy's reductions a row at a
    # time: the largest and the second largest are the argmax's cell and the maximum of
    # the rest numpy gives, bit for bit (±0 ties, ±inf, NaN), and the scores are put back.
    from nbclass.models.chosen import _first_two

    rng = np.random.default_rng(C)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324])
    for odd_share in (0.0, 0.2, 0.6):
        scores = rng.standard_normal((500, C)) * 10.0 ** rng.integers(-5, 5, (500, C))
        odd = rng.random((500, C)) < odd_share
        scores[odd] = rng.choice(special, size=int(odd.sum()))
        scores[:50] = np.where(rng.random((50, C)) < 0.5, 0.0, -0.0)  # ±0 ties
        rows, best = np.arange(500), scores.argmax(axis=1)
        rest = scores.copy()
        rest[rows, best] = -np.inf
        kept = scores.copy()
        first, second = _first_two(scores)
        assert np.array_equal(scores.view(np.int64), kept.view(np.int64))
        assert np.array_equal(first.view(np.int64), kept[rows, best].view(np.int64))
        assert np.array_equal(second.view(np.int64), rest.max(axis=1).view(np.int64))


@pytest.mark.parametrize("C", [2, 15, 32, 40, 300])
def test_the_log_posterior_summing_the_rows_alone_too_is_scipys(C):
    # Rows alone (one class far ahead: their sum of exps is exactly 1) summed with the
    # others (every=True, the choice's; or up to COLUMN_CLASSES where only some are
    # alone) give scipy's log_softmax bit for bit, as picking the others out does: −inf
    # cells, rows all −inf, ties at the top and rows just either side of the cut.
    from scipy.special import log_softmax

    from nbclass.models.posterior import alone_cut, alone_rows, log_posterior

    rng = np.random.default_rng(C)
    jll = rng.standard_normal((600, C)) * 3.0
    jll[:300, 0] += 80.0  # alone
    jll[rng.random((600, C)) < 0.1] = -np.inf
    cut = alone_cut(C)
    jll[300:320] = 0.0
    jll[300:310, 1:] = cut - 1e-9  # just below the cut: alone
    jll[310:320, 1:] = cut + 1e-9  # just above: summed
    jll[320:330, :2] = 5.0  # tied at the top
    jll[330:335] = -np.inf
    for rows in (slice(None), slice(0, 300), slice(300, 600)):
        scores = jll[rows]
        with np.errstate(divide="ignore", invalid="ignore"):
            alone = alone_rows(scores - scores.max(axis=1, keepdims=True))
            expected = log_softmax(scores, axis=1)
        expected[np.isnan(expected)] = -np.inf  # (rows all −inf)
        for every in (False, True):
            got = log_posterior(scores, every=every)
            assert np.array_equal(got.view(np.int64), expected.view(np.int64))
    assert alone[:10].all() and not alone[10:20].any()
