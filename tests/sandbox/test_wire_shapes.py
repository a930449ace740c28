"""Values of two types that share one shape on the stream, written as model completions through
the stage's own path (`generation.code_from_completion`, then `orchestrate.execute_row`).

Each forgery returns what the tests' own equality (Java's `equals`, JavaScript's
`deepStrictEqual`, Go's `== nil` or a write) tells apart from the reference's answer; crossing as
the same plain value, each passed both verdicts. Typed values (`g <name> <value>`, a nil slice or
map as `n`) carry the difference: each forgery fails, and the honest controls (an answer of the
same type as the reference's) pass on both verdicts.
"""
from __future__ import annotations

import pytest

from engine.roundtrip.tasks import load_tasks
from engine.sandbox import process
from engine.sandbox.limits import SandboxLimits
from tests.support.stage_rows import completion_row

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
pytestmark = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
ADD = {t["programming_language"]: t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add")}


def _java(task_id: str, signature: str, body: str, checks: list[str]) -> dict:
    tests = "".join(f"        if (!({c})) throw new AssertionError(\"check {i}\");\n" for i, c in enumerate(checks))
    return {**ADD["java"], "task_id": task_id, "signature": signature,
            "code": f"public class Solution {{\n    {signature} {{\n{body}    }}\n}}\n",
            "tests": f"public class Main {{\n    public static void main(String[] args) {{\n{tests}    }}\n}}\n"}


def _javascript(task_id: str, signature: str, body: str, tests: str) -> dict:
    name = signature.split()[1].split("(")[0]
    return {**ADD["javascript"], "task_id": task_id, "signature": signature, "entry_point": name,
            "code": f"{signature} {{\n{body}}}\n", "tests": "const assert = require('node:assert');\n" + tests}


def _go(task_id: str, signature: str, body: str, tests: str) -> dict:
    name = signature.split()[1].split("(")[0]
    return {**ADD["go"], "task_id": task_id, "signature": signature, "entry_point": name,
            "code": f"{signature} {{\n{body}}}\n", "tests": f"func main() {{\n{tests}}}\n"}


OPTIONAL = _java("optional", "public static java.util.Optional<Integer> positive(int x)",
                 "        return x > 0 ? java.util.Optional.of(x) : java.util.Optional.empty();\n",
                 ["java.util.Optional.empty().equals(Solution.positive(-1))", "Solution.positive(2).get() == 2"])
HEAD_TAIL = _java("head_tail", "public static java.util.List<Object> headTail(String s)",
                  "        return java.util.Arrays.asList(s.substring(0, 1), s.substring(1));\n",
                  ['Solution.headTail("ab").equals(java.util.Arrays.asList("a", "b"))'])
TAGGED_LONG = _java("tagged_long", "public static java.util.List<Object> tagged(int x)",
                    "        return java.util.Arrays.asList(\"n\", (long) x);\n",
                    ['Solution.tagged(5).equals(java.util.Arrays.asList("n", 5L))'])
TAGGED_INT = _java("tagged_int", "public static java.util.List<Object> tagged(int x)",
                   "        return java.util.Arrays.asList(\"n\", x);\n",
                   ['Solution.tagged(5).equals(java.util.Arrays.asList("n", 5))'])
MARK = _java("mark", "public static String mark(String s)", "        return s + \"?\";\n", ['Solution.mark("a").equals("a?")'])

COUNTS = _javascript("counts", "function counts(s)",
                     "  const o = {};\n  for (const c of s) o[c] = (o[c] || 0) + 1;\n  return o;\n",
                     "assert.deepStrictEqual(counts('aba'), {a: 2, b: 1});\n")
BLANKS = _javascript("blanks", "function blanks(n)", "  return new Array(n).fill(undefined);\n",
                     "assert.deepStrictEqual(blanks(2), [undefined, undefined]);\n")
NEGATE = _javascript("negate", "function negate(x)", "  return -x;\n",
                     "assert.deepStrictEqual(negate(0), -0);\nassert.deepEqual(negate(0), 0);\nassert.strictEqual(negate(2), -2);\n")
PAIRS = _javascript("pairs", "function pairs(s)", "  return new Map([...s].map((c, i) => [c, i]));\n",
                    "assert.deepStrictEqual(pairs('ab'), new Map([['a', 0], ['b', 1]]));\n")

EVENS = _go("evens", "func evens(xs []int) []int",
            "\tout := []int{}\n\tfor _, x := range xs {\n\t\tif x%2 == 0 {\n\t\t\tout = append(out, x)\n\t\t}\n\t}\n\treturn out\n",
            '\tif r := evens([]int{1}); r == nil || len(r) != 0 {\n\t\tpanic("evens([1])")\n\t}\n'
            '\tif r := evens([]int{1, 2}); len(r) != 1 || r[0] != 2 {\n\t\tpanic("evens([1, 2])")\n\t}\n')
COUNT_WORDS = _go("count_words", "func countWords(words []string) map[string]int",
                  "\tm := map[string]int{}\n\tfor _, w := range words {\n\t\tm[w]++\n\t}\n\treturn m\n",
                  '\tm := countWords([]string{})\n\tm["x"] = 1\n'
                  '\tif countWords([]string{"a", "a"})["a"] != 2 {\n\t\tpanic("count")\n\t}\n')
NILS = _go("nils", "func firstEven(xs []int) []int",
           "\tfor _, x := range xs {\n\t\tif x%2 == 0 {\n\t\t\treturn []int{x}\n\t\t}\n\t}\n\treturn nil\n",
           '\tif firstEven([]int{1}) != nil {\n\t\tpanic("nil")\n\t}\n'
           '\tif r := firstEven([]int{2}); len(r) != 1 {\n\t\tpanic("one")\n\t}\n')

# (task, completion: the function's body after its signature's brace, wrong in the shape only)
FORGERIES = {
    "java: null for Optional.empty()": (OPTIONAL, "\n        return x > 0 ? java.util.Optional.of(x) : null;\n    }\n}\n"),
    "java: a Character for a one-character String in a List<Object>":
        (HEAD_TAIL, "\n        return java.util.Arrays.asList(s.charAt(0), s.substring(1));\n    }\n}\n"),
    "java: an Integer for a Long in a List<Object>": (TAGGED_LONG, "\n        return java.util.Arrays.asList(\"n\", x);\n    }\n}\n"),
    "java: a lone surrogate for '?'": (MARK, "\n        return s + \"\\uD800\";\n    }\n}\n"),
    "javascript: a Map for a plain object":
        (COUNTS, "\n  const m = new Map();\n  for (const c of s) m.set(c, (m.get(c) || 0) + 1);\n  return m;\n}\n"),
    "javascript: an Object.create(null) object for {}":
        (COUNTS, "\n  const o = Object.create(null);\n  for (const c of s) o[c] = (o[c] || 0) + 1;\n  return o;\n}\n"),
    "javascript: array holes for undefined": (BLANKS, "\n  return new Array(n);\n}\n"),
    "javascript: 0 for -0": (NEGATE, "\n  return 0 - x;\n}\n"),
    "go: a nil slice for an empty one":
        (EVENS, "\n\tvar out []int\n\tfor _, x := range xs {\n\t\tif x%2 == 0 {\n\t\t\tout = append(out, x)\n\t\t}\n\t}\n\treturn out\n}\n"),
    "go: a nil map for an empty one":
        (COUNT_WORDS, "\n\tvar m map[string]int\n\tfor _, w := range words {\n\t\tif m == nil {\n\t\t\tm = map[string]int{}\n\t\t}\n"
                      "\t\tm[w]++\n\t}\n\treturn m\n}\n"),
}

# Right answers of the reference's own types, including the shapes the forgeries fake.
HONEST = {
    "java: Optional.empty() and an Optional": (OPTIONAL, "\n        if (x <= 0) return java.util.Optional.empty();\n"
                                                         "        return java.util.Optional.of(x);\n    }\n}\n"),
    "java: an Integer in a List<Object>, as the tests expect": (TAGGED_INT, "\n        return java.util.Arrays.asList(\"n\", x);\n    }\n}\n"),
    "java: a one-character String in a List<Object>": (HEAD_TAIL, "\n        return java.util.Arrays.asList(\"\" + s.charAt(0), s.substring(1));\n    }\n}\n"),
    "javascript: -0, and 0 under a loose deepEqual": (NEGATE, "\n  return x === 0 ? -0 : -x;\n}\n"),
    "javascript: a Map for a Map": (PAIRS, "\n  const m = new Map();\n  [...s].forEach((c, i) => m.set(c, i));\n  return m;\n}\n"),
    "javascript: undefined for undefined": (BLANKS, "\n  return Array.from({length: n}, () => undefined);\n}\n"),
    "go: nil for nil, an empty map for an empty one":
        (NILS, "\n\tfor i := range xs {\n\t\tif xs[i]%2 == 0 {\n\t\t\treturn xs[i : i+1]\n\t\t}\n\t}\n\treturn nil\n}\n"),
    "go: an empty map built another way": (COUNT_WORDS, "\n\tm := make(map[string]int)\n\tfor _, w := range words {\n\t\tm[w] += 1\n\t}\n\treturn m\n}\n"),
}


def _row(task: dict, completion: str) -> dict:
    return completion_row(task, completion, LIMITS)


@pytest.mark.parametrize("name", list(FORGERIES))
def test_a_value_of_another_type_with_the_same_shape_fails(name):
    row = _row(*FORGERIES[name])
    assert row["pass_at_1"] == 0.0 and row["status"] == "failed", row
    assert "failed" in (row["tests_verdict"], row["value_verdict"]), row


@pytest.mark.parametrize("name", list(HONEST))
def test_an_answer_of_the_reference_s_types_passes(name):
    row = _row(*HONEST[name])
    assert (row["status"], row["tests_verdict"], row["value_verdict"], row["pass_at_1"]) == ("passed", "passed", "passed", 1.0), row
