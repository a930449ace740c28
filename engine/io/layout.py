"""A run's data flow as plain data: what RunDirectory and the report need to read a run.

The RunPlan (engine.stages.plan) makes one from the stages a run lists, and hands it to the run
directory and the report (`layout_of_run` for a run directory written earlier); they only read
it, so they never ask for a stage by name (docs/architecture.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

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
    report_sections: the listed stages' report hooks (`ReportSection.report_section`), in run order;
    report_settings: (config section, `ReportSettings.report_settings`) of the listed stages;
    reuse_verbs: reusable stage -> the console's verb for the rows it made itself.
    """

    stages: tuple[str, ...]
    kind_prefixes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    sample_schema: pa.Schema | None = None
    providers: dict[str, str] = field(default_factory=dict)
    part_stages: tuple[str, ...] = ()
    driver_stages: tuple[DriverWork, ...] = ()
    report_sections: tuple[Callable[[Any], Any], ...] = ()
    report_settings: tuple[tuple[str, Callable[[dict[str, Any]], dict[str, Any]]], ...] = ()
    reuse_verbs: dict[str, str] = field(default_factory=dict)  # reusable stage -> the console's verb for rows it made
    rates: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)  # stage -> its own (counter, unit) rates
    # The listed part stages that provide scored candidates, in run order (stage objects: each
    # has `name`, `schema` and `as_candidates(table)`), for reuse to rebuild that run's items.
    candidates: tuple[Any, ...] = ()

    def prefixes(self, kind: str) -> tuple[str, ...]:
        return self.kind_prefixes.get(kind, ())

    def has_provider(self, kind: str) -> bool:
        return kind in self.providers

    def settings(self, config: dict[str, Any]) -> dict[str, Any]:
        """What the listed stages say the report reads of their options as `config` (the
        manifest's copy of the resolved config) records them: setting key -> value."""
        out: dict[str, Any] = {}
        for section, read in self.report_settings:
            out.update(read(config.get(section) or {}))
        return out
