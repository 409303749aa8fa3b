"""The reading policy's pieces: escaping names, counted decoding, bounded line splitting."""

from __future__ import annotations

import codecs
import io
import json
import os

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from nbclass.errors import NbclassError, UsageError
from nbclass.names import escape
from nbclass.reading.policy import (
    ReadLog,
    ReadPolicy,
    format_size,
    iter_lines,
    read_document,
)


def test_escape_by_hand():
    undecodable = b"caf\xe9".decode("utf-8", "surrogateescape")
    assert escape("plain name.txt") == "plain name.txt"
    assert escape("été") == "été"
    assert escape("a\\b\tc\nd\re") == "a\\\\b\\tc\\nd\\re"
    assert escape("bell\x07 del\x7f c1\x85") == "bell\\x07 del\\x7f c1\\u0085"
    assert escape(undecodable) == "caf\\xe9"
    assert escape("\ud800") == "\\ud800"
    assert escape("a\u2028b\u2029c") == "a\\u2028b\\u2029c"


@given(st.binary(max_size=40))
def test_an_escaped_file_name_is_one_printable_utf8_line(raw):
    name = os.fsdecode(raw)
    shown = escape(name)
    shown.encode("utf-8")  # never a lone surrogate
    assert "\t" not in shown and len(shown.splitlines()) <= 1  # no line break of any kind
    assert all(ch.isprintable() or ch == " " or not ch.isascii() for ch in shown)
    assert json.loads(json.dumps(shown, ensure_ascii=False)) == shown


@given(st.binary(max_size=12), st.binary(max_size=12))
def test_distinct_file_names_stay_distinct_when_escaped(a, b):
    assume(a != b)
    assert escape(os.fsdecode(a)) != escape(os.fsdecode(b))


def test_a_c1_control_and_a_raw_byte_of_the_same_value_differ():
    assert escape("\x85") != escape(b"\x85".decode("utf-8", "surrogateescape"))


@given(st.binary(max_size=60))
def test_counted_decoding_is_replace_decoding_and_counts_each_replacement(data):
    log = ReadLog()
    text = log.decode(data, "utf-8")
    assert text == data.decode("utf-8", "replace")
    original = data.decode("utf-8", "surrogateescape")
    assert log.replaced == text.count("\ufffd") - original.count("\ufffd")
    assert log.replaced_docs == (1 if log.replaced else 0)


def test_counted_decoding_by_hand():
    log = ReadLog()
    assert log.decode(b"a\xffb\xfe\xfd", "utf-8") == "a\ufffdb\ufffd\ufffd"
    assert log.decode(b"ok", "utf-8") == "ok"
    assert log.decode(b"caf\xe9", "utf-8") == "caf\ufffd"
    assert (log.replaced, log.replaced_docs) == (4, 2)


class Trickle(io.RawIOBase):
    """A real stream that hands out at most ``step`` bytes per read, like a slow pipe."""

    def __init__(self, data: bytes, step: int):
        self.data, self.step, self.at = data, step, 0

    def readable(self):
        return True

    def read1(self, n=-1):
        n = self.step if n < 0 else min(n, self.step)
        chunk = self.data[self.at : self.at + n]
        self.at += len(chunk)
        return chunk

    read = read1


@given(
    st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\0", b"")), max_size=8),
    st.integers(1, 7),
    st.booleans(),
)
@example([b"\xef\xbb\xbf"], 1, False)  # a file of a byte-order mark alone: one empty line
@example([b"a", b"\xef\xbb\xbfb"], 2, True)  # a mark at the start of a later line
def test_lines_are_split_as_str_splitlines_on_newline_whatever_the_chunks(parts, step, final):
    data = b"\n".join(parts) + (b"\n" if final and parts else b"")
    expected = data.split(b"\n")
    if data.endswith(b"\n") or not data:
        expected = expected[:-1]
    expected = [p[:-1] if p.endswith(b"\r") else p for p in expected]
    # a byte-order mark that starts a line is dropped (files joined by cat hold several)
    expected = [p.removeprefix(codecs.BOM_UTF8) for p in expected]
    log = ReadLog()
    got = list(iter_lines("f", Trickle(data, step), ReadPolicy(), log))
    assert got == [
        (f"f:{i}", line.decode("utf-8", "replace")) for i, line in enumerate(expected, 1)
    ]


