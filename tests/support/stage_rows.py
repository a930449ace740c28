"""A round-trip row made from a model completion through the stage's own functions (the code is
taken from the completion as the stage takes it, then run and judged as the stage runs a row), so
tests attack and check the path a real generation goes through."""
from __future__ import annotations

import pytest

from engine.roundtrip import generation, orchestrate
from engine.roundtrip.tasks import load_tasks
from engine.sandbox.languages import toolchain_missing
from engine.sandbox.limits import SandboxLimits


def completion_row(task: dict, completion: str, limits: SandboxLimits, *, call_seconds: float = 1.0,
                   verdict: str = "values") -> dict:
    """The row of `completion` for `task`; the test is skipped where the task's toolchain is missing."""
    missing = toolchain_missing(task["programming_language"])
    if missing:
        pytest.skip(missing)
    params = type("P", (), {"sandbox": limits, "call_seconds": call_seconds, "verdict": verdict})()
    return orchestrate.execute_row(task, generation.code_from_completion(task, completion), None, params)


def reference_completion(task: dict) -> str:
    """The task's reference solution as a model would complete it: what follows the signature's
    line (Python) or its opening brace, without the closing brace of a Java class around it."""
    code = task["code"]
    if task["programming_language"] == "python":
        return code[code.index(":\n") + 2:]
    body = code[code.index("{", code.index(task["signature"]) + len(task["signature"])) + 1:]
    return body.rstrip()[:-1] if task["programming_language"] == "java" else body


def js_task(entry: str, signature: str, body: str, tests: str) -> dict:
    """A JavaScript task of the polyglot set's shape: `body` completes the signature's opening
    brace, and `tests` run with node's `assert` in scope."""
    add = next(t for t in load_tasks("polyglot").to_pylist()
               if t["task_id"].endswith("/add") and t["programming_language"] == "javascript")
    return {**add, "entry_point": entry, "signature": signature, "code": f"{signature} {{{body}",
            "tests": "const assert = require('node:assert');\n" + tests}
