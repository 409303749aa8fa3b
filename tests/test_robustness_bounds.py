"""Bounds on what one command may take: the memory of counting a document whatever the
n-gram range, the worker processes whatever -j asks, and usage errors on an ASCII
output; what docs/robustness.md promises, in real processes.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections import Counter

import pytest
from conftest import REPO, nbclass_command

from nbclass.modelfile.quick import QuickModel
from nbclass.text.tokenizer import (
    MAX_NGRAM,
    NGRAMS_LISTED,
    Ngrams,
    TokenizerSettings,
    make_tokenizer,
    token_groups,
)
from nbclass.text.vectorizer import TextCounter, count_entries

TIMEOUT = 300
KB = 1024

_WORDS = [
    "server", "down", "again", "refund", "café", "naïve", "Straße", "日本語", "東京",
    "résumé", "Ωmega", "x2", "a", "I", "it's", "e-mail", "42", "über", "ÉTÉ", "the",
]  # fmt: skip


def mixed_text(n_words: int, seed: int = 7, vocabulary: int = 5000) -> str:
    """``n_words`` words of mixed scripts, digits and punctuation: the listed words and
    ``vocabulary`` made-up ones, so that long n-grams are mostly distinct, as in prose."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyzéàüßçñ"
    made = ["".join(rng.choices(letters, k=rng.randint(2, 9))) for _ in range(vocabulary)]
    pool = _WORDS + made
    out = []
    for i in range(n_words):
        out.append(rng.choice(pool))
        if i % 13 == 12:
            out.append(rng.choice([",", ".", "!", " --", "\n", "\t"]))
    return " ".join(out)


