"""The numpy run counter (nbclass.text.runs) gives exactly the tokenizer's counts."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from conftest import expected_tally, tally_of
from hypothesis import given, settings
from hypothesis import strategies as st

import nbclass.text.runs as runs_module
from nbclass.counting.counts import as_table
from nbclass.text.runs import RunCounter, WordTable, run_bounds, run_hashes
from nbclass.text.tokenizer import TokenizerSettings, ascii_splitter, make_tokenizer
from nbclass.text.vectorizer import TextCounter, count_matrix


def expected_counts(texts, settings, vocabulary):
    """(X, n_tokens) the plain way: the tokenizer and a Counter per text."""
    tokens = [make_tokenizer(settings)(text) for text in texts]
    index = {word: j for j, word in enumerate(vocabulary)}
    return count_matrix(tokens, index), [len(t) for t in tokens]


def counted(texts, settings, vocabulary):
    counter = TextCounter(settings, vocabulary)
    assert counter.runs is not None
    return counter.count(texts)


def assert_same(texts, settings, vocabulary):
    X, n_tokens = counted(texts, settings, vocabulary)
    expected, expected_tokens = expected_counts(texts, settings, vocabulary)
    assert X.shape == expected.shape and (X != expected).nnz == 0
    assert X.has_sorted_indices and X.dtype == np.int64
    assert n_tokens.tolist() == expected_tokens


WORDS = ["ab", "ba", "abb", "a_1", "AB", "Ab", "zz", "z", "b1", "é1", "the", "b_"]
WORDS += ["abababab", "abababab_", "bababababa", "ab_ab_ab_ab", "ABABABABAB", "z" * 20]
ascii_text = st.one_of(
    st.text(alphabet="ab AB_1.\n\t-'é\x00zZ", max_size=60),
    st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from([" ", ", ", "-", "\n"]))).map(
        lambda pairs: "".join(word + gap for word, gap in pairs)
    ),
)
vocabularies = st.lists(
    st.sampled_from(WORDS + ["abababa", "zzzzzzzzz"]),
    unique=True,
    max_size=10,
)
stop_lists = st.sampled_from([(), ("ab",), ("the", "zz", "b")])


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(ascii_text, max_size=8), vocabularies, st.booleans(), stop_lists)
def test_runs_count_exactly_the_tokens(texts, vocabulary, lowercase, stop):
    """Any texts (ASCII or not, NUL bytes, upper case), any vocabulary (with words no
    run can be: upper case under lower-casing, one character, a stop word, non-ASCII)."""
    assert_same(texts, TokenizerSettings(lowercase=lowercase, stop_words=stop), vocabulary)


@settings(max_examples=100, deadline=None, database=None)
@given(st.lists(ascii_text, min_size=1, max_size=12), vocabularies, st.integers(1, 30))
def test_chunks_of_any_size_count_the_same(texts, vocabulary, chunk):
    """Texts cut into chunks of a few bytes, and texts longer than a chunk (tokenized in
    Python), give the same matrix."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runs_module, "CHUNK_BYTES", chunk)
        assert_same(texts, TokenizerSettings(), vocabulary)


@settings(max_examples=100, deadline=None, database=None)
@given(st.lists(ascii_text, max_size=12), vocabularies, st.integers(2, 5))
def test_texts_counted_by_threads_give_the_same_matrix(texts, vocabulary, threads):
    """Consecutive parts counted at once by threads, put together: the same matrix and
    token numbers as one count."""
    counter = TextCounter(TokenizerSettings(), sorted(set(vocabulary)))
    X, n = counter.count(texts)
    Y, m = counter.count(texts, threads=threads)
    assert (X != Y).nnz == 0 and X.shape == Y.shape
    assert n.tolist() == m.tolist()


def test_texts_the_runs_count_need_no_word_dictionary():
    """The word -> column dict is made only for texts tokenized one by one (a text
    longer than a chunk): the runs alone count the others, the empty list included."""
    counter = TextCounter(TokenizerSettings(), ["ab", "été", "zz"])
    X, n = counter.count(["ab zz AB", "été ab", ""])
    assert X.toarray().tolist() == [[2, 0, 1], [1, 1, 0], [0, 0, 0]] and n.tolist() == [3, 2, 0]
    assert counter.count([])[0].shape == (0, 3)
    assert "vocabulary" not in counter.__dict__
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runs_module, "CHUNK_BYTES", 4)
        Y, m = counter.count(["ab zz AB", "ab"])
    assert Y.toarray().tolist() == [[2, 0, 1], [1, 0, 0]] and m.tolist() == [3, 1]
    assert "vocabulary" in counter.__dict__


