"""Texts of every script on the numpy run path give exactly the regex tokenizer's counts.

The default token pattern's ``\\w`` is Unicode (letters, digits, underscore of every
script, as Python's re sees them), after ``str.lower``, which may change a text's length
('İ' becomes 'i' and a combining dot, which is not a word character) and looks at
neighbours (a Greek final sigma). The run path must agree on all of it.
"""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import RUN_COUNTER_OFF, counted_as_tokenized, expected_tally, tally_of
from hypothesis import given, settings
from hypothesis import strategies as st

import nbclass.counting.counts
import nbclass.text.runs as runs_module
from nbclass.counting.counts import as_table
from nbclass.modelfile.textfile import dumps
from nbclass.models.model import fit
from nbclass.reading.corpus import list_corpus
from nbclass.text.runs import RunTally, is_word
from nbclass.text.tokenizer import TokenizerSettings, ascii_splitter, make_tokenizer
from nbclass.text.vectorizer import TextCounter

# Characters with the hard cases: case mappings that change length or depend on context,
# combining marks and vowel signs (not word characters), digits and numerals of other
# scripts, letters outside the Basic Multilingual Plane, emoji, NUL, no-break space, a
# lone surrogate.
HARD = (
    "aZ_1 \n.-'"
    "İıIiΣσςΟΔÉéßẞǅǄŉﬁKΩΩ"  # Turkish I, sigma, ß, titlecase, Kelvin and Ohm signs
    "日本語東京ｱアー"  # CJK, katakana (full and half width), prolonged sound mark
    "عربي١٢٣"  # Arabic letters and Arabic-Indic digits
    "नमस्तेि०१\u0301\u0307"  # Devanagari: virama, vowel signs, digits; combining marks
    "Привет мирЁё"  # Cyrillic
    "²½Ⅻⅻ①"  # superscript, fraction, Roman numerals, circled digit
    "😀𝐀𝐚𐐀𐐨"  # emoji, mathematical bold letters, Deseret (astral cased letters)
    "\x00\u00a0\ufffd\u200d\t\udc80"  # ... and a lone surrogate (surrogateescape)
)
WORDS = [
    "İstanbul", "ISTANBUL", "ıi", "ΟΔΟΣ", "Σίσυφος", "σοφός", "ΣΑΣ", "straße", "STRASSE",
    "ǅemal", "日本語", "東京タワー", "مرحبا", "١٢٣٤", "नमस्ते", "किताब", "Привет", "МИР",
    "мир", "𝐀𝐁𝐂", "𐐀𐐨𐐩", "😀😀", "café", "CAFÉ", "naïve", "x²", "Ⅻth", "the", "ab",
    "abcdefghij", "日本語日本語日本語",
]  # fmt: skip
GAPS = [" ", ", ", "-", "\n", "", "😀", "\u0301", "\x00", "。"]
texts_strategy = st.one_of(
    st.text(alphabet=HARD, max_size=40),
    st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(GAPS)), max_size=12).map(
        lambda pairs: "".join(word + gap for word, gap in pairs)
    ),
)
STOP_LISTS = [(), ("ab",), ("мир", "σοφός", "the", "日本語"), ("x", "ab", "東京タワー")]


def tokens_of(settings_):
    return make_tokenizer(settings_)


def test_the_word_table_is_the_regex_word_class_on_every_code_point():
    """All 1,114,112 code points, surrogates included: the table says \\w exactly where
    the regex engine finds one."""
    points = np.arange(0x110000, dtype="<u4")
    text = str(points.data, "utf-32-le", "surrogatepass")
    expected = np.zeros(points.size, dtype=bool)
    expected[[m.start() for m in re.finditer(r"\w", text)]] = True
    assert expected.sum() > 100_000  # letters of every script, not only ASCII
    assert np.array_equal(is_word(points), expected)


