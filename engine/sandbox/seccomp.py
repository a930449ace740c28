"""The seccomp filter every bubblewrap run starts under (bwrap's `--seccomp FD`).

Built with libseccomp (through `pyseccomp`, API-compatible with libseccomp's own module) and
handed to bwrap as compiled BPF, installed just before bwrap executes the program: the
toolchains and the program run under it, bwrap's own set-up does not. Refused with EPERM
(REFUSED below; docs/sandbox.md gives each class's reason): memory no limit would count
(memfds, System V IPC, sockets and their buffer sizes; `socketpair` stays allowed in a JVM's
run), new mounts and namespaces, and reading or steering other processes and the kernel.
`clone3` answers ENOSYS: its flags live in memory a filter cannot read, and glibc, Go and the
JVM fall back to `clone`, whose namespace flags the filter checks.
"""
from __future__ import annotations

import errno
import os
import re
from functools import lru_cache
from typing import Sequence

REFUSED = (
    "memfd_create", "memfd_secret", "shmget", "shmat", "shmctl", "shmdt",
    "semget", "semop", "semtimedop", "semctl", "msgget", "msgsnd", "msgrcv", "msgctl",
    "socket",
    "mount", "umount2", "fsopen", "fsmount", "fsconfig", "fspick", "move_mount", "open_tree", "mount_setattr", "pivot_root",
    "unshare", "setns",
    "ptrace", "process_vm_readv", "process_vm_writev", "userfaultfd", "keyctl", "add_key", "request_key", "bpf",
    "perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
)
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME
CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080
INSTALL_HINT = "install libseccomp (Debian: `apt-get install libseccomp2`) and `pip install pyseccomp` (or `make setup`)"


SOL_SOCKET = 1
# SO_SNDBUF, SO_RCVBUF, SO_SNDBUFFORCE, SO_RCVBUFFORCE: a socket's buffers stay at the defaults.
BUFFER_OPTIONS = (7, 8, 32, 33)


@lru_cache(maxsize=2)
def program(socketpair: bool = False) -> bytes:
    """The compiled BPF program (built once per engine process and variant); `socketpair`: allowed
    (a JVM's run: its file channels open one at start), refused otherwise."""
    from engine.errors import ConfigError

    try:
        import pyseccomp as seccomp
    except (ImportError, OSError) as exc:
        raise ConfigError(f"the sandbox's seccomp filter needs libseccomp: {exc}; {INSTALL_HINT}") from exc
    refuse = seccomp.ERRNO(errno.EPERM)
    flt = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in REFUSED:
        try:
            flt.add_rule(refuse, name)
        except (RuntimeError, ValueError, OSError):
            # A call this kernel's libseccomp does not know (memfd_secret on an old one) cannot be made either.
            continue
    if not socketpair:
        flt.add_rule(refuse, "socketpair")
    for option in BUFFER_OPTIONS:
        flt.add_rule(refuse, "setsockopt", seccomp.Arg(1, seccomp.EQ, SOL_SOCKET), seccomp.Arg(2, seccomp.EQ, option))
    flt.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    # One rule per flag: libseccomp's MASKED_EQ tests `arg & mask == value`.
    for bit in range(32):
        flag = 1 << bit
        if CLONE_NAMESPACES & flag:
            flt.add_rule(refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    # A few hundred bytes: they fit a pipe's buffer, so writing before reading cannot block.
    read_fd, write_fd = os.pipe()
    with os.fdopen(write_fd, "wb") as handle:
        flt.export_bpf(handle)
    with os.fdopen(read_fd, "rb") as handle:
        return handle.read()


def program_for(argv: Sequence[str]) -> bytes:
    """The filter of a run of `argv` (the engine's command): `socketpair` allowed only where it
    starts javac or java, whose JVM opens one at start (its file channels need it)."""
    return program(socketpair=any(re.search(r"(^|[\s/;])javac?\s", arg) for arg in argv))


def unavailable() -> str:
    """'' when the filter can be built here; otherwise why not and the fix."""
    try:
        program()
    except Exception as exc:  # noqa: BLE001 - reported as the reason the sandbox cannot run
        return str(exc)
    return ""
