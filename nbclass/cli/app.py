"""The ``nbclass`` command: the click group, its commands, and how errors end a command.

Each command lives in a module of its own (:mod:`.fit`, :mod:`.predict`,
:mod:`.features`, :mod:`.export`, :mod:`.describe`, :mod:`.learn`, :mod:`.evaluate`) and
only parses, calls the library and prints. Results go to stdout; summaries, warnings and
errors to stderr. A user's mistake is one ``Error: ...`` line and an exit code from
:mod:`nbclass.errors`, never a traceback.
"""

from __future__ import annotations

import os
import sys
import warnings

import click

from ..errors import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    NbclassError,
    Terminated,
)
from ..reading.process import (
    OUT_OF_MEMORY,
    OUT_OF_MEMORY_MODELS,
    install_sigterm,
    output_error,
    reserve_standard_streams,
)
from ..version import __version__
from .describe import diff, info
from .evaluate import check, cv, evaluate
from .export import export
from .features import select_features, top_features
from .fit import fit
from .learn import merge, sync, unlearn
from .options import CONTEXT
from .predict import predict
from .serve import serve

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a filter cut off by `head`


def _show(error: click.ClickException):
    """Print ``error`` (click's usage lines, or an ``Error:`` line) on this process's
    stderr and end with its exit code. click would print on a stream of its own, UTF-8
    whatever stderr's encoding is; stderr escapes what its encoding cannot hold
    (:mod:`nbclass.reading.process`), as every other message."""
    error.show(file=sys.stderr)
    raise click.exceptions.Exit(error.exit_code) from None


class NbclassGroup(click.Group):
    """Turns library errors, Ctrl-C and a closed output pipe into the documented exits."""

    def make_context(self, *args, **kwargs):
        try:  # click would turn Ctrl-C while parsing the options into "Aborted!", exit 1
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt:
            sys.stderr.write("\nInterrupted\n")
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
        except click.ClickException as error:
            _show(error)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.ClickException as error:  # a command's options, or no such command
            _show(error)
        except NbclassError as exc:
            error = click.ClickException(str(exc))
            error.exit_code = exc.exit_code
            _show(error)
        except BrokenPipeError:
            # The reader went away (`nbclass predict ... | head -1`): stop quietly.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise click.exceptions.Exit(EXIT_BROKEN_PIPE) from None
        except KeyboardInterrupt:
            sys.stderr.write("\nInterrupted\n")
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
        except Terminated as exc:
            sys.stderr.write(exc.message)
            raise click.exceptions.Exit(exc.exit_code) from None
        except OSError as exc:
            # The library turns every file it reads or writes into an NbclassError; what is
            # left is writing the results: stdout on a full disk, /dev/full, or closed.
            sys.stderr.write(output_error(exc))
            raise click.exceptions.Exit(EXIT_ERROR) from None
        except MemoryError:  # under a memory limit (ulimit -v, a container): no traceback
            command = self.commands.get(ctx.invoked_subcommand or "")
            reads_documents = command is None or any(
                "--max-bytes" in param.opts for param in command.params
            )
            sys.stderr.write(OUT_OF_MEMORY if reads_documents else OUT_OF_MEMORY_MODELS)
            raise click.exceptions.Exit(EXIT_ERROR) from None


@click.group(cls=NbclassGroup, context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="nbclass")
def cli():
    """Naive Bayes text classification for shell scripts and cron jobs.

    \b
    Learn from a folder with one subfolder per class, then classify:
      nbclass fit corpus/ -o model.nbc
      echo "my invoice is wrong" | nbclass predict -m model.nbc
      nbclass predict -m model.nbc inbox/ > labels.tsv
      nbclass top-features -m model.nbc -k 20

    Exit codes: 0 success, 1 runtime error (corpus, model or input), 2 usage error,
    130 interrupted, 141 output pipe closed.

    \b
    Trust a model before cron does:
      nbclass evaluate -m model.nbc test/        # accuracy, F1, calibration
      nbclass cv corpus/ --folds 10              # cross-validation
      nbclass check -m new.nbc --baseline prod.nbc test/ --max-drop 0.01   # exit 0 or 3
      nbclass predict -m model.nbc --min-probability 0.9 --exit-code ticket.txt  # class code, 9
    """


# One module per command or command group; each translates options to library calls.
for _command in (
    fit, predict, top_features, select_features, export, info, diff, merge, unlearn, sync,
    evaluate, cv, check, serve,
):  # fmt: skip
    cli.add_command(_command)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    from .single import show_warning

    show_warning(message, category, filename, lineno, file, line)


def main(argv=None) -> None:
    """Entry point of the ``nbclass`` console script."""
    warnings.showwarning = _show_warning
    reserve_standard_streams()
    install_sigterm()
    try:
        cli.main(args=argv, prog_name="nbclass")
    except KeyboardInterrupt:  # a signal before or after the command itself ran
        sys.stderr.write("\nInterrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    except Terminated as exc:
        sys.stderr.write(exc.message)
        sys.exit(exc.exit_code)
