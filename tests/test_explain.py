"""predict --explain, abstention, log evidence and --exit-code.

Expected values are rebuilt from the "Chinese Beijing" counts (see tests/test_cli.py's
docstring): china N_c 3, T_c 8 (chinese 5, beijing 1, macao 1, shanghai 1); japan N_c 1,
T_c 3 (chinese 1, japan 1, tokyo 1); V = 6.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from fractions import Fraction as F

import numpy as np
import pytest
from conftest import (
    CHINESE,
    CHINESE_TEST,
    DEMO_CORPUS,
    DEMO_DOCS,
    REPO,
    nbclass_command,
    write_corpus,
)

from nbclass.cli.app import cli
from nbclass.errors import UsageError
from nbclass.modelfile.textfile import save
from nbclass.models.abstain import Abstention
from nbclass.models.estimators import EstimatorSettings
from nbclass.models.explain import explanations, extras, score_batch
from nbclass.models.model import Classifier, fit
from nbclass.reading.corpus import list_corpus

PLAIN = EstimatorSettings()  # the plain multinomial model of the hand-computed fractions

SETTINGS = [
    EstimatorSettings(),
    EstimatorSettings(model="bernoulli"),
    EstimatorSettings(estimator="map", alpha=2.0, beta=(2.0, 2.0)),
    EstimatorSettings(model="bernoulli", beta=(2.0, 3.0)),
]


@pytest.fixture
def model_path(tmp_path):
    path = tmp_path / "m.nbc"
    # The plain multinomial model, whose fractions the tests below compute by hand.
    chinese = list_corpus(str(write_corpus(tmp_path / "c", CHINESE)))
    save(fit(chinese, defaults=EstimatorSettings()), str(path))
    return path


def predict(runner, model_path, *args, input=CHINESE_TEST):
    return runner.invoke(cli, ["predict", "-m", str(model_path), *map(str, args)], input=input)


# --- contributions ---------------------------------------------------------------------------


def test_contribution_by_hand(tmp_path):
    clf = Classifier(fit(list_corpus(str(write_corpus(tmp_path / "c", CHINESE)))), PLAIN)
    scored = score_batch(clf, [("-", CHINESE_TEST)])
    (explanation,) = explanations(clf, scored, 3)
    assert explanation["versus"] == "japan"
    words = {w: (count, value) for w, count, value in explanation["words"]}
    # chinese, x = 3: 3 (log θ_chinese,china − log θ_chinese,japan) = 3 log((6/14) / (2/9))
    assert words["chinese"][0] == 3
    assert words["chinese"][1] == pytest.approx(3 * math.log(F(6, 14) / F(2, 9)), rel=1e-14)
    # tokyo and japan: log((1/14) / (2/9)) each, negative (they argue for japan)
    assert [w for w, _, _ in explanation["words"]] == ["chinese", "japan", "tokyo"]
    assert words["japan"][1] == pytest.approx(math.log(F(1, 14) / F(2, 9)), rel=1e-14)
    # π: (3 + 1) / 6 against (1 + 1) / 6
    assert explanation["bias"] == pytest.approx(math.log(2), rel=1e-14)


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: f"{s.model}-{s.estimator}-{s.beta}")
def test_contributions_add_up_to_the_log_odds(settings):
    model = fit(list_corpus(str(DEMO_CORPUS)))
    clf = Classifier(model, settings)
    texts = [p.read_text() for p in sorted(DEMO_DOCS.iterdir())] + [
        "refund my password since the outage",
        "",
        "the the the invoice invoice",
    ]
    scored = score_batch(clf, [(str(i), t) for i, t in enumerate(texts)])
    order = np.argsort(-scored.log_proba, axis=1, kind="stable")
    for a, b in (
        (order[:, 0], order[:, 1]),
        (order[:, 1], order[:, 2]),
        (order[:, 2], order[:, 0]),
    ):
        total = np.asarray(clf.scorer.contributions(scored.X, a, b).sum(axis=1)).ravel()
        total += clf.scorer.bias_difference(a, b)
        rows = np.arange(len(texts))
        log_odds = scored.jll[rows, a] - scored.jll[rows, b]
        np.testing.assert_allclose(total, log_odds, rtol=1e-12, atol=1e-12)
    for record in explanations(clf, scored, 1000):
        value = sum(v for _, _, v in record["words"]) + record["bias"]
        assert value == pytest.approx(record["log_odds"], rel=1e-12, abs=1e-12)
        values = [v for _, _, v in record["words"]]
        assert values == sorted(values, reverse=True)


def test_explain_tsv_and_jsonl(runner, model_path):
    result = predict(runner, model_path, "--explain", 2)
    assert result.exit_code == 0, result.output
    cells = result.stdout.rstrip("\n").split("\t")
    assert cells[:2] == ["-", "china"] and cells[3] == "japan"
    assert cells[4] == "chinese" and float(cells[5]) == pytest.approx(3 * math.log(F(27, 14)))
    assert cells[6] == "japan" and len(cells) == 8
    record = json.loads(predict(runner, model_path, "--explain", 1, "--format", "jsonl").stdout)
    assert record["explanation"]["versus"] == "japan"
    assert [w["word"] for w in record["explanation"]["words"]] == ["chinese"]
    assert record["explanation"]["words"][0]["count"] == 3
    p = record["probabilities"]
    assert record["explanation"]["log_odds"] == pytest.approx(math.log(p["china"] / p["japan"]))


# --- log evidence ----------------------------------------------------------------------------


def test_log_evidence_by_hand(runner, model_path):
    def pi(N_c):
        return F(N_c + 1, 4 + 2)

    def theta(T_jc, T_c):
        return F(T_jc + 1, T_c + 6)

    evidence = pi(3) * theta(5, 8) ** 3 * theta(0, 8) ** 2 + pi(1) * theta(1, 3) ** 5
    for args in ((), ("--explain", 1)):  # one-document path, then the batch path
        record = json.loads(predict(runner, model_path, "--format", "jsonl", *args).stdout)
        assert record["log_evidence"] == pytest.approx(math.log(evidence), rel=1e-14)


# --- abstention ----------------------------------------------------------------------------


def test_the_default_rule_gives_the_reasons_of_the_full_test():
    """With no threshold given, a batch's reasons are found without testing each row;
    they are what Abstention.reason gives (a threshold that never fires forces it)."""
    clf = Classifier(fit(list_corpus(str(DEMO_CORPUS))))
    texts = ["refund my card", "", "zzzz qqqq", "the login page returns 503", "\n"]
    scored = score_batch(clf, [(str(i), t) for i, t in enumerate(texts)])
    default = [e["reason"] for e in extras(clf, scored, Abstention(), evidence=False)]
    full = extras(clf, scored, Abstention(min_probability=0.0), evidence=False)
    assert default == [e["reason"] for e in full]
    assert default == [None, "no-known-words", "no-known-words", None, "no-known-words"]
    assert extras(clf, scored, Abstention(no_known=False), evidence=False) is None


def test_abstention_reasons_in_order():
    a = Abstention(min_probability=0.9, min_margin=0.5, min_known_tokens=2, min_known_share=0.5)
    log = [math.log(0.6), math.log(0.3), math.log(0.1)]
    assert a.reason(log, known=1, tokens=1) == "few-known-words"  # fewer than 2 known
    assert a.reason(log, known=2, tokens=5) == "few-known-words"  # 40 % < 50 %
    assert a.reason(log, known=0, tokens=0) == "no-known-words"  # before any threshold
    assert Abstention().reason(log, known=0, tokens=4) == "no-known-words"  # the default
    assert Abstention(no_known=False).reason(log, known=0, tokens=4) is None  # --min-known 0
    assert Abstention.from_options(None, None, ("0",)).no_known is False
    assert Abstention.from_options(None, None, ("0%",)).no_known is True
    assert a.reason(log, known=3, tokens=5) == "low-probability"
    assert Abstention(min_margin=0.5).reason(log, 3, 5) == "low-margin"  # 0.6 − 0.3 < 0.5
    assert Abstention(min_margin=0.3).reason(log, 3, 5) is None
    assert Abstention(min_probability=0.6).reason(log, 3, 5) is None
    assert a.reason([-math.inf] * 3, 0, 0) is None  # no label already


@pytest.mark.parametrize(
    "args, message",
    [
        ((1.5, None, ()), "--min-probability 1.5 is out of range: give a number from 0 to 1"),
        ((None, -0.1, ()), "--min-margin -0.1 is out of range: give a number from 0 to 1"),
        ((None, None, ("lots",)), "--min-known 'lots' must be a whole number"),
        ((None, None, ("150%",)), "--min-known '150%'"),
        ((None, None, ("-3",)), "--min-known '-3'"),
    ],
)
def test_abstention_options_are_validated(args, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        Abstention.from_options(*args)


def test_unsure_documents_in_tsv_and_jsonl(runner, model_path):
    text = "Chinese Tokyo\nChinese Chinese Chinese Tokyo Japan\nChinese Seoul Busan Daegu\n"
    args = ("--lines", "--min-probability", 0.58, "--min-known", "50%")
    result = predict(runner, model_path, *args, "--unsure-label", "?", input=text)
    assert result.exit_code == 0, result.output
    assert [line.split("\t")[1] for line in result.stdout.splitlines()] == ["?", "china", "?"]
    result = predict(runner, model_path, *args, "--format", "jsonl", input=text)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["label"] for r in records] == ["unsure", "china", "unsure"]
    assert [r["reason"] for r in records] == ["low-probability", None, "few-known-words"]
    # Chinese Tokyo: p(china) = π θ_chinese θ_tokyo normalised, 0.554 < 0.58 (CHINESE_TEST: 0.597)
    china = F(4, 6) * F(6, 14) * F(1, 14)
    japan = F(2, 6) * F(2, 9) * F(2, 9)
    assert records[0]["probability"] == pytest.approx(float(china / (china + japan)), rel=1e-14)


def test_an_unsure_label_that_is_a_class_is_refused(runner, model_path):
    result = predict(runner, model_path, "--min-probability", 0.5, "--unsure-label", "japan")
    assert result.exit_code == 2
    assert "--unsure-label 'japan' is a class of the model" in result.stderr


@pytest.mark.parametrize(
    "extra",
    [
        ("--min-probability", "0.95"),
        ("--min-margin", "0.99"),
        ("--min-known", "60%"),
        ("--min-known", "4"),
        ("--estimator", "mle", "--min-probability", "0.5"),
        ("--model", "bernoulli", "--min-margin", "0.5"),
    ],
)
def test_one_document_path_and_batch_path_agree(runner, model_path, tmp_path, extra):
    texts = [CHINESE_TEST, "Chinese Tokyo", "Tokyo Japan Osaka", "", "Seoul", "Chinese Macao x y"]
    for i, text in enumerate(texts):
        folder = tmp_path / f"doc{i}"
        folder.mkdir()
        (folder / "d.txt").write_text(text)
        one = runner.invoke(
            cli,
            ["predict", "-m", str(model_path), str(folder / "d.txt"), "--format", "jsonl", *extra],
        )
        batch = runner.invoke(
            cli, ["predict", "-m", str(model_path), str(folder), "--format", "jsonl", *extra]
        )
        assert one.exit_code == batch.exit_code == 0
        quick, full = json.loads(one.stdout), json.loads(batch.stdout)
        assert list(quick) == list(full)
        for key in ("source", "label", "reason"):
            assert quick[key] == full[key]
        assert list(quick["probabilities"]) == list(full["probabilities"])
        for a, b in zip(quick["probabilities"].values(), full["probabilities"].values()):
            assert a == pytest.approx(b, rel=1e-12, abs=1e-300)
        if full["log_evidence"] is None:
            assert quick["log_evidence"] is None
        else:
            assert quick["log_evidence"] == pytest.approx(full["log_evidence"], rel=1e-12)
        tsv_one = runner.invoke(
            cli, ["predict", "-m", str(model_path), str(folder / "d.txt"), *extra]
        )
        tsv_batch = runner.invoke(cli, ["predict", "-m", str(model_path), str(folder), *extra])
        assert tsv_one.stdout.split("\t")[:2] == tsv_batch.stdout.split("\t")[:2]


# --- exit codes, through real processes ------------------------------------------------------


def run(*args, input: bytes | None = None, cwd=REPO):
    return subprocess.run(
        [*nbclass_command(), *map(str, args)],
        input=input,
        capture_output=True,
        cwd=cwd,
        timeout=60,
    )


def test_exit_code_names_the_class(model_path):
    ok = run("predict", "-m", model_path, "--exit-code", input=CHINESE_TEST.encode())
    assert ok.returncode == 10  # china, the first class
    assert ok.stdout.decode().startswith("-\tchina\t")
    japan = run("predict", "-m", model_path, "--exit-code", input=b"Tokyo Japan")
    assert japan.returncode == 11
    unsure = run(
        "predict", "-m", model_path, "--exit-code", "--min-probability", "0.99", input=b"Chinese"
    )
    assert unsure.returncode == 9
    assert unsure.stdout.decode().split("\t")[1] == "unsure"
    explained = run(
        "predict", "-m", model_path, "--exit-code", "--explain", "2", input=b"Tokyo Japan"
    )
    assert explained.returncode == 11
    impossible = run(
        "predict", "-m", model_path, "--exit-code", "--estimator", "mle", input=b"Beijing Tokyo"
    )
    assert impossible.returncode == 9


def test_exit_code_keeps_1_and_2_for_errors(model_path, tmp_path):
    missing = run("predict", "-m", tmp_path / "nope.nbc", "--exit-code", input=b"x")
    assert missing.returncode == 1
    lines = run("predict", "-m", model_path, "--exit-code", "--lines", input=b"a\nb\n")
    assert lines.returncode == 2
    assert b"--exit-code needs exactly one document" in lines.stderr
    folder = run("predict", "-m", model_path, "--exit-code", DEMO_DOCS)
    assert folder.returncode == 2


def test_exit_code_refuses_more_than_115_classes(tmp_path):
    corpus = write_corpus(
        tmp_path / "many", {f"c{i:03d}": [f"word{i} common"] for i in range(116)}
    )
    model = tmp_path / "many.nbc"
    save(fit(list_corpus(str(corpus))), str(model))
    result = run("predict", "-m", model, "--exit-code", input=b"word3")
    assert result.returncode == 2
    assert b"--exit-code can name at most 115 classes" in result.stderr
    assert run("predict", "-m", model, input=b"word3").returncode == 0
    fewer = write_corpus(
        tmp_path / "fewer", {f"c{i:03d}": [f"word{i} common"] for i in range(115)}
    )
    save(fit(list_corpus(str(fewer))), str(model))
    assert run("predict", "-m", model, "--exit-code", input=b"word114").returncode == 124


def test_the_documented_case_script_runs_in_a_real_shell(tmp_path):
    text = (REPO / "docs" / "scripts.md").read_text(encoding="utf-8")
    (script,) = [b for b in re.findall(r"```sh\n(.*?)```", text, flags=re.S) if "case $?" in b]
    (tmp_path / "route.sh").write_text(script)
    save(fit(list_corpus(str(DEMO_CORPUS))), str(tmp_path / "model.nbc"))
    (tmp_path / "vague.txt").write_text("hello, a quick question about something")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nbclass").write_text(f'#!/bin/sh\nexec {" ".join(nbclass_command())} "$@"\n')
    (bin_dir / "nbclass").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    def route(path):
        return subprocess.run(
            ["sh", "route.sh", str(path)], cwd=tmp_path, env=env, capture_output=True, text=True
        )

    assert route(DEMO_DOCS / "ticket-1.txt").stdout == f"{DEMO_DOCS / 'ticket-1.txt'} -> billing\n"
    assert route(DEMO_DOCS / "ticket-2.txt").stdout.endswith(" -> operations\n")
    assert route(DEMO_DOCS / "ticket-3.txt").stdout.endswith(" -> accounts\n")
    assert route("vague.txt").stdout == "vague.txt -> triage\n"
    failed = route("missing.txt")
    assert failed.returncode == 1 and failed.stdout == ""
    assert "route.sh: nbclass failed on missing.txt" in failed.stderr


def test_abstention_and_exit_code_stay_on_the_numpy_free_path(model_path):
    code = (
        "import sys, io\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(b'Chinese Tokyo'))\n"
        "from nbclass.cli.app import main\n"
        "try:\n"
        f"    main(['predict', '-m', {str(model_path)!r}, '--min-probability', '0.9',\n"
        "          '--min-known', '1', '--exit-code', '--format', 'jsonl'])\n"
        "except SystemExit as exc:\n"
        "    print(exc.code)\n"
        "print(sorted(m for m in ('numpy', 'scipy', 'joblib', 'rich') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    lines = result.stdout.splitlines()
    assert json.loads(lines[0])["reason"] == "low-probability"
    assert lines[1:] == ["9", "[]"]
