"""The RunPlan: a run resolved once, in the driver, from its validated config.

`build_plan(config)` asks the flow resolver (engine.stages.flow) everything the layers below
would otherwise look up by stage name: the listed stages bound in run order, each with its
tasks, the stage whose rows are its samples, the earlier stages whose part `i` it reads (by
kind), its folder and schema, its model needs; the run's seed, the stages that make its input
and its samples, and the data-flow layout that RunDirectory and the report read
(engine.io.layout). The runner, prepare, preflight, both executors (the plan travels to Ray
workers in place of the bare config), memory planning, reuse, throughput, the console and the
bench take the plan or the piece of it they need. docs/architecture.md walks through it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from engine.io.layout import RunLayout
from engine.stages import flow
from engine.stages.base import SAMPLES, PartStage, PartTask, SampleOrigin, Stage, StageTask
from engine.stages.registry import build_stage


@dataclass(frozen=True)
class BoundStage:
    """One listed stage built from its section's params (what workers run), with its tasks."""

    stage: Stage
    tasks: tuple[StageTask, ...] = ()
    sample_source: "BoundStage | None" = None  # whose rows its samples are (None: the validated input)
    consumed: tuple[tuple[str, tuple[str, ...]], ...] = ()  # kind -> the earlier part stages it reads it from
    model_needs: tuple[Any, ...] = ()  # engine.runtime.memory.ModelNeed

    @property
    def name(self) -> str:
        return self.stage.name

    @property
    def kind(self) -> str:
        return self.stage.kind

    @property
    def directory(self) -> str:
        return self.stage.directory

    @property
    def schema(self) -> pa.Schema | None:
        return self.stage.schema

    def upstream(self) -> tuple[str, ...]:
        """Names of the earlier part stages whose committed part `i` its part `i` reads."""
        return tuple(name for _, names in self.consumed for name in names)

    def parts(self, n_parts: int) -> list[PartTask]:
        """All its parts, model-major: every part of one model before the next model."""
        parts = [PartTask.of(task, i, self.directory) for task in self.tasks for i in range(n_parts)]
        return sorted(parts, key=lambda p: (p.model_key, p.task, p.index))

    def parts_at(self, index: int) -> list[PartTask]:
        """Part `index` of each of its tasks, in task (config) order."""
        return [PartTask.of(task, index, self.directory) for task in self.tasks]


@dataclass(frozen=True)
class RunPlan:
    config: Any  # engine.config.RunConfig
    stages: tuple[BoundStage, ...]  # every listed stage, in run order
    layout: RunLayout
    seed: int | None = None
    input_source: BoundStage | None = None  # the source stage that makes the run's input (None: `input:`)
    sample_source: BoundStage | None = None  # the stage whose rows are the run's samples (None: the validated input)
    _by_name: dict[str, BoundStage] = field(default_factory=dict, compare=False, repr=False)

    def bound(self, name: str) -> BoundStage:
        """The bound stage a part key or a manifest record names (parts carry their stage's name)."""
        return self._by_name[name]

    def of_kind(self, kind: str) -> list[BoundStage]:
        return [b for b in self.stages if b.kind == kind]

    def part_stages(self) -> list[BoundStage]:
        return self.of_kind("part")

    def model_needs(self) -> list[Any]:
        return [need for b in self.part_stages() for need in b.model_needs]

    def own_tables(self) -> list[BoundStage]:
        """The part stages that work on a task table of their own (`PartStage.own_table`), not the samples."""
        return [b for b in self.part_stages() if b.stage.own_table() is not None]


def _row_generators(stage: Any) -> tuple[str, ...]:
    if stage.row_generators is None:
        raise TypeError(f"stage {stage.name!r} provides samples but does not say their generator names "
                        "(engine.stages.base.PartStage.row_generators)")
    return tuple(stage.row_generators)


def built_stages(config: Any) -> list[Stage]:
    """The listed stages in run order, each built from its own section of `config`."""
    return [build_stage(s.name, config.section(s.name) if s.section else None) for s in flow.listed(config.stages)]


def build_plan(config: Any) -> RunPlan:
    """Resolve the run once: called by the driver (runner, bench, CLI) on a validated config."""
    bound: dict[str, BoundStage] = {}
    for stage in built_stages(config):
        part = isinstance(stage, PartStage)
        source = flow.sample_source(config.stages, stage.name) if part else None
        consumed: list[tuple[str, tuple[str, ...]]] = []
        for kind in stage.consumes if part else ():
            providers = ([source] if source is not None else []) if kind == SAMPLES else flow.providers(config.stages, kind, before=stage.name)
            consumed.append((kind, tuple(p.name for p in providers)))
        if part:  # where its samples come from, handed in as data: the stage never asks who makes them
            maker = bound[source.name].stage if source is not None else None
            stage.samples = SampleOrigin(
                generated=_row_generators(maker) if maker is not None else None,
                input=None if maker is not None or flow.input_source(config.stages) is not None else config.input)
        bound[stage.name] = BoundStage(
            stage=stage,
            tasks=tuple(stage.tasks()) if part else (),
            sample_source=bound.get(source.name) if source is not None else None,
            consumed=tuple(consumed),
            model_needs=tuple(stage.model_needs()) if part else (),
        )
    source = flow.input_source(config.stages)
    samples = flow.sample_source(config.stages)
    return RunPlan(
        config=config,
        stages=tuple(bound.values()),
        layout=flow.layout_of(config.stages),
        seed=getattr(config, "seed", None),
        input_source=bound.get(source.name) if source is not None else None,
        sample_source=bound.get(samples.name) if samples is not None else None,
        _by_name=bound,
    )
