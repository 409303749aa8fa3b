"""Line files from other tools: a byte-order mark, a header row, labelled lines given to
predict, and the documents evaluate gets wrong (real files, real processes)."""

from __future__ import annotations

import json
import subprocess
import tarfile

import pytest
from conftest import DEMO_CORPUS, NAMED, REPO, SHARED_CORPORA, nbclass_command

BOM = b"\xef\xbb\xbf"
TRAIN = (
    "billing\tplease refund the duplicate charge on my invoice\n"
    "account\treset my password, I am locked out\n"
    "billing\tmy card was charged twice\n"
    "account\tchange the email of my account\n"
)


def run(*args, input: bytes | None = None, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *map(str, args)], input=input, capture_output=True, cwd=cwd,
        timeout=300,
    )  # fmt: skip


def fitted(tmp_path, name: str, data: bytes) -> tuple[subprocess.CompletedProcess, bytes]:
    (tmp_path / f"{name}.tsv").write_bytes(data)
    model = tmp_path / f"{name}.nbc"
    result = run("fit", "--lines", tmp_path / f"{name}.tsv", "-o", model, "-q", *NAMED)
    assert result.returncode == 0, result.stderr
    return result, model.read_bytes()


def test_a_byte_order_mark_is_not_part_of_the_first_label(tmp_path):
    _, plain = fitted(tmp_path, "plain", TRAIN.encode())
    result, marked = fitted(tmp_path, "marked", BOM + TRAIN.encode())
    assert result.stderr == b"" and marked == plain  # not a class '\ufeffbilling'
    fasttext = "".join(
        f"__label__{line.replace(chr(9), ' ', 1)}" for line in TRAIN.splitlines(True)
    )
    _, from_fasttext = fitted(tmp_path, "fasttext", BOM + fasttext.encode())
    assert from_fasttext == plain  # not "line 1 has no label"
    # Two such files joined with cat: each mark begins a line.
    result, joined = fitted(tmp_path, "joined", BOM + TRAIN.encode() + BOM + TRAIN.encode())
    _, twice = fitted(tmp_path, "twice", (TRAIN + TRAIN).encode())
    assert joined == twice
    # predict --lines reads the mark as nothing too.
    (tmp_path / "docs.txt").write_bytes(BOM + b"refund the charge\nreset my password\n")
    marked_out = run("predict", "-m", tmp_path / "plain.nbc", "--lines", tmp_path / "docs.txt")
    (tmp_path / "docs.txt").write_bytes(b"refund the charge\nreset my password\n")
    plain_out = run("predict", "-m", tmp_path / "plain.nbc", "--lines", tmp_path / "docs.txt")
    assert marked_out.stdout == plain_out.stdout and marked_out.returncode == 0


@pytest.mark.parametrize("header", ["label\ttext", "class,text", '"text","label"', "LABEL TEXT"])
def test_a_header_row_is_skipped_with_a_warning(tmp_path, header):
    _, plain = fitted(tmp_path, "plain", TRAIN.encode())
    path = tmp_path / "headed.tsv"
    path.write_bytes(BOM + f"{header}\n{TRAIN}".encode())
    model = tmp_path / "headed.nbc"
    result = run("fit", "--lines", path, "-o", model, "-q", *NAMED)
    assert result.returncode == 0
    assert result.stderr.decode() == (
        f"Warning: line {path}:1 is a header row ({header!r}), not a labelled document: "
        "skipped\n"
    )
    assert model.read_bytes() == plain  # no class named "label" or "class"
    evaluated = run("evaluate", "-m", model, "--lines", path, "--format", "json")
    assert evaluated.returncode == 0 and b"is a header row" in evaluated.stderr
    assert json.loads(evaluated.stdout)["documents"] == 4


def test_only_the_first_line_can_be_a_header(tmp_path):
    path = tmp_path / "late.tsv"
    path.write_text(TRAIN + "label\ttext\n")
    model = tmp_path / "late.nbc"
    result = run("fit", "--lines", path, "-o", model, "-q", *NAMED)
    assert result.returncode == 0 and result.stderr == b""
    info = json.loads(run("info", "-m", model, "--format", "json").stdout)
    assert info["classes"] == {"account": 2, "billing": 2, "label": 1}


