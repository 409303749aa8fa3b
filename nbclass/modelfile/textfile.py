"""The model file: what a model stores, written and read through :mod:`.fileformat`.

The container (magic, version, JSON header, checksummed sections, all checks) is
described in :mod:`nbclass.modelfile.fileformat`. A model stores these sections, each a flat array
of the smallest unsigned integer type that holds it:

===============  ==========  =============================================================
section          length      content
===============  ==========  =============================================================
class_count      C           N_c, documents per class
vocabulary       bytes       the V counted words, UTF-8, sorted, separated by NUL bytes
vocabulary_offsets  V + 1    word j is ``vocabulary[offsets[j]:offsets[j+1] - 1]``
word_ptr         V + 1       entries of word j are ``word_ptr[j]:word_ptr[j+1]`` below
class_index      nnz         class c of each non-zero (word, class) entry
doc_count        nnz         D_jc, documents of class c containing word j
token_count      nnz         T_jc, tokens of word j in class c
used             ⌈V / 8⌉     bit j (little-endian within a byte): word j passes the filter
class_tokens     C           T_c over the used words
histogram_ptr    C + 1       entries of class c are ``histogram_ptr[c]:histogram_ptr[c+1]``
histogram_value  ...         a value d of D_jc among the used words (0 included)
histogram_count  ...         how many used words have that value in class c
===============  ==========  =============================================================

A model with a ledger (:mod:`nbclass.counting.ledger`) has five more sections:

===============  ==========  =============================================================
ledger_digest    32 n        SHA-256 of each of the n training documents, in ledger order
ledger_label     n           its class
ledger_ptr       n + 1       its words are ``ledger_ptr[i]:ledger_ptr[i+1]`` below
ledger_word      nnz         word index, ascending within a document
ledger_count     nnz         tokens of that word in the document
===============  ==========  =============================================================

and loading checks that the counts are exactly the ledger's sum.

A model whose settings fit chose (``--model auto``) keeps the sample it chose them from
(:mod:`nbclass.counting.sketch`) in five more sections of the same form, ``sample_digest``,
``sample_label``, ``sample_ptr``, ``sample_word`` and ``sample_count``, and the header's
``sample`` record (``documents``: their number; ``short``: how many sampled documents
unlearning without a ledger took away). Loading checks them as hostile input: in
(digest, class) order, no more than a sample keeps, each class within its N_c, no row
beyond the counts, and equal to the ledger's sample when there is a ledger. A model
without a sample has neither the sections nor the record.

The derived sections (``used`` to ``histogram_count``) come from the counts and the
vocabulary filter, so that one
document can be scored without reading every count (:mod:`nbclass.modelfile.quick`); loading
recomputes them and refuses a file where they disagree. Counts are stored sparse (a word
is usually seen in few classes). The header's JSON holds the classes and the settings,
with no code; the sections only integers; no pickle is involved anywhere.

Writing is atomic: the file is written to a temporary name in the same folder, flushed to
disk, then renamed over the target, so a crash or a concurrent reader never sees half a
file.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ..counting.counts import (
    BLOCK_PAIRS,
    Counts,
    at_most,
    counts_of_pairs,
    is_sparse,
    sum_fits,
)
from ..counting.ledger import Ledger
from ..errors import ModelFileError, NbclassError
from ..models.estimators import Prepared
from ..models.exitcodes import stored_form
from ..models.model import Model, VocabularyFilter
from ..text.tokenizer import TokenizerSettings
from ..version import __version__
from . import header as checked
from .fileformat import (
    HASHING_SECTIONS,
    LEDGER_SECTIONS,
    MAGIC,
    MODEL_SECTIONS,
    OPTIONAL_SECTIONS,
    SAMPLE_SECTIONS,
    TYPECODES,
    file_kind,
    pack_pieces,
    parse,
    problem_of,
    read,
    refuse,
    section,
)


def _smallest_uint(values: np.ndarray) -> np.dtype:
    top = int(values.max()) if values.size else 0
    for name in TYPECODES:
        if top <= np.iinfo(np.dtype(name)).max:
            return np.dtype(name)
    raise ValueError("count too large for 64 bits")  # pragma: no cover


def _compact(values: np.ndarray) -> np.ndarray:
    """``values`` in the smallest unsigned type that holds them (as stored)."""
    return values.astype(_smallest_uint(values), copy=False)


def derived_sections(model: Model) -> dict[str, np.ndarray]:
    """The sections computed from the counts and the filter (see the table above)."""
    counts, active = model.counts, model.active_counts
    used = np.zeros(len(counts.vocabulary), dtype=bool)
    used[model.active_rows] = True
    histograms = active.doc_histograms
    pairs = [pair for histogram in histograms for pair in histogram]
    return {
        "used": np.packbits(used, bitorder="little"),
        "class_tokens": active.class_tokens,
        "histogram_ptr": np.cumsum([0] + [len(h) for h in histograms]),
        "histogram_value": np.array([d for d, _ in pairs], dtype=np.int64),
        "histogram_count": np.array([n for _, n in pairs], dtype=np.int64),
    }


def _arrays(model: Model) -> dict[str, np.ndarray]:
    counts = model.counts
    # The pairs (D_jc > 0 exactly when T_jc > 0), grouped by word: the pattern of a table
    # in CSR layout as it is (no array of every pair's word made to count them again).
    if is_sparse(counts.doc_table):
        word_ptr, cols = counts.doc_table.indptr.astype(np.int64), counts.doc_table.indices
    else:
        rows, cols = counts.nonzero
        word_ptr = np.zeros(len(counts.vocabulary) + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=len(counts.vocabulary)), out=word_ptr[1:])
    # The words, UTF-8, NUL-separated (no word holds a NUL); word j starts at offsets[j].
    encoded = np.frombuffer("\x00".join(counts.vocabulary).encode("utf-8"), dtype=np.uint8)
    offsets = np.zeros(len(counts.vocabulary) + 1, dtype=np.int64)
    if len(counts.vocabulary):
        offsets[1:-1] = np.flatnonzero(encoded == 0) + 1
        offsets[-1] = encoded.size + 1
    return {
        "class_count": counts.class_count,
        "vocabulary": encoded,
        "vocabulary_offsets": offsets,
        "word_ptr": word_ptr,
        # The largest sections, made their smallest type by dumps (from their own
        # largest value: no pass over every cell of the tables).
        "class_index": _compact(cols),
        "doc_count": _pair_values(counts, counts.doc_table),
        "token_count": _pair_values(counts, counts.token_table),
        **derived_sections(model),
        **_ledger_arrays(model.ledger),
        **_ledger_arrays(model.sample, "sample"),
        **_column_word_arrays(model),
    }


def _pair_values(counts: Counts, table) -> np.ndarray:
    """The values of ``table`` (D or T of ``counts``) at the nonzero pairs: a table in
    CSR layout gives its integers as they are, not copied as int64 before they are made
    their smallest type (two copies of 15 MB for 20 Newsgroups with word pairs)."""
    if is_sparse(table) and table.data.dtype.kind in "iu":
        return table.data
    return counts.at_nonzero(table, np.int64)


def _column_word_arrays(model: Model) -> dict[str, np.ndarray]:
    """Per vocabulary entry, its sampled words: NUL-separated, grouped by ``ptr``."""
    if model.tokenizer.hash_features is None:
        return {}
    words = model.column_words or {}
    groups = [words.get(column, ()) for column in model.counts.vocabulary]
    encoded = [w.encode("utf-8", "surrogatepass") + b"\x00" for group in groups for w in group]
    ptr = np.zeros(len(groups) + 1, dtype=np.int64)
    np.cumsum([len(group) for group in groups], out=ptr[1:])
    return {
        "column_words": np.frombuffer(b"".join(encoded), dtype=np.uint8),
        "column_words_ptr": ptr,
    }


def _ledger_arrays(ledger: Ledger | None, prefix: str = "ledger") -> dict[str, np.ndarray]:
    if ledger is None:
        return {}
    return {
        f"{prefix}_digest": ledger.digests.reshape(-1),
        f"{prefix}_label": ledger.labels,
        f"{prefix}_ptr": ledger.ptr,
        f"{prefix}_word": ledger.words,
        f"{prefix}_count": ledger.counts,
    }


def dumps(model: Model) -> bytes:
    """The bytes of the model file for ``model``; impossible counts raise ``ValueError``."""
    return b"".join(_pieces(model))


def _pieces(model: Model) -> list:
    """The model file of ``model`` as :func:`nbclass.modelfile.fileformat.pack_pieces`
    gives it: what :func:`save` writes, and :func:`dumps` joins."""
    if model.scoring_only:  # its ledger and sample were never read: they would be lost
        raise ValueError("cannot write a model loaded for scoring alone")
    problems = model.counts.problems()
    if problems:
        raise ValueError("cannot write impossible counts: " + "; ".join(problems))
    model.defaults.validate()  # never write a file that loads() would refuse
    # The header first: the prepared numbers (fitted β) take their memory before the
    # sections hold theirs.
    header = {
        "nbclass_version": __version__,
        "classes": list(model.counts.classes),
        "n_features": len(model.counts.vocabulary),
        "n_used": int(model.active_rows.size),
        "tokenizer": model.tokenizer.to_dict(),
        "vocabulary_filter": model.vocabulary_filter.to_dict(),
        "defaults": model.defaults.to_dict(),
        "selection": model.selection,
        "ledger": None if model.ledger is None else model.ledger.n_documents,
        "prepared": None if model.prepared is None else model.prepared.to_dict(),
        "choice": model.choice,
        "calibration": None if model.calibration is None else model.calibration.to_dict(),
        "typicality": _typicality(model),
    }
    codes = stored_form(model.codes, model.counts.classes)
    if codes is not None and model.multi_label is None:  # a fresh fit's sorted codes are
        # not written (exitcodes.py); a multi-label model has none (it predicts label sets)
        header["exit_codes"] = codes
    if model.sample is not None:
        header["sample"] = {"documents": model.sample.n_documents, "short": model.sample_short}
    if model.multi_label is not None:
        header["multi_label"] = model.multi_label
    sections = [section(name, _compact(values)) for name, values in _arrays(model).items()]
    return pack_pieces(header, sections)


def _typicality(model: Model) -> dict | None:
    """The model's typicality record while it describes these counts and defaults."""
    from ..models.novelty import fingerprint, record_applies

    record = model.typicality
    if record is None or not record_applies(
        record, model.defaults, fingerprint(model.active_counts)
    ):
        return None
    return record


