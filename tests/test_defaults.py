"""One set of defaults: what the help texts print is what the code does.

Each test reads the real ``nbclass CMD --help`` output (a subprocess), takes the default an
option's help states, and checks it against the constant the code uses
(:data:`nbclass.models.estimators.DEFAULTS`, :mod:`nbclass.defaults`, ...), and, for the
estimator settings, that fitting with the options the help prints writes the very model
file that fitting with no option writes.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess

import pytest
from conftest import DEMO_CORPUS, REPO, nbclass_command

from nbclass.defaults import DEFAULT_FOLDS, DEFAULT_SEED, DEFAULT_VAR_SMOOTHING
from nbclass.models.estimators import AUTO, TABLE_DEFAULTS, EstimatorSettings
from nbclass.models.model import VocabularyFilter
from nbclass.text.tokenizer import DEFAULT_NGRAM_RANGE, DEFAULT_TOKEN_PATTERN


def run(*args, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *map(str, args)], input=stdin, capture_output=True, cwd=REPO,
        timeout=120,
    )  # fmt: skip


def help_of(command: str) -> str:
    result = run(command, "--help")
    assert result.returncode == 0, result.stderr
    return result.stdout.decode()


def option_help(text: str, option: str) -> str:
    """The help of ``option`` (e.g. ``--model``) in a click help page, unwrapped."""
    lines = text.splitlines()
    pattern = re.compile(rf"^  (-\w, )?{re.escape(option)}[ /=\[]|^  (-\w, )?{option}$")
    start = next(i for i, line in enumerate(lines) if pattern.match(line))
    block = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith(" " * 10):  # the next option, or the end of the list
            break
        block.append(line.strip())
    joined = " ".join(part.strip() for part in block)
    return re.sub(r"(\w)- (\w)", r"\1-\2", joined)  # a word broken at its hyphen


def stated_default(text: str, option: str, key: str = "default") -> str:
    found = re.search(rf"\[{key}: (.*)\]$", option_help(text, option))
    assert found, option_help(text, option)
    return found.group(1)


def parse_options(text: str) -> EstimatorSettings:
    """Estimator settings from the options a help text prints (a parser of its own)."""
    words, fields = shlex.split(text), {}
    flags = {
        "--idf": ("idf", True), "--no-idf": ("idf", False),
        "--prior-fit": ("prior_fit", True), "--no-prior-fit": ("prior_fit", False),
        "--class-prior": ("class_prior", True), "--no-class-prior": ("class_prior", False),
    }  # fmt: skip
    while words:
        word = words.pop(0)
        if word in flags:
            name, value = flags[word]
            fields[name] = value
        elif word == "--alpha":
            fields["alpha"] = float(words.pop(0))
        elif word == "--beta":
            values = [float(v) for v in words.pop(0).split(",")]
            fields["beta"] = (values[0], values[-1])
        elif word in ("--model", "--estimator", "--tf", "--norm"):
            fields[word[2:]] = words.pop(0)
        else:
            raise AssertionError(f"unexpected word {word!r} in {text!r}")
    return EstimatorSettings(**fields)


def estimator_defaults(command: str) -> tuple[str, str | None]:
    """(the default of a text model, of a table model or None) stated by --model's help."""
    stated = stated_default(help_of(command), "--model")
    text, _, table = stated.partition("; with --table: ")
    return text, table or None


@pytest.mark.parametrize("command", ["fit", "sync"])
def test_the_estimator_defaults_in_the_help_are_the_constant(command):
    text, table = estimator_defaults(command)
    assert text == f"--model {AUTO}"
    assert parse_options(table) == TABLE_DEFAULTS


def test_cv_states_the_estimator_it_uses(tmp_path):
    text, table = estimator_defaults("cv")
    assert table is None and text == f"--model {AUTO}"
    result = run("cv", DEMO_CORPUS, "--format", "json", "--folds", "2")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["settings"] == AUTO


def test_fitting_with_the_help_defaults_writes_the_same_model(tmp_path):
    text, _ = estimator_defaults("fit")
    plain, stated = tmp_path / "plain.nbc", tmp_path / "stated.nbc"
    assert run("fit", DEMO_CORPUS, "-o", plain, "-q").returncode == 0
    result = run("fit", DEMO_CORPUS, "-o", stated, "-q", *shlex.split(text))
    assert result.returncode == 0, result.stderr
    assert plain.read_bytes() == stated.read_bytes()


def test_a_table_model_fitted_with_the_help_defaults_is_the_same(tmp_path):
    _, table = estimator_defaults("fit")
    rows = tmp_path / "rows.csv"
    rows.write_text(
        "team,size,text\nbilling,3,refund my invoice\nbilling,4,invoice charged twice\n"
        "outage,9,server down again\noutage,8,the site is down\n"
    )
    plain, stated = tmp_path / "plain.nbc", tmp_path / "stated.nbc"
    base = ["fit", "--table", rows, "--label", "team", "-q"]
    assert run(*base, "-o", plain).returncode == 0
    # a table model takes --model, --estimator, --alpha and --beta
    words, taken = shlex.split(table), ("--model", "--estimator", "--alpha", "--beta")
    kept = []
    for option, value in zip(words, words[1:]):
        if option in taken:
            kept += [option, value]
    assert len(kept) == 8
    result = run(*base, "-o", stated, *kept)
    assert result.returncode == 0, result.stderr
    assert plain.read_bytes() == stated.read_bytes()


@pytest.mark.parametrize("command", ["fit", "sync"])
def test_the_tokenizer_and_vocabulary_defaults_in_the_help_are_the_constants(command):
    text = help_of(command)
    assert stated_default(text, "--token-pattern") == DEFAULT_TOKEN_PATTERN
    low, high = stated_default(text, "--ngram-range").split(",")
    assert (int(low), int(high)) == DEFAULT_NGRAM_RANGE
    assert int(stated_default(text, "--min-df")) == VocabularyFilter().min_df
    if command == "fit":
        assert float(stated_default(text, "--var-smoothing")) == DEFAULT_VAR_SMOOTHING


def test_the_cross_validation_defaults_in_the_help_are_the_constants():
    text = help_of("cv")
    assert int(stated_default(text, "--folds")) == DEFAULT_FOLDS
    assert int(stated_default(text, "--seed")) == DEFAULT_SEED


def test_cv_uses_the_defaults_of_fit(tmp_path):
    """cv without --like cross-validates what fit at its defaults does (choose, then
    calibrate, inside each training fold), as does cv --like a model fit chose."""
    model = tmp_path / "defaults.nbc"
    assert run("fit", DEMO_CORPUS, "-o", model, "-q").returncode == 0
    plain = run("cv", DEMO_CORPUS, "--format", "json")
    like = run("cv", DEMO_CORPUS, "--format", "json", "--like", model)
    auto = run("cv", DEMO_CORPUS, "--format", "json", "--model", "auto")
    assert plain.returncode == like.returncode == auto.returncode == 0, plain.stderr
    plain_data, like_data = json.loads(plain.stdout), json.loads(like.stdout)
    assert plain_data["settings"] == like_data["settings"] == AUTO
    assert plain_data["metrics"] == like_data["metrics"] == json.loads(auto.stdout)["metrics"]


def test_evaluate_states_the_number_of_ece_bins_it_uses():
    from nbclass.models.metrics import ECE_BINS

    flat = " ".join(help_of("evaluate").split())
    assert f"expected calibration error ({ECE_BINS} equal-width confidence bins)" in flat
