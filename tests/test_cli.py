"""The ``nbclass`` command through click's CliRunner: exact stdout, stderr and exit codes.

Expected probabilities are rebuilt from the counts of the "Chinese Beijing" corpus of
Manning et al. (IIR, ch. 13) with literal fractions, never taken from nbclass itself.

Vocabulary (lower-cased, sorted): beijing, chinese, japan, macao, shanghai, tokyo (V = 6).

=========  ===  ==========================================  ===
class      N_c  T_jc (tokens)                               T_c
=========  ===  ==========================================  ===
china      3    beijing 1, chinese 5, macao 1, shanghai 1   8
japan      1    chinese 1, japan 1, tokyo 1                 3
=========  ===  ==========================================  ===

D_jc (documents containing the word): china: beijing 1, chinese 3, macao 1, shanghai 1;
japan: chinese 1, japan 1, tokyo 1.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import warnings
from fractions import Fraction as F
from pathlib import Path

import pytest
from conftest import CHINESE_TEST, NAMED, REPO, write_corpus

from nbclass import __version__
from nbclass.cli.app import _show_warning, cli
from nbclass.errors import NbclassWarning
from nbclass.modelfile.textfile import load
from nbclass.models.estimators import DEFAULTS
from nbclass.models.selection import mutual_information
from nbclass.models.textmodels import resolve_prior

JSONL_KEYS = [
    "source", "label", "probability", "probabilities", "log_evidence", "evidence_model", "reason"
]  # fmt: skip


# --- helpers -------------------------------------------------------------------------------


def posterior(scores: dict[str, F]) -> dict[str, F]:
    """Exact p(c | x) from exact joint probabilities."""
    total = sum(scores.values())
    return {c: s / total for c, s in scores.items()}


def multinomial_pm(alpha=1, beta=1) -> dict[str, F]:
    """Posterior of CHINESE_TEST (chinese x3, tokyo, japan), multinomial posterior mean."""
    V, N = 6, 4

    def pi(N_c):
        return F(N_c + alpha, N + 2 * alpha)

    def theta(T_jc, T_c):
        return F(T_jc + beta, T_c + V * beta)

    china = pi(3) * theta(5, 8) ** 3 * theta(0, 8) * theta(0, 8)
    japan = pi(1) * theta(1, 3) ** 3 * theta(1, 3) * theta(1, 3)
    return posterior({"china": china, "japan": japan})


def bernoulli_pm(beta1=1, beta0=1) -> dict[str, F]:
    """Posterior of CHINESE_TEST under the Bernoulli model, posterior mean, α = 1.

    Present: chinese, japan, tokyo; absent: beijing, macao, shanghai.
    """

    def pi(N_c):
        return F(N_c + 1, 4 + 2)

    def theta(D_jc, N_c):
        return F(D_jc + beta1, N_c + beta1 + beta0)

    # china (N_c = 3): chinese 3, japan 0, tokyo 0 present; beijing 1, macao 1, shanghai 1 absent
    china = pi(3) * theta(3, 3) * theta(0, 3) * theta(0, 3) * (1 - theta(1, 3)) ** 3
    # japan (N_c = 1): chinese 1, japan 1, tokyo 1 present; beijing 0, macao 0, shanghai 0 absent
    japan = pi(1) * theta(1, 1) ** 3 * (1 - theta(0, 1)) ** 3
    return posterior({"china": china, "japan": japan})


def parse_number(text: str) -> float:
    """A printed probability: must be the full repr of the float it reads back as."""
    value = float(text)
    assert text == repr(value)
    return value


def assert_error(result, exit_code: int, *fragments: str) -> str:
    """Exactly one ``Error: ...`` line on stderr, nothing on stdout, no traceback."""
    assert result.exit_code == exit_code, (result.stdout, result.stderr)
    assert isinstance(result.exception, SystemExit), result.exception  # not a crash
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    assert result.stderr == lines[0] + "\n"
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


@contextlib.contextmanager
def cli_warnings():
    """Print NbclassWarning as the console entry point ``nbclass.cli.app:main`` does.

    The test suite runs with warnings as errors; ``main`` installs a printer instead.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("always", NbclassWarning)
        warnings.showwarning = _show_warning
        yield


