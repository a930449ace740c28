"""A memory cgroup (v1) around one sandboxed run, where the machine lets the engine make one.

It counts what the per-process limits do not: real memory of all the run's processes together,
tmpfs files, and kernel memory such as the slab of tmpfs inodes and dentries (on these machines'
kernels `memory.limit_in_bytes` counts it; `memory.kmem.limit_in_bytes` stays unlimited). The
engine (root) makes `babelscore/run-<uid>` (one run holds a uid at a time, host-wide) with its
limit, and a `program` child for a compiled program; each `cgroup.procs` is owned by the run's
uid, so the launcher moves itself in before it starts anything and the compile-then-run script
moves its program into the child. Without a writable v1 memory controller (cgroup v2, no root)
`make` returns '' and the run goes without (docs/sandbox.md says what that leaves open).
"""
from __future__ import annotations

import logging
import os
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup/memory")
PROGRAM = "program"  # the child group a compiled program runs in (make_program)
log = logging.getLogger(__name__)


def available() -> bool:
    """Whether this process can make memory cgroups (root, a v1 memory controller mounted)."""
    return os.geteuid() == 0 and (ROOT / "cgroup.procs").exists() and os.access(ROOT, os.W_OK)


def _limited_group(path: Path, uid: int, limit_mb: int) -> None:
    """Create (or reuse) the memory group `path` limited to `limit_mb`; `uid` may move itself in."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "memory.limit_in_bytes").write_text(str(limit_mb << 20))
    os.chown(path / "cgroup.procs", uid, uid)


def make(uid: int, limit_mb: int) -> str:
    """The `cgroup.procs` path of a memory cgroup limited to `limit_mb` for the run of `uid`, or ''."""
    if not available():
        return ""
    path = ROOT / "babelscore" / f"run-{uid}"
    try:
        _limited_group(path, uid, limit_mb)
    except OSError as exc:
        log.warning("no memory cgroup for the sandbox's runs (%s): kernel memory is not bounded", exc)
        return ""
    return str(path / "cgroup.procs")


def make_program(procs: str, uid: int, limit_mb: int) -> str:
    """The `cgroup.procs` path of a child group of the run's (`procs`) limited to `limit_mb`, or
    '': a compiled language's program moves itself in once the compiler is done
    (programs.shell_script), so the compiler keeps the run's `compile_memory_mb` and the program
    (tests, candidate's server) runs under `run_memory_mb`."""
    if not procs:
        return ""
    path = Path(procs).parent / PROGRAM
    try:
        _limited_group(path, uid, limit_mb)
    except OSError as exc:
        log.warning("no memory cgroup for the sandbox's programs (%s): their bound is the toolchain step's", exc)
        return ""
    return str(path / "cgroup.procs")


def oom_kills(procs: str) -> tuple[int, int]:
    """Processes the kernel has killed at the limit of the run's group and of its program's child
    group (`oom_kill` of `memory.oom_control`; (0, 0) without a group)."""
    if not procs:
        return 0, 0
    group = Path(procs).parent
    return _oom_kills(group), _oom_kills(group / PROGRAM)


def _oom_kills(group: Path) -> int:
    try:
        for line in (group / "memory.oom_control").read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def remove(procs: str) -> None:
    """The run's group, once its processes have left it (killed ones take a moment to exit); a
    group still in use after a second is left, and the next run of the same uid reuses it."""
    if not procs:
        return
    group = Path(procs).parent
    deadline = time.monotonic() + 1.0
    while True:
        try:
            if (group / PROGRAM).exists():
                os.rmdir(group / PROGRAM)
            os.rmdir(group)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                log.debug("memory cgroup %s still in use; the next run of its uid reuses it", group)
                return
            time.sleep(0.01)
