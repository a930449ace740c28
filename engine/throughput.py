"""Per-stage throughput: what each part cost (wall, CPU, GPU-held time) and what it processed
(rows, tokens, judge calls, round-trip runs), summed per stage and per task (model) in the
manifest's `throughput` section and printed on the console.

A part is metered where it runs (`part_meter`, in `execute_part`) and its counters travel back
to the driver in the part table's schema metadata; counters are added by the code that knows
them (`count(...)`) or read from the part's output columns; driver-side steps are timed in the
driver (`Recorder.timed`). `gpu_s` is the time a GPU was held, not the time its cores were busy.
The manifest's fields and how to read them: docs/throughput.md.
"""
from __future__ import annotations

import contextvars
import json
import os
import resource
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from engine.io.manifest import Manifest

METADATA_KEY = b"babelscore.throughput"
# Output columns whose sums are counters of the part (generation and judge tables carry them).
SUMMED_COLUMNS = {
    "generated_tokens": "generated_tokens",
    "prompt_tokens": "prompt_tokens",
    "completion_tokens": "completion_tokens",
    "calls": "calls",
}


TIMES = ("wall_s", "cpu_s", "gpu_s")

_current: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar("babelscore_part_counters", default=None)


def count(name: str, amount: float) -> None:
    """Add `amount` to counter `name` of the part being computed (no-op outside a part)."""
    counters = _current.get()
    if counters is not None:
        counters[name] = counters.get(name, 0) + amount


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # reaped children only
    total = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    workers = sys.modules.get("engine.runtime.model_process")  # never imported for this
    if workers is not None:
        total += workers.live_workers_cpu_seconds()  # model workers still running (a vLLM engine)
    return total


def _gpu_in_use() -> bool:
    torch = sys.modules.get("torch")  # never import torch for this: a lexical part has none
    if torch is None:
        return False
    try:
        return bool(torch.cuda.is_initialized())
    except Exception:
        return False


@dataclass
class PartMeter:
    counters: dict[str, float] = field(default_factory=dict)
    stats: dict[str, float] = field(default_factory=dict)


@contextmanager
def part_meter() -> Iterator[PartMeter]:
    meter = PartMeter()
    token = _current.set(meter.counters)
    wall, cpu = time.perf_counter(), _cpu_seconds()
    try:
        yield meter
    finally:
        _current.reset(token)
        elapsed = time.perf_counter() - wall
        meter.stats = {"wall_s": elapsed, "cpu_s": _cpu_seconds() - cpu, "gpu_s": elapsed if _gpu_in_use() else 0.0}


def attach(table: pa.Table, meter: PartMeter) -> pa.Table:
    """The part's table carrying its stats (out rows, times, counters) in its schema metadata."""
    counters = dict(meter.counters)
    for column, name in SUMMED_COLUMNS.items():
        if column in table.column_names and name not in counters:
            counters[name] = float(pc.sum(table.column(column)).as_py() or 0)
    payload = {"out_rows": table.num_rows, **meter.stats, "counters": counters, "pid": os.getpid()}
    metadata = dict(table.schema.metadata or {})
    metadata[METADATA_KEY] = json.dumps(payload).encode("utf-8")
    return table.replace_schema_metadata(metadata)


def detach(table: pa.Table) -> tuple[pa.Table, dict[str, Any] | None]:
    """(the table without the stats, the stats or None when the part carried none)."""
    metadata = dict(table.schema.metadata or {})
    raw = metadata.pop(METADATA_KEY, None)
    if raw is None:
        return table, None
    return table.replace_schema_metadata(metadata or None), json.loads(raw)


def _empty() -> dict[str, Any]:
    return {"parts": 0, "in_rows": 0, "out_rows": 0, "wall_s": 0.0, "cpu_s": 0.0, "gpu_s": 0.0, "counters": {}}


def _add(total: dict[str, Any], stats: dict[str, Any], in_rows: int) -> None:
    total["parts"] += 1
    total["in_rows"] += in_rows
    total["out_rows"] += int(stats.get("out_rows", 0))
    for key in TIMES:
        total[key] = round(total[key] + float(stats.get(key, 0.0)), 6)
    for name, value in stats.get("counters", {}).items():
        total["counters"][name] = total["counters"].get(name, 0) + value


