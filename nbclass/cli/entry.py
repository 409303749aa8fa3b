"""The ``nbclass`` console script: a fast start for one document, else the click CLI.

Importing click and building the command-line interface's commands costs more than
scoring a piped document. :func:`main` recognises the argument lists of the common cron
case, one document through standard input or one file::

    ... | nbclass predict -m MODEL [--format tsv|jsonl] [--top-k K] [THRESHOLDS] [OPTIONS]
    nbclass predict -m MODEL FILE ...

and serves them with :func:`nbclass.cli.single.predict_one`, the very function the click
command calls for one document, so the output, errors and exit codes are the same. Only
what can be parsed without doubt is taken: the options below, each at most once (but
``--min-known`` twice), written ``--option VALUE`` or ``--option=VALUE``, values that
click would read the same way. Anything else (another command, ``--help``, an unknown or
repeated option, a value click would refuse or read differently, a folder, several
paths, ``--lines``, ``--explain``, ``--beta``, a terminal on stdin, settings that need
the whole model) goes to the click CLI unchanged, before the document is read, and click
then prints its real help or error.

``NBCLASS_FULL_CLI=1`` in the environment always takes the click CLI (tests compare the
two paths this way).
"""

from __future__ import annotations

import os
import sys

from ..ranges import RANGES
from .predict_options import FAST, OVERRIDES

EXIT_BROKEN_PIPE = 141  # as nbclass.cli.app: 128 + SIGPIPE
# The options of ``predict`` the fast start parses, read from the table the click command
# is built from (:mod:`nbclass.cli.predict_options`). Valued: name -> (keyword, kind), a
# kind being a tuple of choices, "int" (a whole number >= 1), "float" (a plain decimal
# number) or "str"; flags: name -> (keyword, value).
_VALUED = {
    name: (option.key, "str" if option.kind in ("path", "multiple") else option.kind)
    for option in FAST
    if option.kind not in ("flag", "switch")
    for name in option.names
}
_FLAGS = {
    name: (option.key, value)
    for option in FAST
    if option.kind in ("flag", "switch")
    for name, value in option.flags()
}
_MULTIPLE = {option.key for option in FAST if option.kind == "multiple"}
# Whole numbers with a range of their own (nbclass.ranges): one outside it goes to click,
# which says so.
_RANGED = {
    option.key: RANGES[option.names[0]]
    for option in FAST
    if option.kind == "int" and option.names[0] in RANGES
}
_MOST = 2  # times a "multiple" option may be given (--min-known: N and P%)


def _digits(text: str, most: int) -> bool:
    """Whether ``text`` is at most ``most`` ASCII digits (none is fine)."""
    return len(text) <= most and (not text or (text.isascii() and text.isdigit()))


def _value(kind, text: str):
    """``text`` read as click reads it, or ``None`` when it is not plainly valid.

    A whole number is 1 to 18 digits without a leading zero; a plain decimal number is up
    to 30 digits, a point and up to 30 digits, with at least one digit (no sign, no
    exponent, ASCII digits only: what click reads the same way as Python). Written with
    string methods, not regular expressions, whose compiling would cost the start more
    than the parsing.

    >>> [_value("int", t) for t in ("7", "012", "1e3", "٣")]
    [7, None, None, None]
    >>> [_value("float", t) for t in ("0.5", ".5", "5.", ".", "-1", "1e3")]
    [0.5, 0.5, 5.0, None, None, None]
    """
    if kind == "str":
        return text if text and not text.startswith("-") else None
    if kind == "int":
        plain = text[:1] in "123456789" and _digits(text, 18)
        return int(text) if text and plain else None
    if kind == "float":
        whole, point, fraction = text.partition(".")
        plain = _digits(whole, 30) and _digits(fraction, 30) and (whole or fraction)
        return float(text) if plain else None
    return text if text in kind else None


def parse_predict(args: list[str]) -> dict | None:
    """The options of a one-document ``predict`` (``args`` after the command name).

    Returns a dict of keyword -> value of every option of the fast start (the table's
    default when not given; ``path``: the one PATH or ``None``), or ``None`` when ``args``
    is anything else.

    >>> parse_predict(["-m", "m.nbc", "--format=jsonl", "--min-known", "3"])["fmt"]
    'jsonl'
    >>> parse_predict(["-m", "m.nbc", "--lines"]) is None
    True
    """
    found: dict = {key: [] for key in _MULTIPLE}
    given: set[str] = set()
    paths = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("-") or arg == "-":
            paths.append(arg)
            continue
        name, equals, value = arg.partition("=")
        if equals and not name.startswith("--"):
            return None  # click reads -m=x as the value "=x"
        if name in _FLAGS and not equals:
            key, flag = _FLAGS[name]
            if key in given:
                return None
            given.add(key)
            found[key] = flag
            continue
        if name not in _VALUED:
            return None
        key, kind = _VALUED[name]
        if not equals:
            if i == len(args):
                return None
            value = args[i]
            i += 1
        value = _value(kind, value)
        if value is None or (key in _RANGED and not _RANGED[key].contains(value)):
            return None
        if key in _MULTIPLE:
            if len(found[key]) == _MOST:
                return None
            found[key].append(value)
        elif key in given:
            return None
        else:
            given.add(key)
            found[key] = value
    if "model_path" not in found or len(paths) > 1:
        return None
    request = {option.key: option.default for option in FAST}
    request.update(found)
    for key in _MULTIPLE:
        request[key] = tuple(found[key])
    request["path"] = paths[0] if paths else None
    return request