@settings(max_examples=400, deadline=None, database=None)
@given(
    st.lists(texts_strategy, max_size=8),
    st.lists(st.sampled_from(WORDS + ["a b", "x", "ǆemal", "i̇stanbul", "σας"]), max_size=8),
    st.booleans(),
    st.sampled_from(STOP_LISTS),
)
def test_a_text_counter_counts_any_script_as_the_tokenizer(texts, extra, lowercase, stop):
    """Counts and token numbers of texts of many scripts, over a vocabulary holding their
    tokens and words no run can be (a space, one character, upper case)."""
    settings_ = TokenizerSettings(lowercase=lowercase, stop_words=stop)
    counter, vocabulary = counted_as_tokenized(settings_, texts, tokens_of(settings_), extra)
    assert counter.runs is not None or "a b" in vocabulary


def test_a_counter_without_the_space_word_counts_by_runs():
    """The hard cases by hand: 'İ' lower-cases to 'i' and a combining dot, which ends the
    word; a final sigma is its own letter; digits of other scripts are word characters."""
    settings_ = TokenizerSettings()
    words = ["stanbul", "οδος", "οδοσ", "١٢٣", "नमस", "日本語", "𝐀𝐁", "𐐨𐐩"]
    counter = TextCounter(settings_, words)
    assert counter.runs is not None
    X, n = counter.count(["İSTANBUL ΟΔΟΣ ΟΔΟΣΟΣ", "١٢٣ नमस्ते 日本語 𝐀𝐁 𐐀𐐩 😀😀"])
    assert X.toarray().tolist() == [[1, 1, 0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1, 1, 1]]
    assert n.tolist() == [3, 5]  # 'οδοσος' is a token outside the vocabulary






