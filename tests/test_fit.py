"""Fitting: the same model for any number of jobs, and the fast counting path."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import write_corpus
from hypothesis import given, settings
from hypothesis import strategies as st

from nbclass.cli.app import cli
from nbclass.counting.counts import CountAccumulator, as_table, count_corpus
from nbclass.counting.tally import tally
from nbclass.modelfile.textfile import dumps
from nbclass.models.model import fit
from nbclass.reading.corpus import PathList, list_corpus
from nbclass.text.tokenizer import TokenizerSettings
from nbclass.text.vectorizer import count_matrix


def test_any_number_of_jobs_gives_the_same_model_bit_for_bit(news_sample, parallel_always):
    corpus = list_corpus(str(news_sample[0]))
    serial = dumps(fit(corpus, jobs=1))
    assert dumps(fit(corpus, jobs=2)) == serial
    assert dumps(fit(corpus, jobs=3)) == serial


def test_progress_reports_every_document_once(news_sample, parallel_always):
    corpus = list_corpus(str(news_sample[0]))
    for jobs in (1, 2):
        seen = np.zeros(len(corpus.paths), dtype=int)

        def on_progress(start, end):
            seen[start:end] += 1  # noqa: B023

        count_corpus(
            corpus.paths, corpus.labels, corpus.classes, TokenizerSettings(), jobs, on_progress
        )
        assert seen.tolist() == [1] * len(corpus.paths)


@pytest.mark.parametrize("ledger", [False, True])
@pytest.mark.parametrize("hashing", [None, 64])
def test_chunks_and_workers_give_the_same_model_bit_for_bit(
    news_sample, parallel_always, monkeypatch, ledger, hashing
):
    """Tallies of many small chunks, in 1-3 forked workers, add up to one tally's model."""
    import nbclass.counting.counts

    corpus = list_corpus(str(news_sample[0]))
    settings = TokenizerSettings(hash_features=hashing)
    whole = dumps(fit(corpus, settings, jobs=1, ledger=ledger))
    monkeypatch.setattr(nbclass.counting.counts, "FLUSH_ENTRIES", 300)  # several packs per process
    monkeypatch.setattr(nbclass.counting.counts, "PART_SIZE", 10)
    for jobs in (1, 2, 3):
        assert dumps(fit(corpus, settings, jobs=jobs, ledger=ledger)) == whole


def test_workers_start_only_from_a_few_megabytes_of_text(tmp_path, monkeypatch):
    """Below PARALLEL_MIN_BYTES one process counts; from it on, the forked workers."""
    import nbclass.counting.counts

    root = write_corpus(tmp_path / "c", {"a": ["xx yy"] * 3, "b": ["yy zz"] * 3})
    corpus = list_corpus(str(root))
    runs = []
    in_workers = nbclass.counting.counts._Share.tally_in_workers

    def recording(share, jobs, *rest):
        runs.append(jobs)
        return in_workers(share, jobs, *rest)

    monkeypatch.setattr(nbclass.counting.counts._Share, "tally_in_workers", recording)
    small = dumps(fit(corpus, jobs=2))
    assert runs == []
    monkeypatch.setattr(nbclass.counting.counts, "PARALLEL_MIN_BYTES", 12)  # corpus: 30 bytes
    assert dumps(fit(corpus, jobs=2)) == small
    assert runs == [2]
    assert nbclass.counting.counts.PARALLEL_MIN_BYTES < 2**23  # "a few megabytes", per the README