def test_a_large_vocabulary_with_unknown_words():
    """20,000 words (long probe chains in the table) and texts mixing them with unknown
    words, punctuation and upper case."""
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz0123456789_"

    def word():
        return "".join(rng.choice(letters) for _ in range(rng.randint(2, 9)))

    vocabulary = sorted({word() for _ in range(20_000)})
    pool = vocabulary + [word() + "q" for _ in range(2_000)] + ["x", "The", "Ü"]
    texts = [
        " ".join(
            rng.choice(pool).upper() if rng.random() < 0.1 else rng.choice(pool)
            for _ in range(rng.randint(0, 300))
        )  # fmt: skip
        + rng.choice(["", ".", "!?\n"])
        for _ in range(300)
    ]
    assert_same(texts, TokenizerSettings(stop_words=("the",)), vocabulary)


LONG, ANAGRAM, LONGER = "abcdefghij", "jihgfedcba", "abcdefghijk"  # more than 8 bytes


def test_a_run_with_a_words_hash_but_other_bytes_is_unknown(monkeypatch):
    """With every hash (and every home slot) the same, a long run is found as the one
    long word of the table: only the byte-for-byte check tells it from its anagram
    (same length) and from a longer word. Short words are their own keys: exact."""
    monkeypatch.setattr(runs_module, "_mix", lambda h: h * np.uint64(0))
    texts = [f"{LONG} {ANAGRAM} {LONGER} {LONG} ab", f"{ANAGRAM.upper()}, ba ab!", "zz"]
    vocabulary = [LONG, "ab", "ba"]
    assert_same(texts, TokenizerSettings(), vocabulary)
    X, n_tokens = counted(texts, TokenizerSettings(), vocabulary)
    assert X.toarray().tolist() == [[2, 1, 0], [0, 1, 1], [0, 0, 0]]
    assert n_tokens.tolist() == [5, 3, 1]


def test_a_table_of_words_sharing_a_hash_is_refused(monkeypatch):
    """Two long words with one hash: no table, and the classifier tokenizes instead."""
    from nbclass.counting.counts import CountAccumulator
    from nbclass.models.model import Classifier, Model

    monkeypatch.setattr(runs_module, "_mix", lambda h: h * np.uint64(0))
    assert WordTable.of([LONG.encode(), ANAGRAM.encode()]) is None
    assert WordTable.of([b"ab", b"ba", LONG.encode()]) is not None
    splitter = ascii_splitter(TokenizerSettings(), "ascii")
    assert RunCounter.for_vocabulary({LONG: 0, ANAGRAM: 1}, splitter) is None
    acc = CountAccumulator(["x", "y"])
    acc.add(count_matrix([[LONG], [ANAGRAM]], acc.vocabulary), [0, 1])
    classifier = Classifier(Model(acc.result(), TokenizerSettings()))
    assert classifier.counter.runs is None
    X, n_tokens = classifier.count([f"{LONG} {ANAGRAM} {ANAGRAM}", ANAGRAM])
    assert X.toarray().tolist() == [[1, 2], [0, 1]] and n_tokens.tolist() == [3, 1]


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.binary(min_size=1, max_size=12).map(lambda b: b.replace(b" ", b"x")),
                min_size=1, max_size=20))  # fmt: skip
def test_a_runs_hash_depends_only_on_its_bytes(words):
    """The same word has the same hash wherever it stands in a chunk."""
    codes = np.frombuffer(b" ".join(words), dtype=np.uint8)
    starts, ends = run_bounds(codes)
    assert [codes[s:e].tobytes() for s, e in zip(starts, ends)] == words
    hashes = run_hashes(codes, starts, ends)
    alone = [run_hashes(np.frombuffer(w, dtype=np.uint8), np.array([0]), np.array([len(w)]))[0]
             for w in words]  # fmt: skip
    assert hashes.tolist() == [int(h) for h in alone]
    by_word = {}
    for word, h in zip(words, hashes.tolist()):
        assert by_word.setdefault(word, h) == h


def test_hand_counted_example():
    """The text "The server, the SERVER and a server_2." with stop word "the": tokens server,
    server, and, server_2 (4); over the vocabulary [and, server, zebra]."""
    X, n_tokens = counted(
        ["The server, the SERVER and a server_2."],
        TokenizerSettings(stop_words=("the",)),
        ["and", "server", "zebra"],
    )
    assert X.toarray().tolist() == [[1, 2, 0]] and n_tokens.tolist() == [4]
    tokenize = make_tokenizer(TokenizerSettings(stop_words=("the",)))
    tokens = tokenize("The server, the SERVER and a server_2.")
    assert Counter(tokens) == {"server": 2, "and": 1, "server_2": 1}






