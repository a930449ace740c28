"""Does a metric track the experts, and is "x agrees better than y" more than noise?

RUN/significance.parquet holds two kinds of rows, per language: `correlation` (Spearman's rho
and Kendall's tau-b between a setting's scores of the real predictions and the expert labels
as ordinals) and `williams` (Williams' t, one-sided, H1: corr(x, labels) > corr(y, labels), on
the same items). Pairs: each neural setting's `full` and `minimal` context against its `none`
(`context_pairs`) and the configured `pairs`; p is Holm-adjusted over a language's comparisons
by default (`adjust`) and a comparison is significant when p_adjusted < alpha.
docs/perturbation.md ("Significance") has the details.

Memory: one language at a time; of it, only the real-prediction values of each setting.
"""
from __future__ import annotations

import logging
import math
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from scipy import stats

from engine.io.atomic import write_parquet_atomic
from engine.perturb.analysis import read_task, score_task_files
from engine.records import LABELS, SIGNIFICANCE_SCHEMA
from engine.stats import williams_test

if TYPE_CHECKING:
    from engine.io.rundir import RunDirectory
    from engine.perturb.params import PerturbParams

logger = logging.getLogger(__name__)

SIGNIFICANCE_FILE = "significance.parquet"
Setting = tuple[str, str, str, str]  # metric, scorer, variant, context


def _corr(a: np.ndarray, b: np.ndarray, kind: str) -> float:
    if a.size < 3 or np.all(a == a[0]) or np.all(b == b[0]):
        return float("nan")
    result = stats.spearmanr(a, b) if kind == "spearman" else stats.pearsonr(a, b)
    return float(result.statistic)


def label_ordinals(samples_tables: Any) -> dict[str, int]:
    """sample_id -> 0 (incorrect), 1 (partial), 2 (correct), for labelled samples."""
    out: dict[str, int] = {}
    for table in samples_tables:
        for sid, label in zip(table["sample_id"].to_pylist(), table["label"].to_pylist()):
            if label in LABELS:
                out[sid] = LABELS.index(label)
    return out


def _short(scorer: str) -> str:
    return scorer.replace("pypi:", "").replace("demo:", "").rstrip("/").rsplit("/", 1)[-1]


def setting_label(s: Setting) -> str:
    metric, scorer, variant, context = s
    parts = [metric] + ([_short(scorer)] if scorer else []) + ([variant] if variant and variant != "score" else [])
    return " ".join(parts) + (f" with context {context}" if context else "")


def _sentence(language: str, x: Setting, y: Setting, r_xz: float, r_yz: float, t: float, p: float, p_adj: float, n: int,
              kind: str, adjust: str) -> str:
    from engine.report.score_settings import language_name

    name = language_name(language)
    adjusted = f", Holm-adjusted {p_adj:.3g}" if adjust == "holm" else ""
    return (f"In {name}, {setting_label(x)} agrees with the expert labels better than {setting_label(y)} "
            f"({kind.capitalize()} {r_xz:.2f} vs {r_yz:.2f}; Williams t = {t:.2f}, one-sided p = {p:.3g}{adjusted}, n = {n}).")


def default_context_pairs(settings: list[Setting]) -> list[tuple[Setting, Setting]]:
    """Each neural setting's `full` and `minimal` against its `none` (when all are present)."""
    present = set(settings)
    pairs = []
    for metric, scorer, variant, context in sorted(settings):
        if scorer and context in ("full", "minimal") and (metric, scorer, variant, "none") in present:
            pairs.append(((metric, scorer, variant, context), (metric, scorer, variant, "none")))
    return pairs


