"""The memory bound of one sandboxed run holds against memory no per-process limit counts.

One program (a model's completion would need no more than ctypes) tries every way around
RLIMIT_AS we know of: memfds (their pages belong to no address space once unmapped), a
nested user namespace with an uncapped tmpfs of its own, System V shared memory, the capped
tmpfs mounts filled to the brim and file descriptors without end. It measures the kernel's own
counters (/proc/meminfo is the host's, not the namespace's) before and at its peak, so the
test reads the host's available memory at the moment it is most in use without timing
anything from outside. Where the engine makes memory cgroups, the run's real memory is bound
too: forked children and a compiler that reads without end are killed at the program's and the
toolchain step's bounds, while honest programs of every language pass under the defaults.
"""
from __future__ import annotations

import json

import pytest

from engine.roundtrip.tasks import load_tasks
from engine.sandbox import bwrap, cgroup, process
from engine.sandbox.languages import LANGUAGES, run_tests, toolchain_missing
from engine.sandbox.limits import SandboxLimits, memory_bound_mb

LIMITS = SandboxLimits(cpu_seconds=10, wall_seconds=30.0, memory_mb=128, max_processes=4, tmpfs_mb=16, max_open_files=64)
BWRAP = process.unavailable(LIMITS)
TARGET_MB = 1024  # what the program tries to hold beyond its limits

HOARDER = r'''
import ctypes, errno, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
CHUNK = b"x" * (1 << 20)
TARGET = %(target)d

def meminfo():
    with open("/proc/meminfo") as handle:
        return {line.split(":")[0]: int(line.split()[1]) for line in handle}

def fill(path, budget):
    """MB written to files under `path` until the filesystem or the budget ends (8 MB a file)."""
    written = 0
    try:
        while written < budget:
            with open("%%s/fill-%%d" %% (path, written), "wb") as handle:
                for _ in range(8):
                    handle.write(CHUNK)
                    written += 1
    except OSError:
        pass
    return written

before = meminfo()
got = {"memfd_mb": 0, "userns": False, "nested_tmpfs_mb": 0, "shm": False, "fds": 0,
       "usr_local": os.path.exists("/usr/local"),
       "usr_other": sorted(set(os.listdir("/usr")) - {%(usr)s})}
memfds = []
while got["memfd_mb"] < TARGET:
    fd = libc.syscall(319, b"hoard", 0)  # memfd_create
    if fd < 0:
        break
    memfds.append(fd)
    try:
        for _ in range(8):
            os.write(fd, CHUNK)
            got["memfd_mb"] += 1
    except OSError:
        break
shm = libc.shmget(0, 256 << 20, 0o1000 | 0o600)
got["shm"] = shm >= 0
if libc.unshare(0x10000000 | 0x00020000) == 0:  # CLONE_NEWUSER | CLONE_NEWNS
    got["userns"] = True
    os.makedirs("/tmp/nested", exist_ok=True)
    if libc.mount(b"none", b"/tmp/nested", b"tmpfs", 0, b"size=4g") == 0:
        got["nested_tmpfs_mb"] = fill("/tmp/nested", TARGET // 2)
got["tmpfs_mb"] = sum(fill(path, TARGET) for path in ("/tmp", "/dev/shm", "/work"))
peak = meminfo()
got["shmem_growth_mb"] = (peak["Shmem"] - before["Shmem"]) / 1024
got["available_drop_mb"] = (before["MemAvailable"] - peak["MemAvailable"]) / 1024
fds = []
try:
    while len(fds) < 100000:
        fds.extend(os.pipe())
except OSError:
    pass
got["fds"] = len(fds)
for fd in fds:
    os.close(fd)
print(json.dumps(got))
'''


@pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
def test_memfds_nested_tmpfs_shm_and_fds_end_at_the_documented_bound():
    program = HOARDER % {"target": TARGET_MB, "usr": ", ".join(repr(name) for name in bwrap.USR_ENTRIES)}
    result = run_tests({"programming_language": "python", "tests": program, "entry_point": "", "context": ""}, "", LIMITS)
    assert result.status == "passed", result
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert got["memfd_mb"] == 0 and not got["userns"] and got["nested_tmpfs_mb"] == 0 and not got["shm"], got
    assert not got["usr_local"] and not got["usr_other"], got  # /usr holds the toolchains' paths only
    assert got["tmpfs_mb"] <= 3 * LIMITS.tmpfs_mb, got
    assert got["fds"] <= LIMITS.max_open_files, got
    # The kernel's shared-memory pages (tmpfs, memfd, shm) grew by the capped mounts at most.
    assert got["shmem_growth_mb"] <= 3 * LIMITS.tmpfs_mb + 4, got
    bound = memory_bound_mb(LIMITS)
    assert bound < TARGET_MB  # the attempt is beyond the bound, so the bound is what stopped it
    assert got["available_drop_mb"] <= bound, got


