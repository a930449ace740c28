"""The layering of docs/architecture.md, checked on the syntax trees of engine/ (tests/support/structure.py).

What counts, so that the checks cannot be walked around:
- every import: module level, inside a function (lazy), under `if TYPE_CHECKING:` (type-only),
  `importlib.import_module("engine...")` and "engine.x:Class" strings resolved by name later;
- every string literal equal to a stage name (or a part-key prefix `<stage>/`) outside that
  stage's own package, the registry and its stage module, wherever it stands (a call's
  argument, `config.get(...)`, a dict key or value, a comparison, a constant).

The allowed lists below are exact: an entry that matches nothing fails too, so an
exception is taken out of the list the day its cause is fixed. Each planted-violation test at
the end copies engine/ to a temporary folder, plants one violation and shows the check finds it.
How the engine asks its stages and its manifest is checked in tests/stages/test_protocol_use.py.
"""
from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

from engine.stages.registry import STAGES, get_stage
from tests.support.paths import REPO
from tests.support.planted import engine_planter
from tests.support.structure import LAYER_NAMES, cycles, layer_of, measure, parse, unit_of

ENGINE = REPO / "engine"
REGISTRY = "engine/stages/registry.py"
FAULTS = "engine/faults.py"  # the one module that may read the fault-injection variables
FAULT_PREFIX = "BABELSCORE_TEST"

# Units below the resolver that may take from engine.stages only its protocol types.
PROTOCOLS = "engine.stages.base"
NEUTRAL_UNITS = ("io", "runtime", "report", "metrics", "data")

# (rule, importing module, imported module) -> why it is still there. Exact: a fixed entry fails.
ALLOWED_EDGES: dict[tuple[str, str, str], str] = {
    # Empty: no import may break these rules. An entry would name one exception and why it stays
    # (exact: an entry whose import is gone fails too).
}
# (module path, literal) -> (how many, why). Exact counts: one more (or one fewer) fails.
COLUMN = 'the `noise` column of the score tables (records.SCORE_SCHEMA), not the stage'
VARIANT = 'the `score` variant of single-valued metrics (bleu, meteor), not the stage'
ALLOWED_LITERALS: dict[tuple[str, str], tuple[int, str]] = {
    ('engine/calibrate/run_directory.py', 'noise'): (1, COLUMN),
    ('engine/calibrate/params.py', 'noise'): (2, 'the `noise` task kind of `group_by` (noise predictions), not the stage'),
    ('engine/calibrate/thresholds.py', 'noise'): (4, COLUMN),
    ('engine/cli/demo.py', 'report'): (1, 'the RUN/report/ folder'),
    ('engine/cli/judge.py', 'judge'): (1, 'the `babelscore judge` subcommand'),
    ('engine/cli/results.py', 'report'): (1, 'the `babelscore report` subcommand'),
    ('engine/cli/running.py', 'report'): (1, 'the RUN/report/ folder'),
    ('engine/metrics/lexical.py', 'score'): (3, VARIANT),
    ('engine/perturb/analysis.py', 'noise'): (4, COLUMN),
    ('engine/perturb/scored_rows.py', 'noise'): (1, COLUMN),
    ('engine/perturb/report.py', 'score'): (4, VARIANT),
    ('engine/perturb/significance.py', 'noise'): (1, COLUMN),
    ('engine/perturb/significance.py', 'score'): (1, VARIANT),
    ('engine/records.py', 'judge'): (1, 'the `judge` column of the judgment table'),
    ('engine/records.py', 'noise'): (4, COLUMN),
    ('engine/report/answer.py', 'judge'): (1, "the `judge` column of the judges' agreement table"),
    ('engine/report/figures.py', 'score'): (1, 'an axis label'),
    ('engine/report/score_settings.py', 'score'): (2, VARIANT),
    ('engine/report/load.py', 'noise'): (5, COLUMN),
    ('engine/report/sections.py', 'noise'): (5, "the noise figure's anchor and the `noise` column"),
    ('engine/report/summary.py', 'noise'): (2, COLUMN),
    ('engine/report/summary.py', 'score'): (1, VARIANT),
    ('engine/report/sweep.py', 'noise'): (1, COLUMN),
    ('engine/report/sweep.py', 'score'): (1, VARIANT),
    ('engine/report/tables.py', 'noise'): (1, COLUMN),
    ('engine/reuse/sources.py', 'noise'): (2, COLUMN),
    ('engine/rundiff.py', 'noise'): (2, COLUMN),
    ('engine/score/rows.py', 'noise'): (2, COLUMN),
    ('engine/stages/base.py', 'noise'): (1, COLUMN),
}


