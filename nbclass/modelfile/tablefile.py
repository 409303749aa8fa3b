"""The table model file: the same container as text models, with ``"kind": "table"``.

The container (magic, version, JSON header with CRC-32, checksummed sections of unsigned
integers, every check) is :mod:`nbclass.modelfile.fileformat`. The header says ``"kind": "table"``,
so a command that needs a text model refuses a table model by name (and the other way
round); text model files have no ``kind`` field and are unchanged. The header holds the
label, the classes, the columns (name and type, in order), the tokenizer of text columns,
the default estimator settings and ε of the variance floor. The sections, G numeric,
K categorical and T text columns and C classes, each a flat array of the smallest
unsigned type that holds it:

=========================  ===========  ======================================================
section                    length       content
=========================  ===========  ======================================================
class_count                C            N_c, training rows per class
gaussian_count             G·C          n_kc, rows of class c with a value in numeric column k
exact_ptr                  2·G·C + 1    number i is ``exact_bytes[exact_ptr[i]:exact_ptr[i+1]]``
exact_bytes                bytes        S1_kc · 2^1074 then S2_kc · 2^2148 for each (k, c),
                                        each as m · 2^t, m odd: zigzag m, little-endian,
exact_shift                2·G·C        ... and t
category_values            bytes        the values of every categorical column, UTF-8,
                                        sorted per column, NUL-separated
category_offsets           L + 1        value v is ``category_values[off[v]:off[v+1] - 1]``
category_ptr               K + 1        values of column k are ``category_ptr[k]:[k+1]``
category_count             L·C          N_kvc, rows of class c with value v
text_vocabulary            bytes        the words of every text column, sorted per column
text_vocabulary_offsets    V + 1        as ``category_offsets``
text_word_ptr              T + 1        words of text column k
text_class_count           T·C          rows of class c with text in column k
text_doc_count             V·C          D_jc, rows of class c whose text holds word j
text_token_count           V·C          T_jc, tokens of word j in class c
=========================  ===========  ======================================================

Exact sums are arbitrary-precision integers, stored in a canonical form (odd mantissa,
no high zero byte) so equal statistics give equal bytes. Loading checks every size, that
the sums are those of some finite doubles ((Σx)² ≤ n Σx², Σx² below n · 2^2048), that no
count exceeds its class, and that strings are sorted and unique; nothing is executed.
"""

from __future__ import annotations

import numpy as np

from ..counting.counts import Counts, as_table
from ..errors import NbclassError
from ..models.columns import XX_SHIFT, CategoricalStats, GaussianStats
from ..models.estimators import EstimatorSettings
from ..models.tablemodel import FEATURE_TYPES, TableColumn, TableModel, validate_var_smoothing
from ..text.tokenizer import TokenizerSettings, make_tokenizer
from ..version import __version__
from .fileformat import pack, parse, problem_of, read, refuse, section
from .textfile import _smallest_uint, write_atomic

KIND = "table"
TABLE_SECTIONS = (
    "class_count",
    "gaussian_count",
    "exact_ptr",
    "exact_bytes",
    "exact_shift",
    "category_values",
    "category_offsets",
    "category_ptr",
    "category_count",
    "text_vocabulary",
    "text_vocabulary_offsets",
    "text_word_ptr",
    "text_class_count",
    "text_doc_count",
    "text_token_count",
)
MAX_SHIFT = XX_SHIFT + 2048 + 64  # S2 < n · 2^4196 with n < 2^64
MAX_EXACT_BYTES = (MAX_SHIFT + 8) // 8 + 1
INT64_MAX = np.iinfo(np.int64).max


def encode_exact(S: int) -> tuple[bytes, int]:
    """(zigzag(m) little-endian, t) with S = m · 2^t and m odd; (b"", 0) for 0.

    >>> encode_exact(12), encode_exact(-1), encode_exact(0)
    ((b'\\x06', 2), (b'\\x01', 0), (b'', 0))
    """
    if S == 0:
        return b"", 0
    t = (S & -S).bit_length() - 1
    m = S >> t
    z = 2 * m if m >= 0 else -2 * m - 1
    return z.to_bytes((z.bit_length() + 7) // 8, "little"), t


def decode_exact(data: bytes, t: int) -> int:
    """The inverse of :func:`encode_exact`; a non-canonical encoding is a ``ValueError``."""
    if not data:
        if t:
            raise ValueError("an exact zero with a shift")
        return 0
    if len(data) > MAX_EXACT_BYTES or t > MAX_SHIFT or data[-1] == 0:
        raise ValueError("an exact sum out of range or not canonical")
    z = int.from_bytes(data, "little")
    m = (z >> 1) ^ -(z & 1)
    if not m & 1:
        raise ValueError("an exact sum whose mantissa is even")
    return m << t


def _strings(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    encoded = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(s) + 1 for s in encoded], out=offsets[1:])
    return np.frombuffer(b"\x00".join(encoded), dtype=np.uint8), offsets


