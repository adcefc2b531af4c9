"""No import circle among the kit's modules, beyond the ones listed as known.

The graph is read from the source with ``ast``: every ``import pfslab.x`` and ``from
pfslab.x import y`` (at module level or inside a function: a deferred import still
ties the two modules), where ``from pfslab.pkg import sub`` naming only submodules
depends on those submodules (importing a package's submodule from inside the package
is no circle), and any other name imported from a module depends on that module. A strongly connected component of more than one module is a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

KIT = Path(__file__).resolve().parents[2]

#: Circles that exist and are not yet untangled: none left (labs <-> layout, which issue 22
#: names, was untangled by pfslab/labexport.py; deviations <-> toolchain by
#: toolchain_versions; references <-> shapes by pfslab/reference_file.py). A new circle
#: fails; one listed here that is gone fails too, so the list only shrinks.
KNOWN: set[frozenset[str]] = set()


def modules(root: Path) -> dict[str, Path]:
    out = {}
    for path in (root / "pfslab").rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def import_graph(root: Path) -> dict[str, set[str]]:
    mods = modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                deps |= {alias.name for alias in node.names if alias.name in mods}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    deps.add(sub if sub in mods else node.module)
        graph[name] = deps & set(mods) - {name, "pfslab"}  # the top package only holds KIT_ROOT
    return graph


def circles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[frozenset[str]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.add(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_finder_sees_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == {frozenset({"a", "b", "c"})}


def test_no_new_import_circle_in_pfslab() -> None:
    found = circles(import_graph(KIT))
    new = [sorted(c) for c in found - KNOWN]
    gone = [sorted(c) for c in KNOWN - found]
    assert not new, f"import circles not allowed in pfslab/: {new}"
    assert not gone, f"circles untangled: remove them from KNOWN: {gone}"


def test_the_tool_modules_import_neither_workloads_nor_rfm() -> None:
    """Rendering's shared part is pfslab/tools/base.py: a tool module that imported the
    workloads (which dispatch to it) would tie the package in a circle."""
    graph = import_graph(KIT)
    for name, deps in graph.items():
        if name.startswith("pfslab.tools."):
            assert not deps & {"pfslab.workloads", "pfslab.rfm", "pfslab.tools"}, (name, deps)
