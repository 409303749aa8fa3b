"""nbclass export: the reference scorer of docs/export.md reproduces predict's probabilities.

The scorer is the ```python block of docs/export.md that defines ``probabilities``, run as
written; scikit-learn's objects come from the later blocks (a Pipeline for every linear
model, two classes included, and the naive Bayes estimators). All run on a sample of 20
Newsgroups (tests/conftest.py) for every model and transform; a calibrated export is
refused by the recipes and served by nbclass.sklearn's estimator instead.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import DEMO_CORPUS, NAMED, REPO, nbclass_command

from nbclass.cli.app import cli
from nbclass.modelfile.textfile import load, save
from nbclass.models.estimators import DEFAULTS, EstimatorSettings
from nbclass.models.model import Classifier, fit
from nbclass.reading.corpus import list_corpus
from nbclass.text.tokenizer import TokenizerSettings, load_stop_words

DOC = REPO / "docs" / "export.md"


def doc_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def doc_namespace() -> dict:
    namespace: dict = {}
    for block in doc_blocks():
        exec(compile(block, str(DOC), "exec"), namespace)
    return namespace


def test_the_reference_scorer_is_at_most_30_lines():
    scorer = [b for b in doc_blocks() if "def probabilities" in b]
    assert len(scorer) == 1 and len(scorer[0].splitlines()) <= 30


SETTINGS = {
    "defaults": DEFAULTS,
    "multinomial": EstimatorSettings(),
    "multinomial-map": EstimatorSettings(estimator="map", alpha=2.0, beta=(2.0, 2.0)),
    "multinomial-log-idf-length": EstimatorSettings(tf="log", idf=True, norm="length"),
    "multinomial-weight-norm": EstimatorSettings(tf="log", norm="weight"),
    "bernoulli": EstimatorSettings(model="bernoulli", beta=(0.5, 2.0)),
    "bernoulli-fitted": EstimatorSettings(model="bernoulli", prior_fit=True),
    "complement": EstimatorSettings(model="complement"),
    "complement-idf-both": EstimatorSettings(model="complement", tf="log", idf=True, norm="both"),
    "complement-no-prior": EstimatorSettings(model="complement", class_prior=False),
    "dcm": EstimatorSettings(model="dcm"),
    "poisson": EstimatorSettings(model="poisson"),
    "poisson-map": EstimatorSettings(model="poisson", estimator="map", beta=(1.5, 1.5)),
}


@pytest.fixture(scope="module")
def news(news_sample, tmp_path_factory):
    train, test = news_sample
    texts = [
        p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(test.rglob("*"))
        if p.is_file()
    ][::3]
    texts += ["", "zzzz qqqq", "space space space graphics"]
    return train, texts


@pytest.fixture(scope="module")
def fitted(news):
    train, _ = news
    return fit(list_corpus(str(train)))


def expected(model, settings, texts) -> np.ndarray:
    return np.exp(Classifier(model, settings).predict(texts).log_proba)


def reference(path, texts, classes) -> np.ndarray:
    ns = doc_namespace()
    m = ns["load_export"](str(path))
    rows = [ns["probabilities"](m, text) for text in texts]
    return np.array([[row[c] for c in classes] for row in rows])


@pytest.mark.corpus
@pytest.mark.parametrize("name", list(SETTINGS))
@pytest.mark.parametrize("fmt", ["json", "npz"])
def test_reference_scorer_equals_predict(fitted, news, tmp_path, runner, name, fmt):
    _, texts = news
    settings = SETTINGS[name].validate()
    model = fitted
    if settings != model.defaults:  # saved with these defaults, exported as stored
        from dataclasses import replace

        model = replace(fitted, defaults=settings)
    save(model, str(tmp_path / "m.nbc"))
    model = load(str(tmp_path / "m.nbc"))
    out = tmp_path / f"m.{fmt}"
    result = runner.invoke(
        cli, ["export", "-m", str(tmp_path / "m.nbc"), "-o", str(out), "--format", fmt, "-q"]
    )
    assert result.exit_code == 0, result.stderr
    got = reference(out, texts, model.counts.classes)
    want = expected(model, settings, texts)
    assert np.abs(got - want).max() <= 1e-12


@pytest.mark.corpus
def test_tokenizer_settings_travel(news, tmp_path, runner):
    """n-grams, stop words, no lower-casing and a pattern with a group."""
    train, texts = news
    stop, source = load_stop_words("english", lowercase=False)
    tokenizer = TokenizerSettings(
        lowercase=False, token_pattern=r"(?u)\b(\w\w+)\b", ngram_range=(1, 2),
        stop_words=stop, stop_words_source=source,
    )  # fmt: skip
    model = fit(list_corpus(str(train)), tokenizer=tokenizer, defaults=EstimatorSettings())
    save(model, str(tmp_path / "m.nbc"))
    for fmt in ("json", "npz"):
        out = tmp_path / f"m.{fmt}"
        assert runner.invoke(cli, ["export", "-m", str(tmp_path / "m.nbc"), "-o", str(out),
                                   "--format", fmt, "-q"]).exit_code == 0  # fmt: skip
        got = reference(out, texts, model.counts.classes)
        assert np.abs(got - expected(model, model.defaults, texts)).max() <= 1e-12


@pytest.mark.corpus
def test_against_the_predict_command(news_sample, tmp_path):
    """The real commands: fit, export, predict --format jsonl, in subprocesses."""
    train, test = news_sample
    model, out = tmp_path / "m.nbc", tmp_path / "m.json"
    run = [*nbclass_command()]
    subprocess.run([*run, "fit", str(train), "-o", str(model), "-q"], check=True)
    subprocess.run([*run, "export", "-m", str(model), "-o", str(out), "-q"], check=True)
    lines = subprocess.run(
        [*run, "predict", "-m", str(model), str(test), "--format", "jsonl"],
        check=True, capture_output=True, text=True,
    ).stdout.splitlines()  # fmt: skip
    records = [json.loads(line) for line in lines]
    exported = json.loads(out.read_text(encoding="utf-8"))
    classes = exported["classes"]
    assert exported["calibration"] is not None  # fit chose: the calibration travels along
    texts = [Path(r["source"]).read_text(encoding="utf-8", errors="replace") for r in records]
    got = reference(out, texts, classes)
    for record, row in zip(records, got):
        for c, p in record["probabilities"].items():
            assert abs(row[classes.index(c)] - p) <= 1e-12


@pytest.mark.parametrize("options", [[], ["--ngram-range", "1,1"]], ids=["default", "words"])
def test_the_scorer_counts_the_symbols_and_applies_the_class_offsets(tmp_path, options):
    """The demo corpus's default fit keeps the symbols ("$", "%", "@", ...) and the word
    pairs of its documents of at most 64 words; its fit of words keeps the symbols and the
    class offsets; the temperature of both has a gap term: the scorer, run as written on
    their exports, gives predict's probabilities (the scorer once left the symbols out:
    0.10 off)."""
    model, out = tmp_path / "demo.nbc", tmp_path / "demo.json"
    run = [*nbclass_command()]
    subprocess.run([*run, "fit", str(DEMO_CORPUS), "-o", str(model), "-q", *options],
                   check=True)  # fmt: skip
    subprocess.run([*run, "export", "-m", str(model), "-o", str(out), "-q"], check=True)
    exported = json.loads(out.read_text(encoding="utf-8"))
    assert exported["tokenizer"]["symbols"] is True and "$" in exported["vocabulary"]
    calibration = exported["calibration"]
    assert calibration["t2"] != 0
    if options:  # the words: class offsets
        assert len(calibration["offsets"]) == 3 and "ngram_doc_limit" not in exported["tokenizer"]
    else:  # the default: pairs in documents of at most 64 words
        assert exported["tokenizer"]["ngram_doc_limit"] == 64
        assert "this morning" in exported["vocabulary"]  # in the third text
    texts = [
        "My card was charged twice ($49.99 + $49.99) -- refund please!!",
        "login fails: ERR_CERT_DATE_INVALID @ 09:00, 100% of users?",
        "the outage page says 503 :( since this morning",
        "a b c",
        "",
    ]
    records = [
        json.loads(subprocess.run(
            [*run, "predict", "-m", str(model), "--format", "jsonl", "--min-known", "0"],
            input=text, check=True, capture_output=True, text=True,
        ).stdout)
        for text in texts
    ]  # fmt: skip
    classes = exported["classes"]
    want = np.array([[r["probabilities"][c] for c in classes] for r in records])
    got = reference(out, texts, classes)
    assert np.abs(got - want).max() <= 1e-12


def test_npz_holds_no_pickles_and_json_is_strict(chinese_corpus, tmp_path, runner):
    model = tmp_path / "m.nbc"
    options = ["fit", str(chinese_corpus), "-o", str(model), "-q", *NAMED]
    assert runner.invoke(cli, options).exit_code == 0
    assert runner.invoke(cli, ["export", "-m", str(model), "-o", str(tmp_path / "m.npz"),
                               "--format", "npz", "-q"]).exit_code == 0  # fmt: skip
    assert runner.invoke(cli, ["export", "-m", str(model), "-o", str(tmp_path / "m.json"),
                               "-q"]).exit_code == 0  # fmt: skip
    with np.load(tmp_path / "m.npz", allow_pickle=False) as z:
        assert sorted(z.files) == ["bias", "classes", "header", "vocabulary", "weights"]
        assert all(z[k].dtype != object for k in z.files)
        assert z["weights"].shape == (6, 2) and z["vocabulary"].tolist()[:2] == [
            "beijing", "chinese",
        ]
    with zipfile.ZipFile(tmp_path / "m.npz") as archive:
        assert sorted(archive.namelist()) == [
            "bias.npy", "classes.npy", "header.npy", "vocabulary.npy", "weights.npy",
        ]
    data = json.loads(
        (tmp_path / "m.json").read_text(encoding="utf-8"),
        parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"),
    )
    assert data["format"] == "nbclass-export" and data["version"] == 1
    assert data["calibration"] is None and data["idf"] is None
    assert data["transform"] == {"binary": False, "tf": "log", "length_norm": False}


def test_calibration_divides_the_scores(chinese_corpus, tmp_path, runner):
    """A calibration {t0, t1, t2} divides f(x) W + b by exp(t0 + t1 log(1 + n) + t2 log(1 + g))
    in the scorer, g the gap between the two scores."""
    model_path, out = tmp_path / "m.nbc", tmp_path / "m.json"
    plain = ["--model", "multinomial", "--tf", "raw", "--no-prior-fit"]
    runner.invoke(cli, ["fit", str(chinese_corpus), "-o", str(model_path), "-q", *plain])
    assert runner.invoke(cli, ["export", "-m", str(model_path), "-o", str(out)]).exit_code == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    text = "Chinese Chinese Chinese Tokyo Japan"  # n = 5 known tokens
    jll = Classifier(load(str(model_path))).joint_log_likelihood([text])[0]
    gap = abs(jll[0] - jll[1])
    for calibration, T in [
        ({"t0": 0.25, "t1": 0.5}, np.exp(0.25 + 0.5 * np.log(6))),  # a file without t2
        ({"t0": 0.25, "t1": 0.5, "t2": -0.75}, np.exp(0.25 + 0.5 * np.log(6))
         / (1 + gap) ** 0.75),
    ]:
        data["calibration"] = calibration
        out.write_text(json.dumps(data), encoding="utf-8")
        scaled = jll / T
        want = np.exp(scaled - scaled.max()) / np.exp(scaled - scaled.max()).sum()
        got = reference(out, [text], ["china", "japan"])[0]
        assert np.abs(got - want).max() <= 1e-12


@pytest.mark.parametrize(
    "options, fragment",
    [
        (["--estimator", "predictive", "--model", "multinomial"], "is not linear in the counts"),
        (["--estimator", "predictive", "--model", "poisson"], "is not linear in the counts"),
        (["--estimator", "mle", "--model", "multinomial"], "export needs finite weights"),
        (["--estimator", "mle", "--model", "bernoulli"], "export needs finite weights"),
    ],
)
def test_refusals_are_one_line(chinese_corpus, tmp_path, runner, options, fragment):
    model = tmp_path / "m.nbc"
    runner.invoke(cli, ["fit", str(chinese_corpus), "-o", str(model), "-q"])
    result = runner.invoke(cli, ["export", "-m", str(model), "-o", str(tmp_path / "x"), *options])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("Error: ") and fragment in result.stderr
    assert result.stderr.count("\n") == 1 and not (tmp_path / "x").exists()


def test_hashed_models_are_refused(chinese_corpus, tmp_path, runner):
    model = tmp_path / "m.nbc"
    runner.invoke(cli, ["fit", str(chinese_corpus), "-o", str(model), "-q",
                        "--hash-features", "64"])  # fmt: skip
    result = runner.invoke(cli, ["export", "-m", str(model), "-o", str(tmp_path / "x")])
    assert result.exit_code == 1 and "--hash-features" in result.stderr


# --- scikit-learn --------------------------------------------------------------------------


@pytest.mark.corpus
@pytest.mark.parametrize(
    "settings",
    [
        EstimatorSettings(),
        EstimatorSettings(beta=(0.3, 0.3)),
        EstimatorSettings(model="bernoulli"),
        EstimatorSettings(model="bernoulli", beta=(0.5, 2.0)),
        EstimatorSettings(model="complement", class_prior=False),
    ],
    ids=lambda s: f"{s.model}-{s.beta[0]}",
)
def test_sklearn_attributes_from_the_export(fitted, news, tmp_path, settings):
    from dataclasses import replace

    _, texts = news
    model = replace(fitted, defaults=settings)
    save(model, str(tmp_path / "m.nbc"))
    model = load(str(tmp_path / "m.nbc"))
    from nbclass.cli.app import main

    with pytest.raises(SystemExit) as exit_:
        main(["export", "-m", str(tmp_path / "m.nbc"), "-o", str(tmp_path / "m.json"), "-q"])
    assert exit_.value.code == 0
    ns = doc_namespace()
    vectorizer, classifier = ns["sklearn_model"](ns["load_export"](str(tmp_path / "m.json")))
    X = vectorizer.transform(texts)
    got, want = classifier.predict_proba(X), expected(model, settings, texts)
    assert list(classifier.classes_) == list(model.counts.classes)
    known = np.asarray(X.sum(axis=1)).ravel() > 0
    assert np.abs(got[known] - want[known]).max() <= 1e-9
    # A document with no known word ("", "zzzz qqqq") gets the prior from nbclass, as
    # scikit-learn's MultinomialNB and ComplementNB give it; BernoulliNB counts every
    # word absent.
    assert (~known).sum() == 2
    prior = np.exp(ns["load_export"](str(tmp_path / "m.json"))["prior"])
    assert np.abs(want[~known] - prior).max() <= 1e-15


# --- scikit-learn objects for two classes and calibrated models ----------------------------

LINEAR = [name for name in SETTINGS if name not in ("defaults", "dcm")]


@pytest.fixture(scope="module")
def two_classes(news_sample, tmp_path_factory):
    """A training folder of two of the sample's newsgroups."""
    train, _ = news_sample
    folder = tmp_path_factory.mktemp("two")
    for name in ("comp.graphics", "sci.space"):  # copies: links to folders are not followed
        shutil.copytree(train / name, folder / name)
    return folder


