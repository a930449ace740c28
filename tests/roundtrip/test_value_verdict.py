"""The value verdict: forgeries of the tests' own semantics, written as model completions and run
through the stage's own path, and the honest controls that must still pass.

Each attack below passed the tests' own verdict on the main of 2026-12-03 (the tests concluded
from the candidate's values in their language's rules): a truthy string where a bool is asserted,
membership, a helper's comparison, `operator.eq`, a mixed chain, `unittest` assertions, an
`if ...: raise`; JavaScript's bare `assert()`, `assert.ok(f() == 3)`; NaN past an
`abs(r - e) > eps` guard in JavaScript, C++, Go and Java; a tiny float within an absolute 1e-9
of a tiny answer. The value verdict (the candidate answers the tests' calls as the reference
does, compared by the engine's typed rules) fails each of them.
"""
from __future__ import annotations

import math
import sys

import pytest

from engine.roundtrip import values
from engine.roundtrip.tasks import load_tasks
from engine.sandbox import compare, process
from engine.sandbox.limits import SandboxLimits
from tests.support.stage_rows import completion_row

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
needs_bwrap = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
POLY = {t["task_id"]: t for t in load_tasks("polyglot").to_pylist()}
ADD = {t["programming_language"]: t for t in POLY.values() if t["task_id"].endswith("/add")}


def _row(task: dict, completion: str, verdict: str = "values") -> dict:
    return completion_row(task, completion, LIMITS, verdict=verdict)


PY_BOOL = {**ADD["python"], "signature": "def is_even(n: int) -> bool:", "entry_point": "is_even",
           "code": "def is_even(n: int) -> bool:\n    return n % 2 == 0\n"}
PY_INT = {**ADD["python"]}


def _py(base: dict, tests: str) -> dict:
    return {**base, "tests": "def check(candidate):\n" + tests}


PYTHON = {
    "truthy string for a bool": (_py(PY_BOOL, "    assert candidate(2)\n    assert not candidate(3)\n"),
                                 "    return 'yes' if n % 2 == 0 else ''\n"),
    "membership": (_py(PY_INT, "    assert candidate(1, 2) in [3, 4]\n"), "    return 4\n"),
    # True for the integer 1: Python's own `True == 1` holds, the engine's typed rules keep bool and int apart
    "helper's comparison": (_py(PY_INT, "    def same(x, y):\n        return x == y\n    assert same(candidate(1, 0), 1)\n"),
                            "    return True\n"),
    "operator.eq": (_py(PY_INT, "    import operator\n    assert operator.eq(candidate(1, 0), 1)\n"), "    return True\n"),
    "mixed chain": (_py(PY_INT, "    assert 0 < candidate(1, 0) == 1\n"), "    return True\n"),
    "unittest assertion": (_py(PY_INT, "    import unittest\n    unittest.TestCase().assertEqual(candidate(1, 0), 1)\n"),
                           "    return True\n"),
    "if ...: raise": (_py(PY_INT, "    if candidate(1, 0) != 1:\n        raise AssertionError\n"), "    return True\n"),
    # a float under the tests' absolute tolerance, of another size than the reference's tiny answer
    "tiny float": ({**PY_INT, "code": "def add_numbers(a: int, b: int) -> float:\n    return (a + b) * 1e-13\n",
                    "tests": "def check(candidate):\n    assert abs(candidate(1, 0) - 1e-13) < 1e-9\n"
                             "    assert abs(candidate(2, 3) - 5e-13) < 1e-9\n"}, "    return (a + b) * 2.9e-13\n"),
    "tiny float, 49% off": ({**PY_INT, "code": "def add_numbers(a: int, b: int) -> float:\n    return (a + b) * 1e-13\n",
                             "tests": "def check(candidate):\n    assert abs(candidate(1, 0) - 1e-13) < 1e-9\n"
                                      "    assert abs(candidate(2, 3) - 5e-13) < 1e-9\n"}, "    return (a + b) * 1.49e-13\n"),
    "tiny float, wrong sign": ({**PY_INT, "code": "def add_numbers(a: int, b: int) -> float:\n    return (a + b) * 1e-13\n",
                                "tests": "def check(candidate):\n    assert abs(candidate(1, 0) - 1e-13) < 1e-9\n"},
                               "    return -(a + b) * 1e-13\n"),
}


