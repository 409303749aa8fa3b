"""Rendering: results to the lines a user or a script reads.

Machine-readable output prints every number with ``repr(float)``, the shortest text that
reads back as the same float, so a script gets exactly what nbclass computed. TSV fields
escape backslash, tab, newline and carriage return as ``\\\\``, ``\\t``, ``\\n`` and ``\\r``,
so every record stays on one line whatever a file name holds.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from ..names import escape
from .formats import finite, record_lines

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (one document)

if TYPE_CHECKING:  # rendering imports nothing heavy: one-document predict stays fast
    from ..models.model import Model
    from ..models.selection import ClassFeature, RankedFeature
    from ..models.tablemodel import TableFeature, TableModel



def number(x: float) -> str:
    """The shortest decimal text that reads back as the same float.

    >>> number(0.1), number(1e-300), number(1.0)
    ('0.1', '1e-300', '1.0')
    """
    return repr(float(x))


def field(text: str) -> str:
    """A TSV field: backslash, tab, newline and carriage return escaped, and other control
    characters and undecodable bytes too (:func:`nbclass.names.escape`).

    >>> field("a\\tb\\nc")
    'a\\\\tb\\\\nc'
    """
    return escape(text)


# Rows of at most this many classes are ranked as lists: numpy's few calls a row cost
# more than sorting a few dozen floats.
NUMPY_RANKS = 64


def _order(row, top_k: int | None) -> list[int]:
    """The classes of the ``top_k`` largest entries of ``row`` (all, if None), largest
    first and equals in class order: ``sorted(range(C), key=lambda c: -row[c])[:top_k]``.

    ``row`` is a list of floats or, from a batch, a row of an ndarray (numpy is loaded
    then), ranked by numpy: the k-th largest value bounds the candidates, which a stable
    sort puts in the same order, without a Python step per class (20,000 classes)."""
    if hasattr(row, "argmax"):
        import numpy as np

        if top_k == 1:
            return [int(row.argmax())]  # the first of equals
        if top_k is not None and top_k < row.shape[0]:
            kth = -np.partition(-row, top_k - 1)[top_k - 1]
            candidates = np.flatnonzero(row >= kth)
            return candidates[np.argsort(-row[candidates], kind="stable")][:top_k].tolist()
        return np.argsort(-row, kind="stable").tolist()
    if top_k == 1:  # the first of equals, as the stable sort below keeps it
        return [row.index(max(row))]
    return sorted(range(len(row)), key=lambda c: -row[c])[:top_k]


def _rank(classes, row, top_k: int | None) -> tuple[str, list]:
    """``(label, [(class, probability), ...] best first)`` of one document's log posterior
    (a list of C floats, or a row of an ndarray).

    Classes are ranked by their log posterior, not by its exponential: a class whose
    probability underflows to 0.0 still ranks above a less probable one (a long document
    leaves every class but one at 0.0), and equal log posteriors keep the class order.
    The label is the most probable class (the first in class order on a tie), or ``""``
    when every class has probability 0 (all log posteriors −inf).
    """
    if not hasattr(row, "argmax") or len(row) <= NUMPY_RANKS:
        row = list(map(float, row))
    order = _order(row, top_k)
    label = classes[order[0]] if row[order[0]] > -math.inf else ""
    return label, [(classes[c], math.exp(row[c])) for c in order]


def best_classes(log_proba_rows) -> tuple[list[int], list[float]]:
    """``(classes, values)``: each row's largest entry and its class (the first of
    equals). ``log_proba_rows`` is a list of rows of floats, or an ndarray (n, C): then
    one pass of numpy over the batch instead of a Python step per class and document."""
    if hasattr(log_proba_rows, "argmax"):
        if not log_proba_rows.shape[0]:
            return [], []
        import numpy as np  # loaded already: the rows are an ndarray

        best = log_proba_rows.argmax(axis=1)
        values = log_proba_rows[np.arange(best.size), best]  # the max, without its pass
        return best.tolist(), values.tolist()
    values = [max(row) for row in log_proba_rows]
    return [row.index(v) for row, v in zip(log_proba_rows, values)], values


def prediction_views(classes, top_k: int | None, unsure_label: str = "unsure"):
    """``(record, row)``: a document's prediction as a JSON object and as TSV cells
    (:func:`nbclass.output.formats.record_lines`), from an item ``(source, log_proba)``
    or ``(source, log_proba, extra)``, ``log_proba`` its log posterior (C floats).

    TSV: ``source<TAB>label<TAB>probability``, then one more ``label<TAB>probability``
    pair per extra class when ``top_k`` > 1. JSONL: an object with ``source``, ``label``,
    ``probability`` and ``probabilities`` (the ``top_k`` most probable classes, all of
    them by default, best first). A document for which every class is impossible has the
    label ``""`` and probability 0.

    ``extra``, a dict, adds what ``predict`` knows beyond the posterior:
    ``log_evidence`` and ``evidence_model`` (JSONL), ``reason`` (why the document is
    unsure, or ``None``: the label becomes ``unsure_label``; JSONL) and, if present,
    ``explanation``
    (``{"versus": class, "log_odds": float, "words": [(word, count, contribution)]}``:
    in JSONL an object, in TSV the runner-up class then ``word<TAB>contribution`` pairs).
    """

    def record(item) -> dict:
        source, log_proba, *extra = item
        extra = extra[0] if extra else None
        label, pairs = _rank(classes, log_proba, top_k)
        record = {
            "source": escape(source),
            "label": label,
            "probability": pairs[0][1] if label else 0.0,
            "probabilities": dict(pairs),
        }
        if extra is not None:
            if extra["reason"]:
                record["label"] = unsure_label
            evidence = extra["log_evidence"]
            known = evidence is not None and math.isfinite(evidence)
            record["log_evidence"] = evidence if known else None
            record["evidence_model"] = extra.get("evidence_model")
            record["reason"] = extra["reason"]
            if "explanation" in extra:
                record["explanation"] = _explanation_record(extra["explanation"])
        return record

    def row(item) -> list[str]:
        source, log_proba, *extra = item
        extra = extra[0] if extra else None
        label, pairs = _rank(classes, log_proba, top_k or 1)
        shown = unsure_label if extra is not None and extra["reason"] else label
        cells = [field(source), field(shown), number(pairs[0][1] if label else 0.0)]
        for name, p in pairs[1:]:
            cells += [field(name), number(p)]
        if extra is not None and extra.get("explanation"):
            explanation = extra["explanation"]
            cells.append(field(explanation["versus"]))
            for word, _, contribution in explanation["words"]:
                cells += [field(word), number(contribution)]
        return cells

    return record, row


def shows_evidence(fmt: str) -> bool:
    """Whether predictions written in ``fmt`` show each document's log-evidence (JSONL
    does; TSV has no column for it), so that it is computed only when shown."""
    return fmt == "jsonl"


def prediction_lines(
    sources: list[str],
    classes,
    log_proba_rows,
    fmt: str,
    top_k: int | None,
    extras: list[dict] | None = None,
    unsure_label: str = "unsure",
    best: tuple[list[int], list[float]] | None = None,
) -> Iterator[str]:
    """One line per document in ``fmt`` (``tsv`` or ``jsonl``) from its log posterior (a
    sequence of C floats; ``log_proba_rows`` may be an ndarray (n, C)) and its ``extras``
    (one dict per document, or None): see :func:`prediction_views`. ``best``: the rows'
    :func:`best_classes`, if the caller has them."""
    if fmt == "tsv" and (top_k or 1) == 1 and not any("explanation" in e for e in extras or ()):
        reasons = [None] * len(sources) if extras is None else [e["reason"] for e in extras]
        return best_tsv_lines(sources, classes, log_proba_rows, reasons, unsure_label, best)
    items = zip(sources, log_proba_rows) if extras is None else zip(
        sources, log_proba_rows, extras
    )
    return record_lines(fmt, items, *prediction_views(classes, top_k, unsure_label))


def best_tsv_lines(
    sources, classes, log_proba_rows, reasons, unsure_label="unsure", best=None
) -> list[str]:
    """The TSV lines of :func:`prediction_lines` with one class a document and no
    explanation, ``source<TAB>label<TAB>probability``, made with a few operations a
    document (a batch of a thousand is printed while the next one is scored): the first
    class of the largest log posterior, or ``""`` and probability 0 when every class is
    impossible, ``unsure_label`` where ``reasons`` (one per document) has a reason.
    ``best``: the rows' :func:`best_classes`, if the caller has them."""
    unsure = field(unsure_label)
    exp, impossible = math.exp, -math.inf
    lines = []
    best = best_classes(log_proba_rows) if best is None else best
    for source, (c, value), reason in zip(sources, zip(*best), reasons):
        if value > impossible:  # the label's name escaped: never every class's, a batch
            label, probability = field(classes[c]), repr(exp(value))
        else:
            label, probability = "", "0.0"
        lines.append(f"{field(source)}\t{unsure if reason else label}\t{probability}")
    return lines


