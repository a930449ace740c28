"""Run untrusted programs (regenerated code and its tests) outside the engine's process.

Every run happens in a fresh child process, in a throwaway directory that is removed
afterwards, under these layers:

- **resource limits** set in the child before the program starts: CPU seconds
  (RLIMIT_CPU), address space (RLIMIT_AS), processes (RLIMIT_NPROC), written file size
  (RLIMIT_FSIZE), no core files;
- **a hard wall-clock timeout** after which the whole process group is killed (the child
  starts its own session, so `os.killpg` reaches every descendant that did not leave it);
- **isolation** (`isolation`):
  - `namespace`: Linux user + network + pid + mount namespaces through util-linux
    `unshare`. The network namespace has no interface but loopback, so any connection
    fails; the pid namespace ends every process the program left behind when it exits;
    private tmpfs mounts over /tmp, /var/tmp and /dev/shm swallow writes there. When the
    engine runs as root the child first drops to an unprivileged uid, because root ignores
    RLIMIT_NPROC and owns root's files. RLIMIT_NPROC counts every process of a uid, so runs at
    the same time (threads, other engine processes on the node) each claim their own uid from
    `uid` .. `uid + uid_slots - 1` with a file lock;
  - `hook`: the fallback where unprivileged namespaces are unavailable (containers without
    user namespaces, macOS). Only the resource limits, the session kill and the audit hook
    below apply; it is weaker against native code.
  - `auto`: `namespace` when a probe run succeeds, else `hook`.
- **an audit hook** (PEP 578) installed in Python children before the untrusted code is
  loaded: it ends the process with a marker on any socket creation or connection, any write,
  rename or removal outside the sandbox directory, and any attempt to start other programs
  or load native code with ctypes. It cannot be caught by the program (the process exits at
  once), so the reason reaches the engine.

stdout and stderr are drained by threads that keep only the first `output_bytes` of each, so
a program printing without end cannot fill the engine's memory.
"""
from __future__ import annotations

import dataclasses
import fcntl
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Literal, Mapping, Sequence

from engine.params import Params, require

log = logging.getLogger(__name__)

STATUSES = ("passed", "failed", "timeout", "memory", "processes", "filesize", "blocked", "crashed", "skipped")

# Exit codes the bootstrap uses to say why the program stopped (chosen away from shells' 126-128+).
EXIT_BLOCKED = 86
EXIT_MEMORY = 87
EXIT_PROCESSES = 88
MARKER = "babelscore-sandbox:"

# Installed before the untrusted code runs; argv[1] is the program file, relative to the cwd.
BOOTSTRAP = r'''
import os, sys
ROOT = os.path.realpath(os.getcwd())
MARK = "babelscore-sandbox:"
_busy = [False]
def _stop(code, why):
    try:
        os.write(2, ("\n%s %s\n" % (MARK, why)).encode("utf-8", "replace"))
    finally:
        os._exit(code)
def _inside(path):
    if isinstance(path, int):
        return True
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    full = os.path.realpath(os.path.join(ROOT, os.fspath(path)))
    return full == ROOT or full.startswith(ROOT + os.sep) or full == os.devnull
_WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PATH_EVENTS = {"os.remove", "os.rename", "os.replace", "os.mkdir", "os.rmdir", "os.chmod", "os.chown",
                "os.symlink", "os.link", "os.truncate", "os.utime", "shutil.rmtree", "shutil.move",
                "os.mkfifo", "os.mknod"}
_NEVER = ("socket.", "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
          "pty.spawn", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "os.startfile", "os.kill", "os.killpg")
def _hook(event, args):
    if _busy[0]:
        return
    _busy[0] = True
    try:
        if event.startswith(_NEVER):
            _stop(86, "blocked: %s" % event)
        if event == "open" and len(args) >= 3:
            path, mode, flags = args[0], args[1], args[2]
            writes = (mode is not None and any(c in str(mode) for c in "wax+")) or (
                mode is None and isinstance(flags, int) and flags & _WRITE)
            if writes and path is not None and not _inside(path):
                _stop(86, "blocked: write outside the sandbox directory: %r" % (path,))
        elif event in _PATH_EVENTS:
            for p in args:
                if isinstance(p, (str, bytes, os.PathLike)) and not _inside(p):
                    _stop(86, "blocked: %s outside the sandbox directory: %r" % (event, p))
    finally:
        _busy[0] = False
sys.path.insert(0, ROOT)
program = sys.argv[1]
sys.argv = sys.argv[1:]
import runpy
sys.addaudithook(_hook)
try:
    runpy.run_path(program, run_name="__main__")
except MemoryError:
    _stop(87, "memory: MemoryError (address-space limit)")
except BlockingIOError as exc:
    _stop(88, "processes: %s (process-count limit)" % exc)
'''

