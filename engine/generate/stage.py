"""Stage `generate`: FIM completion of each file's removed comment by each configured generator
(engine.generate.fim), one task per generator, model-major (engine.generate.section)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa

from engine.generate.fim import generate_part, plan_generation, signature
from engine.generate.labels import with_labels
from engine.generate.params import GenerateParams, GenerateSection, default_generator_seeds
from engine.generate.section import check_section, section_tasks
from engine.generate.section import model_needs as section_model_needs
from engine.records import GENERATION_SCHEMA
from engine.stages.base import MODEL_PATH_OPTIONS, SAMPLES, PartContext, PartStage, Rates, Reusable, StageTask


class GenerateStage(PartStage[GenerateSection, GenerateParams], Reusable, Rates):
    name = "generate"
    package = "engine.generate"
    section = "generate"
    reuse_verb = "generated"
    rates = (("generated_tokens", "tokens/s"),)
    params_class = "engine.generate.params:GenerateSection"
    provides = SAMPLES  # its rows replace the input samples for every later stage
    consumes = (SAMPLES,)
    seeded = True
    path_options = (*MODEL_PATH_OPTIONS, "cards_file")
    directory = "generations"
    schema = GENERATION_SCHEMA
    input_columns = ("sample_id", "file_id", "source", "comment_start", "comment_end", "reference")

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> GenerateSection:
        return GenerateSection.from_mapping(raw, where=where)

    def with_run_seed(self, options: dict[str, Any], seed: int) -> dict[str, Any]:
        """Each generator's seed defaults to the run's."""
        return default_generator_seeds(options, seed)

    @property
    def row_generators(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(g.generator_name for g in self.params.generators)

    def check_config(self) -> None:
        check_section(self.params)

    def model_needs(self) -> list[Any]:
        return section_model_needs(self.params, self.name)

    def tasks(self) -> list[StageTask[GenerateParams]]:
        return section_tasks(self.params, self.name)

    def needs_prepass(self, task: StageTask[GenerateParams]) -> bool:
        return True

    def prepass(self, task: StageTask[GenerateParams], tables: Iterable[pa.Table]) -> dict[str, Any]:
        return plan_generation(tables, task.params)

    def signatures(self, task: StageTask[GenerateParams], prepass: dict[str, Any]) -> dict[str, Any]:
        """Model and tokenizer identities, the dtype actually used, card, prime rule, decoding, seed, limit."""
        return {"generation": signature(task.params, prepass)}

    def reuse_identity(self, task: StageTask[GenerateParams], prepass: dict[str, Any]) -> str:
        from engine.generate.reuse import generate_identity

        return generate_identity(task.params, prepass)

    def reuse_part(self, ctx: PartContext[GenerateParams], sources: Any) -> tuple[pa.Table, dict[str, int], int] | None:
        from engine.generate.reuse import generate_part as reuse_generate_part

        return reuse_generate_part(self, ctx, sources)

    def run_part(self, ctx: PartContext[GenerateParams]) -> pa.Table:
        samples = ctx.input_table()
        self.require_columns(samples, "the part's samples")
        table = generate_part(samples, ctx.part.params, int(ctx.prepass["max_new_tokens"]))
        return with_labels(table, ctx.settings.labels)
