"""What a chosen model carries into predict: the check of its choice record, and its
calibration applied to scores.

:mod:`nbclass.models.choosing` makes both when fit chooses the model; reading a model file
and predicting need only what is here, which needs numpy but not scipy (whose import
takes a bulk predict's main process 0.1 s that the workers do not wait for).
"""

from __future__ import annotations

import numpy as np

from .estimators import Calibration
from .posterior import log_posterior


def score_gaps(jll: np.ndarray) -> np.ndarray:
    """g(x) = b_(1) − b_(2) per document, shape (n,): how far each row's top score is
    ahead of its second; 0 where fewer than two classes are possible (as
    :func:`nbclass.models.estimators.score_gap`, for arrays)."""
    if jll.shape[1] < 2:
        return np.zeros(jll.shape[0])
    # The largest, then the largest of the rest: the two values a partition of each row
    # gives, without its selection over every class (12 ms a block of 52 documents
    # against 20,000 classes, against 1.6 ms).
    rows = np.arange(jll.shape[0])
    best = jll.argmax(axis=1)
    first = jll[rows, best]
    rest = jll.copy()
    rest[rows, best] = -np.inf
    second = rest.max(axis=1)
    with np.errstate(invalid="ignore"):
        gap = first - second
    return np.where(np.isfinite(second), gap, 0.0)


def temperatures(calibration: Calibration, n_tokens, jll: np.ndarray) -> np.ndarray:
    """T(x) of documents of ``n_tokens`` known tokens and scores ``jll`` (n, C), shape
    (n,) (as :meth:`nbclass.models.estimators.Calibration.temperature`, for arrays)."""
    n = np.asarray(n_tokens, dtype=np.float64)
    return np.exp(
        calibration.t0 + calibration.t1 * np.log1p(n)
        + calibration.t2 * np.log1p(score_gaps(jll))
    )  # fmt: skip


def calibrated(jll: np.ndarray, n_tokens: np.ndarray, calibration: Calibration | None):
    """log p(c | x) of scores ``jll`` (n, C), calibrated when ``calibration`` is given
    (documents with known tokens; :func:`reported` is what commands print): softmax_c(b_c
    / T(x)), plus the class offsets a_c + d_c · log(1 + n_x) when it has them."""
    if calibration is None:
        return log_posterior(jll)
    scale = 1.0 / temperatures(calibration, n_tokens, jll)
    if np.all(np.isfinite(scale) & (scale > 0.0)):
        # −∞ × a positive finite scale is −∞: the same floats as the branch below,
        # without its two more passes over the block.
        scaled = jll * scale[:, None]
    else:
        with np.errstate(invalid="ignore"):
            scaled = np.where(np.isneginf(jll), -np.inf, jll * scale[:, None])
    shift = offsets(calibration, n_tokens)
    if shift is not None:  # -inf stays -inf
        scaled += shift
    return log_posterior(scaled)


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
