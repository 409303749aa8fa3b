"""Every way a model file can be broken, on four small real models, through both loaders.

The four models are fitted by the command line on the demo corpora: a plain text model, one
with a ledger, one with feature hashing and a table model. Each is cut at every byte and has
bits flipped (every bit of the prefix and header, one bit of every byte of the body), and
is read by the full loader (:func:`nbclass.modelfile.textfile.loads`,
:func:`nbclass.modelfile.tablefile.loads`) and by the numpy-free one-document path
(:class:`nbclass.modelfile.quick.QuickModel`). Then the
crafted files: other versions, files that are not models, pickles and ``numpy.save``
object arrays in every section, counts that are negative, NaN or too large under correct
checksums. Every one is refused with one line that starts with the file's name and says
what is wrong; none is executed; none loads as a different model.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import REPO, nbclass_command
from test_modelfile import Payload

from nbclass.cli.app import cli
from nbclass.errors import ModelFileError
from nbclass.modelfile import fileformat, tablefile
from nbclass.modelfile import textfile as modelfile
from nbclass.modelfile.fileformat import (
    MAGIC,
    MODEL_SECTIONS,
    OPTIONAL_SECTIONS,
    PREFIX,
    pack,
    parse,
    section,
)
from nbclass.modelfile.quick import QuickModel

DEMO = REPO / "corpora" / "demo"
TABLE = REPO / "corpora" / "table-demo.csv"
FIT_ARGS = {
    "text": ["fit", str(DEMO)],
    "ledger": ["fit", str(DEMO), "--ledger"],
    "hashed": ["fit", str(DEMO), "--hash-features", "64"],
    "table": ["fit", "--table", str(TABLE), "--label", "team", "--column-types", "ticket=ignore"],
}
KINDS = list(FIT_ARGS)
# What a refusal may say; each message starts with the file's name (repr) and is one line.
PROBLEMS = (
    "is truncated (",
    "is corrupted (",
    "is empty",
    "is not an nbclass model file",
    "has model format version",
    "is not a valid nbclass",
    "is a Python pickle",
    "is a folder, not a model file",
    "is a table model",
    "is a text model",
)


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, tuple[Path, bytes]]:
    folder = tmp_path_factory.mktemp("models")
    found = {}
    for kind, args in FIT_ARGS.items():
        path = folder / f"{kind}.nbc"
        result = CliRunner().invoke(cli, [*args, "-o", str(path), "-q"])
        assert result.exit_code == 0, result.output
        found[kind] = (path, path.read_bytes())
    return found


def full_loader(kind: str):
    return tablefile.loads if kind == "table" else modelfile.loads


def assert_refusal(error: ModelFileError, path: str) -> str:
    message = str(error)
    assert message.startswith(f"{path!r} "), message
    assert "\n" not in message
    assert any(problem in message for problem in PROBLEMS), message
    return message


class InPlace:
    """One file on disk, damaged and repaired in place (faster than rewriting it)."""

    def __init__(self, path: Path, data: bytes):
        self.path, self.data = path, data
        path.write_bytes(data)
        self.fd = os.open(path, os.O_RDWR)

    def flipped(self, position: int, bit: int) -> str:
        os.pwrite(self.fd, bytes([self.data[position] ^ bit]), position)
        return str(self.path)

    def truncated(self, size: int) -> str:
        os.ftruncate(self.fd, size)
        return str(self.path)

    def restore(self) -> None:
        os.pwrite(self.fd, self.data, 0)

    def close(self) -> None:
        os.close(self.fd)


def quick_refuses(path: str) -> str:
    with pytest.raises(ModelFileError) as info:
        QuickModel(path)
    return assert_refusal(info.value, path)


# --- truncation at every byte --------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_every_truncation_is_refused_by_both_loaders(models, kind, tmp_path):
    _, data = models[kind]
    loads = full_loader(kind)
    for n in range(len(data)):
        with pytest.raises(ModelFileError) as info:
            loads(data[:n], "m.nbc")
        message = assert_refusal(info.value, "m.nbc")
        assert message == "'m.nbc' is empty (0 bytes), not an nbclass model file" if n == 0 else (
            f"is truncated ({n} " in message
        ), (n, message)
    # the one-document path reads the same bytes from a file: every 7th cut and the prefix
    damaged = InPlace(tmp_path / "m.nbc", data)
    for n in sorted({*range(0, 64), *range(64, len(data), 7)}):
        message = quick_refuses(damaged.truncated(n))
        assert "is empty" in message if n == 0 else f"is truncated ({n} " in message
        damaged.restore()
    damaged.close()


# --- bit flips ------------------------------------------------------------------------------


def flips(data: bytes):
    """(position, bit): every bit of the prefix and header, one bit of each body byte."""
    start = PREFIX.size + PREFIX.unpack_from(data)[2]
    for position in range(len(data)):
        bits = range(8) if position < start else [position % 8]
        for bit in bits:
            yield position, 1 << bit


@pytest.mark.parametrize("kind", KINDS)
def test_every_flipped_bit_is_refused_or_changes_nothing(models, kind, tmp_path):
    _, data = models[kind]
    loads = full_loader(kind)
    refused = 0
    for position, bit in flips(data):
        damaged = bytearray(data)
        damaged[position] ^= bit
        try:
            model = loads(bytes(damaged), "m.nbc")
        except ModelFileError as error:
            assert_refusal(error, "m.nbc")
            refused += 1
            continue
        # accepted: then it is the same model, byte for byte once written again
        dumps = tablefile.dumps if kind == "table" else modelfile.dumps
        assert dumps(model) == data, (position, bit)
    assert refused == sum(1 for _ in flips(data))  # CRC-32 catches every single-bit error


@pytest.mark.parametrize("kind", KINDS)
def test_flipped_bits_through_the_one_document_path(models, kind, tmp_path):
    _, data = models[kind]
    damaged = InPlace(tmp_path / "m.nbc", data)
    for position, bit in flips(data):
        if position >= 512 and position % 5:  # the body: every 5th byte (the parser is shared)
            continue
        quick_refuses(damaged.flipped(position, bit))
        damaged.restore()
    damaged.close()
    if kind != "table":
        QuickModel(str(damaged.path))  # restored: loads again


# --- other versions and files that are not models -------------------------------------------


def run(*args, input: bytes | None = b"refund my invoice") -> subprocess.CompletedProcess:
    """The real console entry point in a real process."""
    return subprocess.run(
        [*nbclass_command(), *map(str, args)], input=input, capture_output=True, timeout=60
    )


def invoke(*args, input: bytes | None = b"refund my invoice") -> subprocess.CompletedProcess:
    """The same command in this process (faster; the exit paths are the same click code)."""
    result = CliRunner().invoke(cli, list(map(str, args)), input=input)
    return subprocess.CompletedProcess(
        args, result.exit_code, result.stdout_bytes, result.stderr_bytes
    )


def one_error_line(result: subprocess.CompletedProcess, path) -> str:
    assert result.returncode == 1, result.stderr
    assert result.stdout == b""
    stderr = result.stderr.decode()
    assert stderr.startswith(f"Error: {str(path)!r} ") and stderr.count("\n") == 1, stderr
    assert "Traceback" not in stderr
    assert any(problem in stderr for problem in PROBLEMS), stderr
    return stderr


def not_models(tmp_path: Path) -> dict[str, Path]:
    files = {
        "empty": b"",
        "text": b"billing\trefund my invoice\n",
        "png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(17),
        "json": b'{"format": "nbclass-model", "version": 1}',
        "gzip": b"\x1f\x8b\x08\x00" + bytes(16),
        "magic only": MAGIC,
    }
    paths = {}
    for name, content in files.items():
        paths[name] = tmp_path / name.replace(" ", "-")
        paths[name].write_bytes(content)
    paths["folder"] = tmp_path / "a-folder"
    paths["folder"].mkdir()
    paths["/dev/null"] = Path("/dev/null")
    return paths


NOT_MODEL_MESSAGES = {
    "empty": "is empty (0 bytes), not an nbclass model file",
    "text": "is not an nbclass model file (no nbclass magic number)",
    "png": "is not an nbclass model file (no nbclass magic number)",
    "json": "is not an nbclass model file (no nbclass magic number)",
    "gzip": "is not an nbclass model file (no nbclass magic number)",
    "magic only": "is truncated (8 bytes): fit the model again",
    "folder": "is a folder, not a model file",
    "/dev/null": "is empty (0 bytes), not an nbclass model file",
}


@pytest.mark.parametrize("command", ["one document", "batch", "info"])
def test_files_that_are_not_models_are_one_error_line(tmp_path, command):
    doc = tmp_path / "doc.txt"
    doc.write_text("refund my invoice")
    for name, path in not_models(tmp_path).items():
        args = {
            "one document": ["predict", "-m", path],
            "batch": ["predict", "-m", path, doc, doc],
            "info": ["info", "-m", path],
        }[command]
        result = run(*args) if command == "one document" else invoke(*args)
        stderr = one_error_line(result, path)
        assert stderr == f"Error: {str(path)!r} {NOT_MODEL_MESSAGES[name]}\n", name


@pytest.mark.parametrize("version", [0, 2, 2**32 - 1])
@pytest.mark.parametrize("kind", ["ledger", "table"])
def test_another_format_version_through_the_command_line(models, tmp_path, kind, version):
    _, data = models[kind]
    damaged = bytearray(data)
    struct.pack_into("<I", damaged, 8, version)
    path = tmp_path / "v.nbc"
    path.write_bytes(bytes(damaged))
    args = ["predict", "-m", path] + (["--table", TABLE] if kind == "table" else [])
    stderr = one_error_line(run(*args), path)
    assert f"has model format version {version}; this nbclass" in stderr
    assert stderr.endswith(": fit the model again with this version\n")


# --- payloads in every section: never run ---------------------------------------------------


def sections_of(data: bytes, kind: str) -> tuple[dict, list[list]]:
    """The header and the [name, dtype, length, bytes] of each section, in file order."""
    if kind == "table":
        header, views = parse(data, "m", tablefile.TABLE_SECTIONS, kind="table")
    else:
        header, views = parse(data, "m", MODEL_SECTIONS, OPTIONAL_SECTIONS)
    table = [[e["name"], e["dtype"], e["shape"][0], bytes(views[e["name"]].cast("B"))]
             for e in header["sections"]]  # fmt: skip
    return header, table


def repack(header: dict, table: list[list]) -> bytes:
    """A file with every checksum, size and offset right around the given sections."""
    fields = {k: v for k, v in header.items() if k not in ("sections", "sections_start")}
    return pack(fields, [tuple(entry) for entry in table])


def object_array_payload(marker: Path) -> bytes:
    """What ``numpy.save`` writes for an object array holding a malicious object."""
    import io

    buffer = io.BytesIO()
    array = np.empty(1, dtype=object)
    array[0] = Payload(os.mkdir, str(marker))
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def pickle_payload(marker: Path) -> bytes:
    return pickle.dumps(Payload(os.mkdir, str(marker)), protocol=pickle.HIGHEST_PROTOCOL)


def test_the_object_array_payload_really_runs_when_loaded(tmp_path):
    """Control: np.load with allow_pickle runs it, so the refusals below mean something."""
    import io

    marker = tmp_path / "pwned"
    np.load(io.BytesIO(object_array_payload(marker)), allow_pickle=True)
    assert marker.exists()


def test_the_repacking_helper_alone_changes_nothing(models):
    for kind in KINDS:
        _, data = models[kind]
        assert repack(*sections_of(data, kind)) == data


@pytest.mark.parametrize("payload", [pickle_payload, object_array_payload])
@pytest.mark.parametrize("kind", ["ledger", "hashed", "table"])
def test_a_payload_in_any_section_is_refused_and_never_run(models, tmp_path, kind, payload):
    _, data = models[kind]
    header, table = sections_of(data, kind)
    marker = tmp_path / "pwned"
    body = payload(marker)
    path = tmp_path / "evil.nbc"
    for i, (name, dtype, _length, _bytes) in enumerate(table):
        for crafted_dtype, length in (("|u1", len(body)), (dtype, len(body))):
            if len(body) % int(crafted_dtype[-1]):
                continue  # the declared length must fit the type, or it is refused sooner
            edited = [list(entry) for entry in table]
            edited[i] = [name, crafted_dtype, length // int(crafted_dtype[-1]), body]
            evil = repack(header, edited)
            with pytest.raises(ModelFileError) as info:
                full_loader(kind)(evil, "evil.nbc")
            assert_refusal(info.value, "evil.nbc")
            path.write_bytes(evil)
            if kind != "table":
                try:
                    QuickModel(str(path))  # may open (it checks sizes, not contents) ...
                except ModelFileError as error:
                    assert_refusal(error, str(path))
            assert not marker.exists(), (name, crafted_dtype)
    result = run("predict", "-m", path)  # the last one, through the command line
    one_error_line(result, path)
    assert not marker.exists()


# --- counts that cannot be: negative, NaN, infinite, too large ------------------------------


def with_section(data: bytes, kind: str, name: str, dtype: str, values) -> bytes:
    header, table = sections_of(data, kind)
    encoded = np.asarray(values, dtype=np.dtype(dtype)).tobytes()
    for entry in table:
        if entry[0] == name:
            entry[1:] = [dtype, len(values), encoded]
    return repack(header, table)


def current(data: bytes, kind: str, name: str) -> list:
    header, table = sections_of(data, kind)
    entry = next(e for e in table if e[0] == name)
    return np.frombuffer(entry[3], dtype=np.dtype(entry[1])).tolist()


def negative(values: list) -> list:
    """The first value as the two's complement of −1: a negative count read as signed."""
    return [2**64 - 1, *values[1:]]


