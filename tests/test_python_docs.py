"""The examples of docs/python.md are true: its ``>>>`` lines run as a doctest, in order,
in a fresh folder holding the repository's ``corpora/`` (its ``$`` lines are
``tests/test_readme.py``'s)."""

from __future__ import annotations

import doctest
import re

from conftest import REPO

PAGE = REPO / "docs" / "python.md"


def test_every_python_example_prints_what_the_page_shows(tmp_path, monkeypatch):
    (tmp_path / "corpora").symlink_to(REPO / "corpora")
    monkeypatch.chdir(tmp_path)
    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"```pycon\n(.*?)```", text, flags=re.S)
    assert all(block.endswith("\n\n") for block in blocks)  # an output ends before ```
    test = doctest.DocTestParser().get_doctest(text, {}, "docs/python.md", str(PAGE), 0)
    assert len(test.examples) >= 30
    report = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    result = runner.run(test, out=report.append, clear_globs=True)
    assert result.failed == 0, "".join(report)
