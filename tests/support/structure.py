"""The engine's import structure, measured from its syntax trees (no import is executed).

Used by tests/stages/test_boundaries.py and runnable on its own to print the figures that
docs/architecture.md describes:

    python tests/support/structure.py [ENGINE_DIR]

Units are the top-level modules and packages of `engine/`, except `engine/stages/`, whose
modules are units of their own (the protocols, the registry and the flow resolver are in
different layers). Every import counts: module level, inside functions (lazy), under
`if TYPE_CHECKING:` (type-only). Layers, lowest first, are `LAYERS` below; an edge from a
unit to a unit of a higher layer points back up.
"""
from __future__ import annotations

import ast
import functools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STRING_IMPORT = re.compile(r"^engine(\.\w+)+:\w+$")

# Lowest first. A unit may import units of its own layer and of lower layers.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("base", frozenset({"errors", "hints", "params", "records", "signature", "items", "context", "progress", "stats",
                        "taxonomy", "resources", "kinds", "faults", "version", "vocabulary"})),
    ("infra", frozenset({"__init__", "io", "runtime", "isolation", "llm", "throughput", "numerics", "sandbox"})),
    ("protocols", frozenset({"stages.base"})),
    ("machinery", frozenset({"reuse"})),  # generic services the stages call (reuse: sources, keys, bookkeeping)
    ("domain", frozenset({"build", "data", "score", "metrics", "generate", "judge", "perturb", "roundtrip", "calibrate", "noise",
                          "report", "prime", "demo", "finetune", "testing"})),
    ("resolver", frozenset({"stages.registry", "stages.plan", "stages", "config", "config_reference"})),
    ("driver", frozenset({"part_execution", "prepare", "preflight", "executors", "runner", "console", "projection", "bench_profile", "cli",
                          "rundiff"})),
)
LAYER_NAMES = tuple(name for name, _ in LAYERS)


def layer_of(unit: str) -> int:
    for number, (_, units) in enumerate(LAYERS):
        if unit in units:
            return number
    # engine/stages/ holds only the protocols, the registry, the resolver and the plan: a stage
    # module there (or a new package) has no layer until it is placed deliberately
    raise KeyError(f"unit {unit!r} has no layer: add it to LAYERS in tests/support/structure.py")


