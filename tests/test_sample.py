"""The default model is a function of its documents: the sample it chooses from is a
bottom-k sketch by content, kept in the file, so update, merge, unlearn and sync at the
defaults write the bytes a fresh fit of the same documents writes.

The real corpus is SMS spam (5,574 messages, from the shared corpora), split in halves
by file order. At the real sample size (6,000) it is sampled whole; the tests that must
see the sketch cut documents away make the sample 1,000 documents in this process.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tarfile
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import DEMO_CORPUS, SHARED_CORPORA, assert_changes_write_fresh_fits, nbclass_command
from hypothesis import given, settings
from hypothesis import strategies as st

from nbclass.cli.app import cli
from nbclass.counting import sketch
from nbclass.counting.ledger import DIGEST_SIZE, Ledger
from nbclass.modelfile.textfile import dumps, load, loads
from nbclass.models.learning import chooses


def run(*args, cwd=None, input=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *map(str, args)], capture_output=True, cwd=cwd, input=input,
        timeout=600,
    )  # fmt: skip


@pytest.fixture(scope="module")
def sms(tmp_path_factory) -> Path:
    """SMS spam as folders: ``all``, ``a`` (every other message of each class, from the
    first) and ``b`` (the others), and the same as labelled lines ``all.tsv``, ``a.tsv``,
    ``b.tsv`` (a message's newlines and tabs made spaces, in the folders and the lines)."""
    archive = SHARED_CORPORA / "sms_spam.tar.gz"
    if not archive.exists():
        pytest.skip(f"{archive} is absent (the shared corpora live beside the repository)")
    root = tmp_path_factory.mktemp("sms")
    seen: dict[str, int] = {}
    lines = {"all": [], "a": [], "b": []}
    with tarfile.open(archive, "r:gz") as tar:
        members = sorted((m for m in tar if m.isfile()), key=lambda m: m.name)
        for member in members:
            _, label, name = member.name.split("/")
            text = tar.extractfile(member).read().decode("utf-8")
            text = text.replace("\n", " ").replace("\t", " ").replace("\r", " ")
            half = "ab"[seen.get(label, 0) % 2]
            seen[label] = seen.get(label, 0) + 1
            for part in ("all", half):
                (root / part / label).mkdir(parents=True, exist_ok=True)
                (root / part / label / name).write_text(text, encoding="utf-8")
                lines[part].append(f"{label}\t{text}\n")
    for part, rows in lines.items():
        (root / f"{part}.tsv").write_text("".join(rows), encoding="utf-8")
    return root


def fit(runner, *args) -> None:
    result = runner.invoke(cli, [*map(str, args), "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output


# --- the sketch ------------------------------------------------------------------------


def ledger_of(items: list[tuple[bytes, int]]) -> Ledger:
    """A ledger of documents named by ``(digest, class)``, one word each (word = class)."""
    n = len(items)
    return Ledger(
        digests=np.frombuffer(b"".join(d for d, _ in items), dtype=np.uint8).reshape(
            n, DIGEST_SIZE
        ),
        labels=np.array([c for _, c in items], dtype=np.int64),
        ptr=np.arange(n + 1, dtype=np.int64),
        words=np.array([c for _, c in items], dtype=np.int64),
        counts=np.ones(n, dtype=np.int64),
    )


def names(ledger: Ledger) -> list[tuple[bytes, int]]:
    return [(bytes(d), int(c)) for d, c in zip(ledger.digests, ledger.labels)]


documents = st.lists(
    st.tuples(st.integers(0, 40), st.integers(0, 3), st.booleans()), max_size=80
)


@settings(max_examples=200, deadline=None)
@given(documents, st.integers(1, 12), st.integers(0, 4))
def test_the_sketch_of_a_union_is_the_sketch_of_the_parts_sketches(docs, overall, per_class):
    """bottom-k by (digest, class) and the first m of each class merge exactly: the sample
    of A + B is the sample of (sample of A + sample of B), duplicates included; and it is
    the first ``overall`` documents by (digest, class) plus each class's first m."""
    items = [(hashlib.sha256(bytes([x])).digest(), c) for x, c, _ in docs]
    a = [item for item, (_, _, side) in zip(items, docs) if side]
    b = [item for item, (_, _, side) in zip(items, docs) if not side]
    whole = sketch.bottom(ledger_of(items), overall, per_class)
    parts = [sketch.bottom(ledger_of(p), overall, per_class) for p in (a, b)]
    assert names(sketch.union(parts, overall, per_class)) == names(whole)
    ordered = sorted(items)
    expected = set(range(min(overall, len(items))))
    for c in range(4):
        expected.update([i for i, (_, k) in enumerate(ordered) if k == c][:per_class])
    assert names(whole) == [ordered[i] for i in sorted(expected)]


@settings(max_examples=200, deadline=None)
@given(documents, st.integers(1, 12))
def test_fewer_of_each_class_past_many_classes_still_merge_exactly(docs, overall):
    """With at most 6 first documents of classes in all (per_class_for: 5 of 1 class, 3
    of each of 2, 2 of 3, 1 of 4), a part of fewer classes keeps more of each than the
    union: the sample of A + B (of all their classes) is still the sample of the parts'
    samples, each made for its own classes."""
    items = [(hashlib.sha256(bytes([x])).digest(), c) for x, c, _ in docs]
    a = [item for item, (_, _, side) in zip(items, docs) if side]
    b = [item for item, (_, _, side) in zip(items, docs) if not side]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sketch, "REPRESENTATIVES", 6)
        assert [sketch.per_class_for(C) for C in (1, 2, 3, 4)] == [5, 3, 2, 1]
        classes = len({c for _, c in items})
        whole = sketch.bottom(ledger_of(items), overall, n_classes=classes)
        parts = [sketch.bottom(ledger_of(p), overall, n_classes=len({c for _, c in p}))
                 for p in (a, b)]  # fmt: skip
        assert names(sketch.union(parts, overall, n_classes=classes)) == names(whole)
        ordered = sorted(items)
        expected = set(range(min(overall, len(items))))
        for c in range(4):
            expected.update([i for i, (_, k) in enumerate(ordered) if k == c][
                : sketch.per_class_for(classes)])
        assert names(whole) == [ordered[i] for i in sorted(expected)]


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3), st.integers(0, 2)),
                max_size=60))  # fmt: skip
