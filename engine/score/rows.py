"""What a part of the score stage scores and writes: its items (each sample's prediction, then its
noise or perturbed texts) and the rows of the score table, error rows included.

Rows of items without a prediction (generation failed) are error rows under the scorer's own
metric names and variants, with NaN values and the reason in `error`.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Iterator, Mapping, Sequence

import pyarrow as pa

from engine.items import ScoreItem, ScoreRow
from engine.kinds import CANDIDATES
from engine.records import SCORE_SCHEMA


# ----- items --------------------------------------------------------------------------------
def score_items(samples: pa.Table, extra_predictions: Mapping[str, list[dict[str, Any]]]) -> Iterator[ScoreItem]:
    """Every item to score: each sample's prediction, then its noise (or perturbed) predictions.

    extra_predictions: sample_id -> rows with `noise` (the score rows' noise value) and `prediction`.
    """
    for row in samples.to_pylist():
        common = dict(
            sample_id=row["sample_id"],
            file_id=row["file_id"],
            language=row["language"],
            generator=row.get("generator"),
            source=row["source"],
            comment_start=row["comment_start"],
            comment_end=row["comment_end"],
            reference=row["reference"],
            prime=row.get("prime") or "",
        )
        yield ScoreItem(noise="none", prediction=row.get("prediction"), **common)  # type: ignore[arg-type]
        for extra in extra_predictions.get(row["sample_id"], []):
            yield ScoreItem(noise=extra["noise"], prediction=extra["prediction"], **common)


def group_by_sample(rows: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(row["sample_id"], []).append(row)
    return out


def generation_errors(samples: pa.Table) -> dict[str, str]:
    """sample_id -> why it has no prediction, for rows whose generation failed."""
    if "generation_error" not in samples.column_names:
        return {}
    return {
        r["sample_id"]: f"no prediction: {r['generation_error']}"
        for r in samples.select(["sample_id", "generation_error"]).to_pylist()
        if r["generation_error"]
    }


def part_items(ctx: Any, stage: Any) -> tuple[list[ScoreItem], dict[str, str]]:
    """Every item of the part in scoring order, and why items without a prediction lack one.
    ctx: the part's engine.stages.base.PartContext; stage: the score stage (its input columns)."""
    samples = ctx.input_table()
    stage.require_columns(samples, "the part's samples")
    extra: list[dict[str, Any]] = []
    for provider in ctx.providers_of(CANDIDATES):
        extra.extend(provider.as_candidates(ctx.stage_output(provider.name)).to_pylist())
    items = list(score_items(samples, group_by_sample(extra)))
    missing = any(item.prediction is None for item in items)
    return items, generation_errors(samples) if missing else {}


def part_table(scorer: Any, items: Sequence[ScoreItem], reasons: Mapping[str, str], scorer_label: str | None) -> pa.Table:
    """The part's score table: the scorer's rows of items with a prediction, then error rows."""
    ready = [item for item in items if item.prediction is not None]
    missing = [item for item in items if item.prediction is None]
    rows = scorer.score(ready) + missing_prediction_rows(scorer, missing, reasons)
    return rows_to_table(rows, {item.sample_id: item for item in items}, scorer_label)


def rows_to_table(rows: Sequence[ScoreRow], items_by_id: Mapping[str, ScoreItem], scorer_label: str | None) -> pa.Table:
    columns: dict[str, list[Any]] = {name: [] for name in SCORE_SCHEMA.names}
    for row in rows:
        item = items_by_id[row.sample_id]
        columns["sample_id"].append(row.sample_id)
        columns["generator"].append(item.generator)
        columns["language"].append(item.language)
        columns["noise"].append(row.noise)
        columns["metric"].append(row.metric)
        columns["scorer"].append(row.scorer if scorer_label is None else scorer_label)
        columns["context"].append(row.context)
        columns["variant"].append(row.variant)
        columns["value"].append(float(row.value))
        columns["signature"].append(row.signature)
        columns["error"].append(row.error)
    return pa.table(columns, schema=SCORE_SCHEMA)


def missing_prediction_rows(scorer: Any, items: Sequence[ScoreItem], reasons: Mapping[str, str]) -> list[ScoreRow]:
    """Error rows with the scorer's real metric names and variants for items without a prediction.

    The rows' shape comes from scoring an empty prediction; every value is then replaced by NaN
    and the reason, so a missing prediction never looks like a score.
    """
    if not items:
        return []
    stand_ins = [replace(item, prediction="") for item in items]
    rows = scorer.score(stand_ins)
    return [
        row._replace(value=float("nan"), error=reasons.get(row.sample_id) or "no prediction")
        for row in rows
    ]