@pytest.mark.corpus
@pytest.mark.parametrize("name", LINEAR)
@pytest.mark.parametrize("classes", [2, 4])
def test_the_sklearn_pipeline_recipe_gives_predicts_probabilities(
    news, two_classes, tmp_path, runner, name, classes
):  # fmt: skip
    import nbclass

    train, texts = news
    settings = SETTINGS[name].validate()
    from dataclasses import replace

    model = replace(fit(list_corpus(str(two_classes if classes == 2 else train))),
                    defaults=settings)  # fmt: skip
    save(model, str(tmp_path / "m.nbc"))
    result = runner.invoke(
        cli, ["export", "-m", str(tmp_path / "m.nbc"), "-o", str(tmp_path / "m.json"), "-q"]
    )
    assert result.exit_code == 0, result.stderr
    ns = doc_namespace()
    exported = ns["load_export"](str(tmp_path / "m.json"))
    pipeline = ns["sklearn_pipeline"](exported)
    got = ns["pipeline_proba"](pipeline, exported, texts)
    want = nbclass.load(tmp_path / "m.nbc").predict_proba(texts)  # predict's numbers
    assert got.shape == (len(texts), classes)
    assert list(pipeline.classes_) == list(model.counts.classes)
    assert np.abs(got - want).max() <= 1e-12
    # "" and "zzzz qqqq" know no word: the prior, which softmax(b) is for some models only
    plain = pipeline.predict_proba(texts)
    assert np.abs(plain[:-3] - want[:-3]).max() <= 1e-12  # each test document knows a word
    same = np.abs(plain[-3:-1] - want[-3:-1]).max() <= 1e-12
    assert same == (settings.model != "bernoulli")  # its b holds the absent words