def lock_path(path: str) -> str:
    """The lock file of the model at ``path``: ``.NAME.lock`` in the same folder."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f".{name}.lock")


def check_destination(path: str, model: bool = True) -> None:
    """Refuse to write a model over anything but a model file (or nothing).

    A write renames a new file over ``path``: over a device (/dev/full), a named pipe or a
    socket that would silently replace it with a regular file, and over a regular file
    that is not a model (notes, a table, a CSV) it would lose that file. Such a destination
    is a :class:`ModelFileError`, raised before any lock file is created beside it. A
    regular file may be replaced when it is empty or begins with the model magic number
    (:data:`.fileformat.MAGIC`: a text or table model, even a damaged one). ``model=False``
    (an export, which is not a model) is the other way round: any regular file but a
    model. A symbolic link is judged by what it points to.
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ModelFileError(f"cannot write model {path!r}: {exc.strerror}") from None
    if stat.S_ISDIR(mode):
        raise ModelFileError(
            f"cannot write model {path!r}: it is a folder; give a file name, e.g. "
            f"{os.path.join(path, 'model.nbc')!r}"
        )
    if not stat.S_ISREG(mode):
        raise ModelFileError(
            f"cannot write model {path!r}: it is a {file_kind(mode)}, not a regular file, "
            "and writing would replace it; give the path of a new or existing model file"
        )
    start = _start(path)
    if model and not MAGIC.startswith(start):  # empty, or the magic (whole or cut short)
        raise ModelFileError(
            f"cannot write model {path!r}: it is a file that is not an nbclass model, and "
            "writing would replace it; give the path of a new or existing model file (or "
            "remove the file first)"
        )
    if not model and start == MAGIC:
        raise ModelFileError(
            f"cannot write {path!r}: it is an nbclass model file, and the export would "
            "replace it; give another path"
        )


