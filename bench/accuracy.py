"""``make bench-accuracy``: how right and how calibrated nbclass is, against scikit-learn.

On every corpus of ``../shared/corpora`` (``NBCLASS_SHARED_CORPORA`` overrides), one run
measures, on a held-out test split:

- scikit-learn's three naive Bayes models at their defaults, each behind
  ``CountVectorizer()``: ``MultinomialNB()``, ``BernoulliNB()``, ``ComplementNB()``;
- scikit-learn's ``TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2))`` +
  ``LinearSVC()``, and NBSVM (:class:`NBSVM`) on every training document and on the
  sample a default nbclass model keeps;
- nbclass through its real command line: ``nbclass fit TRAIN -o MODEL`` at its defaults,
  with ``--ngram-range 1,2`` and with ``--model`` each of multinomial, bernoulli,
  complement and dcm, then ``nbclass predict -m MODEL TEST --format jsonl``, whose
  probabilities are read back.

For each: accuracy, macro-F1, log loss, ECE (n/a for LinearSVC and NBSVM, which have no
probabilities), and the fit and predict wall times. On the multi-label Reuters-21578
ModApte split: scikit-learn's OneVsRestClassifier over MultinomialNB (probability 0.5),
ComplementNB (its predict) and TF-IDF + LinearSVC, and nbclass's ``fit --multi-label``
defaults, scored by micro-F1, macro-F1, Hamming loss and subset accuracy; and the CPU
time of that fit against a single-label ``fit --lines`` of each story's first topic
(:func:`fit_cost`, runs in turn).

Splits. 20 Newsgroups has its own (by date: train/test). The other corpora have none:
each gets a stratified 80/20 split, fixed by ``SEED``: a class's files, sorted by name,
are shuffled with ``numpy.random.default_rng(SEED)`` (classes in sorted order, one
generator for the whole corpus) and the first round(0.2 n_c) go to the test split. The
split is made of symbolic links under the cache folder, never in the repository.

Metrics, the same code for every model (:mod:`nbclass.models.metrics`): the predicted label is
the one the model prints (scikit-learn: ``predict``); its probability is the confidence.
ECE uses ``BINS`` = 15 equal-width bins of the confidence. The log loss is
−mean log p(true class), with p clipped below at ``EPS`` = 1e-15 (as scikit-learn's
``log_loss`` long did): both tools print probabilities, and a true class whose
probability underflows to 0.0 would make it infinite.

Times are wall seconds. nbclass's are whole processes, as a user runs them (start-up,
reading the files, counting, writing or reading the model file). scikit-learn's are in
this process on texts already read: ``CountVectorizer().fit_transform`` + ``fit`` for
fit, ``transform`` + ``predict_proba`` for predict.

Corpora are unpacked once into ``~/.cache/nbclass-corpora`` (``NBCLASS_CACHE``
overrides), never into the repository.

Usage: python bench/accuracy.py [--corpus NAME]...
Writes bench/results/accuracy-<UTC time>.md and .json and prints the table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from nbclass.models import metrics  # noqa: E402

SHARED = Path(os.environ.get("NBCLASS_SHARED_CORPORA", REPO.parent / "shared" / "corpora"))
CACHE = Path(os.environ.get("NBCLASS_CACHE", Path.home() / ".cache" / "nbclass-corpora"))
NBCLASS = str(Path(sys.executable).parent / "nbclass")
SEED = 2026
TEST_SHARE = 0.2
BINS = 15
EPS = 1e-15
NBCLASS_MODELS = ("multinomial", "bernoulli", "complement", "dcm")
PAIRS = "--ngram-range 1,2"  # the defaults, choosing words or words + pairs from the data

# name -> (archive, folder in the archive, (train, test) subfolders or None: make a split)
CORPORA = {
    "20news": ("20news-bydate.tar.gz", "20news", ("train", "test")),
    "sms_spam": ("sms_spam.tar.gz", "sms_spam", None),
    "movie_reviews": ("movie_reviews.tar.gz", "movie_reviews", None),
    "nps_chat": ("nps_chat.tar.gz", "nps_chat", None),
    "pros_cons": ("pros_cons.tar.gz", "pros_cons", None),
}


def unpacked(archive: str, folder: str) -> Path:
    """The archive's folder under the cache, unpacked on first use (whole or not at all)."""
    root = CACHE / folder
    if root.is_dir():
        return root
    source = SHARED / archive
    if not source.exists():
        sys.exit(f"bench-accuracy: {source} not found (the shared corpora live beside the repo)")
    partial = CACHE / f".unpacking-{folder}-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with tarfile.open(source) as tar:
        tar.extractall(partial, filter="data")
    (partial / folder).rename(root)
    shutil.rmtree(partial)
    return root


