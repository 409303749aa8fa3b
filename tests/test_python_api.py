"""``import nbclass``: the library gives the command's models and numbers, and its errors.

Each test runs the real command (a subprocess of the console entry point) and the library
on the same documents of a 20 Newsgroups sample, and compares model files byte for byte
and probabilities float for float.
"""

from __future__ import annotations

import json
import math
import pickle
import subprocess
import sys

import numpy as np
import pytest
from conftest import NAMED, REPO, nbclass_command

import nbclass

pytestmark = pytest.mark.corpus

NAMED_OPTIONS = {"model": "complement", "tf": "log", "prior_fit": True}  # conftest.NAMED


def cli(*args, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *map(str, args)], input=stdin, capture_output=True, cwd=REPO,
        timeout=600,
    )  # fmt: skip


def ok(*args) -> str:
    result = cli(*args)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def read_folder(folder) -> tuple[list[str], list[str], list[str]]:
    """``(paths, texts, labels)`` of the files below ``folder`` in predict's order (sorted
    paths), each decoded as predict decodes a file."""
    paths = sorted(p for p in folder.rglob("*") if p.is_file())
    texts = [p.read_bytes().decode("utf-8", "replace") for p in paths]
    return [str(p) for p in paths], texts, [p.parent.name for p in paths]


@pytest.fixture(scope="module")
def news(news_sample):
    train, test = news_sample
    return train, test, read_folder(train), read_folder(test)


@pytest.fixture(scope="module")
def models(news, tmp_path_factory):
    """The command's models of the training folder: the default and a named one."""
    train = news[0]
    folder = tmp_path_factory.mktemp("cli-models")
    paths = {"default": folder / "default.nbc", "named": folder / "named.nbc"}
    ok("fit", train, "-o", paths["default"], "-q")
    ok("fit", train, "-o", paths["named"], "-q", *NAMED)
    return paths


def jsonl(*args) -> list[dict]:
    return [json.loads(line) for line in ok(*args).splitlines()]


# --- import ---------------------------------------------------------------------------------


