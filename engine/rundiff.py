"""`babelscore diff RUN_A RUN_B`: are two run directories the same numbers?

Every row output of a run directory is compared (every stage's committed parts, the samples the
build wrote, the single-file tables), rows matched by their table's row key (engine.records;
else all text, integer and boolean columns), never by position, so runs that cut their parts
or ordered their rows differently still compare row by row. Timing columns and `manifest.json`
are ignored (they measure the machine); row signatures are compared. `tolerance` applies to
floats only (absolute); NaN equals NaN, and at tolerance 0, -0.0 differs from 0.0.
What is compared and ignored: docs/running.md, "Compare two runs".
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from engine import records
from engine.errors import RunDirectoryError
from engine.io.atomic import TEMP_PREFIX
from engine.io.rundir import RunDirectory

# Row keys per schema (matched by column names): the same key a stage uses to find its rows.
_KNOWN_KEYS: tuple[tuple[pa.Schema, tuple[str, ...]], ...] = (
    (records.SCORE_SCHEMA, records.SCORE_KEY),
    (records.SAMPLE_SCHEMA, ("sample_id",)),
    (records.GENERATION_SCHEMA, ("sample_id", "generator")),
    (records.NOISE_SCHEMA, ("sample_id", "noise")),
    (records.PERTURB_SCHEMA, ("sample_id", "noise")),
    (records.REJECTED_SCHEMA, ("row_index",)),
    (records.JUDGMENT_SCHEMA, (*records.JUDGMENT_KEY, "generator")),
    (records.ROUNDTRIP_SCHEMA, records.ROUNDTRIP_KEY),
    (records.CALIBRATION_SCHEMA, ("metric", "scorer", "variant", "context", "language", "generator", "task", "group_by")),
    (records.SENSITIVITY_SCHEMA, ("metric", "scorer", "variant", "context", "language", "target", "family")),
    (records.SIGNIFICANCE_SCHEMA, ("kind", "language", "metric", "scorer", "variant", "context",
                                   "metric_y", "scorer_y", "variant_y", "context_y")),
)
_TIMING = re.compile(r"(^|_)(latency|elapsed|wall|duration)(_|$)|_s$|_seconds$")
_PART_FILE = re.compile(r"^(?P<task>.+)__part-\d+\.parquet$")
_SAMPLE_PART = re.compile(r"^part-\d+\.parquet$")


def is_timing_column(name: str) -> bool:
    return bool(_TIMING.search(name))


def key_columns(schema: pa.Schema) -> tuple[str, ...]:
    names = set(schema.names)
    for known, key in _KNOWN_KEYS:
        if set(known.names) == names:
            return key
    return tuple(
        f.name for f in schema
        if not is_timing_column(f.name)
        and (pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
             or pa.types.is_integer(f.type) or pa.types.is_boolean(f.type))
    )


@dataclass(frozen=True)
class RowDifference:
    table: str
    task: str
    key: tuple[Any, ...]
    column: str
    a: Any
    b: Any
    delta: float | None  # absolute difference of a float value; None for other columns


@dataclass
class RunDiff:
    """What differs between two run directories (see the module docstring)."""

    run_a: Path
    run_b: Path
    tolerance: float
    rows_compared: dict[str, int] = field(default_factory=dict)  # table -> rows in both runs
    only_a: list[tuple[str, str, tuple[Any, ...]]] = field(default_factory=list)  # (table, task, key)
    only_b: list[tuple[str, str, tuple[Any, ...]]] = field(default_factory=list)
    differences: list[RowDifference] = field(default_factory=list)
    max_delta: dict[tuple[str, str], float] = field(default_factory=dict)  # (table, task) -> largest |a - b|
    tables_only_a: list[str] = field(default_factory=list)
    tables_only_b: list[str] = field(default_factory=list)
    unfinished: list[tuple[Path, str]] = field(default_factory=list)  # (run, its status) of runs not complete

    @property
    def differing_rows(self) -> int:
        return len({(d.table, d.task, d.key) for d in self.differences})

    @property
    def equal(self) -> bool:
        return not (self.only_a or self.only_b or self.differences or self.tables_only_a or self.tables_only_b)

    def render(self, limit: int = 20) -> str:
        lines = [f"babelscore diff {self.run_a} {self.run_b} (tolerance {self.tolerance:g})"]
        total = sum(self.rows_compared.values())
        for name in sorted(self.rows_compared):
            lines.append(f"  {name}: {self.rows_compared[name]} row(s) in both")
        for name in self.tables_only_a:
            lines.append(f"  table {name} only in {self.run_a}")
        for name in self.tables_only_b:
            lines.append(f"  table {name} only in {self.run_b}")
        for run, status in self.unfinished:
            lines.append(f"  {run} is not a complete run ({status}): only its committed parts are compared")
        if self.equal:
            lines.append(f"equal: {total} row(s) match" + (" bit for bit" if self.tolerance == 0 else ""))
            return "\n".join(lines)
        lines.append(
            f"DIFFERENT: {self.differing_rows} row(s) differ, {len(self.only_a)} only in A, {len(self.only_b)} only in B"
        )
        if self.max_delta:
            lines.append("largest difference per task:")
            for (table, task), delta in sorted(self.max_delta.items()):
                lines.append(f"  {table}/{task}: {delta:.3g}")
        for label, rows in (("only in A", self.only_a), ("only in B", self.only_b)):
            for table, task, key in rows[:limit]:
                lines.append(f"  {label}: {table}/{task} {key}")
            if len(rows) > limit:
                lines.append(f"  ... and {len(rows) - limit} more {label}")
        for d in self.differences[:limit]:
            delta = f" (|d| {d.delta:.3g})" if d.delta is not None else ""
            lines.append(f"  {d.table}/{d.task} {d.key} {d.column}: {d.a!r} != {d.b!r}{delta}")
        if len(self.differences) > limit:
            lines.append(f"  ... and {len(self.differences) - limit} more differing value(s)")
        return "\n".join(lines)


def _status(manifest: Any) -> str | None:
    """A run's status in words when it is not complete (None when it is)."""
    status = manifest.status
    if status == "complete":
        return None
    if status == "running":  # diff holds no lock: the driver may still run, or have stopped
        return "status running: its driver still runs, or stopped without finishing it"
    return manifest.status_text()


