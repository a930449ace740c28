"""Stage `noise`: synthetic predictions per sample (see engine.noise for the method).

One task (`noise`); its rows are read by the score stage for the same part, which scores
them like predictions with the noise kind in the `noise` column.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from engine.records import NOISE_SCHEMA
from engine.stages.base import PartContext, Stage, StageTask


class NoiseStage(Stage):
    name = "noise"
    section = "noise"
    params_class = "engine.noise:NoiseParams"
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
        if params.tokenizer is None and "generate" in config.stages:
            from engine.errors import ConfigError

            names = [g.generator_name for g in config.section("generate").generators]
            missing = [n for n in names if n not in params.generator_tokenizers]
            if missing:
                raise ConfigError(
                    f"noise.generator_tokenizers: no tokenizer for generator(s) {missing} and no default noise.tokenizer; "
                    "add them to noise.generator_tokenizers or set noise.tokenizer"
                )

    def tasks(self, config: Any) -> list[StageTask]:
        return [StageTask(self.name, "noise")]

    def signatures(self, config: Any, task: StageTask, prepass: dict[str, Any]) -> dict[str, Any]:
        from engine.noise import signature

        params = config.section("noise")
        generators = None
        if "generate" in config.stages:
            generators = [g.generator_name for g in config.section("generate").generators]
        return {"noise": signature(params, generators)}

    def run_part(self, ctx: PartContext) -> pa.Table:
        from engine.noise import make_noise

        samples = ctx.input_table()
        self.require_columns(samples, "the part's samples")
        return make_noise(samples, ctx.config.section("noise"))
