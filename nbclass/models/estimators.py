"""Estimators: class priors π and word probabilities θ from counts, in log space.

Notation (``docs/maths.md``; counts are defined in :mod:`nbclass.counting.counts`):

================  ==========================  ==========================================
symbol            code name                   meaning
================  ==========================  ==========================================
π_c               ``log_pi`` (log)            probability of class c
θ_jc              ``log_theta`` (log)         Bernoulli: p(word j present | c);
                                              multinomial: p(a token is word j | c)
α_c = α           ``alpha``                   Dirichlet pseudo-count on class proportions
β_1, β_0          ``beta = (β_1, β_0)``       Beta pseudo-counts for "present"/"absent"
β                 ``beta = (β, β)``           symmetric Dirichlet on a class's words
================  ==========================  ==========================================

==============  ====================  ===========================  =========================
estimator       π_c                   θ_jc Bernoulli               θ_jc multinomial
==============  ====================  ===========================  =========================
mle             N_c / N               D_jc / N_c                   T_jc / T_c
map             (N_c+α−1) / (N+Cα−C)  (D_jc+β1−1) / (N_c+β1+β0−2)  (T_jc+β−1) / (T_c+V(β−1))
posterior-mean  (N_c+α) / (N+Cα)      (D_jc+β1) / (N_c+β1+β0)      (T_jc+β) / (T_c+Vβ)
==============  ====================  ===========================  =========================

Every estimate is a fraction ``numerator / denominator`` of counts plus pseudo-counts,
written once in the ``*_fraction`` functions, which take plain numbers or numpy arrays
alike: the one-document path (:mod:`nbclass.modelfile.quick`) and the batch path share them. The
``log_*`` functions take the difference of the logarithms (never the log of a rounded
ratio). numpy is imported only inside the functions that need it. A zero numerator gives
log 0 = −inf, a legitimate answer under ``mle`` (the seeds' "black swan"). A zero
denominator (a class with no tokens under ``mle``) means the class gives no word any
probability: its θ are 0.

References: seed 000 (Bayesian naive Bayes, MAP, posterior predictive), seed 004
(Laplace smoothing), ``docs/maths.md``.
"""

from __future__ import annotations

import math

from ..defaults import AUTO, ESTIMATORS, MODELS, NORMS, TF  # noqa: F401 - the choices
from ..errors import UsageError
from ..ranges import MAX_PSEUDO_COUNT, RANGES
from ..records import Record, replace

# The range of β the prior fit returns (:func:`nbclass.models.textmodels.fit_beta`); the
# model file's header is checked against it (:mod:`nbclass.modelfile.header`).
BETA_RANGE = (1e-4, 100.0)


