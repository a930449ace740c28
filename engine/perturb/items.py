"""Perturbed texts as score items: what the score stage scores beside predictions and noise.

Every applied perturbation becomes a `ScoreItem` whose prediction is the perturbed scored span
and whose `noise` is `perturb:<target>:<family>`; the reference, prime and file are the
sample's own, so each metric compares the perturbed text with the same reference as the
original. For the reference target one more item per perturbed sample carries the unperturbed
span, `perturb:reference:original`: the reference scored against itself is S(original). For the
prediction target, S(original) is the sample's real row (noise `none`), scored anyway.
"""
from __future__ import annotations

from typing import Any, Iterator

import pyarrow as pa

from engine.items import ScoreItem
from engine.records import PERTURB_ORIGINAL, perturb_noise


def _common(row: dict[str, Any]) -> dict[str, Any]:
    return dict(
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


def perturbation_items(samples: pa.Table, perturbations: pa.Table) -> Iterator[ScoreItem]:
    """Score items of the applied perturbations of `samples` (stage `perturb` rows of the same part).

    Order: samples in input order; per sample the reference original, then each applied
    perturbation in the order of the perturbation table.
    """
    by_sample: dict[str, list[dict[str, Any]]] = {}
    for row in perturbations.select(["sample_id", "target", "family", "applied", "text"]).to_pylist():
        if row["applied"]:
            by_sample.setdefault(row["sample_id"], []).append(row)
    if not by_sample:
        return
    for sample in samples.to_pylist():
        rows = by_sample.get(sample["sample_id"])
        if not rows:
            continue
        common = _common(sample)
        if any(r["target"] == "reference" for r in rows):
            tail = sample["reference"][len(common["prime"]):]
            yield ScoreItem(noise=perturb_noise("reference", PERTURB_ORIGINAL), prediction=tail, **common)
        for r in rows:
            yield ScoreItem(noise=perturb_noise(r["target"], r["family"]), prediction=r["text"], **common)


def items_for_part(ctx: Any, samples: pa.Table) -> Iterator[ScoreItem]:
    """The perturbation items of a score part: none unless the run has a `perturb` stage.

    ctx: the score part's `engine.stages.base.PartContext`; samples: its input table.
    """
    if "perturb" not in ctx.config.stages:
        return iter(())
    return perturbation_items(samples, ctx.stage_output("perturb"))
