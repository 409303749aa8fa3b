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
  (:func:`nbclass.models.exitcodes.check_stored`);
- ``vocabulary_filter``, ``selection`` and ``choice``: the records fit and
  select-features write, every field present and in the range of its option;
- ``sample`` (optional): the number of documents of the sample a default model chose
  from and how many unlearning took from it, whole numbers (:func:`sample`);
- the sizes (``n_features``, ``n_used``, ``ledger``): whole numbers, never a float,
  ``Infinity`` or a number past 64 bits (:func:`whole`).

Each group has its own function; a new header field gets a function of its own, called by
both loaders. A problem is a ``ValueError`` (or a :class:`nbclass.errors.UsageError` from
the settings' own checks), which the loaders turn into "is not a valid nbclass model".
Standard library only: the one-document path imports no numpy.
"""

from __future__ import annotations

import math

from ..defaults import ESTIMATORS
from ..errors import ModelFileError
from ..models.estimators import BETA_RANGE, Calibration, EstimatorSettings, Prepared
from ..models.exitcodes import check_stored
from ..ranges import RANGES, environment
from ..text.tokenizer import TokenizerSettings, make_tokenizer
from .fileformat import whole

_BETA_SLACK = 1e-9  # relative: the fitted β, scaled, is rounded once or twice


MEMORY_VARIABLE = "NBCLASS_MAX_MODEL_MEMORY"
MEMORY_FACTOR = 64  # the counts of a model may take this many times its file size,
MEMORY_FLOOR = 256 << 20  # and at least this many bytes
MAX_CANDIDATES = 256  # settings compared by fit's choice (8 formulas x feature sets x prunings)
CHOICE_NUMBERS = ("accuracy", "macro_f1", "log_loss", "calibrated_log_loss")
_SHORT = 200  # characters of a name in a record


def memory_limit(file_size: int) -> int:
    """The bytes of counts a model file of ``file_size`` bytes may ask for (a
    :class:`nbclass.errors.UsageError` for a malformed ``NBCLASS_MAX_MODEL_MEMORY``: read
    it before the checks whose errors say the model is not valid)."""
    limit = environment(MEMORY_VARIABLE)
    return max(MEMORY_FLOOR, MEMORY_FACTOR * file_size) if limit is None else limit


def memory(path: str, V: int, C: int, nnz: int, file_size: int, limit: int) -> None:
    """Refuse a model whose counts would take more memory than it may ask for.

    The counts are stored and loaded sparse: one entry per word and class where the word
    occurs (D_jc and T_jc in CSR, 20 bytes each), one string per word and per class (about
    80 bytes each), never a (V, C) table: a forged file of 2 MB declaring 200,000 words
    and 5,000 classes takes what its own entries take. A model may take up to
    ``MEMORY_FACTOR`` times its own size, and at least ``MEMORY_FLOOR`` (any file whose
    sections agree takes less than a third of that); ``NBCLASS_MAX_MODEL_MEMORY`` sets
    another limit. Checked by both loaders, before anything is built.
    """
    need = 20 * nnz + 80 * (V + C)
    if need > limit:
        raise ModelFileError(
            f"{path!r} declares {V} words, {C} classes and {nnz} (word, class) pairs: its "
            f"counts would take {_gib(need)} of memory, more than the {_gib(limit)} a model "
            f"of {file_size} bytes may ask for: set {MEMORY_VARIABLE} (e.g. "
            f"{-(-need // (1 << 30))}G) to load it"
        )


def _gib(n: int) -> str:
    """Bytes in words, rounded: ``'14.9 GiB'``, ``'256 MiB'``."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


def _in_range(option: str, value, record: str):
    """``value`` if it is in the range of ``option`` (:mod:`nbclass.ranges`), else
    ``ValueError`` naming the record's field."""
    if not RANGES[option].contains(value):
        raise ValueError(f"the {record} record's {option.lstrip('-')} is out of range")
    return value


def vocabulary_filter(header: dict) -> tuple[int, int | None, tuple[str, ...] | None]:
    """``(min_df, max_features, features)``, each in the range of its ``fit`` option;
    ``features`` (the feature families fit's choice kept, :mod:`nbclass.text.families`)
    None or distinct known names; ``prune_df`` and ``prune_mi`` (fit's chosen prunings,
    read with :meth:`nbclass.models.model.VocabularyFilter.from_dict`) None or in the
    range of ``--min-df`` and ``--max-features``."""
    data = header["vocabulary_filter"]
    if not isinstance(data, dict):
        raise ValueError("the vocabulary filter is not an object")
    max_features = data["max_features"]
    if max_features is not None:
        _in_range("--max-features", max_features, "vocabulary filter")
    features = data.get("features")
    if features is not None:
        from ..text.tokenizer import check_family_names

        features = check_family_names(features)
    if data.get("prune_df") is not None:
        _in_range("--min-df", data["prune_df"], "vocabulary filter")
    if data.get("prune_mi") is not None:
        _in_range("--max-features", data["prune_mi"], "vocabulary filter")
    return _in_range("--min-df", data["min_df"], "vocabulary filter"), max_features, features


def selection(header: dict) -> dict | None:
    """The record of ``select-features`` (None when the vocabulary was not selected)."""
    data = header["selection"]
    if data is None:
        return None
    fields = {"criterion", "k", "estimator", "alpha", "beta", "from_vocabulary"}
    if not isinstance(data, dict) or set(data) != fields:
        raise ValueError(f"the selection record does not hold exactly {', '.join(sorted(fields))}")
    beta = data["beta"]
    if (
        data["criterion"] != "mutual-information"
        or data["estimator"] not in ESTIMATORS
        or not isinstance(beta, list)
        or len(beta) != 2
    ):
        raise ValueError("the selection record names another criterion or estimator")
    _in_range("-k", data["k"], "selection")
    _in_range("--alpha", data["alpha"], "selection")
    for value in beta:
        _in_range("--beta", value, "selection")
    whole(data["from_vocabulary"], "selection's from_vocabulary")
    return data


def choice(header: dict) -> dict | None:
    """fit's choice record (:meth:`nbclass.models.choosing.Choice.to_dict`), or None."""
    data = header.get("choice")
    if data is None:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("candidates"), list):
        raise ValueError("the choice record is not an object with a list of candidates")
    if not 0 < len(data["candidates"]) <= MAX_CANDIDATES:
        raise ValueError(f"the choice record must list 1 to {MAX_CANDIDATES} candidates")
    for key in ("folds", "documents"):
        if not isinstance(data.get(key), int) or isinstance(data[key], bool) or data[key] < 0:
            raise ValueError(f"the choice record's {key} is not a count")
    for key in ("criterion", "chosen"):
        if not isinstance(data.get(key), str) or len(data[key]) > _SHORT:
            raise ValueError(f"the choice record's {key} is not a short text")
    for row in data["candidates"]:
        if not isinstance(row, dict) or not isinstance(row.get("name"), str):
            raise ValueError("a candidate of the choice record has no name")
        if len(row["name"]) > _SHORT or not isinstance(row.get("chosen"), bool):
            raise ValueError("a candidate of the choice record is malformed")
        EstimatorSettings.from_dict(row["settings"]).validate()
        for key in CHOICE_NUMBERS:
            value = row.get(key)
            if (key in row or key != "calibrated_log_loss") and not (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and math.isfinite(value)
                and value >= 0
            ):
                raise ValueError(f"a candidate's {key} is not a number >= 0")
    return data


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


