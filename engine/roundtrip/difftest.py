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
sent back over the verdict channel. The engine reads each record with size and depth limits and
compares the two lists itself (engine.roundtrip.wire): values by type and value (int, float and
bool distinct; floats within 1e-9 of each other, NaN equal to NaN) or the same exception type.
A record that is malformed, too deep, too long or of the wrong types makes the run `error`. An input on which the
original runs out of time is not a usable test input: it is left out (not counted either way).
The original's outcomes are computed once per task and shared by all its regenerations. The
CPU and wall limits of one run grow with the number of inputs.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import threading
from typing import Mapping

from engine.roundtrip import wire
from engine.roundtrip.harness import python_harness
from engine.roundtrip.inputs import (  # noqa: F401 - the input drawing, re-exported for callers
    ALPHABET,
    INT_RANGE,
    MAX_LEN,
    argument_hints,
    generate_inputs,
    test_literals,
)
from engine.roundtrip.sandbox import VERDICT_BYTES, SandboxLimits, SandboxResult, python_for, run_program


def same_outcome(original: list, regenerated: list) -> bool:
    """Equal return values (by type and value, engine.roundtrip.wire), or the same exception type."""
    return wire.same_outcome(original, regenerated)


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
        record = wire.outcome_record(result.payload, len(inputs), VERDICT_BYTES)
    except wire.WireError as exc:
        # Whatever the program wrote is its row's error, never the stage's.
        return None, dataclasses.replace(result, status="error", reason=f"differential-testing record refused: {exc}")
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