class EstimatorSettings(Record, frozen=True):
    """Event model, estimator and prior pseudo-counts.

    Attributes
    ----------
    model : {"multinomial", "bernoulli", "complement", "dcm", "poisson"}
    estimator : {"posterior-mean", "map", "mle", "predictive"}
        ``predictive`` is the exact Dirichlet-multinomial (Pólya) predictive of a whole
        document (multinomial), the negative binomial (poisson); for bernoulli it equals
        ``posterior-mean``.
    alpha : float
        α, the Dirichlet pseudo-count of every class (α_0 = Cα).
    beta : tuple of float (β_1, β_0)
        Bernoulli: Beta(β_1, β_0) pseudo-counts for "present" and "absent".
        Multinomial, complement, dcm: the symmetric Dirichlet's β, given as (β, β).
        Poisson: the Gamma(β, Vβ) prior of every rate λ_jc (:mod:`nbclass.models.poisson`).
    tf : {"raw", "log"}
        Term frequency: x_j or log(1 + x_j) (multinomial and complement).
    idf : bool
        Multiply by idf_j = log(N / Σ_c D_jc) (multinomial and complement).
    norm : {"none", "length", "weight", "both"}
        Document-length normalisation, weight normalisation, or both
        (:mod:`nbclass.models.textmodels`).
    prior_fit : bool
        Replace β by the value that maximises the leave-one-out likelihood of the counts.
    class_prior : bool
        Add log π_c to the scores; without it every class has the same prior (scikit-learn's
        ComplementNB leaves it out). Weight normalisation always leaves it out.

    Files written before the last four fields existed lack them: they load with the
    meaning those files had (raw counts, no idf, no normalisation, β as given).
    """

    model: str = "multinomial"
    estimator: str = "posterior-mean"
    alpha: float = 1.0
    beta: tuple[float, float] = (1.0, 1.0)
    tf: str = "raw"
    idf: bool = False
    norm: str = "none"
    prior_fit: bool = False
    class_prior: bool = True

    @property
    def transformed(self) -> bool:
        """True when any of --tf log, --idf, --norm is on."""
        return self.tf != "raw" or self.idf or self.norm != "none"

    @property
    def generative(self) -> bool:
        """True when the scores are log π_c + log p(x | c) of a probability model of x.

        Complement weights and transformed counts give scores whose softmax is the
        posterior but whose log-sum-exp is no probability of the document.
        """
        return self.model != "complement" and not self.transformed

    def validate(self) -> EstimatorSettings:
        """Return self if usable, else raise :class:`UsageError` saying how to fix it."""
        if self.model not in MODELS:
            raise UsageError(f"unknown model {self.model!r}: use one of {', '.join(MODELS)}")
        if self.estimator not in ESTIMATORS:
            raise UsageError(
                f"unknown estimator {self.estimator!r}: use one of {', '.join(ESTIMATORS)}"
            )
        values = (self.alpha, *self.beta)
        named = (("--alpha", self.alpha), ("--beta", self.beta[0]), ("--beta", self.beta[1]))
        for name, value in named:
            if not -math.inf < value <= MAX_PSEUDO_COUNT:  # NaN, ±inf, too large to sum
                RANGES[name].check(value)  # (below 0: the estimator's own message, below)
        if self.model != "bernoulli" and self.beta[0] != self.beta[1]:
            raise UsageError(
                f"the {self.model} model takes one --beta (a symmetric Dirichlet); "
                "B1,B0 is for --model bernoulli"
            )
        if self.tf not in TF:
            raise UsageError(f"unknown --tf {self.tf!r}: use one of {', '.join(TF)}")
        if self.norm not in NORMS:
            raise UsageError(f"unknown --norm {self.norm!r}: use one of {', '.join(NORMS)}")
        if self.transformed and self.model == "poisson":
            raise UsageError(
                "--tf, --idf and --norm transform word counts; --model poisson models the "
                "raw counts: use them with --model multinomial or complement"
            )
        if self.transformed and self.model in ("bernoulli", "dcm"):
            raise UsageError(
                f"--tf, --idf and --norm transform word counts; --model {self.model} uses "
                "word presence: use them with --model multinomial or complement"
            )
        if self.model in ("complement", "dcm") and self.estimator != "posterior-mean":
            raise UsageError(
                f"--model {self.model} takes --estimator posterior-mean (its weights need "
                "smoothed, non-zero estimates)"
            )
        if self.estimator == "predictive" and self.transformed:
            raise UsageError(
                "--estimator predictive is the exact predictive of raw word counts: use it "
                "without --tf log, --idf and --norm"
            )
        if self.norm in ("weight", "both") and self.estimator != "posterior-mean":
            raise UsageError(
                "--norm weight divides each class's weights by their sum, which needs finite "
                "weights: use --estimator posterior-mean"
            )
        if self.prior_fit and self.estimator not in ("posterior-mean", "predictive"):
            raise UsageError(
                "--prior-fit may choose a β below 1, which --estimator "
                f"{self.estimator} cannot take: use --estimator posterior-mean or predictive"
            )
        if self.estimator == "map" and min(values) < 1:
            raise UsageError(
                "--estimator map needs --alpha >= 1 and --beta >= 1 (the mode of a Beta or "
                "Dirichlet with a pseudo-count below 1 is not interior); use "
                "--estimator posterior-mean for smaller pseudo-counts"
            )
        if self.estimator in ("posterior-mean", "predictive") and min(values) <= 0:
            raise UsageError(
                f"--estimator {self.estimator} needs --alpha > 0 and --beta > 0; "
                "use --estimator mle for unsmoothed estimates"
            )
        for name, value in named:
            RANGES[name].check(value)
        return self

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "estimator": self.estimator,
            "alpha": self.alpha,
            "beta": list(self.beta),
            "tf": self.tf,
            "idf": self.idf,
            "norm": self.norm,
            "prior_fit": self.prior_fit,
            "class_prior": self.class_prior,
        }

    @classmethod
    def from_dict(cls, data: dict) -> EstimatorSettings:
        """Settings from :meth:`to_dict`; absent newer fields keep their old meaning.
        α and β must be JSON numbers (``ValueError`` otherwise: a file is not read
        leniently, ``true`` as 1 or ``"0.5"`` as 0.5)."""
        beta = data["beta"]
        if not (isinstance(beta, (list, tuple)) and len(beta) == 2):
            raise ValueError("the estimator settings' beta is not a list of two numbers")
        return cls(
            model=str(data["model"]),
            estimator=str(data["estimator"]),
            alpha=json_number(data["alpha"], "the estimator settings' alpha is not a number"),
            beta=tuple(
                json_number(b, "the estimator settings' beta is not a number") for b in beta
            ),
            tf=str(data.get("tf", "raw")),
            idf=_boolean(data.get("idf", False)),
            norm=str(data.get("norm", "none")),
            prior_fit=_boolean(data.get("prior_fit", False)),
            class_prior=_boolean(data.get("class_prior", True)),
        )

    def combined(self, **overrides) -> EstimatorSettings:
        """These settings with ``overrides`` (``None`` = not given), made consistent.

        What is given wins. A stored field that cannot go with it falls back to its plain
        value, in this order: the transforms (raw counts), the prior fit (off), the model
        (multinomial); e.g. ``--estimator mle`` on a complement model scores the multinomial
        MLE. A β that is given replaces a fitted one: ``--beta 1`` turns ``prior_fit`` off
        unless ``--prior-fit`` is given too. Raises :class:`UsageError` when the given values
        themselves conflict.
        """
        given = {k: v for k, v in overrides.items() if v is not None}
        if "beta" in given and "prior_fit" not in given:
            given["prior_fit"] = False
        settings = replace(self, **given)
        plain = EstimatorSettings()
        for fields in (("tf", "idf", "norm"), ("prior_fit",), ("model",)):
            try:
                return settings.validate()
            except UsageError:
                reset = {f: getattr(plain, f) for f in fields if f not in given}
                settings = replace(settings, **reset)
        return settings.validate()


