"""The report's reading of a run directory, in bounded memory.

Nothing here holds all samples or all scores. Samples are read part by part, four small columns
at a time, into counts (`SampleStats`). Scores are read part by part once into per-setting row
counts (`ScoreIndex`); a figure then reads one setting's rows with a pushed-down filter and
keeps a seeded sample of at most `max_points` of them. The one table that grows with the input
is the expert label of each labelled sample (two columns), which the strip plots join.
"""
from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engine import taxonomy
from engine.calibrate.run_directory import expert_labels
from engine.calibrate.thresholds import label_codes
from engine.io.layout import RunLayout
from engine.io.manifest import Manifest
from engine.io.rundir import RunDirectory
from engine.kinds import CALIBRATION, SCORES
from engine.records import CALIBRATION_SCHEMA, LABELS, NOISE_KINDS, PERTURB_PREFIX
from engine.report.score_settings import ConfigKey, context_rank, order_languages

SAMPLE_COLUMNS = ["language", "generator", "label", "error_codes"]
_INDEX_KEYS = ["metric", "scorer", "context", "variant", "noise", "language"]


# ----- samples --------------------------------------------------------------------------------
@dataclass
class SampleStats:
    """Counts over every sample of the run.

    label_counts: (language, generator or '') -> label -> count; code_counts: (code, language)
    -> labelled samples whose error codes include `code` or one of its children (each sample
    counted once per code; unknown codes are counted as written); labelled: language -> count.
    """

    n_samples: int = 0
    languages: list[str] = field(default_factory=list)
    generators: list[str] = field(default_factory=list)
    label_counts: dict[tuple[str, str], Counter] = field(default_factory=dict)
    code_counts: Counter = field(default_factory=Counter)
    labelled: Counter = field(default_factory=Counter)

    @property
    def n_labelled(self) -> int:
        return sum(self.labelled.values())


def _accumulated_code_counts(part: pa.Table) -> Counter:
    """(code, language) -> samples of `part` counting for the code, parents accumulating children."""
    out: Counter = Counter()
    codes = part["error_codes"].combine_chunks()
    flat = pc.list_flatten(codes)
    if len(flat) == 0:
        return out
    owner = pc.list_parent_indices(codes).to_numpy(zero_copy_only=False)
    encoded = pc.dictionary_encode(pc.fill_null(flat, ""))
    index = encoded.indices.to_numpy(zero_copy_only=False)
    languages = np.asarray(part["language"].to_pylist(), dtype=object)
    rows_of: dict[str, list[np.ndarray]] = {}
    for d, raw in enumerate(encoded.dictionary.to_pylist()):
        if not raw.strip():
            continue
        known = taxonomy.canonical_code(raw)
        for code in taxonomy.ancestors(known) if known else [raw.strip()]:
            rows_of.setdefault(code, []).append(owner[index == d])
    for code, chunks in rows_of.items():
        for language, count in Counter(languages[np.unique(np.concatenate(chunks))]).items():
            out[(code, language)] += count
    return out


def read_sample_stats(run: RunDirectory) -> SampleStats:
    stats = SampleStats()
    languages: set[str] = set()
    generators: set[str] = set()
    for part in run.sample_tables(columns=SAMPLE_COLUMNS):
        stats.n_samples += part.num_rows
        counted = part.group_by(["language", "generator", "label"]).aggregate([([], "count_all")])
        for row in counted.to_pylist():
            languages.add(row["language"])
            if row["generator"]:
                generators.add(row["generator"])
            if row["label"] in LABELS:
                cell = stats.label_counts.setdefault((row["language"], row["generator"] or ""), Counter())
                cell[row["label"]] += row["count_all"]
                stats.labelled[row["language"]] += row["count_all"]
        stats.code_counts.update(_accumulated_code_counts(part))
    stats.languages = order_languages(languages)
    stats.generators = sorted(generators)
    return stats


# ----- scores ---------------------------------------------------------------------------------
class ScoreIndex:
    """Row counts per score setting, and per-setting reads of the score parts.

    groups: ConfigKey -> number of score rows; languages, noise_kinds: in display order.
    """

    def __init__(self, run: RunDirectory, labels: pa.Table):
        self.labels = labels
        self.dataset = run.score_dataset()
        self.groups: dict[ConfigKey, int] = Counter()
        self.n_rows = 0  # rows of real predictions and noise: the rows the score views read
        self.n_perturbed = 0  # rows of perturbed texts (the perturbation sections read them)
        self.n_errors = 0
        languages: set[str] = set()
        noise: set[str] = set()
        signatures: set[tuple[str, str, str, str]] = set()
        for part in run.score_tables(columns=[*_INDEX_KEYS, "error", "signature"]):
            total = part.num_rows
            part = _without_perturbations(part)
            self.n_rows += part.num_rows
            self.n_perturbed += total - part.num_rows
            self.n_errors += int(pc.sum(part["error"].is_valid()).as_py() or 0)
            counted = part.group_by(_INDEX_KEYS).aggregate([([], "count_all")])
            for row in counted.to_pylist():
                self.groups[ConfigKey(row["metric"], row["scorer"], row["context"], row["variant"])] += row["count_all"]
                languages.add(row["language"])
                noise.add(row["noise"])
            distinct = part.group_by(["metric", "scorer", "context", "signature"]).aggregate([])
            signatures.update(zip(*(distinct[k].to_pylist() for k in ("metric", "scorer", "context", "signature"))))
        self.groups = dict(self.groups)
        self.languages = order_languages(languages)
        self.noise_kinds = [k for k in NOISE_KINDS if k in noise] + sorted(noise - set(NOISE_KINDS))
        self.signatures = sorted(signatures)

    def keys(self) -> list[ConfigKey]:
        return sorted(self.groups, key=lambda k: (k.metric, k.scorer, context_rank(k.context), k.variant))

    def has_noise(self) -> bool:
        return any(k != "none" for k in self.noise_kinds)

    def read(self, key: ConfigKey, noise: str | None = None) -> pa.Table:
        """Rows of one setting (one noise kind, or all) with a finite value and no error:
        columns sample_id, language, noise, value."""
        expression = ((pc.field("metric") == key.metric) & (pc.field("scorer") == key.scorer)
                      & (pc.field("context") == key.context) & (pc.field("variant") == key.variant))
        if noise is not None:
            expression = expression & (pc.field("noise") == noise)
        table = _without_perturbations(
            self.dataset.to_table(filter=expression, columns=["sample_id", "language", "noise", "value", "error"])
        )
        good = pc.and_(pc.fill_null(pc.is_finite(table["value"]), False), table["error"].is_null())
        return table.filter(good).drop_columns(["error"])

    def language_codes(self, languages: pa.ChunkedArray) -> np.ndarray:
        """Index into `self.languages` of each row's language."""
        return pc.index_in(languages, value_set=pa.array(self.languages)).to_numpy(zero_copy_only=False).astype(np.int64)

    def label_codes(self, sample_ids: pa.ChunkedArray) -> np.ndarray:
        """Expert label index (into LABELS) of each row, -1 where the sample has none."""
        return label_codes(sample_ids.combine_chunks(), self.labels)