BAD_COUNTS = {
    # section, dtype, values from the model's own -> the crafted values
    "negative class count": ("class_count", "<u8", negative),
    "negative doc count": ("doc_count", "<u8", negative),
    "negative token count": ("token_count", "<u8", negative),
    "2^63 tokens": ("token_count", "<u8", lambda v: [2**63, *v[1:]]),
    "NaN counts": ("token_count", "<f8", lambda v: [math.nan] * len(v)),
    "infinite counts": ("doc_count", "<f8", lambda v: [math.inf] * len(v)),
    "signed counts": ("class_count", "<i8", lambda v: [-1, *v[1:]]),
    "negative class tokens": ("class_tokens", "<u8", negative),
}


@pytest.mark.parametrize("case", list(BAD_COUNTS))
@pytest.mark.parametrize("kind", ["text", "ledger"])
def test_impossible_counts_with_good_checksums_are_refused(models, tmp_path, kind, case):
    _, data = models[kind]
    name, dtype, change = BAD_COUNTS[case]
    crafted = with_section(data, kind, name, dtype, change(current(data, kind, name)))
    with pytest.raises(ModelFileError) as info:
        modelfile.loads(crafted, "bad.nbc")
    assert_refusal(info.value, "bad.nbc")
    path = tmp_path / "bad.nbc"
    path.write_bytes(crafted)
    if dtype in ("<f8", "<i8"):  # not an unsigned integer type: refused by the container
        quick_refuses(str(path))
    one_error_line(invoke("predict", "-m", path), path)  # one document, quick path
    one_error_line(invoke("info", "-m", path), path)


