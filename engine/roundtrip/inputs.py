"""Seeded differential-testing inputs for Python functions, from a signature and its tests.

Two sources, in this order: the argument tuples of the tests' own literal-only calls
(deduplicated in order of appearance), then values drawn with `random.Random(seed)` per
argument from its type hint, mixed with the tests' literals of the same type. Written as
Python literals (`repr`) so a sandboxed harness reads them back with `ast.literal_eval`.
Kept apart from engine.roundtrip.difftest so that the Java input generator can draw values
the same way without importing the comparison code.
"""
from __future__ import annotations

import ast
import random
from typing import Any

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


def draw_value(rng: random.Random, hint: Any, pool: list[Any], depth: int = 0) -> Any:
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
            values = [draw_value(rng, hint[1], pool, depth + 1) for _ in range(rng.randint(0, MAX_LEN))]
            if len(hint) > 2:
                return tuple(values)
            return values if kind == "list" else set(_hashable(values))
        if kind == "fixed-tuple":
            return tuple(draw_value(rng, h, pool, depth + 1) for h in hint[1])
        if kind == "dict":
            keys = [draw_value(rng, hint[1] or "str", pool, depth + 1) for _ in range(rng.randint(0, MAX_LEN))]
            return {k: draw_value(rng, hint[2] or "int", pool, depth + 1) for k in _hashable(keys)}
        if kind == "union":
            return draw_value(rng, rng.choice(hint[1]), pool, depth + 1)
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
    return fill_with_draws(inputs, n, seed, lambda rng: tuple(draw_value(rng, h, pool) for h in hints))


def fill_with_draws(inputs: list[str], n: int, seed: int, draw_arguments: Any) -> list[str]:
    """`inputs` topped up to `n` distinct argument literals with seeded draws (`draw_arguments(rng)`
    gives one argument tuple); at most 20 x n tries, so a small domain ends with fewer."""
    rng = random.Random(seed)
    seen = set(inputs)
    attempts = 0
    while len(inputs) < n and attempts < 20 * n:
        attempts += 1
        text = repr(draw_arguments(rng))
        if text not in seen:
            seen.add(text)
            inputs.append(text)
    return inputs