def class_files(root: Path) -> dict[str, list[Path]]:
    """{class: its files sorted by name}, classes sorted (the corpora are one level deep)."""
    return {
        d.name: sorted(p for p in d.iterdir() if p.is_file() and not p.name.startswith("."))
        for d in sorted(root.iterdir())
        if d.is_dir() and not d.name.startswith(".")
    }


def split(name: str, root: Path) -> tuple[Path, Path]:
    """(train, test) folders of links: the stratified 80/20 split fixed by SEED."""
    target = CACHE / "splits" / f"{name}-seed{SEED}"
    if (target / "train").is_dir() and (target / "test").is_dir():
        return target / "train", target / "test"
    partial = target.with_name(target.name + f".partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    rng = np.random.default_rng(SEED)
    for label, files in class_files(root).items():
        order = rng.permutation(len(files))
        n_test = round(TEST_SHARE * len(files))
        for rank, i in enumerate(order.tolist()):
            folder = partial / ("test" if rank < n_test else "train") / label
            folder.mkdir(parents=True, exist_ok=True)
            (folder / files[i].name).symlink_to(files[i].resolve())
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target / "train", target / "test"


def corpus_split(name: str) -> tuple[Path, Path]:
    archive, folder, parts = CORPORA[name]
    root = unpacked(archive, folder)
    if parts is not None:
        return root / parts[0], root / parts[1]
    return split(name, root)


def read(root: Path) -> tuple[list[str], list[str]]:
    """Texts and labels of a folder corpus, read as nbclass reads them (UTF-8, replaced)."""
    texts, labels = [], []
    for label, files in class_files(root).items():
        for path in files:
            texts.append(path.read_bytes().decode("utf-8", "replace"))
            labels.append(label)
    return texts, labels


def scores(
    classes: list[str], truth: list[str], predicted: list[str], proba: np.ndarray | None
) -> dict:
    """Accuracy, macro-F1, log loss and ECE from labels and probabilities (n, C); a model
    with no probabilities (``proba`` None: LinearSVC, NBSVM) has no log loss or ECE."""
    at = {c: i for i, c in enumerate(classes)}
    y_true = np.array([at[t] for t in truth], dtype=np.int64)
    y_pred = np.array([at.get(p, -1) for p in predicted], dtype=np.int64)
    n, L = y_true.size, len(classes)
    confusion = metrics.confusion_matrix(y_true, y_pred, L)
    per_class = metrics.class_metrics(confusion, np.bincount(y_true, minlength=L))
    if proba is None:
        return {
            "accuracy": metrics.accuracy(confusion, n),
            "macro_f1": metrics.macro_f1(per_class),
            "log_loss": None,
            "ece": None,
        }
    p_true = np.clip(proba[np.arange(n), y_true], EPS, 1.0)
    confidence = np.where(y_pred >= 0, proba[np.arange(n), np.maximum(y_pred, 0)], 0.0)
    calibration = metrics.calibration(confidence, y_pred == y_true, BINS)
    return {
        "accuracy": metrics.accuracy(confusion, n),
        "macro_f1": metrics.macro_f1(per_class),
        "log_loss": float(-np.mean(np.log(p_true))),
        "ece": calibration.ece,
    }


def run_sklearn(train, test) -> list[dict]:
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
    from sklearn.naive_bayes import BernoulliNB, ComplementNB, MultinomialNB
    from sklearn.svm import LinearSVC

    (train_texts, train_labels), (test_texts, test_labels) = train, test
    rows = []
    for model in (MultinomialNB, BernoulliNB, ComplementNB):
        start = time.perf_counter()
        vectorizer = CountVectorizer()
        classifier = model().fit(vectorizer.fit_transform(train_texts), train_labels)
        fitted = time.perf_counter()
        X = vectorizer.transform(test_texts)
        proba = classifier.predict_proba(X)
        predicted = classifier.predict(X)
        done = time.perf_counter()
        classes = [str(c) for c in classifier.classes_]
        row = {"tool": "scikit-learn", "model": f"{model.__name__}()"}
        row.update(scores(classes, test_labels, list(predicted), proba))
        row.update(fit_seconds=fitted - start, predict_seconds=done - fitted)
        rows.append(row)
    # The linear baseline users try next: TF-IDF with sublinear tf over words and word
    # pairs, then a linear SVM (one against the rest); its decision values are no
    # probabilities, so it has accuracy and macro-F1 only.
    start = time.perf_counter()
    vectorizer = TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2))
    classifier = LinearSVC().fit(vectorizer.fit_transform(train_texts), train_labels)
    fitted = time.perf_counter()
    predicted = classifier.predict(vectorizer.transform(test_texts))
    done = time.perf_counter()
    row = {"tool": "scikit-learn", "model": SVM_NAME}
    row.update(scores([str(c) for c in classifier.classes_], test_labels, list(predicted), None))
    row.update(fit_seconds=fitted - start, predict_seconds=done - fitted)
    rows.append(row)
    # NBSVM on every training document, and on the documents a default model keeps (its
    # sample): only the latter could be a function of the model file.
    classes = sorted(set(train_labels))
    kept = sample(train_texts, train_labels)
    for name, chosen in ((NBSVM_NAME, range(len(train_texts))), (NBSVM_SAMPLE_NAME, kept)):
        start = time.perf_counter()
        nbsvm = NBSVM().fit([train_texts[i] for i in chosen], [train_labels[i] for i in chosen])
        fitted = time.perf_counter()
        predicted = nbsvm.predict(test_texts)
        done = time.perf_counter()
        row = {"tool": "bench", "model": name}
        row.update(scores(classes, test_labels, predicted, None))
        row.update(fit_seconds=fitted - start, predict_seconds=done - fitted)
        rows.append(row)
    return rows


