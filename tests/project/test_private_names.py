"""No module imports another module's private (`_name`) names: a name used across modules is part
of its module's interface and is named like it. None is left; an exception would have to be
listed in ALLOWED, and an entry that matches nothing fails too, so the list only shrinks."""
from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import REPO

ROOTS = ("engine", "kernels", "bench", "tests")

# (importing file, "module._name") -> why it still reaches into a module's internals. Empty: keep it so.
ALLOWED: set[tuple[str, str]] = set()


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(path: Path) -> set[str]:
    """`module._name` for each private name `path` imports from a module, or reads off an imported module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: dict[str, str] = {}  # local name -> module it stands for
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if _private(alias.name):
                    found.add(f"{node.module}.{alias.name}")
                else:
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                modules[alias.asname or alias.name] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name)
                and node.value.id in modules and modules[node.value.id].split(".")[0] in ROOTS):
            found.add(f"{modules[node.value.id]}.{node.attr}")
    return found


def test_no_private_name_is_imported_across_modules() -> None:
    seen = set()
    for root in ROOTS:
        for path in sorted((REPO / root).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            seen |= {(rel, use) for use in private_uses(path)}
    new = sorted(seen - ALLOWED)
    assert not new, "private names used across modules (give the name a public one where it is defined):\n" + "\n".join(map(str, new))
    stale = sorted(ALLOWED - seen)
    assert not stale, "ALLOWED entries that match nothing (take them out):\n" + "\n".join(map(str, stale))


def test_the_check_sees_both_forms(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("from engine.sandbox.programs import _hidden\nfrom engine import runner\nrunner._Internal\n", encoding="utf-8")
    assert private_uses(planted) == {"engine.sandbox.programs._hidden", "engine.runner._Internal"}