def wrapped_tokens(data: bytes) -> bytes:
    """``data`` with T_jc = 2^62 at four pairs of the first class among its used words, and
    its class_tokens section what an int64 sum gives for those counts: 4 x 2^62 wraps round
    to 0, so the stored T_c is the class's other tokens, and every count is below 2^63."""
    header, table = sections_of(data, "text")
    entries = {entry[0]: entry for entry in table}

    def values(name):
        return np.frombuffer(entries[name][3], dtype=np.dtype(entries[name][1])).astype(np.int64)

    ptr, used = values("word_ptr"), values("used").astype(np.uint8)
    words = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
    used = np.unpackbits(used, bitorder="little")[words] == 1
    pick = np.flatnonzero((values("class_index") == 0) & used)[:4]
    assert pick.size == 4
    tokens, class_tokens = values("token_count").astype(np.uint64), values("class_tokens")
    class_tokens[0] -= int(tokens[pick].sum())
    tokens[pick] = 2**62
    for name, new in (("token_count", tokens), ("class_tokens", class_tokens)):
        entries[name][1:] = ["<u8", new.size, new.astype("<u8").tobytes()]
    return repack(header, table)


SUMS_PAST_2_63 = {
    "class counts": lambda data: with_section(
        data, "text", "class_count", "<u8", [2**62] * len(current(data, "text", "class_count"))
    ),
    "token counts": wrapped_tokens,
}