@settings(max_examples=200, deadline=None, database=None)
@given(
    st.lists(
        st.tuples(ascii_text.map(lambda t: t.replace("é", "e")), st.integers(0, 2)), max_size=12
    ),  # fmt: skip
    st.booleans(),
    stop_lists,
    st.integers(1, 40),
    st.integers(1, 4),
)
def test_a_run_tally_counts_what_the_tokenizer_finds(documents, lowercase, stop, chunk, adds):
    """D_jc and T_jc of ASCII texts in chunks of any size, added in several calls (as
    the parts of a window), equal the tokenizer's."""
    from nbclass.text.runs import RunTally

    settings_ = TokenizerSettings(lowercase=lowercase, stop_words=stop)
    texts = [text.encode("ascii") for text, _ in documents]
    labels = [c for _, c in documents]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runs_module, "CHUNK_BYTES", chunk)
        runs_tally = RunTally.make(ascii_splitter(settings_, "ascii"), 3)
        step = -(-len(texts) // adds) if texts else 1
        for start in range(0, len(texts), step):
            # Texts longer than a chunk are the caller's (tokenized in Python).
            short = [i for i in range(start, min(len(texts), start + step))
                     if len(texts[i]) <= chunk]  # fmt: skip
            refused = runs_tally.add([texts[i] for i in short], [labels[i] for i in short])
            assert refused == []
        expected = expected_tally(
            [texts[i] for i in range(len(texts)) if len(texts[i]) <= chunk],
            [labels[i] for i in range(len(texts)) if len(texts[i]) <= chunk],
            settings_,
        )
    assert tally_of(runs_tally, 3) == expected


def test_a_chunk_with_a_hash_clash_is_given_back(monkeypatch):
    """With one hash for every long word, a chunk holding two different long words, or
    a long word other than the one met in an earlier chunk, is not counted: its texts
    come back (the caller tokenizes them) and the tally is as before it."""
    from nbclass.text.runs import RunTally

    monkeypatch.setattr(runs_module, "_mix", lambda h: h * np.uint64(0))
    splitter = ascii_splitter(TokenizerSettings(), "ascii")
    fresh = RunTally.make(splitter, 2)
    assert fresh.add([f"{ANAGRAM} ab {LONG}".encode()], [0]) == [0]  # in one chunk
    assert fresh.n_words == 0 and tally_of(fresh, 2) == {}
    runs_tally = RunTally.make(splitter, 2)
    assert runs_tally.add([f"{LONG} ab".encode(), f"ab {LONG}".encode()], [0, 1]) == []
    before = tally_of(runs_tally, 2)
    assert before == {(LONG, 0): (1, 1), (LONG, 1): (1, 1), ("ab", 0): (1, 1), ("ab", 1): (1, 1)}
    assert runs_tally.add([f"{LONG} {ANAGRAM}".encode(), b"ab"], [0, 0]) == [0, 1]
    assert runs_tally.add([ANAGRAM.encode()], [1]) == [0]  # clashes with the word met
    assert runs_tally.add([f"{LONG} ba {LONG}".encode()], [1]) == []
    assert tally_of(runs_tally, 2) == {**before, (LONG, 1): (2, 3), ("ba", 1): (1, 1)}


def test_fit_counts_the_same_when_hashes_clash(monkeypatch, tmp_path):
    """A corpus with anagrams of long words, every long hash the same: the chunks that
    clash are tokenized and the model is the one fitted without the run tally."""
    import nbclass.counting.counts
    from nbclass.models.model import fit
    from nbclass.reading.corpus import list_corpus

    monkeypatch.setattr(runs_module, "_mix", lambda h: h * np.uint64(0))
    monkeypatch.setattr(runs_module, "CHUNK_BYTES", 64)
    for c, words in enumerate([f"{LONG} {ANAGRAM} ab", f"{LONGER} ba {LONG}"]):
        (tmp_path / f"class{c}").mkdir()
        for i in range(6):
            (tmp_path / f"class{c}" / f"{i}.txt").write_text(f"{words} x{i}yz " * (i + 1))
    corpus = list_corpus(str(tmp_path))
    clashing = fit(corpus)
    monkeypatch.setattr(nbclass.counting.counts, "ascii_splitter", lambda *args: None)
    plain = fit(corpus)
    assert clashing.counts.equals(plain.counts)
    tokens = dict(zip(plain.counts.vocabulary, as_table(plain.counts.token_count).tolist()))
    assert tokens[LONG] == [21, 21] and tokens[ANAGRAM] == [21, 0]


@pytest.mark.parametrize("jobs", [1, 2])
def test_word_pairs_count_the_same_when_hashes_clash(monkeypatch, tmp_path, jobs):
    """Word pairs go from the counting processes as the numbers of their two words
    (352ac71); with every long word's hash the same, chunks that clash are tokenized and
    their words come by name, and the pairs of the others are named from
    their words' rows: the counts are those of the regex tokenizer, in one process and
    in two, over parts of a few documents (in one, both ways are seen taken)."""
    import nbclass.counting.counts
    from nbclass.models.model import fit
    from nbclass.reading.corpus import list_corpus

    for c, words in enumerate([f"{LONG} {ANAGRAM} ab", f"{LONGER} ba {LONG}"]):
        (tmp_path / f"class{c}").mkdir()
        for i in range(30):  # a third of the documents hold the long words
            text = f"{words} x{i}yz {ANAGRAM}" if i % 3 == 0 else f"ab x{i}yz ba cd{c}"
            (tmp_path / f"class{c}" / f"{i}.txt").write_text(f"{text} " * (i % 7 + 1))
    corpus = list_corpus(str(tmp_path))
    tokenizer = TokenizerSettings(ngram_range=(1, 2))
    monkeypatch.setattr(nbclass.counting.counts, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(nbclass.counting.counts, "PART_SIZE", 7)
    given_back, counted, add = [], [], runs_module.RunTally.add

    def spied(self, texts, *args, **kwargs):  # what this process's run tallies give back
        back = add(self, texts, *args, **kwargs)
        given_back.append(len(back))
        counted.append(len(texts) - len(back))
        return back

    with monkeypatch.context() as patch:
        patch.setattr(runs_module, "_mix", lambda h: h * np.uint64(0))
        patch.setattr(runs_module, "CHUNK_BYTES", 64)
        patch.setattr(runs_module.RunTally, "add", spied)
        clashing = fit(corpus, tokenizer=tokenizer, jobs=jobs)
    if jobs == 1:  # both ways were taken: by the words' numbers, and by name
        assert sum(given_back) > 0 and sum(counted) > 0
    monkeypatch.setattr(nbclass.counting.counts, "ascii_splitter", lambda *args: None)
    plain = fit(corpus, tokenizer=tokenizer, jobs=1)
    assert clashing.counts.equals(plain.counts)
    assert f"{LONG} {ANAGRAM}" in plain.counts.vocabulary and len(plain.counts.vocabulary) > 100


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["", "b" * 15, "ab\x01" * 5 + "a", "é" * 8, "日" * 6]),
                  st.text(alphabet="ab\x01é日", max_size=6)).map("".join).filter(bool),
        unique=True,
    )
)  # fmt: skip
def test_word_order_is_the_order_of_the_names(words):
    """Runs sorted by their bytes, 16 at a time, and by name where those are shared, are
    in the order of their names (an n-gram's join byte 0x01 a space in its name); the
    words share long beginnings, so that many are told apart by name."""
    from nbclass.text.runs import word_order

    encoded = [w.encode() for w in words]
    lengths = np.array([len(b) for b in encoded], dtype=np.int64)
    starts = np.cumsum(lengths + 1) - lengths - 1
    codes = np.frombuffer(b" ".join(encoded), dtype=np.uint8)
    names = [w.replace("\x01", " ") for w in words]
    order = word_order(codes, starts, starts + lengths, names)
    assert [names[i] for i in order.tolist()] == sorted(names)


