"""Models: probabilities from counts, and what a model does with them.

Estimators of π and θ (:mod:`.estimators`), the text models beyond the plug-in
multinomial (:mod:`.textmodels`, :mod:`.poisson`), the posterior and its scorers
(:mod:`.posterior`), feature selection (:mod:`.selection`), metrics (:mod:`.metrics`),
evidence and typicality (:mod:`.novelty`), the choice of the model and its calibration
(:mod:`.choosing`; what predict needs of them, without scipy: :mod:`.chosen`),
abstention (:mod:`.abstain`), the model itself with fit and predict (:mod:`.model`,
whose :class:`.model.Classifier` is the one route from a model to the probabilities every
command reports: stored settings, calibration, and the prior for a document with no
known word, :func:`.chosen.reported`),
explanations (:mod:`.explain`), bulk scoring on several cores (:mod:`.scoring`), update,
merge, unlearn and sync (:mod:`.learning`), and table models (:mod:`.columns`,
:mod:`.tablemodel`). The maths takes arrays, never paths.
"""
