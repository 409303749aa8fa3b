"""The documents' examples are true: every ``$ command`` in a console block prints what it shows.

The README and every page under ``docs/`` are read; each document's examples run in order
in a fresh folder of their own (with ``corpora/`` linked into it), so a page can build on
its own earlier examples but never on another page's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

SECONDS = re.compile(r"\b\d+\.\d\d s\b")
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def console_examples(path: Path = REPO / "README.md") -> list[tuple[str, str]]:
    """(command, expected output) for each ``$ `` line of the console blocks of ``path``."""
    text = path.read_text(encoding="utf-8")
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


def test_the_documents_have_examples_of_every_command():
    commands = {
        c.split("|")[-1].split()[1] for path in DOCUMENTS for c, _ in console_examples(path)
    }
    core = {"fit", "predict", "top-features", "select-features", "info"}
    assert core | {"evaluate", "cv", "check", "diff"} <= commands


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_console_example_prints_what_the_document_shows(tmp_path, path):
    (tmp_path / "corpora").symlink_to(REPO / "corpora")
    env = {
        **os.environ,
        "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}",
    }
    for command, expected in console_examples(path):
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
