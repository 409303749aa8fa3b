"""What a chosen model carries into predict: the check of its choice record, and its
calibration applied to scores.

:mod:`nbclass.models.choosing` makes both when fit chooses the model; reading a model file
and predicting need only what is here, which needs numpy but not scipy (whose import
takes a bulk predict's main process 0.1 s that the workers do not wait for).
"""

from __future__ import annotations

import numpy as np

from .estimators import Calibration
from .posterior import (
    COLUMN_CLASSES,
    best_of_two,
    log_posterior,
    row_max,
    shifted_log_posterior,
)


def score_gaps(jll: np.ndarray) -> np.ndarray:
    """g(x) = b_(1) − b_(2) per document, shape (n,): how far each row's top score is
    ahead of its second; 0 where fewer than two classes are possible (as
    :func:`nbclass.models.estimators.score_gap`, for arrays)."""
    if jll.shape[1] < 2:
        return np.zeros(jll.shape[0])
    return _gaps(*_first_two(jll.copy()))


def _first_two(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first, second)``: each row's largest entry of ``scores`` (n, C), C ≥ 1, and the
    largest of the rest (−∞ where there is none), shape (n,) each. ``scores`` is changed
    and put back: the caller's own array (a copy), never one it was given.

    The largest, then the largest of the rest: the two values a partition of each row
    gives, without its selection over every class (12 ms a block of 52 documents
    against 20,000 classes, against 1.6 ms).

    numpy's reductions along a row take it a row at a time, which at a few classes
    costs more than their arithmetic (the choice's calibrations). Of two columns, the
    largest is the argmax's (:func:`nbclass.models.posterior.best_classes`' comparison)
    and the second the other cell (the largest of it and −∞). Of a few more
    (:data:`nbclass.models.posterior.COLUMN_CLASSES`), the largest of the rest is taken
    column by column (:func:`nbclass.models.posterior.row_max`), the same number, and
    kept where none of them is 0 or NaN (whose sign, or payload, the order of a
    reduction may choose); numpy's reduction gives them otherwise."""
    rows = np.arange(scores.shape[0])
    if scores.shape[1] == 2:
        best = best_of_two(scores)
        return scores[rows, best], scores[rows, 1 - best]
    best = scores.argmax(axis=1)
    first = scores[rows, best]
    scores[rows, best] = -np.inf
    second = row_max(scores) if scores.shape[1] <= COLUMN_CLASSES else None
    if second is None or not (second != 0).all() or np.isnan(second).any():
        second = scores.max(axis=1)
    scores[rows, best] = first
    return first, second


def _gaps(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """:func:`score_gaps` of rows whose largest two scores are ``first`` and ``second``."""
    with np.errstate(invalid="ignore"):
        gap = first - second
    return np.where(np.isfinite(second), gap, 0.0)


def temperatures(calibration: Calibration, n_tokens, jll: np.ndarray) -> np.ndarray:
    """T(x) of documents of ``n_tokens`` known tokens and scores ``jll`` (n, C), shape
    (n,) (as :meth:`nbclass.models.estimators.Calibration.temperature`, for arrays)."""
    return _temperatures(calibration, n_tokens, score_gaps(jll))


def _temperatures(calibration: Calibration, n_tokens, gaps: np.ndarray) -> np.ndarray:
    """T(x) of documents of ``n_tokens`` known tokens whose scores are ``gaps`` apart."""
    n = np.asarray(n_tokens, dtype=np.float64)
    return np.exp(
        calibration.t0 + calibration.t1 * np.log1p(n) + calibration.t2 * np.log1p(gaps)
    )  # fmt: skip


def calibrated(jll: np.ndarray, n_tokens: np.ndarray, calibration: Calibration | None):
    """log p(c | x) of scores ``jll`` (n, C), calibrated when ``calibration`` is given
    (documents with known tokens; :func:`reported` is what commands print): softmax_c(b_c
    / T(x)), plus the class offsets a_c + d_c · log(1 + n_x) when it has them.

    The scores are scaled by 1/T(x) in a copy of their own, which the softmax then
    shifts and normalises in place. Where every scale is positive and finite and there
    are no offsets, a row's largest scaled score is its largest score times the scale,
    and its second largest the second times the scale (a product by a positive number
    rounds monotonically): the softmax takes both from the gap's two values, rather
    than from two more passes over the block (:func:`nbclass.models.posterior.
    shifted_log_posterior`), the same floats.
    """
    if calibration is None:
        return log_posterior(jll)
    out = jll.copy()
    first, second = _first_two(out) if jll.shape[1] else (None, None)
    gaps = np.zeros(jll.shape[0]) if first is None else _gaps(first, second)
    scale = 1.0 / _temperatures(calibration, n_tokens, gaps)
    shift = offsets(calibration, n_tokens)
    if np.all(np.isfinite(scale) & (scale > 0.0)):
        # −∞ × a positive finite scale is −∞: the same floats as the branch below,
        # without its two more passes over the block.
        out *= scale[:, None]
        if shift is None and first is not None:
            top = first * scale
            if np.isfinite(top).all():
                out -= top[:, None]
                return shifted_log_posterior(out, second * scale - top)
    else:
        with np.errstate(invalid="ignore"):
            out = np.where(np.isneginf(jll), -np.inf, jll * scale[:, None])
    if shift is not None:  # -inf stays -inf
        out += shift
    return log_posterior(out)


def offsets(calibration: Calibration, n_tokens) -> np.ndarray | None:
    """a_c + d_c · log(1 + n_x) of each document, shape (n, C), or None when the
    calibration has no class offsets (as :meth:`Calibration.shift`, for arrays)."""
    if not calibration.offsets:
        return None
    u = np.log1p(np.asarray(n_tokens, dtype=np.float64))
    return np.asarray(calibration.offsets) + u[:, None] * np.asarray(calibration.length_offsets)


def reported(
    jll: np.ndarray, known: np.ndarray, calibration: Calibration | None, prior: np.ndarray
) -> np.ndarray:
    """The posterior every command reports, log p(c | x), ndarray of shape (n, C).

    Parameters
    ----------
    jll : ndarray of shape (n, C)
        The scores b_c of the settings.
    known : ndarray of shape (n,)
        n_x, each document's tokens that are words of the (used) vocabulary.
    calibration : Calibration or None
        softmax_c(b_c / T(x)) when given, softmax_c(b_c) when not.
    prior : ndarray of shape (C,)
        log π_c of the settings (:func:`nbclass.models.estimators.no_evidence_posterior`).

    Notes
    -----
    No evidence, no confidence: a document with n_x = 0 gets ``prior`` exactly, with or
    without the calibration (whose temperature at n_x = 0 would sharpen or flatten the
    prior, and a Bernoulli score would count every word as absent).
    """
    out = calibrated(jll, known, calibration)
    empty = np.asarray(known) == 0
    if empty.any():
        out[empty] = prior
    return out