KERNEL = r'''
import ctypes, json, os, socket
libc = ctypes.CDLL(None, use_errno=True)
TARGET = %(target)d << 20
CHUNK = b"x" * (1 << 16)

def meminfo():
    with open("/proc/meminfo") as handle:
        return {line.split(":")[0]: int(line.split()[1]) for line in handle}

before = meminfo()
got = {}
try:  # the IPC namespace's sysctls: raise a message queue's size to 1 GiB
    with open("/proc/sys/kernel/msgmnb", "w") as handle:
        handle.write(str(1 << 30))
    got["sysctl"] = True
except OSError:
    got["sysctl"] = False
queue = libc.msgget(0, 0o1000 | 0o600)  # IPC_PRIVATE, IPC_CREAT
got["msg_queue"] = queue >= 0
sent = 0
if queue >= 0:
    message = ctypes.create_string_buffer(8 + 8192)
    message[0] = 1
    while sent < TARGET and libc.msgsnd(queue, message, 8192, 0o4000) == 0:  # IPC_NOWAIT
        sent += 8192
got["msg_mb"] = sent >> 20
got["semaphores"] = libc.semget(0, 250, 0o1000 | 0o600) >= 0
held, sockets = 0, []
try:  # socket buffers in flight, never read
    while held < TARGET:
        left, right = socket.socketpair()
        sockets += [left, right]
        left.setblocking(False)
        try:
            while True:
                held += left.send(CHUNK)
        except BlockingIOError:
            pass
except OSError:
    pass
got["socket_mb"] = held >> 20
written = 0
try:  # bubblewrap's /dev is a tmpfs of its own
    while written < TARGET:
        with open("/dev/fill-%%d" %% written, "wb") as handle:
            for _ in range(128):
                handle.write(CHUNK)
                written += len(CHUNK)
except OSError:
    pass
got["dev_mb"] = written >> 20
peak = meminfo()
got["available_drop_mb"] = (before["MemAvailable"] - peak["MemAvailable"]) / 1024
print(json.dumps(got))
'''


@pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
def test_kernel_memory_channels_are_closed():
    """SysV message queues and semaphores, the IPC sysctls, socket buffers in flight and bwrap's
    /dev tmpfs each grew the host's kernel memory by 0.5-1.5 GiB past the bound: each is closed."""
    program = KERNEL % {"target": TARGET_MB}
    result = run_tests({"programming_language": "python", "tests": program, "entry_point": "", "context": ""}, "", LIMITS)
    assert result.status == "passed", result
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert not got["sysctl"] and not got["msg_queue"] and got["msg_mb"] == 0 and not got["semaphores"], got
    assert got["socket_mb"] == 0 and got["dev_mb"] == 0, got
    assert got["available_drop_mb"] <= memory_bound_mb(LIMITS), got


INODES = r'''
import json, os, sys

def slab():
    with open("/proc/meminfo") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("Slab:")) >> 10

start, peak, made, why = slab(), 0, 0, ""
try:
    for mount in ("/tmp", "/dev/shm", "."):
        os.mkdir(mount + "/q")
        for i in range(10 ** 7):
            os.mkdir(mount + "/q/n%%07d" %% i + "x" * 200)  # an inode and a dentry, no block
            made += 1
            if made %% 2000 == 0:
                peak = max(peak, slab() - start)
                print(json.dumps({"slab_growth_mb": peak, "made": made}), flush=True)
                if peak > %(target)d:
                    raise OSError("target reached")
except OSError as exc:
    why = str(exc)
print(json.dumps({"slab_growth_mb": peak, "made": made, "why": why}), flush=True)
'''
SLACK_MB = 32  # the host's other slab traffic while the program runs (the Slab counter is host-wide)
INODE_LIMITS = SandboxLimits(cpu_seconds=20, wall_seconds=40.0, memory_mb=64, max_processes=2, tmpfs_mb=8)


@pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
@pytest.mark.skipif(not cgroup.available(), reason="no writable cgroup v1 memory controller")
def test_inodes_in_the_capped_tmpfs_mounts_stay_under_the_bound():
    """Empty directories with long names cost host slab and no tmpfs block: one process making
    them in the three capped mounts grew the host's slab by 400 MB with no cgroup. The run's
    memory cgroup stops it at the documented bound (the host's Slab counter, read by the program
    as it goes; other work on the host adds to what it sees: SLACK_MB)."""
    bound = memory_bound_mb(INODE_LIMITS)
    program = INODES % {"target": 2 * bound}
    result = run_tests({"programming_language": "python", "tests": program, "entry_point": "", "context": ""}, "", INODE_LIMITS)
    lines = [json.loads(line) for line in result.stdout.strip().splitlines() if line.startswith("{")]
    assert lines, result
    assert lines[-1]["made"] > 0 and lines[-1].get("why") != "target reached", lines[-1]
    assert max(line["slab_growth_mb"] for line in lines) <= bound + SLACK_MB, (bound, lines[-1], result.status)


