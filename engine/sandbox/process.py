"""One sandboxed run of untrusted code (regenerated code, its tests) outside the engine's process.

A fresh child per run: dropped to a uid of the pool (engine.sandbox.uids) when the engine is
root, inside bubblewrap (engine.sandbox.bwrap, the default) or, by explicit opt-in, `hook`
(limits and an audit hook only: not a security boundary); the rlimits of engine.sandbox.limits
and a memory cgroup (engine.sandbox.cgroup) around all of it; a wall-clock limit past which the
process group and every process of the run's uid are killed. The verdict channel: a per-run
token on fd 3, the harness's `<token> passed` read back from fd 4; exit status and output only
explain a failure (engine.sandbox.outcome). A candidate's server runs without that channel,
reached through relay pipes (engine.sandbox.relay). stdout and stderr are drained by threads
that keep the first `output_bytes` of each. docs/sandbox.md describes every layer.
"""
from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

from engine.sandbox import bwrap, cgroup, seccomp
from engine.sandbox.limits import SandboxLimits, rlimits, runs_as_root
from engine.sandbox.outcome import classify, read_verdict
from engine.sandbox.uids import claimed_uid, end_uid

log = logging.getLogger(__name__)

TOKEN_FD, VERDICT_FD = 3, 4
PROGRAM_CGROUP_FD = 9  # a compiled program's memory cgroup (cgroup.make_program), below bwrap's
FIRST_BWRAP_FD = 10  # the seccomp filter and the task's files, as bwrap reads them (channel fds are below)
VERDICT_BYTES = 1 << 22  # a differential-testing record of many inputs fits
WORKDIR_PREFIX = "babelscore-sandbox-"  # host work directories of `isolation: hook` runs (bwrap runs have none)

# Moves the passed fds to their numbers (verdict pipes 3 and 4, relay pipes, bwrap's inputs), sets
# the limits, then runs the program.
LAUNCHER = r'''
import fcntl, os, resource, sys, json
spec = json.loads(sys.argv[1])
# Lift every passed fd above the targets first, so that moving one cannot overwrite another.
high = [(fcntl.fcntl(host, fcntl.F_DUPFD, 200), child) for host, child in spec["fds"]]
for host, _child in spec["fds"]:
    os.close(host)
for fd, child in high:
    os.dup2(fd, child)
    os.close(fd)
for name, (soft, hard) in spec["limits"].items():
    resource.setrlimit(getattr(resource, name), (soft, hard))
if spec["cgroup"]:
    with open(spec["cgroup"], "w") as group:  # before anything of the run starts
        group.write(str(os.getpid()))
if spec["program_cgroup"]:
    # Opened as the run's uid: the compile-then-run script moves its program in through this fd.
    program = os.open(spec["program_cgroup"], os.O_WRONLY)
    os.dup2(program, PROGRAM_CGROUP_FD)
    os.close(program)
os.execvpe(spec["argv"][0], spec["argv"], spec["env"])
'''.replace("PROGRAM_CGROUP_FD", str(PROGRAM_CGROUP_FD))


@dataclass(frozen=True)
class SandboxResult:
    status: str  # one of engine.sandbox.outcome.STATUSES
    reason: str  # '' when passed
    returncode: int | None
    stdout: str
    stderr: str
    wall_s: float
    isolation: str
    payload: str = ""  # what the harness reported after its token (differential-testing outcomes)


class _Drain(threading.Thread):
    """Reads a pipe to its end, keeping only the first `limit` bytes."""

    def __init__(self, pipe, limit: int):
        super().__init__(daemon=True)
        self.pipe, self.limit, self.kept, self.total = pipe, limit, bytearray(), 0

    def run(self) -> None:
        try:
            while chunk := self.pipe.read(65536):
                self.total += len(chunk)
                room = self.limit - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
        except (OSError, ValueError):
            pass

    def text(self) -> str:
        out = self.kept.decode("utf-8", "replace")
        return out + (f"\n[... {self.total - len(self.kept)} more bytes cut]" if self.total > len(self.kept) else "")


def python_for(limits: SandboxLimits) -> str:
    """The interpreter that runs untrusted Python: one the sandbox uid can reach and bwrap binds."""
    if limits.python:
        return limits.python
    if os.path.exists("/usr/bin/python3"):
        return "/usr/bin/python3"
    return getattr(sys, "_base_executable", sys.executable)


@lru_cache(maxsize=None)
def _launcher_python() -> str:
    """A Python the sandbox uid can execute (a venv under /root is not reachable by it)."""
    if not runs_as_root():
        return sys.executable
    for candidate in ("/usr/bin/python3", sys.executable, getattr(sys, "_base_executable", sys.executable)):
        path = Path(os.path.realpath(candidate))
        if path.exists() and all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents]):
            return candidate
    return sys.executable


