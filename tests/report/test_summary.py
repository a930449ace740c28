"""The console summary after a run."""
from __future__ import annotations

import math

import pyarrow as pa

from engine.records import SCORE_SCHEMA
from engine.report.summary import language_summary


def _row(language, metric, variant, value, noise="none", error=None):
    return {"sample_id": f"{language}{value}", "generator": "g", "language": language, "noise": noise, "metric": metric,
            "scorer": "", "context": "", "variant": variant, "value": value, "signature": "s", "error": error}


def test_summary_averages_headline_variants_per_language_and_counts_errors():
    rows = [
        _row("en", "bleu", "score", 10.0), _row("en", "bleu", "score", 30.0), _row("zh", "bleu", "score", 5.0),
        _row("en", "rougeL", "P", 0.9), _row("en", "rougeL", "F", 0.5),
        _row("en", "bleu", "score", 99.0, noise="uniform"),
        _row("zh", "bleu", "score", math.nan, error="boom"),
    ]
    text = language_summary(pa.Table.from_pylist(rows, schema=SCORE_SCHEMA))
    lines = text.splitlines()
    assert lines[1].split()[-2:] == ["en", "zh"]
    bleu = next(line for line in lines if line.startswith("bleu"))
    assert bleu.split()[-2:] == ["20.0000", "5.0000"]  # noise rows and error rows left out
    rouge = next(line for line in lines if line.startswith("rougeL"))
    assert rouge.split()[-2:] == ["0.5000", "-"] and "0.9000" not in text
    assert "1 error rows not averaged" in text
    # BLEU (0-100) beside 0-1 metrics says so under the table
    assert lines[-1] == "(scales: BLEU is on sacrebleu's 0-100 scale; the other metrics 0-1)"


def test_summary_of_parts_equals_summary_of_the_whole():
    rows = [_row(lang, "bleu", "score", float(v)) for v in range(1, 40) for lang in ("en", "nl")]
    rows += [_row("nl", "bleu", "score", math.nan, error="boom"), _row("en", "bleu", "score", 1e9, noise="uniform")]
    table = pa.Table.from_pylist(rows, schema=SCORE_SCHEMA)
    parts = [table.slice(i, 7) for i in range(0, table.num_rows, 7)]
    assert language_summary(iter(parts)) == language_summary(table)
    assert language_summary(iter([])) == "(no scores)"
