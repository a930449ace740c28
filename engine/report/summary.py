"""The console summary printed after a run: mean score per metric setting and language."""
from __future__ import annotations

from collections import defaultdict

import pyarrow as pa
import pyarrow.compute as pc

# The variant that represents a metric in the summary (F for P/R/F metrics).
HEADLINE_VARIANTS = ("score", "F", "avg", "mean-cos")
STUDY_ORDER = ("en", "nl", "pl", "el", "zh")


def language_summary(scores: pa.Table, noise: str = "none") -> str:
    """Plain-text table: a row per (metric, scorer, context, variant), a column per language."""
    if not scores.num_rows:
        return "(no scores)"
    rows = scores.filter(pc.equal(scores["noise"], noise)).select(["language", "metric", "scorer", "context", "variant", "value", "error"])
    sums: dict[tuple[str, str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0]))
    languages: set[str] = set()
    errors = 0
    for row in rows.to_pylist():
        if row["error"] is not None:
            errors += 1
            continue
        variant = row["variant"]
        if variant not in HEADLINE_VARIANTS and not variant.endswith("/F"):
            continue
        cell = sums[(row["metric"], row["scorer"] or "-", row["context"] or "-", variant)][row["language"]]
        cell[0] += row["value"]
        cell[1] += 1
        languages.add(row["language"])
    ordered = [lang for lang in STUDY_ORDER if lang in languages] + sorted(languages - set(STUDY_ORDER))
    header = ["metric", "scorer", "context", "variant", *ordered]
    body = []
    for key in sorted(sums):
        cells = []
        for language in ordered:
            total, count = sums[key].get(language, (0.0, 0))
            cells.append(f"{total / count:.4f}" if count else "-")
        body.append([*key, *cells])
    widths = [max(len(str(r[i])) for r in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(str(v).ljust(w) if i < 4 else str(v).rjust(w) for i, (v, w) in enumerate(zip(r, widths))) for r in [header, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    title = f"mean score per language (noise={noise}; P/R/F metrics show F)"
    if errors:
        lines.append(f"({errors} error rows not averaged; see the `error` column)")
    return title + "\n" + "\n".join(lines)