def _start(path: str) -> bytes:
    """The first bytes of the regular file at ``path``, as many as the magic number has,
    read without blocking; ``b""`` when it cannot be read (the write then says why)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return b""
    try:
        return os.read(fd, len(MAGIC)) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return b""
    finally:
        os.close(fd)


@contextmanager
def locked(path: str) -> Iterator[None]:
    """Hold the exclusive write lock of the model at ``path`` (waiting for it if needed).

    Every command that reads a model, changes it and writes it back (``fit --update``,
    ``unlearn``, ``sync``, and any write) does so under this lock, so two overlapping cron
    runs queue up instead of losing an update. Readers take no lock: writes are atomic
    renames, so a reader sees the old file or the new one. The lock is ``flock(2)`` on a
    separate file (the model itself is replaced by each write), released by the kernel
    when the process ends, however it ends; the lock file is left in place.
    """
    import fcntl

    if _is_url(path):  # object stores have no locks: a write is one put, whole or nothing
        yield
        return
    check_destination(path)
    try:
        fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise ModelFileError(
            f"cannot write model {path!r}: {exc.strerror} (creating its lock file "
            f"{os.path.basename(lock_path(path))})"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _remove_stale_temporaries(path)
        yield
    finally:
        os.close(fd)


def _is_url(path: str) -> bool:
    if not isinstance(path, str) or "://" not in path:
        return False
    from ..reading.storage import is_url

    return is_url(path)


def _temporary_prefix(path: str) -> str:
    return "." + os.path.basename(path) + "."


def _remove_stale_temporaries(path: str) -> None:
    """Delete what writers killed mid-write left: only the lock holder writes temporaries."""
    import re

    folder = os.path.dirname(os.path.abspath(path))
    # exactly the names tempfile.mkstemp gives in save(): prefix, 8 random characters, .tmp
    ours = re.compile(re.escape(_temporary_prefix(path)) + r"[a-z0-9_]{8}\.tmp")
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if ours.fullmatch(name):
            try:
                os.unlink(os.path.join(folder, name))
            except OSError:
                pass


def save(model: Model, path: str) -> int:
    """Write ``model`` to ``path`` atomically; returns the number of bytes written.
    Its sections are written from the arrays that hold them: the file's bytes are not
    copied into one object first (50 MB for 20 Newsgroups with word pairs)."""
    return write_atomic(_pieces(model), path)


def write_atomic(data: bytes | list, path: str, model: bool = True) -> int:
    """Write the bytes of a model file to ``path`` atomically; returns their number.
    ``data``: the bytes, or a list of bytes-like pieces written one after another.

    ``path`` must not exist or be a model file (:func:`check_destination`; any regular
    file but a model when ``model`` is false); it is checked again just before the
    rename. At a URL (:mod:`nbclass.reading.storage`), the object is written in one put."""
    pieces = data if isinstance(data, list) else [data]
    size = sum(len(piece) for piece in pieces)
    if _is_url(path):
        from ..reading.storage import write_bytes

        try:
            write_bytes(path, b"".join(pieces) if isinstance(data, list) else data)
        except OSError as exc:
            raise ModelFileError(f"cannot write model {path!r}: {exc.strerror}") from None
        return size
    check_destination(path, model)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=_temporary_prefix(path), suffix=".tmp")
    except OSError as exc:
        raise ModelFileError(f"cannot write model {path!r}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            for piece in pieces:  # (a piece larger than the buffer is written directly)
                handle.write(piece)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        check_destination(path, model)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise _write_error(exc, path) from None
        raise
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:  # pragma: no cover - some filesystems refuse fsync on folders
        pass
    return size


def _write_error(exc: OSError, path: str) -> ModelFileError:
    """The error for a failed save: the old model (if any) is untouched, and the disk full
    (ENOSPC, or EDQUOT: over quota) is said in plain words."""
    previous = (
        "the previous model is unchanged" if os.path.exists(path) else "no model was written"
    )
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        full = "no space left on device" if exc.errno == errno.ENOSPC else "disk quota exceeded"
        return ModelFileError(
            f"{full} while saving model {path!r}; {previous}: free some space and run "
            "the command again"
        )
    return ModelFileError(f"cannot write model {path!r}: {exc.strerror}; {previous}")


def loads(
    data: bytes, path: str = "<bytes>", parsed: tuple | None = None, scoring: bool = False
) -> Model:
    """Parse model-file bytes; raise :class:`ModelFileError` naming any problem.
    ``parsed``: what :func:`nbclass.modelfile.fileformat.parse` gave for these bytes
    (their header and sections, every checksum checked), if the caller has it.

    ``scoring``: the model for scoring alone (:attr:`Model.scoring_only`): its ledger and
    sample, which no score depends on, are neither built nor checked (their checksums
    are, with every section's), and it cannot be saved. Predict and the service read a
    model so: against 20,000 classes the sample's checks took a third of the load."""
    return loads_with_header(data, path, parsed, scoring)[0]


def loads_with_header(
    data: bytes, path: str = "<bytes>", parsed: tuple | None = None, scoring: bool = False
) -> tuple[Model, dict]:
    """Parse model-file bytes into the model and the file's JSON header (``parsed`` and
    ``scoring``: as :func:`loads`)."""
    if parsed is None:
        parsed = parse(data, path, MODEL_SECTIONS, OPTIONAL_SECTIONS)
    header, sections = parsed
    limit = checked.memory_limit(len(data))
    try:
        arrays = {name: np.frombuffer(view, dtype=view.format) for name, view in sections.items()}
        return _build(header, arrays, path, len(data), limit, scoring), header
    except ModelFileError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, UnicodeDecodeError,
            OverflowError, NbclassError) as exc:  # fmt: skip (int() of an infinite number)
        raise refuse(path, f"is not a valid nbclass model ({problem_of(exc)})") from None


