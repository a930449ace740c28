"""Differential testing for Java: inputs from the method's signature, outcomes from a Java harness.

Supported parameter types: the integer types (`int`, `long`, `short`, `byte` and their boxes),
`double`/`float`, `boolean`, `char`, `String`, arrays of those and `List<...>` of the boxed
ones. A signature with any other parameter type has no differential inputs (correctness NaN).
Inputs are drawn like Python's (engine.roundtrip.difftest) from the parameter types and from the
literals of the tests, kept as Python literals, and written into a generated harness class as
Java expressions of the declared types. The harness calls the method once per input on a thread
of its own with a time limit, encodes each outcome (return value by type, or the exception's
class name) in the tagged form the engine compares, and reports them over the verdict channel
after the last call. Original and regenerated code run in separate sandboxed JVMs.
"""
from __future__ import annotations

import ast
import random
import re
from typing import Any

from engine.roundtrip.languages import java_class_name

# Suffix of a literal, or the cast before it (ending in a space).
_INTS = {"int": "", "long": "L", "short": "(short) ", "byte": "(byte) ", "Integer": "", "Long": "L", "Short": "(short) ",
         "Byte": "(byte) "}
_FLOATS = {"double": "d", "float": "f", "Double": "d", "Float": "f"}  # "f": cast to float
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


def parse_signature(signature: str) -> dict[str, Any] | None:
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


def _literal_pool(tests: str) -> list[Any]:
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
    from engine.roundtrip.inputs import ALPHABET, _draw

    parsed = parse_signature(signature)
    if parsed is None:
        return None
    pool = _literal_pool(tests)
    rng = random.Random(seed)
    inputs: list[str] = []
    seen: set[str] = set()
    attempts = 0
    while len(inputs) < n and attempts < 20 * n:
        attempts += 1
        values = []
        for hint in parsed["hints"]:
            if hint == "char" or hint == ("list", "char"):
                draw = lambda: rng.choice(ALPHABET)  # noqa: E731 - one character
                values.append(draw() if hint == "char" else [draw() for _ in range(rng.randint(0, 6))])
            else:
                values.append(_draw(rng, hint, pool))
        text = repr(tuple(values))
        if text not in seen:
            seen.add(text)
            inputs.append(text)
    return inputs


def _string(value: str, quote: str = '"') -> str:
    out = []
    for ch in value:
        if ch in ("\\", quote):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32:
            out.append("\\%03o" % ord(ch))
        else:
            out.append(ch)
    return quote + "".join(out) + quote


def java_expression(value: Any, java_type: str) -> str:
    """`value` (a drawn Python value) as a Java expression of `java_type`."""
    if java_type in _INTS:
        prefix_or_suffix = _INTS[java_type]
        if prefix_or_suffix.endswith(" "):
            return f"{prefix_or_suffix}({int(value)})"
        return f"{int(value)}{prefix_or_suffix}"
    if java_type in _FLOATS:
        number = float(value)
        if number != number:
            text = "(0.0 / 0.0)"
        elif number in (float("inf"), float("-inf")):
            text = "(1.0 / 0.0)" if number > 0 else "(-1.0 / 0.0)"
        else:
            text = repr(number)
        return f"({_FLOATS[java_type] == 'f' and '(float) ' or ''}{text})"
    if java_type in ("boolean", "Boolean"):
        return "true" if value else "false"
    if java_type in ("char", "Character"):
        return _string(str(value)[:1] or " ", "'")
    if java_type == "String":
        return _string(str(value))
    if java_type.endswith("[]"):
        inner = java_type[:-2]
        return f"new {inner}[]{{{', '.join(java_expression(v, inner) for v in value)}}}"
    inner = re.fullmatch(r"(?:java\.util\.)?(?:List|ArrayList)<(\w+)>", java_type).group(1)
    items = ", ".join(java_expression(v, inner) for v in value)
    return f"new java.util.ArrayList<{inner}>(java.util.Arrays.<{inner}>asList({items}))"


