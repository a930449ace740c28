"""The console summary printed after a run: mean score per metric and language."""
from __future__ import annotations

from collections import defaultdict

import pyarrow as pa

# The variant that represents a metric in one column (F for P/R/F metrics).
HEADLINE_VARIANTS = ("score", "F", "avg", "mean-cos")


def _column_name(metric: str, scorer: str, context: str, variant: str) -> str:
    short = scorer.rsplit("/", 1)[-1].replace("pypi:", "")
    parts = [metric]
    if short:
        parts.append(short)
    if context:
        parts.append(context)
    if variant not in ("score",):
        parts.append(variant)
    return "/".join(parts)


def language_summary(scores: pa.Table, noise: str = "none") -> str:
    """Plain-text table: rows = language, columns = metric (headline variants), cells = mean."""
    rows = scores.filter(pa.compute.equal(scores["noise"], noise)).to_pylist() if scores.num_rows else []
    sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0])
    columns: list[str] = []
    languages: set[str] = set()
    errors = 0
    for row in rows:
        if row["error"] is not None:
            errors += 1
            continue
        if row["variant"] not in HEADLINE_VARIANTS and not row["variant"].endswith("/F"):
            continue
        column = _column_name(row["metric"], row["scorer"], row["context"], row["variant"])
        if column not in columns:
            columns.append(column)
        languages.add(row["language"])
        cell = sums[(row["language"], column)]
        cell[0] += row["value"]
        cell[1] += 1
    if not columns:
        return "(no scores)"
    width = max(10, *(len(c) for c in columns))
    header = "language  " + "  ".join(c.rjust(width) for c in columns)
    lines = [header, "-" * len(header)]
    for language in sorted(languages):
        cells = []
        for column in columns:
            total, count = sums.get((language, column), (0.0, 0))
            cells.append((f"{total / count:.4f}" if count else "-").rjust(width))
        lines.append(f"{language:<8}  " + "  ".join(cells))
    if errors:
        lines.append(f"({errors} error rows not averaged; see the `error` column)")
    return "\n".join(lines)
