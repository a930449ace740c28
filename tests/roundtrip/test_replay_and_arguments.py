"""The value verdict's replay cannot be told from the tests' run, the answers the tests got are
checked too, and a call's changes to its arguments are part of its answer: attacks written as
model completions, through the stage's own path, next to the honest controls that must pass.

Replay: a candidate that reads its CPU limit answered the tests with a forgery (a truthy string)
and the replay correctly, when the replay ran under a larger limit.
Arguments: `xs.sort(); return xs` for a sorted copy passed tests that check the argument is left
unchanged, because the candidate's change stayed in its own process.
"""
from __future__ import annotations

import pytest

from engine.roundtrip import values
from engine.roundtrip.tasks import load_tasks
from engine.sandbox import process
from engine.sandbox.limits import SandboxLimits
from engine.sandbox.relay import Recording
from tests.support.stage_rows import completion_row

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
needs_bwrap = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
POLY = {t["task_id"]: t for t in load_tasks("polyglot").to_pylist()}
ADD = {t["programming_language"]: t for t in POLY.values() if t["task_id"].endswith("/add")}
BETWEEN = "answered differently in the tests' run and when called again"


def _row(task: dict, completion: str, verdict: str = "values") -> dict:
    return completion_row(task, completion, LIMITS, verdict=verdict)


PY_EVEN = {**ADD["python"], "signature": "def is_even(n: int) -> bool:", "entry_point": "is_even",
           "code": "def is_even(n: int) -> bool:\n    return n % 2 == 0\n",
           "tests": "def check(candidate):\n" + "".join(f"    assert {'' if k % 2 == 0 else 'not '}candidate({k})\n"
                                                     for k in range(2, 8))}
# Answers correctly only where its CPU limit is above the tests' run's 5 s (the replay's was
# max(5, calls + 2)), and with what the tests' own rules take for right otherwise. The other
# languages' servers ran under their toolchain's limits in both runs; PROBES below checks that
# every run shows the same to a server.
DETECTORS = {
    "python": (PY_EVEN, "    import resource\n    if resource.getrlimit(resource.RLIMIT_CPU)[0] > 5:\n"
                        "        return n % 2 == 0\n    return 'yes' if n % 2 == 0 else ''\n", "    return n % 2 == 0\n"),
}


@needs_bwrap
@pytest.mark.parametrize("language", sorted(DETECTORS))
def test_a_candidate_that_looks_for_the_replay_fails_the_value_verdict(language):
    task, detector, honest = DETECTORS[language]
    row = _row(task, detector)
    assert row["tests_verdict"] == "passed", row  # the tests' own rules take the forgery ...
    assert row["value_verdict"] == "failed" and row["pass_at_1"] == 0.0, row  # ... the value verdict does not
    row = _row(task, honest)
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row


PROBES = {
    # What a server can read about its run: limits, environment, working directory, argv, open
    # fds, pid and parent, its files and /tmp. Answered to calls the tests never check.
    "python": ({**ADD["python"], "signature": "def probe(n: int) -> str:", "entry_point": "probe",
                "code": "def probe(n: int) -> str:\n    return 'x'\n",
                "tests": "def check(candidate):\n    assert candidate(1) is not None\n    assert candidate(2) is not None\n"},
               "    import os, sys\n    open('/tmp/mark-%d' % n, 'w').close()\n"
               "    return '|'.join([open('/proc/self/limits').read(), repr(sorted(os.environ.items())), os.getcwd(),\n"
               "                     repr(sys.argv), repr(sorted(os.listdir('/proc/self/fd'))), str(os.getpid()),\n"
               "                     str(os.getppid()), repr(sorted(os.listdir('/tmp'))), repr(sorted(os.listdir('.')))])\n"),
    "javascript": ({**ADD["javascript"], "signature": "function probe(n)", "entry_point": "probe",
                    "code": "function probe(n) {\n  return 'x';\n}\n",
                    "tests": "const assert = require('node:assert');\nassert(probe(1) !== null);\nassert(probe(2) !== null);\n"},
                   "\n  const fs = require('fs');\n  fs.writeFileSync('/tmp/mark-' + n, '');\n"
                   "  return [fs.readFileSync('/proc/self/limits', 'utf8'), JSON.stringify(Object.entries(process.env).sort()),\n"
                   "          process.cwd(), JSON.stringify(process.argv), fs.readdirSync('/proc/self/fd').sort().join(','),\n"
                   "          process.pid, process.ppid, fs.readdirSync('/tmp').sort().join(',')].join('|');\n}\n"),
    "java": ({**ADD["java"], "signature": "public static String probe(int n)", "entry_point": "Main", "context": "",
              "code": "public class Solution {\n    public static String probe(int n) {\n        return \"x\";\n    }\n}\n",
              "tests": "public class Main {\n    public static void main(String[] args) {\n"
                       "        if (Solution.probe(1) == null) throw new AssertionError();\n"
                       "        if (Solution.probe(2) == null) throw new AssertionError();\n    }\n}\n"},
             "\n        try {\n            return java.nio.file.Files.readString(java.nio.file.Path.of(\"/proc/self/limits\"))\n"
             "                + System.getenv() + System.getProperty(\"user.dir\") + ProcessHandle.current().pid()\n"
             "                + java.util.Arrays.toString(new java.io.File(\"/proc/self/fd\").list());\n"
             "        } catch (Exception e) {\n            return \"?\";\n        }\n    }\n}\n"),
}