HARNESS = r"""import java.util.*;

public class BabelscoreDiff {
    interface Call { Object run() throws Throwable; }

    static String str(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 32 || c > 126) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static String enc(Object v) {
        if (v == null) return "[\"none\"]";
        if (v instanceof Boolean) return "[\"bool\"," + v + "]";
        if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte
                || v instanceof java.math.BigInteger) return "[\"int\"," + str(v.toString()) + "]";
        if (v instanceof Double || v instanceof Float) return "[\"float\"," + str(v.toString()) + "]";
        if (v instanceof String) return "[\"str\"," + str((String) v) + "]";
        if (v instanceof Character) return "[\"str\"," + str(v.toString()) + "]";
        List<String> items = new ArrayList<>();
        if (v.getClass().isArray()) {
            for (int i = 0; i < java.lang.reflect.Array.getLength(v); i++) items.add(enc(java.lang.reflect.Array.get(v, i)));
            return "[\"list\",[" + String.join(",", items) + "]]";
        }
        if (v instanceof List) {
            for (Object o : (List<?>) v) items.add(enc(o));
            return "[\"list\",[" + String.join(",", items) + "]]";
        }
        if (v instanceof Set) {
            for (Object o : (Set<?>) v) items.add(str(enc(o)));
            Collections.sort(items);
            return "[\"set\",[" + String.join(",", items) + "]]";
        }
        if (v instanceof Map) {
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) items.add("[" + enc(e.getKey()) + "," + enc(e.getValue()) + "]");
            Collections.sort(items);
            return "[\"dict\",[" + String.join(",", items) + "]]";
        }
        return "[\"object\"," + str(v.getClass().getName()) + "]";
    }

    static String outcome(Call call, long millis) throws InterruptedException {
        final Object[] box = new Object[1];
        final Throwable[] error = new Throwable[1];
        Thread worker = new Thread(() -> {
            try { box[0] = call.run(); } catch (Throwable e) { error[0] = e; }
        });
        worker.setDaemon(true);
        worker.start();
        worker.join(millis);
        if (worker.isAlive()) return "[\"timeout\"]";
        if (error[0] != null) return "[\"raise\"," + str(error[0].getClass().getSimpleName()) + "]";
        return "[\"ok\"," + enc(box[0]) + "]";
    }

    public static void main(String[] args) throws Exception {
        byte[] buffer = new byte[64];
        int n;
        try (java.io.FileInputStream in = new java.io.FileInputStream("/proc/self/fd/3")) { n = in.read(buffer); }
        java.io.FileOutputStream out = new java.io.FileOutputStream("/proc/self/fd/4");
        List<String> outcomes = new ArrayList<>();
__CALLS__
        out.write(java.util.Arrays.copyOf(buffer, Math.max(n, 0)));
        out.write((" outcomes\n[" + String.join(",", outcomes) + "]").getBytes("UTF-8"));
        out.close();
        Runtime.getRuntime().halt(0);
    }
}
"""


def harness_files(task: dict, code: str, inputs: list[str], call_seconds: float) -> dict[str, str] | None:
    """The implementation and the generated harness class, or None for an unsupported signature."""
    parsed = parse_signature(task["signature"])
    if parsed is None:
        return None
    owner = java_class_name(code)
    target = f"{owner}.{parsed['name']}" if parsed["static"] else f"new {owner}().{parsed['name']}"
    millis = max(1, int(call_seconds * 1000))
    calls = []
    for text in inputs:
        values = ast.literal_eval(text)
        args = ", ".join(java_expression(v, t) for v, t in zip(values, parsed["types"]))
        body = f"{target}({args}); return null;" if parsed["returns"] == "void" else f"return {target}({args});"
        calls.append(f"        outcomes.add(outcome(() -> {{ {body} }}, {millis}L));")
    return {f"{owner}.java": code, "BabelscoreDiff.java": HARNESS.replace("__CALLS__", "\n".join(calls))}

