"""Safety of the model file: round trips, atomic writes, and refusing every bad file.

A model file must never execute code when loaded (no pickle anywhere), must name a
truncated, corrupted or foreign file as such with a :class:`ModelFileError` (never another
exception, never a silently different model), and is written atomically.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from nbclass.counting.counts import Counts, as_table
from nbclass.errors import ModelFileError
from nbclass.modelfile.fileformat import FORMAT_VERSION, MAGIC, PREFIX
from nbclass.modelfile.textfile import (
    dumps,
    load,
    load_with_header,
    loads,
    loads_with_header,
    save,
)
from nbclass.models.estimators import EstimatorSettings
from nbclass.models.model import Model, VocabularyFilter
from nbclass.text.tokenizer import TokenizerSettings

PACKAGE = REPO / "nbclass"


# --- models to write ---------------------------------------------------------------------


def make_counts(classes, vocabulary, class_count, doc_count, token_count) -> Counts:
    return Counts(
        classes=tuple(classes),
        vocabulary=tuple(vocabulary),
        class_count=np.array(class_count, dtype=np.int64),
        doc_count=np.array(doc_count, dtype=np.int64).reshape(len(vocabulary), len(classes)),
        token_count=np.array(token_count, dtype=np.int64).reshape(len(vocabulary), len(classes)),
    )


def chinese_counts() -> Counts:
    """The textbook corpus (IIR ch. 13): N_c, D_jc, T_jc written out by hand."""
    return make_counts(
        ["china", "japan"],
        ["beijing", "chinese", "japan", "macao", "shanghai", "tokyo"],
        [3, 1],
        [[1, 0], [3, 1], [0, 1], [1, 0], [1, 0], [0, 1]],
        [[1, 0], [5, 1], [0, 1], [1, 0], [1, 0], [0, 1]],
    )


def tiny_model() -> Model:
    return Model(chinese_counts(), TokenizerSettings())


def rich_model() -> Model:
    """Non-default settings everywhere, non-ASCII words and counts needing 16 and 32 bits."""
    counts = make_counts(
        ["ham", "spam", "ünïcode"],
        ["café", "naïve", "zzz", "東京"],
        [70_000, 300, 2],
        [[70_000, 0, 1], [5, 300, 0], [1, 1, 1], [0, 0, 2]],
        [[5_000_000_000, 0, 1], [5, 70_000, 0], [1, 1, 1], [0, 0, 9]],
    )
    return Model(
        counts,
        TokenizerSettings(
            lowercase=False,
            token_pattern=r"(?u)\b\w+\b",
            ngram_range=(1, 3),
            stop_words=("a", "the"),
            stop_words_source="mine.txt",
        ),
        VocabularyFilter(min_df=2, max_features=3),
        EstimatorSettings(model="bernoulli", estimator="map", alpha=2.5, beta=(2.0, 3.0)),
        selection={
            "criterion": "mutual-information",
            "k": 4,
            "estimator": "mle",
            "alpha": 1.0,
            "beta": [1.0, 1.0],
            "from_vocabulary": 9,
        },
    )


def assert_same_model(a: Model, b: Model) -> None:
    assert a.counts.equals(b.counts)
    assert a.tokenizer == b.tokenizer
    assert a.vocabulary_filter == b.vocabulary_filter
    assert a.defaults == b.defaults
    assert a.selection == b.selection


def layout(data: bytes) -> dict:
    """Byte ranges of a model file, from its own prefix and header."""
    _magic, _version, header_length, _crc, size, _reserved = PREFIX.unpack_from(data)
    header = json.loads(data[PREFIX.size : PREFIX.size + header_length])
    start = header["sections_start"]
    assert PREFIX.size + header_length == start and size == len(data)
    text_end = PREFIX.size + len(data[PREFIX.size : start].rstrip(b" "))
    sections = set()
    for entry in header["sections"]:
        first = start + entry["offset"]
        sections.update(range(first, first + entry["length"]))
    padding = set(range(start, len(data))) - sections
    return {
        "magic": range(0, 8),
        "version": range(8, 12),
        "header_length": range(12, 16),
        "header_crc": range(16, 20),
        "size": range(20, 28),
        "reserved": range(28, 32),
        "header_text": range(PREFIX.size, text_end),
        "header_padding": range(text_end, start),
        "sections": sorted(sections),
        "section_padding": sorted(padding),
    }


def flipped(data: bytes, position: int, bit: int = 0x01) -> bytes:
    damaged = bytearray(data)
    damaged[position] ^= bit
    return bytes(damaged)


def with_header(data: bytes, edit) -> bytes:
    """The file with its JSON header edited by ``edit(header)`` and every check redone.

    This is not corruption but a crafted (or foreign) file: only validation can refuse it.
    """
    _magic, version, header_length, _crc, _size, _reserved = PREFIX.unpack_from(data)
    header = json.loads(data[PREFIX.size : PREFIX.size + header_length])
    start = header["sections_start"]
    body = data[start:]
    edited = edit(header)
    edited = header if edited is None else edited
    text = json.dumps(edited).encode()
    if PREFIX.size + len(text) > start and isinstance(edited, dict):
        # Make room: sections are placed relative to sections_start, so moving it is safe.
        start += 64 * (1 + (PREFIX.size + len(text) - start) // 64 + 1)
        if "sections_start" in edited:
            edited["sections_start"] = start
        text = json.dumps(edited).encode()
    if PREFIX.size + len(text) > start:
        raise AssertionError("edited header does not fit")
    header_bytes = text.ljust(start - PREFIX.size, b" ")
    prefix = PREFIX.pack(
        MAGIC, version, len(header_bytes), zlib.crc32(header_bytes), start + len(body), 0
    )
    return prefix + header_bytes + body


def raw_file(header_text: bytes) -> bytes:
    """A file with a valid prefix and header checksum around arbitrary header bytes."""
    header_bytes = header_text + b" " * ((-(PREFIX.size + len(header_text))) % 64)
    size = PREFIX.size + len(header_bytes)
    crc = zlib.crc32(header_bytes)
    return PREFIX.pack(MAGIC, FORMAT_VERSION, len(header_bytes), crc, size, 0) + header_bytes


@pytest.fixture(scope="module")
def tiny() -> bytes:
    return dumps(tiny_model())


# --- round trip --------------------------------------------------------------------------


@pytest.mark.parametrize("make", [tiny_model, rich_model], ids=["tiny", "rich"])
def test_round_trip(make):
    model = make()
    data = dumps(model)
    assert_same_model(loads(data), model)
    assert dumps(loads(data)) == data  # a fixed point: nothing is lost or reordered
    assert dumps(make()) == data  # deterministic


def test_file_layout(tiny):
    magic, version, header_length, header_crc, size, reserved = PREFIX.unpack_from(tiny)
    assert tiny.startswith(b"\x89NBC\r\n\x1a\n") and magic == MAGIC
    assert (version, size, reserved) == (1, len(tiny), 0)
    assert len(tiny) % 64 == 0
    header_bytes = tiny[PREFIX.size : PREFIX.size + header_length]
    assert zlib.crc32(header_bytes) == header_crc
    _, header = loads_with_header(tiny)
    assert header["format"] == "nbclass-model" and header["version"] == 1
    assert [s["name"] for s in header["sections"]] == [
        "class_count",
        "vocabulary",
        "vocabulary_offsets",
        "word_ptr",
        "class_index",
        "doc_count",
        "token_count",
        "used",
        "class_tokens",
        "histogram_ptr",
        "histogram_value",
        "histogram_count",
    ]
    assert all(s["dtype"] == "|u1" for s in header["sections"])  # the smallest type
    assert all((header["sections_start"] + s["offset"]) % 64 == 0 for s in header["sections"])


def test_round_trip_of_the_wide_integer_types():
    data = dumps(rich_model())
    _, header = loads_with_header(data)
    dtypes = {s["name"]: s["dtype"] for s in header["sections"]}
    assert dtypes["class_count"] == "<u4"  # 70,000
    assert dtypes["token_count"] == "<u8"  # 5,000,000,000
    assert as_table(loads(data).counts.token_count)[0, 0] == 5_000_000_000


@st.composite
def consistent_counts(draw) -> Counts:
    C = draw(st.integers(1, 4))
    classes = sorted(draw(st.sets(st.text(min_size=1, max_size=5), min_size=C, max_size=C)))
    letter = st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))
    word = st.text(letter, max_size=6)
    vocabulary = sorted(draw(st.sets(word, max_size=8)))
    V = len(vocabulary)
    N_c = np.array(draw(st.lists(st.integers(0, 2**33), min_size=C, max_size=C)), dtype=np.int64)
    D = np.zeros((V, C), dtype=np.int64)
    T = np.zeros((V, C), dtype=np.int64)
    for j in range(V):
        for c in range(C):
            D[j, c] = draw(st.integers(0, int(N_c[c])))
            T[j, c] = D[j, c] + (draw(st.integers(0, 2**40)) if D[j, c] else 0)
    return Counts(tuple(classes), tuple(vocabulary), N_c, D, T)


@settings(max_examples=60, deadline=None, database=None)
@given(consistent_counts())
def test_round_trip_property(counts):
    assert counts.problems() == []
    model = Model(counts, TokenizerSettings())
    assert loads(dumps(model)).counts.equals(counts)


def _two_by_two(N, D, T) -> Counts:
    return Counts(("a", "b"), ("x", "y"), np.array(N), np.array(D), np.array(T))


@pytest.mark.parametrize(
    ("N", "D", "T", "expected"),
    [
        ([2, 2], [[1, 0], [2, 1]], [[3, 0], [2, 5]], []),
        ([2, 2], [[1, 0], [0, 1]], [[3, 4], [0, 5]], ["no documents"]),
        ([2, 2], [[-1, 0], [0, 1]], [[3, 4], [0, 5]], ["negative", "no documents"]),
        ([2, 2], [[1, 0], [0, 1]], [[-3, 0], [0, 5]], ["negative", "more documents than"]),
        ([2, 2], [[3, 0], [0, 1]], [[3, 4], [0, 5]], ["of a class than", "no documents"]),
        ([2, 2], [[2, 0], [0, 1]], [[1, 4], [0, 5]], ["more documents than", "no documents"]),
        ([-1, 2], [[0, 0], [0, 1]], [[0, 0], [0, 5]], ["negative", "of a class than"]),
        ([2**62, 2**62], [[1, 0], [2, 1]], [[3, 0], [2, 5]], ["sum past 2^63 - 1"]),
        ([2, 2], [[1, 1], [1, 1]], [[2**62] * 2, [2**62] * 2], ["sum past 2^63 - 1"]),
        ([2, 2], [[1, 1], [1, 0]], [[2**62 - 1] * 2, [1, 0]], []),  # Σ T = 2^63 - 1
        ([2, 2], [[1, 1], [1, 0]], [[2**62 - 1, 2**62], [1, 0]], ["sum past 2^63 - 1"]),
        ([2, 2], [[1.0, 0], [2, 1]], [[3.0, 0], [2, np.nan]], []),  # (floats: not summed)
    ],
)
def test_each_impossible_count_is_named(N, D, T, expected):
    """Every check of Counts.problems, alone and with others (the "tokens but no
    documents" check counts nonzero cells once the counts are nonnegative and D <= T, and
    compares cell by cell otherwise)."""
    problems = _two_by_two(N, D, T).problems()
    assert len(problems) == len(expected)
    for problem, words in zip(problems, expected):
        assert words in problem


@settings(max_examples=200, deadline=None, database=None)
@given(
    st.integers(1, 3).flatmap(
        lambda C: st.tuples(
            st.lists(st.integers(-1, 3), min_size=C, max_size=C),
            st.lists(st.lists(st.integers(-1, 4), min_size=2 * C, max_size=2 * C), max_size=9),
        )
    ),
    st.sampled_from([1, 2, 5, 2**18]),
)
def test_impossible_counts_are_found_in_any_block_of_rows(counts, block):
    """The cell checks run a block of rows at a time: any block size finds what the
    definitions find on the whole arrays (a negative count, D_jc > N_c, D_jc > T_jc,
    T_jc > 0 with D_jc = 0), wherever in the rows it is."""
    import nbclass.counting.counts as counts_module

    N, rows = counts
    C = len(N)
    D = np.array([row[:C] for row in rows], dtype=np.int64).reshape(len(rows), C)
    T = np.array([row[C:] for row in rows], dtype=np.int64).reshape(len(rows), C)
    classes = tuple("abc"[:C])
    vocabulary = tuple(f"w{j}" for j in range(len(rows)))
    expected = [
        D.size and (D.min() < 0 or T.min() < 0) or min(N) < 0,
        (D > np.array(N)).any(),
        (D > T).any(),
        ((D == 0) & (T != 0)).any(),
    ]
    names = ["negative", "of a class than", "more documents than", "no documents"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(counts_module, "BLOCK_CELLS", block)
        found = Counts(classes, vocabulary, np.array(N), D, T).problems()
    wanted = [name for name, bad in zip(names, expected) if bad]
    assert len(found) == len(wanted)
    assert all(name in problem for name, problem in zip(wanted, found))


def _flags(N, D, T) -> list[bool]:
    """The four cell checks by their definitions, on the whole arrays."""
    return [
        bool(D.size and (D.min() < 0 or T.min() < 0) or min(N) < 0),
        bool((D > np.array(N)).any()),
        bool((D > T).any()),
        bool(((D == 0) & (T != 0)).any()),
    ]


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.integers(1, 4).flatmap(
        lambda C: st.tuples(
            st.lists(st.integers(0, 4), min_size=C, max_size=C),
            st.lists(st.lists(st.integers(0, 3), min_size=2 * C, max_size=2 * C), max_size=9),
        )
    ),
    st.sampled_from([None, "negative D", "negative T", "T alone", "D alone", "D > T"]),
    st.integers(0, 10**6),
    st.sampled_from([1, 3, 2**18]),
)
def test_consistent_counts_checked_at_their_nonzero_pairs_find_what_the_cells_do(
    counts, change, where, block
):
    """Counts whose T_jc > 0 exactly where D_jc > 0 are checked at those pairs only; one
    changed cell (a negative count, tokens or documents alone, more documents than
    tokens) sends the check to every cell: either way it finds what the definitions
    find, and the histograms of D_jc (never negative) from the pairs are those from
    every cell."""
    import nbclass.counting.counts as counts_module
    from nbclass.counting.counts import doc_count_histograms

    N, rows = counts
    C = len(N)
    D = np.array([row[:C] for row in rows], dtype=np.int64).reshape(len(rows), C)
    T = D + np.array([row[C:] for row in rows], dtype=np.int64).reshape(len(rows), C) * (D > 0)
    if change is not None and D.size:
        j, c = divmod(where % D.size, C)
        if change == "negative D":
            D[j, c] = -1
        elif change == "negative T":
            T[j, c] = -1
        elif change == "T alone":
            D[j, c], T[j, c] = 0, 2
        elif change == "D alone":
            D[j, c], T[j, c] = 1, 0
        else:
            D[j, c], T[j, c] = 3, 2
    counts_ = Counts(tuple("abcd"[:C]), tuple(f"w{j}" for j in range(len(rows))),
                     np.array(N), D, T)  # fmt: skip
    names = ["negative", "of a class than", "more documents than", "no documents"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(counts_module, "BLOCK_CELLS", block)
        patch.setattr(counts_module, "BLOCK_PAIRS", block)
        found = counts_.problems()
        if not D.size or D.min() >= 0:  # (histograms are of counts, never negative)
            assert counts_.doc_histograms == doc_count_histograms(D)
        # CSR counts (as a loaded model's): the same tests on their pairs, in blocks
        paired = Counts(counts_.classes, counts_.vocabulary, np.array(N),
                        sp.csr_matrix(D), sp.csr_matrix(T)).problems()  # fmt: skip
        assert paired == found
    wanted = [name for name, bad in zip(names, _flags(N, D, T)) if bad]
    assert len(found) == len(wanted)
    assert all(name in problem for name, problem in zip(wanted, found))


# --- atomic save -------------------------------------------------------------------------


def test_save_writes_exactly_the_bytes_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "model.nbc"
    n = save(tiny_model(), str(path))
    assert os.listdir(tmp_path) == ["model.nbc"]
    assert path.read_bytes() == dumps(tiny_model()) and n == path.stat().st_size
    assert_same_model(load(str(path)), tiny_model())


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077, 0o002])
def test_save_file_mode_respects_the_umask(tmp_path, umask):
    previous = os.umask(umask)
    try:
        save(tiny_model(), str(tmp_path / "m.nbc"))
    finally:
        os.umask(previous)
    assert (tmp_path / "m.nbc").stat().st_mode & 0o777 == 0o666 & ~umask


def test_save_replaces_the_file_so_a_reader_keeps_the_old_one(tmp_path):
    path = tmp_path / "model.nbc"
    save(tiny_model(), str(path))
    old = path.read_bytes()
    with open(path, "rb") as reader:
        inode = os.fstat(reader.fileno()).st_ino
        save(rich_model(), str(path))
        assert reader.read() == old  # the open file was not rewritten in place
    assert path.stat().st_ino != inode
    assert path.read_bytes() == dumps(rich_model())
    assert os.listdir(tmp_path) == ["model.nbc"]


def test_a_failed_write_keeps_the_old_model_and_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "model.nbc"
    save(tiny_model(), str(path))
    old = path.read_bytes()

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(ModelFileError) as info:
        save(rich_model(), str(path))
    assert str(info.value) == (
        f"no space left on device while saving model {str(path)!r}; the previous model is "
        "unchanged: free some space and run the command again"
    )
    monkeypatch.undo()
    assert path.read_bytes() == old
    assert os.listdir(tmp_path) == ["model.nbc"]


def test_an_interrupted_save_keeps_the_old_model_and_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "model.nbc"
    save(tiny_model(), str(path))
    old = path.read_bytes()

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save(rich_model(), str(path))
    monkeypatch.undo()
    assert path.read_bytes() == old
    assert os.listdir(tmp_path) == ["model.nbc"]


def test_save_into_a_missing_folder(tmp_path):
    with pytest.raises(ModelFileError, match="cannot write model"):
        save(tiny_model(), str(tmp_path / "missing" / "m.nbc"))


def test_load_errors_name_the_path(tmp_path):
    missing = tmp_path / "missing.nbc"
    with pytest.raises(ModelFileError, match="does not exist: create one with 'nbclass fit'"):
        load(str(missing))
    with pytest.raises(ModelFileError, match="is a folder, not a model file"):
        load(str(tmp_path))
    cut = tmp_path / "cut.nbc"
    whole = dumps(tiny_model())
    cut.write_bytes(whole[:500])
    with pytest.raises(ModelFileError) as info:
        load(str(cut))
    assert str(info.value) == (
        f"{str(cut)!r} is truncated (500 of {len(whole)} bytes): fit the model again"
    )


# --- pickles are never loaded --------------------------------------------------------------


class Payload:
    """Unpickling this runs ``action(argument)``: the classic malicious model file."""

    def __init__(self, action, argument):
        self.action, self.argument = action, argument

    def __reduce__(self):
        return self.action, (self.argument,)


def payload(kind: str, marker: Path, protocol: int) -> bytes:
    if kind == "os.system":
        return pickle.dumps(Payload(os.system, f"mkdir {marker}"), protocol=protocol)
    return pickle.dumps(Payload(os.mkdir, str(marker)), protocol=protocol)


@pytest.mark.parametrize("kind", ["os.system", "os.mkdir"])
def test_the_payload_really_runs_when_unpickled(tmp_path, kind):
    """Control: without this, the tests below could pass with a harmless payload."""
    marker = tmp_path / "pwned"
    pickle.loads(payload(kind, marker, pickle.HIGHEST_PROTOCOL))
    assert marker.exists()


@pytest.mark.parametrize("protocol", range(2, pickle.HIGHEST_PROTOCOL + 1))
@pytest.mark.parametrize("kind", ["os.system", "os.mkdir"])
def test_a_pickle_is_refused_and_never_run(tmp_path, kind, protocol):
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.pkl"
    evil.write_bytes(payload(kind, marker, protocol))
    with pytest.raises(ModelFileError) as info:
        load(str(evil))
    assert "pickle" in str(info.value)
    assert str(info.value) == (
        f"{str(evil)!r} is a Python pickle, not an nbclass model; nbclass never loads pickles"
    )
    assert not marker.exists()


@pytest.mark.parametrize("protocol", [0, 1])
def test_an_old_protocol_pickle_is_refused_and_never_run(tmp_path, protocol):
    marker = tmp_path / "pwned"
    with pytest.raises(ModelFileError, match="not an nbclass model"):
        loads(payload("os.mkdir", marker, protocol))
    assert not marker.exists()


def test_a_pickle_behind_the_magic_number_is_refused_and_never_run(tmp_path, tiny):
    marker = tmp_path / "pwned"
    body = payload("os.mkdir", marker, pickle.HIGHEST_PROTOCOL)
    _magic, version, _h, _crc, _size, _r = PREFIX.unpack_from(tiny)
    # the pickle as the "header", with a correct length, checksum and size
    data = PREFIX.pack(MAGIC, version, len(body), zlib.crc32(body), PREFIX.size + len(body), 0)
    with pytest.raises(ModelFileError, match="not a valid nbclass model"):
        loads(data + body)
    assert not marker.exists()


def test_a_pickle_is_refused_by_the_cli(tmp_path, runner):
    from nbclass.cli.app import cli

    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.pkl"
    evil.write_bytes(payload("os.system", marker, pickle.HIGHEST_PROTOCOL))
    doc = tmp_path / "doc.txt"
    doc.write_text("Chinese Tokyo", encoding="utf-8")
    result = runner.invoke(cli, ["predict", "-m", str(evil), str(doc)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"Error: {str(evil)!r} is a Python pickle, not an nbclass model; "
        "nbclass never loads pickles\n"
    )
    assert not marker.exists()


def test_the_package_source_never_unpickles():
    """No code path can unpickle: no pickle module, no np.load of objects, no joblib.load.

    (joblib's Parallel for multiprocessing is fine; loading a file with it is not.)
    """
    sources = sorted(PACKAGE.rglob("*.py"))
    assert PACKAGE / "modelfile" / "textfile.py" in sources
    forbidden = re.compile(
        r"^\s*import\s+(pickle|cPickle|_pickle|dill|cloudpickle|marshal|shelve)\b"
        r"|^\s*from\s+(pickle|cPickle|_pickle|dill|cloudpickle|marshal|shelve)\s+import"
        r"|^\s*from\s+joblib\s+import\s+.*\bload\b"
        r"|allow_pickle\s*=\s*True|joblib\.load|pickle\.loads?\(|np\.load\(|numpy\.load\(",
        re.MULTILINE,
    )
    found = [
        f"{path.name}: {m.group(0).strip()}"
        for path in sources
        for m in forbidden.finditer(path.read_text(encoding="utf-8"))
    ]
    assert found == []
    for path in sources:
        text = path.read_text(encoding="utf-8")
        for needle in ("import pickle", "allow_pickle=True", "joblib.load"):
            assert needle not in text, (path.name, needle)


# --- truncation ----------------------------------------------------------------------------


def test_every_truncation_is_named(tiny):
    assert len(tiny) % 64 == 0
    for n in range(1, len(tiny)):
        with pytest.raises(ModelFileError) as info:
            loads(tiny[:n])
        assert "truncated" in str(info.value), (n, str(info.value))
        assert f"({n} " in str(info.value)
    with pytest.raises(ModelFileError, match="not an nbclass model"):
        loads(b"")


def test_truncations_of_a_larger_model(tmp_path):
    data = dumps(rich_model())
    offsets = sorted(set(np.linspace(1, len(data) - 1, 200).astype(int).tolist()))
    for n in offsets:
        with pytest.raises(ModelFileError, match="truncated"):
            loads(data[:n])


def test_bytes_after_the_end_are_corruption(tiny):
    with pytest.raises(ModelFileError, match=r"is corrupted \(3 bytes after its end\)"):
        loads(tiny + b"\x00\x00\n")


# --- corruption ----------------------------------------------------------------------------

EXPECTED_BY_REGION = {
    "magic": "is not an nbclass model file",
    "version": "has model format version",
    "header_length": "is corrupted (header checksum mismatch)",
    "header_crc": "is corrupted (header checksum mismatch)",
    "size": ("is truncated", "bytes after its end"),
    "header_text": "is corrupted (header checksum mismatch)",
    "header_padding": "is corrupted (header checksum mismatch)",
    "sections": "is corrupted (section ",
}


def test_a_flipped_bit_never_gives_another_exception_or_a_different_model(tiny):
    original = tiny_model()
    for position in range(len(tiny)):
        for bit in (0x01, 0x80):
            try:
                model = loads(flipped(tiny, position, bit))
            except ModelFileError:
                continue
            # accepted: only allowed when nothing that carries meaning changed
            assert_same_model(model, original)


@pytest.mark.parametrize("region", sorted(EXPECTED_BY_REGION))
def test_a_flipped_bit_is_detected_and_named(tiny, region):
    positions = layout(tiny)[region]
    assert len(positions) > 0
    expected = EXPECTED_BY_REGION[region]
    expected = (expected,) if isinstance(expected, str) else expected
    for position in positions:
        with pytest.raises(ModelFileError) as info:
            loads(flipped(tiny, position))
        assert any(e in str(info.value) for e in expected), (position, str(info.value))


def test_the_header_padding_is_covered_by_the_header_checksum(tiny):
    padding = layout(tiny)["header_padding"]
    assert len(padding) >= 1 and all(tiny[i : i + 1] == b" " for i in padding)
    for position in padding:
        for replacement in (b"!", b"\t", b"\x00"):
            damaged = tiny[:position] + replacement + tiny[position + 1 :]
            with pytest.raises(ModelFileError, match=r"header checksum mismatch"):
                loads(damaged)


@pytest.mark.parametrize("region", ["reserved", "section_padding"])
def test_a_flipped_bit_in_the_unused_bytes_is_detected(tiny, region):
    positions = layout(tiny)[region]
    assert len(positions) > 0
    for position in positions:
        with pytest.raises(ModelFileError, match="corrupted"):
            loads(flipped(tiny, position))


def test_random_damage_to_a_larger_model(tmp_path):
    data = dumps(rich_model())
    original = rich_model()
    rng = np.random.default_rng(20240601)
    for position in rng.choice(len(data), size=200, replace=False).tolist():
        damaged = bytearray(data)
        damaged[position] = (damaged[position] + int(rng.integers(1, 256))) % 256
        try:
            model = loads(bytes(damaged))
        except ModelFileError:
            continue
        assert_same_model(model, original)


# --- other versions and other files --------------------------------------------------------


@pytest.mark.parametrize("version", [0, 2, 7, 2**32 - 1])
def test_another_format_version_is_refused_and_named(tiny, version):
    data = bytearray(tiny)
    struct.pack_into("<I", data, 8, version)
    with pytest.raises(ModelFileError) as info:
        loads(bytes(data))
    assert str(info.value) == (
        f"'<bytes>' has model format version {version}; this nbclass 0.1.0 reads version 1: "
        "fit the model again with this version"
    )


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: b"NOTMAGIC" + d[8:],
        lambda d: d.replace(b"\r\n", b"\n"),  # went through a text-mode transfer
        lambda d: bytes(b & 0x7F for b in d),  # went through a 7-bit channel
        lambda d: b"PK\x03\x04" + d,  # a zip (joblib, npz) is not a model
        lambda d: b"\x93NUMPY" + d,  # nor is a .npy file
    ],
    ids=["wrong-magic", "crlf-to-lf", "7-bit", "zip", "npy"],
)
def test_a_file_without_the_magic_number_is_refused(tiny, damage):
    with pytest.raises(ModelFileError, match="is not an nbclass model file"):
        loads(damage(tiny))


# --- impossible counts ---------------------------------------------------------------------

IMPOSSIBLE = {
    "doc_count > class_count": (["a", "b"], ["x"], [1, 1], [[2, 0]], [[2, 0]]),
    "doc_count > token_count": (["a", "b"], ["x"], [2, 1], [[2, 0]], [[1, 0]]),
    "unsorted vocabulary": (["a", "b"], ["y", "x"], [2, 3], [[1, 1], [1, 1]], [[1, 1], [1, 1]]),
    "duplicate vocabulary": (["a", "b"], ["x", "x"], [2, 3], [[1, 1], [1, 1]], [[1, 1], [1, 1]]),
    "unsorted classes": (["b", "a"], ["x"], [2, 3], [[1, 1]], [[1, 1]]),
    "duplicate classes": (["a", "a"], ["x"], [2, 3], [[1, 1]], [[1, 1]]),
    "word holding NUL": (["a", "b"], ["x\x00y"], [2, 3], [[1, 1]], [[1, 1]]),
    "tokens but no documents": (["a", "b"], ["x"], [2, 1], [[0, 0]], [[0, 3]]),
    "negative class count": (["a", "b"], ["x"], [-1, 3], [[0, 1]], [[0, 1]]),
    "negative doc count": (["a", "b"], ["x"], [2, 3], [[-1, 1]], [[0, 1]]),
    "negative token count": (["a", "b"], ["x"], [2, 3], [[1, 1]], [[-1, 1]]),
}


def impossible_model(case: str) -> Model:
    classes, vocabulary, N_c, D, T = IMPOSSIBLE[case]
    counts = Counts(
        tuple(classes),
        tuple(vocabulary),
        np.array(N_c, dtype=np.int64),
        np.array(D, dtype=np.int64),
        np.array(T, dtype=np.int64),
    )
    return Model(counts, TokenizerSettings())


@pytest.mark.parametrize("case", list(IMPOSSIBLE))
def test_impossible_counts_never_make_a_loadable_file(case):
    model = impossible_model(case)
    assert model.counts.problems() or "\x00" in "".join(model.counts.vocabulary)
    try:
        data = dumps(model)
    except (ValueError, ModelFileError):
        return  # refused when writing: fine
    with pytest.raises(ModelFileError, match="is not a valid nbclass model"):
        loads(data)


def test_impossible_counts_are_refused_when_writing():
    with pytest.raises(ValueError, match="more documents of a class than the class has"):
        dumps(impossible_model("doc_count > class_count"))


def test_impossible_counts_are_named_at_load(monkeypatch):
    # Write the file as a buggy or hostile writer would, skipping the writer's own check.
    monkeypatch.setattr(Counts, "problems", lambda self: [])
    data = dumps(impossible_model("doc_count > class_count"))
    monkeypatch.undo()
    with pytest.raises(ModelFileError) as info:
        loads(data)
    assert str(info.value) == (
        "'<bytes>' is not a valid nbclass model (a word is in more documents of a class "
        "than the class has)"
    )


def test_an_edited_count_with_a_recomputed_checksum_is_refused(tiny):
    """An adversary, not a cosmic ray: every checksum is right, the counts are not."""
    _magic, _v, header_length, _crc, _size, _r = PREFIX.unpack_from(tiny)
    header = json.loads(tiny[PREFIX.size : PREFIX.size + header_length])
    start = header["sections_start"]
    entry = next(s for s in header["sections"] if s["name"] == "doc_count")
    data = bytearray(tiny)
    data[start + entry["offset"]] = 200  # D_jc = 200 > N_c
    section = bytes(data[start + entry["offset"] : start + entry["offset"] + entry["length"]])

    def fix_checksum(header):
        for s in header["sections"]:
            if s["name"] == "doc_count":
                s["crc32"] = zlib.crc32(section)

    forged = with_header(bytes(data), fix_checksum)
    with pytest.raises(ModelFileError, match="more documents of a class than the class has"):
        loads(forged)


# --- crafted headers: checksums right, content wrong -----------------------------------------


def set_path(path: str, value):
    def edit(header):
        *parents, last = path.split(".")
        target = header
        for key in parents:
            target = target[int(key)] if key.isdigit() else target[key]
        target[int(last) if last.isdigit() else last] = value

    return edit


CRAFTED = {
    "object dtype": set_path("sections.0.dtype", "|O"),
    "float dtype": set_path("sections.0.dtype", "<f8"),
    "section outside the file": set_path("sections.1.offset", 10**9),
    "negative offset": set_path("sections.1.offset", -64),
    "wrong n_features": set_path("n_features", 5),
    "no sections": set_path("sections", []),
    "sections not a list": set_path("sections", 3),
    "unknown section": set_path("sections.0.name", "__reduce__"),
    "classes missing": lambda h: h.pop("classes") and None,
    "fewer classes": set_path("classes", ["china"]),
    "other format name": set_path("format", "pickle"),
    "min_df not a number": set_path("vocabulary_filter.min_df", "x"),
}
CRAFTED_SETTINGS = {
    "alpha NaN": set_path("defaults.alpha", float("nan")),
    "unknown event model": set_path("defaults.model", "evil"),
    "invalid token pattern": set_path("tokenizer.token_pattern", "("),
    "ngram range 0,0": set_path("tokenizer.ngram_range", [0, 0]),
    "min_df 0": set_path("vocabulary_filter.min_df", 0),
    "selection not an object": set_path("selection", "x"),
}


@pytest.mark.parametrize(
    "case",
    [*CRAFTED, *CRAFTED_SETTINGS],
)
def test_a_crafted_header_is_refused(tiny, case):
    edit = CRAFTED.get(case) or CRAFTED_SETTINGS[case]
    with pytest.raises(ModelFileError, match="is not a valid nbclass model"):
        loads(with_header(tiny, edit))


@pytest.mark.parametrize(
    "header_text",
    [
        pytest.param(b"{}", id="empty-object"),
        pytest.param(b"not json", id="not-json"),
        pytest.param(b"\xff\xfe{}", id="not-utf8"),
        pytest.param(b'{"format": "nbclass-model", "version": 1}', id="no-sections"),
        pytest.param(b"[1, 2]", id="a-list"),
        pytest.param(b"null", id="null"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, id="deeply-nested"),
    ],
)
def test_a_header_that_is_not_a_model_header_is_refused(header_text):
    with pytest.raises(ModelFileError, match="is not a valid nbclass model"):
        loads(raw_file(header_text))


def test_the_crafting_helper_alone_changes_nothing(tiny):
    """with_header() with no edit gives a file that loads as the same model."""
    assert with_header(tiny, lambda h: None) == tiny


def test_load_with_header_from_a_file(tmp_path):
    path = tmp_path / "m.nbc"
    save(tiny_model(), str(path))
    model, header = load_with_header(str(path))
    assert header["classes"] == ["china", "japan"] and header["n_features"] == 6
    assert_same_model(model, tiny_model())


def test_a_one_class_model_whose_complement_total_rounds_below_zero_loads():
    """One class: the complement's total S − S_c is 0, and the floating-point difference
    came out as −8.9e-16, which the loader refused (found by test_round_trip_property)."""
    words = ("", "0", "00", "000", "0000", "1", "2", "3")
    counts = [[1]] * 7 + [[2]]
    counts = Counts(("0",), words, np.array([2]), np.array(counts), np.array(counts))
    model = Model(counts, TokenizerSettings())
    assert model.prepared.class_totals == (0.0,)
    assert loads(dumps(model)).counts.equals(counts)


# --- the header's JSON, read without the json package ---------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and the infinities too, written as json.dumps writes them
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


def json_outcome(read, data: bytes):
    """``("value", repr)`` or ``("error", type, message)`` of ``read(data)``."""
    try:
        return "value", repr(read(data))
    except (ValueError, RecursionError) as exc:
        return "error", type(exc), str(exc)


@settings(max_examples=400)
@given(
    value=st.dictionaries(st.text(max_size=5), json_values, max_size=5),
    ascii=st.booleans(),
    tail=st.sampled_from(["", "   ", " \t\r\n", " x", "}", "\x00", " {}"]),
    cut=st.integers(0, 40),
    edit=st.sampled_from(["", "\x01", "\\", '"', ",", ":", "\x00", "é"]),
    at=st.integers(0, 400),
)
def test_the_header_json_is_read_as_json_loads_reads_it(value, ascii, tail, cut, edit, at):
    """The header reader gives json.loads's value, or its very error, for JSON objects as
    pack writes them and for the same texts cut short, followed by other bytes, or with a
    character put in anywhere (control characters, quotes, NUL, non-ASCII)."""
    from nbclass.modelfile.fileformat import _json_object

    text = json.dumps(value, ensure_ascii=ascii, sort_keys=True) + tail
    for variant in (text, text[: max(0, len(text) - cut)], text[:at] + edit + text[at:]):
        data = variant.encode("utf-8")
        assert json_outcome(_json_object, data) == json_outcome(json.loads, data)


def test_a_deeply_nested_header_is_the_recursion_error_of_json_loads():
    from nbclass.modelfile.fileformat import _json_object

    data = b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert json_outcome(_json_object, data) == json_outcome(json.loads, data)


@given(
    magic=st.binary(min_size=8, max_size=8),
    numbers=st.tuples(
        *[st.integers(0, 2**32 - 1)] * 3, st.integers(0, 2**64 - 1), st.integers(0, 2**32 - 1)
    ),
    tail=st.binary(max_size=8),
)
def test_the_prefix_is_the_struct_format_it_names(magic, numbers, tail):
    """fileformat.PREFIX packs and unpacks as struct's ``<8sIIIQI`` does."""
    layout = struct.Struct("<8sIIIQI")
    assert PREFIX.size == layout.size
    assert PREFIX.pack(magic, *numbers) == layout.pack(magic, *numbers)
    data = layout.pack(magic, *numbers) + tail
    assert PREFIX.unpack_from(data) == layout.unpack_from(data) == (magic, *numbers)
    assert PREFIX.unpack_from(memoryview(data)) == layout.unpack_from(data)


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(st.integers(0, 3), max_size=8),
    st.lists(st.integers(0, 4), max_size=30),
    st.sampled_from([1, 2, 3, 2**18]),
)
def test_pairs_out_of_order_are_refused_wherever_the_blocks_cut(lengths, classes, block):
    """The loader's check, a block of pairs at a time from the words' pointers, says
    what its definition says: the keys j C + c of the pairs strictly increase."""
    from nbclass.modelfile import textfile

    C = 5
    word_ptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    cols = np.resize(np.array(classes or [0], dtype=np.uint16), int(word_ptr[-1]))
    rows = np.repeat(np.arange(len(lengths)), lengths)
    expected = bool((np.diff(rows * C + cols.astype(np.int64)) > 0).all())
    ordered = np.concatenate([np.arange(n) for n in [0, *lengths]]).astype(np.uint16)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(textfile, "BLOCK_PAIRS", block)
        assert textfile._in_order(word_ptr, cols) == expected
        assert textfile._in_order(word_ptr, ordered)  # each word's classes in order
        for i in np.flatnonzero(np.diff(rows) == 0).tolist():  # two of a word swapped
            swapped = ordered.copy()
            swapped[[i, i + 1]] = swapped[[i + 1, i]]
            assert not textfile._in_order(word_ptr, swapped)