class Printed:
    """Predictions made into what ``predict`` prints: the ``lines`` of the documents
    ``sources``, their ``labels`` ("" for none) and a warning for each document every
    class rules out (``problems``). Made where the documents were scored, a worker
    process or the command's own, and printed by the command in the documents' order.
    (A plain class: the one-document path imports no dataclasses.)"""

    __slots__ = ("sources", "lines", "labels", "problems")

    def __init__(self, sources: list[str], lines: list[str], labels: list[str], problems):
        self.sources, self.lines, self.labels, self.problems = sources, lines, labels, problems


def printed(
    sources, classes, rows, fmt, top_k, settings, extras=None, unsure_label="unsure"
) -> Printed:
    """:func:`prediction_lines` and :func:`prediction_labels` of scored documents (each
    row's best class found once for both)."""
    best = best_classes(rows)
    lines = list(
        prediction_lines(sources, classes, rows, fmt, top_k, extras, unsure_label, best)
    )
    labels, problems = prediction_labels(
        sources, classes, rows, settings, extras, unsure_label, best
    )
    return Printed(list(sources), lines, labels, problems)


def smoothing_advice(estimator: str) -> str:
    """The sentence that ends the warning of a document every class rules out: smoothing,
    unless the estimates are smoothed already (then nothing a user can change does it)."""
    if estimator in ("mle", "map"):
        return " Use --estimator posterior-mean to smooth."
    return ""