def test_words_of_two_processes_sharing_a_hash_keep_their_rows(monkeypatch):
    """Two processes' run tallies send their words with their keys; with one hash for
    every long word, one sends LONG and the other ANAGRAM under the same key: the
    receiver tells them apart by name (and goes on by name), and a word both send,
    long or short, is one row. The counts are the tokenizer's."""
    from nbclass.counting.counts import CountAccumulator
    from nbclass.counting.tally import pack, tally
    from nbclass.text.runs import RunTally

    monkeypatch.setattr(runs_module, "_mix", lambda h: h * np.uint64(0))
    splitter = ascii_splitter(TokenizerSettings(), "ascii")
    tokenize = make_tokenizer(TokenizerSettings())
    windows = [  # (process, texts, labels), in the order the receiver adds them
        (0, [f"{LONG} ab", "ab cd"], [0, 1]),
        (1, [f"cd {LONG} ef"], [1]),
        (1, ["ab ef"], [0]),
        (0, ["gh ab"], [1]),
    ]
    later = (1, [f"{ANAGRAM} ab gh"], [0])  # the same key as LONG: a third tally's word
    talliers = [RunTally.make(splitter, 2) for _ in range(3)]
    accumulator = CountAccumulator(["x", "y"])
    for process, texts, labels in [*windows, (2, *later[1:])]:
        runs_tally = talliers[process]
        assert runs_tally.add([t.encode() for t in texts], labels) == []
        part = ([0, 0], [Counter(), Counter()], [Counter(), Counter()], None, None, None)
        for c in labels:
            part[0][c] += 1
        accumulator.add_packed(pack((*part, runs_tally), origin=bytes([process])))
    every = [(t, c) for _, texts, labels in [*windows, later] for t, c in zip(texts, labels)]
    expected = CountAccumulator(["x", "y"])
    expected.add_packed(pack(tally([tokenize(t) for t, _ in every], [c for _, c in every], 2)))
    counts = accumulator.result()
    assert counts.equals(expected.result())
    assert counts.vocabulary == tuple(sorted({"ab", "cd", "ef", "gh", LONG, ANAGRAM}))


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(st.text(alphabet="abcé", min_size=1, max_size=4), unique=True),
    st.lists(st.text(alphabet="abcé", min_size=1, max_size=4), unique=True),
)
def test_pack_merges_the_run_words_with_the_others(ordered, others):
    """The union of the run tally's sorted words and the other documents' words is
    sorted, and each word of either list is found at the place given for it."""
    from nbclass.counting.tally import _union

    ordered = sorted(ordered)
    words, at_ordered, at_others = _union(ordered, others)
    assert words == sorted(set(ordered) | set(others))
    assert [words[i] for i in at_ordered.tolist()] == ordered
    assert [words[i] for i in at_others.tolist()] == others


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 6)), min_size=1, max_size=60),
       st.lists(st.integers(0, 2), min_size=5, max_size=5),
       st.lists(st.integers(-1, 3), min_size=5, max_size=5))  # fmt: skip