class Prepared(Record, frozen=True):
    """The numbers of a model's default settings that depend on every count.

    The one-document path (:mod:`nbclass.modelfile.quick`) reads only the rows of the document's
    words, so it cannot fit β or sum a transformed column. The model file's header keeps
    these numbers, computed when the file is written; both paths use them, so they agree.

    Attributes
    ----------
    settings : EstimatorSettings
        The settings these numbers belong to (the model's defaults, β as stored).
    beta : float or None
        The fitted β (with ``prior_fit``), already scaled for transformed sums.
    class_totals : tuple of float, length C, or None
        For transformed multinomial: S_c = Σ_j S_jc; for transformed complement:
        S̃_c = Σ_j S̃_jc; the denominators' data part, summed as the batch path sums it.
    weight_norms : tuple of float, length C, or None
        With ``--norm weight`` or ``both``: Σ_j |w_jc|, the divisor of class c's weights.
    """

    settings: EstimatorSettings
    beta: float | None = None
    class_totals: tuple[float, ...] | None = None
    weight_norms: tuple[float, ...] | None = None

    def resolved(self) -> EstimatorSettings:
        """The settings with the fitted β in place (those the scores are computed with)."""
        if self.beta is None:
            return self.settings
        return replace(self.settings, beta=(self.beta, self.beta))

    def to_dict(self) -> dict:
        return {
            "settings": self.settings.to_dict(),
            "beta": self.beta,
            "class_totals": None if self.class_totals is None else list(self.class_totals),
            "weight_norms": None if self.weight_norms is None else list(self.weight_norms),
        }

    @classmethod
    def from_dict(cls, data: dict, n_classes: int) -> Prepared:
        """Read :meth:`to_dict`'s output; ``ValueError`` when a field is malformed."""

        def vector(name: str) -> tuple[float, ...] | None:
            values = data[name]
            if values is None:
                return None
            problem = f"prepared {name} must be {n_classes} finite numbers >= 0"
            if not isinstance(values, list):
                raise ValueError(problem)
            out = tuple(json_number(v, problem) for v in values)
            if len(out) != n_classes or not all(math.isfinite(v) and v >= 0 for v in out):
                raise ValueError(problem)
            return out

        beta = data["beta"]
        if beta is not None:
            problem = "the prepared β must be a finite number > 0"
            beta = json_number(beta, problem)
            if not (math.isfinite(beta) and beta > 0):
                raise ValueError(problem)
        return cls(
            settings=EstimatorSettings.from_dict(data["settings"]).validate(),
            beta=beta,
            class_totals=vector("class_totals"),
            weight_norms=vector("weight_norms"),
        )


def score_gap(scores) -> float:
    """g(x) = b_(1) − b_(2), how far the top score of a document is ahead of the second;
    0 when fewer than two classes are possible (a finite score), as nothing is left to
    calibrate then. ``scores`` is one document's b_c (any iterable of floats)."""
    top = second = -math.inf
    for b in scores:
        if b > top:
            top, second = b, top
        elif b > second:
            second = b
    return top - second if second > -math.inf else 0.0


