"""The engine asks its stages and its run record through their protocols, checked on the syntax
trees of engine/: a capability by `isinstance` of its small base, never by probing for a hook; the
console asks the stage, not the kind of rows it provides; the manifest is read and written through
`Manifest`'s methods; each stage class lives in its own package's thin `stage.py`. Each
planted-violation test copies engine/ to a temporary folder, plants one violation and shows the
check finds it.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from engine.stages.registry import STAGES, get_stage
from tests.support.paths import REPO
from tests.support.planted import engine_planter
from tests.support.structure import parse

ENGINE = REPO / "engine"


def _call_name(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def stage_hooks(engine: Path) -> set[str]:
    """The method names of the protocols and capabilities (engine/stages/base.py), and the data a
    part stage declares or is handed (`row_generators`, `samples`): every stage has those, so
    probing for one is asking the wrong question."""
    tree = parse((engine / "stages" / "base.py").read_text(encoding="utf-8"))
    methods = {n.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for n in c.body
               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_")}
    part_stage = next(c for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and c.name == "PartStage")
    data = {n.target.id for n in part_stage.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
            and not ast.unparse(n.annotation).startswith("ClassVar")}
    return methods | data


def row_kind_branches(engine: Path) -> list[str]:
    """A driver module that branches on the kind of rows a stage provides (`stage.provides ==
    SCORES`) instead of asking the stage (e.g. `console_lines`). The plan and the layout, which
    resolve the data flow from those kinds, are engine/stages/ and engine/io/layout.py."""
    out = []
    for path in sorted(engine.rglob("*.py")):
        rel = "engine/" + path.relative_to(engine).as_posix()
        if rel.startswith("engine/stages/") or rel == "engine/io/layout.py":
            continue
        for node in ast.walk(parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and any(
                    isinstance(side, ast.Attribute) and side.attr == "provides" for side in (node.left, *node.comparators)):
                out.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return out


def capability_probe_offences(engine: Path) -> list[str]:
    """A capability asked by `hasattr`, `getattr(x, hook, default)` or an override test
    (`type(x).hook is not Base.hook`) instead of `isinstance` of its small base."""
    hooks = stage_hooks(engine)
    out = []
    for path in sorted(engine.rglob("*.py")):
        rel = "engine/" + path.relative_to(engine).as_posix()
        if rel == "engine/stages/base.py":
            continue
        for node in ast.walk(parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _call_name(node) in ("hasattr", "getattr") and len(node.args) >= 2 \
                    and isinstance(node.args[1], ast.Constant) and node.args[1].value in hooks \
                    and (_call_name(node) == "hasattr" or len(node.args) == 3):
                out.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
            elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.left.attr in hooks \
                    and any(isinstance(c, ast.Attribute) and c.attr == node.left.attr for c in node.comparators):
                out.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return out


# What reads or writes a dict in place: on a manifest, only engine/io/manifest.py may.
DICT_ACCESS = frozenset({"get", "setdefault", "pop", "popitem", "update", "items", "keys", "values", "clear"})


def _is_manifest(node: ast.AST, names: bool = True) -> bool:
    return (names and isinstance(node, ast.Name) and node.id == "manifest") or (
        isinstance(node, ast.Attribute) and node.attr == "manifest")


def manifest_dict_access(root: Path, names: bool = True) -> list[str]:
    """`manifest[...]` or `manifest.get(...)` (and the other dict methods) under `root` outside
    engine/io/manifest.py: what a run records is read and written through `Manifest`'s methods.
    names=False looks only at a run's `.manifest` (a test's `manifest` may be the file's JSON)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = f"{root.name}/" + path.relative_to(root).as_posix()
        if rel == "engine/io/manifest.py":
            continue
        for node in ast.walk(parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Subscript) and _is_manifest(node.value, names)) or (
                    isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in DICT_ACCESS
                    and _is_manifest(node.func.value, names)):
                out.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return out


@pytest.fixture(scope="module")
def planted_copy(tmp_path_factory: pytest.TempPathFactory):
    """A fresh copy of engine/ per planting, with one text appended to one module."""
    return engine_planter(ENGINE, tmp_path_factory.mktemp("planted"))


