"""Where a Python completion's function ends, and NaN under the tests' own equality, written as
model completions and run through the stage's own path.

- The body ends where Python's tokenizer starts a logical line at column 0 with code
  (engine.roundtrip.completion_function.python_body): a column-0 comment inside the body, or a
  bracket, triple-quoted string or backslash continuation reaching column 0, is part of the
  function, as it is when Python runs the whole completion. Cutting at the comment would drop
  what follows it (a `finally: return 0` that makes the function wrong); cutting inside a
  string would reject an honest function. Nothing inside a string is changed: trailing spaces
  stripped from a triple-quoted line would turn a wrong answer into the expected one.
- The tests' equality follows the tests' operator (engine.sandbox.compare.equal): Python's `==`
  takes NaN as equal to nothing (so an honest `r != r` check holds), node's assertions take NaN
  as equal to NaN; a wrong 0.0 for NaN fails both.
"""
from __future__ import annotations

import math

import pytest

from engine.roundtrip import generation
from engine.roundtrip.tasks import load_tasks
from engine.sandbox import compare, plain, process, relay
from engine.sandbox.limits import SandboxLimits
from tests.support.stage_rows import completion_row

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
needs_bwrap = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
ADD = {t["programming_language"]: t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add")}
PY, JS = ADD["python"], ADD["javascript"]

BANNER = {**PY, "task_id": "body/banner", "entry_point": "banner", "signature": "def banner() -> str:",
          "code": "def banner() -> str:\n    return 'ab  \\n    cd'\n",
          "tests": "def check(candidate):\n    assert candidate() == 'ab  \\n    cd'\n"}
BANNER_TIGHT = {**BANNER, "task_id": "body/banner2", "code": "def banner() -> str:\n    return 'ab\\n    cd'\n",
                "tests": "def check(candidate):\n    assert candidate() == 'ab\\n    cd'\n"}
PY_DIV = {**PY, "task_id": "nan/pdiv", "entry_point": "safe_div", "signature": "def safe_div(a: float, b: float) -> float:",
          "code": "def safe_div(a: float, b: float) -> float:\n    return float('nan') if b == 0 else a / b\n",
          "tests": ("def check(candidate):\n    assert candidate(1.0, 2.0) == 0.5\n    r = candidate(1.0, 0.0)\n"
                    "    assert r != r\n    rs = [r]\n    assert rs == rs\n")}
JS_DIV = {**JS, "task_id": "nan/jdiv", "entry_point": "safeDiv", "signature": "function safeDiv(a, b)",
          "code": "function safeDiv(a, b) {\n  return b === 0 ? NaN : a / b;\n}\n",
          "tests": ("const assert = require('node:assert');\nassert.strictEqual(safeDiv(1, 2), 0.5);\n"
                    "assert.strictEqual(safeDiv(1, 0), NaN);\nassert.deepStrictEqual([safeDiv(1, 0)], [NaN]);\n"
                    "assert.equal(safeDiv(1, 0), NaN);\nconst r = safeDiv(1, 0);\nassert.ok(r !== r);\n")}

# (task, completion, passes): attacks (a wrong program) expect a failure, controls (honest) a pass.
CASES = {
    "L1 col-0 comment before a `finally: return 0` (wrong)":
        (PY, "    try:\n        return a + b\n    except Exception:\n        raise\n# always clean up\n    finally:\n        return 0\n", False),
    "L2 col-0 comment inside the body (honest)":
        (PY, "    total = a\n# add the second operand\n    total += b\n    return total\n", True),
    "L3 bracket continued at column 0 (honest)": (PY, "    parts = [a,\nb]\n    return sum(parts)\n", True),
    "L4 triple-quoted string with a column-0 line (honest)": (PY, "    doc = '''sum of\nboth'''\n    return a + b\n", True),
    "L5 backslash continuation at column 0 (honest)": (PY, "    total = a + \\\nb\n    return total\n", True),
    "L6 trailing spaces inside a triple-quoted string (honest)": (BANNER, "    return '''ab  \n    cd'''\n", True),
    "L7 stray trailing spaces inside a triple-quoted string (wrong)": (BANNER_TIGHT, "    return '''ab  \n    cd'''\n", False),
    "L8 prose and a fenced example after the function (honest)":
        (PY, "    return a + b\n\n# Example\nprint(add_numbers(1, 2))\n```\nHere's how it works: '''\n", True),
    "X1 Python NaN checked with r != r (honest)": (PY_DIV, "    return float('nan') if b == 0 else a / b\n", True),
    "X1 Python 0.0 for NaN (wrong)": (PY_DIV, "    return 0.0 if b == 0 else a / b\n", False),
    "X1 JavaScript NaN under node's assertions and !== (honest)": (JS_DIV, "\n  return b === 0 ? NaN : a / b;\n}\n", True),
    "X1 JavaScript 0 for NaN (wrong)": (JS_DIV, "\n  return b === 0 ? 0 : a / b;\n}\n", False),
}


@needs_bwrap
@pytest.mark.parametrize("name", sorted(CASES))
def test_completion_rows(name):
    task, completion, passes = CASES[name]
    row = completion_row(task, completion, LIMITS)
    signals = (row["status"], row["tests_verdict"], row["value_verdict"], row["pass_at_1"])
    if passes:
        assert signals == ("passed", "passed", "passed", 1.0), row
    else:
        assert row["pass_at_1"] == 0.0 and row["value_verdict"] == "failed", row


def test_the_body_ends_at_the_first_column_zero_code_the_tokenizer_sees():
    def body(completion):
        return generation.function_from_completion("def f(a):", completion)[len("def f(a):\n"):]

    # Comments at column 0 go with the code that ends the body.
    assert body("    x = a\n# c\n    return x\n\n# Tests\nprint(f(1))\n") == "    x = a\n# c\n    return x\n"
    assert body("    s = '''a  \n  b'''  \n    return s\nf(1)\n") == "    s = '''a  \n  b'''  \n    return s\n"
    assert body("    return (a +\n1)\nprint(1)\n") == "    return (a +\n1)\n"
    # A form feed resets the column, as in the tokenizer; CR and CRLF become `\n`, as Python reads them.
    assert body("    x = a\r\n\x0c\r\n    return x\r\n\x0cprint(1)\n") == "    x = a\n\x0c\n    return x\n"
    assert body("return a\n") == "    pass\n" and body("") == "    pass\n"
    # An unterminated string opening a column-0 line (prose) ends the body; inside the body it is rejected later.
    assert body("    return a\n\"\"\"Example\n") == "    return a\n"
    assert body("    return '''a\n") == "    return '''a\n"


def test_nan_follows_the_tests_operator():
    def message(prefix, actual, expected):
        return prefix + b"l2 " + plain.write(compare.from_python(actual)) + b" " + plain.write(compare.from_python(expected))

    nan = math.nan
    assert relay.compared(message(b"c ", nan, nan)) == b"o t"  # node's assertions
    assert relay.compared(message(b"c py ", nan, nan)) == b"o f"  # Python's `==`
    assert relay.compared(message(b"c py ", 3, 3.0)) == b"o t" and relay.compared(message(b"c py ", 0.0, -0.0)) == b"o t"
    assert relay.compared(message(b"c py ", True, 1)) == b"o f"  # the engine keeps bool and int apart
    for value in ([nan], (1, nan), {nan}, {nan: 1}, {1: nan}, [{"a": [nan]}]):
        v = compare.from_python(value)
        assert compare.equal(v, v) and not compare.equal(v, v, nan=False), value
    assert compare.equal(compare.from_python({1.0, 2}), compare.from_python({1, 2.0}), nan=False)