SAMPLE_SIZE, SAMPLE_PER_CLASS = 6000, 5


def sample(texts: list[str], labels: list[str]) -> list[int]:
    """The documents a default nbclass model keeps as its sample (docs/choosing.md): the
    first SAMPLE_SIZE by the SHA-256 of their content, and the first SAMPLE_PER_CLASS of
    each class in that order; indices in that order. (The content is hashed as the text
    read here, UTF-8 encoded: the file's bytes but where decoding replaced some.)"""
    import hashlib

    order = sorted(
        range(len(texts)), key=lambda i: hashlib.sha256(texts[i].encode("utf-8")).digest()
    )
    rank: dict[str, int] = {}
    kept = []
    for position, i in enumerate(order):
        rank[labels[i]] = rank.get(labels[i], 0) + 1
        if position < SAMPLE_SIZE or rank[labels[i]] <= SAMPLE_PER_CLASS:
            kept.append(i)
    return kept


SVM_NAME = "TF-IDF 1-2 + LinearSVC()"
NBSVM_NAME = "NBSVM 1-2"
NBSVM_SAMPLE_NAME = "NBSVM 1-2, sample"


class NBSVM:
    """NBSVM (Wang & Manning 2012): a linear SVM over word and word-pair presences scaled by
    naive Bayes's log-count ratio, one class against the rest.

    For class c, with x̂ the binarized counts (n, V) of words and word pairs, α = 1:
    p = α + Σ_{y = c} x̂, q = α + Σ_{y ≠ c} x̂, r = log(p / ‖p‖₁) − log(q / ‖q‖₁), (V,);
    a linear SVM (squared hinge, C = 1) on r ∘ x̂ gives w, b; the score is (r ∘ x̂) · w + b
    and the label the class of the largest score.

    The paper's interpolation w' = (1 − β) w̄ + β w (w̄ = ‖w‖₁ / V, β = 0.25) is not used
    (β = 1): it shrinks the weights but keeps the SVM's bias b, which on unbalanced
    classes then decides alone (SMS spam, 87 % ham: every message labelled ham but a few,
    accuracy 87.9 %, macro-F1 55.3; the paper's corpora are balanced, where b ≈ 0).
    """

    ALPHA, C = 1.0, 1.0

    def fit(self, texts: list[str], labels: list[str]) -> NBSVM:
        from sklearn.feature_extraction.text import CountVectorizer
        from sklearn.svm import LinearSVC

        self.vectorizer = CountVectorizer(ngram_range=(1, 2), binary=True)
        X = self.vectorizer.fit_transform(texts).tocsr().astype(np.float64)  # (n, V)
        y = np.asarray(labels)
        self.classes = sorted(set(labels))
        self.r, self.w, self.b = [], [], []
        for c in self.classes:
            inside = y == c
            p = self.ALPHA + np.asarray(X[inside].sum(axis=0)).ravel()
            q = self.ALPHA + np.asarray(X[~inside].sum(axis=0)).ravel()
            r = np.log(p / p.sum()) - np.log(q / q.sum())  # (V,)
            svm = LinearSVC(C=self.C).fit(X.multiply(r).tocsr(), inside)
            self.r.append(r)
            self.w.append(svm.coef_.ravel())
            self.b.append(float(svm.intercept_[0]))
        return self

    def predict(self, texts: list[str]) -> list[str]:
        X = self.vectorizer.transform(texts).tocsr().astype(np.float64)
        scores = np.column_stack(
            [X @ (r * w) + b for r, w, b in zip(self.r, self.w, self.b)]
        )  # (n, C)
        return [self.classes[i] for i in scores.argmax(axis=1)]