def test_cell_sums_count_each_cells_texts_and_tokens(tokens, labels, marks):
    """(word, class) -> (texts holding it, tokens), the cells in (word, class) order, for
    tokens in any order of their texts and labels in any order; and with word numbers
    and classes past 16 bits (sorted by more than one digit). With marks (−1: none),
    the marked texts' rows: (mark, word) -> the text's tokens of the word, each once
    (two texts may share a mark here, so the rows are compared as a list)."""
    from nbclass.text.runs import _cell_sums

    text = np.array([t for t, _ in tokens])
    for scale, class_scale, C in ((1, 1, 3), (100_003, 35_000, 70_001)):
        word = np.array([w * scale for _, w in tokens])
        classes = [c * class_scale for c in labels]
        expected: dict = {}
        for t, w in set(tokens):
            key = (w * scale) * C + classes[t]
            docs, count = expected.get(key, (0, 0))
            expected[key] = (docs + 1, count + tokens.count((t, w)))
        cells, docs, counts, rows = _cell_sums(text, word, classes, 7 * scale, C)
        assert rows is None
        assert cells.tolist() == sorted(expected)
        assert list(zip(docs.tolist(), counts.tolist())) == [expected[k] for k in sorted(expected)]
        marked = sorted(
            (marks[t], w * scale, tokens.count((t, w))) for t, w in set(tokens) if marks[t] >= 0
        )
        again = _cell_sums(text, word, classes, 7 * scale, C, np.array(marks))
        assert [a.tolist() for a in again[:3]] == [cells.tolist(), docs.tolist(), counts.tolist()]
        assert sorted(zip(*(a.tolist() for a in again[3]))) == marked
        # In parts, as a chunk's words and symbols come: each in the texts' order, no
        # word in both (the texts not in order overall, no sort by text needed).
        parts = sorted(range(len(tokens)), key=lambda k: (tokens[k][1] >= 3, tokens[k][0]))
        in_parts = _cell_sums(text[parts], word[parts], classes, 7 * scale, C, np.array(marks))
        assert [a.tolist() for a in in_parts[:3]] == [cells.tolist(), docs.tolist(),
                                                      counts.tolist()]  # fmt: skip
        assert sorted(zip(*(a.tolist() for a in in_parts[3]))) == marked


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**40 - 1), max_size=60),
       st.sampled_from([1, 2, 300, 2**16, 2**16 + 1, 2**33, 2**40]), st.booleans())  # fmt: skip