def multi_label(header: dict, classes: list[str]) -> dict | None:
    """The ``multi_label`` record of a multi-label model (its classes are label sets), or
    None (:func:`nbclass.models.labelsets.checked_record`)."""
    data = header.get("multi_label")
    if data is None:
        return None
    from ..models.labelsets import checked_record

    return checked_record(data, classes)


def tokenizer(header: dict):
    """``(settings, tokenize)``: the tokenizer settings, checked, and the function that
    counts documents to score them (lazy: a long document's n-grams are made as they are
    counted against the vocabulary; without the symbols and word n-grams the chosen
    features leave out,
    :meth:`nbclass.text.tokenizer.TokenizerSettings.scoring`)."""
    settings = TokenizerSettings.from_dict(header["tokenizer"])
    make_tokenizer(settings)  # UsageError for what fit would refuse
    scoring = settings
    if settings.scores_apart:
        scoring = settings.scoring(vocabulary_filter(header)[2])
    return settings, make_tokenizer(scoring, lazy=True)


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


def sample(header: dict) -> tuple[int, int] | None:
    """``(documents, short)`` of the ``sample`` record (:mod:`nbclass.counting.sketch`), or
    None when the model keeps no sample."""
    record = header.get("sample")
    if record is None:
        return None
    if not isinstance(record, dict) or set(record) != {"documents", "short"}:
        raise ValueError("the sample record is malformed")
    return whole(record["documents"], "sample documents"), whole(record["short"], "sample short")


def exit_codes(header: dict, classes: list[str]) -> dict[str, int] | None:
    """The stored exit codes (None: sorted codes, as in every file that has none)."""
    return check_stored(header.get("exit_codes"), classes)


def calibration(header: dict, classes: int | None = None) -> Calibration | None:
    """The calibration fit stored with its choice, or None; bounded parameters, and C
    class offsets when it has them (``classes``: C)."""
    data = header.get("calibration")
    return None if data is None else Calibration.from_dict(data, classes)


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
