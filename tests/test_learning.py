"""The model is a sum of counts: update, merge, unlearn, sync and --lines, bit for bit.

Every test compares model *files*: the bytes written after a sequence of operations must
equal the bytes of one fit of the resulting documents.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import DEMO_CORPUS, NAMED, write_corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nbclass.cli.app import cli
from nbclass.counting.ledger import canonical, from_entries
from nbclass.modelfile.textfile import dumps, load
from nbclass.models.learning import (
    combine,
    corpus_keys,
    count_documents,
    count_lines,
    parse_labelled_line,
    sync,
    unlearn_counts,
    unlearn_keys,
    update,
)
from nbclass.models.model import Model, fit
from nbclass.reading.corpus import list_corpus
from nbclass.text.tokenizer import TokenizerSettings

TOKENIZER = TokenizerSettings()


def invoke(runner, *args, input=None):
    result = runner.invoke(cli, [str(a) for a in args], input=input)
    return result


def demo_subset(root: Path, names: dict[str, list[int]]) -> Path:
    """Copy the chosen demo documents ({class: [numbers]}) to root/class/NNN.txt."""
    for label, numbers in names.items():
        (root / label).mkdir(parents=True, exist_ok=True)
        for n in numbers:
            name = f"{n:03d}.txt"
            shutil.copy(DEMO_CORPUS / label / name, root / label / name)
    return root


FIRST = {"account": [1, 2, 3, 4, 5], "billing": [1, 2, 3, 4, 5, 6]}
SECOND = {"billing": [7, 8, 9], "outage": [1, 2, 3, 4, 5, 6, 7]}
BOTH = {
    "account": [1, 2, 3, 4, 5],
    "billing": [1, 2, 3, 4, 5, 6, 7, 8, 9],
    "outage": [1, 2, 3, 4, 5, 6, 7],
}


@pytest.mark.parametrize("ledger", [False, True])
def test_fit_update_equals_one_fit_bit_for_bit(tmp_path, runner, ledger):
    """New words and a new class (outage) arrive with the update."""
    first = demo_subset(tmp_path / "first", FIRST)
    second = demo_subset(tmp_path / "second", SECOND)
    both = demo_subset(tmp_path / "both", BOTH)
    flag = ["--ledger"] if ledger else []
    model, whole = tmp_path / "m.nbc", tmp_path / "whole.nbc"
    assert invoke(runner, "fit", first, "-o", model, *NAMED, *flag).exit_code == 0
    result = invoke(runner, "fit", second, "--update", model)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("update: +10 documents, now 21 documents, 3 classes, ")
    assert invoke(runner, "fit", both, "-o", whole, *NAMED, *flag).exit_code == 0
    assert model.read_bytes() == whole.read_bytes()
    assert (load(model).ledger is not None) == ledger


def test_update_keeps_the_models_tokenizer_and_refuses_a_different_one(tmp_path, runner):
    first = demo_subset(tmp_path / "first", FIRST)
    second = demo_subset(tmp_path / "second", SECOND)
    model = tmp_path / "m.nbc"
    invoke(runner, "fit", first, "-o", model, "--ngram-range", "1,2", "--stop-words", "english")
    before = model.read_bytes()
    result = invoke(runner, "fit", second, "--update", model, "--ngram-range", "1,3")
    assert result.exit_code == 2
    assert result.output == (
        "Error: the model has different tokenizer settings (ngram range: 1,2 vs 1,3): "
        "counts made with different tokenizers cannot be added; use the same settings\n"
    )
    assert model.read_bytes() == before
    # Without tokenizer options, the model's own settings are used.
    assert invoke(runner, "fit", second, "--update", model).exit_code == 0
    assert load(model).tokenizer.ngram_range == (1, 2)


def test_update_a_model_without_a_ledger_cannot_start_one(tmp_path, runner):
    first = demo_subset(tmp_path / "first", FIRST)
    model = tmp_path / "m.nbc"
    invoke(runner, "fit", first, "-o", model)
    result = invoke(runner, "fit", first, "--update", model, "--ledger")
    assert result.exit_code == 2
    assert "keeps no ledger" in result.output


@pytest.mark.parametrize("ledger", [False, True])
def test_merge_of_shards_equals_one_fit(tmp_path, runner, ledger):
    flag = ["--ledger"] if ledger else []
    a, b, whole = tmp_path / "a.nbc", tmp_path / "b.nbc", tmp_path / "whole.nbc"
    invoke(runner, "fit", demo_subset(tmp_path / "a", FIRST), "-o", a, *NAMED, *flag)
    invoke(runner, "fit", demo_subset(tmp_path / "b", SECOND), "-o", b, *NAMED, *flag)
    invoke(runner, "fit", demo_subset(tmp_path / "whole", BOTH), "-o", whole, *NAMED, *flag)
    out = tmp_path / "merged.nbc"
    result = invoke(runner, "merge", a, b, "-o", out)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("merge: 2 models, 21 documents, 3 classes, ")
    assert out.read_bytes() == whole.read_bytes()
    out2 = tmp_path / "merged2.nbc"
    invoke(runner, "merge", b, a, "-o", out2)  # the order changes only the exit codes:
    merged = load(str(out2))  # the first model's win, and b has no account
    assert merged.codes == {"billing": 10, "outage": 11, "account": 12}
    assert dumps(replace(merged, exit_codes=None)) == whole.read_bytes()


def test_merge_refuses_different_tokenizers_naming_the_difference(tmp_path, runner):
    a, b = tmp_path / "a.nbc", tmp_path / "b.nbc"
    invoke(runner, "fit", demo_subset(tmp_path / "a", FIRST), "-o", a)
    invoke(runner, "fit", demo_subset(tmp_path / "b", SECOND), "-o", b, "--no-lowercase")
    result = invoke(runner, "merge", a, b, "-o", tmp_path / "out.nbc")
    assert result.exit_code == 2
    assert result.output == (
        f"Error: {b} (compared with {a}) has different tokenizer settings (lowercase: True "
        "vs False): counts made with different tokenizers cannot be added; use the same "
        "settings\n"
    )
    assert not (tmp_path / "out.nbc").exists()


def test_merge_of_a_ledger_and_a_plain_model_drops_the_ledger(tmp_path, runner):
    a, b = tmp_path / "a.nbc", tmp_path / "b.nbc"
    invoke(runner, "fit", demo_subset(tmp_path / "a", FIRST), "-o", a, "--ledger", *NAMED)
    invoke(runner, "fit", demo_subset(tmp_path / "b", SECOND), "-o", b, *NAMED)
    with pytest.warns(Warning, match="not every model keeps a ledger"):
        merged = combine([load(a), load(b)], ["a", "b"])
    assert merged.ledger is None
    assert merged.counts.n_docs == 21


@pytest.mark.parametrize("ledger", [False, True])
def test_unlearn_gives_the_fit_of_the_rest(tmp_path, runner, ledger):
    flag = ["--ledger"] if ledger else []
    model, rest = tmp_path / "m.nbc", tmp_path / "rest.nbc"
    invoke(runner, "fit", demo_subset(tmp_path / "both", BOTH), "-o", model, *NAMED, *flag)
    invoke(runner, "fit", demo_subset(tmp_path / "first", FIRST), "-o", rest, *NAMED, *flag)
    # Unlearning every outage document removes the class, as a fit without it would; its
    # exit code stays reserved for it (a new class must not be routed as an outage).
    result = invoke(runner, "unlearn", demo_subset(tmp_path / "second", SECOND), "-m", model)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("unlearn: -10 documents, now 11 documents, 2 classes, ")
    unlearned = load(str(model))
    assert unlearned.codes == {"account": 10, "billing": 11, "outage": 12}
    assert dumps(replace(unlearned, exit_codes=None)) == rest.read_bytes()


def test_unlearn_with_a_ledger_names_a_document_never_learned(tmp_path, runner):
    model = tmp_path / "m.nbc"
    invoke(runner, "fit", demo_subset(tmp_path / "first", FIRST), "-o", model, "--ledger")
    before = model.read_bytes()
    # A document it learned, but under another class: refused, nothing written.
    wrong = demo_subset(tmp_path / "wrong", {"billing": [1]})
    (wrong / "billing" / "001.txt").replace(wrong / "billing" / "x.txt")
    (wrong / "account").mkdir()
    shutil.copy(DEMO_CORPUS / "billing" / "001.txt", wrong / "account" / "y.txt")
    result = invoke(runner, "unlearn", wrong, "-m", model)
    assert result.exit_code == 1
    assert result.output == (
        f"Error: '{wrong / 'account' / 'y.txt'}' was never learned as class 'account' (no "
        "document with its content and class in the model's ledger); nothing was changed\n"
    )
    assert model.read_bytes() == before
    # Learned once, unlearned twice: the second time it is refused.
    once = demo_subset(tmp_path / "once", {"account": [3]})
    assert invoke(runner, "unlearn", once, "-m", model).exit_code == 0
    assert invoke(runner, "unlearn", once, "-m", model).exit_code == 1


def test_unlearn_without_a_ledger_refuses_impossible_counts(tmp_path, runner):
    model = tmp_path / "m.nbc"
    invoke(runner, "fit", demo_subset(tmp_path / "first", FIRST), "-o", model)
    before = model.read_bytes()
    stranger = write_corpus(tmp_path / "stranger", {"account": ["zebra crossing"]})
    result = invoke(runner, "unlearn", stranger, "-m", model)
    assert result.exit_code == 1
    assert result.output == (
        "Error: cannot unlearn: the word 'crossing' is not in the model; nothing was changed "
        "(a model fitted with --ledger names the document)\n"
    )
    too_many = write_corpus(tmp_path / "many", {"account": ["my password"] * 6})
    result = invoke(runner, "unlearn", too_many, "-m", model)
    assert result.exit_code == 1
    assert "never learned these documents: the remainder would have negative counts" in (
        result.output
    )
    assert model.read_bytes() == before


def test_sync_follows_a_folder_and_equals_a_fresh_fit(tmp_path, runner):
    inbox = demo_subset(tmp_path / "inbox", FIRST)
    model, fresh = tmp_path / "live.nbc", tmp_path / "fresh.nbc"

    def synced(expected: str):
        result = invoke(runner, "sync", inbox, "-m", model, *NAMED)
        assert result.exit_code == 0, result.output
        assert result.output == expected + f" -> {model}" + "\n"
        assert invoke(runner, "fit", inbox, "-o", fresh, "--ledger", "-q", *NAMED).exit_code == 0
        assert model.read_bytes() == fresh.read_bytes()

    synced("sync: 11 added, 0 removed, 0 relabelled, 0 unchanged, 11 documents")
    mtime = model.stat().st_mtime_ns
    result = invoke(runner, "sync", inbox, "-m", model, *NAMED)
    assert result.output.endswith("11 unchanged, 11 documents -> " + f"{model} (unchanged)\n")
    assert model.stat().st_mtime_ns == mtime  # nothing rewritten
    # A new class, a deletion, a move to another class folder and a brand new file.
    demo_subset(inbox, {"outage": [1, 2]})
    (inbox / "account" / "001.txt").unlink()
    (inbox / "billing" / "002.txt").replace(inbox / "account" / "moved.txt")
    (inbox / "billing" / "fresh.txt").write_text("a completely new invoice dispute")
    synced("sync: 3 added, 1 removed, 1 relabelled, 9 unchanged, 13 documents")
    # Two identical files count twice; removing one of them removes one.
    shutil.copy(inbox / "outage" / "001.txt", inbox / "outage" / "copy.txt")
    synced("sync: 1 added, 0 removed, 0 relabelled, 13 unchanged, 14 documents")
    (inbox / "outage" / "001.txt").unlink()
    synced("sync: 0 added, 1 removed, 0 relabelled, 13 unchanged, 13 documents")


def test_sync_refuses_a_model_without_a_ledger(tmp_path, runner):
    inbox = demo_subset(tmp_path / "inbox", FIRST)
    model = tmp_path / "m.nbc"
    invoke(runner, "fit", inbox, "-o", model)
    result = invoke(runner, "sync", inbox, "-m", model)
    assert result.exit_code == 2
    assert "keeps no ledger" in result.output


def test_sync_json_report(tmp_path, runner):
    inbox = demo_subset(tmp_path / "inbox", FIRST)
    result = invoke(runner, "sync", inbox, "-m", tmp_path / "m.nbc", "--format", "json")
    assert result.output == (
        '{"added": 11, "removed": 0, "relabelled": 0, "unchanged": 0, "documents": 11, '
        f'"model": "{tmp_path / "m.nbc"}"}}\n'
    )


def test_sync_refuses_options_that_change_an_existing_models_settings(tmp_path, runner):
    """The same options again (a cron line) are fine; other ones are refused with exit 2
    and the model left as it was, so it stays the fit of the folder with its settings."""
    inbox = demo_subset(tmp_path / "inbox", FIRST)
    model, fresh = tmp_path / "live.nbc", tmp_path / "fresh.nbc"
    assert invoke(runner, "sync", inbox, "-m", model, *NAMED).exit_code == 0
    before = model.read_bytes()
    result = invoke(runner, "sync", inbox, "-m", model, *NAMED)
    assert result.exit_code == 0 and result.output.endswith("(unchanged)\n")
    (inbox / "billing" / "fresh.txt").write_text("a completely new invoice dispute")
    for options, changed in (
        (["--model", "bernoulli"], "--model bernoulli --beta 1 --tf raw --no-prior-fit"),
        ([*NAMED, "--min-df", "2"], "--min-df 2"),
        ([*NAMED, "--alpha", "0.5"], "--alpha 0.5"),
    ):
        result = invoke(runner, "sync", inbox, "-m", model, *options)
        assert result.exit_code == 2, result.output
        assert result.output == (
            f"Error: sync keeps the settings {str(model)!r} was fitted with, and the options "
            f"given change them ({changed}): to change a model's settings, fit the folder "
            f"anew with the options you want (nbclass fit {inbox} --ledger -o {model} "
            "OPTIONS), or leave them out of sync\n"
        )
        assert model.read_bytes() == before
    result = invoke(runner, "sync", inbox, "-m", model, "--model", "auto")
    assert result.exit_code == 2 and "--model auto would change them" in result.output
    # Without options the model keeps its settings and learns the new file.
    result = invoke(runner, "sync", inbox, "-m", model)
    assert result.output == (
        f"sync: 1 added, 0 removed, 0 relabelled, 11 unchanged, 12 documents -> {model}\n"
    )
    assert invoke(runner, "fit", inbox, "-o", fresh, "--ledger", "-q", *NAMED).exit_code == 0
    assert model.read_bytes() == fresh.read_bytes()


def test_sync_of_a_chosen_model_accepts_model_auto_again(tmp_path, runner):
    inbox = demo_subset(tmp_path / "inbox", FIRST)
    model = tmp_path / "live.nbc"
    assert invoke(runner, "sync", inbox, "-m", model, "--model", "auto").exit_code == 0
    before = model.read_bytes()
    result = invoke(runner, "sync", inbox, "-m", model, "--model", "auto")
    assert result.exit_code == 0 and result.output.endswith("(unchanged)\n")
    result = invoke(runner, "sync", inbox, "-m", model, *NAMED)
    assert result.exit_code == 2 and "the options given change them (--model complement" in (
        result.output
    )
    assert model.read_bytes() == before


def test_parse_labelled_line():
    assert parse_labelled_line("spam\twin cash\tnow", "x") == ("spam", "win cash\tnow")
    assert parse_labelled_line("__label__ham see you at 6", "x") == ("ham", "see you at 6")
    with pytest.raises(Exception, match="line 3 has no label"):
        parse_labelled_line("no label here", "line 3")
    with pytest.raises(Exception, match="more than one __label__"):
        parse_labelled_line("__label__a __label__b text", "x")
    with pytest.raises(Exception, match="empty label"):
        parse_labelled_line("\ttext", "x")


@pytest.mark.parametrize("ledger", [False, True])
def test_fit_lines_equals_a_fit_of_the_same_files(tmp_path, runner, ledger):
    """Files whose bytes are a line's text are the same documents, ledger included."""
    documents = {
        "ham": ["see you at 6", "call mum tonight", "call me"],
        "spam": ["win cash now", "cash prize call now"],
    }
    folder = write_corpus(tmp_path / "folder", documents)
    lines = [f"{label}\t{text}" for label, texts in documents.items() for text in texts]
    lines[1] = "__label__ham call mum tonight"  # fastText's form, mixed in
    (tmp_path / "train.txt").write_text("\n".join(reversed(lines)) + "\n\n")
    flag = ["--ledger"] if ledger else []
    a, b, c = tmp_path / "a.nbc", tmp_path / "b.nbc", tmp_path / "c.nbc"
    assert invoke(runner, "fit", folder, "-o", a, *flag).exit_code == 0
    result = invoke(runner, "fit", "--lines", tmp_path / "train.txt", "-o", b, *flag)
    assert result.exit_code == 0, result.output
    assert a.read_bytes() == b.read_bytes()
    stdin = "\n".join(lines)
    assert invoke(runner, "fit", "--lines", "-", "-o", c, *flag, input=stdin).exit_code == 0
    assert c.read_bytes() == a.read_bytes()
    # --update and unlearn read lines too. (A named model: the typicality that fit's choice
    # measures describes the counts it was measured on, and is dropped once they change.)
    named = tmp_path / "named.nbc"
    result = invoke(runner, "fit", "--lines", "-", "-o", named, *NAMED, *flag, input=stdin)
    assert result.exit_code == 0
    before = named.read_bytes()
    more = "spam\tfree cash\nham\tdinner at 8\n"
    assert invoke(runner, "fit", "--lines", "-", "--update", named, input=more).exit_code == 0
    assert load(named).counts.n_docs == 7
    assert invoke(runner, "unlearn", "--lines", "-", "-m", named, input=more).exit_code == 0
    assert named.read_bytes() == before


