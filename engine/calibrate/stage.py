"""Stage `calibrate`: once in the driver after every part, it fits the KDE classifier and the
agreement per score setting and group (engine.calibrate.thresholds), reading the scores one
setting at a time (engine.calibrate.run_directory), and writes RUN/calibration.parquet."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.calibrate.params import CalibrateParams
from engine.stages.base import CALIBRATION, SAMPLES, SCORES, DriverStage

if TYPE_CHECKING:
    from engine.io.rundir import RunDirectory


class CalibrateStage(DriverStage[CalibrateParams]):
    name = "calibrate"
    package = "engine.calibrate"
    section = "calibrate"
    params_class = "engine.calibrate.params:CalibrateParams"
    provides = CALIBRATION
    consumes = (SCORES, SAMPLES)
    seeded = True
    path_options = ()
    output = "calibration.parquet"

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> CalibrateParams:
        return CalibrateParams.from_mapping(raw, where=where)

    def run_driver(self, run: "RunDirectory") -> None:
        from engine.calibrate.run_directory import calibrate_run_dir
        from engine.io.atomic import write_parquet_atomic
        from engine.records import CALIBRATION_SCHEMA

        table = calibrate_run_dir(run, self.params)
        write_parquet_atomic(run.path(self.output), table, CALIBRATION_SCHEMA)
        run.mark_stage(self.name, rows=table.num_rows)

    def console_lines(self, run: "RunDirectory", counts: dict[str, Any]) -> list[str]:
        """The kappa of every score setting, and a note where few samples make it uncertain."""
        import pyarrow.parquet as pq

        from engine.calibrate.summary import kappa_summary, small_sample_note

        path = run.path(self.output)
        if not path.exists():
            return []
        table = pq.read_table(path)
        note = small_sample_note(table)
        return ["", kappa_summary(table), *([note] if note else [])]