@needs_bwrap
@pytest.mark.parametrize("attack", sorted(PYTHON))
def test_python_forgeries_of_the_tests_semantics_fail_the_value_verdict(attack):
    task, completion = PYTHON[attack]
    row = _row(task, completion)
    assert row["tests_verdict"] == "passed", row  # the tests' own verdict is forged ...
    assert row["value_verdict"] == "failed" and row["status"] == "failed" and row["pass_at_1"] == 0.0, row
    assert _row(task, completion, verdict="tests")["pass_at_1"] == 1.0  # ... and kept when a study asks for it


@needs_bwrap
def test_python_honest_controls_pass_both_signals():
    task = _py(PY_BOOL, "    assert candidate(2)\n    assert not candidate(3)\n")
    row = _row(task, "    return n % 2 == 0\n")
    assert (row["status"], row["tests_verdict"], row["value_verdict"], row["pass_at_1"]) == ("passed", "passed", "passed", 1.0)
    large = {**PY_INT, "signature": "def f(n: int) -> str:", "entry_point": "f", "code": "def f(n: int) -> str:\n    return 'x' * n\n",
             "tests": "def check(candidate):\n    assert candidate(600000) == 'x' * 600000\n"}
    row = _row(large, "    return ''.join('x' for _ in range(n))\n")
    assert row["value_verdict"] == "passed", row
    raising = {**PY_INT, "signature": "def f(n: int) -> int:", "entry_point": "f", "code": "def f(n: int) -> int:\n    return 10 // n\n",
               "tests": "def check(candidate):\n    try:\n        candidate(0)\n    except ZeroDivisionError:\n        pass\n"
                        "    else:\n        raise AssertionError\n    assert candidate(5) == 2\n"}
    assert _row(raising, "    if n == 0:\n        raise ZeroDivisionError('no')\n    return 10 // n\n")["status"] == "passed"
    row = _row(raising, "    if n == 0:\n        raise ArithmeticError('no')\n    return 10 // n\n")
    assert row["value_verdict"] == "failed", row  # another exception type is another answer


FLOAT_TASKS = {
    "javascript": ("function half(a) ", "half", "function half(a) {\n  return a / 2;\n}\n",
                   "if (Math.abs(half(3) - 1.5) > 1e-6) throw new Error('half');\n", "\n  return NaN;\n}\n", "\n  return a * 0.5;\n}\n"),
    "cpp": ("double half(double a)", "half", "double half(double a) {\n    return a / 2;\n}\n",
            "#include <cmath>\n#include <cstdlib>\nint main() {\n    if (std::fabs(half(3) - 1.5) > 1e-6) std::abort();\n    return 0;\n}\n",
            "\n    return 0.0 / 0.0;\n}\n", "\n    return a * 0.5;\n}\n"),
    "go": ("func half(a float64) float64", "half", "func half(a float64) float64 {\n\treturn a / 2\n}\n",
           "func main() {\n\td := half(3) - 1.5\n\tif d > 1e-6 || d < -1e-6 {\n\t\tpanic(\"half\")\n\t}\n}\n",
           "\n\tz := 0.0\n\treturn z / z\n}\n", "\n\treturn a * 0.5\n}\n"),
    "java": ("public static double half(double a)", "Main",
             "public class Solution {\n    public static double half(double a) {\n        return a / 2;\n    }\n}\n",
             "public class Main {\n    public static void main(String[] args) {\n"
             "        if (Math.abs(Solution.half(3) - 1.5) > 1e-6) throw new AssertionError();\n    }\n}\n",
             "\n        return Double.NaN;\n    }\n}\n", "\n        return a * 0.5;\n    }\n}\n"),
}


@needs_bwrap
@pytest.mark.parametrize("language", sorted(FLOAT_TASKS))
def test_nan_past_an_epsilon_guard_fails_the_value_verdict(language):
    signature, entry, code, tests, nan, honest = FLOAT_TASKS[language]
    task = {**ADD[language], "signature": signature, "entry_point": entry, "code": code, "tests": tests, "context": ""}
    row = _row(task, nan)
    assert row["tests_verdict"] == "passed" and row["value_verdict"] == "failed" and row["pass_at_1"] == 0.0, row
    row = _row(task, honest)
    assert row["status"] == "passed" and row["value_verdict"] == "passed", row


