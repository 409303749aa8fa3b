"""Exit codes for scripts stay put: a class keeps its code through update, merge, unlearn
and sync (real processes, the exit status as a shell sees it)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from conftest import DEMO_CORPUS, NAMED, REPO, nbclass_command

from nbclass.errors import UsageError
from nbclass.modelfile.textfile import load
from nbclass.models.exitcodes import extended, merged, parse_map, sorted_codes

BILLING = b"My card was charged twice for the same invoice, please refund one payment"
API = b"the api token returns 401 for every request"
API_LINES = (
    "api\tthe api token returns 401 for every request\n"
    "api\tour api key was rotated and the webhook fails\n"
)

# The demo's words alone, counted as the demo model of these tests (the fixture ``demo``).
WORDS = ("--no-symbols", "--ngram-range", "1,1")


def run(*args, input: bytes | None = None, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *map(str, args)], input=input, capture_output=True, cwd=cwd,
        timeout=120,
    )  # fmt: skip


def code_of(model, text: bytes) -> int:
    result = run("predict", "-m", model, "--exit-code", input=text)
    assert result.stderr == b"", result.stderr
    return result.returncode


def printed_map(model) -> dict[str, int]:
    result = run("predict", "-m", model, "--exit-code-map")
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    return {
        line.split("\t")[0]: int(line.split("\t")[1])
        for line in result.stdout.decode().splitlines()
    }


@pytest.fixture
def demo(tmp_path):
    """A model of the demo corpus, fit's default: account 10, billing 11, outage 12. (Of
    words alone: with the symbols the choice made after adding the two "api" tickets
    calls the api text an outage, 0.32 against 0.26, and the codes are this test's
    subject, not that call. Without the pairs of short documents fit counts by default
    too: a fresh fit of the words, named, is then the same words and filter, and diff's
    first note about them is the codes'.)"""
    path = tmp_path / "model.nbc"
    assert run("fit", DEMO_CORPUS, "-o", path, "-q", *WORDS).returncode == 0
    return path


def test_a_new_class_takes_a_new_code_and_the_others_keep_theirs(demo, tmp_path):
    assert printed_map(demo) == {"account": 10, "billing": 11, "outage": 12}
    assert code_of(demo, BILLING) == 11
    # "api" sorts before billing: in sorted order it would take 11 and move billing to 12.
    result = run("fit", "--lines", "-", "--update", demo, "-q", input=API_LINES.encode())
    assert result.returncode == 0, result.stderr
    assert printed_map(demo) == {"account": 10, "billing": 11, "outage": 12, "api": 13}
    assert code_of(demo, BILLING) == 11
    assert code_of(demo, API) == 13
    assert run("predict", "-m", demo, "--exit-code", "--explain", "1", input=API).returncode == 13
    info = json.loads(run("info", "-m", demo, "--format", "json").stdout)
    assert info["exit_codes"] == {"account": 10, "billing": 11, "outage": 12, "api": 13}
    text = run("info", "-m", demo).stdout.decode().splitlines()
    assert "exit codes   10 account, 11 billing, 12 outage, 13 api" in text
    # A fresh fit of the same documents gives sorted codes: the map is history, kept in
    # the file.
    both = tmp_path / "both.tsv"
    lines = [
        f"{folder.name}\t{path.read_text().replace(chr(10), ' ')}"
        for folder in sorted(DEMO_CORPUS.iterdir())
        for path in sorted(folder.iterdir())
    ]
    both.write_text("\n".join(lines) + "\n" + API_LINES)
    fresh = tmp_path / "fresh.nbc"
    assert run("fit", "--lines", both, "-o", fresh, "-q", *NAMED).returncode == 0
    assert printed_map(fresh) == {"account": 10, "api": 11, "billing": 12, "outage": 13}
    # diff says so: a script routing by the updated model's codes would misfile these.
    notes = json.loads(run("diff", demo, fresh, "--format", "json").stdout)["notes"]
    assert notes[0] == (
        "a class has another exit code in the new model (predict --exit-code): api 13 -> 11, "
        "billing 11 -> 12, outage 12 -> 13"
    )


def test_an_update_in_sorted_order_writes_the_fresh_fits_file(tmp_path):
    half = "billing\tplease refund the duplicate charge\naccount\treset my password\n"
    more = "zeta\tzeta zeta\n"
    a, fresh = tmp_path / "a.nbc", tmp_path / "fresh.nbc"
    assert run("fit", "--lines", "-", "-o", a, "-q", *NAMED, input=half.encode()).returncode == 0
    assert run("fit", "--lines", "-", "--update", a, "-q", input=more.encode()).returncode == 0
    result = run("fit", "--lines", "-", "-o", fresh, "-q", *NAMED, input=(half + more).encode())
    assert result.returncode == 0
    assert a.read_bytes() == fresh.read_bytes()
    assert printed_map(a) == {"account": 10, "billing": 11, "zeta": 12}


