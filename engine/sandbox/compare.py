"""Typed comparison of plain values (engine.sandbox.plain), in the engine, for the verdicts.

Both compare values the engine parsed (never a sandboxed program's object), kinds distinct:

- `same`, the answers' rule (differential testing, the value verdict): an int never agrees with a
  float; a float agrees with the reference's (the first argument) within FLOAT_TOLERANCE of its
  magnitude (FLOAT_FLOOR for a subnormal one, never beyond FLOAT_SHARE), same sign, NaN only
  with NaN, a zero only with a zero;
- `equal`, the tests' own `==`/`strictEqual` (engine.sandbox.relay's `c` messages): exact, as
  those operators are (an int with a float of exactly its value; NaN equal to NaN under node's
  assertions, to nothing under Python's `==`). A tolerance is the tests' own, never decided here.

Set elements and map keys compare by exact text. docs/sandbox.md ("Typed comparison"): why.
"""
from __future__ import annotations

import math
import sys
from typing import Any

from engine.sandbox import plain

FLOAT_TOLERANCE = 1e-9  # relative to the reference's magnitude
# Absolute, and reached only by a subnormal reference (a relative 1e-9 of one is below the doubles'
# resolution): every normal double keeps the relative tolerance.
FLOAT_FLOOR = FLOAT_TOLERANCE * sys.float_info.min
FLOAT_SHARE = 1e-6  # no float agrees beyond this share of the reference's magnitude, floor or not
# A declared 32-bit float (`g s3:f32`, C++ and Rust): its own resolution is 6e-8 of its magnitude,
# so a sum in another order is an ulp or a few away; FLOAT_SHARE is 8 to 16 of its ulps.
FLOAT32_TOLERANCE = FLOAT_SHARE
FLOAT32_FLOOR = FLOAT32_TOLERANCE * 1.1754943508222875e-38  # the smallest normal float32


def close(reference: float, got: float, tolerance: float = FLOAT_TOLERANCE, floor: float = FLOAT_FLOOR) -> bool:
    """A float answer against the reference's float (the module docstring's rule); a float32's
    answer with FLOAT32_TOLERANCE and FLOAT32_FLOOR."""
    if math.isnan(reference) or math.isnan(got):
        return math.isnan(reference) and math.isnan(got)
    if math.isinf(reference) or math.isinf(got):
        return reference == got
    if reference == 0.0 or got == 0.0:
        return reference == got  # 0.0 == -0.0
    if (got > 0) != (reference > 0):
        return False
    gap = abs(got - reference)
    return gap <= max(tolerance * abs(reference), floor) and gap <= FLOAT_SHARE * abs(reference)


def _typed_value(a: Any, b: Any) -> bool | None:
    """The answers' rule for a typed value that has its own (`_typed`), else None: a declared
    float32 at a float32's resolution; a C++ long double by its double (the tests get its exact
    bits, the engine compares as it does any float)."""
    name, inner, other = a[1][0][1], a[1][1], b[1][1]
    if name in ("f32", "Float") and inner[0] == other[0] == "d":
        return close(inner[1], other[1], FLOAT32_TOLERANCE, FLOAT32_FLOOR)
    if name == "LongDouble" and inner[0] == other[0] == "l" and len(inner[1]) == len(other[1]) == 2:
        return _typed(inner[1][0], other[1][0], False)
    return None


def _same_number(integer: int, number: float) -> bool:
    """An integer and a float that are exactly the same number (Python's `3 == 3.0`)."""
    return math.isfinite(number) and number.is_integer() and int(number) == integer


def _exact(value: Any, numbers: bool) -> Any:
    """`value` with each negative zero written as a zero, and with `numbers` each float that is
    exactly an integer written as that integer (`1.0` as `1`), at every depth: the equality a set
    element or map key keeps under each rule."""
    kind = value[0]
    if kind == "d" and math.isfinite(value[1]) and value[1].is_integer():
        return ("i", int(value[1])) if numbers else ("d", value[1] + 0.0)  # -0.0 + 0.0 is 0.0
    if kind in ("l", "u", "e"):
        return (kind, [_exact(x, numbers) for x in value[1]])
    if kind == "m":
        return (kind, [(_exact(k, numbers), _exact(v, numbers)) for k, v in value[1]])
    return value


