"""Exceptions and large values cross faithfully (through the stage's own path).

- a correct Java method that throws ArithmeticException failed a test that expects it: the
  exception crossed as a RuntimeException (an honest control that got the wrong verdict);
- a wrong Java candidate writing a well-formed reply whose integer overflows the declared `int`
  made the proxy throw ArithmeticException inside the tests, which the tests' `catch` accepted;
- an honest Python answer of 600 kB timed out (the tests' equality message carries actual plus
  expected, and the relay refused messages over 1 MiB and stopped relaying); covered with the
  value verdict's honest controls in test_roundtrip_values.py, the relay's framing here.
"""
from __future__ import annotations

import os

import pytest

from engine.roundtrip import generation, orchestrate
from engine.roundtrip.tasks import load_tasks
from engine.sandbox import plain, process, relay
from engine.sandbox.languages import toolchain_missing
from engine.sandbox.limits import SandboxLimits

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
needs_bwrap = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
JAVA = [t for t in load_tasks("polyglot").to_pylist() if t["task_id"] == "polyglot/java/add"][0]
DIV = {**JAVA, "signature": "public static int div(int a, int b)",
       "code": "public class Solution {\n    public static int div(int a, int b) {\n        return a / b;\n    }\n}\n",
       "tests": "public class Main {\n    public static void main(String[] args) {\n"
                "        try { Solution.div(1, 0); throw new AssertionError(\"no exception\"); } catch (ArithmeticException e) { }\n"
                "    }\n}\n"}


def _row(task: dict, completion: str) -> dict:
    if toolchain_missing("java"):
        pytest.skip(toolchain_missing("java"))
    params = type("P", (), {"sandbox": LIMITS, "call_seconds": 1.0, "verdict": "values"})()
    return orchestrate.execute_row(task, generation.code_from_completion(task, completion), None, params)


@needs_bwrap
def test_a_java_exception_crosses_as_its_own_type():
    row = _row(DIV, "\n        return a / b;\n    }\n}\n")
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row
    row = _row(DIV, "\n        if (b == 0) throw new IllegalStateException();\n        return a / b;\n    }\n}\n")
    assert row["status"] == "failed" and row["tests_verdict"] == "failed", row


@needs_bwrap
def test_a_reply_that_overflows_the_declared_type_stops_the_tests():
    forged = ("\n        try { java.io.OutputStream o = new java.io.FileOutputStream(\"/proc/self/fd/4\");\n"
              "              o.write(\"14\\no i99999999999\".getBytes()); o.flush(); } catch (Exception e) { }\n"
              "        return 0;\n    }\n}\n")
    row = _row(DIV, forged)
    assert row["status"] == "failed" and row["tests_verdict"] == "failed" and row["pass_at_1"] == 0.0, row


def test_an_oversized_tests_message_is_drained_and_refused():
    read, write = os.pipe()
    body = b"c " + b"x" * (relay.TESTS_MESSAGE + 10)
    pid = os.fork()
    if pid == 0:  # the writer: blocked halfway unless the reader reads the whole message
        os.close(read)
        os.write(write, plain.frame(body) + plain.frame(b"l0"))
        os._exit(0)
    os.close(write)
    import time

    deadline = time.monotonic() + 60
    with pytest.raises(plain.PlainError, match="longer than"):
        relay.read_message(read, deadline, relay.TESTS_MESSAGE)
    assert relay.read_message(read, deadline, relay.TESTS_MESSAGE) == b"l0"  # the stream is still framed
    os.waitpid(pid, 0)
    os.close(read)


FORGED = "o i99999999999999999999999"  # well-formed, beyond any declared integer type
TYPED = {
    "go": ({"signature": "func div(a int, b int) int", "entry_point": "div", "context": 'import "os"',
            "code": "func div(a int, b int) int {\n\treturn a / b\n}\n",
            "tests": "func main() {\n\tfunc() {\n\t\tdefer func() {\n\t\t\tif recover() == nil {\n\t\t\t\tpanic(\"no panic\")\n"
                     "\t\t\t}\n\t\t}()\n\t\tdiv(1, 0)\n\t}()\n}\n"},
           f"\n\tos.NewFile(4, \"r\").Write([]byte(\"{len(FORGED)}\\n{FORGED}\"))\n\treturn 0\n}}\n",
           "\n\treturn a / b\n}\n"),
    "cpp": ({"signature": "long divide(long a, long b)", "entry_point": "divide", "context": "#include <stdexcept>\n#include <unistd.h>",
             "code": "long divide(long a, long b) {\n    if (b == 0) throw std::runtime_error(\"zero\");\n    return a / b;\n}\n",
             "tests": "int main() {\n    try { divide(1, 0); return 1; } catch (...) { }\n    return 0;\n}\n"},
            f"\n    write(4, \"{len(FORGED)}\\n{FORGED}\", {len(FORGED) + 3});\n    return 0;\n}}\n",
            "\n    if (b == 0) throw std::runtime_error(\"zero\");\n    return a / b;\n}\n"),
}


