"""Why groups were not fitted, grouped: once per reason with counts, for the console and the report.

A group the KDE classifier cannot fit gets a row with `fitted` false and a `reason` in
calibration.parquet ("class 'incorrect' has 1 score(s); at least 2 needed"). A table of `n/f`
cells says nothing by itself, and a hover title does not survive a screenshot or a PDF, so
both the console and the report list the reasons as text beside the table: one line per
distinct reason, with how many table cells it explains and in which languages.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Iterable

UNKNOWN = "not fitted (no reason recorded)"


@dataclass(frozen=True)
class Reason:
    number: int  # 1-based, most frequent first: the mark beside each n/f cell
    text: str
    cells: int
    languages: tuple[str, ...]


def grouped_reasons(rows: Iterable[dict[str, Any]]) -> list[Reason]:
    """The distinct reasons of the not-fitted rows, most frequent first (ties: by text)."""
    counts: Counter[str] = Counter()
    languages: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        if row.get("fitted"):
            continue
        text = row.get("reason") or UNKNOWN
        counts[text] += 1
        if row.get("language"):
            languages[text].add(str(row["language"]))
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [Reason(i, text, n, tuple(sorted(languages[text]))) for i, (text, n) in enumerate(ordered, 1)]


def numbers(reasons: list[Reason]) -> dict[str, int]:
    """reason text -> its number."""
    return {r.text: r.number for r in reasons}


def console_lines(rows: Iterable[dict[str, Any]], limit: int = 8) -> list[str]:
    """`n/f reasons:` then one line per reason: `  12 cells (nl, zh): class 'incorrect' has ...`."""
    reasons = grouped_reasons(rows)
    if not reasons:
        return []
    lines = ["n/f (not fitted), by reason (calibration.parquet, column `reason`, has each group's):"]
    for reason in reasons[:limit]:
        where = f" ({', '.join(reason.languages)})" if reason.languages else ""
        lines.append(f"  {reason.cells:4d} cell(s){where}: {reason.text}")
    if len(reasons) > limit:
        lines.append(f"  ... {len(reasons) - limit} more distinct reason(s) in calibration.parquet")
    return lines
