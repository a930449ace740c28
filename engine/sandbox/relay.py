"""A verdict the code under test cannot reach: the candidate and the tests in two sandboxes.

The candidate runs as a server in one sandboxed run (calls on fd 3, replies on fd 4; no token,
tests or verdict channel); the tests run in a second, with their harness, token (fd 3), verdict
channel (fd 4) and a proxy of the signature (calls on fd 5, replies on fd 6). The engine sits
between them and forwards only plain values (engine.sandbox.plain), each reply parsed with the
stream's limits and written anew; the tests' equality assertions in Python and JavaScript are
decided by the engine (`c l2 <actual> <expected>`, engine.sandbox.compare). The verdict is the
tests' run's, made `error` when the tests made no call, `failed` whenever the engine refused a
reply, and replaced by the candidate's own status when that names the failure better (compile
error, memory, time-out). A `Recording` given to `run_split` receives every call and the reply
the tests got (engine.roundtrip.values records the reference's). docs/sandbox.md has the details.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import select
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from engine.sandbox import compare, plain
from engine.sandbox.process import SandboxResult
from engine.sandbox.wire import program_text

log = logging.getLogger(__name__)

SERVER_CALLS, SERVER_REPLIES = 3, 4  # in the candidate's sandbox
PROXY_CALLS, PROXY_REPLIES = 5, 6  # in the tests' sandbox
# Statuses of the candidate's run that say more than the tests' failure they caused.
SERVER_GRACE_S = 2.0  # for a server to exit by itself once its calls have ended
TELLING = ("compile_error", "memory", "processes", "filesize", "crashed", "blocked")


@dataclass(frozen=True)
class SandboxProgram:
    """One side of a split run: its files, its command and its environment."""

    files: dict[str, str]
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


# A tests' equality message carries the candidate's answer and the expected value: two replies' worth.
TESTS_MESSAGE = 2 * plain.MAX_MESSAGE + 1024
COMPARED_VALUES = 2 * plain.MAX_VALUES + 1
RECORD_BYTES = 48 << 20  # calls and replies one recording keeps (engine.roundtrip.values): three whole messages


@dataclass
class Recording:
    """The calls the tests made and the replies they got, in order, as stream text; `overflow`
    when they did not fit RECORD_BYTES (the recording is then incomplete and not used)."""

    calls: list[bytes] = field(default_factory=list)
    replies: list[bytes] = field(default_factory=list)
    size: int = 0
    overflow: bool = False

    def add(self, call: bytes, reply: bytes) -> None:
        self.size += len(call) + len(reply)
        if self.size > RECORD_BYTES:
            self.overflow = True
            self.calls.clear()
            self.replies.clear()
        if not self.overflow:
            self.calls.append(call)
            self.replies.append(reply)


@dataclass
class _Relay:
    broken: str = ""  # why a reply was refused; once set, every later call is refused too
    unsendable: str = ""  # the tests passed what the wire cannot carry: the run is an error, never a verdict
    calls: int = 0  # calls of the function the tests made (the engine's comparisons not counted)
    record: Recording | None = None
    budget: plain.Budget = field(default_factory=plain.Budget)  # the row's parsing, replies and comparisons together


def _read_exact(fd: int, size: int, deadline: float) -> bytes:
    data = bytearray()
    while len(data) < size:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError("no reply before the run's wall-clock limit")
        chunk = os.read(fd, size - len(data))
        if not chunk:
            raise EOFError("the other side closed its pipe")
        data += chunk
    return bytes(data)


def read_message(fd: int, deadline: float, limit: int = plain.MAX_MESSAGE) -> bytes | None:
    """One framed message, or None at a clean end of the stream; PlainError when too long or malformed."""
    header = bytearray()
    while not header.endswith(b"\n"):
        if len(header) > 12:
            raise plain.PlainError("message header is not a length")
        try:
            header += _read_exact(fd, 1, deadline)
        except EOFError:
            if not header:
                return None
            raise
    text = header[:-1]
    if not text.isdigit():
        raise plain.PlainError("message header is not a length")
    size = int(text)
    if size > limit:
        # Read to its end, so the stream stays framed and the writer is not left blocked halfway.
        while size > 0:
            size -= len(_read_exact(fd, min(size, 1 << 16), deadline))
        raise plain.PlainError(f"message of {int(text)} bytes is longer than {limit}")
    return _read_exact(fd, size, deadline)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def _forward(calls_in: int, to_server: int, from_server: int, replies_out: int, deadline: float, state: _Relay) -> None:
    """Calls from the tests to the candidate, replies back, until the tests stop calling; then the
    server's call pipe is closed (this thread owns it), so an idle server sees the end and exits."""
    try:
        _relay_calls(calls_in, to_server, from_server, replies_out, deadline, state)
    except Exception as exc:  # noqa: BLE001 - the relay never ends silently: the row says why it stopped
        log.warning("relay stopped: %s: %s", type(exc).__name__, exc)
        state.broken = state.broken or f"the engine's relay stopped: {type(exc).__name__}: {str(exc)[:200]}"
    finally:
        _close(to_server)