def _timed(cmd: list[str]) -> tuple[float, bytes]:
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"bench-accuracy: {' '.join(cmd)} failed:\n{result.stderr.decode()}")
    return seconds, result.stdout


def run_nbclass(train: Path, test: Path, work: Path, model: str | None) -> dict:
    """One nbclass row: ``model`` None for the defaults, PAIRS for the defaults choosing
    between words and words + pairs, or an event model's name."""
    path = str(work / f"{(model or 'defaults').replace(' ', '_')}.nbc")
    options = {None: [], PAIRS: PAIRS.split()}.get(model, ["--model", model])
    fit_seconds, _ = _timed([NBCLASS, "fit", str(train), "-o", path, "-q", *options])
    predict_seconds, output = _timed(
        # --min-known 0: every document takes its most probable class, as scikit-learn's
        # do (by default one with no known word is unsure, with the prior's probabilities).
        [NBCLASS, "predict", "-m", path, str(test), "--format", "jsonl", "-q", "--min-known", "0"]
    )
    records = [json.loads(line) for line in output.decode().splitlines()]
    classes = sorted(records[0]["probabilities"])
    proba = np.array([[r["probabilities"][c] for c in classes] for r in records])
    truth = [Path(r["source"]).parent.name for r in records]
    predicted = [r["label"] for r in records]
    name = {None: "defaults", PAIRS: PAIRS}.get(model, f"--model {model}")
    row = {"tool": "nbclass", "model": name}
    row.update(scores(classes, truth, predicted, proba))
    row.update(fit_seconds=fit_seconds, predict_seconds=predict_seconds)
    return row


# --- Multi-label: Reuters-21578 ModApte ---------------------------------------------------

# name -> (archive, folder in the archive); train.jsonl and test.jsonl, {"labels", "text"}
MULTI_LABEL = {"reuters21578": ("reuters21578.tar.gz", "reuters21578")}


def read_lines(path: Path) -> tuple[list[str], list[set[str]]]:
    """Texts and label sets of a JSON-lines file of {"labels": [...], "text": ...}."""
    texts, labels = [], []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            texts.append(record["text"])
            labels.append(set(record["labels"]))
    return texts, labels


