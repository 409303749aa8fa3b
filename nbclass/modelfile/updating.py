"""Model files changed in place: read, changed and written back under their lock.

Several writers may change one model file (a cron job's ``sync`` while someone runs
``fit --update``). Each change here takes the file's lock (:func:`.textfile.locked`),
reads the model again, applies the change and writes the result atomically, so that
overlapping runs queue and none is lost. Documents are counted *before* the lock is
taken (reading may be slow, a pipe even); :func:`.textfile.reload` then refuses a model
whose settings changed meanwhile.

Every result equals, bit for bit, a fresh fit of the documents it now holds
(:mod:`nbclass.models.learning`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..counting.ledger import Ledger
from ..errors import ModelKindError, UsageError
from ..models.estimators import EstimatorSettings
from ..models.exitcodes import with_explicit
from ..models.learning import (
    Documents,
    Keys,
    SyncReport,
    added,
    changed_options,
    combined,
    count_documents,
    new_model,
    synced,
    unlearned,
    unlearned_keys,
)
from ..models.model import Model, VocabularyFilter, with_defaults, with_sample
from ..models.tablemodel import TableModel, merge_tables
from ..reading.corpus import Corpus
from ..reading.policy import DEFAULT_POLICY, ReadLog, ReadPolicy
from . import tablefile
from .textfile import CountedFor, load, locked, reload, save


def update_file(
    path: str,
    output: str,
    before: CountedFor,
    documents: Documents,
    vocabulary_filter: VocabularyFilter,
    defaults: EstimatorSettings | None,
    codes: dict[str, int] | None = None,
    threads: int = 1,
) -> Model:
    """Add ``documents`` (counted for the model ``before`` stands for, read from
    ``path``) to the model at ``path`` and write the result to ``output``, with
    ``vocabulary_filter`` and the default settings ``defaults``
    (:func:`nbclass.models.model.with_defaults`; None: those of the model as it is when
    read again under the lock, which another writer may have chosen again meanwhile). A
    model that chose its settings chooses again (``threads`` score the candidates), once
    the counts it had are dropped (:func:`nbclass.models.learning.added`).

    ``codes`` (``--exit-code-map``) may give exit codes to new classes; a class the model
    has must be given its own (:func:`nbclass.models.exitcodes.with_explicit`).

    ``documents`` keeps only its counts afterwards: its ledger entries and sample are in
    the model once added, and are let go before the choice."""
    with locked(output):
        current = replace(reload(path, before), vocabulary_filter=vocabulary_filter)
        if codes is not None:
            current = replace(current, exit_codes=with_explicit(current.codes, codes, repr(path)))
        if defaults is not None:
            current = with_defaults(current, defaults)
        model, sample, short = added(current, documents, threads)
        del current  # the old counts go before the choice (:func:`.learning.added`)
        documents.ledger = documents.sample = None  # as do the documents' own, now added
        model, ledger = set_aside(model)
        model = put_back(with_sample(model, sample, short, threads), ledger)
        save(model, output)
    return model


def set_aside(model: Model) -> tuple[Model, Ledger | None]:
    """``model`` without its ledger, and the ledger in its narrowest types
    (:meth:`nbclass.counting.ledger.Ledger.narrowed`), for the choice: it never reads the
    ledger, and is where these commands take the most memory (at 20,000 classes × 200,000
    words, 13.1 million entries: 210 MB as the ledger is used, 66 MB aside)."""
    if model.ledger is None:
        return model, None
    return replace(model, ledger=None), model.ledger.narrowed()


def put_back(model: Model, ledger: Ledger | None) -> Model:
    """``model`` with the ledger :func:`set_aside` kept, as it was."""
    return model if ledger is None else replace(model, ledger=ledger.widened())


def unlearn_file(
    path: str,
    output: str,
    before: CountedFor,
    documents: Documents | None = None,
    keys: Keys | None = None,
    sources: Sequence[str] = (),
    threads: int = 1,
) -> Model:
    """Remove documents from the model at ``path`` and write the result to ``output``.

    A model with a ledger removes the documents of ``keys`` (their ``(digest, class)``,
    named by ``sources`` when one was never learned); one without removes the counts of
    ``documents``, counted for the model ``before`` stands for. Nothing is written unless
    every document can be removed.
    """
    with locked(output):
        model = reload(path, before)
        if model.ledger is not None:
            result, sample, short = unlearned_keys(model, keys, sources)
        else:
            result, sample, short = unlearned(model, documents)
        model = None  # the old counts go before the choice (:func:`.learning.added`)
        result, ledger = set_aside(result)
        result = put_back(with_sample(result, sample, short, threads), ledger)
        save(result, output)
    return result


def merge_files(paths: Sequence[str], output: str, threads: int = 1) -> Model | TableModel:
    """The sum of the models at ``paths``, written to ``output``: text models with text
    models (:func:`nbclass.models.learning.combine`), table models with table models
    (:func:`nbclass.models.tablemodel.merge_tables`).

    Raises
    ------
    UsageError
        For fewer than two models, or text and table models together.
    """
    if len(paths) < 2:
        raise UsageError("give at least two models to merge")
    # The inputs are read under the output's lock: the output may be one of them, and a
    # writer that changes it meanwhile (fit --update, sync, another merge) must not have
    # its change lost by a sum of what the file held before.
    with locked(output):
        try:
            models = [load(path) for path in paths]
        except ModelKindError as exc:
            if exc.kind != "table":
                raise
            return _merge_tables(paths, output)
        merged, sample, short = combined(models, list(paths), threads)
        models = None  # their counts go before the choice (:func:`.learning.added`)
        merged, ledger = set_aside(merged)
        merged = put_back(with_sample(merged, sample, short, threads), ledger)
        save(merged, output)
    return merged


def _merge_tables(paths: Sequence[str], output: str) -> TableModel:
    """The sum of the table models at ``paths``, written to ``output`` (under its lock)."""
    tables, texts = [], []
    for path in paths:
        try:
            tables.append(tablefile.load(path))
        except ModelKindError:
            texts.append(path)
    if texts:
        raise UsageError(
            f"cannot merge the text model {texts[0]!r} with table models: merge text models "
            "with text models and table models (fit --table) with table models"
        )
    merged = merge_tables(*tables)
    tablefile.save(merged, output)
    return merged


def sync_folder(
    path: str,
    corpus: Callable[[], Corpus],
    settings: Callable,
    jobs: int = 1,
    policy: ReadPolicy = DEFAULT_POLICY,
    log: ReadLog | None = None,
    folder: str = "CORPUS_DIR",
) -> tuple[Model, SyncReport]:
    """Make the model at ``path`` equal to a fresh fit (with a ledger) of a folder as it is
    now, and write it if that changed it; create it when ``path`` does not exist.

    ``corpus()`` lists the folder (under the lock: what is listed is what is learned).
    ``settings(base)`` gives ``(tokenizer, vocabulary_filter, defaults, auto)`` as
    :func:`nbclass.models.learning.fit_settings` does, over the model ``base`` or for a new
    one (``base`` None). Documents are read under ``policy`` (``log`` records those it
    skips); ``jobs`` processes count them.

    A model whose settings fit chose (``auto``) is chosen and calibrated again, from the
    sample its ledger gives, whenever the folder changed
    (:func:`nbclass.models.learning.chooses`), so that it stays equal to a fresh fit of
    the folder. Options that would change an existing model's settings are refused
    (:func:`refuse_new_settings`; ``folder`` names the folder there).

    Returns the model as it now is and what was done (:class:`nbclass.models.learning.SyncReport`).
    """
    with locked(path):
        listed = corpus()
        if os.path.exists(path):
            model = load(path)
            _, vocabulary_filter, defaults, _ = settings(model)
            refuse_new_settings(model, vocabulary_filter, defaults, path, folder)
            model, sample, short, report = synced(model, listed, jobs, policy, log)
            model, ledger = set_aside(model)  # the old model dropped
            model = put_back(with_sample(model, sample, short, jobs), ledger)
        else:
            tokenizer, vocabulary_filter, defaults, auto = settings(None)
            documents = count_documents(
                listed, tokenizer, True, jobs, policy=policy, log=log, sample=auto
            )
            model = new_model(documents, tokenizer, vocabulary_filter, defaults, auto, jobs)
            report = SyncReport(added=documents.counts.n_docs)
        if report.changed:
            save(model, path)
    return model, report


def refuse_new_settings(
    model: Model, vocabulary_filter: VocabularyFilter, defaults: EstimatorSettings,
    path: str, folder: str = "CORPUS_DIR",
) -> None:  # fmt: skip
    """Refuse to sync the model at ``path`` with options that change its settings.

    A synced model is the fit of its folder with the settings it was created with; new
    settings would make it the fit of no command run so far, and the next sync (given no
    option) would keep them silently. The same options given again (a cron line that
    always passes them) change nothing and are accepted.

    Raises
    ------
    UsageError
        Naming the options that differ and the ``fit`` that applies them.
    """
    changed = changed_options(model, vocabulary_filter, defaults)
    if changed:
        given = " ".join(changed)
        raise UsageError(
            f"sync keeps the settings {path!r} was fitted with, and the options given "
            f"change them ({given}): to change a model's settings, fit the folder anew "
            f"with the options you want (nbclass fit {folder} --ledger -o {path} OPTIONS), "
            "or leave them out of sync"
        )
