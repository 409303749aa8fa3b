"""Word n-grams on the numpy run path give exactly the regex tokenizer's n-grams.

With ``--ngram-range MIN,MAX`` the tokenizer finds the words, drops the stop words and
joins every n consecutive words that are left (n from MIN to MAX, 1 meaning the words
themselves) with a space. The run counters (:class:`nbclass.text.runs.RunCounter` for
predict, :class:`nbclass.text.runs.RunTally` for fit) must count the same n-grams, in
texts of any script, any case, with stop words, for every range.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import RUN_COUNTER_OFF, fit_by_every_path
from hypothesis import given, settings
from hypothesis import strategies as st

import nbclass.counting.counts
import nbclass.text.runs as runs_module
from nbclass.models.estimators import EstimatorSettings
from nbclass.models.model import fit
from nbclass.reading.corpus import list_corpus
from nbclass.text.runs import RunTally, run_hashes, with_ngrams
from nbclass.text.tokenizer import TokenizerSettings, ascii_splitter, make_tokenizer
from nbclass.text.vectorizer import TextCounter, count_matrix

WORDS = [
    "ab", "Ab", "the", "x", "zz", "b_1", "abababababab", "İstanbul", "ΣΑΣ", "σοφός",
    "日本語", "東京タワー", "café", "CAFÉ", "Привет", "мир", "😀😀", "a000", "ffff",
]  # fmt: skip
GAPS = [" ", ", ", "-", "\n", "", "😀", "。", "\x00", " x "]
texts = st.one_of(
    st.text(alphabet="ab AB_1.\n-'éΣ日本\x00zZ", max_size=50),
    st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(GAPS)), max_size=14).map(
        lambda pairs: "".join(word + gap for word, gap in pairs)
    ),
)
RANGES = [(1, 2), (2, 2), (1, 3), (2, 3), (3, 3), (1, 1)]
STOP_LISTS = [(), ("the",), ("the", "мир", "日本語")]
LIMITS = [None, None, 1, 2, 4]  # ngram_doc_limit: n-grams only in texts of so many tokens


def tokenizer_settings(ngram_range, lowercase, stop, limit=None):
    """The settings; ``limit`` only with a range from 1 (the others refuse one)."""
    return TokenizerSettings(
        lowercase=lowercase, stop_words=stop, ngram_range=ngram_range,
        ngram_doc_limit=limit if ngram_range[0] == 1 else None,
    )  # fmt: skip


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(texts, max_size=8), st.sampled_from(RANGES), st.booleans(),
    st.sampled_from(STOP_LISTS), st.sampled_from([3, 17, 1 << 20]), st.sampled_from(LIMITS),
)  # fmt: skip
def test_a_text_counter_counts_the_tokenizers_ngrams(
    texts_, ngram_range, lowercase, stop, chunk, limit
):
    """Predict's counts over a vocabulary of the texts' own n-grams, and n-grams no text
    has (one of a single character, which is never a token, and one of a stop word):
    the matrix and each text's number of tokens (words and n-grams) are the
    tokenizer's, in chunks of any size, with or without an ``ngram_doc_limit``."""
    settings_ = tokenizer_settings(ngram_range, lowercase, stop, limit)
    tokenize = make_tokenizer(settings_)
    tokens = [tokenize(text) for text in texts_]
    vocabulary = sorted({t for found in tokens for t in found} | {"ab x", "the ab", "zz zz zz"})
    if ngram_range == (1, 1):
        vocabulary = [word for word in vocabulary if " " not in word]
    counter = TextCounter(settings_, vocabulary)
    assert counter.runs is not None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runs_module, "CHUNK_BYTES", chunk)
        X, n_tokens = counter.count(texts_)
    expected = count_matrix(tokens, {word: j for j, word in enumerate(vocabulary)})
    assert X.shape == expected.shape and (X != expected).nnz == 0
    assert n_tokens.tolist() == [len(found) for found in tokens]


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(st.tuples(texts, st.integers(0, 2)), max_size=10), st.sampled_from(RANGES),
    st.booleans(), st.sampled_from(STOP_LISTS), st.integers(1, 60), st.sampled_from(LIMITS),
)  # fmt: skip
def test_a_run_tally_counts_the_tokenizers_ngrams(
    documents, ngram_range, lowercase, stop, chunk, limit
):
    """Fit's D_jc and T_jc of texts as ASCII bytes and as str, in chunks of any size:
    the tokenizer's, n-grams named with their spaces, all sorted, with or without an
    ``ngram_doc_limit``."""
    settings_ = tokenizer_settings(ngram_range, lowercase, stop, limit)
    tokenize = make_tokenizer(settings_)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runs_module, "CHUNK_BYTES", chunk)
        tally = RunTally.make(ascii_splitter(settings_, "utf-8"), 3)
        counted = [i for i, (text, _) in enumerate(documents) if len(text) <= chunk]
        ascii_ = [i for i in counted if documents[i][0].isascii()]
        other = [i for i in counted if not documents[i][0].isascii()]
        labels = [c for _, c in documents]
        as_bytes = [documents[i][0].encode() for i in ascii_]
        assert tally.add(as_bytes, [labels[i] for i in ascii_]) == []
        assert tally.add([documents[i][0] for i in other], [labels[i] for i in other]) == []
    words, lengths, rows, docs, tokens = tally.packed()
    assert words == sorted(set(words))
    classes = np.repeat(np.arange(3), lengths)
    found = {
        (words[j], int(c)): (int(d), int(t))
        for j, c, d, t in zip(rows.tolist(), classes, docs.tolist(), tokens.tolist())
    }
    expected = {}
    for i in counted:
        for word, n in Counter(tokenize(documents[i][0])).items():
            d, t = expected.get((word, labels[i]), (0, 0))
            expected[word, labels[i]] = (d + 1, t + n)
    assert found == expected


