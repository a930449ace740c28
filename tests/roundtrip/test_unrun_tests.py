"""Tests that never ran counted as a pass; written as model completions through the stage's path.

- Java tests written with the `assert` keyword: the JVM ran without `-ea`, so a wrong method
  passed without being called;
- Rust tests written with `debug_assert!`/`debug_assert_eq!`: compiled out at the optimisation
  level used;
- tests that make no call to the function at all: zero calls passed. Now a task error.
"""
from __future__ import annotations

import pytest

from engine.roundtrip import generation, orchestrate
from engine.roundtrip.tasks import load_tasks
from engine.sandbox import process
from engine.sandbox.languages import toolchain_missing
from engine.sandbox.limits import SandboxLimits

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
needs_bwrap = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
ADD = {t["programming_language"]: t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add")}
WRONG = {"java": "\n        return a - b;\n    }\n}\n", "rust": "\n    a - b\n}\n", "python": "    return a - b\n",
         "javascript": "\n  return a - b;\n}\n"}
RIGHT = {"java": "\n        return a + b;\n    }\n}\n", "rust": "\n    a + b\n}\n", "python": "    return a + b\n",
         "javascript": "\n  return a + b;\n}\n"}


def _row(task: dict, completion: str) -> dict:
    language = task["programming_language"]
    if toolchain_missing(language):
        pytest.skip(toolchain_missing(language))
    params = type("P", (), {"sandbox": LIMITS, "call_seconds": 1.0, "verdict": "values"})()
    return orchestrate.execute_row(task, generation.code_from_completion(task, completion), None, params)


ASSERTING = {
    "java": "public class Main {\n    public static void main(String[] args) {\n"
            "        assert Solution.addNumbers(1, 2) == 3;\n        assert Solution.addNumbers(10, 5) == 15;\n    }\n}\n",
    "rust": "fn main() {\n    debug_assert_eq!(add_numbers(1, 2), 3);\n    debug_assert!(add_numbers(10, 5) == 15);\n}\n",
}


@needs_bwrap
@pytest.mark.parametrize("language", sorted(ASSERTING))
def test_assertion_keyword_tests_run(language):
    task = {**ADD[language], "tests": ASSERTING[language]}
    row = _row(task, WRONG[language])
    assert row["status"] == "failed" and row["pass_at_1"] == 0.0, row
    assert _row(task, RIGHT[language])["status"] == "passed"


NO_CALL = {
    "python": "def check(candidate):\n    assert 1 + 2 == 3\n",
    "javascript": "const assert = require('node:assert');\nassert.strictEqual(1 + 2, 3);\n",
    "java": "public class Main {\n    public static void main(String[] args) {\n        if (1 + 2 != 3) throw new AssertionError();\n    }\n}\n",
}


@needs_bwrap
@pytest.mark.parametrize("language", sorted(NO_CALL))
def test_tests_without_a_call_are_a_task_error(language):
    row = _row({**ADD[language], "tests": NO_CALL[language]}, RIGHT[language])
    assert row["status"] == "error" and row["pass_at_1"] == 0.0 and "no call" in row["reason"], row
