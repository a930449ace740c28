"""Parts of the part stages: planning them and computing one, wherever an executor runs it.

A part is the unit of work and of exactly-once commit: part `i` of a stage task covers the
samples of `samples/part-i.parquet` (or the generated rows of that part). `execute_part` is a
pure function of (run directory, config, part, pre-pass results) that returns the part's
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
from engine.faults import HOLD_PART_ENV, KILL_PART_ENV
from engine.records import SAMPLE_SCHEMA
from engine.stages.base import PartContext, PartTask
from engine.stages.plan import BoundStage, RunPlan, as_plan

logger = logging.getLogger(__name__)

__all__ = ["PartTask", "plan_parts", "execute_part", "sample_part_path", "part_output_paths", "upstream_parts", "KILL_PART_ENV",
           "HOLD_PART_ENV"]


def sample_part_path(run_root: str | Path, index: int) -> Path:
    return Path(run_root) / "samples" / f"part-{index:05d}.parquet"


def _bound(plan: RunPlan, stage: "str | BoundStage") -> BoundStage:
    return plan.bound(stage) if isinstance(stage, str) else stage


def plan_parts(config: Any, stage: "str | BoundStage", n_parts: int) -> list[PartTask]:
    """All parts of a stage, model-major (config: the RunPlan, or a config to plan)."""
    return _bound(as_plan(config), stage).parts(n_parts)


def parts_at(config: Any, stage: "str | BoundStage", index: int) -> list[PartTask]:
    """Part `index` of every task of `stage`, in task (config) order."""
    return _bound(as_plan(config), stage).parts_at(index)


def part_output_paths(run_root: str | Path, config: Any, stage: "str | BoundStage", index: int) -> list[Path]:
    """The part files every task of `stage` writes for part `index`, in task (config) order."""
    return [Path(run_root) / part.relative_path for part in parts_at(config, stage, index)]


def upstream_parts(config: Any, stage: "str | BoundStage", index: int) -> list[PartTask]:
    """The parts of earlier stages whose outputs part `index` of `stage` reads, as the plan
    resolved its declared data flow (the stage that made its samples, if any, and the providers
    of every other kind it consumes)."""
    plan = as_plan(config)
    return [part for name in _bound(plan, stage).upstream() for part in plan.bound(name).parts_at(index)]


def read_part_input(run_root: str | Path, config: Any, stage: "str | BoundStage", index: int) -> pa.Table:
    """The sample rows a stage works on for part `index`: the rows of the stage that made the
    samples (every task's rows of that part, in config order), else the validated samples."""
    plan = as_plan(config)
    bound = _bound(plan, stage)
    source = bound.sample_source
    if source is not None:
        paths = part_output_paths(run_root, plan, source, index)
        missing = [p for p in paths if not p.exists()]
        if missing:
            raise StageError(bound.name, f"part {index} needs the {source.name} rows {[str(p) for p in missing]}, "
                             "which are not committed")
        return pa.concat_tables([pq.read_table(p, schema=source.schema) for p in paths])
    return pq.read_table(sample_part_path(run_root, index), schema=SAMPLE_SCHEMA)


def read_stage_output(run_root: str | Path, config: Any, stage: "str | BoundStage", index: int) -> pa.Table:
    bound = _bound(as_plan(config), stage)
    paths = part_output_paths(run_root, config, bound, index)
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise StageError(bound.name, f"part {index} of stage {bound.name!r} is not committed ({[str(p) for p in missing]})")
    return pa.concat_tables([pq.read_table(p, schema=bound.schema) for p in paths])


def execute_part(run_root: str, config: Any, part: PartTask, prepass: dict[str, Any]) -> pa.Table:
    """Compute one part's output table. Row-level failures become error rows, not exceptions.

    The table carries the part's throughput stats in its schema metadata (`engine.throughput`);
    the driver takes them off before it commits the part.

    config: the RunPlan the driver sends (a bare config is planned here, once);
    prepass: task name -> that task's corpus pre-pass result (absent when it has none).
    """
    faults.before_part(part.key)
    from engine import numerics

    plan = as_plan(config)
    bound = plan.bound(part.stage)
    stage = bound.stage
    config = plan.config
    # One thread count in every process that computes a part (the driver resolved it).
    numerics.apply(getattr(config, "deterministic", numerics.DeterministicParams()), needs_torch=bool(part.model_key))
    ctx = PartContext(
        run_root=Path(run_root),
        config=config,
        part=part,
        prepass=prepass.get(part.task, {}),
        _input_reader=lambda index: read_part_input(run_root, plan, bound, index),
        _output_reader=lambda name, index: read_stage_output(run_root, plan, name, index),
        _consumed={kind: tuple(plan.bound(name).stage for name in names) for kind, names in bound.consumed},
    )
    with throughput.part_meter() as meter:
        if getattr(config, "reuse", ()):
            from engine.reuse import run_part_reusing

            table = run_part_reusing(stage, ctx)
        else:
            table = stage.run_part(ctx)
    table = table.cast(stage.schema) if table.schema != stage.schema else table
    return throughput.attach(table, meter)


def release_models() -> None:
    """Free every model this process holds (the model registry ends vLLM worker processes)."""
    from engine.runtime.registry import release_all_models

    release_all_models()