@needs_bwrap
@pytest.mark.parametrize("language", sorted(PROBES))
def test_the_replay_shows_the_server_what_the_tests_run_showed_it(language):
    task, probe = PROBES[language]
    row = _row(task, probe)
    # The probe's answer is not the reference's: it fails on the tests' own calls, and it is the
    # same answer in both runs (else the reason would say the runs differ).
    assert row["tests_verdict"] == "passed" and row["value_verdict"] == "failed", row
    assert "in the tests' run" in row["reason"] and BETWEEN not in row["reason"], row


def _recorded_add() -> values.Recorded:
    reference = values.recorded(ADD["python"], LIMITS)
    assert not reference.error and len(reference.calls) == 3, reference
    return reference


@needs_bwrap
def test_answers_the_tests_got_are_checked_against_the_reference_and_the_replay():
    task = ADD["python"]
    reference = _recorded_add()
    honest = "def add_numbers(a: int, b: int) -> int:\n    return a + b\n"
    # What the tests got (a candidate that told the tests' run from the replay) differs from the
    # replay's answers and the reference's.
    told = Recording(list(reference.calls), [b"o i4", *reference.replies[1:]])
    found = values.verdict(task, honest, LIMITS, 1.0, told)
    assert found.status == "failed" and BETWEEN in found.reason and "call 1 of 3" in found.reason, found
    # The tests got the reference's answers but the replay gets others: that is the same difference.
    wrong = "def add_numbers(a: int, b: int) -> int:\n    return a + b + (a == 10)\n"
    found = values.verdict(task, wrong, LIMITS, 1.0, Recording(list(reference.calls), list(reference.replies)))
    assert found.status == "failed" and BETWEEN in found.reason and "call 3 of 3" in found.reason, found
    # Controls: the honest candidate with its own answers passes; calls the reference's tests did
    # not make (tests that draw other inputs) are not compared with the reference's answers.
    assert values.verdict(task, honest, LIMITS, 1.0, Recording(list(reference.calls), list(reference.replies))).status == "passed"
    other = Recording([b"l2 i7 i7", *reference.calls[1:]], [b"o i99", *reference.replies[1:]])
    assert values.verdict(task, honest, LIMITS, 1.0, other).status == "passed"


PY_SORTED = {**ADD["python"], "signature": "def sorted_copy(xs: list) -> list:", "entry_point": "sorted_copy",
             "code": "def sorted_copy(xs: list) -> list:\n    return sorted(xs)\n",
             "tests": "def check(candidate):\n    xs = [3, 1, 2]\n    assert candidate(xs) == [1, 2, 3]\n    assert xs == [3, 1, 2]\n"}
PY_APPEND = {**ADD["python"], "signature": "def with_zero(xs: list) -> list:", "entry_point": "with_zero",
             "code": "def with_zero(xs: list) -> list:\n    return xs + [0]\n",
             "tests": "def check(candidate):\n    xs = [1]\n    assert candidate(xs) == [1, 0]\n    assert candidate(xs) == [1, 0]\n"}
PY_IN_PLACE = {**ADD["python"], "signature": "def sort_in_place(xs: list) -> None:", "entry_point": "sort_in_place",
               "code": "def sort_in_place(xs: list) -> None:\n    xs.sort()\n",
               "tests": "def check(candidate):\n    xs = [3, 1, 2]\n    inner = [[2], xs]\n    candidate(xs)\n"
                        "    assert xs == [1, 2, 3] and inner[1] is xs\n    d = {'k': [2, 1]}\n    candidate(d['k'])\n"
                        "    assert d == {'k': [1, 2]}\n"}