class Calibration(Record, frozen=True):
    """Calibrated probabilities p(c | x) = softmax_c(b_c / T(x)), with the temperature

        T(x) = exp(t0 + t1 · log(1 + n_x) + t2 · log(1 + g(x)))

    n_x the document's tokens in the model's vocabulary and g(x) = b_(1) − b_(2) the gap
    between its two top scores (:func:`score_gap`); :mod:`nbclass.models.choosing` fits
    t0, t1 and t2. T is the same for every class of a document, so the order of its
    classes is the formula's; and with t2 ≤ 1 the calibrated gap g / T still grows with g.
    A record without t2 (older files) has t2 = 0.

    With class offsets (``offsets`` a_c and ``length_offsets`` d_c, C numbers each, when
    the choice picked them: :func:`nbclass.models.choosing.fit_offsets`),

        p(c | x) = softmax_c(b_c / T(x) + a_c + d_c · log(1 + n_x)),

    which can change a document's label: the refinement the choice measured on held-out
    documents, not a calibration alone."""

    t0: float
    t1: float
    t2: float = 0.0
    offsets: tuple = ()
    length_offsets: tuple = ()

    BOUND = 20.0  # |t0|, |t1| at most: e^20 is far past any temperature a fit finds
    GAP_BOUND = 1.0  # |t2| at most: past 1 a wider gap would give a narrower calibrated one
    OFFSET_BOUND = 1000.0  # |a_c|, |d_c| at most (the ridge keeps a fit's far below)
    KIND = "length-temperature"
    OFFSETS_KIND = "length-temperature+class-offsets"

    def temperature(self, n_tokens: int, gap: float = 0.0) -> float:
        """T(x) for a document of ``n_tokens`` known tokens whose two top scores are
        ``gap`` apart."""
        return math.exp(self.t0 + self.t1 * math.log1p(n_tokens) + self.t2 * math.log1p(gap))

    def shift(self, n_tokens: int) -> list[float] | None:
        """a_c + d_c · log(1 + n_x) of a document of ``n_tokens`` known tokens, C numbers,
        or None without offsets."""
        if not self.offsets:
            return None
        u = math.log1p(n_tokens)
        return [a + d * u for a, d in zip(self.offsets, self.length_offsets)]

    def to_dict(self) -> dict:
        if not self.offsets:
            return {"kind": self.KIND, "t0": self.t0, "t1": self.t1, "t2": self.t2}
        return {
            "kind": self.OFFSETS_KIND, "t0": self.t0, "t1": self.t1, "t2": self.t2,
            "offsets": list(self.offsets), "length_offsets": list(self.length_offsets),
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict, classes: int | None = None) -> Calibration:
        """Read :meth:`to_dict`'s output (``classes``: C, the offsets' length when given);
        ``ValueError`` when a field is malformed."""
        kind = data.get("kind") if isinstance(data, dict) else None
        if kind not in (cls.KIND, cls.OFFSETS_KIND):
            raise ValueError("the calibration is not a length-temperature record")
        given = {"t0": data["t0"], "t1": data["t1"], "t2": data.get("t2", 0.0)}
        t0, t1, t2 = (json_number(v, f"the calibration's {k} is not a number")
                      for k, v in given.items())  # fmt: skip
        if not (abs(t0) <= cls.BOUND and abs(t1) <= cls.BOUND):
            raise ValueError(f"calibration parameters must be finite and within ±{cls.BOUND}")
        if not abs(t2) <= cls.GAP_BOUND:
            raise ValueError(f"the calibration's t2 must be finite and within ±{cls.GAP_BOUND}")
        if kind == cls.KIND:
            return cls(t0, t1, t2)
        offsets, slopes = data.get("offsets"), data.get("length_offsets")
        if not (isinstance(offsets, list) and isinstance(slopes, list)
                and len(offsets) == len(slopes) >= 1):  # fmt: skip
            raise ValueError("the calibration's class offsets must be two lists of C numbers")
        if classes is not None and len(offsets) != classes:
            raise ValueError(
                f"the calibration has {len(offsets)} class offsets for {classes} classes"
            )
        listed = "the calibration's class offsets must be two lists of C numbers"
        a, d = (tuple(json_number(x, listed) for x in xs) for xs in (offsets, slopes))
        if not all(abs(x) <= cls.OFFSET_BOUND for x in a + d):
            raise ValueError(
                f"the calibration's class offsets must be finite and within ±{cls.OFFSET_BOUND}"
            )
        return cls(t0, t1, t2, a, d)


# What scores a model whose file names no choice (a model written by a library call, or a
# table model's text columns): complement naive Bayes (Rennie et al. 2003) on log(1 + tf)
# with β fitted by leave-one-out likelihood. ``nbclass fit`` itself chooses the settings
# from the data (``--model auto``, :mod:`nbclass.models.choosing`) and stores its choice.
DEFAULTS = EstimatorSettings(model="complement", tf="log", prior_fit=True)
# A table model's text columns (fit --table) keep the plain multinomial.
TABLE_DEFAULTS = EstimatorSettings()


