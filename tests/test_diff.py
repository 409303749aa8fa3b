"""nbclass diff: documents, classes, vocabulary, moved log-odds and KL, by hand."""

from __future__ import annotations

import json
import math
import resource
import subprocess
from fractions import Fraction as F

import pytest
from conftest import CHINESE, nbclass_command, write_corpus

from nbclass.cli.app import cli
from nbclass.evaluation.judging import class_log_odds, diff
from nbclass.modelfile.textfile import save
from nbclass.models.estimators import EstimatorSettings
from nbclass.models.model import fit
from nbclass.reading.corpus import list_corpus

# B = A plus a japan document and a new class.
MORE = {
    "china": CHINESE["china"],
    "japan": CHINESE["japan"] + ["Tokyo Osaka"],
    "korea": ["Seoul Chinese"],
}
UNION = ["beijing", "chinese", "japan", "macao", "osaka", "seoul", "shanghai", "tokyo"]


@pytest.fixture
def models(tmp_path):
    old = fit(list_corpus(str(write_corpus(tmp_path / "a", CHINESE))))
    new = fit(list_corpus(str(write_corpus(tmp_path / "b", MORE))))
    save(old, str(tmp_path / "a.nbc"))
    save(new, str(tmp_path / "b.nbc"))
    return old, new, tmp_path


def kl(new: dict[str, int], old: dict[str, int]) -> float:
    """KL(new ‖ old) over UNION with θ = (T + 1) / (T_c + 8), from exact fractions."""
    U = len(UNION)
    total_new, total_old = sum(new.values()), sum(old.values())
    out = 0.0
    for w in UNION:
        p = F(new.get(w, 0) + 1, total_new + U)
        q = F(old.get(w, 0) + 1, total_old + U)
        out += float(p) * math.log(p / q)
    return out


def test_diff_by_hand(models):
    old, new, _ = models
    data = diff(old, new, k=10).to_dict()
    assert data["documents"] == {"old": 4, "new": 6}
    assert data["classes_added"] == ["korea"] and data["classes_removed"] == []
    assert data["vocabulary"] == {
        "old": 6,
        "new": 8,
        "added": 2,
        "removed": 0,
        "frequent_new_words": ["osaka", "seoul"],  # one token each: alphabetical
    }
    classes = data["classes"]
    assert classes["korea"] == {"documents_old": 0, "documents_new": 1}
    assert classes["china"]["kl"] == 0.0  # the same counts
    assert classes["japan"]["documents_new"] == 2
    expected = kl(
        {"chinese": 1, "japan": 1, "tokyo": 2, "osaka": 1}, {"chinese": 1, "japan": 1, "tokyo": 1}
    )
    assert classes["japan"]["kl"] == pytest.approx(expected, rel=1e-12)
    tokyo = next(m for m in classes["japan"]["moved"] if m["word"] == "tokyo")
    # A (V = 6): θ = 2/9 in japan, 1/14 in the rest (china, T = 8).
    assert tokyo["old"] == pytest.approx(math.log(F(2, 9) / F(1, 14)), rel=1e-14)
    # B (V = 8): θ = 3/13 in japan, 1/18 in the rest (china + korea, T = 8 + 2).
    assert tokyo["new"] == pytest.approx(math.log(F(3, 13) / F(1, 18)), rel=1e-14)
    assert tokyo["change"] == tokyo["new"] - tokyo["old"]
    moved = [abs(m["change"]) for m in classes["japan"]["moved"]]
    assert moved == sorted(moved, reverse=True)
    assert len(moved) == 6  # only the words both models know


def test_class_log_odds_of_two_classes_are_the_scorer_weight_differences(models):
    old, _, _ = models
    lo = class_log_odds(old.active_counts)
    from nbclass.models.model import Classifier

    W = Classifier(old, EstimatorSettings()).scorer.weights  # log θ, multinomial, β = 1
    assert lo[:, 0] == pytest.approx(W[:, 0] - W[:, 1], rel=1e-13)
    assert lo[:, 1] == pytest.approx(W[:, 1] - W[:, 0], rel=1e-13)


