"""Sweep views: which layer, which setting agrees best with the experts in each language.

Both read the agreement rows of calibration.parquet fitted per language with the generators
pooled (the rows of the kappa table):
  layer curves    kappa against layer for each (metric, scorer, context, language) of an
                  all-layer scorer (`all_layers: true`, variants `layer-K/F`), best layer marked
  best settings   per language, the settings ranked by kappa; each is compared with the one
                  ranked next by Williams' test on the same labelled items (engine.perturb's
                  williams_test: one-sided, on the settings' correlations with the expert labels)
The console (`best_lines`) prints the first of each language; the report shows both.
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from engine.io.rundir import RunDirectory
from engine.kinds import LAYER_SETTING, SIGNIFICANCE_SETTING
from engine.report.score_settings import ConfigKey, context_rank, language_name, order_languages, regions_out_of_order, short_scorer

# The one definition of "best" (report, console, docs).
BEST_DEFINITION = ("best: the highest quadratic kappa with the experts among all fitted settings (every metric, "
                   "scorer, layer, context and variant); ties are shown as ties")

BEST_ROWS = 5  # settings listed per language in the report's table
TIE = 1e-12  # kappas this close are one value (the same classifier fitted twice): the one tie rule


def same_kappa(a: float, b: float) -> bool:
    """Whether two kappas tie: the one rule of the answer block, the tables, the figures and the console."""
    return abs(a - b) <= TIE
LAYER_VARIANT = re.compile(r"layer-(\d+)/(.+)")
DEFAULT_CORRELATION, DEFAULT_ALPHA = "spearman", 0.05


def layer_of(variant: str) -> int | None:
    match = LAYER_VARIANT.fullmatch(variant)
    return int(match.group(1)) if match else None


def report_settings(manifest: Any, plan: Any) -> dict[str, Any]:
    """What the run's stages say the sweep views read of their recorded options (their
    `ReportSettings`, asked through the run's plan: engine.stages.plan.RunPlan, None: nothing)."""
    return plan.report_settings(manifest.config) if plan is not None else {}


def representative_layers(settings: dict[str, Any]) -> dict[str, int]:
    """Embedding scorer (model) -> the layer it reports without a sweep (the score stage's
    setting; models without one use their last layer)."""
    return dict(settings.get(LAYER_SETTING) or {})


def _finite(value: Any) -> bool:
    return value is not None and math.isfinite(value)


def _fitted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["fitted"] and _finite(r["kappa"])]


# ----- kappa against layer ------------------------------------------------------------------------
@dataclass
class LayerCurve:
    """Kappa per layer of one (metric, scorer, context, language), for variant `layer-K/<part>`."""

    metric: str
    scorer: str
    context: str
    language: str
    layers: list[int]
    kappa: list[float]  # NaN where not fitted
    lo: list[float]
    hi: list[float]
    n: list[int]
    default: int | None  # the scorer's representative layer (dotted line)

    @property
    def best(self) -> int | None:
        """Index into `layers` of the highest kappa; on a tie the shallowest of `tied` (drawn first,
        and always said with the others: see `tied`)."""
        finite = [i for i, k in enumerate(self.kappa) if math.isfinite(k)]
        return max(finite, key=lambda i: (self.kappa[i], -self.layers[i])) if finite else None

    @property
    def tied(self) -> list[int]:
        """The layers that share the highest kappa (one layer: a single best)."""
        best = self.best
        if best is None:
            return []
        return [k for k, v in zip(self.layers, self.kappa) if math.isfinite(v) and same_kappa(v, self.kappa[best])]