@needs_bwrap
def test_javascript_loose_assertions_fail_the_value_verdict():
    task = {**ADD["javascript"], "tests": "const assert = require('node:assert');\nassert(addNumbers(1, 2));\n"
                                          "assert.ok(addNumbers(1, 2) == 3);\n"}
    row = _row(task, "\n  return '3';\n}\n")
    assert row["tests_verdict"] == "passed" and row["value_verdict"] == "failed", row
    assert _row(task, "\n  return a + b;\n}\n")["status"] == "passed"


@needs_bwrap
def test_javascript_denormal_for_a_tiny_answer_fails_the_value_verdict():
    task = {**ADD["javascript"], "code": "function addNumbers(a, b) {\n  return (a + b) * 1e-14;\n}\n",
            "tests": "const assert = require('node:assert');\nassert.ok(Math.abs(addNumbers(1, 2) - 3e-14) < 1e-9);\n"}
    row = _row(task, "\n  return 5e-324;\n}\n")
    assert row["tests_verdict"] == "passed" and row["value_verdict"] == "failed" and row["pass_at_1"] == 0.0, row
    assert _row(task, "\n  return (b + a) * 1e-14;\n}\n")["status"] == "passed"


@needs_bwrap
def test_median_as_a_float_where_the_reference_returns_an_integer_passes_the_tests_only():
    task = [t for t in load_tasks("humaneval").to_pylist() if t["task_id"].endswith("/47")][0]
    completion = "    s = sorted(l)\n    n = len(s)\n    return (s[n // 2] + s[(n - 1) // 2]) / 2\n"
    row = _row(task, completion)  # 3.0 where the reference returns 3: the same number in Python's `==`,
    # another type in the value verdict (types distinct)
    assert (row["status"], row["tests_verdict"], row["value_verdict"], row["pass_at_1"]) == ("failed", "passed", "failed", 0.0)
    assert _row(task, completion, verdict="tests")["pass_at_1"] == 1.0
    wrong = _row(task, "    s = sorted(l)\n    return float(s[len(s) // 2])\n")  # 5.0 for 8.0 on an even length
    assert wrong["status"] == "failed" and wrong["tests_verdict"] == "failed", wrong


def test_float_rule_is_relative_to_the_reference_with_a_floor_that_keeps_sign_and_zero():
    close = compare.close
    assert close(0.3, 0.1 + 0.2) and close(1e300, 1e300 * (1 + 1e-12)) and close(1e-13, 1e-13 * (1 + 1e-12))
    assert not close(1e-13, 1.49e-13) and not close(1e-13, 1e-13 + 1e-16)  # the tolerance stays relative when tiny
    assert not close(1e-200, 1.000001e-200) and not close(1e-310, 1.49e-310)  # at every magnitude a task computes
    # Relative down to the smallest normal double: a 9e-7 error of a reference at 3e-295 (or -3e-296) is wrong.
    assert not close(3e-295, 3.0000027e-295) and not close(-3e-296, -3.0000027e-296)
    assert not close(sys.float_info.min, sys.float_info.min * (1 + 1e-8)) and close(3e-295, 3e-295 * (1 + 1e-12))
    assert close(0.0, -0.0) and not close(0.0, 1e-13) and not close(0.0, 5e-324)  # a zero only for a zero
    assert not close(1e-10, 2e-10)  # a tiny float for a tiny answer of another size
    assert not close(3e-14, 5e-324) and not close(1e-13, 2.9e-13) and not close(1e-13, 1.6e-13)  # under the floor too
    assert not close(1e-13, -1e-13) and not close(1e-13, 0.0)  # neither a wrong sign nor a zero, under the floor
    assert not close(1.0, math.nan) and not close(math.nan, 1.0) and close(math.nan, math.nan)
    assert close(math.inf, math.inf) and not close(math.inf, 1e308)


