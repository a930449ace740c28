"""Differential testing: seeded inputs from a signature and its tests, and the sandboxed comparison.

Inputs come from two sources, in this order:
1. the argument tuples of the tests' own calls whose arguments are all literals
   (`candidate(3, [1, 2])`, `f('abc')`), deduplicated in order of appearance;
2. values drawn with `random.Random(seed)` per argument from its type hint (int, float,
   str, bool, list/tuple/set/dict of those, Optional/Union), mixed with the literals of the
   tests of the same type; an argument without a usable hint draws from all test literals.

Inputs are written as Python literals (`repr`) so the sandboxed harness reads them back with
`ast.literal_eval` and no object crosses the process boundary except text.

The harness executes the original and the regenerated function in separate namespaces, calls
both on a fresh copy of each input with a per-call time limit, and prints, per input, whether
the outcomes agree: equal return values (floats within 1e-9, NaN equal to NaN) or the same
exception type on both sides. An input on which the original itself runs out of time is not a
usable test input: it is left out (not counted either way). The sandbox's CPU and wall limits
for one comparison grow with the number of inputs (two calls per input).
"""
from __future__ import annotations

import ast
import dataclasses
import json
import math
import random
from typing import Any, Mapping

from engine.roundtrip.sandbox import SandboxLimits, SandboxResult, run_python

INT_RANGE = (-20, 20)
ALPHABET = "abcdefghijklmnopqrstuvwxyzABC 0123456789"
MAX_LEN = 6


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ValueError("not a literal") from None


def test_literals(tests: str, entry_point: str) -> tuple[list[tuple], list[Any]]:
    """(argument tuples of literal-only calls, pool of literal values) found in `tests`."""
    try:
        tree = ast.parse(tests)
    except SyntaxError:
        return [], []
    calls: list[tuple] = []
    pool: list[Any] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("candidate", entry_point) and not node.keywords:
            try:
                args = tuple(_literal(a) for a in node.args)
            except ValueError:
                continue
            if repr(args) not in {repr(c) for c in calls}:
                calls.append(args)
        elif isinstance(node, (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set)):
            try:
                value = _literal(node)
            except ValueError:
                continue
            if value is not None and not (isinstance(value, str) and len(value) > 200):
                pool.append(value)
    return calls, pool


def _hint_of(annotation: ast.AST | None) -> Any:
    """A small type description: 'int', ('list', inner), ('dict', k, v), ('union', [...]) or None."""
    if annotation is None:
        return None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return _hint_of(ast.parse(annotation.value, mode="eval").body)
        except SyntaxError:
            return None
    if isinstance(annotation, ast.Name) or isinstance(annotation, ast.Attribute):
        name = annotation.id if isinstance(annotation, ast.Name) else annotation.attr
        base = {"List": "list", "Tuple": "tuple", "Dict": "dict", "Set": "set"}.get(name, name)
        return (base, None) if base in ("list", "tuple", "set") else ("dict", None, None) if base == "dict" else base
    if isinstance(annotation, ast.Subscript):
        outer = _hint_of(annotation.value)
        base = outer[0] if isinstance(outer, tuple) else outer
        inner = annotation.slice
        items = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
        if base in ("list", "set"):
            return (base, _hint_of(items[0]))
        if base == "tuple":
            if len(items) == 2 and isinstance(items[1], ast.Constant) and items[1].value is Ellipsis:
                return ("list", _hint_of(items[0]), "as-tuple")
            return ("fixed-tuple", [_hint_of(i) for i in items])
        if base == "dict":
            return ("dict", _hint_of(items[0]), _hint_of(items[1]) if len(items) > 1 else None)
        if base in ("Optional",):
            return ("union", [_hint_of(items[0]), "None"])
        if base == "Union":
            return ("union", [_hint_of(i) for i in items])
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return ("union", [_hint_of(annotation.left), _hint_of(annotation.right)])
    return None


def _matches(value: Any, hint: Any) -> bool:
    simple = {"int": int, "float": (int, float), "str": str, "bool": bool}
    if isinstance(hint, str) and hint in simple:
        return isinstance(value, simple[hint]) and (hint == "bool" or not isinstance(value, bool))
    if isinstance(hint, tuple) and hint[0] in ("list", "set"):
        return isinstance(value, {"list": list, "set": set}[hint[0]]) and all(_matches(v, hint[1]) for v in value if hint[1] is not None)
    return False


def _draw(rng: random.Random, hint: Any, pool: list[Any], depth: int = 0) -> Any:
    typed = [v for v in pool if _matches(v, hint)] if hint is not None else pool
    # Half of the draws reuse a test literal of the right type: edge values the author chose.
    if typed and rng.random() < 0.5:
        return typed[rng.randrange(len(typed))]
    if hint == "int":
        return rng.randint(*INT_RANGE)
    if hint == "float":
        return round(rng.uniform(*INT_RANGE), 2)
    if hint == "str":
        return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, MAX_LEN)))
    if hint == "bool":
        return rng.random() < 0.5
    if hint == "None":
        return None
    if isinstance(hint, tuple) and depth < 3:
        kind = hint[0]
        if kind in ("list", "set"):
            values = [_draw(rng, hint[1], pool, depth + 1) for _ in range(rng.randint(0, MAX_LEN))]
            if len(hint) > 2:
                return tuple(values)
            return values if kind == "list" else set(_hashable(values))
        if kind == "fixed-tuple":
            return tuple(_draw(rng, h, pool, depth + 1) for h in hint[1])
        if kind == "dict":
            keys = [_draw(rng, hint[1] or "str", pool, depth + 1) for _ in range(rng.randint(0, MAX_LEN))]
            return {k: _draw(rng, hint[2] or "int", pool, depth + 1) for k in _hashable(keys)}
        if kind == "union":
            return _draw(rng, rng.choice(hint[1]), pool, depth + 1)
    if pool:
        return pool[rng.randrange(len(pool))]
    return rng.randint(*INT_RANGE)


