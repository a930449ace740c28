"""Stage `report`: RUN/report/index.html, a view of the committed outputs (engine.report has
the page, figures, tables and loading; each stage's own section comes from its
`ReportSection.report_section`). A driver stage that runs after the run is marked complete: the scores
are final by then and `babelscore report RUN` can redraw the page at any time."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from engine.io.rundir import RunDirectory
from engine.params import Params, require
from engine.stages.base import REPORT, SAMPLES, DriverStage


@dataclass(frozen=True)
class ReportParams(Params):
    """Options of stage `report`.

    Keys:
        max_strip_points: at most this many points per strip plot (a random, seeded subset beyond it).
        image_format: file format of the report's figures.
    """

    max_strip_points: int = 5000
    image_format: Literal["png", "svg"] = "png"

    def __post_init__(self) -> None:
        require(self.max_strip_points > 0, "report.max_strip_points", self.max_strip_points, "a positive integer")


class ReportStage(DriverStage):
    name = "report"
    package = "engine.report"
    section = "report"
    params_class = "engine.report.stage:ReportParams"
    provides = REPORT
    consumes = (SAMPLES,)  # and whatever every listed stage reports on
    path_options = ()
    after_complete = True  # drawn once the run is complete (a view of final outputs)

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> Any:
        return ReportParams.from_mapping(raw or {}, where=where)

    def run_driver(self, run: Any) -> None:
        from engine.report.build import write_report

        # Read afresh from disk (what the run committed), with this run's plan.
        write_report(RunDirectory.open_existing(run.root, plan=run.plan))
        run.mark_stage(self.name)