@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(st.tuples(texts_strategy, st.integers(0, 2)), max_size=10),
    st.booleans(),
    st.sampled_from(STOP_LISTS),
    st.integers(1, 50),
    st.integers(1, 3),
    st.sampled_from([1, 3, 1 << 15]),
    st.sampled_from([2, 3, 8]),
)
def test_a_run_tally_counts_any_script_as_the_tokenizer(
    documents, lowercase, stop, chunk, adds, recent, merge_at
):
    """D_jc and T_jc of str texts of many scripts, mixed with ASCII bytes of others, in
    chunks of any size and several calls, equal the tokenizer's; the words come sorted,
    whenever the latest words are merged with the others, and the chunks' sums are the
    same whenever they are merged."""
    settings_ = TokenizerSettings(lowercase=lowercase, stop_words=stop)
    texts = [text for text, _ in documents]
    labels = [c for _, c in documents]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runs_module, "CHUNK_BYTES", chunk)
        patch.setattr(runs_module, "_RECENT", recent)
        patch.setattr(runs_module, "_MERGE_AT", merge_at)
        runs_tally = RunTally.make(ascii_splitter(settings_, "utf-8"), 3)
        counted = []
        step = -(-len(texts) // adds) if texts else 1
        for start in range(0, len(texts), step):
            end = min(len(texts), start + step)
            part = [i for i in range(start, end) if len(texts[i]) <= chunk]
            ascii_ = [i for i in part if texts[i].isascii()]
            other = [i for i in part if not texts[i].isascii()]
            as_bytes = [texts[i].encode() for i in ascii_]
            assert runs_tally.add(as_bytes, [labels[i] for i in ascii_]) == []
            assert runs_tally.add([texts[i] for i in other], [labels[i] for i in other]) == []
            counted += part
    expected = expected_tally([texts[i] for i in counted], [labels[i] for i in counted], settings_)
    assert tally_of(runs_tally, 3) == expected


def test_a_clash_of_hashes_in_a_text_chunk_gives_it_back(monkeypatch):
    """With one hash for every hashed word, two different non-ASCII words in a chunk
    clash: the chunk's texts come back for the tokenizer, the tally is unchanged."""
    monkeypatch.setattr(runs_module, "_mix", lambda h: h * np.uint64(0))
    runs_tally = RunTally.make(ascii_splitter(TokenizerSettings(), "utf-8"), 2)
    assert runs_tally.add(["мир мир"], [0]) == []
    assert runs_tally.add(["мир", "日本"], [1, 1]) == [0, 1]
    assert runs_tally.add(["日本"], [1]) == [0]  # another word than the one met
    assert tally_of(runs_tally, 2) == {("мир", 0): (1, 2)}


SCRIPTS = {
    "de": "Die Straße ist lang. STRASSE und Maß, Übergröße, naïve Café-Gäste.",
    "tr": "İstanbul'da IŞIK ve ılık; Iğdır ile İzmir arası 1234 km.",
    "el": "ΟΔΟΣ και οδός· ΣΟΦΟΣ Σίσυφος σοφός, ΑΣ ΠΑΜΕ.",
    "ru": "Привет, МИР! Ёжик и ёлка; мир — 2024 год.",
    "ar": "مرحبا بالعالم ١٢٣ كتاب الكتب، اللغة العربية.",
    "hi": "नमस्ते दुनिया। किताबें ० १ २ पढ़ो, हिन्दी भाषा।",
    "ja": "東京タワーは日本語で書かれた。ｱｲｳ カタカナ",
    "zh": "中文文本分类测试，简体字与數字１２３。",
    "emoji": "ab😀cd 😀😀 x²y Ⅻth ½ 𝐀𝐁𝐂 𐐀𐐨𐐩 under_score",
}


@pytest.fixture
def multilingual(tmp_path):
    root = tmp_path / "corpus"
    for label, text in SCRIPTS.items():
        (root / label).mkdir(parents=True)
        words = text.split()
        for i in range(8):  # documents of several sizes, some with a word repeated
            body = " ".join(words[i % len(words) :] + words[: i % len(words)] * (i % 3))
            (root / label / f"{i}.txt").write_text(body + "\n", "utf-8")
        (root / label / "ascii.txt").write_text(f"plain ascii {label} text\n")
    return root


def test_fit_writes_the_models_bytes_of_the_regex_path(multilingual, monkeypatch):
    """A corpus of nine scripts: the model file is byte for byte the one fitted with
    every document tokenized by the regex (no splitter), on one process or two."""
    corpus = list_corpus(str(multilingual))
    fast = dumps(fit(corpus))
    monkeypatch.setattr(nbclass.counting.counts, "PARALLEL_MIN_BYTES", 1)
    workers = dumps(fit(corpus, jobs=2))
    monkeypatch.setattr(nbclass.counting.counts, "ascii_splitter", lambda *args: None)
    plain = dumps(fit(corpus))
    assert fast == plain and workers == plain
    vocabulary = set(fit(corpus).counts.vocabulary)
    hard = {"stanbul", "οδος", "οδός", "١٢٣", "𝐀𝐁𝐂", "𐐨𐐨𐐩", "東京タワーは日本語で書かれた"}
    assert hard <= vocabulary


def test_predict_scores_every_script_as_the_regex_path(multilingual, tmp_path):
    """``nbclass predict`` on the folder, through real processes: the scores are those
    of the same documents counted by the tokenizer (the run counter switched off)."""
    model = tmp_path / "m.nbc"
    subprocess.run(
        [sys.executable, "-m", "nbclass", "fit", str(multilingual), "-o", str(model), "-q"],
        check=True,
    )
    command = [sys.executable, "-m", "nbclass", "predict", "-m", str(model), str(multilingual),
               "--format", "jsonl"]  # fmt: skip
    fast = subprocess.run(command, check=True, capture_output=True).stdout
    slow = subprocess.run(
        [sys.executable, "-c", RUN_COUNTER_OFF, *command[3:]], check=True, capture_output=True
    ).stdout
    assert fast == slow and fast.count(b"\n") == 9 * 9


@settings(max_examples=150, deadline=None, database=None)
@given(
    st.lists(st.tuples(texts_strategy, st.integers(0, 2)), max_size=16),
    st.integers(1, 60),
    st.integers(1, 5),
)
def test_gathered_texts_count_the_same_once_flushed(documents, chunk, calls):
    """Texts gathered over several calls (counted a chunk at a time as they add up) and
    flushed give the tokenizer's counts; packing before the flush is refused."""
    settings_ = TokenizerSettings()
    texts = [text for text, _ in documents if len(text) <= chunk]
    labels = [c for text, c in documents if len(text) <= chunk]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runs_module, "CHUNK_BYTES", chunk)
        runs_tally = RunTally.make(ascii_splitter(settings_, "utf-8"), 3)
        refused = []
        step = -(-len(texts) // calls) if texts else 1
        for start in range(0, len(texts), step):
            part = range(start, min(len(texts), start + step))
            ascii_ = [i for i in part if texts[i].isascii()]
            other = [i for i in part if not texts[i].isascii()]
            refused += runs_tally.gather([texts[i].encode() for i in ascii_],
                                         [labels[i] for i in ascii_])  # fmt: skip
            refused += runs_tally.gather([texts[i] for i in other], [labels[i] for i in other])
        if runs_tally.waiting:
            with pytest.raises(ValueError, match="flush it first"):
                runs_tally.packed()
        refused += runs_tally.flush()
        assert refused == [] and not runs_tally.waiting
    assert tally_of(runs_tally, 3) == expected_tally(texts, labels, settings_)


def test_gathered_texts_that_clash_come_back_with_their_labels(monkeypatch):
    """With one hash for every hashed word, a gathered text whose word clashes with one
    met before comes back from the flush as (text, label); the rest is counted."""
    monkeypatch.setattr(runs_module, "_mix", lambda h: h * np.uint64(0))
    runs_tally = RunTally.make(ascii_splitter(TokenizerSettings(), "utf-8"), 2)
    assert runs_tally.gather(["мир мир"], [0]) == [] and runs_tally.waiting
    assert runs_tally.gather([b"abcdefghij", b"ab"], [1, 0]) == []
    # The ASCII texts are counted first; мир then has the hash of abcdefghij.
    assert runs_tally.flush() == [("мир мир", 0)] and not runs_tally.waiting
    assert tally_of(runs_tally, 2) == {("abcdefghij", 1): (1, 1), ("ab", 0): (1, 1)}


def test_windows_packed_by_word_numbers_add_up_to_the_plain_counts(tmp_path, monkeypatch):
    """One process's run tally counts three windows and packs each with an origin (its
    words sent once, by number), another process's tally packs the old way, and a text
    longer than a chunk goes through the Counters: the counts are the tokenizer's."""
    from nbclass.counting.counts import CountAccumulator
    from nbclass.counting.tally import pack, settle, tally, tally_paths

    monkeypatch.setattr(runs_module, "CHUNK_BYTES", 40)
    texts = ["мир ab МИР", "ab cd ab", "日本語 ab", "x" * 50 + " ab мир", "cd мир 日本語",
             "ΟΔΟΣ ab", "ef gh ij kl mn op qr", "мир"]  # fmt: skip
    labels = [0, 1, 0, 1, 1, 0, 1, 0]
    paths = []
    for i, text in enumerate(texts):
        path = tmp_path / f"{i}.txt"
        path.write_text(text, "utf-8")
        paths.append(str(path))
    settings_ = TokenizerSettings()
    tokenize = make_tokenizer(settings_)
    splitter = ascii_splitter(settings_, "utf-8")
    accumulator = CountAccumulator(["a", "b"])
    runs = None
    for start, end in ((0, 3), (3, 5), (5, 6)):  # one process, three windows
        part = tally_paths(paths[start:end], labels[start:end], 2, tokenize,
                           splitter=splitter, runs=runs)  # fmt: skip
        settle(part, tokenize)
        runs = part[6]
        packed = pack(part, b"origin-1")
        assert isinstance(packed[1], tuple) and packed[1][0] == b"origin-1"
        accumulator.add_packed(packed)
    other = tally_paths(paths[6:], labels[6:], 2, tokenize, splitter=splitter)
    settle(other, tokenize)
    accumulator.add_packed(pack(other))  # another process, its words by name
    counts = accumulator.result()
    expected = CountAccumulator(["a", "b"])
    expected.add_packed(pack(tally([tokenize(t) for t in texts], labels, 2)))
    assert counts.equals(expected.result())
    assert as_table(counts.token_count)[counts.vocabulary.index("мир")].tolist() == [3, 2]


def test_a_run_tallys_classes_get_counters_of_their_own_once_tokenized(tmp_path, monkeypatch):
    """Every class of a tally counted by runs starts with one shared empty Counter, which
    refuses to be written to and pickles as itself; a document tokenized in Python (one
    longer than a chunk) gives its class Counters of its own, the others keep the
    shared one."""
    import pickle
    from collections import Counter

    from nbclass.counting.tally import _NO_COUNTS, settle, tally_paths

    monkeypatch.setattr(runs_module, "CHUNK_BYTES", 40)
    paths = []
    for i, text in enumerate(["ab cd", "x" * 50 + " ab ab", "ef мир"]):
        (tmp_path / f"{i}.txt").write_text(text, "utf-8")
        paths.append(str(tmp_path / f"{i}.txt"))
    settings_ = TokenizerSettings()
    tokenize = make_tokenizer(settings_)
    part = tally_paths(paths, [0, 1, 2], 4, tokenize, splitter=ascii_splitter(settings_, "utf-8"))
    settle(part, tokenize)
    docs, tokens = part[1], part[2]
    assert tokens[1] == Counter({"x" * 50: 1, "ab": 2})
    assert docs[1] == Counter({"x" * 50: 1, "ab": 1})
    assert type(tokens[1]) is Counter and type(docs[1]) is Counter
    assert all(docs[c] is _NO_COUNTS and tokens[c] is _NO_COUNTS for c in (0, 2, 3))
    for write in (lambda: _NO_COUNTS.update(["ab"]), lambda: _NO_COUNTS.update(ab=1),
                  lambda: _NO_COUNTS.__setitem__("ab", 1)):  # fmt: skip
        with pytest.raises(TypeError):
            write()
    assert not _NO_COUNTS and pickle.loads(pickle.dumps(_NO_COUNTS)) is _NO_COUNTS


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(texts_strategy, max_size=12))
def test_documents_decoded_at_once_are_the_documents_decoded_each(texts):
    """UTF-8 documents decoded in one call (surrogates are not UTF-8: those texts are
    refused) give each text and its length, as decoding them one by one does."""
    from nbclass.text.runs import JoinedTexts

    encoded = [text.encode("utf-8", "surrogatepass") for text in texts]
    joined = JoinedTexts.decode(encoded)
    if any("\udc80" in text for text in texts):
        assert joined is None
        return
    assert list(joined) == texts and joined.lengths.tolist() == [len(t) for t in texts]
    for first in range(len(texts) + 1):
        part = joined[first : first + 3]
        assert list(part) == texts[first : first + 3]
        assert part.text == "\n".join(texts[first : first + 3])


