"""Stage `noise`: synthetic predictions per sample (see engine.noise.method for the method).

One task (`noise`); its rows are read by the score stage for the same part, which scores
them like predictions with the noise kind in the `noise` column.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from engine.noise.params import NoiseParams
from engine.records import NOISE_SCHEMA
from engine.stages.base import CANDIDATES, SAMPLES, CandidateSource, PartContext, PartStage, StageTask


class NoiseStage(PartStage[NoiseParams, None], CandidateSource):
    name = "noise"
    package = "engine.noise"
    section = "noise"
    params_class = "engine.noise.params:NoiseParams"
    provides = CANDIDATES
    consumes = (SAMPLES,)
    seeded = True
    path_options = ("tokenizer",)
    directory = "noise"
    schema = NOISE_SCHEMA
    input_columns = ("sample_id", "source", "comment_start", "comment_end", "reference", "prime", "generator")

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> NoiseParams:
        return NoiseParams.from_mapping(raw, where=where)

    def check_config(self) -> None:
        from engine.runtime import check_model_name

        params = self.params
        if params.tokenizer is not None:
            check_model_name(params.tokenizer, "noise.tokenizer", kind="tokenizer")
        for generator, name in params.generator_tokenizers.items():
            check_model_name(name, f"noise.generator_tokenizers.{generator}", kind="tokenizer")

    def preflight(self) -> str | None:
        """Every generator the stage will see has a tokenizer (the input is read only when no
        default tokenizer covers every generator)."""
        from engine.data.reader import sample_generators
        from engine.errors import ConfigError

        params = self.params
        if params.tokenizer is not None:
            return f"noise: every generator has a tokenizer (default {params.tokenizer})"
        missing = [g for g in sample_generators(self.samples) if g is None or g not in params.generator_tokenizers]
        if missing:
            shown = ", ".join("(rows without a generator)" if g is None else repr(g) for g in missing[:10])
            more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
            raise ConfigError(
                f"noise.tokenizer: no tokenizer for generator(s) {shown}{more}; noise draws tokens with each "
                "generator's tokenizer. Set noise.tokenizer (used for every generator not listed) or add each "
                "generator to noise.generator_tokenizers (generator: tokenizer)"
            )
        return "noise: every generator has a tokenizer in noise.generator_tokenizers"

    def tasks(self) -> list[StageTask[None]]:
        return [StageTask(self.name, "noise")]

    def signatures(self, task: StageTask[None], prepass: dict[str, Any]) -> dict[str, Any]:
        from engine.noise.method import signature

        generated = self.samples.generated
        return {"noise": signature(self.params, None if generated is None else list(generated))}

    def run_part(self, ctx: PartContext[None]) -> pa.Table:
        from engine.noise.method import make_noise

        samples = ctx.input_table()
        self.require_columns(samples, "the part's samples")
        return make_noise(samples, self.params)
