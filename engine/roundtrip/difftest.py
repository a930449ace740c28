"""Differential testing (SONAR's correctness): the candidate and the reference as servers, compared in the engine.

Inputs (Python literals, `repr` of an argument tuple) come from the function's signature and its
tests: engine.roundtrip.inputs for Python, engine.roundtrip.java_difftest for Java,
engine.roundtrip.typed_inputs for C++, Go, Rust and JavaScript. Neither function reports its
own answers: each runs as the split run's server in a sandboxed run of its own, the engine sends
every input as a plain-value call (engine.sandbox.caller) and compares the two parsed replies
itself (engine.sandbox.compare.same_outcome). An input on which the reference gives no usable
answer (time-out, end, not plain data) counts neither way; a candidate's time-out, end,
malformed or non-plain reply disagrees on that input. The reference's outcomes are computed once
per task and shared by every regeneration.
"""
from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import math
import threading
from typing import Any, Mapping

from engine.roundtrip.inputs import generate_inputs
from engine.sandbox import arguments, caller, compare, plain
from engine.sandbox.limits import SandboxLimits
from engine.sandbox.process import SandboxResult, python_for

# Programming languages with differential testing (all six).
CORRECTNESS_LANGUAGES = ("python", "java", "javascript", "cpp", "go", "rust")


def task_inputs(task: Mapping[str, str], n: int, seed: int) -> list[str] | None:
    """The task's differential-testing inputs, or None when its signature has none."""
    language = task["programming_language"]
    try:
        if language == "python":
            # A test's literal call with a value that is not plain data (bytes, complex) cannot cross.
            return [text for text in generate_inputs(task["signature"], task["tests"], task["entry_point"], n, seed)
                    if _plain_input(text)]
        if language == "java":
            from engine.roundtrip import java_difftest

            return java_difftest.generate_inputs(task["signature"], task["tests"], n, seed)
        if language in CORRECTNESS_LANGUAGES:
            from engine.roundtrip import typed_inputs

            return typed_inputs.generate_inputs(dict(task), n, seed)
    except (ValueError, KeyError, SyntaxError):  # a signature the readers cannot take: no inputs
        return None
    return None


def _plain_input(text: str) -> bool:
    try:
        compare.from_python(ast.literal_eval(text))
    except ValueError:
        return False
    return True


def _coerce(value: Any, hint: Any) -> Any:
    """A Java input of its declared kind (Java's drawing may take an int literal for a double)."""
    if hint == "float":
        return float(value)
    if hint == "char":
        return str(value)[:1] or " "
    if isinstance(hint, tuple) and hint[0] == "list" and isinstance(value, (list, tuple)):
        return [_coerce(v, hint[1]) for v in value]
    return value


def calls_of(task: Mapping[str, str], inputs: list[str]) -> list[bytes]:
    """Each input as the plain-value call a server reads (its argument list)."""
    from engine.sandbox import plain

    hints = None
    if task["programming_language"] == "java":
        from engine.roundtrip import java_difftest

        parsed = java_difftest.parse_method_header(task["signature"])
        hints = parsed["hints"] if parsed else None
    out = []
    for text in inputs:
        values = list(ast.literal_eval(text))
        if hints is not None:
            values = [_coerce(v, h) for v, h in zip(values, hints)]
        out.append(plain.write(("l", [compare.from_python(v) for v in values])))
    return out


def run_limits_for(limits: SandboxLimits, n_inputs: int, call_seconds: float) -> dict:
    budget = math.ceil(n_inputs * call_seconds) + 2
    return {"cpu_seconds": max(limits.cpu_seconds, budget), "wall_seconds": max(limits.wall_seconds, 2.0 * budget)}


def _as_text(index: int, outcome: tuple) -> tuple:
    """A returned value kept as its stream text: a few bytes a value where the parsed form costs tens."""
    return (outcome[0], plain.write(outcome[1])) if outcome[0] in ("o", "a") else outcome