@pytest.fixture
def model(runner, chinese_corpus, tmp_path) -> Path:
    """The Chinese corpus fitted with the plain multinomial model (pinned: the tests below
    compute its fractions by hand; nbclass's defaults are tested in test_textmodels)."""
    path = tmp_path / "chinese.nbc"
    plain = ["--model", "multinomial", "--tf", "raw", "--no-prior-fit"]
    result = runner.invoke(cli, ["fit", str(chinese_corpus), "-o", str(path), *plain])
    assert result.exit_code == 0, result.stderr
    return path


def predict(runner, model, *args, input=CHINESE_TEST):
    return runner.invoke(cli, ["predict", "-m", str(model), *args], input=input)


# --- fit -----------------------------------------------------------------------------------


def test_fit_writes_a_model_and_one_summary_line(runner, chinese_corpus, tmp_path):
    path = tmp_path / "out.nbc"
    result = runner.invoke(cli, ["fit", str(chinese_corpus), "-o", str(path)])
    assert result.exit_code == 0
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    # the 6 words and the 7 pairs of adjacent words: short documents, whose pairs are counted
    assert lines[0].startswith("fit: 4 documents, 2 classes, 13 words, ")
    model = load(str(path))
    assert re.fullmatch(
        r"fit: 4 documents, 2 classes, 13 words, chose "
        + re.escape(model.choice["chosen"])
        + r", \d+\.\d\d s -> "
        + re.escape(str(path)),
        lines[0],
    )
    counts = model.counts
    assert counts.classes == ("china", "japan")
    assert counts.vocabulary == (
        "beijing", "beijing chinese", "chinese", "chinese beijing", "chinese chinese",
        "chinese macao", "chinese shanghai", "japan", "japan chinese", "macao", "shanghai",
        "tokyo", "tokyo japan",
    )  # fmt: skip
    assert counts.class_count.tolist() == [3, 1]


def test_fit_quiet_prints_nothing(runner, chinese_corpus, tmp_path):
    path = tmp_path / "out.nbc"
    result = runner.invoke(cli, ["fit", str(chinese_corpus), "-o", str(path), "-q"])
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    assert path.is_file()


def test_fit_stores_settings_as_the_models_defaults(runner, chinese_corpus, tmp_path):
    path = tmp_path / "out.nbc"
    args = ["--model", "bernoulli", "--estimator", "map", "--alpha", "2", "--beta", "2,3"]
    args += ["--ngram-range", "1,2", "--stop-words", "english", "--no-lowercase"]
    result = runner.invoke(cli, ["fit", str(chinese_corpus), "-o", str(path), "-q", *args])
    assert result.exit_code == 0, result.stderr
    info = json.loads(runner.invoke(cli, ["info", "-m", str(path), "--format", "json"]).stdout)
    assert info["defaults"] == {
        "model": "bernoulli",
        "estimator": "map",
        "alpha": 2.0,
        "beta": [2.0, 3.0],
        "tf": "raw",
        "idf": False,
        "norm": "none",
        "prior_fit": False,
        "class_prior": True,
    }
    assert info["tokenizer"]["ngram_range"] == [1, 2]
    assert info["tokenizer"]["lowercase"] is False
    assert info["tokenizer"]["stop_words_source"] == "english"
    assert info["tokenizer"]["stop_words"] > 0


# --- predict: the numbers ------------------------------------------------------------------


def test_predict_stdin_prints_the_exact_posterior(runner, model):
    result = predict(runner, model)
    assert result.exit_code == 0
    assert result.stderr == ""
    expected = multinomial_pm()
    # the textbook's figures, as literal fractions
    textbook = {
        "china": F(3 + 1, 4 + 2) * F(5 + 1, 8 + 6) ** 3 * F(0 + 1, 8 + 6) ** 2,
        "japan": F(1 + 1, 4 + 2) * F(1 + 1, 3 + 6) ** 5,
    }
    assert expected == posterior(textbook)
    source, label, text = result.stdout.removesuffix("\n").split("\t")
    assert (source, label) == ("-", "china")
    p = parse_number(text)
    assert p == pytest.approx(float(expected["china"]), abs=1e-15, rel=0)
    assert result.stdout == f"-\tchina\t{p!r}\n"