def test_the_order_of_digests_is_the_stable_sort_of_the_whole_key(rows):
    """order_of (by the first 8 bytes, ties sorted again) is the stable lexsort of
    (digest words, class): documents held twice, in one class and in two, and digests
    sharing their first 8 bytes (or their first 16) and not the rest."""
    heads = [bytes(8), b"\x01" * 8, b"\xff" * 8]
    digests = np.frombuffer(b"".join(
        heads[(k + j) % 3] + bytes([k % 2] * 8) + hashlib.sha256(bytes([k])).digest()[:16]
        for k, _, j in rows
    ), dtype=np.uint8).reshape(-1, DIGEST_SIZE)  # fmt: skip
    labels = np.array([c for _, c, _ in rows], dtype=np.int64)
    quads = digests.view(">u8").reshape(-1, 4)
    expected = np.lexsort([labels] + [quads[:, k] for k in (3, 2, 1, 0)])
    assert sketch.order_of(digests, labels).tolist() == expected.tolist()


def test_the_keeper_keeps_the_sample_of_a_stream_in_bounded_memory(monkeypatch):
    monkeypatch.setattr(sketch, "OVERALL", 10)
    monkeypatch.setattr(sketch, "PER_CLASS", 2)
    keeper, items, most = sketch.Keeper(keys=True), [], 0
    for i in range(500):
        item = (hashlib.sha256(str(i).encode()).digest(), "ab"[i % 7 == 0])
        items.append(item)
        keeper.offer(*item, i)
        most = max(most, len(keeper.candidates))
    assert most <= 2 * (10 + 2 * 2)
    ordered = sorted(items)
    firsts = {c: [x for x in ordered if x[1] == c][:2] for c in "ab"}
    expected = sorted(set(ordered[:10]) | set(firsts["a"]) | set(firsts["b"]))
    assert [(d, n) for d, n, _ in keeper.items()] == expected
    assert keeper.keys == items


def test_the_keeper_keeps_the_same_sample_of_documents_offered_a_window_at_a_time(monkeypatch):
    """offer_many (a count's window of documents at once) cuts the candidates at other
    times than offer does, and keeps the same items, in the same order, and the same keys:
    documents of one digest in one class and in two included."""
    monkeypatch.setattr(sketch, "OVERALL", 10)
    monkeypatch.setattr(sketch, "PER_CLASS", 2)
    digests = [hashlib.sha256(str(i % 450).encode()).digest() for i in range(600)]
    items = [(d, "abc"[i % 7 % 3]) for i, d in enumerate(digests)]
    one, many, most = sketch.Keeper(keys=True), sketch.Keeper(keys=True), 0
    for i, item in enumerate(items):
        one.offer(*item, i)
    for start in range(0, 600, 37):
        window = items[start : start + 37]
        many.offer_many(b"".join(d for d, _ in window), [c for _, c in window],
                        list(range(start, start + len(window))))  # fmt: skip
        most = max(most, len(many.candidates))
    assert most <= 2 * (10 + 2 * 3) + 36
    assert many.keys == one.keys == items
    kept = many.items()
    assert kept == one.items()
    ordered = sorted(range(600), key=lambda i: items[i])
    firsts = {c: [i for i in ordered if items[i][1] == c][:2] for c in "abc"}
    expected = sorted(set(ordered[:10]).union(*firsts.values()), key=ordered.index)
    assert [i for _, _, i in kept] == expected


def test_digest_marks_of_many_documents_are_those_of_one_at_a_time():
    """DigestMarks.many (a part's documents hashed at once, their bounds compared by
    numpy) gives each document the mark, and keeps the indices and digests, that a call
    per document gives: bounds of none, of every digest (2^64, past a uint64), half the
    range, and one equal to a document's first 8 bytes (below it, not at it)."""
    from nbclass.counting.tally import DigestMarks

    datas = [f"document {i}".encode() * (i % 3) for i in range(40)]
    classes = [i % 4 for i in range(40)]
    at = int.from_bytes(hashlib.sha256(datas[5]).digest()[:8], "big")
    for bounds in ([0, 1 << 64, 1 << 63, at], [at, at + 1, 1 << 64, 1 << 64]):
        one, many = DigestMarks(bounds), DigestMarks(bounds)
        expected, got = [], []
        for start in (0, 17, 34):
            one.offset = many.offset = 100 + start
            part = range(start, min(start + 17, 40))
            local = [i - start for i in part]
            expected += [one(k, datas[i], classes[i]) for k, i in zip(local, part)]
            got += many.many(local, [datas[i] for i in part], [classes[i] for i in part])
        assert got == expected and one.take() == many.take()
        assert any(m >= 0 for m in got) and any(m < 0 for m in got)
    assert DigestMarks([at] * 4).many([5], [datas[5]], [3]) == [-1]
    assert DigestMarks([at + 1] * 4).many([5], [datas[5]], [3]) == [5]


# --- at the real sample size: SMS spam is sampled whole ---------------------------------


def test_update_merge_unlearn_of_sms_halves_write_a_fresh_fits_bytes(sms, tmp_path):
    """fit a; fit b --update; merge a b; unlearn b from all: at the defaults each cmp-equal
    to the fresh fit of the same documents (choice, fitted β, calibration, typicality)."""
    full, half_a, half_b = tmp_path / "all.nbc", tmp_path / "a.nbc", tmp_path / "b.nbc"
    for corpus, out in ((sms / "all", full), (sms / "a", half_a), (sms / "b", half_b)):
        assert run("fit", corpus, "-o", out, "-q").returncode == 0
    fresh = load(str(full))
    assert fresh.sample.n_documents == 5574 and fresh.choice["documents"] > 0
    assert load(str(half_a)).choice != fresh.choice  # half the data chooses otherwise
    # unlearning gives the first half's own fit: every document was sampled
    assert_changes_write_fresh_fits(run, sms / "b", full, half_a, half_b)