def _option_number(x: float) -> str:
    """``x`` as a user writes it on the command line: 1 for 1.0, else the shortest text."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def as_options(settings: EstimatorSettings) -> str:
    """The command-line options that select ``settings``, every field spelled out.

    The help texts show the defaults this way, built from the constants the code uses
    (:data:`DEFAULTS`, :data:`TABLE_DEFAULTS`), so they cannot drift apart; given to
    ``fit``, the options give those very settings. With ``prior_fit`` the β is fitted,
    so ``--beta`` is left out (a β given turns the fit off).

    >>> as_options(EstimatorSettings())
    '--model multinomial --estimator posterior-mean --alpha 1 --beta 1 --tf raw --no-idf \
--norm none --no-prior-fit --class-prior'
    >>> as_options(EstimatorSettings(model="bernoulli", alpha=0.5, beta=(1.0, 2.0)))
    '--model bernoulli --estimator posterior-mean --alpha 0.5 --beta 1,2 --tf raw --no-idf \
--norm none --no-prior-fit --class-prior'
    """
    s = settings
    words = ["--model", s.model, "--estimator", s.estimator, "--alpha", _option_number(s.alpha)]
    if not s.prior_fit:
        beta = [_option_number(b) for b in s.beta]
        words += ["--beta", beta[0] if beta[0] == beta[1] else ",".join(beta)]
    words += ["--tf", s.tf, "--idf" if s.idf else "--no-idf", "--norm", s.norm]
    words.append("--prior-fit" if s.prior_fit else "--no-prior-fit")
    words.append("--class-prior" if s.class_prior else "--no-class-prior")
    return " ".join(words)


FORMULA_OPTIONS = ("model", "estimator", "alpha", "beta")


def resolve(defaults: EstimatorSettings, **overrides) -> EstimatorSettings:
    """The settings a command scores with: a model's ``defaults`` and the options given.

    ``overrides`` are the estimator options (``None`` = not given; a ``model`` of
    ``"auto"`` means the model's own choice). A model name means its formula: when any of
    --model, --estimator, --alpha or --beta is given, the result is that model as the
    maths writes it, on raw counts, with the class prior, β as given (1 if not), plus only
    the transforms and prior options that are given too; the stored transforms, fitted β
    and dropped class prior are not carried over. Otherwise the given transforms and prior
    options change the stored defaults (:meth:`EstimatorSettings.combined`).
    """
    if overrides.get("model") == AUTO:
        overrides = dict(overrides, model=None)
    given = {k for k, v in overrides.items() if v is not None}
    base = defaults
    if given.intersection(FORMULA_OPTIONS):
        base = EstimatorSettings(model=defaults.model)
    return base.combined(**overrides)


def overridden(**overrides) -> bool:
    """True when any estimator option is given (then no stored calibration applies)."""
    return any(v is not None and v != AUTO for v in overrides.values())


def json_number(value, problem: str) -> float:
    """``value`` as a float when it is a JSON number, an int or a float (not true or
    false, which Python counts as ints), else ``ValueError(problem)``: a model file from
    elsewhere is read as it is written, never by ``float()``'s leniency (``true`` as 1,
    ``"0.5"`` as 0.5, ``" 1e3 "`` as 1000). An integer past any float is refused too."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(problem)
    try:
        return float(value)
    except OverflowError:
        raise ValueError(problem) from None


def _boolean(value) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{value!r} is not true or false")
    return value


def parse_beta(text: str) -> tuple[float, float]:
    """Parse ``--beta B`` (β_1 = β_0 = B) or ``--beta B1,B0``."""
    parts = text.split(",")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) == 1:
        return values[0], values[0]
    if len(values) == 2:
        return values[0], values[1]
    raise UsageError(f"--beta {text!r} is not B or B1,B0 (for example 1 or 1,1)")


def class_prior_fraction(N_c, N, C: int, estimator: str, alpha: float):
    """Numerator and denominator of π_c; ``N_c`` may be a number or an array of shape (C,).

    N_c and N count documents.
    """
    if estimator == "mle":
        return N_c, N
    if estimator == "map":
        return N_c + alpha - 1, N + C * alpha - C
    return N_c + alpha, N + C * alpha


def no_evidence_posterior(class_count, settings: EstimatorSettings) -> list[float]:
    """log p(c | x) of a document with no known token: the class prior the scores of
    ``settings`` add, C floats (``class_count``: N_c, any sequence of C numbers).

    A document none of whose tokens is a word of the model gives no evidence, so every
    command reports the prior: log π_c (:func:`class_prior_fraction`; the posterior mean
    for the DCM and the exact predictives, whose scores take that one), or log 1/C for
    every class when the scores add no prior (``--no-class-prior``, or weights divided
    by their sum, ``--norm weight`` or ``both``). Plain Python, so the one-document path
    and the batch path report the same floats.

    >>> [round(math.exp(v), 4) for v in no_evidence_posterior([3, 1], EstimatorSettings())]
    [0.6667, 0.3333]
    >>> no_evidence_posterior([3, 1], EstimatorSettings(class_prior=False))
    [-0.6931471805599453, -0.6931471805599453]
    """
    C = len(class_count)
    if not settings.class_prior or settings.norm in ("weight", "both"):
        return [-math.log(C)] * C
    estimator = settings.estimator
    if settings.model == "dcm" or estimator == "predictive":
        estimator = "posterior-mean"
    N = sum(class_count)
    log_pi = [
        log_ratio(*class_prior_fraction(N_c, N, C, estimator, settings.alpha))
        for N_c in class_count
    ]
    # Normalised as the posterior of scores log π_c (the same steps as log_posterior), so
    # that the C probabilities sum to 1 in floating point too: 0.5 each for equal classes.
    top = max(log_pi)
    if top == -math.inf:  # no class has a prior (no document under mle or map)
        return log_pi
    shifted = [v - top for v in log_pi]
    log_total = math.log(sum(math.exp(v) for v in shifted))
    return [v - log_total for v in shifted]


def bernoulli_fraction(D_jc, N_c, estimator: str, beta: tuple[float, float]):
    """Numerators of θ_jc and of 1 − θ_jc, and their denominator (numbers or arrays).

    D_jc counts documents of class c containing word j; N_c documents of class c.
    """
    beta1, beta0 = beta
    if estimator == "mle":
        return D_jc, N_c - D_jc, N_c
    if estimator == "map":
        return D_jc + beta1 - 1, N_c - D_jc + beta0 - 1, N_c + beta1 + beta0 - 2
    return D_jc + beta1, N_c - D_jc + beta0, N_c + beta1 + beta0


