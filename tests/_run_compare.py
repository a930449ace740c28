"""Compare two run directories for the fault tests: equal output, bit for bit.

Uses `babelscore diff`'s engine (engine/rundiff.py) when it is there; until then a local
comparison of the score rows (same keys, same values bit for bit, no duplicates)."""
from __future__ import annotations

import math
from pathlib import Path


def assert_runs_equal(got: str | Path, want: str | Path) -> None:
    try:
        from engine.rundiff import compare_runs
    except ImportError:
        compare_runs = None
    if compare_runs is not None:
        diff = compare_runs(str(got), str(want), tolerance=0.0)
        assert diff.equal, str(diff)
        return
    from engine.records import SCORE_KEY
    from engine.runner import read_scores

    rows = [read_scores(str(d)).sort_by([(k, "ascending") for k in SCORE_KEY]).to_pylist() for d in (got, want)]
    for table in rows:
        keys = [tuple(r[k] for k in SCORE_KEY) for r in table]
        assert len(keys) == len(set(keys)), "duplicate score keys"
    assert len(rows[0]) == len(rows[1])
    for g, w in zip(*rows):
        g, w = dict(g), dict(w)
        gv, wv = g.pop("value"), w.pop("value")
        assert g == w
        assert (math.isnan(gv) and math.isnan(wv)) or gv == wv, (g, gv, wv)
