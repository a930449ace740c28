"""Parts of the part stages: planning them and computing one, wherever an executor runs it.

A part is the unit of work and of exactly-once commit: part `i` of a stage task covers the
samples of `samples/part-i.parquet` (or the generated rows of that part). `execute_part` is a
pure function of (run directory, RunPlan, part, pre-pass results) that returns the part's
table; executors (local, Ray) call it wherever they like and the driver commits the result.
Nothing here imports torch, ray or vllm at module level.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from engine import faults, throughput
from engine.errors import StageError
from engine.records import SAMPLE_SCHEMA
from engine.stages.base import PartContext, PartTask
from engine.stages.plan import BoundStage, RunPlan

logger = logging.getLogger(__name__)

__all__ = ["PartTask", "execute_part", "sample_part_path", "part_output_paths", "upstream_parts"]


def sample_part_path(run_root: str | Path, index: int) -> Path:
    return Path(run_root) / "samples" / f"part-{index:05d}.parquet"


def part_output_paths(run_root: str | Path, bound: BoundStage, index: int) -> list[Path]:
    """The part files every task of a bound stage writes for part `index`, in task (config) order."""
    return [Path(run_root) / part.relative_path for part in bound.parts_at(index)]


def upstream_parts(plan: RunPlan, bound: BoundStage, index: int) -> list[PartTask]:
    """The parts of earlier stages whose outputs part `index` of `bound` reads, as the plan
    resolved its declared data flow (the stage that made its samples, if any, and the providers
    of every other kind it consumes)."""
    return [part for name in bound.upstream() for part in plan.bound(name).parts_at(index)]


def read_part_input(run_root: str | Path, bound: BoundStage, index: int) -> pa.Table:
    """The sample rows a stage works on for part `index`: the rows of the stage that made the
    samples (every task's rows of that part, in config order), else the validated samples."""
    source = bound.sample_source
    if source is not None:
        paths = part_output_paths(run_root, source, index)
        missing = [p for p in paths if not p.exists()]
        if missing:
            raise StageError(bound.name, f"part {index} needs the {source.name} rows {[str(p) for p in missing]}, "
                             "which are not committed")
        return pa.concat_tables([pq.read_table(p, schema=source.schema) for p in paths])
    return pq.read_table(sample_part_path(run_root, index), schema=SAMPLE_SCHEMA)


def read_stage_output(run_root: str | Path, bound: BoundStage, index: int) -> pa.Table:
    paths = part_output_paths(run_root, bound, index)
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise StageError(bound.name, f"part {index} of stage {bound.name!r} is not committed ({[str(p) for p in missing]})")
    return pa.concat_tables([pq.read_table(p, schema=bound.schema) for p in paths])


def execute_part(run_root: str, plan: RunPlan, part: PartTask, prepass: dict[str, Any]) -> pa.Table:
    """Compute one part's output table. Row-level failures become error rows, not exceptions.

    The table carries the part's throughput stats in its schema metadata (`engine.throughput`);
    the driver takes them off before it commits the part.

    plan: the RunPlan the driver sends in place of the config (the part's stage is bound in it);
    prepass: task name -> that task's corpus pre-pass result (absent when it has none).
    """
    faults.before_part(part.key)
    from engine import numerics

    bound = plan.bound(part.stage)  # a part names its stage; the plan holds it bound
    stage = bound.stage
    # One thread count in every process that computes a part (the driver resolved it).
    numerics.apply(plan.config.deterministic, needs_torch=bool(part.model_key))
    ctx = PartContext(
        run_root=Path(run_root),
        settings=plan.settings,
        part=part,
        prepass=prepass.get(part.task, {}),
        _input_reader=lambda index: read_part_input(run_root, bound, index),
        _output_reader=lambda name, index: read_stage_output(run_root, plan.bound(name), index),
        _consumed={kind: tuple(plan.bound(name).stage for name in names) for kind, names in bound.consumed},
    )
    with throughput.part_meter() as meter:
        if ctx.settings.reuse:
            from engine.reuse import run_part_reusing
            from engine.stages.plan import reopen_run

            table = run_part_reusing(stage, ctx, reopen_run)
        else:
            table = stage.run_part(ctx)
    table = table.cast(stage.schema) if table.schema != stage.schema else table
    return throughput.attach(table, meter)


def release_models() -> None:
    """Free every model this process holds (the model registry ends vLLM worker processes)."""
    from engine.runtime.model_registry import release_all_models

    release_all_models()
