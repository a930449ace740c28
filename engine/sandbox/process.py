"""Run untrusted programs (regenerated code and its tests) outside the engine's process.

Every run is a fresh child process under these layers:

- **isolation** (`isolation`):
  - `bwrap` (the default): bubblewrap (engine.sandbox.bwrap) gives the run its own user, pid,
    network, IPC, UTS and mount namespaces, a fresh /proc, private size-capped tmpfs mounts for
    /tmp, /dev/shm and its work directory (its files are copied in from memory), and read-only
    binds of the toolchains only. When the pid namespace's first process ends, the kernel ends
    every other process of the namespace; `--die-with-parent` ends the namespace when the
    engine kills bwrap. When bubblewrap cannot run, the stage refuses the config (no silent
    weaker fallback).
  - `hook`: explicit opt-in for machines without bubblewrap, **not a security boundary**: only
    the limits below and, for Python, an audit hook (PEP 578) that ends the run on sockets,
    writes outside its directory, subprocesses and ctypes. Rows say `isolation=hook` in their
    signatures.
- **resource limits** set in the child before the program starts: CPU seconds (RLIMIT_CPU),
  address space per process (RLIMIT_AS), processes (RLIMIT_NPROC), written file size
  (RLIMIT_FSIZE), no core files. As root the child first drops to an unprivileged uid of its
  own (root ignores RLIMIT_NPROC), claimed per run from `uid .. uid + uid_slots - 1` with a
  file lock, so RLIMIT_NPROC counts exactly this run's processes; open files (RLIMIT_NOFILE).
  A cgroup v2 group is not used (machines here mount cgroup v2 without the memory and pids
  controllers), so the per-run process cap times the address-space cap, plus the capped tmpfs
  mounts and pipe buffers, is the documented bound (`memory_bound_mb`, docs/sandbox.md).
- **a hard wall-clock timeout** after which every process of the run is killed: the process
  group, then every process of the run's uid, so a process that left the group and holds an
  output pipe open cannot make the engine wait.
- **the verdict channel**: the engine writes a per-run random token into a pipe the program
  reads as fd 3 and reads the verdict from a pipe the program writes as fd 4. Test harnesses
  (engine.sandbox.harness) read the token before the tests run and write `<token> passed`
  only after every test has run. Exit status, stdout and stderr never make a pass; they only
  explain a failure. The code under test runs in another run without a verdict channel
  (`verdict=False`), reached through relay pipes (`channel`, engine.sandbox.relay), so a
  program can make its own verdict worse, never better.
- **a seccomp filter** (engine.sandbox.seccomp) and `--disable-userns`: memory no limit
  counts (memfds, System V segments, new mounts) is refused; `memory_bound_mb` is the bound.

stdout and stderr are drained by threads that keep only the first `output_bytes` of each, so a
program printing without end cannot fill the engine's memory.
"""
from __future__ import annotations

import json
import logging
import os
import re
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
from typing import Literal, Mapping, Sequence

from engine.params import Params, require
from engine.sandbox import bwrap, cgroup, seccomp
from engine.sandbox.uids import claimed_uid, end_uid
from engine.sandbox.wire import program_text

log = logging.getLogger(__name__)

STATUSES = ("passed", "failed", "compile_error", "timeout", "memory", "processes", "filesize", "blocked", "crashed",
            "skipped", "rejected", "error")
