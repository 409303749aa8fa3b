"""Choose nbclass's default model, transforms and prior by cross-validation on three corpora.

Corpora (``../shared/corpora``, unpacked once into ``~/.cache/nbclass-corpora``, or
``NBCLASS_CACHE``): 20 Newsgroups by date (its own train/test split: 11,314 / 7,532
documents, 20 classes), movie reviews (2,000 documents, pos/neg) and SMS spam (5,574
messages, ham/spam), the last two by 5-fold cross-validation with folds fixed by a seeded
shuffle (stratified: each class is dealt round-robin into the folds).

Every document is read and tokenized once with nbclass's default tokenizer into one count
matrix. The counts of each fold are computed once (``count_documents``); a fold's training
counts are the total minus the fold's (``nbclass.counting.counts.subtract``), which is what a
fit of the other folds gives. Every nbclass setting is scored from those counts with
``make_scorer``; scikit-learn's MultinomialNB, BernoulliNB and ComplementNB at their
defaults get the same count matrix restricted to the training vocabulary (what
CountVectorizer would give). Predictions of all folds are pooled; accuracy and macro-F1
are computed on the pool.

Usage: python bench/choose_defaults.py   (a few minutes on 2 cores)
Writes bench/results/choose_defaults.md and .json.
"""

from __future__ import annotations

import json
import os
import sys
import tarfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from nbclass.counting.counts import Counts, count_documents, subtract  # noqa: E402
from nbclass.models.estimators import EstimatorSettings  # noqa: E402
from nbclass.models.posterior import make_scorer  # noqa: E402
from nbclass.models.textmodels import fit_beta  # noqa: E402
from nbclass.reading.corpus import list_corpus, read_file  # noqa: E402
from nbclass.text.tokenizer import TokenizerSettings, make_tokenizer  # noqa: E402
from nbclass.text.vectorizer import GrowingVocabulary, count_matrix  # noqa: E402

SHARED = Path(os.environ.get("NBCLASS_SHARED_CORPORA", REPO.parent / "shared" / "corpora"))
CACHE = Path(os.environ.get("NBCLASS_CACHE", Path.home() / ".cache" / "nbclass-corpora"))
FOLDS = 5
SEED = 20031


def unpacked(name: str, archive: str) -> Path:
    root = CACHE / name
    if not root.is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        with tarfile.open(SHARED / archive) as tar:
            tar.extractall(CACHE, filter="data")
    return root


def read_corpus(root: Path):
    corpus = list_corpus(str(root))
    return corpus.classes, [read_file(p) for p in corpus.paths], np.array(corpus.labels)


def corpora():
    """(name, classes, X, labels, fold of each document), X over one sorted vocabulary."""
    news = unpacked("20news", "20news-bydate.tar.gz")
    tokenize = make_tokenizer(TokenizerSettings())
    for name, parts in (
        ("20news (by date)", [news / "train", news / "test"]),
        ("movie reviews", [unpacked("movie_reviews", "movie_reviews.tar.gz")]),
        ("SMS spam", [unpacked("sms_spam", "sms_spam.tar.gz")]),
    ):
        texts, labels, folds, classes = [], [], [], None
        for k, part in enumerate(parts):
            part_classes, part_texts, part_labels = read_corpus(part)
            assert classes is None or classes == part_classes
            classes = part_classes
            texts += part_texts
            labels.append(part_labels)
            folds.append(np.full(len(part_texts), k))
        labels = np.concatenate(labels)
        if len(parts) == 1:  # stratified folds from a seeded shuffle
            rng = np.random.default_rng(SEED)
            fold = np.empty(len(labels), dtype=np.int64)
            for c in range(len(classes)):
                members = rng.permutation(np.flatnonzero(labels == c))
                fold[members] = np.arange(members.size) % FOLDS
            test_folds = list(range(FOLDS))
        else:
            fold = np.concatenate(folds)
            test_folds = [1]  # train on the by-date train split, test on its test split
        vocabulary = GrowingVocabulary()
        X = count_matrix((tokenize(t) for t in texts), vocabulary)
        order = np.argsort(np.array(list(vocabulary), dtype=object))  # columns by word
        words = tuple(np.array(list(vocabulary), dtype=object)[order].tolist())
        X = X[:, order].tocsr()
        yield name, tuple(classes), words, X, labels, fold, test_folds


def fold_counts(classes, words, X, labels) -> Counts:
    class_count, doc_count, token_count = count_documents(X, labels, len(classes))
    return Counts(classes, words, class_count, doc_count, token_count)


def settings_grid() -> dict[str, EstimatorSettings]:
    grid = {}
    for prior in ("β=1", "β fit"):
        fit = prior == "β fit"
        grid[f"bernoulli, {prior}"] = EstimatorSettings(model="bernoulli", prior_fit=fit)
        grid[f"dcm, {prior}"] = EstimatorSettings(model="dcm", prior_fit=fit)
        grid[f"multinomial predictive, {prior}"] = EstimatorSettings(
            estimator="predictive", prior_fit=fit
        )
        for model in ("multinomial", "complement"):
            for label, tf, idf, norm in (
                ("", "raw", False, "none"),
                (" tf-log", "log", False, "none"),
                (" tf-log idf", "log", True, "none"),
                (" tf-log idf norm-length", "log", True, "length"),
                (" tf-log idf norm-weight", "log", True, "weight"),
                (" tf-log idf norm-both", "log", True, "both"),
                (" norm-weight", "raw", False, "weight"),
            ):
                grid[f"{model}{label}, {prior}"] = EstimatorSettings(
                    model=model, tf=tf, idf=idf, norm=norm, prior_fit=fit
                )
        grid[f"complement no-class-prior, {prior}"] = EstimatorSettings(
            model="complement", class_prior=False, prior_fit=fit
        )
        grid[f"complement tf-log no-class-prior, {prior}"] = EstimatorSettings(
            model="complement", tf="log", class_prior=False, prior_fit=fit
        )
    return grid