def test_predict_tsv_top_k_2_adds_the_second_class(runner, model):
    result = predict(runner, model, "--top-k", "2")
    assert result.exit_code == 0 and result.stderr == ""
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1
    fields = result.stdout.removesuffix("\n").split("\t")
    assert len(fields) == 5
    assert fields[:2] == ["-", "china"] and fields[3] == "japan"
    expected = multinomial_pm()
    p1, p2 = parse_number(fields[2]), parse_number(fields[4])
    assert p1 == pytest.approx(float(expected["china"]), abs=1e-15, rel=0)
    assert p2 == pytest.approx(float(expected["japan"]), abs=1e-15, rel=0)
    assert p1 + p2 == pytest.approx(1.0, abs=1e-15, rel=0)


def test_predict_tsv_top_k_1_is_the_default(runner, model):
    assert predict(runner, model, "--top-k", "1").stdout == predict(runner, model).stdout


def test_predict_jsonl_record(runner, model):
    result = predict(runner, model, "--format", "jsonl")
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and result.stdout == lines[0] + "\n"
    record = json.loads(lines[0])
    assert list(record) == JSONL_KEYS
    assert record["source"] == "-" and record["label"] == "china"
    assert list(record["probabilities"]) == ["china", "japan"]  # best first, all classes
    expected = multinomial_pm()
    for c in ("china", "japan"):
        assert record["probabilities"][c] == pytest.approx(float(expected[c]), abs=1e-15, rel=0)
    assert record["probability"] == record["probabilities"]["china"]
    assert sum(record["probabilities"].values()) == pytest.approx(1.0, abs=1e-15, rel=0)


def test_predict_jsonl_top_k_1_limits_the_probabilities(runner, model):
    full = json.loads(predict(runner, model, "--format", "jsonl").stdout)
    record = json.loads(predict(runner, model, "--format", "jsonl", "--top-k", "1").stdout)
    assert list(record) == JSONL_KEYS
    assert record["probabilities"] == {"china": full["probabilities"]["china"]}
    assert record["probability"] == full["probability"]


def test_predict_top_k_0_is_a_usage_error(runner, model):
    result = predict(runner, model, "--top-k", "0")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "Error: --top-k 0 is out of range: give a whole number from 1 to 2^31" in result.stderr


# --- predict: sources ----------------------------------------------------------------------


def test_predict_lines_from_stdin(runner, model):
    result = predict(runner, model, "--lines", input="Chinese Beijing\r\nTokyo Japan\n\nMacao")
    assert result.exit_code == 0 and result.stderr == ""
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [r[0] for r in rows] == ["-:1", "-:2", "-:3", "-:4"]
    # line 3 is empty: no evidence, so unsure, and the posterior is the prior (N_c + 1) / (N + 2)
    assert [r[1] for r in rows] == ["china", "japan", "unsure", "china"]
    assert parse_number(rows[2][2]) == pytest.approx(4 / 6, abs=1e-15, rel=0)
    again = predict(runner, model, "--lines", "--min-known", "0", input="\n")  # the prior's class
    assert again.exit_code == 0 and again.stdout.split("\t")[1] == "china"


def test_predict_lines_from_a_file(runner, model, tmp_path):
    doc = tmp_path / "two.txt"
    doc.write_text("Tokyo Japan\nChinese Shanghai\n", encoding="utf-8")
    result = runner.invoke(cli, ["predict", "-m", str(model), "--lines", str(doc)])
    assert result.exit_code == 0 and result.stderr == ""
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [(r[0], r[1]) for r in rows] == [(f"{doc}:1", "japan"), (f"{doc}:2", "china")]


def test_predict_dash_names_stdin(runner, model):
    assert predict(runner, model, "-").stdout == predict(runner, model).stdout


def test_predict_folder_walks_recursively_in_sorted_order(runner, model, tmp_path):
    docs = tmp_path / "inbox"
    # created in reverse order, so a listing in creation order would be wrong
    for name in ["sub/deeper/e.txt", "sub/d.txt", "c.txt", "b.txt", "a.txt"]:
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text("Tokyo Japan", encoding="utf-8")
    for skipped in [".hidden", "notes.txt~", ".git/HEAD", "sub/.swap", "sub/old~"]:
        (docs / skipped).parent.mkdir(parents=True, exist_ok=True)
        (docs / skipped).write_text("Tokyo Japan", encoding="utf-8")
    result = runner.invoke(cli, ["predict", "-m", str(model), str(docs)])
    assert result.exit_code == 0 and result.stderr == ""
    sources = [line.split("\t")[0] for line in result.stdout.splitlines()]
    expected = ["a.txt", "b.txt", "c.txt", "sub/d.txt", "sub/deeper/e.txt"]
    assert sources == [str(docs / name) for name in expected]
    assert all(line.split("\t")[1] == "japan" for line in result.stdout.splitlines())