PTY = r'''
import os, pty
found = []
for path in ("/dev/ptmx", "/dev/pts/ptmx"):
    try:
        os.close(os.open(path, os.O_RDWR | os.O_NOCTTY))
        found.append(path)
    except OSError as exc:
        print(path, exc)
try:
    pty.openpty()
    found.append("openpty")
except OSError as exc:
    print("openpty", exc)
assert not found, found
'''


@pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
def test_no_pseudo_terminal_can_be_opened():
    """Forked children opening /dev/ptmx took the host's pty count (kernel.pty.nr, host-wide) to its limit."""
    result = run_tests({"programming_language": "python", "tests": PTY, "entry_point": "", "context": ""}, "", LIMITS)
    assert result.status == "passed", result


TOUCHERS = r'''
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>
int main() {
    int children = %(children)d, ready[2], go[2];
    if (pipe(ready) || pipe(go)) return 1;
    for (int i = 0; i < children; ++i) {
        if (fork() == 0) {
            close(ready[0]);
            close(go[1]);
            volatile char *block = (volatile char *) malloc((size_t) %(each)d << 20);
            if (!block) _exit(1);
            for (size_t at = 0; at < ((size_t) %(each)d << 20); at += 4096) block[at] = 1;  // resident, charged
            char byte = 1;
            if (write(ready[1], &byte, 1) != 1) _exit(1);
            if (read(go[0], &byte, 1) < 0) _exit(1);  // every child holds its block until all have one
            _exit(block[4096] == 1 ? 0 : 1);
        }
    }
    close(ready[1]);
    close(go[0]);
    char byte;
    int held = 0;
    while (held < children && read(ready[0], &byte, 1) == 1) ++held;
    close(go[1]);
    int failed = held != children;
    for (int i = 0; i < children; ++i) {
        int status = 0;
        wait(&status);
        failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    return failed ? 1 : 0;
}
'''
DEFAULTS = SandboxLimits()


@pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
@pytest.mark.skipif(not cgroup.available(), reason="no writable cgroup v1 memory controller")
@pytest.mark.skipif(bool(toolchain_missing("cpp")), reason=toolchain_missing("cpp") or "g++")
def test_forked_children_are_killed_at_the_run_memory_bound_with_default_limits():
    """Eight forked C++ children each touching 400 MB held 3.2 GB and passed: each one is under
    its address-space limit, and the run's cgroup was sized to the sum of them (8,448 MB). The
    program's group is limited to `run_memory_mb` (real memory of all its processes), so the
    kernel kills a child and the run says which bound; one child of 100 MB passes."""
    assert 8 * 400 > DEFAULTS.run_memory_mb and 400 < DEFAULTS.memory_mb + DEFAULTS.toolchain_memory_mb
    assert memory_bound_mb(DEFAULTS) == DEFAULTS.run_memory_mb
    task = {"programming_language": "cpp", "entry_point": "", "context": ""}
    over = run_tests({**task, "tests": TOUCHERS % {"children": 8, "each": 400}}, "", DEFAULTS)
    assert over.status == "memory" and "run_memory_mb" in over.reason, over
    under = run_tests({**task, "tests": TOUCHERS % {"children": 1, "each": 100}}, "", DEFAULTS)
    assert under.status == "passed", under


DEVZERO = 'static ZEROS: &[u8] = include_bytes!("/dev/zero");\nfn main() {\n    assert!(ZEROS.len() > 1);\n}\n'


@pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
@pytest.mark.skipif(not cgroup.available(), reason="no writable cgroup v1 memory controller")
@pytest.mark.skipif(bool(toolchain_missing("rust")), reason=toolchain_missing("rust") or "rustc")
def test_a_compile_that_reads_without_end_is_killed_at_the_compile_bound():
    """rustc reading `include_bytes!("/dev/zero")` held 3.6 GB under the toolchain's address-space
    bound (about 1.15 TB for the run) before it failed: the toolchain step's group is limited to
    `compile_memory_mb`, and the run says that bound stopped it."""
    assert DEFAULTS.compile_memory_mb < DEFAULTS.memory_mb + DEFAULTS.toolchain_memory_mb
    assert memory_bound_mb(DEFAULTS, toolchain=True) == DEFAULTS.compile_memory_mb
    task = {"programming_language": "rust", "entry_point": "", "context": "", "tests": DEVZERO}
    result = run_tests(task, "", DEFAULTS)
    assert result.status == "memory" and "compile_memory_mb" in result.reason, result


@pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
@pytest.mark.skipif(not cgroup.available(), reason="no writable cgroup v1 memory controller")
@pytest.mark.parametrize("language", LANGUAGES)
def test_honest_programs_of_every_language_pass_under_the_default_bounds(language):
    """The reference solution of a polyglot task, split run and all (a JVM, V8, javac, go build,
    rustc, g++), fits the default program and compile bounds (bench/bench_run_memory.py measures
    their peaks)."""
    if toolchain_missing(language):
        pytest.skip(toolchain_missing(language))
    task = next(t for t in load_tasks("polyglot").to_pylist() if t["programming_language"] == language)
    result = run_tests(task, task["code"], DEFAULTS)
    assert result.status == "passed", result
