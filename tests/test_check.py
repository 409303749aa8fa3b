"""nbclass check: the gate, with exact thresholds, and its exit codes."""

from __future__ import annotations

import json
import math
import subprocess

import numpy as np
import pytest
from conftest import DEMO_CORPUS, REPO, nbclass_command

from nbclass.cli.app import cli
from nbclass.evaluation.judging import Check, Evaluation
from nbclass.modelfile.textfile import save
from nbclass.models.model import fit, select_features
from nbclass.reading.corpus import list_corpus

DEMO_TEST = REPO / "corpora" / "demo-test"


def evaluation(correct: list[bool], confidence: float = 0.9) -> Evaluation:
    """Two classes; document i is of class 0 and predicted right when correct[i]."""
    p = [[confidence, 1 - confidence] if ok else [1 - confidence, confidence] for ok in correct]
    return Evaluation.of(["a", "b"], 2, np.zeros(len(correct), dtype=np.int64), np.log(p))


def test_a_drop_equal_to_the_limit_passes_and_a_larger_one_fails():
    baseline = evaluation([True, True, True, False])  # accuracy 3/4
    new = evaluation([True, True, False, False])  # accuracy 2/4: a drop of exactly 0.25
    assert Check(baseline, new, max_drop=0.25).passed
    failed = Check(baseline, new, max_drop=0.2)
    assert not failed.passed
    assert failed.failures[0] == (
        "accuracy fell by 0.2500 (0.7500 -> 0.5000), more than --max-drop 0.2"
    )
    assert Check(new, baseline, max_drop=0.0).passed  # better is always fine


def test_max_ece():
    new = evaluation([True, True, False, False], confidence=0.9)  # ECE |0.5 − 0.9| = 0.4
    assert new.ece == pytest.approx(0.4, abs=1e-15)
    assert Check(new, new, 0.0, max_ece=0.4).passed
    assert Check(new, new, 0.0, max_ece=0.39).failures == ["ece 0.4000 is above --max-ece 0.39"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("check")
    full = fit(list_corpus(str(DEMO_CORPUS)))
    save(full, str(root / "full.nbc"))
    save(select_features(full, 50), str(root / "small.nbc"))
    return root / "full.nbc", root / "small.nbc"


def run(*args):
    return subprocess.run(
        [*nbclass_command(), *map(str, args)], capture_output=True, text=True, cwd=REPO, timeout=60
    )


def test_check_passes_and_fails_with_exit_codes(models):
    full, small = models
    same = run("check", "-m", full, "--baseline", full, DEMO_TEST)
    assert same.returncode == 0, same.stderr
    assert "passed: the new model may replace the baseline" in same.stdout
    worse = run("check", "-m", small, "--baseline", full, DEMO_TEST, "--max-drop", "0.01")
    assert worse.returncode == 3
    assert "FAILED: keep the baseline" in worse.stdout
    assert worse.stderr == ""
    better = run("check", "-m", full, "--baseline", small, DEMO_TEST, "--max-drop", "0.01")
    assert better.returncode == 0


def test_check_json_is_both_evaluations(models, runner):
    full, small = models
    result = runner.invoke(
        cli,
        ["check", "-m", str(small), "--baseline", str(full), str(DEMO_TEST), "--format", "json"],
    )
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    old = json.loads(
        runner.invoke(
            cli, ["evaluate", "-m", str(full), str(DEMO_TEST), "--format", "json"]
        ).stdout
    )
    new = json.loads(
        runner.invoke(
            cli, ["evaluate", "-m", str(small), str(DEMO_TEST), "--format", "json"]
        ).stdout
    )
    for name in ("accuracy", "macro_f1", "micro_f1", "log_loss", "brier_score", "ece"):
        assert data["metrics"][name]["baseline"] == old[name]
        assert data["metrics"][name]["new"] == new[name]
        assert data["metrics"][name]["change"] == new[name] - old[name]
    assert data["passed"] is False and data["max_drop"] == 0.0
    assert [f.split(" ")[0] for f in data["failures"]] == ["accuracy", "macro_f1"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--max-drop", "-0.1"], "--max-drop -0.1 is out of range: give a number from 0 to 1"),
        (["--max-ece", "2"], "--max-ece 2.0 is out of range: give a number from 0 to 1"),
    ],
)
def test_check_usage_errors(models, runner, args, message):
    full, _ = models
    result = runner.invoke(
        cli, ["check", "-m", str(full), "--baseline", str(full), str(DEMO_TEST), *args]
    )
    assert result.exit_code == 2
    assert result.stderr == f"Error: {message}\n"


def test_check_text_fits_80_columns(models, runner):
    full, small = models
    result = runner.invoke(
        cli,
        ["check", "-m", str(small), "--baseline", str(full), str(DEMO_TEST), "--max-ece", "0.1"],
    )
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    row = next(line for line in lines if line.lstrip().startswith("ECE"))
    assert row.split()[-2:] == ["0.1", "FAIL"]
    assert not math.isnan(float(row.split()[1]))