# Sets the limits in the child, then replaces itself by the isolation wrapper and the program.
LAUNCHER = r'''
import os, resource, sys, json
spec = json.loads(sys.argv[1])
for name, (soft, hard) in spec["limits"].items():
    resource.setrlimit(getattr(resource, name), (soft, hard))
os.execvp(spec["argv"][0], spec["argv"])
'''

# Runs inside the new namespaces as the mapped root: the sandbox directory stays writable, the
# rest of the file tree becomes read-only, /dev/shm a private tmpfs; then the program. The shell
# (pid 1 of the namespace) reports a killing signal itself: unshare does not relay it.
NAMESPACE_PROLOGUE = (
    'set -e; mount --bind "$PWD" "$PWD"; cd "$PWD"; mount -o remount,bind,ro /; '
    'if [ -d /dev/shm ]; then mount -t tmpfs -o size=16m tmpfs /dev/shm; fi; set +e; "$@"; rc=$?; '
    'if [ $rc -gt 128 ]; then echo "babelscore-sandbox: signal $((rc - 128))" >&2; fi; exit $rc'
)
UNSHARE_FLAGS = ("--user", "--map-root-user", "--net", "--pid", "--fork", "--kill-child", "--mount")


@dataclass(frozen=True)
class SandboxLimits(Params):
    """Limits of one sandboxed run. Java runs get `java_extra_memory_mb` on top of the address space.

    Keys:
        cpu_seconds: CPU-time limit (RLIMIT_CPU).
        wall_seconds: wall-clock limit; the whole process group is killed past it.
        memory_mb: address-space limit (RLIMIT_AS).
        max_processes: process-count limit (RLIMIT_NPROC, under the sandbox's own uid).
        file_size_mb: largest file the code may write (RLIMIT_FSIZE).
        output_bytes: captured stdout/stderr kept per stream.
        isolation: `namespace` (Linux user/net/pid/mount namespaces), `hook` (audit-hook fallback), `auto`.
        uid: first unprivileged uid used when the engine runs as root.
        uid_slots: sandbox runs at once per machine (each holds one uid).
        python: interpreter for untrusted Python ('' = this one if the sandbox uid can run it, else python3).
        java_extra_memory_mb: address space added for a JVM beyond its heap.
        java_max_processes: process limit for Java runs (a JVM starts dozens of threads).
    """

    cpu_seconds: int = 5
    wall_seconds: float = 10.0
    memory_mb: int = 512
    max_processes: int = 16
    file_size_mb: int = 16
    output_bytes: int = 16384
    isolation: Literal["auto", "namespace", "hook"] = "auto"
    uid: int = 200000  # first unprivileged uid used when the engine runs as root (no account needed)
    uid_slots: int = 64  # runs at once per machine; each holds one uid
    python: str = ""  # interpreter for untrusted Python; '' = this one if the sandbox uid can run it, else python3
    java_extra_memory_mb: int = 4096  # the JVM reserves address space far beyond its heap
    java_max_processes: int = 256  # RLIMIT_NPROC counts threads; a JVM starts dozens

    def __post_init__(self) -> None:
        require(self.cpu_seconds >= 1, "cpu_seconds", self.cpu_seconds, "an integer >= 1")
        require(self.wall_seconds > 0, "wall_seconds", self.wall_seconds, "a number > 0")
        require(self.memory_mb >= 32, "memory_mb", self.memory_mb, "an integer >= 32")
        require(self.max_processes >= 1, "max_processes", self.max_processes, "an integer >= 1")
        require(self.file_size_mb >= 1, "file_size_mb", self.file_size_mb, "an integer >= 1")
        require(self.output_bytes >= 256, "output_bytes", self.output_bytes, "an integer >= 256")
        require(self.uid >= 1000, "uid", self.uid, "an integer >= 1000 (an unprivileged uid)")
        require(self.uid_slots >= 1, "uid_slots", self.uid_slots, "an integer >= 1")


