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
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
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


def test_the_readme_stays_short():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: move details into docs/"


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces
    to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {github_anchor(h) for h in re.findall(r"^#+ (.*)$", text, flags=re.M)}


def test_github_anchors_follow_githubs_rule():
    assert github_anchor("The ledger and `sync`") == "the-ledger-and-sync"
    assert github_anchor("Bounded memory: `--hash-features`") == "bounded-memory---hash-features"
    assert github_anchor("Poisson counts (`--model poisson`)") == "poisson-counts---model-poisson"


def bad_links(path: Path, root: Path = REPO) -> list[str]:
    """The links of the Markdown page ``path`` that leave ``root``, point at no file, or
    name a heading the page they point at does not have (links in code blocks are text)."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    bad = []
    for link in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", link):  # https://, mailto: ...
            if not link.startswith("https://"):
                bad.append(f"{link}: not https")
            continue
        target, _, anchor = link.partition("#")
        resolved = (path.parent / target).resolve() if target else path.resolve()
        if not resolved.is_relative_to(root.resolve()):
            bad.append(f"{link}: leaves the repository")
        elif not resolved.exists():
            bad.append(f"{link}: no such file")
        elif anchor and (resolved.suffix != ".md" or anchor not in anchors(resolved)):
            bad.append(f"{link}: no such heading")
    return bad


def test_the_link_check_finds_every_kind_of_bad_link(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## The `sync` part\n")
    page = tmp_path / "docs" / "b.md"
    page.write_text(
        "[ok](a.md) [ok](a.md#the-sync-part) [ok](#b) [ok](../docs/a.md) [ok](https://x.org)\n"
        "[out](../../shared/docs/MATH.md) [gone](c.md) [anchor](a.md#nothing) [http](http://x)\n"
        "```sh\n[in code](nowhere.md)\n```\n# B\n"
    )
    assert bad_links(page, root=tmp_path) == [
        "../../shared/docs/MATH.md: leaves the repository",
        "c.md: no such file",
        "a.md#nothing: no such heading",
        "http://x: not https",
    ]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_points_at_a_file_of_the_repository(path):
    """Links between the pages resolve, to a heading when they name one, and none leaves
    the repository (the maths and every other page live in it)."""
    assert bad_links(path) == []


def test_the_readme_links_every_page_of_the_docs():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    pages = {p.name for p in (REPO / "docs").glob("*.md")}
    links = LINK.findall(text)
    linked = {Path(link.partition("#")[0]).name for link in links if link.startswith("docs/")}
    assert pages - linked == set()