def layer_curves(rows: list[dict[str, Any]], defaults: dict[str, int], part: str = "F") -> list[LayerCurve]:
    """Curves of the settings with at least two layers of variant `layer-K/<part>`."""
    grouped: dict[tuple[str, str, str, str], dict[int, dict[str, Any]]] = defaultdict(dict)
    for r in rows:
        match = LAYER_VARIANT.fullmatch(r["variant"])
        if match and match.group(2) == part:
            grouped[(r["metric"], r["scorer"], r["context"], r["language"])][int(match.group(1))] = r
    curves = []
    for (metric, scorer, context, language), by_layer in grouped.items():
        if len(by_layer) < 2:
            continue
        layers = sorted(by_layer)

        def col(name: str, layers: list[int] = layers, by_layer: dict = by_layer) -> list[float]:
            return [float(by_layer[k][name]) if by_layer[k]["fitted"] and _finite(by_layer[k][name]) else math.nan for k in layers]

        curves.append(LayerCurve(metric, scorer, context, language, layers, col("kappa"), col("kappa_lo"), col("kappa_hi"),
                                 [int(by_layer[k]["n"]) for k in layers], defaults.get(scorer)))
    order = {lang: i for i, lang in enumerate(order_languages({c.language for c in curves}))}
    return sorted(curves, key=lambda c: (c.metric, c.scorer, context_rank(c.context), order[c.language]))


# ----- best settings per language --------------------------------------------------------------------
@dataclass
class BestRow:
    """One ranked setting of a language, and its comparison with the setting ranked next."""

    language: str
    rank: int
    key: ConfigKey
    layer: int | None
    kappa: float
    lo: float | None
    hi: float | None
    n: int
    next_key: ConfigKey | None = None
    next_layer: int | None = None
    next_kappa: float | None = None
    n_common: int = 0
    t: float | None = None
    p: float | None = None
    significant: bool | None = None  # None: not tested (reason says why)
    reason: str = ""


def setting_layer(key: ConfigKey, defaults: dict[str, int]) -> int | None:
    """The encoder layer a setting scores with: its sweep layer, else its scorer's representative."""
    layer = layer_of(key.variant)
    return defaults.get(key.scorer) if layer is None else layer


