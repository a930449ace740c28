"""The `report:` section (its Stage is engine/report/stage.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.params import Params, require


@dataclass(frozen=True)
class ReportParams(Params):
    """Options of stage `report`."""

    max_strip_points: int = 5000
    """at most this many points per strip plot (a random, seeded subset beyond it)."""
    image_format: Literal["png", "svg"] = "png"
    """file format of the report's figures."""

    def __post_init__(self) -> None:
        require(self.max_strip_points > 0, "report.max_strip_points", self.max_strip_points, "a positive integer")