def _row_files(root: Path) -> tuple[dict[str, list[tuple[str, Path]]], str | None]:
    """table name -> [(task, file)]: committed part files (from the completion markers) and
    every other Parquet table of the run directory (a part file without a marker is not output);
    and the run's status when it is not complete."""
    run = RunDirectory.open_existing(root)
    committed = {(root / file).resolve() for file in run.manifest.committed_files()}
    tables: dict[str, list[tuple[str, Path]]] = defaultdict(list)
    for path in sorted(root.rglob("*.parquet")):
        if path.name.startswith(TEMP_PREFIX):
            continue
        relative = path.relative_to(root)
        part = _PART_FILE.match(path.name)
        if part:
            if path.resolve() not in committed:
                continue
            tables[relative.parent.as_posix()].append((part.group("task"), path))
        elif _SAMPLE_PART.match(path.name):
            tables[relative.parent.as_posix()].append((relative.parent.as_posix(), path))
        else:
            name = relative.with_suffix("").as_posix()
            tables[name].append((name, path))
    return tables, _status(run.manifest)


def _is_float(t: pa.DataType) -> bool:
    return pa.types.is_floating(t)


def _same(a: Any, b: Any, tolerance: float) -> tuple[bool, float | None]:
    """(equal, |a - b| for floats)."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return (math.isnan(a) and math.isnan(b)), None if (math.isnan(a) and math.isnan(b)) else math.inf
        if a == b:
            # 0.0 == -0.0, but they are two bit patterns: "bit for bit" (tolerance 0) tells them apart
            return (tolerance > 0 or math.copysign(1.0, a) == math.copysign(1.0, b)), 0.0
        delta = abs(a - b)
        return delta <= tolerance, delta
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        worst: float | None = None
        ok = True
        for x, y in zip(a, b):
            same, delta = _same(x, y, tolerance)
            ok = ok and same
            if delta is not None:
                worst = delta if worst is None else max(worst, delta)
        return ok, worst
    return a == b, None


def _keyed_rows(files: Iterable[tuple[str, Path]]) -> tuple[dict[tuple, tuple[str, dict]], list[str]]:
    rows: dict[tuple, tuple[str, dict]] = {}
    columns: list[str] = []
    # Counted over all files of the table, not per file: the same row committed in two parts of
    # a task (what a broken resume would do) is a duplicate, not one row seen twice.
    seen: dict[tuple, int] = defaultdict(int)
    for task, path in files:
        table = pq.read_table(path)
        key_cols = key_columns(table.schema)
        columns = [c for c in table.column_names if c not in key_cols and not is_timing_column(c)]
        for row in table.to_pylist():
            base = (task, *(row.get(c) for c in key_cols))
            # A repeated key (a duplicate row) keeps its occurrence number: a duplicate is a difference.
            occurrence = seen[base]
            seen[base] += 1
            key = base if occurrence == 0 else (*base, f"#{occurrence}")
            rows[key] = (task, {c: row[c] for c in columns})
    return rows, columns


def compare_runs(run_a: Path, run_b: Path, tolerance: float = 0.0) -> RunDiff:
    """Compare every row output of two run directories (see the module docstring)."""
    run_a, run_b = Path(run_a), Path(run_b)
    if tolerance < 0 or math.isnan(tolerance):
        raise RunDirectoryError(f"diff: --tolerance must be a number >= 0, not {tolerance}")
    result = RunDiff(run_a, run_b, tolerance)
    (files_a, status_a), (files_b, status_b) = _row_files(run_a), _row_files(run_b)
    result.unfinished = [(run, status) for run, status in ((run_a, status_a), (run_b, status_b)) if status]
    result.tables_only_a = sorted(set(files_a) - set(files_b))
    result.tables_only_b = sorted(set(files_b) - set(files_a))
    for name in sorted(set(files_a) & set(files_b)):
        rows_a, columns = _keyed_rows(files_a[name])
        rows_b, _ = _keyed_rows(files_b[name])
        result.only_a += [(name, key[0], key[1:]) for key in sorted(rows_a.keys() - rows_b.keys(), key=repr)]
        result.only_b += [(name, key[0], key[1:]) for key in sorted(rows_b.keys() - rows_a.keys(), key=repr)]
        both = sorted(rows_a.keys() & rows_b.keys(), key=repr)
        result.rows_compared[name] = len(both)
        for key in both:
            task, a = rows_a[key]
            b = rows_b[key][1]
            for column in sorted(a.keys() | b.keys()):
                same, delta = _same(a.get(column), b.get(column), tolerance)
                if delta is not None and delta > 0:
                    slot = (name, task)
                    result.max_delta[slot] = max(result.max_delta.get(slot, 0.0), delta)
                if not same:
                    result.differences.append(RowDifference(name, task, key[1:], column, a.get(column), b.get(column), delta))
    return result
