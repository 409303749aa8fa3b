"""``--symbols``: single word characters and runs of punctuation added to the default
pattern's words, as a feature family fit's choice keeps or leaves out.

The tokens it adds are those of ``(?u)\\w+|[^\\w\\s]+`` that ``(?u)\\b\\w\\w+\\b`` lacks; the
words and their n-grams are exactly those of the settings without it, so a set without
the symbols is a row mask giving exactly the smaller fit.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter

import numpy as np
import pytest
from conftest import DEMO_CORPUS, nbclass_command, write_corpus
from test_sample import sms  # noqa: F401 - the SMS spam halves fixture

from nbclass.errors import UsageError
from nbclass.modelfile.textfile import dumps, load
from nbclass.models.model import fit
from nbclass.reading.corpus import list_corpus
from nbclass.text.families import feature_sets, rows_of
from nbclass.text.tokenizer import (
    TokenizerSettings,
    is_symbol,
    make_tokenizer,
    symbol_tokens,
)

MIXED = (
    "I'm OK?! u 2 x_y, 日本語 :) é… İ Σσ 1,000.50 — «ok» @bob #tag ü̈ 🙂🙂 a\u00a0b\tc\x00d "
    "ภาษาไทย\u0e48 __ _ ١٢ a-b-c"
)


def run(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*nbclass_command(), *map(str, args)], capture_output=True, timeout=900, **kwargs
    )


def by_regex(text: str) -> list[str]:
    """The tokens of ``(?u)\\w+|[^\\w\\s]+`` that the default pattern does not make: a
    match of one character, or one without a word character."""
    return [
        t for t in re.findall(r"(?u)\w+|[^\w\s]+", text)
        if len(t) == 1 or not re.match(r"(?u)\w", t)
    ]  # fmt: skip


def test_the_symbols_by_hand():
    assert symbol_tokens("i'm :) ok?! u 2 x_y, 日本 ...") == [
        "i", "'", "m", ":)", "?!", "u", "2", ",", "...",
    ]  # fmt: skip
    text = MIXED.lower().replace("\x00", " ")
    assert symbol_tokens(text) == by_regex(text)
    # every token of (?u)\w+|[^\w\s]+ is a default token or a symbol, never both
    default = re.findall(r"(?u)\b\w\w+\b", text)
    assert Counter(default) + Counter(symbol_tokens(text)) == Counter(
        re.findall(r"(?u)\w+|[^\w\s]+", text)
    )
    assert [is_symbol(t) for t in ["a", "?", ":)", "日", "ab", "a?", "a b", "", "\t"]] == [
        True, True, True, True, False, False, False, False, False,
    ]  # fmt: skip


def test_the_tokenizer_adds_the_symbols_after_the_words_and_their_pairs():
    plain = make_tokenizer(TokenizerSettings(ngram_range=(1, 2), stop_words=("is",)))
    symbols = make_tokenizer(
        TokenizerSettings(ngram_range=(1, 2), stop_words=("is", "?"), symbols=True)
    )
    text = "Is it DOWN? I think so!! :)"
    assert plain(text) == ["it", "down", "think", "so", "it down", "down think", "think so"]
    assert symbols(text) == plain(text) + ["i", "!!", ":)"]  # "?" is a stop word
    for ngrams in ((1, 1), (1, 2), (2, 2), (1, 3)):
        words = make_tokenizer(TokenizerSettings(ngram_range=ngrams))
        both = make_tokenizer(TokenizerSettings(ngram_range=ngrams, symbols=True))
        expected = by_regex(MIXED.lower().replace("\x00", " "))
        assert both(MIXED) == words(MIXED) + expected


def test_a_long_document_gets_its_symbols_after_its_lazy_ngrams():
    from nbclass.text.tokenizer import NGRAMS_LISTED, Ngrams, token_groups

    text = "ab cd ef ! " * (NGRAMS_LISTED // 3)
    settings = TokenizerSettings(ngram_range=(1, 2), symbols=True)
    lazy = make_tokenizer(settings, lazy=True)(text)
    listed = make_tokenizer(settings)(text)
    assert isinstance(lazy, Ngrams) and len(lazy) == len(listed) and list(lazy) == listed
    assert sum(token_groups(lazy), Counter()) == Counter(listed)


def test_the_setting_is_stored_only_when_on():
    on, off = TokenizerSettings(symbols=True), TokenizerSettings()
    assert "symbols" not in off.to_dict()
    assert on.to_dict()["symbols"] is True
    assert TokenizerSettings.from_dict(on.to_dict()) == on
    assert TokenizerSettings.from_dict(off.to_dict()) == off
    with pytest.raises(ValueError, match="symbols 1 is not true or false"):
        TokenizerSettings.from_dict({**on.to_dict(), "symbols": 1})


@pytest.mark.parametrize(
    "settings, message",
    [
        (TokenizerSettings(symbols=True, token_pattern=r"\w+"), "give one or the other"),
        (TokenizerSettings(symbols=True, unspaced="runs"), "cannot be combined with --unspaced"),
    ],
)
def test_symbols_with_another_pattern_or_unspaced_is_refused(settings, message):
    with pytest.raises(UsageError, match=message):
        make_tokenizer(settings)


@pytest.mark.parametrize(
    "options, message",
    [
        (["--token-pattern", r"\w+"], "give one or the other"),
        (["--unspaced", "all"], "--symbols cannot be combined with --unspaced"),
        (["--table", "t.csv", "--label", "x"], "--table cannot be combined"),
    ],
)
def test_the_command_refuses_what_does_not_combine(tmp_path, options, message):
    result = run("fit", DEMO_CORPUS, "--symbols", *options, "-o", tmp_path / "m.nbc")
    stderr = result.stderr.decode()
    assert result.returncode == 2 and stderr.count("\n") == 1 and "Traceback" not in stderr
    assert stderr.startswith("Error: ") and message in stderr
    assert not (tmp_path / "m.nbc").exists()


def test_the_family_is_told_only_in_a_vocabulary_of_symbols():
    vocabulary = ("ab", "?", "a", "日", ":)", "ab cd", "a?", "été", "_")
    assert rows_of(vocabulary, ("symbols",), symbols=True).tolist() == [
        False, True, True, True, True, False, False, False, True,
    ]  # fmt: skip
    assert rows_of(vocabulary, ("words",), symbols=True).tolist() == [
        True, False, False, False, False, False, True, True, False,
    ]  # fmt: skip
    # another pattern's single characters stay words (an older model's features too)
    assert not rows_of(vocabulary, ("symbols",)).any()
    assert rows_of(vocabulary, ("words",)).tolist() == [
        True, True, True, True, True, False, True, True, True,
    ]  # fmt: skip
    assert feature_sets(vocabulary, symbols=True) == [
        ("words",), ("words", "symbols"), ("words", "pairs"), ("words", "symbols", "pairs"),
    ]  # fmt: skip
    assert feature_sets(("ab", "?"), symbols=True) == [("words",), ("words", "symbols")]
    assert feature_sets(("ab", "cd"), symbols=True) == [("words",)]


def chat(root):
    """Two classes told apart only by their punctuation and one-letter words."""
    return write_corpus(root, {
        "question": [f"what about topic{i} u ok ?" for i in range(10)],
        "statement": [f"what about topic{i} i am !!" for i in range(10)],
    })  # fmt: skip


def test_the_choice_keeps_the_symbols_where_they_decide(tmp_path):
    corpus = chat(tmp_path / "chat")
    plain, both = tmp_path / "plain.nbc", tmp_path / "both.nbc"
    assert run("fit", corpus, "-o", plain, "-q").returncode == 0
    assert run("fit", corpus, "--symbols", "-o", both, "-q").returncode == 0
    model = load(str(both))
    assert model.tokenizer.symbols and model.vocabulary_filter.features == ("words", "symbols")
    assert [c["features"] for c in model.choice["candidates"]][:2] == [["words"]] * 2
    assert {tuple(c["features"]) for c in model.choice["candidates"]} == {
        ("words",), ("words", "symbols"),
    }  # fmt: skip
    new = write_corpus(tmp_path / "new", {"x": ["how about this u ok ?", "fine i am !!"]})
    predicted = run("predict", "-m", both, new).stdout.decode().splitlines()
    assert [line.split("\t")[1] for line in predicted] == ["question", "statement"]
    assert b'"symbols": true' in both.read_bytes()
    assert b'"symbols"' not in plain.read_bytes()
    info = run("info", "-m", both).stdout.decode()
    assert "features words+symbols" in info and "stop_words none (0 words), symbols" in info


@pytest.mark.parametrize("ngram_range", [(1, 1), (1, 2)])
def test_a_set_without_the_symbols_is_the_fit_without_them(tmp_path, ngram_range):
    """The rows of a count with symbols that are not symbols are exactly the count
    without them: a model keeping them scores every document as the model fitted without
    --symbols, in memory and read back from its file."""
    from dataclasses import replace

    from nbclass.modelfile.textfile import loads
    from nbclass.models.estimators import EstimatorSettings
    from nbclass.models.model import Classifier, VocabularyFilter

    corpus = list_corpus(str(chat(tmp_path / "chat")))
    settings = EstimatorSettings(model="complement", tf="log", class_prior=False)
    plain = fit(corpus, TokenizerSettings(ngram_range=ngram_range), defaults=settings)
    both = fit(
        corpus, TokenizerSettings(ngram_range=ngram_range, symbols=True), defaults=settings
    )
    names = ("words",) if ngram_range == (1, 1) else ("words", "pairs")
    kept = replace(both, vocabulary_filter=VocabularyFilter(features=names))
    assert len(both.counts.vocabulary) > len(plain.counts.vocabulary)
    assert kept.active_counts.vocabulary == plain.counts.vocabulary
    for table in ("token_count", "doc_count"):
        mine, theirs = getattr(kept.active_counts, table), getattr(plain.counts, table)
        assert (mine != theirs).nnz == 0
    texts = ["what about topic3 u ok ?", "i am !! topic4", "", "?"]
    expected = Classifier(plain).joint_log_likelihood(texts)
    assert np.array_equal(Classifier(kept).joint_log_likelihood(texts), expected)
    assert not np.array_equal(Classifier(both).joint_log_likelihood(texts), expected)
    reread = loads(dumps(kept), "kept.nbc")
    assert reread.tokenizer.symbols and reread.vocabulary_filter.features == names
    assert np.array_equal(Classifier(reread).joint_log_likelihood(texts), expected)
    assert b'"symbols"' not in dumps(plain)


@pytest.mark.parametrize("options", [["--symbols"], ["--symbols", "--ngram-range", "1,2"]])
def test_update_merge_unlearn_with_symbols_write_a_fresh_fits_bytes(sms, tmp_path, options):  # noqa: F811
    full, half_a, half_b = tmp_path / "all.nbc", tmp_path / "a.nbc", tmp_path / "b.nbc"
    for corpus, out in ((sms / "all", full), (sms / "a", half_a), (sms / "b", half_b)):
        assert run("fit", corpus, *options, "-o", out, "-q").returncode == 0
    fresh = load(str(full))
    assert fresh.tokenizer.symbols and "symbols" in {
        name for c in fresh.choice["candidates"] for name in c["features"]
    }
    updated = tmp_path / "updated.nbc"
    shutil.copy(half_a, updated)
    assert run("fit", sms / "b", "--update", updated, "-q").returncode == 0
    assert updated.read_bytes() == full.read_bytes()
    merged = tmp_path / "merged.nbc"
    result = run("merge", half_b, half_a, "-o", merged, "-q")
    assert result.returncode == 0 and result.stderr == b""
    assert merged.read_bytes() == full.read_bytes()
    unlearned = tmp_path / "unlearned.nbc"
    assert run("unlearn", sms / "b", "-m", full, "-o", unlearned, "-q").returncode == 0
    assert unlearned.read_bytes() == half_a.read_bytes()


def test_an_update_without_symbols_is_refused(tmp_path):
    corpus = chat(tmp_path / "chat")
    model = tmp_path / "m.nbc"
    assert run("fit", corpus, "-o", model, "-q").returncode == 0
    result = run("fit", corpus, "--symbols", "--update", model)
    assert result.returncode == 2
    assert "different tokenizer settings (symbols: off vs on)" in result.stderr.decode()


def test_sync_with_symbols_equals_a_fresh_fit(tmp_path):
    inbox = tmp_path / "inbox"
    shutil.copytree(chat(tmp_path / "chat"), inbox)
    live, fresh = tmp_path / "live.nbc", tmp_path / "fresh.nbc"
    assert run("sync", inbox, "-m", live, "--symbols", "-q").returncode == 0
    for i in range(4):
        (inbox / "question" / f"new{i}.txt").write_text(f"and now{i} ?? u there\n")
    assert run("sync", inbox, "-m", live, "-q").returncode == 0
    assert run("fit", inbox, "-o", fresh, "--symbols", "--ledger", "-q").returncode == 0
    assert live.read_bytes() == fresh.read_bytes()