def prediction_labels(
    sources, classes, rows, settings, extras=None, unsure_label="unsure", best=None
) -> tuple[list[str], list[str]]:
    """``(labels, warnings)`` of printed predictions: the label of each row ("" for a
    document that every class rules out, which has a warning). ``best``: the rows'
    :func:`best_classes`, if the caller has them."""
    labels, problems = [], []
    best = best_classes(rows) if best is None else best
    for i, (source, (c, value)) in enumerate(zip(sources, zip(*best))):
        if value == float("-inf"):
            labels.append("")
            problems.append(
                f"every class has probability 0 for {source!r} under "
                f"--estimator {settings.estimator}: each class rules it out (it holds a word "
                "the class never saw, or lacks a word every document of the class had); its "
                "label is empty." + smoothing_advice(settings.estimator)
            )
        elif extras is not None and extras[i]["reason"]:
            labels.append(unsure_label)
        else:
            labels.append(classes[c])  # the first of equals
    return labels, problems


def _explanation_record(explanation: dict | None) -> dict | None:
    if explanation is None:
        return None
    return finite(
        {
            "versus": explanation["versus"],
            "log_odds": explanation["log_odds"],
            "words": [
                {"word": word, "count": count, "contribution": contribution}
                for word, count, contribution in explanation["words"]
            ],
        }
    )


def feature_record(f: RankedFeature) -> dict:
    """A ranked word as JSON: ``{"word", "mi", "class"}``."""
    return {"word": f.word, "mi": f.mi, "class": f.label}


def feature_row(f: RankedFeature) -> list[str]:
    """A ranked word as TSV: ``word<TAB>mi<TAB>class``."""
    return [field(f.word), number(f.mi), field(f.label)]