def _relay_calls(calls_in: int, to_server: int, from_server: int, replies_out: int, deadline: float, state: _Relay) -> None:
    while True:
        try:
            call = read_message(calls_in, deadline, TESTS_MESSAGE)
        except plain.PlainError as exc:
            # The tests sent what is not a call: they get a refusal (never a hang), and the row fails.
            state.broken = state.broken or f"the tests' call was refused: {exc}"
            call = b""
        except (TimeoutError, EOFError, OSError):
            return
        if call is None:
            return
        if call[:2] == b"u ":
            # The proxy could not write the tests' arguments (`u <why>`): it stops the tests with
            # an error no `except` takes, and the run becomes an error for any program.
            state.unsendable = state.unsendable or (
                f"the tests pass a value the wire cannot carry: {program_text(call[2:1024].decode('utf-8', 'replace'))}")
            state.broken = state.broken or state.unsendable
            call = b""
        if not call:
            answer = b"z " + plain.write(("s", state.broken))
        elif call[:2] == b"c ":
            try:
                answer = state.budget.spend(call, compared)
            except plain.PlainError as exc:
                state.broken = state.broken or f"the tests' comparison was refused: {exc}"
                answer = b"o f"
        else:
            answer = _answer(call, to_server, from_server, deadline, state)
            if state.record is not None:
                state.record.add(call, answer)
        try:
            _write_all(replies_out, plain.frame(answer))
        except OSError:
            return


def _answer(call: bytes, to_server: int, from_server: int, deadline: float, state: _Relay) -> bytes:
    """The server's reply to one call of the tests, parsed and written anew, or `z` when refused."""
    state.calls += 1
    if state.broken:
        return b"z " + plain.write(("s", state.broken))
    try:
        _write_all(to_server, plain.frame(call))
        raw = read_message(from_server, deadline)
        if raw is None:
            raise EOFError("end of the server's replies")
        kind, value = state.budget.reply(raw)
        answer = kind.encode() + b" " + plain.write(value)
        if kind == "z":
            state.broken = f"the candidate's reply is not plain data: {program_text(value[1])}"
    except (EOFError, BrokenPipeError):
        state.broken = "reply refused: the candidate's server ended before it replied"
        answer = b"z " + plain.write(("s", state.broken))
    except (plain.PlainError, TimeoutError, OSError, ValueError) as exc:
        state.broken = f"reply refused: {type(exc).__name__}: {str(exc)[:200]}"
        answer = b"z " + plain.write(("s", state.broken))
    return answer


