"""``--symbols``: single word characters and runs of punctuation added to the default
pattern's words, as a feature family fit's choice keeps or leaves out.

The tokens it adds are those of ``(?u)\\w+|[^\\w\\s]+`` that ``(?u)\\b\\w\\w+\\b`` lacks; the
words and their n-grams are exactly those of the settings without it, so a set without
the symbols is a row mask giving exactly the smaller fit.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter

import numpy as np
import pytest
from conftest import (
    DEMO_CORPUS,
    assert_changes_write_fresh_fits,
    counted_as_tokenized,
    expected_tally,
    nbclass_command,
    tally_of,
    write_corpus,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sample import sms  # noqa: F401 - the SMS spam halves fixture

import nbclass.text.runs as runs_module
from nbclass.errors import UsageError
from nbclass.modelfile.textfile import dumps, load
from nbclass.models.model import fit
from nbclass.reading.corpus import list_corpus
from nbclass.text.families import feature_sets, rows_of
from nbclass.text.runs import RunTally, pair_names
from nbclass.text.tokenizer import (
    TokenizerSettings,
    ascii_splitter,
    is_symbol,
    make_tokenizer,
    symbol_tokens,
)
from nbclass.text.vectorizer import TextCounter

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
        (TokenizerSettings(symbols=True, unspaced="pairs"), "cannot be combined with --unspaced"),
    ],
)
def test_symbols_with_another_pattern_or_unspaced_is_refused(settings, message):
    with pytest.raises(UsageError, match=message):
        make_tokenizer(settings)


def test_beside_unspaced_all_the_symbols_hold_none_of_those_scripts():
    """fit's default count (unspaced "all", symbols on): the tokens of unspaced "all",
    then the symbols that hold no character of a script written without spaces (those
    characters are the unspaced tokenizations' own)."""
    both = make_tokenizer(TokenizerSettings(unspaced="all", symbols=True, stop_words=("?",)))
    alone = make_tokenizer(TokenizerSettings(unspaced="all", stop_words=("?",)))
    text = "Is 東京 ok? 日 a 本! ・! ?。 u"
    assert alone(text) == ["is", "東京", "ok", "東", "京", "日", "本", "東 京"]
    assert both(text) == alone(text) + ["a", "!", "?。", "u"]
    expected = [t for t in by_regex(MIXED.lower().replace("\x00", " "))
                if not re.search("[\u0e00-\u0e7f\u3040-\u9fff]", t)]  # fmt: skip
    assert both(MIXED) == alone(MIXED) + expected


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


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(sorted(set(MIXED) - {"\x00"})), max_size=6),
                max_size=60))
def test_symbol_rows_are_the_entries_is_symbol_names(vocabulary):
    """symbol_rows (array speed: each entry's word and space characters counted from
    running counts) marks exactly the entries is_symbol accepts: empty entries, spaces,
    single word characters, marks that combine and characters outside the BMP included."""
    marked = runs_module.symbol_rows(vocabulary)
    assert marked.dtype == bool and marked.shape == (len(vocabulary),)
    assert marked.tolist() == [is_symbol(e) for e in vocabulary]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="aZ_09", max_size=4), max_size=60),
       st.sampled_from(["", " ", "?", "é", "\x01", "\x1c", "ab cd"]))  # fmt: skip
def test_symbol_rows_of_word_characters_only_are_the_entries_of_one(vocabulary, other):
    """A vocabulary all of ASCII word characters has as symbols its entries of one
    character (and not its empty ones), found without classifying its characters; one
    more entry of anything else, and every entry is classified: both as is_symbol."""
    def refused(points):
        raise AssertionError("the characters of word characters only were classified")

    for entries in (vocabulary, [*vocabulary, other]):
        with pytest.MonkeyPatch.context() as patch:
            if entries is vocabulary:
                patch.setattr(runs_module, "is_word", refused)
            marked = runs_module.symbol_rows(entries)
        assert marked.dtype == bool and marked.shape == (len(entries),)
        assert marked.tolist() == [is_symbol(e) for e in entries]