def test_fit_lines_errors(tmp_path, runner):
    out = tmp_path / "m.nbc"
    result = invoke(runner, "fit", "--lines", "-", "-o", out, input="ham\thi\nno label\n")
    assert (result.exit_code, result.output) == (
        1,
        "Error: line -:2 has no label: write LABEL<TAB>TEXT or __label__LABEL TEXT\n",
    )
    result = invoke(runner, "fit", "--lines", "-", "-o", out, input="ham\thi\nham\tho\n")
    assert result.exit_code == 1
    assert "only one class ('ham')" in result.output
    result = invoke(runner, "fit", DEMO_CORPUS, "--lines", "-", "-o", out, input="")
    assert (result.exit_code, result.output.splitlines()[-1]) == (
        2,
        "Error: give a CORPUS_DIR, --lines FILE or --table FILE (one of them)",
    )
    assert not out.exists()


# ---------------------------------------------------------------------------------------
# Reproducibility: any sequence of update / merge / unlearn / sync gives the same model.

WORDS = ["ant", "bee", "cat", "dog", "eel", "fox"]
DOC = st.tuples(st.lists(st.sampled_from(WORDS), min_size=0, max_size=5), st.sampled_from("xyz"))


def _documents(docs, ledger=True):
    """Documents of [(words, label)] through count_lines (text = the words)."""
    lines = [(str(i), f"{label}\t{' '.join(words)}") for i, (words, label) in enumerate(docs)]
    return count_lines(lines, TOKENIZER, ledger)


