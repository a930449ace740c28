"""Stage `judge`: LLM judges label every candidate comment (engine/judge/ holds the domain code).

One task per configured judge (named from its complete resolved options); within a part,
one call per (file, strategy, prompt language) with all generators' candidates. Output:
RUN/judgments/, one row per (file, generator, judge, strategy, prompt language), each linking
the rendered prompt(s) of its call(s) in RUN/judge_prompts/ (content-addressed, stored once).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import pyarrow as pa

from engine.errors import ConfigError
from engine.judge.params import JudgeParams, JudgeSection
from engine.judge.section import check_secrets_set, check_section, judgment_signature, resolve_prompt_packs, section_model_needs
from engine.records import JUDGMENT_SCHEMA
from engine.stages.base import JUDGMENTS, SAMPLES, Analyzes, PartContext, PartStage, Rates, ReportSection, StageTask

if TYPE_CHECKING:
    from engine.io.rundir import RunDirectory


class JudgeStage(PartStage[JudgeSection, JudgeParams], Rates, Analyzes, ReportSection):
    name = "judge"
    package = "engine.judge"
    section = "judge"
    params_class = "engine.judge.params:JudgeSection"
    provides = JUDGMENTS
    rates = (("calls", "calls/s"), ("completion_tokens", "tokens/s"))
    consumes = (SAMPLES,)
    # Not `seeded`: a judge keeps its own seed (default 42, the study's) whatever the run seed,
    # so that a sweep over the run seed reuses the same judge tasks; the seed only matters
    # when a judge samples (temperature > 0).
    directory = "judgments"
    schema = JUDGMENT_SCHEMA
    input_columns = ("sample_id", "file_id", "language", "source", "comment_start", "comment_end", "reference",
                     "generator", "prime", "prediction")

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> JudgeSection:
        # Relative model paths (./, ../) are already resolved against the config's folder.
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{where}: got {raw!r}; allowed: a mapping with key 'judges'")
        return JudgeSection.from_mapping(resolve_prompt_packs(raw, base_dir), where=where)

    def check_config(self) -> None:
        check_section(self.params)

    def preflight(self) -> str | None:
        return check_secrets_set(self.params)

    def model_needs(self) -> list[Any]:
        return section_model_needs(self.params, self.name)

    def tasks(self) -> list[StageTask[JudgeParams]]:
        section: JudgeSection = self.params
        return [
            StageTask(self.name, judge.task_name(), model_key=f"{judge.backend}:{judge.model}", entry=i, params=judge)
            for i, judge in enumerate(section.judges)
        ]

    def signatures(self, task: StageTask[JudgeParams], prepass: dict[str, Any]) -> dict[str, Any]:
        """The judge's model identity (local backends), backend, decoding and prompt setup."""
        return {"judgment": judgment_signature(task.params)}

    def run_part(self, ctx: PartContext[JudgeParams]) -> pa.Table:
        from engine.judge.chat_backend import part_backend
        from engine.judge.judging import judge_table

        table = ctx.input_table()
        self.require_columns(table, "sample table")
        part = ctx.part
        backend = part_backend(part.params, self.params.budget, ctx.run_root, part.task, part.index, part.entry)
        return judge_table(table, part.params, part.task, backend, prompt_root=ctx.run_root)

    def analyze(self, run: "RunDirectory") -> None:
        from engine.judge.adapter_table import write_judges_table
        from engine.judge.analysis import write_analysis
        from engine.judge.usage import write_usage

        samples, judgments = run.read_samples(["sample_id", "label", "error_codes"]), run.read_parts(f"{self.name}/", JUDGMENT_SCHEMA)
        write_analysis(run.root, samples, judgments)
        write_usage(run.root, self.params.judges, judgments)  # tokens and cost beside each kappa
        write_judges_table(run.root, self.params.judges, samples, judgments)  # judges with `lora:`

    def report_section(self, ctx: Any) -> tuple[str, str, str] | None:
        from engine.judge.report import judge_section

        return judge_section(ctx.data.root)
