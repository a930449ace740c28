"""Stage `noise`: synthetic predictions per sample (see engine.noise for the method).

One task (`noise`); its rows are read by the score stage for the same part, which scores
them like predictions with the noise kind in the `noise` column.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from engine.records import NOISE_SCHEMA
from engine.stages.base import CANDIDATES, SAMPLES, PartContext, Stage, StageTask


class NoiseStage(Stage):
    name = "noise"
    package = "engine.noise"
    section = "noise"
    params_class = "engine.noise:NoiseParams"
    provides = CANDIDATES
    consumes = (SAMPLES,)
    seeded = True
    path_options = ("tokenizer",)
    directory = "noise"
    schema = NOISE_SCHEMA
    input_columns = ("sample_id", "source", "comment_start", "comment_end", "reference", "prime", "generator")

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> Any:
        from engine.noise import NoiseParams

        return NoiseParams.from_mapping(raw, where=where)

    def check_config(self, config: Any) -> None:
        from engine.runtime import check_model_name

        params = config.section("noise")
        if params.tokenizer is not None:
            check_model_name(params.tokenizer, "noise.tokenizer", kind="tokenizer")
        for generator, name in params.generator_tokenizers.items():
            check_model_name(name, f"noise.generator_tokenizers.{generator}", kind="tokenizer")

    def preflight(self, config: Any) -> str | None:
        """Every generator the stage will see has a tokenizer (engine.preflight.run_generators)."""
        from engine.errors import ConfigError
        from engine.preflight import run_generators

        params = config.section(self.name)
        if params.tokenizer is not None:
            return f"noise: every generator has a tokenizer (default {params.tokenizer})"
        missing = [g for g in run_generators(config) if g is None or g not in params.generator_tokenizers]
        if missing:
            shown = ", ".join("(rows without a generator)" if g is None else repr(g) for g in missing[:10])
            more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
            raise ConfigError(
                f"noise.tokenizer: no tokenizer for generator(s) {shown}{more}; noise draws tokens with each "
                "generator's tokenizer. Set noise.tokenizer (used for every generator not listed) or add each "
                "generator to noise.generator_tokenizers (generator: tokenizer)"
            )
        return "noise: every generator has a tokenizer in noise.generator_tokenizers"

    def tasks(self, config: Any) -> list[StageTask]:
        return [StageTask(self.name, "noise")]

    def signatures(self, config: Any, task: StageTask, prepass: dict[str, Any]) -> dict[str, Any]:
        from engine.noise import signature
        from engine.preflight import generated_names

        return {"noise": signature(config.section(self.name), generated_names(config))}

    def run_part(self, ctx: PartContext) -> pa.Table:
        from engine.noise import make_noise

        samples = ctx.input_table()
        self.require_columns(samples, "the part's samples")
        return make_noise(samples, ctx.config.section("noise"))
