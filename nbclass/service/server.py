"""``nbclass serve`` on uvicorn: the listening socket, the worker processes, signals.

uvicorn (with httptools, the HTTP/1.1 parser of Node's llhttp) runs :class:`.app.Service`.
It brings keep-alive with an idle timeout, a bound on open connections
(``limit_concurrency``: past it, 503), pipelining, and a graceful shutdown that stops
accepting, lets every request in flight finish, then exits. :class:`GuardedProtocol` adds
what it leaves out: a deadline for a request's headers to arrive (a client that connects
and stalls, or trickles its headers, is answered 408 and closed), and bounds on the
number and size of the headers (431); every refusal is a JSON error.

Workers: the model is loaded and the socket bound in this process, then ``workers``
processes are forked, each running its own event loop on the shared socket (the kernel
hands each connection to one of them) with the model's pages shared until written. The
main process forwards SIGTERM and SIGHUP to them, starts a worker again if one dies, and
exits 0 once they have all drained. With one worker there is no fork.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import time

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ..errors import NbclassError
from .app import Limits, Service, error_body, log_line
from .loaded import ModelHolder

MAX_HEADER_BYTES = 16384  # the request line and headers together
KEEP_ALIVE_SECONDS = 5  # an idle keep-alive connection is closed after this
BACKLOG = 2048
STATUS_TEXT = {400: b"Bad Request", 408: b"Request Timeout", 414: b"URI Too Long",
               431: b"Request Header Fields Too Large"}  # fmt: skip


class _Refused(Exception):
    """Raised in a parser callback: the request is refused with ``status``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def guarded_protocol(max_headers: int, header_seconds: float, access_log: bool = True):
    """The :class:`HttpToolsProtocol` of a service: see the module's docstring.
    ``access_log``: a line for each connection refused before its request was whole."""

    class GuardedProtocol(HttpToolsProtocol):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._header_timer = None
            self._awaiting_headers = True
            self._half_closed = False
            self._header_count = self._header_bytes = 0
            self._pending = b""  # bytes of a request whose headers are not all here
            # A connection that never sends a byte is closed at the same deadline.
            self._header_timer = self.loop.call_later(header_seconds, self._headers_late)

        def data_received(self, data: bytes) -> None:
            self._pending = data[:1] if self._awaiting_headers else b""
            if self._awaiting_headers and self._header_timer is None:
                self._header_timer = self.loop.call_later(header_seconds, self._headers_late)
            super().data_received(data)

        def _headers_late(self) -> None:
            self._header_timer = None
            if self.transport.is_closing():
                return
            if not self._pending:  # nothing said: nothing to answer
                self.transport.close()
                return
            self._refuse(408, f"the request's headers did not arrive within "
                         f"{header_seconds:g} s")  # fmt: skip

        def _cancel_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._awaiting_headers = True
            self._header_count = self._header_bytes = 0

        def on_url(self, url: bytes) -> None:
            self._header_bytes += len(url)
            if self._header_bytes > MAX_HEADER_BYTES:
                raise _Refused(414, f"the request's target is longer than {MAX_HEADER_BYTES} "
                               "bytes")  # fmt: skip
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._header_count += 1
            self._header_bytes += len(name) + len(value) + 4
            if self._header_count > max_headers:
                raise _Refused(431, f"the request has more than {max_headers} headers")
            if self._header_bytes > MAX_HEADER_BYTES:
                raise _Refused(431, f"the request's headers are longer than {MAX_HEADER_BYTES} "
                               "bytes")  # fmt: skip
            super().on_header(name, value)

        def on_headers_complete(self) -> None:
            self._awaiting_headers = False
            self._cancel_header_timer()
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            self._awaiting_headers = True
            super().on_response_complete()
            if self._half_closed and not self.pipeline:
                self.transport.close()

        def eof_received(self):
            """The client shut its side after a whole request: answer it, then close.
            (asyncio closes the connection when this returns None: a request without all
            of its body is then dropped, as is an idle connection.)"""
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete and not cycle.more_body:
                self._half_closed = True
                return True
            return None

        def connection_lost(self, exc) -> None:
            self._cancel_header_timer()
            super().connection_lost(exc)

        def send_400_response(self, msg: str) -> None:
            """A request that is not HTTP, or refused while its headers were read."""
            cause = sys.exc_info()[1]  # uvicorn calls this where it caught the parser's error
            cause = cause.__context__ if cause is not None else None
            if isinstance(cause, _Refused):
                self._refuse(cause.status, cause.message)
            else:
                self._refuse(400, "the request is not valid HTTP/1.1")

        def _refuse(self, status: int, message: str) -> None:
            self._cancel_header_timer()
            body = error_body(message)
            head = b"HTTP/1.1 %d %s\r\n" % (status, STATUS_TEXT[status])
            head += b"content-type: application/json\r\ncontent-length: %d\r\n" % len(body)
            head += b"connection: close\r\n\r\n"
            self.transport.write(head + body)
            self.transport.close()
            if access_log:
                peer = f"{self.client[0]}:{self.client[1]}" if self.client else "-"
                log_line(f"{peer} refused {status}: {message}")

    return GuardedProtocol


