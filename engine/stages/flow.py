"""The declared data flow, resolved: which stage's rows a stage reads.

Stages declare kinds of rows (`Stage.provides`, `Stage.consumes`: engine.stages.base), never
each other's names. This module is the one resolver that the runner, both executors (through
engine.part_execution), RunDirectory, the analyses and the report ask, given the stages a run
lists (config.stages, or the manifest's copy of it):

- the SAMPLES a stage works on are the rows of the last stage before it that provides SAMPLES
  (e.g. generation), else the validated input (`samples/part-*.parquet`);
- any other kind a stage consumes is read from every listed stage before it that provides
  that kind (e.g. the score stage's CANDIDATES: noise and perturbations), in run order;
- the run's input comes from a listed `source` stage (e.g. build) when there is one, else
  from the `input:` file.

A stage added to the registry with a new kind is found by every reader without editing them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from engine.io import layout as _layout
from engine.io.layout import DriverWork, RunLayout
from engine.stages import registry
from engine.stages.base import CANDIDATES, INPUT, SAMPLES, DriverStage, Rates, ReportSection, ReportSettings, Reusable
from engine.stages.registry import get_stage

if TYPE_CHECKING:
    from engine.stages.base import Stage


def listed(stages: Iterable[str], kind: str | None = None) -> list["Stage"]:
    """The listed stages in run (registry) order; only those of `kind` (part, source, driver) when given."""
    names = set(stages)
    out = [get_stage(name) for name in registry.STAGES if name in names]
    return [s for s in out if kind is None or s.kind == kind]


def _before(stages: Iterable[str], stage: str | None) -> list["Stage"]:
    ordered = listed(stages)
    if stage is None:
        return ordered
    names = [s.name for s in ordered]
    return ordered[: names.index(stage)] if stage in names else ordered


def providers(stages: Iterable[str], kind: str, before: str | None = None) -> list["Stage"]:
    """Listed part stages that provide `kind`, in run order (only those before `before` when given)."""
    return [s for s in _before(stages, before) if s.kind == "part" and s.provides == kind]


def sample_source(stages: Iterable[str], stage: str | None = None) -> "Stage | None":
    """The stage whose rows are the samples `stage` works on (None: the validated input).

    stage None: the samples of the run as a whole (what analyses and the report read).
    """
    found = providers(stages, SAMPLES, before=stage)
    return found[-1] if found else None


def generates_samples(stages: Iterable[str]) -> bool:
    """Whether a listed stage makes the sample rows (the input then needs no prediction)."""
    return sample_source(stages) is not None


def input_source(stages: Iterable[str]) -> "Stage | None":
    """The listed source stage that makes the run's input (None: the `input:` file)."""
    found = [s for s in listed(stages, "source") if s.provides == INPUT]
    return found[0] if found else None


def upstream(stages: Iterable[str], stage: str) -> list["Stage"]:
    """Earlier part stages whose committed part `i` a part `i` of `stage` reads."""
    consumer = get_stage(stage)
    out: list[Stage] = []
    for kind in consumer.consumes:
        if kind == SAMPLES:
            source = sample_source(stages, stage)
            out += [source] if source is not None else []
        else:
            out += providers(stages, kind, before=stage)
    return out


def key_prefixes(stages: Iterable[str], kind: str) -> list[str]:
    """Part-key prefixes (`<stage>/`) of the committed rows of `kind` in a run."""
    if kind == SAMPLES:
        source = sample_source(stages)
        return [f"{source.name}/"] if source is not None else []
    return [f"{s.name}/" for s in providers(stages, kind)]


def provider_of(stages: Iterable[str], kind: str) -> "Stage | None":
    """The one listed stage (any kind) that provides `kind`, or None."""
    found = [s for s in listed(stages) if s.provides == kind]
    return found[-1] if found else None


def layout_of(stages: Iterable[str]) -> RunLayout:
    """The run's data flow as data for RunDirectory and the report (engine.io.layout); every
    registered stage's rows when `stages` is empty (a run directory written by hand), but then
    no stage's driver work or report section."""
    given = tuple(stages)
    names = given or tuple(registry.STAGES)
    ordered = listed(given)
    kinds = {s.provides for s in listed(names) if s.provides}
    source = sample_source(names)
    return RunLayout(
        stages=names,
        kind_prefixes={kind: tuple(key_prefixes(names, kind)) for kind in sorted(kinds)},
        sample_schema=source.schema if source is not None else None,
        providers={kind: provider_of(names, kind).name for kind in sorted(kinds)},  # type: ignore[union-attr]
        part_stages=tuple(s.name for s in ordered if s.kind == "part"),
        driver_stages=tuple(DriverWork(s.name, s.after_complete) for s in ordered if isinstance(s, DriverStage)),
        report_sections=tuple(s.report_section for s in ordered if isinstance(s, ReportSection)),
        report_settings=tuple((s.section or s.name, s.report_settings) for s in ordered if isinstance(s, ReportSettings)),
        reuse_verbs={s.name: s.reuse_verb for s in listed(names) if isinstance(s, Reusable)},
        rates={s.name: s.rates for s in listed(names) if isinstance(s, Rates) and s.rates},
        candidates=tuple(providers(given, CANDIDATES)),
    )


_layout.use_resolver(layout_of)  # run directories opened without a plan resolve their layout here