def _parsed(outcome: tuple) -> tuple:
    return (outcome[0], plain.parse(outcome[1], max_depth=plain.MAX_DEPTH + 2)[0]) if outcome[0] in ("o", "a") else outcome


def outcomes(task: Mapping[str, str], code: str, inputs: list[str], limits: SandboxLimits,
             call_seconds: float = 1.0, keep: caller.Keep | None = None) -> tuple[list[tuple] | None, SandboxResult]:
    """`code` as a server, called on every input: one outcome per input (engine.sandbox.caller),
    or None (with the reason) when no server could be built for it; `keep` as in caller.call_all."""
    from engine.sandbox.languages import java_command, runner, toolchain_missing
    from engine.sandbox.proxies import split_jobs

    language = task["programming_language"]
    why = toolchain_missing(language)
    if why:
        return None, SandboxResult("skipped", why, None, "", "", 0.0, "none")
    try:
        jobs = split_jobs(dict(task), code, python_for(limits), limits.isolation == "hook",
                          lambda main: java_command(main, limits))
    except (ValueError, KeyError) as exc:
        return None, SandboxResult("error", f"no server for this task: {type(exc).__name__}: {exc}", None, "", "", 0.0,
                                   limits.isolation)
    server, _tests, toolchain = jobs
    run, startup = runner(toolchain, limits)
    found, result = caller.call_all(server, run, calls_of(task, inputs), call_seconds, startup,
                                    run_limits_for(limits, len(inputs), call_seconds), keep)
    if result is None:
        result = SandboxResult("error", "the server did not run", None, "", "", 0.0, limits.isolation)
    if result.status == "compile_error":
        return None, result
    if result.status == "failed" and result.returncode == 0:
        # A server that ended at the end of its calls reports no verdict: that is its normal end.
        result = dataclasses.replace(result, status="passed", reason="")
    return found, result


_REFERENCES: dict[str, tuple[list[tuple] | None, SandboxResult]] = {}
_REFERENCES_LOCK = threading.Lock()


def _reference_outcomes(task: Mapping[str, str], inputs: list[str], limits: SandboxLimits, call_seconds: float):
    """The reference's outcomes, computed once per (code, inputs, limits) and shared by every regeneration."""
    key = hashlib.sha256(json.dumps([task["programming_language"], task.get("context", ""), task["code"],
                                     task["entry_point"], task.get("signature", ""), inputs, call_seconds,
                                     repr(limits)]).encode("utf-8")).hexdigest()
    with _REFERENCES_LOCK:
        if key in _REFERENCES:
            return _REFERENCES[key]
    found = outcomes(task, task["code"], inputs, limits, call_seconds, _as_text)
    with _REFERENCES_LOCK:
        if len(_REFERENCES) > 4096:
            _REFERENCES.clear()
        _REFERENCES[key] = found
    return found


def outcome_matches(task: Mapping[str, str], regenerated: str, inputs: list[str], limits: SandboxLimits,
              call_seconds: float = 1.0) -> tuple[list[bool | None] | None, SandboxResult]:
    """Per input, whether `regenerated`'s outcome matches the task's reference solution's (None for
    an input on which the reference gives no usable answer), or None when either could not be run at all."""
    reference, reference_run = _reference_outcomes(task, inputs, limits, call_seconds)
    if reference is None:
        return None, reference_run
    if all(o[0] not in ("o", "x", "a") for o in reference):
        return [None] * len(inputs), reference_run  # no usable input: correctness NaN, the candidate need not run

    calls = calls_of(task, inputs)

    def keep(index: int, outcome: tuple) -> tuple:
        # Compared as soon as it is read and dropped: a row never holds its candidate's replies parsed.
        # The arguments' state after the call is part of the answer (engine.sandbox.arguments).
        return ("agrees", arguments.same_answer(calls[index], _parsed(reference[index]), outcome))

    mine, result = outcomes(task, regenerated, inputs, limits, call_seconds, keep)
    if mine is None:
        return None, result
    return [got[1] if got[0] == "agrees" else compare.same_outcome(arguments.returned(_parsed(left)), got)
            for left, got in zip(reference, mine)], result
