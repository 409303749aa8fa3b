"""nbclass: exact naive Bayes text classification from the command line.

The package is a pipeline, one module per stage, each importing only from the stages
before it::

    corpus -> tokenizer -> vectorizer -> counts -> estimators -> posterior / selection
           -> model -> modelfile -> render -> cli

The command-line interface (``nbclass.cli.app``) only parses, calls the library and prints.
"""

__version__ = "0.1.0"