@settings(max_examples=400, deadline=None, database=None)
@given(st.lists(texts_strategy, max_size=10), st.booleans())
def test_texts_lower_cased_together_are_each_lower_cased(texts, explained):
    """Lower-casing texts joined by newlines gives each text lower-cased on its own (a
    sigma at a text's end is final there, and 'İ' grows a text by one): the same
    characters and each text's new length. With the growth left unexplained (the
    dotted I taken for another character), the texts are lower-cased one by one."""
    from nbclass.text.runs import JoinedTexts, _lowered

    joined = JoinedTexts.of(texts)
    expected = JoinedTexts.of([text.lower() for text in texts])
    with pytest.MonkeyPatch.context() as patch:
        if not explained:
            patch.setattr(runs_module, "_DOTTED_I", ord("z"))
        text, lengths = _lowered(joined.text + "\n", joined.lengths, joined)
    assert text == expected.text + "\n" and lengths.tolist() == expected.lengths.tolist()


def test_a_final_sigma_at_the_end_of_one_text_is_final_in_the_chunk():
    """The context of a capital sigma stops at a text's end: ΑΣ then Β is 'ας' then 'β'
    (as on its own), never 'ασ'; a sigma that starts a text is not final."""
    from nbclass.text.runs import JoinedTexts, _lowered

    texts = ["ΑΣ", "ΒΣ'", "ΣΑ", "İİ ΟΣ", "ΑΣ\u0301"]
    joined = JoinedTexts.of(texts)
    text, lengths = _lowered(joined.text + "\n", joined.lengths, joined)
    assert text.split("\n")[:-1] == ["ας", "βς'", "σα", "i\u0307i\u0307 ος", "ας\u0301"]
    assert lengths.tolist() == [2, 3, 2, 7, 3]