def _model(docs, ledger=True) -> Model:
    documents = _documents(docs, ledger)
    return Model(documents.counts, TOKENIZER, ledger=documents.ledger)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(DOC, min_size=2, max_size=12),
    st.lists(DOC, min_size=1, max_size=6),
    st.randoms(use_true_random=False),
)
def test_any_sequence_of_operations_gives_the_fresh_fit(base, extra, rnd):
    """update(A, B), merge(B, A), unlearn(update(A,B), B): each equals the fit of its docs."""
    base = [d for d in base if d[0]] or [(["ant"], "x")]
    extra = [d for d in extra if d[0]] or [(["bee"], "y")]
    whole = base + extra
    shuffled = whole[:]
    rnd.shuffle(shuffled)
    expected = dumps(_model(whole))
    assert dumps(_model(shuffled)) == expected
    # The exit codes are history (nbclass.models.exitcodes): the first model's classes keep
    # theirs, new ones take the free codes; the file is the fresh fit's whenever those are
    # the sorted codes, and apart from the codes always.
    updated = update(_model(base), _documents(extra))
    _check_codes(updated, _model(base), expected)
    merged = combine([_model(extra), _model(base)], ["b", "a"])
    _check_codes(merged, _model(extra), expected, later=_model(base))
    # unlearn by keys (ledger) and by counts (no ledger)
    grown = update(_model(whole), _documents(extra))
    keys = grown.ledger.keys(grown.counts.classes)
    extra_docs = _documents(extra)
    extra_keys = extra_docs.ledger.keys(extra_docs.counts.classes)
    assert len(keys) == len(whole) + len(extra)
    unlearned = unlearn_keys(grown, extra_keys, ["?"] * len(extra_keys))
    _check_codes(unlearned, grown, expected)
    plain = unlearn_counts(_model(whole + extra, False), _documents(extra, False))
    _check_codes(plain, _model(whole + extra, False), dumps(_model(whole, False)))