def test_the_family_is_told_only_in_a_vocabulary_of_symbols():
    vocabulary = ("ab", "?", "a", "日", ":)", "ab cd", "a?", "été", "_")
    assert rows_of(vocabulary, ("symbols",), symbols=True).tolist() == [
        False, True, True, True, True, False, False, False, True,
    ]  # fmt: skip
    # beside unspaced "all" a single character of those scripts is never a symbol
    assert rows_of(vocabulary, ("symbols",), symbols="spaced").tolist() == [
        False, True, True, False, True, False, False, False, True,
    ]  # fmt: skip
    unspaced = ("ab", "?", "日本", "日", "本", "日 本", "・!")
    assert feature_sets(unspaced, symbols="spaced") == [
        ("words", "runs"), ("words", "runs", "symbols"),
        ("words", "characters"), ("words", "characters", "symbols"),
        ("words", "characters", "pairs"), ("words", "characters", "symbols", "pairs"),
    ]  # fmt: skip
    assert rows_of(unspaced, ("symbols",), symbols="spaced").tolist() == [
        False, True, False, False, False, False, False,
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
    default = tmp_path / "default.nbc"
    # words alone (the default's word pairs would add sets of pairs): the sets the
    # symbols make, with the words, are the subject
    words = ["--ngram-range", "1,1"]
    assert run("fit", corpus, "--no-symbols", "-o", plain, "-q", *words).returncode == 0
    assert run("fit", corpus, "--symbols", "-o", both, "-q", *words).returncode == 0
    assert run("fit", corpus, "-o", default, "-q", *words).returncode == 0
    assert default.read_bytes() == both.read_bytes()  # on by default for --model auto
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
    exported = tmp_path / "both.json"
    assert run("export", "-m", both, "-o", exported).returncode == 0
    record = json.loads(exported.read_text())
    assert record["tokenizer"]["symbols"] is True and "?" in record["vocabulary"]
    assert run("export", "-m", plain, "-o", tmp_path / "plain.json").returncode == 0
    assert "symbols" not in json.loads((tmp_path / "plain.json").read_text())["tokenizer"]


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
    both = fit(corpus, TokenizerSettings(ngram_range=ngram_range, symbols=True), defaults=settings)
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


@pytest.mark.parametrize(
    "event_model", ["multinomial", "bernoulli", "complement", "dcm", "poisson"]
)
def test_a_model_leaving_out_the_symbols_scores_without_counting_them(tmp_path, event_model):
    """When the chosen features leave the symbols out, documents are counted without them
    (predict, the one-document path, the workers' counter): the same counts of the used
    words as with them, so the same floats in every event model (document lengths are
    the used words' too), and the tokens a model fitted without them would count."""
    from dataclasses import replace

    from nbclass.modelfile.counter import load_counter
    from nbclass.modelfile.quick import QuickModel
    from nbclass.models.estimators import EstimatorSettings
    from nbclass.models.model import Classifier, VocabularyFilter

    corpus = list_corpus(str(chat(tmp_path / "chat")))
    settings = EstimatorSettings(model=event_model)
    plain = fit(corpus, TokenizerSettings(), defaults=settings)
    kept = replace(
        fit(corpus, TokenizerSettings(symbols=True), defaults=settings),
        vocabulary_filter=VocabularyFilter(features=("words",)),
    )
    texts = ["what about topic3 u ok ?", "i am !! topic4 topic4 what", "", "? !! u"]
    classifier = Classifier(kept)
    assert not classifier.counter.settings.symbols and kept.tokenizer.symbols
    X, n_tokens = classifier.counter.count(texts)
    full = TextCounter(kept.tokenizer, kept.active_counts.vocabulary)
    X_full, n_full = full.count(texts)
    assert (X != X_full).nnz == 0
    assert n_tokens.tolist() == [4, 4, 0, 0] and n_full.tolist() == [6, 6, 0, 3]
    jll = classifier.scorer.joint_log_likelihood(X)
    assert np.array_equal(jll, classifier.scorer.joint_log_likelihood(X_full))
    assert np.array_equal(jll, Classifier(plain).joint_log_likelihood(texts))
    path = tmp_path / "kept.nbc"
    path.write_bytes(dumps(kept))
    data = path.read_bytes()
    assert not load_counter(data).settings.symbols
    quick = QuickModel(str(path))
    assert [quick.known_tokens(t) for t in texts] == [(4, 4), (4, 4), (0, 0), (0, 0)]


@pytest.mark.parametrize(
    "options", [[], ["--symbols", "--ngram-range", "1,2"], ["--no-symbols"]]
)
def test_update_merge_unlearn_with_symbols_write_a_fresh_fits_bytes(
    sms,  # noqa: F811
    tmp_path,
    options,
):
    """At the defaults (the symbols on) and with pairs; and a model without the symbols
    (--no-symbols, or fitted before they were the default) updated at the defaults stays
    without them."""
    full, half_a, half_b = tmp_path / "all.nbc", tmp_path / "a.nbc", tmp_path / "b.nbc"
    for corpus, out in ((sms / "all", full), (sms / "a", half_a), (sms / "b", half_b)):
        assert run("fit", corpus, *options, "-o", out, "-q").returncode == 0
    fresh = load(str(full))
    chosen = {name for c in fresh.choice["candidates"] for name in c.get("features", ())}
    assert fresh.tokenizer.symbols == ("symbols" in chosen) == (options != ["--no-symbols"])
    assert_changes_write_fresh_fits(run, sms / "b", full, half_a, half_b)


def test_an_update_without_symbols_is_refused(tmp_path):
    corpus = chat(tmp_path / "chat")
    model = tmp_path / "m.nbc"
    assert run("fit", corpus, "--no-symbols", "-o", model, "-q").returncode == 0
    result = run("fit", corpus, "--symbols", "--update", model)
    assert result.returncode == 2
    assert "different tokenizer settings (symbols: off vs on)" in result.stderr.decode()


@pytest.mark.parametrize(
    "options",
    [
        ["--model", "multinomial"], ["--token-pattern", r"\w+"], ["--unspaced", "runs"],
        ["--hash-features", "1024"], ["--ngram-range", "2,2"],
    ],
)
def test_the_default_is_off_where_it_would_be_refused_or_not_chosen(tmp_path, options):
    """Named models stay scikit-learn's (words only); where --symbols is refused or the
    choice could not leave them out, the default is quietly off."""
    corpus = chat(tmp_path / "chat")
    quiet, off = tmp_path / "default.nbc", tmp_path / "off.nbc"
    assert run("fit", corpus, *options, "-o", quiet, "-q").returncode == 0
    assert run("fit", corpus, *options, "--no-symbols", "-o", off, "-q").returncode == 0
    assert quiet.read_bytes() == off.read_bytes()
    assert not load(str(quiet)).tokenizer.symbols


def test_the_default_is_off_for_multi_label(tmp_path):
    """A multi-label fit chooses no feature set: the symbols would be kept whole."""
    lines = tmp_path / "labels.txt"
    lines.write_text("".join(
        f"{'a,b' if i % 3 == 0 else 'a' if i % 3 == 1 else 'b'}\ttopic{i} u ok ? {i}\n"
        for i in range(30)
    ))  # fmt: skip
    quiet, off = tmp_path / "default.nbc", tmp_path / "off.nbc"
    assert run("fit", "--lines", lines, "--multi-label", "-o", quiet, "-q").returncode == 0
    assert run(
        "fit", "--lines", lines, "--multi-label", "--no-symbols", "-o", off, "-q"
    ).returncode == 0
    assert quiet.read_bytes() == off.read_bytes()



def test_cv_of_multi_label_documents_counts_as_fit_does_without_the_symbols(tmp_path):
    """cv --multi-label at the defaults cross-validates what fit --multi-label fits:
    no symbols. Labels told apart by their punctuation alone ("?" or "!!" after words
    that never repeat) are then at chance, as a fit would be; counting the symbols,
    cv reported every label right (micro F1 1.0) of a model fit does not make."""
    from nbclass.evaluation.labels import cross_validate_labels
    from nbclass.models.learning import fit_settings, multi_label_documents
    from nbclass.models.multilabel import BETA_SCALES, CANDIDATES

    lines = tmp_path / "labels.txt"
    lines.write_text("".join(
        f"a\tabout topic{i} ?\n" if i % 2 else f"b\tabout topic{i} !!\n" for i in range(40)
    ))  # fmt: skip
    result = run("cv", "--multi-label", "--lines", lines, "--format", "json")
    assert result.returncode == 0, result.stderr.decode()
    got = json.loads(result.stdout)
    model = tmp_path / "m.nbc"
    assert run("fit", "--multi-label", "--lines", lines, "-o", model, "-q").returncode == 0
    tokenizer = load(str(model)).tokenizer
    assert not tokenizer.symbols
    options = {
        "lowercase": True, "token_pattern": None, "ngram_range": None, "stop_words": "none",
        "hash_features": None, "min_df": 1, "max_features": None, "event_model": None,
        "estimator": None, "alpha": None, "beta": None, "text_options": None,
    }  # fmt: skip
    counted, vocabulary_filter = fit_settings(options, (), None, multi_label=True)[:2]
    assert not counted.symbols  # what fit --multi-label counts with
    documents = multi_label_documents(
        (f"{lines}:{i}", line) for i, line in enumerate(lines.read_text().splitlines(), 1)
    )
    evaluation, _ = cross_validate_labels(
        documents, counted, vocabulary_filter, CANDIDATES, 5, 0, BETA_SCALES
    )
    want = evaluation.metrics()
    assert {k: got[k] for k in want} == json.loads(json.dumps(want))
    assert got["micro_f1"] < 1.0


def test_the_python_api_and_estimator_choose_the_symbols_as_fit_does(tmp_path):
    import nbclass
    from nbclass.sklearn import NaiveBayesTextClassifier

    texts = [f"what about topic{i} u ok ?" for i in range(10)] + [
        f"what about topic{i} i am !!" for i in range(10)
    ]
    labels = ["question"] * 10 + ["statement"] * 10
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"{y}\t{x}\n" for x, y in zip(texts, labels)))
    cli = tmp_path / "cli.nbc"
    assert run("fit", "--lines", lines, "-o", cli, "-q").returncode == 0
    auto = nbclass.fit(texts, labels, jobs=1)
    assert auto._model.tokenizer.symbols
    assert dumps(auto._model) == cli.read_bytes()
    assert not nbclass.fit(texts, labels, model="multinomial")._model.tokenizer.symbols
    assert not nbclass.fit(texts, labels, symbols=False)._model.tokenizer.symbols
    with pytest.raises(UsageError, match="symbols 1 must be True, False or None"):
        nbclass.fit(texts, labels, symbols=1)
    estimator = NaiveBayesTextClassifier(jobs=1).fit(texts, labels)
    assert estimator.get_params()["symbols"] is None
    assert dumps(estimator.model_._model) == cli.read_bytes()
    named = NaiveBayesTextClassifier(model="multinomial").fit(texts, labels)
    assert not named.model_._model.tokenizer.symbols


