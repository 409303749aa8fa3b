"""The command line on tables: fit --table, predict --table, top-features, info, errors;
through CliRunner and through a real subprocess on real files."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import REPO, nbclass_command
from test_cli import assert_error, cli_warnings, parse_number

from nbclass.cli.app import cli

DEMO = REPO / "corpora" / "table-demo.csv"
NEW = REPO / "corpora" / "table-new.csv"


@pytest.fixture
def table_model(runner, tmp_path):
    path = tmp_path / "table.nbc"
    result = runner.invoke(
        cli,
        ["fit", "--table", str(DEMO), "--label", "team", "--column-types", "ticket=ignore",
         "-o", str(path)],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith(
        "fit: 20 rows, 2 classes, 4 columns (2 numeric, 1 categorical, 1 text), "
    )
    return path


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_the_three_formats_predict_the_same(runner, table_model, tmp_path):
    csv = write(
        tmp_path / "new.csv",
        'id,plan,amount,latency_ms,message\na,pro,49,115,"charged twice, refund"\n'
        "b,trial,,2600,dashboard very slow\nc,team,,,\n",
    )
    tsv = write(
        tmp_path / "new.tsv",
        "id\tplan\tamount\tlatency_ms\tmessage\na\tpro\t49\t115\tcharged twice, refund\n"
        "b\ttrial\t\t2600\tdashboard very slow\nc\tteam\tNA\tNA\tNA\n",
    )
    jsonl = write(
        tmp_path / "new.jsonl",
        '{"id": "a", "plan": "pro", "amount": 49, "latency_ms": 115, '
        '"message": "charged twice, refund"}\n'
        '{"id": "b", "plan": "trial", "amount": null, "latency_ms": 2600, '
        '"message": "dashboard very slow"}\n'
        '{"id": "c", "plan": "team", "amount": null, "message": null}\n',
    )
    outputs = []
    for path in (csv, tsv, jsonl):
        result = runner.invoke(
            cli, ["predict", "-m", str(table_model), "--table", str(path), "--id", "id"]
        )
        assert result.exit_code == 0, result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1] == outputs[2]
    lines = [line.split("\t") for line in outputs[0].splitlines()]
    assert [(s, label) for s, label, _ in lines] == [("a", "billing"), ("b", "infra"),
                                                     ("c", "infra")]  # fmt: skip
    for _, _, p in lines:
        assert 0.5 < parse_number(p) <= 1.0


def test_sources_are_file_and_row_and_jsonl_output(runner, table_model):
    result = runner.invoke(
        cli, ["predict", "-m", str(table_model), "--table", str(NEW), "--format", "jsonl"]
    )
    assert result.exit_code == 0
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["source"] for r in records] == [f"{NEW}:1", f"{NEW}:2", f"{NEW}:3"]
    for r in records:
        assert sum(r["probabilities"].values()) == pytest.approx(1.0, abs=1e-12)


def test_stdin_needs_a_format(runner, table_model):
    text = NEW.read_text()
    result = runner.invoke(
        cli, ["predict", "-m", str(table_model), "--table", "-", "--table-format", "csv"],
        input=text,
    )  # fmt: skip
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0].startswith("-:1\tbilling\t")
    result = runner.invoke(cli, ["predict", "-m", str(table_model), "--table", "-"], input=text)
    assert_error(result, 2, "--table-format")


def test_an_absent_model_column_is_warned_about(runner, table_model, tmp_path):
    path = write(tmp_path / "few.csv", "message\nrefund my invoice\n")
    with cli_warnings():
        result = runner.invoke(cli, ["predict", "-m", str(table_model), "--table", str(path)])
    assert result.exit_code == 0
    assert result.stdout.startswith(f"{path}:1\tbilling\t")
    assert result.stderr == (
        f"Warning: '{path}' has no column 'plan', 'amount', 'latency_ms': the model's factor "
        "for it is left out of every row\n"
    )


def test_top_features_and_info_of_a_table_model(runner, table_model):
    result = runner.invoke(cli, ["top-features", "-m", str(table_model), "-k", "3"])
    assert result.exit_code == 0
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert rows[0][0] == "latency_ms" and rows[0][2:] == ["infra", "numeric"]
    assert [r[3] for r in rows[1:]] == ["text", "text"]
    result = runner.invoke(
        cli, ["top-features", "-m", str(table_model), "-k", "1", "--format", "jsonl"]
    )
    assert set(json.loads(result.stdout)) == {"feature", "mi", "class", "type"}
    result = runner.invoke(cli, ["info", "-m", str(table_model), "--format", "json"])
    info = json.loads(result.stdout)
    assert info["rows"] == 20 and info["label"] == "team" and info["ignored"] == ["ticket"]
    assert [c["type"] for c in info["columns"]] == ["categorical", "numeric", "numeric", "text"]
    assert info["format"]["kind"] == "table"


def test_errors_are_one_line(runner, table_model, tmp_path):
    out = str(tmp_path / "x.nbc")
    assert_error(
        runner.invoke(cli, ["fit", "--table", str(DEMO), "-o", out]), 2, "--table needs --label"
    )
    assert_error(runner.invoke(cli, ["fit", "-o", out]), 2, "give a CORPUS_DIR")
    assert_error(
        runner.invoke(cli, ["fit", "--table", str(DEMO), "--label", "tema", "-o", out]),
        2,
        "--label 'tema' is not a column",
    )
    assert_error(
        runner.invoke(
            cli,
            [
                "fit",
                "--table",
                str(DEMO),
                "--label",
                "team",
                "--column-types",
                "plan=num",
                "-o",
                out,
            ],
        ),  # fmt: skip
        2,
        "unknown type 'num'",
    )
    assert_error(
        runner.invoke(
            cli,
            [
                "fit",
                "--table",
                str(DEMO),
                "--label",
                "team",
                "--column-types",
                "message=numeric",
                "-o",
                out,
            ],
        ),  # fmt: skip
        1,
        "row 1: column 'message' holds",
    )
    assert_error(
        runner.invoke(cli, ["predict", "-m", str(table_model), "corpora/demo-docs"]),
        1,
        "is a table model",
        "--table FILE",
    )
    assert_error(
        runner.invoke(cli, ["select-features", "-m", str(table_model), "-k", "2", "-o", out]),
        1,
        "is a table model",
    )
    assert_error(
        runner.invoke(
            cli, ["predict", "-m", str(table_model), "--table", str(NEW), "--id", "nope"]
        ),
        2,
        "--id 'nope' is not a column",
    )
    text_model = tmp_path / "text.nbc"
    runner.invoke(cli, ["fit", str(REPO / "corpora" / "demo"), "-o", str(text_model), "-q"])
    assert_error(
        runner.invoke(cli, ["predict", "-m", str(text_model), "--table", str(NEW)]),
        1,
        "is a text model, not a table model",
    )


def test_end_to_end_in_a_real_process(tmp_path):
    table = write(
        tmp_path / "train.jsonl",
        "\n".join(
            json.dumps({"size": s, "colour": c, "note": n, "kind": k})
            for s, c, n, k in [
                (3.1, "red", "late and torn", "bad"),
                (2.9, "red", None, "bad"),
                (None, "blue", "late again", "bad"),
                (7.0, "blue", "all fine thanks", "good"),
                (7.4, None, "fine", "good"),
                (6.8, "green", "thanks a lot", "good"),
            ]
        )
        + "\n",
    )
    model = tmp_path / "m.nbc"
    fit = subprocess.run(
        [*nbclass_command(), "fit", "--table", str(table), "--label", "kind", "-o", str(model)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert fit.returncode == 0, fit.stderr
    new = write(tmp_path / "new.csv", "colour,size,note\nred,3,\npurple,,thanks\n")
    predict = subprocess.run(
        [*nbclass_command(), "predict", "-m", str(model), "--table", str(new)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert predict.returncode == 0, predict.stderr
    assert predict.stderr == ""
    rows = [line.split("\t") for line in predict.stdout.splitlines()]
    assert [r[:2] for r in rows] == [[f"{new}:1", "bad"], [f"{new}:2", "good"]]
    bad = subprocess.run(
        [*nbclass_command(), "top-features", "-m", str(table)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1
    assert bad.stderr.startswith("Error: ") and "Traceback" not in bad.stderr


# --- adding rows: fit --table --update and merge -------------------------------------------


def split_demo(tmp_path):
    """The demo table as two halves with both classes, plus a half of one class only."""
    header, *rows = DEMO.read_text(encoding="utf-8").splitlines()
    first, second = rows[0::2], rows[1::2]
    one_class = [r for r in second if r.endswith(",billing")]
    a = write(tmp_path / "a.csv", "\n".join([header, *first]) + "\n")
    b = write(tmp_path / "b.csv", "\n".join([header, *second]) + "\n")
    both = write(tmp_path / "ab.csv", "\n".join([header, *first, *second]) + "\n")
    billing = write(tmp_path / "billing.csv", "\n".join([header, *one_class]) + "\n")
    return a, b, both, billing


def fit_table_file(runner, table, path):
    args = ["fit", "--table", str(table), "--label", "team", "--column-types", "ticket=ignore"]
    result = runner.invoke(cli, [*args, "-o", str(path), "-q"])
    assert result.exit_code == 0, result.stderr
    return path


def test_update_and_merge_write_the_bytes_of_one_fit(runner, tmp_path):
    """Every statistic is a sum: rows added later give the file of one fit of all rows."""
    a, b, both, billing = split_demo(tmp_path)
    whole = fit_table_file(runner, both, tmp_path / "whole.nbc").read_bytes()
    updated = fit_table_file(runner, a, tmp_path / "updated.nbc")
    result = runner.invoke(cli, ["fit", "--table", str(b), "--update", str(updated)])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith("update: +10 rows, now 20 rows, 2 classes, ")
    assert updated.read_bytes() == whole
    parts = [fit_table_file(runner, t, tmp_path / f"{t.stem}.nbc") for t in (a, b)]
    merged = tmp_path / "merged.nbc"
    result = runner.invoke(cli, ["merge", *map(str, parts), "-o", str(merged)])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith("merge: 2 models, 20 rows, 2 classes, ")
    assert merged.read_bytes() == whole
    # Rows of one class are enough to add to a model.
    one = fit_table_file(runner, a, tmp_path / "one.nbc")
    result = runner.invoke(cli, ["fit", "--table", str(billing), "--update", str(one), "-q"])
    assert result.exit_code == 0, result.stderr
    header, *rows = DEMO.read_text(encoding="utf-8").splitlines()
    expected = [*rows[0::2], *(r for r in rows[1::2] if r.endswith(",billing"))]
    write(tmp_path / "expected.csv", "\n".join([header, *expected]) + "\n")
    assert one.read_bytes() == fit_table_file(
        runner, tmp_path / "expected.csv", tmp_path / "expected.nbc"
    ).read_bytes()


def test_update_and_merge_of_tables_refuse_what_cannot_add_up(runner, tmp_path):
    a, b, _, _ = split_demo(tmp_path)
    model = fit_table_file(runner, a, tmp_path / "m.nbc")
    before = model.read_bytes()
    update = ["fit", "--table", str(b), "--update", str(model)]
    assert_error(
        runner.invoke(cli, [*update, "--label", "plan"]),
        2,
        "--label 'plan' differs from the model's label column 'team': leave --label out to "
        "use the model's",
    )
    assert_error(
        runner.invoke(cli, [*update, "--var-smoothing", "0.1"]),
        2,
        "--update adds rows with the table model's own settings: leave out --var-smoothing",
    )
    narrow = write(
        tmp_path / "narrow.csv",
        "\n".join(",".join(line.split(",")[:4]) for line in b.read_text().splitlines()) + "\n",
    )
    assert_error(
        runner.invoke(cli, ["fit", "--table", str(narrow), "--update", str(model)]),
        2,
        f"{str(narrow)!r} lacks the model's column 'team': rows added to a table model "
        "need the same columns",
    )
    text = tmp_path / "text.nbc"
    fitted = runner.invoke(cli, ["fit", str(REPO / "corpora" / "demo"), "-o", str(text), "-q"])
    assert fitted.exit_code == 0, fitted.stderr
    for order in ([model, text], [text, model]):
        assert_error(
            runner.invoke(cli, ["merge", *map(str, order), "-o", str(tmp_path / "x.nbc")]),
            2,
            f"cannot merge the text model {str(text)!r} with table models: merge text models "
            "with text models and table models (fit --table) with table models",
        )
    assert model.read_bytes() == before
    assert not (tmp_path / "x.nbc").exists()


def test_evaluate_a_table_model_on_labelled_rows(runner, tmp_path):
    """The metrics of evaluate --table are those of predict --table's rows against the labels."""
    from sklearn.metrics import accuracy_score, f1_score, log_loss

    a, b, _, _ = split_demo(tmp_path)
    model = fit_table_file(runner, a, tmp_path / "a.nbc")
    evaluate = ["evaluate", "-m", str(model), "--table", str(b)]
    result = runner.invoke(cli, [*evaluate, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    predicted = runner.invoke(
        cli, ["predict", "-m", str(model), "--table", str(b), "--format", "jsonl"]
    )
    records = [json.loads(line) for line in predicted.stdout.splitlines()]
    truth = [line.rsplit(",", 1)[1] for line in b.read_text().splitlines()[1:]]
    labels = [r["label"] for r in records]
    proba = [[r["probabilities"][c] for c in ("billing", "infra")] for r in records]
    assert data["documents"] == len(truth) == 10
    assert data["accuracy"] == accuracy_score(truth, labels)
    assert data["macro_f1"] == pytest.approx(f1_score(truth, labels, average="macro"), rel=1e-12)
    assert data["log_loss"] == pytest.approx(
        log_loss(truth, proba, labels=["billing", "infra"]), rel=1e-9
    )
    text = runner.invoke(cli, ["evaluate", "-m", str(model), "--table", str(b)]).stdout
    assert " ".join(text.split()).startswith(f"{model} on {b}: 10 rows, 2 classes model ")
    assert_error(
        runner.invoke(cli, ["evaluate", "-m", str(model), str(tmp_path)]),
        1,
        f"{str(model)!r} is a table model: evaluate it on labelled rows with "
        f"'nbclass evaluate -m {model} --table FILE'",
    )
    assert_error(
        runner.invoke(cli, ["evaluate", "-m", str(model), "--table", str(NEW)]),
        1,
        "has no column 'team', the model's label: evaluation needs the true class of every row",
    )
