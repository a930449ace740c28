"""The registry is the only place that knows a stage: no module names a stage outside that
stage's own module and package (a grep over the source, by its syntax tree), and the engine's
modules import each other without circles."""
from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

from engine.stages.registry import STAGE_ORDER, get_stage

ENGINE = REPO / "engine"
REGISTRY = "engine/stages/registry.py"
# Calls whose string argument is a stage name or a part-key prefix.
STAGE_CALLS = {"get_stage", "section", "stage_done", "mark_stage", "part_files", "read_parts", "stage_output",
               "parts_at", "part_output_paths", "plan_parts", "run_part_stage"}
# Modules owned by open issues whose user-facing notes still say which stage a run lacks
# (each entry: module -> the literals it may still hold).
PENDING = {
    "engine/report/sections.py": {"score", "noise"},  # issue 23 (report layout): "stages do not include <code>..."
}
# Lazy imports from a factory to the implementation it picks (the implementation imports the
# factory's types): not a circle at import time. The model backends belong to issue 19.
LAZY_FACTORY_EDGES = {
    ("engine.generate.backend", "engine.generate.vllm_backend"),
    ("engine.judge.backends", "engine.judge.http_backend"),
    ("engine.judge.backends", "engine.generate.vllm_backend"),
    ("engine.generate.stage", "engine.generate.worker"),
    ("engine.report.tables", "engine.report.load"),
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ENGINE.rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _owner_paths(name: str) -> tuple[str, ...]:
    stage = get_stage(name)
    package = stage.package.replace(".", "/")
    return (f"engine/stages/{name}.py", f"{package}.py", f"{package}/")


def _stage_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, literal) of each string that names a stage: compared with, passed to a stage
    call, listed in a *STAGE*/*SECTION* constant, or a part-key prefix `<stage>/`."""
    names = set(STAGE_ORDER)
    found = []
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        value, parent = node.value, parents.get(node)
        prefix = value.split("/", 1)[0] if "/" in value else None
        if prefix in names and value in (f"{prefix}/",):
            found.append((node.lineno, value))
            continue
        if value not in names:
            continue
        if isinstance(parent, ast.Compare):
            # `variant != "score"` (or `v` in the perturbation figures): the lexical metrics' variant
            others = [ast.unparse(n) for n in (parent.left, *parent.comparators) if n is not node]
            if not any("variant" in o or o == "v" for o in others):
                found.append((node.lineno, value))
        elif isinstance(parent, ast.Call):
            func = parent.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in STAGE_CALLS:
                found.append((node.lineno, value))
        elif isinstance(parent, (ast.Tuple, ast.List, ast.Set)):
            holder = parents.get(parent)
            targets = getattr(holder, "targets", None) or [getattr(holder, "target", None)]
            if any(isinstance(t, ast.Name) and ("STAGE" in t.id or "SECTION" in t.id) for t in targets):
                found.append((node.lineno, value))
    return found


def test_no_stage_name_outside_its_module_package_and_the_registry() -> None:
    offences = []
    for path in _modules().values():
        rel = path.relative_to(REPO).as_posix()
        if rel == REGISTRY:
            continue
        for line, literal in _stage_literals(ast.parse(path.read_text(encoding="utf-8"))):
            name = literal.rstrip("/")
            if any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in _owner_paths(name)):
                continue
            if literal in PENDING.get(rel, ()):
                continue
            offences.append(f"{rel}:{line}: {literal!r}")
    assert not offences, "stage names outside their stage (ask engine.stages.flow instead):\n" + "\n".join(offences)


def test_the_literal_check_finds_a_stage_name() -> None:
    source = 'if "score" in config.stages:\n    run.part_files("generate/")\nSEEDED_SECTIONS = ("noise",)\nrow["noise"]\n'
    assert sorted(v for _, v in _stage_literals(ast.parse(source))) == ["generate/", "noise", "score"]


def _import_graph() -> dict[str, set[str]]:
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        type_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                     for n in ast.walk(node)}
        for node in ast.walk(tree):  # every import, the lazy ones inside functions too
            if id(node) in type_only:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            for target in targets:
                found = resolve(target) if target.startswith("engine") else None
                if found and found != module and (module, found) not in LAZY_FACTORY_EDGES:
                    graph[module].add(found)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles_among_the_engine_modules() -> None:
    graph = _import_graph()
    assert _cycles(graph) == []
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]  # the check finds one


def test_the_report_reaches_stage_sections_only_through_the_registry() -> None:
    stage_packages = {get_stage(name).package for name in STAGE_ORDER if get_stage(name).kind == "part"}
    graph = _import_graph()
    offending = sorted(
        (module, target) for module, targets in graph.items() if module.startswith("engine.report")
        for target in targets
        if any(target == p or target.startswith(p + ".") for p in stage_packages)
        or (target.startswith("engine.stages.") and target not in ("engine.stages.base", "engine.stages.flow", "engine.stages.registry"))
    )
    assert offending == []