def class_feature_record(f: ClassFeature) -> dict:
    """A class's word as JSON: ``{"class", "word", CRITERION}`` with CRITERION ``"z"`` or
    ``"log_ratio"``; an infinite value (a word seen nowhere, ``--estimator mle``) as the
    string ``"inf"`` or ``"-inf"`` (JSON has no infinity)."""
    value = f.value if math.isfinite(f.value) else str(f.value)
    return {"class": f.label, "word": f.word, f.criterion: value}


def class_feature_row(f: ClassFeature) -> list[str]:
    """A class's word as TSV: ``class<TAB>word<TAB>z`` or ``…<TAB>log_ratio`` (``inf``,
    ``-inf`` as such)."""
    return [field(f.label), field(f.word), number(f.value)]


def model_info(model: Model, path: str, header: dict | None = None) -> dict:
    """What ``nbclass info`` reports, as plain data."""
    counts = model.counts
    info = {
        "model": path,
        "format": header,
        "documents": counts.n_docs,
        "classes": {c: int(n) for c, n in zip(counts.classes, counts.class_count.tolist())},
        "tokens": int(counts.token_count.sum()),
        "vocabulary": len(model.active_counts.vocabulary),
        "vocabulary_counted": len(counts.vocabulary),
        "vocabulary_filter": model.vocabulary_filter.to_dict(),
        "selection": model.selection,
        "tokenizer": {
            **model.tokenizer.to_dict(),
            "stop_words": len(model.tokenizer.stop_words),
        },
        "defaults": model.defaults.to_dict(),
        "fitted_beta": None if model.prepared is None else model.prepared.beta,
        "ledger": None if model.ledger is None else model.ledger.n_documents,
        "calibration": None if model.calibration is None else model.calibration.to_dict(),
        "typicality": _typicality_info(model.typicality),
        "choice": model.choice,
        "exit_codes": dict(sorted(model.codes.items(), key=lambda item: item[1])),
    }
    if model.multi_label is not None:
        info.update(exit_codes={}, multi_label=_labels_info(model))
    return info


def _labels_info(model: Model) -> dict:
    """What ``info`` says of a multi-label model: per label its documents N_l (the sum over
    the label sets holding it), threshold and calibration (a, c); the label sets, the
    candidates with their held-out micro-F1 and the threshold criterion."""
    from ..models.labelsets import labels_of

    data = model.multi_label
    counts = model.counts
    documents = dict.fromkeys(data["labels"], 0)
    for name, n in zip(counts.classes, counts.class_count.tolist()):
        for label in labels_of(name):
            documents[label] += int(n)
    labels = {}
    for l, label in enumerate(data["labels"]):
        labels[label] = {"documents": documents[label]}
        if "thresholds" in data:
            labels[label].update(
                threshold=data["thresholds"][l], calibration=data["calibration"][l]
            )
        if "beta_scale" in data:
            labels[label]["beta_scale"] = data["beta_scale"][l]
    return {
        "labels": labels,
        "label_sets": len(counts.classes),
        "no_label": int(counts.class_count[0]) if counts.classes[0] == "" else 0,
        "candidates": data["candidates"],
        "beta_scales": data.get("beta_scales"),
        "micro_f1": data.get("micro_f1"),
        "criterion": data.get("criterion"),
        "documents_chosen_on": data.get("documents"),
        "folds": data.get("folds"),
    }


def _typicality_info(record: dict | None) -> dict | None:
    """What ``info`` says of a stored typicality record (:mod:`nbclass.models.novelty`)."""
    if record is None:
        return None
    return {
        "documents": record["documents"],
        "folds": record["folds"],
        "evidence_model": record["evidence_settings"]["model"],
    }