def test_a_part_with_a_document_that_is_not_utf8_counts_and_logs_as_each_decoded(tmp_path):
    """Among documents of other scripts, one that is not UTF-8: the part is decoded
    document by document, its bad bytes replaced and counted, and the counts are those
    of the tokenizer on the same texts."""
    from nbclass.counting.tally import pack, settle, tally, tally_paths
    from nbclass.reading.policy import ReadLog

    documents = ["мир мир ab".encode(), b"caf\xe9 \xff\xfe \xd0\xbc\xd0\xb8\xd1\x80",
                 "日本語 ab".encode(), b"plain ab cd", "ΟΔΟΣ мир".encode()]  # fmt: skip
    labels = [0, 1, 0, 1, 0]
    paths = []
    for i, data in enumerate(documents):
        (tmp_path / f"{i}.txt").write_bytes(data)
        paths.append(str(tmp_path / f"{i}.txt"))
    settings_ = TokenizerSettings()
    tokenize = make_tokenizer(settings_)
    part = tally_paths(paths, labels, 2, tokenize, splitter=ascii_splitter(settings_, "utf-8"))
    settle(part, tokenize)
    log = ReadLog()
    texts = [log.decode(data, "utf-8") for data in documents]
    expected = pack(tally([tokenize(t) for t in texts], labels, 2))
    got = pack(part)
    assert (part[5].replaced, part[5].replaced_docs) == (log.replaced, log.replaced_docs) == (3, 1)
    assert got[0] == expected[0]
    words = got[1].split("\x00")
    assert words == expected[1].split("\x00")
    assert packed_cells(got) == packed_cells(expected)