@dataclass(frozen=True)
class SandboxResult:
    status: str  # one of STATUSES
    reason: str  # '' when passed
    returncode: int | None
    stdout: str
    stderr: str
    wall_s: float
    isolation: str


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


@lru_cache(maxsize=None)
def _interpreter_for(uid: int, configured: str) -> str:
    if configured:
        return configured
    if not _drop_privileges():
        return sys.executable
    # The sandbox uid must be able to reach the interpreter (a venv under /root is not).
    for candidate in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        path = Path(os.path.realpath(candidate))
        if path.exists() and all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents]):
            return candidate
    return sys.executable


@lru_cache(maxsize=None)
def interpreter_version(limits: SandboxLimits) -> str:
    """Version of the Python that runs untrusted code (it goes into signatures)."""
    python = _interpreter_for(limits.uid, limits.python)
    try:
        done = subprocess.run([python, "-I", "-S", "-c", "import platform; print(platform.python_version())"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


@lru_cache(maxsize=None)
def namespaces_available(uid: int) -> bool:
    """Whether `unshare` can create user, network, pid and mount namespaces here (probed once)."""
    if sys.platform != "linux" or shutil.which("unshare") is None:
        return False
    kwargs = {"user": uid, "group": uid, "extra_groups": []} if _drop_privileges() else {}
    probe_dir = tempfile.mkdtemp(prefix="babelscore-sandbox-probe-")
    try:
        if _drop_privileges():
            os.chown(probe_dir, uid, uid)
        done = subprocess.run(
            ["unshare", *UNSHARE_FLAGS, "sh", "-c", NAMESPACE_PROLOGUE, "sh", "true"],
            capture_output=True, timeout=20, cwd=probe_dir, **kwargs,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(probe_dir, ignore_errors=True)
    if done.returncode != 0:
        log.info("sandbox: namespaces unavailable (%s); using the audit-hook fallback", done.stderr.decode(errors="replace").strip())
    return done.returncode == 0


def resolve_isolation(limits: SandboxLimits) -> str:
    if limits.isolation == "auto":
        return "namespace" if namespaces_available(limits.uid) else "hook"
    return limits.isolation


def _rlimits(limits: SandboxLimits, memory_mb: int, processes: int) -> dict[str, tuple[int, int]]:
    mb = 1024 * 1024
    nproc = processes
    if not _drop_privileges():
        # RLIMIT_NPROC counts every process of the (real) user, not only the sandbox's.
        import psutil

        uid = os.getuid()
        nproc += sum(1 for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == uid)
    return {
        # SIGXCPU at the soft limit names the cause; SIGKILL a second later if it is ignored.
        "RLIMIT_CPU": (limits.cpu_seconds, limits.cpu_seconds + 1),
        "RLIMIT_AS": (memory_mb * mb, memory_mb * mb),
        "RLIMIT_NPROC": (nproc, nproc),
        "RLIMIT_FSIZE": (limits.file_size_mb * mb, limits.file_size_mb * mb),
        "RLIMIT_CORE": (0, 0),
    }


def _classify(returncode: int | None, timed_out: bool, stderr: str, limits: SandboxLimits) -> tuple[str, str]:
    marker = next((line[len(MARKER):].strip() for line in reversed(stderr.splitlines()) if line.startswith(MARKER)), "")
    if marker.startswith("signal ") and marker[7:].isdigit():
        returncode, marker = -int(marker[7:]), ""
    if timed_out:
        return "timeout", f"wall-clock limit of {limits.wall_seconds:g} s reached; process group killed"
    if returncode == 0:
        return "passed", ""
    if returncode == EXIT_BLOCKED:
        return "blocked", marker or "blocked by the sandbox"
    if returncode == EXIT_MEMORY:
        return "memory", marker or f"address-space limit of {limits.memory_mb} MB"
    if returncode == EXIT_PROCESSES:
        return "processes", marker or f"process-count limit of {limits.max_processes}"
    if returncode is not None and returncode < 0:
        sig = -returncode
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and "cpu" in marker):
            return "timeout", f"CPU-time limit of {limits.cpu_seconds} s reached (SIGXCPU)"
        if sig == signal.SIGXFSZ:
            return "filesize", f"file-size limit of {limits.file_size_mb} MB reached (SIGXFSZ)"
        return "crashed", f"killed by signal {signal.Signals(sig).name}"
    if "MemoryError" in stderr or "OutOfMemoryError" in stderr:
        return "memory", f"address-space limit of {limits.memory_mb} MB"
    if "Network is unreachable" in stderr or "Temporary failure in name resolution" in stderr:
        return "blocked", "network unreachable inside the sandbox's network namespace"
    if "Resource temporarily unavailable" in stderr or "unable to create native thread" in stderr:
        return "processes", f"process-count limit of {limits.max_processes}"
    if "File too large" in stderr:
        return "filesize", f"file-size limit of {limits.file_size_mb} MB reached"
    last = next((line.strip() for line in reversed(stderr.splitlines()) if line.strip()), "")
    return "failed", f"exit status {returncode}: {last[:300]}"


@contextmanager
def _claimed_uid(limits: SandboxLimits) -> Iterator[int | None]:
    """A uid no other run on this machine holds (None when not root: no uid change)."""
    if not _drop_privileges():
        yield None
        return
    folder = Path(tempfile.gettempdir()) / "babelscore-sandbox-uids"
    folder.mkdir(mode=0o700, exist_ok=True)
    delay = 0.01
    while True:
        for uid in range(limits.uid, limits.uid + limits.uid_slots):
            fd = os.open(folder / f"{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            if not _reap_uid(uid):  # processes of an earlier run still count against its limit
                os.close(fd)
                continue
            try:
                yield uid
            finally:
                _reap_uid(uid)  # the next run of this uid starts with no process of this one
                os.close(fd)  # releases the lock
            return
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def _uid_processes(uid: int) -> list[int]:
    """Pids of the processes (zombies included) whose real uid is `uid`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("Uid:"):
                    if int(line.split()[1]) == uid:
                        pids.append(int(entry.name))
                    break
        except (OSError, ValueError):
            continue
    return pids


def _reap_uid(uid: int, seconds: float = 5.0) -> bool:
    """Kill what is left of the sandbox uid's processes and wait until none remains.

    RLIMIT_NPROC counts every process of the uid, dying ones too: a run that starts while the
    killed group of the previous run is still exiting would hit the limit at its first fork.
    The uid range belongs to the sandbox, so whatever runs under it is a leftover. False when
    processes remain after `seconds` (the caller takes another uid).
    """
    deadline = time.monotonic() + seconds
    while True:
        pids = _uid_processes(uid)
        if not pids:
            return True
        if time.monotonic() > deadline:
            return False
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)


def _wait_unreaped(pid: int, seconds: float) -> bool:
    """Wait for `pid` to exit without reaping it; False on time-out.

    While the leader is unreaped its pid (the group id) cannot be reused, so the group kill
    that follows cannot reach an unrelated process.
    """
    deadline = time.monotonic() + seconds
    delay = 0.001
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is None:
        if time.monotonic() >= deadline:
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
) -> SandboxResult:
    """Run `argv` (relative paths resolve in the throwaway directory holding `files`)."""
    isolation = resolve_isolation(limits)
    with _claimed_uid(limits) as uid:
        return _run(argv, files, limits, isolation, uid, memory_mb or limits.memory_mb, max_processes or limits.max_processes)


def _run(argv: Sequence[str], files: Mapping[str, str | bytes], limits: SandboxLimits, isolation: str, uid: int | None,
         memory_mb: int, max_processes: int) -> SandboxResult:
    workdir = Path(tempfile.mkdtemp(prefix="babelscore-sandbox-"))
    started = time.perf_counter()
    try:
        for name, content in files.items():
            target = workdir / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        kwargs: dict = {}
        if uid is not None:
            for path in [workdir, *workdir.rglob("*")]:
                os.chown(path, uid, uid)
            kwargs = {"user": uid, "group": uid, "extra_groups": []}
        inner = list(argv)
        if isolation == "namespace":
            inner = ["unshare", *UNSHARE_FLAGS, "sh", "-c", NAMESPACE_PROLOGUE, "sh", *inner]
        spec = json.dumps({"limits": _rlimits(limits, memory_mb, max_processes), "argv": inner})
        proc = subprocess.Popen(
            [_interpreter_for(limits.uid, limits.python), "-I", "-S", "-c", LAUNCHER, spec],
            cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": str(workdir)},
            **kwargs,
        )
        drains = [_Drain(proc.stdout, limits.output_bytes), _Drain(proc.stderr, limits.output_bytes)]
        for drain in drains:
            drain.start()
        timed_out = not _wait_unreaped(proc.pid, limits.wall_seconds)
        _kill_group(proc.pid)
        proc.wait()
        for drain in drains:
            drain.join(timeout=5)
        proc.stdout.close()
        proc.stderr.close()
        stdout, stderr = drains[0].text(), drains[1].text()
        status, reason = _classify(proc.returncode, timed_out, stderr, limits)
        return SandboxResult(status, reason, proc.returncode, stdout, stderr, time.perf_counter() - started, isolation)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _kill_group(pgid: int) -> None:
    # The group outlives its leader when descendants remain; kill it whether or not the leader ended.
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_python(source: str, limits: SandboxLimits, extra_files: Mapping[str, str] | None = None) -> SandboxResult:
    """Run a Python program (code + tests in one source) under the audit-hook bootstrap."""
    files = {"_bootstrap.py": BOOTSTRAP, "program.py": source, **(extra_files or {})}
    python = _interpreter_for(limits.uid, limits.python)
    return run_program([python, "-I", "-B", "_bootstrap.py", "program.py"], files, limits)


def java_available() -> str:
    """'' when javac and java are on PATH; otherwise why Java tasks are skipped."""
    missing = [tool for tool in ("javac", "java") if shutil.which(tool) is None]
    return f"no JDK: {', '.join(missing)} not on PATH (install a JDK to run Java tasks)" if missing else ""


def run_java(files: Mapping[str, str], main_class: str, limits: SandboxLimits) -> SandboxResult:
    """Compile every .java file and run `main_class`; one sandbox run does both steps."""
    why = java_available()
    if why:
        return SandboxResult("skipped", why, None, "", "", 0.0, "none")
    heap = max(16, limits.memory_mb // 2)
    jvm = f"-J-Xmx{heap}m -J-XX:+UseSerialGC -J-XX:TieredStopAtLevel=1 -J-Xshare:auto"
    script = (
        f"javac {jvm} -nowarn -d . *.java || exit 3; "
        f"exec java -Xmx{heap}m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp . {main_class}"
    )
    java_limits = dataclasses.replace(limits, cpu_seconds=max(limits.cpu_seconds, 20), wall_seconds=max(limits.wall_seconds, 60.0))
    return run_program(
        ["sh", "-c", script], files, java_limits,
        memory_mb=limits.memory_mb + limits.java_extra_memory_mb, max_processes=limits.java_max_processes,
    )
