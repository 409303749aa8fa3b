"""The README's examples are true: every ``$ command`` in a console block prints what it shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import REPO

SECONDS = re.compile(r"\b\d+\.\d\d s\b")


def console_examples() -> list[tuple[str, str]]:
    """(command, expected output) for each ``$ `` line of the README's console blocks."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    examples = []
    for block in re.findall(r"```console\n(.*?)```", text, flags=re.S):
        command, output = None, []
        for line in block.splitlines():
            if line.startswith("$ "):
                if command is not None:
                    examples.append((command, "\n".join(output)))
                command, output = line[2:], []
            else:
                output.append(line)
        if command is not None:
            examples.append((command, "\n".join(output)))
    return examples


def test_the_readme_has_examples_of_every_command():
    commands = {c.split("|")[-1].split()[1] for c, _ in console_examples()}
    core = {"fit", "predict", "top-features", "select-features", "info"}
    assert core | {"evaluate", "cv", "check", "diff"} <= commands


def test_every_console_example_prints_what_the_readme_shows(tmp_path):
    (tmp_path / "corpora").symlink_to(REPO / "corpora")
    env = {
        **os.environ,
        "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}",
    }
    for command, expected in console_examples():
        result = subprocess.run(
            ["bash", "-c", command + " 2>&1"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        shown = SECONDS.sub("N s", expected.rstrip("\n"))
        printed = SECONDS.sub("N s", result.stdout.rstrip("\n"))
        assert printed == shown, command
