"""The fast tier (`make test-fast`) cannot drift: every test module is classified in
tests/tiers.py, every heavy entry names a real test, and the rule marks what it says."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.tiers import FAST_MODULES, HEAVY_MODULES, HEAVY_TESTS, is_heavy

TESTS = Path(__file__).resolve().parents[1]


def _modules() -> set[str]:
    """Every test module, by its path inside tests/ (`sandbox/test_escape.py`)."""
    return {p.relative_to(TESTS).as_posix() for p in TESTS.rglob("test_*.py")}


def module_problems(modules: set[str], heavy: frozenset[str] = HEAVY_MODULES, fast: frozenset[str] = FAST_MODULES) -> list[str]:
    """What is wrong with the module lists for the test modules `modules` (paths inside tests/)."""
    problems = []
    if heavy & fast:
        problems.append(f"in both HEAVY_MODULES and FAST_MODULES of tests/tiers.py: {sorted(heavy & fast)}")
    if modules - heavy - fast:
        problems.append("add each to HEAVY_MODULES or FAST_MODULES in tests/tiers.py (heavy: models beyond tiny ones, "
                        f"vLLM, Ray, runs, subprocesses, network, browser): {sorted(modules - heavy - fast)}")
    if (heavy | fast) - modules:
        problems.append(f"tests/tiers.py names modules that do not exist (take them out): {sorted((heavy | fast) - modules)}")
    return problems


def heavy_test_problems(entries: frozenset[str] = HEAVY_TESTS, fast: frozenset[str] = FAST_MODULES) -> list[str]:
    """HEAVY_TESTS entries whose module is not fast or that name no test function of it."""
    stale = []
    for entry in sorted(entries):
        module, _, name = entry.partition("::")
        if module not in fast:
            stale.append(f"{entry} (its module is not fast: the entry is not needed)")
            continue
        tree = ast.parse((TESTS / module).read_text(encoding="utf-8"))
        defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        if name not in defined:
            stale.append(f"{entry} (no such test function)")
    return stale


def test_every_test_module_is_classified_once() -> None:
    problems = module_problems(_modules())
    assert not problems, "\n".join(problems)


def test_every_heavy_test_entry_names_a_test_of_a_fast_module() -> None:
    stale = heavy_test_problems()
    assert not stale, "HEAVY_TESTS entries in tests/tiers.py to fix:\n" + "\n".join(stale)


def test_a_planted_unclassified_module_or_stale_entry_is_found() -> None:
    modules = _modules()
    assert module_problems(modules | {"metrics/test_planted.py"}) != []  # a new module in neither list
    assert module_problems(modules - {"config/test_config.py"}) != []  # an entry whose module is gone
    assert module_problems(modules, heavy=HEAVY_MODULES | {"config/test_config.py"}) != []  # in both lists
    fast = sorted(FAST_MODULES)[0]
    assert heavy_test_problems(HEAVY_TESTS | {f"{fast}::test_planted_name"}) == [f"{fast}::test_planted_name (no such test function)"]
    heavy = sorted(HEAVY_MODULES)[0]
    assert heavy_test_problems(frozenset({f"{heavy}::test_x"})) == [f"{heavy}::test_x (its module is not fast: the entry is not needed)"]


@pytest.mark.parametrize(("nodeid", "markers", "heavy"), [
    ("tests/config/test_config.py::test_x", set(), False),
    ("tests/config/test_config.py::test_x", {"slow"}, True),
    ("tests/config/test_config.py::test_x[a-b]", {"gpu"}, True),
    ("tests/executors/test_ray_cluster.py::test_x", set(), True),
    ("tests/config/test_not_classified_yet.py::test_x", set(), True),
    ("tests/judge/test_config.py::test_x", set(), True),  # a fast module's name in another folder is another module
    ("tests/perturb/test_perturb.py::test_run_results_are_part_invariant[2]", set(), True),
    ("tests/perturb/test_perturb.py::test_run_results_are_part_invariantly", set(), False),
])
def test_the_rule(nodeid: str, markers: set[str], heavy: bool) -> None:
    assert is_heavy(nodeid, markers) is heavy


def test_the_marker_is_applied(request: pytest.FixtureRequest) -> None:
    session_items = request.session.items
    fast_here = [i for i in session_items if i.nodeid.endswith("::test_the_marker_is_applied")]
    assert fast_here and fast_here[0].get_closest_marker("heavy") is None
    for item in session_items:
        markers = {m.name for m in item.iter_markers()}
        assert ("heavy" in markers) == is_heavy(item.nodeid, markers), item.nodeid