def test_predict_missing_input_file(runner, model, tmp_path):
    missing = tmp_path / "nope.txt"
    assert_error(
        runner.invoke(cli, ["predict", "-m", str(model), str(missing)]),
        1,
        f"{str(missing)!r} does not exist",
    )


def test_predict_escapes_tabs_and_newlines_in_sources(runner, model, tmp_path):
    doc = tmp_path / "a\tb\nc.txt"
    doc.write_text("Tokyo", encoding="utf-8")
    result = runner.invoke(cli, ["predict", "-m", str(model), str(doc)])
    assert result.exit_code == 0
    line = result.stdout.removesuffix("\n")
    assert "\n" not in line and line.count("\t") == 2
    assert line.split("\t")[0] == str(tmp_path) + "/a\\tb\\nc.txt"


# --- predict: overriding the model's estimator settings ------------------------------------


def test_predict_overrides_change_the_output_without_refitting(runner, model):
    before = model.read_bytes()
    p = parse_number(predict(runner, model).stdout.removesuffix("\n").split("\t")[2])
    assert p == pytest.approx(float(multinomial_pm()["china"]), abs=1e-15, rel=0)

    def line(*args):
        result = predict(runner, model, *args)
        assert result.exit_code == 0 and result.stderr == ""
        source, label, text = result.stdout.removesuffix("\n").split("\t")
        assert source == "-"
        return label, parse_number(text)

    # Bernoulli, posterior mean, Beta(1, 1): the textbook's 0.86 for japan
    label, p = line("--model", "bernoulli")
    assert label == "japan"
    assert p == pytest.approx(float(bernoulli_pm()["japan"]), abs=1e-15, rel=0)

    # mle: tokyo is unseen in china, so china is impossible
    assert line("--estimator", "mle") == ("japan", 1.0)

    # α = 2: π = (N_c + 2) / (N + 4)
    label, p = line("--alpha", "2")
    assert label == "china"
    assert p == pytest.approx(float(multinomial_pm(alpha=2)["china"]), abs=1e-15, rel=0)

    # Bernoulli with Beta(2, 3)
    label, p = line("--model", "bernoulli", "--beta", "2,3")
    expected = bernoulli_pm(2, 3)
    best = max(expected, key=expected.get)
    assert label == best
    assert p == pytest.approx(float(expected[best]), abs=1e-15, rel=0)
    assert float(expected[best]) != pytest.approx(float(bernoulli_pm()[best]), abs=1e-3)

    # map with α = β = 2 is the posterior mean with α = β = 1
    label, p = line("--estimator", "map", "--alpha", "2", "--beta", "2")
    assert label == "china"
    assert p == pytest.approx(float(multinomial_pm()["china"]), abs=1e-15, rel=0)

    assert model.read_bytes() == before  # nothing was refitted or rewritten


def test_predict_map_with_beta_below_1_is_a_usage_error(runner, model):
    line = assert_error(predict(runner, model, "--estimator", "map", "--beta", "0.5"), 2)
    assert "--estimator map" in line


def test_predict_multinomial_with_two_betas_is_a_usage_error(runner, model):
    line = assert_error(predict(runner, model, "--model", "multinomial", "--beta", "1,2"), 2)
    assert "--beta" in line and "bernoulli" in line


def test_predict_beta_that_is_not_a_number_is_a_usage_error(runner, model):
    result = predict(runner, model, "--beta", "one")
    assert result.exit_code == 2 and result.stdout == ""
    assert "Invalid value for --beta" in result.stderr and "Traceback" not in result.stderr


def test_predict_posterior_mean_with_alpha_0_is_a_usage_error(runner, model):
    assert_error(predict(runner, model, "--alpha", "0"), 2, "--estimator posterior-mean")