def ranked_settings(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """language -> fitted agreement rows by kappa, highest first (ties: metric, scorer, context, variant)."""
    out: dict[str, list[dict[str, Any]]] = {}
    fitted = _fitted(rows)
    for language in order_languages({r["language"] for r in fitted}):
        mine = [r for r in fitted if r["language"] == language]
        out[language] = sorted(mine, key=lambda r: (-r["kappa"], r["metric"], r["scorer"], r["context"], r["variant"]))
    return out


def _key(row: dict[str, Any]) -> ConfigKey:
    return ConfigKey(row["metric"], row["scorer"], row["context"], row["variant"])


def _corr(a: np.ndarray, b: np.ndarray, kind: str) -> float:
    from scipy import stats

    if a.size < 3 or np.all(a == a[0]) or np.all(b == b[0]):
        return math.nan
    result = stats.spearmanr(a, b) if kind == "spearman" else stats.pearsonr(a, b)
    return float(result.statistic)


def compare(x: dict[str, float], y: dict[str, float], labels: dict[str, int], correlation: str) -> dict[str, Any]:
    """Williams' test that setting x correlates with the expert labels better than y on their
    common labelled items. Returns n, t, p (one-sided), or a reason when it cannot be tested."""
    from engine.stats import williams_test

    ids = sorted(s for s in x.keys() & y.keys() if s in labels)
    out: dict[str, Any] = {"n": len(ids)}
    if len(ids) <= 3:
        return dict(out, reason=f"{len(ids)} common labelled items; Williams' test needs more than 3")
    xs, ys = np.array([x[s] for s in ids]), np.array([y[s] for s in ids])
    z = np.array([labels[s] for s in ids], dtype=np.float64)
    r_xz, r_yz, r_xy = _corr(xs, z, correlation), _corr(ys, z, correlation), _corr(xs, ys, correlation)
    if not all(math.isfinite(r) for r in (r_xz, r_yz, r_xy)):
        return dict(out, reason="a correlation is undefined (constant scores or labels)")
    try:
        t, p = williams_test(r_xz, r_yz, r_xy, len(ids))
    except ValueError as exc:
        return dict(out, reason=str(exc))
    return dict(out, t=t, p=p)


ScoreReader = Callable[[ConfigKey, str], dict[str, float]]


def best_settings(rows: list[dict[str, Any]], read: ScoreReader, labels: dict[str, int], defaults: dict[str, int],
                  top: int = BEST_ROWS, correlation: str = DEFAULT_CORRELATION, alpha: float = DEFAULT_ALPHA) -> list[BestRow]:
    """The `top` settings of each language by kappa, each tested against the one ranked next.

    read(key, language) -> sample_id -> score of the setting's real predictions. Significant
    means one-sided p < alpha, unadjusted (one comparison per listed setting).
    """
    out = []
    for language, ranked in ranked_settings(rows).items():
        for rank, row in enumerate(ranked[:top], start=1):
            key = _key(row)
            best = BestRow(language, rank, key, setting_layer(key, defaults), float(row["kappa"]), row.get("kappa_lo"),
                           row.get("kappa_hi"), int(row["n"]))
            if rank < len(ranked):
                nxt = ranked[rank]
                best.next_key, best.next_kappa = _key(nxt), float(nxt["kappa"])
                best.next_layer = setting_layer(best.next_key, defaults)
                result = compare(read(key, language), read(best.next_key, language), labels, correlation)
                best.n_common, best.reason = result["n"], result.get("reason", "")
                if "p" in result:
                    best.t, best.p = result["t"], result["p"]
                    best.significant = result["p"] < alpha
            else:
                best.reason = "no other setting in this language"
            out.append(best)
    return out


# ----- reading a run -----------------------------------------------------------------------------
def run_scores(run: RunDirectory) -> ScoreReader:
    """A ScoreReader over a RunDirectory: real predictions (noise `none`), no error, finite value."""
    import pyarrow.compute as pc

    dataset = run.score_dataset()
    cache: dict[tuple, dict[str, float]] = {}

    def read(key: ConfigKey, language: str) -> dict[str, float]:
        if (*key, language) not in cache:
            where = ((pc.field("metric") == key.metric) & (pc.field("scorer") == key.scorer) & (pc.field("context") == key.context)
                     & (pc.field("variant") == key.variant) & (pc.field("language") == language) & (pc.field("noise") == "none"))
            table = dataset.to_table(filter=where, columns=["sample_id", "value", "error"])
            cache[(*key, language)] = {
                s: float(v) for s, v, e in zip(*(table[c].to_pylist() for c in ("sample_id", "value", "error")))
                if e is None and v is not None and math.isfinite(v)
            }
        return cache[(*key, language)]

    return read


def label_ordinals(run: RunDirectory) -> dict[str, int]:
    from engine.calibrate.run_directory import expert_labels
    from engine.records import LABELS

    table = expert_labels(run)
    return {s: LABELS.index(label) for s, label in zip(table["sample_id"].to_pylist(), table["label"].to_pylist())}


def significance_options(settings: dict[str, Any]) -> tuple[str, float]:
    """(correlation, alpha) of the run's significance options (the perturb stage's setting), else the defaults."""
    options = settings.get(SIGNIFICANCE_SETTING) or {}
    return str(options.get("correlation", DEFAULT_CORRELATION)), float(options.get("alpha", DEFAULT_ALPHA))


def run_best_settings(run: RunDirectory, agreement: list[dict[str, Any]] | None = None, top: int = BEST_ROWS) -> list[BestRow]:
    """best_settings of a finished run directory (a RunDirectory opened with its layout;
    agreement rows read from its calibration.parquet unless given)."""
    import pyarrow.parquet as pq

    from engine.records import CALIBRATION_SCHEMA

    if agreement is None:
        path = run.path("calibration.parquet")
        if not path.exists():
            return []
        agreement = [r for r in pq.read_table(path, schema=CALIBRATION_SCHEMA).to_pylist()
                     if r["task"] == "agreement" and (r["group_by"] or "language") == "language"]
    settings = report_settings(run.manifest, run.plan)
    correlation, alpha = significance_options(settings)
    return best_settings(agreement, run_scores(run), label_ordinals(run), representative_layers(settings), top, correlation, alpha)


def tied_count(rows: list[BestRow], language: str) -> int:
    """How many listed settings of `language` share its highest kappa (1: a single best)."""
    mine = [r for r in rows if r.language == language]
    if not mine:
        return 0
    top = mine[0].kappa
    count = sum(1 for r in mine if same_kappa(r.kappa, top))
    last = mine[-1]  # the setting after the last listed one may tie too
    if count == len(mine) and last.next_kappa is not None and same_kappa(last.next_kappa, top):
        count += 1
    return count


# ----- text ------------------------------------------------------------------------------------------
def setting_text(key: ConfigKey, layer: int | None = None) -> str:
    variant = LAYER_VARIANT.sub(r"\2", key.variant)
    parts = [key.metric] + ([short_scorer(key.scorer)] if key.scorer else []) + ([f"layer {layer}"] if layer is not None else [])
    parts += ([f"context {key.context}"] if key.context else []) + ([variant] if variant not in ("", "score") else [])
    return " · ".join(parts)


def interval_text(lo: float | None, hi: float | None) -> str:
    return f"[{lo:.2f}, {hi:.2f}]" if _finite(lo) and _finite(hi) else "[no interval]"


def verdict_text(row: BestRow) -> str:
    if row.significant is None:
        return f"not tested ({row.reason})"
    word = "significantly better" if row.significant else "not significantly better"
    return f"{word} (Williams p = {row.p:.3g}, n = {row.n_common})"


def best_lines(run: RunDirectory) -> str:
    """The console's best setting per language (rank 1 of the report's table), one line each; a
    language of the calibration with no fitted setting gets a line with its most frequent reason."""
    import pyarrow.parquet as pq

    from engine.calibrate.reasons import grouped_reasons
    from engine.records import CALIBRATION_SCHEMA

    path = run.path("calibration.parquet")
    if not path.exists():
        return ""
    agreement = [r for r in pq.read_table(path, schema=CALIBRATION_SCHEMA).to_pylist()
                 if r["task"] == "agreement" and (r["group_by"] or "language") == "language"]
    rows = run_best_settings(run, agreement, top=BEST_ROWS)  # enough rows to see a tie
    best = {r.language for r in rows}
    unfitted = sorted({str(r["language"]) for r in agreement if r["language"]} - best)
    if not rows and not unfitted:
        return ""
    lines = [f"best setting per language ({BEST_DEFINITION}; bootstrap interval; against the runner-up by Williams' test):"]
    width = max(len(language_name(language)) for language in [*best, *unfitted])
    disordered = {(r["metric"], r["scorer"], r["context"], r["variant"], r["language"]) for r in agreement
                  if r["fitted"] and regions_out_of_order(r.get("region_labels"))}
    for language in dict.fromkeys(r.language for r in rows):
        r = next(x for x in rows if x.language == language)
        flag = " | regions out of label order" if (*r.key, r.language) in disordered else ""
        tied = tied_count(rows, language)
        if tied > 1:  # said as the report says it: no setting is named as the best
            mine = [x for x in rows if x.language == language]
            names = "; ".join(setting_text(x.key, x.layer) for x in mine[:min(tied, 3)])
            more = f" and {tied - 3} more" if tied > 3 else ""
            lines.append(f"  {language_name(language).ljust(width)}  no single best: {tied} settings share κ {r.kappa:.2f} "
                         f"{interval_text(r.lo, r.hi)}, n = {r.n} ({names}{more}){flag}")
            continue
        nxt = f" | next: {setting_text(r.next_key, r.next_layer)} κ {r.next_kappa:.2f}, {verdict_text(r)}" if r.next_key is not None else ""
        lines.append(f"  {language_name(r.language).ljust(width)}  {setting_text(r.key, r.layer)}  κ {r.kappa:.2f} "
                     f"{interval_text(r.lo, r.hi)}, n = {r.n}{nxt}{flag}")
    for language in unfitted:
        reasons = grouped_reasons(r for r in agreement if r["language"] == language)
        why = f": {reasons[0].text}" if reasons else ""
        lines.append(f"  {language_name(language).ljust(width)}  no fitted setting{why}")
    if disordered:
        fitted = sum(1 for r in agreement if r["fitted"])
        lines.append(f"warning: {len(disordered)} of {fitted} fitted settings have KDE regions out of label order (e.g. partial "
                     "below incorrect): there a higher score is not a better label; the report's strip plots frame them")
    return "\n".join(lines)
