"""Data shaping for the report: the run directory read into arrays and small tables.

Nothing here draws or writes HTML. Scores are grouped with numpy (dictionary codes and one
argsort), never row by row in Python, so a study-sized run (millions of score rows) is read
in seconds. The report reads only the run directory: manifest, sample parts (or generated
rows), score parts listed in the manifest, and calibration.parquet.
"""
from __future__ import annotations

import html
import logging
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engine.io.rundir import RunDirectory
from engine.records import CALIBRATION_SCHEMA, LABELS, NOISE_KINDS, PERTURB_PREFIX, SCORE_SCHEMA

logger = logging.getLogger(__name__)

LANGUAGE_NAMES = {"en": "English", "nl": "Dutch", "zh": "Chinese", "el": "Greek", "pl": "Polish"}
STUDY_LANGUAGE_ORDER = ("en", "nl", "pl", "el", "zh")  # the study's tables list languages so
CONTEXT_ORDER = ("", "none", "minimal", "full")
# The variant that stands for a (metric, scorer) in figures; the tables keep every variant.
HEADLINE_ORDER = ("F", "score", "avg")
UNLABELLED = -1

# Study, Table 1 (codes as in the public data); sub-codes (LG-GR3) fall back to their prefix.
ERROR_TAXONOMY = {
    "MS-LT": "late termination", "MS-ET": "early termination", "MS-CC": "copy context",
    "MS-RE1": "repetition with pattern change", "MS-RE2": "exact repetition",
    "MS-IG": "incoherent generation", "MS-ME1": "memorised personal data", "MS-ME2": "memorised URL",
    "MS-ME3": "memorised erroneous ground truth", "LG-GR": "grammar", "LG-IS": "incorrect synonym",
    "LG-WL1": "translated loan word", "LG-WL2": "wrong language", "SE-MD": "missing details",
    "SE-TS": "too specific", "SE-CS1": "commented-out code", "SE-CS2": "executable code",
    "SE-HA1": "misplaced facts", "SE-HA2": "out-of-context hallucination",
    "SE-HA3": "in-context hallucination", "SE-OI": "omitted identifiers", "ST": "comment syntax error",
}
ERROR_CATEGORIES = {"MS": "model-specific", "LG": "linguistic", "SE": "semantic", "ST": "syntax"}


class ConfigKey(NamedTuple):
    """One score setting: a column of the long score table."""

    metric: str
    scorer: str
    context: str
    variant: str

    def label(self, with_context: bool = True, with_variant: bool = True) -> str:
        parts = [self.metric]
        if self.scorer:
            parts.append(short_scorer(self.scorer))
        if with_context and self.context:
            parts.append(self.context)
        if with_variant and self.variant and self.variant != "score":
            parts.append(self.variant)
        return " · ".join(parts)


def short_scorer(scorer: str) -> str:
    return scorer.replace("pypi:", "").rstrip("/").rsplit("/", 1)[-1]


def language_name(code: str) -> str:
    return LANGUAGE_NAMES.get(code, code)


def order_languages(languages: Any) -> list[str]:
    """Study order first (en, nl, pl, el, zh), others alphabetically after."""
    present = set(languages)
    known = [code for code in STUDY_LANGUAGE_ORDER if code in present]
    return known + sorted(present - set(known))


def context_rank(context: str) -> int:
    return CONTEXT_ORDER.index(context) if context in CONTEXT_ORDER else len(CONTEXT_ORDER)


def describe_error_code(code: str) -> str:
    best = ""
    for known in ERROR_TAXONOMY:
        if code.startswith(known) and len(known) > len(best):
            best = known
    category = ERROR_CATEGORIES.get(code.split("-", 1)[0], "")
    text = ERROR_TAXONOMY.get(best, "unknown code")
    return f"{category}: {text}" if category else text


