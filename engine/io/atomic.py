"""Writes that are either complete or absent: temp file in the same folder, fsync, rename.

A write that fails (a full disk above all) removes its temp file and leaves the final path as
it was; a full disk or quota is raised as DiskFullError naming the file, its filesystem and the
space left there, with what to do (free space, then `--resume`).
"""
from __future__ import annotations

import errno
import json
import os
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from engine.errors import DiskFullError

TEMP_PREFIX = ".tmp-"
_FULL = (errno.ENOSPC, errno.EDQUOT)


def _mount_point(path: Path) -> Path:
    path = path.resolve()
    while not path.exists():
        path = path.parent
    while not os.path.ismount(path):
        path = path.parent
    return path


def is_disk_full(exc: BaseException) -> bool:
    # pyarrow's writers raise OSError without an errno, with the C library's message
    return isinstance(exc, OSError) and (exc.errno in _FULL or "No space left on device" in str(exc)
                                         or "Disk quota exceeded" in str(exc))


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def disk_full_error(final: Path, exc: BaseException) -> DiskFullError:
    mount = _mount_point(final.parent)
    try:
        stats = os.statvfs(mount)
        free = f"{_mib(stats.f_bavail * stats.f_frsize)} free of {_mib(stats.f_blocks * stats.f_frsize)}"
    except OSError:
        free = "free space unknown"
    return DiskFullError(f"the disk is full: writing {final} failed ({exc}); the filesystem at {mount} has {free}. "
                         "Nothing half-written was kept and committed parts are safe: free space there (or move the "
                         "run directory to a larger disk), then rerun with --resume")


@contextmanager
def _temp_for(final: Path):
    """A temp path next to `final`, removed if the write fails; a full disk becomes DiskFullError."""
    temp = _temp_path(final)
    try:
        yield temp
    except BaseException as exc:
        temp.unlink(missing_ok=True)
        if is_disk_full(exc):
            raise disk_full_error(final, exc) from exc
        raise


def _temp_path(final: Path) -> Path:
    return final.with_name(f"{TEMP_PREFIX}{uuid.uuid4().hex[:12]}-{final.name}")


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_bytes_atomic(final: str | Path, data: bytes) -> None:
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    with _temp_for(final) as temp:
        with open(temp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, final)
    _fsync_dir(final.parent)


def write_json_atomic(final: str | Path, payload: Any) -> None:
    write_bytes_atomic(final, (json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8"))


def write_parquet_atomic(final: str | Path, table: pa.Table, schema: pa.Schema | None = None) -> None:
    """Write `table` (cast to `schema` when given) so that `final` never holds a partial file."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    if schema is not None and not table.schema.equals(schema):
        table = table.select(schema.names).cast(schema)
    with _temp_for(final) as temp:
        pq.write_table(table, temp, compression="zstd")
        with open(temp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(temp, final)
    _fsync_dir(final.parent)


def remove_stale_temps(root: str | Path) -> int:
    """Delete temp files a crashed writer left behind; returns how many."""
    removed = 0
    for path in Path(root).rglob(f"{TEMP_PREFIX}*"):
        if path.is_file():
            path.unlink(missing_ok=True)
            removed += 1
    return removed
