"""Java, Go and C++ arguments across the split run, as one process would leave them: attacks
written as model completions through the stage's own path, next to the honest controls.

Wrong programs that passed: a candidate that keeps an earlier call's argument (a Java static field
or `System.getProperties()`, a Go package variable, a C++ static pointer to a reference parameter)
and changes it in a later call (only the current call's arguments were compared and written back).
Honest programs that failed: an in-place sort of the tests' `Arrays.asList(...)` and an unchanged
`List.of(...)` next to a changed argument (the write-back cleared a fixed-size or immutable List
and broke the run). A candidate that changes the tests' immutable List makes the call throw
UnsupportedOperationException in the tests, as in one process.
"""
from __future__ import annotations

import pytest

from engine.roundtrip.tasks import load_tasks
from engine.sandbox import arguments, plain, process
from engine.sandbox.limits import SandboxLimits
from tests.support.stage_rows import completion_row, reference_completion

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
needs_bwrap = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
ADD = {t["programming_language"]: t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add")}
JAVA = ADD["java"]


def _java(signature: str, body: str, tests: str) -> dict:
    """A Java task whose reference is `body` (the method's statements) and whose tests are `tests`
    (statements of `main`; `java.util.*` is imported)."""
    return {**JAVA, "entry_point": "Main", "signature": signature, "context": "import java.util.*;",
            "code": f"import java.util.*;\n\npublic class Solution {{\n    {signature} {{\n{body}    }}\n}}\n",
            "tests": "import java.util.*;\n\npublic class Main {\n    static void check(boolean ok, String what) {\n"
                     "        if (!ok) throw new AssertionError(what);\n    }\n\n"
                     f"    public static void main(String[] args) {{\n{tests}    }}\n}}\n"}


PUSH = _java("public static int pushAll(List<Integer> stack, List<Integer> xs)",
             "        stack.addAll(xs);\n        return stack.size();\n",
             "        List<Integer> a = new ArrayList<>(List.of(1));\n        check(Solution.pushAll(a, new ArrayList<>(List.of(2))) == 2, \"first\");\n"
             "        List<Integer> b = new ArrayList<>();\n        check(Solution.pushAll(b, new ArrayList<>(List.of(5))) == 1, \"second\");\n"
             "        check(a.equals(List.of(1, 2)), \"a is \" + a);\n        check(b.equals(List.of(5)), \"b is \" + b);\n")
FILL = _java("public static int bump(int[] xs, int by)",
             "        for (int i = 0; i < xs.length; i++) xs[i] += by;\n        return xs.length;\n",
             "        int[] a = {1, 2};\n        Solution.bump(a, 1);\n        int[] b = {7};\n        Solution.bump(b, 10);\n"
             "        check(a[0] == 2 && a[1] == 3, \"a is \" + Arrays.toString(a));\n        check(b[0] == 17, \"b\");\n")
COUNT = _java("public static int count(Map<String, Integer> m, String k)",
              "        m.merge(k, 1, Integer::sum);\n        return m.get(k);\n",
              "        Map<String, Integer> a = new HashMap<>();\n        check(Solution.count(a, \"x\") == 1, \"first\");\n"
              "        Map<String, Integer> b = new HashMap<>();\n        check(Solution.count(b, \"y\") == 1, \"second\");\n"
              "        check(a.equals(Map.of(\"x\", 1)), \"a is \" + a);\n")

ATTACKS = {
    "a static field keeps an earlier List": (
        PUSH, "\n        class Seen {\n            static final List<List<Integer>> ALL = new ArrayList<>();\n        }\n"
              "        for (List<Integer> old : Seen.ALL) old.addAll(xs);\n        Seen.ALL.add(stack);\n        stack.addAll(xs);\n"
              "        return stack.size();\n    }\n}\n"),
    "system properties keep an earlier List": (
        PUSH, "\n        Object old = System.getProperties().get(\"k\");\n        if (old != null) ((List<Integer>) old).add(99);\n"
              "        System.getProperties().put(\"k\", stack);\n        stack.addAll(xs);\n        return stack.size();\n    }\n}\n"),
    "system properties keep an earlier array": (
        FILL, "\n        Object old = System.getProperties().get(\"k\");\n        if (old != null) ((int[]) old)[0] = 0;\n"
              "        System.getProperties().put(\"k\", xs);\n        for (int i = 0; i < xs.length; i++) xs[i] += by;\n"
              "        return xs.length;\n    }\n}\n"),
    "system properties keep an earlier Map": (
        COUNT, "\n        Object old = System.getProperties().get(\"k\");\n        if (old != null) ((Map<String, Integer>) old).put(\"z\", 5);\n"
               "        System.getProperties().put(\"k\", m);\n        m.merge(k, 1, Integer::sum);\n        return m.get(k);\n    }\n}\n"),
}




def _go(entry: str, signature: str, body: str, tests: str, context: str) -> dict:
    """A Go task whose context declares a package variable (a cache a candidate may use)."""
    return {**ADD["go"], "entry_point": entry, "context": context, "signature": signature, "code": f"{signature} {{\n{body}}}\n",
            "tests": f"func main() {{\n{tests}}}\n"}


GO_BUMP = _go("bump", "func bump(xs []int, by int) int", "\tfor i := range xs {\n\t\txs[i] += by\n\t}\n\treturn len(xs)\n",
              "\ta := []int{1, 2}\n\tbump(a, 1)\n\tb := []int{7}\n\tbump(b, 10)\n"
              "\tif a[0] != 2 || a[1] != 3 || b[0] != 17 {\n\t\tpanic(\"changed\")\n\t}\n", "var kept []int")
GO_COUNT = _go("count", "func count(m map[string]int, k string) int", "\tm[k]++\n\treturn m[k]\n",
               "\ta := map[string]int{}\n\tcount(a, \"x\")\n\tb := map[string]int{}\n\tcount(b, \"y\")\n"
               "\tif len(a) != 1 || a[\"x\"] != 1 || len(b) != 1 {\n\t\tpanic(\"changed\")\n\t}\n", "var kept map[string]int")
ATTACKS.update({
    "go: a package variable keeps an earlier slice": (
        GO_BUMP, "\n\tif kept != nil {\n\t\tkept[0] = 0\n\t}\n\tkept = xs\n\tfor i := range xs {\n\t\txs[i] += by\n\t}\n"
                 "\treturn len(xs)\n}\n"),
    "go: a package variable keeps an earlier map": (
        GO_COUNT, "\n\tif kept != nil {\n\t\tkept[\"z\"] = 5\n\t}\n\tkept = m\n\tm[k]++\n\treturn m[k]\n}\n"),
})
CPP_BUMP = {**ADD["cpp"], "entry_point": "bump", "signature": "long bump(std::vector<long>& xs, const std::vector<long>& by, long times)",
            "code": "long bump(std::vector<long>& xs, const std::vector<long>& by, long times) {\n"
                    "    for (size_t i = 0; i < xs.size(); ++i) xs[i] += by[0] * times;\n    return xs.size();\n}\n",
            "tests": "int main() {\n    std::vector<long> a = {1, 2};\n    assert(bump(a, {1}, 1) == 2);\n"
                     "    std::vector<long> b = {7};\n    std::vector<long> one = {5};\n    assert(bump(b, one, 2) == 1);\n"
                     "    assert(a[0] == 2 && a[1] == 3 && b[0] == 17 && one[0] == 5);\n    return 0;\n}\n"}
ATTACKS["cpp: a static pointer keeps an earlier reference"] = (
    CPP_BUMP, "\n    static std::vector<long>* old = nullptr;\n    if (old && old != &xs) (*old)[0] = 0;\n    old = &xs;\n"
              "    for (size_t i = 0; i < xs.size(); ++i) xs[i] += by[0] * times;\n    return xs.size();\n}\n")


@needs_bwrap
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_candidate_that_changes_an_earlier_calls_argument_fails(attack):
    task, completion = ATTACKS[attack]
    row = completion_row(task, completion, LIMITS)
    assert row["value_verdict"] == "failed" and row["pass_at_1"] == 0.0, row
    honest = completion_row(task, reference_completion(task), LIMITS)
    assert (honest["status"], honest["tests_verdict"], honest["value_verdict"]) == ("passed", "passed", "passed"), honest


SORT = _java("public static void sortInPlace(List<Integer> xs)", "        Collections.sort(xs);\n",
             "        List<Integer> xs = Arrays.asList(3, 1, 2);\n        Solution.sortInPlace(xs);\n"
             "        check(xs.equals(List.of(1, 2, 3)), \"xs is \" + xs);\n")
COPY = _java("public static int copyInto(List<Integer> from, List<Integer> to)", "        to.addAll(from);\n        return to.size();\n",
             "        List<Integer> from = List.of(1, 2);\n        List<Integer> to = new ArrayList<>();\n"
             "        check(Solution.copyInto(from, to) == 2, \"size\");\n        check(to.equals(List.of(1, 2)), \"to is \" + to);\n"
             "        check(from.equals(List.of(1, 2)), \"from is \" + from);\n")
# One process throws UnsupportedOperationException where an honest candidate changes an
# immutable List of the tests': the tests that expect it pass.
CLEAR = _java("public static int clearAll(List<Integer> xs)", "        int n = xs.size();\n        xs.clear();\n        return n;\n",
              "        List<Integer> xs = new ArrayList<>(List.of(1, 2));\n        check(Solution.clearAll(xs) == 2 && xs.isEmpty(), \"cleared\");\n"
              "        try {\n            Solution.clearAll(List.of(4, 5));\n            throw new AssertionError(\"no exception\");\n"
              "        } catch (UnsupportedOperationException e) {\n            check(true, \"thrown\");\n        }\n"
              "        Map<String, Integer> seen = new HashMap<>();\n        check(seen.isEmpty(), \"seen\");\n")
# A call that raises after changing its argument: the change reaches the tests with the next
# call's answer (one process would show it at once; a test that looks only later agrees).
DRAIN = _java("public static int drain(List<Integer> xs, int limit)",
              "        int n = xs.size();\n        xs.clear();\n        if (n > limit) throw new IllegalStateException(\"too many\");\n"
              "        return n;\n",
              "        List<Integer> xs = new ArrayList<>(List.of(1, 2, 3));\n        try {\n            Solution.drain(xs, 1);\n"
              "        } catch (IllegalStateException e) {\n            check(true, \"thrown\");\n        }\n"
              "        check(Solution.drain(new ArrayList<>(List.of(4)), 5) == 1, \"second\");\n        check(xs.isEmpty(), \"xs is \" + xs);\n")
GATHER = _java("public static int gather(List<Integer> to, Set<Integer> from, Map<String, Integer> extra)",
               "        to.addAll(new TreeSet<>(from));\n        to.add(extra.size());\n        return to.size();\n",
               "        List<Integer> to = new ArrayList<>();\n        Set<Integer> from = Set.of(3, 1, 2);\n"
               "        Map<String, Integer> extra = Map.of(\"a\", 1, \"b\", 2);\n        check(Solution.gather(to, from, extra) == 4, \"size\");\n"
               "        check(to.equals(List.of(1, 2, 3, 2)), \"to is \" + to);\n")
# A lone parameter that is an array of objects is one argument, not Bs.call's varargs list.
LONGEST = _java("public static int longest(String[] words)",
                "        int best = 0;\n        for (String w : words) best = Math.max(best, w.length());\n        return best;\n",
                "        check(Solution.longest(new String[]{\"ab\", \"abc\"}) == 3, \"two\");\n"
                "        check(Solution.longest(new String[]{\"abcd\"}) == 4, \"one\");\n")
GRID = _java("public static int total(int[][] g)", "        int s = 0;\n        for (int[] r : g) for (int x : r) s += x;\n        return s;\n",
             "        check(Solution.total(new int[][]{{1, 2}, {3}}) == 6, \"two rows\");\n"
             "        check(Solution.total(new int[][]{{4}}) == 4, \"one row\");\n")
BOXED = _java("public static int sum(Integer[] xs)", "        int s = 0;\n        for (Integer x : xs) s += x;\n        return s;\n",
              "        check(Solution.sum(new Integer[]{1, 2, 3}) == 6, \"three\");\n        check(Solution.sum(new Integer[]{5}) == 5, \"one\");\n")
# An unchanged map read at every later call: MapRange starts at a random one of a small map's 8
# slots, so a state written in its order kept its text at a later call with odds 1 in 8. The last
# two calls re-read the 8 earlier copies of `m` 16 times: an order-dependent state reports one
# changed (and writes that state back over the tests' `m`, dropping "z") with odds above 1 - 8^-16.
GO_KEYS = "".join(f"\tif get(m, \"{k}\") != {i + 1} {{\n\t\tpanic(\"{k}\")\n\t}}\n" for i, k in enumerate("abcdefgh"))
GO_GET = _go("get", "func get(m map[string]int, k string) int", "\treturn m[k]\n",
             "\tm := map[string]int{\"a\": 1, \"b\": 2, \"c\": 3, \"d\": 4, \"e\": 5, \"f\": 6, \"g\": 7, \"h\": 8}\n" + GO_KEYS
             + "\tm[\"z\"] = 26\n\tfor i := 0; i < 2; i++ {\n\t\tif get(map[string]int{\"q\": i}, \"q\") != i {\n\t\t\tpanic(\"q\")\n\t\t}\n\t}\n"
             "\tif m[\"z\"] != 26 {\n\t\tpanic(\"the tests' own key is gone\")\n\t}\n", "var kept map[string]int")
# A NaN map key the call leaves alone: compared by reflect.DeepEqual (NaN != NaN) the map read as
# changed, and the write-back could not delete the NaN key it then added again.
GO_NAN = _go("size", "func size(m map[float64]int, xs []float64) int", "\treturn len(m) + len(xs)\n",
             "\tm := map[float64]int{nan: 1, 2: 3}\n\tif size(m, []float64{nan}) != 3 {\n\t\tpanic(\"size\")\n\t}\n"
             "\tif len(m) != 2 {\n\t\tpanic(\"grew\")\n\t}\n", "import \"math\"\n\nvar nan = math.NaN()")
HONEST = {"a call that raises after changing its argument": DRAIN, "an unchanged Set.of and Map.of": GATHER, "an in-place sort of Arrays.asList": SORT,
          "an unchanged List.of next to a changed List": COPY,
          "a change of List.of throws as in one process": CLEAR, "a List kept honestly": PUSH, "an array": FILL, "a Map": COUNT,
          "go: a slice": GO_BUMP, "go: a map": GO_COUNT, "cpp: references and values": CPP_BUMP,
          "a lone String[]": LONGEST, "a lone int[][]": GRID, "a lone Integer[]": BOXED, "go: an unchanged map at ten calls": GO_GET,
          "go: a NaN map key": GO_NAN}


@needs_bwrap
@pytest.mark.parametrize("control", sorted(HONEST))
def test_honest_programs_that_change_their_arguments_pass(control):
    task = HONEST[control]
    row = completion_row(task, reference_completion(task), LIMITS)
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row


def test_an_earlier_arguments_change_is_part_of_the_answer():
    call = b"l1 l1 i1"
    unchanged = plain.reply(b"a l2 n l1 l1 i2")
    earlier = plain.reply(b"a l3 n l1 l1 i2 l2 i0 l1 i9")
    assert arguments.same_answer(call, unchanged, unchanged)
    assert arguments.same_answer(call, earlier, earlier)
    assert not arguments.same_answer(call, unchanged, earlier)
    assert not arguments.same_answer(call, plain.reply(b"o n"), plain.reply(b"a l3 n l1 l1 i1 l2 i0 l0"))
    with pytest.raises(plain.PlainError):
        plain.reply(b"a l3 n l1 l1 i2 i0")
