"""Whether a model's weights are a dense (words × classes) table or come from its pairs.

Both scoring paths read this: the batch path (:func:`nbclass.models.posterior.make_scorer`
makes the weights of a large model as :class:`nbclass.models.sparsity.SparseWeights`)
and the one-document path (:mod:`nbclass.modelfile.quick`, which sums a large model's
corrections at the pairs the same way). Standard library only.
"""

from __future__ import annotations

# Weights of at most this many cells (V × C, or R × C for R words) are made as a dense
# table, the way they always were (the same floats, so model files do not move); past it,
# as per-class constants plus corrections at the nonzero pairs (:class:`SparseWeights`),
# memory in proportion to the pairs. 20 Newsgroups (130,107 words × 20 classes, 2.6 M
# cells) stays dense; 16.8 M cells of float64 are 134 MB a table.
DENSE_CELLS = 2**24


def dense_cells(V: int, C: int) -> bool:
    """Whether weights of V words and C classes are made as a dense table."""
    return V * C <= DENSE_CELLS
