"""Attacks on the round trip's verdict that a plain proxy does not contain, written as model
completions and run through the stage's own path (`generation.code_from_completion`, then
`orchestrate.execute_row`, default limits), each asserting the contained outcome: pass@1 0, correctness
below 0.5, a row (never an exception of the stage) or `rejected`. The attacks (StopIteration in
the tests' iteration, a bool for 1 or 0, a repeated map key or set element on the reply pipe, a
JavaScript BigInt, a lone surrogate) and why each would pass a plain proxy: docs/sandbox.md,
"Look-alike answers".
"""
from __future__ import annotations

import pytest

from engine.roundtrip import completion_function, difftest, generation, orchestrate
from engine.roundtrip.tasks import load_tasks
from engine.sandbox import process
from engine.sandbox.languages import LANGUAGES, toolchain_missing
from engine.sandbox.limits import SandboxLimits

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
needs_bwrap = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
ADD = {t["programming_language"]: t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add")}


def _check(body: str) -> dict:
    return {**ADD["python"], "tests": "def check(candidate):\n" + body}


def _through_the_stage(task: dict, completion: str, n_inputs: int = 0) -> dict:
    params = type("P", (), {"sandbox": LIMITS, "call_seconds": 1.0, "verdict": "values"})()
    inputs = difftest.task_inputs(task, n_inputs, seed=0) if n_inputs else None
    return orchestrate.execute_row(task, generation.code_from_completion(task, completion), inputs, params)


def _contained(row: dict) -> bool:
    return row["pass_at_1"] == 0.0 and row["status"] in ("failed", "error") and (
        row["correctness"] is None or row["correctness"] < 0.5)


# The tests of each check the sum of two cases; the completion raises or returns a bool.
BOOL = "    return a + b == 1\n"
PYTHON = {
    "StopIteration ends zip(map(...))": (_check("    for got, want in zip(map(lambda ab: candidate(*ab), [(1, 2), (-4, 4)]), [3, 0]):\n"
                                                "        assert got == want\n"), "    raise StopIteration\n"),
    "StopIteration ends all(map(...))": (_check("    assert all(map(lambda c: candidate(*c[0]) == c[1], [((1, 2), 3), ((10, 5), 15)]))\n"),
                                         "    raise StopIteration\n"),
    "bool under a chained ==": (_check("    assert 1 == candidate(1, 0) == 1\n"), BOOL),
    "bool under not !=": (_check("    assert not candidate(1, 0) != 1\n"), BOOL),
    "bool under == and ==": (_check("    assert candidate(1, 0) == 1 and candidate(0, 0) == 0\n"), BOOL),
    "bool under == in a generator": (_check("    assert all(candidate(a, b) == a + b for a, b in [(1, 0), (0, 0)])\n"), BOOL),
    "repeated map key on the reply pipe": (_check("    assert candidate(1, 2) == {1: 3}\n"),
                                           "    import os\n    os.write(4, b'16\\no m2 i1 i5 i1 i3')\n    return 0\n"),
    "repeated set element on the reply pipe": (_check("    assert candidate(1, 2) == {3}\n"),
                                               "    import os\n    os.write(4, b'10\\no e2 i3 i3')\n    return 0\n"),
    # Did not work (representatives): the engine reads `c` only from the tests' channel, and a
    # reply written ahead is the answer to the next call, still a wrong value.
    "a c l2 comparison on the reply pipe": (ADD["python"], "    import os\n    os.write(4, b'10\\nc l2 i1 i1')\n    return a - b\n"),
    "a reply written ahead of its call": (ADD["python"], "    import os\n    os.write(4, b'4\\no i3')\n    return a - b\n"),
}


@needs_bwrap
def test_python_attacks_on_the_proxy_are_contained():
    rows = {name: _through_the_stage(task, completion) for name, (task, completion) in PYTHON.items()}
    assert all(_contained(row) for row in rows.values()), {k: v for k, v in rows.items() if not _contained(v)}
    # The same tests pass a right answer: the engine's comparisons take the right ints.
    honest = _check("    assert 3 == candidate(1, 2) == 3\n    assert not candidate(1, 2) != 3\n"
                    "    assert candidate(1, 2) == 3 and candidate(2, 2) == 4\n"
                    "    assert all(candidate(a, b) == a + b for a, b in [(1, 2), (3, 4)])\n"
                    "    assert candidate(1, 2) != 4 != 5\n"
                    "    for got, want in zip(map(lambda ab: candidate(*ab), [(1, 2), (-4, 4)]), [3, 0]):\n"
                    "        assert got == want\n")
    row = _through_the_stage(honest, "    return a + b\n")
    assert row["status"] == "passed" and row["pass_at_1"] == 1.0, row


@needs_bwrap
def test_javascript_bigint_does_not_pass_for_a_number():
    why = toolchain_missing("javascript")
    if why:
        pytest.skip(why)
    task = ADD["javascript"]
    loose = {**task, "tests": "const assert = require('node:assert');\nif (addNumbers(1, 2) !== 3) throw new Error('1 + 2');\n"
                              "assert.equal(addNumbers(10, 5), 15);\n"}
    for tests in (task, loose):
        row = _through_the_stage(tests, "\n  return BigInt(a + b);\n}\n", n_inputs=4)
        assert _contained(row), row
    assert _through_the_stage(loose, "\n  return a + b;\n}\n")["status"] == "passed"


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_lone_surrogate_in_the_completion_is_rejected(language):
    task = ADD[language]
    body = "    return a + b  # \ud800\n" if language == "python" else "\n  return a + b; // \ud800\n}\n"
    with pytest.raises(completion_function.Rejected, match="surrogate"):
        generation.code_from_completion(task, body)
