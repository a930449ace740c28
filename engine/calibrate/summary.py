"""Plain tables over a run's samples and calibration: expert accuracy, error codes, and the
console's kappa table."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from engine.calibrate import reasons
from engine.calibrate.thresholds import AGREEMENT
from engine.records import LABELS

# Below this many samples per language a kappa's bootstrap interval is wide (the demo has 55).
SMALL_SAMPLE = 30


def _column(table: pa.Table, name: str) -> pa.Array:
    return table.column(name).combine_chunks()


def expert_accuracy_table(samples: pa.Table) -> pa.Table:
    """Share of correct / partial / incorrect expert labels per (language, generator).

    Rows without a known label are not counted; n is the number of labelled rows.
    """
    schema = pa.schema([("language", pa.string()), ("generator", pa.string()), ("n", pa.int64()),
                        ("share_correct", pa.float64()), ("share_partial", pa.float64()),
                        ("share_incorrect", pa.float64())])
    t = samples.select(["language", "generator", "label"])
    t = t.filter(pc.is_in(t.column("label"), value_set=pa.array(LABELS)))
    counts: dict[tuple, dict[str, int]] = {}
    for row in t.group_by(["language", "generator", "label"]).aggregate([([], "count_all")]).to_pylist():
        counts.setdefault((row["language"], row["generator"]), {})[row["label"]] = row["count_all"]
    out = []
    for (language, generator), by_label in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        n = sum(by_label.values())
        out.append(dict(language=language, generator=generator, n=n,
                        **{f"share_{k}": by_label.get(k, 0) / n for k in ("correct", "partial", "incorrect")}))
    return pa.Table.from_pylist(out, schema=schema)


def error_code_counts(samples: pa.Table) -> pa.Table:
    """How often each error code occurs per (language, generator); one row per code present."""
    schema = pa.schema([("language", pa.string()), ("generator", pa.string()), ("code", pa.string()),
                        ("count", pa.int64())])
    codes = _column(samples, "error_codes")
    flat = pc.list_flatten(codes)
    if len(flat) == 0:
        return schema.empty_table()
    parents = pc.list_parent_indices(codes)
    t = pa.table({
        "language": pc.take(_column(samples, "language"), parents),
        "generator": pc.take(_column(samples, "generator"), parents),
        "code": flat,
    })
    t = t.filter(pc.is_valid(t.column("code")))
    counted = t.group_by(["language", "generator", "code"]).aggregate([([], "count_all")])
    counted = counted.rename_columns(["language", "generator", "code", "count"]).cast(schema)
    return counted.sort_by([("language", "ascending"), ("generator", "ascending"), ("code", "ascending")])


_STUDY_LANGUAGES = ("en", "nl", "pl", "el", "zh")  # column order of the study's tables


def _short_scorer(scorer: str) -> str:
    return scorer.rstrip("/").rsplit("/", 1)[-1] if scorer else "-"


def kappa_summary(calibration: pa.Table, max_rows: int = 40) -> str:
    """Plain-text table of agreement kappa: (metric, scorer, variant, context) x language.

    With more than `max_rows` rows, metrics with several variants show only their F / avg
    variants (if they have any). Cells: kappa to 2 decimals, `n/f` not fitted, `-` absent.
    """
    rows = [r for r in calibration.to_pylist() if r["task"] == AGREEMENT and (r.get("group_by") or "language") == "language"]
    if not rows:
        return "calibration: no agreement rows pooled over generators (no expert labels, or group_by per generator?)"
    langs = sorted({r["language"] for r in rows},
                   key=lambda x: (_STUDY_LANGUAGES.index(x) if x in _STUDY_LANGUAGES else len(_STUDY_LANGUAGES), x))
    cells: dict[tuple, dict[str, str]] = {}
    for r in rows:
        key = (r["metric"], _short_scorer(r["scorer"]), r["variant"], r["context"] or "-")
        cells.setdefault(key, {})[r["language"]] = f"{r['kappa']:.2f}" if r["fitted"] and r["kappa"] is not None else "n/f"
    keys = sorted(cells)
    note = ""
    if len(keys) > max_rows:
        def headline(variant: str) -> bool:
            return variant in ("F", "avg") or variant.endswith(("/F", "/avg"))
        has_headline = {(k[0], k[1]) for k in keys if headline(k[2])}
        shown = [k for k in keys if (k[0], k[1]) not in has_headline or headline(k[2])]
        note = f"(showing {len(shown)} of {len(keys)} rows: F / avg variants; all rows in calibration.parquet)"
        keys = shown
    header = ["metric", "scorer", "variant", "context", *langs]
    table = [header] + [[*k, *(cells[k].get(lang, "-") for lang in langs)] for k in keys]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = ["agreement with expert labels (quadratic kappa; n/f = not fitted)"]
    for j, row in enumerate(table):
        lines.append("  ".join(cell.ljust(w) if i < 4 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    if note:
        lines.append(note)
    shown = set(keys)
    lines += reasons.console_lines(
        r for r in rows if (r["metric"], _short_scorer(r["scorer"]), r["variant"], r["context"] or "-") in shown)
    return "\n".join(lines)


def small_sample_note(calibration: pa.Table, threshold: int = SMALL_SAMPLE) -> str | None:
    """A line on how wide kappa's interval is when a language has few labelled samples."""
    rows = [r for r in calibration.select(["task", "language", "n", "kappa_lo", "kappa_hi", "fitted"]).to_pylist()
            if r["task"] == "agreement" and r["fitted"]]
    small = sorted({(r["language"], r["n"]) for r in rows if r["n"] < threshold})
    if not small:
        return None
    widths = [r["kappa_hi"] - r["kappa_lo"] for r in rows if r["n"] < threshold
              and r["kappa_lo"] is not None and r["kappa_hi"] is not None]
    width = f"; the median 95% interval is {sorted(widths)[len(widths) // 2]:.2f} wide" if widths else ""
    langs = ", ".join(f"{lang} (n={n})" for lang, n in small)
    return (f"note: kappa from fewer than {threshold} samples per language ({langs}) is uncertain{width}: "
            "read it with its interval (kappa_lo / kappa_hi in calibration.parquet, the report's error bars)")