def test_labelled_lines_updated_from_a_pipe_equal_a_fresh_fit_of_the_lines(sms, tmp_path):
    full, updated = tmp_path / "all.nbc", tmp_path / "updated.nbc"
    assert run("fit", "--lines", sms / "all.tsv", "-o", full, "-q").returncode == 0
    assert run("fit", "--lines", sms / "a.tsv", "-o", updated, "-q").returncode == 0
    piped = (sms / "b.tsv").read_bytes()
    assert run("fit", "--lines", "-", "--update", updated, "-q", input=piped).returncode == 0
    assert updated.read_bytes() == full.read_bytes()
    folder = tmp_path / "folder.nbc"  # the same texts as files: the same documents
    assert run("fit", sms / "all", "-o", folder, "-q").returncode == 0
    assert load(str(folder)).choice == load(str(full)).choice


# --- a sample smaller than the corpus: the sketch cuts ------------------------------------


@pytest.fixture
def small_sample(monkeypatch):
    """A sample of 1,000 documents (and 5 of each class): SMS spam is then cut."""
    monkeypatch.setattr(sketch, "OVERALL", 1000)


def test_a_cut_sample_still_updates_and_merges_exactly(sms, tmp_path, runner, small_sample):
    full, half_a, half_b = tmp_path / "all.nbc", tmp_path / "a.nbc", tmp_path / "b.nbc"
    for corpus, out in ((sms / "all", full), (sms / "a", half_a), (sms / "b", half_b)):
        fit(runner, "fit", corpus, "-o", out)
    model = load(str(full))
    assert model.sample.n_documents == 1000  # spam's first 5 are among the first 1,000
    digests = sorted(
        (hashlib.sha256(p.read_bytes()).digest(), p.parent.name)
        for p in (sms / "all").glob("*/*")
    )
    assert [(bytes(d), model.counts.classes[c]) for d, c in
            zip(model.sample.digests, model.sample.labels)] == digests[:1000]  # fmt: skip
    merged = tmp_path / "merged.nbc"
    fit(runner, "merge", half_a, half_b, "-o", merged)
    assert merged.read_bytes() == full.read_bytes()
    fit(runner, "fit", sms / "b", "--update", half_a)
    assert half_a.read_bytes() == full.read_bytes()


def test_unlearning_sampled_documents_without_a_ledger_is_counted_short(
    sms, tmp_path, runner, small_sample
):
    """The documents next by digest are unknown: the sample says how many it lacks, and
    the model chooses from what is left; a ledger makes unlearn exact again."""
    full, half_a = tmp_path / "all.nbc", tmp_path / "a.nbc"
    fit(runner, "fit", sms / "all", "-o", full)
    fit(runner, "fit", sms / "a", "-o", half_a)
    sampled = load(str(full)).sample
    b_keys = Counter(
        (hashlib.sha256(p.read_bytes()).digest(), p.parent.name) for p in (sms / "b").glob("*/*")
    )
    lost, classes = 0, load(str(full)).counts.classes  # b's sampled rows, as multisets
    for d, c in zip(sampled.digests, sampled.labels.tolist()):
        key = (bytes(d), classes[c])
        if b_keys[key]:
            b_keys[key] -= 1
            lost += 1
    assert 400 < lost < 600
    fit(runner, "unlearn", sms / "b", "-m", full)
    short = load(str(full))
    assert (short.sample.n_documents, short.sample_short) == (1000 - lost, lost)
    assert short.counts.equals(load(str(half_a)).counts) and chooses(short)
    assert short.choice["documents"] <= 1000 - lost
    with_ledger, a_ledger = tmp_path / "ledger.nbc", tmp_path / "a-ledger.nbc"
    fit(runner, "fit", sms / "all", "-o", with_ledger, "--ledger")
    fit(runner, "fit", sms / "a", "-o", a_ledger, "--ledger")
    fit(runner, "unlearn", sms / "b", "-m", with_ledger)
    assert with_ledger.read_bytes() == a_ledger.read_bytes()


def test_sync_of_a_growing_folder_equals_a_fresh_fit(sms, tmp_path, runner, small_sample):
    inbox, live, fresh = tmp_path / "inbox", tmp_path / "live.nbc", tmp_path / "fresh.nbc"
    shutil.copytree(sms / "a", inbox)
    fit(runner, "sync", inbox, "-m", live)
    for path in (sms / "b").glob("*/*"):
        shutil.copy(path, inbox / path.parent.name / path.name)
    fit(runner, "sync", inbox, "-m", live)
    fit(runner, "fit", inbox, "-o", fresh, "--ledger")
    assert live.read_bytes() == fresh.read_bytes()


# --- the file ----------------------------------------------------------------------------


def test_a_named_model_keeps_no_sample_and_an_auto_model_does(tmp_path, runner):
    named, auto = tmp_path / "named.nbc", tmp_path / "auto.nbc"
    fit(runner, "fit", DEMO_CORPUS, "-o", named, "--model", "multinomial")
    fit(runner, "fit", DEMO_CORPUS, "-o", auto)
    assert b"sample" not in named.read_bytes() and load(str(named)).sample is None
    model = load(str(auto))
    assert model.sample.n_documents == 42 and b'"sample": {"documents": 42, "short": 0}' in (
        auto.read_bytes()
    )


def forged(model, **changes):
    return replace(model, sample=replace(model.sample, **changes))


