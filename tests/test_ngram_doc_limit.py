"""``--ngram-doc-limit N``: the n-grams of ``--ngram-range`` longer than one token are
formed only in a document of at most N tokens (after lower-casing and the stop words);
a longer document counts its single tokens only. Every path counts by the same rule:
the regex tokenizer, the run counters of fit and predict, the counting processes,
predict's explanations, the service, the exported scorer and the estimator.

The corpus is written to a temporary folder: documents of 3 tokens, of N - 1, N and
N + 1, and of 100, with stop words, single letters and symbols between the words (none
of which is a token the limit counts) and words of other scripts.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, RUN_COUNTER_OFF, fit_by_every_path, write_corpus

import nbclass
from nbclass.counting.counts import as_table
from nbclass.modelfile.textfile import load
from nbclass.reading.corpus import list_corpus
from nbclass.text.stop_words import ENGLISH
from nbclass.text.tokenizer import TokenizerSettings, load_stop_words, make_tokenizer

N = 8
WORDS = [
    "server", "crashed", "disk", "night", "build", "restart", "soup", "cold", "bread", "lunch",
    "café", "naïve", "straße", "привет", "мир", "東京", "データ", "x_1", "42",
]  # fmt: skip
FILLERS = ["the", "and", "a", "I", "!!", ":)", "?", "is", "of", "u", "—", "..."]
LENGTHS = [3, N - 1, N, N + 1, 100]
RUN = [sys.executable, "-m", "nbclass"]
SHORT = "The server crashed at night"  # 3 tokens, its pairs known to the model
LONG = " ".join([SHORT] * 3)  # 9 tokens: no pair
NAMED = ["--model", "multinomial"]


def document(rng: random.Random, k: int, label: int) -> str:
    """A text of exactly ``k`` tokens once the English stop words are gone (words of
    two or more word characters), with stop words, single letters and symbols between
    them; each class leans to its own half of the words."""
    half = WORDS[: len(WORDS) // 2 + 2] if label == 0 else WORDS[len(WORDS) // 2 - 2 :]
    parts = []
    for _ in range(k):
        parts.append(rng.choice(half if rng.random() < 0.8 else WORDS).upper()
                     if rng.random() < 0.1 else rng.choice(half))  # fmt: skip
        if rng.random() < 0.5:
            parts.append(rng.choice(FILLERS))
    return " ".join(parts) + "\n"


def tokens_of(text: str) -> int:
    """The tokens the limit counts, by a plain regex: not the stop words."""
    return len([w for w in re.findall(r"(?u)\b\w\w+\b", text.lower()) if w not in ENGLISH])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, dict[str, list[str]]]:
    """``{"all": {class: texts}, "short": ..., "long": ...}`` written to folders of those
    names (short: at most N tokens)."""
    rng = random.Random(2026)
    root = tmp_path_factory.mktemp("limit")
    documents = {"tech": [], "food": [], "misc": []}
    for c, label in enumerate(documents):
        for k in LENGTHS:
            for _ in range(3):
                documents[label].append(document(rng, k, c % 2))
    documents["tech"].append(SHORT + "!!\n")
    for texts in documents.values():
        assert sorted({tokens_of(t) for t in texts}) == LENGTHS
    short = {c: [t for t in texts if tokens_of(t) <= N] for c, texts in documents.items()}
    long = {c: [t for t in texts if tokens_of(t) > N] for c, texts in documents.items()}
    write_corpus(root / "all", documents)
    write_corpus(root / "short", short)
    write_corpus(root / "long", long)
    return {"root": root, "all": documents, "short": short, "long": long}


def cli(*args, check=True, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [*RUN, *map(str, args)], capture_output=True, text=True, cwd=REPO, timeout=300, **kwargs
    )  # fmt: skip
    if check:
        assert done.returncode == 0, done.stderr
    return done


def cells(path) -> dict:
    """``{(word, class): (D, T)}`` of a model file's nonzero counts, and its N_c."""
    counts = load(str(path)).counts
    D, T = as_table(counts.doc_count), as_table(counts.token_count)
    out = {}
    for j, word in enumerate(counts.vocabulary):
        for c, label in enumerate(counts.classes):
            if T[j, c]:
                out[word, label] = (int(D[j, c]), int(T[j, c]))
    return out, dict(zip(counts.classes, counts.class_count.tolist()))


