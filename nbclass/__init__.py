"""nbclass: exact naive Bayes text classification from the command line.

The package is the pipeline, one subpackage per layer, in the order data flows; a module
imports only from its own layer and the layers before it (``tests/test_layout.py``
checks this, and that no imports go round in a circle)::

    reading     bytes in: storage, the reading policy, limits, corpora, tables
    text        tokenizer, hashing, numpy runs, vectorizer (tokens to a CSR matrix)
    counting    tallies, the exact counts N_c, D_jc, T_jc, the ledger
    models      estimators, text models, posterior, selection, choosing, the model,
                explanations, update/merge/unlearn/sync, table models
    modelfile   the model file: container, header, text and table files, export, and
                the one-document reader without numpy
    evaluation  evaluate, cross-validate, check, diff
    output      lines for scripts, reports for people, part files
    cluster     Dask (a lower layer takes its counting function as a parameter)
    cli         the command: options to one library call, its result back to text

:mod:`nbclass.errors`, :mod:`nbclass.names`, :mod:`nbclass.defaults` and
:mod:`nbclass.records` are leaves that every layer may use. The command-line interface
(:mod:`nbclass.cli`) only parses, calls the library and prints; no other layer imports
click.
"""

__version__ = "0.1.0"
