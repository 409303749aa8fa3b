"""Label sets: the class names of a multi-label model, and the lines it learns from.

A multi-label model counts each document under its *label set*, its labels sorted and
joined by :data:`SEPARATOR` (``"acq,earn"``; ``""`` for a document with no label), so its
classes are label sets (:mod:`nbclass.models.multilabel`). Standard library only: the
one-document path checks a model file's ``multi_label`` record without numpy.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence

from ..errors import NbclassError

SEPARATOR = ","  # between the labels of a label set, in class names and in predict's TSV
MAX_LABEL_BYTES = 200  # a label's UTF-8 bytes, at most
MAX_CANDIDATES = 16  # settings a multi_label record may list


def check_label(label: str, where: str) -> str:
    """``label`` when it can be a label: not empty, at most :data:`MAX_LABEL_BYTES` bytes,
    without the separator, whitespace or control characters; else an :class:`NbclassError`
    naming ``where``."""
    if not label:
        raise NbclassError(f"{where} has an empty label")
    bad = [c for c in label if c == SEPARATOR or c.isspace() or not c.isprintable()]
    if bad:
        raise NbclassError(
            f"{where}: label {label!r} holds {bad[0]!r}; a label is one word without "
            f"{SEPARATOR!r} (the separator of a document's labels) or spaces"
        )
    if len(label.encode("utf-8", "surrogatepass")) > MAX_LABEL_BYTES:
        raise NbclassError(f"{where}: a label is over {MAX_LABEL_BYTES} bytes")
    return label


def label_set(labels: Iterable[str]) -> str:
    """The class name of a document with ``labels``: sorted, distinct, joined.

    >>> label_set(["earn", "acq", "earn"]), label_set([])
    ('acq,earn', '')
    """
    return SEPARATOR.join(sorted(set(labels)))


def labels_of(name: str) -> tuple[str, ...]:
    """The labels of the label set ``name`` (:func:`label_set`'s inverse).

    >>> labels_of("acq,earn"), labels_of("")
    (('acq', 'earn'), ())
    """
    return tuple(name.split(SEPARATOR)) if name else ()


def parse_line(line: str, where: str) -> tuple[tuple[str, ...], str]:
    """``(labels, text)`` of a multi-label training line, in one of three forms:

    - JSON ``{"labels": [...], "text": "..."}`` (a line starting with ``{``; other keys
      are ignored);
    - fastText's ``__label__A __label__B TEXT``, any number of labels;
    - ``A,B<TAB>TEXT`` (an empty field: no label).

    >>> parse_line("__label__b __label__a hello there", "line x:1")
    (('a', 'b'), 'hello there')
    >>> parse_line("b,a\\thello", "line x:1"), parse_line("\\thello", "line x:2")
    ((('a', 'b'), 'hello'), ((), 'hello'))
    >>> parse_line('{"labels": ["x"], "text": "hi"}', "line x:3")
    (('x',), 'hi')
    """
    if line.lstrip().startswith("{"):
        labels, text = _json_line(line, where)
    elif line.startswith("__label__"):
        labels, text = [], line
        while text.startswith("__label__"):
            label, _, text = text[len("__label__") :].partition(" ")
            labels.append(label.strip())
            text = text.lstrip(" ")
    else:
        field, tab, text = line.partition("\t")
        if not tab:
            raise NbclassError(
                f"{where} has no labels: write LABEL,LABEL<TAB>TEXT, __label__A __label__B "
                'TEXT or {"labels": [...], "text": ...}'
            )
        labels = [label.strip() for label in field.split(SEPARATOR)] if field.strip() else []
    labels = tuple(sorted({check_label(label, where) for label in labels}))
    return labels, text


def _json_line(line: str, where: str) -> tuple[list[str], str]:
    try:
        record = json.loads(line)
    except ValueError as exc:
        problem = f"{exc.msg} at column {exc.colno}"
        raise NbclassError(f"{where} is not valid JSON ({problem})") from None
    if not isinstance(record, dict):
        raise NbclassError(f'{where} is not a JSON object {{"labels": [...], "text": ...}}')
    labels, text = record.get("labels"), record.get("text")
    if not isinstance(text, str):
        raise NbclassError(f'{where} has no "text" string')
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise NbclassError(f'{where} has no "labels" list of strings (give [] for none)')
    return labels, text


def texts_of_lines(lines, labelled: str):
    """``(source, text)`` of lines ``(source, line)`` to classify with a multi-label
    model: with ``labelled`` ``"yes"`` every non-blank line is a training line whose labels
    are dropped (:func:`parse_line`); with ``"auto"`` a file whose first non-blank line
    is JSON with a ``text``, or starts with ``__label__``, is read so."""
    current, mode = None, labelled
    for source, line in lines:
        name = source.rpartition(":")[0]
        if name != current:
            current, mode = name, labelled
        if mode == "auto" and line.strip():
            start = line.lstrip()
            mode = "yes" if start.startswith(("__label__", '{"')) else "no"
        if mode == "yes":
            if line.strip():
                yield source, parse_line(line, f"line {source}")[1]
        elif mode == "no" or line.strip():
            yield source, line


def label_names(classes: Sequence[str]) -> tuple[str, ...]:
    """Every label of the label sets ``classes``, sorted, shape (L,)."""
    return tuple(sorted({label for name in classes for label in labels_of(name)}))


def checked_record(data, classes: Sequence[str]) -> dict:
    """``data``, a model file's ``multi_label`` record, when it is one for the label sets
    ``classes``; else a ``ValueError`` saying what is wrong (the file is hostile input).

    The record holds ``separator`` (``","``), ``labels`` (those of the classes, sorted),
    ``candidates`` (1 to :data:`MAX_CANDIDATES` objects, each with estimator
    ``settings`` and, once chosen, their held-out ``micro_f1``), and once chosen
    ``calibration`` (L pairs (a > 0, c)), ``thresholds`` (L numbers in [0, 1]),
    ``criterion``, ``documents`` and ``folds``. A model fitted at the defaults also has
    ``beta_scales`` (the scales of β each label chooses from) and, once chosen,
    ``beta_scale`` (one of them per label) and the held-out ``micro_f1`` with them."""
    from .estimators import EstimatorSettings

    if not isinstance(data, dict) or data.get("separator") != SEPARATOR:
        raise ValueError("the multi_label record is not an object with separator ','")
    allowed = {"separator", "labels", "candidates", "calibration", "thresholds", "criterion",
               "documents", "folds", "beta_scales", "beta_scale", "micro_f1"}  # fmt: skip
    if set(data) - allowed:
        raise ValueError(f"unknown multi_label field {sorted(set(data) - allowed)[0]!r}")
    for name in classes:
        for label in labels_of(name):
            try:
                check_label(label, "a label")
            except NbclassError as exc:
                raise ValueError(f"a class is not a label set: {exc}") from None
        if name != label_set(labels_of(name)):
            raise ValueError(f"the class {name!r} is not a label set (sorted, distinct labels)")
    labels = label_names(classes)
    if data.get("labels") != list(labels):
        raise ValueError("the multi_label labels are not those of the classes")
    candidates = data.get("candidates")
    if not (isinstance(candidates, list) and 1 <= len(candidates) <= MAX_CANDIDATES):
        raise ValueError(f"the multi_label candidates are not 1 to {MAX_CANDIDATES} objects")
    for candidate in candidates:
        if not isinstance(candidate, dict) or set(candidate) - {"settings", "micro_f1"}:
            raise ValueError("a multi_label candidate is not {settings, micro_f1}")
        try:
            EstimatorSettings.from_dict(candidate["settings"]).validate()
        except (KeyError, TypeError, ValueError, AttributeError, NbclassError):
            raise ValueError("a multi_label candidate's settings are not valid") from None
        f1 = candidate.get("micro_f1")
        if f1 is not None and not (_number(f1) and 0.0 <= f1 <= 1.0):
            raise ValueError("a multi_label candidate's micro_f1 is not in [0, 1]")
    scales = data.get("beta_scales", [1.0])
    if not (isinstance(scales, list) and 1 <= len(scales) <= MAX_CANDIDATES and all(
        _number(s) and 1e-3 <= s <= 1e3 for s in scales
    )):  # fmt: skip
        raise ValueError(f"the multi_label beta_scales are not 1 to {MAX_CANDIDATES} numbers "
                         "in [0.001, 1000]")  # fmt: skip
    if "beta_scale" in data or "micro_f1" in data:
        chosen, f1 = data.get("beta_scale"), data.get("micro_f1")
        if not (
            "thresholds" in data and "beta_scales" in data and isinstance(chosen, list)
            and len(chosen) == len(labels) and all(s in scales for s in chosen)
        ):  # fmt: skip
            raise ValueError("the multi_label beta_scale is not one of the beta_scales per label")
        if not (_number(f1) and 0.0 <= f1 <= 1.0):
            raise ValueError("the multi_label micro_f1 is not in [0, 1]")
    if "thresholds" in data:
        L = len(labels)
        thresholds, calibration = data.get("thresholds"), data.get("calibration")
        if not (isinstance(thresholds, list) and len(thresholds) == L and all(
            _number(t) and 0.0 <= t <= 1.0 for t in thresholds
        )):  # fmt: skip
            raise ValueError(f"the multi_label thresholds are not {L} numbers in [0, 1]")
        if not (isinstance(calibration, list) and len(calibration) == L and all(
            isinstance(pair, list) and len(pair) == 2 and all(map(_number, pair))
            and 0.0 < pair[0] <= 1e6 and abs(pair[1]) <= 1e6
            for pair in calibration
        )):  # fmt: skip
            raise ValueError(
                f"the multi_label calibration is not {L} pairs (a > 0, c) of finite numbers"
            )
        for key in ("documents", "folds"):
            if not (isinstance(data.get(key), int) and 0 <= data[key] <= 10**9):
                raise ValueError(f"the multi_label {key} is not a count")
        if not isinstance(data.get("criterion"), str) or len(data["criterion"]) > 1000:
            raise ValueError("the multi_label criterion is not a short text")
    elif set(data) & {"calibration", "criterion", "documents", "folds"}:
        raise ValueError("the multi_label record has a calibration but no thresholds")
    return data


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