def packed_cells(packed):
    """(class, row, D, T) of each cell of a packed tally, sorted."""
    classes = np.repeat(np.arange(len(packed[0])), packed[2]).tolist()
    return sorted(zip(classes, packed[3].tolist(), packed[4].tolist(), packed[5].tolist()))


@settings(max_examples=200, deadline=None, database=None)
@given(
    st.lists(
        st.one_of(
            texts_strategy.map(lambda t: t.encode("utf-8", "surrogatepass")),
            st.binary(max_size=12),  # not UTF-8, often
        ),
        max_size=10,
    ),
    st.sampled_from(["utf-8", "latin-1", "utf-16"]),
    st.sampled_from([None, 20]),
)
def test_documents_counted_from_their_bytes_are_counted_as_their_texts(documents, encoding, chunk):
    """A batch of raw documents (some not UTF-8, some longer than a chunk) counted from
    their bytes: the counts and token numbers of the decoded texts, and the same
    replacements counted, under an encoding that reads ASCII as ASCII or not."""
    from nbclass.reading.policy import ReadLog

    settings_ = TokenizerSettings()
    texts_log, bytes_log = ReadLog(), ReadLog()
    texts = [texts_log.decode(data, encoding) for data in documents]
    vocabulary = sorted({t for text in texts for t in tokens_of(settings_)(text)})
    counter = TextCounter(settings_, vocabulary)
    with pytest.MonkeyPatch.context() as patch:
        if chunk is not None:
            patch.setattr(runs_module, "CHUNK_BYTES", chunk)
        expected = counter.entries(texts)
        got = counter.document_entries(
            documents, lambda data: bytes_log.decode(data, encoding), encoding
        )
    cells = lambda e: sorted(zip(e[0].tolist(), e[1].tolist(), e[2].tolist()))  # noqa: E731
    assert cells(got) == cells(expected) and got[3].tolist() == expected[3].tolist()
    assert (bytes_log.replaced, bytes_log.replaced_docs) == (
        texts_log.replaced, texts_log.replaced_docs,
    )  # fmt: skip
