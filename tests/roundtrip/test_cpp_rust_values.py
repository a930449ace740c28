"""C++ and Rust values the wire once blurred, and results the proxies could not return, as model
completions through the stage's own path (tests.support.stage_rows), with honest controls.

Wrong programs that passed: a C++ `long double` off in the bits a double lacks (it crossed as a
double), an engaged `optional<optional<T>>` holding nullopt and a Rust `Some(None)` or `Some(())`
for `None` (all crossed as `n`). Honest programs that failed: a C++ function returning a reference
(the proxy returned one to its own local), a `std::array`, `const char*` or Rust `&'static str`
result (the proxy did not compile: blamed on the candidate), tests that read an exception's
what() or a panic's payload, and float / f32 sums in another order (one ulp apart: finer than
the answers' double tolerance allowed). docs/sandbox.md ("Typed values", "Typed comparison").
"""
from __future__ import annotations

import pytest

from engine.roundtrip.tasks import load_tasks
from engine.sandbox import process
from engine.sandbox.languages import toolchain_missing
from engine.sandbox.limits import SandboxLimits
from tests.support.stage_rows import completion_row, reference_completion

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
needs_bwrap = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
ADD = {t["programming_language"]: t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add")}
CTX = ADD["cpp"]["context"] + "\n#include <array>\n#include <optional>\n#include <stdexcept>"


def _task(lang: str, entry: str, signature: str, body: str, tests: str) -> dict:
    task = {**ADD[lang], "entry_point": entry, "signature": signature, "code": f"{signature} {{{body}", "tests": tests}
    return {**task, "context": CTX} if lang == "cpp" else task


HALF = _task("cpp", "half", "long double half(long double x)", "\n    return x / 2;\n}\n",
             "int main() {\n    assert(half(1.0L) == 0.5L);\n    assert(half(3.0L) == 1.5L);\n    return 0;\n}\n")
FIRST = _task("cpp", "first_even", "std::optional<std::optional<long>> first_even(std::vector<long> xs)",
              "\n    if (xs.empty()) return std::nullopt;\n    for (long x : xs) if (x % 2 == 0) return std::optional<long>(x);\n"
              "    return std::optional<long>(std::nullopt);\n}\n",
              "int main() {\n    assert(!first_even({}).has_value());\n    assert(*first_even({1, 4}) == 4);\n    return 0;\n}\n")
RFIRST = _task("rust", "first_even", "fn first_even(xs: Vec<i64>) -> Option<Option<i64>>",
               "\n    if xs.is_empty() {\n        return None;\n    }\n    Some(xs.into_iter().find(|x| x % 2 == 0))\n}\n",
               "fn main() {\n    assert_eq!(first_even(vec![]), None);\n    assert_eq!(first_even(vec![1, 4]), Some(Some(4)));\n}\n")
UNIT = _task("rust", "check_even", "fn check_even(n: i64) -> Option<()>", "\n    if n % 2 == 0 { Some(()) } else { None }\n}\n",
             "fn main() {\n    assert_eq!(check_even(3), None);\n    assert_eq!(check_even(5), None);\n}\n")

ATTACKS = {
    "cpp long double off by 1e-18 of its value": (HALF, "\n    return x / 2 + x * 1e-18L;\n}\n"),
    "cpp engaged optional holding nullopt for nullopt": (
        FIRST, "\n    for (long x : xs) if (x % 2 == 0) return std::optional<long>(x);\n    return std::optional<long>(std::nullopt);\n}\n"),
    "rust Some(None) for None": (RFIRST, "\n    Some(xs.into_iter().find(|x| x % 2 == 0))\n}\n"),
    "rust Some(()) for None": (UNIT, "\n    Some(())\n}\n"),
}


@needs_bwrap
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_wrong_value_the_wire_blurred_fails(attack):
    task, completion = ATTACKS[attack]
    if toolchain_missing(task["programming_language"]):
        pytest.skip(toolchain_missing(task["programming_language"]))
    row = completion_row(task, completion, LIMITS)
    assert row["pass_at_1"] == 0.0 and "failed" in (row["tests_verdict"], row["value_verdict"]), row
    honest = completion_row(task, reference_completion(task), LIMITS)
    assert (honest["status"], honest["tests_verdict"], honest["value_verdict"]) == ("passed", "passed", "passed"), honest


def _sum(lang: str, signature: str, body: str, tests: str) -> dict:
    return _task(lang, "total", signature, body, tests)


HONEST = {
    "cpp returns a reference to its argument": (_task(
        "cpp", "strip_right", "std::string& strip_right(std::string& s)",
        "\n    while (!s.empty() && s.back() == ' ') s.pop_back();\n    return s;\n}\n",
        "int main() {\n    std::string a = \"abc   \";\n    std::string b = strip_right(a);\n    assert(b == \"abc\");\n"
        "    assert(a == \"abc\");\n    const std::string& c = strip_right(a);\n    assert(c == \"abc\");\n    return 0;\n}\n"), None),
    "cpp std::array result": (_task("cpp", "pair_of", "std::array<long, 2> pair_of(long x)", "\n    return {x, x + 1};\n}\n",
                                    "int main() {\n    assert(pair_of(3)[1] == 4);\n    return 0;\n}\n"), None),
    "cpp const char* result": (_task("cpp", "parity", "const char* parity(long n)", "\n    return n % 2 ? \"odd\" : \"even\";\n}\n",
                                     "int main() {\n    assert(std::string(parity(3)) == \"odd\");\n    assert(std::string(parity(4)) == \"even\");\n"
                                     "    return 0;\n}\n"), None),
    "rust &'static str result": (_task("rust", "parity", "fn parity(n: i64) -> &'static str",
                                       "\n    if n % 2 == 0 { \"even\" } else { \"odd\" }\n}\n",
                                       "fn main() {\n    assert_eq!(parity(3), \"odd\");\n    assert_eq!(parity(4), \"even\");\n}\n"), None),
    "rust Some(())": (_task("rust", "check_even", "fn check_even(n: i64) -> Option<()>",
                            "\n    if n % 2 == 0 { Some(()) } else { None }\n}\n",
                            "fn main() {\n    assert_eq!(check_even(3), None);\n    assert_eq!(check_even(4), Some(()));\n}\n"), None),
    "rust Some(None)": (RFIRST, None),
    "cpp the tests read what()": (_task(
        "cpp", "checked_sqrt", "long checked_sqrt(long n)",
        "\n    if (n < 0) throw std::invalid_argument(\"negative\");\n    long r = 0;\n    while ((r + 1) * (r + 1) <= n) ++r;\n    return r;\n}\n",
        "int main() {\n    assert(checked_sqrt(17) == 4);\n    try {\n        checked_sqrt(-1);\n        assert(false);\n"
        "    } catch (const std::invalid_argument& e) {\n        assert(std::string(e.what()) == \"negative\");\n    }\n    return 0;\n}\n"), None),
    "rust the tests read a literal panic's payload": (_task(
        "rust", "checked_sqrt", "fn checked_sqrt(n: i64) -> i64",
        "\n    if n < 0 {\n        panic!(\"negative\");\n    }\n    (n as f64).sqrt() as i64\n}\n",
        "fn main() {\n    assert_eq!(checked_sqrt(17), 4);\n    let e = std::panic::catch_unwind(|| checked_sqrt(-1)).unwrap_err();\n"
        "    assert_eq!(e.downcast_ref::<&str>(), Some(&\"negative\"));\n}\n"), None),
    "rust the tests read a formatted panic's payload": (_task(
        "rust", "checked_sqrt", "fn checked_sqrt(n: i64) -> i64",
        "\n    if n < 0 {\n        panic!(\"negative: {}\", n);\n    }\n    (n as f64).sqrt() as i64\n}\n",
        "fn main() {\n    assert_eq!(checked_sqrt(17), 4);\n    let e = std::panic::catch_unwind(|| checked_sqrt(-1)).unwrap_err();\n"
        "    assert_eq!(e.downcast_ref::<String>().map(|s| s.as_str()), Some(\"negative: -1\"));\n}\n"), None),
    "cpp float summed in reverse": (_sum(
        "cpp", "float total(std::vector<float> xs)", "\n    float s = 0;\n    for (float x : xs) s += x;\n    return s;\n}\n",
        "#include <cmath>\nint main() {\n    assert(std::fabs(total({22.9f, 94.5f, 90.1f, 3.1f}) - 210.6f) < 1e-3f);\n    return 0;\n}\n"),
        "\n    float s = 0;\n    for (size_t i = xs.size(); i-- > 0;) s += xs[i];\n    return s;\n}\n"),
    "rust f32 summed in reverse": (_sum(
        "rust", "fn total(xs: &[f32]) -> f32", "\n    let mut s = 0.0f32;\n    for x in xs {\n        s += x;\n    }\n    s\n}\n",
        "fn main() {\n    assert!((total(&[22.9, 94.5, 90.1, 3.1]) - 210.6).abs() < 1e-3);\n}\n"),
        "\n    xs.iter().rev().fold(0.0f32, |s, x| s + x)\n}\n"),
    "go float32 summed in reverse": ({
        **ADD["go"], "entry_point": "total", "signature": "func total(xs []float32) float32",
        "code": "func total(xs []float32) float32 {\n\tvar s float32\n\tfor _, x := range xs {\n\t\ts += x\n\t}\n\treturn s\n}\n",
        "tests": "func main() {\n\tr := total([]float32{22.9, 94.5, 90.1, 3.1})\n\tif r < 210.599 || r > 210.601 {\n\t\tpanic(\"total\")\n\t}\n}\n"},
        "\n\tvar s float32\n\tfor i := len(xs) - 1; i >= 0; i-- {\n\t\ts += xs[i]\n\t}\n\treturn s\n}\n"),
    "java float summed in reverse": ({
        **ADD["java"], "entry_point": "Main", "signature": "public static float total(float[] xs)",
        "code": "public class Solution {\n    public static float total(float[] xs) {\n        float s = 0;\n"
                "        for (float x : xs) s += x;\n        return s;\n    }\n}\n",
        "tests": "public class Main {\n    public static void main(String[] args) {\n"
                 "        float r = Solution.total(new float[] {22.9f, 94.5f, 90.1f, 3.1f});\n"
                 "        if (Math.abs(r - 210.6f) > 1e-3f) throw new AssertionError(\"total\");\n    }\n}\n"},
        "\n        float s = 0;\n        for (int i = xs.length - 1; i >= 0; i--) s += xs[i];\n        return s;\n    }\n"),
}


@needs_bwrap
@pytest.mark.parametrize("control", sorted(HONEST))
def test_an_honest_program_passes(control):
    task, completion = HONEST[control]
    if toolchain_missing(task["programming_language"]):
        pytest.skip(toolchain_missing(task["programming_language"]))
    row = completion_row(task, completion or reference_completion(task), LIMITS)
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row


# A result type the wire does not carry: the proxy (the tests' side) does not compile for any
# candidate, the reference included, so the row is the task's error, never the candidate's compile_error.
UNCARRIED = {
    "cpp std::list result": {**_task("cpp", "upto", "std::list<long> upto(long n)",
                                     "\n    std::list<long> r;\n    for (long i = 0; i < n; ++i) r.push_back(i);\n    return r;\n}\n",
                                     "int main() {\n    assert(upto(3).size() == 3);\n    return 0;\n}\n"), "context": CTX + "\n#include <list>"},
    "rust VecDeque result": _task("rust", "upto", "fn upto(n: i64) -> std::collections::VecDeque<i64>",
                                  "\n    (0..n).collect()\n}\n", "fn main() {\n    assert_eq!(upto(3).len(), 3);\n}\n"),
}


@needs_bwrap
@pytest.mark.parametrize("name", sorted(UNCARRIED))
def test_a_type_the_wire_does_not_carry_is_a_task_error(name):
    task = UNCARRIED[name]
    if toolchain_missing(task["programming_language"]):
        pytest.skip(toolchain_missing(task["programming_language"]))
    row = completion_row(task, reference_completion(task), LIMITS)
    assert row["status"] == "error" and row["pass_at_1"] == 0.0 and "tests' side does not compile" in row["reason"], row
