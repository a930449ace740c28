"""Docstrings stay short: one of 15 lines or more in engine/, kernels/, bench/ or tests/ fails. A
long description of an output table, a protocol, a kernel or a benchmark belongs on the docs page of
that thing (docs/*.md), where readers look for it, and the docstring names the page; a parameter
class documents each key in a string under its field (the config reference is generated from
those), so no class docstring has to list them all."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.paths import REPO

MAX_LINES = 14
ROOTS = ("engine", "kernels", "bench", "tests")


def long_docstrings(source: str) -> list[tuple[str, int]]:
    """(name, lines) of every module, class and function docstring of `source` over MAX_LINES."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc and doc.count("\n") + 1 > MAX_LINES:
                found.append((getattr(node, "name", "<module>"), doc.count("\n") + 1))
    return found


def long_docstrings_under(root: Path) -> list[str]:
    """`path:name (N lines)` of every docstring over MAX_LINES in the .py files of ROOTS under `root`."""
    return [f"{path.relative_to(root).as_posix()}:{name} ({lines} lines)"
            for folder in ROOTS for path in sorted((root / folder).rglob("*.py")) if "__pycache__" not in path.parts
            for name, lines in long_docstrings(path.read_text(encoding="utf-8"))]


def test_no_docstring_is_longer_than_the_limit():
    offenders = long_docstrings_under(REPO)
    assert offenders == [], "shorten these docstrings (move tables and protocols to docs/):\n" + "\n".join(offenders)


@pytest.mark.parametrize("folder", ROOTS)
def test_a_planted_long_docstring_is_found_in_each_folder(tmp_path: Path, folder: str):
    for other in ROOTS:
        (tmp_path / other).mkdir()
    planted = tmp_path / folder / "sub" / "planted.py"
    planted.parent.mkdir()
    planted.write_text('"""' + "\n".join(["x"] * (MAX_LINES + 1)) + '"""\n', encoding="utf-8")
    (tmp_path / folder / "short.py").write_text('"""' + "\n".join(["x"] * MAX_LINES) + '"""\n', encoding="utf-8")
    assert long_docstrings_under(tmp_path) == [f"{folder}/sub/planted.py:<module> ({MAX_LINES + 1} lines)"]


def test_a_planted_long_docstring_is_found():
    def function_with(lines: int) -> str:
        return 'def f():\n    """' + "\n    ".join(f"line {i}" for i in range(lines)) + '"""\n'

    assert long_docstrings(function_with(MAX_LINES + 1)) == [("f", MAX_LINES + 1)]
    assert long_docstrings(function_with(MAX_LINES)) == []


def test_the_limit_counts_module_docstrings():
    planted = '"""' + "\n".join(["x"] * (MAX_LINES + 1)) + '"""\n'
    assert long_docstrings(planted) == [("<module>", MAX_LINES + 1)]