def compared(message: bytes) -> bytes:
    """The engine's answer (`o t` / `o f`) to a tests' assertion `c l2 <actual> <expected>`
    (node's assertions) or `c py l2 <actual> <expected>` (Python's `==`, where NaN equals
    nothing): the two values compared by type and value (engine.sandbox.compare), never by the
    tests' language. A message that is not two plain values is answered `o f`."""
    start = 5 if message.startswith(b"c py ") else 2
    try:
        # The `l2` pair around the two values is one level more than a reply may nest.
        value, end = plain.parse(message[start:], max_depth=plain.MAX_DEPTH + 1, max_values=COMPARED_VALUES)
    except (plain.PlainError, ValueError, RecursionError):
        return b"o f"
    if end != len(message) - start or value[0] != "l" or len(value[1]) != 2:
        return b"o f"
    actual, expected = value[1]
    return b"o t" if compare.equal(expected, actual, nan=start == 2) else b"o f"


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def run_split(server: SandboxProgram, tests: SandboxProgram, run: Callable[..., SandboxResult], wall_seconds: float,
              record: Recording | None = None) -> SandboxResult:
    """The tests' verdict on the candidate, each in its own sandboxed run (see the module docstring);
    `record` receives every call the tests made and the reply they got."""
    to_server_r, to_server_w = os.pipe()
    from_server_r, from_server_w = os.pipe()
    calls_r, calls_w = os.pipe()
    replies_r, replies_w = os.pipe()
    engine_ends = [to_server_w, from_server_r, calls_r, replies_w]
    stop, started = threading.Event(), threading.Event()
    state = _Relay(record=record)
    outcome: dict[str, SandboxResult] = {}

    failure: list[BaseException] = []

    def serve() -> None:
        try:
            outcome["server"] = run(server, channel={SERVER_CALLS: to_server_r, SERVER_REPLIES: from_server_w},
                                    verdict=False, stop=stop, started=started)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread below
            failure.append(exc)
            stop.set()

    server_thread = threading.Thread(target=serve, daemon=True)
    server_thread.start()
    # The tests' wall clock starts once the server's run holds its uid: a wait for a free uid of
    # the pool (another engine may hold them) is neither side's time.
    while not started.wait(0.05) and server_thread.is_alive():
        pass
    relay_thread = threading.Thread(
        target=_forward, args=(calls_r, to_server_w, from_server_r, replies_w, time.monotonic() + wall_seconds + 5, state),
        daemon=True)
    relay_thread.start()
    try:
        tested = run(tests, channel={PROXY_CALLS: calls_w, PROXY_REPLIES: replies_r}, verdict=True, stop=None)
    finally:
        # The tests' run has ended: nothing writes calls any more, so the relay sees the end and
        # closes the server's calls; the server exits by itself, keeping its own status (one that
        # died of its CPU limit says so). Only a server that does not is stopped.
        relay_thread.join(timeout=0.5)
        server_thread.join(timeout=SERVER_GRACE_S)
        stop.set()
        server_thread.join(timeout=wall_seconds + 30)
        relay_thread.join(timeout=10)
        for fd in engine_ends[1:]:  # to_server_w is the relay thread's to close
            _close(fd)
    if failure:
        raise failure[0]
    served = outcome.get("server")
    return _verdict(tested, served, state)


NO_CALL = "the tests made no call to the function: a task error (tests that do not run are never a pass)"
TESTS_SIDE = ("the tests' side does not compile (the task's context and tests, and the proxy of its signature: a type "
              "the wire does not carry): a task error")


def _verdict(tested: SandboxResult, served: SandboxResult | None, state: _Relay) -> SandboxResult:
    if state.unsendable:
        return dataclasses.replace(tested, status="error", reason=state.unsendable, payload="")
    if tested.status == "compile_error":
        # The tests' side holds no code of the candidate's: it fails alike for every candidate and the reference.
        return dataclasses.replace(tested, status="error", reason=f"{TESTS_SIDE}; {tested.reason}")
    if tested.status == "passed" and not state.broken:
        if not state.calls:
            return dataclasses.replace(tested, status="error", reason=NO_CALL)
        return tested
    if served is not None and served.status in TELLING:
        return dataclasses.replace(tested, status=served.status, reason=f"candidate: {served.reason}", payload="",
                                   stdout=served.stdout, stderr=served.stderr)
    if tested.status == "timeout" or (served is not None and served.status == "timeout"):
        # Which limit ends an endless candidate first (its CPU time, the tests' wall clock) depends
        # on the machine's load: one reason for both keeps rows the same from run to run.
        return dataclasses.replace(tested, status="timeout", payload="",
                                   reason="the candidate did not reply within its limits (CPU-time or wall-clock limit reached)")
    if state.broken:
        return dataclasses.replace(tested, status="failed", reason=state.broken, payload="")
    if served is not None and tested.status == "failed" and served.stderr.strip():
        return dataclasses.replace(tested, reason=f"{tested.reason}; candidate's stderr: {program_text(served.stderr)}")
    return tested
