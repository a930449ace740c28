"""The report's round-trip section: pass@1 and SONAR scores per natural language and generator.

Reads RUN/roundtrip/ (ROUNDTRIP_SCHEMA rows), only the score columns. Per (generator,
language): the number of regenerations, mean pass@1 and correctness over regenerations that
ran (rows whose generation failed, the `error` column, excluded and counted; a sandbox task
error, status `error`, counts as not passed), and abstraction, conciseness and fluency averaged over
(task, language) groups (they are per group, repeated on each row). The drop from English is
the English value minus the language's value for the same generator (positive: worse).
"""
from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds

from engine.records import ROUNDTRIP_SCHEMA

DIRECTORY = "roundtrip"
ROW_METRICS = ("pass_at_1", "correctness")
GROUP_METRICS = ("abstraction", "conciseness", "fluency")
COLUMNS = ["task_id", "programming_language", "language", "generator", "status", "error", *ROW_METRICS, *GROUP_METRICS]
LANGUAGE_ORDER = ("en", "nl", "zh", "el", "pl")
esc = html.escape


def _mean(values: list[float]) -> float:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else math.nan


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One summary row per (generator, language), English first; with `drop_<metric>` columns."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["generator"], row["language"]), []).append(row)
    out = []
    for (generator, language), members in groups.items():
        ran = [r for r in members if r["error"] is None and r["status"] != "skipped"]
        per_task: dict[str, dict[str, Any]] = {}
        for r in members:
            per_task.setdefault(r["task_id"], r)
        summary = {"generator": generator, "language": language, "n": len(members), "errors": len(members) - len(ran),
                   "tasks": len(per_task)}
        for metric in ROW_METRICS:
            summary[metric] = _mean([r[metric] for r in ran])
        for metric in GROUP_METRICS:
            summary[metric] = _mean([r[metric] for r in per_task.values()])
        out.append(summary)
    english = {s["generator"]: s for s in out if s["language"] == "en"}
    for s in out:
        base = english.get(s["generator"])
        for metric in (*ROW_METRICS, *GROUP_METRICS):
            s[f"drop_{metric}"] = base[metric] - s[metric] if base is not None and s["language"] != "en" else math.nan
    rank = {lang: i for i, lang in enumerate(LANGUAGE_ORDER)}
    return sorted(out, key=lambda s: (s["generator"], rank.get(s["language"], len(rank)), s["language"]))


def read_rows(run_root: str | Path) -> list[dict[str, Any]] | None:
    folder = Path(run_root) / DIRECTORY
    files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    if not files:
        return None
    return ds.dataset([str(f) for f in files], schema=ROUNDTRIP_SCHEMA, format="parquet").to_table(columns=COLUMNS).to_pylist()


def _fmt(value: float, signed: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "&ndash;"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def section_html(run_root: str | Path, signatures: dict[str, Any] | None = None) -> str | None:
    """HTML body of the section, or None when the run has no round-trip rows."""
    rows = read_rows(run_root)
    if rows is None:
        return None
    summary = summarise(rows)
    metrics = [m for m in (*ROW_METRICS, *GROUP_METRICS) if any(math.isfinite(s[m]) for s in summary)]
    names = {"pass_at_1": "pass@1"}
    head = "".join(f"<th>{esc(names.get(m, m))}</th>" for m in metrics)
    drops = "".join(f"<th>drop {esc(names.get(m, m))}</th>" for m in metrics)
    body = []
    for s in summary:
        cells = "".join(f'<td data-metric="{m}">{_fmt(s[m])}</td>' for m in metrics)
        drop_cells = "".join(f'<td data-metric="drop_{m}">{_fmt(s["drop_" + m], signed=True)}</td>' for m in metrics)
        body.append(f'<tr data-generator="{esc(s["generator"])}" data-language="{esc(s["language"])}"><th scope=row>{esc(s["generator"])}</th>'
                    f'<td>{esc(s["language"])}</td><td>{s["tasks"]}</td><td>{s["n"]}</td><td>{s["errors"]}</td>{cells}{drop_cells}</tr>')
    table = (f'<table class="values roundtrip"><thead><tr><th>generator</th><th>language</th><th>tasks</th><th>regenerations</th>'
             f'<th>errors</th>{head}{drops}</tr></thead><tbody>{"".join(body)}</tbody></table>')
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    status_text = ", ".join(f"{esc(k)}: {v}" for k, v in sorted(statuses.items()))
    by_language: dict[str, list[float]] = {}
    for r in rows:
        if r["error"] is None and r["status"] != "skipped":
            by_language.setdefault(r["programming_language"], []).append(r["pass_at_1"])
    languages = "".join(f'<li data-programming-language="{esc(lang)}">{esc(lang)}: pass@1 {_fmt(_mean(values))} over '
                        f'{len(values)} regenerations</li>' for lang, values in sorted(by_language.items()))
    intro = ("<p>A comment is turned back into code by each generator; the code runs in the sandbox. pass@1: all tests pass. "
             "correctness: share of differential-testing inputs on which the regenerated function agrees with the original. "
             "abstraction: 1 &minus; mean pairwise similarity of the regenerations. Drop: English minus the language "
             "(positive: the language does worse).</p>")
    sigs = ""
    for task, by_metric in sorted((signatures or {}).items()):
        if task.startswith("roundtrip-") and isinstance(by_metric, dict):
            sigs += "".join(f"<li><code>{esc(str(v))}</code></li>" for v in by_metric.values())
    return (intro + table + f'<p class="note">Sandbox verdicts: {status_text}.</p>'
            + f'<p class="note">Per programming language:</p><ul class="programming-languages">{languages}</ul>'
            + (f"<ul>{sigs}</ul>" if sigs else ""))


def report_section(run_root: str | Path, signatures: dict[str, Any] | None) -> tuple[str, str, str] | None:
    """The report's (anchor, title, body) of the round trip, or None when the run has none."""
    body = section_html(run_root, signatures)
    return None if body is None else ("roundtrip", "Execution round trip", body)