def _build(
    header: dict, arrays: dict[str, np.ndarray], path: str, size: int, limit: int,
    scoring: bool = False,
) -> Model:
    classes = tuple(checked.classes(header))
    C, V = len(classes), checked.whole(header["n_features"], "n_features")
    checked.memory(path, V, C, len(arrays["class_index"]), size, limit)  # before building
    blob = arrays["vocabulary"]
    vocabulary = tuple(str(blob, "utf-8").split("\x00")) if V else ()  # (no copy of the bytes)
    nuls = np.append(np.flatnonzero(blob == 0), blob.size)  # where each entry ends
    ends = nuls + 1 if V else np.zeros(0)
    if not np.array_equal(arrays["vocabulary_offsets"], np.append(0, ends)):
        raise ValueError("vocabulary offsets disagree with the vocabulary")
    word_ptr = arrays["word_ptr"].astype(np.int64)
    class_index = arrays["class_index"]  # as stored: made the CSR indices once, below
    nnz = class_index.shape[0]
    if (
        len(vocabulary) != V
        or word_ptr.shape != (V + 1,)
        or word_ptr[0] != 0
        or word_ptr[-1] != nnz
        or (np.diff(word_ptr) < 0).any()
        or (class_index >= C).any()
        or (nnz and class_index.min() < 0)
        or arrays["doc_count"].shape != (nnz,)
        or arrays["token_count"].shape != (nnz,)
        or arrays["class_count"].shape != (C,)
    ):
        raise ValueError("inconsistent section sizes")
    for name in ("doc_count", "token_count", "class_count"):
        if arrays[name].dtype == np.uint64 and (arrays[name] > np.iinfo(np.int64).max).any():
            raise ValueError("count too large")
    if not _in_order(word_ptr, class_index):
        raise ValueError("entries are not in order")
    counts = counts_of_pairs(
        classes, vocabulary, arrays["class_count"].astype(np.int64),
        None, class_index, arrays["doc_count"], arrays["token_count"], word_ptr,
    )  # fmt: skip
    problems = counts.problems()
    if problems:
        raise ValueError("; ".join(problems))
    tokenizer, _ = checked.tokenizer(header)  # UsageError for what fit would refuse
    min_df, max_features, features = checked.vocabulary_filter(header)
    if features is not None:
        # The model's active rows (below) take its chosen families' rows: found in the
        # vocabulary's bytes, here, and kept for that vocabulary (not found in its
        # entries joined and encoded again: 0.07-0.13 s and 57 MB against 20 Newsgroups
        # with word pairs).
        from ..text.families import masks

        masks(vocabulary, tokenizer.symbol_entries, (blob, nuls))
    model = Model(
        counts=counts,
        tokenizer=tokenizer,
        vocabulary_filter=VocabularyFilter(
            min_df, max_features, features, header["vocabulary_filter"].get("prune_df"),
            header["vocabulary_filter"].get("prune_mi"),
        ),
        defaults=checked.defaults(header),
        selection=checked.selection(header),
        ledger=None if scoring else _build_ledger(header, arrays, counts),
        column_words=_build_column_words(tokenizer, arrays, vocabulary),
        choice=checked.choice(header),
        calibration=checked.calibration(header, len(classes)),
        exit_codes=checked.exit_codes(header, classes),
        multi_label=checked.multi_label(header, classes),
        scoring_only=scoring,
    )
    if not scoring:
        sample, short = _build_sample(header, arrays, model)
        model.__dict__.update(sample=sample, sample_short=short)
    typicality = header.get("typicality")
    if typicality is not None:  # written by dumps only when it applied: check it still does
        from ..models.novelty import fingerprint, record_applies

        if record_applies(typicality, model.defaults, fingerprint(model.active_counts)):
            model.__dict__["typicality"] = typicality
    expected = derived_sections(model)
    if checked.whole(header["n_used"], "n_used") != len(model.active_counts.vocabulary) or not all(
        np.array_equal(arrays[name], values) for name, values in expected.items()
    ):
        raise ValueError("the derived sections disagree with the counts")
    prepared = checked.prepared(header, C, model.defaults)
    if prepared is not None:
        _check_prepared(prepared, model.active_counts)
        # Written by every save from these counts: the class totals are recomputed and
        # compared, the fitted β checked against the range the prior fit can give (fitting
        # it again would cost a fit's tail); used as they are, as the one-document path
        # uses them, so both paths agree.
        model.__dict__["prepared"] = prepared
    return model