@pytest.mark.parametrize("case", list(SUMS_PAST_2_63))
def test_counts_whose_sums_pass_2_63_are_refused_by_both_loaders(tmp_path, case):
    """Counts each below 2^63 whose sums are not (N = Σ N_c, or Σ T_jc, crafted so that
    T_c wrapped round in int64 is the class_tokens the file stores): every sum of them in
    int64 would wrap round, and the model loaded as one of 358 tokens in the first class,
    scored with them. Refused by the full loader and the one-document path alike."""
    path = tmp_path / "m.nbc"
    result = CliRunner().invoke(
        cli, ["fit", str(DEMO), "--model", "multinomial", "-o", str(path), "-q"]
    )
    assert result.exit_code == 0, result.output
    crafted = tmp_path / "bad.nbc"
    crafted.write_bytes(SUMS_PAST_2_63[case](path.read_bytes()))
    problem = "is not a valid nbclass model (count too large (the counts sum past 2^63 - 1))"
    with pytest.raises(ModelFileError) as info:
        modelfile.loads(crafted.read_bytes(), "bad.nbc")
    assert str(info.value) == f"'bad.nbc' {problem}"
    with pytest.raises(ModelFileError) as info:
        QuickModel(str(crafted))
    assert str(info.value) == f"{str(crafted)!r} {problem}"
    for args in (["predict", "-m", crafted], ["info", "-m", crafted]):
        assert one_error_line(invoke(*args), crafted) == f"Error: {str(crafted)!r} {problem}\n"