def _label_lines(data: dict) -> Iterator[str]:
    """A multi-label model's labels: documents, threshold and calibration of each."""
    labels = data["labels"]
    yield (
        f"labels       {len(labels)} in {data['label_sets']} label sets "
        f"({data['no_label']} documents without a label)"
    )
    width = max(len(escape(label)) for label in labels)
    for label, d in labels.items():
        extra = ""
        if "threshold" in d:
            a, c = d["calibration"]
            sign = "-" if c < 0 else "+"
            extra = (
                f"  threshold {d['threshold']:.4f}  p = logistic({a:.4g} s {sign} {abs(c):.4g})"
            )
        if d.get("beta_scale", 1.0) != 1.0:
            extra += f"  beta x {d['beta_scale']:g}"
        yield f"  {escape(label):<{width}}  {d['documents']}{extra}"
    chosen = [c for c in data["candidates"] if c.get("micro_f1") is not None]
    if chosen:
        from ..models.choosing import describe
        from ..models.estimators import EstimatorSettings

        parts = ", ".join(
            f"{describe(EstimatorSettings.from_dict(c['settings']))} {c['micro_f1']:.4f}"
            for c in chosen
        )
        yield (
            f"choice       held-out micro-F1 on {data['documents_chosen_on']} documents "
            f"({data['folds']} folds): {parts}"
        )
        if data.get("micro_f1") is not None:
            scales = ", ".join(f"{s:g}" for s in data["beta_scales"])
            yield (
                f"             each label's beta x ({scales}): held-out micro-F1 "
                f"{data['micro_f1']:.4f}"
            )


def _class_lines(classes: dict) -> Iterator[str]:
    """``classes  C`` then one aligned ``name  count`` line per class."""
    yield f"classes      {len(classes)}"
    names = {escape(c): n for c, n in classes.items()}
    width = max(len(c) for c in names)
    for name, n in names.items():
        yield f"  {name:<{width}}  {n}"


def _exit_code_lines(codes: dict, classes: dict) -> Iterator[str]:
    """``exit codes`` and ``CODE CLASS`` pairs, wrapped; a class no longer in the model
    (its code is kept for it) is marked ``(no documents)``."""
    pairs = [
        f"{code} {escape(name)}" + ("" if name in classes else " (no documents)")
        for name, code in codes.items()
    ]
    missing = len([name for name in classes if name not in codes])
    if missing:
        pairs.append(f"none for {missing} more classes")
    line, lines = "", []
    for pair in pairs:
        if line and len(line) + len(pair) + 2 > 75:
            lines.append(line + ",")
            line = ""
        line = f"{line}, {pair}" if line else pair
    lines.append(line)
    yield f"exit codes   {lines[0]}"
    for rest in lines[1:]:
        yield f"             {rest}"


def _visible(text: str) -> str:
    """``text`` with control characters escaped but backslashes kept (a regex stays
    readable as written)."""
    return "".join(ch if ch == "\\" else escape(ch) for ch in text)


def info_json(info: dict) -> str:
    """``nbclass info --format json`` of a text or a table model: one indented object
    (non-finite numbers as JSON's ``NaN`` and ``Infinity``, as Python writes them)."""
    import json

    return json.dumps(info, ensure_ascii=False, indent=2)