def test_a_long_line_is_skipped_without_losing_the_next_whatever_the_chunks():
    data = b"short\n" + b"x" * 50 + b"\nafter\n0123456789\n" + b"y" * 11
    for step in (1, 3, 7, 64):
        log = ReadLog()
        policy = ReadPolicy(max_bytes=10, on_error="skip")
        got = list(iter_lines("f", Trickle(data, step), policy, log))
        assert got == [("f:1", "short"), ("f:3", "after"), ("f:4", "0123456789")]
        assert [(s.source, s.reason) for s in log.skipped] == [
            ("f:2", "too large"), ("f:5", "too large")
        ]  # fmt: skip


def test_read_document_reads_at_most_max_bytes_plus_one(tmp_path):
    path = tmp_path / "doc"
    path.write_bytes(b"a" * 100)
    assert read_document(str(path), ReadPolicy(max_bytes=100), ReadLog()) == b"a" * 100
    with pytest.raises(NbclassError, match="is larger than --max-bytes 99: "):
        read_document(str(path), ReadPolicy(max_bytes=99), ReadLog())
    with open("/dev/zero", "rb") as endless:  # an endless stream stops at the limit
        log = ReadLog()
        policy = ReadPolicy(max_bytes=1024, binary=True, on_error="skip")
        assert read_document("zero", policy, log, handle=endless) is None
    assert [(s.source, s.reason, s.detail) for s in log.skipped] == [
        ("zero", "too large", "over 1K")
    ]


@pytest.mark.parametrize("stated", [0, 5, 3_000_000])
@pytest.mark.parametrize("limit", [2_999_999, 3_000_000, 4_000_000])
def test_a_regular_file_is_read_whole_whatever_size_fstat_said(tmp_path, stated, limit):
    """A file's size may change between fstat and the reads: a smaller size (it grew)
    still reads to the end, in chunks, and stops one byte past the limit."""
    from nbclass.reading.policy import _read_file

    data = bytes(range(1, 256)) * 11_765 + b"end"  # 3,000,000 bytes, no NUL
    path = tmp_path / "doc"
    path.write_bytes(data)
    log = ReadLog()
    policy = ReadPolicy(max_bytes=limit, on_error="skip")
    fd = os.open(path, os.O_RDONLY)
    try:
        got = _read_file(str(path), fd, stated, policy, log)
    finally:
        os.close(fd)
    if limit >= len(data):
        assert got == data and not log.skipped
    else:
        assert got is None and [s.reason for s in log.skipped] == ["too large"]


def test_binary_and_empty_regular_files(tmp_path):
    (tmp_path / "bin").write_bytes(b"text\x00more")
    (tmp_path / "empty").write_bytes(b"")
    log = ReadLog()
    policy = ReadPolicy(on_error="skip")
    assert read_document(str(tmp_path / "bin"), policy, log) is None
    assert read_document(str(tmp_path / "empty"), policy, log) == b""
    binary = ReadPolicy(binary=True)
    assert read_document(str(tmp_path / "bin"), binary, ReadLog()) == b"text\x00more"
    assert [(s.reason) for s in log.skipped] == ["binary"]


def test_policies_refuse_what_cannot_work():
    for bad in ({"encoding": "nope"}, {"encoding": "rot13"}, {"max_bytes": 0},
                {"on_error": "ignore"}):  # fmt: skip
        with pytest.raises(UsageError):
            ReadPolicy(**bad)
    assert ReadPolicy(encoding="utf-16").detects_binary is False
    assert ReadPolicy(binary=True).detects_binary is False
    assert ReadPolicy().detects_binary is True
    assert [format_size(n) for n in (1, 1000, 1024, 16 * 2**20, 3 * 2**30)] == [
        "1", "1000", "1K", "16M", "3G"
    ]  # fmt: skip
