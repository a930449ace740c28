"""Plain values as they cross a sandbox's boundary: parsed with limits, compared by type and value.

Everything a sandboxed program sends back (a differential-testing record, a reply of a
candidate server) is untrusted text. It is read here, in the engine, and nowhere else:

- at most `max_bytes` of text and `MAX_DEPTH` levels of values (`TEXT_DEPTH` brackets), checked on the raw text
  before `json.loads` runs (so a 200k-deep record is refused, never a RecursionError);
- every value must be one of the tagged forms below, with a payload of the right JSON type;
  anything else is a `WireError` (the caller turns it into a row with status `error`).

Tagged values (the encoders of engine.roundtrip.harness, java_difftest and the servers of
engine.roundtrip.split write them):

| form | value |
|---|---|
| `["none"]` | None / null |
| `["bool", true]` | a boolean |
| `["int", "12"]` | an integer of any size (decimal text) |
| `["float", "1.5"]` | a float (`repr` text; `nan`, `inf`, `-inf`, Java's `NaN`/`Infinity` too) |
| `["str", "..."]` | a string |
| `["bytes", "..."]`, `["complex", "..."]` | their `repr` text |
| `["list", [v, ...]]`, `["tuple", [v, ...]]` | sequences |
| `["set", [text, ...]]` | the JSON text of each element's tagged form (sorted) |
| `["dict", [[k, v], ...]]` | key/value pairs |
| `["object", "TypeName"]` | something that is not plain data: never equal to anything |

Comparison (`same_value`) is by type and value: int, float and bool are distinct types (1, 1.0
and True are three different answers); floats agree within a relative or absolute tolerance of
`FLOAT_TOLERANCE`, and NaN agrees with NaN; the tolerance applies only between two floats.
"""
from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 32  # levels of values; a value's JSON text nests two brackets per level
TEXT_DEPTH = 2 * MAX_DEPTH + 4
FLOAT_TOLERANCE = 1e-9
_INT_DIGITS = 5000  # Python refuses int() of longer text by default (4300 digits)
_SCALARS = {"bool": bool, "int": str, "float": str, "str": str, "bytes": str, "complex": str, "object": str}


class WireError(ValueError):
    """What a sandboxed program sent is not a well-formed record (its row gets status `error`)."""


