"""Object identity crosses the split run both ways, as it would in one process: attacks written as
model completions, through the stage's own path, next to the honest controls that must pass.

Wrong programs that passed: a "deep copy" returning `list(grid)` or `grid` (the result shares rows
with the argument), a memoised function returning its cached list that the tests changed, a later
call changing an earlier call's argument; in JavaScript a key deleted and added again (key order),
a property cached on an array argument, a non-enumerable `toString` added, `Object.freeze` on the
argument, a shallow clone; in Go, Java, Rust and C++ a "sorted copy" that sorts its argument. Honest programs that
failed: the same row twice in one grid, one list passed as both arguments, the tests holding a row
while the outer list changes length, a JavaScript Map with an array key.
"""
from __future__ import annotations

import pytest

from engine.roundtrip.tasks import load_tasks
from engine.sandbox import process
from engine.sandbox.languages import toolchain_missing
from engine.sandbox.limits import SandboxLimits
from tests.support.stage_rows import completion_row, js_task, reference_completion

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
needs_bwrap = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
POLY = {t["task_id"]: t for t in load_tasks("polyglot").to_pylist()}
ADD = {t["programming_language"]: t for t in POLY.values() if t["task_id"].endswith("/add")}


def _py(entry: str, signature: str, body: str, tests: str) -> dict:
    return {**ADD["python"], "entry_point": entry, "signature": signature, "code": f"{signature}\n{body}", "tests": tests}




CLONE = _py("clone_grid", "def clone_grid(grid: list) -> list:", "    return [row[:] for row in grid]\n",
            "def check(candidate):\n    g = [[1, 2], [3, 4]]\n    c = candidate(g)\n    assert c == [[1, 2], [3, 4]]\n"
            "    c[0][0] = 9\n    assert g == [[1, 2], [3, 4]]\n")
SQUARES = _py("squares", "def squares(n: int) -> list:", "    return [i * i for i in range(n)]\n",
              "def check(candidate):\n    r = candidate(3)\n    assert r == [0, 1, 4]\n    r.append(99)\n"
              "    assert candidate(3) == [0, 1, 4]\n")
PUSH = _py("push_all", "def push_all(stack: list, xs: list) -> int:", "    stack.extend(xs)\n    return len(stack)\n",
           "def check(candidate):\n    a = [1]\n    assert candidate(a, [2]) == 2\n    b = []\n    assert candidate(b, [5]) == 1\n"
           "    assert a == [1, 2]\n    assert b == [5]\n")
JS_BUMP = js_task("bump", "function bump(o, k)", "\n  o[k] += 1;\n}\n",
              "const o = {a: 1, b: 2};\nbump(o, 'a');\nassert.deepStrictEqual(o, {a: 2, b: 2});\n"
              "assert.strictEqual(JSON.stringify(o), '{\"a\":2,\"b\":2}');\n")
JS_SUM = js_task("sumOf", "function sumOf(xs)", "\n  return xs.reduce((a, b) => a + b, 0);\n}\n",
             "const xs = [3, 1, 2];\nassert.strictEqual(sumOf(xs), 6);\nassert.deepStrictEqual(xs, [3, 1, 2]);\n"
             "xs.push(4);\nassert.strictEqual(sumOf(xs), 10);\n")
JS_KEYS = js_task("countKeys", "function countKeys(o)", "\n  return Object.keys(o).length;\n}\n",
              "const o = {a: 1};\nassert.strictEqual(countKeys(o), 1);\nassert.strictEqual(o.toString(), '[object Object]');\n")
JS_CLONE = js_task("cloneGrid", "function cloneGrid(g)", "\n  return g.map(r => [...r]);\n}\n",
               "const g = [[1, 2], [3, 4]];\nconst c = cloneGrid(g);\nassert.deepStrictEqual(c, [[1, 2], [3, 4]]);\n"
               "c[0][0] = 9;\nassert.deepStrictEqual(g, [[1, 2], [3, 4]]);\n")
GO_SORTED = {**ADD["go"], "entry_point": "sortedCopy", "signature": "func sortedCopy(xs []int) []int", "context": "import \"sort\"",
             "code": "func sortedCopy(xs []int) []int {\n\tys := append([]int{}, xs...)\n\tsort.Ints(ys)\n\treturn ys\n}\n",
             "tests": "func main() {\n\txs := []int{3, 1, 2}\n\tys := sortedCopy(xs)\n\tif ys[0] != 1 || ys[2] != 3 {\n"
                      "\t\tpanic(\"sorted\")\n\t}\n\tif xs[0] != 3 || xs[1] != 1 {\n\t\tpanic(\"argument changed\")\n\t}\n}\n"}