def _check_codes(result: Model, first: Model, expected: bytes, later=None) -> None:
    """``result`` is the file ``expected`` but for its exit codes, which keep ``first``'s;
    a class of the ``later`` model merged keeps its code there when it is free; every
    other class takes the smallest free code, in sorted order."""
    assert dumps(replace(result, exit_codes=None)) == expected
    codes = dict(first.codes)
    if later is not None:
        for name, code in later.codes.items():
            if name not in codes and code not in codes.values():
                codes[name] = code
    new = sorted(set(result.counts.classes) - set(codes))
    free = [code for code in range(10, 125) if code not in codes.values()]
    assert result.codes == {**codes, **dict(zip(new, free))}
    if result.codes == dict(zip(sorted(result.counts.classes), range(10, 125))):
        assert dumps(result) == expected


def test_sync_sequences_equal_a_fresh_fit(tmp_path):
    """Random additions, deletions and moves, synced one step at a time."""
    rnd = random.Random(7)
    inbox = demo_subset(tmp_path / "inbox", FIRST)
    model = fit(list_corpus(str(inbox)), TOKENIZER, ledger=True)
    pool = [(label, n) for label in ("account", "billing", "outage") for n in range(1, 15)]
    for step in range(6):
        files = sorted(inbox.rglob("*.txt"))
        for path in rnd.sample(files, 2):
            if rnd.random() < 0.5:
                path.unlink()
            else:
                target = inbox / rnd.choice(["account", "billing"]) / f"m{step}-{path.name}"
                path.replace(target)
        label, n = rnd.choice(pool)
        (inbox / label).mkdir(exist_ok=True)
        shutil.copy(DEMO_CORPUS / label / f"{n:03d}.txt", inbox / label / f"s{step}.txt")
        corpus = list_corpus(str(inbox))
        model, report = sync(model, corpus)
        assert report.added + report.relabelled + report.unchanged == len(corpus.paths)
        fresh = fit(corpus, TOKENIZER, ledger=True)
        assert dumps(model) == dumps(fresh)