def test_mle_with_every_class_impossible_has_an_empty_label(runner, model):
    # beijing is unseen in japan and tokyo unseen in china: under mle both are impossible
    with cli_warnings():
        result = predict(runner, model, "--estimator", "mle", input="Beijing Tokyo")
    assert result.exit_code == 0
    assert result.stdout == "-\t\t0.0\n"
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("Warning: every class has probability 0")
    assert "'-'" in lines[0] and "--estimator posterior-mean" in lines[0]


def test_mle_with_every_class_impossible_jsonl(runner, model):
    with cli_warnings():
        result = predict(
            runner, model, "--estimator", "mle", "--format", "jsonl", input="Beijing Tokyo"
        )
    assert result.exit_code == 0
    record = json.loads(result.stdout)
    assert record == {
        "source": "-",
        "label": "",
        "probability": 0.0,
        "probabilities": {"china": 0.0, "japan": 0.0},
        "log_evidence": None,
        "evidence_model": "multinomial",
        "reason": None,
    }
    assert result.stderr.startswith("Warning: every class has probability 0")


# --- top-features --------------------------------------------------------------------------


def test_top_features_tsv(runner, model):
    result = runner.invoke(cli, ["top-features", "-m", str(model), "-k", "3"])
    assert result.exit_code == 0 and result.stderr == ""
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert result.stdout == "".join("\t".join(r) + "\n" for r in rows)
    assert len(rows) == 3 and all(len(r) == 3 for r in rows)
    assert [(r[0], r[2]) for r in rows] == [
        ("japan", "japan"),
        ("tokyo", "japan"),
        ("chinese", "china"),
    ]
    mi = [parse_number(r[1]) for r in rows]
    assert mi == sorted(mi, reverse=True)
    loaded = load(str(model))
    I = mutual_information(loaded.active_counts, loaded.defaults)
    index = {w: j for j, w in enumerate(loaded.active_counts.vocabulary)}
    assert mi == [float(I[index[r[0]]]) for r in rows]
    # the kept words are the best: nothing left out scores higher than the last one kept
    assert max(float(I[j]) for w, j in index.items() if w not in {r[0] for r in rows}) <= mi[-1]


def test_top_features_k_above_the_vocabulary_lists_every_word(runner, model):
    result = runner.invoke(cli, ["top-features", "-m", str(model), "-k", "50"])
    assert result.exit_code == 0
    words = [line.split("\t")[0] for line in result.stdout.splitlines()]
    assert sorted(words) == ["beijing", "chinese", "japan", "macao", "shanghai", "tokyo"]


def test_top_features_jsonl(runner, model):
    tsv = runner.invoke(cli, ["top-features", "-m", str(model), "-k", "4"]).stdout
    result = runner.invoke(cli, ["top-features", "-m", str(model), "-k", "4", "--format", "jsonl"])
    assert result.exit_code == 0 and result.stderr == ""
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(records) == 4
    assert all(list(r) == ["word", "mi", "class"] for r in records)
    assert [f"{r['word']}\t{r['mi']!r}\t{r['class']}" for r in records] == tsv.splitlines()


def test_top_features_estimator_override(runner, model):
    loaded = load(str(model))
    result = runner.invoke(
        cli, ["top-features", "-m", str(model), "-k", "6", "--estimator", "mle"]
    )
    assert result.exit_code == 0
    settings = dataclasses.replace(loaded.defaults, estimator="mle")
    I = mutual_information(loaded.active_counts, settings)
    index = {w: j for j, w in enumerate(loaded.active_counts.vocabulary)}
    for line in result.stdout.splitlines():
        word, mi, _ = line.split("\t")
        assert parse_number(mi) == float(I[index[word]])


# --- select-features -----------------------------------------------------------------------