def reference_tokens(settings: TokenizerSettings, text: str) -> list[str]:
    """The tokens of ``text`` as the tokenizer has always made them: the words, then for
    each length n of the range the n-grams ``" ".join(tokens[i : i + n])``."""
    words = make_tokenizer(TokenizerSettings(**{**settings.to_dict(), "ngram_range": (1, 1)}))(
        text
    )
    low, high = settings.ngram_range
    out = words[:] if low == 1 else []
    for n in range(max(low, 2), min(high, len(words)) + 1):
        out.extend(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
    return out


RANGES = [(low, high) for low in range(1, MAX_NGRAM + 1) for high in range(low, MAX_NGRAM + 1)]


@pytest.mark.parametrize("ngram_range", RANGES, ids=lambda r: f"{r[0]},{r[1]}")
def test_lazy_ngrams_are_the_same_tokens_in_the_same_order_for_every_range(ngram_range):
    """Every range of 1..10: the list of a short text, and the Ngrams of a long one (more
    than NGRAMS_LISTED n-grams; words alone stay a list), are the tokens the tokenizer has
    always made."""
    settings = TokenizerSettings(ngram_range=ngram_range, stop_words=("the", "again"))
    low, high = ngram_range
    short, long = mixed_text(300), mixed_text(NGRAMS_LISTED // (high - low + 1) + 2000, seed=3)
    listed, lazy = make_tokenizer(settings), make_tokenizer(settings, lazy=True)
    assert listed(short) == lazy(short) == reference_tokens(settings, short)
    assert isinstance(lazy(short), list)
    expected = reference_tokens(settings, long)
    assert len(expected) > NGRAMS_LISTED
    grams = lazy(long)
    if ngram_range == (1, 1):  # words alone: the list, which holds nothing more
        assert grams == expected and isinstance(grams, list)
        return
    assert isinstance(grams, Ngrams) and len(grams) == len(expected)
    assert list(grams) == expected and list(grams) == expected  # each pass makes them again
    assert listed(long) == expected and isinstance(listed(long), list)
    assert sum(token_groups(grams), Counter()) == Counter(expected)


def test_a_pattern_whose_tokens_hold_spaces_counts_alike():
    """A token pattern that matches a space makes words equal to 2-grams: the lazy
    n-grams, counted one length at a time, give the same counts."""
    settings = TokenizerSettings(token_pattern=r"\b[a-z]+(?: [a-z]+)?", ngram_range=(1, 3))
    text = "ab cd. ab. cd. " * 30_000  # tokens "ab cd", "ab", "cd": "ab cd" is a 2-gram too
    expected = Counter(reference_tokens(settings, text))
    grams = make_tokenizer(settings, lazy=True)(text)
    assert isinstance(grams, Ngrams)
    assert sum(token_groups(grams), Counter()) == expected
    assert expected["ab cd"] == 60_000  # a word and a 2-gram that are the same string
    vocabulary = {word: j for j, word in enumerate(sorted(expected)[:50])}
    rows, columns, values, n_tokens = count_entries([grams], vocabulary)
    words = sorted(vocabulary, key=vocabulary.get)
    assert dict(zip((words[j] for j in columns), values.tolist())) == {
        w: expected[w] for w in words
    }
    assert n_tokens.tolist() == [sum(expected.values())]


@pytest.mark.parametrize("ngram_range", [(1, 2), (2, 5), (1, 10)], ids=str)
def test_counting_a_long_document_against_a_model_is_the_count_of_every_token(
    tmp_path, ngram_range
):
    """The batch counter and the one-document path count a long document's known n-grams
    exactly as the full token list does, and its number of tokens (a named model: one that
    chooses may keep no n-gram, and is then used as a model of words)."""
    text = mixed_text(60_000, seed=11)
    settings = TokenizerSettings(ngram_range=ngram_range)
    every = Counter(reference_tokens(settings, text))
    rng = random.Random(5)
    words = sorted(rng.sample(sorted(every), 3000) + ["never seen here", "café"])
    X, n_tokens = TextCounter(settings, words).count([text])
    assert n_tokens.tolist() == [sum(every.values())]
    assert dict(zip(X.indices.tolist(), X.data.tolist())) == {
        j: every[w] for j, w in enumerate(words) if every[w]
    }
    corpus = tmp_path / "c"
    for label, lines in (("a", words[::2]), ("b", words[1::2])):
        (corpus / label).mkdir(parents=True)
        (corpus / label / "1.txt").write_text("\n".join(lines), encoding="utf-8")
    model = tmp_path / "m.nbc"
    fitted = subprocess.run(
        [*nbclass_command(), "fit", corpus, "-o", model, "-q", "--ngram-range",
         "{},{}".format(*ngram_range), "--min-df", "1", "--model", "multinomial"],
        capture_output=True, timeout=TIMEOUT, cwd=REPO,
    )  # fmt: skip
    assert fitted.returncode == 0, fitted.stderr
    quick = QuickModel(str(model))
    rows, tokens = quick._document(text)
    vocabulary = quick_words(quick)
    assert tokens == sum(every.values())
    assert {vocabulary[j]: x for j, x in rows} == {w: every[w] for w in vocabulary if every[w]}


def quick_words(quick: QuickModel) -> list[str]:
    """The used vocabulary words of a model file, by column (the one-document reader's)."""
    blob, offsets, used = quick.blob, quick.offsets, quick.used
    return [
        bytes(blob[offsets[j] : offsets[j + 1] - 1]).decode("utf-8")
        if used[j >> 3] >> (j & 7) & 1 else None
        for j in range(len(offsets) - 1)
    ]  # fmt: skip


def test_the_run_counters_make_ngrams_of_at_most_three_words():
    """The numpy run counters make every n-gram of a chunk at once (880 MB for 700 KB of
    text at 1,10): longer ranges are left to the tokenizer, which makes them one at a
    time."""
    from nbclass.text.tokenizer import RUN_MAX_NGRAM, ascii_splitter

    assert RUN_MAX_NGRAM == 3
    for high in range(1, MAX_NGRAM + 1):
        splitter = ascii_splitter(TokenizerSettings(ngram_range=(1, high)), "utf-8")
        assert (splitter is not None) == (high <= 3)


# Run by a small Python of its own: a child's peak resident memory counts its parent's at
# the fork, and this test process may hold hundreds of MB by then.
_MEASURE = """
import resource, subprocess, sys
with open(sys.argv[1], "wb") as out, open(sys.argv[2], "wb") as err:
    code = subprocess.run(sys.argv[3:], stdout=out, stderr=err).returncode
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""


def peak_rss(tmp_path, *args) -> tuple[int, str, str, int]:
    """``(exit code, stdout, stderr, peak resident memory in bytes)`` of nbclass ``args``."""
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    measured = subprocess.run(
        [sys.executable, "-c", _MEASURE, out, err, *nbclass_command(), *map(str, args)],
        capture_output=True, text=True, cwd=REPO, timeout=TIMEOUT,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )  # fmt: skip
    assert measured.returncode == 0, measured.stderr
    code, peak = map(int, measured.stdout.split())
    return code, out.read_text(), err.read_text(), peak


def test_a_model_with_the_longest_ngrams_counts_a_long_document_in_bounded_memory(tmp_path):
    """A model declaring ngram_range 1,10 (the largest a model may ask for) and a 700 KB
    document of mixed text: predict, one document and batch, peaks at most 32 MB above
    what a model of single words takes (all n-grams of all lengths held at once took
    about 150 MB more; now 16 MB more on the one-document path, nothing more in batch)."""
    corpus = tmp_path / "c"
    for label, text in (("a", "space shuttle orbit café"), ("b", "car engine wheel über")):
        (corpus / label).mkdir(parents=True)
        (corpus / label / "1.txt").write_text(text, encoding="utf-8")
    document = tmp_path / "doc.txt"
    document.write_text(mixed_text(90_000, seed=2), encoding="utf-8")
    assert 650 * KB < document.stat().st_size < 700 * KB
    other = tmp_path / "other.txt"
    other.write_text("car engine", encoding="utf-8")
    peaks = {}
    for ngrams in ("1,1", "1,10"):
        model = tmp_path / f"m{ngrams}.nbc"
        fitted = subprocess.run(
            [*nbclass_command(), "fit", corpus, "-o", model, "-q", "--ngram-range", ngrams],
            capture_output=True, timeout=TIMEOUT, cwd=REPO,
        )  # fmt: skip
        assert fitted.returncode == 0, fitted.stderr
        for path, files in (("one", [document]), ("batch", [document, other])):
            code, out, err, peak = peak_rss(tmp_path, "predict", "-m", model, *files, "-j", "1")
            assert (code, err) == (0, ""), err
            assert out.splitlines()[0].startswith(f"{document}\t")
            peaks[path, ngrams] = peak
    for path in ("one", "batch"):
        assert peaks[path, "1,10"] < peaks[path, "1,1"] + 32 * KB * KB, peaks


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry))
    return found


def most_workers(args, tmp_path, env=None, cores=None) -> tuple[int, int, bytes]:
    """``(exit code, most child processes seen at once, stdout)`` of nbclass ``args``,
    its children looked for every few milliseconds; ``cores``: the CPU affinity it is
    started with."""
    preexec = None if cores is None else (lambda: os.sched_setaffinity(0, cores))
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        process = subprocess.Popen(
            [*nbclass_command(), *map(str, args)], stdout=stdout, stderr=stderr, cwd=REPO,
            env={**os.environ, **(env or {})}, preexec_fn=preexec,
        )  # fmt: skip
    most, deadline = 0, time.monotonic() + TIMEOUT
    while process.poll() is None and time.monotonic() < deadline:
        most = max(most, len(_children(process.pid)))
        time.sleep(0.005)
    if process.poll() is None:  # pragma: no cover - a hang: fail, leaving nothing behind
        process.kill()
        process.wait()
    assert err.read_bytes() == b""
    return process.returncode, most, out.read_bytes()


@pytest.fixture(scope="module")
def six_hundred(tmp_path_factory):
    """600 documents of 7.8 KB in two classes (4.7 MB: enough for fit to fork), and
    3,000 short ones for predict (3 batches of 1,000)."""
    root = tmp_path_factory.mktemp("jobs")
    rng = random.Random(1)
    words = ["".join(rng.choices("abcdefghijklmnop", k=rng.randint(3, 8))) for _ in range(3000)]
    for label in "ab":
        (root / "corpus" / label).mkdir(parents=True)
        for i in range(300):
            text = " ".join(rng.choices(words, k=1200))
            (root / "corpus" / label / f"{i}.txt").write_text(text, encoding="utf-8")
    (root / "many").mkdir()
    for i in range(3000):
        (root / "many" / f"{i:04}.txt").write_text(" ".join(rng.choices(words, k=250)))
    return root


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity")
def test_jobs_above_the_usable_cores_fork_no_more_workers_than_cores(six_hundred, tmp_path):
    """-j 48 and NBCLASS_JOBS=48 on 600 documents forked 48 workers on a 2-core machine.
    The workers are bounded by the cores the process may use (its CPU affinity) and by
    the parts of work: on one core, fit and predict fork none; the model is the same."""
    cores = os.sched_getaffinity(0)
    corpus, many = six_hundred / "corpus", six_hundred / "many"
    one = tmp_path / "one.nbc"
    assert most_workers(["fit", corpus, "-o", one, "-q", "-j", "1"], tmp_path)[:2] == (0, 0)
    model = tmp_path / "m.nbc"
    for args, env in ((["-j", "48"], {}), ([], {"NBCLASS_JOBS": "48"})):
        fit = ["fit", corpus, "-o", model, "-q", *args]
        code, most, _ = most_workers(fit, tmp_path, env)
        assert code == 0 and (0 < most <= len(cores) < 48 or len(cores) == 1 and most == 0)
        assert model.read_bytes() == one.read_bytes()
        assert most_workers(fit, tmp_path, env, {min(cores)})[:2] == (0, 0)
        assert model.read_bytes() == one.read_bytes()
    code, most, alone = most_workers(["predict", "-m", one, many, "-j", "1"], tmp_path)
    assert (code, most, alone.count(b"\n")) == (0, 0, 3000)
    code, most, out = most_workers(["predict", "-m", one, many, "-j", "48"], tmp_path)
    assert (code, out) == (0, alone) and most <= min(len(cores), 3)
    predict = ["predict", "-m", one, many, "-j", "48"]
    assert most_workers(predict, tmp_path, None, {min(cores)}) == (0, 0, alone)


ASCII_OUTPUTS = {  # environment -> how it shows the é of a command line
    "PYTHONIOENCODING=ascii": ({"PYTHONIOENCODING": "ascii"}, "\\u00e9"),
    "LC_ALL=C": ({"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}, "\\udcc3\\udca9"),
    "both": ({"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": "ascii"}, "\\udcc3\\udca9"),
}


@pytest.mark.parametrize("output", ASCII_OUTPUTS)
def test_usage_errors_on_an_ascii_output_are_escaped_lines_never_a_traceback(
    output, tmp_path
):
    """click's own usage lines (a bad value, an unknown command or option) and nbclass's
    errors naming a non-ASCII value, on a stderr whose encoding is ASCII: the usage and
    one escaped `Error:` line last, all ASCII, exit 2 (1 for a missing file). click
    wrote its lines as UTF-8 whatever stderr's encoding was."""
    env, e = ASCII_OUTPUTS[output]
    cases = [
        (["predict", "-m", "m.nbc", "--format", "café"], 2,
         f"Error: Invalid value for '--format': 'caf{e}' is not one of 'tsv', 'jsonl'."),
        (["prédict"], 2, f"Error: No such command 'pr{e}dict'. Did you mean 'predict'?"),
        (["fit", "corpus", "-o", "m.nbc", "--bogus-é"], 2,
         f"Error: No such option '--bogus-{e}'."),
        (["cv", "corpus", "--folds", "é"], 2,
         f"Error: Invalid value for '-k' / '--folds': '{e}' is not a whole number"),
        (["info", "-m", "é.nbc"], 1,
         f"Error: model file '{e}.nbc' does not exist: create one with 'nbclass fit'"),
        (["fit", "corpus", "-o", "no/é/m.nbc"], 1, f"Error: cannot write model 'no/{e}/m.nbc': "
         "No such file or directory (creating its lock file .m.nbc.lock)"),
    ]  # fmt: skip
    for label, text in (("a", "space shuttle"), ("b", "car engine")):
        (tmp_path / "corpus" / label).mkdir(parents=True)
        (tmp_path / "corpus" / label / "1.txt").write_text(text)
    for args, code, last in cases:
        result = subprocess.run(
            [*nbclass_command(), *args], capture_output=True, cwd=tmp_path, timeout=TIMEOUT,
            env={**os.environ, **env}, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert result.returncode == code, result.stderr
        assert result.stderr.isascii() and b"Traceback" not in result.stderr, result.stderr
        lines = result.stderr.decode("ascii").splitlines()
        assert lines[-1] == last
        assert [line for line in lines if line.startswith("Error:")] == [last]
        if code == 2:  # the usage line, the hint and a blank line before it
            assert lines[0].startswith("Usage: nbclass") and lines[-2] == "", lines