def info_lines(info: dict) -> Iterator[str]:
    """``nbclass info`` of a text model as aligned text."""
    fmt_info = info["format"] or {}
    yield f"model        {escape(info['model'])}"
    yield (
        f"format       {fmt_info.get('format')} version {fmt_info.get('version')} "
        f"(written by nbclass {fmt_info.get('nbclass_version')})"
    )
    yield f"documents    {info['documents']}"
    yield f"tokens       {info['tokens']}"
    if info.get("multi_label"):
        yield from _label_lines(info["multi_label"])
    else:
        yield from _class_lines(info["classes"])
        yield from _exit_code_lines(info["exit_codes"], info["classes"])
    vf = info["vocabulary_filter"]
    max_features = "none" if vf["max_features"] is None else vf["max_features"]
    yield (
        f"vocabulary   {info['vocabulary']} words used of {info['vocabulary_counted']} "
        f"counted (min_df {vf['min_df']}, max_features {max_features}"
        + (f", features {'+'.join(vf['features'])}" if vf.get("features") else "")
        + (f", pruned to df >= {vf['prune_df']}" if vf.get("prune_df") else "")
        + (f", pruned to the {vf['prune_mi']} of highest MI" if vf.get("prune_mi") else "")
        + ")"
    )
    if info["selection"]:
        s = info["selection"]
        yield (
            f"selection    top {s['k']} of {s['from_vocabulary']} words by {s['criterion']} "
            f"({s['estimator']})"
        )
    t = info["tokenizer"]
    yield (
        f"tokenizer    lowercase {str(t['lowercase']).lower()}, token_pattern "
        f"{_visible(t['token_pattern'])}, ngram_range {t['ngram_range'][0]},"
        f"{t['ngram_range'][1]}"
        + (f", ngram_doc_limit {t['ngram_doc_limit']}" if t.get("ngram_doc_limit") else "")
        + f", stop_words {escape(t['stop_words_source'])} "
        f"({t['stop_words']} words)"
        + (f", hash_features {t['hash_features']}" if t.get("hash_features") else "")
        + (f", unspaced {t['unspaced']}" if t.get("unspaced") else "")
        + (", symbols" if t.get("symbols") else "")
    )
    if info.get("ledger") is not None:
        yield f"ledger       {info['ledger']} documents (SHA-256, class and word counts of each)"
    yield f"defaults     {settings_text(info['defaults'], info.get('fitted_beta'))}"
    if info.get("calibration"):
        c = info["calibration"]
        t2 = c.get("t2", 0.0)
        yield (
            f"calibration  p(c | x) = softmax(b_c / T(x)), T(x) = exp({c['t0']:.4g} + "
            f"{c['t1']:.4g} log(1 + known tokens) {'-' if t2 < 0 else '+'} "
            f"{abs(t2):.4g} log(1 + gap))"
        )
        if c.get("offsets"):
            yield (
                "             + class offsets a_c + d_c log(1 + known tokens) (a_c "
                f"{min(c['offsets']):.3g} to {max(c['offsets']):.3g}, d_c "
                f"{min(c['length_offsets']):.3g} to {max(c['length_offsets']):.3g})"
            )
    t = info.get("typicality")
    if t:
        yield (
            f"typicality   stored: per-token evidence of {t['documents']} training documents "
            f"({t['folds']}-fold, {t['evidence_model']}), for predict --min-typicality"
        )
    else:
        yield "typicality   not stored (predict --min-typicality needs fit --typicality)"
    if info.get("choice"):
        yield from _choice_lines(info["choice"])


def _choice_lines(choice: dict) -> Iterator[str]:
    """The table of the candidates fit cross-validated, the chosen one starred."""
    yield (
        f"chosen by    {choice['folds']}-fold cross-validation on {choice['documents']} "
        f"training documents ({escape(choice['criterion'])})"
    )
    names = [escape(row["name"]) for row in choice["candidates"]]
    width = max(len("candidate"), *map(len, names))
    yield f"  {'candidate':<{width}}  accuracy  macro-F1  log loss"
    for name, row in zip(names, choice["candidates"]):
        star = "*" if row["chosen"] else " "
        yield (
            f"{star} {name:<{width}}  {row['accuracy']:8.4f}  {row['macro_f1']:8.4f}  "
            f"{row['log_loss']:8.4f}"
        )


def settings_text(d: dict, fitted_beta: float | None = None) -> str:
    """One line naming estimator settings (``EstimatorSettings.to_dict()``).

    The model, estimator, α and β always; the transforms and the class prior only when
    they are not the plain ones (raw counts, no idf, no normalisation, class prior on).
    With ``prior_fit``, β is the fitted value when known (``beta 0.5163 fitted``), else
    ``beta fitted``.

    >>> settings_text({"model": "multinomial", "estimator": "map", "alpha": 2.0,
    ...                "beta": [2.0, 2.0], "tf": "raw", "idf": False, "norm": "none",
    ...                "prior_fit": False, "class_prior": True})
    'model multinomial, estimator map, alpha 2.0, beta 2.0'
    """
    beta = d["beta"][0] if d["beta"][0] == d["beta"][1] else f"{d['beta'][0]},{d['beta'][1]}"
    if d["prior_fit"]:
        beta = "fitted" if fitted_beta is None else f"{fitted_beta:.4g} fitted"
    parts = [
        f"model {d['model']}",
        f"estimator {d['estimator']}",
        f"alpha {d['alpha']}",
        f"beta {beta}",
    ]
    if d["tf"] != "raw":
        parts.append(f"tf {d['tf']}")
    if d["idf"]:
        parts.append("idf")
    if d["norm"] != "none":
        parts.append(f"norm {d['norm']}")
    if not d["class_prior"]:
        parts.append("no class prior")
    return ", ".join(parts)


