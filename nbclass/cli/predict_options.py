"""The options of ``predict``, written once: the click command is built from this table,
and the one-document fast start (:mod:`nbclass.cli.entry`) parses with it.

Each :class:`Option` gives the names, the click parameter it fills, its kind, default,
metavar and help. The fast start takes only the options of :data:`FAST` and hands every
other argument list to click; :data:`FALLBACK` names the options of ``predict`` it leaves
to click on purpose (``tests/test_predict_options.py`` checks that the two lists and the
click command agree, name for name, default for default, value for value).

Standard library only (the fast start imports it to parse).
"""

from __future__ import annotations

from ..defaults import AUTO, ESTIMATORS, MODELS, NORMS, TF

# Kinds: "path" (a file name), "int" (a whole number >= 1), "float", "str", a tuple of
# choices, "flag" (present: True), "switch" ("--x/--no-x": True, False, default None),
# "multiple" (a "str" that may be given more than once).


class Option:
    """One option: ``names`` as click declares them, the parameter ``key`` it fills."""

    __slots__ = ("names", "key", "kind", "default", "metavar", "help", "show_default")

    def __init__(
        self, names, key, kind, default=None, metavar=None, help="", show_default=False
    ):  # fmt: skip
        self.names, self.key, self.kind, self.default = names, key, kind, default
        self.metavar, self.help, self.show_default = metavar, help, show_default

    def flags(self) -> list[tuple[str, object]]:
        """``(name, value)`` of each spelling of a flag or switch."""
        if self.kind == "flag":
            return [(name, True) for name in self.names]
        on, off = self.names[0].split("/")
        return [(on, True), (off, False)]

    def __repr__(self) -> str:
        return f"Option({'/'.join(self.names)})"


MODEL_FILE = Option(
    ("-m", "--model-file"), "model_path", "path", metavar="MODEL",
    help="Model file written by 'nbclass fit'.",
)  # fmt: skip
FORMAT = Option(("--format",), "fmt", ("tsv", "jsonl"), "tsv", help="Output format.",
                show_default=True)  # fmt: skip
TOP_K = Option(
    ("--top-k",), "top_k", "int", metavar="K",
    help="Classes listed per document, most probable first.  [default: 1 for tsv, all for jsonl]",
)  # fmt: skip

# The estimator options (every command that estimates has them; predict's override the
# model's defaults). --beta takes B or B1,B0, which the fast start leaves to click.
MODEL = Option(
    ("--model",), "event_model", (AUTO, *MODELS),
    help="Model: word counts (multinomial), word presence (bernoulli), the "
    "other classes' counts (complement, Rennie et al. 2003), bursty words "
    "(dcm, Elkan's EDCM) or Poisson counts per token (poisson), each as its "
    "formula; auto: the settings fit chose by cross-validation, with their "
    "calibration.",
)  # fmt: skip
ESTIMATOR = Option(
    ("--estimator",), "estimator", ESTIMATORS,
    help="How π and θ are estimated from the counts (see docs/maths.md); "
    "predictive: the exact Pólya (poisson: negative binomial) predictive of the "
    "whole document.",
)  # fmt: skip
ALPHA = Option(
    ("--alpha",), "alpha", "float",
    help="Dirichlet pseudo-count α of every class on the class proportions.",
)  # fmt: skip
TF_OPTION = Option(
    ("--tf",), "tf", TF,
    help="Term frequency: the count x, or log(1 + x) (multinomial, complement).",
)  # fmt: skip
IDF = Option(
    ("--idf/--no-idf",), "idf", "switch",
    help="Weight words by log(N / documents containing them).",
)  # fmt: skip
NORM = Option(
    ("--norm",), "norm", NORMS,
    help="Divide a document by its length, each class's weights by their sum, "
    "or both (Rennie et al. 2003).",
)  # fmt: skip
PRIOR_FIT = Option(
    ("--prior-fit/--no-prior-fit",), "prior_fit", "switch",
    help="Choose β by maximising the leave-one-out likelihood of the counts.",
)  # fmt: skip
CLASS_PRIOR = Option(
    ("--class-prior/--no-class-prior",), "class_prior", "switch",
    help="Add log π_c to the scores (off: every class equally likely a priori).",
)  # fmt: skip
# Their keyword in the estimator overrides (:func:`nbclass.models.estimators.resolve`).
OVERRIDES = {
    "event_model": "model", "estimator": "estimator", "alpha": "alpha", "tf": "tf",
    "idf": "idf", "norm": "norm", "prior_fit": "prior_fit", "class_prior": "class_prior",
}  # fmt: skip

NO_CALIBRATION = Option(
    ("--no-calibration",), "no_calibration", "flag", False,
    help="Score with the posterior of the model's formula, without the calibration fit "
    "made for it (an estimator option given turns the calibration off too).",
)  # fmt: skip
MIN_PROBABILITY = Option(
    ("--min-probability",), "min_probability", "float", metavar="P",
    help="Label a document unsure when its top probability is below P.",
)  # fmt: skip
MIN_MARGIN = Option(
    ("--min-margin",), "min_margin", "float", metavar="M",
    help="Label a document unsure when its top two probabilities differ by less than M.",
)  # fmt: skip
MIN_KNOWN = Option(
    ("--min-known",), "min_known", "multiple", (), metavar="N|P%",
    help="Label a document unsure when fewer than N of its tokens, or less than P% of "
    "them, are words the model knows. May be given twice (N and P%).",
)  # fmt: skip
UNSURE_LABEL = Option(
    ("--unsure-label",), "unsure_label", "str", "unsure", show_default=True,
    help="The label of a document the thresholds reject.",
)  # fmt: skip
EXIT_CODE = Option(
    ("--exit-code",), "use_exit_code", "flag", False,
    help="One document only: exit with the class's code (10 to 124, kept by the model for "
    "good: see --exit-code-map), 9 for unsure or no label; 1 and 2 stay errors.",
)  # fmt: skip
EXIT_CODE_MAP = Option(
    ("--exit-code-map",), "show_exit_codes", "flag", False,
    help="Print the model's exit codes, CLASS<TAB>CODE per class (as fit --exit-code-map "
    "reads them), and read no document.",
)  # fmt: skip
QUIET = Option(
    ("-q", "--quiet"), "quiet", "flag", False,
    help="Draw no progress bar (drawn for files and folders when stderr is a terminal "
    "and stdout is not).",
)  # fmt: skip

# What the fast start parses: everything a one-document predict needs.
FAST = (
    MODEL_FILE, FORMAT, TOP_K, MODEL, ESTIMATOR, ALPHA, TF_OPTION, IDF, NORM, PRIOR_FIT,
    CLASS_PRIOR, NO_CALIBRATION, MIN_PROBABILITY, MIN_MARGIN, MIN_KNOWN, UNSURE_LABEL,
    EXIT_CODE, QUIET,
)  # fmt: skip
# The options of predict the fast start leaves to click (they need the whole model,
# several documents, or a value it does not parse), and the arguments.
FALLBACK = (
    "--lines", "--beta", "--scheduler", "--explain", "--min-typicality", "-j", "--jobs",
    "--threshold", "--allow-empty", "--output-dir", "--table", "--table-format", "--id",
    "--encoding", "--max-bytes",
    "--binary", "--on-error", "--exit-code-map", "--labelled",
)  # fmt: skip