def multinomial_fraction(T_jc, T_c, V: int, estimator: str, beta: float):
    """Numerator and denominator of θ_jc (numbers or arrays); T counts tokens."""
    if estimator == "mle":
        return T_jc, T_c
    if estimator == "map":
        return T_jc + beta - 1, T_c + V * (beta - 1)
    return T_jc + beta, T_c + V * beta


def log_ratio(numerator: float, denominator: float) -> float:
    """log(numerator / denominator) as a difference of logs; −inf where either is <= 0."""
    if numerator <= 0 or denominator <= 0:
        return -math.inf
    return math.log(numerator) - math.log(denominator)


def bernoulli_absent_total(
    histogram, N_c: int, estimator: str, beta: tuple[float, float]
) -> tuple[float, int]:
    """Σ_j log(1 − θ_jc) over a class's words, and how many words have θ_jc = 1.

    Parameters
    ----------
    histogram : iterable of (d, n)
        n words have D_jc = d (documents), words absent from the class included as d = 0.

    Returns
    -------
    total : float
        Σ over the words with θ_jc < 1 of log(1 − θ_jc), summed exactly with
        ``math.fsum`` of the per-value terms n · log(1 − θ(d)).
    certain : int
        Words with θ_jc = 1, for which 1 − θ_jc = 0: a document lacking one of them is
        impossible for the class; they are left out of ``total``.

    Notes
    -----
    log(1 − θ_jc) depends on word j only through D_jc, so the sum over V words is a sum
    over the distinct values of D_jc; this makes the Bernoulli model's per-class constant
    cheap to compute from stored counts, for any estimator and prior.
    """
    terms, certain = [], 0
    # The denominator is the class's alone (not the word's): its log is taken once, and
    # each term is log(absent) − log(denominator), as log_ratio takes it, the same float.
    denominator = bernoulli_fraction(0, N_c, estimator, beta)[2]
    if denominator <= 0:  # no estimate for this class: its words are never present
        return math.fsum(terms), certain
    log_denominator = math.log(denominator)
    log = math.log
    append = terms.append
    if estimator in ("mle", "map"):
        for d, n in histogram:
            absent = bernoulli_fraction(d, N_c, estimator, beta)[1]
            if absent <= 0:
                certain += n
            else:
                append(n * (log(absent) - log_denominator))
        return math.fsum(terms), certain
    # The posterior mean (the choice's Bernoulli candidates), its numerator of 1 − θ
    # written out as bernoulli_fraction writes it (the same number), without a call
    # for each value.
    beta0 = beta[1]
    for d, n in histogram:
        absent = N_c - d + beta0
        if absent <= 0:
            certain += n
        else:
            append(n * (log(absent) - log_denominator))
    return math.fsum(terms), certain


def log_fraction(numerator, denominator, out=None):
    """log(numerator / denominator) elementwise, a difference of logs; −inf where either is 0.
    ``out``: an array of the broadcast shape to hold them (the same floats).

    Examples
    --------
    >>> log_fraction([1.0, 0.0], [4.0, 4.0]).tolist() == [math.log(1) - math.log(4), -math.inf]
    True
    """
    import numpy as np

    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    positive = numerator > 0
    if positive.all():  # the usual case, smoothed counts: no mask to apply
        log_numerator = np.log(numerator)
    else:
        log_numerator = np.log(numerator, out=np.full(numerator.shape, -np.inf), where=positive)
    ok = denominator > 0
    everywhere = ok.all()
    log_denominator = (
        np.log(denominator) if everywhere
        else np.log(denominator, out=np.zeros(denominator.shape), where=ok)
    )  # fmt: skip
    if out is not None:
        np.subtract(log_numerator, log_denominator, out=out)
    elif log_numerator.shape == np.broadcast_shapes(log_numerator.shape, log_denominator.shape):
        out = log_numerator
        out -= log_denominator  # in place: one table fewer
    else:
        out = log_numerator - log_denominator
    if not everywhere:
        out[..., ~ok] = -np.inf  # no estimate: the event has no mass
    return out


def log_fraction_at(numerator, denominators, classes, in_place: bool = False):
    """``log_fraction(numerator, denominators[classes])``, the same floats, with the log
    of each class's denominator taken once: ``numerator`` and ``classes`` of shape
    (nnz,) (a model's pairs), ``denominators`` of shape (C,). A block of pairs at a time
    takes its denominators' logs (no array of every pair's denominator). With
    ``in_place``, a float64 ``numerator`` (the caller's own temporary) becomes the logs.
    """
    import numpy as np

    if in_place and isinstance(numerator, np.ndarray) and numerator.dtype == np.float64:
        out = numerator
    else:
        out = np.array(numerator, dtype=np.float64)  # a copy: it becomes the logs
    positive = out > 0
    if positive.all():
        np.log(out, out=out)
    else:
        np.log(out, out=out, where=positive)
        out[~positive] = -np.inf
    denominators = np.asarray(denominators, dtype=np.float64)
    # log d_c, +inf where d_c <= 0: x − inf is −inf for every log numerator x, as
    # log_fraction gives where the denominator is not positive
    log_denominators = np.full(denominators.shape, np.inf)
    np.log(denominators, out=log_denominators, where=denominators > 0)
    step = 1 << 18
    for start in range(0, out.size, step):
        out[start : start + step] -= log_denominators[classes[start : start + step]]
    return out


