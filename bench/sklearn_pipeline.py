"""The competitor: scikit-learn CountVectorizer + MultinomialNB, as a whole process.

Usage:
  sklearn_pipeline.py fit TRAIN_DIR MODEL      fit and save (joblib) the vectorizer and model
  sklearn_pipeline.py predict MODEL TEST_DIR   load, transform + predict, print accuracy

Documents are read the way nbclass reads them (UTF-8, errors replaced; one subfolder per
class). Saving uses joblib, scikit-learn's documented way to persist a model.
"""

import os
import sys

import joblib
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.naive_bayes import MultinomialNB


def read(root):
    texts, labels = [], []
    for label in sorted(os.listdir(root)):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, label)):
            dirnames.sort()
            for name in sorted(filenames):
                with open(os.path.join(dirpath, name), "rb") as handle:
                    texts.append(handle.read().decode("utf-8", "replace"))
                labels.append(label)
    return texts, labels


if sys.argv[1] == "fit":
    texts, labels = read(sys.argv[2])
    vectorizer = CountVectorizer()
    model = MultinomialNB().fit(vectorizer.fit_transform(texts), labels)
    joblib.dump((vectorizer, model), sys.argv[3])
else:
    vectorizer, model = joblib.load(sys.argv[2])
    texts, labels = read(sys.argv[3])
    predicted = model.predict(vectorizer.transform(texts))
    print(sum(p == y for p, y in zip(predicted, labels)) / len(labels))
