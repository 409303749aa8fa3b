"""Reading: the bytes a command reads, before any word is seen.

Local files and URLs (:mod:`.storage`), the reading policy that turns one document's
bytes into text or a skip (:mod:`.policy`), the size limits of every other input
(:mod:`.limits`), labelled corpora and documents to classify (:mod:`.corpus`), tables
(:mod:`.table`), and the process around a command: standard streams, signals, worker
processes (:mod:`.process`).

The first layer: it imports only the shared leaves (:mod:`nbclass.errors`,
:mod:`nbclass.names`, :mod:`nbclass.defaults`). This file imports nothing, so that the
one-document path pays only for the modules it uses.
"""
