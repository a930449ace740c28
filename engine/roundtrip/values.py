"""The value verdict: the tests' calls, answered by the candidate as the reference answers them.

The tests' own verdict is what the tests conclude in their language's rules (a truthy string
where a bool is asserted, `in`, NaN past an epsilon guard). This one does not ask them: the
tests run once against the reference through the split run (engine.sandbox.relay), which
records every call and reply (`Recording`); the candidate answers exactly those calls, in
order, on one server (engine.sandbox.caller) under the tests' run's own limits, and the answers
it gave in its own tests' run (from the first call up to the first the tests made otherwise)
are checked too. Each answer (returned value or exception, and the arguments' state after the
call: engine.sandbox.arguments) is compared with the reference's by the engine's typed rules
and dropped. `passed` only when every answer agrees; a reference that fails its own tests, tests
that make no call, or a recording beyond RECORD_BYTES make it `error` (never a pass). A
successful recording is shared by every regeneration of its task; a failed one is made again.
"""
from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Mapping

from engine.sandbox import arguments, caller, compare, plain
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
    if any(reply[:2] not in (b"o ", b"x ", b"a ") for reply in recording.replies):
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


def _common_prefix(seen: Recording | None, reference: Recorded) -> int:
    """How many of the tests' calls against the candidate were the reference's, in order, from the first."""
    if seen is None or seen.overflow:
        return 0
    count = 0
    for mine, theirs in zip(seen.calls, reference.calls):
        if mine != theirs:
            break
        count += 1
    return count


_DIFFERS = {"o": "returned a value that differs from", "x": "raised where the reference did not, or another type than",
            "z": "returned what is not plain data instead of",
            "a": "left its arguments (or the objects it returned or shares with earlier calls) in another state than"}


def _how(expected: tuple, got: tuple) -> str:
    """Which part of an answer differs: its returned value, exception or reply kind, else its arguments."""
    got_returned = arguments.returned(got)
    return "a" if compare.same_outcome(arguments.returned(expected), got_returned) else got_returned[0]


def verdict(task: Mapping[str, str], code: str, limits: SandboxLimits, call_seconds: float,
            seen: Recording | None = None) -> ValueVerdict:
    """The candidate's answers to the tests' calls against the reference's (the module docstring);
    `seen`: the calls and answers of the candidate's own tests' run, checked too."""
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
    shared = _common_prefix(seen, reference)
    total = len(reference.calls)

    def keep(index: int, outcome: tuple) -> tuple:
        call = reference.calls[index]
        expected = _outcome(reference.replies[index])
        if index < shared:
            # The tests made this call too: what they got must be what the replay gets, and the
            # reference's answer (a candidate that tells the runs apart answers each differently).
            theirs = _outcome(seen.replies[index])  # type: ignore[union-attr]
            if not arguments.same_answer(call, theirs, outcome):
                return ("between",)
            if not arguments.same_answer(call, expected, theirs):
                return ("differs", _how(expected, theirs), "in the tests' run ")
        if arguments.same_answer(call, expected, outcome):
            return ("same",)
        return ("differs", _how(expected, outcome), "")

    # The replay runs under exactly the tests' run's limits, job and channel (docs/sandbox.md,
    # "One run like the other"): a candidate cannot tell which of the two it is answering. The
    # tests' run gives no call a limit of its own, only the run's, so neither does the replay: a
    # call may take as long as the run's wall clock (its CPU rlimit still holds for the whole run).
    call_seconds = max(call_seconds, limits.wall_seconds)
    found, result = caller.call_all(server, run, reference.calls, call_seconds, startup, {}, keep)
    for index, outcome in enumerate(found):
        if outcome == ("same",):
            continue
        where = f"value verdict: call {index + 1} of {total}"
        if outcome == ("between",):
            return ValueVerdict("failed", f"{where}: the candidate answered differently in the tests' run and when "
                                          "called again on the same calls")
        if outcome[0] == "differs":
            return ValueVerdict("failed", f"{where}: the candidate {outcome[2]}{_DIFFERS[outcome[1]]} the reference's answer")
        if outcome[0] == "timeout":
            return ValueVerdict("failed", f"{where}: no reply within {call_seconds} s")
        detail = f" ({result.status})" if result is not None and result.status == "compile_error" else ""
        return ValueVerdict("failed", f"{where}: {outcome[1]}{detail}")
    return ValueVerdict("passed", "")