def summed(*parts) -> tuple[dict, dict]:
    out, classes = {}, {}
    for found, n_c in parts:
        for key, (d, t) in found.items():
            d0, t0 = out.get(key, (0, 0))
            out[key] = (d0 + d, t0 + t)
        for label, n in n_c.items():
            classes[label] = classes.get(label, 0) + n
    return out, classes


def english() -> dict:
    words, source = load_stop_words("english")
    return {"stop_words": words, "stop_words_source": source}


# --- counting ------------------------------------------------------------------------------


@pytest.mark.parametrize("symbols", [[], ["--symbols"]])
def test_the_counts_are_pairs_of_the_short_documents_and_words_of_the_long(
    corpus, tmp_path, symbols
):
    """fit --ngram-range 1,2 --ngram-doc-limit N, every row and class, is the sum of a fit
    with pairs of the documents of at most N tokens and a fit of words of the others
    (with --symbols too, counted in every document)."""
    root, common = corpus["root"], ["--stop-words", "english", *NAMED, *symbols, "-q"]
    cli("fit", root / "all", "-o", tmp_path / "limited.nbc", "--ngram-range", "1,2",
        "--ngram-doc-limit", N, *common)  # fmt: skip
    cli("fit", root / "short", "-o", tmp_path / "short.nbc", "--ngram-range", "1,2", *common)
    cli("fit", root / "long", "-o", tmp_path / "long.nbc", *common)
    limited = cells(tmp_path / "limited.nbc")
    assert limited == summed(cells(tmp_path / "short.nbc"), cells(tmp_path / "long.nbc"))
    # Pairs are there (from the short documents), and no pair is only in a long one.
    pairs = {word for word, _ in limited[0] if " " in word}
    assert pairs and pairs == {w for w, _ in cells(tmp_path / "short.nbc")[0] if " " in w}
    whole = cells_of_fit(root / "all", ["--ngram-range", "1,2", *common], tmp_path)
    assert {w for w, _ in whole[0] if " " in w} > pairs


def cells_of_fit(folder, options, tmp_path):
    cli("fit", folder, "-o", tmp_path / "whole.nbc", *options)
    return cells(tmp_path / "whole.nbc")


@pytest.mark.parametrize("ngram_range", [(1, 2), (1, 3)])
@pytest.mark.parametrize("symbols", [False, True])
def test_every_counting_path_writes_the_same_file(corpus, monkeypatch, ngram_range, symbols):
    """The run tally (word pairs by their words' numbers for 1,2; n-gram runs for 1,3),
    two counting processes, and the regex tokenizer alone write the same bytes."""
    listed = list_corpus(str(corpus["root"] / "all"))
    tokenizer = TokenizerSettings(
        ngram_range=ngram_range, ngram_doc_limit=N, symbols=symbols, **english()
    )
    fast, workers, plain = fit_by_every_path(listed, tokenizer, monkeypatch)
    assert fast == plain and workers == plain
    assert b'"ngram_doc_limit": 8' in plain


def test_a_limit_at_least_every_documents_length_counts_as_no_limit(corpus, tmp_path):
    """Every document has at most 100 tokens: a limit of 100 (or more) is no limit, and
    99 is one (the documents of 100 lose their pairs)."""
    root = corpus["root"] / "all"
    common = ["--ngram-range", "1,2", "--stop-words", "english", *NAMED, "-q"]
    cli("fit", root, "-o", tmp_path / "none.nbc", *common)
    none = cells(tmp_path / "none.nbc")
    for limit, same in ((100, True), (10_000, True), (99, False)):
        cli("fit", root, "-o", tmp_path / "m.nbc", *common, "--ngram-doc-limit", limit)
        assert (cells(tmp_path / "m.nbc") == none) is same, limit


