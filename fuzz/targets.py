"""Fuzz targets: the model loaders, forged model headers, the corpus and table readers.

Each target takes bytes and must either succeed or raise the error nbclass reports to
users (:class:`nbclass.errors.ModelFileError` for a model, :class:`NbclassError` for input):
any other exception, a hang or a crash is a bug. They run under atheris (``make fuzz``,
coverage-guided, see ``fuzz/run.py``) and under hypothesis (``tests/test_fuzz_targets.py``,
on the seeds, the crashes found so far and random bytes).

A file whose bytes were mutated almost never passes the CRC-32 checks, so the model target
also tries each input with its checksums recomputed (:func:`repaired`): mutations then
reach the checks of the header, the section table, the counts and the ledger.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
import zlib

from nbclass.errors import ModelFileError, NbclassError
from nbclass.modelfile import tablefile
from nbclass.modelfile import textfile as modelfile
from nbclass.modelfile.fileformat import (
    MAGIC,
    MODEL_SECTIONS,
    OPTIONAL_SECTIONS,
    PREFIX,
    pack,
    parse,
)
from nbclass.modelfile.quick import QuickModel
from nbclass.models.learning import count_lines
from nbclass.text.tokenizer import TokenizerSettings

# In memory where there is a tmpfs: the targets write a file per input.
_SHM = "/dev/shm" if os.path.isdir("/dev/shm") else None
_FOLDER = tempfile.mkdtemp(prefix="nbclass-fuzz-", dir=_SHM)
atexit.register(shutil.rmtree, _FOLDER, True)
_MODEL = os.path.join(_FOLDER, "input.nbc")
_LINES = os.path.join(_FOLDER, "input.tsv")
_TABLE = os.path.join(_FOLDER, "input.table")


def repaired(data: bytes) -> bytes | None:
    """``data`` with its size, header CRC and section CRCs made right (None if no header)."""
    if len(data) < PREFIX.size or not data.startswith(MAGIC):
        return None
    _magic, version, length, _crc, _size, reserved = PREFIX.unpack_from(data)
    text = data[PREFIX.size : PREFIX.size + length]
    try:
        header = json.loads(text)
        start = int(header["sections_start"])
        for entry in header["sections"]:
            begin = start + int(entry["offset"])
            entry["crc32"] = zlib.crc32(data[begin : begin + int(entry["length"])])
    except Exception:  # not a header we can repair: the raw bytes are tried anyway
        return None
    fixed = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("ascii")
    if json.dumps(header, sort_keys=True).encode("ascii") == text.rstrip(b" "):
        fixed = text.rstrip(b" ")  # as nbclass writes it: keep the layout
    if len(fixed) > length:
        return None
    fixed = fixed.ljust(length, b" ")
    prefix = PREFIX.pack(MAGIC, version, length, zlib.crc32(fixed), len(data), reserved)
    return prefix + fixed + data[PREFIX.size + length :]


def _quick(data: bytes) -> None:
    with open(_MODEL, "wb") as handle:
        handle.write(data)
    try:
        model = QuickModel(_MODEL)
    except ModelFileError:
        return
    if model.can_score(model.defaults):
        try:
            model.joint_log_likelihood("refund my invoice, the api is down", model.defaults)
        except ModelFileError:
            pass


def model_loader(data: bytes) -> None:
    """Every loader on ``data`` and on ``repaired(data)``; a model that loads is written,
    read and written again to the same bytes."""
    for candidate in (data, repaired(data)):
        if candidate is None:
            continue
        for loads, dumps in ((modelfile.loads, modelfile.dumps),
                             (tablefile.loads, tablefile.dumps)):  # fmt: skip
            try:
                model = loads(candidate, "fuzz.nbc")
            except ModelFileError:
                continue
            # Written again, it reads back as itself (unknown header fields, ignored on
            # reading, are not kept: the bytes may differ from the input's).
            written = dumps(model)
            assert dumps(loads(written, "again.nbc")) == written, "write-read-write differs"
        _quick(candidate)


def corpus_reader(data: bytes) -> None:
    """``fit --lines`` of ``data`` (read from a file, in batches, with a ledger)."""
    from nbclass.reading.corpus import iter_documents

    with open(_LINES, "wb") as handle:
        handle.write(data)
    from nbclass.reading.policy import DEFAULT_POLICY

    documents = list(iter_documents([_LINES], lines=True))
    if DEFAULT_POLICY.is_binary(data):  # a NUL byte near the start: skipped whole
        assert documents == [] and list(iter_documents([_LINES])) == []
        return
    assert len(documents) == data.count(b"\n") + (not data.endswith(b"\n") and bool(data))
    assert list(iter_documents([_LINES])) == [(_LINES, data.decode("utf-8", "replace"))]
    for tokenizer in (TokenizerSettings(), TokenizerSettings(ngram_range=(1, 2))):
        try:
            counted = count_lines(iter(documents), tokenizer, True)
        except NbclassError:
            continue
        assert counted.counts.problems() == []
        assert counted.ledger.n_documents == counted.counts.n_docs


_BASE: list = []  # the model whose header model_header edits, fitted once


def _base_model() -> tuple[dict, list]:
    """The header and section table of a model of the demo corpus (nbclass's defaults)."""
    if not _BASE:
        from click.testing import CliRunner

        from nbclass.cli.app import cli

        path = os.path.join(_FOLDER, "base.nbc")
        demo = os.path.join(os.path.dirname(os.path.dirname(__file__)), "corpora", "demo")
        result = CliRunner().invoke(cli, ["fit", demo, "-o", path, "-q"])
        assert result.exit_code == 0, result.output
        with open(path, "rb") as handle:
            data = handle.read()
        header, sections = parse(data, path, MODEL_SECTIONS, OPTIONAL_SECTIONS)
        table = [
            (e["name"], e["dtype"], e["shape"][0], sections[e["name"]].tobytes())
            for e in header["sections"]
        ]
        _BASE.append((header, table))
    header, table = _BASE[0]
    return json.loads(json.dumps(header)), table


def model_header(data: bytes) -> None:
    """A valid model whose JSON header was changed by ``data`` (a JSON object: each key
    replaces the header's field, or updates it when both are objects), with every
    checksum right: only the checks of the header's content stand between it and use.

    Both loaders must answer with a :class:`ModelFileError` or a model, within the
    target's time limit (a forged token pattern or n-gram range must not hang them), and
    what the one-document loader refuses the full loader refuses too.
    """
    try:
        edit = json.loads(data)
    except (ValueError, RecursionError):
        return
    if not isinstance(edit, dict):
        return
    header, table = _base_model()
    for key, value in edit.items():
        if isinstance(value, dict) and isinstance(header.get(key), dict):
            header[key].update(value)
        else:
            header[key] = value
    try:
        forged = pack(header, table)
    except (TypeError, ValueError, RecursionError):  # not JSON-serialisable as nbclass writes
        return
    with open(_MODEL, "wb") as handle:
        handle.write(forged)
    quick_refused = full_refused = False
    try:
        quick = QuickModel(_MODEL)
    except ModelFileError:
        quick_refused = True
    try:
        modelfile.load(_MODEL)
    except ModelFileError:
        full_refused = True
    assert full_refused or not quick_refused, "the one-document path refuses what loads"
    if not quick_refused and quick.can_score(quick.defaults):
        try:
            quick.joint_log_likelihood("a" * 64 + " refund my invoice", quick.defaults)
        except ModelFileError:
            pass


def table_reader(data: bytes) -> None:
    """A table file of ``data`` read as CSV, TSV and JSON lines, and its lines as read.

    Reading raises nothing but :class:`NbclassError`; the lines, joined, are the text of
    the file (UTF-8 with replacement, a leading byte order mark dropped).
    """
    import io

    from nbclass.reading.limits import bounded_lines
    from nbclass.reading.table import iter_rows

    text = data.decode("utf-8", "replace")
    if data.startswith(b"\xef\xbb\xbf"):
        text = data[3:].decode("utf-8", "replace")
    assert "".join(bounded_lines(io.BytesIO(data), "fuzz")) == text
    with open(_TABLE, "wb") as handle:
        handle.write(data)
    for fmt in ("csv", "tsv", "jsonl"):
        try:
            _header, rows = iter_rows(_TABLE, fmt, 1 << 20)
            for _ in rows:
                pass
        except NbclassError:
            continue


TARGETS = {
    "model_loader": model_loader,
    "corpus_reader": corpus_reader,
    "model_header": model_header,
    "table_reader": table_reader,
}