def test_sync_with_symbols_equals_a_fresh_fit(tmp_path):
    inbox = tmp_path / "inbox"
    shutil.copytree(chat(tmp_path / "chat"), inbox)
    live, fresh = tmp_path / "live.nbc", tmp_path / "fresh.nbc"
    assert run("sync", inbox, "-m", live, "-q").returncode == 0  # the default: symbols
    for i in range(4):
        (inbox / "question" / f"new{i}.txt").write_text(f"and now{i} ?? u there\n")
    assert run("sync", inbox, "-m", live, "-q").returncode == 0
    assert run("fit", inbox, "-o", fresh, "--symbols", "--ledger", "-q").returncode == 0
    assert live.read_bytes() == fresh.read_bytes()
    assert load(str(live)).tokenizer.symbols


# --- the fast paths count the symbols as the tokenizer does -------------------------------

SYMBOL_TEXT = (
    "aZ_1 İΣσé한국어Привет١٢٣日本語ภาษาไทย\u0e48 ?!.,:;)(…—«»@#'\"-_~`\\/<>%&*+=|"
    "🙂\U0001d400\U00020000\u00a0\u2028\u3000\x00\x01\x07\x1c\x7f\t\n\r\x0b\x0c"
)
SYMBOL_WORDS = [
    "ab", "x", "I", "u", "?", "!!", ":)", "...", "it's", "x_y", "日本", "日", "é", "😀", "a-b",
    "1,000.50", "Straße", "__", "İ", "\x01",
]  # fmt: skip
SYMBOL_GAPS = [" ", "", "\n", "\t", "\x00", ",", "?", "\u3000", "\x1c"]
symbol_texts = st.one_of(
    st.text(alphabet=SYMBOL_TEXT, max_size=40),
    st.lists(st.tuples(st.sampled_from(SYMBOL_WORDS), st.sampled_from(SYMBOL_GAPS)),
             max_size=12).map(lambda pairs: "".join(word + gap for word, gap in pairs)),
)  # fmt: skip
SYMBOL_STOPS = [(), ("ab", "?"), ("x", "i", ":)", "日本", "é"), ("\x01",)]
SYMBOL_NGRAMS = [(1, 1), (1, 2), (1, 3), (2, 2)]