def test_a_forged_sample_is_refused_on_load(tmp_path, runner):
    from nbclass.errors import ModelFileError

    path = tmp_path / "auto.nbc"
    fit(runner, "fit", DEMO_CORPUS, "-o", path)
    model = load(str(path))
    sample = model.sample
    swapped = np.r_[1, 0, 2 : sample.n_documents]
    cases = {
        "not in order": forged(model, digests=sample.digests[swapped], labels=sample.labels[
            swapped]),
        "more documents of a class than the class has": forged(
            model, labels=np.zeros_like(sample.labels)
        ),
        "words its counts do not": forged(model, counts=sample.counts * 1000),
    }
    for problem, bad in cases.items():
        with pytest.raises(ModelFileError, match=problem):
            loads(dumps(bad), "forged.nbc")

    with pytest.raises(ModelFileError, match="sample short is not a whole number"):
        loads(dumps(replace(model, sample_short=-1)), "forged.nbc")


def test_a_model_read_for_scoring_skips_its_sample_and_cannot_be_saved(tmp_path, runner):
    """Batch predict and the service read a model for scoring: the sample, which no
    score depends on, is not built (a forged one does not change a probability), every
    command that uses it still refuses it, and such a model is never written back."""
    from nbclass.errors import ModelFileError

    path, bad = tmp_path / "auto.nbc", tmp_path / "forged.nbc"
    fit(runner, "fit", DEMO_CORPUS, "-o", path)
    model = load(str(path))
    bad.write_bytes(dumps(forged(model, counts=model.sample.counts * 1000)))
    scoring = loads(bad.read_bytes(), str(bad), scoring=True)
    assert scoring.scoring_only and scoring.sample is None and scoring.ledger is None
    assert not model.scoring_only and model.sample is not None
    with pytest.raises(ValueError, match="cannot write a model loaded for scoring alone"):
        dumps(scoring)
    with pytest.raises(ModelFileError, match="words its counts do not"):
        loads(bad.read_bytes(), str(bad))

    test = DEMO_CORPUS.parent / "demo-test"
    # Several files and two jobs: the forked workers' path; then one job.
    for jobs in ("2", "1"):
        options = ("--jobs", jobs, "--format", "jsonl", "--top-k", "3", test)
        good, forged_out = (run("predict", "-m", m, *options) for m in (path, bad))
        assert good.returncode == forged_out.returncode == 0, forged_out.stderr
        assert forged_out.stdout == good.stdout and good.stdout.count(b"\n") > 5
    for args in (["info", "-m", bad], ["fit", DEMO_CORPUS, "--update", bad]):
        refused = run(*args)
        assert refused.returncode != 0 and b"words its counts do not" in refused.stderr


# --- many classes: fewer of each class ----------------------------------------------------


def many_classes(root: Path) -> Path:
    """12 classes of 5 documents (a few words of the class's own and of a shared pool),
    written as root/all, root/a (classes k00 to k05 and the first document of every other
    class) and root/b (the rest)."""
    rng = np.random.default_rng(12)
    for c in range(12):
        for i in range(5):
            words = [f"own{c}x{j}" for j in rng.integers(0, 6, 8)]
            words += [f"pool{j}" for j in rng.integers(0, 30, 8)]
            text = " ".join(words) + "\n"
            for part in ("all", "a" if c < 6 or i == 0 else "b"):
                (root / part / f"k{c:02d}").mkdir(parents=True, exist_ok=True)
                (root / part / f"k{c:02d}" / f"{i}.txt").write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def few_of_each(monkeypatch):
    """A sample of 10 documents and at most 12 first documents of classes in all: of 12
    classes it keeps the first of each, of 6 classes the first 2 of each."""
    monkeypatch.setattr(sketch, "OVERALL", 10)
    monkeypatch.setattr(sketch, "REPRESENTATIVES", 12)


def test_past_many_classes_the_sample_keeps_fewer_of_each_and_stays_exact(
    tmp_path, runner, few_of_each
):
    """The sample of 12 classes is the first 10 documents by (digest, class) and the first
    1 of each class (not 5); fit of a half (12 classes, 7 of them by one document) updated
    with the other, and the merge of the halves, write the fresh fit's bytes; unlearning
    the second half (6 classes left, which keep 2 each) without a ledger counts the
    documents it cannot know as short, with a ledger it samples and chooses as the fit
    of the 6 classes (its file keeps the unlearned classes' exit codes and words)."""
    root = many_classes(tmp_path / "c")
    full, half_a, half_b = tmp_path / "all.nbc", tmp_path / "a.nbc", tmp_path / "b.nbc"
    for part, out in (("all", full), ("a", half_a), ("b", half_b)):
        fit(runner, "fit", root / part, "-o", out)
    model = load(str(full))
    ordered = sorted((hashlib.sha256(p.read_bytes()).digest(), p.parent.name)
                     for p in (root / "all").glob("*/*"))  # fmt: skip
    expected = set(ordered[:10]) | {next(x for x in ordered if x[1] == f"k{c:02d}")
                                    for c in range(12)}  # fmt: skip
    assert [(bytes(d), model.counts.classes[c]) for d, c in
            zip(model.sample.digests, model.sample.labels)] == sorted(expected)  # fmt: skip
    assert model.sample.n_documents < 10 + 12 * 2
    merged = tmp_path / "merged.nbc"
    fit(runner, "merge", half_a, half_b, "-o", merged)
    assert merged.read_bytes() == full.read_bytes()
    fit(runner, "fit", root / "b", "--update", half_a)
    assert half_a.read_bytes() == full.read_bytes()
    alone = tmp_path / "alone.nbc"  # the 6 classes k00 to k05 whole: 2 of each sampled
    (tmp_path / "six").mkdir()
    for c in range(6):
        shutil.copytree(root / "all" / f"k{c:02d}", tmp_path / "six" / f"k{c:02d}")
    fit(runner, "fit", tmp_path / "six", "-o", alone)
    assert np.bincount(load(str(alone)).sample.labels).min() >= 2
    rest = tmp_path / "rest"  # every document of k06 to k11
    for c in range(6, 12):
        shutil.copytree(root / "all" / f"k{c:02d}", rest / f"k{c:02d}")
    unlearned = tmp_path / "unlearned.nbc"
    fit(runner, "unlearn", rest, "-m", full, "-o", unlearned)
    short = load(str(unlearned))
    assert short.counts.equals(load(str(alone)).counts)
    held = np.bincount(short.sample.labels, minlength=6)
    assert short.sample_short >= int(np.maximum(2 - held, 0).sum()) > 0
    with_ledger, alone_ledger = tmp_path / "ledger.nbc", tmp_path / "alone-ledger.nbc"
    fit(runner, "fit", root / "all", "-o", with_ledger, "--ledger")
    fit(runner, "fit", tmp_path / "six", "-o", alone_ledger, "--ledger")
    fit(runner, "unlearn", rest, "-m", with_ledger)
    exact, fresh = load(str(with_ledger)), load(str(alone_ledger))
    assert exact.sample_short == 0  # its sample is the fresh fit's, 2 of each class
    assert exact.counts.classes == fresh.counts.classes
    assert names(exact.sample) == names(fresh.sample)
    assert exact.choice == fresh.choice



