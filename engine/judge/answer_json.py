"""Finding the JSON in a judge's raw answer: the routes tried, in order.

1. `whole`: the whole text is JSON;
2. `fenced`: a fenced block (```json ... ```) is JSON;
3. `balanced`: an outermost balanced `{...}` in prose is JSON;
4. `tolerant`: the same three places again, decoded after removing `//` and `/* */`
   comments and trailing commas (outside strings), which real judges write;
5. `balanced`, last resort: the evaluation objects nested in a span that no route could
   decode (every one that parses on its own), so one broken candidate does not hide the rest;
   a response read this way reports how many of its candidates it holds.
The route is recorded per judgment, so the tolerant fallback is counted, never silent.
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable, Iterable

ROUTES = ("whole", "fenced", "balanced", "tolerant")
_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)```", re.DOTALL)
_MAX_STARTS = 400  # `{` positions scanned: bounds the work on a long answer full of braces


def loads(text: str) -> Any:
    """A JSON object or array, or None (also for a JSON scalar)."""
    try:
        # strict=False: raw control characters inside strings are accepted. Grammar-constrained
        # decoders (xgrammar) let a model emit them, and the answer is otherwise valid JSON.
        value = json.loads(text, strict=False)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None


def strip_comments_and_trailing_commas(text: str) -> str:
    """`text` without `//` and `/* */` comments and without commas right before `}` or `]`
    (both outside strings); everything else is kept byte for byte."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = escaped = False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            i += 1
        elif ch == '"':
            in_string = True
            out.append(ch)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif ch in "}]":
            # drop a trailing comma (and the whitespace after it) before the closing bracket
            j = len(out) - 1
            while j >= 0 and out[j].isspace():
                j -= 1
            if j >= 0 and out[j] == ",":
                del out[j]
            out.append(ch)
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def tolerant_loads(text: str) -> Any:
    return loads(strip_comments_and_trailing_commas(text))


def balanced_spans(text: str, comments: bool = False) -> Iterable[tuple[int, int]]:
    """(start, end) of every balanced `{...}`, in order of its start (strings and escapes
    respected; with `comments`, braces and quotes inside `//` and `/* */` comments are skipped)."""
    for start in [i for i, ch in enumerate(text) if ch == "{"][:_MAX_STARTS]:
        depth, in_string, escaped, end = 0, False, False, start
        while end < len(text):
            ch = text[end]
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif comments and text.startswith("//", end):
                newline = text.find("\n", end)
                end = len(text) if newline < 0 else newline
                continue
            elif comments and text.startswith("/*", end):
                close = text.find("*/", end + 2)
                end = len(text) if close < 0 else close + 2
                continue
            elif ch == '"':
                in_string = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    yield start, end + 1
                    break
            end += 1


def outermost_spans(text: str, comments: bool = False) -> list[tuple[int, int]]:
    """The balanced spans not nested in an earlier one."""
    out: list[tuple[int, int]] = []
    for start, end in balanced_spans(text, comments):
        if not out or start >= out[-1][1]:
            out.append((start, end))
    return out


def _first(candidates: Iterable[str], decode: Callable[[str], Any]) -> Any:
    for candidate in candidates:
        value = decode(candidate)
        if value is not None:
            return value
    return None


def extract_json(text: str, is_evaluation: Callable[[Any], bool] | None = None) -> tuple[Any, str]:
    """(value, route) of the JSON found in `text`, or (None, '') — routes in the module's order.

    `is_evaluation`: tells an evaluation object (one candidate's verdict) for the last resort.
    """
    stripped = text.strip()
    value = loads(stripped)
    if value is not None:
        return value, "whole"
    blocks = [block.strip() for block in _FENCE.findall(text)]
    value = _first(blocks, loads)
    if value is not None:
        return value, "fenced"
    spans = [text[s:e] for s, e in outermost_spans(text)]
    value = _first(spans, loads)
    if value is not None:
        return value, "balanced"
    commented = [text[s:e] for s, e in outermost_spans(text, comments=True)]
    value = _first([stripped, *blocks, *commented], tolerant_loads)
    if value is not None:
        return value, "tolerant"
    inner = [(s, e, v) for s, e in balanced_spans(text, comments=True) if (v := loads(text[s:e])) is not None]
    if is_evaluation is not None:
        evaluations: list[tuple[int, Any]] = []  # (end, value); an object nested in a taken one is part of it
        for start, end, value in inner:
            if is_evaluation(value) and (not evaluations or start >= evaluations[-1][0]):
                evaluations.append((end, value))
        if evaluations:
            return [value for _end, value in evaluations], "balanced"
    return (inner[0][2], "balanced") if inner else (None, "")