def test_stable_order_is_numpys_stable_argsort(values, top, after):
    """The order of values below ``top``, by their 16-bit digits, is numpy's stable
    argsort, on its own and after an order given first."""
    from nbclass.text.runs import stable_order

    values = np.array([v % top for v in values], dtype=np.int64)
    first = np.random.default_rng(len(values)).permutation(values.size) if after else None
    order = stable_order(values, top, first)
    start = np.arange(values.size) if first is None else first
    assert order.tolist() == start[np.argsort(values[start], kind="stable")].tolist()


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(st.integers(0, 2**63 - 1), max_size=40),
    st.sampled_from([0, 3, 2**20, 2**40, 2**58, 2**62]),
    st.sampled_from(["int64", "uint64"]),
)
def test_sort_order_is_the_stable_argsort(values, bound, dtype):
    """Keys packed with their indices (when both fit in 63 bits) or not: the sorted keys
    and numpy's stable argsort, equal keys in index order, the keys' type kept."""
    from nbclass.text.runs import sort_order

    keys = np.array([v % (bound + 1) for v in values], dtype=dtype)
    ordered, order = sort_order(keys)
    expected = np.argsort(keys, kind="stable")
    assert order.tolist() == expected.tolist()
    assert ordered.dtype == keys.dtype
    assert ordered.tolist() == keys[expected].tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(1, 2**64 - 1), max_size=300), max_size=6),
       st.lists(st.integers(1, 2**64 - 1), max_size=50), st.booleans())  # fmt: skip
def test_the_key_table_finds_each_key_inserted(batches, others, one_home):
    """Keys inserted in batches (the table grown on the way) are found with their
    numbers, and keys never inserted are not; also when every key has the same home
    slot (every look-up probes past the others)."""
    from nbclass.text.runs import _KeyTable

    with pytest.MonkeyPatch.context() as patch:
        if one_home:
            patch.setattr(runs_module, "_mix", lambda h: h * np.uint64(0))
        table, numbers = _KeyTable(), {}
        for batch in batches:
            new = [k for k in dict.fromkeys(batch) if k not in numbers]
            ids = np.arange(len(numbers), len(numbers) + len(new))
            table.insert(np.array(new, dtype=np.uint64), ids)
            numbers.update(zip(new, ids.tolist()))
        asked = list(numbers) + others
        found = table.find(np.array(asked, dtype=np.uint64))
    assert found.tolist() == [numbers.get(k, -1) for k in asked]
    keys, ids = table.items()
    assert keys.tolist() == sorted(numbers)
    assert ids.tolist() == [numbers[k] for k in sorted(numbers)]


def _unmixed(h: int) -> int:
    """The key whose splitmix64 finaliser (runs._mix) is ``h``: its steps undone."""
    mask = (1 << 64) - 1
    h ^= (h >> 31) ^ (h >> 62)
    h = h * pow(0x94D049BB133111EB, -1, 1 << 64) & mask
    h ^= (h >> 27) ^ (h >> 54)
    h = h * pow(0xBF58476D1CE4E5B9, -1, 1 << 64) & mask
    h ^= (h >> 30) ^ (h >> 60)
    return h


def test_keys_sharing_a_home_under_the_plain_mix_do_not_pile_up_in_the_key_table():
    """4,096 keys whose mixes share their top 32 bits (one home slot in any table of up to
    2**32 slots, were the home the plain mix, as a corpus written against the public mix
    could make them): each is found, the keys never inserted are not, and no key sits
    more than 64 slots past its home (without the salt, the last sat 4,095 past it, and a
    look-up took a round a slot)."""
    from nbclass.text.runs import _KeyTable

    keys = np.array([_unmixed(0x5EED_0001 << 32 | i) for i in range(4096)], dtype=np.uint64)
    top = runs_module._mix(keys.copy()) >> np.uint64(32)
    assert (top == 0x5EED_0001).all() and (keys != 0).all()
    for _ in range(3):  # three tables, three salts
        table = _KeyTable()
        table.insert(keys[:1000], np.arange(1000))
        table.insert(keys[1000:], np.arange(1000, 4096))
        assert table.find(keys).tolist() == list(range(4096))
        absent = np.array([_unmixed(0x5EED_0001 << 32 | i) for i in range(5000, 5100)],
                          dtype=np.uint64)  # fmt: skip
        assert (table.find(absent) == -1).all()
        at = np.flatnonzero(table.slots["key"])
        home = table._homes(table.slots["key"][at])
        past = (at - home) & ((1 << table.bits) - 1)
        assert past.size == 4096 and past.max() <= 64