def test_counts_loaded_in_one_byte_are_summed_and_scored_as_the_counts_fitted():
    """A model whose every D_jc and T_jc is below 256 loads them as uint8 (the file's
    sections), while their sums are far above: a word's 637 tokens over the classes,
    each class's 80,000 or more (above 2^16 too). Summed as counted (int64), the
    loaded model's log-probabilities are the fitted model's bit for bit in every event
    model, with and without --prior-fit and the transforms; an update of the loaded
    model (its counts added to new ones past 255) writes a fresh fit's bytes."""
    import nbclass

    words = [f"w{i:03d}" for i in range(400)]
    texts, labels = [], []
    for label, k in zip("abc", (200, 254, 180)):
        texts += [" ".join(w for w in words for _ in range(k)), f"short text of {label} w001"]
        labels += [label, label]
    queries = ["w001 w002 w003 short", "text of nothing", " ".join(words[:50])]
    models = ("multinomial", "bernoulli", "complement", "dcm", "poisson")
    settings = [dict(model=m, prior_fit=p) for m in models for p in (False, True)]
    settings += [dict(model="complement", tf="log", idf=True, norm="both"), {}]
    for options in settings:
        fitted = nbclass.fit(texts, labels, **options)
        loaded = nbclass.Model.from_bytes(fitted.to_bytes())
        counts = loaded._model.counts
        assert counts.token_count.dtype == counts.doc_count.dtype == np.uint8
        assert counts.class_tokens.dtype == np.int64
        assert counts.class_tokens.tolist() == fitted._model.counts.class_tokens.tolist()
        assert counts.word_tokens.tolist() == fitted._model.counts.word_tokens.tolist()
        assert int(counts.word_tokens.max()) == 201 + 255 + 181  # w001's, in T_jc of 255 and less
        assert np.array_equal(loaded.predict_log_proba(queries), fitted.predict_log_proba(queries))
    more = [" ".join(w for w in words[:10] for _ in range(100))] * 3
    for options in ({"model": "multinomial"}, {}):
        loaded = nbclass.Model.from_bytes(nbclass.fit(texts, labels, **options).to_bytes())
        updated = loaded.update(more, ["a", "b", "a"])
        assert updated.to_bytes() == nbclass.fit(texts + more, labels + ["a", "b", "a"],
                                                 **options).to_bytes()  # fmt: skip
