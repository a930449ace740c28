"""Differential testing: seeded inputs from a signature and its tests, and the sandboxed comparison.

Inputs come from two sources, in this order:
1. the argument tuples of the tests' own calls whose arguments are all literals
   (`candidate(3, [1, 2])`, `f('abc')`), deduplicated in order of appearance;
2. values drawn with `random.Random(seed)` per argument from its type hint (int, float,
   str, bool, list/tuple/set/dict of those, Optional/Union), mixed with the literals of the
   tests of the same type; an argument without a usable hint draws from all test literals.

Inputs are written as Python literals (`repr`) so the sandboxed harness reads them back with
`ast.literal_eval` and no object crosses the process boundary except text.

The original and the regenerated function each run in their own sandboxed process (the
harness's `outcomes` mode, engine.roundtrip.harness): each call on a fresh copy of the input,
with a per-call time limit, its outcome (return value encoded by type, or the exception type)
sent back over the verdict channel. The engine compares the two lists itself: equal values
(floats within 1e-9, NaN equal to NaN) or the same exception type. An input on which the
original runs out of time is not a usable test input: it is left out (not counted either way).
The original's outcomes are computed once per task and shared by all its regenerations. The
CPU and wall limits of one run grow with the number of inputs.
"""
from __future__ import annotations

import ast
import hashlib
import json
import math
import random
import threading
from typing import Any, Mapping

from engine.roundtrip.harness import python_harness
from engine.roundtrip.sandbox import SandboxLimits, SandboxResult, python_for, run_program

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


def _same_value(a: list, b: list) -> bool:
    """Equality of two encoded values (engine.roundtrip.harness `_encode`); floats within 1e-9, NaN equal to NaN."""
    numeric = ("int", "float", "bool")
    if "float" in (a[0], b[0]) and a[0] in numeric and b[0] in numeric:
        try:
            x, y = float(a[1]), float(b[1])
        except (TypeError, ValueError):
            return False
        return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9)
    if a[0] != b[0] or a[0] == "object":
        return False
    if a[0] in ("list", "tuple"):
        return len(a[1]) == len(b[1]) and all(_same_value(x, y) for x, y in zip(a[1], b[1]))
    if a[0] == "dict":
        keys_a, keys_b = [json.dumps(k) for k, _ in a[1]], [json.dumps(k) for k, _ in b[1]]
        return keys_a == keys_b and all(_same_value(x, y) for (_, x), (_, y) in zip(a[1], b[1]))
    return a == b


def same_outcome(original: list, regenerated: list) -> bool:
    """Equal return values, or the same exception type on both sides."""
    if original[0] != regenerated[0] or original[0] in ("missing", "timeout"):
        return original[0] == regenerated[0] == "timeout"
    if original[0] == "raise":
        return original[1] == regenerated[1]
    return _same_value(original[1], regenerated[1])


def _limits_for(limits: SandboxLimits, n_inputs: int, call_seconds: float) -> tuple[int, float]:
    budget = math.ceil(n_inputs * call_seconds) + 2
    return max(limits.cpu_seconds, budget), max(limits.wall_seconds, 2.0 * budget)


# Programming languages with differential testing (the others have correctness NaN).
CORRECTNESS_LANGUAGES = ("python", "java")


def task_inputs(task: Mapping[str, str], n: int, seed: int) -> list[str] | None:
    """The task's differential-testing inputs, or None when its language or signature has none."""
    if task["programming_language"] == "python":
        return generate_inputs(task["signature"], task["tests"], task["entry_point"], n, seed)
    if task["programming_language"] == "java":
        from engine.roundtrip import java_difftest

        return java_difftest.generate_inputs(task["signature"], task["tests"], n, seed)
    return None


def outcomes(task: Mapping[str, str], code: str, inputs: list[str], limits: SandboxLimits,
             call_seconds: float = 1.0) -> tuple[list[list] | None, SandboxResult]:
    """One sandboxed run of `code` on every input: the encoded outcome per input, or None when the run broke."""
    cpu, wall = _limits_for(limits, len(inputs), call_seconds)
    if task["programming_language"] == "java":
        from engine.roundtrip import java_difftest, languages

        files = java_difftest.harness_files(task, code, inputs, call_seconds)
        if files is None:
            return None, SandboxResult("skipped", "unsupported Java signature", None, "", "", 0.0, limits.isolation)
        result = languages.run_toolchain(languages.java_command("BabelscoreDiff", limits), files, limits,
                                         cpu_seconds=cpu, wall_seconds=wall)
    else:
        files = {"_harness.py": python_harness(limits.isolation == "hook"), "impl.py": f"{task['context']}\n\n{code}\n",
                 "inputs.json": json.dumps(inputs)}
        argv = [python_for(limits), "-I", "-B", "_harness.py", "outcomes", "impl.py", "inputs.json", task["entry_point"],
                json.dumps({"seconds": float(call_seconds)})]
        result = run_program(argv, files, limits, cpu_seconds=cpu, wall_seconds=wall)
    if result.status != "passed":
        return None, result
    try:
        record = json.loads(result.payload)
    except ValueError:
        return None, result
    if not isinstance(record, list) or len(record) != len(inputs) or not all(isinstance(r, list) and r for r in record):
        return None, result
    return record, result


_ORIGINALS: dict[str, tuple[list[list] | None, SandboxResult]] = {}
_ORIGINALS_LOCK = threading.Lock()


def _original_outcomes(task: Mapping[str, str], inputs: list[str], limits: SandboxLimits, call_seconds: float):
    """The original's outcomes, run once per (code, inputs, limits) and shared by every regeneration."""
    key = hashlib.sha256(json.dumps([task["programming_language"], task["context"], task["code"], task["entry_point"],
                                     task.get("signature", ""), inputs, call_seconds,
                                     repr(limits)]).encode("utf-8")).hexdigest()
    with _ORIGINALS_LOCK:
        if key in _ORIGINALS:
            return _ORIGINALS[key]
    found = outcomes(task, task["code"], inputs, limits, call_seconds)
    with _ORIGINALS_LOCK:
        if len(_ORIGINALS) > 4096:
            _ORIGINALS.clear()
        _ORIGINALS[key] = found
    return found


def agreement(task: Mapping[str, str], regenerated: str, inputs: list[str], limits: SandboxLimits,
              call_seconds: float = 1.0) -> tuple[list[bool | None] | None, SandboxResult]:
    """Per-input agreement of `regenerated` with the task's own code (None for an input on which
    the original runs out of time), or None when either run broke.

    The original and the regenerated code run in separate sandboxed processes; the engine
    compares their outcomes here, so nothing the regenerated code prints or patches can
    change its score.
    """
    original, original_run = _original_outcomes(task, inputs, limits, call_seconds)
    if original is None or all(o[0] == "missing" for o in original):
        return None, original_run
    mine, result = outcomes(task, regenerated, inputs, limits, call_seconds)
    if mine is None:
        return None, result
    return [None if left[0] == "timeout" else same_outcome(left, right) for left, right in zip(original, mine)], result
