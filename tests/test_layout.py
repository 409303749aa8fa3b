"""The package's layout: imports flow one way, from the layers that come later in the
pipeline to those before them, and no module imports itself back through others.

The import graph is read from the source with :mod:`ast`: every ``import`` and
``from ... import`` anywhere in a module (at module level, inside a function, under
``if TYPE_CHECKING:``), relative or absolute, counts. ``from . import x`` where ``x`` is a
module is an import of that module. A deferred import of a later layer is still a circle:
the module cannot be understood, tested or moved without the later one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbclass

PACKAGE = Path(nbclass.__file__).parent

# The pipeline, first layer first: a module may import its own layer and the layers
# before it, never one after it.
LAYERS = [
    "reading",  # bytes: storage, the reading policy, limits, corpora, tables, the process
    "text",  # tokens and the count matrix: tokenizer, hashing, runs, vectorizer
    "counting",  # exact counts: tallies, counts, the ledger
    "models",  # probabilities from counts: estimators ... model, learning, tables
    "modelfile",  # a model as bytes and back, the one-document reader, export
    "evaluation",  # judging models on labelled documents
    "output",  # results as text: lines for scripts, reports for people, part files
    "cluster",  # Dask
    # The Python library (``import nbclass``), a module at the top: it calls what the
    # commands call, from any layer before it, and never the command line (click).
    "api",
    "sklearn",  # the scikit-learn estimator over the library, the one module importing sklearn
    "service",  # the HTTP service: a front end like the CLI, whose serve command starts it
    "cli",  # the command: options to one library call and back to text
]
# Leaves every layer may use; they import nothing of the package but each other.
SHARED = {
    "nbclass", "nbclass.errors", "nbclass.names", "nbclass.defaults", "nbclass.records",
    "nbclass.version", "nbclass.ranges", "nbclass.compiled",
}  # fmt: skip
# The package's own ``__init__`` is the door to the library: its lazy attributes (PEP 562,
# imported when first used) may import the library's module, and only that one.
DOOR = {"nbclass": {"nbclass.api"}}
# The program itself (``python -m nbclass``): it may import anything, nothing imports it.
PROGRAM = {"nbclass.__main__"}


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package at ``root``: dotted name -> file."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def import_graph(root: Path, package: str) -> dict[str, dict[str, int]]:
    """``{module: {imported module of the package: first line}}`` for every module."""
    files = module_files(root, package)
    graph: dict[str, dict[str, int]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        here = name.split(".") if is_package else name.split(".")[:-1]
        edges: dict[str, int] = {}

        def add(target: str, line: int, name=name, edges=edges) -> None:
            while target and target not in files:  # an attribute: its module
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.setdefault(target, line)

        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == package:
                        add(alias.name, node.lineno)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[: len(here) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if source.split(".")[0] != package:
                    continue
                for alias in node.names:  # `from . import x`: x may be a module
                    add(f"{source}.{alias.name}", node.lineno)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    """One import circle ``[a, b, ..., a]`` of ``graph``, or None when it has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph.get(module, {})):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def describe(cycle: list[str], graph: dict[str, dict[str, int]]) -> str:
    """``a (line 3) -> b (line 9) -> a``: each import with the line where it is made."""
    steps = [f"{a} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])]
    return " -> ".join(steps + [cycle[-1]])


def layer_of(module: str) -> str | None:
    """The layer a module belongs to (None for a shared leaf or the program)."""
    if module in SHARED or module in PROGRAM:
        return None
    return module.split(".")[1]


def wrong_way(graph: dict[str, dict[str, int]]) -> list[str]:
    """Every import of a later layer (or of the program), and of the package by a leaf."""
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    found = []
    for module, edges in sorted(graph.items()):
        if module in PROGRAM:
            continue
        for target, line in sorted(edges.items()):
            if target in PROGRAM:
                found.append(f"{module} (line {line}) imports the program {target}")
            elif module in SHARED and target not in SHARED | DOOR.get(module, set()):
                found.append(f"shared leaf {module} (line {line}) imports {target}")
            elif module not in SHARED and target not in SHARED:
                here, there = layer_of(module), layer_of(target)
                if rank[there] > rank[here]:
                    found.append(
                        f"{module} (line {line}) imports {target}: layer {there!r} comes "
                        f"after {here!r}"
                    )
    return found


GRAPH = import_graph(PACKAGE, "nbclass")


def test_the_package_has_no_import_circle():
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import circle: " + describe(cycle, GRAPH)


def test_imports_follow_the_pipeline_order_of_the_layers():
    assert wrong_way(GRAPH) == []


def test_every_module_is_in_a_declared_layer_or_shared():
    undeclared = sorted(
        m for m in GRAPH if m not in SHARED | PROGRAM and layer_of(m) not in LAYERS
    )
    assert undeclared == []
    assert {layer_of(m) for m in GRAPH} - {None} == set(LAYERS)  # no layer left empty


def test_the_layer_packages_import_nothing():
    """A subpackage's ``__init__`` is run by every import of one of its modules: the
    one-document path would pay for whatever it imported."""
    for layer in LAYERS:
        if not (PACKAGE / layer).is_dir():  # a layer of one module (api, sklearn)
            assert (PACKAGE / f"{layer}.py").is_file(), layer
            continue
        tree = ast.parse((PACKAGE / layer / "__init__.py").read_text(encoding="utf-8"))
        assert [type(n).__name__ for n in tree.body] == ["Expr"], layer  # a docstring


def test_the_cli_is_the_only_layer_that_imports_click():
    importers = {
        module
        for module, path in module_files(PACKAGE, "nbclass").items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Import | ast.ImportFrom)
        and any(
            (getattr(node, "module", None) or alias.name).split(".")[0] == "click"
            for alias in node.names
        )
    }
    assert importers and {layer_of(m) for m in importers} == {"cli"}