def _codes(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, list[Any]]:
    """Dictionary codes (n,) int64 and the dictionary of a string column (nulls -> '')."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    array = pc.fill_null(array, "")
    encoded = array.dictionary_encode()
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), encoded.dictionary.to_pylist()


class ScoreIndex:
    """The score rows as numpy arrays grouped by score setting.

    values: (n,) float64, NaN for error rows; noise, language: (n,) int codes into
    `noise_kinds` / `languages`; label: (n,) int codes into LABELS, -1 unlabelled.
    """

    def __init__(self, scores: pa.Table, samples: pa.Table):
        self.n_rows = scores.num_rows
        values = scores["value"].to_numpy().astype(np.float64, copy=True)
        errors = scores["error"].is_valid().to_numpy(zero_copy_only=False)
        values[errors] = np.nan
        self.values = values
        self.n_errors = int(errors.sum())

        noise_codes, noise_dict = _codes(scores["noise"])
        self.noise_kinds = [k for k in NOISE_KINDS if k in noise_dict] + sorted(set(noise_dict) - set(NOISE_KINDS))
        self.noise = np.array([self.noise_kinds.index(k) for k in noise_dict], dtype=np.int64)[noise_codes]

        lang_codes, lang_dict = _codes(scores["language"])
        self.languages = order_languages(lang_dict)
        self.language = np.array([self.languages.index(k) for k in lang_dict], dtype=np.int64)[lang_codes]

        self.label = _row_labels(scores["sample_id"], samples)

        parts = [_codes(scores[name]) for name in ("metric", "scorer", "context", "variant")]
        group = np.zeros(self.n_rows, dtype=np.int64)
        for codes, dictionary in parts:
            group = group * max(len(dictionary), 1) + codes
        unique, inverse = np.unique(group, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(inverse, minlength=len(unique)))])
        self.groups: dict[ConfigKey, np.ndarray] = {}
        for g, gid in enumerate(unique):
            fields = []
            for codes, dictionary in reversed(parts):
                fields.append(dictionary[int(gid % max(len(dictionary), 1))])
                gid //= max(len(dictionary), 1)
            key = ConfigKey(*reversed(fields))
            self.groups[key] = order[bounds[g] : bounds[g + 1]]

    def keys(self) -> list[ConfigKey]:
        return sorted(self.groups, key=lambda k: (k.metric, k.scorer, context_rank(k.context), k.variant))

    def has_noise(self) -> bool:
        return any(k != "none" for k in self.noise_kinds)

    def rows(self, key: ConfigKey, noise: str = "none") -> np.ndarray:
        """Row indices of a setting and noise kind with a finite value."""
        idx = self.groups.get(key, np.empty(0, dtype=np.int64))
        if noise not in self.noise_kinds:
            return idx[:0]
        idx = idx[self.noise[idx] == self.noise_kinds.index(noise)]
        return idx[np.isfinite(self.values[idx])]


def _row_labels(sample_ids: pa.ChunkedArray, samples: pa.Table) -> np.ndarray:
    n = len(sample_ids)
    if samples.num_rows == 0 or "label" not in samples.column_names:
        return np.full(n, UNLABELLED, dtype=np.int64)
    sample_label = np.array([LABELS.index(v) if v in LABELS else UNLABELLED for v in samples["label"].to_pylist()], dtype=np.int64)
    position = pc.index_in(sample_ids, value_set=samples["sample_id"].combine_chunks())
    pos = pc.fill_null(position, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    return np.where(pos >= 0, sample_label[np.maximum(pos, 0)], UNLABELLED)


@dataclass
class RunData:
    """Everything the report reads from a run directory."""

    root: Path
    manifest: dict[str, Any]
    samples: pa.Table
    scores: ScoreIndex | None
    calibration: pa.Table | None
    rejected_rows: int = 0
    image_format: str = "png"
    max_strip_points: int = 5000
    notes: dict[str, str] = field(default_factory=dict)  # why a piece of data is absent (HTML)
    score_signatures: list[tuple[str, str, str, str]] = field(default_factory=list)  # (metric, scorer, context, signature)

    @property
    def stages(self) -> list[str]:
        return list(self.manifest.get("config", {}).get("stages", []))

    @property
    def n_labelled(self) -> int:
        if self.samples.num_rows == 0:
            return 0
        return int(pc.sum(pc.is_in(self.samples["label"], value_set=pa.array(LABELS))).as_py() or 0)

    def calibration_rows(self, task: str) -> list[dict[str, Any]]:
        if self.calibration is None or self.calibration.num_rows == 0:
            return []
        rows = self.calibration.filter(pc.equal(self.calibration["task"], task))
        return rows.to_pylist()


def load_run(run_dir: str | Path) -> RunData:
    run = RunDirectory.open_existing(run_dir)
    samples = run.read_samples()
    columns = ["sample_id", "language", "noise", "metric", "scorer", "context", "variant", "value", "error", "signature"]
    scores_table = run.read_parts("score/", SCORE_SCHEMA, columns=columns)
    # perturbation rows have their own section (sensitivity.parquet); the score views show
    # real predictions and noise only
    perturbed = pc.fill_null(pc.starts_with(scores_table["noise"], PERTURB_PREFIX), False)
    if scores_table.num_rows and pc.any(perturbed).as_py():
        scores_table = scores_table.filter(pc.invert(perturbed))
    scores = ScoreIndex(scores_table, samples) if scores_table.num_rows else None
    signatures = []
    if scores_table.num_rows:
        distinct = scores_table.group_by(["metric", "scorer", "context", "signature"]).aggregate([])
        signatures = sorted((r["metric"], r["scorer"], r["context"], r["signature"]) for r in distinct.to_pylist())
    notes: dict[str, str] = {}
    calibration = None
    cal_path = run.path("calibration.parquet")
    if cal_path.exists():
        calibration = pq.read_table(cal_path, schema=CALIBRATION_SCHEMA)
    elif "calibrate" not in run.manifest.get("config", {}).get("stages", []):
        notes["calibration"] = "the run's stages do not include <code>calibrate</code>, so there is no calibration.parquet"
    else:
        status = html.escape(str(run.manifest.get("status")))
        notes["calibration"] = f"calibration.parquet is absent: the calibrate stage has not finished (run status: {status})"
    rejected = 0
    rej_path = run.path("rejected.parquet")
    if rej_path.exists():
        rejected = pq.read_metadata(rej_path).num_rows
    report_cfg = run.manifest.get("config", {}).get("report", {}) or {}
    return RunData(
        root=Path(run_dir),
        manifest=run.manifest,
        samples=samples,
        scores=scores,
        calibration=calibration,
        rejected_rows=rejected,
        image_format=str(report_cfg.get("image_format", "png")),
        max_strip_points=int(report_cfg.get("max_strip_points", 5000)),
        notes=notes,
        score_signatures=signatures,
    )


def display_status(manifest: dict[str, Any]) -> str:
    """The run's status as the page shows it.

    The runner writes the report as the run's last stage, before it marks the run complete; a
    run whose every other stage has finished (no failed part, scores counted, calibration done
    when configured) is shown as complete rather than running.
    """
    status = str(manifest.get("status", "unknown"))
    if status != "running" or manifest.get("failed_parts"):
        return status
    stages = manifest.get("config", {}).get("stages", [])
    done = manifest.get("stages", {})
    scored = "score" not in stages or "score_rows" in (manifest.get("counts") or {})
    calibrated = "calibrate" not in stages or bool(done.get("calibrate", {}).get("done"))
    return "complete" if scored and calibrated and "report" in stages else status


# ----- which variant stands for a (metric, scorer) -------------------------------------------------
def _layer_number(variant: str) -> int:
    match = re.match(r"layer-(\d+)/", variant)
    return int(match.group(1)) if match else -1


def headline_variants(keys: list[ConfigKey], agreement: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """(metric, scorer) -> the variant figures show: F, score or avg; for layer sweeps the
    layer whose F agrees best with the experts (mean kappa), else the deepest layer."""
    variants: dict[tuple[str, str], set[str]] = defaultdict(set)
    for key in keys:
        variants[(key.metric, key.scorer)].add(key.variant)
    kappas: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for row in agreement:
        if row["fitted"] and row["kappa"] is not None and math.isfinite(row["kappa"]):
            kappas[(row["metric"], row["scorer"], row["variant"])].append(row["kappa"])
    out = {}
    for pair, names in variants.items():
        choice = next((v for v in HEADLINE_ORDER if v in names), None)
        if choice is None:
            layered = sorted((v for v in names if v.endswith("/F")), key=_layer_number)
            scored = [v for v in layered if kappas.get((*pair, v))]
            if scored:
                choice = max(scored, key=lambda v: float(np.mean(kappas[(*pair, v)])))
            elif layered:
                choice = layered[-1]
            else:
                choice = sorted(names)[0]
        out[pair] = choice
    return out


def headline_keys(keys: list[ConfigKey], headline: dict[tuple[str, str], str]) -> list[ConfigKey]:
    return [k for k in keys if headline.get((k.metric, k.scorer)) == k.variant]


def figure_groups(keys: list[ConfigKey]) -> list[tuple[tuple[str, str], list[ConfigKey]]]:
    """Headline keys grouped per (metric, scorer), contexts in order none < minimal < full."""
    groups: dict[tuple[str, str], list[ConfigKey]] = defaultdict(list)
    for key in keys:
        groups[(key.metric, key.scorer)].append(key)
    return [(pair, sorted(groups[pair], key=lambda k: context_rank(k.context))) for pair in sorted(groups)]


# ----- strip plots and noise distributions ---------------------------------------------------------
@dataclass
class StripPanel:
    language: str
    x: np.ndarray  # (m,) min-max normalised scores
    label: np.ndarray  # (m,) label codes, -1 unlabelled
    thresholds: list[float]  # normalised region boundaries from calibration
    region_labels: list[str]


@dataclass
class StripRow:
    key: ConfigKey
    lo: float
    hi: float
    shown: int
    total: int
    panels: list[StripPanel]


def strip_row(index: ScoreIndex, key: ConfigKey, agreement: dict[tuple, dict[str, Any]], max_points: int, seed: int = 0) -> StripRow:
    """Real predictions of one setting, min-max normalised over all languages together."""
    rows = index.rows(key, "none")
    total = len(rows)
    lo = float(index.values[rows].min()) if total else 0.0
    hi = float(index.values[rows].max()) if total else 1.0
    if total > max_points:  # a seeded subsample keeps the figure light and the report reproducible
        rows = np.sort(np.random.default_rng(seed).choice(rows, size=max_points, replace=False))
    values = index.values[rows]
    span = hi - lo if hi > lo else 1.0
    panels = []
    for code, language in enumerate(index.languages):
        mask = index.language[rows] == code
        cal = agreement.get((*key, language))
        thresholds: list[float] = []
        regions: list[str] = []
        if cal is not None and cal["fitted"] and cal["thresholds"] is not None:
            thresholds = [(t - lo) / span for t in cal["thresholds"]]
            regions = list(cal["region_labels"] or [])
        panels.append(StripPanel(language, (values[mask] - lo) / span, index.label[rows][mask], thresholds, regions))
    return StripRow(key, lo, hi, len(rows), total, panels)


def noise_values(index: ScoreIndex, key: ConfigKey) -> dict[str, dict[str, np.ndarray]]:
    """language -> noise kind -> finite values of one setting."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for code, language in enumerate(index.languages):
        out[language] = {}
        for kind in index.noise_kinds:
            rows = index.rows(key, kind)
            out[language][kind] = index.values[rows[index.language[rows] == code]]
    return out