def _element_text(value: Any, numbers: bool) -> bytes:
    """A set element's or map key's text for exact comparison (`_exact`)."""
    return plain.write(_exact(value, numbers))


def _has_nan(value: Any) -> bool:
    kind = value[0]
    if kind == "d":
        return math.isnan(value[1])
    if kind == "g":
        return _has_nan(value[1][1])
    if kind in ("l", "u", "e"):
        return any(_has_nan(x) for x in value[1])
    if kind == "m":
        return any(_has_nan(k) or _has_nan(v) for k, v in value[1])
    return False


def _typed(a: Any, b: Any, tests: bool, nan: bool = True) -> bool:
    """`tests`: the tests' exact operator (else the answers' rule); `nan`: whether that operator
    takes NaN as equal to NaN."""
    kind = a[0]
    if kind != b[0]:
        if tests and {kind, b[0]} == {"i", "d"}:
            return _same_number(a[1], b[1]) if kind == "i" else _same_number(b[1], a[1])
        return False
    if kind in ("n", "v", "t", "f"):
        return True
    if kind == "d":
        if tests:  # the operator's own exactness
            return a[1] == b[1] or (nan and math.isnan(a[1]) and math.isnan(b[1]))
        return close(a[1], b[1])
    if kind in ("i", "s"):
        return a[1] == b[1]
    if kind == "g":  # a typed value: the same type name and the same value
        if a[1][0] != b[1][0]:
            return False
        own = None if tests else _typed_value(a, b)
        return _typed(a[1][1], b[1][1], tests, nan) if own is None else own
    if kind in ("l", "u"):
        return len(a[1]) == len(b[1]) and all(_typed(x, y, tests, nan) for x, y in zip(a[1], b[1]))
    if not nan and kind in ("e", "m") and (any(_has_nan(x if kind == "e" else x[0]) for x in a[1])
                                           or any(_has_nan(y if kind == "e" else y[0]) for y in b[1])):
        return False  # an element or key holding NaN finds no equal one (no shared objects)
    if kind == "e":
        return sorted(_element_text(x, tests) for x in a[1]) == sorted(_element_text(y, tests) for y in b[1])
    if kind == "m":
        left = {_element_text(k, tests): v for k, v in a[1]}
        right = {_element_text(k, tests): v for k, v in b[1]}
        if len(left) != len(a[1]) or len(right) != len(b[1]) or left.keys() != right.keys():
            return False
        return all(_typed(left[k], right[k], tests, nan) for k in left)
    return False


def same(a: Any, b: Any) -> bool:
    """The answers' rule: typed equality of two parsed plain values, `a` the reference side (the
    module docstring)."""
    return _typed(a, b, False)


def equal(a: Any, b: Any, nan: bool = True) -> bool:
    """The tests' own equality operator on two parsed plain values, `a` the expected side: exact,
    NaN equal to NaN only when `nan` (the module docstring)."""
    return _typed(a, b, True, nan)


def same_outcome(reference: tuple, candidate: tuple) -> bool | None:
    """Agreement of one call's outcomes (engine.sandbox.caller): equal returned values, or the
    same exception: the reference's exception type is the candidate's own or one of its bases (a
    `except ValueError` in the tests takes a candidate's subclass of ValueError, as in one
    process), by type names only, never messages (plain.exception_text). None when the reference
    gave no usable answer (it ran out of time, ended or sent what is not plain data): such an
    input counts neither way."""
    if reference[0] not in ("o", "x"):
        return None
    if reference[0] != candidate[0]:
        return False
    if reference[0] == "x":
        return plain.exception_chain(reference[1])[0] in plain.exception_chain(candidate[1])
    return same(reference[1], candidate[1])


def from_python(value: Any) -> Any:
    """A Python value drawn by the engine (an input) as a parsed plain value; ValueError otherwise."""
    if value is None:
        return ("n",)
    kind = type(value)
    if kind is bool:
        return ("t",) if value else ("f",)
    if kind is int:
        return ("i", value)
    if kind is float:
        return ("d", value)
    if kind is str:
        return ("s", value)
    if kind in (list, tuple):
        return ("l" if kind is list else "u", [from_python(v) for v in value])
    if kind in (set, frozenset):
        return ("e", [from_python(v) for v in value])
    if kind is dict:
        return ("m", [(from_python(k), from_python(v)) for k, v in value.items()])
    raise ValueError(f"a {kind.__name__} is not a plain value")