# ----- the checks -------------------------------------------------------------------------
def stage_packages() -> dict[str, tuple[str, ...]]:
    """stage name -> the module prefixes that are its own (its package, its stage module)."""
    out = {}
    for name in STAGES:
        stage = get_stage(name)
        module = type(stage).__module__
        out[name] = tuple(p for p in {stage.package, module} if p.startswith("engine"))
    return out


def _owned_by(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _in_stage_package(module: str, packages: dict[str, tuple[str, ...]]) -> bool:
    return any(_owned_by(module, prefixes) for prefixes in packages.values())


def edge_offences(engine: Path) -> set[tuple[str, str, str]]:
    """(rule, source, target) of every import edge that breaks a layering rule."""
    packages = stage_packages()
    stage_module_of = {type(get_stage(name)).__module__: name for name in packages}  # engine.<package>.stage -> stage
    structure = measure(engine)
    out: set[tuple[str, str, str]] = set()
    for edge in structure.edges:
        source, target = edge.source, edge.target
        s_unit, t_unit = unit_of(source), unit_of(target)
        below_resolver = s_unit in NEUTRAL_UNITS or _in_stage_package(source, packages)
        if below_resolver and target.startswith("engine.stages") and target != PROTOCOLS and not _in_stage_package(target, {
                k: v for k, v in packages.items() if _owned_by(source, v)}):
            out.add(("protocols-only", source, target))
        generate, judge = "engine.generate", "engine.judge"
        if (_owned_by(source, (generate,)) and _owned_by(target, (judge,))) or (_owned_by(source, (judge,)) and _owned_by(target, (generate,))):
            out.add(("llm-shared", source, target))
        if _owned_by(source, ("engine.reuse",)) and _in_stage_package(target, packages) and target != PROTOCOLS:
            out.add(("reuse-generic", source, target))
        owner = stage_module_of.get(target)
        if owner is not None and source != "engine.stages.registry" and not _owned_by(source, packages[owner]):
            out.add(("stage-module", source, target))  # a stage is reached through the plan, never its class
        flagged = any(o[1:] == (source, target) for o in out)
        if s_unit != t_unit and layer_of(t_unit) > layer_of(s_unit) and not flagged:  # once per edge
            out.add(("layers", source, target))
    # every edge counts, lazy and type-only ones too: a cycle hidden in a function is still one
    for cycle in cycles(structure.module_graph()):
        out.add(("cycle", cycle[0], " <-> ".join(cycle)))
    for cycle in cycles(structure.unit_graph()):
        out.add(("unit-cycle", cycle[0], " <-> ".join(cycle)))
    return out


def stage_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, stage name) of every string literal that equals a stage name or `<stage>/`."""
    names = set(STAGES)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value[:-1] if node.value.endswith("/") else node.value
            if value in names:
                found.append((node.lineno, value))
    return found


def literal_counts(engine: Path) -> Counter:
    """(path, stage name) -> how many literals name that stage outside its own modules."""
    packages = stage_packages()
    counts: Counter = Counter()
    for path in sorted(engine.rglob("*.py")):
        rel = "engine/" + path.relative_to(engine).as_posix()
        if rel == REGISTRY:
            continue
        module = rel[:-3].replace("/", ".").removesuffix(".__init__")
        for _, name in stage_literals(parse(path.read_text(encoding="utf-8"))):
            if not _owned_by(module, packages[name]):
                counts[(rel, name)] += 1
    return counts


def _looks_like_a_test_hook(value: str) -> bool:
    """A fault variable's name or a piece of one (`"BABELSCORE_" + "TEST_X"`), or asking whether
    pytest is running: no production module outside engine/faults.py has any reason to."""
    return (value.startswith(FAULT_PREFIX) or value in ("PYTEST_CURRENT_TEST", "pytest")
            or (re.fullmatch(r"[A-Z0-9_]+", value) is not None and re.search(r"TEST|KILL|CRASH|FAKE|FAULT", value) is not None))


def fault_hook_offences(engine: Path) -> list[str]:
    """Production modules other than engine/faults.py that name a fault-injection variable (or a
    piece of one, or pytest)."""
    out = []
    for path in sorted(engine.rglob("*.py")):
        rel = "engine/" + path.relative_to(engine).as_posix()
        if rel == FAULTS:
            continue
        for node in ast.walk(parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _looks_like_a_test_hook(node.value):
                out.append(f"{rel}:{node.lineno}: {node.value!r}")
    return out


# Modules that import by a computed name, each for its own reason (an entry that matches nothing fails).
ALLOWED_DYNAMIC_IMPORTS: dict[str, tuple[int, str]] = {
    "engine/stages/registry.py": (1, "the registry's own 'module:Class' entries"),
    "engine/config_reference.py": (1, "the Params classes the registry's entries name, for docs/config.md"),
    "engine/metrics/base.py": (1, "a scorer class by its kind, from the scorer table"),
    "engine/sandbox/proxies/__init__.py": (1, "the signature proxy of a programming language"),
    "engine/sandbox/syntax.py": (1, "a tree-sitter grammar package (not an engine module)"),
    "engine/runtime/model_process.py": (1, "the worker builds the model its parent names ('module:function')"),
}
VLLM_MODULE = "engine/llm/vllm_backend.py"  # the only module that imports vllm


def _call_name(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def dynamic_import_offences(engine: Path) -> Counter:
    """path -> imports by a computed name: `__import__`, `import_module` of a non-literal,
    `sys.modules[...]`, `pkgutil.resolve_name` (a literal `import_module` is an edge already)."""
    counts: Counter = Counter()
    for path in sorted(engine.rglob("*.py")):
        rel = "engine/" + path.relative_to(engine).as_posix()
        for node in ast.walk(parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = _call_name(node)
                literal = bool(node.args) and isinstance(node.args[0], ast.Constant) and not node.keywords
                if name in ("__import__", "resolve_name") or (name == "import_module" and not literal):
                    counts[rel] += 1
            elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "sys.modules":
                counts[rel] += 1
    return counts


def vllm_import_offences(engine: Path) -> list[str]:
    out = []
    for path in sorted(engine.rglob("*.py")):
        rel = "engine/" + path.relative_to(engine).as_posix()
        if rel == VLLM_MODULE:
            continue
        for node in ast.walk(parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            elif (isinstance(node, ast.Call) and _call_name(node) in ("import_module", "__import__") and node.args
                  and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                names = [node.args[0].value]
            out += [f"{rel}:{node.lineno}: {n}" for n in names if n.split(".")[0] == "vllm"]
    return out


def _judge(found: set | Counter, allowed: dict) -> tuple[list[str], list[str]]:
    if isinstance(found, Counter):
        new = [f"{k}: {n} (allowed {allowed.get(k, (0,))[0]})" for k, n in sorted(found.items()) if n != allowed.get(k, (0,))[0]]
        stale = [f"{k}: allowed {v[0]}, found 0" for k, v in sorted(allowed.items()) if k not in found]
        return new, stale
    return sorted(map(str, found - set(allowed))), sorted(map(str, set(allowed) - found))


# ----- the tree as it is --------------------------------------------------------------------
def test_imports_follow_the_layering() -> None:
    new, stale = _judge(edge_offences(ENGINE), ALLOWED_EDGES)
    assert not new, f"imports against the layering of docs/architecture.md ({' < '.join(LAYER_NAMES)}):\n" + "\n".join(new)
    assert not stale, "ALLOWED_EDGES entries that match no import (take them out):\n" + "\n".join(stale)


def test_no_stage_name_outside_its_package_and_the_registry() -> None:
    new, stale = _judge(literal_counts(ENGINE), ALLOWED_LITERALS)
    assert not new, "stage names outside their stage (ask the RunPlan instead):\n" + "\n".join(new)
    assert not stale, "ALLOWED_LITERALS entries that do not match (fix the count or take them out):\n" + "\n".join(stale)


def test_no_test_hook_outside_the_fault_injection_module() -> None:
    assert fault_hook_offences(ENGINE) == []


def test_imports_by_computed_name_are_the_listed_ones() -> None:
    new, stale = _judge(dynamic_import_offences(ENGINE), ALLOWED_DYNAMIC_IMPORTS)
    assert not new, "imports by a computed name (the layering cannot see them; import by name):\n" + "\n".join(new)
    assert not stale, "ALLOWED_DYNAMIC_IMPORTS entries that match nothing:\n" + "\n".join(stale)


def test_vllm_is_imported_in_one_module() -> None:
    assert vllm_import_offences(ENGINE) == []


# ----- planted violations: each check finds its own ------------------------------------------
@pytest.fixture(scope="module")
def planted_copy(tmp_path_factory: pytest.TempPathFactory):
    """A fresh copy of engine/ per planting (a copy is ~1 MB of source: a fraction of a second)."""
    return engine_planter(ENGINE, tmp_path_factory.mktemp("planted"))


def test_a_planted_config_get_of_a_stage_name_in_the_report_is_found(planted_copy) -> None:
    engine = planted_copy("report/load.py", 'def _planted(config):\n    return config.get("score")')
    new, _ = _judge(literal_counts(engine), ALLOWED_LITERALS)
    assert any("engine/report/load.py" in line and "'score'" in line for line in new)


def test_a_planted_stage_name_handed_to_the_model_registry_is_found(planted_copy) -> None:
    """A scorer is told the stage it loads for; naming the stage in the library is found."""
    engine = planted_copy("metrics/embedding.py", 'def _planted(acquire):\n    return acquire(None, None, model="m", stage="score", device="cpu")')
    new, _ = _judge(literal_counts(engine), ALLOWED_LITERALS)
    assert any("engine/metrics/embedding.py" in line and "'score'" in line for line in new)


def test_a_planted_stage_name_as_a_dict_value_is_found(planted_copy) -> None:
    engine = planted_copy("metrics/text.py", 'PLANTED = {"kind": "judge"}')
    new, _ = _judge(literal_counts(engine), ALLOWED_LITERALS)
    assert any("engine/metrics/text.py" in line and "'judge'" in line for line in new)


@pytest.mark.parametrize("planted", [
    "from engine.stages import plan",  # module level
    "def _planted():\n    from engine.stages.plan import build_plan",  # lazy
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from engine.stages.plan import build_plan",  # type-only
    'PLANTED = "engine.stages.plan:build_plan"',  # imported by name later
])
def test_a_planted_import_of_the_plan_in_io_is_found(planted_copy, planted: str) -> None:
    engine = planted_copy("io/atomic.py", planted)
    new, _ = _judge(edge_offences(engine), ALLOWED_EDGES)
    assert "('protocols-only', 'engine.io.atomic', 'engine.stages.plan')" in new


def test_a_planted_import_between_judge_and_generate_is_found(planted_copy) -> None:
    engine = planted_copy("judge/parse.py", 'BUILDER = "engine.generate.prompts:FimPromptBuilder"')
    new, _ = _judge(edge_offences(engine), ALLOWED_EDGES)
    assert "('llm-shared', 'engine.judge.parse', 'engine.generate.prompts')" in new


def test_a_planted_stage_import_in_reuse_is_found(planted_copy) -> None:
    engine = planted_copy("reuse/keys.py", "def _planted():\n    import engine.generate.stage")
    new, _ = _judge(edge_offences(engine), ALLOWED_EDGES)
    assert "('reuse-generic', 'engine.reuse.keys', 'engine.generate.stage')" in new


def test_a_planted_upward_edge_and_cycle_are_found(planted_copy) -> None:
    engine = planted_copy("errors.py", "from engine.runner import execute_run")
    new, _ = _judge(edge_offences(engine), ALLOWED_EDGES)
    assert "('layers', 'engine.errors', 'engine.runner')" in new
    assert any(line.startswith("('cycle',") for line in new)


def test_a_planted_lazy_cycle_is_found(planted_copy) -> None:
    # engine.data.convert imports engine.generate.prompts; a lazy import back closes a cycle of
    # modules and of their units, though nothing imports in a loop when the modules load
    engine = planted_copy("generate/prompts.py", "def _planted():\n    from engine.data import convert")
    new, _ = _judge(edge_offences(engine), ALLOWED_EDGES)
    assert any(line.startswith("('cycle',") and "engine.data.convert" in line for line in new)
    assert any(line.startswith("('unit-cycle',") for line in new)


def test_a_planted_test_hook_is_found(planted_copy) -> None:
    engine = planted_copy("runner.py", 'PLANTED = "BABELSCORE_TEST_SOMETHING"')
    assert fault_hook_offences(engine) == ["engine/runner.py:" + str(
        (engine / "runner.py").read_text().count("\n")) + ": 'BABELSCORE_TEST_SOMETHING'"]


@pytest.mark.parametrize("planted", [
    'HOOK = "BABELSCORE_" + "TEST_X"', 'import os\nCRASH = os.environ.get("BABELSCORE_FAKE_CRASH")',
    'import os\nUNDER_TEST = "PYTEST_CURRENT_TEST" in os.environ'])
def test_a_planted_test_hook_in_pieces_is_found(planted_copy, planted: str) -> None:
    assert fault_hook_offences(planted_copy("runner.py", planted))


@pytest.mark.parametrize("planted", [
    '__import__("engine.stages.plan")', 'import importlib\nimportlib.import_module("engine.stages." + "plan")',
    'import importlib\nimportlib.import_module(name="engine.stages.plan")', 'import sys\nPLAN = sys.modules["engine.stages.plan"]',
    'import pkgutil\nBUILD = pkgutil.resolve_name("engine.stages.plan:build_plan")'])
def test_a_planted_import_by_computed_name_is_found(planted_copy, planted: str) -> None:
    new, _ = _judge(dynamic_import_offences(planted_copy("io/atomic.py", planted)), ALLOWED_DYNAMIC_IMPORTS)
    assert new == ["engine/io/atomic.py: 1 (allowed 0)"]


@pytest.mark.parametrize("planted", ["import vllm", "from vllm import LLM", 'import importlib\nimportlib.import_module("vllm")'])
def test_a_planted_vllm_import_is_found(planted_copy, planted: str) -> None:
    assert vllm_import_offences(planted_copy("judge/chat_backend.py", planted))


def test_a_planted_import_of_a_stage_class_is_found(planted_copy) -> None:
    """A stage is reached through the plan, never by importing another package's stage module."""
    engine = planted_copy("console.py", "def judge_stage():\n    from engine.judge.stage import JudgeStage\n    return JudgeStage")
    new, _ = _judge(edge_offences(engine), ALLOWED_EDGES)
    assert new == ["('stage-module', 'engine.console', 'engine.judge.stage')"]


def test_an_allowed_entry_that_no_longer_exists_fails() -> None:
    fake = {("layers", "engine.errors", "engine.runner"): "planted"}
    _, stale = _judge(edge_offences(ENGINE), {**ALLOWED_EDGES, **fake})
    assert stale == ["('layers', 'engine.errors', 'engine.runner')"]
    _, stale = _judge(literal_counts(ENGINE), {**ALLOWED_LITERALS, ("engine/errors.py", "score"): (1, "planted")})
    assert stale == ["('engine/errors.py', 'score'): allowed 1, found 0"]
