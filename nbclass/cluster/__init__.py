"""Cluster: the counting of fit and the scoring of predict on a Dask cluster.

The only layer that imports Dask (:mod:`.remote`), and only when a scheduler address is
given. The counting layer does not import it: the command line hands it a counting
function from here.
"""
