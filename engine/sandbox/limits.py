"""The limits of one sandboxed run (config), the bounds they give, and the rlimits they set.

Two kinds of bound hold a run (docs/sandbox.md, "Bounds of one run"): per process, the
rlimits below (address space, processes, CPU time, file size, open files); per run, a memory
cgroup (engine.sandbox.cgroup) that counts real memory, kernel objects included: `run_memory_mb`
for the program (a Python run, a compiled language's program once its compiler is done) and
`compile_memory_mb` for the toolchain step around it. Where no cgroup can be made (cgroup v2,
no root) the address-space bound (`address_space_bound_mb`) is what remains.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from engine.params import Params, require
from engine.sandbox import bwrap, cgroup

# Pipe buffers of one unprivileged uid beyond the kernel's soft limit get one page each
# (/proc/sys/fs/pipe-user-pages-soft, 16384 pages by default): at most this much per run.
PIPE_BUFFERS_MB = 64


@dataclass(frozen=True)
class SandboxLimits(Params):
    """Limits of one sandboxed run. Languages other than Python get the `toolchain_*` allowances."""

    cpu_seconds: int = 5
    """CPU-time limit (RLIMIT_CPU)."""
    wall_seconds: float = 10.0
    """wall-clock limit; every process of the run is killed past it."""
    memory_mb: int = 512
    """address-space limit per process (RLIMIT_AS)."""
    run_memory_mb: int = 256  # honest programs peak far below (docs/sandbox.md: a JVM at 18 MB)
    """real memory (resident pages, tmpfs files, kernel objects) of all a program's processes (a memory
    cgroup: root, cgroup v1)."""
    compile_memory_mb: int = 1024  # rustc, the largest toolchain step on honest code, peaked at 290 MB
    """the same for a compiled language's toolchain step (compiler, linker, build cache) together with its
    program."""
    max_processes: int = 16
    """process-count limit of the run (RLIMIT_NPROC, under the run's own uid)."""
    file_size_mb: int = 16
    """largest file the code may write (RLIMIT_FSIZE)."""
    tmpfs_mb: int = 64
    """size of each private tmpfs of a bwrap run (/tmp, /dev/shm, the work directory)."""
    output_bytes: int = 16384
    """captured stdout/stderr kept per stream."""
    isolation: Literal["bwrap", "hook"] = "bwrap"
    """`bwrap` (bubblewrap namespaces; refused at config check when it cannot run) or `hook` (no isolation,
    not a security boundary)."""
    uid: int = 200000
    """first unprivileged uid used when the engine runs as root (no account needed)."""
    uid_slots: int = 64
    """sandbox runs at once per machine (each holds one uid)."""
    python: str = ""
    """interpreter for untrusted Python ('' = /usr/bin/python3 when present, else this one's base
    interpreter)."""
    toolchain_memory_mb: int = 4096  # a JVM, V8 or Go reserves address space far beyond its heap
    """address space added for compilers and VMs (JVM, V8, Go, rustc) beyond memory_mb."""
    toolchain_max_processes: int = 256  # RLIMIT_NPROC counts threads; a JVM or `go build` starts dozens
    """process limit for languages other than Python (RLIMIT_NPROC counts threads)."""
    toolchain_seconds: int = 30
    """CPU and wall-clock floor for a compile-and-run of a compiled language."""
    max_open_files: int = 64
    """open file descriptors per process (RLIMIT_NOFILE) of a Python run."""
    toolchain_max_open_files: int = 512
    """RLIMIT_NOFILE of the other languages (javac and `go build` open many files)."""

    def __post_init__(self) -> None:
        require(self.cpu_seconds >= 1, "cpu_seconds", self.cpu_seconds, "an integer >= 1")
        require(self.wall_seconds > 0, "wall_seconds", self.wall_seconds, "a number > 0")
        require(self.memory_mb >= 32, "memory_mb", self.memory_mb, "an integer >= 32")
        require(self.run_memory_mb >= 32, "run_memory_mb", self.run_memory_mb, "an integer >= 32")
        require(self.compile_memory_mb >= self.run_memory_mb, "compile_memory_mb", self.compile_memory_mb,
                f"an integer >= run_memory_mb ({self.run_memory_mb}): the program's group is inside the compiler's")
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


def address_space_bound_mb(limits: SandboxLimits, toolchain: bool = False) -> int:
    """What one run can hold where no memory cgroup holds it: every process at its address-space
    limit, every capped tmpfs full, and the pipe buffers of its uid (what the filter and the
    read-only mounts refuse, memfds, System V IPC, new mounts, no limit would count)."""
    memory = limits.memory_mb + (limits.toolchain_memory_mb if toolchain else 0)
    processes = limits.toolchain_max_processes if toolchain else limits.max_processes
    return processes * memory + 3 * limits.tmpfs_mb + PIPE_BUFFERS_MB


def memory_bound_mb(limits: SandboxLimits, toolchain: bool = False) -> int:
    """The documented bound on the memory one run holds (docs/sandbox.md): its memory cgroup's
    limit where the engine makes one (`run_memory_mb`; `compile_memory_mb` while a compiler runs),
    else the address-space bound."""
    if not cgroup.available():
        return address_space_bound_mb(limits, toolchain)
    return limits.compile_memory_mb if toolchain else limits.run_memory_mb


def runs_as_root() -> bool:
    """Root drops each run to a uid of the pool; any other user runs the sandbox as itself."""
    return os.geteuid() == 0


def rlimits(limits: SandboxLimits, memory_mb: int, processes: int, cpu_seconds: int,
            open_files: int) -> dict[str, tuple[int, int]]:
    """The per-process limits the launcher sets (resource.setrlimit names -> (soft, hard))."""
    mb = 1024 * 1024
    nproc = processes + (bwrap.OWN_PROCESSES if limits.isolation == "bwrap" else 0)
    if not runs_as_root():
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
