"""Streaming readers of the input sample table (Parquet or JSONL), row by row as raw dicts.

Rows come back as read, with no type coercion: validation decides what is wrong with a row,
so that a bad row can be quarantined with its reason instead of failing the whole read.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator, NamedTuple

import pyarrow.parquet as pq

from engine.errors import InputError

PARQUET_SUFFIXES = {".parquet", ".pq"}
JSONL_SUFFIXES = {".jsonl", ".ndjson", ".json"}


class RawRow(NamedTuple):
    index: int  # 0-based position in the input
    values: dict[str, Any] | None  # None when the row could not be decoded at all
    problem: str | None  # why it could not be decoded
    raw_text: str | None  # the undecodable text, for the rejected table


def input_format(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in PARQUET_SUFFIXES:
        return "parquet"
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    raise InputError(
        f"input {str(path)!r}: unknown format {suffix!r}; give a Parquet (.parquet) or JSON Lines (.jsonl) file"
    )


def iter_raw_rows(path: str | Path, batch_size: int = 4096) -> Iterator[RawRow]:
    path = Path(path)
    if not path.is_file():
        raise InputError(f"input {str(path)!r} does not exist or is not a file")
    if input_format(path) == "parquet":
        yield from _iter_parquet(path, batch_size)
    else:
        yield from _iter_jsonl(path)


def _iter_parquet(path: Path, batch_size: int) -> Iterator[RawRow]:
    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:
        raise InputError(f"input {str(path)!r} is not a readable Parquet file: {exc}") from exc
    index = 0
    for batch in parquet.iter_batches(batch_size=batch_size):
        for values in batch.to_pylist():
            yield RawRow(index, values, None, None)
            index += 1


def _iter_jsonl(path: Path) -> Iterator[RawRow]:
    index = 0
    with open(path, "rb") as handle:
        for line_bytes in handle:
            if not line_bytes.strip():
                continue  # blank lines are layout, not rows
            try:
                line = line_bytes.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield RawRow(index, None, f"invalid UTF-8 at byte {exc.start} of the line", line_bytes.decode("utf-8", "replace"))
                index += 1
                continue
            try:
                values = json.loads(line)
            except json.JSONDecodeError as exc:
                yield RawRow(index, None, f"invalid JSON: {exc.msg} at column {exc.colno}", line.rstrip("\n"))
                index += 1
                continue
            if not isinstance(values, dict):
                yield RawRow(index, None, f"a row must be a JSON object, got {type(values).__name__}", line.rstrip("\n"))
            else:
                yield RawRow(index, values, None, None)
            index += 1


def sample_generators(origin: Any) -> list[str | None]:
    """The generator names a part stage will see in its samples (None: rows without a generator).
    origin: the stage's engine.stages.base.SampleOrigin; the input file is read only when no
    stage generates the samples, and then only its `generator` column."""
    if origin.generated is not None:
        return list(origin.generated)
    if origin.input is None:  # a source stage makes the rows, without generator names
        return [None]
    return sorted(set(_input_generators(origin.input)), key=lambda g: (g is None, g or ""))


def _input_generators(path: str) -> Iterator[str | None]:
    """The `generator` column of the input, streamed (only that column is decoded for Parquet)."""
    if input_format(path) == "parquet":
        parquet = pq.ParquetFile(path)
        if "generator" not in parquet.schema_arrow.names:
            yield None
            return
        for batch in parquet.iter_batches(columns=["generator"]):
            yield from batch.column(0).to_pylist()
        return
    for row in iter_raw_rows(path):
        value = (row.values or {}).get("generator")
        yield value if isinstance(value, str) else None
