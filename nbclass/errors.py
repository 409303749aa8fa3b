"""Exit codes and the exceptions that carry them.

Every error a user can cause is an :class:`NbclassError`: the command-line layer prints
its message as one ``Error: ...`` line on stderr and exits with its ``exit_code``.
Nothing else in the package knows about the command line.

Exit codes (documented in docs/commands.md):

====  ==========================================================================
code  meaning
====  ==========================================================================
0     success (``serve``: stopped by SIGTERM once its requests in flight were answered)
1     runtime error: unreadable or invalid corpus, model file or input (``serve``: also
      an address it cannot listen on)
2     usage error: a bad option value or combination (click's own code too)
3     ``nbclass check``: the new model fails the gate
9     ``predict --exit-code``: unsure, or no label
10+   ``predict --exit-code``: the class's code, 10 to 124 (:mod:`nbclass.models.exitcodes`)
130   interrupted (Ctrl-C, SIGINT)
141   the output pipe was closed (``| head``): nothing more is printed
129   hung up (SIGHUP: the terminal or session went away), handled as SIGTERM
      (``serve`` reloads its model instead)
143   terminated (SIGTERM, as sent by ``kill``, ``timeout`` or a service manager)
====  ==========================================================================
"""

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_CHECK_FAILED = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM
EXIT_HANGUP = 129  # 128 + SIGHUP


class NbclassError(Exception):
    """A problem the user can fix; ``str(error)`` says what is wrong and how to fix it."""

    exit_code = EXIT_ERROR


class UsageError(NbclassError):
    """An option value or combination of options that cannot work."""

    exit_code = EXIT_USAGE


class InputError(UsageError, ValueError):
    """A value given to the Python library (:mod:`nbclass.api`, :mod:`nbclass.sklearn`) that
    cannot work: a text that is not a string, labels of another length. Also a
    ``ValueError``, as Python code (scikit-learn among it) expects of a bad value."""


class CorpusError(NbclassError):
    """A training corpus that cannot be read as one folder per class."""


class ModelFileError(NbclassError):
    """A model file that is missing, not a model, truncated, corrupted or of another version."""


class ModelKindError(ModelFileError):
    """A valid model file of another kind than the command needs (a table model for text)."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


class Terminated(BaseException):
    """SIGTERM arrived: like Ctrl-C's ``KeyboardInterrupt``, it unwinds the stack.

    A ``BaseException`` so that no ``except Exception`` swallows it, and every ``finally``
    and cleanup on the way (a half-written temporary model file) runs before the exit.
    SIGHUP is handled the same way, with its own exit code and word.
    """

    def __init__(self, hangup: bool = False):
        super().__init__()
        self.exit_code = EXIT_HANGUP if hangup else EXIT_TERMINATED
        self.message = "\nHangup\n" if hangup else "\nTerminated\n"


class NbclassWarning(UserWarning):
    """Something the user should know that does not stop the command."""
