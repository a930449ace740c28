"""The report's judge section: HTML tables from RUN/judge_analysis/*.parquet, and the HTTP
judges' request counts (retries, failures) from the manifest's throughput counters.

`judge_section(run_root)` returns (anchor, title, body HTML), or None when the run has no
judge analysis; the report wraps it like its other sections.
"""
from __future__ import annotations

import math
from html import escape
from pathlib import Path
from typing import Any, Sequence

import pyarrow.parquet as pq

from engine.io.manifest import Manifest
from engine.judge.analysis import OUTPUT_DIR, ROUTES
from engine.judge.parse import PARSE_CLASSES
from engine.judge.usage import KEY as USAGE_KEY

# Columns that hold a kappa are coloured as the report's other kappa tables; language and prompt
# language are written as names, as elsewhere in the report.
_KAPPA_COLUMNS = {"kappa", "metric_kappa", "kappa_with", "kappa_without"}
_LANGUAGE_COLUMNS = {"language", "prompt_language"}


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "–" if math.isnan(value) else f"{value:.3f}"
    if value is None:
        return "–"
    return escape(str(value))


def _cell(column: str, value: Any) -> str:
    from engine.report.page import kappa_style
    from engine.report.score_settings import language_name

    if column in _LANGUAGE_COLUMNS and isinstance(value, str):
        return f"<td class=lbl>{escape(language_name(value) if value != 'sample' else 'the sample’s')}</td>"
    if column == "best_setup" and isinstance(value, str):  # "judge/task/strategy/lang/with", written as the setup columns
        from engine.judge.analysis import SETUP

        parts = dict(zip(SETUP, value.split("/")))
        if "prompt_language" in parts:
            parts["prompt_language"] = language_name(parts["prompt_language"])
        parts.pop("task", None)  # the judge's task id repeats its name
        return f"<td class=lbl>{escape(' · '.join(parts.values()))}</td>"
    if column == "best_setup" and value is None:
        return '<td class=lbl title="no setup detects the code (F1 0) or several share the best F1">no single best</td>'
    if column in _KAPPA_COLUMNS and isinstance(value, float) and math.isfinite(value):
        return f'<td style="{kappa_style(value)}">{value:.3f}</td>'
    css = ' class=lbl' if isinstance(value, str) else ""
    return f"<td{css}>{_fmt(value)}</td>"


def _table(rows: Sequence[dict[str, Any]], columns: Sequence[str], headers: Sequence[str] | None = None) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in (headers or columns))
    body = "".join("<tr>" + "".join(_cell(c, r.get(c)) for c in columns) + "</tr>" for r in rows)
    # The report's table style (`values`); in a scroll box, so a wide setup table scrolls in place.
    return f'<div class="scroll"><table class="values judge"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _matrix(row: dict[str, Any]) -> str:
    classes = row["classes"]
    lines = [{"expert": c, **{f"→ {p}": f"{row['confusion'][i][j]} ({_fmt(row['confusion_row_norm'][i][j])} / "
                                         f"{_fmt(row['confusion_col_norm'][i][j])})" for j, p in enumerate(classes)}}
             for i, c in enumerate(classes)]
    return _table(lines, ["expert", *[f"→ {p}" for p in classes]])


def best_metric_kappa(run_root: str | Path) -> dict[str, tuple[float, str]]:
    """language -> (kappa, setting) of the metric setting that agrees best with the experts,
    from RUN/calibration.parquet (agreement, generators pooled); empty without calibration."""
    path = Path(run_root) / "calibration.parquet"
    if not path.is_file():
        return {}
    best: dict[str, tuple[float, str]] = {}
    for row in pq.read_table(path).to_pylist():
        if row["task"] != "agreement" or not row["fitted"] or (row.get("group_by") or "language") != "language":
            continue
        kappa = row["kappa"]
        if kappa is None or math.isnan(kappa):
            continue
        from engine.report.score_settings import ConfigKey

        # Named as everywhere in the report ("bertscore · all-MiniLM-L6-v2 · none · P").
        setting = ConfigKey(row["metric"], row["scorer"], row["context"], row["variant"]).label()
        if row["language"] not in best or kappa > best[row["language"]][0]:  # all fitted settings, as the Best settings table
            best[row["language"]] = (kappa, setting)
    return best


