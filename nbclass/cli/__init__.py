"""The ``nbclass`` command: options to one library call, and its result back to text.

The console script (:mod:`.entry`) starts the one-document path (:mod:`.single`) without
importing click or numpy; every other command goes through the click application
(:mod:`.app`). This file imports nothing, so that the fast path stays fast.
"""