def _document(path: str, log):
    """``(source, text)`` of the one document at ``path`` (``-``: standard input), as
    :func:`nbclass.reading.corpus.iter_documents` yields it, under the default reading policy,
    without importing the corpus module."""
    from ..errors import NbclassError
    from ..reading.policy import DEFAULT_POLICY, read_document
    from ..reading.process import standard_input

    handle = None
    if path == "-":
        handle = standard_input()  # a closed stdin is an error, not an empty document
    elif not os.path.exists(path):  # gone since it was looked at
        raise NbclassError(f"{path!r} does not exist")
    data = read_document(path, DEFAULT_POLICY, log, False, handle)
    if data is not None:
        yield path, log.decode(data, DEFAULT_POLICY.encoding)


def _fast_predict(args: list[str]) -> int | None:
    """Run a one-document predict; the exit code, or ``None`` to hand over to click."""
    request = parse_predict(args)
    if request is None:
        return None
    path = request["path"]
    if path is None or path == "-":
        if sys.stdin is None or (path is None and sys.stdin.isatty()):
            return None  # click prints its usage hint
    elif not os.path.isfile(path):
        return None  # a folder (batch), or a missing path: click's path
    from ..models.abstain import Abstention
    from ..reading.policy import DEFAULT_POLICY, ReadLog
    from .single import predict_one, warn_skip

    abstention = Abstention.from_options(
        request["min_probability"],
        request["min_margin"],
        request["min_known"],
        request["unsure_label"],
    )
    overrides = {OVERRIDES[key]: request[key] for key in OVERRIDES}
    overrides["beta"] = None
    log = ReadLog(on_skip=warn_skip)  # the reading options' defaults, as click's path
    code = predict_one(
        request["model_path"],
        _document(path or "-", log),
        overrides,
        request["fmt"],
        request["top_k"],
        abstention,
        request["use_exit_code"],
        not request["no_calibration"],
    )
    if code is not None:
        for line in log.summary(DEFAULT_POLICY):
            sys.stderr.write(line + "\n")
    return code


def main() -> None:
    """Entry point of the ``nbclass`` console script."""
    # Before numpy is imported: its OpenBLAS in one thread, unless the user says otherwise.
    # The command's dense products are small (the class offsets' Newton steps, the
    # calibration's), and after each one OpenBLAS's helper threads spin, waiting for the
    # next: a default fit of 20 Newsgroups with word pairs spent about 1 s of CPU so.
    # (Those steps take one BLAS thread whatever this says: nbclass/models/blas.py.)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # And its large arrays in pages of the usual size: numpy asks the kernel for huge
    # pages (madvise) for every array of 4 MB or more, and where the kernel then compacts
    # memory to find 2 MB pages at the first touch (Linux's default for madvised regions)
    # the choice's short-lived tables cost more system time than their arithmetic: a
    # default fit of a 100 MB corpus took 0.8 s of system time in the choice, 0.2 s without.
    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    try:
        _main()
    except KeyboardInterrupt:  # Ctrl-C while the command's modules are still imported
        from ..errors import EXIT_INTERRUPTED

        sys.stderr.write("\nInterrupted\n")
        sys.exit(EXIT_INTERRUPTED)


def _main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["predict"] and not os.environ.get("NBCLASS_FULL_CLI"):
        import warnings

        from ..errors import (
            EXIT_ERROR,
            EXIT_INTERRUPTED,
            NbclassError,
            Terminated,
        )
        from ..reading.process import (
            install_sigterm,
            output_error,
            quick_exit,
            reserve_standard_streams,
        )
        from .single import show_warning

        warnings.showwarning = show_warning
        reserve_standard_streams()
        install_sigterm()
        try:
            code = _fast_predict(args[1:])
        except NbclassError as exc:
            sys.stderr.write(f"Error: {exc}\n")
            sys.exit(exc.exit_code)
        except BrokenPipeError:
            # The reader went away (`nbclass predict ... | head -1`): stop quietly.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(EXIT_BROKEN_PIPE)
        except KeyboardInterrupt:
            sys.stderr.write("\nInterrupted\n")
            sys.exit(EXIT_INTERRUPTED)
        except Terminated as exc:
            sys.stderr.write(exc.message)
            sys.exit(exc.exit_code)
        except MemoryError:  # under a memory limit: one line, as the click command says it
            from ..reading.process import OUT_OF_MEMORY

            sys.stderr.write(OUT_OF_MEMORY)
            sys.exit(EXIT_ERROR)
        except OSError as exc:  # writing the result: stdout closed or full
            sys.stderr.write(output_error(exc))
            sys.exit(EXIT_ERROR)
        if code is not None:
            quick_exit(code)  # returns when anything is left for Python's own exit
            sys.exit(code)
    from ..reading.process import quick_exit
    from .app import main as cli_main

    try:
        cli_main()
    except SystemExit as exc:  # how click ends every command
        if exc.code is None or isinstance(exc.code, int):
            quick_exit(exc.code or 0)  # returns if anything is left to do
        raise