def _reference_part(rows: list[dict[str, Any]]) -> list[str]:
    """Kappa with and without the original comment in the prompt, per language, with Williams' test."""
    if not any(row["n_without"] for row in rows):  # no judge ran reference-free: nothing to compare
        return []
    for row in rows:
        row["finding"] = row["reason"] or (
            "without agrees better (p < 0.05)" if row["p"] < 0.05 else
            "with agrees better (p < 0.05)" if row["p"] > 0.95 else "no significant difference")
    return [
        "<h3>Reference-free judging: kappa with and without the original comment, side by side</h3>",
        "<p>On the candidates parsed in both modes. Williams' t (one-sided, df = n - 3) tests whether the "
        "reference-free labels correlate better with the experts' (labels as ordinals, Pearson).</p>",
        _table(rows, ["language", "judge", "strategy", "prompt_language", "n", "kappa_with", "kappa_without", "r_with",
                      "r_without", "t", "p", "finding"],
               ["language", "judge", "strategy", "prompt language", "n", "kappa with", "kappa without", "r with",
                "r without", "Williams t", "p", "finding"]),
    ]


def http_request_rates(run_root: str | Path) -> list[dict[str, Any]]:
    """Per HTTP judge task: requests, retries, failed requests and their rates (committed parts only)."""
    try:
        manifest = Manifest.load(Path(run_root) / "manifest.json")
    except (OSError, ValueError):
        return []
    rows = []
    for task, entry in sorted(manifest.throughput.get("tasks", {}).items()):
        counters = entry.get("counters") or {}
        requests = int(counters.get("judge_http_requests", 0))
        if not requests:
            continue
        retries, failed = int(counters.get("judge_http_retries", 0)), int(counters.get("judge_http_failed", 0))
        send_s = float(counters.get("judge_http_send_s", 0.0))
        rows.append({"task": task, "requests": requests, "retries": retries, "failed": failed,
                     "retry_rate": retries / requests, "failure_rate": failed / requests,
                     "http_429": int(counters.get("judge_http_429", 0)), "overloads": int(counters.get("judge_http_overloads", 0)),
                     "concurrency_cuts": int(counters.get("judge_http_concurrency_cuts", 0)),
                     "requests_per_s": requests / send_s if send_s > 0 else math.nan})
    return rows


def _http_part(run_root: str | Path) -> list[str]:
    rows = http_request_rates(run_root)
    if not rows:
        return []
    return [
        "<h3>HTTP judge requests: throughput, 429s, retries and failures</h3>",
        "<p>Retries: attempts after a request's first (429, 5xx, timeouts, dropped connections, cut answers; "
        "within max_retries and retry_budget_s). Failed: requests whose retries were spent or that were refused; "
        "each is an api_error judgment with its reason in the error column. Requests/s: requests over the time "
        "the parts spent sending them. Overload answers (429, 503, 524, timeouts) halve the requests in flight "
        "(concurrency cuts, also on rising latency); each success adds back, up to max_concurrency.</p>",
        _table(rows, ["task", "requests", "requests_per_s", "http_429", "overloads", "concurrency_cuts", "retries",
                      "failed", "retry_rate", "failure_rate"],
               ["judge task", "requests", "requests / s", "429 answers", "overload answers", "concurrency cuts",
                "retries", "failed", "retries / request", "failure rate"]),
    ]


def adapter_part(rows: list[dict[str, Any]]) -> list[str]:
    """The fine-tuned judges: each LoRA adapter on each test language against its base model."""
    if not rows:
        return []
    from engine.judge.adapter_table import table_html

    return [
        "<h3>Fine-tuned judges: each adapter on each test language, against the base model</h3>",
        "<p>On the candidates the adapter and the base model both labelled and the experts labelled: quadratic kappa, "
        "Pearson and Spearman with the experts (labels as ordinals), the base model's beside them. Williams' t "
        "(one-sided, df = n - 3) tests whether the adapter's labels correlate better with the experts' than the base's "
        "(Pearson; both judge the same items).</p>",
        table_html(rows),
    ]


def no_kappa_notes(agreement: list[dict[str, Any]], parse_rates: list[dict[str, Any]]) -> list[str]:
    """Why a row of the agreement table has no kappa, as text under it (a screenshot keeps it):
    none of its answers parsed into a label, and what they were instead (from the parse classes)."""
    from engine.report.score_settings import language_name

    keys = ("judge", "strategy", "prompt_language", "reference")
    rates = {tuple(r[k] for k in keys): r for r in parse_rates}
    notes = []
    for row in agreement:
        if row.get("n"):
            continue
        rate = rates.get(tuple(row[k] for k in keys))
        failures = sorted(((rate.get(f"rate_{c}") or 0.0, c) for c in PARSE_CLASSES if c != "ok"), reverse=True) if rate else []
        what = ", ".join(f"{100 * share:.0f}% {name}" for share, name in failures if share > 0) or "no expert labels for them"
        notes.append(f"{escape(language_name(row['language']))}, {escape(row['judge'])} · {escape(row['strategy'])} · "
                     f"{escape(str(row['prompt_language']))} · {escape(str(row['reference']))}: no answer gave a label "
                     f"({what}; see the parse classes below)")
    if not notes:
        return []
    return ["<p>No judge kappa (–) where:</p><ul>" + "".join(f"<li>{n}</li>" for n in notes) + "</ul>"]


