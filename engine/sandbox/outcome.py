"""A finished run's status and reason, from its verdict channel, exit status and stderr.

Only the harness's record that starts with the run's token makes a pass; an exit status, a
signal or a line of stderr only names a failure (engine.sandbox.process reads them).
"""
from __future__ import annotations

import re
import secrets
import signal

from engine.sandbox.limits import SandboxLimits
from engine.sandbox.wire import program_text

STATUSES = ("passed", "failed", "compile_error", "timeout", "memory", "processes", "filesize", "blocked", "crashed",
            "skipped", "rejected", "error")
# Exit status of a language's build script when the compiler rejects the code (a program that
# exits with it only turns its own failure into a compile error: never a pass).
EXIT_COMPILE = 85


def classify(returncode: int | None, timed_out: bool, stderr: str, verdict: tuple[str, str] | None,
             limits: SandboxLimits, memory_mb: int, processes: int, cpu_seconds: int, wall_seconds: float) -> tuple[str, str]:
    """(status, reason) of a run; `verdict` is read_verdict's record, None without one."""
    if timed_out:
        return "timeout", f"wall-clock limit of {wall_seconds:g} s reached; every process of the run killed"
    if verdict is not None:
        word, text = verdict
        if word in ("passed", "outcomes") and returncode == 0:
            return "passed", ""
        if word in ("blocked", "memory", "processes"):
            return word, program_text(text)
    if returncode == 0:
        return "failed", "exit status 0 without a verdict from the test harness: the program ended before its tests finished"
    if returncode == EXIT_COMPILE:
        last = [line for line in stderr.splitlines() if line.strip()][-3:]
        return "compile_error", "compiler rejected the code: " + program_text(" | ".join(line.strip() for line in last), 400)
    if returncode is not None and limits.isolation == "bwrap" and returncode > 128:
        returncode = -(returncode - 128)  # bwrap reports a child killed by signal N as 128 + N
    if returncode is not None and returncode < 0:
        return _signalled(-returncode, stderr, limits, cpu_seconds)
    if "MemoryError" in stderr or "OutOfMemoryError" in stderr or "std::bad_alloc" in stderr or "memory allocation" in stderr:
        return "memory", f"address-space limit of {memory_mb} MB"
    if "Resource temporarily unavailable" in stderr or "unable to create native thread" in stderr:
        return "processes", f"process-count limit of {processes}"
    if "Network is unreachable" in stderr or "Temporary failure in name resolution" in stderr:
        return "blocked", "network unreachable inside the sandbox's network namespace"
    if "File too large" in stderr:
        return "filesize", f"file-size limit of {limits.file_size_mb} MB reached"
    return "failed", f"exit status {returncode}: {program_text(_telling_line(stderr))}"


def _signalled(sig: int, stderr: str, limits: SandboxLimits, cpu_seconds: int) -> tuple[str, str]:
    if sig == signal.SIGXCPU or sig == signal.SIGKILL and cpu_seconds and "cpu" in stderr.lower():
        return "timeout", f"CPU-time limit of {cpu_seconds} s reached (SIGXCPU)"
    if sig == signal.SIGXFSZ:
        return "filesize", f"file-size limit of {limits.file_size_mb} MB reached (SIGXFSZ)"
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = str(sig)
    if sig == signal.SIGABRT:  # C/C++ assert() aborts
        return "failed", f"aborted (SIGABRT): {program_text(_telling_line(stderr))}"
    return "crashed", f"killed by signal {name}"


def _telling_line(stderr: str) -> str:
    """The line of a failure's output that names it (an assertion, a panic), else the last one."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    named = [line for line in lines if _TELLING.search(line)]
    return named[-1] if named else (lines[-1] if lines else "")


_TELLING = re.compile(r"Error\b|Exception\b|panicked|^panic:|Assertion")


def read_verdict(raw: bytes, token: str) -> tuple[str, str] | None:
    """(word, text) when the channel holds exactly one record that starts with this run's token."""
    head, _, rest = raw.partition(b"\n")
    parts = head.decode("ascii", "replace").split(" ", 1)
    if len(parts) != 2 or not secrets.compare_digest(parts[0], token):
        return None
    return parts[1].strip(), rest.decode("utf-8", "replace")
