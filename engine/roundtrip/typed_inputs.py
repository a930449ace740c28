"""Differential-testing inputs for C++, Go, Rust and JavaScript, from the task's signature and tests.

The parameter types come from the same tree-sitter reading of the signature the split run's
proxies use (engine.sandbox.syntax). Supported: integers (signed; unsigned ones draw only
non-negative values), floats, booleans, strings, and lists (C++ `vector`, Go slices, Rust `Vec`
and slices) and Go maps of those. A parameter of any other type gives the task no inputs
(correctness NaN). JavaScript has no declared types: the tests' own literal-only calls of the
entry point are the inputs first, and further inputs are drawn with the types those calls'
arguments have. Values are drawn as for Python (engine.roundtrip.inputs: half of them from the
tests' literals of the same type) and written as Python literals (`repr`); the engine turns
them into plain-value calls (engine.sandbox.compare.from_python).
"""
from __future__ import annotations

import ast
import random
import re
from typing import Any

from engine.roundtrip.inputs import MAX_LEN, draw_value, fill_with_draws
from engine.roundtrip.java_difftest import literal_pool
from engine.sandbox import syntax

_SIGNED = {"cpp": r"(?:signed\s+)?(?:int|long|long\s+long|short|long\s+int|int64_t|int32_t|int16_t|int8_t|ssize_t)",
           "go": r"int|int8|int16|int32|int64|rune", "rust": r"i8|i16|i32|i64|i128|isize"}
_UNSIGNED = {"cpp": r"unsigned(?:\s+(?:int|long|long\s+long|short))?|size_t|uint64_t|uint32_t|uint16_t|uint8_t",
             "go": r"uint|uint8|uint16|uint32|uint64|byte", "rust": r"u8|u16|u32|u64|u128|usize"}
_FLOAT = {"cpp": r"float|double|long\s+double", "go": r"float32|float64", "rust": r"f32|f64"}
_BOOL = {"cpp": "bool", "go": "bool", "rust": "bool"}
_STRING = {"cpp": r"(?:std::)?string", "go": "string", "rust": r"String|str"}


def _strip(language: str, text: str) -> str:
    text = text.strip()
    if language == "cpp":
        text = re.sub(r"\bconst\b|&|\bstd::(?=vector\b)", " ", text)
    if language == "rust":
        text = re.sub(r"^&(?:'\w+\s+)?(?:mut\s+)?", "", text)
    return " ".join(text.split())


def hint(language: str, text: str) -> Any:
    """The drawing hint of one parameter type ('int', 'nat', 'float', 'bool', 'str', ('list', h),
    ('dict', k, v)), or None when the type is not supported."""
    text = _strip(language, text)
    for table, name in ((_SIGNED, "int"), (_UNSIGNED, "nat"), (_FLOAT, "float"), (_BOOL, "bool"), (_STRING, "str")):
        if re.fullmatch(table[language], text):
            return name
    inner = None
    if language == "cpp":
        match = re.fullmatch(r"vector\s*<\s*(.+?)\s*>", text)
        inner = match and match.group(1)
    elif language == "go":
        if text.startswith("[]"):
            inner = text[2:]
        match = re.fullmatch(r"map\[(\w+)\](.+)", text)
        if match:
            key, value = hint(language, match.group(1)), hint(language, match.group(2))
            return None if key not in ("int", "str") or value is None else ("dict", key, value)
    elif language == "rust":
        match = re.fullmatch(r"(?:Vec\s*<\s*(.+?)\s*>|\[\s*(.+?)\s*\])", text)
        inner = match and (match.group(1) or match.group(2))
    if inner:
        item = hint(language, inner)
        return None if item is None else ("list", item)
    return None


def _parameter_type(language: str, name: str, text: str) -> str:
    # The C++ reader gives the whole declaration ("const vector<int>& xs"): the name goes.
    return re.sub(rf"\b{re.escape(name)}\s*$", "", text) if language == "cpp" else text


def draw(rng: random.Random, kind: Any, pool: list[Any], depth: int = 0) -> Any:
    """One value of `kind`, of exactly the declared type (floats are floats, never ints)."""
    if kind == "nat":
        return abs(draw_value(rng, "int", [v for v in pool if type(v) is int and v >= 0]))
    if kind == "float":
        return float(draw_value(rng, "float", pool))
    if isinstance(kind, tuple) and kind[0] == "list":
        return [draw(rng, kind[1], pool, depth + 1) for _ in range(rng.randint(0, MAX_LEN))] if depth < 3 else []
    if isinstance(kind, tuple) and kind[0] == "dict":
        keys = {draw(rng, kind[1], pool, depth + 1) for _ in range(rng.randint(0, MAX_LEN))}
        return {k: draw(rng, kind[2], pool, depth + 1) for k in sorted(keys, key=repr)}
    return draw_value(rng, kind, pool)


def _value_kind(value: Any) -> Any:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float, str)):
        return {int: "int", float: "float", str: "str"}[type(value)]
    if isinstance(value, list):
        if not value:
            return ("list", "int")
        kinds = {repr(_value_kind(v)) for v in value}
        return ("list", _value_kind(value[0]) if len(kinds) == 1 else "int")
    return None


def _js_calls(tests: str, entry: str) -> list[tuple]:
    """Argument tuples of the tests' calls of `entry` whose arguments are all literals."""
    calls: list[tuple] = []
    for match in re.finditer(rf"(?<![\w.$]){re.escape(entry)}\s*\(", tests):
        depth, start = 1, match.end()
        pos = start
        while pos < len(tests) and depth:
            depth += {"(": 1, ")": -1}.get(tests[pos], 0)
            pos += 1
        text = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", tests[start:pos - 1]))
        try:
            args = ast.literal_eval(f"({text},)") if text.strip() else ()
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if all(_value_kind(a) is not None for a in args) and args not in calls:
            calls.append(args)
    return calls


def generate_inputs(task: dict, n: int, seed: int) -> list[str] | None:
    """`n` argument tuples as Python literals, or None when a parameter's type is not supported."""
    language, tests = task["programming_language"], task["tests"]
    pool = literal_pool(tests)
    inputs: list[str] = []
    if language == "javascript":
        calls = _js_calls(tests, task["entry_point"])
        if not calls:
            return None
        kinds = [_value_kind(v) for v in calls[0]]
        inputs = [repr(c) for c in calls if len(c) == len(kinds)][:n]
    else:
        header = syntax.function_header(language, task["signature"])
        kinds = [hint(language, _parameter_type(language, name, text)) for name, text in header.params]
        if any(k is None for k in kinds):
            return None
    return fill_with_draws(inputs, n, seed, lambda rng: tuple(draw(rng, k, pool) for k in kinds))
