"""Unprivileged uids of sandboxed runs: one per run, claimed with a file lock, emptied after it.

As root the sandbox drops each run to a uid of its own from a reserved range, because root
ignores RLIMIT_NPROC and RLIMIT_NPROC counts every process of a uid: with one uid per run the
process limit bounds that run exactly, and every process found under the uid afterwards is a
leftover of that run, killed without looking further.
"""
from __future__ import annotations

import fcntl
import os
import signal
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

_next_slot = [0]


@contextmanager
def claimed_uid(first_uid: int, slots: int) -> Iterator[int | None]:
    """A uid no other run on this machine holds and no process runs under (None when not root)."""
    if os.geteuid() != 0:
        yield None
        return
    folder = Path(tempfile.gettempdir()) / "babelscore-sandbox-uids"
    folder.mkdir(mode=0o700, exist_ok=True)
    delay = 0.01
    while True:
        # Start where the last claim stopped: the uid just released may still have a zombie.
        first = _next_slot[0]
        for offset in range(slots):
            slot = (first + offset) % slots
            uid = first_uid + slot
            fd = os.open(folder / f"{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            if _kill_uid(uid):  # processes of an earlier run (zombies too) count against its limit
                os.close(fd)
                continue
            _next_slot[0] = slot + 1
            try:
                yield uid
            finally:
                end_uid(uid)  # the next run of this uid starts with no process of this one
                os.close(fd)  # releases the lock
            return
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def _uid_processes(uid: int) -> list[tuple[int, str]]:
    """(pid, state letter) of the processes (zombies included) whose real uid is `uid`."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", encoding="ascii", errors="replace") as handle:
                state = ""
                for line in handle:
                    if line.startswith("State:"):
                        state = line.split()[1]
                    elif line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            found.append((int(entry.name), state))
                        break
        except (OSError, ValueError, IndexError):
            continue
    return found


def uid_processes(uid: int) -> list[int]:
    """Pids of the processes (zombies included) whose real uid is `uid`."""
    return [pid for pid, _state in _uid_processes(uid)]


def _kill_uid(uid: int) -> int:
    """SIGKILL every live process of `uid`; the number of its processes found (zombies included)."""
    found = _uid_processes(uid)
    for pid, state in found:
        if state != "Z":
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    return len(found)


def end_uid(uid: int, seconds: float = 5.0) -> None:
    """Kill what is left of a run's uid and wait until nothing of it runs (zombies excepted).

    The uid range belongs to the sandbox, so whatever runs under it is a leftover of this run.
    A zombie holds no file and runs no code; the init that adopts it reaps it, and until then
    `claimed_uid` gives the next run another uid, because RLIMIT_NPROC still counts it.
    """
    deadline = time.monotonic() + seconds
    while True:
        _kill_uid(uid)
        if all(state == "Z" for _pid, state in _uid_processes(uid)) or time.monotonic() > deadline:
            return
        time.sleep(0.005)