def wrapped_ledger(data: bytes) -> tuple[bytes, bytes]:
    """``data`` (a model with a ledger) whose ledger's four entries of one (word, class)
    cell hold 2^62, 2^62, 2^62 and 2^62 + their old sum: each below 2^63, their sum in
    int64 the old one (4 x 2^62 wraps round to 0), so the counts are the ledger's sum as
    an int64 sum takes it. Also the digest of the first of those documents."""
    header, table = sections_of(data, "text")
    entries = {entry[0]: entry for entry in table}

    def values(name):
        return np.frombuffer(entries[name][3], dtype=np.dtype(entries[name][1]))

    labels, ptr = values("ledger_label").astype(np.int64), values("ledger_ptr")
    words, counts = values("ledger_word").astype(np.int64), values("ledger_count")
    document = np.repeat(np.arange(labels.size), np.diff(ptr.astype(np.int64)))
    cells = words * len(header["classes"]) + labels[document]
    shared, n = np.unique(cells, return_counts=True)
    at = np.flatnonzero(cells == shared[n >= 4][0])[:4]
    new = counts.astype(np.uint64)
    new[at] = 2**62
    new[at[3]] += int(counts[at].astype(np.int64).sum())
    entries["ledger_count"][1:] = ["<u8", new.size, new.astype("<u8").tobytes()]
    digest = values("ledger_digest").reshape(-1, 32)[document[at[0]]].tobytes()
    return repack(header, table), digest


def test_a_ledger_whose_sums_pass_2_63_is_refused_by_both_loaders(tmp_path):
    """A ledger whose entries each fit in 63 bits but whose sum in a cell does not, and
    wraps round in int64 to the model's counts: it loaded, and unlearning one of those
    documents ended in a traceback (the remainder's counts negative). Refused on loading,
    by both loaders; unlearn says so in one line."""
    import hashlib
    import shutil

    path = tmp_path / "m.nbc"
    result = CliRunner().invoke(
        cli, ["fit", str(DEMO), "--model", "multinomial", "--ledger", "-o", str(path), "-q"]
    )
    assert result.exit_code == 0, result.output
    crafted, digest = wrapped_ledger(path.read_bytes())
    bad = tmp_path / "bad.nbc"
    bad.write_bytes(crafted)
    problem = (
        "is not a valid nbclass model (count too large (the ledger's counts sum past 2^63 - 1))"
    )
    with pytest.raises(ModelFileError) as info:
        modelfile.loads(crafted, "bad.nbc")
    assert str(info.value) == f"'bad.nbc' {problem}"
    with pytest.raises(ModelFileError) as info:
        QuickModel(str(bad))
    assert str(info.value) == f"{str(bad)!r} {problem}"
    document = next(
        f for f in sorted(DEMO.glob("*/*")) if hashlib.sha256(f.read_bytes()).digest() == digest
    )
    mistakes = tmp_path / "mistakes" / document.parent.name
    mistakes.mkdir(parents=True)
    shutil.copy(document, mistakes)
    unlearned = invoke("unlearn", mistakes.parent, "-m", bad, "-o", tmp_path / "out.nbc", "-q")
    assert one_error_line(unlearned, bad) == f"Error: {str(bad)!r} {problem}\n"


