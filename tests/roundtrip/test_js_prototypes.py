"""JavaScript's shared graph takes an array, a Set, a Map or an object for plain data only by its
exact prototype (and a Set or Map only without own properties), at every message: attacks written
as model completions through the stage's own path, next to the honest controls that must pass.

Wrong programs that passed both verdicts: an Array subclass or a prototype-less array returned (or
kept in the tests' object), a Set subclass or a Set with an own property returned, an own property
added to the tests' Map, a changed prototype of the tests' array argument. In one process each
fails the tests' `deepStrictEqual`; across the split run each crossed as the plain value.
"""
from __future__ import annotations

import pytest

from engine.sandbox import process
from engine.sandbox.limits import SandboxLimits
from tests.support.stage_rows import completion_row, js_task, reference_completion

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
needs_bwrap = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")




EVENS = js_task("evens", "function evens(xs)", "\n  return xs.filter((x) => x % 2 === 0);\n}\n",
            "assert.deepStrictEqual(evens([1, 2, 3, 4]), [2, 4]);\nassert.deepStrictEqual(evens([5]), []);\n")
TAG = js_task("tag", "function tag(o)", "\n  o.tags = ['x'];\n  return o.tags.length;\n}\n",
          "const o = {};\nassert.strictEqual(tag(o), 1);\nassert.deepStrictEqual(o, {tags: ['x']});\n")
UNIQ = js_task("uniq", "function uniq(xs)", "\n  return new Set(xs);\n}\n",
           "assert.deepStrictEqual(uniq([1, 1, 2]), new Set([1, 2]));\n")
INCR = js_task("incr", "function incr(m, k)", "\n  m.set(k, (m.get(k) || 0) + 1);\n  return m.size;\n}\n",
           "const m = new Map();\nassert.strictEqual(incr(m, 'a'), 1);\nassert.deepStrictEqual(m, new Map([['a', 1]]));\n")
SUM = js_task("sumOf", "function sumOf(xs)", "\n  return xs.reduce((a, b) => a + b, 0);\n}\n",
          "const xs = [3, 1, 2];\nassert.strictEqual(sumOf(xs), 6);\nassert.deepStrictEqual(xs, [3, 1, 2]);\n")

ATTACKS = {
    "an Array subclass returned": (EVENS, "\n  class A extends Array {}\n  return A.from(xs.filter((x) => x % 2 === 0));\n}\n"),
    "an array with a changed prototype returned": (
        EVENS, "\n  const r = xs.filter((x) => x % 2 === 0);\n  Object.setPrototypeOf(r, Object.create(Array.prototype));\n"
               "  return r;\n}\n"),
    "an Array subclass kept in the tests' object": (TAG, "\n  class A extends Array {}\n  o.tags = A.of('x');\n  return 1;\n}\n"),
    "a prototype-less array returned": (EVENS, "\n  const r = xs.filter((x) => x % 2 === 0);\n  Object.setPrototypeOf(r, null);\n"
                                               "  return r;\n}\n"),
    "a Set subclass returned": (UNIQ, "\n  class S extends Set {}\n  return new S(xs);\n}\n"),
    "a Set with an own property returned": (UNIQ, "\n  const s = new Set(xs);\n  s.extra = 1;\n  return s;\n}\n"),
    "an own property added to the tests' Map": (INCR, "\n  m.x = 1;\n  m.set(k, (m.get(k) || 0) + 1);\n  return m.size;\n}\n"),
    "the tests' array given another prototype": (
        SUM, "\n  class Other extends Array {}\n  Object.setPrototypeOf(xs, Other.prototype);\n"
             "  return xs.reduce((a, b) => a + b, 0);\n}\n"),
    "the tests' array given another __proto__": (
        SUM, "\n  xs.__proto__ = Object.create(Array.prototype);\n  return xs.reduce((a, b) => a + b, 0);\n}\n"),
    "the prototype check replaced by the candidate": (
        EVENS, "\n  const get = Object.getPrototypeOf;\n  class A extends Array {}\n"
               "  Object.getPrototypeOf = (o) => (o instanceof A ? Array.prototype : get(o));\n"
               "  return A.from(xs.filter((x) => x % 2 === 0));\n}\n"),
    "the own-key listing replaced by the candidate": (
        SUM, "\n  const keys = Object.keys;\n  Object.keys = (o) => keys(o).filter((k) => k !== 'total');\n"
             "  xs.total = 6;\n  return xs.reduce((a, b) => a + b, 0);\n}\n"),
}


