"""Reading a regular file in one read of its size plus one byte, and the size estimate
of a long list of files: the same answers as reading on to the end and stat-ing all."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbclass.reading.corpus import PathList
from nbclass.reading.policy import (
    HAS_BYTES_SAMPLE,
    ReadLog,
    ReadPolicy,
    _read_file,
    has_bytes,
    read_document,
)


@pytest.mark.parametrize("stale_size", [0, 1, 50, 99, 100, 101, 4096])
def test_a_file_whose_size_changed_since_fstat_is_read_whole(tmp_path, stale_size):
    """The size fstat gave may be stale (the file grew or shrank since): the bytes read
    are the file's, all of them, whatever that size said."""
    path = tmp_path / "doc.txt"
    data = bytes(range(1, 101))  # 100 bytes, no NUL
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert _read_file(str(path), fd, stale_size, ReadPolicy(), ReadLog()) == data
    finally:
        os.close(fd)


def test_a_file_grown_past_the_limit_since_fstat_is_too_large(tmp_path):
    path = tmp_path / "doc.txt"
    path.write_bytes(b"x" * 20)
    fd = os.open(path, os.O_RDONLY)
    log = ReadLog()
    try:
        policy = ReadPolicy(max_bytes=10, on_error="skip")
        assert _read_file(str(path), fd, 5, policy, log) is None
    finally:
        os.close(fd)
    assert [(s.reason, s.detail) for s in log.skipped] == [("too large", "over 10")]


@pytest.mark.parametrize("size", [0, 1, 9, 10, 11])
def test_sizes_around_the_limit(tmp_path, size):
    """A file of exactly ``max_bytes`` is read; one byte more is too large."""
    path = tmp_path / "doc.txt"
    path.write_bytes(b"y" * size)
    log = ReadLog()
    got = read_document(str(path), ReadPolicy(max_bytes=10, on_error="skip"), log)
    assert got == (b"y" * size if size <= 10 else None)
    assert len(log.skipped) == (size > 10)


def test_a_binary_file_read_in_one_go_is_skipped(tmp_path):
    path = tmp_path / "doc.bin"
    path.write_bytes(b"text\x00more")
    log = ReadLog()
    assert read_document(str(path), ReadPolicy(), log) is None
    assert [s.reason for s in log.skipped] == ["binary"]
    assert read_document(str(path), ReadPolicy(binary=True), ReadLog()) == b"text\x00more"


def test_a_long_list_is_sized_from_an_even_sample(tmp_path):
    """1,000 files of 10 bytes: 10,000 bytes together, which the sample of
    ``HAS_BYTES_SAMPLE`` files tells exactly; a generator is stat-ed file by file."""
    paths = []
    for i in range(1000):
        path = tmp_path / f"{i:04d}.txt"
        path.write_bytes(b"0123456789")
        paths.append(str(path))
    assert HAS_BYTES_SAMPLE < len(paths)
    assert has_bytes(paths, 10_000) and not has_bytes(paths, 10_001)
    assert has_bytes(iter(paths), 10_000) and not has_bytes(iter(paths), 10_001)
    missing = [str(tmp_path / "gone.txt")] * 1000  # nothing readable: nothing counted
    assert not has_bytes(missing, 1)


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(st.lists(st.text(alphabet="ab/é日\udce9\udcff.x", min_size=1, max_size=8),
                      max_size=6), max_size=4)  # fmt: skip
)
def test_a_path_list_holds_the_paths_given(batches):
    """Paths added in batches (ASCII, UTF-8, undecodable bytes as surrogate escapes) come
    back as given, by index, slice and iteration; the bytes are os.fsencode's."""
    paths = PathList()
    for batch in batches:
        paths.extend(iter(batch) if len(batch) % 2 else batch)
    flat = [path for batch in batches for path in batch]
    assert list(paths) == flat and len(paths) == len(flat)
    assert [paths[i] for i in range(len(flat))] == flat and paths[1:-1] == flat[1:-1]
    assert bytes(paths._data) == b"".join(os.fsencode(p) + b"\x00" for p in flat)


def _kinds_of_files(folder):
    """Files of every kind a listing may meet, in order, and the paths listed."""
    import stat as stat_module

    from nbclass.reading.policy import READ_AT_ONCE

    folder.mkdir()
    made = {
        "empty": b"",
        "small": "мир ab".encode(),
        "binary": b"text\x00more",
        "nul-late": b"a" * 9000 + b"\x00",  # past the binary probe: text
        "below": b"b" * (READ_AT_ONCE - 1),
        "at": b"c" * READ_AT_ONCE,
        "above": b"d" * (READ_AT_ONCE + 1),
        "large": b"e" * (3 * READ_AT_ONCE + 5),
    }
    for name, data in made.items():
        (folder / name).write_bytes(data)
    os.mkfifo(folder / "fifo")  # put in a file's place after the listing
    (folder / "folder").mkdir()
    os.symlink(folder / "small", folder / "link")
    os.symlink("/dev/null", folder / "device")
    names = [*made, "fifo", "folder", "link", "device", "vanished"]
    assert stat_module.S_ISFIFO(os.stat(folder / "fifo").st_mode)
    return [str(folder / name) for name in names]


@pytest.mark.parametrize(
    "policy",
    [ReadPolicy(on_error="skip"), ReadPolicy(on_error="skip", max_bytes=70_000),
     ReadPolicy(on_error="skip", max_bytes=10), ReadPolicy(on_error="skip", binary=True),
     ReadPolicy(on_error="skip", encoding="utf-16")],
)  # fmt: skip
def test_reading_listed_files_at_once_gives_what_reading_each_gives(tmp_path, policy):
    """Every kind of file (empty, binary, around the one-read size and the limit, a FIFO,
    a folder, links to a file and to a device, one gone since the listing): the same
    bytes, the same skips with the same reasons, in the same order."""
    from nbclass.reading.policy import read_documents

    paths = _kinds_of_files(tmp_path / "docs")
    each_log, many_log = ReadLog(), ReadLog()
    each = [(i, read_document(p, policy, each_log)) for i, p in enumerate(paths)]
    each = [(i, data) for i, data in each if data is not None]
    many = list(read_documents(paths, policy, many_log))
    assert many == each
    assert many_log.skipped == each_log.skipped and len(each_log.skipped) >= 4


def test_reading_listed_files_at_once_fails_as_reading_each(tmp_path):
    """Under --on-error fail, the first file that cannot be read stops both ways with
    the same error, after the same documents."""
    from nbclass.errors import NbclassError
    from nbclass.reading.policy import read_documents

    paths = _kinds_of_files(tmp_path / "docs")
    policy = ReadPolicy(max_bytes=100_000)
    got = []
    with pytest.raises(NbclassError) as many:
        for i, _ in read_documents(paths, policy, ReadLog()):
            got.append(i)
    with pytest.raises(NbclassError) as each:
        for path in paths:
            read_document(path, policy, ReadLog())
    assert str(many.value) == str(each.value) and "large" in str(many.value)
    assert got == [0, 1, 3, 4, 5, 6]  # the binary file is skipped, not an error