JAVA_SORTED = {**ADD["java"], "entry_point": "Main", "signature": "public static int[] sortedCopy(int[] xs)",
               "code": "public class Solution {\n    public static int[] sortedCopy(int[] xs) {\n        int[] ys = xs.clone();\n"
                       "        java.util.Arrays.sort(ys);\n        return ys;\n    }\n}\n",
               "tests": "public class Main {\n    public static void main(String[] args) {\n        int[] xs = {3, 1, 2};\n"
                        "        int[] ys = Solution.sortedCopy(xs);\n        if (ys[0] != 1 || ys[2] != 3) throw new AssertionError(\"sorted\");\n"
                        "        if (xs[0] != 3 || xs[1] != 1) throw new AssertionError(\"argument changed\");\n    }\n}\n"}
RUST_SORTED = {**ADD["rust"], "entry_point": "sorted_copy", "signature": "fn sorted_copy(xs: &mut Vec<i64>) -> Vec<i64>",
               "code": "fn sorted_copy(xs: &mut Vec<i64>) -> Vec<i64> {\n    let mut ys = xs.clone();\n    ys.sort();\n    ys\n}\n",
               "tests": "fn main() {\n    let mut xs = vec![3, 1, 2];\n    let ys = sorted_copy(&mut xs);\n"
                        "    assert_eq!(ys, vec![1, 2, 3]);\n    assert_eq!(xs, vec![3, 1, 2]);\n}\n"}
CPP_SORTED = {**ADD["cpp"], "entry_point": "sorted_copy", "signature": "std::vector<long> sorted_copy(std::vector<long>& xs)",
              "context": ADD["cpp"]["context"] + "\n#include <algorithm>",
              "code": "std::vector<long> sorted_copy(std::vector<long>& xs) {\n    std::vector<long> ys = xs;\n"
                      "    std::sort(ys.begin(), ys.end());\n    return ys;\n}\n",
              "tests": "int main() {\n    std::vector<long> xs = {3, 1, 2};\n    std::vector<long> ys = sorted_copy(xs);\n"
                       "    assert((ys == std::vector<long>{1, 2, 3}));\n    assert((xs == std::vector<long>{3, 1, 2}));\n    return 0;\n}\n"}

ATTACKS = {
    "python shallow copy": (CLONE, "    return list(grid)\n"),
    "python returns its argument": (CLONE, "    return grid\n"),
    "python returns its cached list": (SQUARES, "    cache = squares.__dict__.setdefault('cache', {})\n"
                                                "    if n not in cache:\n        cache[n] = [i * i for i in range(n)]\n"
                                                "    return cache[n]\n"),
    "python changes an earlier call's argument": (PUSH, "    seen = push_all.__dict__.setdefault('seen', [])\n"
                                                        "    for old in seen:\n        old.extend(xs)\n    seen.append(stack)\n"
                                                        "    stack.extend(xs)\n    return len(stack)\n"),
    "javascript changes key order": (JS_BUMP, "\n  const v = o[k];\n  delete o[k];\n  o[k] = v + 1;\n}\n"),
    "javascript caches on its array argument": (JS_SUM, "\n  if (xs.total === undefined) xs.total = 0;\n"
                                                        "  return xs.reduce((a, b) => a + b, 0);\n}\n"),
    "javascript freezes its argument": (JS_SUM, "\n  Object.freeze(xs);\n  return xs.reduce((a, b) => a + b, 0);\n}\n"),
    "javascript adds a hidden toString": (JS_KEYS, "\n  Object.defineProperty(o, 'toString', {value: () => 'x', enumerable: false});\n"
                                                   "  return Object.keys(o).length;\n}\n"),
    "javascript shallow clone": (JS_CLONE, "\n  return [...g];\n}\n"),
    "go sorts its argument": (GO_SORTED, "\n\tsort.Ints(xs)\n\treturn xs\n}\n"),
    "cpp sorts its argument": (CPP_SORTED, "\n    std::sort(xs.begin(), xs.end());\n    return xs;\n}\n"),
    "rust sorts its argument": (RUST_SORTED, "\n    xs.sort();\n    xs.clone()\n}\n"),
    "java sorts its argument": (JAVA_SORTED, "\n        java.util.Arrays.sort(xs);\n        return xs;\n    }\n}\n"),
}


@needs_bwrap
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_candidate_that_shares_or_changes_the_tests_objects_fails(attack):
    task, completion = ATTACKS[attack]
    if toolchain_missing(task["programming_language"]):
        pytest.skip(toolchain_missing(task["programming_language"]))
    row = completion_row(task, completion, LIMITS)
    assert row["value_verdict"] == "failed" and row["pass_at_1"] == 0.0, row
    honest = completion_row(task, reference_completion(task), LIMITS)
    assert (honest["status"], honest["tests_verdict"], honest["value_verdict"]) == ("passed", "passed", "passed"), honest


