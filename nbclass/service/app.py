"""The ASGI application of ``nbclass serve``: routes, limits, JSON errors, the log line.

Routes: ``POST /predict`` (:mod:`.requests`), ``GET /health`` and ``GET /info``. Every
answer is JSON (``application/json``); a refused request gets ``{"error": "..."}`` with
a 4xx status (5xx only for the service's own failure, which is logged), never a dropped
connection. The body is read with its bounds: at most ``max_request_bytes`` (413,
told by Content-Length before anything is read when it says so) within ``timeout``
seconds (408): a client that stalls half way does not keep its request open. An answer
that leaves part of a body unread closes the connection.

The model is checked for replacement every :data:`WATCH_SECONDS` and at SIGHUP
(:meth:`Service.reload`), in a thread, so requests are served meanwhile; each request
takes the current model once (:mod:`.loaded`).

Standard library and this package only: the server library is :mod:`.server`'s.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

from .. import __version__
from .loaded import ModelHolder
from .requests import PredictRequest, RequestError, parse_body
from .requests import predict as predict_body

WATCH_SECONDS = 0.5  # how often the model file's identity is compared (a stat)
ROUTES = {"/predict": "POST", "/health": "GET", "/info": "GET"}


class Limits:
    """The bounds of a request (see ``nbclass serve --help``)."""

    def __init__(self, max_request_bytes: int, max_batch: int, timeout: float):
        self.max_request_bytes, self.max_batch, self.timeout = (
            max_request_bytes, max_batch, timeout,
        )  # fmt: skip

    def to_dict(self) -> dict:
        return {
            "max_request_bytes": self.max_request_bytes,
            "max_batch": self.max_batch,
            "timeout": self.timeout,
        }


def log_line(text: str) -> None:
    """One line of the service's log on stderr."""
    try:
        sys.stderr.write(f"serve: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed: the service goes on
        pass


def error_body(message: str) -> bytes:
    return (json.dumps({"error": message}, ensure_ascii=False) + "\n").encode("utf-8")


class Service:
    """The ASGI application: ``await service(scope, receive, send)``.

    ``holder`` the :class:`ModelHolder`, ``limits`` the :class:`Limits`, ``access_log``
    whether each request gets its log line.
    """

    def __init__(self, holder: ModelHolder, limits: Limits, access_log: bool = True):
        self.holder, self.limits, self.access_log = holder, limits, access_log
        self._reload = None  # an asyncio.Event once the loop runs
        self._loop = None
        self._watcher = None

    # --- lifespan: the watcher of the model file ------------------------------------------

    async def _lifespan(self, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._reload = asyncio.Event()
                self._loop = asyncio.get_running_loop()
                self._watcher = self._loop.create_task(self._watch())
                await send({"type": "lifespan.startup.complete"})
                log_line(f"ready (pid {os.getpid()})")
            elif message["type"] == "lifespan.shutdown":
                if self._watcher is not None:
                    self._watcher.cancel()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def reload(self) -> None:
        """Load the model file again now (SIGHUP): safe from a signal handler or another
        thread, it wakes the watcher through the event loop."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._reload.set)

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                await asyncio.wait_for(self._reload.wait(), WATCH_SECONDS)
                forced = True
            except asyncio.TimeoutError:
                forced = False
            self._reload.clear()
            if forced or self.holder.changed():
                # Loading takes a while (parsing, the classifier's weights): in a thread,
                # while requests go on with the current model.
                await loop.run_in_executor(None, self.holder.check, forced)

    # --- requests --------------------------------------------------------------------------

    async def __call__(self, scope, receive, send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            return await self._lifespan(receive, send)
        if kind != "http":
            return None
        start = time.perf_counter()
        loaded = self.holder.current  # this request's model, whatever happens meanwhile
        documents, close = 0, False
        try:
            status, body, documents = await self._answer(scope, receive, loaded)
        except RequestError as exc:
            status, body, close = exc.status, error_body(exc.message), exc.close
        except Exception as exc:  # a failure of the service itself: logged, answered 500
            log_line(f"internal error: {type(exc).__name__}: {exc}")
            status, body, close = 500, error_body("internal error (logged)"), True
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"x-nbclass-model", loaded.sha256[:16].encode()),
        ]
        if close:
            headers.append((b"connection", b"close"))
        if status == 405:
            headers.append((b"allow", ROUTES[scope["path"]].encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        if self.access_log:
            client = scope.get("client")
            peer = f"{client[0]}:{client[1]}" if client else "-"
            ms = (time.perf_counter() - start) * 1000
            path = scope["path"].encode("unicode_escape", "replace").decode("ascii")
            log_line(
                f"{peer} {scope['method']} {path} {status} {documents} documents "
                f"{ms:.2f} ms model {loaded.sha256[:16]}"
            )

    async def _answer(self, scope, receive, loaded) -> tuple[int, bytes, int]:
        path, method = scope["path"], scope["method"]
        if path not in ROUTES:
            raise RequestError(
                404, f"no such path {path!r}: POST /predict, GET /health, GET /info", close=True
            )
        if method != ROUTES[path]:
            raise RequestError(405, f"{path} takes {ROUTES[path]}, not {method}", close=True)
        if path == "/health":
            return 200, _json({"status": "ok", "model": loaded.sha256[:16]}), 0
        if path == "/info":
            info = {
                "nbclass": __version__,
                "model": loaded.info(),
                "limits": self.limits.to_dict(),
            }
            return 200, _json(info), 0
        body = await self._read_body(scope, receive)
        request = PredictRequest(parse_body(body), self.limits.max_batch)
        return 200, predict_body(loaded, request), len(request.texts)

    async def _read_body(self, scope, receive) -> bytes:
        limit = self.limits.max_request_bytes
        for name, value in scope["headers"]:
            if name == b"content-length":
                if not value.isdigit():
                    raise RequestError(400, "Content-Length is not a number", close=True)
                if int(value) > limit:
                    raise RequestError(413, _too_large(limit), close=True)
        chunks, size = [], 0
        deadline = time.monotonic() + self.limits.timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                if remaining <= 0:
                    raise asyncio.TimeoutError
                message = await asyncio.wait_for(receive(), remaining)
            except asyncio.TimeoutError:
                raise RequestError(
                    408, f"the request body did not arrive within {self.limits.timeout:g} s",
                    close=True,
                ) from None  # fmt: skip
            if message["type"] == "http.disconnect":
                raise RequestError(400, "the client went away", close=True)
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise RequestError(413, _too_large(limit), close=True)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _too_large(limit: int) -> str:
    return (
        f"the request body is larger than {limit} bytes (the service's --max-request-bytes): "
        "send fewer or shorter texts a request"
    )


def _json(value) -> bytes:
    return (json.dumps(value, ensure_ascii=False) + "\n").encode("utf-8")