def language_rows(language: str, values: dict[Setting, dict[str, float]], labels: dict[str, int], params: Any) -> list[dict[str, Any]]:
    """Correlation and Williams rows of one language. values: setting -> sample_id -> score."""
    rows: list[dict[str, Any]] = []
    for setting in sorted(values):
        ids = sorted(s for s, v in values[setting].items() if s in labels and math.isfinite(v))
        x = np.array([values[setting][s] for s in ids], dtype=np.float64)
        z = np.array([labels[s] for s in ids], dtype=np.float64)
        row = dict(zip(("metric", "scorer", "variant", "context"), setting), kind="correlation", language=language, n=len(ids))
        if len(ids) < 3 or np.all(x == x[0]) or np.all(z == z[0]):
            row["reason"] = "fewer than 3 labelled items, or constant scores or labels"
        else:
            rho = stats.spearmanr(x, z)
            tau = stats.kendalltau(x, z, variant="b")
            row.update(spearman=float(rho.statistic), spearman_p=float(rho.pvalue),
                       kendall=float(tau.statistic), kendall_p=float(tau.pvalue))
        rows.append(row)
    pairs = default_context_pairs(list(values)) if params.context_pairs else []
    pairs += [(p.x.key(), p.y.key()) for p in params.pairs]
    for x_key, y_key in pairs:
        row = dict(zip(("metric", "scorer", "variant", "context"), x_key), kind="williams", language=language,
                   **dict(zip(("metric_y", "scorer_y", "variant_y", "context_y"), y_key)))
        if x_key not in values or y_key not in values:
            rows.append(dict(row, n=0, reason="a setting of the pair has no scores in this language"))
            continue
        xs, ys = values[x_key], values[y_key]
        ids = sorted(s for s in xs.keys() & ys.keys() if s in labels and math.isfinite(xs[s]) and math.isfinite(ys[s]))
        x = np.array([xs[s] for s in ids], dtype=np.float64)
        y = np.array([ys[s] for s in ids], dtype=np.float64)
        z = np.array([labels[s] for s in ids], dtype=np.float64)
        row["n"] = len(ids)
        r_xz, r_yz, r_xy = _corr(x, z, params.correlation), _corr(y, z, params.correlation), _corr(x, y, params.correlation)
        row.update(r_xz=r_xz, r_yz=r_yz, r_xy=r_xy)
        if len(ids) <= 3 or not all(math.isfinite(r) for r in (r_xz, r_yz, r_xy)):
            rows.append(dict(row, reason="needs more than 3 common labelled items and defined correlations"))
            continue
        try:
            t, p = williams_test(r_xz, r_yz, r_xy, len(ids))
        except ValueError as exc:
            rows.append(dict(row, reason=str(exc)))
            continue
        row.update(t=t, p=p, direction="x>y" if r_xz > r_yz else ("y>x" if r_yz > r_xz else "x=y"))
        rows.append(row)
    tested = [r for r in rows if r["kind"] == "williams" and r.get("p") is not None]
    adjusted = holm([r["p"] for r in tested]) if params.adjust == "holm" else [r["p"] for r in tested]
    for r, p_adj in zip(tested, adjusted):
        x_key = (r["metric"], r["scorer"], r["variant"], r["context"])
        y_key = (r["metric_y"], r["scorer_y"], r["variant_y"], r["context_y"])
        r["p_adjusted"] = p_adj
        r["significant"] = p_adj < params.alpha
        if r["significant"]:
            r["sentence"] = _sentence(language, x_key, y_key, r["r_xz"], r["r_yz"], r["t"], r["p"], p_adj, r["n"],
                                      params.correlation, params.adjust)
    return rows


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (same order as given): the family-wise error stays
    below alpha when every p_adjusted < alpha is called significant."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out


def significance_table(run: "RunDirectory", params: "PerturbParams") -> pa.Table:
    """SIGNIFICANCE_SCHEMA table of a run (RunDirectory), one language at a time."""
    labels = label_ordinals(run.sample_tables())
    files = score_task_files(run)
    languages: set[str] = set()
    for paths in files.values():
        for path in paths:
            languages.update(pq.read_table(path, columns=["language"]).column("language").unique().to_pylist())
    rows: list[dict[str, Any]] = []
    for language in sorted(languages):
        values: dict[Setting, dict[str, float]] = defaultdict(dict)
        where = (ds.field("noise") == "none") & (ds.field("language") == language)
        for _, paths in sorted(files.items()):
            table = read_task(paths, where)
            table = table.filter(pc.is_null(table["error"]))
            cols = {c: table[c].to_pylist() for c in ("sample_id", "metric", "scorer", "variant", "context", "value")}
            for sid, m, s, v, c, value in zip(*cols.values()):
                values[(m, s, v, c)][sid] = float("nan") if value is None else value
        rows.extend(language_rows(language, values, labels, params))
    return pa.Table.from_pylist(rows, schema=SIGNIFICANCE_SCHEMA)


def write_significance(run: "RunDirectory", params: "PerturbParams") -> Path:
    """Write RUN/significance.parquet with the `perturb` section's `significance` options (SignificanceParams)."""
    table = significance_table(run, params)
    path = run.path(SIGNIFICANCE_FILE)
    write_parquet_atomic(path, table, SIGNIFICANCE_SCHEMA)
    logger.info("significance: %d row(s) written to %s", table.num_rows, path)
    return path
