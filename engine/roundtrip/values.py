"""The value verdict: the tests' calls, answered by the candidate as the reference answers them.

The tests' own verdict is what the tests conclude in their language's rules (a truthy string
where a bool is asserted, `in`, NaN past an epsilon guard). This one does not ask them:
the tests run once against the reference through the split run (engine.sandbox.relay), which
records every call (argument list as stream text, in order) and the reference's reply
(`Recording`); the candidate runs as a server of its own (engine.sandbox.caller) on exactly
those calls, in order, on one server (state kept between calls stays there); each reply is
compared with the reference's by the engine's typed rules (engine.sandbox.compare.same_outcome)
and dropped. `passed` only when every answer agrees; a reference that fails its own tests,
tests that make no call, or a recording beyond RECORD_BYTES make it `error` (never a pass).
A successful recording is made once per task and limits and shared by every regeneration; a
failed one is made again for the next row.
"""
from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Mapping

from engine.sandbox import caller, compare, plain
from engine.sandbox.limits import SandboxLimits
from engine.sandbox.process import python_for
from engine.sandbox.relay import RECORD_BYTES, Recording, run_split

VERDICTS = ("values", "tests")
_CACHE_BYTES = 256 << 20  # recordings kept for later regenerations of the same task


@dataclass(frozen=True)
class Recorded:
    calls: tuple[bytes, ...]
    replies: tuple[bytes, ...]
    error: str  # '' when the recording can decide a verdict


@dataclass(frozen=True)
class ValueVerdict:
    status: str  # passed | failed | error | skipped
    reason: str


def _jobs(task: Mapping[str, str], code: str, limits: SandboxLimits):
    from engine.sandbox.languages import java_command
    from engine.sandbox.proxies import split_jobs

    return split_jobs(dict(task), code, python_for(limits), limits.isolation == "hook",
                      lambda main: java_command(main, limits))


def record(task: Mapping[str, str], limits: SandboxLimits) -> Recorded:
    """The calls the task's tests make against its reference solution, with the reference's replies."""
    from engine.sandbox.languages import runner

    try:
        jobs = _jobs(task, task["code"], limits)
    except (ValueError, KeyError) as exc:
        return Recorded((), (), f"no split run for this task: {type(exc).__name__}: {exc}")
    if jobs is None:
        return Recorded((), (), f"no split run for {task['programming_language']}")
    server, tests, toolchain = jobs
    run, startup = runner(toolchain, limits)
    recording = Recording()
    result = run_split(server, tests, run, max(limits.wall_seconds, startup), record=recording)
    if result.status != "passed":
        return Recorded((), (), f"the reference solution does not pass the task's tests: {result.status}: {result.reason[:200]}")
    if recording.overflow:
        return Recorded((), (), f"the tests' calls and replies exceed {RECORD_BYTES >> 20} MiB: no value verdict")
    if any(reply[:2] not in (b"o ", b"x ") for reply in recording.replies):
        return Recorded((), (), "a reply of the reference solution is not plain data: no value verdict")
    return Recorded(tuple(recording.calls), tuple(recording.replies), "")


_RECORDED: dict[str, Recorded] = {}
_LOCK = threading.Lock()
_LOCKS: dict[str, threading.Lock] = {}


def recorded(task: Mapping[str, str], limits: SandboxLimits) -> Recorded:
    """`record`, once per (task, limits) when it succeeds; concurrent rows of one task wait for the
    one recording. A failed recording (a reference that timed out on a loaded host, a toolchain
    that failed to start) is not kept: the next row of the task records again."""
    key = hashlib.sha256(json.dumps([task["programming_language"], task.get("context", ""), task["code"],
                                     task["tests"], task["entry_point"], task.get("signature", ""),
                                     repr(limits)]).encode("utf-8")).hexdigest()
    with _LOCK:
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock:
        with _LOCK:
            if key in _RECORDED:
                return _RECORDED[key]
        found = record(task, limits)
        with _LOCK:
            _LOCKS.pop(key, None)
            if found.error:
                return found
            if sum(sum(map(len, r.calls)) + sum(map(len, r.replies)) for r in _RECORDED.values()) > _CACHE_BYTES:
                _RECORDED.clear()
            _RECORDED[key] = found
    return found


def _outcome(reply: bytes) -> tuple:
    kind, value = plain.reply(reply)
    return (kind, value[1] if kind in ("x", "z") else value)


def verdict(task: Mapping[str, str], code: str, limits: SandboxLimits, call_seconds: float) -> ValueVerdict:
    """The candidate's answers to the tests' calls against the reference's (the module docstring)."""
    from engine.roundtrip.difftest import run_limits_for
    from engine.sandbox.languages import runner, toolchain_missing

    why = toolchain_missing(task["programming_language"])
    if why:
        return ValueVerdict("skipped", why)
    reference = recorded(task, limits)
    if reference.error:
        return ValueVerdict("error", reference.error)
    if not reference.calls:
        from engine.sandbox.relay import NO_CALL

        return ValueVerdict("error", NO_CALL)
    try:
        jobs = _jobs(task, code, limits)
    except (ValueError, KeyError) as exc:
        return ValueVerdict("error", f"no server for this candidate: {type(exc).__name__}: {exc}")
    if jobs is None:
        return ValueVerdict("skipped", f"no split run for {task['programming_language']}")
    server, _tests, toolchain = jobs
    run, startup = runner(toolchain, limits)

    def keep(index: int, outcome: tuple) -> tuple:
        agrees = compare.same_outcome(_outcome(reference.replies[index]), outcome)
        return ("same",) if agrees else ("differs", outcome[0])

    found, result = caller.call_all(server, run, reference.calls, call_seconds, startup,
                                    run_limits_for(limits, len(reference.calls), call_seconds), keep)
    total = len(reference.calls)
    for index, outcome in enumerate(found):
        if outcome == ("same",):
            continue
        if outcome[0] == "differs":
            what = {"o": "returned a value that differs from", "x": "raised where the reference did not, or another type than",
                    "z": "returned what is not plain data instead of"}[outcome[1]]
            return ValueVerdict("failed", f"value verdict: call {index + 1} of {total}: the candidate {what} the reference's answer")
        if outcome[0] == "timeout":
            return ValueVerdict("failed", f"value verdict: call {index + 1} of {total}: no reply within {call_seconds} s")
        detail = f" ({result.status})" if result is not None and result.status == "compile_error" else ""
        return ValueVerdict("failed", f"value verdict: call {index + 1} of {total}: {outcome[1]}{detail}")
    return ValueVerdict("passed", "")