@needs_bwrap
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_candidate_whose_containers_are_not_plain_fails(attack):
    task, completion = ATTACKS[attack]
    row = completion_row(task, completion, LIMITS)
    assert row["value_verdict"] != "passed" and row["tests_verdict"] != "passed" and row["pass_at_1"] == 0.0, row
    honest = completion_row(task, reference_completion(task), LIMITS)
    assert (honest["status"], honest["tests_verdict"], honest["value_verdict"]) == ("passed", "passed", "passed"), honest


# Every way an honest program makes an array: returned by the candidate, and made by the tests
# for the argument; each crosses as the plain array it is.
FORMS = {
    "Array.from": "Array.from(xs)",
    "spread": "[...xs]",
    "map": "xs.map((x) => x * 2)",
    "filter": "xs.filter((x) => x > 1)",
    "slice": "xs.slice(1)",
    "concat": "xs.concat([9])",
    "Array(n).fill": "Array(xs.length).fill(0)",
    "JSON.parse": "JSON.parse(JSON.stringify(xs))",
    "structuredClone": "structuredClone(xs)",
    "a Set": "new Set(xs)",
    "a Map": "new Map(Array.from(xs, (x) => [x, x]))",
    "a prototype-less object": "Object.assign(Object.create(null), {n: xs.length})",
    "a frozen array": "Object.freeze(Array.from(xs))",
}


def _form_task(form: str) -> dict:
    return js_task("make", "function make(xs)", f"\n  return {form};\n}}\n",
               f"const build = (xs) => {form};\nconst a = build(build([1, 2, 3]));\nconst r = make(a);\n"
               f"assert.deepStrictEqual(r, build(build(build([1, 2, 3]))));\nassert.deepStrictEqual(a, build(build([1, 2, 3])));\n"
               f"assert.deepStrictEqual(make([1, 2]), build([1, 2]));\n")


@needs_bwrap
@pytest.mark.parametrize("form", sorted(FORMS))
def test_honest_arrays_sets_and_maps_cross(form):
    task = _form_task(FORMS[form])
    row = completion_row(task, reference_completion(task), LIMITS)
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row


# Every message finds the changed objects among all that ever crossed (here 6,300 arrays by the
# last call): the unchanged ones are found from a shallow list of their state, without writing them.
MANY_ARRAYS = js_task("rows", "function rows(n)", "\n  return Array.from({length: 20}, (_, i) => [i, n]);\n}\n",
                  "for (let n = 0; n < 300; n++) {\n  const r = rows(n);\n  assert.strictEqual(r.length, 20);\n"
                  "  assert.deepStrictEqual(r[19], [19, n]);\n}\n")


@needs_bwrap
def test_many_calls_returning_new_arrays_pass():
    row = completion_row(MANY_ARRAYS, reference_completion(MANY_ARRAYS), LIMITS)
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row


# JSON.parse makes `__proto__` an own key like any other; set by assignment on the other side it
# would change the prototype (an argument) or vanish (a result) instead.
PROTO_KEY = js_task("keysOf", "function keysOf(o)", "\n  return JSON.parse('{\"__proto__\": [1], \"a\": 2}');\n}\n",
                "const arg = JSON.parse('{\"__proto__\": [3], \"b\": 4}');\nconst r = keysOf(arg);\n"
                "assert.deepStrictEqual(Object.keys(r), ['__proto__', 'a']);\nassert.deepStrictEqual(r['__proto__'], [1]);\n"
                "assert.deepStrictEqual(Object.keys(arg), ['__proto__', 'b']);\n")


@needs_bwrap
def test_an_own_proto_key_crosses_as_a_key():
    row = completion_row(PROTO_KEY, reference_completion(PROTO_KEY), LIMITS)
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row
