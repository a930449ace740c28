"""n/f with its reason: the console lists each reason once with counts, and the report
prints the reasons as text under the table (a hover title does not survive a screenshot)."""
from __future__ import annotations

from html import escape as html_escape

from engine.calibrate import reasons
from engine.report.page import value_table
from engine.report.score_settings import ConfigKey

FEW = "class 'incorrect' has 1 score(s); at least 2 needed for a KDE"
EQUAL = "all scores of the group are equal"


def _row(metric, language, fitted, reason=None, kappa=0.5):
    return {"metric": metric, "scorer": "", "context": "", "variant": "score", "language": language, "task": "agreement",
            "fitted": fitted, "reason": reason, "kappa": kappa if fitted else None, "n": 12, "generator": None}


ROWS = [_row("bleu", "en", True), _row("bleu", "nl", False, FEW), _row("meteor", "nl", False, FEW),
        _row("meteor", "zh", False, FEW), _row("bleu", "zh", False, EQUAL), _row("meteor", "en", True)]


def test_reasons_are_grouped_once_each_with_counts_and_languages():
    grouped = reasons.grouped_reasons(ROWS)
    assert [(r.number, r.text, r.cells, r.languages) for r in grouped] == [
        (1, FEW, 3, ("nl", "zh")), (2, EQUAL, 1, ("zh",))]
    assert reasons.console_lines(ROWS) == [
        "n/f (not fitted), by reason (calibration.parquet, column `reason`, has each group's):",
        f"     3 cell(s) (nl, zh): {FEW}",
        f"     1 cell(s) (zh): {EQUAL}",
    ]
    assert reasons.console_lines([_row("bleu", "en", True)]) == []


def test_the_report_table_marks_each_nf_cell_and_lists_the_reasons_as_text():
    keys = [ConfigKey("bleu", "", "", "score"), ConfigKey("meteor", "", "", "score")]
    html = value_table(ROWS, keys, ["en", "nl", "zh"], "kappa", "values")
    assert html.count("n/f<sup>1</sup>") == 3 and html.count("n/f<sup>2</sup>") == 1
    legend = html[html.index('class="nfreasons"'):]
    assert '<li value="1">' + html_escape(FEW) in legend and "(3 cells: Dutch, Chinese)" in legend
    assert "all scores of the group are equal" in legend and "(1 cell: Chinese)" in legend
