"""Stage `calibrate`: per-setting KDE classifiers of the expert labels from the committed
scores (engine.calibrate has the method), written to RUN/calibration.parquet. A driver stage:
it runs once in the driver after every part, reading the scores one setting at a time."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.stages.base import CALIBRATION, SAMPLES, SCORES, Stage


class CalibrateStage(Stage):
    name = "calibrate"
    package = "engine.calibrate"
    kind = "driver"
    section = "calibrate"
    params_class = "engine.calibrate.stage:CalibrateParams"
    provides = CALIBRATION
    consumes = (SCORES, SAMPLES)
    seeded = True
    path_options = ()
    output = "calibration.parquet"

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> Any:
        from engine.calibrate.stage import CalibrateParams

        return CalibrateParams.from_mapping(raw, where=where)

    def run_driver(self, run: Any, config: Any) -> None:
        from engine.calibrate.run import calibrate_run_dir
        from engine.io.atomic import write_parquet_atomic
        from engine.records import CALIBRATION_SCHEMA

        table = calibrate_run_dir(run, config.section(self.name))
        write_parquet_atomic(run.path(self.output), table, CALIBRATION_SCHEMA)
        run.mark_stage(self.name, rows=table.num_rows)
