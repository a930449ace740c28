"""Stage `perturb`'s corpus pre-pass and the per-part table of perturbations.

Each output row is one (sample, target, family): target `reference` once per file (its smallest
sample_id stands for it), target `prediction` for every sample labelled correct
(`perturb_predictions`); a perturbed reference also gets a row `original` with its unperturbed
span, scored as S(original). Each (seed, sample_id, target, family) has its own generator
seeded through blake2b, so a perturbation depends on neither the part size, the order of rows
nor the other families; `foreign_comment` draws from the pre-pass's bottom-k pool per language.
docs/perturbation.md ("What is edited") has the details.
"""
from __future__ import annotations

import hashlib
import heapq
import logging
from typing import Any, Iterable

import numpy as np
import pyarrow as pa

from engine.errors import StageError
from engine.perturb.families import FAMILIES, FamilyInput, perturb
from engine.perturb.language import resources_for
from engine.perturb.params import PerturbParams
from engine.perturb.text import CommentText
from engine.records import PERTURB_ORIGINAL, PERTURB_SCHEMA, perturb_noise

logger = logging.getLogger(__name__)

INPUT_COLUMNS = ("sample_id", "file_id", "language", "source", "comment_start", "comment_end", "reference")


def _key(*parts: Any) -> int:
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest(), "little")


def perturb_rng(seed: int, sample_id: str, target: str, family: str) -> np.random.Generator:
    """The generator of one (seed, sample, target, family), independent of partitioning."""
    return np.random.Generator(np.random.PCG64(_key("perturb", seed, sample_id, target, family)))


# ----- corpus pre-pass -----------------------------------------------------------------------------
def foreign_pool(tables: Iterable[pa.Table], seed: int, size: int) -> dict[str, list[list[str]]]:
    """language -> [[key, file_id, words], ...] (bottom-`size` files by key, ascending)."""
    heaps: dict[str, list[tuple[int, str, str]]] = {}
    seen: dict[str, set[str]] = {}
    for table in tables:
        cols = {c: table.column(c).to_pylist() for c in ("file_id", "language", "reference")}
        for file_id, language, reference in zip(cols["file_id"], cols["language"], cols["reference"]):
            if file_id in seen.setdefault(language, set()):
                continue
            seen[language].add(file_id)
            words = CommentText.of(reference).prose(joiner=resources_for(language).joiner)
            if not words or "*/" in words:
                continue
            entry = (-_key("foreign", seed, file_id), file_id, words)
            heap = heaps.setdefault(language, [])
            if len(heap) < size:
                heapq.heappush(heap, entry)
            elif entry > heap[0]:
                heapq.heapreplace(heap, entry)
    return {lang: [[str(-k), f, w] for k, f, w in sorted(heap, reverse=True)] for lang, heap in sorted(heaps.items())}


def foreign_candidates(pool: dict[str, list[list[str]]], language: str) -> list[tuple[str, str, str]]:
    """(language, file_id, words) of every pooled comment of another language, in a canonical order."""
    out = [(int(key), lang, file_id, words) for lang, entries in pool.items() if lang != language
           for key, file_id, words in entries]
    return [(lang, file_id, words) for _, lang, file_id, words in sorted(out)]


# ----- the part's perturbations --------------------------------------------------------------------
def _targets(rows: list[dict[str, Any]], perturb_predictions: bool) -> list[tuple[dict[str, Any], str]]:
    """(row, target) pairs in a canonical order: file representatives, then correct predictions."""
    first: dict[str, dict[str, Any]] = {}
    for row in rows:
        current = first.get(row["file_id"])
        if current is None or row["sample_id"] < current["sample_id"]:
            first[row["file_id"]] = row
    out = [(row, "reference") for row in sorted(first.values(), key=lambda r: r["sample_id"])]
    if perturb_predictions:
        out += [(row, "prediction") for row in sorted(rows, key=lambda r: r["sample_id"])
                if row.get("label") == "correct" and row.get("prediction") is not None]
    return out


def make_perturbations(samples: pa.Table, params: PerturbParams, prepass: dict[str, Any]) -> pa.Table:
    """PERTURB_SCHEMA rows for one part of samples (one row per (sample, target, family))."""
    missing = [c for c in INPUT_COLUMNS if c not in samples.column_names]
    if missing:
        raise StageError("perturb", f"the samples table lacks column(s) {missing}; it needs {list(INPUT_COLUMNS)}")
    rows = samples.to_pylist()
    pool = prepass.get("foreign_pool", {})
    options = params.family_options()
    out: list[dict[str, Any]] = []
    foreign: dict[str, list[tuple[str, str, str]]] = {}
    skipped = 0
    for row, target in _targets(rows, params.perturb_predictions):
        prime = row.get("prime") or ""
        comment = row["reference"] if target == "reference" else prime + row["prediction"]
        base = dict(sample_id=row["sample_id"], file_id=row["file_id"], language=row["language"], target=target,
                    seed=params.seed)
        try:
            text = CommentText.of(comment, prime)
        except ValueError:
            text = None
        if row["language"] not in foreign:
            foreign[row["language"]] = foreign_candidates(pool, row["language"])
        results = []
        for family in params.families:
            if text is None:
                results.append((family, None, "the comment does not start with the sample's prime", None))
                continue
            inp = FamilyInput(text, resources_for(row["language"]), row["source"], row["comment_start"],
                              row["comment_end"], comment[:3], foreign[row["language"]], options)
            outcome = perturb(family, inp, perturb_rng(params.seed, row["sample_id"], target, family))
            results.append((family, outcome.text, outcome.skip_reason, outcome.detail))
        if target == "reference" and any(r[1] is not None for r in results):
            # S(original) of a perturbed reference: the unperturbed span scored against the reference
            out.append(dict(base, noise=perturb_noise(target, PERTURB_ORIGINAL), family=PERTURB_ORIGINAL, codes=[],
                            applied=True, skip_reason=None, prediction=comment[len(prime):], detail=None))
        for family, perturbed, reason, detail in results:
            skipped += perturbed is None
            out.append(dict(base, noise=perturb_noise(target, family), family=family, codes=list(FAMILIES[family]),
                            applied=perturbed is not None, skip_reason=reason, prediction=perturbed, detail=detail))
    if skipped:
        logger.info("perturb: %d perturbation(s) skipped (reasons in the skip_reason column)", skipped)
    return pa.Table.from_pylist(out, schema=PERTURB_SCHEMA)
