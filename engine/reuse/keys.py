"""What makes two results the same result: task identities and per-row content hashes.

A result may be taken from an earlier run only when everything it was computed from is equal:
the task's identity (its kind, every option that can change a number, the full identity of every
model and tokenizer, the hash of the task's corpus pre-pass), the content of the scored item
(language, source, comment offsets, reference, prime, prediction, noise kind) and the row's
signature, which must equal the one the new run would write.

Every run records its tasks' identities in its manifest (`reuse_identities`), so a later run
compares digests instead of re-deriving an earlier config. Each reusable stage computes its
own identity (`Reusable.reuse_identity`) with the helpers here; docs/sweeps.md says what is reused.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable, Mapping

from engine.items import ScoreItem

# The sample columns a generation is computed from (the seed derives from file_id).
GENERATION_INPUT_COLUMNS = ("file_id", "language", "source", "comment_start", "comment_end", "reference")


def digest(payload: Any) -> str:
    """sha256 of canonical JSON: the one hashing rule of every reuse key."""
    text = json.dumps(payload, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def model_identities(options: Mapping[str, Any], names: Iterable[str]) -> dict[str, str]:
    from engine.runtime import resolve_model

    out = {}
    for name in names:
        value = options.get(name)
        if isinstance(value, str) and value:
            out[name] = resolve_model(value, "tokenizer" if name == "tokenizer" else "model").identity
    return out


def item_hash(item: ScoreItem) -> str:
    """Content hash of one scored item (what its numbers are computed from)."""
    return digest([
        item.language, item.source, item.comment_start, item.comment_end, item.reference, item.prime,
        item.prediction, item.noise,
    ])


def generation_input_hash(row: Mapping[str, Any]) -> str:
    """Content hash of the sample row a generation is computed from."""
    return digest([row.get(c) for c in GENERATION_INPUT_COLUMNS])
