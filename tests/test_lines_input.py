"""evaluate, cv and check read labelled lines (--lines FILE or -), as fit --lines does.

The demo corpus is written twice: as a folder with one file per document, named after
its line number, and as one file of labelled lines (tab-separated, or fastText's
``__label__``), class after class. Nine blank lines (skipped) come first, so every
document's line number has two digits: the files' paths then sort as the lines' sources
``FILE:N`` do, the documents come in the same order, and cv deals both into the same
folds. Every command run on the lines must print exactly what it prints on the folder,
to the last bit.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import DEMO_CORPUS, REPO, nbclass_command

METRICS = {"accuracy", "macro_f1", "micro_f1", "log_loss", "brier_score", "ece"}


def run(*args, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *map(str, args)], input=stdin, capture_output=True, cwd=REPO,
        timeout=120,
    )  # fmt: skip


BLANK = 9


def demo_documents() -> list[tuple[str, str]]:
    """(class, one-line text) of every demo document, class after class."""
    return [
        (folder.name, " ".join(path.read_text().split()))
        for folder in sorted(DEMO_CORPUS.iterdir())
        for path in sorted(folder.iterdir())
    ]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("lines")
    rows = demo_documents()
    folder = root / "folder"
    assert len(rows) + BLANK < 100
    for n, (label, text) in enumerate(rows, start=BLANK + 1):
        (folder / label).mkdir(parents=True, exist_ok=True)
        (folder / label / str(n)).write_text(text)
    tsv, fasttext = root / "docs.tsv", root / "docs.txt"
    tsv.write_text("\n" * BLANK + "".join(f"{label}\t{text}\n" for label, text in rows))
    fasttext.write_text(
        "\n" * BLANK + "".join(f"__label__{label} {text}\n" for label, text in rows)
    )
    model = root / "model.nbc"
    assert run("fit", DEMO_CORPUS, "-o", model, "-q").returncode == 0
    baseline = root / "baseline.nbc"
    assert run("fit", DEMO_CORPUS, "-o", baseline, "-q", "--model", "bernoulli").returncode == 0
    return {"folder": folder, "tsv": tsv, "fasttext": fasttext, "model": model,
            "baseline": baseline, "n": len(rows)}  # fmt: skip


def json_of(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def without(data: dict, key: str) -> dict:
    return {k: v for k, v in data.items() if k != key}


@pytest.mark.parametrize("kind", ["tsv", "fasttext", "stdin"])
def test_evaluate_on_lines_equals_evaluate_on_the_folder(data, kind):
    folder = json_of(run("evaluate", "-m", data["model"], data["folder"], "--format", "json"))
    if kind == "stdin":
        lines = run("evaluate", "-m", data["model"], "--lines", "-", "--format", "json",
                    stdin=data["tsv"].read_bytes())  # fmt: skip
    else:
        lines = run("evaluate", "-m", data["model"], "--lines", data[kind], "--format", "json")
    lines = json_of(lines)
    assert lines["test_dir"] == ("-" if kind == "stdin" else str(data[kind]))
    assert without(lines, "test_dir") == without(folder, "test_dir")
    assert lines["documents"] == data["n"] and METRICS <= set(lines)


def test_cv_on_lines_equals_cv_on_the_folder(data):
    folder = json_of(run("cv", data["folder"], "--folds", "3", "--format", "json"))
    lines = json_of(run("cv", "--lines", data["fasttext"], "--folds", "3", "--format", "json"))
    assert lines["corpus"] == str(data["fasttext"])
    assert without(lines, "corpus") == without(folder, "corpus")
    assert set(lines["metrics"]) == METRICS and lines["documents"] == data["n"]
    piped = run("cv", "--lines", "-", "--folds", "3", "--format", "json",
                stdin=data["tsv"].read_bytes())  # fmt: skip
    assert without(json_of(piped), "corpus") == without(folder, "corpus")


def test_check_on_lines_equals_check_on_the_folder(data):
    both = ["-m", data["model"], "--baseline", data["baseline"], "--format", "json"]
    folder = json_of(run("check", *both, data["folder"]))
    lines = json_of(run("check", *both, "--lines", data["tsv"]))
    assert without(lines, "test_dir") == without(folder, "test_dir")
    assert set(lines["metrics"]) == METRICS


def test_the_text_reports_show_log_loss_and_ece(data):
    for args in (
        ["evaluate", "-m", data["model"], "--lines", data["tsv"]],
        ["cv", "--lines", data["tsv"], "--folds", "3"],
        ["check", "-m", data["model"], "--baseline", data["baseline"], "--lines", data["tsv"]],
    ):
        result = run(*args)
        assert result.returncode == 0, result.stderr
        text = result.stdout.decode()
        assert "log loss" in text and "ECE" in text
        flat = " ".join(text.split())  # the title wraps
        assert f"on {data['tsv']}:" in flat or flat.startswith(f"{data['tsv']}:")


@pytest.mark.parametrize("command", ["evaluate", "cv", "check"])
def test_a_folder_and_lines_together_or_neither_is_a_usage_error(data, command):
    prefix = {
        "evaluate": ["evaluate", "-m", data["model"]],
        "cv": ["cv"],
        "check": ["check", "-m", data["model"], "--baseline", data["baseline"]],
    }[command]
    both = run(*prefix, data["folder"], "--lines", data["tsv"])
    neither = run(*prefix)
    for result in (both, neither):
        assert result.returncode == 2
        lines = result.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: give a ")
        assert "--lines FILE" in lines[0]


def test_an_unlabelled_line_is_a_data_error_naming_it(data, tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("billing\tmy invoice\nno label here\n")
    result = run("evaluate", "-m", data["model"], "--lines", bad)
    assert result.returncode == 1
    assert result.stderr.decode() == (
        f"Error: line {bad}:2 has no label: write LABEL<TAB>TEXT or __label__LABEL TEXT\n"
    )


def test_cv_on_lines_of_one_class_is_refused(tmp_path):
    one = tmp_path / "one.tsv"
    one.write_text("billing\tmy invoice\nbilling\trefund please\n")
    result = run("cv", "--lines", one)
    assert result.returncode == 1
    assert result.stderr.decode().startswith("Error: the lines have only one class ('billing')")


def test_check_applies_every_estimator_option_as_evaluate_does(data):
    """--tf, --idf, --norm, --prior-fit and --class-prior reach both models of check."""
    options = ["--model", "multinomial", "--beta", "1", "--tf", "log", "--no-class-prior"]
    evaluated = json_of(
        run("evaluate", "-m", data["model"], "--lines", data["tsv"], "--format", "json", *options)
    )
    checked = json_of(
        run("check", "-m", data["model"], "--baseline", data["model"], "--lines", data["tsv"],
            "--format", "json", *options)  # fmt: skip
    )
    assert {k: m["new"] for k, m in checked["metrics"].items()} == {
        k: evaluated[k] for k in METRICS
    }
    default = json_of(run("evaluate", "-m", data["model"], "--lines", data["tsv"], "--format",
                          "json", "--model", "multinomial", "--beta", "1"))  # fmt: skip
    assert default["log_loss"] != evaluated["log_loss"]  # --tf log matters here
