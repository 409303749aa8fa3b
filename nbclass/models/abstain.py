"""Abstention: when a prediction is not trusted, say ``unsure`` and why.

Plain Python (no numpy), so the one-document path (:mod:`nbclass.modelfile.quick`) decides exactly
as the batch path does. A document is unsure when any test fails, and its reason is the
first that fails, in this order:

=====================  =========================================================
reason                 test (p1 ≥ p2 the two highest posterior probabilities)
=====================  =========================================================
``no-known-words``     no known token at all (the probabilities are the class
                       prior, :func:`nbclass.models.chosen.reported`); always on,
                       unless ``--min-known 0``
``few-known-words``    known tokens < ``--min-known N``, or known tokens / tokens
                       < ``--min-known P%`` (a document with no token has share 0)
``unlike-training``    per-token log-evidence log p(x) / known tokens below the
                       ``--min-typicality P``-th percentile of the training
                       documents' (:mod:`nbclass.models.novelty`; no known token: not judged)
``low-probability``    p1 < ``--min-probability``
``low-margin``         p1 − p2 < ``--min-margin``
=====================  =========================================================

"Known" tokens are the document's tokens (n-grams included) that are words of the
model's vocabulary; the others are ignored by the model, so a document made mostly of
them is classified on little evidence. A document for which every class is impossible
(``--estimator mle``) already has no label; it is not also marked unsure.

Exit codes of ``predict --exit-code`` (one document): the class's code from the
model's code map (:mod:`nbclass.models.exitcodes`: 10 to 124, kept for good once given),
9 for unsure (a document with no known word included, unless ``--min-known 0``) or no
label. Codes 1 and 2 stay errors.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..errors import UsageError
from ..ranges import check
from ..records import Record, replace

UNSURE = "unsure"
NO_KNOWN_WORDS = "no-known-words"  # the reason of a document with no known token
EXIT_UNSURE = 9


class Abstention(Record, frozen=True):
    """The thresholds of ``predict``; ``None`` disables a test.

    Attributes
    ----------
    min_probability : float or None
        p1 below this is unsure.
    min_margin : float or None
        p1 − p2 below this is unsure.
    min_known_tokens : int or None
        Fewer known tokens than this is unsure.
    min_known_share : float or None
        A smaller share of known tokens (0 to 1) than this is unsure.
    label : str
        The label written instead of the class.
    min_typicality : float or None
        P, a percentile (0 to 100) of the training documents' per-token evidence.
    typicality_threshold : float or None
        That percentile's value for the model at hand (:meth:`for_model`).
    no_known : bool
        A document with no known token is unsure (``no-known-words``); ``--min-known 0``
        turns this off, and such a document takes the class its prior favours.
    """

    min_probability: float | None = None
    min_margin: float | None = None
    min_known_tokens: int | None = None
    min_known_share: float | None = None
    label: str = UNSURE
    min_typicality: float | None = None
    typicality_threshold: float | None = None
    no_known: bool = True

    @classmethod
    def from_options(
        cls,
        min_probability: float | None,
        min_margin: float | None,
        min_known: tuple[str, ...] = (),
        label: str = UNSURE,
        min_typicality: float | None = None,
    ) -> Abstention:
        """Validate the command-line values; ``--min-known`` is ``N`` or ``P%``, maybe both.

        >>> Abstention.from_options(0.9, None, ("3", "50%")).min_known_share
        0.5
        """
        check("--min-probability", min_probability)
        check("--min-margin", min_margin)
        tokens = share = None
        for text in min_known:
            text = text.strip()
            try:
                if text.endswith("%"):
                    share = float(text[:-1]) / 100
                    if not (0 <= share <= 1):
                        raise ValueError
                else:
                    tokens = int(text)
                    if tokens < 0:
                        raise ValueError
            except ValueError:
                raise UsageError(
                    f"--min-known {text!r} must be a whole number of known tokens (e.g. 3) "
                    "or a percentage of the document's tokens (e.g. 50%)"
                ) from None
        if not label or any(ch in label for ch in "\t\n\r"):
            raise UsageError("--unsure-label must be a non-empty name without tabs or newlines")
        check("--min-typicality", min_typicality)
        return cls(
            min_probability, min_margin, tokens, share, label, min_typicality,
            no_known=tokens != 0,
        )  # fmt: skip

    def for_model(self, record: dict | None, settings) -> Abstention:
        """With ``--min-typicality``: these thresholds with the model's percentile value
        (:func:`.novelty.typicality_threshold`, which refuses a model without one)."""
        if self.min_typicality is None:
            return self
        from .novelty import typicality_threshold

        value = typicality_threshold(record, settings, self.min_typicality)
        return replace(self, typicality_threshold=value)

    @property
    def active(self) -> bool:
        """Whether any document can be unsure (by default, one with no known token)."""
        return self.no_known or self.thresholds

    @property
    def thresholds(self) -> bool:
        """Whether any threshold option is given (beyond the no-known-word rule)."""
        return any(
            v is not None
            for v in (
                self.min_probability,
                self.min_margin,
                self.min_known_tokens,
                self.min_known_share,
                self.min_typicality,
            )
        )

    def check_classes(self, classes) -> None:
        """Refuse an unsure label that is also a class: a script could not tell them apart."""
        if self.label in classes:
            raise UsageError(
                f"--unsure-label {self.label!r} is a class of the model: choose another name"
            )

    def reason(
        self, log_proba: list[float], known: int, tokens: int, evidence: float | None = None
    ) -> str | None:
        """Why a document is unsure, or ``None``.

        Parameters
        ----------
        log_proba : list of float, length C
            log p(c | x).
        known, tokens : int
            The document's known tokens and all its tokens.
        evidence : float or None
            log p(x) (needed with ``--min-typicality``).
        """
        if max(log_proba) == -math.inf:
            return None
        if self.no_known and known == 0:
            return NO_KNOWN_WORDS
        if self.min_known_tokens is not None and known < self.min_known_tokens:
            return "few-known-words"
        if self.min_known_share is not None and (
            (known / tokens if tokens else 0.0) < self.min_known_share
        ):
            return "few-known-words"
        if (
            self.typicality_threshold is not None
            and known > 0
            and evidence is not None
            and evidence / known < self.typicality_threshold
        ):
            return "unlike-training"
        if self.min_probability is None and self.min_margin is None:
            return None
        proba = sorted((math.exp(v) for v in log_proba), reverse=True)
        if self.min_probability is not None and proba[0] < self.min_probability:
            return "low-probability"
        if self.min_margin is not None and proba[0] - proba[1] < self.min_margin:
            return "low-margin"
        return None


def check_exit_classes(codes: Mapping[str, int], classes) -> None:
    """Refuse ``--exit-code`` for a model with a class that has no code (more than 115)."""
    from .exitcodes import check_exit_classes as check

    check(codes, classes)


def exit_code(codes: Mapping[str, int], label: str) -> int:
    """The class's code in the model's map ``codes``; 9 for the unsure label or no label."""
    return codes.get(label, EXIT_UNSURE)


def log_sum_exp(values: list[float]) -> float:
    """log Σ exp(v), −inf when every value is −inf (the log evidence from b_c).

    >>> log_sum_exp([1000.0, 1000.0])
    1000.6931471805599
    """
    top = max(values)
    if top == -math.inf:
        return -math.inf
    return top + math.log(sum(math.exp(v - top) for v in values))
