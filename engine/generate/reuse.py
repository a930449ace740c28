"""Reuse in the generate stage, its `Reusable` capability (identity and row matching).

A file's generation is taken from an earlier run when the generator's identity (options, model and tokenizer content, limit, signature) and the sample
row it is generated from are equal; the other files of the part are generated as usual.

A fresh part has one row per file, in the order the files first appear in the part; the
merge keeps that order. Reused rows are rebuilt from this run's sample row, with only what
generation produced taken from the earlier run. Rows with a generation error are generated again.
"""
from __future__ import annotations

from typing import Any, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from engine.generate.fim import first_row_per_file, output_row, signature
from engine.generate.fim import generate_part as generate
from engine.generate.labels import with_labels
from engine.reuse.keys import digest, generation_input_hash, model_identities
from engine.reuse.sources import ReuseSources

# Generator options that only schedule work (they never change a generated token).
GENERATE_SCHEDULING_OPTIONS = frozenset({"batch_size", "gpu_memory_utilization"})
GENERATED_FIELDS = ("prime", "prediction", "raw_generation", "prompt_tokens", "generated_tokens")


def generate_identity(params: Any, plan: Mapping[str, Any]) -> str:
    """Identity of a generator: its options but scheduling ones, models, limit and signature."""
    options = {k: v for k, v in params.to_dict().items() if k not in GENERATE_SCHEDULING_OPTIONS}
    return digest({
        "stage": "generate",
        "options": options,
        "models": model_identities({"model": params.model, "tokenizer": params.tokenizer_name}, ("model", "tokenizer")),
        "max_new_tokens": plan.get("max_new_tokens"),
        "signature": signature(params, dict(plan)),
    })


def generate_part(stage: Any, ctx: Any, sources: ReuseSources) -> tuple[pa.Table, dict[str, int], int] | None:
    """(table, rows reused per earlier run, rows generated), or None when nothing can be reused."""
    from engine.records import GENERATION_SCHEMA

    params = ctx.part.params
    index = sources.generation_index(generate_identity(params, ctx.prepass))
    if not index:
        return None
    samples = ctx.input_table()
    rows = first_row_per_file(samples)
    hits = [index.get(generation_input_hash(row)) for row in rows]
    if not any(hits):
        return None
    todo = [row["file_id"] for row, hit in zip(rows, hits) if hit is None]
    generated: dict[str, dict[str, Any]] = {}
    if todo:
        subset = samples.filter(pc.is_in(samples["file_id"], value_set=pa.array(todo)))
        for out in generate(subset, params, int(ctx.prepass["max_new_tokens"])).to_pylist():
            generated[out["file_id"]] = out
    merged: list[dict[str, Any]] = []
    per_run: dict[str, int] = {}
    for row, hit in zip(rows, hits):
        if hit is None:
            merged.append(generated[row["file_id"]])
            continue
        earlier, run = hit
        out = output_row(row, params.generator_name)
        out.update({name: earlier[name] for name in GENERATED_FIELDS})
        merged.append(out)
        per_run[run] = per_run.get(run, 0) + 1
    table = with_labels(pa.Table.from_pylist(merged, schema=GENERATION_SCHEMA), ctx.settings.labels)
    return table, per_run, len(todo)