def test_merge_keeps_the_first_models_codes(demo, tmp_path):
    assert (
        run("fit", "--lines", "-", "--update", demo, "-q", input=API_LINES.encode()).returncode
        == 0
    )
    plain = tmp_path / "plain.nbc"
    assert run("fit", DEMO_CORPUS, "-o", plain, "-q", *WORDS).returncode == 0
    out = tmp_path / "merged.nbc"
    result = run("merge", plain, demo, "-o", out, "-q")
    assert result.returncode == 0 and result.stderr == b""  # no code differs
    assert printed_map(out) == {"account": 10, "billing": 11, "outage": 12, "api": 13}
    # A model whose map says otherwise: its codes lose, and a warning names each one.
    other = tmp_path / "other.nbc"
    result = run(
        "fit", DEMO_CORPUS, "-o", other, "-q", "--exit-code-map", "billing=10,account=11",
        *WORDS,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert printed_map(other) == {"billing": 10, "account": 11, "outage": 12}
    result = run("merge", demo, other, "-o", out, "-q")
    assert result.returncode == 0
    assert result.stderr.decode().splitlines() == [
        f"Warning: class 'billing' has exit code 10 in {other} but 11 in the merged model "
        f"({demo}'s codes win)",
        f"Warning: class 'account' has exit code 11 in {other} but 10 in the merged model "
        f"({demo}'s codes win)",
    ]
    assert printed_map(out) == {"account": 10, "billing": 11, "outage": 12, "api": 13}


def test_unlearn_keeps_a_gone_class_code_for_it(demo, tmp_path):
    assert (
        run("fit", "--lines", "-", "--update", demo, "-q", input=API_LINES.encode()).returncode
        == 0
    )
    result = run("unlearn", "--lines", "-", "-m", demo, "-q", input=API_LINES.encode())
    assert result.returncode == 0, result.stderr
    assert load(str(demo)).counts.classes == ("account", "billing", "outage")
    assert printed_map(demo) == {"account": 10, "billing": 11, "outage": 12, "api": 13}
    assert "exit codes   10 account, 11 billing, 12 outage, 13 api (no documents)" in (
        run("info", "-m", demo).stdout.decode().splitlines()
    )
    # A new class never takes a gone class's code; the class gets its own back.
    result = run("fit", "--lines", "-", "--update", demo, "-q", input=b"zeta\tzeta zeta zeta\n")
    assert result.returncode == 0
    assert printed_map(demo) == {"account": 10, "billing": 11, "outage": 12, "api": 13, "zeta": 14}
    assert (
        run("fit", "--lines", "-", "--update", demo, "-q", input=API_LINES.encode()).returncode
        == 0
    )
    assert code_of(demo, API) == 13
    assert code_of(demo, BILLING) == 11


def test_sync_gives_a_new_class_folder_a_new_code(tmp_path):
    inbox = tmp_path / "inbox"
    shutil.copytree(DEMO_CORPUS, inbox)
    model = tmp_path / "live.nbc"
    assert run("sync", inbox, "-m", model, "-q").returncode == 0
    assert code_of(model, BILLING) == 11
    (inbox / "api").mkdir()
    for i, line in enumerate(API_LINES.splitlines()):
        (inbox / "api" / f"{i}.txt").write_text(line.split("\t")[1])
    result = run("sync", inbox, "-m", model)
    assert result.returncode == 0 and result.stdout.startswith(b"sync: 2 added")
    assert printed_map(model) == {"account": 10, "billing": 11, "outage": 12, "api": 13}
    assert code_of(model, BILLING) == 11
    shutil.rmtree(inbox / "billing")
    assert run("sync", inbox, "-m", model, "-q").returncode == 0
    assert load(str(model)).counts.classes == ("account", "api", "outage")
    assert printed_map(model) == {"account": 10, "billing": 11, "outage": 12, "api": 13}


def test_fit_takes_an_explicit_map_from_a_file_or_the_option(tmp_path):
    model, copy = tmp_path / "m.nbc", tmp_path / "copy.nbc"
    (tmp_path / "codes.tsv").write_text("outage\t20\nbilling\t30\n")
    result = run(
        "fit", DEMO_CORPUS, "-o", model, "-q", "--exit-code-map", "codes.tsv", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert printed_map(model) == {"account": 10, "outage": 20, "billing": 30}
    assert code_of(model, BILLING) == 30
    # What predict --exit-code-map prints, fit --exit-code-map reads: a refit keeps the codes.
    (tmp_path / "kept.tsv").write_bytes(run("predict", "-m", model, "--exit-code-map").stdout)
    result = run("fit", DEMO_CORPUS, "-o", copy, "-q", "--exit-code-map", "kept.tsv", cwd=tmp_path)
    assert result.returncode == 0
    assert printed_map(copy) == printed_map(model)
    # A name the corpus does not have keeps its code, with a warning (a misspelt class?).
    result = run("fit", DEMO_CORPUS, "-o", copy, "-q", "--exit-code-map", "biling=11")
    assert result.returncode == 0
    assert result.stderr.decode() == (
        "Warning: --exit-code-map gives exit code 11 to 'biling', which is not a class of "
        "the input: the code is kept for that class\n"
    )
    assert printed_map(copy) == {"account": 10, "biling": 11, "billing": 12, "outage": 13}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("billing=9", "--exit-code-map: 'billing=9' in --exit-code-map gives code 9: exit "
         "codes for classes are 10 to 124 (0 to 9 are nbclass's own, from 125 the shell's)"),
        ("billing=125", "gives code 125: exit codes for classes are 10 to 124"),
        ("billing=11,account=11", "gives code 11 to 'account' and 'billing'"),
        ("billing=11,billing=12", "gives class 'billing' a second code"),
        ("billing", "--exit-code-map 'billing': no such file, and not CLASS=CODE pairs"),
        ("billing=x", "--exit-code-map: 'billing=x' in --exit-code-map is not a class and a "
         "code: write CLASS=CODE,CLASS=CODE"),
    ],
)  # fmt: skip
def test_a_bad_map_is_a_usage_error(tmp_path, value, message):
    result = run("fit", DEMO_CORPUS, "-o", tmp_path / "m.nbc", "--exit-code-map", value)
    assert result.returncode == 2
    (line,) = result.stderr.decode().splitlines()
    assert line.startswith("Error: ") and message in line
    assert not (tmp_path / "m.nbc").exists()


