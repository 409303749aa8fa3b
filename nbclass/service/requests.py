"""A ``POST /predict`` request: its JSON to predictions, in the lines ``predict`` prints.

The body is a JSON object with ``text`` (one document) or ``texts`` (a list of them) and,
as ``predict``'s options, ``top_k``, ``min_probability``, ``min_margin``, ``min_known``,
``min_typicality``, ``unsure_label``, ``explain`` and ``calibration`` (false is
``--no-calibration``); ``source`` or ``sources`` name the documents in the answer.

One text is scored as ``predict`` scores one document (the one-document reader,
:func:`nbclass.modelfile.quick.score_document`, when it can score the model's settings;
else the batch path), and a list as ``predict --lines`` scores its lines
(:func:`nbclass.models.explain.score_batch` and :func:`nbclass.models.explain.extras`).
Both are rendered by :func:`nbclass.output.render.prediction_lines`, so the answer to one
text is byte for byte the line of ``predict --format jsonl`` and a list's is the lines
of ``predict --lines --format jsonl`` as a JSON array.
"""

from __future__ import annotations

import json

from ..errors import NbclassError
from ..models.abstain import Abstention
from ..ranges import RANGES
from .loaded import LoadedModel

FIELDS = frozenset({
    "text", "texts", "source", "sources", "top_k", "min_probability", "min_margin",
    "min_known", "min_typicality", "unsure_label", "explain", "calibration",
})  # fmt: skip


