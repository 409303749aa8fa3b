"""Generate a labelled corpus of a given size by drawing documents from a fitted model.

Usage: python bench/generate.py MODEL OUT_DIR MEGABYTES [--seed S]

Each document draws its class from π (posterior mean), its length in tokens from the
lengths of that class's training documents (their mean T_c / N_c, Poisson-distributed),
and its words from the class's multinomial θ_c (posterior mean, β = 1). The vocabulary
and the word frequencies are therefore realistic (Zipfian, as in the training corpus),
and the vocabulary keeps growing with size as real text does, through the rare words.
Files go to OUT_DIR/<class>/<n>.txt, one subfolder per class, like a real corpus.
"""

import argparse
import os
import sys

import numpy as np

from nbclass.counting.counts import as_table
from nbclass.modelfile.textfile import load
from nbclass.models.estimators import log_class_prior, multinomial_log_theta


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("megabytes", type=float)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    counts = load(args.model).counts
    rng = np.random.default_rng(args.seed)
    pi = np.exp(log_class_prior(counts.class_count, "posterior-mean", 1.0))
    cumulative = np.cumsum(
        np.exp(multinomial_log_theta(as_table(counts.token_count), "posterior-mean", 1.0)), axis=0
    )
    mean_length = counts.class_tokens / counts.class_count
    words = np.array(counts.vocabulary, dtype=object)
    target = int(args.megabytes * 1e6)
    written, n = 0, 0
    for label in counts.classes:
        os.makedirs(os.path.join(args.out, label), exist_ok=True)
    while written < target:
        batch = 1000
        classes = rng.choice(len(pi), size=batch, p=pi)
        lengths = rng.poisson(mean_length[classes]) + 1
        for c, length in zip(classes.tolist(), lengths.tolist()):
            column = cumulative[:, c]
            draws = np.searchsorted(column, rng.random(length) * column[-1])
            text = " ".join(words[np.minimum(draws, len(words) - 1)]) + "\n"
            data = text.encode("utf-8")
            n += 1
            with open(os.path.join(args.out, counts.classes[c], f"{n:08d}.txt"), "wb") as handle:
                handle.write(data)
            written += len(data)
            if written >= target:
                break
    print(f"generated {n} documents, {written / 1e6:.1f} MB in {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
