"""Judging the test side with the base model and every adapter, and the cross-language table.

The test side's samples (RUN/finetune/data/test_samples.jsonl) are judged with the same judge
(the examples' strategy and prompt language) once without an adapter and once per adapter:
on vLLM one engine serves them all (adapters per request), on transformers each adapter is
applied with peft. Rows go to RUN/finetune/judgments.parquet, the table to
RUN/finetune/adapter_table.parquet (engine.judge.adapter_table).
"""
from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from engine.finetune.data import OUTPUT_DIR, judge_params_of
from engine.finetune.params import FinetuneParams
from engine.io.atomic import write_parquet_atomic
from engine.records import JUDGMENT_SCHEMA, SAMPLE_SCHEMA

logger = logging.getLogger(__name__)

BASE = "base"
JUDGMENTS = "finetune/judgments.parquet"
TABLE = "finetune/adapter_table.parquet"


def eval_judge(params: FinetuneParams) -> Any:
    judge = judge_params_of(params)
    # enforce_eager and the memory share are vLLM's keys: a transformers judge refuses them
    engine_keys = (dict(enforce_eager=True, gpu_memory_utilization=params.gpu_memory_utilization)
                   if params.eval_backend == "vllm" else {})
    return dataclasses.replace(judge, backend=params.eval_backend, dtype=params.dtype if params.dtype != "auto" else "auto",
                               max_model_len=params.max_model_len, structured=params.structured, name=BASE, **engine_keys)


def test_samples(run_root: str | Path) -> pa.Table:
    path = Path(run_root) / OUTPUT_DIR / "test_samples.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA)


def judge_with_adapters(table: pa.Table, params: FinetuneParams, adapters: dict[str, str]) -> pa.Table:
    """Judgment rows of `table` by the base model (judge `base`) and each adapter (judge = its name)."""
    from engine.judge.chat_backend import get_chat_backend
    from engine.judge.judging import judge_table

    judge = eval_judge(params)
    tables = []
    shared = None
    if params.eval_backend == "vllm" and adapters:  # one engine with LoRA on: the base and every adapter
        shared = get_chat_backend(dataclasses.replace(judge, lora=next(iter(adapters.values()))))
    for name, lora in [(BASE, None), *adapters.items()]:
        this = dataclasses.replace(judge, lora=lora, name=name)
        backend = shared if shared is not None else get_chat_backend(this)
        logger.info("finetune: judging %d test samples with %s", table.num_rows, name)
        tables.append(judge_table(table, this, this.task_name(), backend))
    return pa.concat_tables(tables)


def evaluate(run_root: str | Path, params: FinetuneParams, adapters: dict[str, str]) -> pa.Table:
    from engine.judge.adapter_table import adapter_table

    samples = test_samples(run_root)
    judgments = judge_with_adapters(samples, params, adapters)
    write_parquet_atomic(Path(run_root) / JUDGMENTS, judgments, JUDGMENT_SCHEMA)
    experts = dict(zip(samples.column("sample_id").to_pylist(), samples.column("label").to_pylist()))
    table = adapter_table(judgments, experts, {name: BASE for name in adapters})
    write_parquet_atomic(Path(run_root) / TABLE, table)
    return table


def read_table(run_root: str | Path) -> list[dict[str, Any]]:
    path = Path(run_root) / TABLE
    return pq.read_table(path).to_pylist() if path.is_file() else []