def _read_strings(blob: np.ndarray, offsets: np.ndarray, n: int) -> list[str]:
    strings = blob.tobytes().decode("utf-8").split("\x00") if n else []
    if len(strings) != n or not np.array_equal(offsets, _strings(strings)[1]):
        raise ValueError("string offsets disagree with the strings")
    return strings


def _arrays(model: TableModel) -> dict[str, np.ndarray]:
    by_type = {t: [c for c in model.columns if c.type == t] for t in FEATURE_TYPES}
    exact = []
    for column in by_type["numeric"]:
        for s1, s2 in zip(column.stats.sum_x, column.stats.sum_xx):
            exact += [encode_exact(s1), encode_exact(s2)]
    exact_ptr = np.zeros(len(exact) + 1, dtype=np.int64)
    np.cumsum([len(b) for b, _ in exact], out=exact_ptr[1:])
    values = [v for c in by_type["categorical"] for v in c.stats.values]
    words = [w for c in by_type["text"] for w in c.stats.vocabulary]
    category_values, category_offsets = _strings(values)
    text_vocabulary, text_offsets = _strings(words)

    def stack(arrays):
        return np.concatenate([a.reshape(-1) for a in arrays] + [np.zeros(0, np.int64)])

    return {
        "class_count": model.class_count,
        "gaussian_count": stack([c.stats.count for c in by_type["numeric"]]),
        "exact_ptr": exact_ptr,
        "exact_bytes": np.frombuffer(b"".join(b for b, _ in exact), dtype=np.uint8),
        "exact_shift": np.array([t for _, t in exact], dtype=np.int64),
        "category_values": category_values,
        "category_offsets": category_offsets,
        "category_ptr": np.cumsum([0] + [len(c.stats.values) for c in by_type["categorical"]]),
        "category_count": stack([c.stats.count for c in by_type["categorical"]]),
        "text_vocabulary": text_vocabulary,
        "text_vocabulary_offsets": text_offsets,
        "text_word_ptr": np.cumsum([0] + [len(c.stats.vocabulary) for c in by_type["text"]]),
        "text_class_count": stack([c.stats.class_count for c in by_type["text"]]),
        # A table's text columns are stored whole (V·C cells each): few words, few classes.
        "text_doc_count": stack([as_table(c.stats.doc_count) for c in by_type["text"]]),
        "text_token_count": stack([as_table(c.stats.token_count) for c in by_type["text"]]),
    }


def dumps(model: TableModel) -> bytes:
    """The bytes of the model file of ``model``; an impossible model is a ``ValueError``."""
    problems = model.problems()
    if problems:
        raise ValueError("cannot write an impossible table model: " + "; ".join(problems))
    sections = [
        section(name, np.asarray(values).astype(_smallest_uint(values)))
        for name, values in _arrays(model).items()
    ]
    header = {
        "kind": KIND,
        "nbclass_version": __version__,
        "label": model.label,
        "classes": list(model.classes),
        "columns": [{"name": c.name, "type": c.type} for c in model.columns],
        "ignored": list(model.ignored),
        "tokenizer": model.tokenizer.to_dict(),
        "defaults": model.defaults.to_dict(),
        "var_smoothing": model.var_smoothing,
    }
    return pack(header, sections)


def save(model: TableModel, path: str) -> int:
    """Write ``model`` to ``path`` atomically; returns the number of bytes written."""
    return write_atomic(dumps(model), path)


def loads_with_header(data: bytes, path: str = "<bytes>") -> tuple[TableModel, dict]:
    """Parse table-model bytes; a problem is a :class:`ModelFileError` naming it."""
    header, sections = parse(data, path, TABLE_SECTIONS, kind=KIND)
    try:
        arrays = {name: np.frombuffer(view, dtype=view.format) for name, view in sections.items()}
        return _build(header, arrays), header
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, UnicodeDecodeError,
            OverflowError, NbclassError) as exc:  # fmt: skip
        raise refuse(path, f"is not a valid nbclass table model ({problem_of(exc)})") from None