@pytest.mark.corpus
@pytest.mark.parametrize(
    "name", ["multinomial", "multinomial-log-idf-length", "bernoulli", "complement-no-prior"]
)
def test_the_sklearn_recipes_apply_the_document_limit(news, tmp_path, runner, name):
    """A model counting word pairs in documents of at most 200 words (a default fit of
    short texts carries such a limit): both recipes give predict's probabilities, on test
    documents on either side of the limit, where n-grams in every document would not."""
    from sklearn.feature_extraction.text import CountVectorizer

    import nbclass

    train, texts = news
    settings = SETTINGS[name].validate()
    tokenizer = TokenizerSettings(ngram_range=(1, 2), ngram_doc_limit=200)
    save(fit(list_corpus(str(train)), tokenizer, defaults=settings), str(tmp_path / "m.nbc"))
    result = runner.invoke(
        cli, ["export", "-m", str(tmp_path / "m.nbc"), "-o", str(tmp_path / "m.json"), "-q"]
    )
    assert result.exit_code == 0, result.stderr
    ns = doc_namespace()
    exported = ns["load_export"](str(tmp_path / "m.json"))
    assert exported["tokenizer"]["ngram_doc_limit"] == 200
    assert any(" " in word for word in exported["vocabulary"])  # pairs were counted
    words = CountVectorizer().build_analyzer()  # the default tokenizer's words
    lengths = np.array([len(words(text)) for text in texts])
    assert (lengths <= 200).sum() >= 10 and (lengths > 200).sum() >= 10
    want = nbclass.load(tmp_path / "m.nbc").predict_proba(texts)  # predict's numbers

    pipeline = ns["sklearn_pipeline"](exported)
    got = ns["pipeline_proba"](pipeline, exported, texts)
    assert np.abs(got - want).max() <= 1e-12
    # Pairs in every document (a plain CountVectorizer) count the long ones otherwise,
    # and score some of them otherwise by far.
    every = CountVectorizer(ngram_range=(1, 2), vocabulary=list(exported["vocabulary"]),
                            binary=exported["transform"]["binary"], dtype=np.float64)  # fmt: skip
    differ = np.asarray((every.transform(texts) != pipeline[0].transform(texts)).sum(axis=1))
    assert np.array_equal(differ.ravel() > 0, lengths > 200)
    pipeline.steps[0] = (pipeline.steps[0][0], every)
    moved = np.abs(ns["pipeline_proba"](pipeline, exported, texts) - want).max(axis=1) > 1e-6
    assert moved.sum() >= 5

    if settings.tf == "raw" and not settings.idf and settings.norm == "none":
        vectorizer, classifier = ns["sklearn_model"](exported)
        X = vectorizer.transform(texts)
        known = np.asarray(X.sum(axis=1)).ravel() > 0
        got = classifier.predict_proba(X)
        assert np.abs(got[known] - want[known]).max() <= 1e-9


