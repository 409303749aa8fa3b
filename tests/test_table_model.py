"""Table models: the sum-of-parts law, additivity, text columns as text models, the model
file (round trip, every refusal), missing and unseen values, and top features."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.integrate import trapezoid
from scipy.special import rel_entr

from nbclass.counting.counts import CountAccumulator
from nbclass.errors import ModelFileError, ModelKindError, NbclassError, UsageError
from nbclass.modelfile import fileformat, tablefile
from nbclass.modelfile import textfile as modelfile
from nbclass.models.estimators import EstimatorSettings
from nbclass.models.model import Classifier, Model
from nbclass.models.tablemodel import (
    TableClassifier,
    fit_table,
    gaussian_mutual_information,
    merge_tables,
    table_top_features,
)
from nbclass.reading.table import Table
from nbclass.text.tokenizer import TokenizerSettings, make_tokenizer
from nbclass.text.vectorizer import count_matrix

FAST = settings(max_examples=40, deadline=None, database=None)
COLUMNS = ("size", "colour", "note", "kind")
TYPES = {"size": "numeric", "colour": "categorical", "note": "text"}

# Sizes as a table holds them; none so small that their squares underflow (such a column
# is refused with "rescale the column", a case of its own in test_edges).
SIZE = st.one_of(
    st.none(),
    st.floats(-50, 50, allow_nan=False).filter(lambda x: x == 0 or abs(x) > 1e-100).map(repr),
)
COLOUR = st.sampled_from([None, "red", "blue", "green"])
NOTE = st.one_of(
    st.none(),
    st.lists(st.sampled_from(["late", "box", "fine", "thanks", "torn"]), max_size=4)
    .map(" ".join)
    .filter(bool),
)
ROW = st.tuples(SIZE, COLOUR, NOTE, st.sampled_from(["a", "b", "c"]))
ROWS = st.lists(ROW, min_size=2, max_size=12).filter(lambda r: len({x[3] for x in r}) >= 2)
SETTINGS = st.builds(
    EstimatorSettings,
    model=st.sampled_from(["multinomial", "bernoulli"]),
    estimator=st.sampled_from(["posterior-mean", "map"]),
    alpha=st.sampled_from([1.0, 2.0]),
    beta=st.sampled_from([1.0, 1.5]).map(lambda b: (b, b)),
)


def table(rows, columns=COLUMNS) -> Table:
    return Table("t.csv", columns, list(rows))


def as_dicts(rows, columns=COLUMNS) -> list[dict]:
    return [dict(zip(columns, r)) for r in rows]


DEMO = [
    ("3.1", "red", "arrived late, box torn", "bad"),
    ("2.9", "red", None, "bad"),
    ("3.4", "blue", "late again", "bad"),
    ("7.0", "blue", "all fine thanks", "good"),
    ("7.4", None, "fine", "good"),
    ("6.8", "green", "thanks a lot", "good"),
]


@pytest.fixture
def demo():
    return fit_table(table(DEMO), "kind")


# --- the law of naive Bayes: a sum of independent parts -------------------------------------


@FAST
@given(ROWS, st.lists(ROW, min_size=1, max_size=5), SETTINGS)
@example(  # found by hypothesis: a variance floor so small that (x − μ)²/σ² overflows
    rows=[("0.0", None, None, "a"), ("1.179758605852209e-157", None, None, "b")],
    new=[("1.0", "green", None, "b")],
    s=EstimatorSettings(model="bernoulli", estimator="map"),
)
def test_a_mixed_joint_log_likelihood_is_the_sum_of_its_parts(rows, new, s):
    model = fit_table(table(rows), "kind", TYPES)
    clf = TableClassifier(model, s)
    new_rows = as_dicts(new)
    parts = clf.log_likelihood_parts(new_rows)
    expected = np.tile(clf.log_pi, (len(new), 1))
    for name, part in zip(("size", "colour", "note"), parts):
        # each part is what a model of that column alone says about it
        alone = fit_table(
            table([(r[COLUMNS.index(name)], r[3]) for r in rows], (name, "kind")),
            "kind",
            {name: TYPES[name]},
        )
        alone_clf = TableClassifier(alone, s)
        assert np.array_equal(alone_clf.log_likelihood_parts(new_rows)[0], part)
        assert np.array_equal(alone_clf.log_pi, clf.log_pi)
        expected += part
    jll = clf.joint_log_likelihood(new_rows)
    assert np.array_equal(jll, expected)
    assert not np.isnan(jll).any()


@FAST
@given(ROWS, ROWS, st.randoms())
def test_statistics_are_additive_and_order_independent(a, b, rnd):
    whole = fit_table(table(a + b), "kind", TYPES)
    merged = merge_tables(fit_table(table(a), "kind", TYPES), fit_table(table(b), "kind", TYPES))
    assert merged.equals(whole)
    shuffled = list(a + b)
    rnd.shuffle(shuffled)
    assert tablefile.dumps(fit_table(table(shuffled), "kind", TYPES)) == tablefile.dumps(whole)


# --- each part is what it says --------------------------------------------------------------


@pytest.mark.parametrize("event_model", ["multinomial", "bernoulli"])
def test_a_text_column_scores_as_a_text_model(event_model):
    docs = [("late box torn", "bad"), ("late again", "bad"), ("fine thanks", "good"),
            ("all fine", "good"), ("box fine", "good")]  # fmt: skip
    s = EstimatorSettings(model=event_model)
    model = fit_table(table(docs, ("note", "kind")), "kind", {"note": "text"})
    tokenize = make_tokenizer(TokenizerSettings())
    accumulator = CountAccumulator(["bad", "good"])
    X = count_matrix([tokenize(t) for t, _ in docs], accumulator.vocabulary)
    accumulator.add(X, [0 if k == "bad" else 1 for _, k in docs])
    text = Classifier(Model(accumulator.result(), TokenizerSettings()), s)
    new = ["late fine box", "unknown words only", "thanks"]
    table_jll = TableClassifier(model, s).joint_log_likelihood([{"note": t} for t in new])
    assert np.allclose(table_jll, text.joint_log_likelihood(new), rtol=0, atol=1e-12)


def test_missing_and_unseen_values_leave_their_factor_out(demo):
    clf = TableClassifier(demo)
    rows = [
        {"size": None, "colour": None, "note": None},
        {"colour": "purple"},  # unseen category, size and note absent
        {"size": "3.0", "colour": "red", "note": "late"},
    ]
    jll = clf.joint_log_likelihood(rows)
    assert np.array_equal(jll[0], clf.log_pi)
    assert np.array_equal(jll[1], clf.log_pi)
    assert (jll[2] != clf.log_pi).all()
    best = clf.predict(rows).best
    assert demo.classes[best[2]] == "bad"


def test_a_non_number_in_a_numeric_column_is_named(demo):
    with pytest.raises(NbclassError, match=r"'new.csv:2': column 'size' holds 'big'"):
        TableClassifier(demo).predict([{"size": "1"}, {"size": "big"}], ["new.csv:1", "new.csv:2"])


def test_a_constant_numeric_column_is_left_out():
    rows = [("5", "x", "a"), ("5", "y", "b"), ("5", "x", "a")]
    model = fit_table(table(rows, ("n", "c", "kind")), "kind")
    assert model.column("n").type == "numeric"
    clf = TableClassifier(model)
    assert clf.log_likelihood_parts([{"n": "5"}, {"n": "6"}])[0].tolist() == [[0, 0], [0, 0]]


def test_fit_refuses_what_cannot_work():
    with pytest.raises(UsageError, match="--label 'klass' is not a column"):
        fit_table(table(DEMO), "klass")
    with pytest.raises(UsageError, match="names 'weight', which is not a column"):
        fit_table(table(DEMO), "kind", {"weight": "numeric"})
    with pytest.raises(UsageError, match="cannot type the label"):
        fit_table(table(DEMO), "kind", {"kind": "text"})
    with pytest.raises(NbclassError, match="holds 'red', which is not a finite number"):
        fit_table(table(DEMO), "kind", {"colour": "numeric"})
    with pytest.raises(NbclassError, match="row 2 has no label"):
        fit_table(table([DEMO[0], DEMO[1][:3] + (None,)]), "kind")
    with pytest.raises(NbclassError, match="at least two"):
        fit_table(table(DEMO[:3]), "kind")
    with pytest.raises(NbclassError, match="no feature column"):
        fit_table(table(DEMO), "kind", {"size": "ignore", "colour": "ignore", "note": "ignore"})
    with pytest.raises(UsageError, match="--var-smoothing 0.0 is out of range: give a number ab"):
        fit_table(table(DEMO), "kind", var_smoothing=0.0)


def test_an_empty_column_is_ignored_with_a_warning():
    rows = [r[:3] + (None, r[3]) for r in DEMO]
    with pytest.warns(UserWarning, match="column 'empty' has no value in any row"):
        model = fit_table(table(rows, COLUMNS[:3] + ("empty", "kind")), "kind")
    assert model.ignored == ("empty",)
    assert [c.name for c in model.columns] == ["size", "colour", "note"]


# --- top features ---------------------------------------------------------------------------


def test_gaussian_mutual_information_by_integration():
    pi = np.array([0.5, 0.5])
    same = gaussian_mutual_information(np.array([1.0, 1.0]), np.array([2.0, 2.0]), pi)
    assert np.abs(same).max() < 1e-12
    mean, var = np.array([0.0, 3.0]), np.array([1.0, 4.0])
    kl = gaussian_mutual_information(mean, var, pi)
    # the same integral by brute force on a fine grid
    x = np.linspace(-30, 40, 400_001)
    dens = np.exp(-0.5 * (x[:, None] - mean) ** 2 / var) / np.sqrt(2 * np.pi * var)
    mix = dens @ pi
    brute = [trapezoid(rel_entr(dens[:, c], mix), x) for c in range(2)]
    assert np.allclose(kl, brute, atol=1e-8)
    assert 0 < pi @ kl < math.log(2)  # I(X; Y) <= H(Y)


def test_top_features_rank_columns_and_words(demo):
    features = table_top_features(demo, k=50)
    names = [f.feature for f in features]
    assert names[0] == "size"  # the sizes separate the classes completely
    assert {"colour", "note:late", "note:fine"} <= set(names)
    assert [f.mi for f in features] == sorted((f.mi for f in features), reverse=True)
    assert all(0 <= f.mi <= math.log(2) for f in features)
    by_name = {f.feature: f for f in features}
    assert by_name["note:late"].label == "bad" and by_name["note:fine"].label == "good"
    assert len(table_top_features(demo, k=2)) == 2


# --- the model file -------------------------------------------------------------------------


def test_round_trip_is_exact(demo):
    data = tablefile.dumps(demo)
    back = tablefile.loads(data)
    assert back.equals(demo)
    assert tablefile.dumps(back) == data
    rows = as_dicts(DEMO)
    assert np.array_equal(
        TableClassifier(back).predict(rows).log_proba,
        TableClassifier(demo).predict(rows).log_proba,
    )


def test_extreme_doubles_survive_the_file():
    """The smallest double and the largest whose variance a double holds (fit refuses
    ±1e308, whose model could not be scored: tests/test_hostile_values.py)."""
    rows = [("1e153", "a"), ("5e-324", "a"), ("-1.3e153", "b"), ("2", "b")]
    model = fit_table(table(rows, ("x", "kind")), "kind")
    assert tablefile.loads(tablefile.dumps(model)).equals(model)


def test_text_and_table_loaders_refuse_each_other(demo, tmp_path):
    path = tmp_path / "table.nbc"
    tablefile.save(demo, str(path))
    with pytest.raises(ModelKindError, match="is a table model .* --table FILE"):
        modelfile.load(str(path))
    text = tmp_path / "text.nbc"
    accumulator = CountAccumulator(["a", "b"])
    accumulator.add(count_matrix([["x"], ["y"]], accumulator.vocabulary), [0, 1])
    modelfile.save(Model(accumulator.result(), TokenizerSettings()), str(text))
    with pytest.raises(ModelKindError, match="is a text model, not a table model"):
        tablefile.load(str(text))


def test_every_flipped_bit_is_refused(demo):
    data = tablefile.dumps(demo)
    rnd = random.Random(0)
    for position in rnd.sample(range(len(data)), 300):
        damaged = bytearray(data)
        damaged[position] ^= 1 << rnd.randrange(8)
        with pytest.raises(ModelFileError):
            tablefile.loads(bytes(damaged))


def repacked(model, **changes) -> bytes:
    """A file with valid checksums whose sections are changed: only content checks catch it."""
    sections = []
    arrays = {**tablefile._arrays(model), **changes}
    for name, values in arrays.items():
        blob = name in ("exact_bytes", "category_values", "text_vocabulary")
        values = np.asarray(values).astype(np.uint8 if blob else np.uint64)
        sections.append((name, values.dtype.str, values.size, values.tobytes()))
    header = fileformat.parse(tablefile.dumps(model), "x", tablefile.TABLE_SECTIONS, kind="table")[
        0
    ]
    header = {k: v for k, v in header.items() if k not in ("sections", "sections_start")}
    return fileformat.pack(header, sections)


def test_crafted_contents_are_refused(demo):
    arrays = tablefile._arrays(demo)
    assert tablefile.loads(repacked(demo)).equals(demo)
    crafted = {
        "more values than its class has rows": {"category_count": arrays["category_count"] + 5},
        "sums are not those of any values": {"exact_shift": arrays["exact_shift"] + 1},
        "out of range or not canonical": {
            "exact_bytes": np.append(arrays["exact_bytes"], 0),
            "exact_ptr": np.append(arrays["exact_ptr"][:-1], arrays["exact_ptr"][-1] + 1),
        },
        "out of range": {"exact_shift": np.full_like(arrays["exact_shift"], 2**40)},
        "inconsistent section pointers": {"text_word_ptr": arrays["text_word_ptr"][::-1]},
        "values are not sorted and unique": {
            "category_values": np.frombuffer(b"red\x00blue\x00green", np.uint8),
            "category_offsets": np.array([0, 4, 9, 15]),
        },
        "string offsets disagree": {"category_offsets": np.array([0, 4, 9, 15])},
    }
    for problem, change in crafted.items():
        with pytest.raises(ModelFileError, match="is not a valid nbclass table model") as info:
            tablefile.loads(repacked(demo, **change))
        assert problem in str(info.value)