def loads(data: bytes, path: str = "<bytes>") -> TableModel:
    return loads_with_header(data, path)[0]


def load_with_header(path: str) -> tuple[TableModel, dict]:
    return loads_with_header(read(path), path)


def load(path: str) -> TableModel:
    """Read a table model file; raise :class:`ModelFileError` naming any problem."""
    return load_with_header(path)[0]


def _ints(array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if array.size != int(np.prod(shape)):
        raise ValueError("inconsistent section sizes")
    if array.dtype == np.uint64 and (array > INT64_MAX).any():
        raise ValueError("count too large")
    return array.astype(np.int64).reshape(shape)


def _ptr(array: np.ndarray, n: int, end: int) -> np.ndarray:
    ptr = _ints(array, (n + 1,))
    if ptr[0] != 0 or ptr[-1] != end or (np.diff(ptr) < 0).any():
        raise ValueError("inconsistent section pointers")
    return ptr


def _build(header: dict, arrays: dict[str, np.ndarray]) -> TableModel:
    classes = tuple(str(c) for c in header["classes"])
    C = len(classes)
    specs = [(str(c["name"]), str(c["type"])) for c in header["columns"]]
    by_type = {t: [name for name, kind in specs if kind == t] for t in FEATURE_TYPES}
    if any(kind not in FEATURE_TYPES for _, kind in specs):
        raise ValueError("a column of unknown type")
    G, K, T = (len(by_type[t]) for t in FEATURE_TYPES)
    stats: dict[str, object] = {}
    # numeric
    gaussian_count = _ints(arrays["gaussian_count"], (G, C))
    exact_ptr = _ptr(arrays["exact_ptr"], 2 * G * C, arrays["exact_bytes"].size)
    shifts = _ints(arrays["exact_shift"], (2 * G * C,)).tolist()
    blob = arrays["exact_bytes"].tobytes()
    exact = [
        decode_exact(blob[exact_ptr[i] : exact_ptr[i + 1]], shifts[i]) for i in range(2 * G * C)
    ]
    for k, name in enumerate(by_type["numeric"]):
        pairs = exact[2 * k * C : 2 * (k + 1) * C]
        stats[name] = GaussianStats(gaussian_count[k], tuple(pairs[0::2]), tuple(pairs[1::2]))
    # categorical
    category_ptr = _ptr(arrays["category_ptr"], K, arrays["category_offsets"].size - 1)
    L = int(category_ptr[-1])
    values = _read_strings(arrays["category_values"], arrays["category_offsets"], L)
    category_count = _ints(arrays["category_count"], (L, C))
    for k, name in enumerate(by_type["categorical"]):
        a, b = category_ptr[k], category_ptr[k + 1]
        stats[name] = CategoricalStats(tuple(values[a:b]), category_count[a:b])
    # text
    word_ptr = _ptr(arrays["text_word_ptr"], T, arrays["text_vocabulary_offsets"].size - 1)
    V = int(word_ptr[-1])
    words = _read_strings(arrays["text_vocabulary"], arrays["text_vocabulary_offsets"], V)
    text_class_count = _ints(arrays["text_class_count"], (T, C))
    doc_count = _ints(arrays["text_doc_count"], (V, C))
    token_count = _ints(arrays["text_token_count"], (V, C))
    for k, name in enumerate(by_type["text"]):
        a, b = word_ptr[k], word_ptr[k + 1]
        stats[name] = Counts(
            classes, tuple(words[a:b]), text_class_count[k], doc_count[a:b], token_count[a:b]
        )
    tokenizer = TokenizerSettings.from_dict(header["tokenizer"])
    make_tokenizer(tokenizer)
    var_smoothing = header["var_smoothing"]
    if not isinstance(var_smoothing, float):
        raise ValueError("the variance smoothing is not a number")
    model = TableModel(
        label=str(header["label"]),
        classes=classes,
        class_count=_ints(arrays["class_count"], (C,)),
        columns=tuple(TableColumn(name, kind, stats[name]) for name, kind in specs),
        tokenizer=tokenizer,
        defaults=EstimatorSettings.from_dict(header["defaults"]).validate(),
        var_smoothing=validate_var_smoothing(var_smoothing),
        ignored=tuple(str(n) for n in header["ignored"]),
    )
    problems = model.problems()
    if problems:
        raise ValueError("; ".join(problems))
    return model
