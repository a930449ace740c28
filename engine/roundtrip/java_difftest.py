"""Differential-testing inputs for Java, from the method's signature and the tests' literals.

Supported parameter types: the integer types (`int`, `long`, `short`, `byte` and their boxes),
`double`/`float`, `boolean`, `char`, `String`, arrays of those and `List<...>` of the boxed
ones. A signature with any other parameter type has no differential inputs (correctness NaN).
Inputs are drawn like Python's (engine.roundtrip.difftest) from the parameter types and from the
literals of the tests, kept as Python literals. The engine sends them to the method as
plain-value calls (engine.roundtrip.difftest), and the split run's Java server decodes them into
the declared parameter types.
"""
from __future__ import annotations

import ast
import random
import re
from typing import Any

# Java's integer and floating-point type names (the keys are what counts).
_INTS = {"int": "", "long": "L", "short": "(short) ", "byte": "(byte) ", "Integer": "", "Long": "L", "Short": "(short) ",
         "Byte": "(byte) "}
_FLOATS = {"double": "d", "float": "f", "Double": "d", "Float": "f"}
_BOXES = {"int": "Integer", "long": "Long", "short": "Short", "byte": "Byte", "double": "Double", "float": "Float",
          "boolean": "Boolean", "char": "Character"}
_SIGNATURE = re.compile(r"^(?P<mods>(?:(?:public|private|protected|static|final|synchronized)\s+)*)"
                        r"(?P<ret>[\w.<>\[\], ?]+?)\s+(?P<name>\w+)\s*\((?P<params>.*)\)\s*(?:throws [\w., ]+)?$", re.S)


def _split_params(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [p.strip() for p in [*parts, current] if p.strip()]


def _java_type(param: str) -> str:
    words = re.sub(r"\bfinal\s+", "", param).strip()
    return re.sub(r"\s+\w+$", "", words).replace(" ", "")


def _hint(java_type: str) -> Any:
    if java_type in _INTS:
        return "int"
    if java_type in _FLOATS:
        return "float"
    if java_type in ("boolean", "Boolean"):
        return "bool"
    if java_type in ("char", "Character"):
        return "char"
    if java_type == "String":
        return "str"
    if java_type.endswith("[]"):
        inner = _hint(java_type[:-2])
        return None if inner is None else ("list", inner)
    match = re.fullmatch(r"(?:java\.util\.)?(?:List|ArrayList)<(\w+)>", java_type)
    if match and match.group(1) in (*_BOXES.values(), "String"):
        return ("list", _hint(match.group(1)))
    return None


def parse_method_header(signature: str) -> dict[str, Any] | None:
    """Name, staticness, return type and parameter types of a Java method header; None when unsupported."""
    match = _SIGNATURE.match(signature.strip())
    if not match:
        return None
    types = [_java_type(p) for p in _split_params(match.group("params"))]
    hints = [_hint(t) for t in types]
    if any(h is None for h in hints):
        return None
    return {"name": match.group("name"), "static": "static" in match.group("mods").split(),
            "returns": match.group("ret").strip(), "types": types, "hints": hints}


def literal_pool(tests: str) -> list[Any]:
    pool: list[Any] = [int(n) for n in re.findall(r"(?<![\w.])-?\d{1,9}(?![\w.])", tests)]
    pool += [float(n) for n in re.findall(r"(?<![\w.])-?\d+\.\d+(?![\w])", tests)]
    for text in re.findall(r'"((?:[^"\\\n]|\\.)*)"', tests):
        try:
            pool.append(ast.literal_eval(f'"{text}"'))
        except (ValueError, SyntaxError):
            continue
    return pool


def generate_inputs(signature: str, tests: str, n: int, seed: int) -> list[str] | None:
    """`n` argument tuples as Python literals, or None when the signature has an unsupported type."""
    from engine.roundtrip.inputs import ALPHABET, draw_value, fill_with_draws

    parsed = parse_method_header(signature)
    if parsed is None:
        return None
    pool = literal_pool(tests)

    def draw_arguments(rng: random.Random) -> tuple:
        values = []
        for hint in parsed["hints"]:
            if hint == "char" or hint == ("list", "char"):
                draw = lambda: rng.choice(ALPHABET)  # noqa: E731 - one character
                values.append(draw() if hint == "char" else [draw() for _ in range(rng.randint(0, 6))])
            else:
                values.append(draw_value(rng, hint, pool))
        return tuple(values)

    return fill_with_draws([], n, seed, draw_arguments)
