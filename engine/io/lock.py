"""One writer per run directory: an advisory lock held by the driver for the whole run.

`RUN/.lock` is locked with `fcntl.flock` and holds the holder's pid, host and start time. A
second process is refused with the holder named. The kernel drops a flock when its process
dies (kill -9 included), so a lock left by a killed driver is simply taken over by the next
`--resume`; the stale pid in the file is only reported.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import time
from pathlib import Path

from engine.errors import RunDirectoryError

logger = logging.getLogger(__name__)

LOCK_FILE = ".lock"


class RunLock:
    def __init__(self, root: str | Path):
        self.path = Path(root) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read_holder(fd)
            os.close(fd)
            if not holder:  # no writer recorded: held shared by runs that reuse its rows (ReaderLock)
                raise RunDirectoryError(
                    f"{self.path.parent} is being read by another babelscore run that reuses its rows (--reuse); "
                    "wait for that run to finish, then rerun"
                ) from None
            raise RunDirectoryError(
                f"{self.path.parent} is being written by another babelscore process "
                f"(pid {holder.get('pid', '?')} on host {holder.get('host', '?')}, since {holder.get('since', '?')}); "
                "wait for it to finish or stop it, then rerun with --resume"
            ) from None
        previous = _read_holder(fd)
        if previous:
            logger.info("taking over the lock of %s left by pid %s on %s (that process is gone)",
                        self.path.parent, previous.get("pid"), previous.get("host"))
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode("utf-8"), 0)
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            os.close(self._fd)
            self._fd = None


def _read_holder(fd: int) -> dict[str, object]:
    try:
        data = os.pread(fd, 4096, 0)
        return json.loads(data.decode("utf-8")) if data.strip() else {}
    except (OSError, ValueError):
        return {}


class ReaderLock:
    """A shared lock on an earlier run's `RUN/.lock`, held while another run reads from it.

    Taken without waiting: a run whose writer's lock is held is still being written and is
    refused (its parts may still change). While held, that run cannot be resumed, so what a
    reader found finished stays finished until it is done.
    """

    def __init__(self, root: str | Path, purpose: str):
        self.path = Path(root) / LOCK_FILE
        self.purpose = purpose
        self._fd: int | None = None

    def acquire(self) -> None:
        if not self.path.parent.is_dir():
            raise RunDirectoryError(f"{self.purpose}: {self.path.parent} is not a directory; give an earlier run's --out")
        # O_RDONLY: a reader may only have read access to an earlier run on a shared filesystem.
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return  # a run directory copied without its lock file: nobody can be writing it through a lock
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            holder = _read_holder(fd)
            os.close(fd)
            raise RunDirectoryError(
                f"{self.purpose}: {self.path.parent} is still being written (pid {holder.get('pid', '?')} on host "
                f"{holder.get('host', '?')}, since {holder.get('since', '?')}); wait until that run ends, then rerun"
            ) from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            os.close(self._fd)
            self._fd = None
