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
    api         the Python library (``import nbclass``): fit, load, predict from Python,
                by the calls the commands make
    sklearn     the scikit-learn estimator over the library (the one module importing
                scikit-learn)
    service     the HTTP service of ``nbclass serve``: the model kept loaded, requests
                to predict's lines (the one module importing uvicorn runs it)
    cli         the command: options to one library call, its result back to text

:mod:`nbclass.errors`, :mod:`nbclass.names`, :mod:`nbclass.defaults`,
:mod:`nbclass.records`, :mod:`nbclass.ranges` (the range of every number a user gives)
and :mod:`nbclass.version` are leaves that every layer may use. The command-line interface
(:mod:`nbclass.cli`) only parses, calls the library and prints; no other layer imports
click.

The package itself is the Python library's door (``docs/python.md``): ``import nbclass``
imports nothing else, and each public name below is imported from :mod:`nbclass.api` (or
:mod:`nbclass.errors`) the first time it is used (PEP 562), so the command line's
one-document path, which starts here too, never pays for numpy.
"""

from .version import __version__

# Public name -> the module that defines it.
_PUBLIC = {
    "fit": "api",
    "fit_corpus": "api",
    "load": "api",
    "Model": "api",
    "NbclassError": "errors",
    "UsageError": "errors",
    "InputError": "errors",
    "CorpusError": "errors",
    "ModelFileError": "errors",
    "ModelKindError": "errors",
    "NbclassWarning": "errors",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str):
    """The public names of :mod:`nbclass.api` and :mod:`nbclass.errors`, imported when first
    asked for (then kept as attributes of the package)."""
    where = _PUBLIC.get(name)
    if where is None:
        raise AttributeError(f"module 'nbclass' has no attribute {name!r}")
    if where == "api":
        from . import api as module
    else:
        from . import errors as module
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
