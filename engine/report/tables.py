"""Data shaping for the report: small tables and arrays built from what `load.py` reads.

Nothing here draws or writes HTML, and nothing here reads a whole run: figures read one score
setting at a time through the `ScoreIndex` and keep a seeded sample of its rows.
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from engine import taxonomy
from engine.io.layout import RunLayout
from engine.io.manifest import Manifest
from engine.records import LABELS
from engine.report.score_settings import BASE_LANGUAGE, HEADLINE_ORDER, ConfigKey, context_rank, order_languages

if TYPE_CHECKING:
    from engine.report.load import SampleStats, ScoreIndex


def display_status(manifest: Manifest, layout: RunLayout) -> str:
    """The run's status as the page shows it (layout: the run's, engine.io.layout).

    The runner writes the report as the run's last stage, before it marks the run complete; a
    run whose every other stage has finished (no failed part, scores counted, calibration done
    when configured) is shown as complete rather than running.
    """
    status = str(manifest.status or "unknown")
    if status != "running" or manifest.failed_parts:
        return status
    done = manifest.stage_records
    counts = manifest.counts
    drivers = layout.driver_stages
    counted = all(f"{name}_rows" in counts for name in layout.part_stages)
    driven = all(done.get(s.name, {}).get("done") for s in drivers if not s.after_complete)
    return "complete" if counted and driven and any(s.after_complete for s in drivers) else status


# ----- which variant stands for a (metric, scorer) -------------------------------------------------
def _layer_number(variant: str) -> int:
    match = re.match(r"layer-(\d+)/", variant)
    return int(match.group(1)) if match else -1


def headline_variants(keys: list[ConfigKey], default_layers: dict[str, int] | None = None) -> dict[tuple[str, str], str]:
    """(metric, scorer) -> the variant figures show: F, score or avg; for layer sweeps the F of
    the scorer's representative layer (`default_layers`: its configured or shipped default),
    else of the deepest layer (what the scorer uses without a default). Never the layer that
    agrees best: that choice is made on the items it would then be judged on (the layer sweep
    section shows every layer)."""
    variants: dict[tuple[str, str], set[str]] = defaultdict(set)
    for key in keys:
        variants[(key.metric, key.scorer)].add(key.variant)
    out = {}
    for pair, names in variants.items():
        choice = next((v for v in HEADLINE_ORDER if v in names), None)
        if choice is None:
            layered = sorted((v for v in names if v.endswith("/F")), key=_layer_number)
            default = (default_layers or {}).get(pair[1])
            if default is not None and f"layer-{default}/F" in names:
                choice = f"layer-{default}/F"
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
    """Real predictions of one setting, min-max normalised over all languages together.

    Reads the setting's rows alone and keeps a seeded sample of at most `max_points` of them,
    so the figure stays light and the report reproducible whatever the run's size.
    """
    from engine.report.load import sample_rows

    table = index.read(key, "none")
    values = table["value"].to_numpy()
    total = len(values)
    lo = float(values.min()) if total else 0.0
    hi = float(values.max()) if total else 1.0
    keep = sample_rows(total, max_points, seed)
    table = table.take(keep)
    values = values[keep]
    language = index.language_codes(table["language"])
    label = index.label_codes(table["sample_id"])
    span = hi - lo if hi > lo else 1.0
    panels = []
    for code, lang in enumerate(index.languages):
        mask = language == code
        cal = agreement.get((*key, lang))
        thresholds: list[float] = []
        regions: list[str] = []
        if cal is not None and cal["fitted"] and cal["thresholds"] is not None:
            thresholds = [(t - lo) / span for t in cal["thresholds"]]
            regions = list(cal["region_labels"] or [])
        panels.append(StripPanel(lang, (values[mask] - lo) / span, label[mask], thresholds, regions))
    return StripRow(key, lo, hi, len(keep), total, panels)


def noise_values(index: ScoreIndex, key: ConfigKey, max_points: int, seed: int = 0) -> dict[str, dict[str, np.ndarray]]:
    """language -> noise kind -> finite values of one setting (a seeded sample of at most
    `max_points` per language and kind)."""
    from engine.report.load import sample_rows

    table = index.read(key)
    values = table["value"].to_numpy()
    language = index.language_codes(table["language"])
    noise = np.asarray(table["noise"].to_pylist(), dtype=object)
    out: dict[str, dict[str, np.ndarray]] = {}
    for code, lang in enumerate(index.languages):
        out[lang] = {}
        for kind in index.noise_kinds:
            chosen = values[(language == code) & (noise == kind)]
            out[lang][kind] = chosen[sample_rows(len(chosen), max_points, seed)]
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
        if candidates:  # ties broken as the Best settings table ranks them (engine/report/sweep.py)
            out.append((language, min(candidates, key=lambda r: (-r["kappa"], r["metric"], r["scorer"], r["context"], r["variant"]))))
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


def expert_accuracy(stats: SampleStats) -> AccuracyTable:
    """Label counts per language x generator, plus an `all generators` column."""
    counts: dict[tuple[str, str], dict[str, int]] = {}
    languages, generators = set(), set()
    for (language, generator), by_label in stats.label_counts.items():
        generator = generator or "(unknown)"
        languages.add(language)
        generators.add(generator)
        counts[(language, generator)] = {label: by_label.get(label, 0) for label in LABELS}
        total = counts.setdefault((language, ALL_GENERATORS), dict.fromkeys(LABELS, 0))
        for label in LABELS:
            total[label] += by_label.get(label, 0)
    return AccuracyTable(order_languages(languages), sorted(generators) + ([ALL_GENERATORS] if generators else []), counts)


@dataclass
class ErrorCodeTable:
    """Table 1: samples per (code, language), parents accumulating their children.

    counts: (code, language) -> labelled samples counting for the code; labelled: language ->
    labelled samples. A ratio is the code's rate in a language (count / labelled) divided by its
    rate in English.
    """

    languages: list[str]
    codes: list[str]
    counts: dict[tuple[str, str], int]
    labelled: dict[str, int]

    def total(self, code: str) -> int:
        return sum(self.counts.get((code, lang), 0) for lang in self.languages)

    def rate(self, code: str, language: str) -> float:
        n = self.labelled.get(language, 0)
        return self.counts.get((code, language), 0) / n if n else math.nan

    def ratio(self, code: str, language: str) -> float:
        """Rate in `language` over the rate in English; NaN when English has none."""
        base = self.rate(code, BASE_LANGUAGE)
        if not math.isfinite(base) or base == 0:
            return math.nan
        return self.rate(code, language) / base

    def depth(self, code: str) -> int:
        return len(taxonomy.ancestors(code)) - 1 if code in taxonomy.CODES else 0


def error_code_counts(stats: SampleStats) -> ErrorCodeTable:
    """Table 1 from the streamed sample counts; codes in the taxonomy's order, unknown codes last."""
    order = list(taxonomy.CODES)
    codes = sorted({c for c, _ in stats.code_counts}, key=lambda c: (order.index(c) if c in order else len(order), c))
    languages = set(stats.labelled) | {lang for _, lang in stats.code_counts}
    return ErrorCodeTable(order_languages(languages), codes, dict(stats.code_counts), dict(stats.labelled))