def test_diff_of_a_model_with_itself_changes_nothing(models, runner):
    _, _, root = models
    result = runner.invoke(
        cli, ["diff", str(root / "b.nbc"), str(root / "b.nbc"), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["vocabulary"]["added"] == data["vocabulary"]["removed"] == 0
    for entry in data["classes"].values():
        assert entry["kl"] == 0.0
        assert all(m["change"] == 0.0 for m in entry["moved"])


def test_diff_text(models, runner):
    _, _, root = models
    result = runner.invoke(cli, ["diff", str(root / "a.nbc"), str(root / "b.nbc"), "-k", "2"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "\x1b[" not in out
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "classes added     korea" in out
    assert "6 -> 8 words (+2: 2 new, 0 gone)" in out
    assert "new words, most frequent first: osaka, seoul" in out


def test_diff_reports_how_the_models_score_at_their_defaults(tmp_path, runner):
    """The choice, fitted β, calibration and typicality are compared, not only counts:
    two models of the same counts, one chosen by fit and one named, differ in all four."""
    from conftest import DEMO_CORPUS, NAMED

    from nbclass.modelfile.textfile import load

    chosen, named, small = tmp_path / "chosen.nbc", tmp_path / "named.nbc", tmp_path / "small.nbc"
    assert runner.invoke(cli, ["fit", str(DEMO_CORPUS), "-o", str(chosen), "-q"]).exit_code == 0
    # the entries fit's choice keeps (words+symbols+pairs, df>=2): the symbols, the pairs
    # of the short documents, those of two documents or more
    counted = ["--symbols", "--ngram-range", "1,2", "--ngram-doc-limit", "64", "--min-df", "2"]
    options = ["fit", str(DEMO_CORPUS), "-o", str(named), "-q", *NAMED, *counted]
    assert runner.invoke(cli, options).exit_code == 0
    options = ["select-features", "-m", str(chosen), "-k", "50", "-o", str(small), "-q"]
    assert runner.invoke(cli, options).exit_code == 0
    a, b = load(str(chosen)), load(str(named))

    def scoring(old, new):
        result = runner.invoke(cli, ["diff", str(old), str(new), "--format", "json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    data = scoring(chosen, named)
    assert data["scoring"] == {
        "old": {
            "defaults": "complement tf=log no-class-prior",
            "chosen": True,
            "fitted_beta": None,
            "calibration": a.calibration.to_dict(),
            "typicality": {
                "documents": 42, "median": a.typicality["percentiles"][50],
            },
        },  # fmt: skip
        "new": {
            "defaults": "complement tf=log β=fit",
            "chosen": False,
            "fitted_beta": b.prepared.beta,
            "calibration": None,
            "typicality": None,
        },
        "changed": ["defaults", "chosen", "fitted_beta", "calibration", "typicality"],
    }
    assert data["notes"] == [
        # the choice's filter names the features it kept (words, symbols and pairs) and
        # prunes them to df>=2, the named keeps --min-df 2 and names none
        "the models use different vocabulary filters or selections",
        "the models score differently at their defaults (default settings, who chose them, "
        "fitted β, calibration, typicality)",
    ]
    assert all(entry["kl"] == 0.0 for entry in data["classes"].values())  # same counts
    assert scoring(chosen, chosen)["scoring"]["changed"] == []
    assert scoring(chosen, chosen)["notes"] == []
    # select-features keeps the settings and fits their calibration again on the words it
    # keeps; the typicality described the counts of every word, so it is gone.
    assert scoring(chosen, small)["scoring"]["changed"] == ["calibration", "typicality"]
    result = runner.invoke(cli, ["diff", str(chosen), str(named)])
    rows = [line.strip() for line in result.stdout.splitlines()]
    c = a.calibration
    assert c.offsets == ()  # the choice kept none on the demo's words+symbols+pairs, df>=2
    at = next(i for i, row in enumerate(rows) if row.startswith("defaults"))
    assert rows[at : at + 5] == [
        "defaults      complement tf=log no-class-prior (chosen by fit) -> complement",
        "tf=log β=fit (named)",  # wrapped at 80 columns
        f"fitted β      none -> {b.prepared.beta:.4g}",
        f"calibration   t = {c.t0:.4g}, {c.t1:.4g}, {c.t2:.4g} -> none",  # no offsets
        f"typicality    42 documents, median {a.typicality['percentiles'][50]:.4g} -> not "
        "stored",
    ]


# --- many classes in bounded memory -----------------------------------------------------------

CLASSES, OWN = 4_000, 10  # class c's training line: its own 10 words a{c}x0 .. a{c}x9
ADDRESS_SPACE = 1 << 30  # bytes: one (V, C) table of the old model's floats takes 1.28 GB


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def test_diff_of_4000_classes_by_hand_in_bounded_memory(tmp_path):
    """A: each of 4,000 classes has one line of its 10 own words (V = 40,000). B: A plus a
    line per class of its first word twice and a new word (V = 44,000). diff runs in 1
    GiB of address space, where a single (V, C) table of floats would not fit (diff made
    several before it compared a block of classes at a time), and its KL and moved
    log-odds are the fractions' (multinomial, β = 1)."""
    own = [" ".join(f"a{c:04d}x{m}" for m in range(OWN)) for c in range(CLASSES)]
    lines_a = [f"c{c:04d}\t{words}" for c, words in enumerate(own)]
    lines_b = lines_a + [f"c{c:04d}\ta{c:04d}x0 a{c:04d}x0 n{c:04d}" for c in range(CLASSES)]
    models = []
    for name, lines in (("a", lines_a), ("b", lines_b)):
        (tmp_path / f"{name}.tsv").write_text("\n".join(lines) + "\n")
        models.append(tmp_path / f"{name}.nbc")
        fitted = subprocess.run(
            [*nbclass_command(), "fit", "--lines", str(tmp_path / f"{name}.tsv"), "--model",
             "multinomial", "-o", str(models[-1]), "-q"], capture_output=True, timeout=300,
        )  # fmt: skip
        assert fitted.returncode == 0, fitted.stderr
    V_a, V_b = CLASSES * OWN, CLASSES * (OWN + 1)
    assert V_a * CLASSES * 8 > ADDRESS_SPACE
    result = subprocess.run(
        [*nbclass_command(), "diff", *map(str, models), "-k", "3", "--format", "json"],
        capture_output=True, text=True, timeout=300, preexec_fn=_limit,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["vocabulary"] == {
        "old": V_a, "new": V_b, "added": CLASSES, "removed": 0,
        "frequent_new_words": ["n0000", "n0001", "n0002"],
    }  # fmt: skip
    assert len(data["classes"]) == CLASSES
    entry = data["classes"]["c2500"]
    assert (entry["documents_old"], entry["documents_new"]) == (1, 2)
    # KL over the union's U = 44,000 words, θ = (T_j + 1) / (T_c + U) in both: in A the
    # class has 10 tokens, one of each own word; in B 13 (x0 three times, n2500 once);
    # the other 43,989 words none in either.
    U = V_b
    p0, q0 = F(1, 13 + U), F(1, 10 + U)
    expected = float(4 * p0) * math.log(4 * p0 / (2 * q0))  # x0
    expected += 9 * float(2 * p0) * math.log(2 * p0 / (2 * q0))  # x1 .. x9
    expected += float(2 * p0) * math.log(2 * p0 / q0)  # n2500
    expected += (U - 11) * float(p0) * math.log(p0 / q0)
    assert entry["kl"] == pytest.approx(expected, rel=1e-9)
    # log θ_jc − log θ_j,rest: the rest's tokens are 39,990 in A, 51,987 in B. The class's
    # x0 moved most; then every other class's x0 (in B three tokens of the rest), tied:
    # the first two alphabetically.
    rest_a, rest_b = CLASSES * OWN - OWN, CLASSES * (OWN + 3) - (OWN + 3)
    own_old = math.log(F(2, 10 + V_a) / F(1, rest_a + V_a))
    own_new = math.log(F(4, 13 + V_b) / F(1, rest_b + V_b))
    other_old = math.log(F(1, 10 + V_a) / F(2, rest_a + V_a))
    other_new = math.log(F(1, 13 + V_b) / F(4, rest_b + V_b))
    moved = entry["moved"]
    assert [m["word"] for m in moved] == ["a2500x0", "a0000x0", "a0001x0"]
    assert moved[0]["old"] == pytest.approx(own_old, rel=1e-14)
    assert moved[0]["new"] == pytest.approx(own_new, rel=1e-14)
    assert moved[1]["old"] == moved[2]["old"] == pytest.approx(other_old, rel=1e-14)
    assert moved[1]["new"] == moved[2]["new"] == pytest.approx(other_new, rel=1e-14)
    assert moved[1]["change"] == moved[2]["change"]