JS_SORTED = {**ADD["javascript"], "signature": "function sortedCopy(xs)", "entry_point": "sortedCopy",
             "code": "function sortedCopy(xs) {\n  return [...xs].sort((a, b) => a - b);\n}\n",
             "tests": "const assert = require('node:assert');\nconst xs = [3, 1, 2];\n"
                      "assert.deepStrictEqual(sortedCopy(xs), [1, 2, 3]);\nassert.deepStrictEqual(xs, [3, 1, 2]);\n"}
JS_IN_PLACE = {**ADD["javascript"], "signature": "function addKey(o)", "entry_point": "addKey",
               "code": "function addKey(o) {\n  o.seen = true;\n  o.list.push(1);\n}\n",
               "tests": "const assert = require('node:assert');\nconst o = {list: []};\nconst inner = o.list;\naddKey(o);\n"
                        "assert.deepStrictEqual(o, {list: [1], seen: true});\nassert.strictEqual(o.list, inner);\n"}

MUTATIONS = {
    "python sorts its argument": (PY_SORTED, "    xs.sort()\n    return xs\n", "    return sorted(xs)\n"),
    "python appends to its argument": (PY_APPEND, "    xs.append(0)\n    return list(xs)\n", "    return list(xs) + [0]\n"),
    "javascript sorts its argument": (JS_SORTED, "\n  return xs.sort((a, b) => a - b);\n}\n",
                                      "\n  return xs.slice().sort((a, b) => a - b);\n}\n"),
}


@needs_bwrap
@pytest.mark.parametrize("attack", sorted(MUTATIONS))
def test_a_candidate_that_changes_its_arguments_fails_as_in_one_process(attack):
    task, mutating, honest = MUTATIONS[attack]
    row = _row(task, mutating)
    # The change is copied back: the tests see it as they would in one process, and so does the value verdict.
    assert row["tests_verdict"] == "failed" and row["pass_at_1"] == 0.0, row
    assert _row(task, mutating, verdict="tests")["pass_at_1"] == 0.0
    row = _row(task, honest)
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row


@needs_bwrap
def test_the_arguments_state_is_part_of_the_value_verdict():
    # Tests that never look at the argument: only the value verdict sees the change.
    task = {**PY_SORTED, "tests": "def check(candidate):\n    assert candidate([3, 1, 2]) == [1, 2, 3]\n"}
    row = _row(task, "    copy = sorted(xs)\n    xs.sort()\n    return copy\n")
    assert row["tests_verdict"] == "passed" and row["value_verdict"] == "failed", row
    assert "arguments" in row["reason"], row
    # Returning the argument itself is another answer than a new list, whatever their contents.
    row = _row(task, "    xs.sort()\n    return xs\n")
    assert row["tests_verdict"] == "passed" and row["value_verdict"] == "failed", row


@needs_bwrap
@pytest.mark.parametrize("task, honest, lazy", [
    (PY_IN_PLACE, "    xs.sort()\n", "    return None\n"),
    (JS_IN_PLACE, "\n  o.seen = true;\n  o.list.push(1);\n}\n", "\n  return undefined;\n}\n"),
], ids=["python", "javascript"])
def test_a_function_meant_to_change_its_arguments_passes_when_it_does(task, honest, lazy):
    row = _row(task, honest)  # the tests see the change on their own objects, nested ones kept in place
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row
    row = _row(task, lazy)
    assert row["tests_verdict"] == "failed" and row["pass_at_1"] == 0.0, row


# The tests' run gives a call no time limit of its own (only the run's): a call that takes longer
# than `call_seconds` passes the tests there, so the replay must not fail it either. The reference
# itself, whose second call sleeps 1.5 s (a wall-clock wait the tests' run allows), must pass.
PY_SLOW = {**ADD["python"], "signature": "def slow_add(a: int, b: int) -> int:", "entry_point": "slow_add",
           "context": "import time",
           "code": "def slow_add(a: int, b: int) -> int:\n    if a > 1:\n        time.sleep(1.5)\n    return a + b\n",
           "tests": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 3) == 5\n"}


@needs_bwrap
def test_a_slow_call_the_tests_run_allows_passes_the_replay_too():
    row = _row(PY_SLOW, "    if a > 1:\n        time.sleep(1.5)\n    return a + b\n")
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row
