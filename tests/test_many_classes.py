"""Predicting against thousands of classes: a batch is scored in blocks of documents and
printed from its ndarray of log posteriors (never a list of C floats a document), with
the numbers and lines of the whole batch scored at once and rendered from lists."""

from __future__ import annotations

import gc
import json
import math
import subprocess

import numpy as np
import pytest
from conftest import nbclass_command
from hypothesis import given
from hypothesis import strategies as st

from nbclass.output import render
from nbclass.output.render import (
    best_classes,
    prediction_labels,
    prediction_lines,
)

# -- ranking rows given as an ndarray ---------------------------------------------------------


def test_the_best_class_of_each_row_by_hand():
    rows = np.array([[-1.0, 0.0, 0.0], [-np.inf, -np.inf, -np.inf], [-3.0, -2.0, -1.0]])
    assert best_classes(rows) == ([1, 0, 2], [0.0, -math.inf, -1.0])
    assert best_classes(rows.tolist()) == ([1, 0, 2], [0.0, -math.inf, -1.0])
    assert best_classes(np.zeros((0, 3))) == ([], [])


def test_top_classes_keep_the_class_order_on_ties():
    from nbclass.output.render import _order

    row = [-1.0, -0.5, -0.5, -2.0, -0.5, -np.inf]
    for top_k, expected in [
        (1, [1]), (2, [1, 2]), (3, [1, 2, 4]), (4, [1, 2, 4, 0]), (5, [1, 2, 4, 0, 3]),
        (6, [1, 2, 4, 0, 3, 5]), (9, [1, 2, 4, 0, 3, 5]), (None, [1, 2, 4, 0, 3, 5]),
    ]:  # fmt: skip
        assert _order(np.array(row), top_k) == expected
        assert _order(row, top_k) == expected


_LOG_PROBA = st.one_of(
    st.floats(max_value=0.0, allow_nan=False), st.just(-math.inf),
    st.sampled_from([0.0, -0.0, -0.5, -700.0, -750.0]),  # ties, and underflow
)  # fmt: skip


@given(
    st.integers(1, 6).flatmap(
        lambda C: st.lists(
            st.tuples(
                st.text(max_size=4),
                st.lists(_LOG_PROBA, min_size=C, max_size=C),
                st.sampled_from([None, "low-probability"]),
            ),
            min_size=1,
            max_size=6,
        )
    ),
    st.booleans(),
    st.sampled_from([None, 1, 2, 3, 10]),
    st.sampled_from(["tsv", "jsonl"]),
)
def test_rows_as_an_ndarray_print_the_lines_of_rows_as_lists(documents, with_extras, top_k, fmt):
    """Every format, top-k and reason: the same lines and labels whether a batch's log
    posteriors come as lists (one document) or as an ndarray (a batch)."""
    C = len(documents[0][1])
    classes = [f"c{c}" for c in range(C)]
    sources = [s for s, _, _ in documents]
    rows = [r for _, r, _ in documents]
    extras = [
        {"reason": reason, "log_evidence": -1.5, "evidence_model": "multinomial"}
        for _, _, reason in documents
    ]
    extras = extras if with_extras else None
    array = np.array(rows, dtype=np.float64)
    expected = list(prediction_lines(sources, classes, rows, fmt, top_k, extras, "unsure"))
    for ranks in (0, render.NUMPY_RANKS):  # ranked by numpy, and as lists (few classes)
        saved, render.NUMPY_RANKS = render.NUMPY_RANKS, ranks
        try:
            got = list(prediction_lines(sources, classes, array, fmt, top_k, extras, "unsure"))
        finally:
            render.NUMPY_RANKS = saved
        assert got == expected
    settings = type("Settings", (), {"estimator": "posterior-mean"})()
    assert prediction_labels(sources, classes, array, settings, extras) == prediction_labels(
        sources, classes, rows, settings, extras
    )