# Exit status of a language's build script when the compiler rejects the code (a program that
# exits with it only turns its own failure into a compile error: never a pass).
EXIT_COMPILE = 85
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
class SandboxLimits(Params):
    """Limits of one sandboxed run. Languages other than Python get the `toolchain_*` allowances.

    Keys:
        cpu_seconds: CPU-time limit (RLIMIT_CPU).
        wall_seconds: wall-clock limit; every process of the run is killed past it.
        memory_mb: address-space limit per process (RLIMIT_AS).
        max_processes: process-count limit of the run (RLIMIT_NPROC, under the run's own uid).
        file_size_mb: largest file the code may write (RLIMIT_FSIZE).
        tmpfs_mb: size of each private tmpfs of a bwrap run (/tmp, /dev/shm, the work directory).
        output_bytes: captured stdout/stderr kept per stream.
        isolation: `bwrap` (bubblewrap namespaces; refused at config check when it cannot run) or `hook` (no isolation, not a security boundary).
        uid: first unprivileged uid used when the engine runs as root.
        uid_slots: sandbox runs at once per machine (each holds one uid).
        python: interpreter for untrusted Python ('' = /usr/bin/python3 when present, else this one's base interpreter).
        toolchain_memory_mb: address space added for compilers and VMs (JVM, V8, Go, rustc) beyond memory_mb.
        toolchain_max_processes: process limit for languages other than Python (RLIMIT_NPROC counts threads).
        toolchain_seconds: CPU and wall-clock floor for a compile-and-run of a compiled language.
        max_open_files: open file descriptors per process (RLIMIT_NOFILE) of a Python run.
        toolchain_max_open_files: RLIMIT_NOFILE of the other languages (javac and `go build` open many files).
    """

    cpu_seconds: int = 5
    wall_seconds: float = 10.0
    memory_mb: int = 512
    max_processes: int = 16
    file_size_mb: int = 16
    tmpfs_mb: int = 64
    output_bytes: int = 16384
    isolation: Literal["bwrap", "hook"] = "bwrap"
    uid: int = 200000  # first unprivileged uid used when the engine runs as root (no account needed)
    uid_slots: int = 64  # runs at once per machine; each holds one uid
    python: str = ""
    toolchain_memory_mb: int = 4096  # a JVM, V8 or Go reserves address space far beyond its heap
    toolchain_max_processes: int = 256  # RLIMIT_NPROC counts threads; a JVM or `go build` starts dozens
    toolchain_seconds: int = 30
    max_open_files: int = 64
    toolchain_max_open_files: int = 512

    def __post_init__(self) -> None:
        require(self.cpu_seconds >= 1, "cpu_seconds", self.cpu_seconds, "an integer >= 1")
        require(self.wall_seconds > 0, "wall_seconds", self.wall_seconds, "a number > 0")
        require(self.memory_mb >= 32, "memory_mb", self.memory_mb, "an integer >= 32")
        require(self.max_processes >= 1, "max_processes", self.max_processes, "an integer >= 1")
        require(self.file_size_mb >= 1, "file_size_mb", self.file_size_mb, "an integer >= 1")
        require(self.tmpfs_mb >= 1, "tmpfs_mb", self.tmpfs_mb, "an integer >= 1")
        require(self.output_bytes >= 256, "output_bytes", self.output_bytes, "an integer >= 256")
        require(self.uid >= 1000, "uid", self.uid, "an integer >= 1000 (an unprivileged uid)")
        require(self.uid_slots >= 1, "uid_slots", self.uid_slots, "an integer >= 1")
        require(self.toolchain_seconds >= 1, "toolchain_seconds", self.toolchain_seconds, "an integer >= 1")
        require(self.max_open_files >= 16, "max_open_files", self.max_open_files, "an integer >= 16")
        require(self.toolchain_max_open_files >= 16, "toolchain_max_open_files", self.toolchain_max_open_files,
                "an integer >= 16")


@dataclass(frozen=True)
class SandboxResult:
    status: str  # one of STATUSES
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


def _drop_privileges() -> bool:
    return os.geteuid() == 0


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
    if not _drop_privileges():
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
    if not _drop_privileges():
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


# Pipe buffers of one unprivileged uid beyond the kernel's soft limit get one page each
# (/proc/sys/fs/pipe-user-pages-soft, 16384 pages by default): at most this much per run.
PIPE_BUFFERS_MB = 64


def memory_bound_mb(limits: SandboxLimits, toolchain: bool = False) -> int:
    """The documented bound on the memory one run can hold (docs/sandbox.md): every process at
    its address-space limit, every capped tmpfs full, and the pipe buffers of its uid. memfds,
    System V segments and new mounts, which no limit would count, are refused by seccomp."""
    memory = limits.memory_mb + (limits.toolchain_memory_mb if toolchain else 0)
    processes = limits.toolchain_max_processes if toolchain else limits.max_processes
    return processes * memory + 3 * limits.tmpfs_mb + PIPE_BUFFERS_MB


def _rlimits(limits: SandboxLimits, memory_mb: int, processes: int, cpu_seconds: int,
             open_files: int) -> dict[str, tuple[int, int]]:
    mb = 1024 * 1024
    nproc = processes + (bwrap.OWN_PROCESSES if limits.isolation == "bwrap" else 0)
    if not _drop_privileges():
        # RLIMIT_NPROC counts every process of the (real) user, not only the sandbox's.
        import psutil

        uid = os.getuid()
        nproc += sum(1 for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == uid)
    return {
        # SIGXCPU at the soft limit names the cause; SIGKILL a second later if it is ignored.
        "RLIMIT_CPU": (cpu_seconds, cpu_seconds + 1),
        "RLIMIT_AS": (memory_mb * mb, memory_mb * mb),
        "RLIMIT_NPROC": (nproc, nproc),
        "RLIMIT_FSIZE": (limits.file_size_mb * mb, limits.file_size_mb * mb),
        "RLIMIT_CORE": (0, 0),
        "RLIMIT_NOFILE": (open_files, open_files),
    }