def test_hand_counted_pairs():
    """"The server, the SERVER and a server_2." with stop word "the": words server,
    server, and, server_2; pairs "server server", "server and", "and server_2" (the
    stop words and the one-letter "a" are gone before pairs are made)."""
    settings_ = TokenizerSettings(stop_words=("the",), ngram_range=(1, 2))
    text = "The server, the SERVER and a server_2."
    assert make_tokenizer(settings_)(text)[4:] == [
        "server server", "server and", "and server_2"
    ]  # fmt: skip
    vocabulary = ["and", "and server_2", "server", "server and", "server server", "the server"]
    X, n_tokens = TextCounter(settings_, vocabulary).count([text, text.encode().decode()])
    assert X.toarray().tolist() == [[1, 1, 2, 1, 1, 0]] * 2 and n_tokens.tolist() == [7, 7]
    codes = np.frombuffer(b"ab cd ef gh", dtype=np.uint8)
    grams = with_ngrams(codes, np.array([0, 3, 6, 9]), np.array([2, 5, 8, 11]),
                        np.array([0, 0, 0, 1]), (1, 3))  # fmt: skip
    assert bytes(grams[0]) == b"ab\x01cd cd\x01ef ab\x01cd\x01ef "
    assert grams[3].tolist() == [0, 0, 0]


def test_pairs_found_by_their_words_ids(monkeypatch):
    """Predict finds a pair by its two words' ids in the run table (no bytes of the
    pair): a vocabulary of pairs whose long words are not counted alone (a filter kept
    the pairs only) gets those words into the table with no column, and counts what the
    tokenizer counts; a pair of a stop word, or of three words, is never counted. With
    every long word's hash the same, two long words of pairs share a key: no run table
    (the texts are tokenized), the same counts."""
    settings_ = TokenizerSettings(stop_words=("the",), ngram_range=(1, 2))
    text = "Serverless ANTIDISESTABLISHMENT serverless, the serverless ab antidisestablishment ab"
    vocabulary = [
        "ab", "ab antidisestablishment", "antidisestablishment ab",
        "antidisestablishment serverless", "serverless ab", "serverless antidisestablishment",
        "serverless serverless", "the serverless", "ab ab ab",
    ]  # fmt: skip
    counter = TextCounter(settings_, vocabulary)
    runs = counter.runs
    assert runs.pairs is not None and runs.pair_columns.tolist() == [1, 2, 3, 4, 5, 6, -1]
    # ab, the stop word "the", the two long words of pairs alone (no column), none
    assert runs.columns.tolist() == [0, 9, -1, -1, -1]
    X, n_tokens = counter.count([text, text.encode().decode()])
    assert X.toarray().tolist() == [[2, 1, 1, 1, 1, 1, 1, 0, 0]] * 2
    assert n_tokens.tolist() == [13, 13]  # 7 words, 6 pairs
    tokens = make_tokenizer(settings_)(text)
    expected = count_matrix([tokens], {word: j for j, word in enumerate(vocabulary)})
    assert (X[:1] != expected).nnz == 0
    monkeypatch.setattr(runs_module, "_mix", lambda h: h * np.uint64(0))
    clashing = TextCounter(settings_, vocabulary)
    assert clashing.runs is None
    assert (clashing.count([text])[0] != X[:1]).nnz == 0


