"""The score stage's corpus pre-pass: document frequencies for idf over the run's references.

An embedding scorer with `idf: true` counts document frequencies over all unique reference
spans of the run (per context setting) once, before any part; every part uses those counts,
so idf weights never depend on how the work was cut.
"""
from __future__ import annotations

from typing import Any, Iterable

import pyarrow as pa

from engine.score.params import ScorerSpec, get_scorer
from engine.score.rows import score_items
from engine.stages.base import prepass_hash


def needs_corpus_idf(spec: ScorerSpec) -> bool:
    """Whether the entry weights tokens by idf, counted once over the whole run."""
    return spec.kind == "embedding" and bool(spec.params.to_dict().get("idf"))


def count_corpus_idf(spec: ScorerSpec, tables: Iterable[pa.Table], stage: str) -> dict[str, Any]:
    """The pre-pass result (JSON-ready): document frequencies over every part's references,
    the parts streamed one at a time."""
    counts = get_scorer(spec, stage=stage).reference_document_frequencies(score_items(t, {}) for t in tables)
    return {"idf": counts}


def with_corpus_idf(scorer: Any, prepass: dict[str, Any]) -> Any:
    """`scorer` weighting by the run's corpus idf when the entry has a pre-pass."""
    if prepass:
        scorer.use_corpus_idf(prepass["idf"], prepass_hash(prepass))
    return scorer


def entry_scorer(spec: ScorerSpec, prepass: dict[str, Any], stage: str) -> Any:
    """The entry's scorer (built, not loaded) with the run's corpus idf; its models load for `stage`."""
    return with_corpus_idf(get_scorer(spec, stage=stage), prepass)
