"""Stage `generate`: FIM completion of each file's removed comment by each configured generator
(engine.generate.fim), one task per generator, model-major."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa

from engine.errors import ConfigError
from engine.generate.fim import generate_part, plan_generation, signature
from engine.generate.params import GenerateSection
from engine.records import GENERATION_SCHEMA
from engine.stages.base import MODEL_PATH_OPTIONS, SAMPLES, PartContext, PartStage, Rates, Reusable, StageTask


# ----- the stage: one task per generator, model-major (engine.stages.base) -----------------
class GenerateStage(PartStage, Reusable, Rates):
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

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> Any:
        return GenerateSection.from_mapping(raw, where=where)

    def with_run_seed(self, options: dict[str, Any], seed: int) -> dict[str, Any]:
        """Each generator's seed defaults to the run's."""
        generators = options.get("generators")
        if isinstance(generators, list):
            options["generators"] = [dict(g, seed=g.get("seed", seed)) if isinstance(g, dict) else g for g in generators]
        return options

    @property
    def row_generators(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(g.generator_name for g in self.params.generators)

    def check_config(self) -> None:
        from engine.params import error_messages, raise_all
        from engine.runtime import check_model_name

        errors: list[str] = []  # every generator's missing model at once
        for i, g in enumerate(self.params.generators):
            try:
                check_model_name(g.model, f"generate.generators[{i}].model")
                if g.tokenizer_name != g.model:
                    check_model_name(g.tokenizer_name, f"generate.generators[{i}].tokenizer", kind="tokenizer")
            except ConfigError as exc:
                errors.extend(error_messages(exc))
        raise_all(errors)

    def model_needs(self) -> list[Any]:
        from engine.runtime.memory import ModelNeed

        return [ModelNeed(g.model, self.name, f"generate.generators[{i}]", g.backend, g.dtype, g.device, g.max_model_len,
                          g.gpu_memory_utilization, g.tensor_parallel_size)
                for i, g in enumerate(self.params.generators)]

    def tasks(self) -> list[StageTask]:
        return [
            StageTask(self.name, f"generate-{g.generator_name}", f"generate:{g.model}", i, params=g)
            for i, g in enumerate(self.params.generators)
        ]

    def needs_prepass(self, task: StageTask) -> bool:
        return True

    def prepass(self, task: StageTask, tables: Iterable[pa.Table]) -> dict[str, Any]:
        return plan_generation(tables, task.params)

    def signatures(self, task: StageTask, prepass: dict[str, Any]) -> dict[str, Any]:
        """Model and tokenizer identities, the dtype actually used, card, prime rule, decoding, seed, limit."""
        return {"generation": signature(task.params, prepass)}

    def reuse_identity(self, task: StageTask, prepass: dict[str, Any]) -> str:
        from engine.generate.reuse import generate_identity

        return generate_identity(task.params, prepass)

    def reuse_part(self, ctx: PartContext, sources: Any) -> tuple[pa.Table, dict[str, int], int] | None:
        from engine.generate.reuse import generate_part as reuse_generate_part

        return reuse_generate_part(self, ctx, sources)

    def run_part(self, ctx: PartContext) -> pa.Table:
        samples = ctx.input_table()
        self.require_columns(samples, "the part's samples")
        params = ctx.part.params
        table = generate_part(samples, params, int(ctx.prepass["max_new_tokens"]))
        labels_path = ctx.settings.labels
        if labels_path:
            from engine.generate.labels import join_labels

            table = join_labels(table, labels_path)
        return table