def test_every_space_is_found_in_the_basic_plane():
    """The space table covers the Basic Multilingual Plane: no code point above is \\s."""
    import sys

    from nbclass.text.runs import is_space

    points = np.arange(0x110000, dtype="<u4")
    points = points[(points < 0xD800) | (points > 0xDFFF)]
    text = str(points.data, "utf-32-le")
    regex = np.zeros(points.size, dtype=bool)
    regex[[m.start() for m in re.finditer(r"\s", text)]] = True
    regex[0] = True  # NUL, made a space
    assert np.array_equal(is_space(points), regex), sys.maxunicode


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(symbol_texts, max_size=8),
    st.booleans(),
    st.sampled_from(SYMBOL_STOPS),
    st.sampled_from(SYMBOL_NGRAMS),
    st.sampled_from([None, 1, 3]),
    st.sampled_from([None, "all"]),
)
def test_a_text_counter_counts_the_symbols_as_the_tokenizer(
    texts, lowercase, stop, ngrams, limit, unspaced
):
    """predict's counter: the counts and token numbers of the run path are the regex's,
    over a vocabulary of the texts' tokens and entries no run can be (``unspaced``
    "all": as fit counts at its defaults, with its n-grams); ``limit``, an
    ``ngram_doc_limit``, counts no symbol (n-grams only in texts of so many words)."""
    settings_ = TokenizerSettings(
        lowercase=lowercase, stop_words=stop, ngram_range=ngrams, symbols=True, unspaced=unspaced,
        ngram_doc_limit=limit if ngrams[0] == 1 else None,
    )
    extra = {"x", "AB", "?!?", "a?"} | ({": )", "ab ?"} if ngrams != (1, 1) else set())
    counter, vocabulary = counted_as_tokenized(
        settings_, texts, make_tokenizer(settings_), extra
    )
    assert counter.runs is not None or (
        (ngrams != (1, 1) or unspaced) and any("\x01" in word for word in vocabulary)
    )


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(st.tuples(symbol_texts, st.integers(0, 2)), max_size=10),
    st.booleans(),
    st.sampled_from(SYMBOL_STOPS),
    st.integers(1, 50),
    st.sampled_from(SYMBOL_NGRAMS),
    st.sampled_from([None, 1, 3]),
    st.sampled_from([None, "all"]),
)
def test_a_run_tally_counts_the_symbols_as_the_tokenizer(
    documents, lowercase, stop, chunk, ngrams, limit, unspaced
):
    """fit's tally: D_jc and T_jc of texts of many scripts with symbols, in chunks of
    any size, ASCII ones as bytes, are the regex tokenizer's; a chunk whose symbols hold
    a 0x01 under n-grams is given back (the caller tokenizes it). ``unspaced`` "all":
    fit's default count beside the symbols, with its n-grams. ``limit``: an
    ``ngram_doc_limit``."""
    settings_ = TokenizerSettings(
        lowercase=lowercase, stop_words=stop, ngram_range=ngrams, symbols=True, unspaced=unspaced,
        ngram_doc_limit=limit if ngrams[0] == 1 else None,
    )
    texts = [text for text, _ in documents]
    labels = [c for _, c in documents]
    counted = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runs_module, "CHUNK_BYTES", chunk)
        runs_tally = RunTally.make(ascii_splitter(settings_, "utf-8"), 3)
        part = [i for i in range(len(texts)) if len(texts[i]) <= chunk]
        for group in ([i for i in part if texts[i].isascii()],
                      [i for i in part if not texts[i].isascii()]):  # fmt: skip
            as_given = [texts[i].encode() if texts[i].isascii() else texts[i] for i in group]
            refused = set(runs_tally.add(as_given, [labels[i] for i in group]))
            if ngrams == (1, 1) and not unspaced:  # no name takes a space: none given back
                assert not refused
            counted += [i for k, i in enumerate(group) if k not in refused]
    expected = expected_tally([texts[i] for i in counted], [labels[i] for i in counted], settings_)
    assert tally_of(runs_tally, 3) == expected


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(st.tuples(symbol_texts, st.integers(0, 2), st.booleans()), max_size=10),
    st.booleans(),
    st.sampled_from(SYMBOL_STOPS),
    st.integers(1, 50),
    st.sampled_from([(1, 1), (1, 1), (1, 2), (1, 3)]),
    st.sampled_from([None, 2]),
    st.sampled_from([None, "all"]),
)
def test_a_run_tally_keeps_the_marked_texts_rows_with_their_symbols(
    documents, lowercase, stop, chunk, ngrams, limit, unspaced
):
    """The rows a run tally keeps of the texts it is given marked (the sample's) are
    their tokens counted by the regex tokenizer, the symbols of one byte (counted per
    byte and text, apart from the other tokens) among them; ASCII texts as bytes, the
    others as str, in chunks of any size; with word n-grams (pairs by their words'
    numbers) and an ``ngram_doc_limit``, and unspaced "all" beside them, as a fit that
    chooses counts (a chunk whose symbols hold a 0x01 beside n-grams is given back)."""
    settings_ = TokenizerSettings(
        lowercase=lowercase, stop_words=stop, symbols=True, ngram_range=ngrams,
        ngram_doc_limit=limit, unspaced=unspaced,
    )  # fmt: skip
    tokenize = make_tokenizer(settings_)
    refused = set()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runs_module, "CHUNK_BYTES", chunk)
        runs_tally = RunTally.make(ascii_splitter(settings_, "utf-8"), 3)
        for ascii_ in (True, False):
            group = [
                k for k, (text, _, _) in enumerate(documents)
                if text.isascii() == ascii_ and len(text) <= chunk
            ]  # fmt: skip
            if group:
                given_ = [documents[k][0].encode() if ascii_ else documents[k][0] for k in group]
                marks = np.array([k if documents[k][2] else -1 for k in group], dtype=np.int64)
                back = runs_tally.add(given_, [documents[k][1] for k in group], marks)
                assert not back or (ngrams != (1, 1) or unspaced)
                refused.update(group[i] for i in back)
    marked = [
        k for k, (text, _, mark) in enumerate(documents)
        if mark and len(text) <= chunk and k not in refused
    ]  # fmt: skip
    assert_marked_rows(runs_tally, marked, [text for text, _, _ in documents], tokenize)