def test_import_nbclass_loads_no_numpy_scipy_or_click():
    code = (
        "import sys, nbclass\n"
        "heavy = ('numpy', 'scipy', 'click', 'nbclass.api')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "nbclass.load\n"
        "print('numpy' in sys.modules, 'click' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.splitlines() == ["[]", "True False"], result.stderr


def test_the_package_names_its_public_api():
    public = {"fit", "fit_corpus", "load", "Model", "NbclassError", "InputError"}
    assert public <= set(dir(nbclass))
    assert nbclass.NbclassError is nbclass.errors.NbclassError
    assert issubclass(nbclass.InputError, nbclass.UsageError)
    assert issubclass(nbclass.InputError, ValueError)
    with pytest.raises(AttributeError, match="no attribute 'predict'"):
        nbclass.predict  # noqa: B018


# --- fit --------------------------------------------------------------------------------------


@pytest.mark.parametrize("named", [False, True], ids=["default", "named"])
def test_fit_writes_the_bytes_of_fit_lines(news, tmp_path, named):
    _, _, (_, texts, labels), _ = news
    texts = [" ".join(t.split()) for t in texts]  # one line each
    lines = tmp_path / "train.txt"
    lines.write_text("".join(f"{y}\t{t}\n" for y, t in zip(labels, texts)), encoding="utf-8")
    options = NAMED if named else ()
    ok("fit", "--lines", lines, "-o", tmp_path / "cli.nbc", "-q", *options)
    model = nbclass.fit(texts, labels, **(NAMED_OPTIONS if named else {}))
    model.save(tmp_path / "api.nbc")
    assert (tmp_path / "api.nbc").read_bytes() == (tmp_path / "cli.nbc").read_bytes()
    assert model.to_bytes() == (tmp_path / "cli.nbc").read_bytes()
    assert model.classes_ == ["alt.atheism", "comp.graphics", "sci.space", "talk.religion.misc"]
    if not named:
        assert model.info()["choice"] is not None and model.info()["calibration"] is not None


@pytest.mark.parametrize(
    "options, args",
    [
        ({}, ()),
        (NAMED_OPTIONS, NAMED),
        ({"ledger": True, "min_df": 2}, ("--ledger", "--min-df", "2")),
    ],
    ids=["default", "named", "ledger"],
)  # fmt: skip
def test_fit_corpus_writes_the_bytes_of_fit(news, models, tmp_path, options, args):
    ok("fit", news[0], "-o", tmp_path / "cli.nbc", "-q", *args)
    nbclass.fit_corpus(str(news[0]), **options).save(str(tmp_path / "api.nbc"))
    assert (tmp_path / "api.nbc").read_bytes() == (tmp_path / "cli.nbc").read_bytes()


def test_fit_of_100_classes_writes_the_bytes_of_fit_whatever_the_blas_threads(tmp_path):
    """7,000 generated lines of 100 classes: the choice's class offsets are fitted on
    thousands of held-out documents, in BLAS products whose sums OpenBLAS shares out
    among its threads. The command runs one BLAS thread; the library, given two here
    (as many as the machine's cores by default), still writes the command's bytes."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(5)
    shared = [f"s{k}" for k in range(40)]
    texts, labels = [], []
    for c in range(100):
        own, near = [f"c{c}w{k}" for k in range(20)], [f"c{(c + 1) % 100}w{k}" for k in range(20)]
        for _ in range(70):
            draws = rng.random(int(rng.integers(3, 30)))
            texts.append(" ".join(rng.choice(own) if r < 0.5 else rng.choice(near) if r < 0.7
                                  else rng.choice(shared) for r in draws))  # fmt: skip
            labels.append(f"k{c:03d}")
    lines = tmp_path / "train.txt"
    lines.write_text("".join(f"{y}\t{t}\n" for y, t in zip(labels, texts)), encoding="utf-8")
    ok("fit", "--lines", lines, "-o", tmp_path / "cli.nbc", "-q")
    with threadpool_limits(2, user_api="blas"):
        model = nbclass.fit(texts, labels)
    assert model.to_bytes() == (tmp_path / "cli.nbc").read_bytes()
    info = model.info()
    assert len(info["classes"]) == 100 and info["choice"]["documents"] > 5000


def test_update_and_merge_write_the_bytes_of_the_commands(news, tmp_path):
    _, _, (_, texts, labels), _ = news
    texts = [" ".join(t.split()) for t in texts]
    half = len(texts) // 2
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text("".join(f"{y}\t{t}\n" for y, t in zip(labels[:half], texts[:half])))
    second.write_text("".join(f"{y}\t{t}\n" for y, t in zip(labels[half:], texts[half:])))
    ok("fit", "--lines", first, "-o", tmp_path / "a.nbc", "-q", *NAMED)
    ok("fit", "--lines", second, "-o", tmp_path / "b.nbc", "-q", *NAMED)
    ok("merge", tmp_path / "a.nbc", tmp_path / "b.nbc", "-o", tmp_path / "merged.nbc", "-q")
    ok("fit", "--lines", second, "--update", tmp_path / "a.nbc", "-q")  # a.nbc: a + b
    a = nbclass.fit(texts[:half], labels[:half], **NAMED_OPTIONS)
    b = nbclass.fit(texts[half:], labels[half:], **NAMED_OPTIONS)
    whole = nbclass.fit(texts, labels, **NAMED_OPTIONS).to_bytes()
    assert a.merge(b).to_bytes() == (tmp_path / "merged.nbc").read_bytes() == whole
    updated = a.update(texts[half:], labels[half:])
    assert updated.to_bytes() == (tmp_path / "a.nbc").read_bytes() == whole
    assert a.to_bytes() != whole  # update returns a new model


# --- the same numbers as predict --------------------------------------------------------------


@pytest.mark.parametrize("which", ["default", "named"])
def test_probabilities_are_those_predict_prints(news, models, which):
    _, test, _, (paths, texts, _) = news
    records = jsonl("predict", "-m", models[which], "--format", "jsonl", test)
    assert [r["source"] for r in records] == paths
    model = nbclass.load(models[which])
    expected = np.array([[r["probabilities"][c] for c in model.classes_] for r in records])
    proba = model.predict_proba(texts)
    assert proba.shape == (len(texts), 4)
    assert np.array_equal(proba, expected)  # float for float
    log_proba = model.predict_log_proba(texts)  # the printed numbers are their math.exp
    assert [[math.exp(v) for v in row] for row in log_proba.tolist()] == expected.tolist()
    assert model.predict(texts) == [r["label"] for r in records]
    assert [dict(r, source=None) for r in records] == [
        dict(r, source=None) for r in model.classify(texts)
    ]


def test_the_default_model_is_calibrated_as_predict_calibrates(news, models):
    """The stored calibration applies, and --no-calibration / estimator options drop it."""
    _, test, _, (_, texts, _) = news
    model = nbclass.load(models["default"])
    raw = jsonl("predict", "-m", models["default"], "--format", "jsonl", "--no-calibration", test)
    plain = model.using(calibration=False)
    assert np.array_equal(
        plain.predict_proba(texts),
        np.array([[r["probabilities"][c] for c in model.classes_] for r in raw]),
    )
    assert not np.array_equal(plain.predict_proba(texts), model.predict_proba(texts))
    bern = jsonl("predict", "-m", models["default"], "--format", "jsonl", "--model", "bernoulli",
                 "--alpha", "0.5", test)  # fmt: skip
    assert np.array_equal(
        model.using(model="bernoulli", alpha=0.5).predict_proba(texts),
        np.array([[r["probabilities"][c] for c in model.classes_] for r in bern]),
    )


def test_thresholds_and_explanations_are_predicts(news, models):
    _, test, _, (_, texts, _) = news
    args = ("--min-probability", "0.99", "--min-known", "90", "--unsure-label", "?")
    records = jsonl("predict", "-m", models["named"], "--format", "jsonl", "--explain", "3",
                    "--top-k", "2", *args, test)  # fmt: skip
    model = nbclass.load(models["named"])
    got = model.classify(texts, top_k=2, explain=3, min_probability=0.99, min_known=90,
                         unsure_label="?")  # fmt: skip
    assert [dict(r, source=None) for r in records] == [dict(r, source=None) for r in got]
    reasons = {r["reason"] for r in got}
    assert {"low-probability", "few-known-words", None} <= reasons
    labels = model.predict(texts, min_probability=0.99, min_known=90, unsure_label="?")
    tsv = ok("predict", "-m", models["named"], *args, test)
    assert labels == [line.split("\t")[1] for line in tsv.splitlines()]
    explanation = model.explain(texts[0], n=3)
    assert explanation["label"] == next(iter(got[0]["probabilities"]))  # the best class
    first = records[0]["explanation"]
    assert explanation["versus"] == first["versus"]
    assert explanation["log_odds"] == first["log_odds"]
    assert [(w, c, x) for w, c, x in explanation["words"]] == [
        (w["word"], w["count"], w["contribution"]) for w in first["words"]
    ]


def test_info_is_info_json(models):
    expected = json.loads(ok("info", "-m", models["default"], "--format", "json"))
    assert nbclass.load(models["default"]).info() == expected


# --- values: pickling, errors ---------------------------------------------------------------


def test_a_model_pickles_as_its_file(models, news):
    _, _, _, (_, texts, _) = news
    model = nbclass.load(models["default"]).using(calibration=False)
    data = pickle.dumps(model)
    assert models["default"].read_bytes() in data  # the file's bytes: counts, no code
    again = pickle.loads(data)
    assert np.array_equal(again.predict_proba(texts), model.predict_proba(texts))
    assert nbclass.Model.from_bytes(model.to_bytes()).to_bytes() == model.to_bytes()


def error_line(*args, stdin=None) -> str:
    result = cli(*args, stdin=stdin)
    assert result.returncode in (1, 2)
    line = result.stderr.decode().strip()
    assert line.startswith("Error: ") and "\n" not in line
    return line[len("Error: ") :]


def test_errors_are_the_commands_error_lines(tmp_path, models):
    missing = str(tmp_path / "missing.nbc")
    with pytest.raises(nbclass.ModelFileError) as caught:
        nbclass.load(missing)
    assert str(caught.value) == error_line("info", "-m", missing)
    with pytest.raises(nbclass.NbclassError) as caught:
        nbclass.fit(["a b", "c d"], ["x", "x"])
    assert str(caught.value) == error_line("fit", "--lines", "-", "-o", tmp_path / "m.nbc",
                                           stdin=b"x\ta b\nx\tc d\n")  # fmt: skip
    with pytest.raises(nbclass.UsageError) as caught:
        nbclass.fit(["a b", "c d"], ["x", "y"], model="auto", alpha=2.0)
    auto_alpha = ("--model", "auto", "--alpha", "2")
    assert str(caught.value) == error_line("fit", "--lines", "-", "-o", tmp_path / "m.nbc",
                                           *auto_alpha, stdin=b"")  # fmt: skip
    model = nbclass.load(models["named"])
    with pytest.raises(nbclass.UsageError) as caught:
        model.predict(["x"], min_probability=1.5)
    assert str(caught.value) == error_line("predict", "-m", models["named"],
                                           "--min-probability", "1.5", stdin=b"x")  # fmt: skip
    with pytest.raises(nbclass.UsageError) as caught:
        model.classify(["x"], top_k=0)
    assert str(caught.value) == error_line("predict", "-m", models["named"], "--top-k", "0",
                                           stdin=b"x")  # fmt: skip


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: nbclass.fit("spam", ["a"]), "not one string"),
        (lambda: nbclass.fit(["a", "b"], ["x"]), "2 texts but 1 labels"),
        (lambda: nbclass.fit(["a", 3], ["x", "y"]), "texts[1] is int"),
        (lambda: nbclass.fit(["a", "b"], ["x", " y"]), "labels[1] ' y' is not a class name"),
        (lambda: nbclass.fit(["a", "b"], ["x", "y"], min_df="2"), "min_df '2' must be a number"),
        (lambda: nbclass.fit(["a", "b"], ["x", "y"], colour=1), "unknown option 'colour'"),
        (lambda: nbclass.fit(["a", "b"], ["x", "y"], ngram_range=(2, 1)), "MIN must not exceed"),
        (lambda: nbclass.fit(["a\ud800", "b"], ["x", "y"]), "texts[0] is not valid Unicode"),
    ],
)
def test_bad_values_are_input_errors(call, message):
    with pytest.raises(nbclass.InputError) as caught:
        call()
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_texts_with_tabs_line_breaks_and_empty_ones_are_documents():
    model = nbclass.fit(["refund\tmy card", "", "the site\nis down"], ["b", "b", "o"],
                        model="multinomial")  # fmt: skip
    assert model.info()["classes"] == {"b": 2, "o": 1}
    # an empty text knows no word: its posterior is the prior, (2 + 1) / (3 + 2) for b
    assert model.predict_proba([""])[0] == pytest.approx([3 / 5, 2 / 5], rel=1e-15)