def _classify(returncode: int | None, timed_out: bool, stderr: str, verdict: tuple[str, str] | None,
              limits: SandboxLimits, memory_mb: int, processes: int, cpu_seconds: int, wall_seconds: float) -> tuple[str, str]:
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
        sig = -returncode
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
    if "MemoryError" in stderr or "OutOfMemoryError" in stderr or "std::bad_alloc" in stderr or "memory allocation" in stderr:
        return "memory", f"address-space limit of {memory_mb} MB"
    if "Resource temporarily unavailable" in stderr or "unable to create native thread" in stderr:
        return "processes", f"process-count limit of {processes}"
    if "Network is unreachable" in stderr or "Temporary failure in name resolution" in stderr:
        return "blocked", "network unreachable inside the sandbox's network namespace"
    if "File too large" in stderr:
        return "filesize", f"file-size limit of {limits.file_size_mb} MB reached"
    return "failed", f"exit status {returncode}: {program_text(_telling_line(stderr))}"


def _telling_line(stderr: str) -> str:
    """The line of a failure's output that names it (an assertion, a panic), else the last one."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    named = [line for line in lines if _TELLING.search(line)]
    return named[-1] if named else (lines[-1] if lines else "")


_TELLING = re.compile(r"Error\b|Exception\b|panicked|^panic:|Assertion")


def _read_verdict(raw: bytes, token: str) -> tuple[str, str] | None:
    """(word, text) when the channel holds exactly one record that starts with this run's token."""
    head, _, rest = raw.partition(b"\n")
    parts = head.decode("ascii", "replace").split(" ", 1)
    if len(parts) != 2 or not secrets.compare_digest(parts[0], token):
        return None
    return parts[1].strip(), rest.decode("utf-8", "replace")


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
    program_memory_mb: int = 0,
) -> SandboxResult:
    """Run `argv` in the work directory holding `files` (relative paths resolve there).

    channel: child fd -> engine fd of further pipes (engine.sandbox.relay); they are closed here.
    verdict: False for a run that gets no token and reports no verdict (a candidate server).
    stop: set by another thread to end the run early (it is then killed like a time-out).
    started: set once the run holds its uid and starts (waiting for a free uid of the pool, while
    other runs or another engine hold them all, is not the program's time).
    program_memory_mb: the memory cgroup bound of the program a compile-then-run script starts
    (programs.shell_script), below the run's own bound that the compiler gets; 0: none.
    """
    why = unavailable(limits)
    if why:
        # The stage refuses such a config at check time; this guards direct callers.
        from engine.errors import ConfigError

        raise ConfigError(f"roundtrip.sandbox.isolation: {why}")
    with claimed_uid(limits.uid, limits.uid_slots) as uid:
        if started is not None:
            started.set()
        return _run(argv, files, limits, uid, memory_mb or limits.memory_mb, max_processes or limits.max_processes,
                    cpu_seconds or limits.cpu_seconds, wall_seconds or limits.wall_seconds, dict(env or {}),
                    open_files or limits.max_open_files, dict(channel or {}), verdict, stop, program_memory_mb)


def _run(argv: Sequence[str], files: Mapping[str, str | bytes], limits: SandboxLimits, uid: int | None,
         memory_mb: int, max_processes: int, cpu_seconds: int, wall_seconds: float, env: dict[str, str],
         open_files: int, channel: dict[int, int], verdict: bool, stop: threading.Event | None,
         program_memory_mb: int = 0) -> SandboxResult:
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
            group = cgroup.make(uid, max_processes * memory_mb + 3 * limits.tmpfs_mb + PIPE_BUFFERS_MB)
            if program_memory_mb:
                program_group = cgroup.make_program(group, uid, program_memory_mb)
        spec = json.dumps({"limits": _rlimits(limits, memory_mb, max_processes, cpu_seconds, open_files), "argv": inner,
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
        found = _read_verdict(bytes(drains[2].kept), token) if verdict else None
        status, reason = _classify(proc.returncode, timed_out, stderr, found, limits, memory_mb, max_processes,
                                   cpu_seconds, wall_seconds)
        if stopped and status not in ("compile_error",):
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