class Recorder:
    """Sums part stats into the manifest's `throughput` (kept across `--resume`: a resumed run adds
    the parts it computed to the totals of the earlier attempts)."""

    def __init__(self, manifest: Manifest):
        self.manifest = manifest
        manifest.record_throughput(manifest.throughput_section())  # the section exists once a run meters anything
        self._seen: set[str] = set()

    def add_part(self, stage: str, task: str, model_key: str, stats: dict[str, Any], in_rows: int,
                 rows_counter: str | None = None) -> None:
        """rows_counter: the counter the stage's output rows stand for (its `Rates.output_rows_counter`)."""
        counter = rows_counter
        if counter:  # the stage's output rows stand for that counter (round trip: sandboxed runs)
            stats.setdefault("counters", {}).setdefault(counter, stats.get("out_rows", 0))
        section = self.manifest.throughput_section()
        _add(section["stages"].setdefault(stage, _empty()), stats, in_rows)
        entry = section["tasks"].setdefault(task, {**_empty(), "stage": stage, "model": model_key})
        _add(entry, stats, in_rows)
        if task not in self._seen:
            # The first part of a task in this process pays its warm-up (model load, engine start,
            # compilation): kept apart so that warm rows/s = (total - cold) / (rows - cold rows).
            self._seen.add(task)
            entry["cold_parts"] = entry.get("cold_parts", 0) + 1
            entry["cold_rows"] = entry.get("cold_rows", 0) + in_rows
            entry["cold_wall_s"] = round(entry.get("cold_wall_s", 0.0) + float(stats.get("wall_s", 0.0)), 6)
            entry["cold_cpu_s"] = round(entry.get("cold_cpu_s", 0.0) + float(stats.get("cpu_s", 0.0)), 6)
        self.manifest.record_throughput(section)

    @contextmanager
    def timed(self, step: str) -> Iterator[None]:
        """Time a driver-side step (prepare, a stage's span, a pre-pass, calibrate, report)."""
        wall, cpu = time.perf_counter(), _cpu_seconds()
        try:
            yield
        finally:
            section = self.manifest.throughput_section()
            entry = section["steps"].setdefault(step, {"wall_s": 0.0, "cpu_s": 0.0, "runs": 0})
            entry["wall_s"] = round(entry["wall_s"] + time.perf_counter() - wall, 6)
            entry["cpu_s"] = round(entry["cpu_s"] + _cpu_seconds() - cpu, 6)
            entry["runs"] += 1
            self.manifest.record_throughput(section)


def rates(stage: str, entry: dict[str, Any], elapsed: float | None = None,
          own: tuple[tuple[str, str], ...] = ()) -> list[tuple[str, float]]:
    """(unit, value) pairs for a stage's totals: rows/s, then the stage's own rates (`own`:
    (counter, unit) pairs, the stage's `Rates.rates` as the run's layout lists them).

    `elapsed` is the stage's span in the driver (parts in parallel overlap); without it the
    sum of the parts' wall times is used.
    """
    seconds = elapsed if elapsed else entry.get("wall_s", 0.0)
    if seconds <= 0:
        return []
    out = [("rows/s", entry.get("in_rows", 0) / seconds)]
    for name, unit in own:
        value = entry.get("counters", {}).get(name)
        if value:
            out.append((unit, value / seconds))
    return out


def _format_rates(pairs: list[tuple[str, float]]) -> str:
    return ", ".join(f"{value:,.1f} {unit}" for unit, value in pairs)


def console_lines(section: dict[str, Any], own_rates: dict[str, tuple[tuple[str, str], ...]] | None = None) -> list[str]:
    """The throughput block printed after a run (stages, then tasks that load a model).

    own_rates: stage -> its own (counter, unit) rates (the run's layout's `rates`)."""
    own_rates = own_rates or {}
    if not section or not section.get("stages"):
        return []
    steps = section.get("steps", {})
    lines = ["throughput (wall = the stage's span in the driver; cpu and gpu = summed over its parts, wherever they ran):"]
    for stage, entry in section["stages"].items():
        span = steps.get(f"stage:{stage}", {}).get("wall_s")
        lines.append(
            f"  {stage:<10} {entry['in_rows']:>7,} rows ({entry['out_rows']:,} out) in {entry['parts']} part(s), "
            f"wall {span or entry['wall_s']:.1f} s, "
            f"cpu {entry['cpu_s']:.1f} s, gpu {entry['gpu_s']:.1f} s: {_format_rates(rates(stage, entry, span, own_rates.get(stage, ())))}"
        )
    models = [(task, e) for task, e in section.get("tasks", {}).items() if e.get("model")]
    if models:
        lines.append("  per model (wall summed over its parts):")
        for task, entry in models:
            lines.append(f"    {task:<40} wall {entry['wall_s']:.1f} s, cpu {entry['cpu_s']:.1f} s, gpu {entry['gpu_s']:.1f} s: "
                         f"{_format_rates(rates(entry['stage'], entry, own=own_rates.get(entry['stage'], ())))}")
    driver = [(name, e) for name, e in steps.items() if not name.startswith("stage:")]
    if driver:
        lines.append("  driver steps: " + ", ".join(f"{name} {e['wall_s']:.1f} s" for name, e in driver))
    return lines
