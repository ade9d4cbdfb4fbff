"""The package's layers import downward only, and nothing imports in a cycle.

LAYERS lists purlin's folders from the bottom up: a module's layer is its
folder's (purlin/ itself holds the foundation: dtypes, diagnostics,
declarations), and it may import its own layer and the ones below.
Every folder must be in a layer, so a new one is placed on purpose. The test
harness (purlin.testing) is for the tools and the tests: nothing in the
library path imports it. Every import counts: inside functions (they still
run) and under `if TYPE_CHECKING:` (a type is a dependency too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "purlin"

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("purlin",)),
    ("semantics", ("purlin/coll",)),
    ("orchestration", ("purlin/snac",)),
    ("datapath", ("purlin/atom", "purlin/atom/generations")),
    ("plans and kernels", ("purlin/plan", "purlin/cuda")),
    ("imports and conversions", ("purlin/frontends", "purlin/conversion")),
    ("runtime", ("purlin/runtime",)),
    ("simulator", ("purlin/simulator",)),
    ("driver", ("purlin/compile",)),
    ("levels", ("purlin/levels",)),
    ("test harness", ("purlin/testing",)),
    ("entry points", ("purlin/tools", "purlin/torch", "purlin/jax")),
)
# Who may import the test harness besides itself.
HARNESS = "purlin.testing"
HARNESS_USERS = ("purlin.tools",)


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _owner(name: str, known: dict[str, Path]) -> str | None:
    """The module an imported name belongs to: `purlin.coll.dialect.X` -> `purlin.coll.dialect`."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(known: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                names = [f"{base}.{a.name}" for a in node.names] + [base]
            else:
                continue
            for n in names:
                owner = _owner(n, known) if n.split(".")[0] == "purlin" else None
                if owner and owner != name:
                    targets.add(owner)
        graph[name] = targets
    return graph


def folders_of(known: dict[str, Path], root: Path = PACKAGE) -> dict[str, str]:
    """Each module's folder: purlin.coll.dialect and purlin.coll are both in purlin/coll."""
    return {name: path.parent.relative_to(root.parent).as_posix() for name, path in known.items()}


def folder_of(module: str, folders: dict[str, str]) -> str:
    """Its folder; a module not in `folders` (the test's own graphs) is a file of its parent package."""
    return folders.get(module) or module.rpartition(".")[0].replace(".", "/")


def layer_of(module: str, folders: dict[str, str]) -> int | None:
    folder = folder_of(module, folders)
    for index, (_, members) in enumerate(LAYERS):
        if folder in members:
            return index
    return None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def violations(graph: dict[str, set[str]], folders: dict[str, str] | None = None) -> list[str]:
    folders = folders or {}
    out = []
    for module, targets in sorted(graph.items()):
        mine = layer_of(module, folders)
        if mine is None:
            out.append(f"{module} is in {folder_of(module, folders)}/, a folder of no layer (add it to LAYERS)")
            continue
        for target in sorted(targets):
            theirs = layer_of(target, folders)
            if theirs is not None and theirs > mine:
                out.append(f"{module} ({LAYERS[mine][0]}) imports {target} ({LAYERS[theirs][0]}), a layer above it")
            is_harness = target == HARNESS or target.startswith(HARNESS + ".")
            if is_harness and not module.startswith((HARNESS, *HARNESS_USERS)):
                out.append(f"{module} imports the test harness {target}")
    for component in cycles(graph):
        out.append("import cycle: " + " <-> ".join(component))
    return out


def test_layers_import_downward_and_without_cycles():
    known = modules()
    assert violations(imports(known), folders_of(known)) == []


def test_every_folder_is_in_one_layer():
    listed = [folder for _, members in LAYERS for folder in members]
    assert sorted(set(folders_of(modules()).values())) == sorted(listed)


@pytest.mark.parametrize(
    "graph, expected",
    [
        ({"purlin.coll.dialect": {"purlin.snac.dialect"}, "purlin.snac.dialect": set()},
         "purlin.coll.dialect (semantics) imports purlin.snac.dialect (orchestration), a layer above it"),
        ({"purlin.snac.phase_binding": {"purlin.snac.index_eval"}, "purlin.snac.index_eval": {"purlin.snac.phase_binding"}},
         "import cycle: purlin.snac.index_eval <-> purlin.snac.phase_binding"),
        ({"purlin.runtime.backend": {"purlin.testing.cases"}, "purlin.testing.cases": set()},
         "purlin.runtime.backend (runtime) imports purlin.testing.cases (test harness), a layer above it"),
        ({"purlin.tools.run": {"purlin.testing.cases"}, "purlin.testing.cases": set(), "purlin.newpkg.thing": set()},
         "purlin.newpkg.thing is in purlin/newpkg/, a folder of no layer (add it to LAYERS)"),
        ({"purlin.cuda.target": {"purlin.compile.pipeline"}, "purlin.compile.pipeline": set()},
         "purlin.cuda.target (plans and kernels) imports purlin.compile.pipeline (driver), a layer above it"),
        ({"purlin.dtypes": {"purlin.coll.layouts"}, "purlin.coll.layouts": set()},
         "purlin.dtypes (foundation) imports purlin.coll.layouts (semantics), a layer above it"),
    ],
)
def test_the_check_finds_each_kind_of_defect(graph, expected):
    assert expected in violations(graph)


def test_function_level_and_type_checking_imports_count(tmp_path):
    pkg = tmp_path / "purlin"
    (pkg / "coll").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "coll" / "__init__.py").write_text("")
    (pkg / "coll" / "dialect.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from purlin.tools import run\n"
        "def f():\n    from purlin.testing import cases\n"
    )
    (pkg / "testing").mkdir()
    (pkg / "testing" / "__init__.py").write_text("")
    (pkg / "testing" / "cases.py").write_text("")
    (pkg / "tools").mkdir()
    (pkg / "tools" / "__init__.py").write_text("")
    (pkg / "tools" / "run.py").write_text("")
    graph = imports(modules(pkg))
    assert graph["purlin.coll.dialect"] == {"purlin.testing", "purlin.testing.cases", "purlin.tools", "purlin.tools.run"}
    assert folders_of(modules(pkg), pkg)["purlin.coll"] == "purlin/coll"
