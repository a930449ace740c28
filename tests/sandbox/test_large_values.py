"""Large answers cross whole, and what a row makes the engine parse is bounded (through the stage's own path).

A correct function whose answer is a 3 MiB string was refused (replies were capped at 1 MiB, a
tests' equality message at 2 MiB): an honest control that failed. Now a reply may be 16 MiB, and
the engine's cost stays bounded by the number of values in one message (plain.MAX_VALUES) and by
a budget per row over all its messages (plain.ROW_BYTES, plain.ROW_PARSE_SECONDS): a candidate
that answers every call with megabytes is refused once the budget is spent, a row with a reason.
"""
from __future__ import annotations

import tracemalloc

import pytest

from engine.roundtrip import difftest
from engine.roundtrip.tasks import load_tasks
from engine.sandbox import plain, process
from engine.sandbox.limits import SandboxLimits
from tests.support.stage_rows import completion_row

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
pytestmark = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
BASE = {t["programming_language"]: t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add")}
HALF = 3 << 19  # 'ab' * HALF is 3 MiB
BIG = {
    "python": {**BASE["python"], "entry_point": "big", "signature": "def big(n: int) -> str:",
               "code": "def big(n: int) -> str:\n    return 'ab' * n\n",
               "tests": f"def check(candidate):\n    assert candidate({HALF}) == 'ab' * {HALF}\n    assert candidate(2) == 'abab'\n"},
    "javascript": {**BASE["javascript"], "entry_point": "big", "signature": "function big(n)",
                   "code": "function big(n) {\n  return 'ab'.repeat(n);\n}\n",
                   "tests": f"const assert = require('node:assert');\nassert.strictEqual(big({HALF}), 'ab'.repeat({HALF}));\n"
                            "assert.strictEqual(big(2), 'abab');\n"},
}
HONEST = {"python": "    return 'ab' * n\n", "javascript": "\n  return 'ab'.repeat(n);\n}\n"}
WRONG = {"python": "    return 'ab' * n + ('x' if n > 2 else '')\n",
         "javascript": "\n  return 'ab'.repeat(n) + (n > 2 ? 'x' : '');\n}\n"}


def _row(task: dict, completion: str) -> dict:
    return completion_row(task, completion, LIMITS, call_seconds=5.0)


@pytest.mark.parametrize("language", sorted(BIG))
def test_a_3_mib_answer_passes_on_both_verdicts_and_a_wrong_one_fails(language):
    row = _row(BIG[language], HONEST[language])
    assert (row["status"], row["tests_verdict"], row["value_verdict"], row["pass_at_1"]) == (
        "passed", "passed", "passed", 1.0), row
    row = _row(BIG[language], WRONG[language])
    assert row["pass_at_1"] == 0.0 and row["tests_verdict"] == "failed" and row["value_verdict"] == "failed", row


def test_a_row_past_its_parse_budget_is_a_row_with_the_reason(monkeypatch):
    """Five calls answered with 3 MiB each against a budget of 8 MiB: refused at the third."""
    monkeypatch.setattr(plain, "ROW_BYTES", 8 << 20)
    task = {**BIG["python"], "tests": "def check(candidate):\n    got = [candidate(n) for n in range(5)]\n"
                                      "    assert got == ['ab' * n for n in range(5)]\n"}
    row = _row(task, f"    return 'ab' * {HALF}\n")
    assert row["status"] == "failed" and row["pass_at_1"] == 0.0, row
    assert "parse budget" in row["reason"], row


def test_a_message_of_many_values_is_refused_before_it_costs_the_engine():
    many = b"l%d " % (plain.MAX_VALUES + 1) + b" ".join([b"i0"] * (plain.MAX_VALUES + 1))
    with pytest.raises(plain.PlainError, match="more than"):
        plain.reply(b"o " + many)
    assert plain.reply(b"o s3:abc") == ("o", ("s", "abc"))


def test_the_budget_charges_what_a_message_costs_parsed():
    """`l100000 i0 i0 ...` is 300 kB of text and 8 MB parsed: the budget counts the parsed values."""
    many = b"o l100000 " + b" ".join([b"i0"] * 100000)
    budget = plain.Budget()
    budget.reply(many)
    assert budget.bytes_left == plain.ROW_BYTES - 100001 * plain.PARSED_VALUE_BYTES
    budget.bytes_left = 100001 * plain.PARSED_VALUE_BYTES - 1
    budget.reply(many)
    with pytest.raises(plain.PlainError, match="parse budget"):
        budget.reply(many)


def test_differential_testing_drops_each_reply_once_compared():
    """Five answers of 50,000 integers each: the engine held every reply of both sides parsed
    until the end of the row (about 45 MB); now one at a time, the reference's as text."""
    task = {**BASE["python"], "signature": "def f(n: int) -> list:", "entry_point": "f",
            "code": "def f(n: int) -> list:\n    return list(range(50000))\n"}
    inputs = difftest.task_inputs(task, 6, seed=0)
    difftest.outcome_matches(task, task["code"], inputs[:1], LIMITS, call_seconds=10.0)  # the imports, out of the peak
    inputs = inputs[1:]
    tracemalloc.start()
    try:
        agreed, result = difftest.outcome_matches(task, task["code"], inputs, LIMITS, call_seconds=10.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert agreed == [True] * 5, (agreed, result)
    one_reply = 50001 * 90  # a ("i", n) tuple, its int and its list slot
    # At the comparison: the candidate's reply and the reference's parsed again, and their texts;
    # holding every reply of both sides parsed is ten replies.
    assert peak < 5 * one_reply, peak