def test_runs_differing_in_the_top_byte_of_their_blocks_hash_apart():
    """Two 9-byte pairs whose blocks differ only in their first byte (once in each
    block): the plain polynomial Σ b_j BASE**j gave them one hash (the difference a
    multiple of 2**56 that the low byte of BASE cancels), and a tally of 20 Newsgroups
    with pairs gave back a chunk in five to be tokenized in Python."""
    codes = np.frombuffer(b"a000\x01ffff f000\x01fff5", dtype=np.uint8)
    first, second = run_hashes(codes, np.array([0, 10]), np.array([9, 19])).tolist()
    assert first != second
    words = [b"a000\x01ffff", b"f000\x01fff5", b"abcdefgh\x01abcdefgh"]
    rng = np.random.default_rng(3)
    for _ in range(2000):  # every single-byte change of the top bytes: no two alike
        word = bytearray(words[rng.integers(0, 3)])
        word[0], word[8] = rng.integers(48, 123, size=2).tolist()
        words.append(bytes(word))
    words = sorted(set(words))
    codes = np.frombuffer(b" ".join(words), dtype=np.uint8)
    starts, ends = runs_module.run_bounds(codes)
    assert np.unique(run_hashes(codes, starts, ends)).size == len(words)


@pytest.fixture
def paired(tmp_path):
    root = tmp_path / "corpus"
    documents = {
        "tech": ["the server is down again", "Server down: restart the server now",
                 "disk full on the build server", "東京 サーバー 停止 server down"],
        "food": ["the soup is cold again", "cold soup and warm bread, again",
                 "bread and soup for lunch", "café au lait and bread"],
    }  # fmt: skip
    for label, texts_ in documents.items():
        (root / label).mkdir(parents=True)
        for i, text in enumerate(texts_):
            (root / label / f"{i}.txt").write_text(text + "\n", "utf-8")
    return root


@pytest.mark.parametrize("ngram_range", [(1, 2), (2, 2), (1, 3)])
def test_fit_with_ngrams_writes_the_regex_paths_bytes(paired, monkeypatch, ngram_range):
    """The model file of a fit with n-grams, on one process or two, is byte for byte
    the one fitted with every document tokenized by the regex."""
    corpus = list_corpus(str(paired))
    tokenizer = TokenizerSettings(ngram_range=ngram_range)
    named = EstimatorSettings(model="multinomial")
    fast, workers, plain = fit_by_every_path(corpus, tokenizer, monkeypatch)
    assert fast == plain and workers == plain
    vocabulary = fit(corpus, tokenizer, defaults=named).counts.vocabulary
    assert ("server down" in vocabulary) == (ngram_range[1] >= 2)
    assert ("server" in vocabulary) == (ngram_range[0] == 1)