def multi_scores(labels: list[str], truth: list[set], predicted: list[set]) -> dict:
    """Micro-F1, macro-F1 (over ``labels``), Hamming loss and subset accuracy.

    With Y, P the (n, L) indicator matrices of the true and predicted sets: per label
    tp, fp, fn; micro-F1 = 2 Σtp / (2 Σtp + Σfp + Σfn); macro-F1 = the mean over the labels
    of 2 tp / (2 tp + fp + fn) (0 for a label neither true nor predicted); Hamming loss =
    mean(Y ≠ P); subset accuracy = the share of documents whose set is exactly right.
    """
    at = {label: i for i, label in enumerate(labels)}
    n, L = len(truth), len(labels)
    Y = np.zeros((n, L), dtype=bool)
    P = np.zeros((n, L), dtype=bool)
    for i, (t, p) in enumerate(zip(truth, predicted)):
        Y[i, [at[x] for x in t if x in at]] = True
        P[i, [at[x] for x in p if x in at]] = True
    tp = (Y & P).sum(axis=0)
    fp = (~Y & P).sum(axis=0)
    fn = (Y & ~P).sum(axis=0)
    denominator = 2 * tp + fp + fn
    f1 = np.divide(2 * tp, denominator, out=np.zeros(L), where=denominator > 0)
    return {
        "micro_f1": float(2 * tp.sum() / max(1, 2 * tp.sum() + fp.sum() + fn.sum())),
        "macro_f1": float(f1.mean()),
        "hamming_loss": float((Y != P).mean()),
        "subset_accuracy": float((Y == P).all(axis=1).mean()),
    }


def run_sklearn_multi(train, test) -> list[dict]:
    """One against the rest over each label: MultinomialNB and ComplementNB on
    CountVectorizer() counts (α = 1), and TF-IDF words + pairs + LinearSVC."""
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.naive_bayes import ComplementNB, MultinomialNB
    from sklearn.preprocessing import MultiLabelBinarizer
    from sklearn.svm import LinearSVC

    (train_texts, train_labels), (test_texts, test_labels) = train, test
    binarizer = MultiLabelBinarizer()
    Y = binarizer.fit_transform(train_labels)  # (n, L)
    labels = [str(x) for x in binarizer.classes_]
    rows = []
    for name, vectorizer, model in (
        ("OneVsRest(MultinomialNB()), p >= 0.5", CountVectorizer(), MultinomialNB()),
        ("OneVsRest(ComplementNB()), predict", CountVectorizer(), ComplementNB()),
        (
            "OneVsRest(TF-IDF 1-2 + LinearSVC())",
            TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2)),
            LinearSVC(),
        ),
    ):
        start = time.perf_counter()
        classifier = OneVsRestClassifier(model).fit(vectorizer.fit_transform(train_texts), Y)
        fitted = time.perf_counter()
        X = vectorizer.transform(test_texts)
        if isinstance(model, MultinomialNB):  # its calibrated probability, threshold 0.5
            decided = np.column_stack(
                [e.predict_proba(X)[:, 1] >= 0.5 for e in classifier.estimators_]
            )
        else:  # ComplementNB's probability is no calibrated one; LinearSVC has none
            decided = np.column_stack([e.predict(X) == 1 for e in classifier.estimators_])
        done = time.perf_counter()
        predicted = [{labels[j] for j in np.flatnonzero(row)} for row in decided]
        row = {"tool": "scikit-learn", "model": name}
        row.update(multi_scores(labels, test_labels, predicted))
        row.update(fit_seconds=fitted - start, predict_seconds=done - fitted)
        rows.append(row)
    return rows


def nbclass_multi_label() -> bool:
    """Whether this nbclass fits multi-label models (``fit --multi-label``)."""
    result = subprocess.run([NBCLASS, "fit", "--help"], capture_output=True)
    return b"--multi-label" in result.stdout