def edit_header(data: bytes, kind: str, edit) -> bytes:
    header, table = sections_of(data, kind)
    edit(header)
    return repack(header, table)


def set_defaults(field: str, value):
    return lambda header: header["defaults"].__setitem__(field, value)


BAD_HEADERS = {
    "alpha NaN": set_defaults("alpha", math.nan),
    "alpha infinite": set_defaults("alpha", math.inf),
    "alpha negative": set_defaults("alpha", -1.0),
    "n_features NaN": lambda h: h.__setitem__("n_features", math.nan),
    "n_used negative": lambda h: h.__setitem__("n_used", -1),
    "n_used infinite": lambda h: h.__setitem__("n_used", math.inf),
    "ledger length NaN": lambda h: h.__setitem__("ledger", math.nan),
    "exit code 300": lambda h: h.__setitem__("exit_codes", _codes(h, 300)),
    "exit code 9": lambda h: h.__setitem__("exit_codes", _codes(h, 9)),
    "exit code true": lambda h: h.__setitem__("exit_codes", _codes(h, True)),
    "exit code 10.0": lambda h: h.__setitem__("exit_codes", _codes(h, 10.0)),
    "exit codes shared": lambda h: h.__setitem__("exit_codes", _codes(h, 11)),
    "exit codes a list": lambda h: h.__setitem__("exit_codes", [10, 11]),
    "a class without an exit code": lambda h: h.__setitem__("exit_codes", {"other": 10}),
}


def _codes(header: dict, first) -> dict:
    """Exit codes 20, 21, ... for the classes, but ``first`` for the first one."""
    codes = {name: 20 + i for i, name in enumerate(header["classes"])}
    codes[header["classes"][0]] = first
    if first == 11:  # the second class too
        codes[header["classes"][1]] = 11
    return codes


@pytest.mark.parametrize("case", list(BAD_HEADERS))
def test_impossible_header_numbers_are_refused(models, tmp_path, case):
    _, data = models["ledger"]
    crafted = edit_header(data, "ledger", BAD_HEADERS[case])
    with pytest.raises(ModelFileError) as info:
        modelfile.loads(crafted, "bad.nbc")
    assert_refusal(info.value, "bad.nbc")
    path = tmp_path / "bad.nbc"
    path.write_bytes(crafted)
    one_error_line(invoke("predict", "-m", path), path)


def table_sums(data: bytes) -> list[tuple[bytes, int]]:
    header, table = sections_of(data, "table")
    blob = next(e for e in table if e[0] == "exact_bytes")[3]
    ptr = current(data, "table", "exact_ptr")
    shift = current(data, "table", "exact_shift")
    return [(blob[ptr[i] : ptr[i + 1]], shift[i]) for i in range(len(shift))]


def with_sums(data: bytes, sums: list[tuple[bytes, int]]) -> bytes:
    header, table = sections_of(data, "table")
    ptr = np.cumsum([0] + [len(b) for b, _ in sums])
    blob = b"".join(b for b, _ in sums)
    new = {
        "exact_bytes": ("|u1", len(blob), blob),
        "exact_ptr": ("<u8", len(ptr), ptr.astype("<u8").tobytes()),
        "exact_shift": ("<u8", len(sums), np.array([t for _, t in sums], "<u8").tobytes()),
    }
    for entry in table:
        if entry[0] in new:
            entry[1:] = new[entry[0]]
    return repack(header, table)


