"""The verdict comes when the tests have run to their end, as model completions through the stage.

Wrong programs that passed: JavaScript tests whose checks run after the tests' module returned
(a timer, a promise, an async function after its first await, an 'exit' listener, node:test):
the harness wrote `passed` as soon as the module returned, so those checks never ran. Honest
programs that failed: tests that end with their own exit(0) (`sys.exit(0)`, `process.exit(0)`,
`os.Exit(0)`, `std::exit(0)`, `std::process::exit(0)`, `System.exit(0)`), which pass in one
process. The candidate's own exit (in its server) is never a pass. A task whose reference fails
its own tests is a task error (`error`), never the candidate's failure or compile error.
"""
from __future__ import annotations

import pytest

from engine.roundtrip.tasks import load_tasks
from engine.sandbox import process
from engine.sandbox.languages import run_tests, toolchain_missing
from engine.sandbox.limits import SandboxLimits
from tests.support.stage_rows import completion_row, reference_completion

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
needs_bwrap = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
ADD = {t["programming_language"]: t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add")}
DOUBLE = {**ADD["javascript"], "task_id": "x/jdouble", "entry_point": "double", "signature": "function double(x)",
          "code": "function double(x) {\n  return 2 * x;\n}\n"}
ASYNC = {
    "a timer": "setTimeout(() => assert.strictEqual(double(3), 6), 0);\n",
    "a promise": "Promise.resolve(3).then((x) => assert.strictEqual(double(x), 6));\n",
    "an async function after its first await": "async function main() {\n  const x = await Promise.resolve(3);\n"
                                                "  assert.strictEqual(double(x), 6);\n}\nmain();\n",
    "an exit listener": "process.on('exit', () => assert.strictEqual(double(3), 6));\n",
    "node:test": "const test = require('node:test');\ntest('double', () => { assert.strictEqual(double(3), 6); });\n",
}


def _async_task(case: str) -> dict:
    return {**DOUBLE, "tests": "const assert = require('node:assert');\nassert.strictEqual(double(1), 2);\n" + ASYNC[case]}


@needs_bwrap
@pytest.mark.parametrize("case", sorted(ASYNC))
def test_javascript_checks_after_the_tests_module_returned_run(case):
    task = _async_task(case)
    row = completion_row(task, "\n  return x === 1 ? 2 : 0;\n}\n", LIMITS)
    assert row["tests_verdict"] == "failed" and row["pass_at_1"] == 0.0, row
    honest = completion_row(task, reference_completion(task), LIMITS)
    assert (honest["status"], honest["tests_verdict"], honest["value_verdict"]) == ("passed", "passed", "passed"), honest


def test_javascript_whole_program_runs_to_its_end_and_its_own_exit_is_no_pass():
    if toolchain_missing("javascript"):
        pytest.skip(toolchain_missing("javascript"))
    whole = {**ADD["javascript"], "entry_point": "", "context": ""}
    late = "const assert = require('node:assert');\nsetTimeout(() => assert.strictEqual(double(3), 6), 0);\n"
    wrong = "function double(x) { return x === 1 ? 2 : 0; }\n"
    assert run_tests({**whole, "tests": late}, wrong, LIMITS).status == "failed"
    assert run_tests({**whole, "tests": late}, "function double(x) { return 2 * x; }\n", LIMITS).status == "passed"
    early = "function double(x) { process.exit(0); }\n"
    assert run_tests({**whole, "tests": late}, early, LIMITS).status == "failed"


EXITING = {
    "python": {**ADD["python"], "tests": "import sys\n\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n    sys.exit(0)\n"},
    "javascript": {**ADD["javascript"], "tests": "const assert = require('node:assert');\n"
                                                 "assert.strictEqual(addNumbers(1, 2), 3);\nprocess.exit(0);\n"},
    "go": {**ADD["go"], "tests": "import \"os\"\n\nfunc main() {\n\tif addNumbers(1, 2) != 3 {\n\t\tpanic(\"add\")\n\t}\n"
                                 "\tos.Exit(0)\n}\n"},
    "cpp": {**ADD["cpp"], "tests": "#include <cstdlib>\nint main() {\n    assert(add_numbers(1, 2) == 3);\n    std::exit(0);\n}\n"},
    "rust": {**ADD["rust"], "tests": "fn main() {\n    assert_eq!(add_numbers(1, 2), 3);\n    std::process::exit(0);\n}\n"},
    "java": {**ADD["java"], "tests": "public class Main {\n    public static void main(String[] args) {\n"
                                     "        if (Solution.addNumbers(1, 2) != 3) throw new AssertionError();\n"
                                     "        System.exit(0);\n    }\n}\n"},
}


@needs_bwrap
@pytest.mark.parametrize("language", sorted(EXITING))
def test_tests_that_end_with_their_own_exit_zero_pass(language):
    task = EXITING[language]
    row = completion_row(task, reference_completion(task), LIMITS)
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row


# The candidate exits 0 in its own server, where the tests' exit(0) would be a pass.
SERVER_EXITS = {
    "python": "    import os\n    os._exit(0)\n",
    "javascript": "\n  process.exit(0);\n}\n",
    "cpp": "\n    std::exit(0);\n}\n",
    "go": "\n\tos.Exit(0)\n\treturn 0\n}\n",
}


@needs_bwrap
@pytest.mark.parametrize("language", sorted(SERVER_EXITS))
def test_the_candidates_own_exit_zero_is_no_pass(language):
    task = EXITING[language]
    if language == "go":
        task = {**task, "context": "import \"os\""}
    elif language == "cpp":
        task = {**task, "context": (task.get("context") or "") + "\n#include <cstdlib>"}
    row = completion_row(task, SERVER_EXITS[language], LIMITS, verdict="tests")
    assert row["tests_verdict"] != "passed" and row["pass_at_1"] == 0.0, row


WRONG_REFERENCE = {
    "python": ({**ADD["python"], "task_id": "x/pwrongref", "code": "def add_numbers(a: int, b: int) -> int:\n    return a - b\n"},
               "    return a * b\n", "failed"),
    "python crash": ({**ADD["python"], "task_id": "x/pwrongref2", "code": "def add_numbers(a: int, b: int) -> int:\n    return a - b\n"},
                     "    import os\n    os.kill(os.getpid(), 9)\n", None),
    "cpp": ({**ADD["cpp"], "task_id": "x/cwrongref", "code": ADD["cpp"]["code"].replace("a + b", "a + c")},
            "\n    return a + d;\n}\n", "compile_error"),
}


@needs_bwrap
@pytest.mark.parametrize("case", sorted(WRONG_REFERENCE))
def test_a_reference_that_fails_its_own_tests_makes_a_task_error(case):
    task, completion, tests_verdict = WRONG_REFERENCE[case]
    row = completion_row(task, completion, LIMITS)
    assert (row["status"], row["value_verdict"], row["pass_at_1"]) == ("error", "error", 0.0), row
    assert row["tests_verdict"] == tests_verdict if tests_verdict else row["tests_verdict"] != "passed", row
    assert "reference solution does not pass" in row["reason"], row


def _square(language: str, signature: str, code: str, tests: str, context: str | None = None) -> dict:
    task = {**ADD[language], "task_id": f"x/{language}square", "entry_point": "square", "signature": signature,
            "code": code, "tests": tests}
    return task if context is None else {**task, "context": context}


# Tests that call the function from several threads at once: each proxy sends a call and reads
# its reply under one lock (Python's and JavaScript's proxies are not covered here).
CONCURRENT = {
    "go": _square("go", "func square(x int) int", "func square(x int) int {\n\treturn x * x\n}\n",
                  "import \"sync\"\n\nfunc main() {\n\tvar wg sync.WaitGroup\n\tres := make([]int, 64)\n"
                  "\tfor i := 0; i < 64; i++ {\n\t\twg.Add(1)\n\t\tgo func(i int) {\n\t\t\tdefer wg.Done()\n"
                  "\t\t\tres[i] = square(i)\n\t\t}(i)\n\t}\n\twg.Wait()\n\tfor i := range res {\n"
                  "\t\tif res[i] != i*i {\n\t\t\tpanic(\"square\")\n\t\t}\n\t}\n}\n"),
    "cpp": _square("cpp", "long square(long x)", "long square(long x) {\n    return x * x;\n}\n",
                   "int main() {\n    std::vector<long> res(32);\n    std::vector<std::thread> ts;\n"
                   "    for (long i = 0; i < 32; ++i) ts.emplace_back([&res, i] { res[i] = square(i); });\n"
                   "    for (auto& t : ts) t.join();\n    for (long i = 0; i < 32; ++i) assert(res[i] == i * i);\n"
                   "    return 0;\n}\n", ADD["cpp"]["context"] + "\n#include <thread>"),
    "rust": _square("rust", "fn square(x: i64) -> i64", "fn square(x: i64) -> i64 {\n    x * x\n}\n",
                    "fn main() {\n    let hs: Vec<_> = (0..32i64).map(|i| std::thread::spawn(move || (i, square(i)))).collect();\n"
                    "    for h in hs {\n        let (i, s) = h.join().unwrap();\n        assert_eq!(s, i * i);\n    }\n}\n"),
    "java": {**_square("java", "public static long square(long x)",
                       "public class Solution {\n    public static long square(long x) {\n        return x * x;\n    }\n}\n",
                       "public class Main {\n    public static void main(String[] args) {\n"
                       "        long[] got = java.util.stream.LongStream.range(0, 500).parallel().map(Solution::square).toArray();\n"
                       "        for (int i = 0; i < got.length; i++) if (got[i] != (long) i * i) throw new AssertionError(\"square\");\n"
                       "    }\n}\n"), "entry_point": "Main"},
}


@needs_bwrap
@pytest.mark.parametrize("language", sorted(CONCURRENT))
def test_concurrent_calls_from_the_tests_threads_pass(language):
    task = CONCURRENT[language]
    row = completion_row(task, reference_completion(task), LIMITS)
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row
