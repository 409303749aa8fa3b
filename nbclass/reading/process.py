"""The process around a command: standard streams, SIGTERM and errors writing results.

Shared by the click command line (:mod:`nbclass.cli.app`) and the console script's fast
start for one document (:mod:`nbclass.cli.entry`), so both behave the same when stdout is
closed or full or a SIGTERM comes. Standard library only.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import sys

try:  # signal's functions without the module's enumerations of every signal (0.4 ms)
    import _signal as signal
except ImportError:  # pragma: no cover - not CPython
    import signal

from ..errors import EXIT_HANGUP, NbclassError, Terminated

# The standard streams (0, 1, 2) that were closed when the command started.
CLOSED: set[int] = set()


def silence_stdout() -> None:
    """Point fd 1 at /dev/null so that Python's final flush of stdout cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:  # pragma: no cover - no /dev/null
        pass


OUT_OF_MEMORY = (
    "Error: out of memory: the input needs more than this process may use (a document "
    "of up to --max-bytes is held whole, and several times that while its words are "
    "counted): give a smaller --max-bytes, or the command more memory\n"
)
# A command without --max-bytes (info, diff, export, merge, serve...) reads models only
OUT_OF_MEMORY_MODELS = (
    "Error: out of memory: the model (or models) this command reads need more than this "
    "process may use: give the command more memory\n"
)


