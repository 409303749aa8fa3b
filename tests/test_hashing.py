"""Feature hashing: columns computed independently, exact counts, additive, words kept."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from conftest import DEMO_CORPUS, DEMO_DOCS, NAMED, write_corpus

from nbclass.cli.app import cli
from nbclass.counting.counts import as_table
from nbclass.modelfile.textfile import dumps, load, loads
from nbclass.models.model import fit
from nbclass.reading.corpus import list_corpus
from nbclass.text.hashing import parse_hash_features
from nbclass.text.tokenizer import TokenizerSettings, make_tokenizer

PLAIN = TokenizerSettings()


def column(word: str, n: int) -> str:
    """The column by the definition in the README, computed here from hashlib directly."""
    h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
    width = len(format(n - 1, "x"))
    return "#" + format(h % n, f"0{width}x")


def test_parse_hash_features():
    assert parse_hash_features("2^18") == 262144
    assert parse_hash_features("2**4") == 16
    assert parse_hash_features("1000") == 1000
    for bad in ("two", "1", "2^50", "0"):
        with pytest.raises(ValueError):
            parse_hash_features(bad)


def test_tokens_become_their_columns():
    tokenize = make_tokenizer(replace(PLAIN, hash_features=64))
    assert tokenize("Refund my invoice") == [column(w, 64) for w in ("refund", "my", "invoice")]
    assert tokenize.take_seen()[column("invoice", 64)][0][1] in {"refund", "my", "invoice"}


def test_hashed_counts_are_the_word_counts_summed_by_column(tmp_path):
    """T sums over a column's words; D counts a document once even if two of its words
    share the column (N = 4 makes such collisions certain)."""
    n = 4
    corpus = write_corpus(
        tmp_path / "c",
        {"a": ["alpha beta gamma delta", "alpha alpha"], "b": ["beta epsilon zeta", "eta"]},
    )
    hashed = fit(list_corpus(str(corpus)), replace(PLAIN, hash_features=n))
    plain = fit(list_corpus(str(corpus)), PLAIN)
    counts = hashed.counts
    for c, label in enumerate(counts.classes):
        tokens, docs = Counter(), Counter()
        for path in sorted((corpus / label).iterdir()):
            words = path.read_text().split()
            tokens.update(column(w, n) for w in words)
            docs.update({column(w, n) for w in words})
        for j, col in enumerate(counts.vocabulary):
            assert as_table(counts.token_count)[j, c] == tokens[col]
            assert as_table(counts.doc_count)[j, c] == docs[col]
    assert as_table(counts.token_count).sum() == as_table(plain.counts.token_count).sum()
    assert counts.problems() == []


def test_update_and_merge_of_hashed_models_equal_one_fit(tmp_path, runner):
    a = write_corpus(tmp_path / "a", {"x": ["one two three"], "y": ["four five"]})
    b = write_corpus(tmp_path / "b", {"x": ["six seven two"], "z": ["eight nine ten"]})
    both = write_corpus(tmp_path / "both", {"x": ["one two three"], "y": ["four five"]})
    write_corpus(tmp_path / "extra", {"x": ["six seven two"], "z": ["eight nine ten"]})
    (both / "x" / "001.txt").write_text("six seven two")
    (both / "z").mkdir()
    (both / "z" / "000.txt").write_text("eight nine ten")
    m, ma, mb, whole = (tmp_path / f"{name}.nbc" for name in ("m", "ma", "mb", "whole"))
    for corpus, out in ((a, m), (a, ma), (b, mb), (both, whole)):
        options = ["fit", str(corpus), "-o", str(out), "--hash-features", "8", *NAMED]
        result = runner.invoke(cli, options)
        assert result.exit_code == 0, result.output
    assert runner.invoke(cli, ["fit", str(b), "--update", str(m)]).exit_code == 0
    assert m.read_bytes() == whole.read_bytes()
    merged = tmp_path / "merged.nbc"
    # The first model's exit codes win (docs/scripts.md): x 10, y 11, and z the next free
    # code, 12, as in the fresh fit.
    assert runner.invoke(cli, ["merge", str(ma), str(mb), "-o", str(merged)]).exit_code == 0
    assert merged.read_bytes() == whole.read_bytes()


def test_hashing_settings_must_match(tmp_path, runner):
    a = tmp_path / "a.nbc"
    runner.invoke(cli, ["fit", str(DEMO_CORPUS), "-o", str(a), "--hash-features", "2^6"])
    result = runner.invoke(
        cli, ["fit", str(DEMO_CORPUS), "--update", str(a), "--hash-features", "2^7"]
    )
    assert result.exit_code == 2
    assert "(hash features: 64 vs 128)" in result.output
    plain = tmp_path / "plain.nbc"
    # of words, as the hashed fit counts them (a default fit's pairs of short documents
    # would be the first setting to differ, the n-gram range)
    runner.invoke(cli, ["fit", str(DEMO_CORPUS), "-o", str(plain), "--ngram-range", "1,1"])
    result = runner.invoke(cli, ["merge", str(plain), str(a), "-o", str(tmp_path / "x.nbc")])
    assert result.exit_code == 2
    assert "(hash features: off vs 64)" in result.output
    result = runner.invoke(cli, ["fit", str(DEMO_CORPUS), "-o", "y.nbc", "--hash-features", "x"])
    assert result.exit_code == 2
    assert "Invalid value for --hash-features: 'x' is not a number of columns" in result.output


def test_top_features_print_words_and_single_and_batch_predict_agree(tmp_path, runner):
    """With many columns every word has its own: top-features shows the plain ranking."""
    hashed, plain = tmp_path / "h.nbc", tmp_path / "p.nbc"
    runner.invoke(cli, ["fit", str(DEMO_CORPUS), "-o", str(hashed), "--hash-features", "2^24"])
    # (hashing counts no symbols and no pairs of short documents: the plain fit leaves
    # them out too)
    words = ["--no-symbols", "--ngram-range", "1,1"]
    runner.invoke(cli, ["fit", str(DEMO_CORPUS), "-o", str(plain), *words])
    top = runner.invoke(cli, ["top-features", "-m", str(hashed), "-k", "1000"]).stdout
    same = runner.invoke(cli, ["top-features", "-m", str(plain), "-k", "1000"]).stdout
    assert sorted(top.splitlines()) == sorted(same.splitlines())  # ties may come in any order
    batch = runner.invoke(cli, ["predict", "-m", str(hashed), str(DEMO_DOCS)]).stdout
    for line in batch.splitlines():
        path = line.split("\t")[0]
        single = runner.invoke(cli, ["predict", "-m", str(hashed), path]).stdout
        assert single.split("\t")[:2] == line.split("\t")[:2]
        assert float(single.split("\t")[2]) == pytest.approx(float(line.split("\t")[2]), rel=1e-12)


def test_column_words_are_a_bottom_k_sample_checked_on_load():
    model = fit(list_corpus(str(DEMO_CORPUS)), replace(PLAIN, hash_features=16))
    assert model.column_words and all(1 <= len(ws) <= 3 for ws in model.column_words.values())
    for col, words in model.column_words.items():
        assert all(column(w, 16) == col for w in words)
        keys = [hashlib.blake2b(w.encode(), digest_size=8).digest() for w in words]
        assert keys == sorted(keys)
    assert loads(dumps(model)).column_words == model.column_words
    # A listed word that does not hash to its column is refused.
    col, words = next(iter(model.column_words.items()))
    wrong = next(w for w in ("zzz", "yyy", "xxx", "www") if column(w, 16) != col)
    tampered = replace(model, column_words={**model.column_words, col: (wrong,)})
    with pytest.raises(Exception, match="do not hash to it"):
        loads(dumps(tampered))


def test_hashed_fit_is_the_same_for_any_number_of_jobs(parallel_always, tmp_path):
    settings = replace(PLAIN, hash_features=2**10)
    one = fit(list_corpus(str(DEMO_CORPUS)), settings, jobs=1)
    two = fit(list_corpus(str(DEMO_CORPUS)), settings, jobs=2)
    assert dumps(one) == dumps(two)
    assert np.array_equal(
        as_table(load_bytes(dumps(one)).counts.token_count), as_table(one.counts.token_count)
    )


def load_bytes(data: bytes):
    return loads(data)


def test_info_shows_hashing(tmp_path, runner):
    path = tmp_path / "h.nbc"
    runner.invoke(cli, ["fit", str(DEMO_CORPUS), "-o", str(path), "--hash-features", "2^6"])
    info = runner.invoke(cli, ["info", "-m", str(path)]).stdout
    assert ", hash_features 64\n" in info
    assert load(str(path)).tokenizer.hash_features == 64