HONEST = {
    "python the same row twice": _py("set_cell", "def set_cell(grid: list, i: int, j: int, v: int) -> None:",
                                     "    grid[i][j] = v\n",
                                     "def check(candidate):\n    row = [0, 0]\n    h = [row, row]\n    candidate(h, 0, 0, 7)\n"
                                     "    assert h[0] == [7, 0] and h[1] is row and row == [7, 0]\n"),
    "python one list as both arguments": _py("extend_with", "def extend_with(a: list, b: list) -> int:",
                                             "    a.extend(b)\n    return len(a)\n",
                                             "def check(candidate):\n    ys = [1, 2]\n    assert candidate(ys, ys) == 4\n"
                                             "    assert ys == [1, 2, 1, 2]\n"),
    "python the tests hold a row while the grid grows": _py(
        "grow", "def grow(grid: list) -> None:", "    for row in grid:\n        row.append(0)\n    grid.append([0] * len(grid[0]))\n",
        "def check(candidate):\n    r = [1]\n    g = [r]\n    candidate(g)\n    assert g == [[1, 0], [0, 0]]\n    assert r == [1, 0]\n"),
    "python returns a new list from a cached one": _py(
        "squares", "def squares(n: int) -> list:", "    return [i * i for i in range(n)]\n",
        "def check(candidate):\n    r = candidate(3)\n    r.append(99)\n    assert candidate(3) == [0, 1, 4]\n    assert r[-1] == 99\n"),
    "javascript a Map with an array key": js_task(
        "incr", "function incr(m, k)", "\n  m.set(k, (m.get(k) || 0) + 1);\n  return m.size;\n}\n",
        "const k = [1];\nconst m2 = new Map([[k, 1]]);\nincr(m2, 'z');\nassert.strictEqual(m2.get(k), 1);\n"
        "assert.strictEqual(m2.get('z'), 1);\n"),
    "javascript changes a nested object in place": js_task(
        "addKey", "function addKey(o)", "\n  o.seen = true;\n  o.list.push(1);\n}\n",
        "const o = {list: []};\nconst inner = o.list;\naddKey(o);\nassert.deepStrictEqual(o, {list: [1], seen: true});\n"
        "assert.strictEqual(o.list, inner);\n"),
    "go reverses in place": {**ADD["go"], "entry_point": "reverseInPlace", "signature": "func reverseInPlace(xs []int) int",
                             "code": "func reverseInPlace(xs []int) int {\n\tfor i, j := 0, len(xs)-1; i < j; i, j = i+1, j-1 {\n"
                                     "\t\txs[i], xs[j] = xs[j], xs[i]\n\t}\n\treturn len(xs)\n}\n",
                             "tests": "func main() {\n\txs := []int{1, 2, 3}\n\tif reverseInPlace(xs) != 3 {\n\t\tpanic(\"len\")\n"
                                      "\t}\n\tif xs[0] != 3 || xs[2] != 1 {\n\t\tpanic(\"not reversed\")\n\t}\n}\n"},
    "cpp reverses in place": {
        **ADD["cpp"], "entry_point": "reverse_in_place", "signature": "void reverse_in_place(std::vector<long>& xs)",
        "context": ADD["cpp"]["context"] + "\n#include <algorithm>",
        "code": "void reverse_in_place(std::vector<long>& xs) {\n    std::reverse(xs.begin(), xs.end());\n}\n",
        "tests": "int main() {\n    std::vector<long> xs = {1, 2, 3};\n    reverse_in_place(xs);\n"
                 "    assert((xs == std::vector<long>{3, 2, 1}));\n    return 0;\n}\n"},
    "rust reverses a slice in place": {
        **ADD["rust"], "entry_point": "reverse", "signature": "fn reverse(xs: &mut [i64]) -> usize",
        "code": "fn reverse(xs: &mut [i64]) -> usize {\n    xs.reverse();\n    xs.len()\n}\n",
        "tests": "fn main() {\n    let mut xs = vec![1, 2, 3];\n    assert_eq!(reverse(&mut xs), 3);\n    assert_eq!(xs, vec![3, 2, 1]);\n}\n"},
    "java reverses a List in place": {
        **ADD["java"], "entry_point": "Main", "signature": "public static int reverse(java.util.List<Integer> xs)",
        "code": "public class Solution {\n    public static int reverse(java.util.List<Integer> xs) {\n"
                "        java.util.Collections.reverse(xs);\n        return xs.size();\n    }\n}\n",
        "tests": "public class Main {\n    public static void main(String[] args) {\n"
                 "        java.util.List<Integer> xs = new java.util.ArrayList<>(java.util.List.of(1, 2, 3));\n"
                 "        if (Solution.reverse(xs) != 3) throw new AssertionError(\"size\");\n"
                 "        if (xs.get(0) != 3 || xs.get(2) != 1) throw new AssertionError(\"not reversed\");\n    }\n}\n"},
}


@needs_bwrap
@pytest.mark.parametrize("control", sorted(HONEST))
def test_honest_programs_that_share_objects_pass(control):
    task = HONEST[control]
    if toolchain_missing(task["programming_language"]):
        pytest.skip(toolchain_missing(task["programming_language"]))
    row = completion_row(task, reference_completion(task), LIMITS)
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row
