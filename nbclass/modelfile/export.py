"""A model as a linear function of document features, readable without nbclass.

Naive Bayes is a generalized linear model (seed 004): for the multinomial, Bernoulli,
complement and Poisson models, and every transform, predict's probabilities are

    p(c | x) = softmax_c(f(x) W + b)

with f(x) the document's features (counts or presences, then log(1 + x), idf and the
length normalisation), W of shape (V, C) and b of shape (C,). DCM adds a per-class
length term: f(x) W + b − lnΓ(s_c + n), n the document's in-vocabulary tokens, with
f(x) its word presences. An export holds what scoring needs: the tokenizer settings, the
vocabulary, W, b, the transform, DCM's s_c, and the calibration fit chose with the
settings (null for a named formula): when present, {"t0", "t1", "t2"}, the scores are
divided by T(x) = exp(t0 + t1 log(1 + n) + t2 log(1 + g)) before the softmax, n the
document's in-vocabulary tokens and g the gap between its two top scores, and with
"offsets" a_c and "length_offsets" d_c, a_c + d_c log(1 + n) added to them; and ``prior``,
log p(c | x) of a document with no in-vocabulary token (n = 0), which predict reports
whatever the scores.

Two files of the same content: JSON (one object) and NPZ (``numpy.savez_compressed``: the arrays
``vocabulary``, ``classes``, ``weights``, ``bias`` and, when there are any, ``idf`` and
``concentration``, plus ``header``, the JSON of the other fields; nothing pickled).
``docs/export.md`` gives a reference scorer.
"""

from __future__ import annotations

import json

import numpy as np

from ..errors import NbclassError
from ..models.estimators import EstimatorSettings
from ..models.model import Classifier, Model
from ..models.sparsity import SparseWeights

FORMAT = "nbclass-export"
VERSION = 1
PAIRS_VERSION = 2  # W given by its nonzero pairs (a model past DENSE_CELLS weight cells)
EXPORTED = "multinomial, bernoulli, complement, poisson and dcm"


def _calibration_record(calibration) -> dict:
    """{"t0", "t1", "t2"}, and the class offsets when the calibration has them."""
    record = {"t0": calibration.t0, "t1": calibration.t1, "t2": calibration.t2}
    if calibration.offsets:
        record["offsets"] = list(calibration.offsets)
        record["length_offsets"] = list(calibration.length_offsets)
    return record


def export_data(model: Model, settings: EstimatorSettings, calibrate: bool = True) -> dict:
    """What an export holds, as plain data (numpy arrays for W, b, idf, s_c), with the
    calibration predict applies to these settings (``calibrate`` and the model's defaults,
    as :class:`nbclass.models.model.Classifier` decides), if any.

    Raises
    ------
    NbclassError
        For a setting whose scores are not f(x) W + b (plus DCM's length term): the
        exact predictives, a model with hashed columns (its tokens are column names), or
        weights that are not finite (``--estimator mle``).
    """
    if settings.estimator == "predictive" and settings.model in ("multinomial", "poisson"):
        raise NbclassError(
            f"export writes linear models ({EXPORTED}); --estimator predictive of --model "
            f"{settings.model} is not linear in the counts: export with --estimator "
            "posterior-mean"
        )
    if model.tokenizer.hash_features is not None:
        raise NbclassError(
            "export needs a model of words; this one hashes tokens into columns "
            "(--hash-features): fit without it to export"
        )
    if model.multi_label is not None:
        return _label_export(model, settings, calibrate)
    classifier = Classifier(model, settings, calibrate=calibrate)
    scorer, calibration = classifier.scorer, classifier.calibration
    weights, bias = scorer.weights, np.asarray(scorer.bias)
    if isinstance(weights, SparseWeights):  # past DENSE_CELLS: the pairs, not the table
        weights = pair_weights(weights)
        finite = all(np.isfinite(v).all() for v in weights.values() if v is not None)
    else:
        weights = np.asarray(weights)
        finite = np.isfinite(weights).all()
    if getattr(scorer, "required", None) is not None or not (finite and np.isfinite(bias).all()):
        if settings.estimator == "mle":
            raise NbclassError(
                "export needs finite weights; under --estimator mle a word unseen in a class "
                "(or seen in all its documents) rules the class out: export with --estimator "
                "posterior-mean or map"
            )
        raise NbclassError(  # pragma: no cover - smoothed estimates in range are finite
            f"export needs finite weights, and --estimator {settings.estimator} with these "
            "pseudo-counts gives one that is not: export with smaller --alpha and --beta"
        )
    counts = model.active_counts
    concentration = getattr(scorer, "concentration", None)
    idf = getattr(scorer, "idf", None)
    return {
        "format": FORMAT,
        "version": PAIRS_VERSION if isinstance(weights, dict) else VERSION,
        "classes": list(counts.classes),
        "settings": settings.to_dict(),
        "tokenizer": _tokenizer_record(model),
        "transform": {
            "binary": bool(scorer.binary),
            "tf": getattr(scorer, "tf", "raw"),
            "length_norm": bool(getattr(scorer, "length_norm", False)),
        },
        "calibration": None if calibration is None else _calibration_record(calibration),
        "prior": classifier.prior.tolist(),
        "vocabulary": list(counts.vocabulary),
        "weights": weights,
        "bias": bias,
        "idf": None if idf is None else np.asarray(idf),
        "concentration": None if concentration is None else np.asarray(concentration),
    }