def test_pairs_sent_by_their_words_over_many_windows_are_the_regex_paths(
    tmp_path, monkeypatch
):
    """Word pairs go from the counting processes to the main one as the numbers of their
    two words and are named there once: counted in two processes, a window a part and a
    chunk a few texts (each process's pairs sent over many windows, most of them sent by
    both), with words longer than 8 bytes (hashed keys) and of other scripts, the counts
    are those of the regex tokenizer's words and pairs, vocabulary and all."""
    from nbclass.counting.counts import CountAccumulator, count_corpus

    rng = np.random.default_rng(7)
    words = ["server", "down", "a_rather_long_word", "another_long_one", "café", "東京",
             "soup", "zz", "bread", "x_1"]  # fmt: skip
    root = tmp_path / "corpus"
    texts, labels = [], []
    for label in "abc":
        (root / label).mkdir(parents=True)
        for i in range(40):
            text = " ".join(rng.choice(words, size=int(rng.integers(1, 12))).tolist())
            (root / label / f"{i:02d}.txt").write_text(text + "\n", "utf-8")
    corpus = list_corpus(str(root))
    for path, label in zip(corpus.paths, corpus.labels):
        texts.append(Path(path).read_text("utf-8"))
        labels.append(label)
    tokenizer = TokenizerSettings(ngram_range=(1, 2))
    tokenize = make_tokenizer(tokenizer)
    expected = CountAccumulator(corpus.classes)
    expected.add(count_matrix(map(tokenize, texts), expected.vocabulary), labels)
    expected = expected.result()
    monkeypatch.setattr(nbclass.counting.counts, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(nbclass.counting.counts, "FLUSH_ENTRIES", 1)
    monkeypatch.setattr(nbclass.counting.counts, "PART_SIZE", 3)
    monkeypatch.setattr(runs_module, "CHUNK_BYTES", 60)
    for jobs in (1, 2):
        counts = count_corpus(corpus.paths, corpus.labels, corpus.classes, tokenizer, jobs=jobs)
        assert counts.equals(expected)
        assert "a_rather_long_word 東京" in counts.vocabulary


def test_pairs_sent_by_their_words_once_words_come_by_name():
    """Words sent by name (documents the run tally did not count) put the receiver's
    words in a dictionary: the pairs it placed by their words are named then, and those
    sent after by their words are named as they come. The counts are the tokenizer's."""
    from nbclass.counting.counts import CountAccumulator
    from nbclass.counting.tally import new_tally, pack, tally
    from nbclass.reading.policy import ReadLog

    tokenizer = TokenizerSettings(ngram_range=(1, 2))
    tokenize = make_tokenizer(tokenizer)
    batches = [
        (["alpha beta gamma", "a_very_long_word beta"], [0, 1]),  # by the run tally
        (["beta gamma alpha", "alpha beta delta"], [1, 1]),  # by name
        (["gamma alpha beta", "delta a_very_long_word epsilon"], [0, 1]),  # run tally
    ]
    runs = RunTally.make(ascii_splitter(tokenizer, "utf-8"), 2)
    received = CountAccumulator(["x", "y"])
    for i, (texts_, labels) in enumerate(batches):
        if i == 1:
            received.add_tally(tally(map(tokenize, texts_), labels, 2))
            continue
        assert runs.add([text.encode() for text in texts_], labels) == []
        part = (*new_tally(2), None, None, ReadLog(), runs)
        part[0][:] = np.bincount(labels, minlength=2).tolist()
        received.add_packed(pack(part, b"origin"))
    expected = CountAccumulator(["x", "y"])
    for texts_, labels in batches:
        expected.add(count_matrix(map(tokenize, texts_), expected.vocabulary), labels)
    expected, counts = expected.result(), received.result()
    assert counts.equals(expected)
    assert counts.vocabulary.index("alpha beta") == counts.vocabulary.index("alpha") + 1


@pytest.mark.parametrize("by_name", [False, True])
def test_a_pair_sent_by_two_processes_is_one_entry(by_name):
    """A word pair sent by two processes (two run tallies) gets a row from each, and is
    one entry of the counts: made one at the count's end, or, where words sent by name
    put the receiver's words in a dictionary, then (its rows numbered again, and the
    processes' later windows counted at the new rows). The counts are the tokenizer's,
    each entry once."""
    from nbclass.counting.counts import CountAccumulator
    from nbclass.counting.tally import new_tally, pack, tally
    from nbclass.reading.policy import ReadLog

    tokenizer = TokenizerSettings(ngram_range=(1, 2))
    tokenize = make_tokenizer(tokenizer)
    splitter = ascii_splitter(tokenizer, "utf-8")
    one, two = RunTally.make(splitter, 2), RunTally.make(splitter, 2)
    batches = [
        (one, ["alpha beta gamma", "a_very_long_word beta"], [0, 1]),
        (two, ["alpha beta delta", "gamma alpha beta"], [1, 0]),  # two's "alpha beta"
        (None, ["beta gamma alpha", "delta a_very_long_word"], [1, 1]),  # by name
        (one, ["alpha beta delta epsilon", "a_very_long_word beta"], [0, 1]),
        (two, ["gamma alpha beta epsilon", "beta gamma"], [1, 0]),
    ]
    if not by_name:
        del batches[2]
    received = CountAccumulator(["x", "y"])
    for runs, texts_, labels in batches:
        if runs is None:
            received.add_tally(tally(map(tokenize, texts_), labels, 2))
            continue
        assert runs.add([text.encode() for text in texts_], labels) == []
        part = (*new_tally(2), None, None, ReadLog(), runs)
        part[0][:] = np.bincount(labels, minlength=2).tolist()
        received.add_packed(pack(part, b"one" if runs is one else b"two"))
    expected = CountAccumulator(["x", "y"])
    for _, texts_, labels in batches:
        expected.add(count_matrix(map(tokenize, texts_), expected.vocabulary), labels)
    expected, counts = expected.result(), received.result()
    assert counts.equals(expected)
    assert len(set(counts.vocabulary)) == len(counts.vocabulary)
    row = counts.vocabulary.index("alpha beta")
    docs_, tokens = counts.doc_count.toarray()[row], counts.token_count.toarray()[row]
    assert (docs_.tolist(), tokens.tolist()) == ([3, 2], [3, 2])
    row = counts.vocabulary.index("a_very_long_word beta")
    assert counts.doc_count.toarray()[row].tolist() == [0, 2]


@pytest.mark.parametrize("jobs", [1, 2])
def test_pairs_by_their_words_after_the_first_window_falls_back(tmp_path, monkeypatch, jobs):
    """A document longer than a chunk, first, sends its words by name: the receiver's
    words go into a dictionary at the first window, and every later window's pairs, sent
    as their words' numbers, are named from the rows of their words, which each window
    adds to (its own new words and pairs). Counted so over 20 windows, in one process and
    in two, the counts are those of the same corpus counted without the fallback (no
    document longer than a chunk), value by value, and the regex tokenizer's."""
    from conftest import write_corpus

    from nbclass.counting.counts import CountAccumulator, count_corpus

    first = "start " * 20 + "alpha beta"  # 130 bytes: past a chunk of 64
    docs = {  # under 64 bytes each; b's with a new word and pair each, a's words' pairs
        "a": [first, *(f"w{i} common w{i}x common" for i in range(1, 31))],
        "b": [f"v{i} common w{i}x common" for i in range(1, 31)],
    }
    corpus = list_corpus(str(write_corpus(tmp_path / "c", docs)))
    tokenizer = TokenizerSettings(ngram_range=(1, 2))
    monkeypatch.setattr(nbclass.counting.counts, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(nbclass.counting.counts, "FLUSH_ENTRIES", 1)  # a window a part
    monkeypatch.setattr(nbclass.counting.counts, "PART_SIZE", 3)  # 21 parts of 61 documents
    args = (corpus.paths, corpus.labels, corpus.classes, tokenizer)
    plain = count_corpus(*args, jobs=jobs)  # no fallback: 130 bytes are under a chunk
    by_name, pair_rows = [], CountAccumulator._pair_rows

    def spied(self, one, two):  # pairs sent by their words' numbers once words go by name
        by_name.append(self._keyed is None)
        return pair_rows(self, one, two)

    with monkeypatch.context() as patch:
        patch.setattr(runs_module, "CHUNK_BYTES", 64)
        patch.setattr(CountAccumulator, "_pair_rows", spied)
        counts = count_corpus(*args, jobs=jobs)
    # Windows whose pairs were named from the dictionary's rows: every one added after the
    # first document's. In one process that is every later window; in two, the other
    # process's windows may all come in before the first one's (a flaky 15 of 20 there).
    assert by_name == sorted(by_name) and by_name[-1]
    assert jobs == 2 or sum(by_name) >= 15
    assert counts.equals(plain)
    tokenize = make_tokenizer(tokenizer)
    expected = CountAccumulator(corpus.classes)
    texts = [Path(path).read_text("utf-8") for path in corpus.paths]
    expected.add(count_matrix(map(tokenize, texts), expected.vocabulary), corpus.labels)
    assert counts.equals(expected.result())
    # 4 + 90 words; 3 pairs of the first document, 3 of each other of a's, 1 new of b's
    assert len(counts.vocabulary) == 217
    docs_, tokens = counts.doc_count.toarray(), counts.token_count.toarray()
    row = counts.vocabulary.index
    for name, (D, T) in {
        "common": ([30, 30], [60, 60]),
        "start start": ([1, 0], [19, 0]),
        "start alpha": ([1, 0], [1, 0]),
        "w29x common": ([1, 1], [1, 1]),
        "common w30x": ([1, 1], [1, 1]),
        "w7 common": ([1, 0], [1, 0]),
        "v12 common": ([0, 1], [0, 1]),
    }.items():
        assert docs_[row(name)].tolist() == D and tokens[row(name)].tolist() == T, name


def test_predict_with_pairs_scores_as_the_regex_path(paired, tmp_path):
    """``nbclass predict`` of a model with pairs, through real processes: the scores of
    the documents counted by the tokenizer (the run counter switched off)."""
    model = tmp_path / "m.nbc"
    subprocess.run(
        [sys.executable, "-m", "nbclass", "fit", str(paired), "-o", str(model), "-q",
         "--ngram-range", "1,2", "--model", "multinomial"],
        check=True,
    )  # fmt: skip
    command = [sys.executable, "-m", "nbclass", "predict", "-m", str(model), str(paired),
               "--format", "jsonl"]  # fmt: skip
    fast = subprocess.run(command, check=True, capture_output=True).stdout
    slow = subprocess.run(
        [sys.executable, "-c", RUN_COUNTER_OFF, *command[3:]], check=True, capture_output=True
    ).stdout
    assert fast == slow and fast.count(b"\n") == 8