@pytest.mark.parametrize("ledger", [[], ["--ledger"]])
def test_a_file_of_5_of_each_class_past_many_classes_loads_and_chooses_the_same(
    tmp_path, runner, monkeypatch, ledger
):
    """A file written when the sample kept 5 of each class whatever their number loads
    (with a ledger too) and chooses from it as from the sample of today's rule, which it
    holds: the same file once chosen again."""
    root = many_classes(tmp_path / "c")
    monkeypatch.setattr(sketch, "OVERALL", 10)
    earlier, now = tmp_path / "earlier.nbc", tmp_path / "now.nbc"
    fit(runner, "fit", root / "all", "-o", earlier, *ledger)  # 5 of each of 12 classes
    monkeypatch.setattr(sketch, "REPRESENTATIVES", 12)
    fit(runner, "fit", root / "all", "-o", now, *ledger)
    old, new = load(str(earlier)), load(str(now))
    assert old.sample.n_documents == 60 > new.sample.n_documents
    from nbclass.models.model import with_choice

    again = with_choice(old)
    assert again.choice == new.choice and again.calibration == new.calibration
    assert dumps(replace(again, sample=new.sample)) == now.read_bytes()


def test_past_524_classes_the_calibration_of_its_first_documents_updates_and_merges_exactly(
    tmp_path,
):
    """600 classes of 8 short documents: the choice scores all 4,800 (5 folds), more than
    the first 2^21 / 600 = 3,495 its calibration is fitted on, so the calibration is that
    of a prefix in digest order. The first half updated with the second, the halves
    merged, and the second unlearned from the whole still write the fresh fits' bytes."""
    from nbclass.models import choosing

    rng = np.random.default_rng(9)
    root = tmp_path / "c"
    for c in range(600):
        own = [f"w{c % 60}", f"v{c // 60}"]  # 70 words: a dense table of few cells
        for i in range(8):
            words = [*rng.choice(own, size=4), *(f"w{k}" for k in rng.integers(0, 60, 2))]
            for part in ("all", "a" if i % 2 == 0 else "b"):
                folder = root / part / f"c{c:03d}"
                folder.mkdir(parents=True, exist_ok=True)
                (folder / f"{i}.txt").write_text(" ".join(words), encoding="utf-8")
    full, half_a, half_b = tmp_path / "all.nbc", tmp_path / "a.nbc", tmp_path / "b.nbc"
    for part, out in (("all", full), ("a", half_a), ("b", half_b)):
        assert run("fit", root / part, "-o", out, "-q").returncode == 0
    model = load(str(full))
    # (choosing.MANY_CLASSES is made from the sketch's sizes when choosing is imported,
    # which may be under another test's smaller sample: its parts, read here.)
    assert 600 * (sketch.OVERALL + sketch.REPRESENTATIVES) > choosing.CHOICE_CELLS
    assert max(choosing.CALIBRATION_CELLS // 600, choosing.CALIBRATION_LEAST) == 3495
    assert model.sample.n_documents == model.choice["documents"] == 4800
    assert load(str(half_a)).choice["documents"] == 2400  # calibrated on all of them
    assert_changes_write_fresh_fits(run, root / "b", full, half_a, half_b)


def test_past_the_dense_size_update_merge_and_unlearn_write_the_fresh_fits(tmp_path):
    """4,000 classes × 84,003 entries, 40,003 words and 44,000 word pairs (3.4 × 10^8
    weight cells, past the 2^24 of a dense table: the choice's folds are scored from the
    (entry, class) pairs), 12,000 lines at the defaults
    with a ledger: the first 8,000 updated with the last 4,000, the two parts merged,
    and the last 4,000 unlearned from the whole write the fresh fits' bytes (the test
    above has 70 words: tables of 42,000 cells)."""
    from nbclass.models.layout import dense_cells

    lines = [
        f"c{c:04d}\t" + " ".join(f"a{c:04d}x{(4 * k + m) % 10}" for m in range(4)) + f" s{k}"
        for k in range(3) for c in range(4000)
    ]  # fmt: skip
    parts = {"all": lines, "a": lines[:8000], "b": lines[8000:]}
    files = {}
    for name, part in parts.items():
        (tmp_path / f"{name}.tsv").write_text("\n".join(part) + "\n")
        files[name] = tmp_path / f"{name}.nbc"
        result = run("fit", "--lines", tmp_path / f"{name}.tsv", "--ledger", "-o", files[name],
                     "-q")  # fmt: skip
        assert result.returncode == 0, result.stderr
    model = load(str(files["all"]))
    V, C = len(model.counts.vocabulary), len(model.counts.classes)
    # a class's 10 words and s0, s1, s2; its pairs: x0 x1, x1 x2, x2 x3 | x4 x5, x5 x6,
    # x6 x7 | x8 x9, x9 x0, x0 x1 again (8) and x3 s0, x7 s1, x1 s2 (3), every line short
    assert (V, C) == (4_000 * 10 + 3 + 4_000 * (8 + 3), 4_000) and not dense_cells(V, C)
    assert chooses(model)
    updated, merged, unlearned = (tmp_path / f"{n}.nbc" for n in ("u", "m", "n"))
    shutil.copy(files["a"], updated)
    assert run("fit", "--lines", tmp_path / "b.tsv", "--update", updated, "-q").returncode == 0
    assert updated.read_bytes() == files["all"].read_bytes()
    assert run("merge", files["b"], files["a"], "-o", merged, "-q").returncode == 0
    assert merged.read_bytes() == files["all"].read_bytes()
    result = run("unlearn", "--lines", tmp_path / "b.tsv", "-m", files["all"], "-o", unlearned,
                 "-q")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert unlearned.read_bytes() == files["a"].read_bytes()


# --- the sample's rows, kept by the count --------------------------------------------------

MIXED = {
    "ascii": ["the server is down again", "server down, disk full", "", "a b c d", "x y z"]
    + [f"plain words {i} server {i % 7} disk full again and again" for i in range(40)],
    "wide": ["café crème brûlée", "naïve résumé café", "日本語のテキスト and words",
             "Ünïcödé ünïcödé words words"]
    + [f"crème {i} brûlée server {i % 5} naïve" for i in range(30)],
    "long": [" ".join(f"w{j % 97} server" for j in range(400)) for _ in range(3)]
    + ["the server is down again"],  # the same text as a document of another class
}


@pytest.mark.parametrize("ngram_range", [(1, 1), (1, 2), (1, 3)])
@pytest.mark.parametrize("jobs", [1, 2])
def test_the_count_keeps_the_samples_rows_a_count_of_its_texts_gives(
    tmp_path, monkeypatch, ngram_range, jobs
):
    """The rows of the sampled documents that the count keeps as it counts them
    (ASCII and UTF-8 texts by runs, texts longer than a chunk tokenized, empty ones) are
    those that counting the sampled texts again over the vocabulary gives, and no
    document is read and counted again."""
    from nbclass.counting import counts as counts_module
    from nbclass.models import learning
    from nbclass.reading.corpus import list_corpus
    from nbclass.text import runs
    from nbclass.text.tokenizer import TokenizerSettings

    for label, texts in MIXED.items():
        (tmp_path / label).mkdir()
        for i, text in enumerate(texts):
            (tmp_path / label / f"{i:03d}.txt").write_bytes(text.encode("utf-8"))
    (tmp_path / "wide" / "latin.txt").write_bytes("caf\xe9 server".encode("latin-1"))
    monkeypatch.setattr(sketch, "OVERALL", 80)  # a sample of most documents, not all
    monkeypatch.setattr(runs, "CHUNK_BYTES", 2000)  # the long ones tokenized in Python
    monkeypatch.setattr(counts_module, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(counts_module, "PART_SIZE", 10)
    corpus = list_corpus(str(tmp_path))
    tokenizer = TokenizerSettings(ngram_range=ngram_range)
    recount = learning.sample_rows
    recounted = []
    monkeypatch.setattr(learning, "sample_rows",
                        lambda items, *a, **k: recounted.append(items) or recount(items, *a, **k))
    documents = learning.count_documents(corpus, tokenizer, False, jobs, sample=True, keys=True)
    assert recounted == []
    keeper = learning.read_sketch(corpus, keys=True)
    items = [(d, name, keeper.decode(data)) for d, name, data in keeper.items(3)]
    expected = recount(items, documents.counts, tokenizer)
    got = documents.sample
    assert 80 <= got.n_documents < len(corpus.paths)
    for field in ("digests", "labels", "ptr", "words", "counts"):
        assert np.array_equal(getattr(got, field), getattr(expected, field)), field
    assert documents.keys == keeper.keys
    long_rows = [i for i, (_, name, _) in enumerate(items) if name == "long"]
    assert any(np.diff(got.ptr)[i] > 90 for i in long_rows)  # counted in Python, kept
    assert (np.diff(got.ptr) == 0).any()  # "a b c d" and "x y z": no token


def test_the_count_keeps_the_rows_of_sampled_documents_in_chunks_that_clash(
    tmp_path, monkeypatch
):
    """With one hash for every long word, chunks holding two of them are given back and
    tokenized: the sampled documents among them (gathered with the others) come back
    with their marks and their rows are kept all the same, those a count of their texts
    gives, and no document is read again."""
    from nbclass.counting import counts as counts_module
    from nbclass.counting import tally as tally_module
    from nbclass.models import learning
    from nbclass.reading.corpus import list_corpus
    from nbclass.text import runs
    from nbclass.text.tokenizer import TokenizerSettings

    for label, texts in MIXED.items():
        (tmp_path / label).mkdir()
        for i, text in enumerate(texts):
            extra = " abcdefghij" if i % 3 else " jihgfedcba"  # two long words, one hash
            (tmp_path / label / f"{i:03d}.txt").write_bytes((text + extra).encode("utf-8"))
    monkeypatch.setattr(runs, "_mix", lambda h: h * np.uint64(0))
    monkeypatch.setattr(sketch, "OVERALL", 80)
    monkeypatch.setattr(runs, "CHUNK_BYTES", 2000)
    monkeypatch.setattr(counts_module, "PART_SIZE", 10)
    tokenized = tally_module._tokenized
    marked = []
    monkeypatch.setattr(
        tally_module, "_tokenized",
        lambda documents, *a: tokenized(
            marked.extend(d for d in documents if len(d) == 3) or documents, *a
        ),
    )  # fmt: skip
    corpus = list_corpus(str(tmp_path))
    tokenizer = TokenizerSettings()
    recount = learning.sample_rows
    recounted = []
    monkeypatch.setattr(learning, "sample_rows",
                        lambda items, *a, **k: recounted.append(items) or recount(items, *a, **k))
    documents = learning.count_documents(corpus, tokenizer, False, 1, sample=True)
    assert recounted == [] and len(marked) >= 20  # the short ones too, not the long alone
    keeper = learning.read_sketch(corpus)
    items = [(d, name, keeper.decode(data)) for d, name, data in keeper.items(3)]
    expected = recount(items, documents.counts, tokenizer)
    for field in ("digests", "labels", "ptr", "words", "counts"):
        assert np.array_equal(getattr(documents.sample, field), getattr(expected, field)), field


@pytest.mark.parametrize("jobs", [1, 2])
def test_sampled_documents_past_the_bound_are_read_and_counted_again(
    tmp_path, monkeypatch, jobs
):
    """The count keeps the rows of the documents whose digests fall below their class's
    bound; a sampled document beyond it (here every one: bounds of 0, then bounds that
    keep half the range) is read and counted again after the count, the same rows and
    keys as when the count kept them all."""
    from nbclass.counting import counts as counts_module
    from nbclass.counting import sketch
    from nbclass.models import learning
    from nbclass.reading.corpus import list_corpus
    from nbclass.text.tokenizer import TokenizerSettings

    for label, texts in MIXED.items():
        (tmp_path / label).mkdir()
        for i, text in enumerate(texts):
            (tmp_path / label / f"{i:03d}.txt").write_bytes(text.encode("utf-8"))
    monkeypatch.setattr(sketch, "OVERALL", 60)
    monkeypatch.setattr(counts_module, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(counts_module, "PART_SIZE", 10)
    corpus = list_corpus(str(tmp_path))
    tokenizer = TokenizerSettings(ngram_range=(1, 2))
    whole = learning.count_documents(corpus, tokenizer, False, jobs, sample=True, keys=True)
    recount = learning.sample_rows
    for cut in (0, 1 << 63):
        recounted = []
        monkeypatch.setattr(learning, "bounds", lambda labels, C, cut=cut: [cut] * C)
        monkeypatch.setattr(
            learning, "sample_rows",
            lambda items, *a, into=recounted, **k: into.append(len(items))
            or recount(items, *a, **k),
        )  # fmt: skip
        again = learning.count_documents(corpus, tokenizer, False, jobs, sample=True, keys=True)
        n = whole.sample.n_documents
        assert 60 <= n < len(corpus.paths)
        above = sum(int.from_bytes(bytes(d[:8]), "big") >= cut for d in whole.sample.digests)
        assert recounted == [above] and above >= (n if cut == 0 else 1)
        for field in ("digests", "labels", "ptr", "words", "counts"):
            assert np.array_equal(getattr(again.sample, field), getattr(whole.sample, field))
        assert again.keys == whole.keys == learning.read_sketch(corpus, keys=True).keys


def test_a_tokenizer_without_runs_counts_the_sample_again(tmp_path, monkeypatch):
    """Where the count tokenizes every document in Python (a pattern of its own), it
    keeps no row, and the sample is counted again from its texts: the same rows."""
    from nbclass.models import learning
    from nbclass.reading.corpus import list_corpus
    from nbclass.text.tokenizer import TokenizerSettings

    for label, texts in MIXED.items():
        (tmp_path / label).mkdir()
        for i, text in enumerate(texts[:8]):
            (tmp_path / label / f"{i:03d}.txt").write_text(text, encoding="utf-8")
    corpus = list_corpus(str(tmp_path))
    tokenizer = TokenizerSettings(token_pattern=r"(?u)\b\w+\b")
    documents = learning.count_documents(corpus, tokenizer, False, 1, sample=True)
    keeper = learning.read_sketch(corpus)
    items = [(d, name, keeper.decode(data)) for d, name, data in keeper.items(3)]
    expected = learning.sample_rows(items, documents.counts, tokenizer)
    for field in ("digests", "labels", "ptr", "words", "counts"):
        assert np.array_equal(getattr(documents.sample, field), getattr(expected, field))


def test_a_sampled_document_changed_before_it_is_read_again_is_one_error(tmp_path, monkeypatch):
    """A sampled document whose rows the count did not keep (here every one: bounds of 0)
    is read again after the count; one that changed since (its digest is not the one the
    sample was chosen by) stops the fit with one line naming it, and no model is written."""
    from click.testing import CliRunner

    from nbclass.models import learning

    corpus = tmp_path / "demo"
    shutil.copytree(DEMO_CORPUS, corpus)
    monkeypatch.setattr(learning, "bounds", lambda labels, C: [0] * C)
    real, changed = learning.read_document, []

    def read_after_a_change(path, *args, **kwargs):
        if not changed:  # the first document read again is changed on disk first
            changed.append(str(path))
            Path(path).write_bytes(Path(path).read_bytes() + b" edited")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(learning, "read_document", read_after_a_change)
    out = tmp_path / "m.nbc"
    result = CliRunner().invoke(cli, ["fit", str(corpus), "-o", str(out), "-j", "1", "-q"])
    assert result.exit_code == 1, result.output
    assert changed and changed[0].startswith(str(corpus))
    assert result.output == (
        f"Error: {changed[0]!r} changed while fit read it: fit again once the corpus is left "
        "as it is\n"
    )
    assert not out.exists()


@pytest.mark.parametrize("change", ["removed", "link-moved", "rewritten-alike"])
def test_a_sampled_document_gone_or_rewritten_before_it_is_read_again(
    tmp_path, monkeypatch, change
):
    """The documents read again after the count (bounds of 0: every sampled one) as they
    may be found: the first removed, or a symbolic link to it pointed at another document
    of the corpus, stops the fit with the one line and no model; rewritten with the same
    bytes (a new file), it is the same document, and the model is the one fit writes when
    nothing is touched, byte for byte."""
    from click.testing import CliRunner

    from nbclass.models import learning

    corpus = tmp_path / "demo"
    shutil.copytree(DEMO_CORPUS, corpus)
    link = corpus / "billing" / "linked.txt"
    link.symlink_to(corpus / "account" / "001.txt")
    untouched = tmp_path / "untouched.nbc"
    result = CliRunner().invoke(cli, ["fit", str(corpus), "-o", str(untouched), "-j", "1"])
    assert result.exit_code == 0, result.output
    monkeypatch.setattr(learning, "bounds", lambda labels, C: [0] * C)
    real, touched = learning.read_document, []

    def read_after_a_change(path, *args, **kwargs):
        if not touched and (change != "link-moved" or Path(path) == link):
            touched.append(str(path))
            if change == "removed":
                Path(path).unlink()
            elif change == "link-moved":
                link.unlink()
                link.symlink_to(corpus / "outage" / "001.txt")
            else:
                data = Path(path).read_bytes()
                Path(path).unlink()
                Path(path).write_bytes(data)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(learning, "read_document", read_after_a_change)
    out = tmp_path / "m.nbc"
    result = CliRunner().invoke(cli, ["fit", str(corpus), "-o", str(out), "-j", "1", "-q"])
    assert touched, "the document was not read again"
    if change == "rewritten-alike":
        assert result.exit_code == 0, result.output
        assert out.read_bytes() == untouched.read_bytes()
        return
    assert result.exit_code == 1, result.output
    assert result.output == (
        f"Error: {touched[0]!r} changed while fit read it: fit again once the corpus is left "
        "as it is\n"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "tokenizer",
    [
        dict(),
        dict(ngram_range=(1, 2)),
        dict(symbols=True),
        dict(unspaced="all", symbols=True),
        dict(stop_words=("the", "and"), stop_words_source="english"),
        dict(lowercase=False),
        dict(hash_features=64),
    ],
    ids=["words", "pairs", "symbols", "unspaced", "stop-words", "cased", "hashed"],
)
def test_sampled_documents_counted_over_the_words_they_meet_give_the_whole_vocabularys_rows(
    tmp_path, tokenizer
):
    """A few documents counted again (those the count did not keep) are counted over the
    words their tokens meet, not over every word of the vocabulary: the same ledger rows,
    field for field, as counting them over the whole vocabulary, for every tokenizer."""
    from nbclass.models import learning
    from nbclass.reading.corpus import list_corpus
    from nbclass.text.tokenizer import TokenizerSettings
    from nbclass.text.vectorizer import TextCounter

    settings = TokenizerSettings(**tokenizer)
    for label, texts in MIXED.items():
        (tmp_path / label).mkdir()
        for i, text in enumerate(texts):
            (tmp_path / label / f"{i:03d}.txt").write_bytes(text.encode("utf-8"))
    extra = {"ascii": ["Server DOWN?! :) the disk, the disk", "brand-new words only here"],
             "wide": ["日本語 のテキスト、 café!!", "crème"]}  # fmt: skip
    counts = learning.count_documents(list_corpus(str(tmp_path)), settings, False, 1).counts
    items = [
        (bytes([k]) * DIGEST_SIZE, name, text)
        for k, (name, text) in enumerate(
            [(n, t) for n, ts in MIXED.items() for t in ts[:6]]
            + [(n, t) for n, ts in extra.items() for t in ts]
        )
    ]
    whole = learning.sample_rows(items, counts, settings, met_only=False)
    met = learning.sample_rows(items, counts, settings, met_only=True)
    assert whole.n_documents == len(items) and whole.words.size > 50
    for field in ("digests", "labels", "ptr", "words", "counts"):
        assert np.array_equal(getattr(met, field), getattr(whole, field)), field
    words, columns = learning.words_met([t for _, _, t in items], counts.vocabulary, settings)
    assert np.all(np.diff(columns) > 0) and words == tuple(counts.vocabulary[j] for j in columns)
    assert set(np.unique(whole.words).tolist()) <= set(columns.tolist())
    # The rows are those of the texts' canonical CSR count matrix (scipy's), with one
    # thread or two.
    X = TextCounter(settings, counts.vocabulary).count([t for _, _, t in items])[0]
    X.eliminate_zeros()
    X.sort_indices()
    for threads in (1, 2):
        rows = learning.sample_rows(items, counts, settings, threads, met_only=False)
        assert rows.ptr.dtype == rows.words.dtype == rows.counts.dtype == np.int64
        assert np.array_equal(rows.ptr, X.indptr) and np.array_equal(rows.words, X.indices)
        assert np.array_equal(rows.counts, X.data)


@pytest.mark.parametrize("V", [1_100_000, 300_000, 40_000])
def test_sampled_rows_sorted_by_scipy(V):
    """The sample's rows are put in order by scipy's conversion: the places, columns
    and summed counts np.unique of the (place, column) numbers gives (past 2^32, as 20
    Newsgroups with word pairs: 6,000 documents x 1.2 million columns; below it; and
    below 2^16 words), of the types the 16-bit passes it replaced gave: the places' and
    the columns' own, and the counts as np.add.reduceat sums them (int32 made int64)."""
    from nbclass.counting import counts as counting

    rng = np.random.default_rng(2026)
    n_rows, n_marks, size = 300_000, 5_000, 200_000
    column = rng.integers(0, V, n_rows)  # two rows may share a column: their counts add
    places = rng.permutation(n_marks).astype(np.int64)
    places[rng.choice(n_marks, 300, replace=False)] = -1  # read, not sampled
    parts = []
    for _ in range(3):
        marks = rng.integers(0, n_marks, size).astype(np.int32)
        rows = rng.integers(0, n_rows, size)
        parts.append((np.unique(marks), marks, rows, rng.integers(1, 9, size).astype(np.int32)))
    assert ((int(places.max()) + 1) * V > 2**32) == (V > 2**20)
    by_scipy = counting._sampled_by_column(parts, column, V, places)
    assert [a.dtype for a in by_scipy] == [places.dtype, places.dtype, column.dtype, np.int64]
    marks = places[np.concatenate([p[1] for p in parts])]
    keys = marks * V + column[np.concatenate([p[2] for p in parts])]
    inside = marks >= 0
    keys, at = np.unique(keys[inside], return_inverse=True)
    sums = np.bincount(at, weights=np.concatenate([p[3] for p in parts])[inside])
    assert by_scipy[1].tolist() == (keys // V).tolist()
    assert by_scipy[2].tolist() == (keys % V).tolist()
    assert by_scipy[3].tolist() == sums.astype(np.int64).tolist()