def test_only_the_estimator_imports_scikit_learn():
    """scikit-learn is an optional extra: nothing else may need it."""
    importers = {
        module
        for module, path in module_files(PACKAGE, "nbclass").items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Import | ast.ImportFrom)
        and not getattr(node, "level", 0)  # not a relative import (of nbclass.sklearn)
        and any(
            (getattr(node, "module", None) or alias.name).split(".")[0] == "sklearn"
            for alias in node.names
        )
    }
    assert importers == {"nbclass.sklearn"}


def test_the_door_opens_on_the_library_only():
    assert set(GRAPH["nbclass"]) == {"nbclass.api", "nbclass.errors", "nbclass.version"}


def test_only_the_service_imports_the_server_library():
    """uvicorn is an optional extra (``nbclass[serve]``): one module imports it, and only
    the ``serve`` command imports that module, when it runs."""
    importers = {
        module
        for module, path in module_files(PACKAGE, "nbclass").items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Import | ast.ImportFrom)
        and any(
            (getattr(node, "module", None) or alias.name).split(".")[0] in ("uvicorn", "httptools")
            for alias in node.names
        )
    }
    assert importers == {"nbclass.service.server"}
    assert [m for m, edges in GRAPH.items() if "nbclass.service.server" in edges] == [
        "nbclass.cli.serve"
    ]


# --- the checks themselves, on a small package written for them ----------------------------


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_circle_through_deferred_relative_and_package_imports_is_found_and_named(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "import os\n\ndef f():\n    from ..high import b\n",
        "high/__init__.py": "",
        "high/b.py": "from ..low import c  # a module, through its package\n",
        "low/c.py": "if False:\n    from pkg.low.a import f\n",
        "low/d.py": "from . import c\nfrom .c import g\n",
    })  # fmt: skip
    graph = import_graph(root, "pkg")
    assert graph["pkg.low.a"] == {"pkg.high.b": 4}
    assert graph["pkg.high.b"] == {"pkg.low.c": 1}
    assert graph["pkg.low.c"] == {"pkg.low.a": 2}
    assert graph["pkg.low.d"] == {"pkg.low.c": 1}
    cycle = find_cycle(graph)
    assert describe(cycle, graph) == (
        "pkg.high.b (line 1) -> pkg.low.c (line 2) -> pkg.low.a (line 4) -> pkg.high.b"
    )
    del graph["pkg.low.c"]["pkg.low.a"]
    assert find_cycle(graph) is None


def test_an_import_of_a_later_layer_is_named(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "__version__ = '1'\n",
        "errors.py": "",
        "reading/__init__.py": "",
        "reading/policy.py": "from .. import __version__\nfrom ..errors import x\n",
        "text/__init__.py": "",
        "text/tokenizer.py": "from ..reading.policy import ReadPolicy\n",
        "counting/__init__.py": "",
        "counting/counts.py": "def f():\n    from ..cli.app import main\n",
        "cli/__init__.py": "",
        "cli/app.py": "from ..counting import counts\n",
    })  # fmt: skip
    graph = import_graph(root, "nbclass")
    assert wrong_way(graph) == [
        "nbclass.counting.counts (line 2) imports nbclass.cli.app: layer 'cli' comes after "
        "'counting'"
    ]
    graph["nbclass.errors"] = {"nbclass.reading.policy": 1}
    assert wrong_way(graph)[-1] == (
        "shared leaf nbclass.errors (line 1) imports nbclass.reading.policy"
    )

