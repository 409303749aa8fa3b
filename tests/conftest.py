"""Shared fixtures: small corpora written to disk, a sample of a real corpus, the CLI."""

from __future__ import annotations

import os
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

# CI runs the same examples every time (a failure found locally stays reproducible there
# through its @example); a developer's run explores new ones. Neither fails a test for
# the time an example or its generation takes on a loaded machine: no test here is timed.
_UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
hypothesis_settings.register_profile("ci", derandomize=True, database=None, **_UNTIMED)
hypothesis_settings.register_profile("developer", **_UNTIMED)
hypothesis_settings.load_profile("ci" if os.environ.get("CI") else "developer")

REPO = Path(__file__).resolve().parent.parent
SHARED_CORPORA = Path(os.environ.get("NBCLASS_SHARED_CORPORA", REPO.parent / "shared" / "corpora"))
DEMO_CORPUS = REPO / "corpora" / "demo"
DEMO_DOCS = REPO / "corpora" / "demo-docs"
# A named model: fit scores that formula and chooses nothing, so two fits of the same
# counts write the same bytes whatever documents each saw (the laws of update, merge,
# unlearn and sync are laws of counts; --model auto chooses from the documents).
NAMED = ("--model", "complement", "--tf", "log", "--prior-fit")


def counted_as_tokenized(settings_, texts, tokenize, extra=()):
    """``(counter, vocabulary)``: a TextCounter of ``settings_`` over the tokens
    ``tokenize`` finds in ``texts`` and the words ``extra``, having checked that it counts
    ``texts`` as the tokenizer does (the same matrix and each text's number of tokens)."""
    from nbclass.text.vectorizer import TextCounter, count_matrix

    token_lists = [tokenize(text) for text in texts]
    vocabulary = sorted({t for tokens in token_lists for t in tokens} | set(extra))
    counter = TextCounter(settings_, vocabulary)
    X, n_tokens = counter.count(texts)
    expected = count_matrix(token_lists, counter.vocabulary)
    assert X.shape == expected.shape and (X != expected).nnz == 0
    assert n_tokens.tolist() == [len(tokens) for tokens in token_lists]
    return counter, vocabulary


def assert_changes_write_fresh_fits(run, second: Path, full: Path, half_a: Path, half_b: Path):
    """A model of the first half updated with the ``second`` half's corpus, the two halves'
    models merged, and the ``second`` half unlearned from the model of both (``full``) are
    byte for byte the fresh fits of both halves and of the first. ``run(*args)`` runs
    nbclass; the files written sit beside ``half_a``."""
    import shutil

    folder = half_a.parent
    updated = folder / "updated.nbc"
    shutil.copy(half_a, updated)
    assert run("fit", second, "--update", updated, "-q").returncode == 0
    assert updated.read_bytes() == full.read_bytes()
    merged = folder / "merged.nbc"
    result = run("merge", half_b, half_a, "-o", merged, "-q")
    assert result.returncode == 0 and result.stderr == b""
    assert merged.read_bytes() == full.read_bytes()
    unlearned = folder / "unlearned.nbc"
    assert run("unlearn", second, "-m", full, "-o", unlearned, "-q").returncode == 0
    assert unlearned.read_bytes() == half_a.read_bytes()


def big_corpus(root: Path, files: int) -> Path:
    """Three classes of ``files`` files of 400 kB each: a fit that takes a while."""
    block = " ".join(f"word{i % 4999} token{i % 313}" for i in range(40_000)).encode()
    for label in ("a", "b", "c"):
        (root / label).mkdir(parents=True, exist_ok=True)
        for i in range(files):
            (root / label / f"{i}.txt").write_bytes(block)
    return root


def fit_by_every_path(corpus, tokenizer, monkeypatch) -> tuple[bytes, bytes, bytes]:
    """The model files (multinomial) of ``corpus`` (a listed corpus) fitted by the run
    tally in this process, by two counting processes, and with every document tokenized
    by the regex (no run tally)."""
    import nbclass.counting.counts
    from nbclass.modelfile.textfile import dumps
    from nbclass.models.estimators import EstimatorSettings
    from nbclass.models.model import fit

    named = EstimatorSettings(model="multinomial")
    fast = dumps(fit(corpus, tokenizer, defaults=named))
    monkeypatch.setattr(nbclass.counting.counts, "PARALLEL_MIN_BYTES", 1)
    workers = dumps(fit(corpus, tokenizer, defaults=named, jobs=2))
    monkeypatch.setattr(nbclass.counting.counts, "ascii_splitter", lambda *args: None)
    return fast, workers, dumps(fit(corpus, tokenizer, defaults=named))


