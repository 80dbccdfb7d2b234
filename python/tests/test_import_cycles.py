"""colocated_wire has no import cycles: a module may import another only if that one does not
import it back, by any path (imports under TYPE_CHECKING aside, as they never run)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "colocated_wire"


def modules() -> dict[str, Path]:
    """The package's modules by dotted name (its generated code aside)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if "_gen" in path.parts:
            continue
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules `path` imports, at module level or in a function."""
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for n in ast.walk(node):
            if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module in known:
                names = (f"{n.module}.{a.name}" for a in n.names)
                found.update(m if m in known else n.module for m in names)
            elif isinstance(n, ast.Import):
                found.update(a.name for a in n.names if a.name in known)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
            if w in stack:
                low[v] = min(low[v], low[w])
        if low[v] == index[v]:
            cycle = stack[stack.index(v) :]
            del stack[stack.index(v) :]
            if len(cycle) > 1:
                found.append(sorted(cycle))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_cycles():
    known = modules()
    graph = {name: imports(path, known) - {name} for name, path in known.items()}
    assert len(graph) > 100
    assert sum(len(d) for d in graph.values()) > len(graph)  # imports were read
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle_of_three_and_leaves_a_chain_alone():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    graph["c"] = {"d"}
    assert cycles(graph) == []