# ----- calibration tables ------------------------------------------------------------------------
def by_key(rows: list[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """(metric, scorer, context, variant, language) -> calibration row."""
    return {(r["metric"], r["scorer"], r["context"], r["variant"], r["language"]): r for r in rows}


def calibration_keys(rows: list[dict[str, Any]]) -> list[ConfigKey]:
    keys = {ConfigKey(r["metric"], r["scorer"], r["context"], r["variant"]) for r in rows}
    return sorted(keys, key=lambda k: (k.metric, k.scorer, context_rank(k.context), k.variant))


def calibration_languages(rows: list[dict[str, Any]]) -> list[str]:
    return order_languages({r["language"] for r in rows})


def _finite(value: Any) -> float:
    return float(value) if value is not None and math.isfinite(value) else math.nan


def matrix(rows: list[dict[str, Any]], keys: list[ConfigKey], languages: list[str], value: str) -> np.ndarray:
    """(len(keys), len(languages)) float64 of a calibration column; NaN when absent or not fitted."""
    lookup = by_key(rows)
    out = np.full((len(keys), len(languages)), np.nan)
    for i, key in enumerate(keys):
        for j, language in enumerate(languages):
            row = lookup.get((*key, language))
            if row is not None and row["fitted"]:
                out[i, j] = _finite(row[value])
    return out


def cell_states(rows: list[dict[str, Any]], keys: list[ConfigKey], languages: list[str]) -> np.ndarray:
    """(len(keys), len(languages)) object array: 'n/f' where a row exists but was not fitted, else ''."""
    lookup = by_key(rows)
    out = np.full((len(keys), len(languages)), "", dtype=object)
    for i, key in enumerate(keys):
        for j, language in enumerate(languages):
            row = lookup.get((*key, language))
            if row is not None and not row["fitted"]:
                out[i, j] = "n/f"
    return out


def contexts_of(keys: list[ConfigKey]) -> list[str]:
    return sorted({k.context for k in keys}, key=context_rank)


def kappa_deltas(rows: list[dict[str, Any]], keys: list[ConfigKey], languages: list[str]) -> tuple[list[ConfigKey], dict[str, np.ndarray]]:
    """Change in kappa from context `none` to `minimal` and to `full`, per (metric, scorer, variant).

    Returns the `none` keys that have a partner and {"minimal": (k, L), "full": (k, L)}.
    """
    present = set(keys)
    base = [k for k in keys if k.context == "none" and any(k._replace(context=c) in present for c in ("minimal", "full"))]
    none = matrix(rows, base, languages, "kappa")
    out = {}
    for context in ("minimal", "full"):
        partners = [k._replace(context=context) for k in base]
        if any(p in present for p in partners):
            out[context] = matrix(rows, partners, languages, "kappa") - none
    return base, out


def best_per_language(rows: list[dict[str, Any]], keys: list[ConfigKey], languages: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The fitted agreement row with the highest kappa among `keys`, per language."""
    wanted = set(keys)
    out = []
    for language in languages:
        candidates = [
            r for r in rows
            if r["language"] == language and r["fitted"] and r["confusion_row_norm"] is not None
            and ConfigKey(r["metric"], r["scorer"], r["context"], r["variant"]) in wanted
            and math.isfinite(_finite(r["kappa"]))
        ]
        if candidates:
            out.append((language, max(candidates, key=lambda r: r["kappa"])))
    return out


# ----- expert labels ----------------------------------------------------------------------------
@dataclass
class AccuracyTable:
    languages: list[str]
    generators: list[str]
    counts: dict[tuple[str, str], dict[str, int]]  # (language, generator) -> label -> count

    def share(self, language: str, generator: str, label: str = "correct") -> float:
        counter = self.counts.get((language, generator), {})
        total = sum(counter.get(label, 0) for label in LABELS)
        return 100.0 * counter.get(label, 0) / total if total else math.nan

    def n(self, language: str, generator: str) -> int:
        return sum(self.counts.get((language, generator), {}).get(label, 0) for label in LABELS)


ALL_GENERATORS = "all generators"


def expert_accuracy(samples: pa.Table) -> AccuracyTable:
    """Label counts per language x generator, plus an `all generators` column.

    Built on the calibrate stage's `expert_accuracy_table` (shares and n per pair), so the
    report and the stage count labels the same way.
    """
    from engine.calibrate.stage import expert_accuracy_table

    counts: dict[tuple[str, str], dict[str, int]] = {}
    languages, generators = set(), set()
    for row in expert_accuracy_table(samples).to_pylist():
        generator = row["generator"] or "(unknown)"
        languages.add(row["language"])
        generators.add(generator)
        # shares are count / n: rounding back gives the exact counts
        by_label = {label: int(round(row[f"share_{label}"] * row["n"])) for label in LABELS}
        counts[(row["language"], generator)] = by_label
        total = counts.setdefault((row["language"], ALL_GENERATORS), dict.fromkeys(LABELS, 0))
        for label, count in by_label.items():
            total[label] += count
    return AccuracyTable(order_languages(languages), sorted(generators) + ([ALL_GENERATORS] if generators else []), counts)


@dataclass
class ErrorCodeTable:
    languages: list[str]
    codes: list[str]
    counts: dict[tuple[str, str], int]  # (code, language) -> occurrences
    labelled: dict[str, int]  # language -> labelled samples

    def total(self, code: str) -> int:
        return sum(self.counts.get((code, lang), 0) for lang in self.languages)


def error_code_counts(samples: pa.Table) -> ErrorCodeTable:
    """Occurrences of each taxonomy code per language (the calibrate stage's counts, summed
    over generators), and the labelled samples per language."""
    from engine.calibrate import stage

    counts: Counter = Counter()
    for row in stage.error_code_counts(samples).to_pylist():
        counts[(row["code"], row["language"])] += row["count"]
    labelled: Counter = Counter()
    if samples.num_rows:
        cols = samples.select(["language", "label"]).to_pydict()
        labelled.update(lang for lang, label in zip(cols["language"], cols["label"]) if label in LABELS)
    languages = set(labelled) | {lang for _, lang in counts}
    codes = sorted({c for c, _ in counts}, key=lambda c: (list(ERROR_CATEGORIES).index(c[:2]) if c[:2] in ERROR_CATEGORIES else 9, c))
    return ErrorCodeTable(order_languages(languages), codes, dict(counts), dict(labelled))