@needs_bwrap
@pytest.mark.parametrize("language", sorted(TYPED))
def test_a_reply_beyond_the_declared_type_is_no_exception_the_tests_catch(language):
    """Go's `recover()` and C++'s `catch (...)` took the proxy's own decoding error for the panic
    or exception the tests expected."""
    if toolchain_missing(language):
        pytest.skip(toolchain_missing(language))
    base = [t for t in load_tasks("polyglot").to_pylist() if t["task_id"] == f"polyglot/{language}/add"][0]
    fields, forged, honest = TYPED[language]
    task = {**base, **fields}
    params = type("P", (), {"sandbox": LIMITS, "call_seconds": 1.0, "verdict": "values"})()
    row = orchestrate.execute_row(task, generation.code_from_completion(task, forged), None, params)
    assert row["tests_verdict"] == "failed" and row["pass_at_1"] == 0.0, row
    task = {**task, "context": base["context"]} if language == "go" else task  # Go refuses an unused import
    row = orchestrate.execute_row(task, generation.code_from_completion(task, honest), None, params)
    assert row["status"] == "passed" and row["value_verdict"] == "passed", row


PY = [t for t in load_tasks("polyglot").to_pylist() if t["task_id"] == "polyglot/python/add"][0]
PY_RAISES = {**PY, "signature": "def f(x: int) -> int:", "entry_point": "f",
             "code": "def f(x: int) -> int:\n    if x < 0:\n        raise TypeError('negative')\n    return x * 2\n",
             "tests": "def check(candidate):\n    assert candidate(2) == 4\n    try:\n        candidate(-1)\n"
                      "    except TypeError:\n        pass\n    else:\n        raise AssertionError('no TypeError')\n"}


def _py_row(task: dict, completion: str, verdict: str = "values") -> dict:
    params = type("P", (), {"sandbox": LIMITS, "call_seconds": 1.0, "verdict": verdict})()
    return orchestrate.execute_row(task, generation.code_from_completion(task, completion), None, params)


@needs_bwrap
@pytest.mark.parametrize("forged", [
    "    if x < 0:\n        return frozenset({frozenset()})\n    return x * 2\n",  # the proxy's set of a set
    # a raw reply the proxy cannot build (a list in a set), then the server ends
    "    if x < 0:\n        import os\n        os.write(4, b'8\\no e1 l0')\n        os._exit(0)\n    return x * 2\n",
])
def test_python_proxy_decoding_is_no_exception_the_tests_catch(forged):
    """The proxy's own `TypeError: unhashable type` inside the tests was taken by their `except TypeError`."""
    for verdict in ("values", "tests"):
        row = _py_row(PY_RAISES, forged, verdict)
        assert row["tests_verdict"] == "failed" and row["pass_at_1"] == 0.0, row


@needs_bwrap
def test_a_python_exception_of_a_builtin_name_but_another_class_does_not_cross_as_the_builtin():
    """A local `class ZeroDivisionError(Exception)` crossed under the built-in's bare name and was
    raised in the tests as the built-in, which their `except ZeroDivisionError` caught."""
    task = {**PY, "signature": "def f(n: int) -> int:", "entry_point": "f", "code": "def f(n: int) -> int:\n    return 10 // n\n",
            "tests": "def check(candidate):\n    try:\n        candidate(0)\n    except ZeroDivisionError:\n        pass\n"
                     "    else:\n        raise AssertionError\n    assert candidate(5) == 2\n"}
    for forged in ("    class ZeroDivisionError(Exception):\n        pass\n",
                   "    class ZeroDivisionError(Exception):\n        __module__ = 'builtins'\n        __qualname__ = ''\n"):
        row = _py_row(task, forged + "    if n == 0:\n        raise ZeroDivisionError('no')\n    return 10 // n\n")
        assert row["pass_at_1"] == 0.0 and row["tests_verdict"] == "failed" and row["value_verdict"] == "failed", row
    row = _py_row(task, "    return 10 // n\n")
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row


@needs_bwrap
def test_python_sets_of_sets_and_big_integers_cross():
    powerset = {**PY, "signature": "def subsets(n: int) -> set:", "entry_point": "subsets",
                "code": "def subsets(n: int) -> set:\n    from itertools import combinations\n"
                        "    return {frozenset(c) for k in range(n + 1) for c in combinations(range(n), k)}\n",
                "tests": "def check(candidate):\n    assert candidate(2) == {frozenset(), frozenset({0}), frozenset({1}), frozenset({0, 1})}\n"
                         "    assert {frozenset({0, 1}): 1}[frozenset(max(candidate(2), key=len))] == 1\n"}
    completion = ("    out = {frozenset()}\n    for i in range(n):\n        out |= {s | {i} for s in out}\n    return out\n")
    row = _py_row(powerset, completion)
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row
    power = {**PY, "signature": "def f(n: int) -> int:", "entry_point": "f", "code": "def f(n: int) -> int:\n    return 7 ** n\n",
             "tests": "def check(candidate):\n    assert candidate(6000) == 7 ** 6000\n    assert candidate(3) == 343\n"}
    row = _py_row(power, "    r = 1\n    for _ in range(n):\n        r *= 7\n    return r\n")  # 5,073 digits
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row
    row = _py_row(power, "    return 7 ** n + (n > 5)\n")
    assert row["status"] == "failed" and row["value_verdict"] == "failed", row