def test_set_elements_and_map_keys_compare_numbers_by_exact_value():
    # The tests' `==`: Python's `{1.0} == {1}` and `{-0.0} == {0.0}`; the answers' rule keeps int
    # and float apart there too, and a zero's sign still does not count.
    def equal(a, b):
        return compare.equal(compare.from_python(a), compare.from_python(b))

    def same(a, b):
        return compare.same(compare.from_python(a), compare.from_python(b))
    assert equal({1}, {1.0}) and equal({0.0}, {-0.0}) and equal({(1.0, 2)}, {(1, 2)}) and equal({frozenset({3.0})}, {frozenset({3})})
    assert equal({1.0: "a"}, {1: "a"}) and equal({(0.0, 1): [2]}, {(-0.0, 1.0): [2.0]})
    for rule in (equal, same):  # still exact, still typed
        assert not rule({2}, {2.0000001}) and not rule({0.3}, {0.1 + 0.2}) and not rule({1}, {True})
        assert not rule({1: "a"}, {1.5: "a"}) and not rule({1, 2}, {1.0}) and not rule({-3.0}, {3.0})
    assert not same({1}, {1.0}) and not same({1.0: "a"}, {1: "a"}) and same({0.0}, {-0.0}) and same({(-0.0, 2.5)}, {(0.0, 2.5)})


@pytest.mark.parametrize("scale", [1.0, 1e-13, 1e-200, 1e-295, 1e250])
def test_float_rule_keeps_honest_summation_order_differences(scale):
    # The same sum in another order, or exactly rounded: rounding differences, at any magnitude.
    terms = [scale * (0.1 + 0.37 * k % 1.3) * (-1) ** (k // 3) for k in range(1, 200)]
    reference = sum(terms)
    for other in (sum(reversed(terms)), math.fsum(terms), sum(sorted(terms)), sum(terms[1::2]) + sum(terms[::2])):
        assert compare.close(reference, other), (reference, other)
    assert not compare.close(reference, reference * 1.49) and not compare.close(reference, -reference)


@needs_bwrap
def test_tests_without_calls_are_no_value_verdict():
    task = _py(PY_INT, "    assert 1 + 2 == 3\n")
    assert values.verdict(task, task["code"], LIMITS, 1.0).status == "error"


def test_only_a_successful_recording_is_kept(monkeypatch):
    # A reference that failed once (a timeout on a loaded host) must not fail every later row of its task.
    outcomes = [values.Recorded((), (), "the reference solution does not pass the task's tests: timeout"),
                values.Recorded((b"l2 i1 i2",), (b"o i3",), "")]
    made = []

    def record(task, limits):
        made.append(task["task_id"])
        return outcomes[len(made) - 1]

    monkeypatch.setattr(values, "record", record)
    task = {**PY_INT, "task_id": "cache-probe", "tests": "def check(candidate):\n    assert candidate(1, 2) == 3  # cache probe\n"}
    assert values.recorded(task, LIMITS).error and not values.recorded(task, LIMITS).error
    assert values.recorded(task, LIMITS).calls == (b"l2 i1 i2",) and len(made) == 2  # the success is kept


@needs_bwrap
def test_javascript_lone_surrogate_never_equals_the_replacement_character():
    """UTF-8 cannot carry a lone surrogate (Node writes U+FFFD for it), so such a string is refused
    as not plain data: a candidate answering U+FFFD where the reference returns '\\uD83D' cannot pass."""
    task = {**ADD["javascript"], "entry_point": "firstUnit", "signature": "function firstUnit(s)",
            "code": "function firstUnit(s) {\n  return s.charAt(0);\n}\n",
            "tests": "const assert = require('node:assert');\nassert.strictEqual(firstUnit('\\u{1F600}x'), '\\uD83D');\n"
                     "assert.strictEqual(firstUnit('ab'), 'a');\n"}
    row = _row(task, "\n  return s.codePointAt(0) > 0xFFFF ? '\\uFFFD' : s.charAt(0);\n}\n")
    assert row["pass_at_1"] == 0.0 and row["status"] != "passed", row


@needs_bwrap
def test_javascript_null_does_not_pass_for_undefined():
    task = {**ADD["javascript"], "signature": "function find(xs, v)", "entry_point": "find",
            "code": "function find(xs, v) {\n  for (const x of xs) if (x === v) return x;\n  return undefined;\n}\n",
            "tests": "const assert = require('node:assert');\nassert.strictEqual(find([1, 2], 2), 2);\n"
                     "assert.strictEqual(find([1, 2], 5), undefined);\n"}
    row = _row(task, "\n  for (const x of xs) if (x === v) return x;\n  return null;\n}\n")
    assert row["pass_at_1"] == 0.0 and row["value_verdict"] == "failed", row
    row = _row(task, "\n  return xs.find((x) => x === v);\n}\n")
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row
    assert not compare.same(("v",), ("n",)) and compare.same(("v",), ("v",))