def test_update_with_a_map_may_name_new_classes_only(demo):
    result = run("fit", "--lines", "-", "--update", demo, "--exit-code-map", "billing=12",
                 input=API_LINES.encode())  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.decode() == (
        f"Error: --exit-code-map gives class 'billing' exit code 12, but it has 11 in "
        f"{str(demo)!r}, and a class's code never changes: give 11, or leave the class out "
        "of the map\n"
    )
    result = run("fit", "--lines", "-", "--update", demo, "--exit-code-map", "api=11",
                 input=API_LINES.encode())  # fmt: skip
    assert result.returncode == 2 and b"which class 'billing' holds in" in result.stderr
    result = run("fit", "--lines", "-", "--update", demo, "-q", "--exit-code-map",
                 "api=50,billing=11", input=API_LINES.encode())  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert printed_map(demo) == {"account": 10, "billing": 11, "outage": 12, "api": 50}
    assert code_of(demo, API) == 50


def test_predict_exit_code_map_reads_no_document(demo):
    result = run("predict", "-m", demo, "--exit-code-map", DEMO_CORPUS)
    assert result.returncode == 2
    assert result.stderr.decode().splitlines()[-1] == (
        "Error: --exit-code-map prints the model's exit codes and reads no document: leave "
        "out PATH"
    )
    assert run("predict", "-m", demo, "--exit-code-map").stdout == (
        b"account\t10\nbilling\t11\noutage\t12\n"
    )


# --- the rules, as functions -----------------------------------------------------------------


def test_the_rules_of_the_map():
    assert sorted_codes(["b", "a"]) == {"a": 10, "b": 11}
    assert extended({"b": 11}, ["a", "b", "c"]) == {"b": 11, "a": 10, "c": 12}
    assert len(sorted_codes(f"c{i:03d}" for i in range(200))) == 115  # 10 to 124
    full = extended(sorted_codes(f"c{i:03d}" for i in range(115)), ["new"])
    assert "new" not in full and max(full.values()) == 124
    codes, notes = merged([{"a": 10}, {"b": 10, "c": 11}], ["x", "y"], [False, False])
    assert codes == {"a": 10, "c": 11, "b": 12} and notes == []
    assert parse_map("a\t10\n\nb\t11\n", "f") == {"a": 10, "b": 11}
    assert parse_map("a b=10", "o") == {"a b": 10}
    with pytest.raises(UsageError, match="holds no class and code"):
        parse_map("\n\n", "f")