def test_the_two_largest_of_each_row_are_what_abstention_reads():
    from nbclass.models.explain import top_two

    rows = np.array([[-3.0, -0.1, -2.0, -0.1], [-np.inf, -1.0, -np.inf, -np.inf]])
    assert top_two(rows).tolist() == [[-0.1, -0.1], [-1.0, -np.inf]]
    assert top_two(np.array([[-0.5, -2.0]])).tolist() == [[-0.5, -2.0]]
    assert top_two(np.array([[0.0], [-np.inf]])).tolist() == [[0.0], [-np.inf]]


# -- the softmax, without numpy's slow exp of underflowing inputs -----------------------------


def test_exp_sums_are_numpys_sums_of_exp():
    """Rows whose tiny terms cannot move the sum (a 0 among them, as every shifted row
    has), rows where they do (no term above 2^-1022: summed with every exp), and
    random rows: np.exp(x).sum(axis=1), float for float."""
    from nbclass.models.posterior import exp_sums

    x = np.array([
        [0.0, -1.0, -708.0, -708.5, -720.0, -745.13, -750.0, -np.inf],
        [-720.0, -720.0, -730.0, -740.0, -745.0, -745.2, -800.0, -np.inf],
        [-708.0, -709.0, -710.0, -711.0, -712.0, -713.0, -714.0, -715.0],
        [-np.inf] * 8,
    ])  # fmt: skip
    got = exp_sums(x)
    assert got.tolist() == np.exp(x).sum(axis=1).tolist()
    assert got[0] == 1.0 + math.exp(-1.0) + math.exp(-708.0)
    assert got[1] > 0.0 and got[3] == 0.0  # the tiny terms alone: their own sum
    assert got[2] != math.exp(-708.0)  # the subnormal terms count against exp(-708)
    rng = np.random.default_rng(0)
    for scale, shape in ((400.0, (50, 301)), (20.0, (20, 3000)), (1.0, (5, 7))):
        many = -rng.exponential(scale, size=shape) - rng.choice([0.0, 700.0], size=(shape[0], 1))
        many[::7, ::5] = -np.inf
        assert np.array_equal(exp_sums(many), np.exp(many).sum(axis=1))


def test_the_log_posterior_is_the_softmax_steps_row_by_row():
    """The same floats as ``scipy.special.log_softmax``'s steps on the possible rows,
    rows of −inf left −inf (one row, or several among possible ones)."""
    from scipy.special import log_softmax

    from nbclass.models.posterior import log_posterior

    rng = np.random.default_rng(1)
    jll = -rng.exponential(300.0, size=(40, 257)) - 5000.0
    jll[3, 10:] = -np.inf
    jll[5] = -np.inf
    got = log_posterior(jll)
    assert np.array_equal(got[5], np.full(257, -np.inf))
    possible = np.arange(40) != 5
    assert np.array_equal(got[possible], log_softmax(jll[possible], axis=1))
    assert np.array_equal(log_posterior(np.delete(jll, 5, axis=0)), got[possible])