def test_predict_lines_reads_a_labelled_files_labels_as_labels(tmp_path):
    model = tmp_path / "demo.nbc"
    assert run("fit", DEMO_CORPUS, "-o", model, "-q").returncode == 0
    texts = ["please refund the duplicate charge", "", "the login page returns 503"]
    (tmp_path / "plain.txt").write_text("\n".join(texts) + "\n")
    (tmp_path / "labelled.tsv").write_text(
        "label\ttext\noutage\tplease refund the duplicate charge\n\n"
        "account\tthe login page returns 503\n"
    )
    (tmp_path / "fasttext.txt").write_text(
        "__label__outage please refund the duplicate charge\n__label__account the login "
        "page returns 503\n"
    )
    plain = run("predict", "-m", model, "--lines", "plain.txt", cwd=tmp_path)
    rows = [line.split("\t") for line in plain.stdout.decode().splitlines()]
    labelled = run("predict", "-m", model, "--lines", "labelled.tsv", cwd=tmp_path)
    assert labelled.returncode == 0
    assert labelled.stderr.decode().splitlines() == [
        "Warning: line labelled.tsv:1 is a header row ('label\\ttext'), not a labelled "
        "document: skipped",
    ]
    # The labels are read as labels: each text is scored alone, as on its own line.
    assert [line.split("\t")[1:] for line in labelled.stdout.decode().splitlines()] == [
        rows[0][1:], rows[2][1:]
    ]
    fasttext = run("predict", "-m", model, "--lines", "fasttext.txt", cwd=tmp_path)
    assert fasttext.stderr.decode() == (
        "Warning: fasttext.txt holds labelled lines (LABEL<TAB>TEXT or __label__LABEL TEXT): "
        "their labels are not read as text (--labelled no reads every line whole)\n"
    )
    assert [line.split("\t")[1:] for line in fasttext.stdout.decode().splitlines()] == [
        rows[0][1:], rows[2][1:]
    ]
    # --labelled no reads the label as text (the old reading: the word "outage" counts);
    # yes refuses a text alone.
    (tmp_path / "bare.tsv").write_text("outage\tplease refund the duplicate charge\n")
    whole = run("predict", "-m", model, "--lines", "bare.tsv", "--labelled", "no", cwd=tmp_path)
    auto = run("predict", "-m", model, "--lines", "bare.tsv", cwd=tmp_path)
    assert whole.stderr == b"" and auto.stdout.decode().strip().split("\t")[1:] == rows[0][1:]
    assert whole.stdout.decode().strip().split("\t")[2] != rows[0][2]
    refused = run(
        "predict", "-m", model, "--lines", "plain.txt", "--labelled", "yes", cwd=tmp_path
    )
    assert refused.returncode == 1
    assert refused.stderr.decode() == (
        "Error: line plain.txt:1 has no label: write LABEL<TAB>TEXT or __label__LABEL TEXT\n"
    )
    # A text whose first field is no class of the model is a text (auto).
    (tmp_path / "log.txt").write_text("ERROR\tthe login page returns 503\n")
    log = run("predict", "-m", model, "--lines", "log.txt", cwd=tmp_path)
    assert log.stderr == b"" and log.stdout.decode().startswith("log.txt:1\toutage\t")


def test_evaluate_lists_the_documents_it_gets_wrong(tmp_path):
    model = tmp_path / "demo.nbc"
    assert run("fit", DEMO_CORPUS, "-o", model, "-q").returncode == 0
    test = "corpora/demo-test"  # from REPO: the source fits on a line of the text report
    result = run("evaluate", "-m", model, test, "--errors", "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    # Every document whose predicted label is not its class, and only those, from predict.
    predicted = run("predict", "-m", model, test, "--format", "jsonl", "--no-calibration")
    wrong = []
    for line in predicted.stdout.decode().splitlines():
        row = json.loads(line)
        true = row["source"].split("/")[-2]
        if row["label"] != true:
            wrong.append((row["source"], true, row["label"]))
    assert wrong and [(e["source"], e["true"], e["predicted"]) for e in data["errors"]] == wrong
    assert len(data["errors"]) == round((1 - data["accuracy"]) * data["documents"])
    for e in data["errors"]:
        assert 0 < e["true_probability"] < e["probability"] < 1
    text = run("evaluate", "-m", model, test, "--errors").stdout.decode().splitlines()
    at = text.index(f"misclassified documents ({len(wrong)} of 12)")
    e = data["errors"][0]
    assert text[at + 4].split() == [
        e["true"], e["predicted"], f"{e['true_probability']:.4f}", f"{e['probability']:.4f}",
        e["source"],
    ]  # fmt: skip
    without = json.loads(run("evaluate", "-m", model, test, "--format", "json").stdout)
    assert "errors" not in without


PROS_CONS = SHARED_CORPORA / "pros_cons.tar.gz"


@pytest.mark.skipif(not PROS_CONS.exists(), reason=f"{PROS_CONS} is not there")
def test_labelled_lines_on_a_real_corpus_predict_as_evaluate_scores(tmp_path):
    """Pros and cons: 800 training documents of each class, 200 test lines of each. With
    the label read as text predict would see the answer in each line."""
    train, lines = tmp_path / "train", []
    with tarfile.open(PROS_CONS) as archive:
        members = sorted((m for m in archive.getmembers() if m.isfile()), key=lambda m: m.name)
        for label in ("pros", "cons"):
            mine = [m for m in members if f"/{label}/" in m.name][:1000]
            (train / label).mkdir(parents=True)
            for i, member in enumerate(mine):
                text = archive.extractfile(member).read().decode("utf-8", "replace")
                if i < 800:
                    (train / label / f"{i:04d}.txt").write_text(text)
                else:
                    lines.append(f"{label}\t{' '.join(text.split())}")
    (tmp_path / "test.tsv").write_text("\n".join(lines) + "\n")
    model = tmp_path / "pc.nbc"
    assert run("fit", train, "-o", model, "-q").returncode == 0
    evaluated = run("evaluate", "-m", model, "--lines", tmp_path / "test.tsv", "--format", "json")
    accuracy = json.loads(evaluated.stdout)["accuracy"]

    def predicted(*options) -> float:
        result = run("predict", "-m", model, "--lines", tmp_path / "test.tsv", *options)
        labels = [line.split("\t")[1] for line in result.stdout.decode().splitlines()]
        truth = [line.split("\t")[0] for line in lines]
        return sum(a == b for a, b in zip(labels, truth)) / len(truth)

    # evaluate labels a document without a known word by the prior, as predict
    # --min-known 0 does (predict alone says unsure: the model keeps 1,000 words here)
    assert predicted("--min-known", "0") == accuracy
    assert predicted("--min-known", "0", "--labelled", "no") > accuracy  # the label leaks
