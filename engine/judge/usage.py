"""Tokens and cost of the judges' calls, per setup and sample language (RUN/judge_analysis/usage.parquet).

Keyed as the agreement table (language, judge, task, strategy, prompt language, reference), so
the report shows them beside each kappa. A call's tokens are on every candidate row of its file
(the generators share the call): each (file, setup) is counted once. Cost is the tokens at the
judge's `price_per_million` (null without prices); failed calls cost nothing.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa

from engine.io.atomic import write_parquet_atomic
from engine.judge.analysis import OUTPUT_DIR
from engine.llm.http_budget import cost_of

KEY = ("language", "judge", "task", "strategy", "prompt_language", "reference")
USAGE_SCHEMA = pa.schema([
    ("language", pa.string()), ("judge", pa.string()), ("task", pa.string()), ("strategy", pa.string()),
    ("prompt_language", pa.string()), ("reference", pa.string()), ("calls", pa.int64()), ("prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()), ("cost", pa.float64()),
])


def usage_rows(judgments: pa.Table, prices: dict[str, Any]) -> list[dict[str, Any]]:
    """prices: task -> price_per_million (or None)."""
    columns = [*KEY, "file_id", "calls", "prompt_tokens", "completion_tokens"]
    totals: dict[tuple, dict[str, Any]] = {}
    seen = set()
    for row in judgments.select(columns).to_pylist():
        key = tuple(row[k] for k in KEY)
        if (key, row["file_id"]) in seen:
            continue
        seen.add((key, row["file_id"]))
        total = totals.setdefault(key, {**dict(zip(KEY, key)), "calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
        for name in ("calls", "prompt_tokens", "completion_tokens"):
            total[name] += int(row[name] or 0)
    out = []
    for key in sorted(totals):
        total = totals[key]
        price = prices.get(total["task"])
        total["cost"] = cost_of(total["prompt_tokens"], total["completion_tokens"], price) if price else None
        out.append(total)
    return out


def write_usage(run_root: str | Path, judges: Sequence[Any], judgments: pa.Table) -> None:
    prices = {judge.task_name(): judge.price_per_million for judge in judges}
    table = pa.Table.from_pylist(usage_rows(judgments, prices), schema=USAGE_SCHEMA)
    write_parquet_atomic(Path(run_root) / OUTPUT_DIR / "usage.parquet", table)
