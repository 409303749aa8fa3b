"""Defaults of the command line that live outside the estimator settings, in a light module.

The help texts of ``nbclass`` are built from these constants (and from
:data:`nbclass.models.estimators.DEFAULTS` and
:data:`nbclass.text.tokenizer.DEFAULT_TOKEN_PATTERN`),
the very values the code uses, so the help cannot drift from them. Importing this module
costs nothing (no numpy): the command line reads it when it builds its options.
"""

from __future__ import annotations

# The choices of the estimator options, shared by the click options and the one-document
# path's own parser (:mod:`nbclass.cli.entry`).
MODELS = ("multinomial", "bernoulli", "complement", "dcm", "poisson")
ESTIMATORS = ("posterior-mean", "map", "mle", "predictive")
TF = ("raw", "log")
NORMS = ("none", "length", "weight", "both")
AUTO = "auto"  # fit's --model default: choose the settings by cross-validation

# Documents scored at a time (predict, evaluate): here so that bulk predict can plan its
# worker processes before it imports the models (and scipy).
BATCH_SIZE = 1000
DEFAULT_FOLDS = 5  # cv: stratified folds
DEFAULT_SEED = 0  # cv: seed of the stratified split
DEFAULT_VAR_SMOOTHING = 1e-9  # fit --table: variance floor, times the largest variance
# The text report of evaluate (and of cv of multi-label lines) has a row per class in its
# per-class table up to TABLE_CLASSES classes; past them, unless --all-classes, the
# SHOWN_CLASSES with the most test documents, then the SHOWN_CLASSES of lowest F1, and
# its notes name the first NOTE_NAMES classes of a list longer than TABLE_CLASSES.
TABLE_CLASSES = 50
SHOWN_CLASSES = 25
NOTE_NAMES = 10