# Tables of log fractions of at least this many cells (R × C) are made from their
# nonzero sums (:func:`cell_log_fractions`): a fold's word pairs are mostly absent from
# a class, and every such cell of a class is the same number.
CELL_FRACTIONS = 2**16


def nonzero_cells(S):
    """``(flat, values)`` of a dense (R, C) table ``S``: the places j·C + c of its
    nonzero cells, ascending, and their values as float64, as
    :func:`cell_log_fractions` takes them."""
    import numpy as np

    flat = np.flatnonzero(S)
    return flat, S.ravel()[flat].astype(np.float64)


# The cells of a table of log fractions made from its nonzero sums
# (:func:`cell_log_fractions`) are written a block of this many cells at a time (1 MB of
# float64): every temporary of the block's cells stays small, and only the table itself is
# memory the size of the table (a fold of 130,000 words × 20 classes, 85 % of its cells
# nonzero: six temporaries of 18 MB each, made afresh for every candidate, were mostly
# page faults).
FRACTION_BLOCK_CELLS = 2**17
# A block whose nonzero cells are at least 1 / DENSE_SHARE of its cells is made as the whole
# table's formula makes it, its sums placed in zeros (one log a cell, and no gather of the
# classes' logs nor scatter of the cells' weights): the same floats, each cell's log of the
# same number less the same log.
DENSE_SHARE = 4