def run_nbclass_multi(train: Path, test: tuple[list[str], list[set]], work: Path) -> dict:
    """nbclass's multi-label defaults through its command line: ``fit --multi-label --lines
    train.jsonl``, then ``predict --lines`` on the test texts (one a line: their line breaks
    made spaces, which tokenizes them alike), whose label sets are scored here."""
    texts, truth = test
    path = str(work / "multi-label.nbc")
    lines = work / "test-texts.txt"
    lines.write_text("".join(" ".join(t.split()) + "\n" for t in texts), encoding="utf-8")
    fit_seconds, _ = _timed(
        [NBCLASS, "fit", "--multi-label", "--lines", str(train), "-o", path, "-q"]
    )
    predict_seconds, output = _timed(
        [NBCLASS, "predict", "-m", path, "--lines", str(lines), "--format", "jsonl", "-q"]
    )
    records = [json.loads(line) for line in output.decode().splitlines()]
    assert len(records) == len(texts), (len(records), len(texts))
    labels = sorted(records[0]["probabilities"])
    row = {"tool": "nbclass", "model": "defaults (fit --multi-label)"}
    row.update(multi_scores(labels, truth, [set(r["labels"]) for r in records]))
    row.update(fit_seconds=fit_seconds, predict_seconds=predict_seconds)
    return row


FIT_COST_PAIRS = 3  # multi-label and single-label fits measured in turn, this many of each


def first_topic_lines(train: Path, out: Path) -> int:
    """Write ``__label__FIRST TEXT`` for each document of ``train`` (JSON lines) with a
    label, its text's whitespace made single spaces: the single-label corpus of the same
    text whose fit the multi-label fit is compared with. Returns the number of lines."""
    n = 0
    with train.open(encoding="utf-8") as lines, out.open("w", encoding="utf-8") as written:
        for line in lines:
            record = json.loads(line)
            if record["labels"]:
                text = " ".join(record["text"].split())
                written.write(f"__label__{record['labels'][0]} {text}\n")
                n += 1
    return n