def test_work_meanwhile_runs_once_while_the_workers_count(tmp_path, monkeypatch):
    """count_corpus's ``meanwhile`` (fit's choice loads scipy's kernels with it) runs
    once: in a thread while the forked workers count, or before the count in one
    process (before any tally is added: the pairs' sums then find the kernels loaded);
    the counts are the same."""
    import multiprocessing

    import nbclass.counting.counts
    from nbclass.counting.counts import CountAccumulator, count_corpus
    from nbclass.text.tokenizer import TokenizerSettings

    root = write_corpus(tmp_path / "c", {"a": ["xx yy"] * 30, "b": ["yy zz"] * 30})
    corpus = list_corpus(str(root))
    seen, added = [], []
    add_packed = CountAccumulator.add_packed

    def counted(self, *args, **kwargs):
        added.append(1)
        return add_packed(self, *args, **kwargs)

    monkeypatch.setattr(CountAccumulator, "add_packed", counted)

    def meanwhile():
        seen.append(len(multiprocessing.active_children()) if seen else len(added))

    def count(jobs):
        return count_corpus(
            corpus.paths, corpus.labels, corpus.classes, TokenizerSettings(), jobs,
            meanwhile=meanwhile,
        )  # fmt: skip

    alone = count(1)
    assert seen == [0] and added  # no tally added before it ran, some after
    monkeypatch.setattr(nbclass.counting.counts, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(nbclass.counting.counts, "PART_SIZE", 5)
    assert count(2).equals(alone)
    assert seen[0] == 0 and seen[1:] == [2]  # the two workers were forked before it ran


def test_the_choices_sample_read_while_workers_count_is_the_sample(tmp_path, monkeypatch):
    """fit's sample for choosing the model is read by a thread while the workers count:
    the same documents, in the same order, as reading it after the count."""
    import nbclass.counting.counts
    from nbclass.models.learning import corpus_sample, count_documents
    from nbclass.text.tokenizer import TokenizerSettings
    from nbclass.text.tokenizer import TokenizerSettings as Settings

    root = write_corpus(
        tmp_path / "c", {"a": [f"xx yy {i}" for i in range(30)], "b": ["yy zz"] * 30}
    )
    corpus = list_corpus(str(root))
    monkeypatch.setattr(nbclass.counting.counts, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(nbclass.counting.counts, "PART_SIZE", 5)
    documents = count_documents(corpus, TokenizerSettings(), False, jobs=2, sample=True)
    again = corpus_sample(corpus, documents.counts, Settings())
    for name in ("digests", "labels", "ptr", "words", "counts"):
        assert np.array_equal(getattr(documents.sample, name), getattr(again, name))
    assert documents.sample.n_documents == 60


def test_a_worker_error_stops_the_fit_with_its_message(tmp_path, parallel_always):
    from nbclass.errors import NbclassError

    root = write_corpus(tmp_path / "c", {"a": ["x y"] * 5, "b": ["y z"] * 5})
    corpus = list_corpus(str(root))
    (root / "b" / "003.txt").unlink()
    with pytest.raises(NbclassError, match="cannot read .*003.txt"):
        fit(corpus, jobs=2)


words = st.sampled_from(["ant", "bee", "cat", "dog", "eel", "fox"])
documents = st.lists(st.tuples(st.lists(words, max_size=12), st.integers(0, 2)), max_size=30)


@settings(max_examples=80, deadline=None, database=None)
@given(documents)
def test_tally_counting_equals_matrix_counting(docs):
    by_matrix = CountAccumulator(["a", "b", "c"])
    by_tally = CountAccumulator(["a", "b", "c"])
    token_lists = [tokens for tokens, _ in docs]
    labels = [label for _, label in docs]
    by_matrix.add(count_matrix(token_lists, by_matrix.vocabulary), labels)
    by_tally.add_tally(tally(token_lists, labels, 3))
    assert by_tally.result().equals(by_matrix.result())


@settings(max_examples=60, deadline=None, database=None)
@given(documents, st.integers(1, 5))
def test_adding_tallies_of_parts_equals_one_tally(docs, n_parts):
    whole = CountAccumulator(["a", "b", "c"])
    whole.add_tally(tally([t for t, _ in docs], [c for _, c in docs], 3))
    merged = CountAccumulator(["a", "b", "c"])
    for k in range(n_parts):
        share = docs[k::n_parts]
        merged.add_tally(tally([t for t, _ in share], [c for _, c in share], 3))
    assert merged.result().equals(whole.result())


def test_the_fast_default_pattern_finds_the_same_tokens_as_the_documented_one():
    import re

    from nbclass.text.tokenizer import DEFAULT_TOKEN_PATTERN, make_tokenizer

    text = "a bb c_d x1 é ñandú 中文 it's e-mail 3.14 _ __ a\u0301b don't\tnaïve, ÉCOLE"
    documented = re.compile(DEFAULT_TOKEN_PATTERN).findall(text.lower())
    assert make_tokenizer(TokenizerSettings())(text) == documented
    assert documented == [
        "bb", "c_d", "x1", "ñandú", "中文", "it", "mail", "14", "__", "don", "naïve", "école",
    ]  # fmt: skip


def test_the_vetted_patterns_pass_the_checks_they_skip():
    """make_tokenizer skips compile_pattern's checks for the vetted patterns: each passes
    them (it compiles, repeats no repeat, has no group, matches no empty string)."""
    from nbclass.text.tokenizer import _VETTED_PATTERNS, compile_pattern

    for pattern in _VETTED_PATTERNS:
        assert compile_pattern(pattern).pattern == pattern


def test_jobs_option_and_environment(runner, chinese_corpus, tmp_path, parallel_always):
    one, two = tmp_path / "one.nbc", tmp_path / "two.nbc"
    assert (
        runner.invoke(cli, ["fit", str(chinese_corpus), "-o", str(one), "-j", "1"]).exit_code == 0
    )
    result = runner.invoke(
        cli, ["fit", str(chinese_corpus), "-o", str(two)], env={"NBCLASS_JOBS": "2"}
    )
    assert result.exit_code == 0
    assert one.read_bytes() == two.read_bytes()
    bad = runner.invoke(
        cli, ["fit", str(chinese_corpus), "-o", str(two)], env={"NBCLASS_JOBS": "x"}
    )
    assert bad.exit_code == 2
    assert bad.stderr == (
        "Error: NBCLASS_JOBS='x' is not a whole number: give a whole number from 1 to 256\n"
    )


@pytest.mark.parametrize("jobs", ["0", "-1"])
def test_jobs_below_one_is_a_usage_error(runner, chinese_corpus, tmp_path, jobs):
    result = runner.invoke(
        cli, ["fit", str(chinese_corpus), "-o", str(tmp_path / "m"), "-j", jobs]
    )
    assert result.exit_code == 2
    assert "--jobs" in result.stderr


@settings(max_examples=200, deadline=None, database=None)
@given(st.text(alphabet=st.characters(max_codepoint=0x7F)), st.text(max_size=3))
def test_the_ascii_fast_path_finds_the_same_tokens_as_the_documented_pattern(ascii, other):
    """An all-ASCII text takes the ASCII-mode regex; any other text the Unicode one."""
    import re

    from nbclass.text.tokenizer import DEFAULT_TOKEN_PATTERN, make_tokenizer

    documented = re.compile(DEFAULT_TOKEN_PATTERN).findall
    tokenize = make_tokenizer(TokenizerSettings())
    for text in (ascii, ascii + other, other + ascii.upper(), "\u212a" + ascii):  # Kelvin sign
        assert tokenize(text) == documented(text.replace("\x00", " ").lower())


@settings(max_examples=60, deadline=None, database=None)
@given(documents, st.integers(1, 5), st.sampled_from([1, 3, 2**40]),
       st.sampled_from(["numpy_sum_pairs", "scipy_sum_pairs"]))  # fmt: skip
def test_counts_are_the_same_whether_pairs_wait_or_are_summed_at_once(
    docs, n_parts, sum_pairs, summing
):
    """SUM_PAIRS 1: the pairs are summed as soon as those waiting are three times those
    summed before (the sums then summed again with them); 2**40: all wait and are summed
    once by result(). Both give the pairs a plain Python sum gives, and nothing else,
    summed by numpy (as where scipy is not imported) or by scipy."""
    from collections import Counter

    import nbclass.counting.counts

    classes = ["a", "b", "c"]
    tokens, documents = Counter(), Counter()
    for words, c in docs:
        tokens.update((w, c) for w in words)
        documents.update((w, c) for w in set(words))
    vocabulary = sorted({w for w, _ in tokens})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nbclass.counting.counts, "SUM_PAIRS", sum_pairs)
        summer = getattr(nbclass.counting.counts, summing)
        patch.setattr(nbclass.counting.counts, "sum_pairs", summer)
        merged = CountAccumulator(classes)
        for k in range(n_parts):
            share = docs[k::n_parts]
            merged.add_tally(tally([t for t, _ in share], [c for _, c in share], 3))
        counts = merged.result()
    assert counts.vocabulary == tuple(vocabulary)
    assert counts.class_count.tolist() == [sum(c == k for _, c in docs) for k in range(3)]
    for matrix, expected in (
        (as_table(counts.token_count), tokens),
        (as_table(counts.doc_count), documents),
    ):
        assert as_table(matrix).tolist() == [
            [expected[w, c] for c in range(3)] for w in vocabulary
        ]


ascii_bytes = st.binary(max_size=60).map(lambda data: bytes(b & 0x7F for b in data))
stop_lists = st.sampled_from([(), ("the", "is"), ("a", "x_1", "Up")])


@settings(max_examples=300, deadline=None, database=None)
@given(ascii_bytes, st.booleans(), stop_lists)
def test_the_ascii_splitter_counts_exactly_the_tokenizers_tokens(data, lowercase, stop):
    """Runs of ASCII word bytes, less the dropped ones (single characters, stop words),
    counted: the same counts as the tokenizer's tokens of the decoded text."""
    from collections import Counter

    from nbclass.text.tokenizer import ascii_splitter, make_tokenizer

    data += b" The is A a x_1 UP Up __ z9 " + data.upper()
    settings = TokenizerSettings(lowercase=lowercase, stop_words=stop)
    splitter = ascii_splitter(settings, "utf-8")
    runs = Counter(splitter.split(data))
    for run in splitter.dropped:
        runs.pop(run, None)
    expected = Counter(make_tokenizer(settings)(data.decode("ascii")))
    assert {run.decode("ascii"): n for run, n in runs.items()} == expected


@pytest.mark.parametrize(
    "settings, encoding, applies",
    [
        (TokenizerSettings(), "utf-8", True),
        (TokenizerSettings(), "latin-1", True),
        (TokenizerSettings(), "cp1252", True),
        (TokenizerSettings(lowercase=False, stop_words=("the",)), "utf-8", True),
        (TokenizerSettings(), "utf-16", False),  # ASCII bytes are other characters there
        (TokenizerSettings(), "utf-7", False),  # "+" starts an escape
        (TokenizerSettings(ngram_range=(1, 2)), "utf-8", True),  # the runs make the pairs
        (TokenizerSettings(hash_features=64), "utf-8", False),
        (TokenizerSettings(token_pattern=r"\w+"), "utf-8", False),
    ],
)
def test_the_ascii_splitter_is_used_only_where_it_finds_the_same_tokens(
    settings, encoding, applies
):
    from nbclass.text.tokenizer import ascii_splitter

    assert (ascii_splitter(settings, encoding) is not None) == applies


MIXED = {
    "food": ["Café au lait, CAFE noir; the café is open.", "cafe cafe latte x", "Thé vert",
             "a b c dd dd_ee 42 4"],
    "tech": ["Server DOWN again: the server_2 is down!", "naïve Bayes server", "über server",
             "cafe server 1234 don't"],
}  # fmt: skip


@pytest.mark.parametrize("stop", [(), ("the", "is", "über")])
def test_ascii_and_other_documents_give_the_same_model_by_either_path(
    tmp_path, parallel_always, monkeypatch, stop
):
    """Documents all ASCII go through the splitter, the others through the tokenizer; a
    word met both ways (cafe, server) is one word. The model is byte for byte the one
    of the tokenizer alone, in one process or several, in one tally or many."""
    import nbclass.counting.counts

    corpus = list_corpus(str(write_corpus(tmp_path / "mixed", MIXED)))
    settings = TokenizerSettings(stop_words=stop)
    models = {dumps(fit(corpus, settings, jobs=jobs)) for jobs in (1, 2)}
    monkeypatch.setattr(nbclass.counting.counts, "FLUSH_ENTRIES", 3)
    monkeypatch.setattr(nbclass.counting.counts, "PART_SIZE", 1)
    models |= {dumps(fit(corpus, settings, jobs=jobs)) for jobs in (1, 2)}
    monkeypatch.setattr(nbclass.counting.counts, "ascii_splitter", lambda *args: None)
    models.add(dumps(fit(corpus, settings, jobs=1)))
    assert len(models) == 1
    model = fit(corpus, settings, jobs=1)
    counts = model.counts
    row = counts.vocabulary.index
    assert as_table(counts.token_count)[row("cafe")].tolist() == [3, 1]  # CAFE, cafe cafe | cafe
    assert as_table(counts.doc_count)[row("cafe")].tolist() == [2, 1]
    assert as_table(counts.token_count)[row("server")].tolist() == [0, 4]
    assert "x" not in counts.vocabulary and ("the" in counts.vocabulary) == (not stop)


texts = st.lists(
    st.one_of(
        ascii_bytes.map(lambda data: data.decode("ascii")),
        st.text(alphabet="abcé AB_1\x00.", max_size=30),
    ),
    max_size=8,
)


@settings(max_examples=200, deadline=None, database=None)
@given(texts, st.booleans(), stop_lists)
def test_predict_counts_the_same_with_the_splitter(batch, lowercase, stop):
    """Classifier.count (ASCII texts split by runs, the others tokenized) gives the matrix
    and the token numbers of the tokenizer alone."""
    from nbclass.models.model import Classifier, Model
    from nbclass.text.tokenizer import make_tokenizer

    settings = TokenizerSettings(lowercase=lowercase, stop_words=stop)
    acc = CountAccumulator(["a", "b"])
    words = [["ab", "abc", "x_1", "AB", "ab_1", "é1", "é", "the", "up", "Up", "a"]]
    acc.add(count_matrix(words + [["zz"]], acc.vocabulary), [0, 1])
    classifier = Classifier(Model(acc.result(), settings))
    assert classifier.counter.runs is not None
    X, n_tokens = classifier.count(batch)
    tokens = [make_tokenizer(settings)(text) for text in batch]
    expected = count_matrix(tokens, classifier.vocabulary)
    assert X.shape == expected.shape and (X != expected).nnz == 0
    assert X.has_sorted_indices
    assert n_tokens.tolist() == [len(t) for t in tokens]


@pytest.mark.parametrize("first", [True, False])
def test_a_packed_tally_may_list_a_word_twice(first):
    """A word listed twice in a packed tally (as older packs did for a word met both by
    runs and by the tokenizer) gets one row, whether the tally is the first or not."""
    acc = CountAccumulator(["x", "y"])
    if not first:
        acc.add_packed(([1, 0], "b", np.array([1, 0]), np.array([0]), np.array([1]),
                        np.array([2])))  # fmt: skip
    # Class x: "a" (row 0) 1 doc 1 token, "a" again (row 2) 2 docs 3 tokens; class y: "b".
    acc.add_packed(([3, 1], "a\x00b\x00a", np.array([2, 1]), np.array([0, 2, 1]),
                    np.array([1, 2, 1]), np.array([1, 3, 5])))  # fmt: skip
    counts = acc.result()
    assert counts.vocabulary == ("a", "b")
    assert as_table(counts.doc_count).tolist() == [[3, 0], [int(not first), 1]]
    assert as_table(counts.token_count).tolist() == [[4, 0], [2 * int(not first), 5]]
    assert counts.class_count.tolist() == [3 + int(not first), 1]


def test_words_whose_keys_are_out_of_their_order_are_counted_in_the_words_order():
    """The rows are put in order by the words' keys where none is a hash, and the pairs
    summed in that order while the words are compared; where the words are not in that
    order after all, they are sorted by name and the pairs summed again in theirs."""
    acc = CountAccumulator(["x", "y"])
    # A run tally's words "b" and "a", its numbers 0 and 1, keys 1 and 2: "b" first by key.
    # Class x: "b" 1 document 2 tokens, "a" 1 and 3; class y: "a" 1 and 4.
    words = ("origin", "b\x00a", np.array([0, 1]), "", np.array([1, 2], dtype=np.uint64))
    acc.add_packed(([1, 1], words, np.array([2, 1]), np.array([0, 1, 1]),
                    np.array([1, 1, 1]), np.array([2, 3, 4])))  # fmt: skip
    counts = acc.result()
    assert counts.vocabulary == ("a", "b")
    assert as_table(counts.token_count).tolist() == [[3, 4], [2, 0]]
    assert as_table(counts.doc_count).tolist() == [[1, 1], [1, 0]]
    assert counts.token_count.indptr.tolist() == [0, 2, 3]
    assert counts.problems() == []


_PATH_NAMES = st.lists(
    st.binary(min_size=1, max_size=12).filter(lambda b: b"\x00" not in b).map(os.fsdecode),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(_PATH_NAMES, st.integers(-35, 35), st.integers(-35, 35), st.integers(1, 3))
def test_a_path_list_reads_like_the_list_it_holds(names, start, stop, step):
    paths = PathList(names[:5])
    paths.extend(names[5:])  # built in two steps, as list_corpus does class by class
    assert len(paths) == len(names) and list(paths) == names and paths == names
    assert paths[start:stop:step] == names[start:stop:step]
    assert paths[start:stop] == names[start:stop]
    for i in range(-len(names), len(names)):
        assert paths[i] == names[i]
    for i in (len(names), -len(names) - 1):
        with pytest.raises(IndexError):
            paths[i]
    assert paths == PathList(names) and (paths != PathList(names + ["x"]))


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps_rollup"), reason="Linux only")
def test_a_forked_worker_slicing_a_path_list_copies_none_of_it():
    """The reason the corpus holds its paths in a PathList: a worker forked from the fit
    process that slices a list of str copies the strings' pages (it writes their reference
    counts); slicing a PathList writes nothing of it. Measured as the child's private
    memory, for 200,000 paths (about 24 MB as str objects)."""
    names = [f"/corpus/class-{i % 20:02d}/{i:08d}.txt" for i in range(200_000)]

    def private_kb_after_slicing(paths) -> int:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: slice everything in parts, as a worker does
            os.close(read)
            before = _private_kb()
            for start in range(0, len(paths), 1000):
                part = paths[start : start + 1000]
                del part
            os.write(write, str(_private_kb() - before).encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as pipe:
            grown = int(pipe.read())
        os.waitpid(pid, 0)
        return grown

    as_list = private_kb_after_slicing(names)
    compact = private_kb_after_slicing(PathList(names))
    assert as_list > 8_000  # the strings' pages, copied
    assert compact < 2_000  # a few pages of the interpreter's own


def _private_kb() -> int:
    with open("/proc/self/smaps_rollup") as rollup:
        return sum(
            int(line.split()[1])
            for line in rollup
            if line.startswith(("Private_Clean", "Private_Dirty"))
        )


def test_files_whose_names_are_not_utf8_are_learned_in_workers(tmp_path, parallel_always):
    """The file list holds paths as bytes (PathList): a name that is not UTF-8 comes back
    as the same file in a worker, and the model is that of the same corpus with the
    file renamed."""
    texts = {"ham": ["lunch at noon today", "see you at lunch"], "spam": ["win cash now"] * 3}
    odd, plain = write_corpus(tmp_path / "odd", texts), write_corpus(tmp_path / "plain", texts)
    os.rename(os.fsencode(odd / "ham" / "000.txt"), os.fsencode(odd / "ham") + b"/caf\xe9.txt")
    corpus = list_corpus(str(odd))
    assert os.fsencode(corpus.paths[1]).endswith(b"/ham/caf\xe9.txt")  # sorted after 001
    for jobs in (1, 2):
        assert dumps(fit(corpus, jobs=jobs)) == dumps(fit(list_corpus(str(plain)), jobs=1))


def test_a_workers_windows_are_added_in_the_order_it_made_them(tmp_path, monkeypatch):
    """A worker's later windows name the words its earlier ones sent by number only: a
    slow receiver (every window added 30 ms after it is taken) must still add each
    worker's windows in order, however many finish meanwhile. The counts are those of
    one process, on every try."""
    import time

    import nbclass.counting.counts as counts_module
    import nbclass.text.runs as runs_module
    from nbclass.counting.counts import _Share
    from nbclass.reading.policy import DEFAULT_POLICY

    words = [f"w{i:03d}" for i in range(600)]
    docs = {
        label: [" ".join(words[(i * 37 + k * 11 + c) % 600] for k in range(12)) for i in range(60)]
        for c, label in enumerate("abc")
    }
    corpus = list_corpus(str(write_corpus(tmp_path / "c", docs)))
    settings = TokenizerSettings()
    expected = count_corpus(corpus.paths, corpus.labels, corpus.classes, settings)
    monkeypatch.setattr(runs_module, "CHUNK_BYTES", 200)  # texts counted as they come
    monkeypatch.setattr(counts_module, "FLUSH_ENTRIES", 1)  # one window a part
    for _ in range(2):
        share = _Share(corpus.paths, corpus.labels, 3, settings, False, 4, DEFAULT_POLICY)
        accumulator = CountAccumulator(corpus.classes)
        for packed in share.tally_in_workers(2):
            time.sleep(0.03)
            accumulator.add_packed(packed)
        assert accumulator.result().equals(expected)
