"""The cross-language table of fine-tuned judges: each adapter on each test language against
its base model, as the study's tables show them.

Per (adapter judge, language), on the candidates both the adapter and the base labelled
(parse ok) and the experts labelled: quadratic kappa, Pearson and Spearman with the experts
(labels as ordinals incorrect 0 < partial 1 < correct 2), the base model's three beside them,
and Williams' t for "the adapter's labels correlate better with the experts' than the base
model's" (Pearson; one-sided, df = n - 3; the two judge the same items, so the correlations
are dependent). A cell whose test cannot be computed says why in `reason`.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import pyarrow as pa

from engine.records import LABELS

SCHEMA = pa.schema([pa.field(n, t) for n, t in [
    ("judge", pa.string()), ("base", pa.string()), ("language", pa.string()), ("n", pa.int64()), ("kappa", pa.float64()),
    ("pearson", pa.float64()), ("spearman", pa.float64()), ("base_kappa", pa.float64()), ("base_pearson", pa.float64()),
    ("base_spearman", pa.float64()), ("r_between", pa.float64()), ("t", pa.float64()), ("p", pa.float64()),
    ("reason", pa.string())]])


def _correlations(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    from scipy import stats

    if a.size < 3 or np.all(a == a[0]) or np.all(b == b[0]):
        return math.nan, math.nan
    return float(np.corrcoef(a, b)[0, 1]), float(stats.spearmanr(a, b).statistic)


def _kappa(expert: np.ndarray, judged: np.ndarray) -> float:
    from engine.calibrate.agreement import confusion_matrix, quadratic_kappa

    if expert.size == 0:
        return math.nan
    return float(quadratic_kappa(confusion_matrix(expert.astype(int), judged.astype(int), len(LABELS))))


def adapter_table(judgments: pa.Table, experts: Mapping[str, str | None], base_of: Mapping[str, str]) -> pa.Table:
    """judgments: judge rows (judge, sample_id, language, parse_status, label); experts: sample_id ->
    expert label; base_of: adapter judge name -> its base judge's name (both among the rows)."""
    from engine.stats import williams_test

    labelled: dict[tuple[str, str], dict[str, int]] = {}
    for row in judgments.select(["judge", "sample_id", "language", "parse_status", "label"]).to_pylist():
        if row["parse_status"] == "ok" and row["label"] in LABELS and experts.get(row["sample_id"]) in LABELS:
            labelled.setdefault((row["judge"], row["language"]), {})[row["sample_id"]] = LABELS.index(row["label"])
    languages = sorted({language for _judge, language in labelled})
    out: list[dict[str, Any]] = []
    for judge, base in base_of.items():
        for language in languages:
            mine, theirs = labelled.get((judge, language), {}), labelled.get((base, language), {})
            common = sorted(set(mine) & set(theirs))
            z = np.array([LABELS.index(experts[s]) for s in common], dtype=float)
            x = np.array([mine[s] for s in common], dtype=float)
            y = np.array([theirs[s] for s in common], dtype=float)
            record: dict[str, Any] = {"judge": judge, "base": base, "language": language, "n": len(common),
                                      "kappa": _kappa(z, x), "base_kappa": _kappa(z, y), "t": math.nan, "p": math.nan,
                                      "reason": None}
            record["pearson"], record["spearman"] = _correlations(x, z)
            record["base_pearson"], record["base_spearman"] = _correlations(y, z)
            record["r_between"] = _correlations(x, y)[0]
            if len(common) <= 3:
                record["reason"] = f"{len(common)} candidates labelled by both; Williams' test needs more than 3"
            elif any(math.isnan(record[k]) for k in ("pearson", "base_pearson", "r_between")):
                record["reason"] = "a correlation is undefined (constant labels)"
            else:
                try:
                    record["t"], record["p"] = williams_test(record["pearson"], record["base_pearson"], record["r_between"],
                                                             len(common))
                except ValueError as exc:
                    record["reason"] = str(exc)
            out.append(record)
    return pa.Table.from_pylist(out, schema=SCHEMA)


def write_judges_table(run_root: Any, judges: Any, samples: pa.Table, judgments: pa.Table) -> None:
    """RUN/judge_analysis/adapter_table.parquet for the judges with `lora:` of a judge stage, each
    against the judge of the same model without one (skipped when no such base judge is configured)."""
    from pathlib import Path

    from engine.io.atomic import write_parquet_atomic

    base_of = {}
    for judge in judges:
        if judge.lora is None:
            continue
        bases = [b.judge_name for b in judges if b.lora is None and b.model == judge.model and b.backend == judge.backend]
        if bases:
            base_of[judge.judge_name] = bases[0]
    if not base_of:
        return
    experts = dict(zip(samples.column("sample_id").to_pylist(), samples.column("label").to_pylist()))
    write_parquet_atomic(Path(run_root) / "judge_analysis" / "adapter_table.parquet",
                         adapter_table(judgments, experts, base_of))


def summary_lines(table: pa.Table) -> list[str]:
    """The table for the console: one line per adapter and language."""
    def f(v: float | None) -> str:
        return "  –  " if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:+.3f}"

    lines = [f"{'adapter':<24} {'lang':<4} {'n':>4} {'kappa':>7} {'base':>7} {'pearson':>7} {'spearman':>8} {'p':>7}"]
    for r in table.to_pylist():
        lines.append(f"{r['judge'][:24]:<24} {r['language']:<4} {r['n']:>4} {f(r['kappa']):>7} {f(r['base_kappa']):>7} "
                     f"{f(r['pearson']):>7} {f(r['spearman']):>8} {f(r['p']):>7}" + (f"  ({r['reason']})" if r["reason"] else ""))
    return lines


def table_html(rows: list[dict[str, Any]]) -> str:
    """The adapter x language table: kappa per cell with the base's, correlations, Williams' p."""
    from html import escape

    from engine.report.page import kappa_style
    from engine.report.score_settings import language_name

    def num(v: Any, kappa: bool = False) -> str:
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            return "<td>–</td>"
        return f'<td style="{kappa_style(v)}">{v:.3f}</td>' if kappa else f"<td>{v:.3f}</td>"

    head = ("<tr><th>adapter</th><th>test language</th><th>n</th><th>kappa</th><th>base kappa</th><th>Pearson</th>"
            "<th>base Pearson</th><th>Spearman</th><th>base Spearman</th><th>Williams t</th><th>p</th><th>note</th></tr>")
    body = "".join(
        f"<tr><td class=lbl>{escape(r['judge'])}</td><td class=lbl>{escape(language_name(r['language']))}</td><td>{r['n']}</td>"
        f"{num(r['kappa'], True)}{num(r['base_kappa'], True)}{num(r['pearson'])}{num(r['base_pearson'])}"
        f"{num(r['spearman'])}{num(r['base_spearman'])}{num(r['t'])}{num(r['p'])}"
        f"<td class=lbl>{escape(r['reason'] or ('better than the base (p < 0.05)' if r['p'] < 0.05 else 'no significant gain'))}</td></tr>"
        for r in rows)
    return (f'<div class="scroll"><table class="values judge adapters"><thead>{head}</thead><tbody>{body}</tbody>'
            "</table></div>")