def listen(host: str, port: int, path: str | None) -> socket.socket:
    """The listening socket: TCP on ``host``:``port`` (0: any free port) or a Unix socket
    at ``path``; :class:`NbclassError` when it cannot be had."""
    try:
        if path is not None:
            if os.path.exists(path):
                probe = socket.socket(socket.AF_UNIX)
                try:
                    probe.connect(path)
                except ConnectionRefusedError:  # left by a service that ended: reused
                    os.unlink(path)
                except OSError:
                    raise NbclassError(f"--socket {path!r} exists and is not a socket: "
                                       "remove it or choose another path") from None  # fmt: skip
                else:
                    raise NbclassError(f"--socket {path!r} is in use by a running service")
                finally:
                    probe.close()
            sock = socket.socket(socket.AF_UNIX)
            sock.bind(path)
        else:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            # IPPROTO_TCP named: asyncio turns Nagle's algorithm off only on sockets that
            # say TCP, and an answer's head and body are two writes (without it, a client
            # delaying its ACK held every answer 40 ms).
            sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
        sock.listen(BACKLOG)
    except NbclassError:
        raise
    except (OSError, OverflowError) as exc:
        where = path if path is not None else f"{host}:{port}"
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise NbclassError(
            f"cannot listen on {where}: {reason} (choose another --port, --host or --socket)"
        ) from None
    sock.set_inheritable(True)
    return sock


def _loopback(host: str) -> bool:
    """Whether ``host`` is an address of this machine only (127.0.0.0/8, ::1, localhost).

    >>> _loopback("127.0.0.1"), _loopback("::1"), _loopback("0.0.0.0"), _loopback("::")
    (True, True, False, False)
    """
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def address(sock: socket.socket) -> str:
    """``http://HOST:PORT`` or ``unix:PATH`` of a listening socket."""
    if sock.family == socket.AF_UNIX:
        return f"unix:{sock.getsockname()}"
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve(
    model_path: str, host: str, port: int, socket_path: str | None, workers: int,
    limits: Limits, max_headers: int, max_connections: int, access_log: bool,
) -> int:  # fmt: skip
    """Serve the model at ``model_path`` until SIGTERM (or SIGINT); the exit code.

    The model is loaded and the socket bound first: a model that cannot be used or an
    address that cannot be had is an :class:`NbclassError` before anything is served.
    """
    holder = ModelHolder(model_path, log_line)
    sock = listen(host, port, socket_path)
    try:
        log_line(
            f"listening on {address(sock)}, {workers} worker{'s' * (workers > 1)}, "
            f"model {model_path!r} ({holder.current.sha256[:16]}), pid {os.getpid()}"
        )
        if socket_path is None and not _loopback(host):
            log_line(
                f"--host {host}: other machines can reach this service, which has no "
                "authentication: put it behind a firewall or a proxy that has"
            )
        service = Service(holder, limits, access_log)
        protocol = guarded_protocol(max_headers, limits.timeout, access_log)
        config = dict(
            app=service, http=protocol, ws="none", lifespan="on", interface="asgi3",
            log_config=None, access_log=False, server_header=False, date_header=False,
            timeout_keep_alive=KEEP_ALIVE_SECONDS, limit_concurrency=max_connections,
            timeout_graceful_shutdown=limits.timeout + KEEP_ALIVE_SECONDS, backlog=BACKLOG,
        )  # fmt: skip
        _quiet_uvicorn()
        if workers == 1:
            return _run_worker(config, sock, service)
        return _supervise(config, sock, service, workers)
    finally:
        sock.close()
        if socket_path is not None:
            try:
                os.unlink(socket_path)
            except OSError:
                pass


def _quiet_uvicorn() -> None:
    """uvicorn's own log: errors only, as ``serve:`` lines (each request has its own)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("serve: %(message)s"))
    for name in ("uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = [handler] if name == "uvicorn" else []
        logger.setLevel(logging.ERROR)
        logger.propagate = name != "uvicorn"


def _run_worker(config: dict, sock: socket.socket, service: Service) -> int:
    """Run one event loop on ``sock`` until SIGTERM or SIGINT has drained it; 0, or
    the interrupted code for SIGINT (Ctrl-C)."""
    from ..errors import EXIT_INTERRUPTED, EXIT_OK

    captured: list[int] = []
    # uvicorn raises the signal it stopped for again once drained, under the handler it
    # found: these record it, and the exit is this function's to choose.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda signum, frame: captured.append(signum))
    server = uvicorn.Server(uvicorn.Config(**config))
    signal.signal(signal.SIGHUP, lambda signum, frame: service.reload())
    server.run(sockets=[sock])  # uvloop's event loop when it is installed
    log_line(f"drained and stopped (pid {os.getpid()})")
    if signal.SIGINT in captured and signal.SIGTERM not in captured:
        return EXIT_INTERRUPTED
    return EXIT_OK


def _supervise(config: dict, sock: socket.socket, service: Service, workers: int) -> int:
    """Fork ``workers`` workers and keep them running until SIGTERM or SIGINT; 0 when
    they all drained and stopped, 1 when one failed to."""
    from ..reading.process import start_worker

    parent = os.getpid()
    stopping: list[int] = []
    children: dict[int, float] = {}  # pid -> when it started

    def forward(signum, frame) -> None:
        if signum in (signal.SIGTERM, signal.SIGINT):
            stopping.append(signum)
            signum = signal.SIGTERM
        for pid in list(children):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    def fork() -> None:
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)  # until the worker's own handler
            code = 1
            try:
                start_worker(parent)
                code = _run_worker(config, sock, service)
            except BaseException as exc:  # noqa: BLE001 - a worker never returns into the loop
                log_line(f"worker {os.getpid()} failed: {type(exc).__name__}: {exc}")
            finally:
                sys.stderr.flush()
                os._exit(code)
        children[pid] = time.monotonic()

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    for _ in range(workers):
        fork()
    failed = False
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        started = children.pop(pid, None)
        if started is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        if stopping:
            failed = failed or code not in (0, 130)
            continue
        log_line(f"worker {pid} ended (exit {code}): starting another")
        if time.monotonic() - started < 1:  # dying at once: not faster than once a second
            time.sleep(1)
        if not stopping:
            fork()
    log_line(f"stopped (pid {parent})")
    return 1 if failed else 0
