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
from engine.faults import KILL_PART_ENV
from engine.records import SAMPLE_SCHEMA
from engine.stages import flow
from engine.stages.base import PartContext, PartTask
from engine.stages.registry import get_stage

logger = logging.getLogger(__name__)

__all__ = ["PartTask", "plan_parts", "execute_part", "sample_part_path", "part_output_paths", "upstream_parts", "KILL_PART_ENV"]


def sample_part_path(run_root: str | Path, index: int) -> Path:
    return Path(run_root) / "samples" / f"part-{index:05d}.parquet"


def plan_parts(config: Any, stage: str, n_parts: int) -> list[PartTask]:
    """All parts of a stage, model-major: every part of one model before the next model."""
    st = get_stage(stage)
    parts = [PartTask.of(task, i, st.directory) for task in st.tasks(config) for i in range(n_parts)]
    return sorted(parts, key=lambda p: (p.model_key, p.task, p.index))


def parts_at(config: Any, stage: str, index: int) -> list[PartTask]:
    """Part `index` of every task of `stage`, in task (config) order."""
    st = get_stage(stage)
    return [PartTask.of(task, index, st.directory) for task in st.tasks(config)]


def part_output_paths(run_root: str | Path, config: Any, stage: str, index: int) -> list[Path]:
    """The part files every task of `stage` writes for part `index`, in task (config) order."""
    return [Path(run_root) / part.relative_path for part in parts_at(config, stage, index)]


def upstream_parts(config: Any, stage: str, index: int) -> list[PartTask]:
    """The parts of earlier stages whose outputs part `index` of `stage` reads, as its declared
    data flow resolves (engine.stages.flow.upstream: the stage that made its samples, if any,
    and the providers of every other kind it consumes)."""
    return [part for st in flow.upstream(config.stages, stage) for part in parts_at(config, st.name, index)]


def read_part_input(run_root: str | Path, config: Any, stage: str, index: int) -> pa.Table:
    """The sample rows a stage works on for part `index`: the rows of the stage that made the
    samples (every task's rows of that part, in config order), else the validated samples."""
    source = flow.sample_source(config.stages, stage)
    if source is not None:
        paths = part_output_paths(run_root, config, source.name, index)
        missing = [p for p in paths if not p.exists()]
        if missing:
            raise StageError(stage, f"part {index} needs the {source.name} rows {[str(p) for p in missing]}, "
                             "which are not committed")
        return pa.concat_tables([pq.read_table(p, schema=source.schema) for p in paths])
    return pq.read_table(sample_part_path(run_root, index), schema=SAMPLE_SCHEMA)


def read_stage_output(run_root: str | Path, config: Any, stage: str, index: int) -> pa.Table:
    st = get_stage(stage)
    paths = part_output_paths(run_root, config, stage, index)
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise StageError(stage, f"part {index} of stage {stage!r} is not committed ({[str(p) for p in missing]})")
    return pa.concat_tables([pq.read_table(p, schema=st.schema) for p in paths])


def execute_part(run_root: str, config: Any, part: PartTask, prepass: dict[str, Any]) -> pa.Table:
    """Compute one part's output table. Row-level failures become error rows, not exceptions.

    The table carries the part's throughput stats in its schema metadata (`engine.throughput`);
    the driver takes them off before it commits the part.

    prepass: task name -> that task's corpus pre-pass result (absent when it has none).
    """
    faults.before_part(part.key)
    stage = get_stage(part.stage)
    ctx = PartContext(
        run_root=Path(run_root),
        config=config,
        part=part,
        prepass=prepass.get(part.task, {}),
        _input_reader=lambda index: read_part_input(run_root, config, part.stage, index),
        _output_reader=lambda name, index: read_stage_output(run_root, config, name, index),
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
