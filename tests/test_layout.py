"""The layout of the package: no import cycle anywhere (``thrifty.core`` below everything), no
private name imported from another module, and short engine modules.

The import graphs are built from the source with ``ast`` — every ``import`` statement counts,
including those inside functions — so a cycle hidden behind a function-level import fails too.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "thrifty"
CORE = PACKAGE / "core"


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
    """The shared vocabulary, the replay decision and the primitives written once over it sit
    below every node module (the errors of model code they raise too)."""
    graph = import_graph()
    assert graph["vocab"] <= {"address"}
    assert graph["code_errors"] <= {"vocab", "address"}
    assert graph["replay"] <= {"vocab", "address", "code_errors"}
    assert graph["sites"] <= {"replay", "vocab", "address"}
    for node_module in ("plate", "markov", "mem", "batch", "frame"):
        assert "run" not in graph[node_module], node_module


PRIMITIVES = ("sample", "observe", "factor", "deterministic", "markov")


def primitive_methods(root: Path) -> list[str]:
    """``module.Class.name`` of every method named as a primitive in the modules under
    ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                found += [f"{path.stem}.{node.name}.{f.name}" for f in node.body
                          if isinstance(f, ast.FunctionDef) and f.name in PRIMITIVES]
    return found


def test_each_primitive_is_written_once():
    """``sample``, ``observe``, ``factor``, ``deterministic`` and ``markov`` are written once
    (``core/sites.py``): every executor binds them and is a policy of them — scalar, batch,
    particle (pinned, conditional and fused steps included) and gradient execution.  The one
    class of the core that defines them is the guard that refuses them inside a memoized
    function."""
    from thrifty.core import batch, frame, gradient, particles, plate, sites

    executors = (frame.BlockFrame, batch.BatchFrame, plate.PlateFrame, gradient._Frame,
                 particles.ParticleFrame, particles.PlateParticles, particles.StepFrame,
                 particles.ConditionalStep, particles.PinnedStep, particles.FusedStep)
    for cls in executors:
        for name in PRIMITIVES:
            assert getattr(cls, name) is getattr(sites, name), f"{cls.__name__}.{name}"
    assert primitive_methods(CORE) == [f"mem_call._MemBody.{n}" for n in PRIMITIVES]


def test_core_modules_are_short():
    """Each module of the engine reads in one sitting (a few hundred lines at most)."""
    long = {p.name: n for p in CORE.glob("*.py") if (n := len(p.read_text().splitlines())) > 550}
    assert not long, long


# -- the whole package ---------------------------------------------------------------------------
def package_modules() -> dict[str, Path]:
    """Dotted name → file of every module of the package (a package by its ``__init__``)."""
    out = {}
    for p in PACKAGE.rglob("*.py"):
        parts = p.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def imported(name: str, path: Path, modules: dict) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of every import of a thrifty module in ``path`` (anywhere in the file;
    relative imports resolved); ``from pkg import mod`` counts as an import of ``pkg.mod``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names if a.name.startswith("thrifty")]
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                base = name.split(".")[: None if path.name == "__init__.py" else -1]
                mod = ".".join(base[: len(base) - node.level + 1] + ([mod] if mod else []))
            if not mod.startswith("thrifty"):
                continue
            names = [a.name for a in node.names]
            subs = [n for n in names if f"{mod}.{n}" in modules]
            out += [(f"{mod}.{n}", []) for n in subs]
            rest = [n for n in names if n not in subs]
            if rest:
                out.append((mod, rest))
    return out


def package_graph() -> dict[str, set[str]]:
    """Module → the thrifty modules it imports.  Packages' ``__init__`` files (the facades that
    re-export their modules) are left out."""
    modules = package_modules()
    packages = {n for n, p in modules.items() if p.name == "__init__.py"}
    graph = {}
    for name, path in modules.items():
        if name in packages:
            continue
        deps = {m for m, _ in imported(name, path, modules) if m in modules}
        graph[name] = deps - packages - {name}
    return graph


