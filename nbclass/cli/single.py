"""One document, scored and printed without numpy, scipy, click or rich.

A cron job that pipes one ticket into ``nbclass predict`` spends most of its time
starting up. This module is that command's single-document branch as a library
function, :func:`predict_one`, shared by the click command (:mod:`nbclass.cli.predict`) and the
console script's fast start (:mod:`nbclass.cli.entry`), so that the two print the same
bytes: the model is read by :class:`nbclass.modelfile.quick.QuickModel`, the posterior computed in
plain Python, the line rendered by :mod:`nbclass.output.render`. :func:`print_predictions`,
which prints lines and warns about documents every class rules out, serves the batch
path too.

Standard library only (and the numpy-free modules of this package).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator

from ..errors import NbclassWarning


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` of the command: ``Warning: ...`` for nbclass's warnings."""
    if issubclass(category, NbclassWarning):
        sys.stderr.write(f"Warning: {message}\n")
    else:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def warn_skip(skip) -> None:
    """The warning line of a document the reading policy skips (:mod:`nbclass.reading.policy`)."""
    from ..names import escape

    detail = f" ({skip.detail})" if skip.detail else ""
    sys.stderr.write(f"Warning: skipped '{escape(skip.source)}': {skip.reason}{detail}\n")


def echo_lines(lines) -> None:
    """Write each line and a newline to stdout, then flush: all in one write (a batch of
    a thousand lines, when stdout is unbuffered as under ``PYTHONUNBUFFERED``, would
    otherwise cost two system calls a line)."""
    lines = list(lines)
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()


def print_predictions(
    sources, classes, rows, fmt, top_k, settings, extras=None, unsure_label="unsure"
) -> list[str]:
    """Print the predictions (rows of log p(c | x)); returns the labels printed ("" for none).

    A document that every class rules out (all −inf) gets the label "" and a warning.
    """
    from ..output.render import printed

    batch = printed(sources, classes, rows, fmt, top_k, settings, extras, unsure_label)
    return print_printed(batch)


def print_printed(batch) -> list[str]:
    """Print the lines of a :class:`nbclass.output.render.Printed` and warn of its
    problems; returns its labels."""
    echo_lines(batch.lines)
    for problem in batch.problems:
        warnings.warn(problem, NbclassWarning, stacklevel=1)
    return batch.labels


def predict_one(
    model_path: str,
    documents: Iterator[tuple[str, str]],
    overrides: dict,
    fmt: str,
    top_k: int | None,
    abstention,
    use_exit_code: bool,
    use_calibration: bool = True,
) -> int | None:
    """Score and print the one document of ``documents`` with the model at ``model_path``.

    ``overrides`` are the estimator options given (``None`` = the model's default), as
    :func:`nbclass.models.estimators.resolve` takes them; ``abstention`` an
    :class:`nbclass.models.abstain.Abstention`. The model's calibration applies when no option
    is given and ``use_calibration`` holds, as on the batch path
    (:func:`nbclass.models.model.scoring_settings`). The document is read only after the model and
    the options are found usable.

    Returns the exit code (the class's code with ``use_exit_code``, 9 for unsure
    or no label, else 0), or ``None`` without reading the document when the settings
    need every count of the model (a fitted β, idf, normalised weights, the DCM): the
    caller then scores it on the batch path, with the same result.
    """
    from ..modelfile.quick import QuickModel, score_document
    from ..models.abstain import check_exit_classes, exit_code
    from ..models.estimators import overridden, resolve
    from ..models.novelty import evidence_settings
    from ..output.render import shows_evidence

    model = QuickModel(model_path)
    if model.multi_label is not None:
        return None  # label by label: the batch path (nbclass.cli.predict)
    settings = resolve(model.defaults, **overrides)
    calibration = None
    if use_calibration and not overridden(**overrides):
        calibration = model.calibration
    if not (model.can_score(settings) and model.can_score(evidence_settings(settings))):
        return None
    abstention = abstention.for_model(model.typicality, settings)
    abstention.check_classes(model.classes)
    if use_exit_code:
        check_exit_classes(model.exit_codes, model.classes)
    document = next(documents, None)
    if document is None:  # skipped by the reading policy (a warning said why): no label
        return exit_code(model.exit_codes, "") if use_exit_code else 0
    source, text = document
    row, extra = score_document(
        model, text, settings, calibration, abstention, shows_evidence(fmt)
    )
    labels = print_predictions(
        [source], model.classes, [row], fmt, top_k, settings, [extra], abstention.label
    )
    return exit_code(model.exit_codes, labels[0]) if use_exit_code else 0