# ----- the tree as it is --------------------------------------------------------------------
def test_capabilities_are_found_by_isinstance() -> None:
    assert capability_probe_offences(ENGINE) == []


def test_the_manifest_is_read_and_written_through_its_methods() -> None:
    assert manifest_dict_access(ENGINE) == []
    assert manifest_dict_access(REPO / "tests", names=False) == []
    assert manifest_dict_access(REPO / "bench", names=False) == []


@pytest.mark.parametrize("planted", [
    'def planted(run):\n    return run.manifest["status"]',
    'def planted(manifest):\n    manifest["x"] = 1',
    'def planted(data):\n    return data.manifest.get("counts", {})'])
def test_a_planted_manifest_dict_access_is_found(planted_copy, planted: str) -> None:
    found = manifest_dict_access(planted_copy("report/build.py", planted))
    assert len(found) == 1 and found[0].startswith("engine/report/build.py:")


def test_the_console_asks_the_stage_not_the_row_kind() -> None:
    assert row_kind_branches(ENGINE) == []


def test_a_planted_row_kind_branch_is_found(planted_copy) -> None:
    engine = planted_copy("cli/running.py", "def planted(bound, SCORES):\n    return bound.stage.provides == SCORES")
    assert row_kind_branches(engine) == [f"engine/cli/running.py:{(engine / 'cli/running.py').read_text().count(chr(10))}: "
                                         "bound.stage.provides == SCORES"]


@pytest.mark.parametrize("planted", [
    "def probe(stage):\n    return hasattr(stage, 'reuse_part')",
    "def probe(stage):\n    return getattr(stage, 'report_section', None)",
    "def probe(stage, PartStage):\n    return type(stage).run_part is not PartStage.run_part",
    "def probe(stage):\n    return getattr(stage, 'row_generators', None)",
    "def probe(stage):\n    return hasattr(stage, 'own_table')"])
def test_a_planted_capability_probe_is_found(planted_copy, planted: str) -> None:
    assert capability_probe_offences(planted_copy("runner.py", planted))


# ----- one place per stage, small protocols -----------------------------------------------------
def test_each_stage_class_lives_in_its_own_package() -> None:
    """engine/<stage>/stage.py (its package's `stage` module); engine/stages/ keeps only the
    protocols, the registry and the plan."""
    for name in STAGES:
        stage = get_stage(name)
        assert type(stage).__module__ == f"{stage.package}.stage", (name, type(stage).__module__)
    kept = sorted(p.name for p in (ENGINE / "stages").glob("*.py"))
    assert kept == ["__init__.py", "base.py", "plan.py", "registry.py"]


STAGE_MODULE_MAX_LINES = 150  # a stage module adapts its package's domain modules to the protocol


def long_stage_modules(engine: Path) -> list[tuple[str, int]]:
    """(path, lines) of every engine/<package>/stage.py longer than STAGE_MODULE_MAX_LINES."""
    out = []
    for path in sorted(engine.glob("*/stage.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > STAGE_MODULE_MAX_LINES:
            out.append((path.relative_to(engine.parent).as_posix(), lines))
    return out


def test_stage_modules_are_thin_adapters() -> None:
    """Domain code lives in the package's own modules; the stage module only adapts it."""
    assert long_stage_modules(ENGINE) == []


def test_a_planted_long_stage_module_is_found(planted_copy) -> None:
    engine = planted_copy("noise/stage.py", "\n".join(f"# line {i}" for i in range(STAGE_MODULE_MAX_LINES)))
    assert [path for path, _ in long_stage_modules(engine)] == ["engine/noise/stage.py"]


def test_no_stage_hook_raises_not_implemented() -> None:
    """Each kind's hooks are on its own base (abstract where required), never a NotImplementedError stub."""
    tree = parse((ENGINE / "stages" / "base.py").read_text(encoding="utf-8"))
    raised = [ast.unparse(node.exc) for node in ast.walk(tree) if isinstance(node, ast.Raise) and node.exc is not None]
    assert not [r for r in raised if "NotImplementedError" in r]