def test_the_largest_of_few_classes_is_taken_column_by_column_to_the_same_floats():
    """row_max at up to COLUMN_CLASSES classes (np.maximum column by column) and past it
    (numpy's reduction): numpy's row maxima, with ties, −inf, rows of −inf and a NaN;
    and log_posterior at 1 to 33 classes is scipy's log_softmax steps on those rows."""
    from scipy.special import log_softmax

    from nbclass.models.posterior import COLUMN_CLASSES, log_posterior, row_max

    rng = np.random.default_rng(7)
    for C in (1, 2, 15, 16, COLUMN_CLASSES, COLUMN_CLASSES + 1):
        jll = np.round(-rng.exponential(50.0, size=(200, C)), 1) - 900.0
        jll[::5, rng.integers(0, C)] = jll[::5].max(axis=1)  # ties at the largest
        jll[1::4, 0] = -np.inf
        jll[3] = -np.inf
        assert np.array_equal(row_max(jll), jll.max(axis=1))
        got = log_posterior(jll)
        possible = np.isfinite(jll.max(axis=1))  # row 3, and at one class every 4th
        assert np.array_equal(got[possible], log_softmax(jll[possible], axis=1))
        assert np.array_equal(got[~possible], np.full((np.sum(~possible), C), -np.inf))
        jll[7, C // 2] = np.nan
        assert np.array_equal(row_max(jll), jll.max(axis=1), equal_nan=True)


def test_a_row_alone_above_the_cut_sums_to_one_without_an_exp():
    """alone_rows: a shifted row whose only entry at or above ln(2^-56 / C) is its 0 sums
    to 1.0 in numpy (every other entry just below the cut, the worst case, at 8 and
    20,000 classes); an entry at the cut, or a second 0, makes it a row to sum."""
    from nbclass.models.posterior import alone_rows

    for C in (8, 20_000):
        cut = math.log(2.0**-56 / C)
        below = np.nextafter(cut, -np.inf)
        rows = np.full((5, C), below)
        rows[:, 3] = 0.0
        rows[1, 0] = cut  # at the cut: summed
        rows[2, 7] = 0.0  # two largest entries
        rows[3, 1:3] = -np.inf
        rows[4, 4:] = -800.0
        assert alone_rows(rows).tolist() == [True, False, False, True, True]
        sums = np.exp(rows).sum(axis=1)
        assert sums[[0, 3, 4]].tolist() == [1.0, 1.0, 1.0]
        assert sums[2] == 2.0


def test_rows_alone_are_those_with_one_entry_at_or_above_the_cut():
    """alone_rows finds the first entry above the cut and looks for another, rather than
    counting each row's: the rows the count gives, on rows of ties at 0, of −inf, of one
    class or none, and of none at all."""
    from nbclass.models.posterior import alone_rows

    rng = np.random.default_rng(5)
    for C in (0, 1, 2, 3, 8, 20_000):
        for n in (0, 1, 52):
            rows = -rng.exponential(rng.choice([1.0, 60.0, 1000.0]), size=(n, C))
            if n and C:
                rows[np.arange(n), rng.integers(0, C, n)] = 0.0
                rows[0] = -np.inf  # no entry above the cut
                rows[-1, rng.integers(0, C)] = 0.0  # a tie at 0, or the same 0 again
            cut = math.log(2.0**-56 / max(C, 1))
            counted = np.count_nonzero(rows >= cut, axis=1) == 1
            assert alone_rows(rows.copy()).tolist() == counted.tolist()


def test_the_log_posterior_of_rows_alone_and_summed_is_the_softmax_steps():
    """Rows of one clear class (no exp taken, no log subtracted) among rows of close
    classes and a row of −inf: the same floats as ``scipy.special.log_softmax``."""
    from scipy.special import log_softmax

    from nbclass.models.posterior import alone_rows, log_posterior

    rng = np.random.default_rng(2)
    jll = -rng.exponential(60.0, size=(60, 3001)) - 4000.0
    jll[::3, 17] = -3000.0  # one class far ahead: alone
    jll[1::3, 5] = jll[1::3].max(axis=1) + 30.0  # ahead, but within the cut: summed
    jll[7, :40] = -np.inf
    jll[11] = -np.inf
    possible = np.arange(60) != 11
    alone = alone_rows(jll[possible] - jll[possible].max(axis=1, keepdims=True))
    assert 20 <= alone.sum() < 59
    got = log_posterior(jll)
    assert np.array_equal(got[possible], log_softmax(jll[possible], axis=1))
    assert np.array_equal(got[11], np.full(3001, -np.inf))


def test_the_calibrated_softmax_takes_its_largest_two_from_the_gap():
    """calibrated() shifts each row by its best score x 1/T(x) and knows its rows alone
    from the second best x 1/T(x): the same floats as the general steps (scale every
    cell, −inf kept, then ``scipy.special.log_softmax`` of the possible rows), at
    temperatures that flatten rows (every exp taken, none subnormal) and that sharpen
    them (rows alone, rows with subnormal terms), with ties for the best class, a row of
    one possible class and a row of none (and a block without them); with class
    offsets, the general path."""
    from scipy.special import log_softmax

    from nbclass.models.chosen import calibrated, temperatures
    from nbclass.models.estimators import Calibration
    from nbclass.models.posterior import alone_rows

    rng = np.random.default_rng(7)
    scores = -rng.exponential(30.0, size=(64, 2000)) - 3000.0
    scores[::4, 9] = scores[::4].max(axis=1) + rng.uniform(0.0, 400.0, 16)  # far or near
    scores[7, 3] = scores[7, 4] = scores[7].max() + 1.0  # a tie for the best class
    scores[2, 1:] = -np.inf  # one possible class
    scores[5] = -np.inf  # none
    lengths = rng.integers(1, 400, 64)
    counted = {"alone": 0, "summed": 0, "flat": 0, "subnormal": 0}
    for block in (np.arange(64), np.arange(6, 64)):
        jll, n = scores[block], lengths[block]
        possible = np.isfinite(jll.max(axis=1))
        for t0, offsets in ((4.0, False), (-1.6, False), (-4.0, False), (-1.6, True)):
            more = {}
            if offsets:
                more = {"offsets": tuple(rng.normal(size=2000)),
                        "length_offsets": tuple(rng.normal(size=2000) / 10)}  # fmt: skip
            calibration = Calibration(t0=t0, t1=0.3, t2=0.6, **more)
            scale = 1.0 / temperatures(calibration, n, jll)
            with np.errstate(invalid="ignore"):
                scaled = np.where(np.isneginf(jll), -np.inf, jll * scale[:, None])
            if offsets:
                scaled += np.asarray(more["offsets"]) + np.log1p(n)[:, None] * np.asarray(
                    more["length_offsets"]
                )
            got = calibrated(jll, n, calibration)
            assert np.array_equal(got[possible], log_softmax(scaled[possible], axis=1))
            assert np.isneginf(got[~possible]).all()
            shifted = scaled[possible] - scaled[possible].max(axis=1, keepdims=True)
            alone = alone_rows(shifted)
            counted["alone"] += np.count_nonzero(alone)
            counted["summed"] += np.count_nonzero(~alone)
            counted["flat"] += shifted.min() > -708.5
            counted["subnormal"] += (shifted[~alone] < -708.5).any()
    assert counted["alone"] > 20 and counted["summed"] > 200
    assert counted["flat"] >= 1 and counted["subnormal"] >= 2
    # A fixed temperature and second scores at 30 to 60 of the best after scaling:
    # rows on either side of the cut ln(2^-56 / C), −46.4, some of whose sums are not 1.
    calibration = Calibration(t0=0.5, t1=0.0, t2=0.0)
    T = math.exp(0.5)
    jll = scores[6:47].copy()
    jll[:, 0] = jll.max(axis=1) + 60.0 * T
    jll[:, 1] = jll[:, 0] - np.linspace(30.0, 60.0, 41) * T
    got = calibrated(jll, lengths[6:47], calibration)
    scaled = jll * (1.0 / temperatures(calibration, lengths[6:47], jll))[:, None]
    assert np.array_equal(got, log_softmax(scaled, axis=1))
    shifted = scaled - scaled.max(axis=1, keepdims=True)
    assert 10 < np.count_nonzero(alone_rows(shifted)) < 30
    assert 3 < np.count_nonzero(np.exp(shifted).sum(axis=1) > 1.0) < 20


# -- a model of 2,000 classes: blocks, and the command ---------------------------------------


C, OWN = 2_000, 5  # classes; words of each class's own (V = 10,000 + 50 shared: past 2**24 cells)


def _text(rng, c: int) -> str:
    own = [f"k{c}x{i}" for i in rng.integers(0, OWN, 6)]
    other = [f"k{k}x{i}" for k, i in zip(rng.integers(0, C, 2), rng.integers(0, OWN, 2))]
    shared = [f"s{i}" for i in rng.integers(0, 50, 4)]
    return " ".join(own + other + shared)


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """A named model of 2,000 classes (three documents each) and 1,200 documents of its
    words (several blocks of a batch: 524 documents a block at 2,000 classes)."""
    root = tmp_path_factory.mktemp("many")
    rng = np.random.default_rng(29)
    for c in range(C):
        folder = root / "train" / f"c{c:04d}"
        folder.mkdir(parents=True)
        for i in range(3):
            (folder / f"{i}.txt").write_text(_text(rng, c))
    docs = root / "docs"
    docs.mkdir()
    texts = []
    pad = " unknownword" * 400  # 4.8 MB in all: read and counted by worker processes
    for i in range(1_200):
        texts.append(_text(rng, int(rng.integers(0, C))) + (pad if i % 7 else ""))
        (docs / f"d{i:04d}.txt").write_text(texts[-1])
    texts[5] = ""  # no known word: the prior
    (docs / "d0005.txt").write_text("")
    from nbclass.models.scoring import worth_parallel
    from nbclass.reading.corpus import list_inputs

    assert worth_parallel(list_inputs([str(docs)]), 1_000)
    model = root / "model.nbc"
    fit = subprocess.run(
        [*nbclass_command(), "fit", str(root / "train"), "-o", str(model), "-q",
         "--model", "multinomial"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert fit.returncode == 0, fit.stderr
    return model, docs, texts


def _whole_batch(model, texts):
    """The classifier's log posteriors of every text in one batch (no blocks)."""
    from nbclass.modelfile.textfile import load
    from nbclass.models.model import Classifier
    from nbclass.models.sparsity import SparseWeights

    classifier = Classifier(load(str(model)))
    assert isinstance(classifier.scorer.weights, SparseWeights)  # scored from the pairs
    return classifier, classifier.predict(texts).log_proba


def test_a_batch_scored_in_blocks_has_the_whole_batchs_numbers(many, monkeypatch):
    from nbclass.models import explain
    from nbclass.models.novelty import evidence_of
    from nbclass.text.vectorizer import TextCounter

    model, _, texts = many
    classifier, expected = _whole_batch(model, texts)
    X, tokens = TextCounter(classifier.tokenizer, classifier.counts.vocabulary).count(texts)
    sources = [str(i) for i in range(len(texts))]
    for cells, sizes in [(2**20, [524, 524, 152]), (3 * C, [3] * 400), (1, [1] * 1200)]:
        monkeypatch.setattr(explain, "BLOCK_CELLS", cells)
        blocks = list(explain.texts_scored(classifier, sources, texts))
        assert [len(b.sources) for b in blocks] == sizes
        assert [s for b in blocks for s in b.sources] == sources
        assert np.array_equal(np.vstack([b.log_proba for b in blocks]), expected)
        got = np.concatenate([evidence_of(classifier, b.X, b.jll, b.known)[0] for b in blocks])
        whole = explain.score_counts(classifier, sources, X, tokens)
        assert np.array_equal(got, evidence_of(classifier, X, whole.jll, whole.known)[0])


@pytest.mark.parametrize(
    "options, fmt",
    [([], "tsv"), (["--jobs", "1"], "tsv"), (["--top-k", "3"], "tsv"),
     (["--format", "jsonl", "--top-k", "2"], "jsonl"), (["--min-margin", "0.5"], "tsv")],
)  # fmt: skip
def test_predict_against_thousands_of_classes_prints_the_whole_batchs_lines(many, options, fmt):
    """The command (its batches in blocks, printed from ndarrays; counted by worker
    processes, or by itself with one job) prints what the classifier's posteriors of
    the whole batch print as lists of floats."""
    model, docs, texts = many
    classifier, log_proba = _whole_batch(model, texts)
    result = subprocess.run(
        [*nbclass_command(), "predict", "-m", str(model), str(docs), *options],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    sources = [str(docs / f"d{i:04d}.txt") for i in range(len(texts))]
    top_k = int(options[options.index("--top-k") + 1]) if "--top-k" in options else None
    rows = log_proba.tolist()
    reasons = []  # unsure without a known word, and where p1 − p2 < 0.5 if asked
    for row, text in zip(rows, texts):
        p = sorted((math.exp(v) for v in row), reverse=True)
        low = "--min-margin" in options and p[0] - p[1] < 0.5
        reasons.append("no-known-words" if not text else "low-margin" if low else None)
    if "--min-margin" in options:
        assert 0 < reasons.count("low-margin") < len(texts)
    extras = [{"reason": r} for r in reasons]
    if fmt == "jsonl":
        got = [json.loads(line) for line in result.stdout.splitlines()]
        assert [g["source"] for g in got] == sources
        expected = [
            json.loads(line)
            for line in prediction_lines(
                sources, classifier.classes, rows, "jsonl", top_k,
                [dict(e, log_evidence=None) for e in extras],
            )
        ]  # fmt: skip
        for g, e in zip(got, expected):
            assert (g["label"], g["probability"], g["probabilities"], g["reason"]) == (
                e["label"], e["probability"], e["probabilities"], e["reason"]
            )  # fmt: skip
            assert len(g["probabilities"]) == top_k
        return
    expected = list(prediction_lines(sources, classifier.classes, rows, "tsv", top_k, extras))
    assert result.stdout.splitlines() == expected


def test_the_library_and_the_service_score_thousands_of_classes_in_blocks(many):
    """nbclass.load's model and nbclass serve (a list of 600 texts: two blocks) answer
    with the whole batch's numbers."""
    from test_serve import Server

    import nbclass

    model, _, texts = many
    classifier, expected = _whole_batch(model, texts)
    library = nbclass.load(str(model))
    assert np.array_equal(library.predict_log_proba(texts), expected)
    best = [classifier.classes[c] for c in expected.argmax(axis=1)]
    assert library.predict(texts, min_known=("0",)) == best
    server = Server(model)
    try:
        short = [t.replace(" unknownword", "") for t in texts[:600]]  # the same scores
        status, body = server.predict({"texts": short, "top_k": 2})
    finally:
        server.kill()
    assert status == 200, body
    answers = json.loads(body)
    sources = [f"-:{i}" for i in range(1, 601)]
    rows = expected[:600].tolist()
    extras = [{"reason": None, "log_evidence": None}] * 600
    lines = prediction_lines(sources, classifier.classes, rows, "jsonl", 2, extras)
    for got, line in zip(answers, lines, strict=True):
        want = json.loads(line)
        assert (got["source"], got["probabilities"]) == (want["source"], want["probabilities"])
        assert got["label"] == (want["label"] if got["source"] != "-:6" else "unsure")


# -- the histograms of D_jc a model file keeps, from the pairs --------------------------------


@pytest.mark.parametrize("cells", [2, 16, 2**22])
def test_histograms_from_the_pairs_are_those_of_every_cell(cells, monkeypatch):
    """Tallied by (class, value) below a width, the larger values sorted: the
    histograms of the dense table, whatever the width (2 leaves every value of 2 or more
    to the sort)."""
    import scipy.sparse as sp

    import nbclass.counting.counts as counts_module
    from nbclass.counting.counts import Counts, doc_count_histograms

    monkeypatch.setattr(counts_module, "HISTOGRAM_CELLS", cells)
    rng = np.random.default_rng(3)
    V, C = 300, 40
    D = rng.zipf(1.5, size=(V, C)) * (rng.random((V, C)) < 0.2)
    D[5, :] = 1  # a word of every class but one
    D[:, 7] = 0  # a class without a word
    D[6, 3] = 10**6  # one large value
    T = D * 2
    for table in (D, sp.csr_matrix(D)):
        tokens = T if table is D else sp.csr_matrix(T)
        classes, words = tuple(f"c{c}" for c in range(C)), tuple(f"w{j:03d}" for j in range(V))
        counts = Counts(classes, words, np.full(C, 10**6), table, tokens)
        got = counts.doc_histograms
        assert got == doc_count_histograms(D)
    assert got[7] == [(0, V)] and got[3][-1] == (10**6, 1)


@pytest.mark.parametrize(
    "event, estimator",
    [("multinomial", "posterior-mean"), ("multinomial", "mle"), ("bernoulli", "posterior-mean"),
     ("bernoulli", "mle"), ("complement", "posterior-mean")],
)  # fmt: skip
def test_one_document_against_thousands_of_classes_sums_the_pairs_as_the_batch(
    many, event, estimator
):
    """The one-document path of a model past 2**24 weight cells adds the corrections at
    its words' pairs, as the batch path does (multinomial and complement counts, Bernoulli
    presences):
    the same scores to 1e-12 (their logs are the C library's and numpy's), the same
    infinities (under mle a class is possible only if every word of the document is one
    of its pairs; a Bernoulli class also needs the words it has in every document)."""
    from nbclass.modelfile.quick import QuickModel
    from nbclass.modelfile.textfile import load
    from nbclass.models.estimators import EstimatorSettings
    from nbclass.models.model import Classifier

    model, _, texts = many
    settings = EstimatorSettings(model=event, estimator=estimator)
    classifier, quick = Classifier(load(str(model)), settings), QuickModel(str(model))
    chosen = texts[:40] + ["k7x0 k7x1 k7x0", "s1 s2", "unknownword", ""]
    expected = classifier.scorer.joint_log_likelihood(classifier.count(chosen)[0])
    possible = 0
    for text, row in zip(chosen, expected.tolist()):
        got = quick.joint_log_likelihood(text, settings)
        assert [math.isinf(v) for v in got] == [math.isinf(v) for v in row]
        assert got == pytest.approx(row, rel=1e-12, abs=1e-12)
        possible += sum(not math.isinf(v) for v in got)
    if estimator == "mle":
        assert 0 < possible < len(chosen) * C  # some classes ruled out, not all


def test_the_one_document_command_against_thousands_of_classes_prints_the_batchs_line(
    many, tmp_path
):
    """One document piped in (the numpy-free path) and the same text as a line of
    --lines (the batch path): the same label, probabilities and evidence."""
    model, _, texts = many
    for i in (0, 1, 5):
        lines = tmp_path / f"{i}.txt"
        lines.write_text(texts[i] + "\n")
        got = []
        for extra, stdin in (([], texts[i]), (["--lines", str(lines)], None)):
            result = subprocess.run(
                [*nbclass_command(), "predict", "-m", str(model), "--format", "jsonl",
                 "--top-k", "3", *extra],
                input=stdin, capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            assert result.returncode == 0, result.stderr
            got.append(json.loads(result.stdout))
        one, batch = got
        assert one["label"] == batch["label"] and one["reason"] == batch["reason"]
        assert list(one["probabilities"]) == list(batch["probabilities"])
        assert list(one["probabilities"].values()) == pytest.approx(
            list(batch["probabilities"].values()), rel=1e-12, abs=1e-300
        )
        assert one["log_evidence"] == pytest.approx(batch["log_evidence"], rel=1e-12, abs=1e-12)


def test_a_cluster_part_is_scored_in_blocks_with_the_whole_batchs_numbers(many):
    """A Dask worker's part of 1,100 files (three blocks at 2,000 classes): the rows and
    extras of the part scored as one batch."""
    import hashlib

    from nbclass.cluster.remote import score_part
    from nbclass.models.abstain import Abstention
    from nbclass.models.explain import extras, score_batch

    model, docs, texts = many
    data = model.read_bytes()
    classifier, _ = _whole_batch(model, texts)
    paths = [str(docs / f"d{i:04d}.txt") for i in range(1_100)]
    abstention = Abstention(min_probability=0.5)
    settings = classifier.settings
    start, end, rows, got, kept, _ = score_part(
        data, hashlib.sha256(data).hexdigest(), settings, paths, 7, abstention, None
    )
    assert (start, end, kept) == (7, 1_107, list(range(1_100)))
    whole = score_batch(classifier, list(zip(paths, texts)))
    assert np.array_equal(rows, whole.log_proba)
    expected = extras(classifier, whole, abstention, None)
    assert got == expected and len(got) == 1_100
    assert 0 < sum(e["reason"] == "low-probability" for e in got) < 1_100


def test_the_log_of_each_class_denominator_taken_once_gives_log_fractions_floats(monkeypatch):
    """log_fraction_at is log_fraction of each pair's numerator over its class's
    denominator, float for float: zero and negative numerators (−inf), a zero or
    negative denominator (−inf for its whole class), whatever the blocks."""
    from nbclass.models.estimators import log_fraction, log_fraction_at

    rng = np.random.default_rng(5)
    classes = rng.integers(0, 6, size=700_000)
    numerator = rng.integers(-2, 50, size=classes.size) + rng.choice([0.0, 0.5], classes.size)
    denominators = np.array([1e6, 3.0, 0.0, -1.0, 1.0, 12345.678])
    got = log_fraction_at(numerator, denominators, classes)
    expected = log_fraction(numerator, denominators[classes])
    assert np.array_equal(got.view(np.int64), expected.view(np.int64))
    assert np.isneginf(got[classes == 2]).all() and np.isneginf(got[numerator <= 0]).all()
    assert np.isfinite(got[(numerator > 0) & (denominators[classes] > 0)]).all()


def test_freed_memory_is_kept_only_where_batches_are_cut_into_blocks(monkeypatch):
    """Bulk predict asks the C library to keep freed memory where a batch of 1,000
    documents is scored in blocks (more than 1,048 classes), and only there; the call
    itself is harmless wherever it runs (a no-op where the C library is not glibc)."""
    from nbclass.modelfile import predicting
    from nbclass.reading import process

    calls = []
    real = process.keep_freed_memory
    monkeypatch.setattr(process, "keep_freed_memory", lambda: calls.append(True))
    try:
        for classes, kept in [(None, 0), (20, 0), (1_048, 0), (1_049, 1), (20_000, 2)]:
            predicting._keep_loaded(classes)
            assert len(calls) == kept
    finally:
        gc.unfreeze()  # (_keep_loaded froze this process's objects)
    real()


def test_pairs_past_two_to_the_31_cells_keep_int32_indices_and_their_counts():
    # 70,000 words x 40,000 classes is 2.8e9 cells, past 2**31; each index fits in int32,
    # and the keys j C + c of the last pairs do not: merged, subtracted, pruned and
    # checked against each other, every pair keeps its own counts.
    from nbclass.counting.counts import at_most, counts_of_pairs, merge, subtract

    V, C = 70_000, 40_000
    classes = tuple(f"c{c:05d}" for c in range(C))
    vocabulary = tuple(f"w{j:05d}" for j in range(V))
    rows = np.array([0, 0, 1, 53_688, 69_999, 69_999])
    cols = np.array([0, 39_999, 5, 39_999, 0, 39_999])
    assert int(rows[-1]) * C + int(cols[-1]) >= 2**31
    counts = np.full(C, 3)
    a = counts_of_pairs(classes, vocabulary, counts, rows, cols, [1, 2, 1, 3, 1, 2],
                        [4, 5, 6, 7, 8, 9])  # fmt: skip
    b = counts_of_pairs(classes, vocabulary, counts, rows[3:], cols[3:], [0, 1, 1], [0, 1, 2])
    assert [index.dtype for index in a.nonzero] == [np.int32, np.int32]
    assert a.nonzero[0].tolist() == rows.tolist() and a.nonzero[1].tolist() == cols.tolist()
    total = merge(a, b)
    assert total.nonzero[0].tolist() == rows.tolist()
    assert total.nonzero[1].tolist() == cols.tolist()
    assert total.pairs()[2].tolist() == [1, 2, 1, 3, 2, 3]
    assert total.pairs()[3].tolist() == [4, 5, 6, 7, 9, 11]
    assert at_most(b, total) and not at_most(total, b)
    rest = subtract(total, b)  # the words of no pair dropped, as a fit never sees them
    assert rest.vocabulary == ("w00000", "w00001", "w53688", "w69999")
    assert rest.classes == classes and rest.class_count.tolist() == counts.tolist()
    assert [part.tolist() for part in rest.pairs()] == [
        [0, 0, 1, 2, 3, 3], cols.tolist(), [1, 2, 1, 3, 1, 2], [4, 5, 6, 7, 8, 9]
    ]
    assert total.problems() == []