def _tokenizer_record(model: Model) -> dict:
    """The export's ``tokenizer`` record: what a reader needs to count documents as the
    model does (``ngram_doc_limit``, ``unspaced`` and ``symbols`` only when set, so other
    exports are unchanged; not ``symbols`` when the chosen features leave them out,
    :meth:`nbclass.text.tokenizer.TokenizerSettings.scoring`: none is in the vocabulary)."""
    tokenizer = model.tokenizer.scoring(model.vocabulary_filter.features)
    return {
        "lowercase": tokenizer.lowercase,
        "token_pattern": tokenizer.token_pattern,
        "ngram_range": list(tokenizer.ngram_range),
        "stop_words": list(tokenizer.stop_words),
        **({"ngram_doc_limit": limit} if (limit := tokenizer.ngram_doc_limit) else {}),
        **({"unspaced": tokenizer.unspaced} if tokenizer.unspaced else {}),
        **({"symbols": True} if tokenizer.symbols else {}),
    }


def _label_export(model: Model, settings: EstimatorSettings, calibrate: bool) -> dict:
    """The export of a multi-label model: per label l, s_l(x) = f(x) W_l + b_l, then
    p_l = 1 / (1 + exp(−(a_l s_l + c_l))), predicted when p_l ≥ t_l (the most probable
    label when none passes); ``labels`` instead of ``classes``."""
    from ..models.multilabel import predictor

    own = calibrate and settings == model.defaults
    labelled = predictor(model.active_counts, settings, model.multi_label, own)
    linear = labelled.scorer.linear()
    if linear is None or not np.isfinite(linear[1]).all() or not np.isfinite(linear[2]).all():
        raise NbclassError(
            "export writes a multi-label model's linear log-odds: use the multinomial, "
            "bernoulli or poisson model with a smoothing estimator (not the DCM, complement "
            "or --estimator predictive), and labels that some but not all documents have"
        )
    scorer, weights, bias = linear
    idf = getattr(scorer, "idf", None)
    decisions = labelled.decisions
    return {
        "format": FORMAT,
        "version": VERSION,
        "multi_label": True,
        "labels": list(labelled.labels),
        "settings": settings.to_dict(),
        "tokenizer": _tokenizer_record(model),
        "transform": {
            "binary": bool(scorer.binary),
            "tf": scorer.tf,
            "length_norm": bool(scorer.length_norm),
        },
        "calibration": {
            "a": decisions.calibration[:, 0].tolist(),
            "c": decisions.calibration[:, 1].tolist(),
        },
        "thresholds": decisions.thresholds.tolist(),
        "vocabulary": list(model.active_counts.vocabulary),
        "weights": weights,
        "bias": bias,
        "idf": None if idf is None else np.asarray(idf),
        "concentration": None,
    }


def pair_weights(weights: SparseWeights) -> dict:
    """W as its nonzero pairs (:class:`nbclass.models.sparsity.SparseWeights`): ``indptr``
    (V + 1,), ``classes`` and ``values`` (one per pair, by word then class), and what a
    word has off its pairs, ``word_j * scale_c + constant_c`` (``word`` and ``scale``
    None but for complement)."""
    values = weights.values
    return {
        "constant": weights.constant,
        "word": weights.word,
        "scale": weights.scale,
        "indptr": values.indptr.astype(np.int64),
        "classes": values.indices.astype(np.int64),
        "values": values.data,
    }


ARRAYS = ("vocabulary", "classes", "labels", "weights", "bias", "idf", "concentration")


def _plain(value):
    """``value`` with its arrays (also inside a dict) as lists, for JSON."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value.tolist() if isinstance(value, np.ndarray) else value


def json_bytes(data: dict) -> bytes:
    """The export as one JSON object (arrays as lists, numbers in full), UTF-8."""
    plain = {k: _plain(v) for k, v in data.items()}
    return (json.dumps(plain, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def npz_bytes(data: dict) -> bytes:
    """The export as ``numpy.savez_compressed`` writes it: arrays of numbers and of str
    only, so numpy loads it with ``allow_pickle=False``."""
    import io

    header = {k: v for k, v in data.items() if k not in ARRAYS}
    arrays = {
        "header": np.array(json.dumps(header, ensure_ascii=False, allow_nan=False)),
        "vocabulary": np.array(data["vocabulary"], dtype=str),
    }
    if isinstance(data["weights"], dict):  # the pairs: weights_constant, weights_indptr, ...
        for name, value in data["weights"].items():
            if value is not None:
                arrays[f"weights_{name}"] = value
    else:
        arrays["weights"] = data["weights"]
    arrays["bias"] = data["bias"]
    for name in ("classes", "labels"):
        if name in data:
            arrays[name] = np.array(data[name], dtype=str)
    for name in ("idf", "concentration"):
        if data[name] is not None:
            arrays[name] = data[name]
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def export(
    model: Model, settings: EstimatorSettings, path: str, fmt: str = "json",
    calibrate: bool = True,
) -> int:  # fmt: skip
    """Write the export of ``model`` under ``settings`` (calibrated as predict scores them
    unless not ``calibrate``) to ``path`` (atomically, as model files are written);
    returns the bytes written."""
    from .textfile import write_atomic

    data = export_data(model, settings, calibrate)
    return write_atomic(
        json_bytes(data) if fmt == "json" else npz_bytes(data), path, model=False
    )