def cell_log_fractions(shape, flat, values, estimator: str, beta: float, totals, V: int,
                       sums=None):  # fmt: skip
    """The multinomial's log θ_jc = log((S_jc + β) / (S_c + Vβ)) (or its MAP / MLE
    fraction) of a table of sums S (R, C) given by its nonzero cells, or with ``sums``
    (S_j = Σ_c S_jc, (R,)) the complement's −log θ̃_jc, θ̃_jc = (S_j − S_jc + β) / (S̃_c
    + Vβ) (the posterior mean): ndarray of ``shape``, the floats :func:`log_fraction`
    gives of the whole table, cell for cell.

    ``flat`` (int, (nnz,)) are the cells' places j·C + c, ascending, ``values`` (float,
    (nnz,), not changed) their S_jc; ``totals`` (C,) are S_c (or S̃_c) and ``V`` the
    vocabulary's size. Every other cell of a class (S_jc = 0) holds the same fraction, or
    of a row and a class for complement: one log a class (a row) and one a nonzero cell,
    where the whole table takes one a cell (20 Newsgroups' pairs: 4 million cells, 8 %
    nonzero). Each log is numpy's of the same number, and each cell the same difference
    of logs. Made a block of rows at a time (:data:`FRACTION_BLOCK_CELLS`).
    """
    import numpy as np

    R, C = shape
    W = np.empty(shape)
    step = max(1, FRACTION_BLOCK_CELLS // max(C, 1))
    bounds = np.searchsorted(flat, np.arange(0, R + step, step, dtype=np.int64) * C)
    sums = None if sums is None else np.asarray(sums, dtype=np.float64)
    for b, start in enumerate(range(0, R, step)):
        stop = min(start + step, R)
        lo, hi = bounds[b], bounds[b + 1]
        fractions_into(
            W[start:stop], flat[lo:hi] - start * C, values[lo:hi], estimator, beta, totals, V,
            None if sums is None else sums[start:stop],
        )  # fmt: skip
    return W


def fractions_into(out, flat, values, estimator: str, beta: float, totals, V: int,
                   sums=None) -> None:  # fmt: skip
    """:func:`cell_log_fractions` of a block of rows, written into ``out`` (r, C), a
    C-contiguous float64 array: ``flat`` the block's nonzero cells' places among its
    own cells (j·C + c, j counted from the block's first row), ``values`` their S_jc
    (not changed), ``sums`` the block's rows' S_j (complement)."""
    import numpy as np

    C = out.shape[1]
    totals = np.asarray(totals, dtype=np.float64)
    if DENSE_SHARE * flat.size >= out.size:  # mostly nonzero: the block's whole table
        S = np.zeros(out.shape)
        S.ravel()[flat] = values
        if sums is None:
            log_fraction(*multinomial_fraction(S, totals, V, estimator, beta), out=out)
            return
        np.subtract(sums[:, None], S, out=S)
        S += beta
        log_fraction(S, multinomial_fraction(sums, totals, V, "posterior-mean", beta)[1],
                     out=out)  # fmt: skip
        np.negative(out, out=out)
        return
    cols = flat % C
    if sums is None:
        numerator, denominator = multinomial_fraction(np.zeros(1), totals, V, estimator, beta)
        out[...] = log_fraction(numerator, denominator)  # S_jc = 0: one row for every word
        numerator = multinomial_fraction(
            np.array(values, dtype=np.float64), totals, V, estimator, beta
        )[0]  # fmt: skip
        out.ravel()[flat] = log_fraction_at(numerator, denominator, cols, in_place=True)
        return
    # complement, the posterior mean: S̃_jc + β = (S_j − S_jc) + β, S_j − 0 = S_j
    numerator, denominator = multinomial_fraction(sums, totals, V, "posterior-mean", beta)
    log_fraction(numerator[:, None], denominator, out=out)  # S_jc = 0: a row's, a class's
    np.negative(out, out=out)
    values = np.subtract(sums[flat // C], values, dtype=np.float64)
    values += beta
    out.ravel()[flat] = -log_fraction_at(values, denominator, cols, in_place=True)


def class_prior_fractions(class_count, estimator: str, alpha: float):
    """Numerator (C,) and denominator (scalar) of π_c from N_c, ndarray of shape (C,)."""
    import numpy as np

    N_c = np.asarray(class_count, dtype=np.float64)
    return class_prior_fraction(N_c, N_c.sum(), N_c.shape[0], estimator, alpha)


def log_class_prior(class_count, estimator: str, alpha: float):
    """log π_c, ndarray of shape (C,).

    Examples
    --------
    >>> import numpy as np
    >>> log_pi = log_class_prior(np.array([3, 1]), "posterior-mean", 1.0)
    >>> np.allclose(np.exp(log_pi), [(3 + 1) / (4 + 2), (1 + 1) / (4 + 2)])
    True
    """
    return log_fraction(*class_prior_fractions(class_count, estimator, alpha))


def bernoulli_fractions(doc_count, class_count, estimator: str, beta: tuple[float, float]):
    """Numerators of θ_jc and 1 − θ_jc, each (V, C), and their denominator (C,).

    Parameters
    ----------
    doc_count : ndarray of shape (V, C)
        D_jc (documents containing word j).
    class_count : ndarray of shape (C,)
        N_c (documents).
    """
    import numpy as np

    D = np.asarray(doc_count, dtype=np.float64)
    N_c = np.asarray(class_count, dtype=np.float64)
    return bernoulli_fraction(D, N_c, estimator, beta)


def bernoulli_weights(doc_count, class_count, estimator: str, beta: tuple[float, float]):
    """The Bernoulli model's word weights w_jc = log θ_jc − log(1 − θ_jc) and where
    θ_jc = 1 (``certain``), each ndarray of shape (R, C) for the R rows of ``doc_count``.

    θ and 1 − θ share their denominator, so w_jc is the difference of the logs of their
    numerators. Where θ_jc = 1, log(1 − θ_jc) = −∞ would make the weight +∞: it is 0
    instead and ``certain`` is True (a document lacking the word is impossible for the
    class; :class:`nbclass.models.posterior.LinearScorer` checks it by counting). Where
    θ_jc = 0 the weight is −∞, and so it is for every word of a class with no estimate
    (denominator ≤ 0), whose θ is taken as 0.
    """
    import numpy as np

    present, absent, denominator = bernoulli_fractions(doc_count, class_count, estimator, beta)
    certain = absent <= 0
    if not certain.any() and (present > 0).all():  # smoothed counts: in place, two tables
        weights = np.log(present, out=present)
        weights -= np.log(absent, out=absent)
    else:
        weights = log_fraction(present, absent)
        weights[certain] = 0.0
    unestimated = np.asarray(denominator) <= 0
    weights[:, unestimated] = -np.inf
    certain[:, unestimated] = False
    return weights, certain


def multinomial_log_theta(token_count, estimator: str, beta: float, totals=None, V=None):
    """log θ_jc, ndarray of shape (R, C), for the R rows of ``token_count``.

    Parameters
    ----------
    token_count : ndarray of shape (R, C)
        T_jc (tokens) of R words: every word of the vocabulary (the default), or some of
        them when ``totals`` and ``V`` are given.
    totals : ndarray of shape (C,), optional
        T_c over the whole vocabulary; the column sums of ``token_count`` by default.
    V : int, optional
        The vocabulary's size; ``token_count.shape[0]`` by default.
    """
    import numpy as np

    T = np.asarray(token_count)
    if totals is not None and T.ndim == 2 and T.size >= CELL_FRACTIONS:
        # (the counts' nonzero cells, as float64: the numbers the whole table's give)
        flat, values = nonzero_cells(T)
        V = T.shape[0] if V is None else V
        return cell_log_fractions(T.shape, flat, values, estimator, beta, totals, V)
    T = np.asarray(T, dtype=np.float64)
    T_c = T.sum(axis=0) if totals is None else np.asarray(totals, dtype=np.float64)
    V = T.shape[0] if V is None else V
    return log_fraction(*multinomial_fraction(T, T_c, V, estimator, beta))