def test_the_package_has_no_import_cycle():
    """Function-level imports included: a module that imports another inside a function to
    dodge a cycle is a cycle all the same."""
    graph = package_graph()
    assert {"thrifty.inference.mcmc.mh", "thrifty.runtime.result", "thrifty.core.run"} <= set(graph)
    cycle = find_cycle(graph)
    assert cycle is None, " → ".join(cycle)


def test_core_imports_nothing_above_it():
    """The engine (``thrifty.core``) is below inference, runtime and diagnostics."""
    above = ("thrifty.inference", "thrifty.runtime", "thrifty.diagnostics")
    bad = {(m, d) for m, deps in package_graph().items() if m.startswith("thrifty.core.")
           for d in deps if d.startswith(above)}
    assert not bad, sorted(bad)


def test_no_private_name_is_imported_from_another_module():
    """A name with a leading underscore is its module's own; a module that needs another's
    helper imports a public one (dunders such as ``__version__`` excepted)."""
    modules = package_modules()
    bad = []
    for name, path in modules.items():
        for mod, names in imported(name, path, modules):
            bad += [f"{name} imports {mod}.{n}" for n in names
                    if n.startswith("_") and not (n.startswith("__") and n.endswith("__"))]
    assert not bad, bad


def test_the_package_checks_can_fail():
    tree_cycle = {"a.x": {"a.y"}, "a.y": {"a.x"}}
    assert find_cycle(tree_cycle) == ["a.x", "a.y", "a.x"]
    mods = package_modules()
    mh = mods["thrifty.inference.mcmc.mh"]
    assert ("thrifty.inference.selecting", ["Selecting"]) in imported(
        "thrifty.inference.mcmc.mh", mh, mods
    )


# -- kernels talk to the engine through its interface ----------------------------------------------
ENGINE_INTERNALS = ("plate_frames", "chain_frames", "mem_journals", "trace.root", "elem_lp",
                    "find_plate", "trace_chain", ".procs", "step_lp(", "stale_elements",
                    "stale_steps", "Frame", "run.frame", "obs_lp", "lat_lp", "_context.EXECUTIONS")
# modules that still read the engine's nodes or frames directly (none: the particle Gibbs
# executor frames are in core/particles.py, the selections' walk in core/choices.py)
READS_THE_ENGINE: set = set()


def test_kernels_import_the_engine_through_one_module():
    """Modules under ``inference/`` import from ``thrifty.core`` only ``core.engine`` (the
    interface: propose, locate, select, sections, particle steps) and ``core.address`` (names
    and their formatting) — at module level and inside functions."""
    allowed = {"thrifty.core.engine", "thrifty.core.address"}
    bad = {}
    for p in (PACKAGE / "inference").rglob("*.py"):
        tree = ast.parse(p.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                mod = node.module
                if mod.startswith("thrifty.core") and mod not in allowed:
                    bad.setdefault(p.relative_to(PACKAGE).as_posix(), []).append(mod)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("thrifty.core") and a.name not in allowed:
                        bad.setdefault(p.relative_to(PACKAGE).as_posix(), []).append(a.name)
    assert not bad, bad


def test_kernels_read_the_engine_through_its_interface():
    """Modules under ``inference/`` read runs and traces through ``core.sections`` (section
    log-densities, staleness, plate views), ``core.locate``, ``core.choices`` and
    ``core.particle_steps``, not through frames, nodes or ``trace.root`` — except the listed
    ones."""
    inference = PACKAGE / "inference"
    bad = {}
    for p in inference.rglob("*.py"):
        rel = p.relative_to(inference).as_posix()
        if rel in READS_THE_ENGINE:
            continue
        hits = [t for t in ENGINE_INTERNALS if t in p.read_text()]
        if hits:
            bad[rel] = hits
    assert not bad, bad
    still = [m for m in READS_THE_ENGINE
             if any(t in (inference / m).read_text() for t in ENGINE_INTERNALS)]
    assert sorted(still) == sorted(READS_THE_ENGINE)  # the list shrinks as modules move over
