"""The RunPlan: a run resolved once, in the driver, from its validated config.

`build_plan(config)` resolves the declared data flow of the listed stages, built from their
own sections: stages declare kinds of rows (`Stage.provides`, `Stage.consumes`), never each
other's names; the rules are in docs/architecture.md, "How the plan resolves the data flow".
The plan holds the listed stages bound in run order (each with its tasks, where its samples
come from, the earlier stages whose part `i` it reads, its folder, schema and model needs), the
run's seed and the data-flow layout that RunDirectory reads (engine.io.layout, plain data). It
travels to Ray workers in place of the bare config; whoever calls a stage's hooks asks the plan.

`reopen_run(root)` opens a run directory written earlier: the RunDirectory with the plan rebuilt
from the config its manifest records (`plan_of_run`), or, when that config does not validate or
the directory has none, a plan of the stages it lists, unbuilt, with a note (`RunPlan.note`).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import pyarrow as pa

from engine.config import RunConfig, built_stages, config_from_mapping
from engine.errors import BabelscoreError, ConfigError
from engine.io.layout import DriverWork, RunLayout
from engine.io.rundir import RunDirectory
from engine.runtime.memory import ModelNeed
from engine.stages import registry
from engine.stages.base import (
    CANDIDATES,
    INPUT,
    SAMPLES,
    DriverStage,
    PartStage,
    PartTask,
    Rates,
    ReportSection,
    ReportSettings,
    Reusable,
    RunSettings,
    SampleOrigin,
    Stage,
    StageTask,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BoundStage:
    """One listed stage built from its section's params (what workers run), with its tasks."""

    stage: Stage
    tasks: tuple[StageTask, ...] = ()
    sample_source: "BoundStage | None" = None  # whose rows its samples are (None: the validated input)
    consumed: tuple[tuple[str, tuple[str, ...]], ...] = ()  # kind -> the earlier part stages it reads it from
    model_needs: tuple[ModelNeed, ...] = ()

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
    """config None: a plan of a run directory written earlier whose recorded config could not be
    validated again; its stages are then unbuilt (no params, no tasks) and `note` says why. Such
    a plan reads the run (layout, report hooks, candidates) but never runs it."""

    config: RunConfig | None
    stages: tuple[BoundStage, ...]  # every listed stage, in run order
    layout: RunLayout
    seed: int = 0
    input_source: BoundStage | None = None  # the source stage that makes the run's input (None: `input:`)
    sample_source: BoundStage | None = None  # the stage whose rows are the run's samples (None: the validated input)
    note: str | None = None  # why the stages are unbuilt (None: built from the validated config)
    _by_name: dict[str, BoundStage] = field(default_factory=dict, compare=False, repr=False)

    @property
    def settings(self) -> RunSettings:
        """The run-wide settings every part reads (its PartContext's)."""
        if self.config is None:
            raise ConfigError(f"this plan cannot run: {self.note}")
        return self.config.settings()

    def bound(self, name: str) -> BoundStage:
        """The bound stage a part key or a manifest record names (parts carry their stage's name)."""
        return self._by_name[name]

    def of_kind(self, kind: str) -> list[BoundStage]:
        return [b for b in self.stages if b.kind == kind]

    def part_stages(self) -> list[BoundStage]:
        return self.of_kind("part")

    def model_needs(self) -> list[ModelNeed]:
        return [need for b in self.part_stages() for need in b.model_needs]

    def own_tables(self) -> list[BoundStage]:
        """The part stages that work on a task table of their own (`PartStage.own_table`), not the samples."""
        return [b for b in self.part_stages() if b.stage.own_table() is not None]

    def report_sections(self) -> tuple[Callable[[Any], Any], ...]:
        """The listed stages' report hooks (`ReportSection.report_section`), in run order."""
        return tuple(b.stage.report_section for b in self.stages if isinstance(b.stage, ReportSection))

    def report_settings(self, recorded: Mapping[str, Any]) -> dict[str, Any]:
        """What the listed stages say the report reads of their options as `recorded` (the
        manifest's copy of the resolved config) records them: setting key -> value."""
        out: dict[str, Any] = {}
        for b in self.stages:
            if isinstance(b.stage, ReportSettings):
                out.update(b.stage.report_settings(recorded.get(b.stage.section or b.name) or {}))
        return out

    def candidate_stages(self) -> tuple[Stage, ...]:
        """The listed part stages that provide scored candidates, in run order (each has `name`,
        `schema` and `as_candidates(table)`): reuse rebuilds an earlier run's items from them."""
        return tuple(_providers([b.stage for b in self.stages], CANDIDATES))


def _row_generators(stage: Stage) -> tuple[str, ...]:
    if stage.row_generators is None:
        raise TypeError(f"stage {stage.name!r} provides samples but does not say their generator names "
                        "(engine.stages.base.PartStage.row_generators)")
    return tuple(stage.row_generators)


def _before(stages: Sequence[Stage], stage: str | None) -> Sequence[Stage]:
    names = [s.name for s in stages]
    return stages[: names.index(stage)] if stage is not None and stage in names else stages


def _providers(stages: Sequence[Stage], kind: str, before: str | None = None) -> list[Stage]:
    """The part stages among `stages` (in run order) that provide `kind`; only those before `before` when given."""
    return [s for s in _before(stages, before) if s.kind == "part" and s.provides == kind]


def _sample_source(stages: Sequence[Stage], stage: str | None = None) -> Stage | None:
    """The stage whose rows are the samples `stage` works on (None: the validated input);
    stage None: the samples of the run as a whole (what analyses and the report read)."""
    found = _providers(stages, SAMPLES, before=stage)
    return found[-1] if found else None