def assert_marked_rows(runs_tally, marked, texts, tokenize) -> None:
    """The rows ``runs_tally`` kept (take_sampled) are those of the texts ``marked`` (their
    indices in ``texts``, their marks) by the regex tokenizer ``tokenize``, each (mark,
    word) once."""
    counted, marks, ids, counts = runs_tally.take_sampled()
    names = runs_tally._names(bytes(runs_tally._bytes[:-1])) if runs_tally.n_words else []
    pairs = np.flatnonzero(runs_tally._pair_words[: runs_tally.n_words, 0] >= 0)
    if pairs.size:  # word pairs by their words' numbers: named by them
        first, second = runs_tally._pair_words[pairs].T
        for at, name in zip(pairs.tolist(), pair_names(names, first, second)):
            names[at] = name
    got = {}
    for mark, word, count in zip(marks.tolist(), ids.tolist(), counts.tolist()):
        assert (mark, names[word]) not in got
        got[mark, names[word]] = count
    assert sorted(counted.tolist()) == marked
    expected = {(k, word): n for k in marked for word, n in Counter(tokenize(texts[k])).items()}
    assert got == expected


@settings(max_examples=200, deadline=None, database=None)
@given(
    st.lists(st.tuples(symbol_texts, st.integers(0, 2), st.booleans()), max_size=12),
    st.booleans(),
    st.sampled_from(SYMBOL_STOPS),
    st.integers(1, 50),
    st.integers(1, 4),
)
def test_marked_texts_gathered_with_the_others_keep_the_rows_added_apart_keep(
    documents, lowercase, stop, chunk, calls
):
    """Marked texts gathered with unmarked ones (gather's marks: into the same chunks,
    counted when a chunk's worth waits, the rest by flush) keep the rows of their tokens
    the regex tokenizer gives, and the tally's counts are those of every text: the same
    as the marked texts counted apart (add's marks, what the count did before)."""
    settings_ = TokenizerSettings(lowercase=lowercase, stop_words=stop, symbols=True)
    tokenize = make_tokenizer(settings_)
    short = [k for k, (text, _, _) in enumerate(documents) if len(text) <= chunk]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runs_module, "CHUNK_BYTES", chunk)
        runs_tally = RunTally.make(ascii_splitter(settings_, "utf-8"), 3)
        refused = []
        for part in np.array_split(np.array(short, dtype=np.int64), calls):
            for ascii_ in (True, False):
                group = [k for k in part.tolist() if documents[k][0].isascii() == ascii_]
                given_ = [documents[k][0].encode() if ascii_ else documents[k][0] for k in group]
                marks = [k if documents[k][2] else -1 for k in group]
                refused += runs_tally.gather(given_, [documents[k][1] for k in group], marks)
        refused += runs_tally.flush()
    assert refused == [] and not runs_tally.waiting
    marked = [k for k in short if documents[k][2]]
    assert_marked_rows(runs_tally, marked, [text for text, _, _ in documents], tokenize)
    tokens = Counter()
    for k in short:
        tokens.update((word, documents[k][1]) for word in tokenize(documents[k][0]))
    words, lengths, rows, _, token_counts = runs_tally.packed()
    classes = np.repeat(np.arange(3), lengths)
    assert {(words[j], c): int(t) for j, c, t in zip(rows, classes, token_counts)} == dict(tokens)


