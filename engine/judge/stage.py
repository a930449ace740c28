"""Stage `judge`: LLM judges label every candidate comment (engine/judge/ holds the domain code).

One task per configured judge (named from its complete resolved options); within a part,
one call per (file, strategy, prompt language) with all generators' candidates. Output:
RUN/judgments/, one row per (file, generator, judge, strategy, prompt language), each linking
the rendered prompt(s) of its call(s) in RUN/judge_prompts/ (content-addressed, stored once).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import pyarrow as pa

from engine.errors import ConfigError
from engine.judge.config import JudgeSection
from engine.judge.section import check_section, judgment_signature, resolve_prompt_packs
from engine.records import JUDGMENT_SCHEMA
from engine.stages.base import JUDGMENTS, SAMPLES, Analyzes, PartContext, PartStage, Rates, ReportSection, StageTask


class JudgeStage(PartStage, Rates, Analyzes, ReportSection):
    name = "judge"
    package = "engine.judge"
    section = "judge"
    params_class = "engine.judge.config:JudgeSection"
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
        """Every HTTP judge's API key and provider secrets are in the environment (the variables
        are not in the config: a missing one would otherwise fail every judge part of the run)."""
        from engine.llm.http_backend import check_secrets

        judges = [(i, j) for i, j in enumerate(self.params.judges) if j.backend == "http"]
        for i, judge in judges:
            check_secrets(judge, f"judge.judges[{i}]")
        named = sorted({n for _i, j in judges for n in (j.api_key_env, *j.provider_secret_env.values()) if n})
        return f"judge: environment variables {', '.join(named)} are set" if named else None

    def model_needs(self) -> list[Any]:
        from engine.runtime.memory import ModelNeed

        return [ModelNeed(j.model, self.name, f"judge.judges[{i}]", j.backend, j.dtype, "auto", j.max_model_len,
                          j.gpu_memory_utilization)
                for i, j in enumerate(self.params.judges) if j.backend != "http"]

    def tasks(self) -> list[StageTask]:
        section: JudgeSection = self.params
        return [
            StageTask(self.name, judge.task_name(), model_key=f"{judge.backend}:{judge.model}", entry=i, params=judge)
            for i, judge in enumerate(section.judges)
        ]

    def signatures(self, task: StageTask, prepass: dict[str, Any]) -> dict[str, Any]:
        """The judge's model identity (local backends), backend, decoding and prompt setup."""
        return {"judgment": judgment_signature(task.params)}

    def run_part(self, ctx: PartContext) -> pa.Table:
        from engine.judge.judging import judge_table
        from engine.judge.loading import get_chat_backend

        table = ctx.input_table()
        self.require_columns(table, "sample table")
        section = self.params
        judge = ctx.part.params
        budget = None
        if judge.backend == "http":  # paid answers cached as they come, caps checked before each call
            from engine.llm.http_budget import Caps, JudgeBudget

            budget = JudgeBudget(ctx.run_root, ctx.part.task, ctx.part.index, Caps.of(judge, f"judge.judges[{ctx.part.entry}]"),
                                 Caps.of(section.budget, "judge.budget"), judge.price_per_million)
        return judge_table(table, judge, ctx.part.task, get_chat_backend(judge, budget), prompt_root=ctx.run_root)

    def analyze(self, run: Any) -> None:
        from engine.judge.adapter_table import write_judges_table
        from engine.judge.analysis import write_analysis

        samples, judgments = run.read_samples(["sample_id", "label", "error_codes"]), run.read_parts(f"{self.name}/", JUDGMENT_SCHEMA)
        write_analysis(run.root, samples, judgments)
        from engine.judge.usage import write_usage

        write_usage(run.root, self.params.judges, judgments)  # tokens and cost beside each kappa
        write_judges_table(run.root, self.params.judges, samples, judgments)  # judges with `lora:`

    def report_section(self, ctx: Any) -> tuple[str, str, str] | None:
        from engine.judge.report import judge_section

        return judge_section(ctx.data.root)