BAD_TABLES = {
    # S1 and S2 of the first numeric column and class are sums[0] and sums[1]
    "sum of squares too large (infinite variance)": lambda s: [s[0], (b"\x02", 5000), *s[2:]],
    "negative sum of squares": lambda s: [s[0], (b"\x01", 0), *s[2:]],
    "sum without its square (negative variance)": lambda s: [(b"\xfe" * 300, 0), *s[1:]],
    "shift beyond any double": lambda s: [(s[0][0], 2**40), *s[1:]],
    "var_smoothing NaN": None,
    "var_smoothing negative": None,
}


@pytest.mark.parametrize("case", list(BAD_TABLES))
def test_impossible_table_statistics_are_refused(models, tmp_path, case):
    _, data = models["table"]
    if case.startswith("var_smoothing"):
        value = math.nan if case.endswith("NaN") else -1.0
        crafted = edit_header(data, "table", lambda h: h.__setitem__("var_smoothing", value))
    else:
        crafted = with_sums(data, BAD_TABLES[case](table_sums(data)))
    with pytest.raises(ModelFileError) as info:
        tablefile.loads(crafted, "bad.nbc")
    assert_refusal(info.value, "bad.nbc")
    path = tmp_path / "bad.nbc"
    path.write_bytes(crafted)
    one_error_line(invoke("predict", "-m", path, "--table", TABLE, input=None), path)


def test_the_sum_helpers_alone_change_nothing(models):
    _, data = models["table"]
    assert tablefile.loads(with_sums(data, table_sums(data))) is not None
    assert with_sums(data, table_sums(data)) == data or tablefile.dumps(
        tablefile.loads(with_sums(data, table_sums(data)))
    ) == data
    assert json.loads(data[PREFIX.size : PREFIX.size + PREFIX.unpack_from(data)[2]])["kind"] == (
        "table"
    )
    assert zlib.crc32(data) == zlib.crc32(repack(*sections_of(data, "table")))


# --- the mapped read of large files ---------------------------------------------------------


def test_a_large_file_read_mapped_is_the_same_bytes(tmp_path):
    """A container of 2 MB (over ``MAPPED_FROM``) read into mapped memory: the same bytes
    and sections as the plain read, and still refused when cut or extended."""
    values = (np.arange(2**19, dtype=np.uint64) * 2654435761 % 2**32).astype("<u4")
    data = pack({"kind": "text"}, [section("big", values)])
    assert len(data) > fileformat.MAPPED_FROM
    path = tmp_path / "big.nbc"
    path.write_bytes(data)
    mapped = fileformat.read(str(path), mapped=True)
    assert isinstance(mapped, memoryview) and mapped == data == fileformat.read(str(path))
    _, sections = parse(mapped, "big.nbc", (), ("big",))
    assert sections["big"].tolist() == values.tolist()
    path.write_bytes(data[:-1])
    with pytest.raises(ModelFileError, match=f"is truncated \\({len(data) - 1} of"):
        parse(fileformat.read(str(path), mapped=True), "big.nbc", (), ("big",))
    path.write_bytes(data + b"\0")
    with pytest.raises(ModelFileError, match="is corrupted \\(1 bytes after its end\\)"):
        fileformat.read(str(path), mapped=True)


@pytest.mark.parametrize("kind", ["text", "ledger", "hashed"])
def test_the_mapped_read_refuses_as_the_plain_read(models, kind, tmp_path, monkeypatch):
    """With ``MAPPED_FROM`` at 0 the small models take the mapped read of the one-document
    path too: every cut of the prefix and header and every 7th of the body, and the
    flipped bits of the test above, give the very message of the plain read."""
    _, data = models[kind]
    damaged = InPlace(tmp_path / "m.nbc", data)
    cases = [("cut", n, 0) for n in sorted({*range(0, 64), *range(64, len(data), 7)})]
    cases += [("flip", p, b) for p, b in flips(data) if p < 512 or not p % 5]
    for how, position, bit in cases:
        path = damaged.truncated(position) if how == "cut" else damaged.flipped(position, bit)
        monkeypatch.setattr(fileformat, "MAPPED_FROM", 2**62)
        plain = quick_refuses(path)
        monkeypatch.setattr(fileformat, "MAPPED_FROM", 0)
        assert quick_refuses(path) == plain, (how, position, bit)
        damaged.restore()
    damaged.close()
    assert QuickModel(str(damaged.path)).classes  # restored: loads, mapped
