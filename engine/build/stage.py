"""Stage `build`: the run's input made from a folder of source files (engine.build.samples has
the method) instead of read from `input:`. A source stage: its rows are validated and cut
into sample parts like an input file's, before any part stage runs."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from engine.build.params import BuildParams
from engine.stages.base import INPUT, MODEL_PATH_OPTIONS, SourceStage


class BuildStage(SourceStage[BuildParams]):
    name = "build"
    package = "engine.build"
    section = "build"
    params_class = "engine.build.params:BuildParams"
    provides = INPUT
    seeded = True
    path_options = (*MODEL_PATH_OPTIONS, "source_dir")

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> BuildParams:
        return BuildParams.from_mapping(raw, where=where)

    def input_table(self) -> pa.Table:
        from engine.build.samples import build_samples

        return build_samples(self.params)
