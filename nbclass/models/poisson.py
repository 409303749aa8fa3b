"""Poisson word counts with a conjugate Gamma prior (``--model poisson``).

Notation (``docs/maths.md``): a document x of in-vocabulary length ℓ = Σ_j x_j; for class
c, T_jc tokens of word j and T_c = Σ_j T_jc (tokens, over the model's V words).

Model. x_j | c ~ Poisson(λ_jc · e) independently over the V words, with exposure e = ℓ:
λ_jc is a rate per token, so a document twice as long is expected to hold every word twice
as often, and the length itself is no evidence for a class. (Without exposure, e = 1, the
Poisson of the length, Σ_j λ_jc per document, would be evidence too: a 1,000-token
document against classes of mean lengths 200 and 300 tokens moves 1000 log 1.5 − 100 ≈ 305
nats towards the longer one, whatever its words.) The training exposure of class c is
E_c = T_c, the tokens of its documents.

Prior. λ_jc ~ Gamma(a, b) (shape a, rate b) with a = β and b = Vβ: the Poisson
counterpart of the symmetric Dirichlet(β) of the multinomial model, with the same prior
mean rate 1/V per token and the same total pseudo-count Vβ. ``--beta B`` sets β.

==============  ==========================  ===========================================
estimator       λ_jc                        Λ_c = Σ_j λ_jc
==============  ==========================  ===========================================
mle             T_jc / T_c                  1 (0 for a class without tokens)
map             (T_jc + β − 1) / (T_c + Vβ)  (T_c + V(β − 1)) / (T_c + Vβ)
posterior-mean  (T_jc + β) / (T_c + Vβ)      1
==============  ==========================  ===========================================

Plug-in scores. log p(x | c) = Σ_j [x_j log(λ_jc ℓ) − λ_jc ℓ − log x_j!], and the words
absent from x contribute their −λ_jc ℓ too: Σ_j λ_jc ℓ = ℓ Λ_c. Leaving out the terms
that do not depend on c (ℓ log ℓ − Σ_j log x_j!, as the multinomial leaves out its
coefficient), b_c = log π_c + Σ_j x_j (log λ_jc − Λ_c): linear in x, W = log λ − Λ_c.
Under mle and posterior-mean Λ_c = 1 for every class, so the classes are ranked exactly
as the multinomial model with the same β ranks them; map differs through Λ_c.

Predictive. Integrating λ_jc out of Poisson(λ e) under its posterior Gamma(a', b'),
a'_jc = T_jc + β and b'_c = T_c + Vβ, gives the negative binomial

    p(x_j | c) = Γ(x_j + a') / (Γ(a') x_j!) · (b' / (b' + e))^{a'} · (e / (b' + e))^{x_j}.

Over the V words, with e = ℓ, and the same class-free terms left out:

    log p(x | c) = Σ_{j: x_j>0} [lnΓ(x_j + a'_jc) − lnΓ(a'_jc)]
                   + b'_c log(b'_c / (b'_c + ℓ)) − ℓ log(b'_c + ℓ)

(every word, absent ones included, contributes a'_jc log(b'_c / (b'_c + ℓ)); their sum
Σ_j a'_jc = T_c + Vβ is b'_c itself under this prior).

Functions here take plain numbers (the one-document path, :mod:`nbclass.modelfile.quick`) or numpy
arrays alike; numpy is imported only where an array is built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

TYPE_CHECKING = False  # the one-document path imports this module: no typing import

if TYPE_CHECKING:
    import numpy as np
    import scipy.sparse as sp

    from ..counting.counts import Counts
    from .estimators import EstimatorSettings


def poisson_fraction(T_jc, T_c, V: int, estimator: str, beta: float):
    """Numerator and denominator of λ_jc (numbers or arrays); T counts tokens."""
    if estimator == "mle":
        return T_jc, T_c
    if estimator == "map":
        return T_jc + beta - 1, T_c + V * beta
    return T_jc + beta, T_c + V * beta


def poisson_rate_total(T_c, V: int, estimator: str, beta: float):
    """Λ_c = Σ_j λ_jc (a number or an array of shape (C,)), from T_c in closed form."""
    if estimator == "mle" or V == 0:
        return (T_c > 0) * 1.0
    if estimator == "map":
        return (T_c + V * (beta - 1)) / (T_c + V * beta)
    return T_c * 0 + 1.0


def negative_binomial_length_term(b: float, n: float) -> float:
    """b log(b / (b + n)) − n log(b + n), b = b'_c: the part of the predictive that depends
    on the document only through its length n (0 for an empty document)."""
    if n == 0:
        return 0.0
    return b * (math.log(b) - math.log(b + n)) - n * math.log(b + n)


def poisson_weights(counts: Counts, settings: EstimatorSettings) -> np.ndarray:
    """W = log λ_jc − Λ_c of the plug-in estimators, ndarray of shape (V, C): with the bias
    log π_c, the weights of a linear scorer (:class:`nbclass.models.posterior.LinearScorer`,
    which :func:`nbclass.models.posterior.make_scorer` builds from them)."""
    import numpy as np

    from .estimators import log_fraction

    beta = settings.beta[0]
    from .sparsity import dense

    T = dense(counts.token_count).astype(np.float64)
    V, T_c = T.shape[0], T.sum(axis=0)
    log_lambda = log_fraction(*poisson_fraction(T, T_c, V, settings.estimator, beta))
    rate_total = poisson_rate_total(T_c, V, settings.estimator, beta)
    return log_lambda - rate_total


def sparse_poisson_weights(counts: Counts, settings: EstimatorSettings, rows=None):
    """:func:`poisson_weights` as :class:`nbclass.models.sparsity.SparseWeights` (of the
    words ``rows`` alone, if given): log λ_jc − Λ_c at the nonzero pairs, and the per-class
    constant log λ_c(T_jc = 0) − Λ_c off them; the same cells, no (V, C) table."""
    import numpy as np

    from ..counting.csr import CSR
    from .estimators import log_fraction
    from .sparsity import SparseWeights, csr_table

    beta, estimator = settings.beta[0], settings.estimator
    V, C = len(counts.vocabulary), len(counts.classes)
    T_c = counts.class_tokens.astype(np.float64)
    table = csr_table(counts.token_count, rows)
    cols = table.indices
    rate = poisson_rate_total(T_c, V, estimator, beta)
    at = log_fraction(*poisson_fraction(table.data.astype(np.float64), T_c[cols], V,
                                        estimator, beta))  # fmt: skip
    at -= rate[cols]
    constant = log_fraction(*poisson_fraction(np.zeros(C), T_c, V, estimator, beta)) - rate
    values = CSR(at, cols.copy(), table.indptr.copy(), table.shape)
    return SparseWeights(values, constant)


def predictive_scorer(
    counts: Counts, settings: EstimatorSettings, sparse: bool = False
) -> NegativeBinomialScorer:
    """The scorer of ``--model poisson --estimator predictive``: the exact negative binomial
    predictive, with log π_c under the posterior mean (as the Pólya predictive takes it);
    ``sparse``: from the nonzero pairs (no (V, C) table)."""
    import numpy as np

    from .sparsity import csr_table
    from .textmodels import _log_prior

    beta = settings.beta[0]
    if sparse:
        V = len(counts.vocabulary)
        return NegativeBinomialScorer(
            shape=csr_table(counts.token_count), rate=counts.class_tokens + V * beta,
            log_prior=_log_prior(counts, settings), beta=beta,
        )  # fmt: skip
    from .sparsity import dense

    T = dense(counts.token_count).astype(np.float64)
    V, T_c = T.shape[0], T.sum(axis=0)
    shape = T + beta
    return NegativeBinomialScorer(
        shape=shape, rate=T_c + V * beta, log_prior=_log_prior(counts, settings)
    )


@dataclass(frozen=True, eq=False)
class NegativeBinomialScorer:
    """Exact posterior predictive of the Poisson model (see the module doc).

    Attributes
    ----------
    shape : ndarray of shape (V, C), or csr_matrix of shape (V, C)
        a'_jc = T_jc + β; or T_jc itself as a CSR matrix, with a'_jc = T_jc + ``beta``
        (:func:`nbclass.models.sparsity.gamma_sums`).
    rate : ndarray of shape (C,)
        b'_c = T_c + Vβ (exposure in tokens plus the prior's Vβ).
    log_prior : ndarray of shape (C,)
        log π_c.
    """

    shape: np.ndarray
    rate: np.ndarray
    log_prior: np.ndarray
    beta: float | None = None

    def words(self, rows: np.ndarray) -> NegativeBinomialScorer:
        """This scorer for documents that hold only the words ``rows`` (R,): X of shape (n, R)."""
        return replace(self, shape=self.shape[rows])

    def joint_log_likelihood(self, X: sp.csr_matrix) -> np.ndarray:
        """b_c = log π_c + log p(x | c, training data), ndarray of shape (n, C).

        Only the entries of ``X`` (n, V) are touched; the absent words are summed in
        closed form through A_c = Σ_j a'_jc.
        """
        import numpy as np

        from ..compiled import gammaln
        from .sparsity import gamma_sums
        from .textmodels import _sum_rows

        if self.beta is None:
            x = X.data.astype(np.float64)[:, None]
            a = self.shape[X.indices]
            words = _sum_rows(X, gammaln(a + x) - gammaln(a))
        else:
            words = gamma_sums(X, self.shape, self.beta)
        if not self.shape.shape[0]:  # no vocabulary: every document is empty
            return words + self.log_prior
        n = np.asarray(X.sum(axis=1), dtype=np.float64)  # (n, 1)
        b = self.rate
        with np.errstate(divide="ignore", invalid="ignore"):
            length = b * (np.log(b) - np.log(b + n)) - n * np.log(b + n)
        length = np.where(n > 0, length, 0.0)
        return words + length + self.log_prior