def _in_order(word_ptr: np.ndarray, cols: np.ndarray) -> bool:
    """Whether the pairs' keys j C + c strictly increase, the words j given by
    ``word_ptr`` (non-decreasing) and the classes ``cols`` (0 <= c < C): whether each
    word's classes strictly increase. A block of pairs at a time (each block's last
    class compared with the next block's first), without an array of every pair's word."""
    starts = word_ptr[1:-1]  # the first pair of each word after the first
    for start in range(0, cols.size, BLOCK_PAIRS):
        end = min(start + BLOCK_PAIRS + 1, cols.size)  # one pair of the next block
        up = np.diff(cols[start:end].astype(np.int64)) > 0  # pair start + i + 1 vs i
        first = starts[np.searchsorted(starts, start + 1) : np.searchsorted(starts, end)]
        up[first - start - 1] = True  # a word's first pair may have any class
        if not up.all():
            return False
    return True


def _check_prepared(prepared: Prepared, active: Counts) -> None:
    """Refuse prepared numbers that these counts cannot give (:mod:`nbclass.modelfile.header`)."""
    from ..models.textmodels import class_totals, transformed_entries

    settings = prepared.settings
    total = checked.transformed_total(prepared)
    if total is not None:
        _, cols, entries = transformed_entries(active, settings)
        total = float(entries.sum())
        sums = class_totals(active, settings, (cols, entries))
        if not np.allclose(prepared.class_totals, sums, rtol=1e-9, atol=1e-9):
            raise ValueError("the prepared class totals disagree with the counts")
    checked.check_beta(prepared, int(active.token_table.sum()), total)


