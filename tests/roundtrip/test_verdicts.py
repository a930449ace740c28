"""Differential testing and the tests' comparisons outside the candidate's process, in all six
languages, through the stage's own path (`generation.code_from_completion`, then `orchestrate.execute_row`).

Correctness: the candidate and the reference each run as a server in a sandbox of their own; the
engine sends the drawn inputs and compares the replies (engine.sandbox.caller, compare). The
tests' equality assertions of Python and JavaScript are decided by the engine's typed comparison
(engine.sandbox.relay). Contained means: pass@1 0 and correctness below 0.5.
"""
from __future__ import annotations

import pytest

from engine.roundtrip import difftest, generation, orchestrate
from engine.roundtrip.tasks import load_tasks
from engine.sandbox import compare, plain, process
from engine.sandbox.languages import LANGUAGES, toolchain_missing
from engine.sandbox.limits import SandboxLimits
from tests.support.stage_rows import reference_completion

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
needs_bwrap = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
ADD = {t["programming_language"]: t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add")}
# A reply nested 40 levels deep (the limit is 32), framed as the candidate's server would frame it.
_DEEP = "o " + "l1 " * 40 + "n"
DEEP_FRAME = f"{len(_DEEP)}\\n{_DEEP}"
# Each writes a deep reply on its own reply pipe (fd 4) before every answer, then answers wrongly.
DEEP_REPLY = {
    "python": f"    import os\n    os.write(4, b'{DEEP_FRAME}')\n    return a - b\n",
    "javascript": f"\n  require('fs').writeSync(4, '{DEEP_FRAME}');\n  return a - b;\n}}\n",
    "cpp": f"\n    static const char deep[] = \"{DEEP_FRAME}\";\n    (void) !write(4, deep, sizeof deep - 1);\n    return a - b;\n}}\n",
    "go": f"\n\tos.NewFile(4, \"r\").Write([]byte(\"{DEEP_FRAME}\"))\n\treturn a - b\n}}\n",
    "rust": (f"\n    use std::io::Write;\n    use std::os::unix::io::FromRawFd;\n"
             f"    let mut out = std::mem::ManuallyDrop::new(unsafe {{ std::fs::File::from_raw_fd(4) }});\n"
             f"    let _ = out.write_all(b\"{DEEP_FRAME}\");\n    a - b\n}}\n"),
    "java": (f"\n        try {{ java.io.FileOutputStream o = new java.io.FileOutputStream(\"/proc/self/fd/4\"); "
             f"o.write(\"{DEEP_FRAME}\".getBytes()); o.flush(); }} catch (Exception e) {{ }}\n        return a - b;\n    }}\n"),
}
CONTEXT = {"cpp": "\n#include <unistd.h>", "go": "import \"os\"\n\nvar _ = os.Stdout"}


def _task(language: str) -> dict:
    task = dict(ADD[language])
    if language in CONTEXT:
        task["context"] = (task.get("context") or "") + CONTEXT[language]
    return task



def _through_the_stage(task: dict, completion: str, inputs: list[str] | None) -> dict:
    params = type("P", (), {"sandbox": LIMITS, "call_seconds": 1.0, "verdict": "values"})()
    return orchestrate.execute_row(task, generation.code_from_completion(task, completion), inputs, params)


@needs_bwrap
@pytest.mark.parametrize("language", LANGUAGES)
def test_correctness_in_each_language_honest_one_deep_replies_zero(language):
    why = toolchain_missing(language)
    if why:
        pytest.skip(why)
    task = _task(language)
    inputs = difftest.task_inputs(task, 6, seed=3)
    assert inputs is not None and len(inputs) == 6
    honest = _through_the_stage(task, reference_completion(task), inputs)
    assert honest["status"] == "passed" and honest["correctness"] == 1.0 and honest["n_inputs"] == 6, honest
    forged = _through_the_stage(task, DEEP_REPLY[language], inputs)
    assert forged["pass_at_1"] == 0.0 and forged["correctness"] < 0.5, forged
    # (`timeout` when a loaded machine lets the wall clock end the tests' run first: still no pass.)
    assert forged["status"] in ("failed", "error", "timeout"), forged


# A wrong type that the tests' language conflates (their own `==` would take it): the engine
# compares by type (a float that is the same number as an int answer holds in the tests' `==`,
# and is another answer for correctness: types distinct).
JS_LOOSE = {**ADD["javascript"], "tests": "const assert = require('node:assert');\nassert.deepEqual(addNumbers(1, 2), 3);\n"
                                          "assert.equal(addNumbers(-4, 4), 0);\nassert.equal(addNumbers(1, 0), 1);\n"}
PY_ONE = {**ADD["python"], "tests": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(1, 0) == 1\n"}
CONFLATED = {
    # 3.0 for 3 elsewhere: the tests' `==` takes it, correctness (types distinct) does not
    "python: True for the int 1": (PY_ONE, "    return True if a + b == 1 else float(a + b)\n", 1.0),
    "javascript: a string for the number (loose deepEqual)": (JS_LOOSE, "\n  return a + b === 1 ? true : String(a + b);\n}\n", 0.5),
}


@needs_bwrap
@pytest.mark.parametrize("attack", sorted(CONFLATED))
def test_the_engine_decides_the_tests_equality_by_type(attack):
    task, completion, most = CONFLATED[attack]
    why = toolchain_missing(task["programming_language"])
    if why:
        pytest.skip(why)
    inputs = difftest.task_inputs(task, 4, seed=0)
    row = _through_the_stage(task, completion, inputs)
    assert row["status"] == "failed" and row["tests_verdict"] == "failed" and row["pass_at_1"] == 0.0, row
    assert row["correctness"] < most, row


@needs_bwrap
def test_python_tests_equality_is_exact_and_non_plain_falls_back():
    task = {**ADD["python"], "tests": "def check(candidate):\n    assert candidate(0.5, 0.25) == 0.75\n    assert candidate(1, 2) != 4\n"
                                      "    assert [candidate(1, 1)] == [2]\n    assert object() != object()\n"}
    assert _through_the_stage(task, "    return a + b\n", None)["status"] == "passed"
    assert _through_the_stage(task, "    return a + b + 1e-12\n", None)["tests_verdict"] == "failed"  # Python's `==` is exact
    # 3.0 for 3 and [2.0] for [2] are the same numbers in Python's own `==`: the tests pass; the
    # value verdict keeps int and float apart (another type is another answer)
    row = _through_the_stage(task, "    return float(a + b)\n", None)
    assert (row["tests_verdict"], row["value_verdict"], row["status"]) == ("passed", "failed", "failed"), row


def test_typed_comparison_of_plain_values():
    def value(text: str):
        return plain.parse(text.encode())[0]

    assert compare.same(value("i3"), value("i3")) and not compare.same(value("i3"), value("d3.0"))  # types distinct
    assert not compare.same(value("d3.0"), value("i3")) and not compare.same(value("i3"), value("d3.5"))
    assert compare.equal(value("i3"), value("d3.0")) and compare.equal(value("d3.0"), value("i3"))  # the tests' `==`
    assert not compare.equal(value("d0.30000000000000004"), value("d0.3")) and not compare.equal(value("t"), value("i1"))
    assert not compare.same(value("i" + "9" * 400), value("dinf")) and not compare.same(value("i1"), value("dnan"))
    assert not compare.same(value("t"), value("i1")) and not compare.same(value("l1 i1"), value("u1 i1"))
    assert compare.same(value("d0.30000000000000004"), value("d0.3")) and not compare.same(value("d3.0000000005"), value("i3"))
    assert compare.same(value("dnan"), value("dnan")) and not compare.same(value("d1.0"), value("d1.001"))
    assert compare.same(value("e2 i1 i2"), value("e2 i2 i1")) and compare.same(value("m2 s1:a i1 s1:b i2"), value("m2 s1:b i2 s1:a i1"))
    assert not compare.same(value("m2 s1:a i1 s1:a i1"), value("m2 s1:a i1 s1:b i1"))  # a repeated key agrees with nothing
    assert compare.same_outcome(("timeout",), ("o", value("i1"))) is None
    assert compare.same_outcome(("x", "ValueError"), ("x", "ValueError")) is True
    assert compare.same_outcome(("o", value("i1")), ("ended", "reply refused")) is False


def test_inputs_for_every_language_follow_the_declared_types():
    rust = {**ADD["rust"], "signature": "fn f(xs: &[i64], n: usize, s: &str, x: f64) -> i64", "tests": "fn main() { f(&[1], 2, \"ab\", 0.5); }"}
    for text in difftest.task_inputs(rust, 20, seed=1):
        xs, n, s, x = eval(text)  # noqa: S307 - the engine's own repr of drawn values
        assert all(type(v) is int for v in xs) and type(n) is int and n >= 0 and type(s) is str and type(x) is float
    go = {**ADD["go"], "signature": "func f(m map[string]int, b bool) []int"}
    assert all(isinstance(eval(t)[0], dict) for t in difftest.task_inputs(go, 5, seed=1))  # noqa: S307
    assert difftest.task_inputs({**ADD["cpp"], "signature": "int f(Widget w)"}, 5, 0) is None
    js = {**ADD["javascript"], "tests": "assert.strictEqual(addNumbers(1.5, [1, 2]), 3);"}
    first = difftest.task_inputs(js, 5, seed=1)
    assert first[0] == "(1.5, [1, 2])" and all(type(eval(t)[0]) is float for t in first)  # noqa: S307


# Attacks on correctness itself: the answers are replies the engine reads and compares with the
# reference's from another sandbox, so nothing in the candidate's process can make them agree.
DIFF_ATTACKS = {
    "python: an int subclass equal to everything": (
        ADD["python"], "    class A(int):\n        def __eq__(self, other):\n            return True\n"
                       "        __hash__ = int.__hash__\n    return A(a - b)\n"),
    "python: prints the expected output": (ADD["python"], "    print(a + b)\n    return a - b\n"),
    "python: looks for the tests and the reference's answers": (
        ADD["python"], "    import glob, os, re\n    for path in glob.glob('/proc/*/cmdline') + glob.glob('*') + glob.glob('/tmp/*'):\n"
                       "        try:\n            text = open(path, 'rb').read().decode('latin1')\n        except OSError:\n"
                       "            continue\n        if 'assert' in text or 'add_numbers' in text and path != 'impl.py':\n"
                       "            return int((re.findall(r'== *(-?\\d+)', text) or [a - b])[0])\n    return a - b\n"),
    "javascript: an object whose valueOf is the answer": (ADD["javascript"], "\n  return { valueOf: () => a + b };\n}\n"),
    "javascript: a float 5e-10 off the int answer": (ADD["javascript"], "\n  return a + b + 5e-10;\n}\n"),
}


@needs_bwrap
@pytest.mark.parametrize("attack", sorted(DIFF_ATTACKS))
def test_correctness_cannot_be_forged_from_the_candidates_process(attack):
    task, completion = DIFF_ATTACKS[attack]
    why = toolchain_missing(task["programming_language"])
    if why:
        pytest.skip(why)
    row = _through_the_stage(task, completion, difftest.task_inputs(task, 6, seed=3))
    assert row["pass_at_1"] == 0.0 and row["correctness"] < 0.5, row
