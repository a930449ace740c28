"""Stage `roundtrip`: does a comment carry enough meaning to rebuild the code?

Its input is a task table (functions with tests: the built-in HumanEval set or the user's),
not the sample table, so it cuts its own parts (engine.roundtrip.task_parts) and part i
always holds the same tasks. `run_part` runs the round trip (engine.roundtrip.orchestrate)
over a part's tasks: one ROUNDTRIP_SCHEMA row per (task, natural language, generator, sample)
in RUN/roundtrip/. Sandbox verdicts and generation failures are row results; only an
infrastructure failure (a model that does not load) fails the part. One task per section
(engine.roundtrip.section.section_tasks): the whole section runs within each part.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from engine.records import ROUNDTRIP_SCHEMA
from engine.roundtrip.console import roundtrip_lines
from engine.roundtrip.params import RoundTripParams, default_seeds
from engine.roundtrip.section import check_section, section_tasks
from engine.roundtrip.section import model_needs as section_model_needs
from engine.roundtrip.section import signatures as section_signatures
from engine.roundtrip.task_parts import cut_task_parts, read_task_part, task_table_description
from engine.stages.base import MODEL_PATH_OPTIONS, ROUNDTRIP_ROWS, OwnTable, PartContext, PartStage, Rates, ReportSection, StageTask

if TYPE_CHECKING:
    from engine.io.rundir import RunDirectory


# The report section (pyarrow.dataset, pandas) and the round trip itself are imported when used.
class RoundTripStage(PartStage[RoundTripParams, None], Rates, ReportSection):
    name = "roundtrip"
    package = "engine.roundtrip"
    section = "roundtrip"
    params_class = "engine.roundtrip.params:RoundTripParams"
    provides = ROUNDTRIP_ROWS
    consumes = ()  # its own task table (input_parts), not the samples
    seeded = True
    path_options = (*MODEL_PATH_OPTIONS, "fluency_model", "tasks", "prompts_dir")
    directory = "roundtrip"
    schema = ROUNDTRIP_SCHEMA
    input_columns = ()
    rates = (("runs", "runs/s"),)
    output_rows_counter = "runs"  # one output row per sandboxed run

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> RoundTripParams:
        # Relative `tasks`, `prompts_dir` and model paths (./, ../) are already resolved
        # against the config's folder by the config loader (`path_options`).
        return RoundTripParams.from_mapping(dict(raw or {}), where=where)

    def with_run_seed(self, options: dict[str, Any], seed: int) -> dict[str, Any]:
        """The section's seed (inputs, requests) and each model entry's seed default to the run's."""
        return default_seeds(options, seed)

    def check_config(self) -> None:
        check_section(self.params)

    def model_needs(self) -> list[Any]:
        return section_model_needs(self.params, self.name)

    def tasks(self) -> list[StageTask[None]]:
        return section_tasks(self.params, self.name)

    def own_table(self) -> OwnTable:
        return task_table_description(self.params)

    def input_parts(self, run_root: str | Path) -> list[int]:
        """Cut the task table into parts once per run directory; rows of each part, by index."""
        return cut_task_parts(self.params, run_root)

    def run_part(self, ctx: PartContext[None]) -> pa.Table:
        from engine.roundtrip.orchestrate import run_roundtrip

        return run_roundtrip(read_task_part(ctx.run_root, ctx.part.index), self.params)

    def console_lines(self, run: "RunDirectory", counts: dict[str, Any]) -> list[str]:
        return roundtrip_lines(run.root / self.directory)

    def report_section(self, ctx: Any) -> tuple[str, str, str] | None:
        from engine.roundtrip.report import report_section

        return report_section(ctx.data.root, ctx.data.manifest.signatures)

    def signatures(self, task: StageTask[None], prepass: dict[str, Any]) -> dict[str, Any]:
        return section_signatures(self.params)
