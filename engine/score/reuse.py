"""Reuse in the score stage, its `Reusable` capability (identity and row matching): a part's
items split into rows taken from earlier runs and rows to compute, laid out as a fresh part's.

The unit is (item, segment): a segment is one context setting of an embedding or likelihood
entry, or one metric of a lexical entry. A segment of an item is reused when the earlier run
has every row of it (each variant), none an error row, each with the signature this run would
write. The segments left are computed by the entry's scorer restricted to them (same options
otherwise, so the same numbers); a likelihood item with a segment left is computed whole.

Row order of a fresh part (what the merge reproduces, see the scorers' `score`): embedding:
context (config order), then item (part order), then variant; lexical and likelihood: item,
then metric / context, then variant / direction; then the error rows of items without a
prediction, always computed. A part with two items of one (sample_id, noise) is computed whole.
"""
from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Mapping, Sequence

import pyarrow as pa

from engine.items import ScoreRow
from engine.reuse.keys import digest, item_hash, model_identities
from engine.reuse.sources import ReuseSources, ScoreHit

logger = logging.getLogger(__name__)

# kind -> the option that lists an entry's segments; kinds absent here are always computed.
SEGMENT_OPTION = {"embedding": "contexts", "likelihood": "contexts", "lexical": "metrics"}
Key = tuple[str, str, str]  # (metric, context, variant)
# Kinds whose scorer can be restricted to some segments without loading its model again
# (lexical has none; the embedding encoder is shared). A likelihood item with any segment
# left is computed whole by the entry's own scorer.
RESTRICTABLE = ("embedding", "lexical")


def _layout(spec: Any, scorer: Any) -> list[Key] | None:
    """Every (metric, context, variant) one item gets, in a fresh part's order (None: unknown)."""
    p = spec.params.to_dict()
    if spec.kind == "embedding":
        if p["all_layers"]:
            return None  # its variants come from the loaded model's layer count
        variants = ["P", "R", "F"] + (["mean-cos"] if p["mean_pool"] else [])
        return [("bertscore", c, v) for c in p["contexts"] for v in variants]
    if spec.kind == "likelihood":
        return [(scorer.metric, c, d) for c in p["contexts"] for d in p["directions"]]
    if spec.kind == "lexical":
        return [(m, "", v) for m in p["metrics"] for v in (("P", "R", "F") if m == "rougeL" else ("score",))]
    return None


def score_identity(spec: Any, prepass: Mapping[str, Any]) -> str:
    """Identity of a `score.scorers` entry: kind, number-changing options, models, pre-pass."""
    from engine.score.params import MODEL_OPTIONS, NON_IDENTITY_OPTIONS
    from engine.stages.base import prepass_hash

    options = {k: v for k, v in spec.params.to_dict(identity=True).items() if k not in NON_IDENTITY_OPTIONS}
    return digest({
        "stage": "score",
        "kind": spec.kind,
        "options": options,
        "models": model_identities(options, MODEL_OPTIONS),
        "prepass": prepass_hash(prepass) if prepass else "",
    })


def _segment(kind: str, key: Key) -> str:
    return key[0] if kind == "lexical" else key[1]


def _expected_signature(scorer: Any, signatures: dict[str, str], key: Key, language: str) -> str | None:
    metric, context, _ = key
    for name in (f"{metric}/{context}", context, f"{metric}/{language}"):
        if name and name in signatures:
            return signatures[name]
    if hasattr(scorer, "signature"):  # lexical: per language, also outside the study languages
        return scorer.signature(metric, language)
    return None


def _restricted_scorer(spec: Any, scorer: Any, segments: Sequence[str], prepass: dict[str, Any]) -> Any:
    """The entry's scorer for some of its segments; it shares the loaded model where it can."""
    from engine.score.corpus import entry_scorer

    option = SEGMENT_OPTION[spec.kind]
    if tuple(segments) == tuple(spec.params.to_dict()[option]):
        return scorer
    # The run's corpus idf was counted over every context of the entry. The loaded encoder does
    # not depend on the contexts scored: the model registry's key leaves them out, so both
    # scorers share one loaded model.
    return entry_scorer(replace(spec, params=replace(spec.params, **{option: tuple(segments)})), prepass, scorer.stage)


def score_part(stage: Any, ctx: Any, sources: ReuseSources) -> tuple[pa.Table, dict[str, int], int] | None:
    """(table, rows reused per earlier run, rows computed), or None when nothing can be reused."""
    from engine.score.corpus import entry_scorer
    from engine.score.rows import missing_prediction_rows, part_items, rows_to_table, score_items

    spec = ctx.part.params
    scorer = entry_scorer(spec, ctx.prepass, stage.name)
    layout = _layout(spec, scorer)
    if layout is None:
        return None
    index = sources.score_index(score_identity(spec, ctx.prepass), score_items)
    if not index:
        return None
    items, reasons = part_items(ctx, stage)
    ready = [item for item in items if item.prediction is not None]
    missing = [item for item in items if item.prediction is None]
    if len({(i.sample_id, i.noise) for i in ready}) != len(ready):
        return None
    signatures = scorer.signatures()
    segments = list(dict.fromkeys(_segment(spec.kind, k) for k in layout))
    reused: list[tuple[ScoreRow, str]] = []
    needs: list[tuple[str, ...]] = []
    for item in ready:
        content = item_hash(item)
        found: dict[str, list[tuple[ScoreRow, str]]] = {s: [] for s in segments}
        complete = {s: True for s in segments}
        for key in layout:
            seg = _segment(spec.kind, key)
            hit: ScoreHit | None = index.get((content, *key))
            if hit is None or hit.signature != _expected_signature(scorer, signatures, key, item.language):
                complete[seg] = False
                continue
            row = ScoreRow(item.sample_id, item.noise, key[0], "", key[1], key[2], hit.value, hit.signature)
            found[seg].append((row, hit.run))
        if spec.kind not in RESTRICTABLE and not all(complete.values()):
            complete = {s: False for s in segments}  # computed whole: one loaded model, never two
        needs.append(tuple(s for s in segments if not complete[s]))
        for seg in segments:
            if complete[seg]:
                reused.extend(found[seg])
    if not reused:
        return None
    # One scorer call per distinct set of segments still needed (usually one or two).
    computed: list[ScoreRow] = []
    for wanted in dict.fromkeys(n for n in needs if n):
        subset = [item for item, n in zip(ready, needs) if n == wanted]
        computed.extend(_restricted_scorer(spec, scorer, wanted, ctx.prepass).score(subset))
    position = {(item.sample_id, item.noise): i for i, item in enumerate(ready)}
    rank = {key: i for i, key in enumerate(layout)}
    contexts = {c: i for i, c in enumerate(dict.fromkeys(k[1] for k in layout))}
    all_rows = [r for r, _ in reused] + computed
    if any((r.metric, r.context, r.variant) not in rank for r in computed):
        logger.warning("%s: a computed row falls outside the expected layout; computing the part whole", ctx.part.key)
        return None

    def order(row: ScoreRow) -> tuple[int, ...]:
        key = (row.metric, row.context, row.variant)
        item = position[(row.sample_id, row.noise)]
        if spec.kind == "embedding":
            return (contexts[row.context], item, rank[key])
        return (item, rank[key])

    rows = sorted(all_rows, key=order) + missing_prediction_rows(scorer, missing, reasons)
    items_by_id = {item.sample_id: item for item in items}
    per_run: dict[str, int] = {}
    for _, run in reused:
        per_run[run] = per_run.get(run, 0) + 1
    table = rows_to_table(rows, items_by_id, spec.scorer_label)
    return table, per_run, table.num_rows - len(reused)
