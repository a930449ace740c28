"""Writes that are either complete or absent: temp file in the same folder, fsync, rename."""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

TEMP_PREFIX = ".tmp-"


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
    temp = _temp_path(final)
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
    temp = _temp_path(final)
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