def test_the_run_tally_counts_the_same_whatever_its_key_table_salt():
    """The words are numbered in key order, not by where they sit: two tallies whose key
    tables have different salts give the same packed counts."""
    from nbclass.text.runs import RunTally

    rng = random.Random(7)
    words = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(2, 12)))
             for _ in range(3000)]  # fmt: skip
    texts = [" ".join(rng.choice(words) for _ in range(40)).encode() for _ in range(400)]
    labels = [i % 5 for i in range(400)]
    splitter = ascii_splitter(TokenizerSettings(), "utf-8")
    results = []
    for salt in (0, 0x9E3779B97F4A7C15, 12345):
        tally = RunTally.make(splitter, 5)
        tally._numbers.salt = np.uint64(salt)
        for start in range(0, 400, 50):  # several chunks: the table grows between them
            assert tally.add(texts[start : start + 50], labels[start : start + 50]) == []
        results.append(tally.packed())
    for other in results[1:]:
        assert other[0] == results[0][0]
        for a, b in zip(other[1:], results[0][1:]):
            assert a.dtype == b.dtype and a.tolist() == b.tolist()


def _words_of_keys(n: int, rng: random.Random) -> list[bytes]:
    """``n`` distinct ASCII words of 8 letters whose keys (their bytes) share the top 12
    bits of the plain mix: found by trying words, as a hostile model's author could."""
    words: set[bytes] = set()
    while len(words) < n:
        batch = [bytes(rng.choices(b"abcdefghijklmnopqrstuvwxyz", k=8)) for _ in range(1 << 16)]
        keys = np.frombuffer(b"".join(batch), dtype=">u8").astype(np.uint64)
        top = runs_module._mix(keys) >> np.uint64(52)
        words.update(batch[i] for i in np.flatnonzero(top == 0xABC).tolist())
    return sorted(words)[:n]


def test_a_vocabulary_sharing_a_home_under_the_plain_mix_does_not_pile_up_in_the_word_table():
    """A model's words chosen so that their keys share the top 12 bits of the plain mix
    (one home slot in a table of up to 4,096 slots, a cluster in larger ones, were the
    home the plain mix): each is found with its id, and no word sits more than 64 slots
    past its home (without the salt, the last sat 199 past it, and a look-up of each run
    of a text took a round a slot)."""
    words = _words_of_keys(200, random.Random(3))
    for _ in range(3):  # three tables, three salts
        table = WordTable.of(words)
        codes = np.frombuffer(b" ".join(words) + b" zzzzzzzz", dtype=np.uint8)
        starts, ends = run_bounds(codes)
        keys = runs_module.run_keys(codes, starts, ends)
        assert table.find(codes, starts, ends, keys).tolist() == [*range(200), -1]
        at = np.flatnonzero(table.ids >= 0)
        salt = getattr(table, "salt", np.uint64(0))  # (none before the salt)
        home = runs_module._slots(table.keys[at] ^ salt, table.bits)
        assert at.size == 200 and (at - home).max() <= 64


@pytest.mark.parametrize("symbols", [False, True])
def test_predicts_counts_are_the_same_whatever_the_word_tables_salt(monkeypatch, symbols):
    """A word's id is its place in the vocabulary wherever its slot is: counters whose word
    tables are salted with 0, 2^64 - 1 and two other values (the salt is read from
    os.urandom) count the same texts alike, and as the tokenizer does; the words short
    (their bytes the key) and long (hashed), stop words and unknown words among them."""
    rng = random.Random(5)
    letters = "abcdefghij"
    words = sorted({"".join(rng.choices(letters, k=rng.randint(2, 14))) for _ in range(3000)})
    vocabulary = words[::2] + (["?", "!!", "x"] if symbols else [])
    texts = [
        " ".join(rng.choice(words) + rng.choice(["", " ?", "!!", " x"]) for _ in range(30))
        for _ in range(200)
    ]
    settings = TokenizerSettings(stop_words=tuple(words[1:40:3]), symbols=symbols)
    splitter = ascii_splitter(settings, "ascii")
    found = []
    for salt in (0, 2**64 - 1, 0x9E3779B97F4A7C15, 12345):
        monkeypatch.setattr(runs_module.os, "urandom", lambda n, s=salt: s.to_bytes(8, "little"))
        counter = RunCounter.for_vocabulary(vocabulary, splitter)
        assert counter.words.salt == np.uint64(salt)
        found.append([a.tolist() for a in counter.count([t.encode() for t in texts])])
    monkeypatch.undo()
    assert all(other == found[0] for other in found[1:])
    rows, columns, values, n_tokens = found[0]
    expected, expected_tokens = expected_counts(texts, settings, vocabulary)
    assert n_tokens == expected_tokens
    assert sorted(zip(rows, columns, values)) == sorted(
        zip(*expected.nonzero(), expected.data.tolist())
    )
    assert len(rows) > 1000


