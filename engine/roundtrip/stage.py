"""Stage `roundtrip`: does a comment carry enough meaning to rebuild the code?

Its input is a task table (functions with tests: the built-in HumanEval set or the user's),
not the sample table, so it cuts its own parts (engine.roundtrip.task_parts) and part i
always holds the same tasks. `run_part` reads part i and runs the round trip
(engine.roundtrip.orchestrate) over its tasks; the output rows (ROUNDTRIP_SCHEMA, RUN/roundtrip/) are
one per (task, natural language, generator, sample). Sandbox verdicts and generation failures
are row results; only an infrastructure failure (a model that does not load) fails the part.

One task per configured section (`roundtrip-<hash of the resolved options>`): a comment is
shared by every generator of the section, and abstraction compares all U x V regenerations of
one (task, language), so the whole section runs within each part.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from engine.params import option_digest
from engine.records import ROUNDTRIP_SCHEMA
from engine.stages.base import MODEL_PATH_OPTIONS, ROUNDTRIP_ROWS, OwnTable, PartContext, PartStage, Rates, ReportSection, StageTask

if TYPE_CHECKING:
    from engine.io.rundir import RunDirectory


class RoundTripStage(PartStage, Rates, ReportSection):
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

    # ----- configuration ------------------------------------------------------------------
    def parse_section(self, raw: Any, base_dir: Path, where: str) -> Any:
        from engine.roundtrip.params import RoundTripParams

        # Relative `tasks`, `prompts_dir` and model paths (./, ../) are already resolved
        # against the config's folder by the config loader (`path_options`).
        return RoundTripParams.from_mapping(dict(raw or {}), where=where)

    def with_run_seed(self, options: dict[str, Any], seed: int) -> dict[str, Any]:
        """The section's seed (inputs, requests) and each model entry's seed default to the run's."""
        options.setdefault("seed", seed)
        for key in ("generators", "comment_generator"):
            value = options.get(key)
            if isinstance(value, list):
                options[key] = [dict(g, seed=g.get("seed", seed)) if isinstance(g, dict) else g for g in value]
            elif isinstance(value, dict):
                options[key] = dict(value, seed=value.get("seed", seed))
        return options

    def check_config(self) -> None:
        from engine.roundtrip.section import check_section

        check_section(self.params)

    def model_needs(self) -> list[Any]:
        from engine.roundtrip.section import model_needs

        return model_needs(self.params, self.name)

    # ----- identity and planning ----------------------------------------------------------
    def tasks(self) -> list[StageTask]:
        from engine.roundtrip.section import model_key

        params = self.params
        return [StageTask(self.name, f"roundtrip-{option_digest(params.to_dict())}", model_key(params), 0)]

    def own_table(self) -> OwnTable:
        from engine.roundtrip.task_parts import task_rows

        return OwnTable(rows=task_rows(self.params), limit_option="limit", per_part_option="tasks_per_part")

    def input_parts(self, run_root: str | Path) -> list[int]:
        """Cut the task table into parts once per run directory; rows of each part, by index."""
        from engine.roundtrip.task_parts import cut_task_parts

        return cut_task_parts(self.params, run_root)

    # ----- work ---------------------------------------------------------------------------
    def run_part(self, ctx: PartContext) -> pa.Table:
        from engine.roundtrip.orchestrate import run_roundtrip
        from engine.roundtrip.task_parts import task_part_path
        from engine.roundtrip.tasks import TASK_SCHEMA

        tasks = pq.read_table(task_part_path(ctx.run_root, ctx.part.index), schema=TASK_SCHEMA).to_pylist()
        return run_roundtrip(tasks, self.params)

    def console_lines(self, run: "RunDirectory", counts: dict[str, Any]) -> list[str]:
        from engine.roundtrip.console import roundtrip_lines

        return roundtrip_lines(run.root / self.directory)

    def report_section(self, ctx: Any) -> tuple[str, str, str] | None:
        from engine.roundtrip.report import section_html

        body = section_html(ctx.data.root, ctx.data.manifest.signatures)
        return None if body is None else ("roundtrip", "Execution round trip", body)

    def signatures(self, task: StageTask, prepass: dict[str, Any]) -> dict[str, Any]:
        from engine.roundtrip.section import signatures

        return signatures(self.params)
