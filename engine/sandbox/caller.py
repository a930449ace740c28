"""The engine as the caller of a candidate's server: differential testing outside the candidate's process.

The function under test (a regeneration, or the task's reference solution) runs as the same
small server as in a split run (engine.sandbox.proxies: fd 3 calls, fd 4 replies, no token, no
verdict channel), in a sandboxed run of its own. The engine writes each drawn input to it as a
plain-value call (engine.sandbox.plain) and reads each reply with the stream's limits; each
call's outcome is `("o", value)`, `("a", l2 of value and arguments after, or l3 with earlier arguments changed)`, `("x", name)`, `("z", why)`,
`("timeout",)` or `("ended", why)`
(the table is in docs/sandbox.md), parsed by the engine, never the program's own record.
After a time-out or an end the server is stopped and a fresh one takes the next input, at most
`MAX_SESSIONS` times per function: never after a refused reply (only the candidate writing on
its pipe makes one), nor after two sessions in a row that answered no call in time (a load that
never ends); inputs left after that are `ended`.
"""
from __future__ import annotations

import array
import fcntl
import os
import select
import termios
import threading
import time
from typing import Callable, Sequence

from engine.sandbox import plain
from engine.sandbox.process import SandboxResult
from engine.sandbox.relay import SERVER_CALLS, SERVER_GRACE_S, SERVER_REPLIES, SandboxProgram, read_message
from engine.sandbox.wire import program_text

MAX_SESSIONS = 4
Keep = Callable[[int, tuple], tuple]
REFUSED = ("ended", "reply refused: malformed, too long or too deep")


def _write_before(fd: int, data: bytes, deadline: float) -> None:
    """All of `data`, or TimeoutError: a server that stops reading cannot block the engine."""
    os.set_blocking(fd, False)
    while data:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([], [fd], [], left)[1]:
            raise TimeoutError("the server did not read its call")
        try:
            data = data[os.write(fd, data):]
        except BlockingIOError:
            continue


def _unread(fd: int) -> int:
    """Bytes written into the pipe whose write end is `fd` that its reader has not taken yet."""
    count = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, count, True)
    return count[0]


def _taken(to_server: int, from_server: int, deadline: float) -> float | None:
    """When the server took its first call off its pipe (its start-up is over), or None when it
    has not by `deadline`; a reply already waiting also ends the wait."""
    delay = 0.001
    while _unread(to_server):
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        if select.select([from_server], [], [], min(delay, left))[0]:
            break
        delay = min(delay * 2, 0.02)
    return time.monotonic()


def _session(job: SandboxProgram, run: Callable[..., SandboxResult], calls: Sequence[bytes], start: int, call_seconds: float,
             startup_seconds: float, run_limits: dict, keep: Keep | None, parse_budget: plain.Budget
             ) -> tuple[list[tuple], SandboxResult | None]:
    """Outcomes of calls[start:] on one server, up to and including the first time-out or end."""
    to_server_r, to_server_w = os.pipe()
    from_server_r, from_server_w = os.pipe()
    stop = threading.Event()
    started = threading.Event()
    box: dict[str, object] = {}

    def serve() -> None:
        try:
            box["result"] = run(job, channel={SERVER_CALLS: to_server_r, SERVER_REPLIES: from_server_w}, verdict=False,
                                stop=stop, started=started, **run_limits)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["failure"] = exc

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    # The first call's time starts when the server's run does, not while it waits for a free uid
    # (another engine on the machine may hold the pool's uids for a while).
    while not started.wait(0.05) and thread.is_alive():
        pass
    outcomes: list[tuple] = []
    try:
        for index in range(start, len(calls)):
            deadline = time.monotonic() + call_seconds + (startup_seconds if index == start else 0.0)
            try:
                _write_before(to_server_w, plain.frame(calls[index]), deadline)
                if index == start:
                    # The call's limit times the call, not the start-up (a compile, imports, a
                    # loaded machine's scheduling): it runs from when the server took the call,
                    # and never ends before start-up plus one call's time.
                    taken = _taken(to_server_w, from_server_r, deadline)
                    deadline = deadline if taken is None else max(deadline, taken + call_seconds)
                raw = read_message(from_server_r, deadline)
                if raw is None:
                    raise EOFError("the server ended")
                kind, value = parse_budget.reply(raw)
            except TimeoutError:
                outcomes.append(("timeout",))
                break
            except (EOFError, BrokenPipeError):
                outcomes.append(("ended", "the server ended before it replied"))
                break
            except (plain.PlainError, OSError):
                outcomes.append(REFUSED)
                break
            outcome = (kind, value[1] if kind in ("x", "z") else value)
            del value  # a reply is compared (`keep`) and dropped: one row never holds them all parsed
            outcomes.append(keep(index, outcome) if keep is not None else outcome)
    finally:
        os.close(to_server_w)  # the end of the calls: an idle server exits by itself
        if outcomes and (outcomes[-1][0] == "timeout" or outcomes[-1] == REFUSED):
            stop.set()  # a server busy past its call's limit, or one that broke the stream, is not waited for
        thread.join(timeout=SERVER_GRACE_S)
        stop.set()
        thread.join()
        os.close(from_server_r)
    if "failure" in box:
        raise box["failure"]  # type: ignore[misc]
    return outcomes, box.get("result")  # type: ignore[return-value]


def call_all(job: SandboxProgram, run: Callable[..., SandboxResult], calls: Sequence[bytes], call_seconds: float,
             startup_seconds: float, run_limits: dict, keep: Keep | None = None) -> tuple[list[tuple], SandboxResult | None]:
    """One outcome per call (the module docstring's table), and the last server run's result;
    `keep(index, outcome)` replaces each returned/raised/non-plain outcome as soon as it is read."""
    outcomes: list[tuple] = []
    result: SandboxResult | None = None
    silent = 0
    parse_budget = plain.Budget()  # one for all the function's calls
    for _ in range(MAX_SESSIONS):
        if len(outcomes) >= len(calls):
            break
        found, result = _session(job, run, calls, len(outcomes), call_seconds, startup_seconds, run_limits, keep, parse_budget)
        outcomes += found
        if result is not None and result.status == "compile_error":
            break
        if found and found[-1] == REFUSED:
            break  # only the candidate's own writes on its reply pipe break the stream: no second chance
        silent = silent + 1 if found == [("timeout",)] else 0
        if silent == 2:
            break  # two servers in a row answered nothing in time: a load that never ends is not retried
    why = "compile error" if result is not None and result.status == "compile_error" else "the server ended too often"
    if outcomes and outcomes[-1] == REFUSED:
        why = REFUSED[1]
    if outcomes and outcomes[-1] == ("timeout",) and len(outcomes) < len(calls):
        why = "the server did not reply within start-up plus one call's time"
    outcomes += [("ended", why)] * (len(calls) - len(outcomes))
    if result is not None and result.stderr and result.status != "passed":
        result = SandboxResult(result.status, f"{result.reason}; stderr: {program_text(result.stderr)}",
                               result.returncode, "", "", result.wall_s, result.isolation)
    return outcomes, result
