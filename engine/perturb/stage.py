"""Stage `perturb`: taxonomy-tied, seeded perturbations of each file's reference comment (and,
optionally, of predictions labelled correct), written to RUN/perturbations/ and scored by the
score stage like noise predictions (see `engine.perturb.scored_rows`)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import pyarrow as pa

from engine.params import option_digest
from engine.perturb.params import PerturbParams
from engine.perturb.perturber import INPUT_COLUMNS, foreign_pool, make_perturbations
from engine.records import PERTURB_SCHEMA
from engine.stages.base import (
    CANDIDATES,
    SAMPLES,
    SCORES,
    SIGNIFICANCE_SETTING,
    Analyzes,
    CandidateSource,
    PartContext,
    PartStage,
    ReportSection,
    ReportSettings,
    StageTask,
    prepass_hash,
)

if TYPE_CHECKING:
    from engine.io.rundir import RunDirectory


class PerturbStage(PartStage[PerturbParams, None], CandidateSource, Analyzes, ReportSection, ReportSettings):
    name = "perturb"
    package = "engine.perturb"
    section = "perturb"
    params_class = "engine.perturb.params:PerturbParams"
    provides = CANDIDATES
    consumes = (SAMPLES,)
    seeded = True
    path_options = ()
    directory = "perturbations"
    schema = PERTURB_SCHEMA
    input_columns = INPUT_COLUMNS

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> PerturbParams:
        return PerturbParams.from_mapping(raw or {}, where=where)

    def tasks(self) -> list[StageTask[None]]:
        params = self.params
        digest = option_digest(params.to_dict())
        return [StageTask(self.name, f"perturb-{digest}")]

    def needs_prepass(self, task: StageTask[None]) -> bool:
        return "foreign_comment" in self.params.families

    def prepass(self, task: StageTask[None], tables: Iterable[pa.Table]) -> dict[str, Any]:
        params = self.params
        return {"foreign_pool": foreign_pool(tables, params.seed, params.foreign_pool_size)}

    def run_part(self, ctx: PartContext[None]) -> pa.Table:
        table = ctx.input_table()
        self.require_columns(table, f"part {ctx.part.index}")
        return make_perturbations(table, self.params, ctx.prepass)

    def as_candidates(self, table: pa.Table) -> pa.Table:
        """The perturbations that are scored (engine.perturb.scored_rows), as (sample_id, noise, prediction)."""
        from engine.perturb.scored_rows import scored_perturbations

        return super().as_candidates(scored_perturbations(table))

    def analyze(self, run: "RunDirectory") -> None:
        """RUN/sensitivity.parquet and RUN/significance.parquet from the committed scores (streamed)."""
        if not run.layout.prefixes(SCORES):
            return
        from engine.perturb.analysis import write_sensitivity
        from engine.perturb.significance import write_significance

        write_sensitivity(run, self.params)
        write_significance(run, self.params.significance)

    def report_section(self, ctx: Any) -> list[Any]:
        """Perturbation sensitivity and significance (when the run has them)."""
        from engine.perturb.report import perturbation_sections
        from engine.report.section_api import Section

        return perturbation_sections(ctx.data, ctx.fw, Section)

    def report_settings(self, options: dict[str, Any]) -> dict[str, Any]:
        """The recorded `significance` options (correlation, alpha) the sweep's Williams tests use."""
        significance = (options or {}).get("significance") or {}
        return {SIGNIFICANCE_SETTING: {k: significance[k] for k in ("correlation", "alpha") if k in significance}}

    def signatures(self, task: StageTask[None], prepass: dict[str, Any]) -> dict[str, Any]:
        params = self.params
        families = ",".join(params.families)
        return {task.task: f"perturb|families:{families}|seed:{params.seed}|predictions:{params.perturb_predictions}"
                           f"|prepass:{prepass_hash(prepass)}"}
