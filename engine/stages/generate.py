"""Stage `generate`: FIM completion per generator (see engine.generate.stage for the method).

One task per generator (`generate-<name>`), model-major. The corpus pre-pass computes the
generation limit (mean + 3 std of the reference token lengths over every file of the run),
so every part generates under the same limit. When the config has `labels:`, expert labels
are joined to the generated rows by (file_id, generator).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa

from engine.records import GENERATION_SCHEMA
from engine.stages.base import PartContext, Stage, StageTask


class GenerateStage(Stage):
    name = "generate"
    section = "generate"
    params_class = "engine.generate.stage:GenerateSection"
    directory = "generations"
    schema = GENERATION_SCHEMA
    input_columns = ("sample_id", "file_id", "source", "comment_start", "comment_end", "reference")

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> Any:
        from engine.generate.stage import GenerateSection

        return GenerateSection.from_mapping(raw, where=where)

    def check_config(self, config: Any) -> None:
        from engine.runtime import check_model_name

        for i, g in enumerate(config.section("generate").generators):
            check_model_name(g.model, f"generate.generators[{i}].model")
            if g.tokenizer_name != g.model:
                check_model_name(g.tokenizer_name, f"generate.generators[{i}].tokenizer", kind="tokenizer")

    def tasks(self, config: Any) -> list[StageTask]:
        return [
            StageTask(self.name, f"generate-{g.generator_name}", f"generate:{g.model}", i)
            for i, g in enumerate(config.section("generate").generators)
        ]

    def needs_prepass(self, config: Any, task: StageTask) -> bool:
        return True

    def prepass(self, config: Any, task: StageTask, tables: Iterable[pa.Table]) -> dict[str, Any]:
        import logging

        from engine.generate.stage import load_tokenizer

        params = config.section("generate").generators[task.entry]
        files = 0
        lengths: list[int] = []
        tokenizer = None if params.max_new_tokens is not None else load_tokenizer(params.tokenizer_name)
        for table in tables:
            seen: set[str] = set()
            for row in table.select(["file_id", "reference"]).to_pylist():
                if row["file_id"] in seen:
                    continue
                seen.add(row["file_id"])
                files += 1
                if tokenizer is not None:
                    lengths.append(len(tokenizer(row["reference"], add_special_tokens=False)["input_ids"]))
        if params.max_new_tokens is not None:
            limit, source = params.max_new_tokens, "config"
        else:
            if not lengths:
                from engine.errors import StageError

                raise StageError("generate", "no samples to compute the generation limit from; set max_new_tokens")
            mean = sum(lengths) / len(lengths)
            std = math.sqrt(sum((n - mean) ** 2 for n in lengths) / len(lengths))
            limit, source = max(1, math.ceil(mean + 3 * std - 1e-9)), "mean+3std"
        logging.getLogger(__name__).info(
            "generator %s: generation limit %d tokens (%s, %d files)", params.generator_name, limit, source, files
        )
        return {"max_new_tokens": int(limit), "limit_source": source, "generator": params.generator_name, "files": files}

    def signatures(self, config: Any, task: StageTask, prepass: dict[str, Any]) -> dict[str, Any]:
        from engine.generate.stage import signature

        params = config.section("generate").generators[task.entry]
        return {"generate": signature(params, prepass)}

    def run_part(self, ctx: PartContext) -> pa.Table:
        from engine.generate.stage import generate_part

        samples = ctx.input_table()
        self.require_columns(samples, "the part's samples")
        params = ctx.config.section("generate").generators[ctx.part.entry]
        table = generate_part(samples, params, int(ctx.prepass["max_new_tokens"]))
        labels_path = getattr(ctx.config, "labels", None)
        if labels_path:
            from engine.data.labels import join_labels

            table = join_labels(table, labels_path)
        return table
