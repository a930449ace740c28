"""Docstrings stay short: one of 15 lines or more in engine/ fails. A long description of an output
table, a protocol or a convention belongs on the docs page of that thing (docs/*.md), where readers
look for it, and a parameter class documents each key in a string under its field (the config
reference is generated from those), so no class docstring has to list them all."""
from __future__ import annotations

import ast

from tests.support.paths import REPO

MAX_LINES = 14


def long_docstrings(source: str) -> list[tuple[str, int]]:
    """(name, lines) of every module, class and function docstring of `source` over MAX_LINES."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc and doc.count("\n") + 1 > MAX_LINES:
                found.append((getattr(node, "name", "<module>"), doc.count("\n") + 1))
    return found


def test_no_docstring_in_engine_is_longer_than_the_limit():
    offenders = [f"{path.relative_to(REPO)}:{name} ({lines} lines)"
                 for path in sorted((REPO / "engine").rglob("*.py"))
                 for name, lines in long_docstrings(path.read_text(encoding="utf-8"))]
    assert offenders == [], "shorten these docstrings (move tables and protocols to docs/):\n" + "\n".join(offenders)


def test_a_planted_long_docstring_is_found():
    def function_with(lines: int) -> str:
        return 'def f():\n    """' + "\n    ".join(f"line {i}" for i in range(lines)) + '"""\n'

    assert long_docstrings(function_with(MAX_LINES + 1)) == [("f", MAX_LINES + 1)]
    assert long_docstrings(function_with(MAX_LINES)) == []


def test_the_limit_counts_module_docstrings():
    planted = '"""' + "\n".join(["x"] * (MAX_LINES + 1)) + '"""\n'
    assert long_docstrings(planted) == [("<module>", MAX_LINES + 1)]