def test_a_chunk_of_many_texts_over_a_large_vocabulary_counts_each_once():
    """A chunk's (text, word) pairs are counted as 32-bit numbers while texts x words
    fit in 2**32, as 64-bit ones past it: 200,000 texts of one word each (about 150,000
    in a chunk) over 60,000 words is past it, 3,000 texts within; each text counts its
    word once."""
    V = 60_000
    vocabulary = [f"w{j:05d}" for j in range(V)]
    for n in (3_000, 200_000):
        texts = [f"w{(7 * i) % V:05d}" for i in range(n)]
        X, n_tokens = TextCounter(TokenizerSettings(), vocabulary).count(texts)
        assert X.shape == (n, V) and X.nnz == n and n_tokens.tolist() == [1] * n
        assert X.indices.tolist() == [(7 * i) % V for i in range(n)]
        assert set(X.data.tolist()) == {1}


@pytest.mark.parametrize("n_classes", [1, 3, 20])
def test_run_tally_by_class_sums_chunks_cells_in_class_then_word_order(n_classes):
    """RunTally._by_class: the cells of several chunks (each ascending, word-major, as
    _cell_sums and _merged give them; a cell in two chunks) summed, class by class and
    by word number within a class: as np.unique of the (class, word) keys and bincount
    sums of D and T give them, twice (the second call takes its own result, in class
    order, as its one part)."""
    rng = np.random.default_rng(n_classes)
    N = 200_000  # word numbers past 2^16
    tally = runs_module.RunTally.__new__(runs_module.RunTally)
    tally.n_classes, tally.n_words, tally._cells = n_classes, N, []
    every = []
    for size in (5_000, 3_000, 40, 1):
        cells = np.unique(rng.integers(0, N * n_classes, size))
        docs = rng.integers(1, 5, cells.size).astype(np.int32)
        tokens = docs + rng.integers(0, 3, cells.size).astype(np.int32)
        tally._cells.append((cells, docs, tokens))
        every.append((cells, docs, tokens))
    cells, docs, tokens = (np.concatenate(p) for p in zip(*every))
    keys, at = np.unique((cells % n_classes) * N + cells // n_classes, return_inverse=True)
    expected = (
        np.bincount(keys // N, minlength=n_classes).tolist(),
        (keys % N).tolist(),
        np.bincount(at, weights=docs).astype(np.int64).tolist(),
        np.bincount(at, weights=tokens).astype(np.int64).tolist(),
    )
    assert keys.size < cells.size  # some cell in two chunks
    for _ in range(2):
        got = tally._by_class()
        assert [a.tolist() for a in got] == list(expected)
        assert all(a.dtype == np.int64 for a in got)


def test_a_count_by_runs_makes_its_tokenizer_only_when_it_tokenizes(monkeypatch, tmp_path):
    """The count's tokenizer (symbols and unspaced "all", the default fit's) is made at
    its first call: a corpus of short documents, all counted by runs, never makes it;
    one with a document longer than a chunk makes it once, and the counts are those of
    the tokenizer made at once."""
    import nbclass.counting.counts as counts_module
    import nbclass.counting.tally as tally_module
    from nbclass.counting.counts import count_corpus
    from nbclass.counting.tally import FirstCallTokenizer

    settings_ = TokenizerSettings(symbols=True, unspaced="all")
    made = []
    for module in (tally_module, counts_module):
        monkeypatch.setattr(module, "make_tokenizer",
                            lambda s: made.append(s) or make_tokenizer(s))  # fmt: skip
    lazy = FirstCallTokenizer(settings_)
    assert made == [] and lazy("Hello, 世界 x!") == make_tokenizer(settings_)("Hello, 世界 x!")
    assert made == [settings_] and lazy("a b") == ["a", "b"] and len(made) == 1
    for c, texts in enumerate([["short one :)", "another, short"], ["tiny 日本語 text"]]):
        (tmp_path / f"c{c}").mkdir()
        for i, text in enumerate(texts):
            (tmp_path / f"c{c}" / f"{i}.txt").write_text(text, encoding="utf-8")
    paths = sorted(str(p) for p in tmp_path.glob("*/*.txt"))
    labels = [int(p.split("/")[-2][1:]) for p in paths]
    made.clear()
    short = count_corpus(paths, labels, ["c0", "c1"], settings_, jobs=1)
    assert made == []
    monkeypatch.setattr(runs_module, "CHUNK_BYTES", 12)  # the first two: tokenized
    long = count_corpus(paths, labels, ["c0", "c1"], settings_, jobs=1)
    assert made == [settings_]
    assert long.vocabulary == short.vocabulary
    assert (as_table(long.token_count) == as_table(short.token_count)).all()