def test_select_features_writes_a_smaller_model(runner, model, tmp_path):
    small = tmp_path / "small.nbc"
    result = runner.invoke(cli, ["select-features", "-m", str(model), "-k", "3", "-o", str(small)])
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr == f"select-features: kept 3 of 6 words -> {small}\n"

    info = json.loads(runner.invoke(cli, ["info", "-m", str(small), "--format", "json"]).stdout)
    assert info["vocabulary"] == 3
    assert info["vocabulary_counted"] == 3
    assert info["classes"] == {"china": 3, "japan": 1}  # N_c unchanged
    assert info["selection"] == {
        "criterion": "mutual-information",
        "k": 3,
        "estimator": "posterior-mean",
        "alpha": 1.0,
        "beta": [1.0, 1.0],
        "from_vocabulary": 6,
    }
    assert load(str(small)).counts.vocabulary == ("chinese", "japan", "tokyo")

    # Predicting with it: the kept words' counts are unchanged, V = 3,
    # china T_c = 5 (chinese 5), japan T_c = 3 (chinese 1, japan 1, tokyo 1).
    expected = posterior(
        {
            "china": F(3 + 1, 4 + 2) * F(5 + 1, 5 + 3) ** 3 * F(0 + 1, 5 + 3) ** 2,
            "japan": F(1 + 1, 4 + 2) * F(1 + 1, 3 + 3) ** 5,
        }
    )
    result = predict(runner, small)
    assert result.exit_code == 0 and result.stderr == ""
    source, label, text = result.stdout.removesuffix("\n").split("\t")
    best = max(expected, key=expected.get)
    assert (source, label) == ("-", best)
    assert parse_number(text) == pytest.approx(float(expected[best]), abs=1e-15, rel=0)

    text_info = runner.invoke(cli, ["info", "-m", str(small)]).stdout
    assert "selection    top 3 of 6 words by mutual-information (posterior-mean)\n" in text_info


# --- info ----------------------------------------------------------------------------------


def test_info_json(runner, model):
    result = runner.invoke(cli, ["info", "-m", str(model), "--format", "json"])
    assert result.exit_code == 0 and result.stderr == ""
    info = json.loads(result.stdout)
    assert info == {
        "model": str(model),
        "format": {"format": "nbclass-model", "version": 1, "nbclass_version": __version__},
        "documents": 4,
        "classes": {"china": 3, "japan": 1},
        "tokens": 11,
        "vocabulary": 6,
        "vocabulary_counted": 6,
        "vocabulary_filter": {"min_df": 1, "max_features": None},
        "selection": None,
        "tokenizer": {
            "lowercase": True,
            "token_pattern": r"(?u)\b\w\w+\b",
            "ngram_range": [1, 1],
            "stop_words": 0,
            "stop_words_source": "none",
        },
        "defaults": {
            "model": "multinomial",
            "estimator": "posterior-mean",
            "alpha": 1.0,
            "beta": [1.0, 1.0],
            "tf": "raw",
            "idf": False,
            "norm": "none",
            "prior_fit": False,
            "class_prior": True,
        },
        "fitted_beta": None,
        "ledger": None,
        "calibration": None,
        "typicality": None,
        "choice": None,
        "exit_codes": {"china": 10, "japan": 11},
    }
    assert list(info["classes"]) == ["china", "japan"]


def test_info_text(runner, model):
    result = runner.invoke(cli, ["info", "-m", str(model)])
    assert result.exit_code == 0 and result.stderr == ""
    assert result.stdout.splitlines() == [
        f"model        {model}",
        f"format       nbclass-model version 1 (written by nbclass {__version__})",
        "documents    4",
        "tokens       11",
        "classes      2",
        "  china  3",
        "  japan  1",
        "exit codes   10 china, 11 japan",
        "vocabulary   6 words used of 6 counted (min_df 1, max_features none)",
        r"tokenizer    lowercase true, token_pattern (?u)\b\w\w+\b, ngram_range 1,1, "
        "stop_words none (0 words)",
        "defaults     model multinomial, estimator posterior-mean, alpha 1.0, beta 1.0",
        "typicality   not stored (predict --min-typicality needs fit --typicality)",
    ]


def test_info_shows_the_fitted_beta_of_the_defaults(runner, chinese_corpus, tmp_path):
    path = tmp_path / "default.nbc"
    options = ["fit", str(chinese_corpus), "-o", str(path), "-q", *NAMED]
    assert runner.invoke(cli, options).exit_code == 0
    model = load(str(path))
    beta = resolve_prior(model.active_counts, DEFAULTS).beta[0]
    text = runner.invoke(cli, ["info", "-m", str(path)]).stdout
    assert text.splitlines()[-2:] == [
        "defaults     model complement, estimator posterior-mean, alpha 1.0, "
        f"beta {beta:.4g} fitted, tf log",
        "typicality   not stored (predict --min-typicality needs fit --typicality)",
    ]
    info = json.loads(runner.invoke(cli, ["info", "-m", str(path), "--format", "json"]).stdout)
    assert info["fitted_beta"] == beta and info["defaults"] == DEFAULTS.to_dict()


