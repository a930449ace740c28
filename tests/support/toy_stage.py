"""A stage written the way a new stage is meant to be added: this one module, plus one line in
the registry (which tests/stages/test_toy_stage.py adds at run time). Nothing else in the engine
names it: the runner, both executors, the config loader, the manifest and the report find it
through the RunPlan the driver builds from the registry and its declared data flow. It also
opts into two capabilities: a report section (`ReportSection`) and reuse (`Reusable`: its
own identity and row matching; engine.reuse only reads the earlier runs for it)."""
from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from engine.params import Params, option_digest, require
from engine.reuse.keys import digest
from engine.signature import format_signature
from engine.stages.base import SAMPLES, PartContext, PartStage, ReportSection, Reusable, StageTask

TOY_ROWS = "toy-rows"  # a kind of rows no other stage knows
TOY_SCHEMA = pa.schema([pa.field("sample_id", pa.string()), pa.field("reference_chars", pa.int64()),
                        pa.field("seed", pa.int64())])


@dataclass(frozen=True)
class ToyParams(Params):
    """Options of the toy stage."""

    scale: int = 1
    """multiplies each reference's length."""
    seed: int = 0
    """recorded on every row (the run's seed by default)."""

    def __post_init__(self) -> None:
        require(self.scale >= 1, "scale", self.scale, "an integer >= 1")


class ToyStage(PartStage[ToyParams, None], Reusable, ReportSection):
    name = "toy"
    package = "tests.support.toy_stage"
    section = "toy"
    params_class = "tests.support.toy_stage:ToyParams"
    provides = TOY_ROWS
    consumes = (SAMPLES,)
    seeded = True
    directory = "toy"
    schema = TOY_SCHEMA
    input_columns = ("sample_id", "reference")
    reuse_verb = "counted"

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> ToyParams:
        return ToyParams.from_mapping(raw or {}, where=where)

    def tasks(self) -> list[StageTask]:
        return [StageTask(self.name, f"toy-{option_digest(self.params.to_dict())}")]

    def run_part(self, ctx: PartContext) -> pa.Table:
        samples = ctx.input_table()
        self.require_columns(samples, "the part's samples")
        params = self.params
        rows = [{"sample_id": r["sample_id"], "reference_chars": len(r["reference"]) * params.scale, "seed": params.seed}
                for r in samples.select(["sample_id", "reference"]).to_pylist()]
        return pa.Table.from_pylist(rows, schema=TOY_SCHEMA)

    def reuse_identity(self, task: StageTask, prepass: dict[str, Any]) -> str:
        return digest({"stage": self.name, "options": self.params.to_dict()})

    def reuse_part(self, ctx: PartContext, sources: Any) -> tuple[pa.Table, dict[str, int], int] | None:
        """A row is reused when an earlier run of the same identity has the sample with the same reference."""
        identity = self.reuse_identity(StageTask(self.name, ctx.part.task), ctx.prepass)
        earlier = {}
        for row, run in sources.rows_with_identity(identity, TOY_SCHEMA):
            earlier.setdefault(row["sample_id"], (row, run))
        fresh = self.run_part(ctx)
        if not earlier:
            return None
        rows, per_run = [], {}
        for row in fresh.to_pylist():
            hit = earlier.get(row["sample_id"])
            if hit is not None and hit[0]["reference_chars"] == row["reference_chars"]:
                rows.append(hit[0])
                per_run[hit[1]] = per_run.get(hit[1], 0) + 1
            else:
                rows.append(row)
        return pa.Table.from_pylist(rows, schema=TOY_SCHEMA), per_run, len(rows) - sum(per_run.values())

    def signatures(self, task: StageTask, prepass: dict[str, Any]) -> dict[str, Any]:
        params = self.params
        return {"toy": format_signature({"stage": self.name, "scale": params.scale, "seed": params.seed})}

    def report_section(self, ctx: Any) -> tuple[str, str, str]:
        from engine.io.rundir import RunDirectory

        files = RunDirectory.open_existing(ctx.data.root, layout=ctx.data.layout).kind_files(TOY_ROWS)
        total = sum(sum(pq.read_table(f, schema=TOY_SCHEMA)["reference_chars"].to_pylist()) for f in files)
        return ("toy", "Toy stage", f"<p class=toy>{len(files)} toy part(s), {html.escape(str(total))} reference characters</p>")
