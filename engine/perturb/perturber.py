"""Stage `perturb`: options, corpus pre-pass and the per-part table of perturbations.

What is perturbed (each row of the output is one (sample, target, family); a perturbed reference
also gets a row `original` with its unperturbed span, which the score stage scores as S(original)):
- target `reference`: the reference's scored span (what follows the prime), once per file:
  the file's representative sample is its smallest sample_id (a file never spans two parts,
  so the choice does not depend on the part size); its prime and file are used;
- target `prediction` (option `perturb_predictions`): the prediction of every sample labelled
  `correct` (the candidate comment is `prime + prediction`; the prediction is edited).

Determinism: each (seed, sample_id, target, family) gets its own generator seeded through
blake2b, so a perturbation does not depend on the part size, the order of rows or the other
families. `foreign_comment` draws from a pool built by the corpus pre-pass over every part:
per language, the `foreign_pool_size` files with the smallest blake2b(seed, file_id) keys
(a bottom-k sample: the same whatever the part size or order), each with the words of its
reference comment.
"""
from __future__ import annotations

import hashlib
import heapq
import logging
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np
import pyarrow as pa

from engine.errors import StageError
from engine.params import Params, require
from engine.perturb.families import FAMILIES, FamilyInput, FamilyOptions, perturb
from engine.perturb.language import resources_for
from engine.perturb.text import CommentText
from engine.records import PERTURB_ORIGINAL, PERTURB_SCHEMA, perturb_noise

logger = logging.getLogger(__name__)

INPUT_COLUMNS = ("sample_id", "file_id", "language", "source", "comment_start", "comment_end", "reference")


@dataclass(frozen=True)
class SettingRef(Params):
    """One metric setting, as in the score rows.

    Keys:
        metric: the score rows' `metric` (bleu, rougeL, meteor, bertscore, bartscore, ...).
        variant: the score rows' `variant` (score for BLEU and METEOR, P / R / F, forward / reverse / avg, ...).
        scorer: the score rows' `scorer` (the model as configured; '' for lexical metrics).
        context: the score rows' `context` (none / minimal / full; '' for lexical metrics).
    """

    metric: str
    variant: str
    scorer: str = ""
    context: str = ""

    def key(self) -> tuple[str, str, str, str]:
        return (self.metric, self.scorer, self.variant, self.context)


@dataclass(frozen=True)
class SettingPair(Params):
    """A one-sided comparison: does `x` agree with the experts better than `y`?

    Keys:
        x: the setting claimed to agree better with the expert labels.
        y: the setting it is compared with, on the same items.
    """

    x: SettingRef
    y: SettingRef


@dataclass(frozen=True)
class SignificanceParams(Params):
    """Options of the significance analysis (RUN/significance.parquet).

    Keys:
        correlation: the correlation Williams' test compares: `spearman` or `pearson`.
        alpha: significance level of the one-sided Williams' test (a finding gets a sentence below it).
        context_pairs: test each neural setting's `full` and `minimal` context against its `none`.
        pairs: more comparisons, each `{x: setting, y: setting}` (H1: x agrees better than y).
        adjust: multiple-comparison adjustment of p over a language's comparisons: `holm` or `none`.
    """

    correlation: str = "spearman"  # the r of Williams' test: spearman or pearson
    alpha: float = 0.05
    adjust: str = "holm"
    context_pairs: bool = True  # each neural setting's full / minimal context against its none
    pairs: tuple[SettingPair, ...] = ()

    def __post_init__(self) -> None:
        require(self.correlation in ("spearman", "pearson"), "significance.correlation", self.correlation,
                "spearman or pearson")
        require(0.0 < self.alpha < 1.0, "significance.alpha", self.alpha, "a number strictly between 0 and 1")
        require(self.adjust in ("holm", "none"), "significance.adjust", self.adjust, "holm or none")


@dataclass(frozen=True)
class PerturbParams(Params):
    """Options of stage `perturb` and of the sensitivity and significance analyses.

    Keys:
        families: perturbation families to apply (negation, identifier_swap, deletion, truncation,
            verbatim_repetition, pattern_repetition, code_copy, foreign_comment).
        seed: perturbation seed; a perturbation depends only on (seed, sample_id, target, family).
        perturb_predictions: also perturb the predictions of samples labelled correct.
        truncate_min: truncation keeps at least this share of the words (drawn uniformly up to truncate_max).
        truncate_max: truncation keeps at most this share of the words.
        repeat_copies: verbatim repetition: extra copies of the repeated sentence.
        pattern_repeats: pattern repetition: times the 1-3 word pattern is appended.
        foreign_pool_size: per language, comments kept by the pre-pass for foreign_comment.
        bootstrap: bootstrap replicates of the dS intervals (0: no intervals).
        confidence: level of the dS intervals.
        significance: options of the significance analysis (correlations and Williams' test).
    """

    families: tuple[str, ...] = tuple(FAMILIES)
    seed: int = 0
    perturb_predictions: bool = False
    truncate_min: float = 0.3
    truncate_max: float = 0.7
    repeat_copies: int = 2
    pattern_repeats: int = 4
    foreign_pool_size: int = 64
    bootstrap: int = 1000
    confidence: float = 0.95
    significance: SignificanceParams = field(default_factory=SignificanceParams)

    def __post_init__(self) -> None:
        require(len(self.families) > 0, "families", list(self.families), f"a non-empty list of {list(FAMILIES)}")
        require(len(set(self.families)) == len(self.families), "families", list(self.families), "each family at most once")
        for family in self.families:
            require(family in FAMILIES, "families", family, f"one of {list(FAMILIES)}")
        require(0.0 < self.truncate_min <= self.truncate_max < 1.0, "truncate_min", [self.truncate_min, self.truncate_max],
                "0 < truncate_min <= truncate_max < 1")
        require(self.repeat_copies >= 1, "repeat_copies", self.repeat_copies, "an integer >= 1")
        require(self.pattern_repeats >= 2, "pattern_repeats", self.pattern_repeats, "an integer >= 2")
        require(self.foreign_pool_size >= 1, "foreign_pool_size", self.foreign_pool_size, "an integer >= 1")
        require(self.bootstrap >= 0, "bootstrap", self.bootstrap, "an integer >= 0 (0: no intervals)")
        require(0.0 < self.confidence < 1.0, "confidence", self.confidence, "a number strictly between 0 and 1")

    def family_options(self) -> FamilyOptions:
        return FamilyOptions(self.truncate_min, self.truncate_max, self.repeat_copies, self.pattern_repeats)


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
