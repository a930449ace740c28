"""The fault tests' check that a run ended equal to a clean one: `babelscore diff`'s comparison
(engine/rundiff.py), bit for bit (tolerance 0)."""
from __future__ import annotations

from pathlib import Path

from engine.rundiff import compare_runs


def assert_runs_equal(got: str | Path, want: str | Path) -> None:
    diff = compare_runs(str(got), str(want), tolerance=0.0)
    assert diff.equal, diff.render()