@pytest.mark.parametrize(
    "options, overrides",
    [
        ([], {}),
        (["--model", "complement", "--tf", "raw", "--no-class-prior"],
         {"model": "complement", "tf": "raw", "class_prior": False}),
        (["--model", "bernoulli"], {"model": "bernoulli"}),
    ],  # fmt: skip
    ids=["chosen", "complement", "bernoulli"],
)
def test_the_sklearn_recipes_count_the_symbols_of_the_demos_default_model(
    tmp_path, options, overrides
):  # fmt: skip
    """The demo corpus's default model counts the symbols and the word pairs of documents
    of at most 64 words: exported without the calibration, the recipes give predict's
    probabilities (a CountVectorizer of the words and pairs alone was 0.09 off)."""
    import nbclass

    model, out = tmp_path / "demo.nbc", tmp_path / "demo.json"
    run = [*nbclass_command()]
    subprocess.run([*run, "fit", str(DEMO_CORPUS), "-o", str(model), "-q"], check=True)
    subprocess.run([*run, "export", "-m", str(model), "-o", str(out), "-q", "--no-calibration",
                    *options], check=True)  # fmt: skip
    ns = doc_namespace()
    exported = ns["load_export"](str(out))
    assert exported["tokenizer"]["symbols"] is True and "$" in exported["vocabulary"]
    assert exported["tokenizer"]["ngram_doc_limit"] == 64
    tests = sorted((REPO / "corpora" / "demo-test").rglob("*.txt"))
    texts = [path.read_text(encoding="utf-8") for path in tests]
    texts += [
        "My card was charged twice ($49.99 + $49.99) -- refund please!!",
        "login fails: ERR_CERT_DATE_INVALID @ 09:00, 100% of users?",
        "the outage page says 503 :( since this morning",
        "a\0b ?? c",
        "",
    ]
    want = nbclass.load(model).using(calibration=False, **overrides).predict_proba(texts)
    pipeline = ns["sklearn_pipeline"](exported)
    assert np.abs(ns["pipeline_proba"](pipeline, exported, texts) - want).max() <= 1e-12
    if options:  # the naive Bayes estimators
        vectorizer, classifier = ns["sklearn_model"](exported)
        X = vectorizer.transform(texts)
        known = np.asarray(X.sum(axis=1)).ravel() > 0
        assert np.abs(classifier.predict_proba(X)[known] - want[known]).max() <= 1e-9


