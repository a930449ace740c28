"""Inputs that crashed the round-trip stage or its relay, written as model completions and run
through the stage's own path; each must become a row with a reason (never an exception, never a
relay thread that ends silently while the tests wait for their time-out).

- a Java completion with a surrogate escape (`"\\uD83D\\uDE00"`, an honest method too): the escape
  translation made a lone UTF-16 half that no UTF-8 file holds, and extraction raised
  UnicodeEncodeError, which the stage did not catch;
- a reply with a byte that is not ASCII in a token (`o l\\xff`): the reply parser raised
  UnicodeEncodeError instead of its own parse error, the relay's thread died and the tests hung
  until their wall-clock limit.
"""
from __future__ import annotations

import pytest

from engine.roundtrip import difftest, generation, orchestrate
from engine.roundtrip.tasks import load_tasks
from engine.sandbox import plain, process
from engine.sandbox.languages import toolchain_missing
from engine.sandbox.limits import SandboxLimits

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
needs_bwrap = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
ADD = {t["programming_language"]: t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add")}


def _through_the_stage(task: dict, completion: str, n_inputs: int = 0) -> dict:
    params = type("P", (), {"sandbox": LIMITS, "call_seconds": 1.0, "verdict": "values"})()
    inputs = difftest.task_inputs(task, n_inputs, seed=0) if n_inputs else None
    return orchestrate.execute_row(task, generation.code_from_completion(task, completion), inputs, params)


@pytest.mark.parametrize("token", [b"o l\xff", b"o m\xd9\xa3 i1", b"o i\xff", b"o d\xc3\xa9", b"o \xff", b"x s1:\xff"])
def test_the_reply_parser_raises_only_its_own_error(token):
    with pytest.raises(plain.PlainError):
        plain.reply(token)


@pytest.mark.parametrize("literal", ['"\\uD83D\\uDE00"', '"\\uD800"', '"\\uDFFF" + "\\\\uD800"'])
def test_a_java_surrogate_escape_is_extracted(literal):
    code = generation.code_from_completion(ADD["java"], f"\n        String s = {literal};\n        return a + b;\n    }}\n}}\n")
    code.encode("utf-8")
    assert literal in code


@needs_bwrap
def test_java_surrogate_escapes_run_as_javac_reads_them():
    if toolchain_missing("java"):
        pytest.skip(toolchain_missing("java"))
    honest = "\n        String s = \"\\uD83D\\uDE00\";\n        return a + b + s.length() - 2;\n    }\n}\n"
    row = _through_the_stage(ADD["java"], honest)
    assert row["status"] == "passed", row
    wrong = "\n        String s = \"\\uD800\";\n        return a + b + s.length();\n    }\n}\n"
    row = _through_the_stage(ADD["java"], wrong)
    assert row["status"] == "failed" and row["pass_at_1"] == 0.0, row


@needs_bwrap
def test_a_non_ascii_reply_is_a_refused_reply_not_a_hang():
    task = {**ADD["python"], "tests": "def check(candidate):\n    assert candidate(1, 2) == 3\n"}
    row = _through_the_stage(task, "    import os\n    os.write(4, b'4\\no l\\xff')\n    return 0\n")
    assert row["status"] == "failed" and "not ASCII" in row["reason"], row