class RequestError(Exception):
    """A request the service refuses: its HTTP status and the message of its JSON error."""

    def __init__(self, status: int, message: str, close: bool = False):
        super().__init__(message)
        self.status, self.message, self.close = status, message, close


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def parse_body(body: bytes) -> dict:
    """The JSON object of a request body; :class:`RequestError` (400) names what is wrong."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(400, f"the request body is not UTF-8 text (byte {exc.start})") from None
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise RequestError(400, "the request body nests JSON too deeply") from None
    except ValueError as exc:  # json.JSONDecodeError too
        raise RequestError(400, f"the request body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise RequestError(400, 'the request body must be a JSON object, e.g. {"text": "..."}')
    return data


def _string(value, name: str) -> str:
    if not isinstance(value, str):
        raise RequestError(400, f"{name} must be a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        message = f"{name} holds a lone surrogate (\\ud800-\\udfff): not text"
        raise RequestError(400, message) from None
    return value


def _ranged(data: dict, name: str, option: str):
    """The field ``name`` of the request (None when absent), in the range of ``option``
    (:data:`nbclass.ranges.RANGES`: the command line's bounds)."""
    value = data.get(name)
    if value is None:
        return None
    row = RANGES[option]
    if not row.contains(value):
        shown = json.dumps(value)[:40]
        raise RequestError(400, f"{name} {shown} is out of range: give {row.describe()}")
    return value


class PredictRequest:
    """A checked ``POST /predict`` request.

    Attributes
    ----------
    texts, sources : list of str, of the same length
    single : bool
        One ``text`` (answered with one JSON object), not ``texts`` (a JSON array).
    top_k, explain : int or None
    abstention : Abstention
    calibrated : bool
    """

    def __init__(self, data: dict, max_batch: int):
        unknown = sorted(set(data) - FIELDS)
        if unknown:
            raise RequestError(
                400, f"unknown field {unknown[0]!r}: the fields are {', '.join(sorted(FIELDS))}"
            )
        if ("text" in data) == ("texts" in data):
            raise RequestError(400, 'give either "text" (one document) or "texts" (a list)')
        self.single = "text" in data
        if self.single:
            if "sources" in data:
                raise RequestError(400, '"sources" goes with "texts"; with "text" use "source"')
            self.texts = [_string(data["text"], "text")]
            self.sources = [_string(data.get("source", "-"), "source")]
        else:
            if "source" in data:
                raise RequestError(400, '"source" goes with "text"; with "texts" use "sources"')
            texts = data["texts"]
            if not isinstance(texts, list):
                raise RequestError(400, "texts must be a list of strings")
            if len(texts) > max_batch:
                raise RequestError(
                    413, f"texts holds {len(texts)} documents: at most {max_batch} a request "
                    "(the service's --max-batch)",
                )  # fmt: skip
            self.texts = [_string(t, f"texts[{i}]") for i, t in enumerate(texts)]
            sources = data.get("sources")
            if sources is None:
                sources = [f"-:{i}" for i in range(1, len(texts) + 1)]
            elif not isinstance(sources, list) or len(sources) != len(texts):
                raise RequestError(400, "sources must be a list of strings, one per text")
            self.sources = [_string(s, f"sources[{i}]") for i, s in enumerate(sources)]
        self.top_k = _ranged(data, "top_k", "--top-k")
        self.explain = _ranged(data, "explain", "--explain")
        calibration = data.get("calibration", True)
        if not isinstance(calibration, bool):
            raise RequestError(400, "calibration must be true or false")
        self.calibrated = calibration
        min_known = data.get("min_known")
        if min_known is None:
            min_known = ()
        elif isinstance(min_known, str) or (
            isinstance(min_known, int) and not isinstance(min_known, bool)
        ):
            min_known = (str(min_known),)
        elif isinstance(min_known, list) and all(isinstance(v, str) for v in min_known):
            min_known = tuple(min_known)
        else:
            raise RequestError(
                400, 'min_known must be a number of known tokens (3), a share ("50%") or both'
            )
        label = data.get("unsure_label", "unsure")
        try:
            self.abstention = Abstention.from_options(
                _ranged(data, "min_probability", "--min-probability"),
                _ranged(data, "min_margin", "--min-margin"), min_known,
                _string(label, "unsure_label"),
                _ranged(data, "min_typicality", "--min-typicality"),
            )  # fmt: skip
        except NbclassError as exc:
            raise RequestError(400, _field_names(str(exc))) from None


def _field_names(message: str) -> str:
    """A message about predict's options, naming the request's fields instead."""
    for option in ("min-probability", "min-margin", "min-known", "min-typicality", "unsure-label"):
        message = message.replace(f"--{option}", option.replace("-", "_"))
    return message


def _scored_blocks(classifier, request: PredictRequest, abstention):
    """``(sources, log_proba, extras)`` of the request's texts, a block of documents at a
    time (:func:`nbclass.models.explain.texts_scored`: bounded memory against many
    classes), ``log_proba`` an ndarray ranked by numpy (:mod:`nbclass.output.render`)."""
    from ..models.explain import extras as batch_extras
    from ..models.explain import texts_scored

    for scored in texts_scored(classifier, list(request.sources), list(request.texts)):
        try:
            extras = batch_extras(
                classifier, scored, abstention=abstention, explain=request.explain,
                evidence=True,
            )  # fmt: skip
        except NbclassError as exc:
            raise RequestError(400, str(exc).replace("--explain", "explain")) from None
        yield scored.sources, scored.log_proba, extras


def predict(loaded: LoadedModel, request: PredictRequest) -> bytes:
    """The answer's body: one JSONL row of ``predict`` (and a newline) for one text, a
    JSON array of them for a list."""
    from ..output.render import prediction_lines

    try:
        abstention = request.abstention.for_model(loaded.model.typicality, loaded.settings)
        abstention.check_classes(loaded.classes)
    except NbclassError as exc:
        raise RequestError(400, _field_names(str(exc))) from None
    if request.single and not request.explain and loaded.quick_scores:
        from ..modelfile.quick import score_document

        calibration = loaded.quick.calibration if request.calibrated else None
        row, extra = score_document(
            loaded.quick, request.texts[0], loaded.settings, calibration, abstention, True
        )
        blocks = [(request.sources, [row], [extra])]
    elif request.texts:
        blocks = _scored_blocks(loaded.classifier(request.calibrated), request, abstention)
    else:
        blocks = []
    lines = [
        line
        for sources, rows, extras in blocks
        for line in prediction_lines(
            sources, loaded.classes, rows, "jsonl", request.top_k, extras, abstention.label
        )
    ]
    if request.single:
        return (lines[0] + "\n").encode("utf-8")
    return ("[" + ",\n".join(lines) + "]\n").encode("utf-8")
