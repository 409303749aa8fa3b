"""The HTTP service (``nbclass serve``): a model kept loaded, classifying JSON requests.

A front end like the command line: it takes requests instead of options and answers
with the lines ``predict`` prints. :mod:`.loaded` keeps the model and replaces it when
its file is replaced, :mod:`.requests` turns a request's JSON into predictions,
:mod:`.app` is the ASGI application (routes, limits, errors, the log line) and
:mod:`.server` runs it with uvicorn, the one module that imports the server library.
"""
