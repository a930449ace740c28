"""The score stage's rows (engine.score.rows): an item without a prediction still gets a row
for each metric its scorer writes, with NaN and the reason."""
from __future__ import annotations

import math

from engine.items import ScoreItem
from engine.metrics.lexical import LexicalScorer
from engine.score.params import ScorerSpec, get_scorer
from engine.score.rows import missing_prediction_rows


def test_missing_prediction_rows_use_the_scorers_metric_names() -> None:
    scorer = get_scorer(ScorerSpec("lexical", LexicalScorer.Params()), stage="score")
    item = ScoreItem("s", "f", "en", "g", "none", "ab // x", 3, 7, "// x", "", None)  # type: ignore[arg-type]
    out = missing_prediction_rows(scorer, [item], {"s": "no prediction: backend failed"})
    assert {r.metric for r in out} == {"bleu", "rougeL", "meteor"}
    assert all(math.isnan(r.value) and r.error == "no prediction: backend failed" for r in out)
