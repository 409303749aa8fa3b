"""Reading only the sections a one-document prediction needs (fileformat.read_sections).

The quick path reads the prefix, the header and the count sections, each checked, and
skips the rest (a ledger can be most of the file). Every byte it uses is checked: a
damaged byte there is refused with exactly :func:`fileformat.parse`'s message; damage in
a skipped section or in padding is left to the full loader (the trade-off the README's
model-file section states).
"""

from __future__ import annotations

import json

import pytest
from conftest import DEMO_CORPUS

from nbclass.corpus import list_corpus
from nbclass.errors import ModelFileError
from nbclass.fileformat import (
    ALIGN,
    MODEL_SECTIONS,
    OPTIONAL_SECTIONS,
    PREFIX,
    parse,
    read_sections,
)
from nbclass.model import fit
from nbclass.modelfile import dumps


@pytest.fixture(scope="module")
def ledger_model() -> bytes:
    return dumps(fit(list_corpus(str(DEMO_CORPUS)), ledger=True))


def _used_spans(data: bytes) -> list[tuple[int, int]]:
    """Byte ranges read_sections reads: prefix, header, and the required sections."""
    header, _ = parse(data, "m", MODEL_SECTIONS, OPTIONAL_SECTIONS)
    _, _, header_length, *_ = PREFIX.unpack_from(data)
    spans = [(0, PREFIX.size + header_length)]
    start = header["sections_start"]
    for entry in header["sections"]:
        if entry["name"] in MODEL_SECTIONS:
            spans.append((start + entry["offset"], start + entry["offset"] + entry["length"]))
    return spans


def _as_lists(sections: dict) -> dict:
    return {name: view.tolist() for name, view in sections.items() if name in MODEL_SECTIONS}


def test_same_header_and_sections_as_the_full_parse(ledger_model, tmp_path):
    path = tmp_path / "m.nbc"
    path.write_bytes(ledger_model)
    header, sections = read_sections(str(path), MODEL_SECTIONS, OPTIONAL_SECTIONS)
    full_header, full_sections = parse(ledger_model, str(path), MODEL_SECTIONS, OPTIONAL_SECTIONS)
    assert header == full_header
    assert set(sections) == set(MODEL_SECTIONS)  # the ledger is not read
    assert _as_lists(sections) == _as_lists(full_sections)
    assert {"ledger_word", "ledger_digest"} <= {e["name"] for e in header["sections"]}


def test_every_damaged_byte_it_reads_gets_the_full_parse_message(ledger_model, tmp_path):
    """Flip bytes all over the file: used bytes are refused exactly as parse refuses them;
    bytes in the ledger or padding are not read, and the counts come back unchanged."""
    path = tmp_path / "m.nbc"
    spans = _used_spans(ledger_model)
    expected = _as_lists(parse(ledger_model, "m", MODEL_SECTIONS, OPTIONAL_SECTIONS)[1])
    refused = skipped = 0
    for position in range(0, len(ledger_model), 7):
        damaged = bytearray(ledger_model)
        damaged[position] ^= 0x41
        path.write_bytes(bytes(damaged))
        with pytest.raises(ModelFileError) as full:
            parse(bytes(damaged), str(path), MODEL_SECTIONS, OPTIONAL_SECTIONS)
        if any(a <= position < b for a, b in spans):
            with pytest.raises(ModelFileError) as quick:
                read_sections(str(path), MODEL_SECTIONS, OPTIONAL_SECTIONS)
            assert str(quick.value) == str(full.value)
            refused += 1
        else:
            _, sections = read_sections(str(path), MODEL_SECTIONS, OPTIONAL_SECTIONS)
            assert _as_lists(sections) == expected
            skipped += 1
    assert refused > 100 and skipped > 100  # both kinds of byte were tried


@pytest.mark.parametrize("cut", [0, 3, PREFIX.size, PREFIX.size + 10, -ALIGN, -1])
def test_a_truncated_file_gets_the_full_parse_message(ledger_model, tmp_path, cut):
    path = tmp_path / "m.nbc"
    data = ledger_model[:cut]
    path.write_bytes(data)
    with pytest.raises(ModelFileError) as full:
        parse(data, str(path), MODEL_SECTIONS, OPTIONAL_SECTIONS)
    with pytest.raises(ModelFileError) as quick:
        read_sections(str(path), MODEL_SECTIONS, OPTIONAL_SECTIONS)
    assert str(quick.value) == str(full.value)


def test_a_missing_file_or_a_folder_gets_the_usual_message(tmp_path):
    with pytest.raises(ModelFileError, match="does not exist: create one with 'nbclass fit'"):
        read_sections(str(tmp_path / "none.nbc"), MODEL_SECTIONS)
    with pytest.raises(ModelFileError, match="is a folder"):
        read_sections(str(tmp_path), MODEL_SECTIONS)


def test_a_section_table_that_lies_falls_back_to_the_full_parse(ledger_model, tmp_path):
    """A header whose table points outside the file (CRC recomputed) is refused by parse."""
    import struct
    import zlib

    magic, version, length, _crc, size, reserved = PREFIX.unpack_from(ledger_model)
    header = json.loads(ledger_model[PREFIX.size : PREFIX.size + length])
    header["sections"][0]["length"] = -8
    header["sections"][0]["shape"] = [-1]
    text = json.dumps(header, ensure_ascii=True, sort_keys=True).encode()
    text += b" " * (length - len(text))
    assert len(text) == length
    data = struct.pack("<8sIIIQI", magic, version, length, zlib.crc32(text), size, reserved)
    data += text + ledger_model[PREFIX.size + length :]
    path = tmp_path / "m.nbc"
    path.write_bytes(data)
    with pytest.raises(ModelFileError) as full:
        parse(data, str(path), MODEL_SECTIONS, OPTIONAL_SECTIONS)
    with pytest.raises(ModelFileError) as quick:
        read_sections(str(path), MODEL_SECTIONS, OPTIONAL_SECTIONS)
    assert str(quick.value) == str(full.value)
