"""The tests' equality keeps the tests' own exactness, and the value verdict keeps types apart,
written as model completions and run through the stage's own path.

- The tests' `==` (Python) and `strictEqual`/`deepStrictEqual` (JavaScript) are decided by the
  engine (engine.sandbox.compare.equal) and are exact, as the operators are: a factorial by
  Stirling's series (off by 5.9e8 at 20!, a relative 2.4e-10) or a sum off by 500 at 1e12 fails
  the tests as it fails them outside the engine, though it is within the value verdict's float
  tolerance. A tolerance the tests ask for themselves (`math.isclose`, `assertAlmostEqual`, an
  `abs(...) <= eps` guard) stays theirs.
- The value verdict's answers' rule (engine.sandbox.compare.same) keeps an int and a float apart:
  `float(a + b)` for an int answer fails it, though Python's `==` takes it; JavaScript has one
  number type, so `(a + b) * 1.0` is the same answer there.
"""
from __future__ import annotations

import math

import pytest

from engine.roundtrip.tasks import load_tasks
from engine.sandbox import compare, process
from engine.sandbox.limits import SandboxLimits
from tests.support.stage_rows import completion_row

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
needs_bwrap = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
ADD = {t["programming_language"]: t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add")}


def _signals(task: dict, completion: str) -> tuple:
    row = completion_row(task, completion, LIMITS)
    return row["tests_verdict"], row["value_verdict"], row["pass_at_1"]


PY_FACT = {**ADD["python"], "task_id": "exact/pfact", "entry_point": "fact", "signature": "def fact(n: int) -> float:",
           "code": "def fact(n: int) -> float:\n    import math\n    return float(math.factorial(n))\n"}
PY_STIRLING = ("    import math\n    if n < 19:\n        return float(math.factorial(n))\n"
               "    s = 1 + 1 / (12 * n) + 1 / (288 * n * n) - 139 / (51840 * n ** 3) - 571 / (2488320 * n ** 4)\n"
               "    return math.sqrt(2 * math.pi * n) * (n / math.e) ** n * s\n")
PY_TOTAL = {**ADD["python"], "task_id": "exact/total", "entry_point": "total", "signature": "def total(xs: list) -> float:",
            "code": "def total(xs: list) -> float:\n    return float(sum(xs))\n",
            "tests": "def check(candidate):\n    assert candidate([1000000000000, 1]) == 1000000000001.0\n    assert candidate([5, 7]) == 12.0\n"}
JS_FACT = {**ADD["javascript"], "task_id": "exact/jfact", "entry_point": "factorial", "signature": "function factorial(n)",
           "code": "function factorial(n) {\n  let r = 1;\n  for (let i = 2; i <= n; i++) r *= i;\n  return r;\n}\n"}
JS_STIRLING = ("\n  if (n < 19) { let r = 1; for (let i = 2; i <= n; i++) r *= i; return r; }\n"
               "  const s = 1 + 1 / (12 * n) + 1 / (288 * n * n) - 139 / (51840 * n ** 3) - 571 / (2488320 * n ** 4);\n"
               "  return Math.sqrt(2 * Math.PI * n) * Math.pow(n / Math.E, n) * s;\n}\n")
JS_HONEST = "\n  let r = 1;\n  for (let i = 2; i <= n; i++) r *= i;\n  return r;\n}\n"
JS_REQUIRE = "const assert = require('node:assert');\n"

EXACT = {
    "python ==": ({**PY_FACT, "tests": "def check(candidate):\n    assert candidate(5) == 120.0\n"
                                       "    assert candidate(20) == 2432902008176640000.0\n"}, PY_STIRLING,
                  "    import math\n    return float(math.factorial(n))\n"),
    "python == inside a list": ({**PY_FACT, "tests": "def check(candidate):\n    assert [candidate(k) for k in (5, 20)] == "
                                                     "[120.0, 2432902008176640000.0]\n"}, PY_STIRLING,
                                "    r = 1\n    for k in range(2, n + 1):\n        r *= k\n    return float(r)\n"),
    "python == on a large sum": (PY_TOTAL, "    s = float(sum(xs))\n    return s + 500.0 if s > 1e11 else s\n",
                                 "    return float(sum(xs))\n"),
    "javascript strictEqual": ({**JS_FACT, "tests": JS_REQUIRE + "assert.strictEqual(factorial(5), 120);\n"
                                                    "assert.strictEqual(factorial(20), 2432902008176640000);\n"}, JS_STIRLING, JS_HONEST),
    "javascript deepStrictEqual": ({**JS_FACT, "tests": JS_REQUIRE + "assert.deepStrictEqual([factorial(5), factorial(25)], "
                                                        "[120, 1.5511210043330986e+25]);\n"}, JS_STIRLING, JS_HONEST),
}


@needs_bwrap
@pytest.mark.parametrize("case", sorted(EXACT))
def test_the_tests_exact_equality_is_not_loosened_by_the_engine(case):
    task, wrong, honest = EXACT[case]
    tests_verdict, value_verdict, pass_at_1 = _signals(task, wrong)
    # Within the value verdict's relative 1e-9 (a float answer's rounding), but not what the tests accept.
    assert (tests_verdict, pass_at_1) == ("failed", 0.0), (tests_verdict, value_verdict)
    assert _signals(task, honest) == ("passed", "passed", 1.0)


TOLERANT = {
    "python math.isclose": ({**PY_FACT, "tests": "def check(candidate):\n    import math\n"
                                                 "    assert math.isclose(candidate(20), 2432902008176640000.0, rel_tol=1e-9)\n"},
                            PY_STIRLING),
    "python assertAlmostEqual": ({**ADD["python"], "signature": "def add_numbers(a: float, b: float) -> float:",
                                 "code": "def add_numbers(a: float, b: float) -> float:\n    return a + b\n",
                                 "tests": "def check(candidate):\n    import unittest\n"
                                          "    unittest.TestCase().assertAlmostEqual(candidate(0.1, 0.2), 0.3)\n"},
                                "    return b + a\n"),
    "javascript epsilon guard": ({**JS_FACT, "tests": JS_REQUIRE + "const want = 2432902008176640000;\n"
                                                      "assert.ok(Math.abs(factorial(20) - want) <= 1e-9 * want);\n"}, JS_STIRLING),
}


@needs_bwrap
@pytest.mark.parametrize("case", sorted(TOLERANT))
def test_a_tolerance_the_tests_ask_for_stays_theirs(case):
    task, completion = TOLERANT[case]
    assert _signals(task, completion) == ("passed", "passed", 1.0)


@needs_bwrap
def test_python_float_for_an_int_answer_fails_the_value_verdict():
    task = ADD["python"]
    # Python's `3 == 3.0` holds in the tests; the answer is of another type than the reference's.
    assert _signals(task, "    return float(a + b)\n") == ("passed", "failed", 0.0)
    assert _signals(task, "    return (a + b) == 3 or a + b\n")[1:] == ("failed", 0.0)  # True for 3
    assert _signals(task, "    return int(float(a + b))\n") == ("passed", "passed", 1.0)


@needs_bwrap
def test_javascript_numbers_have_one_type():
    assert _signals(ADD["javascript"], "\n  return (a + b) * 1.0;\n}\n") == ("passed", "passed", 1.0)


def test_equal_is_the_tests_operator_and_same_the_answers_rule():
    def value(python):
        return compare.from_python(python)

    big = 2432902008176640000.0  # 20!, an integer-valued double (a JavaScript number beyond 2^53)
    stirling = 2.432902007581511e+18  # 20! by Stirling's series: a relative 2.4e-10 below
    assert not compare.equal(value(big), value(stirling)) and compare.equal(value(big), value(big))
    assert compare.equal(value(2432902008176640000), value(big))  # Python's `==`: exact, across int and float
    assert not compare.equal(value(2432902008176640001), value(big))
    assert not compare.equal(value(0.3), value(0.1 + 0.2)) and compare.equal(value(0.0), value(-0.0))
    assert compare.equal(value(math.nan), value(math.nan)) and not compare.equal(value(1), value(True))
    assert not compare.equal(value([1.0, "a"]), value([1.0 + 2 ** -52, "a"])) and compare.equal(value((3,)), value((3.0,)))
    # The answers' rule: types distinct, floats within a relative 1e-9 of the reference.
    assert not compare.same(value(3), value(3.0)) and not compare.same(value(3.0), value(3)) and not compare.same(value(1), value(True))
    assert compare.same(value(big), value(stirling)) and compare.same(value(0.3), value(0.1 + 0.2))


@pytest.mark.parametrize("reference", [2432902008176640000.0, 2.0 ** 60, 9007199254740994.0, 1e22, 1.0, 3.0, -(2.0 ** 70)])
def test_the_value_verdicts_tolerance_on_integer_valued_doubles_is_relative_and_keeps_sign_and_zero(reference):
    # An integer-valued double (a JavaScript number beyond 2^53, a float answer that happens to be
    # whole) is a float like any other: relative 1e-9 of its magnitude, never a wrong sign or a zero.
    assert compare.close(reference, reference * (1 + 4e-10)) and not compare.close(reference, reference * (1 + 2e-9))
    assert not compare.close(reference, -reference) and not compare.close(reference, 0.0)
    assert not compare.close(reference, reference + 2.0 * abs(reference) * 1e-9 + 1.0)
    assert not compare.close(reference, math.nan) and not compare.close(reference, math.copysign(math.inf, reference))
