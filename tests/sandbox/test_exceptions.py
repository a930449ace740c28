"""Exceptions cross by their declared type's name in C++ and Go, by payload kind in Rust (through the stage's own path).

C++'s exceptions crossed as `std::exception` or `unknown`: a candidate throwing
std::invalid_argument where the reference throws std::out_of_range agreed with it, and a test's
`catch (const std::out_of_range&)` never caught the proxy's std::runtime_error, so a correct
method failed (an honest control with the wrong verdict). Now the server names the thrown type
(demangled), the engine compares names, and the proxy throws the standard type of that name.
Go's server names a panic's value type (`%T`): a `string` panic where the reference panics with
an `error` value differs, though the tests' `recover()` takes either. A Rust panic with a message
(`&str` or `String` payload) is `panic`, any other payload `panic_any`.
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
pytestmark = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
BASE = {t["programming_language"]: t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add")}
CPP = {**BASE["cpp"], "signature": "long divide(long a, long b)", "entry_point": "divide", "context": "#include <stdexcept>",
       "code": "long divide(long a, long b) {\n    if (b == 0) throw std::out_of_range(\"zero\");\n    return a / b;\n}\n",
       "tests": "int main() {\n    try { divide(1, 0); return 1; } catch (const std::out_of_range&) { }\n"
                "    return divide(6, 3) == 2 ? 0 : 1;\n}\n"}
CPP_LOOSE = {**CPP, "tests": CPP["tests"].replace("const std::out_of_range&", "const std::exception&")}
GO_RECOVER = ("func main() {\n\tfunc() {\n\t\tdefer func() {\n\t\t\tif _, ok := recover().(error); !ok {\n"
              "\t\t\t\tpanic(\"no error panic\")\n\t\t\t}\n\t\t}()\n\t\tdiv(1, 0)\n\t}()\n}\n")
GO = {**BASE["go"], "signature": "func div(a int, b int) int", "entry_point": "div", "context": 'import "errors"',
      "code": "func div(a int, b int) int {\n\tif b == 0 {\n\t\tpanic(errors.New(\"zero\"))\n\t}\n\treturn a / b\n}\n",
      "tests": "func main() {\n\tfunc() {\n\t\tdefer func() {\n\t\t\tif recover() == nil {\n\t\t\t\tpanic(\"no panic\")\n"
               "\t\t\t}\n\t\t}()\n\t\tdiv(1, 0)\n\t}()\n\tif div(6, 3) != 2 {\n\t\tpanic(\"6 / 3\")\n\t}\n}\n"}


def _row(task: dict, completion: str) -> dict:
    if toolchain_missing(task["programming_language"]):
        pytest.skip(toolchain_missing(task["programming_language"]))
    params = type("P", (), {"sandbox": LIMITS, "call_seconds": 2.0, "verdict": "values"})()
    return orchestrate.execute_row(task, generation.code_from_completion(task, completion), None, params)


def _cpp(thrown: str) -> str:
    return f"\n    if (b == 0) throw {thrown};\n    return a / b;\n}}\n"


def test_cpp_the_expected_exception_passes_and_another_type_fails():
    honest = _row(CPP, _cpp('std::out_of_range("b is zero")'))
    assert (honest["status"], honest["tests_verdict"], honest["value_verdict"]) == ("passed", "passed", "passed"), honest
    for thrown in ('std::invalid_argument("zero")', "1"):
        row = _row(CPP, _cpp(thrown))
        assert row["pass_at_1"] == 0.0 and row["tests_verdict"] != "passed" and row["value_verdict"] == "failed", row


def test_cpp_another_type_the_tests_accept_still_fails_the_value_verdict():
    row = _row(CPP_LOOSE, _cpp('std::invalid_argument("zero")'))
    assert (row["tests_verdict"], row["value_verdict"], row["pass_at_1"]) == ("passed", "failed", 0.0), row


def test_go_an_error_panic_is_an_error_in_the_tests():
    """The proxy panicked with a string whatever the candidate's panic was: a test that recovers
    an `error` failed a correct candidate."""
    task = {**GO, "tests": GO_RECOVER}
    honest = _row(task, "\n\tif b == 0 {\n\t\tpanic(errors.New(\"b is zero\"))\n\t}\n\treturn a / b\n}\n")
    assert (honest["status"], honest["tests_verdict"], honest["value_verdict"]) == ("passed", "passed", "passed"), honest
    row = _row(task, "\n\tif b == 0 {\n\t\tpanic(errors.New(\"zero\").Error())\n\t}\n\treturn a / b\n}\n")
    assert row["tests_verdict"] == "failed" and row["pass_at_1"] == 0.0, row


def test_go_a_panic_of_another_value_type_fails_the_value_verdict():
    honest = _row(GO, "\n\tif b == 0 {\n\t\tpanic(errors.New(\"b is zero\"))\n\t}\n\treturn a / b\n}\n")
    assert (honest["status"], honest["tests_verdict"], honest["value_verdict"]) == ("passed", "passed", "passed"), honest
    row = _row(GO, "\n\tif b == 0 {\n\t\tpanic(errors.New(\"zero\").Error())\n\t}\n\treturn a / b\n}\n")
    assert (row["tests_verdict"], row["value_verdict"], row["pass_at_1"]) == ("passed", "failed", 0.0), row


RUST = {**BASE["rust"], "signature": "fn div(a: i64, b: i64) -> i64", "entry_point": "div", "context": "",
        "code": "fn div(a: i64, b: i64) -> i64 {\n    if b == 0 {\n        panic!(\"zero\");\n    }\n    a / b\n}\n",
        "tests": "fn main() {\n    assert!(std::panic::catch_unwind(|| div(1, 0)).is_err());\n    assert_eq!(div(6, 3), 2);\n}\n"}


def test_rust_a_message_panic_passes_and_a_panic_any_payload_fails_the_value_verdict():
    honest = _row(RUST, "\n    if b == 0 {\n        panic!(\"{} / {} has no quotient\", a, b);\n    }\n    a / b\n}\n")
    assert (honest["status"], honest["tests_verdict"], honest["value_verdict"]) == ("passed", "passed", "passed"), honest
    row = _row(RUST, "\n    if b == 0 {\n        std::panic::panic_any(0u8);\n    }\n    a / b\n}\n")
    assert (row["tests_verdict"], row["value_verdict"], row["pass_at_1"]) == ("passed", "failed", 0.0), row