def table_feature_record(f: TableFeature) -> dict:
    """A table model's feature as JSON: ``{"feature", "mi", "class", "type"}``."""
    return {"feature": f.feature, "mi": f.mi, "class": f.label, "type": f.type}


def table_feature_row(f: TableFeature) -> list[str]:
    """A table model's feature as TSV: ``feature<TAB>mi<TAB>class<TAB>type``."""
    return [field(f.feature), number(f.mi), field(f.label), f.type]


def table_model_info(model: TableModel, path: str, header: dict | None = None) -> dict:
    """What ``nbclass info`` reports about a table model, as plain data."""
    columns = []
    for c in model.columns:
        if c.type == "numeric":
            size = {"values": int(c.stats.count.sum())}
        elif c.type == "categorical":
            size = {"categories": len(c.stats.values)}
        else:
            size = {"words": len(c.stats.vocabulary)}
        columns.append({"name": c.name, "type": c.type, **size})
    return {
        "model": path,
        "format": header,
        "rows": model.n_rows,
        "label": model.label,
        "classes": {c: int(n) for c, n in zip(model.classes, model.class_count.tolist())},
        "columns": columns,
        "ignored": list(model.ignored),
        "var_smoothing": model.var_smoothing,
        "tokenizer": {**model.tokenizer.to_dict(), "stop_words": len(model.tokenizer.stop_words)},
        "defaults": model.defaults.to_dict(),
    }


def table_info_lines(info: dict) -> Iterator[str]:
    """``nbclass info`` of a table model as aligned text."""
    f = info["format"] or {}
    yield f"model        {escape(info['model'])}"
    yield (
        f"format       {f.get('format')} version {f.get('version')}, kind {f.get('kind')} "
        f"(written by nbclass {f.get('nbclass_version')})"
    )
    yield f"rows         {info['rows']}"
    yield f"label        {escape(info['label'])}"
    yield from _class_lines(info["classes"])
    yield f"columns      {len(info['columns'])}"
    width = max(len(escape(c["name"])) for c in info["columns"])
    for c in info["columns"]:
        size = next(f"{v} {k}" for k, v in c.items() if k not in ("name", "type"))
        yield f"  {escape(c['name']):<{width}}  {c['type']:<11}  {size}"
    if info["ignored"]:
        yield f"ignored      {', '.join(map(escape, info['ignored']))}"
    yield f"variance     floor {info['var_smoothing']!r} x the largest column variance"
    d = info["defaults"]
    beta = d["beta"][0] if d["beta"][0] == d["beta"][1] else f"{d['beta'][0]},{d['beta'][1]}"
    yield (
        f"defaults     model {d['model']} (text columns), estimator {d['estimator']}, "
        f"alpha {d['alpha']}, beta {beta}"
    )


class ProgressBar:
    """A progress bar on stderr: files done, MB done of the total, MB/s and time left.

    Drawn with rich, and only when ``enabled`` (the CLI enables it when stderr is a
    terminal and ``--quiet`` is not given). Use as a context manager and call
    :meth:`advance` with the files and bytes just finished.
    """

    def __init__(self, verb: str, files: int, total_bytes: int, enabled: bool):
        self.enabled = enabled
        self.verb, self.files, self.done = verb, files, 0
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
            redirect_stdout=False,  # results on stdout are never routed through the bar
        )
        self._task = self._progress.add_task(self._describe(), total=total_bytes)

    def _describe(self) -> str:
        return f"{self.verb} {self.done}/{self.files} files"

    def __enter__(self) -> ProgressBar:
        if self.enabled:
            self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self._progress.stop()

    def advance(self, files: int, nbytes: int) -> None:
        if self.enabled:
            self.done += files
            self._progress.update(self._task, advance=nbytes, description=self._describe())