def _ledger_sections(arrays: dict[str, np.ndarray], prefix: str) -> Ledger:
    """The ledger rows stored in the sections ``{prefix}_digest``, ``_label``, ``_ptr``,
    ``_word`` and ``_count`` (the ledger's, or the sample's), as a :class:`Ledger` to check."""
    digests = arrays[f"{prefix}_digest"]
    if digests.dtype != np.uint8 or digests.size % 32:
        raise ValueError(f"{prefix} digests are not bytes")
    if not sum_fits(arrays[f"{prefix}_count"]):  # each below 2^63 (else negative below)
        raise ValueError(f"count too large (the {prefix}'s counts sum past 2^63 - 1)")
    return Ledger(
        digests=digests.astype(np.uint8).reshape(-1, 32),
        labels=arrays[f"{prefix}_label"].astype(np.int64),
        ptr=arrays[f"{prefix}_ptr"].astype(np.int64),
        words=arrays[f"{prefix}_word"].astype(np.int64),
        counts=arrays[f"{prefix}_count"].astype(np.int64),
    )


def _build_ledger(header: dict, arrays: dict[str, np.ndarray], counts: Counts) -> Ledger | None:
    present = [name for name in LEDGER_SECTIONS if name in arrays]
    n = header.get("ledger")
    if not present and n is None:
        return None
    if len(present) != len(LEDGER_SECTIONS) or not isinstance(n, int):
        raise ValueError("the ledger is incomplete")
    ledger = _ledger_sections(arrays, "ledger")
    problems = ledger.problems(len(counts.classes), len(counts.vocabulary))
    if problems or ledger.n_documents != n:
        raise ValueError("; ".join(problems) or "the ledger's length disagrees with the header")
    if not ledger.sum_counts(counts.classes, counts.vocabulary).equals(counts):
        raise ValueError("the counts are not the sum of the ledger")
    return ledger


