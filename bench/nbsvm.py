"""Would NBSVM earn a place among the candidates of fit's choice? Measured, not built.

For each corpus, a default model (``nbclass fit TRAIN``, and ``--ngram-range 1,2``) is
fitted and loaded, and the candidate is scored exactly where the choice scores its own
candidates: on the documents of the model's sample that the choice holds out, in the
choice's folds (:func:`nbclass.models.choosing.plan`, ``scored_rows``,
``stratified_fold_ids``; two where the choice has one, since its one fold holds out the
sample the SVM trains on), each fold's model being the whole corpus's counts less the
fold's documents. The candidate is a function of what the file keeps:

- its log-count ratios r_jc come from the fold's document counts D_jc (one class against
  the rest, α = 1): p_c = α + D_·c, q_c = α + Σ_{c' ≠ c} D_·c',
  r_c = log(p_c / ‖p_c‖₁) − log(q_c / ‖q_c‖₁);
- its weights are a linear SVM per class (squared hinge, C = 1, bias as a feature with
  the same penalty) trained on the sample's documents outside the fold, over r_c ∘ x̂,
  x̂ the presences of the document's entries; solved from w = 0 by truncated Newton
  steps on its generalised Hessian, as liblinear's primal solver (:func:`newton`: at most
  ``ITERATIONS`` steps of at most ``CG_STEPS`` conjugate gradients), nothing random;
- its score is s_c(x) = (r_c ∘ x̂) · w_c + b_c, its label the class of the largest.

The held-out accuracy and macro-F1 are set beside the table the choice stored (same
documents, same folds), and the smallest shortfall (:func:`choosing.shortfall`) says
whether the choice would pick it. Its held-out scores are calibrated as the winner's are
(:func:`choosing.fit_calibration`) for its held-out log loss. Then the candidate is
trained on the whole sample with the model's own counts and scored on the test split:
reporting only, nothing is chosen from it.

Memory: the weights are dense over the entries the training documents hold (R) and the
classes, solved a block of classes at a time, at most ``CELLS`` weights a block.

    .venv/bin/python bench/nbsvm.py [--corpus NAME ...] [--pairs]

Each corpus's numbers are printed as a line of JSON and added to
``bench/results/nbsvm-<UTC time>.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy import NBCLASS, corpus_split, read  # noqa: E402

from nbclass import api  # noqa: E402
from nbclass.models import choosing, metrics  # noqa: E402
from nbclass.models.chosen import calibrated  # noqa: E402
from nbclass.models.model import choice_features  # noqa: E402
from nbclass.text.vectorizer import TextCounter, binarize  # noqa: E402

ALPHA, PENALTY = 1.0, 1.0
ITERATIONS = 20  # Newton steps at most
CG_STEPS = 50  # conjugate gradients a Newton step, at most
CELLS = 2**21  # weights solved at once (16 MB a vector; Newton-CG keeps a few)
WORK = Path(os.environ.get("NBSVM_WORK", "/tmp/nbsvm"))


def log_count_ratios(D: np.ndarray) -> np.ndarray:
    """r (V, C) from document counts D (V, C): each class against the rest, α = ALPHA."""
    D = np.asarray(D, dtype=np.float64)
    p = ALPHA + D
    q = ALPHA + (D.sum(axis=1, keepdims=True) - D)
    return np.log(p / p.sum(axis=0)) - np.log(q / q.sum(axis=0))


def newton(Xb, Xt, t, r, steps: int, cg_steps: int):
    """The weights V (R, k) and biases (k,) minimising, for k classes at once,
    ½‖w‖² + ½b² + C Σ_i max(0, 1 − t_i s_i)², s = (r ∘ x̂) · w + b, t = ±1: truncated
    Newton from zero on the generalised Hessian I + 2C (r ∘ X)ᵀ A (r ∘ X), A the
    documents inside the margin (Mangasarian 2002; liblinear's primal solver), each step
    solved by at most ``cg_steps`` conjugate gradients (to 0.1 of the gradient's norm),
    then halved until the objective falls by Armijo's rule; at most ``steps`` steps, fewer
    once the gradient is 10⁻⁴ of its first norm. Every operation is a fixed sequence of
    sparse products: the same inputs give the same floats."""
    R, k = r.shape
    V, bias = np.zeros((R, k)), np.zeros(k)

    def value_of(V, bias):
        slack = np.maximum(0.0, 1.0 - t * (Xb @ (r * V) + bias))
        value = 0.5 * (V * V).sum() + 0.5 * (bias * bias).sum() + PENALTY * (slack * slack).sum()
        return value, slack

    value, slack = value_of(V, bias)
    first = None
    for _ in range(steps):
        g = -2.0 * PENALTY * t * slack  # ∂/∂s, (n, k)
        gV, gb = V + r * (Xt @ g), bias + g.sum(axis=0)
        norm = math.sqrt((gV * gV).sum() + (gb * gb).sum())
        first = norm if first is None else first
        if norm <= 1e-4 * first:
            break
        active = slack > 0
        dV, db = np.zeros_like(V), np.zeros_like(bias)
        resV, resb = -gV, -gb
        pV, pb = resV.copy(), resb.copy()
        rr = norm * norm
        for _ in range(cg_steps):
            if rr <= (0.1 * norm) ** 2:
                break
            ds = np.where(active, Xb @ (r * pV) + pb, 0.0)
            HpV, Hpb = pV + 2.0 * PENALTY * r * (Xt @ ds), pb + 2.0 * PENALTY * ds.sum(axis=0)
            alpha = rr / ((pV * HpV).sum() + (pb * Hpb).sum())
            dV += alpha * pV
            db += alpha * pb
            resV -= alpha * HpV
            resb -= alpha * Hpb
            new = (resV * resV).sum() + (resb * resb).sum()
            pV, pb = resV + (new / rr) * pV, resb + (new / rr) * pb
            rr = new
        slope = (gV * dV).sum() + (gb * db).sum()
        step = 1.0
        for _ in range(30):
            trial, trial_slack = value_of(V + step * dV, bias + step * db)
            if trial <= value + 0.01 * step * slope:
                break
            step /= 2
        V, bias, value, slack = V + step * dV, bias + step * db, trial, trial_slack
    return V, bias


def train(Xb: sp.csr_matrix, y: np.ndarray, r: np.ndarray, C: int, iterations: int | None = None):
    """Weights W (R, C) and biases b (C,) of the one-against-the-rest squared-hinge SVMs
    over r ∘ x̂ (Xb: presences (n, R), r: (R, C)); classes without a training document
    keep w = 0, b = −1."""
    iterations = ITERATIONS if iterations is None else iterations
    n, R = Xb.shape
    W, b = np.zeros((R, C)), np.full(C, -1.0)
    block = max(1, CELLS // max(R, 1))
    Xt = Xb.T.tocsr()
    for start in range(0, C, block):
        cs = np.arange(start, min(C, start + block))
        t = np.where(y[:, None] == cs[None, :], 1.0, -1.0)  # (n, k)
        V, bias = newton(Xb, Xt, t, r[:, cs], iterations, CG_STEPS)
        W[:, cs] = V
        b[cs] = bias
    return W, b


def fitted(Xb_train, y_train, D, columns, C):
    """The candidate trained on presences Xb_train (n, V_all) with document counts D
    (V_f, C) of the words ``columns`` (V_f,) of X: returns (entries R, r∘W (R, C), b)."""
    r_all = np.zeros((Xb_train.shape[1], C))
    r_all[columns] = log_count_ratios(D)
    held = np.flatnonzero(np.bincount(Xb_train.indices, minlength=Xb_train.shape[1]))
    W, b = train(Xb_train[:, held], y_train, r_all[held], C)
    return held, r_all[held] * W, b


def scores_of(Xb, held, V, b):
    return Xb[:, held] @ V + b


def cpu() -> float:
    t = os.times()
    return t.user + t.system


def measure(name: str, pairs: bool) -> dict:
    train_dir, test_dir = corpus_split(name)
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"{name}{'-pairs' if pairs else ''}.nbc"
    if not path.exists():
        options = ["--ngram-range", "1,2"] if pairs else []
        command = [NBCLASS, "fit", str(train_dir), "-o", str(path), "-q", *options]
        subprocess.run(command, check=True)
    wrapped = api.load(str(path))
    model = wrapped._model
    choice = model.choice
    # As with_choice does: the choice starts from the user's filter, every family.
    base = model.vocabulary_filter.chosen_apart
    if base is not model.vocabulary_filter:
        model = replace(model, vocabulary_filter=base)
    counts, sample = model.active_counts, model.sample
    features, second = choice_features(counts, model.tokenizer.symbol_entries)
    documents, k = choosing.plan(counts, rows=choosing.first_round_rows(features, second))
    rows = choosing.scored_rows(sample.labels, documents, len(counts.classes))
    counted = sp.csr_matrix(
        (sample.counts, sample.words, sample.ptr),
        shape=(sample.n_documents, len(model.counts.vocabulary)),
    )
    if counts is not model.counts:
        counted = counted[:, model.active_rows]
    whole = binarize(counted).astype(np.float64)
    labels = np.asarray(sample.labels, dtype=np.int64)
    # The choice's documents and folds (choosing.choose).
    y = labels[rows]
    scorable = counts.class_count[y] >= 2
    rows, y = rows[scorable], y[scorable]
    fold_ids = choosing.stratified_fold_ids(y, choosing.folds_for(y.size, counts.n_docs, k))
    kept = choosing.keeps_its_class(fold_ids, y, counts.class_count)
    rows, y, fold_ids = rows[kept], y[kept], fold_ids[kept]
    if np.unique(fold_ids).size == 1:
        # One fold holds out the sample (a corpus of five times its size or more), which
        # leaves the SVM no training document: the candidate deals it into two.
        fold_ids = choosing.stratified_fold_ids(y, 2)
    C = len(counts.classes)
    X = whole[rows]
    held_scores = np.full((y.size, C), -np.inf)
    fold_cpu = []
    for f in np.unique(fold_ids).tolist():
        at = np.flatnonzero(fold_ids == f)
        fold = choosing.fold_of(counts, counted[rows], y, at)
        outside = np.ones(sample.n_documents, dtype=bool)
        outside[rows[at]] = False
        start = cpu()
        D = fold.counts.doc_count
        D = D.toarray() if sp.issparse(D) else D
        D_full = np.zeros((D.shape[0], C))
        D_full[:, fold.classes] = D  # classes the fold lost keep no document
        held, V, b = fitted(whole[outside], labels[outside], D_full, fold.words, C)
        s = scores_of(X[at], held, V, b)
        s[:, np.setdiff1d(np.arange(C), fold.classes)] = -np.inf
        held_scores[at] = s
        fold_cpu.append(cpu() - start)
    pred = held_scores.argmax(axis=1)
    accuracy = float(np.mean(pred == y))
    macro_f1 = metrics.macro_f1(metrics.class_metrics_of(y, pred, C))
    known = np.asarray(counted[rows].sum(axis=1)).ravel()  # tokens in the vocabulary
    calibration = choosing.fit_calibration(held_scores, y, known)
    log_p = calibrated(held_scores, known, calibration)
    calibrated_loss = choosing.log_loss_of(log_p, y)
    table = choice["candidates"]
    accs = [row["accuracy"] for row in table] + [accuracy]
    f1s = [row["macro_f1"] for row in table] + [macro_f1]
    gaps = choosing.shortfall(accs, f1s)
    chosen_at = next(i for i, row in enumerate(table) if row["chosen"])
    picks_nbsvm = gaps[-1] < gaps[chosen_at]
    # The candidate trained on the whole sample with the model's counts, on the test split.
    start = cpu()
    D = counts.doc_count
    D = D.toarray() if sp.issparse(D) else D
    held, V, b = fitted(whole, labels, D, np.arange(D.shape[0]), C)
    final_cpu = cpu() - start
    test_texts, test_labels = read(test_dir)
    counter = TextCounter(model.tokenizer, counts.vocabulary)
    Xt = binarize(sp.csr_matrix(counter.count(test_texts)[0])).astype(np.float64)
    index = {c: i for i, c in enumerate(counts.classes)}
    truth = np.array([index[c] for c in test_labels])
    test_pred = scores_of(Xt, held, V, b).argmax(axis=1)
    nb_pred = wrapped.predict(test_texts, min_known=0)
    return {
        "corpus": name,
        "pairs": pairs,
        "iterations": ITERATIONS,
        "classes": C,
        "sample": sample.n_documents,
        "held_out": int(y.size),
        "folds": int(np.unique(fold_ids).size),
        "entries": int(whole.shape[1]),
        "weights": int(held.size * C),
        "chosen": choice["chosen"],
        "chosen_accuracy": table[chosen_at]["accuracy"],
        "chosen_macro_f1": table[chosen_at]["macro_f1"],
        "chosen_log_loss": table[chosen_at].get("calibrated_log_loss"),
        "best_accuracy": max(accs[:-1]),
        "best_macro_f1": max(f1s[:-1]),
        "chosen_shortfall": gaps[chosen_at],
        "nbsvm_accuracy": accuracy,
        "nbsvm_macro_f1": macro_f1,
        "nbsvm_shortfall": gaps[-1],
        "nbsvm_calibrated_log_loss": calibrated_loss,
        "picks_nbsvm": bool(picks_nbsvm),
        "fold_cpu": fold_cpu,
        "final_cpu": final_cpu,
        "test_nb": float(np.mean(np.array(nb_pred) == np.array(test_labels))),
        "test_nbsvm": float(np.mean(test_pred == truth)),
        "test_nbsvm_macro_f1": metrics.macro_f1(metrics.class_metrics_of(truth, test_pred, C)),
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append")
    parser.add_argument(
        "--pairs", action="store_true", help="models fitted with --ngram-range 1,2"
    )
    parser.add_argument("--iterations", type=int, default=ITERATIONS, help="Newton steps at most")
    args = parser.parse_args()
    globals()["ITERATIONS"] = args.iterations
    names = args.corpus or ["20news", "sms_spam", "movie_reviews", "nps_chat", "pros_cons"]
    stamp = time.strftime("%Y-%m-%dT%H%M%SZ", time.gmtime())
    out = Path(__file__).resolve().parent / "results" / f"nbsvm-{stamp}.jsonl"
    for name in names:
        result = measure(name, args.pairs)
        print(json.dumps(result), flush=True)
        with out.open("a") as results:
            results.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
