"""The layout of the engine: ``thrifty.core`` has no import cycle and short modules.

The import graph is built from the source with ``ast`` — every ``import`` statement counts,
including those inside functions — so a cycle hidden behind a function-level import fails too.
"""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "src" / "thrifty" / "core"


def core_imports(path: Path) -> set[str]:
    """Names of the ``thrifty.core`` modules that ``path`` imports (anywhere in the file)."""
    out = set()
    modules = {p.stem for p in CORE.glob("*.py")}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("thrifty.core."):
                    out.add(alias.name.split(".")[2])
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("thrifty.core."):
                out.add(node.module.split(".")[2])
            elif node.module == "thrifty.core":
                out.update(a.name for a in node.names if a.name in modules)
    out.discard(path.stem)
    return out


def import_graph() -> dict[str, set[str]]:
    return {p.stem: core_imports(p) for p in CORE.glob("*.py") if p.stem != "__init__"}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the graph as a list of modules (first = last), or None."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return [*stack[stack.index(n) :], n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_cycle_detector_finds_a_cycle():
    """The check can fail: a graph with a cycle through a function-level import is caught."""
    assert find_cycle({"run": {"plate"}, "plate": {"mem"}, "mem": {"run"}}) == [
        "mem",
        "run",
        "plate",
        "mem",
    ]
    assert find_cycle({"run": {"plate", "mem"}, "plate": {"mem"}, "mem": set()}) is None
    tree = ast.parse("def f():\n    from thrifty.core.run import Run\n")
    assert any(isinstance(n, ast.ImportFrom) for n in ast.walk(tree))


def test_core_has_no_import_cycle():
    graph = import_graph()
    assert {"run", "plate", "markov", "mem", "trace", "vocab", "replay", "batch"} <= set(graph)
    cycle = find_cycle(graph)
    assert cycle is None, " → ".join(cycle)


def test_vocabulary_imports_no_node_module():
    """The shared vocabulary and the replay decision sit below every node module."""
    graph = import_graph()
    assert graph["vocab"] <= {"address"}
    assert graph["replay"] <= {"vocab", "address"}
    for node_module in ("plate", "markov", "mem", "batch", "frame"):
        assert "run" not in graph[node_module], node_module


def test_core_modules_are_short():
    """Each module of the engine reads in one sitting (a few hundred lines at most)."""
    long = {p.name: n for p in CORE.glob("*.py") if (n := len(p.read_text().splitlines())) > 550}
    assert not long, long