def _build_sample(header: dict, arrays: dict[str, np.ndarray], model: Model):
    """The stored sample (:mod:`nbclass.counting.sketch`) and its number of lost documents,
    checked as hostile input, or ``(None, 0)``."""
    from ..counting.sketch import PER_CLASS, bottom, problems

    present = [name for name in SAMPLE_SECTIONS if name in arrays]
    record = checked.sample(header)
    if not present and record is None:
        return None, 0
    if len(present) != len(SAMPLE_SECTIONS) or record is None:
        raise ValueError("the sample is incomplete")
    documents, short = record
    counts = model.counts
    sample = _ledger_sections(arrays, "sample")
    found = problems(sample, len(counts.classes), len(counts.vocabulary), counts.class_count)
    if found:
        raise ValueError("; ".join(found))
    if sample.n_documents != documents or short > counts.n_docs:
        raise ValueError("the sample's length disagrees with the header")
    rows = sample.sum_counts(counts.classes, counts.vocabulary)
    if not at_most(rows, counts):
        raise ValueError("the sample holds words its counts do not")
    if model.ledger is not None:
        # Today's sample of the ledger, or the earlier one of PER_CLASS of each class
        # whatever their number (sketch.problems).
        expected = [bottom(model.ledger, n_classes=len(counts.classes))]
        if sample.n_documents != expected[0].n_documents:
            expected.append(bottom(model.ledger, per_class=PER_CLASS))
        if short or not any(
            all(np.array_equal(getattr(sample, name), getattr(e, name))
                for name in ("digests", "labels", "ptr", "words", "counts"))
            for e in expected
        ):  # fmt: skip
            raise ValueError("the sample is not the ledger's")
    return sample, short


