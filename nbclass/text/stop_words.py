"""The built-in English stop-word list (``--stop-words english``).

Function words that carry little topic: articles, pronouns, auxiliaries, conjunctions,
common prepositions and adverbs. Negations ("not", "no", "nor") are deliberately *kept out*
of the list: they matter for sentiment and for ticket text ("not working"). The list is
lower-case and is stored inside every model that uses it, so a later edit here cannot
change how an existing model tokenizes.
"""

ENGLISH = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself of off on once only or other ought
    our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves also may might must shall us upon via within without yet
    each every either neither else ever however whether whose etc
    """.split()
)