def module_name(engine: Path, path: Path) -> str:
    parts = path.relative_to(engine.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit_of(module: str) -> str:
    """engine.report.load -> report; engine.stages.plan -> stages.plan; engine.cli -> cli."""
    parts = module.split(".")[1:]
    if not parts:
        return "__init__"
    if parts[0] == "stages" and len(parts) > 1:
        return f"stages.{parts[1]}"
    return parts[0]


@dataclass(frozen=True)
class Edge:
    """One import statement's target: module -> imported engine module."""

    source: str
    target: str
    line: int
    lazy: bool  # inside a function, or a "module:Class" string imported by name later
    type_only: bool  # under `if TYPE_CHECKING:`


@dataclass
class Structure:
    modules: dict[str, Path]
    edges: list[Edge] = field(default_factory=list)

    def unit_edges(self) -> set[tuple[str, str]]:
        return {(unit_of(e.source), unit_of(e.target)) for e in self.edges if unit_of(e.source) != unit_of(e.target)}

    def units(self) -> set[str]:
        return {unit_of(m) for m in self.modules}

    def upward(self) -> list[tuple[str, str]]:
        return sorted((a, b) for a, b in self.unit_edges() if layer_of(b) > layer_of(a))

    def module_graph(self, import_time_only: bool = False) -> dict[str, set[str]]:
        """Module -> modules it imports; `import_time_only`: only the imports run when it is imported."""
        graph: dict[str, set[str]] = {m: set() for m in self.modules}
        for e in self.edges:
            if not (import_time_only and (e.lazy or e.type_only)):
                graph[e.source].add(e.target)
        return graph

    def unit_graph(self) -> dict[str, set[str]]:
        graph: dict[str, set[str]] = {u: set() for u in self.units()}
        for a, b in self.unit_edges():
            graph[a].add(b)
        return graph


def _resolve(name: str, modules: frozenset[str] | dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _relative_base(module: str, is_package: bool, level: int) -> str:
    parts = module.split(".")
    keep = len(parts) - level + (1 if is_package else 0)
    return ".".join(parts[:keep])


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[Edge]:
    return list(_imports_of(module, path.name == "__init__.py", path.read_text(encoding="utf-8"), frozenset(modules)))


@functools.lru_cache(maxsize=4096)
def parse(text: str) -> ast.AST:
    """A module's syntax tree, cached by its text (callers must not change it)."""
    return ast.parse(text)


@functools.lru_cache(maxsize=4096)
def _imports_of(module: str, is_package: bool, text: str, modules: frozenset[str]) -> tuple[Edge, ...]:
    """Cached by the file's text: the planted-violation tests measure copies that differ in one file."""
    tree = parse(text)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def context(node: ast.AST) -> tuple[bool, bool]:
        lazy = type_only = False
        while node in parents:
            node = parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                lazy = True
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                type_only = True
        return lazy, type_only

    out: list[Edge] = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                prefix = _relative_base(module, is_package, node.level)
                base = f"{prefix}.{base}" if base else prefix
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                targets = [node.args[0].value]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and STRING_IMPORT.match(node.value):
            targets = [node.value.split(":")[0]]  # "engine.x.y:Class", imported later by name: an edge too
        found = {_resolve(t, modules) for t in targets if t == "engine" or t.startswith("engine.")}
        # `from engine.x import y` names both engine.x and engine.x.y: keep the most specific
        found = {f for f in found if f and f != module}
        found = {f for f in found if not any(g != f and g.startswith(f + ".") for g in found)} or found
        if not found:
            continue
        lazy, type_only = context(node)
        lazy = lazy or isinstance(node, ast.Constant)
        out += [Edge(module, target, node.lineno, lazy, type_only) for target in sorted(found)]
    return tuple(out)


def measure(engine: Path = REPO / "engine") -> Structure:
    modules = {module_name(engine, p): p for p in sorted(engine.rglob("*.py"))}
    structure = Structure(modules)
    for module, path in modules.items():
        structure.edges += imports_of(module, path, modules)
    return structure


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return out


def name_lookups(engine: Path = REPO / "engine") -> dict[str, int]:
    """Calls of get_stage/build_stage/params_type per file (outside the registry, which defines them)."""
    counts: dict[str, int] = {}
    for path in sorted(engine.rglob("*.py")):
        rel = path.relative_to(engine.parent).as_posix()
        if rel == "engine/stages/registry.py":
            continue
        n = sum(1 for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("get_stage", "build_stage", "params_type"))
        if n:
            counts[rel] = n
    return counts


def report(engine: Path = REPO / "engine") -> str:
    s = measure(engine)
    edges = s.unit_edges()
    up = s.upward()
    lookups = name_lookups(engine)
    lines = [
        f"units (top-level modules and packages, engine/stages/ split): {len(s.units())}",
        f"modules: {len(s.modules)}; module import edges: {len({(e.source, e.target) for e in s.edges})}",
        f"unit import edges: {len(edges)}",
        f"edges pointing back up the layers ({' < '.join(LAYER_NAMES)}): {len(up)}",
        *(f"  {a} ({LAYER_NAMES[layer_of(a)]}) -> {b} ({LAYER_NAMES[layer_of(b)]})" for a, b in up),
        f"unit cycles (every edge): {len(cycles(s.unit_graph()))} ({sum(len(c) for c in cycles(s.unit_graph()))} units in them)",
        f"module cycles, every edge (lazy, type-only, 'module:Class' strings): {len(cycles(s.module_graph()))}"
        f" ({sum(len(c) for c in cycles(s.module_graph()))} modules in them)",
        f"module cycles, import-time edges: {len(cycles(s.module_graph(True)))}",
        *(f"  {' <-> '.join(c)}" for c in cycles(s.module_graph(True))),
        f"stage look-ups by name: {sum(lookups.values())} in {len(lookups)} file(s)",
        *(f"  {path}: {n}" for path, n in lookups.items()),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "engine"))