def test_info_reports_the_vocabulary_filter(runner, chinese_corpus, tmp_path):
    path = tmp_path / "pruned.nbc"
    result = runner.invoke(cli, ["fit", str(chinese_corpus), "-o", str(path), "--min-df", "2"])
    assert result.exit_code == 0
    assert result.stderr.startswith("fit: 4 documents, 2 classes, 1 words")  # only "chinese"
    info = json.loads(runner.invoke(cli, ["info", "-m", str(path), "--format", "json"]).stdout)
    # the 6 words and the 7 pairs counted; "chinese chinese" is in one document only
    assert (info["vocabulary"], info["vocabulary_counted"]) == (1, 13)
    assert info["vocabulary_filter"] == {"min_df": 2, "max_features": None}


# --- errors --------------------------------------------------------------------------------


def fit_error(runner, corpus, tmp_path, *args):
    out = tmp_path / "never.nbc"
    result = runner.invoke(cli, ["fit", str(corpus), "-o", str(out), *args])
    assert not out.exists()
    return result


def test_error_missing_corpus_folder(runner, tmp_path):
    missing = tmp_path / "nope"
    result = fit_error(runner, missing, tmp_path)
    assert_error(result, 1, f"corpus folder {str(missing)!r} does not exist")


def test_error_file_given_as_corpus(runner, tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("Chinese", encoding="utf-8")
    assert_error(fit_error(runner, path, tmp_path), 1, "is a file, not a corpus folder")


def test_error_corpus_without_class_folders(runner, tmp_path):
    root = tmp_path / "flat"
    root.mkdir()
    (root / "doc.txt").write_text("Chinese", encoding="utf-8")
    assert_error(fit_error(runner, root, tmp_path), 1, "no class folders in")


def test_loose_files_at_the_top_of_a_corpus_are_a_warning(runner, chinese_corpus, tmp_path):
    (chinese_corpus / "stray.txt").write_text("Tokyo", encoding="utf-8")
    (chinese_corpus / ".hidden").write_text("Tokyo", encoding="utf-8")  # skipped silently
    out = tmp_path / "m.nbc"
    with cli_warnings():
        result = runner.invoke(cli, ["fit", str(chinese_corpus), "-o", str(out)])
    assert result.exit_code == 0 and result.stdout == ""
    warning, summary = result.stderr.splitlines()
    assert warning == (
        f"Warning: ignoring 1 file(s) at the top of {str(chinese_corpus)!r}: documents belong "
        "in class folders"
    )
    assert summary.startswith("fit: 4 documents, 2 classes, 13 words, ")  # words and pairs


def test_error_empty_corpus_folder(runner, tmp_path):
    root = tmp_path / "empty"
    root.mkdir()
    assert_error(fit_error(runner, root, tmp_path), 1, "no class folders in")


def test_error_one_class_only(runner, tmp_path):
    root = write_corpus(tmp_path / "one", {"china": ["Chinese Beijing"]})
    assert_error(fit_error(runner, root, tmp_path), 1, "only one class folder ('china')")


def test_error_empty_class_folder(runner, tmp_path):
    root = write_corpus(tmp_path / "c", {"china": ["Chinese Beijing"], "japan": ["Tokyo"]})
    (root / "korea").mkdir()
    (root / "korea" / ".hidden").write_text("Seoul", encoding="utf-8")  # skipped: still empty
    assert_error(fit_error(runner, root, tmp_path), 1, "korea", "has no documents")


@pytest.mark.parametrize(
    "texts, args",
    [
        ({"a": [" \t "], "b": ["\n"]}, ()),  # nothing but spaces: no token at the defaults
        ({"a": ["!!"], "b": ["? ."]}, ("--no-symbols",)),  # punctuation, symbols not counted
        ({"a": ["!!"], "b": ["? ."]}, ("--model", "multinomial")),  # a named model's words
    ],
)
def test_error_no_tokens(runner, tmp_path, texts, args):
    root = write_corpus(tmp_path / "c", texts)
    assert_error(fit_error(runner, root, tmp_path, *args), 1, "no tokens found")


def test_punctuation_alone_is_counted_at_the_defaults(runner, tmp_path):
    root = write_corpus(tmp_path / "c", {"a": ["!!"], "b": ["? ."]})
    out = tmp_path / "m.nbc"
    result = runner.invoke(cli, ["fit", str(root), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.exists()


def test_error_min_df_above_every_document_frequency(runner, chinese_corpus, tmp_path):
    line = assert_error(fit_error(runner, chinese_corpus, tmp_path, "--min-df", "5"), 1)
    assert "empty vocabulary after pruning" in line and "--min-df 5" in line


def test_error_predict_missing_model(runner, tmp_path, chinese_corpus):
    missing = tmp_path / "missing.nbc"
    result = runner.invoke(cli, ["predict", "-m", str(missing), str(chinese_corpus)])
    assert_error(result, 1, f"model file {str(missing)!r} does not exist")


def test_error_model_that_is_a_text_file(runner, tmp_path, chinese_corpus):
    text = tmp_path / "model.txt"
    text.write_text("this is not a model\n", encoding="utf-8")
    for command in (["predict", str(chinese_corpus)], ["info"], ["top-features"]):
        result = runner.invoke(cli, [command[0], "-m", str(text), *command[1:]])
        assert_error(result, 1, "not an nbclass model")


def test_error_truncated_model(runner, model, tmp_path):
    cut = tmp_path / "cut.nbc"
    cut.write_bytes(model.read_bytes()[:100])
    assert_error(runner.invoke(cli, ["info", "-m", str(cut)]), 1, "truncated")


def test_error_model_that_is_a_folder(runner, tmp_path):
    assert_error(runner.invoke(cli, ["info", "-m", str(tmp_path)]), 1, "is a folder")


def test_error_bad_token_pattern(runner, chinese_corpus, tmp_path):
    result = fit_error(runner, chinese_corpus, tmp_path, "--token-pattern", "(")
    assert_error(result, 2, "--token-pattern '('", "not a valid regular expression")


def test_error_bad_ngram_range(runner, chinese_corpus, tmp_path):
    result = fit_error(runner, chinese_corpus, tmp_path, "--ngram-range", "2,1")
    assert_error(result, 2, "--ngram-range 2,1")


def test_error_min_df_0(runner, chinese_corpus, tmp_path):
    assert_error(fit_error(runner, chinese_corpus, tmp_path, "--min-df", "0"), 2, "--min-df 0")


def test_error_missing_stop_word_file(runner, chinese_corpus, tmp_path):
    result = fit_error(runner, chinese_corpus, tmp_path, "--stop-words", str(tmp_path / "no"))
    assert_error(result, 2, "cannot read stop-word file")


def test_error_output_folder_missing(runner, chinese_corpus, tmp_path):
    out = tmp_path / "no" / "such" / "folder" / "m.nbc"
    result = runner.invoke(cli, ["fit", str(chinese_corpus), "-o", str(out)])
    assert_error(result, 1, "cannot write model")


# --- help and documentation ----------------------------------------------------------------


def test_every_command_has_help(runner):
    top = runner.invoke(cli, ["--help"])
    assert top.exit_code == 0 and top.stderr == ""
    assert "Exit codes: 0 success, 1 runtime error" in top.stdout
    assert {"fit", "predict", "top-features", "select-features", "info"} <= set(cli.commands)
    for name, command in cli.commands.items():
        assert f"  {name} " in top.stdout
        for flag in ("--help", "-h"):
            result = runner.invoke(cli, [name, flag])
            assert result.exit_code == 0, (name, result.stderr)
            assert result.stderr == ""
            assert f"Usage: cli {name} [OPTIONS]" in result.stdout
            assert command.help and command.help.split("\n")[0].strip()[:30] in result.stdout


def test_version(runner):
    result = runner.invoke(cli, ["--version"])
    assert (result.exit_code, result.stdout) == (0, f"nbclass, version {__version__}\n")


def test_every_command_is_documented_in_the_readme():
    readme = REPO / "README.md"
    if not readme.exists():
        pytest.skip("README.md does not exist yet")
    pages = [readme, *sorted((REPO / "docs").glob("*.md"))]  # the README and its pages
    text = "".join(page.read_text(encoding="utf-8") for page in pages)
    missing = [name for name in cli.commands if f"nbclass {name}" not in text]
    assert missing == []
