"""Exceptions and arguments crossing the split run, as model completions through the stage's own
path (tests.support.stage_rows), with the honest controls that must pass.

An exception crosses as its own type name, its built-in bases and its message
(engine.sandbox.plain.exception_text): a JavaScript candidate's local `class RangeError`, a
thrown plain object or a TypeError with a renamed `constructor` is no RangeError in the tests
nor in the value verdict, while a subclass of the expected type passes both, as in one process.
An argument the wire cannot carry (`b'12'`, a Uint8Array) makes the run an error: the proxy never
raises its own error inside the tests, where `except Exception` / `assert.throws(fn)` would take it.
"""
from __future__ import annotations

import pytest

from engine.roundtrip.tasks import load_tasks
from engine.sandbox import compare, plain, process
from engine.sandbox.limits import SandboxLimits
from tests.support.stage_rows import completion_row

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
ADD = {t["programming_language"]: t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add")}
PY_CHECK = {**ADD["python"], "task_id": "x/pval", "entry_point": "check_pos", "signature": "def check_pos(n: int) -> int:",
            "code": "def check_pos(n: int) -> int:\n    if n < 0:\n        raise ValueError('negative: %d' % n)\n    return n\n",
            "tests": "def check(candidate):\n    assert candidate(3) == 3\n    try:\n        candidate(-2)\n"
                     "        raise AssertionError('no raise')\n    except ValueError as e:\n        assert 'negative' in str(e)\n"}
PY_DECODE = {**ADD["python"], "task_id": "x/pdec", "entry_point": "decode", "signature": "def decode(b: list) -> str:",
             "code": "def decode(b: list) -> str:\n    return bytes(b).decode('utf-8')\n",
             "tests": "def check(candidate):\n    assert candidate([104, 105]) == 'hi'\n    try:\n        candidate([255])\n"
                      "        raise AssertionError('no raise')\n    except UnicodeDecodeError:\n        pass\n"}
PY_PARSE = {**ADD["python"], "task_id": "x/pexc", "entry_point": "parse_pos", "signature": "def parse_pos(s: str) -> int:",
            "code": "def parse_pos(s: str) -> int:\n    if not isinstance(s, str):\n        raise TypeError('not a string')\n    return int(s)\n",
            "tests": "def check(candidate):\n    assert candidate('12') == 12\n    try:\n        candidate([255])\n"
                     "        raise AssertionError('no raise')\n    except TypeError:\n        pass\n"}
PY_BYTES = {**PY_PARSE, "task_id": "x/pbytes",
            "tests": "def check(candidate):\n    assert candidate('12') == 12\n    try:\n        candidate(b'12')\n"
                     "    except Exception:\n        pass\n    else:\n        raise AssertionError('bytes accepted')\n"}
JS_CHECK = {**ADD["javascript"], "task_id": "x/jexc", "entry_point": "checkPos", "signature": "function checkPos(n)",
            "code": "function checkPos(n) {\n  if (n < 0) throw new RangeError('negative');\n  return n;\n}\n",
            "tests": "const assert = require('node:assert');\nassert.strictEqual(checkPos(3), 3);\n"
                     "assert.throws(() => checkPos(-2), RangeError);\nassert.throws(() => checkPos(-2), /negative/);\n"}
PY_KEY = {**ADD["python"], "task_id": "x/pkey", "entry_point": "f", "signature": "def f(x: int) -> int:",
          "code": "def f(x: int) -> int:\n    if x < 0:\n        raise KeyError(x)\n    return x\n",
          "tests": "def check(candidate):\n    assert candidate(1) == 1\n    try:\n        candidate(-1)\n        assert False\n"
                   "    except LookupError as e:\n        assert str(e) == '-1'\n"}
PY_KEYWORDS = {**PY_KEY, "task_id": "x/pkw",
               "tests": "def check(candidate):\n    assert candidate(1) == 1\n    try:\n        candidate(x=2)\n    except Exception:\n        pass\n"}
JS_STRING = {**ADD["javascript"], "task_id": "x/jstr", "entry_point": "checkPos", "signature": "function checkPos(n)",
             "code": "function checkPos(n) {\n  if (n < 0) throw 'negative';\n  return n;\n}\n",
             "tests": "const assert = require('node:assert');\nassert.strictEqual(checkPos(3), 3);\nassert.throws(() => checkPos(-2));\n"}
JS_BYTES = {**ADD["javascript"], "task_id": "x/jbytes", "entry_point": "parsePos", "signature": "function parsePos(s)",
            "code": "function parsePos(s) {\n  if (typeof s !== 'string') throw new TypeError('not a string');\n  return Number(s);\n}\n",
            "tests": "const assert = require('node:assert');\nassert.strictEqual(parsePos('12'), 12);\n"
                     "assert.throws(() => parsePos(new Uint8Array([49, 50])));\n"}


def _js(body: str) -> str:
    return f"\n  {body}\n  return n;\n}}\n"

CPP_AT = {**ADD["cpp"], "task_id": "x/cat", "entry_point": "at", "signature": "long at(std::vector<long> xs, long i)",
          "context": ADD["cpp"]["context"] + "\n#include <stdexcept>",
          "code": "long at(std::vector<long> xs, long i) {\n    if (i < 0 || i >= (long)xs.size()) throw std::runtime_error(\"index\");\n"
                  "    return xs[i];\n}\n",
          "tests": "int main() {\n    assert(at({1, 2, 3}, 1) == 2);\n    bool threw = false;\n"
                   "    try { at({1, 2}, 5); } catch (const std::runtime_error& e) { threw = true; }\n    assert(threw);\n    return 0;\n}\n"}
JAVA_ROOT = {**ADD["java"], "task_id": "x/jroot", "entry_point": "Main", "signature": "public static int root(int x)",
             "code": "public class Solution {\n    public static int root(int x) {\n"
                     "        if (x < 0) throw new IllegalArgumentException(\"negative\");\n        return (int) Math.sqrt(x);\n    }\n}\n",
             "tests": "public class Main {\n    public static void main(String[] args) {\n"
                      "        if (Solution.root(9) != 3) throw new AssertionError(\"root\");\n"
                      "        try { Solution.root(-1); throw new AssertionError(\"no throw\"); }\n"
                      "        catch (IllegalArgumentException e) { if (!\"negative\".equals(e.getMessage())) throw new AssertionError(e.getMessage()); }\n"
                      "    }\n}\n"}

ATTACKS = {
    "javascript: a local class named RangeError": (JS_CHECK, _js("class RangeError extends Error {}\n  if (n < 0) throw new RangeError('negative');")),
    "javascript: a plain object whose constructor is named RangeError": (
        JS_CHECK, _js("if (n < 0) throw {constructor: {name: 'RangeError'}, message: 'negative'};")),
    "javascript: a TypeError whose constructor is renamed": (
        JS_CHECK, _js("if (n < 0) { const e = new TypeError('negative'); "
                      "Object.defineProperty(e, 'constructor', {value: {name: 'RangeError'}}); throw e; }")),
    "javascript: a Proxy claiming RangeError's prototype": (
        JS_CHECK, _js("if (n < 0) throw new Proxy({message: 'negative'}, {getPrototypeOf: () => RangeError.prototype});")),
    "python: UnicodeDecodeError where TypeError is expected": (
        PY_PARSE, "    if not isinstance(s, str):\n        s = bytes(s).decode('utf-8')\n    return int(s)\n"),
    "javascript: an Error where the reference throws a string": (JS_STRING, _js("if (n < 0) throw new Error('negative');")),
    "python: a class whose qualified name holds a space and a built-in's name": (
        PY_CHECK, "    class Oops(Exception):\n        pass\n    Oops.__qualname__ = 'Oops ValueError'\n"
                  "    if n < 0:\n        raise Oops('negative')\n    return n\n"),
    "python: a class whose module name starts with a built-in's name": (
        PY_CHECK, "    class Oops(Exception):\n        pass\n    Oops.__module__ = 'ValueError x'\n"
                  "    if n < 0:\n        raise Oops('negative')\n    return n\n"),
    "javascript: a class renamed with a space and a built-in's name": (
        JS_CHECK, _js("class Oops extends TypeError {}\n  Object.defineProperty(Oops, 'name', {value: 'Oops RangeError'});\n"
                      "  if (n < 0) throw new Oops('negative');")),
    "python: a class of its own named ValueError": (
        PY_CHECK, "    class ValueError(Exception):\n        pass\n    if n < 0:\n        raise ValueError('negative')\n    return n\n"),
    # Its demangled name, `at(...)::{lambda(int, std::runtime_error const&)#1}::...::E`, holds the
    # word `std::runtime_error`; it derives from std::exception only (std::terminate in one process).
    "cpp: a local class whose demangled name holds a blank and the expected type's name": (
        CPP_AT, "\n    auto raise = [](int, const std::runtime_error&) {\n"
                "        struct E : std::exception { const char* what() const noexcept override { return \"index\"; } };\n"
                "        throw E();\n    };\n    if (i < 0 || i >= (long)xs.size()) raise(0, std::runtime_error(\"\"));\n"
                "    return xs[i];\n}\n"),
}
# The tests' own check cannot tell these from the expected exception, in one process either
# (`assert.throws(fn)` takes any value) or across the wire (an unknown C++ name is thrown as a
# std::runtime_error): only the value verdict tells.
VALUE_VERDICT_ONLY = {"javascript: an Error where the reference throws a string",
                      "cpp: a local class whose demangled name holds a blank and the expected type's name"}

CONTROLS = {
    "python: the message the tests check": (PY_CHECK, "    if n < 0:\n        raise ValueError('negative: %d' % n)\n    return n\n"),
    "python: a subclass of the expected exception": (
        PY_CHECK, "    class NegativeError(ValueError):\n        pass\n    if n < 0:\n        raise NegativeError('negative')\n    return n\n"),
    "python: an honest UnicodeDecodeError": (PY_DECODE, "    return bytes(b).decode('utf-8')\n"),
    "python: a KeyError's message (str() quotes its argument)": (PY_KEY, "    if x < 0:\n        raise KeyError(x)\n    return x\n"),
    "javascript: a thrown string": (JS_STRING, _js("if (n < 0) throw 'negative';")),
    "javascript: the expected RangeError": (JS_CHECK, _js("if (n < 0) throw new RangeError('negative');")),
    "javascript: a subclass of the expected exception": (
        JS_CHECK, _js("class NegativeError extends RangeError {}\n  if (n < 0) throw new NegativeError('negative');")),
    "java: the message the tests check": (
        JAVA_ROOT, "\n        if (x < 0) throw new IllegalArgumentException(\"negative\");\n        return (int) Math.sqrt(x);\n    }\n"),
}

# Tests that pass what the wire cannot carry: an error for the reference and any candidate alike.
UNSENDABLE = {
    "python: bytes, a candidate that refuses them": (PY_BYTES, "    if not isinstance(s, str):\n        raise TypeError('not a string')\n    return int(s)\n"),
    "python: bytes, a candidate that accepts them": (PY_BYTES, "    return int(s)\n"),
    "python: keyword arguments": (PY_KEYWORDS, "    return x\n"),
    "javascript: a Uint8Array, a candidate that accepts it": (JS_BYTES, "\n  return Number(s);\n}\n"),
}


@pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_an_exception_that_is_not_the_expected_type_fails_both_verdicts(name: str) -> None:
    task, completion = ATTACKS[name]
    row = completion_row(task, completion, LIMITS)
    assert row["pass_at_1"] == 0.0 and row["value_verdict"] == "failed", row
    assert row["tests_verdict"] != "passed" or name in VALUE_VERDICT_ONLY, row


@pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_a_correct_exception_passes_both_verdicts(name: str) -> None:
    task, completion = CONTROLS[name]
    row = completion_row(task, completion, LIMITS)
    assert row["pass_at_1"] == 1.0 and row["value_verdict"] == "passed" and row["tests_verdict"] == "passed", row


@pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
@pytest.mark.parametrize("name", sorted(UNSENDABLE))
def test_an_argument_the_wire_cannot_carry_makes_the_row_an_error(name: str) -> None:
    task, completion = UNSENDABLE[name]
    row = completion_row(task, completion, LIMITS)
    assert row["pass_at_1"] == 0.0 and row["tests_verdict"] == "error" and row["value_verdict"] == "error", row
    assert "the wire cannot carry" in row["reason"]


def test_an_exception_agrees_with_the_reference_s_type_or_a_subclass_of_it_by_names_only() -> None:
    def raised(text: str) -> tuple:
        return ("x", plain.reply(b"x " + plain.write(("s", text)))[1][1])

    reference = raised("ValueError Exception BaseException\nnegative: -2")
    assert compare.same_outcome(reference, raised("ValueError Exception BaseException\nanother message"))
    assert compare.same_outcome(reference, raised("__main__.NegativeError ValueError Exception BaseException\n"))
    assert not compare.same_outcome(reference, raised("__main__.ValueError Exception BaseException\nnegative: -2"))
    assert not compare.same_outcome(raised("__main__.NegativeError ValueError\n"), raised("ValueError\n"))
    assert not compare.same_outcome(raised("RangeError Error\n"), raised("user:RangeError Error\n"))
    # A one-name text (Java, C++, Go, Rust) is compared whole, as before.
    assert compare.same_outcome(("x", "java.lang.ArithmeticException"), ("x", "java.lang.ArithmeticException"))


def test_an_exception_text_keeps_its_names_to_a_type_names_alphabet_and_cuts_its_message() -> None:
    text = plain.reply(b"x " + plain.write(("s", "E'<b> " * 40 + "\n" + "m" * 10_000)))[1][1]
    names, _, message = text.partition("\n")
    assert names.split(" ") == ["E__b_"] * plain.MAX_EXCEPTION_BASES
    assert message == "m" * plain.MAX_EXCEPTION_MESSAGE