def sklearn_models():
    from sklearn.naive_bayes import BernoulliNB, ComplementNB, MultinomialNB

    return {
        "scikit-learn MultinomialNB()": MultinomialNB,
        "scikit-learn BernoulliNB()": BernoulliNB,
        "scikit-learn ComplementNB()": ComplementNB,
    }


def macro_f1(y: np.ndarray, predicted: np.ndarray, C: int) -> float:
    scores = []
    for c in range(C):
        tp = np.sum((predicted == c) & (y == c))
        fp = np.sum((predicted == c) & (y != c))
        fn = np.sum((predicted != c) & (y == c))
        scores.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return float(np.mean(scores))


def evaluate(name, classes, words, X, labels, fold, test_folds, grid, fitted_betas):
    C = len(classes)
    sorted_words = np.array(words)
    parts = {k: fold_counts(classes, words, X[fold == k], labels[fold == k]) for k in set(fold)}
    total = parts[0]
    for k in sorted(parts)[1:]:
        total = Counts(classes, words, total.class_count + parts[k].class_count,
                       total.doc_count + parts[k].doc_count,
                       total.token_count + parts[k].token_count)  # fmt: skip
    predicted = {key: np.full(len(labels), -1) for key in [*grid, *sklearn_models()]}
    tested = np.zeros(len(labels), dtype=bool)
    for k in test_folds:
        train = subtract(total, parts[k])  # the counts a fit of the other folds gives
        test = fold == k
        tested |= test
        columns = np.searchsorted(sorted_words, train.vocabulary)
        X_test = X[test][:, columns]
        for key, settings in grid.items():
            scorer = make_scorer(train, settings)
            predicted[key][test] = scorer.joint_log_likelihood(X_test).argmax(axis=1)
        for model in ("multinomial", "complement", "dcm", "bernoulli"):
            fitted_betas.setdefault(name, {}).setdefault(model, []).append(
                round(fit_beta(train, model), 4)
            )
        X_train = X[fold != k][:, columns]
        for key, model in sklearn_models().items():
            nb = model().fit(X_train, labels[fold != k])
            predicted[key][test] = nb.predict(X_test)
    y = labels[tested]
    return {
        key: {
            "accuracy": float(np.mean(p[tested] == y)),
            "macro_f1": macro_f1(y, p[tested], C),
        }
        for key, p in predicted.items()
    }


def main() -> None:
    start = time.perf_counter()
    grid = settings_grid()
    results, sizes, fitted_betas = {}, {}, {}
    for name, classes, words, X, labels, fold, test_folds in corpora():
        sizes[name] = {"documents": int(X.shape[0]), "classes": len(classes),
                       "words": len(words)}  # fmt: skip
        print(f"{name}: {X.shape[0]} documents, {len(words)} words", file=sys.stderr)
        results[name] = evaluate(name, classes, words, X, labels, fold, test_folds, grid,
                                 fitted_betas)  # fmt: skip
        print(f"  done at {time.perf_counter() - start:.0f} s", file=sys.stderr)
    names = list(results)
    keys = list(results[names[0]])
    sklearn_best = {
        n: max(results[n][k]["accuracy"] for k in sklearn_models()) for n in names
    }
    mean_f1 = {k: float(np.mean([results[n][k]["macro_f1"] for n in names])) for k in keys}
    lines = [
        "| setting | "
        + " | ".join(f"{n} acc | {n} macro-F1" for n in names)
        + " | mean macro-F1 |",
        "|---|" + "---:|---:|" * len(names) + "---:|",
    ]
    for key in sorted(keys, key=lambda k: -mean_f1[k]):
        cells = []
        for n in names:
            r = results[n][key]
            mark = "" if key in sklearn_models() or r["accuracy"] < sklearn_best[n] else "*"
            cells.append(f"{r['accuracy']:.4f}{mark} | {r['macro_f1']:.4f}")
        lines.append(f"| {key} | " + " | ".join(cells) + f" | {mean_f1[key]:.4f} |")
    seconds = time.perf_counter() - start
    out = {"results": results, "sizes": sizes, "fitted_beta": fitted_betas,
           "seconds": seconds}  # fmt: skip
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "choose_defaults.json").write_text(json.dumps(out, indent=1) + "\n")
    text = "\n".join(lines) + (
        "\n\n`*`: accuracy at least that of the best of the three scikit-learn models on "
        f"that corpus. Fitted β (prior fit, raw counts) per fold: "
        f"{json.dumps(fitted_betas)}. {seconds:.0f} s.\n"
    )
    (HERE / "results" / "choose_defaults.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