def _input_source(stages: Sequence[Stage]) -> Stage | None:
    """The listed source stage that makes the run's input (None: the `input:` file)."""
    found = [s for s in stages if s.kind == "source" and s.provides == INPUT]
    return found[0] if found else None


def makes_samples(stages: Iterable[str]) -> bool:
    """Whether a listed stage makes the run's input or its sample rows (the input then needs no prediction)."""
    listed = registry.listed(stages)
    return _input_source(listed) is not None or _sample_source(listed) is not None


def _layout(stages: Sequence[Stage], known: Sequence[Stage]) -> RunLayout:
    """The data flow of a run listing `stages` (in run order) as data for RunDirectory and the
    report; `known`: the stages whose rows it may hold (`stages`, or every registered stage for a
    run directory that lists none)."""
    kinds = sorted({s.provides for s in known if s.provides})
    samples = _sample_source(known)

    def prefixes(kind: str) -> tuple[str, ...]:
        if kind == SAMPLES:
            return (f"{samples.name}/",) if samples is not None else ()
        return tuple(f"{s.name}/" for s in _providers(known, kind))

    return RunLayout(
        stages=tuple(s.name for s in known),
        kind_prefixes={kind: prefixes(kind) for kind in kinds},
        sample_schema=samples.schema if samples is not None else None,
        providers={kind: [s for s in known if s.provides == kind][-1].name for kind in kinds},
        part_stages=tuple(s.name for s in stages if s.kind == "part"),
        driver_stages=tuple(DriverWork(s.name, s.after_complete) for s in stages if isinstance(s, DriverStage)),
        reuse_verbs={s.name: s.reuse_verb for s in known if isinstance(s, Reusable)},
        rates={s.name: tuple(s.rates) for s in known if isinstance(s, Rates) and s.rates},
    )


def _unbuilt_plan(stages: Iterable[str], note: str) -> RunPlan:
    """A plan of the listed stages unbuilt, for reading a run only: every registered stage's rows
    when it lists none (a run directory written by hand; but then no stage's driver work or
    report section)."""
    listed = registry.listed(tuple(stages))
    bound = {s.name: BoundStage(stage=s) for s in listed}
    source, samples = _input_source(listed), _sample_source(listed)
    return RunPlan(
        config=None,
        stages=tuple(bound.values()),
        layout=_layout(listed, listed or registry.listed()),
        input_source=bound.get(source.name) if source is not None else None,
        sample_source=bound.get(samples.name) if samples is not None else None,
        note=note,
        _by_name=bound,
    )


def layout_of_run(stages: Iterable[str]) -> RunLayout:
    """The layout of a run directory listing `stages` (none: every registered stage's rows), for
    a reader that needs only its rows, not its stages' hooks."""
    return _unbuilt_plan(stages, "read by its listed stages").layout


def plan_of_run(recorded: Mapping[str, Any], where: str | Path) -> RunPlan:
    """The plan of a run written earlier, from the resolved config its manifest records.

    The config is validated again (its keys and values; not the config-time checks that load
    models: reading a run needs none). When it does not validate (an option this version lacks, an
    input file moved) or there is none (a run directory written by hand), the plan holds the
    stages it lists, unbuilt, and `note` says why: the run is still read, never refused.
    """
    stages = tuple(recorded.get("stages") or ())
    if not recorded:
        return _unbuilt_plan(stages, f"{where}: its manifest records no config (a run directory written by hand); "
                                     "read with every registered stage's rows")
    try:
        return build_plan(config_from_mapping(recorded, Path(where), check=False))
    except (BabelscoreError, ValueError, TypeError, KeyError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        note = (f"{where}: its recorded config does not validate ({first}); read with the stages it "
                f"lists ({', '.join(stages) or 'none'}), unbuilt")
        logger.warning("%s", note)
        return _unbuilt_plan(stages, note)


def reopen_run(root: str | Path) -> RunDirectory:
    """A run directory written earlier, opened for reading with its plan attached (`run.plan`:
    `plan_of_run` of its manifest's config; `run.layout` is that plan's): `babelscore report`,
    `babelscore diff`, the console's summaries, the analyses' callers and reuse's earlier runs."""
    run = RunDirectory.open_existing(root)
    run.use_plan(plan_of_run(run.manifest.config, run.root))
    return run


def build_plan(config: RunConfig) -> RunPlan:
    """Resolve the run once: called by the driver (runner, bench, CLI) on a validated config."""
    stages = built_stages(config)
    bound: dict[str, BoundStage] = {}
    for stage in stages:
        part = isinstance(stage, PartStage)
        source = _sample_source(stages, stage.name) if part else None
        consumed: list[tuple[str, tuple[str, ...]]] = []
        for kind in stage.consumes if part else ():
            providers = ([source] if source is not None else []) if kind == SAMPLES else _providers(stages, kind, before=stage.name)
            consumed.append((kind, tuple(p.name for p in providers)))
        if part:  # where its samples come from, handed in as data: the stage never asks who makes them
            maker = bound[source.name].stage if source is not None else None
            stage.samples = SampleOrigin(
                generated=_row_generators(maker) if maker is not None else None,
                input=None if maker is not None or _input_source(stages) is not None else config.input)
        bound[stage.name] = BoundStage(
            stage=stage,
            tasks=tuple(stage.tasks()) if part else (),
            sample_source=bound.get(source.name) if source is not None else None,
            consumed=tuple(consumed),
            model_needs=tuple(stage.model_needs()) if part else (),
        )
    source = _input_source(stages)
    samples = _sample_source(stages)
    return RunPlan(
        config=config,
        stages=tuple(bound.values()),
        layout=_layout(stages, stages),
        seed=config.seed,
        input_source=bound.get(source.name) if source is not None else None,
        sample_source=bound.get(samples.name) if samples is not None else None,
        _by_name=bound,
    )

