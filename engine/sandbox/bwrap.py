"""The one place that builds bubblewrap's argument list for a sandboxed run.

Every run gets the same isolation flags (`--unshare-all --unshare-user --disable-userns
--die-with-parent --new-session`), the seccomp filter of engine.sandbox.seccomp, a fresh /proc,
a read-only /dev without pseudo-terminals and a read-only /proc/sys, size-capped tmpfs mounts
for /tmp, /dev/shm and the work directory (the root read-only), and read-only binds of what the
toolchains need: /usr's bin, sbin, lib*, libexec, include and share with what no package
installed covered (engine.sandbox.usr_view), /etc/alternatives, the JDK's /etc entries and the
dynamic linker's cache. The task's files are copied in from file descriptors (`--file FD PATH`),
so a run leaves nothing on the host's disk. docs/sandbox.md ("Bounds of one run") says why each.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from functools import lru_cache
from typing import Sequence

from engine.sandbox import usr_view

WORKDIR = "/work"
# bwrap's own processes under the sandbox uid: the outer one and pid 1 of the new namespace.
OWN_PROCESSES = 2
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`, or `make setup`), "
                "or set `roundtrip.sandbox.isolation: hook` to run without isolation (not a security boundary)")


# What the distribution's toolchains use under /usr: programs, libraries (the JDK and gcc's
# internals live under lib/), headers for g++, and shared data. Not /usr/local, /usr/etc (npm's
# and other hand-made configuration), /usr/src or /usr/games: nothing a toolchain here reads.
USR_ENTRIES = ("bin", "sbin", "lib", "lib32", "lib64", "libx32", "libexec", "include", "share")


def usr_entries() -> list[str]:
    """The toolchains' entries of /usr (USR_ENTRIES) that exist here."""
    return [f"/usr/{name}" for name in USR_ENTRIES if os.path.lexists(f"/usr/{name}")]


def host_binds() -> list[str]:
    """Host paths bound read-only: the toolchains and what they read at start, nothing more."""
    paths = [*usr_entries(), "/etc/alternatives", "/etc/ld.so.cache"]
    paths += sorted(glob.glob("/etc/java-*-openjdk"))  # the JDK's conf/ symlinks point here
    base = os.path.realpath(sys.base_prefix)
    if not os.path.exists("/usr/bin/python3") and not base.startswith("/usr/"):
        paths.append(base)  # an interpreter outside /usr (pyenv, conda) when /usr has no python3
    return [p for p in paths if os.path.exists(p)]


def command(argv: Sequence[str], files: Sequence[tuple[int, str]], tmpfs_bytes: int, binds: Sequence[str] = (),
            seccomp_fd: int | None = None) -> list[str]:
    """bwrap's argv for `argv`; `files` are (readable fd, path under the work directory);
    `seccomp_fd` a readable fd holding the compiled filter (engine.sandbox.seccomp)."""
    out = ["bwrap", "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session"]
    if seccomp_fd is not None:
        out += ["--seccomp", str(seccomp_fd)]
    for path in [*host_binds(), *binds]:
        if os.path.islink(path) and path.startswith("/usr/"):
            out += ["--symlink", os.readlink(path), path]
        else:
            out += ["--ro-bind", path, path]
    out += _hide_unpackaged()
    for link, target in (("/lib", "usr/lib"), ("/lib64", "usr/lib64"), ("/bin", "usr/bin"), ("/sbin", "usr/sbin")):
        if not os.path.lexists(link) or os.path.islink(link):
            out += ["--symlink", target, link]
        else:
            out += ["--ro-bind", link, link]
    # No pseudo-terminals: bwrap's /dev mounts a devpts whose ptys count against the host-wide
    # kernel.pty.max (forked children opening /dev/ptmx took the host to its limit). An empty
    # read-only tmpfs over /dev/pts leaves /dev/ptmx (a link to pts/ptmx) pointing at nothing.
    out += ["--proc", "/proc", "--dev", "/dev", "--size", "4096", "--tmpfs", "/dev/pts"]
    for mount in ("/tmp", "/dev/shm", WORKDIR):
        out += ["--size", str(tmpfs_bytes), "--tmpfs", mount]
    for fd, name in files:
        parent = os.path.dirname(name)
        if parent:
            out += ["--dir", f"{WORKDIR}/{parent}"]
        out += ["--file", str(fd), f"{WORKDIR}/{name}"]
    # bwrap's own root and its /dev are unbounded tmpfs mounts: read-only, so only the capped
    # mounts take writes. /proc/sys read-only: the run's IPC and network namespaces would let it
    # raise their sysctls (message queue sizes, socket buffers); bwrap 0.8 leaves it writable.
    out += ["--ro-bind", "/proc/sys", "/proc/sys", "--remount-ro", "/dev/pts", "--remount-ro", "/dev", "--remount-ro", "/"]
    out += ["--chdir", WORKDIR, "--setenv", "HOME", WORKDIR, "--setenv", "TMPDIR", "/tmp", "--"]
    return out + list(argv)


def prepare() -> None:
    """Compute what every run's command needs of the host (the covers of /usr) ahead of a run's
    uid claim, so that the dpkg query is never a started run's time (relay and caller time it)."""
    _hide_unpackaged()


def _hide_unpackaged() -> list[str]:
    """Cover what no installed package put under the bound /usr entries (engine.sandbox.usr_view):
    a directory by an empty tmpfs made read-only, a file by /dev/null."""
    directories, files = usr_view.hidden([p for p in usr_entries() if not os.path.islink(p)])
    out: list[str] = []
    for path in directories:
        out += ["--size", "4096", "--tmpfs", path, "--remount-ro", path]
    for path in files:
        out += ["--ro-bind", "/dev/null", path]
    return out


_WORKS: set = set()  # pools whose probe succeeded; a failure is never kept (the next call probes again)


def known_to_work(pool: object) -> bool:
    return pool in _WORKS


def forget() -> None:
    """Probe again at the next call (after the machine changed)."""
    _WORKS.clear()


def unavailable(uid: int | None, pool: object = None) -> str:
    """'' when bubblewrap runs here (as `uid` when given, a uid the caller holds the lock of);
    otherwise why not. A success is kept for `pool`; a failure is probed again next time (one
    ended by a passing cause, a loaded machine, must not fail every later run)."""
    if pool in _WORKS:
        return ""
    why = probe_as(uid)
    if not why:
        _WORKS.add(pool)
    return why


def probe_as(uid: int | None) -> str:
    if sys.platform != "linux":
        return f"bubblewrap needs Linux (this is {sys.platform})"
    if shutil.which("bwrap") is None:
        return "bubblewrap (`bwrap`) is not on PATH"
    kwargs = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
    try:
        done = subprocess.run(command(["/bin/true"], [], 1 << 20), capture_output=True, timeout=30, cwd="/", **kwargs)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap failed to start: {exc}"
    if done.returncode != 0:
        return f"bubblewrap cannot create its namespaces here: {done.stderr.decode(errors='replace').strip()[:300]}"
    return ""


@lru_cache(maxsize=None)
def version() -> str:
    try:
        done = subprocess.run(["bwrap", "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "none"
    return done.stdout.strip().split()[-1] if done.stdout.strip() else "unknown"