def _without_perturbations(table: pa.Table) -> pa.Table:
    """Perturbation rows have their own sections (sensitivity.parquet); the score views show
    real predictions and noise only."""
    perturbed = pc.fill_null(pc.starts_with(table["noise"], PERTURB_PREFIX), False)
    return table.filter(pc.invert(perturbed)) if pc.any(perturbed).as_py() else table


def sample_rows(n: int, max_points: int, seed: int = 0) -> np.ndarray:
    """Sorted positions of a seeded sample of at most `max_points` of n rows (all when n is small)."""
    if n <= max_points:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=max_points, replace=False))


# ----- the run --------------------------------------------------------------------------------
@dataclass
class RunData:
    """Everything the report reads from a run directory."""

    root: Path
    manifest: Manifest
    stats: SampleStats
    scores: ScoreIndex | None
    calibration: pa.Table | None
    rejected_rows: int = 0
    image_format: str = "png"
    max_strip_points: int = 5000
    notes: dict[str, str] = field(default_factory=dict)  # why a piece of data is absent (HTML)
    layout: RunLayout | None = None  # the run's data flow (engine.io.layout)
    plan: Any = None  # the run's engine.stages.plan.RunPlan: its stages' report hooks (None: none)

    def provides(self, kind: str) -> bool:
        """Whether one of the run's stages provides rows of `kind` (engine.kinds): asked of the
        layout, so the report never needs a stage's name (no layout: nothing is provided)."""
        return self.layout is not None and self.layout.has_provider(kind)

    @property
    def n_labelled(self) -> int:
        return self.stats.n_labelled

    @property
    def score_signatures(self) -> list[tuple[str, str, str, str]]:
        """(metric, scorer, context, signature) of the score rows."""
        return self.scores.signatures if self.scores else []

    def calibration_rows(self, task: str, per_generator: bool = False) -> list[dict[str, Any]]:
        """Rows of one task fitted per language with the generators pooled, or per generator too."""
        if self.calibration is None or self.calibration.num_rows == 0:
            return []
        table = self.calibration.filter(pc.equal(self.calibration["task"], task))
        # a row without a grouping (an older file) was fitted per language, generators pooled
        grouping = pc.fill_null(table["group_by"], "language")
        table = table.filter(pc.equal(grouping, "language+generator" if per_generator else "language"))
        return table.to_pylist()


def load_run(run: RunDirectory) -> RunData:
    """What the report reads of `run` (opened with its plan: engine.stages.plan.reopen_run)."""
    stats = read_sample_stats(run)
    scores = None
    if run.kind_files(SCORES):
        index = ScoreIndex(run, expert_labels(run) if stats.n_labelled else expert_labels_empty())
        scores = index if index.n_rows else None
    notes: dict[str, str] = {}
    calibration = None
    cal_path = run.path("calibration.parquet")
    if cal_path.exists():
        calibration = pq.read_table(cal_path, schema=CALIBRATION_SCHEMA)
    elif not run.layout.has_provider(CALIBRATION):
        notes["calibration"] = "the run's stages do not include <code>calibrate</code>, so there is no calibration.parquet"
    else:
        status = html.escape(str(run.manifest.status))
        notes["calibration"] = f"calibration.parquet is absent: the calibrate stage has not finished (run status: {status})"
    rejected = 0
    rej_path = run.path("rejected.parquet")
    if rej_path.exists():
        rejected = pq.read_metadata(rej_path).num_rows
    report_cfg = run.manifest.config.get("report", {}) or {}
    return RunData(
        root=run.root,
        manifest=run.manifest,
        stats=stats,
        scores=scores,
        calibration=calibration,
        rejected_rows=rejected,
        image_format=str(report_cfg.get("image_format", "png")),
        max_strip_points=int(report_cfg.get("max_strip_points", 5000)),
        notes=notes,
        layout=run.layout,
        plan=run.plan,
    )


def expert_labels_empty() -> pa.Table:
    return pa.table({"sample_id": pa.array([], pa.string()), "label": pa.array([], pa.string())})
