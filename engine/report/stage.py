"""Stage `report`: RUN/report/index.html, a view of the committed outputs (engine.report has
the page, figures, tables and loading; each stage's own section comes from its
`ReportSection.report_section`). A driver stage that runs after the run is marked complete: the scores
are final by then and `babelscore report RUN` can redraw the page at any time."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.io.rundir import RunDirectory
from engine.report.params import ReportParams
from engine.stages.base import REPORT, SAMPLES, DriverStage


class ReportStage(DriverStage[ReportParams]):
    name = "report"
    package = "engine.report"
    section = "report"
    params_class = "engine.report.params:ReportParams"
    provides = REPORT
    consumes = (SAMPLES,)  # and whatever every listed stage reports on
    path_options = ()
    after_complete = True  # drawn once the run is complete (a view of final outputs)

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> ReportParams:
        return ReportParams.from_mapping(raw or {}, where=where)

    def run_driver(self, run: "RunDirectory") -> None:
        from engine.report.build import write_report

        # Read afresh from disk (what the run committed), with this run's plan.
        write_report(RunDirectory.open_existing(run.root, plan=run.plan))
        run.mark_stage(self.name)
