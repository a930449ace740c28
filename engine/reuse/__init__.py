"""Growing a sweep: a run takes every result an earlier run already finished, exactly.

`reuse: [runs/a, ...]` in the config (or `babelscore run --reuse runs/a ...`) names earlier
run directories. For each part of the score and generate stages, `run_part_reusing` splits
the work into rows found in those runs (same task identity, pre-pass, item content and
signature: `engine.reuse.keys`) and rows to compute, and writes both into the one part file a
fresh run would write, in a fresh run's row order. Other stages compute as usual.

Bookkeeping: each part's counts go to RUN/reuse/<stage>/<task>__part-NNNNN.json (written by
the worker next to its inputs); the driver sums the counts of committed parts into the
manifest (`reuse`) and the console lines. Every run records its tasks' identities in its
manifest (`reuse_identities`), which is what a later run matches against.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

from engine.io.atomic import write_json_atomic
from engine.reuse.sources import Reopen, forget_sources, hold_earlier_runs, sources_for
from engine.stages.base import Reusable

if TYPE_CHECKING:
    from engine.io.rundir import RunDirectory

logger = logging.getLogger(__name__)

REUSE_DIR = "reuse"

__all__ = ["run_part_reusing", "record_identities", "summarize_reuse", "reuse_lines", "hold_earlier_runs", "forget_sources"]


def _record_path(run_root: Path, part: Any) -> Path:
    return Path(run_root) / REUSE_DIR / part.stage / f"{part.task}__part-{part.index:05d}.json"


def run_part_reusing(stage: Any, ctx: Any, reopen: Reopen) -> pa.Table:
    """The part's table, with the rows earlier runs finished taken from them (see the module doc).

    The one hook of reuse into part execution: `engine.part_execution.execute_part` calls it
    instead of `stage.run_part` when the run names earlier runs; `reopen` opens an earlier run
    with its plan (engine.stages.plan.reopen_run).
    """
    record = _record_path(ctx.run_root, ctx.part)
    record.unlink(missing_ok=True)  # a record of an earlier attempt of this part must not outlive it
    result = None
    if isinstance(stage, Reusable):
        result = stage.reuse_part(ctx, sources_for(ctx.settings.reuse, reopen))
    if result is None:
        return stage.run_part(ctx)
    table, per_run, computed = result
    write_json_atomic(record, {"reused": per_run, "computed": computed, "rows": table.num_rows})
    return table


# ----- driver side ------------------------------------------------------------------------------
def _reusing_stages(plan: Any) -> list[Any]:
    """The plan's reusable part stages (engine.stages.plan.BoundStage)."""
    return [bound for bound in plan.part_stages() if isinstance(bound.stage, Reusable)]


def record_identities(run: "RunDirectory", plan: Any, prepass_of: Callable[[Any], dict[str, Any]]) -> None:
    """Record every reusable task's identity in the manifest (what later runs match).

    plan: the run's RunPlan (engine.stages.plan); prepass_of(bound stage): its tasks' pre-pass results."""
    identities: dict[str, dict[str, str]] = {}
    for bound in _reusing_stages(plan):
        stage = bound.stage
        prepass = prepass_of(bound)
        for task in bound.tasks:
            digest = stage.reuse_identity(task, prepass.get(task.task, {}))
            identities[task.task] = {"stage": stage.name, "identity": digest}
    run.manifest.record_reuse_identities(identities)
    run.save()


def summarize_reuse(run: "RunDirectory", plan: Any) -> dict[str, Any] | None:
    """Sum the per-part counts of committed parts into manifest['reuse'] (None without reuse)."""
    config = plan.config
    if not getattr(config, "reuse", ()):
        return None
    tasks: dict[str, dict[str, Any]] = {}
    for bound in _reusing_stages(plan):
        stage = bound.stage
        own = stage.input_parts(run.root)
        n_parts = len(own or run.manifest.part_rows)
        for part in bound.parts(n_parts):
            if not run.is_done(part.key):
                continue
            entry = tasks.setdefault(part.task, {"stage": stage.name, "reused": {}, "computed": 0})
            path = _record_path(run.root, part)
            if path.is_file():
                counts = json.loads(path.read_text(encoding="utf-8"))
                for source, n in counts["reused"].items():
                    entry["reused"][source] = entry["reused"].get(source, 0) + n
                entry["computed"] += counts["computed"]
            else:
                entry["computed"] += pq.ParquetFile(run.path(part.relative_path)).metadata.num_rows
    summary = {"from": list(config.reuse), "tasks": dict(sorted(tasks.items()))}
    run.manifest.record_reuse(summary)
    run.save()
    for line in reuse_lines(summary, plan.layout.reuse_verbs):
        logger.info("%s", line)
    return summary


def _shown(path: str) -> str:
    """A run directory as the console shows it: relative to the working directory when inside it."""
    import os

    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def reuse_lines(summary: dict[str, Any] | None, verbs: dict[str, str]) -> list[str]:
    """One console line per task: `TASK: N rows reused from runs/a, M computed`.

    verbs: stage -> its console verb for rows it made itself (the run's layout's `reuse_verbs`)."""
    if not summary:
        return []
    lines = []
    for task, info in summary["tasks"].items():
        reused = info["reused"]
        verb = verbs.get(info["stage"], "computed")
        if reused:
            sources = ", ".join(f"{n:,} rows reused from {_shown(source)}" for source, n in reused.items())
        else:
            sources = "0 rows reused"
        lines.append(f"{task}: {sources}, {info['computed']:,} {verb}")
    return lines