def test_the_tokenizer_by_hand():
    """Counted after the stop words; the symbols and single letters do not count and are
    kept; the character pairs of --unspaced pairs are not limited."""
    settings = TokenizerSettings(ngram_range=(1, 2), ngram_doc_limit=3, **english())
    tokenize = make_tokenizer(settings)
    assert tokenize("The server crashed at night") == [
        "server", "crashed", "night", "server crashed", "crashed night"
    ]  # fmt: skip
    assert tokenize("The server crashed at night, and the disk") == [
        "server", "crashed", "night", "disk"
    ]  # fmt: skip
    symbols = make_tokenizer(TokenizerSettings(ngram_range=(1, 2), ngram_doc_limit=2,
                                               symbols=True))  # fmt: skip
    assert symbols("a b c server down !!") == [
        "server", "down", "server down", "a", "b", "c", "!!"
    ]  # fmt: skip
    assert symbols("server down now !!") == ["server", "down", "now", "!!"]
    pairs = make_tokenizer(TokenizerSettings(ngram_range=(1, 2), ngram_doc_limit=1,
                                             unspaced="pairs"))  # fmt: skip
    assert pairs("日本 ok") == ["日", "本", "ok", "日 本"]  # 3 tokens: no word pair
    pairs = make_tokenizer(TokenizerSettings(ngram_range=(1, 2), ngram_doc_limit=3,
                                             unspaced="pairs"))  # fmt: skip
    assert pairs("日本 ok") == ["日", "本", "ok", "日 本", "本 ok", "日 本"]
    lazy = make_tokenizer(settings, lazy=True)
    long_text = " ".join(["server"] * 70_000)
    assert lazy(long_text) == ["server"] * 70_000  # no lazy n-grams of a long document


def test_hashing_hashes_the_limited_tokens(corpus, tmp_path):
    """--hash-features hashes the tokens of the limited tokenizer: a long document's
    words alone; fit with both counts the columns of those tokens."""
    from dataclasses import replace

    plain = TokenizerSettings(ngram_range=(1, 2), ngram_doc_limit=3, **english())
    hashed = make_tokenizer(replace(plain, hash_features=1 << 20))
    tokens = make_tokenizer(plain)
    assert [len(list(hashed(t))) for t in (SHORT, LONG)] == [5, 9]
    assert [len(tokens(t)) for t in (SHORT, LONG)] == [5, 9]
    common = ["--ngram-range", "1,2", "--stop-words", "english", *NAMED, "-q"]
    totals = []
    for limit in ([], ["--ngram-doc-limit", N]):
        cli("fit", corpus["root"] / "all", "-o", tmp_path / "h.nbc", *common,
            "--hash-features", 1 << 20, *limit)  # fmt: skip
        cli("fit", corpus["root"] / "all", "-o", tmp_path / "p.nbc", *common, *limit)
        totals.append(int(load(str(tmp_path / "h.nbc")).counts.token_count.sum()))
        assert totals[-1] == load(str(tmp_path / "p.nbc")).counts.token_count.sum()
    assert totals[1] < totals[0]  # the long documents' pairs are not counted


# --- predicting ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model(corpus, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "m.nbc"
    cli("fit", corpus["root"] / "all", "-o", path, "--ngram-range", "1,2",
        "--ngram-doc-limit", N, "--stop-words", "english", *NAMED, "-q")  # fmt: skip
    return path




def explained(records) -> list[set[str]]:
    return [{w["word"] for w in r["explanation"]["words"]} for r in records]


def test_predict_and_explain_give_pairs_to_short_documents_only(model, corpus, tmp_path):
    """predict --explain (one document from standard input, and a batch of files, by
    the run counter and by the tokenizer alone): the short document's explanation holds
    its pairs, the long one's none; the batch paths print the same bytes."""
    vocabulary = load(str(model)).counts.vocabulary
    assert "server crashed" in vocabulary and "crashed night" in vocabulary
    one = [json.loads(cli("predict", "-m", model, "--format", "jsonl", "--explain", "100",
                          input=text).stdout) for text in (SHORT, LONG)]  # fmt: skip
    short, long = explained(one)
    assert {"server crashed", "crashed night"} <= short
    assert long and not any(" " in word for word in long)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "1-short.txt").write_text(SHORT)
    (docs / "2-long.txt").write_text(LONG)
    command = ["predict", "-m", str(model), str(docs), "--format", "jsonl", "--explain", "100"]
    fast = cli(*command).stdout
    slow = subprocess.run([sys.executable, "-c", RUN_COUNTER_OFF, *command], check=True,
                          capture_output=True, text=True, cwd=REPO).stdout  # fmt: skip
    assert fast == slow
    records = [json.loads(line) for line in fast.splitlines()]
    assert explained(records) == [short, long]
    for record, alone in zip(records, one):
        assert record["probabilities"] == alone["probabilities"]


