"""A run's data flow as plain data: what RunDirectory needs to read a run's rows.

The RunPlan (engine.stages.plan) makes one from the stages a run lists and hands it to the run
directory (`reopen_run` for a run directory written earlier), which only reads it, so it never
asks for a stage by name. Names, part-key prefixes, a schema and rates: no stage objects and no
callables (it pickles and prints); a stage's hooks are asked of the plan's stages
(docs/architecture.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa


@dataclass(frozen=True)
class DriverWork:
    """A driver stage as the report's status line sees it."""

    name: str
    after_complete: bool


@dataclass(frozen=True)
class RunLayout:
    """stages: the run's listed stages, in run order;
    kind_prefixes: kind of rows -> part-key prefixes (`<stage>/`) of the committed rows of that kind;
    sample_schema: the schema of the stage-made samples (None: the validated input's parts);
    providers: kind -> the last listed stage (of any kind) that provides it;
    part_stages / driver_stages: the listed stages of those kinds;
    reuse_verbs: reusable stage -> the console's verb for the rows it made itself.
    """

    stages: tuple[str, ...]
    kind_prefixes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    sample_schema: pa.Schema | None = None
    providers: dict[str, str] = field(default_factory=dict)
    part_stages: tuple[str, ...] = ()
    driver_stages: tuple[DriverWork, ...] = ()
    reuse_verbs: dict[str, str] = field(default_factory=dict)  # reusable stage -> the console's verb for rows it made
    rates: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)  # stage -> its own (counter, unit) rates

    def prefixes(self, kind: str) -> tuple[str, ...]:
        return self.kind_prefixes.get(kind, ())

    def has_provider(self, kind: str) -> bool:
        return kind in self.providers
