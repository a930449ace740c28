"""The console summary printed after a run: mean score per metric setting and language.

Reads the score parts one at a time and keeps only per-(setting, language) sums and counts,
so its memory does not grow with the run.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from engine.io.rundir import RunDirectory

# The variant that represents a metric in the summary (F for P/R/F metrics).
HEADLINE_VARIANTS = ("score", "F", "avg", "mean-cos")
STUDY_ORDER = ("en", "nl", "pl", "el", "zh")
COLUMNS = ("language", "noise", "metric", "scorer", "context", "variant", "value", "error")
_KEYS = ["metric", "scorer", "context", "variant", "language"]


def _headline(variants: pa.Array) -> pa.Array:
    return pc.or_(pc.is_in(variants, value_set=pa.array(HEADLINE_VARIANTS)), pc.ends_with(variants, "/F"))


def language_summary(scores: pa.Table | Iterable[pa.Table], noise: str = "none") -> str:
    """Plain-text table: a row per (metric, scorer, context, variant), a column per language.

    scores: one table of score rows, or an iterable of tables (the run's parts, streamed).
    """
    parts = [scores] if isinstance(scores, pa.Table) else scores
    sums: dict[tuple[str, str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0]))
    languages: set[str] = set()
    errors = 0
    seen = 0
    for part in parts:
        seen += part.num_rows
        part = part.filter(pc.equal(part["noise"], noise))
        failed = part["error"].is_valid()
        errors += int(pc.sum(failed).as_py() or 0)
        part = part.filter(pc.and_(pc.invert(failed), _headline(part["variant"])))
        grouped = part.group_by(_KEYS).aggregate([("value", "sum"), ("value", "count")])
        for row in grouped.to_pylist():
            cell = sums[(row["metric"], row["scorer"] or "-", row["context"] or "-", row["variant"])][row["language"]]
            cell[0] += row["value_sum"] or 0.0
            cell[1] += row["value_count"]
            languages.add(row["language"])
    if not seen:
        return "(no scores)"
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
    scale = _scale_note({key[0] for key in sums})
    if scale:
        lines.append(scale)
    return title + "\n" + "\n".join(lines)


# Metrics whose numbers are not on a 0-1 scale, and what they are on (printed under the table).
_SCALES = {"bleu": "BLEU is on sacrebleu's 0-100 scale", "bartscore": "BARTScore is a mean log-probability (<= 0)",
           "gptscore": "GPTScore is a mean log-probability (<= 0)"}


def _scale_note(metrics: set[str]) -> str | None:
    """'(scales: BLEU is on sacrebleu's 0-100 scale; the other metrics 0-1)' when the table mixes scales."""
    named = [text for metric, text in _SCALES.items() if metric in metrics]
    if not named:
        return None
    rest = metrics - set(_SCALES)
    return "(scales: " + "; ".join(named) + ("; the other metrics 0-1" if rest else "") + ")"


def run_summary(run: RunDirectory, noise: str = "none") -> str:
    """`language_summary` of a run directory (a RunDirectory opened with its layout), reading its
    score parts one at a time."""
    return language_summary(run.score_tables(columns=COLUMNS), noise)