def test_the_run_counter_counts_as_the_tokenizer(model, corpus):
    """predict's counter over the model's vocabulary, by runs and by the tokenizer."""
    from nbclass.text.vectorizer import TextCounter, count_matrix

    loaded = load(str(model))
    texts = [t for texts in corpus["all"].values() for t in texts] + [SHORT, LONG]
    counter = TextCounter(loaded.tokenizer, loaded.counts.vocabulary)
    assert counter.runs is not None and counter.runs.pairs is not None
    X, n_tokens = counter.count(texts)
    tokenize = make_tokenizer(loaded.tokenizer)
    tokens = [tokenize(t) for t in texts]
    expected = count_matrix(tokens, counter.vocabulary)
    assert (X != expected).nnz == 0 and n_tokens.tolist() == list(map(len, tokens))


def test_the_service_gives_pairs_to_short_documents_only(model):
    """nbclass serve answers predict's line, byte for byte, for each."""
    process = subprocess.Popen(
        [*RUN, "serve", "-m", str(model), "--port", "0"], cwd=REPO,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        port = None
        for line in process.stderr:
            if found := re.search(r"listening on \S+:(\d+),", line):
                port = int(found.group(1))
                break
        assert port is not None
        answers = []
        for text in (SHORT, LONG):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            connection.request("POST", "/predict", json.dumps({"text": text, "explain": 100}))
            response = connection.getresponse()
            assert response.status == 200
            answers.append(response.read().decode("utf-8"))
            connection.close()
            expected = cli("predict", "-m", model, "--format", "jsonl", "--explain", "100",
                           input=text).stdout  # fmt: skip
            assert answers[-1] == expected
        short, long = explained([json.loads(a) for a in answers])
        assert "server crashed" in short and not any(" " in word for word in long)
    finally:
        os.kill(process.pid, signal.SIGTERM)
        process.wait(60)
        process.stderr.close()


def test_the_exported_scorer_applies_the_limit(model, corpus, tmp_path):
    """The export's tokenizer holds the limit and docs/export.md's scorer, as written,
    gives predict's probabilities; without the limit it would not, for the long ones."""
    from test_export import doc_namespace

    out = tmp_path / "m.json"
    cli("export", "-m", model, "-o", out, "-q")
    namespace = doc_namespace()
    exported = namespace["load_export"](str(out))
    assert exported["tokenizer"]["ngram_doc_limit"] == N
    texts = [SHORT, LONG, *corpus["all"]["tech"]]
    records = [json.loads(line) for line in cli(
        "predict", "-m", model, "--format", "jsonl", "--lines", "-",
        input="".join("\t" + t.replace("\n", " ") + "\n" for t in texts),
    ).stdout.splitlines()]  # fmt: skip
    classes = exported["classes"]
    for text, record in zip(texts, records):
        got = namespace["probabilities"](exported, text.replace("\n", " "))
        assert max(abs(got[c] - record["probabilities"][c]) for c in classes) <= 1e-12
    unlimited = {**exported, "tokenizer": {**exported["tokenizer"]}}
    del unlimited["tokenizer"]["ngram_doc_limit"]
    assert namespace["probabilities"](unlimited, SHORT) == namespace["probabilities"](
        exported, SHORT
    )
    assert namespace["probabilities"](unlimited, LONG) != namespace["probabilities"](
        exported, LONG
    )
    # The scikit-learn recipes' CountVectorizer applies the limit too: pairs for the short
    # document, none for the long one (whose words hold the pairs' words)
    analyze = namespace["count_vectorizer"](exported).build_analyzer()
    assert any(" " in token for token in analyze(SHORT))
    assert not any(" " in token for token in analyze(LONG))
    assert any(" " in token for token in analyze(" ".join(LONG.split()[:N])))


def test_the_estimator_and_the_library(corpus, tmp_path):
    """nbclass.fit and the scikit-learn estimator take ngram_doc_limit: the model of
    fit --lines, byte for byte, and the estimator's is that model."""
    from sklearn.base import clone

    from nbclass.sklearn import NaiveBayesTextClassifier

    texts = [t.replace("\n", " ") for ts in corpus["all"].values() for t in ts]
    labels = [c for c, ts in corpus["all"].items() for _ in ts]
    options = dict(model="multinomial", ngram_range=(1, 2), ngram_doc_limit=N)
    library = nbclass.fit(texts, labels, **options)
    (tmp_path / "lines.tsv").write_text("".join(f"{c}\t{t}\n" for c, t in zip(labels, texts)))
    cli("fit", "--lines", tmp_path / "lines.tsv", "-o", tmp_path / "m.nbc", "-q", *NAMED,
        "--ngram-range", "1,2", "--ngram-doc-limit", N)  # fmt: skip
    assert library.to_bytes() == (tmp_path / "m.nbc").read_bytes()
    estimator = NaiveBayesTextClassifier(**options).fit(texts, labels)
    assert estimator.get_params()["ngram_doc_limit"] == N
    assert clone(estimator).get_params()["ngram_doc_limit"] == N
    assert estimator.model_.to_bytes() == library.to_bytes()
    explained_ = [library.explain(text, 100) for text in (SHORT, LONG)]
    assert "server crashed" in {w[0] for w in explained_[0]["words"]}
    assert not any(" " in w[0] for w in explained_[1]["words"])
    unlimited = nbclass.fit(texts, labels, model="multinomial", ngram_range=(1, 2))
    assert "server crashed" in {w[0] for w in unlimited.explain(LONG, 100)["words"]}


# --- settings, errors, old files -------------------------------------------------------------


def test_info_shows_the_limit_and_the_file_keeps_it_only_when_set(model, tmp_path, corpus):
    shown = cli("info", "-m", model).stdout
    assert f"ngram_range 1,2, ngram_doc_limit {N}, stop_words english" in shown
    cli("fit", corpus["root"] / "all", "-o", tmp_path / "plain.nbc", "--ngram-range", "1,2",
        *NAMED, "-q")  # fmt: skip
    assert b"ngram_doc_limit" not in (tmp_path / "plain.nbc").read_bytes()
    assert "ngram_doc_limit" not in cli("info", "-m", tmp_path / "plain.nbc").stdout


def test_an_old_file_loads_and_predicts_as_before(tmp_path, corpus):
    """A model without the key (every file written before) loads with no limit and
    predicts a long document with its pairs, as it did."""
    cli("fit", corpus["root"] / "all", "-o", tmp_path / "old.nbc", "--ngram-range", "1,2",
        *NAMED, "-q")  # fmt: skip
    assert load(str(tmp_path / "old.nbc")).tokenizer.ngram_doc_limit is None
    record = json.loads(cli("predict", "-m", tmp_path / "old.nbc", "--format", "jsonl",
                            "--explain", "100", input=LONG).stdout)  # fmt: skip
    assert "server crashed" in explained([record])[0]


@pytest.mark.parametrize(
    "options, message",
    [
        (["--ngram-range", "1,2", "--ngram-doc-limit", "0"], "--ngram-doc-limit 0 is not valid"),
        (["--ngram-range", "1,2", "--ngram-doc-limit", "-3"], "--ngram-doc-limit -3 is not valid"),
        (["--ngram-range", "2,3", "--ngram-doc-limit", "5"], "--ngram-range 2,3 leaves out"),
    ],
)
def test_errors_are_one_line_and_exit_2(corpus, tmp_path, options, message):
    done = cli("fit", corpus["root"] / "all", "-o", tmp_path / "m.nbc", *options, check=False)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("Error: ") and message in done.stderr
    assert not (tmp_path / "m.nbc").exists()


def test_library_errors(corpus):
    from nbclass.errors import InputError, UsageError

    with pytest.raises(InputError, match="ngram_doc_limit 0 must be at least 1"):
        nbclass.fit(["a b", "c d"], ["x", "y"], ngram_range=(1, 2), ngram_doc_limit=0)
    with pytest.raises(UsageError, match="--ngram-doc-limit keeps"):
        nbclass.fit(["ab cd", "cd ef"], ["x", "y"], ngram_range=(2, 2), ngram_doc_limit=4)
    with pytest.raises(ValueError, match="is not a number of tokens"):
        TokenizerSettings.from_dict({**TokenizerSettings().to_dict(), "ngram_doc_limit": 0})


def test_update_merge_unlearn_and_sync_keep_the_models_limit(corpus, tmp_path):
    """An update counts with the model's stored limit (the file a fit of every document
    writes), as do merge, unlearn and sync; a different limit, or none where the model
    has one, is refused, by update, merge and sync; --table takes none."""
    root = corpus["root"]
    common = ["--ngram-range", "1,2", "--stop-words", "english", *NAMED, "-q"]
    limit = ["--ngram-doc-limit", N]
    cli("fit", root / "all", "-o", tmp_path / "all.nbc", *common, *limit)
    cli("fit", root / "short", "-o", tmp_path / "part.nbc", *common, *limit)
    cli("fit", root / "long", "--update", tmp_path / "part.nbc", "-q")
    assert (tmp_path / "part.nbc").read_bytes() == (tmp_path / "all.nbc").read_bytes()
    refused = cli("fit", root / "long", "--update", tmp_path / "part.nbc", "--ngram-doc-limit",
                  N + 1, check=False)  # fmt: skip
    assert refused.returncode == 2
    assert f"ngram doc limit: {N} vs {N + 1}" in refused.stderr
    cli("fit", root / "short", "-o", tmp_path / "short.nbc", *common, *limit)
    cli("fit", root / "long", "-o", tmp_path / "long.nbc", *common, *limit)
    cli("merge", tmp_path / "short.nbc", tmp_path / "long.nbc", "-o", tmp_path / "merged.nbc",
        "-q")  # fmt: skip
    assert (tmp_path / "merged.nbc").read_bytes() == (tmp_path / "all.nbc").read_bytes()
    cli("fit", root / "long", "-o", tmp_path / "other.nbc", *common)
    refused = cli("merge", tmp_path / "short.nbc", tmp_path / "other.nbc", "-o",
                  tmp_path / "bad.nbc", check=False)  # fmt: skip
    assert refused.returncode == 2 and f"ngram doc limit: {N} vs none" in refused.stderr
    # With a ledger: unlearning the long documents, and a sync of the short ones'
    # folder, leave the fit of the short ones (the sync made with the stored limit).
    ledger = [*common, *limit, "--ledger"]
    cli("fit", root / "all", "-o", tmp_path / "ledger.nbc", *ledger)
    cli("fit", root / "short", "-o", tmp_path / "short-ledger.nbc", *ledger)
    cli("unlearn", root / "long", "-m", tmp_path / "ledger.nbc", "-o", tmp_path / "less.nbc",
        "-q")  # fmt: skip
    assert cells(tmp_path / "less.nbc") == cells(tmp_path / "short-ledger.nbc")
    cli("sync", root / "short", "-m", tmp_path / "ledger.nbc", "-q")
    assert (tmp_path / "ledger.nbc").read_bytes() == (tmp_path / "short-ledger.nbc").read_bytes()
    refused = cli("sync", root / "short", "-m", tmp_path / "ledger.nbc", "--ngram-doc-limit", 3,
                  check=False)  # fmt: skip
    assert refused.returncode == 2 and f"ngram doc limit: {N} vs 3" in refused.stderr
    shutil.copy(tmp_path / "part.nbc", tmp_path / "table.csv")
    table = cli("fit", "--table", tmp_path / "table.csv", "--label", "x", "-o",
                tmp_path / "t.nbc", "--ngram-doc-limit", "4", check=False)  # fmt: skip
    assert table.returncode == 2 and "--ngram-doc-limit" in table.stderr