def nesting(text: str) -> int:
    """The deepest nesting of `[`/`{` in JSON text, strings skipped (linear, no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _reject_constant(name: str) -> Any:
    raise WireError(f"JSON constant {name} is not allowed (floats travel as text)")


def loads(text: str, max_bytes: int, max_depth: int = TEXT_DEPTH) -> Any:
    """JSON text -> Python data, refusing what is too long or too deep before parsing it."""
    if len(text) > max_bytes:
        raise WireError(f"record of {len(text)} characters is longer than the limit of {max_bytes}")
    deepest = nesting(text)
    if deepest > max_depth:
        raise WireError(f"record nests {deepest} levels deep; the limit is {max_depth}")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise WireError(f"record is not valid JSON ({type(exc).__name__}: {str(exc)[:80]})") from None


def check_value(node: Any, depth: int = 0) -> None:
    """Raise WireError unless `node` is a tagged value of the table above."""
    if depth > MAX_DEPTH:
        raise WireError(f"value nests deeper than {MAX_DEPTH} levels")
    if not isinstance(node, list) or not node or not isinstance(node[0], str):
        raise WireError(f"a value must be a list starting with its type tag, not {type(node).__name__}")
    tag = node[0]
    if tag == "none":
        if len(node) != 1:
            raise WireError("['none'] takes no payload")
        return
    if len(node) != 2:
        raise WireError(f"[{tag!r}, payload] must have exactly two items")
    payload = node[1]
    if tag in _SCALARS:
        if type(payload) is not _SCALARS[tag]:
            raise WireError(f"{tag} payload must be {_SCALARS[tag].__name__}, not {type(payload).__name__}")
        if tag == "int":
            _int(payload)
        elif tag == "float":
            _float(payload)
        return
    if tag not in ("list", "tuple", "set", "dict") or not isinstance(payload, list):
        raise WireError(f"unknown value tag {tag!r} or a payload that is not a list")
    for item in payload:
        if tag == "set":
            if not isinstance(item, str):
                raise WireError("set elements travel as JSON text")
            check_value(loads(item, len(item), TEXT_DEPTH - 2 * depth), depth + 1)
        elif tag == "dict":
            if not isinstance(item, list) or len(item) != 2:
                raise WireError("dict items must be [key, value] pairs")
            check_value(item[0], depth + 1)
            check_value(item[1], depth + 1)
        else:
            check_value(item, depth + 1)


def _int(text: str) -> int:
    if len(text) > _INT_DIGITS:
        raise WireError(f"integer of {len(text)} digits is longer than {_INT_DIGITS}")
    try:
        return int(text)
    except ValueError:
        raise WireError(f"int payload {text[:40]!r} is not a decimal integer") from None


_JAVA_FLOATS = {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}


def _float(text: str) -> float:
    try:
        return float(_JAVA_FLOATS.get(text, text))
    except ValueError:
        raise WireError(f"float payload {text[:40]!r} is not a number") from None


def check_outcome(node: Any) -> None:
    """One call's outcome: `["ok", value]`, `["raise", "TypeName"]`, `["timeout"]` or `["missing"]`."""
    if not isinstance(node, list) or not node or not isinstance(node[0], str):
        raise WireError("an outcome must be a list starting with 'ok', 'raise', 'timeout' or 'missing'")
    kind = node[0]
    if kind in ("timeout", "missing") and len(node) == 1:
        return
    if kind == "raise" and len(node) == 2 and isinstance(node[1], str):
        return
    if kind == "ok" and len(node) == 2:
        check_value(node[1], 1)
        return
    raise WireError(f"malformed outcome starting with {kind[:40]!r}")


def outcome_record(text: str, n_inputs: int, max_bytes: int) -> list[list]:
    """A differential-testing record: exactly one well-formed outcome per input."""
    record = loads(text, max_bytes)
    if not isinstance(record, list):
        raise WireError(f"the record must be a list of outcomes, not {type(record).__name__}")
    if len(record) != n_inputs:
        raise WireError(f"the record has {len(record)} outcome(s) for {n_inputs} input(s)")
    for outcome in record:
        check_outcome(outcome)
    return record


def same_value(a: list, b: list) -> bool:
    """Equality of two checked values by type and value (the module docstring's rules)."""
    if a[0] != b[0] or a[0] == "object":
        return False
    tag = a[0]
    if tag == "float":
        x, y = _float(a[1]), _float(b[1])
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return math.isclose(x, y, rel_tol=FLOAT_TOLERANCE, abs_tol=FLOAT_TOLERANCE)
    if tag == "int":
        return _int(a[1]) == _int(b[1])
    if tag in ("list", "tuple"):
        return len(a[1]) == len(b[1]) and all(same_value(x, y) for x, y in zip(a[1], b[1]))
    if tag == "dict":
        if len(a[1]) != len(b[1]):
            return False
        keys_a = [json.dumps(k) for k, _ in a[1]]
        keys_b = [json.dumps(k) for k, _ in b[1]]
        return keys_a == keys_b and all(same_value(x, y) for (_, x), (_, y) in zip(a[1], b[1]))
    return a == b


def same_outcome(original: list, regenerated: list) -> bool:
    """Equal return values (by type and value), or the same exception type on both sides."""
    if original[0] != regenerated[0] or original[0] in ("missing", "timeout"):
        return original[0] == regenerated[0] == "timeout"
    if original[0] == "raise":
        return original[1] == regenerated[1]
    return same_value(original[1], regenerated[1])


def program_text(text: str, limit: int = 200) -> str:
    """Text that came from a sandboxed program, cut to `limit` characters and marked as such."""
    text = " ".join(text.split())
    cut = text[:limit] + (f"... [{len(text) - limit} more characters cut]" if len(text) > limit else "")
    return f"[program output] {cut!r}"
