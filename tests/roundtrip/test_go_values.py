"""Go values that one process tells apart, across the split run, as model completions through the
stage's own path (tests.support.stage_rows), with the honest controls that must pass.

A value behind an interface crosses with its dynamic type (`g <type> <value>`, docs/sandbox.md
"Typed values"): int64(5) is not 5 under `==`, []int is not []interface{} under reflect.DeepEqual,
and a nil *T in an `error` is no nil error (an `error` crosses as its message, so one whose
Error() dereferences the nil *T is not plain data).
A panic crosses with its value (a string stays that string, a runtime error a runtime.Error);
named results sharing a type compile; an argument of the tests' that the wire cannot carry makes
the run an error, never a panic inside the tests' own recover().
"""
from __future__ import annotations

import pytest

from engine.roundtrip.tasks import load_tasks
from engine.sandbox import process
from engine.sandbox.limits import SandboxLimits
from tests.support.stage_rows import completion_row, reference_completion

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
GO = next(t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add") and t["programming_language"] == "go")


def _task(name: str, signature: str, body: str, tests: str, context: str = "") -> dict:
    return {**GO, "task_id": f"x/{name}", "entry_point": signature.split()[1].split("(")[0], "signature": signature,
            "code": f"{signature} {{\n{body}}}\n", "tests": tests, "context": context}


DIV = _task("div", "func safeDiv(a int, b int) (int, error)", "\treturn a / b, nil\n",
            "func main() {\n\tq, err := safeDiv(6, 3)\n\tif err != nil {\n\t\tpanic(\"unexpected error\")\n\t}\n"
            "\tif q != 2 {\n\t\tpanic(\"6/3\")\n\t}\n}\n")
SAFE = _task("safe", "func safeDiv(a int, b int) (int, error)",
             "\tif b == 0 {\n\t\treturn 0, errors.New(\"division by zero\")\n\t}\n\treturn a / b, nil\n",
             "func main() {\n\tif q, err := safeDiv(6, 3); q != 2 || err != nil {\n\t\tpanic(\"6/3\")\n\t}\n"
             "\tif _, err := safeDiv(1, 0); err == nil || err.Error() != \"division by zero\" {\n\t\tpanic(\"1/0\")\n\t}\n}\n",
             context='import "errors"')
PICK = _task("pick", "func pick(n int) interface{}", "\treturn n * 5\n",
             "func main() {\n\tif pick(1) != 5 {\n\t\tpanic(\"pick(1)\")\n\t}\n\tif pick(2) != 10 {\n\t\tpanic(\"pick(2)\")\n\t}\n}\n")
HALF = _task("half", "func half(x float64) interface{}", "\treturn x / 2\n",
             "func main() {\n\tif half(5) != 2.5 {\n\t\tpanic(\"half(5)\")\n\t}\n}\n")
PAIR = _task("pair", "func pair(a int, b int) interface{}", "\treturn []interface{}{a, b}\n",
             "import \"reflect\"\n\nfunc main() {\n\tif !reflect.DeepEqual(pair(1, 2), []interface{}{1, 2}) {\n\t\tpanic(\"pair\")\n\t}\n}\n")
PAIR_INTS = _task("pairints", "func pair(a int, b int) interface{}", "\treturn []int{a, b}\n",
                  "func main() {\n\tp := pair(1, 2).([]int)\n\tif p[0] != 1 || p[1] != 2 {\n\t\tpanic(\"pair\")\n\t}\n}\n")
KIND = _task("kind", "func kind(v interface{}) string", "\treturn fmt.Sprintf(\"%T\", v)\n",
             "func main() {\n\tfor _, c := range []struct {\n\t\tv    interface{}\n\t\twant string\n\t}{{int8(3), \"int8\"}, "
             "{uint16(3), \"uint16\"}, {float32(1.5), \"float32\"}, {[]int{1}, \"[]int\"}, {map[string][]int{\"a\": {1}}, "
             "\"map[string][]int\"}, {[]interface{}{1, \"x\"}, \"[]interface {}\"}, {nil, \"<nil>\"}, {\"s\", \"string\"}} {\n"
             "\t\tif got := kind(c.v); got != c.want {\n\t\t\tpanic(got + \" for \" + c.want)\n\t\t}\n\t}\n}\n",
             context='import "fmt"')
GROUP = _task("group", "func group(n int) interface{}",
              "\treturn map[string]interface{}{\"ints\": []int{n, n + 1}, \"name\": \"g\", \"none\": nil, \"small\": int8(n)}\n",
              "import \"reflect\"\n\nfunc main() {\n\twant := map[string]interface{}{\"ints\": []int{1, 2}, \"name\": \"g\", "
              "\"none\": nil, \"small\": int8(1)}\n\tif !reflect.DeepEqual(group(1), want) {\n\t\tpanic(\"group\")\n\t}\n}\n")
SQRT = _task("sqrt", "func checkedSqrt(n int) int",
             "\tif n < 0 {\n\t\tpanic(\"negative\")\n\t}\n\tr := 0\n\tfor (r+1)*(r+1) <= n {\n\t\tr++\n\t}\n\treturn r\n",
             "func main() {\n\tif checkedSqrt(17) != 4 {\n\t\tpanic(\"sqrt\")\n\t}\n\tfunc() {\n\t\tdefer func() {\n"
             "\t\t\tif r := recover(); r != \"negative\" {\n\t\t\t\tpanic(\"want panic(\\\"negative\\\")\")\n\t\t\t}\n\t\t}()\n"
             "\t\tcheckedSqrt(-1)\n\t}()\n}\n")
AT = _task("at", "func at(xs []int, i int) int", "\treturn xs[i]\n",
           "import \"runtime\"\n\nfunc main() {\n\tif at([]int{7, 8}, 1) != 8 {\n\t\tpanic(\"at\")\n\t}\n\tfunc() {\n"
           "\t\tdefer func() {\n\t\t\tif _, ok := recover().(runtime.Error); !ok {\n\t\t\t\tpanic(\"want a runtime error\")\n"
           "\t\t\t}\n\t\t}()\n\t\tat([]int{7, 8}, 5)\n\t}()\n}\n")
ERRMSG = _task("errmsg", "func mustPos(n int) int", "\tif n < 0 {\n\t\tpanic(errors.New(\"negative\"))\n\t}\n\treturn n\n",
               "func main() {\n\tif mustPos(2) != 2 {\n\t\tpanic(\"pos\")\n\t}\n\tfunc() {\n\t\tdefer func() {\n"
               "\t\t\tif e, ok := recover().(error); !ok || e.Error() != \"negative\" {\n\t\t\t\tpanic(\"want the error's message\")\n"
               "\t\t\t}\n\t\t}()\n\t\tmustPos(-1)\n\t}()\n}\n", context='import "errors"')
CODE = _task("code", "func mustPos(n int) int", "\tif n < 0 {\n\t\tpanic(int8(n))\n\t}\n\treturn n\n",
             "func main() {\n\tif mustPos(2) != 2 {\n\t\tpanic(\"pos\")\n\t}\n\tfunc() {\n\t\tdefer func() {\n"
             "\t\t\tif recover() != int8(-3) {\n\t\t\t\tpanic(\"want int8(-3)\")\n\t\t\t}\n\t\t}()\n\t\tmustPos(-3)\n\t}()\n}\n")
INC = _task("inc", "func inc(p *int, q *int) int", "\t*p++\n\tif q == nil {\n\t\treturn -1\n\t}\n\treturn *q\n",
            "func main() {\n\tx, y := 1, 7\n\tif inc(&x, &y) != 7 || x != 2 {\n\t\tpanic(\"inc\")\n\t}\n"
            "\tif inc(&x, nil) != -1 || x != 3 {\n\t\tpanic(\"nil\")\n\t}\n}\n")
DIVMOD = _task("divmod", "func divmod(a, b int) (q, r int)", "\treturn a / b, a % b\n",
               "func main() {\n\tq, r := divmod(7, 2)\n\tif q != 3 || r != 1 {\n\t\tpanic(\"divmod\")\n\t}\n}\n")
DESCRIBE = _task("describe", "func describe(v interface{}) string",
                 "\tswitch v.(type) {\n\tcase int:\n\t\treturn \"int\"\n\tcase string:\n\t\treturn \"string\"\n\t}\n\tpanic(\"unsupported\")\n",
                 "type point struct{ x, y int }\n\nfunc main() {\n\tif describe(1) != \"int\" {\n\t\tpanic(\"int\")\n\t}\n"
                 "\tfunc() {\n\t\tdefer func() {\n\t\t\tif recover() == nil {\n\t\t\t\tpanic(\"no panic for a struct\")\n\t\t\t}\n\t\t}()\n"
                 "\t\tdescribe(point{1, 2})\n\t}()\n}\n")

ATTACKS = {
    "a nil *T in a non-nil error": (DIV, "\n\ttype divError struct{ error }\n\tvar e *divError\n\treturn a / b, e\n}\n"),
    "int64(5) where the reference returns an int in interface{}": (PICK, "\n\treturn int64(n * 5)\n}\n"),
    "float32 where the reference returns a float64 in interface{}": (HALF, "\n\treturn float32(x / 2)\n}\n"),
    "[]int where the tests expect []interface{}": (PAIR, "\n\treturn []int{a, b}\n}\n"),
}

CONTROLS = {
    "[]int in interface{}, asserted by the tests": PAIR_INTS,
    "arguments in interface{} keep their types": KIND,
    "a map of interface{} values, nested and nil": GROUP,
    "a string panic is that string in the tests": SQRT,
    "a runtime error is a runtime.Error in the tests": AT,
    "an error panic keeps its message": ERRMSG,
    "a number panic is that number in the tests": CODE,
    "pointer arguments, one nil, one the candidate changes": INC,
    "named results sharing a type": DIVMOD,
    "an error result crosses with its message": SAFE,
}


@pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_value_of_another_go_type_fails(name: str) -> None:
    task, completion = ATTACKS[name]
    row = completion_row(task, completion, LIMITS)
    assert row["pass_at_1"] == 0.0 and row["value_verdict"] == "failed" and row["tests_verdict"] != "passed", row


@pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_an_honest_go_program_passes(name: str) -> None:
    task = CONTROLS[name]
    row = completion_row(task, reference_completion(task), LIMITS)
    assert row["pass_at_1"] == 1.0 and row["value_verdict"] == "passed" and row["tests_verdict"] == "passed", row


@pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
def test_a_struct_the_tests_pass_makes_the_row_an_error_not_a_panic_their_recover_takes() -> None:
    # The candidate never panics; the tests' recover() took the proxy's own panic for one.
    row = completion_row(DESCRIBE, "\n\tif _, ok := v.(string); ok {\n\t\treturn \"string\"\n\t}\n\treturn \"int\"\n}\n", LIMITS)
    assert row["pass_at_1"] == 0.0 and row["tests_verdict"] == "error" and row["value_verdict"] == "error", row
    assert "the wire cannot carry" in row["reason"] and "main.point" in row["reason"]