def judge_section(run_root: str | Path) -> tuple[str, str, str] | None:
    folder = Path(run_root) / OUTPUT_DIR
    if not (folder / "agreement.parquet").is_file():
        return None
    read = {name: pq.read_table(folder / f"{name}.parquet").to_pylist() if (folder / f"{name}.parquet").is_file() else []
            for name in ("agreement", "pooled_confusion", "code_summary", "parse_rates", "reference_comparison")}
    setup = ["judge", "strategy", "prompt_language", "reference"]
    setup_headers = ["judge", "strategy", "prompt language", "reference"]
    from engine.report.score_settings import order_languages

    # languages in the report's one order (study order, then the others alphabetically)
    for name in ("agreement", "reference_comparison"):
        rank = {lang: i for i, lang in enumerate(order_languages({r["language"] for r in read[name]}))}
        read[name].sort(key=lambda r: rank[r["language"]])
    metrics = best_metric_kappa(run_root)
    usage = {tuple(u[k] for k in USAGE_KEY): u for u in
             (pq.read_table(folder / "usage.parquet").to_pylist() if (folder / "usage.parquet").is_file() else [])}
    for row in read["agreement"]:
        kappa, setting = metrics.get(row["language"], (math.nan, "–"))
        row["metric_kappa"], row["metric_setting"] = kappa, setting
        spent = usage.get(tuple(row.get(k) for k in USAGE_KEY), {})
        row.update({k: spent.get(k) for k in ("prompt_tokens", "completion_tokens", "cost")})
    parts = [
        "<h3>Agreement with the experts (quadratic kappa, pooled over generators), beside the best metric</h3>",
        "<p>Candidates judged: every (file, generator) the judge was asked about; with a label: those whose answer "
        "parsed into a label and that have an expert label (the kappa's n). Best metric: the metric setting with the "
        "highest kappa in that language among all fitted settings, as in the Best settings table. Reference: whether "
        "the prompt held the original comment (with) or not (without). Tokens: as the server (or engine) counted "
        "them, each call once; cost: at the judge's price_per_million (– without prices).</p>",
        _table(read["agreement"], ["language", *setup, "n_rows", "n", "kappa", "prompt_tokens", "completion_tokens", "cost",
                                   "metric_kappa", "metric_setting"],
               ["language", *setup_headers, "candidates judged", "with a label", "judge kappa", "prompt tokens",
                "completion tokens", "cost", "best metric kappa", "best metric setting"]),
        *no_kappa_notes(read["agreement"], read["parse_rates"]),
        "<h3>Pooled confusion (counts, row- / column-normalised; the clustered strategies hierarchical and combined left out)</h3>",
    ]
    for row in read["pooled_confusion"]:
        who = "all judges together" if row["judge"] == "*" else f"judge {escape(row['judge'])}"
        parts.append(f"<h4>{who} (n = {row['n']}, kappa {_fmt(row['kappa'])})</h4>{_matrix(row)}")
    parts += _reference_part(read["reference_comparison"])
    adapters = folder / "adapter_table.parquet"
    parts += adapter_part(pq.read_table(adapters).to_pylist() if adapters.is_file() else [])
    route_columns = [f"route_{m}" for m in ROUTES]
    parts += [
        "<h3>Candidates parsed per strategy, and the extraction route that read them</h3>",
        "<p>Routes: whole (the answer is JSON), fenced (a ```json block), balanced (an object in prose), "
        "tolerant (decoded after removing comments and trailing commas). Partial responses: files whose "
        "answer parsed for some candidates only.</p>",
        _table(read["parse_rates"], [*setup, "n", "parsed", *route_columns, "responses", "responses_partial"],
               [*setup_headers, "candidates", "parsed", *ROUTES, "responses", "partial responses"]),
    ]
    rate_columns = [f"rate_{c}" for c in PARSE_CLASSES]
    parts += [
        "<h3>Parse classes, hallucinated codes, codes per comment</h3>",
        _table(read["parse_rates"], [*setup, "n", *rate_columns, "hallucinated_code_rate", "codes_per_comment"],
               [*setup_headers, "candidates", *PARSE_CLASSES, "hallucinated codes", "codes / comment"]),
        "<h3>Error codes: mean and best setup (precision / recall over file x generator pairs)</h3>",
        _table(read["code_summary"], ["code", "setups", "mean_precision", "mean_recall", "best_setup", "best_precision",
                                      "best_recall"],
               ["code", "setups", "mean precision", "mean recall", "best setup", "its precision", "its recall"]),
        "<p>Best setup: the one setup with the highest F1 for the code; <em>no single best</em> where no setup detects "
        "the code (every F1 0) or several share the highest F1.</p>",
    ]
    parts += _http_part(run_root)
    return "judges", "LLM judges", "\n".join(parts)