def _build_column_words(tokenizer, arrays, vocabulary) -> dict | None:
    present = [name for name in HASHING_SECTIONS if name in arrays]
    if tokenizer.hash_features is None:
        if present:
            raise ValueError("column words in a model without feature hashing")
        return None
    if len(present) != len(HASHING_SECTIONS):
        raise ValueError("the hashed columns' words are missing")
    from ..text.hashing import REPRESENTATIVES, column_namer, word_key

    blob = arrays["column_words"].tobytes()
    words = blob.decode("utf-8", "surrogatepass").split("\x00")[:-1] if blob else []
    ptr = arrays["column_words_ptr"].astype(np.int64)
    if ptr.shape != (len(vocabulary) + 1,) or ptr[0] != 0 or ptr[-1] != len(words):
        raise ValueError("the hashed columns' words have inconsistent sizes")
    if (np.diff(ptr) < 0).any() or (np.diff(ptr) > REPRESENTATIVES).any():
        raise ValueError("a hashed column lists too many words")
    n, name = tokenizer.hash_features, column_namer(tokenizer.hash_features)
    result = {}
    for j, column in enumerate(vocabulary):
        group = tuple(words[ptr[j] : ptr[j + 1]])
        keys = [word_key(w) for w in group]
        if keys != sorted(set(keys)) or any(
            name(int.from_bytes(k, "little") % n) != column for k in keys
        ):
            raise ValueError(f"the words listed for column {column!r} do not hash to it")
        if group:
            result[column] = group
    return result


def load(path: str) -> Model:
    """Read a model file; raise :class:`ModelFileError` naming any problem."""
    return load_with_header(path)[0]


@dataclass(frozen=True)
class CountedFor:
    """What documents counted for a model depend on: its tokenizer and whether it keeps
    a ledger, all :func:`reload` compares. Held instead of the model itself by a caller
    that counted documents for it, so that its counts go before the model is read again
    (fit --update of 20,000 classes × 200,000 words peaked 265 MB higher with the
    model's two readings held through its choice)."""

    tokenizer: TokenizerSettings
    ledger: bool

    @classmethod
    def of(cls, model: Model) -> CountedFor:
        return cls(model.tokenizer, model.ledger is not None)


def reload(path: str, before: CountedFor) -> Model:
    """The model at ``path`` read again (under its lock), refusing a change of settings.

    Documents were counted for the model ``before`` was, as it was before the lock was
    taken; another writer may have changed its counts meanwhile (that is fine, counts add
    up), but not its tokenizer or whether it keeps a ledger.

    Raises
    ------
    NbclassError
        When the model at ``path`` now has other settings.
    """
    now = load(path)
    if now.tokenizer != before.tokenizer or (now.ledger is not None) != before.ledger:
        raise NbclassError(
            f"{path!r} was replaced by a model with other settings while the documents were "
            "read; run the command again"
        )
    return now


def load_with_header(path: str) -> tuple[Model, dict]:
    """Read a model file into the model and the file's JSON header."""
    return loads_with_header(read(path), path)
