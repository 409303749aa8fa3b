"""Shell completion lists files for every option and argument that names a file or folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import click

from nbclass.cli.app import cli as main

# The metavars of values that name a file or folder (a model, a corpus, an output).
PATH_METAVAR = re.compile(r"MODEL|FILE|DIR|PATH|OUT|PRUNED|OLD|^\[?[AB]\]?$")


def _params():
    for name, command in sorted(main.commands.items()):
        for param in command.params:
            yield name, param


def _metavar(param) -> str:
    return param.metavar or ""


def test_every_path_parameter_completes_as_a_path_and_nothing_else_does():
    paths = {(name, p.name) for name, p in _params() if PATH_METAVAR.search(_metavar(p))}
    typed = {(name, p.name) for name, p in _params() if isinstance(p.type, click.Path)}
    assert paths == typed
    assert len(paths) == 41  # every command's -m, -o, --lines, folders, serve's --socket, ...
    assert ("predict", "paths") in paths and ("fit", "stop_words") in paths


def test_folders_complete_as_folders_and_files_as_files():
    kinds = {}
    for name, param in _params():
        if isinstance(param.type, click.Path):
            ctx = click.Context(main.commands[name])
            kinds[name, param.name] = param.type.shell_complete(ctx, param, "x")[0].type
    assert {k for k, kind in kinds.items() if kind == "dir"} == {
        ("check", "test_dir"), ("cv", "corpus_dir"), ("evaluate", "test_dir"),
        ("fit", "corpus_dir"), ("predict", "output_dir"), ("sync", "corpus_dir"),
        ("unlearn", "corpus_dir"),
    }  # fmt: skip
    assert set(kinds.values()) == {"dir", "file"}


def test_values_pass_through_unchanged_so_nbclass_names_the_problem(runner, tmp_path):
    """click.Path's own checks are off: a missing model is nbclass's one-line error."""
    result = runner.invoke(main, ["info", "-m", str(tmp_path / "gone.nbc")])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: model file '{tmp_path / 'gone.nbc'}' does not exist: create one with "
        "'nbclass fit'\n"
    )


def test_bash_completion_of_the_console_script_offers_files(tmp_path):
    """The real console script, as bash calls it for ``nbclass predict -m <TAB>``."""
    script = os.path.join(os.path.dirname(sys.executable), "nbclass")
    env = dict(os.environ, _NBCLASS_COMPLETE="bash_complete", COMP_CWORD="3")
    for words, expected in (
        ("nbclass predict -m ", "file,\n"),
        ("nbclass fit corpus -o ", "file,\n"),
        ("nbclass fit ", "dir,\n"),
    ):
        env["COMP_WORDS"] = words
        env["COMP_CWORD"] = str(len(words.split()))
        result = subprocess.run(
            [script], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert (result.returncode, result.stdout, result.stderr) == (0, expected, ""), words