def _hashable(values: list[Any]) -> list[Any]:
    out = []
    for v in values:
        try:
            hash(v)
            out.append(v)
        except TypeError:
            continue
    return out


def argument_hints(signature: str) -> list[Any]:
    """One type description per positional parameter of a Python `def` header."""
    tree = ast.parse(signature.strip() + "\n    pass\n")
    func = next(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    params = [*func.args.posonlyargs, *func.args.args]
    return [_hint_of(p.annotation) for p in params if p.arg not in ("self", "cls")]


def generate_inputs(signature: str, tests: str, entry_point: str, n: int, seed: int) -> list[str]:
    """`n` argument tuples as Python literals: the tests' own calls first, then seeded draws."""
    hints = argument_hints(signature)
    calls, pool = test_literals(tests, entry_point)
    inputs = [repr(c) for c in calls if len(c) == len(hints)][:n]
    rng = random.Random(seed)
    seen = set(inputs)
    attempts = 0
    while len(inputs) < n and attempts < 20 * n:
        attempts += 1
        text = repr(tuple(_draw(rng, h, pool) for h in hints))
        if text not in seen:
            seen.add(text)
            inputs.append(text)
    return inputs


HARNESS = r'''
import ast, copy, json, math, signal, sys
INPUTS = json.loads(__INPUTS__)
ENTRY = __ENTRY__
CALL_SECONDS = __CALL_SECONDS__
class _Late(Exception):
    pass
def _alarm(signum, frame):
    raise _Late()
signal.signal(signal.SIGALRM, _alarm)
def load(code):
    # Module-level code that never ends must not eat the budget of every input.
    space = {"__name__": "__roundtrip__"}
    signal.setitimer(signal.ITIMER_REAL, max(2.0, CALL_SECONDS))
    try:
        exec(compile(__CONTEXT__ + "\n\n" + code, "<function>", "exec"), space)
        return space.get(ENTRY)
    except BaseException as exc:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
def outcome(fn, args):
    if fn is None:
        return ("missing",)
    signal.setitimer(signal.ITIMER_REAL, CALL_SECONDS)
    try:
        return ("ok", fn(*copy.deepcopy(args)))
    except _Late:
        return ("timeout",)
    except RecursionError:
        return ("raise", "RecursionError")
    except Exception as exc:
        return ("raise", type(exc).__name__)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        try:
            a, b = float(a), float(b)
        except (TypeError, ValueError):
            return False
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:
        return False
original, regenerated = load(__ORIGINAL__), load(__REGENERATED__)
if original is None:
    print("ORIGINAL-BROKEN", file=sys.stderr)
    sys.exit(3)
bits = []
for text in INPUTS:
    args = ast.literal_eval(text)
    left = outcome(original, args)
    if left[0] == "timeout":
        bits.append("-")
        continue
    right = outcome(regenerated, args)
    agree = left[0] != "missing" and left[0] == right[0] and (left[0] != "ok" and left == right or left[0] == "ok" and same(left[1], right[1]))
    bits.append("1" if agree else "0")
print("AGREE " + "".join(bits))
'''


def harness_source(context: str, original: str, regenerated: str, entry_point: str, inputs: list[str], call_seconds: float) -> str:
    return (
        HARNESS.replace("__INPUTS__", repr(json.dumps(inputs)))
        .replace("__ENTRY__", repr(entry_point))
        .replace("__CALL_SECONDS__", repr(float(call_seconds)))
        .replace("__CONTEXT__", repr(context))
        .replace("__ORIGINAL__", repr(original))
        .replace("__REGENERATED__", repr(regenerated))
    )


def agreement(task: Mapping[str, str], regenerated: str, inputs: list[str], limits: SandboxLimits,
              call_seconds: float = 1.0) -> tuple[list[bool | None] | None, SandboxResult]:
    """Per-input agreement of `regenerated` with the task's own code (None for an input the
    original does not finish), or None when the run broke."""
    source = harness_source(task["context"], task["code"], regenerated, task["entry_point"], inputs, call_seconds)
    budget = math.ceil(2 * len(inputs) * call_seconds) + 2
    limits = dataclasses.replace(limits, cpu_seconds=max(limits.cpu_seconds, budget),
                                 wall_seconds=max(limits.wall_seconds, 2.0 * budget))
    result = run_python(source, limits)
    line = next((ln for ln in reversed(result.stdout.splitlines()) if ln.startswith("AGREE ")), None)
    if result.status != "passed" or line is None:
        return None, result
    bits = line[len("AGREE "):].strip()
    if len(bits) != len(inputs):
        return None, result
    return [None if b == "-" else b == "1" for b in bits], result
