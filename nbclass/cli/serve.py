"""``nbclass serve``: the model kept loaded behind an HTTP service (:mod:`nbclass.service`)."""

from __future__ import annotations

import click

from ..errors import NbclassError
from .options import CONTEXT, FILE, Ranged, model_option

# Each bound's default (their ranges: nbclass.ranges).
MAX_REQUEST_BYTES = 1 << 20
MAX_BATCH = 1000
MAX_HEADERS = 100
MAX_CONNECTIONS = 1000
TIMEOUT = 10.0


@click.command(context_settings=CONTEXT)
@model_option
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to listen on: 127.0.0.1 is this machine only; 0.0.0.0 (or ::) "
    "every network the machine is on, with no authentication.",
)
@click.option(
    "--port",
    type=Ranged("--port"),
    default=8080,
    show_default=True,
    help="The TCP port; 0 takes a free one (the log's first line names it).",
)
@click.option(
    "--socket",
    "socket_path",
    type=FILE,
    metavar="PATH",
    help="Listen on a Unix socket at PATH instead of TCP (--host and --port are ignored).",
)
@click.option(
    "--workers",
    type=Ranged("--workers"),
    default=1,
    show_default=True,
    help="Processes that serve requests (one event loop each, sharing the socket and the "
    "loaded model's memory): one per core for the highest rate.",
)
@click.option(
    "--max-request-bytes",
    type=Ranged("--max-request-bytes"),
    default=MAX_REQUEST_BYTES,
    show_default=True,
    help="The largest request body; a larger one is answered 413.",
)
@click.option(
    "--max-batch",
    type=Ranged("--max-batch"),
    default=MAX_BATCH,
    show_default=True,
    help='The most documents in one request\'s "texts"; more are answered 413.',
)
@click.option(
    "--max-headers",
    type=Ranged("--max-headers"),
    default=MAX_HEADERS,
    show_default=True,
    help="The most header fields in a request (their size is bounded at 16 KB); more "
    "are answered 431.",
)
@click.option(
    "--max-connections",
    type=Ranged("--max-connections"),
    default=MAX_CONNECTIONS,
    show_default=True,
    help="Open connections a worker keeps; past it a request is answered 503.",
)
@click.option(
    "--timeout",
    type=Ranged("--timeout"),
    default=TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="A request's headers, and then its body, must arrive within this (408 and the "
    "connection closed otherwise); also how long SIGTERM waits for requests in flight.",
)
@click.option(
    "--access-log/--no-access-log",
    default=True,
    show_default=True,
    help="One line on stderr per request (and per refused connection).",
)
def serve(
    model_path, host, port, socket_path, workers, max_request_bytes, max_batch, max_headers,
    max_connections, timeout, access_log,
):  # fmt: skip
    """Serve a model over HTTP/1.1 with JSON, keeping it loaded between requests.

    \b
    POST /predict  {"text": "..."}       one document: predict's JSONL line
                   {"texts": ["...", ...]}  several: a JSON array of those lines
                   with predict's options as fields: top_k, min_probability,
                   min_margin, min_known, min_typicality, unsure_label, explain,
                   calibration (false: --no-calibration), source / sources
    GET /health    {"status": "ok", "model": ...}
    GET /info      the model (classes, settings, sha256) and the service's limits

    \b
    Examples:
      nbclass serve -m model.nbc --port 8080 --workers 2
      curl -s localhost:8080/predict -d '{"text": "refund my card", "top_k": 2}'

    When the model file is replaced (fit, fit --update, merge, sync write a new file and
    rename it), the service loads it and switches between two requests; a file that
    cannot be loaded is refused in the log and the old model keeps serving. SIGHUP loads
    the file again now. SIGTERM stops accepting, lets requests in flight finish, and
    exits 0. Each request is one line on stderr.
    """
    try:
        from ..service.app import Limits
        from ..service.server import serve as run
    except ImportError as exc:
        if exc.name not in ("uvicorn", "httptools") and "uvicorn" not in str(exc):
            raise
        raise NbclassError(
            f"nbclass serve needs uvicorn and httptools ({exc.name or exc} is missing): "
            "pip install 'nbclass[serve]'"
        ) from None
    limits = Limits(max_request_bytes, max_batch, timeout)
    code = run(
        model_path, host, port, socket_path, workers, limits, max_headers, max_connections,
        access_log,
    )  # fmt: skip
    raise click.exceptions.Exit(code)