def test_ledger_sums_to_the_counts_and_is_checked_on_load(tmp_path):
    model = fit(list_corpus(str(DEMO_CORPUS)), TOKENIZER, ledger=True)
    plain = fit(list_corpus(str(DEMO_CORPUS)), TOKENIZER)
    assert model.counts.equals(plain.counts)
    assert model.ledger.n_documents == 42
    keys, _ = corpus_keys(list_corpus(str(DEMO_CORPUS)))
    assert sorted(keys) == model.ledger.keys(model.counts.classes)
    # A ledger entry changed by one token no longer sums to the counts: refused.
    from nbclass.modelfile.textfile import loads

    tampered = Model(
        model.counts,
        TOKENIZER,
        ledger=type(model.ledger)(
            model.ledger.digests,
            model.ledger.labels,
            model.ledger.ptr,
            model.ledger.words,
            model.ledger.counts + np.eye(1, model.ledger.counts.size, 0, dtype=np.int64)[0],
        ),
    )
    with pytest.raises(Exception, match="the counts are not the sum of the ledger"):
        loads(dumps(tampered))


def test_canonical_is_independent_of_entry_order():
    vocabulary = ("a", "b", "c")
    entries = [
        (bytes([i]) * 32, i % 2, __import__("collections").Counter({"a": i + 1, "c": 1}))
        for i in range(5)
    ]
    one, counts_one = canonical(from_entries(entries, vocabulary), ("x", "y"), vocabulary)
    two, counts_two = canonical(from_entries(entries[::-1], vocabulary), ("x", "y"), vocabulary)
    assert counts_one.equals(counts_two)
    assert counts_one.vocabulary == ("a", "c")  # "b" has no token
    assert np.array_equal(one.digests, two.digests) and np.array_equal(one.words, two.words)


def test_count_documents_with_and_without_ledger_agree():
    corpus = list_corpus(str(DEMO_CORPUS))
    a = count_documents(corpus, TOKENIZER, ledger=True)
    b = count_documents(corpus, TOKENIZER, ledger=False)
    assert a.counts.equals(b.counts)
    assert a.ledger.sum_counts(a.counts.classes, a.counts.vocabulary).equals(a.counts)