def reserve_standard_streams() -> None:
    """Give closed fds 0-2 (``nbclass ... >&-``) a placeholder, and stdout a stream.

    Otherwise the next file opened (the model being saved) would become fd 1 or 2 and
    receive what is printed. The placeholder is /dev/null opened read-only, so that writing
    results to a closed stdout fails with "Bad file descriptor", as for ``cat >&-``, and
    becomes one ``Error:`` line; a command that prints nothing is unaffected. A closed
    stdin is remembered: reading it (:func:`standard_input`) is an error, not an empty
    document; a closed stderr swallows messages (the exit code still tells).
    """
    for fd, mode in ((0, os.O_RDONLY), (1, os.O_RDONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            CLOSED.add(fd)
            placeholder = os.open(os.devnull, mode)
            if placeholder != fd:  # pragma: no cover - the lowest free fd is the closed one
                os.dup2(placeholder, fd)
                os.close(placeholder)
    if sys.stdin is None:
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    if sys.stdout is None:
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    if sys.stderr is None:
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = _messages_that_may_be_lost(sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        _escape_what_cannot_be_written(stream)


class _LosableWrites(io.RawIOBase):
    """fd 2 for writing, where a write that fails (a full device, ``2>/dev/full``; a pipe
    whose reader left) is dropped as if it had been made."""

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return 2

    def isatty(self) -> bool:  # a progress bar is drawn on a terminal
        return os.isatty(2)

    def write(self, data) -> int:
        try:
            os.write(2, data)
        except OSError:
            pass
        return len(data)


def _messages_that_may_be_lost(stream):
    """``stream`` (stderr) made to drop what it cannot write: messages are for people,
    and a command that did its work (a model written) must not report failure because
    its summary could not be shown; the exit code still tells how the command ended."""
    if getattr(stream, "fileno", None) is None:
        return stream
    try:
        if stream.fileno() != 2:
            return stream  # pragma: no cover - replaced by the caller (a test harness)
    except (OSError, ValueError):
        return stream
    stream.flush()
    return io.TextIOWrapper(
        io.BufferedWriter(_LosableWrites()),
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=True,
        write_through=True,
    )


ESCAPE = "nbclass-escape"  # the codec error handler of outputs that are not UTF-8


def _escape_as_json(error: UnicodeEncodeError) -> tuple[str, int]:
    """The characters ``error`` could not encode as JSON writes them, ``\\uNNNN`` (a pair
    of surrogates beyond U+FFFF): valid in a JSON string, where it stands for the very
    character, and the escape of text outputs (:func:`nbclass.names.escape`)."""
    out = []
    for ch in error.object[error.start : error.end]:
        o = ord(ch)
        if o > 0xFFFF:
            o -= 0x10000
            out.append(f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}")
        else:
            out.append(f"\\u{o:04x}")
    return "".join(out), error.end


def _escape_what_cannot_be_written(stream) -> None:
    """Write what ``stream``'s encoding (ASCII under ``LC_ALL=C``, or what
    ``PYTHONIOENCODING`` names) cannot hold as ``\\uNNNN``, not as a traceback: a class
    named café prints as ``caf\\u00e9``. A UTF-8 stream holds everything and is left as
    it is."""
    encoding = getattr(stream, "encoding", None)
    if not encoding or not hasattr(stream, "reconfigure"):
        return
    try:
        if codecs.lookup(encoding).name == "utf-8":
            return
    except LookupError:  # pragma: no cover - Python opened the stream with it
        return
    codecs.register_error(ESCAPE, _escape_as_json)
    stream.reconfigure(errors=ESCAPE)


def standard_input():
    """``sys.stdin.buffer``, or an :class:`NbclassError` when stdin was closed (``<&-``):
    nothing was piped in, which is not the same as an empty document."""
    if 0 in CLOSED:
        raise NbclassError(
            "standard input is closed: pipe the input into nbclass, or give a file to read"
        )
    return sys.stdin.buffer


def terminate(signum, frame):
    """SIGTERM (SIGHUP) handler: unwind like Ctrl-C (clean-ups run), then exit 143 (129)."""
    raise Terminated(hangup=signum == getattr(signal, "SIGHUP", None))


def install_sigterm() -> None:
    """SIGTERM unwinds like Ctrl-C (no partial model is left) and exits 143; SIGHUP (the
    terminal or ssh session closed) the same way, exiting 129. A signal that the parent
    chose to ignore (``nohup``) stays ignored, as Python does for SIGINT.

    An interrupt that Python would drop is delivered again (:func:`redeliver_interrupt`)."""
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None and signal.getsignal(signum) == signal.SIG_DFL:
            signal.signal(signum, terminate)
    sys.unraisablehook = redeliver_interrupt


def redeliver_interrupt(unraisable) -> None:
    """``sys.unraisablehook``: a Ctrl-C (SIGTERM, SIGHUP) whose handler ran inside a
    finalizer (a weak reference's callback, a ``__del__``, a generator closed by the
    collector) raised there, and Python only prints and drops such exceptions: the command
    would go on, and one waiting for input would wait for ever. The signal is sent to
    the main thread again, from a thread of its own a tenth of a second later, when this
    hook has returned (raised in the hook, it would be dropped again), and interrupts
    what the command does then; should it land in a finalizer again, it comes back here.
    Any other exception is printed as Python prints it."""
    exc = unraisable.exc_value
    if isinstance(exc, KeyboardInterrupt):
        signum = signal.SIGINT
    elif isinstance(exc, Terminated):
        signum = signal.SIGHUP if exc.exit_code == EXIT_HANGUP else signal.SIGTERM
    else:
        sys.__unraisablehook__(unraisable)
        return
    import threading

    main = threading.main_thread().ident

    def resend():
        import time

        time.sleep(0.1)
        signal.pthread_kill(main, signum)

    threading.Thread(target=resend, name="nbclass-interrupt", daemon=True).start()


# The signals whose Python handlers :func:`signals_held` holds back while it forks.
HELD_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
# The handlers it replaced, put back in a worker forked meanwhile (:func:`start_worker`).
_HELD: dict = {}


class signals_held:  # noqa: N801 - used as a function: ``with signals_held(): ...``
    """Run the block (one that forks worker processes) with Ctrl-C, SIGTERM and SIGHUP
    held back, and act on one that came meanwhile when it ends.

    ``os.fork`` runs the standard library's fork hooks: :mod:`logging` takes its module
    lock before the fork and gives it back after, in Python code. An interrupt whose
    handler runs inside such a hook raises there, where Python only reports and drops it
    (:func:`redeliver_interrupt` sends it again), and the lock stays held: a thread that
    logs later (numpy's import does, through charset_normalizer) waits for it for ever,
    and the command with it. So while the block runs, these signals' Python handlers are
    replaced by one that only notes the signal; when it ends, the handlers are put back
    and the first signal noted is handled at once (Ctrl-C's ``KeyboardInterrupt`` raised
    there, after the hooks). Only the main thread sets handlers; elsewhere the block
    runs as it is.
    """

    def __enter__(self) -> None:
        import threading

        self.held, self.noted = {}, []
        if threading.current_thread() is not threading.main_thread():
            return
        for name in HELD_SIGNALS:
            signum = getattr(signal, name, None)
            handler = None if signum is None else signal.getsignal(signum)
            if callable(handler):  # a Python handler (not SIG_DFL or SIG_IGN)
                self.held[signum] = handler
                signal.signal(signum, self._note)
        _HELD.update(self.held)

    def _note(self, signum, frame) -> None:
        self.noted.append(signum)

    def __exit__(self, *exc) -> None:
        for signum, handler in self.held.items():
            signal.signal(signum, handler)
        _HELD.clear()
        if self.noted:
            self.held[self.noted[0]](self.noted[0], None)


# A forked worker that ended before it sent its result (``kill -9``, or the kernel's
# out-of-memory killer, which picks the largest process).
WORKER_LOST = (
    "a worker process was killed before it finished (by a signal: most often the kernel's, "
    "for lack of memory): give the command more memory, or fewer workers (-j 1)"
)


# How often a wait for a worker's result looks whether a worker of the pool has died.
WATCH_SECONDS = 0.1
# Set when a pool that lost a worker was abandoned: its own thread may still be reading
# what the dead worker left half-sent (until no process holds the pipe open: a worker of
# another pool may), so the command ends by :func:`quick_exit` at once rather than by
# Python's exit, which waits for that thread.
ABANDONED = False


def worker_result(future, pool=None):
    """``future.result()`` of a task of ``pool``, a pool of forked workers
    (``ProcessPoolExecutor``), where a worker killed meanwhile is one
    :class:`NbclassError`, :data:`WORKER_LOST`, not a traceback of ``BrokenProcessPool``
    nor a wait without end. An error the task raised is raised as it is.

    The pool marks itself broken when a worker dies between tasks or in one; but a
    worker killed while it sends a result back leaves the pool's thread waiting for the
    rest of it, and the other workers waiting for the lock it held. So the wait looks
    every :data:`WATCH_SECONDS` whether a worker has ended (none ends before the pool
    is shut down), and a lost worker abandons the pool (:func:`abandon_pool`).
    """
    from concurrent.futures import TimeoutError as Late
    from concurrent.futures.process import BrokenProcessPool

    try:
        while True:
            try:
                return future.result(timeout=None if pool is None else WATCH_SECONDS)
            except Late:
                check_workers(pool)
    except BrokenProcessPool:
        if pool is not None:
            abandon_pool(pool)
        raise NbclassError(WORKER_LOST) from None


def check_workers(pool) -> None:
    """Raise :data:`WORKER_LOST` as an :class:`NbclassError`, the pool abandoned, if a
    worker process of ``pool`` has ended (:func:`worker_result`)."""
    if workers_lost(pool):
        abandon_pool(pool)
        raise NbclassError(WORKER_LOST)


def workers_lost(pool) -> bool:
    """Whether a worker process of ``pool`` has ended (its processes are the pool's own
    ``_processes``; a pool without them is never seen to lose one)."""
    processes = getattr(pool, "_processes", None) or {}
    return any(process.exitcode is not None for process in list(processes.values()))


def abandon_pool(pool) -> None:
    """Kill the workers left of ``pool``, which lost one (they may wait on a lock the dead
    one held), close this process's end of its result pipe (which ends its thread's read
    of a message the dead one began) and shut it down without waiting for that thread;
    the command then ends at once (:data:`ABANDONED`, :func:`quick_exit`: a worker of
    another pool may still hold the pipe open)."""
    global ABANDONED
    ABANDONED = True
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        if process.exitcode is None:
            process.kill()
    for process in processes:
        process.join(WATCH_SECONDS)
    # The pool's thread may be reading the rest of a message the dead worker began: with
    # every worker gone, this process's end of the pipe is the last writer, and closing
    # it ends that read (end of file): the thread then marks the pool broken and stops,
    # so a Python program that called the library can exit the ordinary way.
    writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
    if writer is not None:
        try:
            writer.close()
        except OSError:  # pragma: no cover - closed already
            pass
    pool.shutdown(wait=False, cancel_futures=True)


def start_worker(parent: int) -> None:
    """Set up a forked worker process of the process ``parent`` (its pid, taken before
    the fork): it must never outlive its parent.

    On Linux the kernel sends the worker SIGKILL when the parent dies, however it dies
    (``kill -9`` included: ``prctl(PR_SET_PDEATHSIG)``); elsewhere a thread checks every
    half second that the parent is still the same. A parent that died before this ran is
    seen at once. SIGTERM and SIGHUP get their default action back (the parent's
    handlers, inherited by the fork, would unwind a worker into its pool's loop).
    """
    for signum, handler in _HELD.items():  # forked inside signals_held: its handlers back
        signal.signal(signum, handler)
    _HELD.clear()
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None and signal.getsignal(signum) == terminate:
            signal.signal(signum, signal.SIG_DFL)
    if not _parent_death_signal():
        import threading

        def watch():
            import time

            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, name="nbclass-parent-watch", daemon=True).start()
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)


def _parent_death_signal() -> bool:
    """Ask Linux to SIGKILL this process when its parent dies; whether that was done."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        return libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):  # pragma: no cover - no C library, no prctl
        return False


# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
_KEEP_BELOW = 1 << 25  # 32 MiB: tables up to this size come from, and go back to, the heap
_TRIM_ABOVE = 1 << 31  # freed memory is returned to the system past 2 GiB free


def keep_freed_memory() -> bool:
    """Have the C allocator keep the memory freed by this process for its next tables,
    instead of returning each large block to the system; whether that was done.

    Choosing a model (:mod:`nbclass.models.choosing`) makes and drops tables of a few
    to 30 MB, dozens of them, on two threads. By default glibc maps each such table
    afresh and unmaps it when freed, and every page of the next one is faulted in and
    zeroed again by the kernel (a candidate's first scoring of generated 10 MB took
    0.10 s, the same scoring on recycled memory 0.015 s). Here tables up to 32 MiB come
    from the heap (one heap for every thread, so a block freed by one thread is reused
    by the other), and the heap is not trimmed below 2 GiB free: a default fit of 20
    Newsgroups then takes 4 % less time, at a lower peak memory (freed blocks are reused
    rather than new ones mapped beside them). A fit's count does the same with every
    window of pairs its workers send (sorted, summed and merged, a few MB each; the
    settings are taken before the workers are forked, which inherit them): at 2,000
    classes x 2,000,000 words the named fit's system time falls by a third. The process
    ends after the command, which returns everything. Elsewhere than glibc, nothing is
    changed.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # pragma: no cover - not glibc (musl has no mallopt)
        return False
    settings = (
        (_M_ARENA_MAX, 1),
        (_M_MMAP_THRESHOLD, _KEEP_BELOW),
        (_M_TRIM_THRESHOLD, _TRIM_ABOVE),
    )
    return all(mallopt(parameter, value) == 1 for parameter, value in settings)


def return_freed_memory() -> bool:
    """Give the system back the memory this process has freed and kept
    (:func:`keep_freed_memory`), once a phase that made and dropped many tables is over
    and a larger one begins; whether that was done. After the count of a multi-label
    corpus of 5,000 labels, 0.8 GiB of freed heap, which the choice's tables (mapped
    afresh, past 32 MiB) would not reuse. Elsewhere than glibc, nothing is done."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        return False
    trim(0)
    return True

def output_error(exc: OSError) -> str:
    """The ``Error:`` line (with its newline) of an OSError writing the results.

    stdout is pointed at /dev/null first, so that Python's final flush cannot fail again.
    """
    silence_stdout()
    where = "standard output" if exc.filename is None else repr(exc.filename)
    reason = exc.strerror or str(exc)
    if exc.errno == errno.EBADF and exc.filename is None:
        reason = "it is closed"
    return f"Error: cannot write to {where}: {reason}\n"


def quick_exit(code: int) -> None:
    """End the process at once with ``code`` when nothing is left to do; else return.

    Nothing is left when stdout and stderr flush without error, no other thread runs
    and no child process is alive (worker pools are shut down when a command ends).
    Python's own exit would then only free every object one by one: after a fit of 20
    Newsgroups, 50-70 ms spent on 130,000 words and their arrays, which nobody needs.
    Files are closed by their ``with`` blocks and the model is fsync-ed before this.
    When anything is left, or a flush fails (its error is then the ordinary exit's),
    this returns and the caller exits the ordinary way; but after a pool was abandoned
    (:data:`ABANDONED`), whose thread would hold the ordinary exit for ever, threads and
    children do not count.
    """
    threading = sys.modules.get("threading")
    if not ABANDONED and threading is not None and threading.active_count() > 1:
        return
    multiprocessing = sys.modules.get("multiprocessing")
    if not ABANDONED and multiprocessing is not None and multiprocessing.active_children():
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return
    os._exit(code)
