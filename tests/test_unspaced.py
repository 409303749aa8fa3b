"""Scripts written without spaces: the three tokenizations of ``unspaced`` (runs,
characters, characters and pairs), the regex tokenizer against a reference written
character by character, and the numpy run path against the regex, on mixed-script text.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from conftest import (
    RUN_COUNTER_OFF,
    counted_as_tokenized,
    expected_tally,
    fit_by_every_path,
    tally_of,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import nbclass.counting.counts
import nbclass.counting.tally
import nbclass.models.model
import nbclass.text.runs as runs_module
from nbclass.counting.counts import as_table
from nbclass.errors import UsageError
from nbclass.modelfile.textfile import dumps
from nbclass.models.estimators import EstimatorSettings
from nbclass.models.model import fit
from nbclass.reading.corpus import list_corpus
from nbclass.text.runs import RunTally, is_unspaced
from nbclass.text.tokenizer import (
    UNSPACED_MODES,
    UNSPACED_RANGES,
    TokenizerSettings,
    ascii_splitter,
    make_tokenizer,
)

MODES = list(UNSPACED_MODES)

# Han, kana (full and half width, the prolonged sound mark, an iteration mark), Thai with
# its vowel signs and tone marks (not word characters), Lao, Khmer with its virama,
# Myanmar, an astral ideograph; and characters of spaced scripts that touch them.
HARD = (
    "日本語東京中文测试々〇ー"
    "ひらがなカタカナｱｲｳﾞ"
    "ภาษาไทย\u0e48\u0e31ง่าย"
    "ພາສາລາວ"
    "ភាសា\u17d2ខ្មែរ"
    "မြန်မာ"
    "\U00020000\U0002a6d6"
    "aZ_1 İΣσé한국어Привет١٢٣"
    ".,。、「」！? \n\x00\u3000"
)
WORDS = [
    "日本語", "東京タワー", "中文文本分类", "我", "的", "iPhone", "2023年", "ｶﾀｶﾅ", "ภาษาไทย",
    "ง่าย", "ພາສາ", "ខ្មែរ", "မြန်မာ", "\U00020000\U00020001", "한국어", "Straße", "ab", "x",
    "東京abc", "abc東京", "İ日本",
]  # fmt: skip
GAPS = [" ", "", "，", "。", "-", "\n", "\u3000", "\x00", "1"]
texts_strategy = st.one_of(
    st.text(alphabet=HARD, max_size=40),
    st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(GAPS)), max_size=12).map(
        lambda pairs: "".join(word + gap for word, gap in pairs)
    ),
)
STOP_LISTS = [(), ("ab",), ("的", "我", "日本語", "iphone"), ("東京タワー", "x", "ー")]


def unspaced_char(ch: str) -> bool:
    point = ord(ch)
    return any(low <= point <= high for low, high in UNSPACED_RANGES)


def word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def reference(text: str, mode: str | None, lowercase: bool = True, stop=()) -> list[str]:
    """The tokens of ``mode``, written without the regex: the text's characters walked one
    by one, each word character of a kind (unspaced or not) joining the run of its kind
    before it; runs of two or more are tokens, and in the modes "characters" and "pairs"
    every unspaced character is one; then the pairs."""
    text = text.replace("\x00", " ")
    if lowercase:
        text = text.lower()
    kind = [
        (1 if unspaced_char(ch) else 2) if word_char(ch) and mode is not None
        else (2 if word_char(ch) else 0)
        for ch in text
    ]  # fmt: skip
    tokens, run = [], ""
    for i, ch in enumerate(text + " "):
        k = kind[i] if i < len(text) else 0
        if run and (k == 0 or k != kind[i - 1] or (k == 1 and mode not in ("runs", "all"))):
            if len(run) >= 2 or kind[i - 1] == 1 and mode in ("characters", "pairs"):
                tokens.append(run)
            run = ""
        if k:
            run += ch
    if mode == "all":  # the runs, then every unspaced character
        tokens += [ch for ch, k in zip(text, kind) if k == 1]
    tokens = [t for t in tokens if t not in stop]
    if mode in ("pairs", "all"):
        tokens += [f"{a} {b}" for a, b, ka, kb in zip(text, text[1:], kind, kind[1:])
                   if ka == kb == 1]  # fmt: skip
    return tokens


def test_the_unspaced_table_is_the_ranges_on_every_code_point():
    points = np.arange(0x110000, dtype=np.uint32)
    expected = np.array([unspaced_char(chr(p)) for p in range(0x110000)])
    assert np.array_equal(is_unspaced(points), expected)
    assert not expected[0xAC00] and expected[0x4E00] and expected[0x0E01]  # Hangul is spaced


@pytest.mark.parametrize(
    "mode, expected",
    [
        (None, ["我的iphone无法登录", "请帮我重置密码", "2023年", "東京タワーabc", "ภาษาไทยง",
                "าย"]),
        ("runs", ["我的", "iphone", "无法登录", "请帮我重置密码", "2023", "東京タワー", "abc",
                  "ภาษาไทยง", "าย"]),
        ("characters", ["我", "的", "iphone", "无", "法", "登", "录", "请", "帮", "我", "重", "置",
                        "密", "码", "2023", "年", "東", "京", "タ", "ワ", "ー", "abc", "日", "ภ",
                        "า", "ษ", "า", "ไ", "ท", "ย", "ง", "า", "ย"]),
    ],
)  # fmt: skip
def test_the_tokens_of_each_mode_by_hand(mode, expected):
    """A run of one character (日 alone, 年 after digits in "runs"), digits, punctuation
    between characters, Latin inside a run, upper case, a Thai tone mark (not a word
    character: it splits the run)."""
    text = "我的iPhone无法登录，请帮我重置密码。2023年 東京タワーABC x 日 ภาษาไทยง่าย"
    assert make_tokenizer(TokenizerSettings(unspaced=mode))(text) == expected
    assert reference(text, mode) == expected


def test_all_counts_the_runs_then_the_characters_then_the_pairs_and_tells_them_apart():
    from nbclass.text.tokenizer import unspaced_kinds

    tokenize = make_tokenizer(TokenizerSettings(unspaced="all", stop_words=("的",)))
    tokens = tokenize("我的猫，ab日本 x 年")
    assert tokens == ["我的猫", "ab", "日本", "我", "猫", "日", "本", "年", "我 的", "的 猫",
                      "日 本"]  # fmt: skip
    kinds = unspaced_kinds(tokens)
    assert [t for t, k in zip(tokens, kinds["runs"]) if k] == ["我的猫", "日本"]
    assert [t for t, k in zip(tokens, kinds["characters"]) if k] == ["我", "猫", "日", "本", "年"]
    assert [t for t, k in zip(tokens, kinds["pairs"]) if k] == ["我 的", "的 猫", "日 本"]
    assert [t for t, k in zip(tokens, kinds["other"]) if k] == ["ab"]
    # Each kind is the tokens of its own mode: the counts of a mode are rows of "all"'s.
    text = "我的猫，ab日本 x 年。東京タワーabc"
    every = Counter(make_tokenizer(TokenizerSettings(unspaced="all"))(text))
    for mode, kind in (("runs", "runs"), ("characters", "characters")):
        alone = Counter(make_tokenizer(TokenizerSettings(unspaced=mode))(text))
        rows = unspaced_kinds(list(every))
        part = {t: n for (t, n), a, b in zip(every.items(), rows[kind], rows["other"]) if a or b}
        assert part == alone
    pairs = Counter(make_tokenizer(TokenizerSettings(unspaced="pairs"))(text))
    rows = unspaced_kinds(list(every))
    keep = [a or b or c for a, b, c in zip(rows["characters"], rows["pairs"], rows["other"])]
    assert {t: n for (t, n), k in zip(every.items(), keep) if k} == pairs


def test_pairs_are_the_characters_then_adjacent_pairs_within_runs():
    tokenize = make_tokenizer(TokenizerSettings(unspaced="pairs", stop_words=("的",)))
    assert tokenize("我的猫，ab日本 x") == [
        "我", "猫", "ab", "日", "本", "我 的", "的 猫", "日 本"
    ]  # fmt: skip
    # Word n-grams are formed from the words and characters; the pairs come after them.
    tokenize = make_tokenizer(TokenizerSettings(unspaced="pairs", ngram_range=(1, 2)))
    assert tokenize("ab 日本") == ["ab", "日", "本", "ab 日", "日 本", "日 本"]


@settings(max_examples=400, deadline=None, database=None)
@given(texts_strategy, st.sampled_from([None, *MODES]), st.booleans(), st.sampled_from(STOP_LISTS))
def test_the_tokenizer_is_the_reference(text, mode, lowercase, stop):
    settings_ = TokenizerSettings(lowercase=lowercase, stop_words=stop, unspaced=mode)
    assert make_tokenizer(settings_)(text) == reference(text, mode, lowercase, stop)


NGRAMS = [(1, 1), (1, 2), (1, 2), (1, 3), (2, 2), (2, 3)]


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(texts_strategy, max_size=8),
    st.sampled_from(MODES),
    st.booleans(),
    st.sampled_from(STOP_LISTS),
    st.sampled_from(NGRAMS),
    st.sampled_from([None, 1, 2, 5]),
)
def test_a_text_counter_counts_as_the_tokenizer(texts, mode, lowercase, stop, ngrams, limit):
    """predict's counter: the counts and token numbers of the run path are the regex's,
    over a vocabulary of the texts' tokens and words no run can be; with word n-grams
    too, made of the words alone before the characters and pairs, in texts of at most
    ``limit`` words when there is one (``ngram_doc_limit``)."""
    settings_ = TokenizerSettings(
        lowercase=lowercase, stop_words=stop, unspaced=mode, ngram_range=ngrams,
        ngram_doc_limit=limit if ngrams[0] == 1 else None,
    )
    extra = {"x", "AB", "本日"} | ({"日 本 語", "日 本"} if mode == "pairs" else set())
    counter, _ = counted_as_tokenized(settings_, texts, make_tokenizer(settings_), extra)
    assert counter.runs is not None


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(st.tuples(texts_strategy, st.integers(0, 2)), max_size=10),
    st.sampled_from(MODES),
    st.booleans(),
    st.sampled_from(STOP_LISTS),
    st.integers(1, 50),
    st.sampled_from(NGRAMS),
    st.sampled_from([None, 1, 2, 5]),
)
def test_a_run_tally_counts_as_the_tokenizer(
    documents, mode, lowercase, stop, chunk, ngrams, limit
):
    """fit's tally: D_jc and T_jc of texts of many scripts, in chunks of any size, with
    ASCII ones as bytes, are the regex tokenizer's; the words come sorted (with word
    n-grams, beside the characters and pairs too, and an ``ngram_doc_limit`` ``limit``)."""
    settings_ = TokenizerSettings(
        lowercase=lowercase, stop_words=stop, unspaced=mode, ngram_range=ngrams,
        ngram_doc_limit=limit if ngrams[0] == 1 else None,
    )
    texts = [text for text, _ in documents]
    labels = [c for _, c in documents]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runs_module, "CHUNK_BYTES", chunk)
        runs_tally = RunTally.make(ascii_splitter(settings_, "utf-8"), 3)
        part = [i for i in range(len(texts)) if len(texts[i]) <= chunk]
        ascii_ = [i for i in part if texts[i].isascii()]
        other = [i for i in part if not texts[i].isascii()]
        as_bytes = [texts[i].encode() for i in ascii_]
        assert runs_tally.add(as_bytes, [labels[i] for i in ascii_]) == []
        assert runs_tally.add([texts[i] for i in other], [labels[i] for i in other]) == []
        flushed = runs_tally.gather([texts[i] for i in other], [labels[i] for i in other])
        assert flushed + runs_tally.flush() == []
    again = [*part, *other]
    expected = expected_tally([texts[i] for i in again], [labels[i] for i in again], settings_)
    assert tally_of(runs_tally, 3) == expected


def test_a_pair_tally_packs_new_words_by_their_names():
    """The words a worker sends by number are named as the tokenizer names them."""
    runs_tally = RunTally.make(ascii_splitter(TokenizerSettings(unspaced="pairs"), "utf-8"), 1)
    assert runs_tally.add(["日本 ab"], [0]) == []
    new_words, new_ids, lengths, rows, docs, tokens, _ = runs_tally.packed_new()
    assert new_words == ["ab", "日", "日 本", "本"]
    names = dict(zip(new_ids.tolist(), new_words))
    counted = sorted(zip([names[r] for r in rows.tolist()], tokens.tolist()))
    assert counted == [("ab", 1), ("日", 1), ("日 本", 1), ("本", 1)]


MIXED = {
    "zh": ["我的账户无法登录，请帮我重置密码", "付款失败了，信用卡被扣了两次钱",
           "服务器宕机，网站打不开"],
    "ja": ["東京タワーは日本語で書かれた。ｱｲｳ カタカナ", "請求書の金額が間違っています iPhone",
           "ログインできません、パスワードを忘れた"],
    "th": ["ภาษาไทยง่าย ok", "เซิร์ฟเวอร์ล่ม", "บัตรเครดิต ถูกเรียกเก็บเงินสองครั้ง"],
    "en": ["plain ascii text", "the server is down", "my card was charged twice"],
}  # fmt: skip


@pytest.fixture
def mixed(tmp_path):
    root = tmp_path / "corpus"
    for label, texts in MIXED.items():
        (root / label).mkdir(parents=True)
        for i, text in enumerate(texts * 3):
            (root / label / f"{i}.txt").write_text(f"{text} {i}\n", "utf-8")
    return root


@pytest.mark.parametrize("mode", MODES)
def test_fit_writes_the_models_bytes_of_the_regex_path(mixed, mode, monkeypatch):
    """A corpus of four scripts: the model file of each mode is byte for byte the one
    fitted with every document tokenized by the regex, on one process or two."""
    corpus = list_corpus(str(mixed))
    tokenizer = TokenizerSettings(unspaced=mode)
    fast = dumps(fit(corpus, tokenizer))
    monkeypatch.setattr(nbclass.counting.counts, "PARALLEL_MIN_BYTES", 1)
    workers = dumps(fit(corpus, tokenizer, jobs=2))
    monkeypatch.setattr(nbclass.counting.counts, "ascii_splitter", lambda *args: None)
    plain = dumps(fit(corpus, tokenizer))
    assert fast == plain and workers == plain
    vocabulary = set(fit(corpus, tokenizer).counts.vocabulary)
    expected = {
        "runs": {"東京タワーは日本語で書かれた", "我的账户无法登录", "iphone"},
        "characters": {"東", "账", "iphone"},
        "pairs": {"東", "東 京", "账 户", "iphone"},
        "all": {"東京タワーは日本語で書かれた", "東", "東 京", "iphone"},
    }[mode]
    assert expected <= vocabulary
    assert "ascii" in vocabulary


WITH_NGRAMS = [
    TokenizerSettings(unspaced="pairs", ngram_range=(1, 2)),
    TokenizerSettings(unspaced="pairs", ngram_range=(1, 3), ngram_doc_limit=4,
                      stop_words=("的", "ok")),
    TokenizerSettings(unspaced="all", ngram_range=(1, 2), ngram_doc_limit=3),
    TokenizerSettings(unspaced="all", ngram_range=(1, 3), stop_words=("了", "the")),
    TokenizerSettings(unspaced="all", ngram_range=(2, 2)),
    # a fit that chooses, at the defaults with word pairs: what it counts
    TokenizerSettings(unspaced="all", ngram_range=(1, 2), ngram_doc_limit=64, symbols=True),
]  # fmt: skip


@pytest.mark.parametrize("tokenizer", WITH_NGRAMS, ids=lambda t: repr(t.to_dict()))
def test_fit_with_word_ngrams_by_runs_writes_the_regex_paths_bytes(mixed, tokenizer, monkeypatch):
    """Characters and pairs of the scripts written without spaces beside word n-grams:
    the run tally (on one process, no document tokenized in Python) and two counting
    processes write the bytes of the fit with every document tokenized by the regex."""

    corpus = list_corpus(str(mixed))
    tokenized = []
    python_tokenized = nbclass.counting.tally._tokenized

    def spied(documents, *args, **kwargs):
        documents = list(documents)
        tokenized.extend(documents)
        return python_tokenized(documents, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nbclass.counting.tally, "_tokenized", spied)
        model = fit(corpus, tokenizer, defaults=EstimatorSettings(model="multinomial"))
    assert tokenized == [] and ascii_splitter(tokenizer, "utf-8") is not None
    again, workers, plain = fit_by_every_path(corpus, tokenizer, monkeypatch)
    assert again == dumps(model) == plain and workers == plain
    vocabulary = set(model.counts.vocabulary)
    assert {"東 京", "账 户", "plain ascii"} <= vocabulary
    if tokenizer.unspaced == "all":
        assert "東京タワーは日本語で書かれた ｱｲｳ" in vocabulary  # two runs: a word pair


def test_fit_that_chooses_with_word_pairs_by_runs_writes_the_regex_paths_bytes(mixed, tmp_path):
    """``--unspaced all --ngram-range 1,2 --ngram-doc-limit 64`` with the choice (the
    sample's rows counted by the run tally too): the file of the regex path, in a
    process of its own."""
    options = ["--unspaced", "all", "--ngram-range", "1,2", "--ngram-doc-limit", "64", "-q"]
    assert nbclass_command("fit", mixed, "-o", tmp_path / "runs.nbc", *options).returncode == 0
    regex_only = (
        "import sys, nbclass.counting.counts as c; c.ascii_splitter = lambda *a: None; "
        "from nbclass.__main__ import main; sys.argv = ['nbclass'] + sys.argv[1:]; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", regex_only, "fit", mixed, "-o", tmp_path / "regex.nbc", *options],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "runs.nbc").read_bytes() == (tmp_path / "regex.nbc").read_bytes()
    assert b'"choice"' in (tmp_path / "runs.nbc").read_bytes()


def test_settings_are_stored_only_when_given_and_checked_when_read():
    assert "unspaced" not in TokenizerSettings().to_dict()
    data = TokenizerSettings(unspaced="pairs").to_dict()
    assert data["unspaced"] == "pairs"
    assert TokenizerSettings.from_dict(data) == TokenizerSettings(unspaced="pairs")
    for bad in ("words", 1, ["runs"], ""):
        with pytest.raises(ValueError, match="unspaced"):
            TokenizerSettings.from_dict({**data, "unspaced": bad})
    with pytest.raises(UsageError, match="give one or the other"):
        make_tokenizer(TokenizerSettings(unspaced="runs", token_pattern=r"(?u)\w+"))
    with pytest.raises(UsageError, match="is not a tokenization"):
        make_tokenizer(TokenizerSettings(unspaced="words"))


def test_the_modes_patterns_hold_no_hazard_and_find_no_empty_token():
    from nbclass.text.tokenizer import _UNSPACED_PAIRS, _UNSPACED_PATTERNS, pattern_hazard

    for pattern in _UNSPACED_PATTERNS.values():
        assert pattern_hazard(pattern) is None and re.match(pattern, "") is None
    assert re.findall(_UNSPACED_PAIRS, "日本語") == [("日", "本"), ("本", "語")]


REPO = __import__("pathlib").Path(__file__).resolve().parent.parent
TICKETS = REPO / "corpora" / "zh-tickets"
HELD_OUT = REPO / "corpora" / "zh-tickets-test"
DATA = REPO / "tests" / "data" / "unspaced"


def nbclass_command(*args, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nbclass", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True)  # fmt: skip


def labels_of(output: str) -> dict[str, str]:
    rows = [line.split("\t") for line in output.splitlines()]
    return {source.rsplit("/", 2)[-2] + "/" + source.rsplit("/", 1)[-1]: label
            for source, label, _ in rows}  # fmt: skip


HELD_OUT_LABELS = {
    "account/a.txt": "account", "account/d.txt": "account", "billing/b.txt": "billing",
    "billing/e.txt": "billing", "outage/c.txt": "outage", "outage/f.txt": "outage",
}  # fmt: skip


def test_twelve_chinese_tickets_are_one_clause_a_word_under_the_pattern(tmp_path):
    """The pattern alone (a named model, which does not choose): 25 clauses, none of them
    in a held-out ticket, so every held-out ticket has no known word and is unsure."""
    model = tmp_path / "m.nbc"
    fitted = nbclass_command("fit", TICKETS, "-o", model, "--model", "multinomial")
    assert fitted.returncode == 0 and "12 documents, 3 classes, 25 words" in fitted.stderr
    predicted = nbclass_command("predict", "-m", model, HELD_OUT)
    assert set(labels_of(predicted.stdout).values()) == {"unsure"}


def test_twelve_chinese_tickets_at_the_defaults_classify_the_held_out_ones(tmp_path):
    """fit at its defaults counts runs, characters and pairs (of characters, and of the
    pattern's words: 14 pairs of adjacent clauses) and chooses: every held-out ticket
    gets its class."""
    model = tmp_path / "m.nbc"
    fitted = nbclass_command("fit", TICKETS, "-o", model)
    assert "314 words, chose multinomial, words+characters+pairs" in fitted.stderr
    predicted = nbclass_command("predict", "-m", model, HELD_OUT)
    assert labels_of(predicted.stdout) == HELD_OUT_LABELS
    assert "unspaced all" in nbclass_command("info", "-m", model).stdout


@pytest.mark.parametrize("mode, words", [("characters", 129), ("pairs", 300)])
def test_twelve_chinese_tickets_by_characters_classify_the_held_out_ones(tmp_path, mode, words):
    model = tmp_path / "m.nbc"
    fitted = nbclass_command("fit", TICKETS, "-o", model, "--unspaced", mode)
    assert fitted.returncode == 0, fitted.stderr
    assert f"12 documents, 3 classes, {words} words" in fitted.stderr
    predicted = nbclass_command("predict", "-m", model, HELD_OUT)
    assert labels_of(predicted.stdout) == HELD_OUT_LABELS
    info = nbclass_command("info", "-m", model)
    assert f"unspaced {mode}" in info.stdout


def test_with_word_pairs_the_sets_of_pairs_are_scored_in_the_second_round(tmp_path):
    """``--unspaced all`` alone: every formula on words+characters+pairs, a set of the first
    round. With ``--ngram-range 1,2`` the family of pairs holds the word pairs too, and the
    set is scored in the second round, by the formulas best on words+runs and
    words+characters (2 to 4 with their evidence formula): the same choice."""
    from nbclass.modelfile.textfile import load

    tables = {}
    for extra in ((), ("--ngram-range", "1,2")):
        model = tmp_path / f"m{len(extra)}.nbc"
        fitted = nbclass_command("fit", TICKETS, "-o", model, "--unspaced", "all", *extra)
        assert "chose multinomial, words+characters+pairs" in fitted.stderr, fitted.stderr
        rows = [row for row in load(str(model)).choice["candidates"] if not row.get("offsets")]
        tables[extra] = Counter("+".join(row["features"]) for row in rows)
    assert tables[()] == {"words+runs": 8, "words+characters": 8, "words+characters+pairs": 8}
    paired = tables[("--ngram-range", "1,2")]
    assert paired["words+runs"] == paired["words+characters"] == 8
    assert 2 <= paired["words+characters+pairs"] <= 4 and len(paired) == 3


def test_a_model_written_before_loads_and_predicts_the_same():
    """A model of the tickets written by the version before ``unspaced`` existed (the
    pattern alone), and its predictions then: the same bytes now, and a fresh fit at
    the same settings writes the same file."""
    model = DATA / "zh-tickets-pattern.nbc"
    predicted = nbclass_command("predict", "-m", model.relative_to(REPO),
                                TICKETS.relative_to(REPO), "--format", "jsonl")  # fmt: skip
    assert predicted.stdout == (DATA / "zh-tickets-pattern.jsonl").read_text("utf-8")
    assert "unspaced" not in model.read_bytes()[:4096].decode("utf-8", "replace")


def test_a_corpus_without_those_scripts_fits_the_patterns_file():
    """The demo corpus, whose tickets hold none of those scripts: counted at the defaults
    (all three tokenizations) it is the file of the pattern alone, byte for byte."""
    from nbclass.models.estimators import DEFAULTS
    from nbclass.models.learning import count_documents, new_model

    corpus = list_corpus(str(REPO / "corpora" / "demo"))
    files = []
    for tokenizer in (TokenizerSettings(), TokenizerSettings(unspaced="all")):
        documents = count_documents(corpus, tokenizer, ledger=False, sample=True)
        model = new_model(documents, tokenizer, nbclass.models.model.VocabularyFilter(),
                          DEFAULTS, auto=True)  # fmt: skip
        files.append(dumps(model))
    assert files[0] == files[1] and b"unspaced" not in files[1]


def test_a_corpus_of_spaced_scripts_fits_the_same_counts_with_pairs(tmp_path):
    """The demo corpus fitted at the defaults (without the symbols and the word pairs,
    which --unspaced does not count) and with --unspaced pairs: the same counts; only
    the tokenizer record differs."""
    from nbclass.modelfile.textfile import load

    plain, runs = tmp_path / "plain.nbc", tmp_path / "runs.nbc"
    assert nbclass_command(
        "fit", REPO / "corpora" / "demo", "-o", plain, "-q", "--no-symbols", "--ngram-range", "1,1"
    ).returncode == 0
    assert nbclass_command("fit", REPO / "corpora" / "demo", "-o", runs, "-q",
                           "--unspaced", "pairs").returncode == 0  # fmt: skip
    a, b = load(str(plain)), load(str(runs))
    assert a.counts.vocabulary == b.counts.vocabulary
    assert (as_table(a.counts.token_count) == as_table(b.counts.token_count)).all()
    assert a.tokenizer.unspaced is None and b.tokenizer.unspaced == "pairs"


def test_predict_scores_mixed_scripts_as_the_regex_path(mixed, tmp_path):
    """A Japanese, Chinese and Thai corpus with Latin words inside its runs, fitted with
    pairs: ``nbclass predict`` through real processes gives the scores of the documents
    counted by the tokenizer (the run counter switched off), and the one-document path
    (standard input) the same as the batch."""
    model = tmp_path / "m.nbc"
    assert nbclass_command("fit", mixed, "-o", model, "-q", "--unspaced", "pairs").returncode == 0
    command = ["predict", "-m", str(model), str(mixed), "--format", "jsonl"]
    fast = nbclass_command(*command).stdout
    slow = subprocess.run([sys.executable, "-c", RUN_COUNTER_OFF, *command], capture_output=True,
                          text=True, cwd=REPO).stdout  # fmt: skip
    assert fast == slow and fast.count("\n") == 4 * 9
    text = MIXED["ja"][1]
    one = subprocess.run([sys.executable, "-m", "nbclass", "predict", "-m", str(model)],
                         input=text, capture_output=True, text=True).stdout  # fmt: skip
    many = subprocess.run([sys.executable, "-m", "nbclass", "predict", "-m", str(model),
                           "--lines", "-"], input=text + "\n" + text + "\n",
                          capture_output=True, text=True).stdout  # fmt: skip
    assert one.rstrip("\n").split("\t")[1:] == many.splitlines()[0].split("\t")[1:]
    assert one.split("\t")[1] == "ja"


def test_unspaced_is_refused_where_it_cannot_apply(tmp_path):
    bad = nbclass_command("fit", TICKETS, "-o", tmp_path / "m.nbc", "--unspaced", "pairs",
                          "--token-pattern", r"(?u)\w+")  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.startswith("Error: --unspaced cuts")
    assert "Traceback" not in bad.stderr
    model = tmp_path / "m.nbc"
    assert nbclass_command("fit", TICKETS, "-o", model, "-q").returncode == 0
    update = nbclass_command("fit", HELD_OUT, "--update", model, "--unspaced", "pairs")
    assert update.returncode == 2 and "unspaced: all vs pairs" in update.stderr


def test_all_gives_the_choice_three_feature_sets_of_one_count():
    from nbclass.text.families import feature_sets, masks

    tokens = make_tokenizer(TokenizerSettings(unspaced="all"))("我的猫，ab日本 x 年 cd")
    vocabulary = sorted(set(tokens))
    assert feature_sets(vocabulary) == [
        ("words", "runs"), ("words", "characters"), ("words", "characters", "pairs")
    ]  # fmt: skip
    found = masks(vocabulary)
    chosen = {name: [w for w, k in zip(vocabulary, found[name]) if k] for name in found}
    assert chosen["words"] == ["ab", "cd"] and chosen["runs"] == ["我的猫", "日本"]
    assert chosen["characters"] == ["年", "我", "日", "本", "猫", "的"]
    assert chosen["pairs"] == ["我 的", "日 本", "的 猫"]
    # Another mode's vocabulary, or one without those scripts: no choice of scripts.
    assert feature_sets(sorted(set(make_tokenizer(TokenizerSettings(unspaced="pairs"))(
        "我的猫 ab")))) == [("words",), ("words", "pairs")]  # fmt: skip
    assert feature_sets(["ab", "cd"]) == [("words",)]


def test_fit_with_all_chooses_the_tickets_characters_and_scores_as_pairs(tmp_path):
    """The twelve tickets counted with all three: the choice keeps characters and
    pairs, and the model scores every held-out ticket exactly as one counted with pairs
    alone (its rows are that count)."""
    every, pairs = tmp_path / "all.nbc", tmp_path / "pairs.nbc"
    fitted = nbclass_command("fit", TICKETS, "-o", every, "--unspaced", "all")
    assert "300 words, chose multinomial, words+characters+pairs" in fitted.stderr
    assert nbclass_command("fit", TICKETS, "-o", pairs, "--unspaced", "pairs", "-q",
                           "--model", "multinomial").returncode == 0  # fmt: skip
    command = ["predict", HELD_OUT, "--format", "jsonl", "--no-calibration"]
    assert nbclass_command(*command, "-m", every).stdout == nbclass_command(
        *command, "-m", pairs).stdout  # fmt: skip
    assert labels_of(nbclass_command("predict", "-m", every, HELD_OUT).stdout) == HELD_OUT_LABELS


@pytest.mark.parametrize("options", [["--unspaced", "all"], []])
def test_update_and_merge_with_all_write_a_fresh_fits_bytes(mixed, tmp_path, options):
    """A Chinese, Japanese, Thai and English corpus in halves, counted with all three
    tokenizations (given, or at the defaults): an update and a merge write the fresh
    fit's file, its chosen tokenization included."""
    halves = {"a": tmp_path / "a", "b": tmp_path / "b"}
    for label_dir in sorted(mixed.iterdir()):
        for i, path in enumerate(sorted(label_dir.iterdir())):
            target = halves["ab"[i % 2]] / label_dir.name
            target.mkdir(parents=True, exist_ok=True)
            (target / path.name).write_bytes(path.read_bytes())
    full, half_a, half_b = tmp_path / "all.nbc", tmp_path / "a.nbc", tmp_path / "b.nbc"
    for corpus, out in ((mixed, full), (halves["a"], half_a), (halves["b"], half_b)):
        result = nbclass_command("fit", corpus, *options, "-o", out, "-q")
        assert result.returncode == 0, result.stderr
    assert b'"features": ["words", "' in full.read_bytes()[:20000]
    updated = tmp_path / "updated.nbc"
    updated.write_bytes(half_a.read_bytes())
    assert nbclass_command("fit", halves["b"], "--update", updated, "-q").returncode == 0
    assert updated.read_bytes() == full.read_bytes()
    merged = tmp_path / "merged.nbc"
    assert nbclass_command("merge", half_b, half_a, "-o", merged, "-q").returncode == 0
    assert merged.read_bytes() == full.read_bytes()


def test_spaced_and_unspaced_models_update_merge_and_unlearn_as_a_fresh_fit(tmp_path):
    """A model of the demo corpus (no such script: the pattern alone) updated with the
    Chinese tickets, and merged with a model of them, is the file of a fresh fit of both
    (which counts all three tokenizations and chooses); unlearning the tickets from it
    gives the demo's file again, the pattern alone."""
    both = tmp_path / "both"
    for corpus in (REPO / "corpora" / "demo", TICKETS):
        for label_dir in sorted(corpus.iterdir()):
            target = both / label_dir.name
            target.mkdir(parents=True, exist_ok=True)
            for path in sorted(label_dir.iterdir()):
                (target / f"{corpus.name}-{path.name}").write_bytes(path.read_bytes())
    demo_copy = tmp_path / "demo"
    tickets_copy = tmp_path / "tickets"
    for source, target, prefix in ((REPO / "corpora" / "demo", demo_copy, "demo"),
                                   (TICKETS, tickets_copy, "zh-tickets")):  # fmt: skip
        for label_dir in sorted(source.iterdir()):
            (target / label_dir.name).mkdir(parents=True)
            for path in sorted(label_dir.iterdir()):
                (target / label_dir.name / f"{prefix}-{path.name}").write_bytes(path.read_bytes())
    full, demo, tickets = tmp_path / "full.nbc", tmp_path / "demo.nbc", tmp_path / "t.nbc"
    for corpus, out in ((both, full), (demo_copy, demo), (tickets_copy, tickets)):
        assert nbclass_command("fit", corpus, "-o", out, "-q").returncode == 0
    assert b'"unspaced"' not in demo.read_bytes()[:50000]
    assert b'"unspaced": "all"' in full.read_bytes()[:50000]
    updated = tmp_path / "updated.nbc"
    updated.write_bytes(demo.read_bytes())
    assert nbclass_command("fit", tickets_copy, "--update", updated, "-q").returncode == 0
    assert updated.read_bytes() == full.read_bytes()
    merged = tmp_path / "merged.nbc"
    assert nbclass_command("merge", demo, tickets, "-o", merged, "-q").returncode == 0
    assert merged.read_bytes() == full.read_bytes()
    unlearned = tmp_path / "unlearned.nbc"
    result = nbclass_command("unlearn", tickets_copy, "-m", full, "-o", unlearned, "-q")
    assert result.returncode == 0, result.stderr
    assert unlearned.read_bytes() == demo.read_bytes()


def test_a_model_of_clauses_written_before_keeps_the_pattern_when_updated(tmp_path):
    """The model written by the previous version (its words are clauses) counts new
    documents as it counted its own: updated at the defaults, it keeps the pattern."""
    from nbclass.modelfile.textfile import load

    model = tmp_path / "m.nbc"
    model.write_bytes((DATA / "zh-tickets-pattern.nbc").read_bytes())
    assert nbclass_command("fit", HELD_OUT, "--update", model, "-q").returncode == 0
    updated = load(str(model))
    assert updated.tokenizer.unspaced is None
    assert "请帮我退款并重新开发票" in updated.counts.vocabulary  # a clause of a new ticket


def test_cv_at_the_defaults_chooses_the_tokenization_in_every_fold():
    """cv evaluates what fit does: each fold counts the tickets every way and chooses,
    and every held-out ticket gets its class; with the pattern alone (a named model)
    none has a known word."""
    chosen = nbclass_command("cv", TICKETS, "--folds", "4")
    assert chosen.returncode == 0, chosen.stderr
    assert re.search(r"accuracy\s+1\.0000\s+0\.0000", chosen.stdout)
    pattern = nbclass_command("cv", TICKETS, "--folds", "4", "--model", "multinomial")
    accuracy = float(re.search(r"accuracy\s+([0-9.]+)", pattern.stdout).group(1))
    assert accuracy < 0.5


JAPANESE = {
    "account": ["パスワードを忘れてログインできません。リセットしてください",
                "アカウントがロックされました、二段階認証のコードが届きません",
                "メールアドレスを変更したいのですが、設定画面が見つかりません",
                "新しいiPhoneでログインすると認証エラーになります"],
    "billing": ["請求書の金額が間違っています。返金をお願いします",
                "クレジットカードで二重に請求されました",
                "領収書のPDFをダウンロードできません、請求額も確認したい",
                "サブスクリプションを解約したのに今月も請求が来ました"],
    "outage": ["サーバーがダウンしてサイトにアクセスできません",
               "APIの応答が遅く、タイムアウトが頻発しています",
               "VPN経由で接続できず、ページが表示されません",
               "今朝からサービスが停止していて、エラー503が出ます"],
}  # fmt: skip
JAPANESE_HELD_OUT = {
    "account": "ログインのパスワードをリセットしたい",
    "billing": "カードに二重の請求があり、返金してください",
    "outage": "サイトが表示されず、サーバーのエラーが出ます",
}


def test_japanese_tickets_of_mixed_scripts_at_the_defaults(tmp_path):
    """Kanji, hiragana, katakana and Latin words (iPhone, PDF, API, VPN) in one text:
    fit at its defaults chooses a tokenization of characters, and each held-out ticket
    gets its class; the Latin words stay words."""
    from nbclass.modelfile.textfile import load

    corpus = tmp_path / "ja"
    for label, texts in JAPANESE.items():
        (corpus / label).mkdir(parents=True)
        for i, text in enumerate(texts):
            (corpus / label / f"{i}.txt").write_text(text + "\n", "utf-8")
    model = tmp_path / "ja.nbc"
    fitted = nbclass_command("fit", corpus, "-o", model)
    assert fitted.returncode == 0, fitted.stderr
    features = load(str(model)).vocabulary_filter.features
    assert [name for name in features if name != "symbols"] in (
        ["words", "characters"], ["words", "characters", "pairs"]
    )  # (the symbols, single Latin letters and punctuation, kept or not beside them)
    vocabulary = set(load(str(model)).counts.vocabulary)
    assert {"iphone", "pdf", "api", "vpn", "503"} <= vocabulary
    texts = "".join(text + "\n" for text in JAPANESE_HELD_OUT.values())
    predicted = subprocess.run(
        [sys.executable, "-m", "nbclass", "predict", "-m", str(model), "--lines", "-"],
        input=texts, capture_output=True, text=True,
    )  # fmt: skip
    labels = [line.split("\t")[1] for line in predicted.stdout.splitlines()]
    assert labels == list(JAPANESE_HELD_OUT), predicted.stdout


def test_an_export_names_the_tokenization(tmp_path):
    """The export of the tickets' default model: its tokenizer record says unspaced all,
    and its vocabulary is the rows the choice kept (characters and pairs, no run): the
    300 of --unspaced pairs and the 14 pairs of adjacent clauses of the default's word
    pairs."""
    import json

    model, exported = tmp_path / "m.nbc", tmp_path / "m.json"
    assert nbclass_command("fit", TICKETS, "-o", model, "-q").returncode == 0
    assert nbclass_command("export", "-m", model, "-o", exported, "-q").returncode == 0
    data = json.loads(exported.read_text("utf-8"))
    assert data["tokenizer"]["unspaced"] == "all"
    assert len(data["vocabulary"]) == 314 and "账户" not in data["vocabulary"]
    assert {"账", "账 户", "接口响应非常慢 经常超时"} <= set(data["vocabulary"])