@lru_cache(maxsize=None)
def interpreter_version(limits: SandboxLimits) -> str:
    """Version of the Python that runs untrusted code (it goes into signatures)."""
    try:
        done = subprocess.run([python_for(limits), "-I", "-S", "-c", "import platform; print(platform.python_version())"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


def unavailable(limits: SandboxLimits) -> str:
    """'' when the configured isolation can run here; otherwise the reason and the fix."""
    if limits.isolation == "hook":
        return ""
    if not runs_as_root():
        why = bwrap.unavailable(None)
    elif bwrap.known_to_work((limits.uid, limits.uid_slots)):
        why = ""
    else:
        # The probe runs as a uid of the pool, so it holds that uid's lock like any run: another
        # engine on this machine can neither end it nor run as that uid meanwhile.
        with claimed_uid(limits.uid, limits.uid_slots) as uid:
            why = bwrap.unavailable(uid, (limits.uid, limits.uid_slots))
    if why:
        return f"{why}; {bwrap.INSTALL_HINT}"
    return seccomp.unavailable()


def isolation_name(limits: SandboxLimits) -> str:
    """The isolation as signatures name it: `bwrap-<version>` or `hook (not a security boundary)`."""
    return f"bwrap-{bwrap.version()}" if limits.isolation == "bwrap" else "hook-not-a-boundary"


def _wait_unreaped(pid: int, seconds: float, stop: threading.Event | None = None) -> bool:
    """Wait for `pid` to exit without reaping it (or for `stop`); False on time-out.

    While the leader is unreaped its pid (the group id) cannot be reused, so the group kill
    that follows cannot reach an unrelated process.
    """
    deadline = time.monotonic() + seconds
    delay = 0.001
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is None:
        if time.monotonic() >= deadline:
            return False
        if stop is not None and stop.is_set():
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.02)
    return True


def run_program(
    argv: Sequence[str],
    files: Mapping[str, str | bytes],
    limits: SandboxLimits,
    *,
    memory_mb: int | None = None,
    max_processes: int | None = None,
    cpu_seconds: int | None = None,
    wall_seconds: float | None = None,
    env: Mapping[str, str] | None = None,
    open_files: int | None = None,
    channel: Mapping[int, int] | None = None,
    verdict: bool = True,
    stop: threading.Event | None = None,
    started: threading.Event | None = None,
    group_memory_mb: int = 0,
    program_memory_mb: int = 0,
) -> SandboxResult:
    """Run `argv` in the work directory holding `files` (relative paths resolve there).

    channel: child fd -> engine fd of further pipes (engine.sandbox.relay); they are closed here.
    verdict: False for a run that gets no token and reports no verdict (a candidate server).
    stop: set by another thread to end the run early (it is then killed like a time-out).
    started: set once the run holds its uid and starts (waiting for a free uid of the pool, while
    other runs or another engine hold them all, is not the program's time).
    group_memory_mb: the run's memory cgroup limit (0: `run_memory_mb`; a toolchain run's
    `compile_memory_mb`). program_memory_mb: the limit of the child group the program of a
    compile-then-run script moves into (programs.shell_script); 0: none.
    """
    why = unavailable(limits)
    if why:
        # The stage refuses such a config at check time; this guards direct callers.
        from engine.errors import ConfigError

        raise ConfigError(f"roundtrip.sandbox.isolation: {why}")
    if limits.isolation == "bwrap":
        bwrap.prepare()
    with claimed_uid(limits.uid, limits.uid_slots) as uid:
        if started is not None:
            started.set()
        return _run(argv, files, limits, uid, memory_mb or limits.memory_mb, max_processes or limits.max_processes,
                    cpu_seconds or limits.cpu_seconds, wall_seconds or limits.wall_seconds, dict(env or {}),
                    open_files or limits.max_open_files, dict(channel or {}), verdict, stop,
                    (group_memory_mb or limits.run_memory_mb, program_memory_mb))


def _run(argv: Sequence[str], files: Mapping[str, str | bytes], limits: SandboxLimits, uid: int | None,
         memory_mb: int, max_processes: int, cpu_seconds: int, wall_seconds: float, env: dict[str, str],
         open_files: int, channel: dict[int, int], verdict: bool, stop: threading.Event | None,
         bounds: tuple[int, int]) -> SandboxResult:
    started = time.perf_counter()
    token = secrets.token_hex(16)
    passed_fds = dict(channel)  # child fd -> engine fd
    opened = list(channel.values())
    verdict_r = -1
    if verdict:
        token_r, token_w = os.pipe()
        verdict_r, verdict_w = os.pipe()
        os.write(token_w, token.encode("ascii"))
        os.close(token_w)
        opened += [token_r, verdict_w]
        passed_fds.update({TOKEN_FD: token_r, VERDICT_FD: verdict_w})
    if uid is not None:
        for fd in opened:  # a JVM reopens them through /proc/self/fd, which checks the pipe's owner
            os.fchown(fd, uid, uid)
    workdir = None
    group = program_group = ""
    try:
        blobs = {name: content.encode("utf-8") if isinstance(content, str) else content for name, content in files.items()}
        base_env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        if limits.isolation == "bwrap":
            # bwrap reads these at fixed numbers above the channel's, whatever the engine's numbers are.
            child = FIRST_BWRAP_FD
            filter_fd = _memfd("babelscore-seccomp", seccomp.program_for(argv))
            opened.append(filter_fd)
            passed_fds[child] = filter_fd
            seccomp_child, child = child, child + 1
            fds = []
            for name, blob in blobs.items():
                fd = _memfd(f"babelscore-{Path(name).name}", blob)
                opened.append(fd)
                passed_fds[child] = fd
                fds.append((child, name))
                child += 1
            inner = bwrap.command(argv, fds, limits.tmpfs_mb * 1024 * 1024, seccomp_fd=seccomp_child)
            cwd = "/"
            base_env.update(HOME=bwrap.WORKDIR, TMPDIR="/tmp")
        else:
            workdir = Path(tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-"))
            for name, blob in blobs.items():
                target = workdir / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(blob)
            if uid is not None:
                for path in [workdir, *workdir.rglob("*")]:
                    os.chown(path, uid, uid)
            inner, cwd = list(argv), str(workdir)
            base_env.update(HOME=str(workdir), TMPDIR=str(workdir))
        if uid is not None and limits.isolation == "bwrap":
            group = cgroup.make(uid, bounds[0])
            if bounds[1]:
                program_group = cgroup.make_program(group, uid, bounds[1])
        kills_before = cgroup.oom_kills(group)
        spec = json.dumps({"limits": rlimits(limits, memory_mb, max_processes, cpu_seconds, open_files), "argv": inner,
                           "cgroup": group, "program_cgroup": program_group,
                           "env": {**base_env, **env},
                           "fds": [[host, child] for child, host in passed_fds.items()]})
        kwargs: dict = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
        proc = subprocess.Popen(
            [_launcher_python(), "-I", "-S", "-c", LAUNCHER, spec], cwd=cwd, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, pass_fds=tuple(opened),
            env={"PATH": base_env["PATH"], "LANG": "C.UTF-8"}, **kwargs,
        )
        for fd in opened:
            os.close(fd)
        opened = []
        drains = [_Drain(proc.stdout, limits.output_bytes), _Drain(proc.stderr, limits.output_bytes)]
        verdict_pipe = None
        if verdict:
            verdict_pipe = os.fdopen(verdict_r, "rb", buffering=0)
            verdict_r = -1
            drains.append(_Drain(verdict_pipe, VERDICT_BYTES))
        for drain in drains:
            drain.start()
        timed_out = not _wait_unreaped(proc.pid, wall_seconds, stop)
        stopped = stop is not None and stop.is_set()
        timed_out = timed_out and not stopped
        _kill_group(proc.pid)
        proc.wait()
        if uid is not None:
            end_uid(uid)  # whatever left the group (and may hold a pipe open) ends here
        for drain in drains:
            drain.join(timeout=5)
        proc.stdout.close()
        proc.stderr.close()
        if verdict_pipe is not None:
            verdict_pipe.close()
        stdout, stderr = drains[0].text(), drains[1].text()
        found = read_verdict(bytes(drains[2].kept), token) if verdict else None
        status, reason = classify(proc.returncode, timed_out, stderr, found, limits, memory_mb, max_processes,
                                   cpu_seconds, wall_seconds)
        if status != "passed" and (killed := _killed_at(group, kills_before, bounds)):
            status, reason = "memory", killed
        if stopped and status not in ("compile_error", "memory"):
            status, reason = "stopped", "ended by the engine after the tests finished"
        payload = found[1] if found is not None and status == "passed" else ""
        return SandboxResult(status, reason, proc.returncode, stdout, stderr, time.perf_counter() - started,
                             limits.isolation, payload)
    finally:
        for fd in [*opened, verdict_r]:
            if fd >= 0:
                os.close(fd)
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
        cgroup.remove(group)


def _killed_at(group: str, before: tuple[int, int], bounds: tuple[int, int]) -> str:
    """Which memory cgroup limit the kernel killed a process of the run at, as a reason ('' none)."""
    run, program = (now - then for now, then in zip(cgroup.oom_kills(group), before))
    what = "real memory (resident pages, tmpfs files, kernel objects) of all its processes"
    if program:
        return f"memory limit of the program reached (run_memory_mb, {bounds[1]} MB of {what}); a process was killed"
    if run and bounds[1]:
        return f"memory limit of the toolchain step reached (compile_memory_mb, {bounds[0]} MB of {what}); a process was killed"
    if run:
        return f"memory limit of the run reached (run_memory_mb, {bounds[0]} MB of {what}); a process was killed"
    return ""


def _memfd(name: str, blob: bytes) -> int:
    """A readable fd holding `blob`, in the engine's memory (never on the host's disk)."""
    fd = os.memfd_create(name, 0)
    os.write(fd, blob)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _kill_group(pgid: int) -> None:
    # The group outlives its leader when descendants remain; kill it whether or not the leader ended.
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
