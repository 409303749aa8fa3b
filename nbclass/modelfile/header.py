"""The JSON header of a text model file, read as untrusted input, one field group at a time.

A model file may come from elsewhere, and its header's checksum proves nothing about who
wrote it. Every field a command uses is read here and checked against what nbclass itself
can write, by both loaders (the full one, :mod:`nbclass.modelfile.textfile`, and the one-document
path, :mod:`nbclass.modelfile.quick`), so that the two accept exactly the same files:

- ``classes``: a list of distinct names, sorted (as every fit writes them);
- ``tokenizer``: the settings of :class:`nbclass.text.tokenizer.TokenizerSettings`, with the
  limits of the ``fit`` options (n-grams of at most ``MAX_NGRAM`` words, a token pattern
  without the shapes that take exponential time: :func:`nbclass.text.tokenizer.compile_pattern`);
- ``defaults``: estimator settings that ``fit`` accepts;
- ``prepared``: the numbers computed from every count for the defaults; the fitted β must
  be one that the prior fit can return (in ``BETA_RANGE``, times the scale of the
  transformed sums), and the full loader recomputes the class totals from the counts;
- ``exit_codes`` (optional): each class's exit code, distinct codes 10 to 124
  (:func:`nbclass.models.exitcodes.check_stored`).

Each group has its own function; a new header field gets a function of its own, called by
both loaders. A problem is a ``ValueError`` (or a :class:`nbclass.errors.UsageError` from
the settings' own checks), which the loaders turn into "is not a valid nbclass model".
Standard library only: the one-document path imports no numpy.
"""

from __future__ import annotations

import math

from ..models.estimators import BETA_RANGE, Calibration, EstimatorSettings, Prepared
from ..models.exitcodes import check_stored
from ..text.tokenizer import TokenizerSettings, make_tokenizer

_BETA_SLACK = 1e-9  # relative: the fitted β, scaled, is rounded once or twice


def classes(header: dict) -> list[str]:
    """The class names: a non-empty list of distinct strings, sorted."""
    names = header["classes"]
    if not isinstance(names, list) or not names:
        raise ValueError("the classes are not a list of names")
    if not all(isinstance(name, str) for name in names):
        raise ValueError("a class name is not a string")
    if any(a >= b for a, b in zip(names, names[1:])):
        raise ValueError("class names are not sorted and unique")
    return names


def tokenizer(header: dict):
    """``(settings, tokenize)``: the tokenizer settings, checked, and their function."""
    settings = TokenizerSettings.from_dict(header["tokenizer"])
    return settings, make_tokenizer(settings)  # UsageError for what fit would refuse


def defaults(header: dict) -> EstimatorSettings:
    """The default estimator settings, as ``fit`` would accept them."""
    return EstimatorSettings.from_dict(header["defaults"]).validate()


def prepared(header: dict, n_classes: int, settings: EstimatorSettings) -> Prepared | None:
    """The prepared numbers, which must belong to the defaults ``settings``."""
    data = header.get("prepared")
    if data is None:
        return None
    found = Prepared.from_dict(data, n_classes)
    if found.settings != settings:
        raise ValueError("the prepared numbers belong to other settings than the defaults")
    transformed = settings.model in ("multinomial", "complement") and settings.transformed
    expected = {
        "beta": settings.prior_fit,
        "class_totals": transformed,
        "weight_norms": transformed and settings.norm in ("weight", "both"),
    }
    for name, wanted in expected.items():
        if (getattr(found, name) is not None) != wanted:
            raise ValueError(
                f"the prepared {name} is {'missing' if wanted else 'not expected'} for the "
                "default settings"
            )
    return found


def exit_codes(header: dict, classes: list[str]) -> dict[str, int] | None:
    """The stored exit codes (None: sorted codes, as in every file that has none)."""
    return check_stored(header.get("exit_codes"), classes)


def calibration(header: dict) -> Calibration | None:
    """The calibration fit stored with its choice, or None; bounded parameters."""
    data = header.get("calibration")
    return None if data is None else Calibration.from_dict(data)


def transformed_total(found: Prepared) -> float | None:
    """S = Σ_jc S_jc from the prepared class totals (None when the sums are raw counts).

    Multinomial totals are S_c, which add up to S; complement totals are S − S_c, which
    add up to (C − 1) S; with one class they are 0 and say nothing of S (NaN: unknown).
    """
    settings = found.settings
    if found.class_totals is None or not (
        settings.model in ("multinomial", "complement") and settings.transformed
    ):
        return None
    total = math.fsum(found.class_totals)
    if settings.model == "complement":
        C = len(found.class_totals)
        return total / (C - 1) if C > 1 else math.nan
    return total


def check_beta(found: Prepared | None, raw_tokens: int, total: float | None) -> None:
    """Refuse a fitted β that the prior fit cannot have produced.

    The prior fit returns β in ``BETA_RANGE``; for transformed sums it is then multiplied
    by S / T (the transformed total over the raw token total T of the used words), so
    β / (S / T) must be in the range. ``total`` is S (None: raw counts, no scaling; NaN:
    not known, so not checked).
    """
    if found is None or found.beta is None or (total is not None and math.isnan(total)):
        return
    scale = 1.0
    if total is not None and raw_tokens > 0:
        scale = total / raw_tokens
    if not scale > 0:
        raise ValueError("a fitted β with transformed sums that are all zero")
    low, high = BETA_RANGE
    beta = found.beta / scale
    if not (low * (1 - _BETA_SLACK) <= beta <= high * (1 + _BETA_SLACK)):
        raise ValueError(
            f"the fitted β {found.beta!r} is outside the range the prior fit can give "
            f"({low:g} to {high:g}, times {scale:.6g} for the transformed sums)"
        )