def write_corpus(root: Path, documents: dict[str, list[str]]) -> Path:
    """Write ``{class: [text, ...]}`` as root/class/NNN.txt; returns root."""
    for label, texts in documents.items():
        folder = root / label
        folder.mkdir(parents=True, exist_ok=True)
        for i, text in enumerate(texts):
            (folder / f"{i:03d}.txt").write_text(text, encoding="utf-8")
    return root


# The "Chinese Beijing" example of Manning, Raghavan & Schütze, Introduction to
# Information Retrieval (2008), ch. 13, table 13.1: four training documents, two classes.
CHINESE = {
    "china": ["Chinese Beijing Chinese", "Chinese Chinese Shanghai", "Chinese Macao"],
    "japan": ["Tokyo Japan Chinese"],
}
CHINESE_TEST = "Chinese Chinese Chinese Tokyo Japan"


@pytest.fixture
def chinese_corpus(tmp_path) -> Path:
    """The textbook corpus on disk (vocabulary of 6 words, classes china 3 docs, japan 1)."""
    return write_corpus(tmp_path / "chinese", CHINESE)


@pytest.fixture
def parallel_always(monkeypatch):
    """Use worker processes even for the small test corpora."""
    import nbclass.counting.counts

    monkeypatch.setattr(nbclass.counting.counts, "PARALLEL_MIN_BYTES", 0)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def sample_20news(dest: Path, groups: list[str], per_group: int, split: str = "train") -> Path:
    """Extract the first ``per_group`` documents of each group of a 20news split."""
    archive = SHARED_CORPORA / "20news-bydate.tar.gz"
    if not archive.exists():
        pytest.skip(f"{archive} is absent (the shared corpora live beside the repository)")
    taken = {g: 0 for g in groups}
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            parts = member.name.split("/")
            if len(parts) != 4 or parts[1] != split or parts[2] not in taken:
                continue
            if not member.isfile() or taken[parts[2]] >= per_group:
                continue
            taken[parts[2]] += 1
            target = dest / parts[2] / parts[3]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(member).read())
            if all(n >= per_group for n in taken.values()):
                break
    return dest


@pytest.fixture(scope="session")
def news_sample(tmp_path_factory) -> tuple[Path, Path]:
    """(train, test) folders: 4 newsgroups, 60 training and 30 test documents each."""
    groups = ["alt.atheism", "comp.graphics", "sci.space", "talk.religion.misc"]
    root = tmp_path_factory.mktemp("20news")
    train = sample_20news(root / "train", groups, 60, "train")
    test = sample_20news(root / "test", groups, 30, "test")
    return train, test


def nbclass_command() -> list[str]:
    """The real console entry point, run as a subprocess with this interpreter."""
    return [sys.executable, "-m", "nbclass"]


def expected_tally(texts, labels, settings) -> dict:
    """{(word, class): (D, T)} the plain way, from the regex tokenizer's tokens of each
    text (bytes are ASCII text), for comparing with a run counter's tally."""
    from collections import Counter

    from nbclass.text.tokenizer import make_tokenizer

    tokenize = make_tokenizer(settings)
    out = {}
    for text, c in zip(texts, labels):
        text = text.decode("ascii") if isinstance(text, bytes) else text
        for word, n in Counter(tokenize(text)).items():
            d, t = out.get((word, c), (0, 0))
            out[word, c] = (d + 1, t + n)
    return out


def tally_of(runs_tally, n_classes: int) -> dict:
    """{(word, class): (D, T)} of a :class:`nbclass.text.runs.RunTally`, its words checked
    sorted and distinct."""
    import numpy as np

    words, lengths, rows, docs, tokens = runs_tally.packed()
    assert words == sorted(set(words)) and len(words) == runs_tally.n_words
    classes = np.repeat(np.arange(n_classes), lengths)
    return {
        (words[j], int(c)): (int(d), int(t))
        for j, c, d, t in zip(rows.tolist(), classes, docs.tolist(), tokens.tolist())
    }


# `python -c RUN_COUNTER_OFF ARGS...` runs nbclass ARGS with the run counter switched off:
# every document is counted by the regex tokenizer, the reference the fast paths must equal.
RUN_COUNTER_OFF = (
    "import sys, nbclass.text.vectorizer as v; "
    "v.TextCounter.runs = property(lambda self: None); "
    "from nbclass.__main__ import main; sys.argv = ['nbclass'] + sys.argv[1:]; main()"
)