def test_a_marked_text_in_a_chunk_that_clashes_comes_back_with_its_mark(monkeypatch):
    """A chunk that is not counted (two long words of one hash) gives its texts back,
    a marked one as (text, label, mark), so that the caller keeps its tokens' row."""
    monkeypatch.setattr(runs_module, "_mix", lambda h: h * np.uint64(0))
    runs_tally = RunTally.make(ascii_splitter(TokenizerSettings(), "ascii"), 2)
    texts = [b"abcdefghij ab", b"jihgfedcba", b"plain"]
    assert runs_tally.gather(texts, [0, 1, 1], [-1, 7, -1]) == []
    assert runs_tally.flush() == [(texts[0], 0), (texts[1], 1, 7), (texts[2], 1)]
    assert runs_tally.take_sampled()[0].size == 0


# ASCII text of word characters and spaces only (every ASCII \s, and NUL): its symbols are
# its word characters alone, which the run path takes from the words' runs of one byte.
PLAIN_TEXT = "aAbZ_19 \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x00"
plain_texts = st.one_of(
    st.text(alphabet=PLAIN_TEXT, max_size=40),
    st.lists(st.tuples(st.sampled_from(["ab", "x", "I", "u", "_", "7", "Zz", "a_1"]),
                       st.sampled_from([" ", "\n", "\t", "\x00", "\x1c", "  "])),
             max_size=12).map(lambda pairs: "".join(word + gap for word, gap in pairs)),
)  # fmt: skip


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(st.tuples(plain_texts, st.integers(0, 2)), max_size=10),
    st.booleans(),
    st.sampled_from([(), ("ab", "x"), ("i", "_", "zz")]),
    st.integers(1, 50),
    st.sampled_from([(1, 1), (1, 2)]),
)
def test_text_of_word_characters_and_spaces_has_its_symbols_counted_from_its_runs(
    documents, lowercase, stop, chunk, ngrams
):
    """A chunk of ASCII text with no character neither word nor space has its symbols
    (its word characters alone) taken from the words' runs of one byte, with no pass of
    the symbols' own over it (spied: :func:`_symbol_runs` is never called), and they are
    the regex tokenizer's: fit's tally, D_jc and T_jc, and predict's counter."""
    settings_ = TokenizerSettings(
        lowercase=lowercase, stop_words=stop, ngram_range=ngrams, symbols=True
    )
    texts = [text for text, _ in documents]
    labels = [c for _, c in documents]

    def refused(*args, **kwargs):
        raise AssertionError("the symbols' own pass over text of words and spaces")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runs_module, "CHUNK_BYTES", chunk)
        patch.setattr(runs_module, "_symbol_runs", refused)
        runs_tally = RunTally.make(ascii_splitter(settings_, "utf-8"), 3)
        short = [i for i in range(len(texts)) if len(texts[i]) <= chunk]
        assert not runs_tally.add([texts[i].encode() for i in short], [labels[i] for i in short])
        counted_as_tokenized(settings_, texts, make_tokenizer(settings_), {"x", "AB", "?"})
    expected = expected_tally([texts[i] for i in short], [labels[i] for i in short], settings_)
    assert tally_of(runs_tally, 3) == expected