def child_cpu(cmd: list[str]) -> float:
    """The CPU seconds (user + sys) of running ``cmd`` to its end, from the operating
    system's accounting of this process's finished children."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    _timed(cmd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def fit_cost(train: Path, work: Path, pairs: int = FIT_COST_PAIRS) -> dict:
    """What ``fit --multi-label`` costs against a single-label ``fit --lines`` of each
    document's first label (:func:`first_topic_lines`), at the defaults: ``pairs`` of
    each run in turn (multi-label first), the medians of their CPU seconds and of the
    pairs' ratios (issue 31's target: at most 2)."""
    single = work / "first-topic.txt"
    first_topic_lines(train, single)
    multi, one = [], []
    for _ in range(pairs):
        multi.append(child_cpu([NBCLASS, "fit", "--multi-label", "--lines", str(train), "-o",
                                str(work / "cost-multi.nbc"), "-q"]))  # fmt: skip
        one.append(child_cpu([NBCLASS, "fit", "--lines", str(single), "-o",
                              str(work / "cost-single.nbc"), "-q"]))  # fmt: skip
    return {
        "pairs": pairs,
        "multi_label_cpu": float(np.median(multi)),
        "single_label_cpu": float(np.median(one)),
        "ratio": float(np.median(np.array(multi) / np.array(one))),
    }


MULTI_HEADER = (
    "| corpus | labels | train / test | tool | model | micro-F1 | macro-F1 | Hamming loss "
    "| subset accuracy | fit s | predict s |\n"
    "|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|"
)


def multi_table(results: list[dict]) -> str:
    lines = [MULTI_HEADER]
    for corpus in results:
        for i, r in enumerate(corpus["rows"]):
            sizes = f"{corpus['train']} / {corpus['test']}"
            cells = (corpus["corpus"], corpus["labels"], sizes) if i == 0 else ("", "", "")
            lines.append(
                "| {} | {} | {} ".format(*cells)
                + f"| {r['tool']} | {r['model']} | {r['micro_f1']:.4f} | {r['macro_f1']:.4f} "
                f"| {r['hamming_loss']:.5f} | {r['subset_accuracy']:.4f} "
                f"| {r['fit_seconds']:.2f} | {r['predict_seconds']:.2f} |"
            )
    for corpus in results:
        cost = corpus.get("fit_cost")
        if cost:
            lines.append(
                f"\n{corpus['corpus']}: `fit --multi-label` {cost['multi_label_cpu']:.2f} s of "
                f"CPU against {cost['single_label_cpu']:.2f} s for `fit --lines` of each "
                f"document's first label, {cost['ratio']:.2f} times (medians of "
                f"{cost['pairs']} runs of each in turn; the target is at most 2)."
            )
    return "\n".join(lines)


def run_multi_label(name: str, work: Path) -> dict:
    archive, folder = MULTI_LABEL[name]
    root = unpacked(archive, folder)
    train, test = read_lines(root / "train.jsonl"), read_lines(root / "test.jsonl")
    labels = sorted(set().union(*train[1]))
    print(
        f"bench-accuracy: {name}: {len(labels)} labels, {len(train[0])} train / "
        f"{len(test[0])} test documents (multi-label)",
        flush=True,
    )
    rows = run_sklearn_multi(train, test)
    cost = None
    if nbclass_multi_label():
        rows.append(run_nbclass_multi(root / "train.jsonl", test, work))
        cost = fit_cost(root / "train.jsonl", work)
    else:
        print("  nbclass: no fit --multi-label in this version: no nbclass row", flush=True)
    for r in rows:
        print(
            f"  {r['tool']:12} {r['model']:38} micro-F1 {r['micro_f1']:.4f}  "
            f"macro-F1 {r['macro_f1']:.4f}  Hamming {r['hamming_loss']:.5f}  "
            f"subset {r['subset_accuracy']:.4f}  fit {r['fit_seconds']:.2f} s  "
            f"predict {r['predict_seconds']:.2f} s",
            flush=True,
        )
    if cost:
        print(
            f"  fit cost: multi-label {cost['multi_label_cpu']:.2f} s CPU, single-label "
            f"(first labels) {cost['single_label_cpu']:.2f} s, ratio {cost['ratio']:.2f}",
            flush=True,
        )
    return {
        "corpus": name,
        "labels": len(labels),
        "train": len(train[0]),
        "test": len(test[0]),
        "split": "ModApte",
        "rows": rows,
        "fit_cost": cost,
    }


def machine() -> str:
    import scipy
    import sklearn

    return (
        f"{os.cpu_count()} cores; {platform.platform()}; Python {platform.python_version()}, "
        f"numpy {np.__version__}, scipy {scipy.__version__}, scikit-learn {sklearn.__version__}"
    )


def commit() -> str:
    result = subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True
    )
    return result.stdout.decode().strip() or "unknown"


HEADER = (
    "| corpus | classes | train / test | tool | model | accuracy | macro-F1 | log loss "
    "| ECE | fit s | predict s |\n"
    "|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|"
)


def shown(value: float | None) -> str:
    """A probabilistic column: 4 decimals, or n/a for a model with no probabilities."""
    return "n/a" if value is None else f"{value:.4f}"


def table(results: list[dict]) -> str:
    lines = [HEADER]
    for corpus in results:
        for i, r in enumerate(corpus["rows"]):
            sizes = f"{corpus['train']} / {corpus['test']}"
            cells = (corpus["corpus"], corpus["classes"], sizes) if i == 0 else ("", "", "")
            lines.append(
                "| {} | {} | {} ".format(*cells)
                + f"| {r['tool']} | {r['model']} | {r['accuracy']:.4f} | {r['macro_f1']:.4f} "
                f"| {shown(r['log_loss'])} | {shown(r['ece'])} | {r['fit_seconds']:.2f} "
                f"| {r['predict_seconds']:.2f} |"
            )
    return "\n".join(lines)


def summary(results: list[dict]) -> str:
    """nbclass's defaults (words; words or words + pairs) against the best of scikit-learn's
    naive Bayes (by accuracy), TF-IDF + LinearSVC and NBSVM (all documents, the sample),
    corpus by corpus: accuracy and macro-F1 (points: × 100)."""
    lines = [
        "| corpus | defaults | --ngram-range 1,2 | best sklearn NB | TF-IDF 1-2 + LinearSVC "
        "| NBSVM 1-2 | NBSVM 1-2, sample | defaults − LinearSVC | 1,2 − LinearSVC |",
        "|---|---|---|---|---|---|---|---:|---:|",
    ]
    for corpus in results:
        rows = corpus["rows"]
        by = {(r["tool"], r["model"]): r for r in rows}
        nb = max(
            (r for r in rows if r["tool"] == "scikit-learn" and r["model"].endswith("NB()")),
            key=lambda r: r["accuracy"],
        )
        picked = [by[("nbclass", "defaults")], by[("nbclass", PAIRS)], nb]
        picked.append(by[("scikit-learn", SVM_NAME)])
        picked += [by[("bench", NBSVM_NAME)], by[("bench", NBSVM_SAMPLE_NAME)]]
        cells = [f"{100 * r['accuracy']:.1f} / {100 * r['macro_f1']:.1f}" for r in picked]
        cells[2] += f" ({nb['model'][:-2]})"
        gaps = [100 * (picked[i]["accuracy"] - picked[3]["accuracy"]) for i in (0, 1)]
        cells += [f"{gap:+.1f}" for gap in gaps]
        lines.append(f"| {corpus['corpus']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus",
        action="append",
        choices=[*CORPORA, *MULTI_LABEL],
        help="only these (repeatable)",
    )
    args = parser.parse_args()
    names = args.corpus or [*CORPORA, *MULTI_LABEL]
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"nbclass-bench-accuracy-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    results, multi = [], []
    started = time.perf_counter()
    try:
        for name in names:
            if name in MULTI_LABEL:
                multi.append(run_multi_label(name, work))
                continue
            train_dir, test_dir = corpus_split(name)
            train, test = read(train_dir), read(test_dir)
            classes = sorted(set(train[1]))
            print(
                f"bench-accuracy: {name}: {len(classes)} classes, {len(train[0])} train / "
                f"{len(test[0])} test documents",
                flush=True,
            )
            rows = run_sklearn(train, test)
            for model in (None, PAIRS, *NBCLASS_MODELS):
                rows.append(run_nbclass(train_dir, test_dir, work, model))
            for r in rows:
                print(
                    f"  {r['tool']:12} {r['model']:24} accuracy {r['accuracy']:.4f}  "
                    f"macro-F1 {r['macro_f1']:.4f}  log loss {shown(r['log_loss'])}  "
                    f"ECE {shown(r['ece'])}  fit {r['fit_seconds']:.2f} s  "
                    f"predict {r['predict_seconds']:.2f} s",
                    flush=True,
                )
            results.append(
                {
                    "corpus": name,
                    "classes": len(classes),
                    "train": len(train[0]),
                    "test": len(test[0]),
                    "split": "its own" if CORPORA[name][2] else f"stratified 80/20, seed {SEED}",
                    "rows": rows,
                }
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H%M%SZ")
    described = (
        f"nbclass {commit()}, {stamp}; {machine()}. Log loss clipped at p >= {EPS:g}; "
        f"ECE over {BINS} equal-width bins of the top probability; splits: 20news by date, "
        f"Reuters-21578 ModApte, the others stratified 80/20 with seed {SEED}. Whole run "
        f"{time.perf_counter() - started:.0f} s."
    )
    parts = [f"# Accuracy benchmark {stamp}", described]
    if results:
        parts += [table(results), summary(results)]
    if multi:
        parts.append(multi_table(multi))
    text = "\n\n".join(parts) + "\n"
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / f"accuracy-{stamp}.md").write_text(text)
    data = {
        "stamp": stamp,
        "commit": commit(),
        "machine": machine(),
        "seed": SEED,
        "test_share": TEST_SHARE,
        "ece_bins": BINS,
        "log_loss_eps": EPS,
        "corpora": results,
        "multi_label": multi,
    }
    (out / f"accuracy-{stamp}.json").write_text(json.dumps(data, indent=1) + "\n")
    print()
    print(text)
    print(f"bench-accuracy: wrote bench/results/accuracy-{stamp}.md and .json")


if __name__ == "__main__":
    main()