def test_the_sklearn_recipes_refuse_unspaced_tokens(chinese_corpus, tmp_path, runner):
    options = ["fit", str(chinese_corpus), "-o", str(tmp_path / "m.nbc"), "-q", "--unspaced",
               "pairs", *NAMED]  # fmt: skip
    assert runner.invoke(cli, options).exit_code == 0
    result = runner.invoke(cli, ["export", "-m", str(tmp_path / "m.nbc"), "-o",
                                 str(tmp_path / "m.json"), "-q", "--no-calibration"])  # fmt: skip
    assert result.exit_code == 0, result.stderr
    ns = doc_namespace()
    exported = ns["load_export"](str(tmp_path / "m.json"))
    assert exported["tokenizer"]["unspaced"] == "pairs"
    for recipe in ("sklearn_pipeline", "sklearn_model"):
        with pytest.raises(ValueError, match="without spaces: use nbclass.sklearn"):
            ns[recipe](exported)


@pytest.mark.corpus
@pytest.mark.parametrize("classes", [2, 4])
def test_a_calibrated_export_is_refused_and_the_estimator_takes_the_model(
    news, two_classes, tmp_path, classes
):  # fmt: skip
    """fit's default calibrates: no recipe rebuilds that, the estimator does."""
    import nbclass
    from nbclass.sklearn import NaiveBayesTextClassifier

    train, texts = news
    path = tmp_path / "m.nbc"
    run = [*nbclass_command()]
    folder = two_classes if classes == 2 else train
    subprocess.run([*run, "fit", str(folder), "-o", str(path), "-q"], check=True)
    subprocess.run([*run, "export", "-m", str(path), "-o", str(tmp_path / "m.json"), "-q"],
                   check=True)  # fmt: skip
    exported = json.loads((tmp_path / "m.json").read_text())
    assert exported["calibration"] is not None
    ns = doc_namespace()
    for recipe in ("sklearn_pipeline", "sklearn_model"):
        with pytest.raises(ValueError, match="export with --no-calibration"):
            ns[recipe](exported)
    estimator = NaiveBayesTextClassifier.from_model(nbclass.load(path))
    with (tmp_path / "texts.txt").open("w") as handle:
        handle.writelines(" ".join(t.split()) + "\n" for t in texts if t.split())
    lines = [" ".join(t.split()) for t in texts if t.split()]
    printed = subprocess.run(
        [*run, "predict", "-m", str(path), "--lines", str(tmp_path / "texts.txt"),
         "--format", "jsonl"], check=True, capture_output=True, text=True,
    ).stdout.splitlines()  # fmt: skip
    want = np.array([[json.loads(r)["probabilities"][c] for c in exported["classes"]]
                     for r in printed])  # fmt: skip
    assert np.array_equal(estimator.predict_proba(lines), want)
