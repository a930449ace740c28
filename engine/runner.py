"""The driver of a run: prepare input, run part stages through an executor, then the
driver-side stages (calibrate, report). The driver alone writes the manifest."""
from __future__ import annotations

import logging
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from engine.config import RunConfig, config_hash, file_fingerprint
from engine.data.reader import iter_raw_rows
from engine.data.validate import SampleValidator
from engine.errors import InputError, PartFailedError
from engine.io.atomic import write_parquet_atomic
from engine.io.rundir import RunDirectory
from engine.pipeline import PART_STAGES, PartTask, plan_parts, sample_part_path
from engine.records import REJECTED_SCHEMA, SAMPLE_SCHEMA, SCORE_SCHEMA
from engine.signature import library_versions

logger = logging.getLogger(__name__)

# Test hook (crash/resume tests only): SIGKILL the driver after this many part commits.
CRASH_AFTER_COMMITS_ENV = "BABELSCORE_TEST_CRASH_AFTER_COMMITS"


@dataclass
class RunSummary:
    run_dir: str
    status: str
    counts: dict[str, Any] = field(default_factory=dict)
    failed_parts: dict[str, Any] = field(default_factory=dict)


def _input_fingerprint(config: RunConfig) -> str:
    if "build" in config.stages:
        return "build"
    if not Path(config.input).is_file():
        raise InputError(f"input {config.input!r} does not exist; fix `input:` in the config")
    return file_fingerprint(config.input)


def open_run(config: RunConfig, out: str, resume: bool) -> RunDirectory:
    fingerprint = _input_fingerprint(config)
    digest = config_hash(config, fingerprint)
    extra = {"input_sha256": fingerprint, "versions": library_versions()}
    return RunDirectory.open_for_run(out, config.to_dict(), digest, extra, resume)


# ----- prepare: validate input into sample parts -----------------------------------------------
def _write_samples_part(run: RunDirectory, index: int, rows: list[dict[str, Any]]) -> None:
    write_parquet_atomic(sample_part_path(run.root, index), pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA))


def prepare(run: RunDirectory, config: RunConfig) -> None:
    """Validate the input, stream valid rows into `samples/part-*.parquet`, quarantine the rest."""
    if run.stage_done("prepare"):
        return
    validator = SampleValidator(require_prediction="generate" not in config.stages)
    rejected: list[dict[str, Any]] = []
    buffer: list[dict[str, Any]] = []
    part_rows: list[int] = []
    # With a generate stage the unit is the file: its first row is the one generated from, so
    # a file never spans two parts (which would generate it twice).
    one_row_per_file = "generate" in config.stages
    files_seen: set[str] = set()
    merged = 0
    for raw in _input_rows(config):
        sample, rejection = validator.check(raw)
        if rejection is not None:
            rejected.append(rejection)
            continue
        if one_row_per_file:
            if sample["file_id"] in files_seen:
                merged += 1
                continue
            files_seen.add(sample["file_id"])
        buffer.append(sample)
        if len(buffer) == config.part_size:
            _write_samples_part(run, len(part_rows), buffer)
            part_rows.append(len(buffer))
            buffer = []
    if buffer:
        _write_samples_part(run, len(part_rows), buffer)
        part_rows.append(len(buffer))
    write_parquet_atomic(run.path("rejected.parquet"), pa.Table.from_pylist(rejected, schema=REJECTED_SCHEMA))
    run.manifest["counts"].update(
        {
            "input_rows": validator.valid + validator.rejected,
            "valid_rows": validator.valid,
            "rejected_rows": validator.rejected,
            "rejected_by_reason": dict(validator.reasons),
            "parts": len(part_rows),
        }
    )
    if merged:
        run.manifest["counts"]["rows_sharing_a_generated_file"] = merged
        logger.info("%d input rows share their file with an earlier row: each file is generated once", merged)
    run.manifest["part_rows"] = part_rows
    if validator.rejected:
        logger.warning(
            "%d of %d input rows rejected (see %s): %s",
            validator.rejected,
            validator.valid + validator.rejected,
            run.path("rejected.parquet"),
            ", ".join(f"{k}: {v}" for k, v in validator.reasons.most_common()),
        )
    if validator.valid == 0:
        run.finish("failed")
        raise InputError(
            f"no valid row in the input ({validator.rejected} rejected; reasons in {run.path('rejected.parquet')}): "
            "fix the input and start a new run"
        )
    run.mark_stage("prepare")


def _input_rows(config: RunConfig):
    if "build" in config.stages:
        from engine.data.build import build_samples
        from engine.data.reader import RawRow

        table = build_samples(config.section("build"))
        for index, values in enumerate(table.to_pylist()):
            yield RawRow(index, values, None, None)
    else:
        yield from iter_raw_rows(config.input)


# ----- part stages ----------------------------------------------------------------------------
class _Committer:
    """Commits finished parts; the crash hook lets tests kill the driver between commits."""

    def __init__(self, run: RunDirectory):
        self.run = run
        self.commits = 0
        limit = os.environ.get(CRASH_AFTER_COMMITS_ENV)
        self.crash_after = int(limit) if limit else None

    def commit(self, part: PartTask, table: pa.Table) -> None:
        self.run.commit_part(part.key, part.relative_path, table, part.schema)
        self.commits += 1
        if self.crash_after is not None and self.commits >= self.crash_after:
            os.kill(os.getpid(), signal.SIGKILL)

    def fail(self, part: PartTask, error: str, attempts: int) -> None:
        logger.error("part %s failed after %d attempt(s): %s", part.key, attempts, error)
        self.run.record_failed_part(part.key, error, attempts)


def _stage_info(run: RunDirectory, config: RunConfig, stage: str) -> dict[str, Any]:
    if stage != "generate":
        return {}
    info = run.manifest["stages"].get("generate-plan")
    if info is None:
        from engine.generate.stage import plan_generation

        samples = pa.concat_tables(
            pq.read_table(sample_part_path(run.root, i)) for i in range(run.manifest["counts"]["parts"])
        )
        info = {g.generator_name: plan_generation(samples, g) for g in config.section("generate").generators}
        run.manifest["stages"]["generate-plan"] = info
        run.save()
    return info


def run_part_stage(run: RunDirectory, config: RunConfig, stage: str, executor: Any) -> None:
    n_parts = run.manifest["counts"]["parts"]
    parts = [p for p in plan_parts(config, stage, n_parts) if not run.is_done(p.key)]
    if not parts:
        return
    stage_info = _stage_info(run, config, stage)
    committer = _Committer(run)
    executor.run_parts(str(run.root), config, parts, stage_info, committer.commit, committer.fail, run.manifest["part_rows"])


def _record_signatures(run: RunDirectory, config: RunConfig) -> None:
    from engine.pipeline import get_scorer

    if config.score is None:
        return
    for spec in config.score.scorers:
        scorer = get_scorer(spec)
        run.manifest["signatures"][scorer.task_name] = scorer.signatures()
    run.save()


def make_executor(name: str, ray_address: str | None = None, ray_options: dict[str, Any] | None = None) -> Any:
    if name == "local":
        from engine.executors.local import LocalExecutor

        return LocalExecutor()
    if name == "ray":
        from engine.executors.ray import RayExecutor, RayOptions

        return RayExecutor(address=ray_address, options=RayOptions.from_mapping(ray_options or {}, where="ray options"))
    raise ValueError(f"unknown executor {name!r}; allowed: local, ray")


def execute_run(
    config: RunConfig,
    out: str,
    resume: bool = False,
    executor_name: str = "local",
    ray_address: str | None = None,
    ray_options: dict[str, Any] | None = None,
) -> RunSummary:
    run = open_run(config, out, resume)
    prepare(run, config)
    executor = make_executor(executor_name, ray_address, ray_options)
    try:
        for stage in PART_STAGES:
            if stage in config.stages:
                run_part_stage(run, config, stage, executor)
                if run.manifest["failed_parts"]:
                    break
    finally:
        executor.close()
    if "score" in config.stages:
        _record_signatures(run, config)
    failed = run.manifest["failed_parts"]
    if failed:
        run.finish("failed")
        names = ", ".join(sorted(failed))
        raise PartFailedError(
            f"{len(failed)} part(s) failed: {names}; errors are in {run.path('manifest.json')} under failed_parts. "
            "Fix the cause and rerun with --resume: committed parts are kept"
        )
    if "score" in config.stages:
        run.manifest["counts"]["score_rows"] = sum(
            info["rows"] for key, info in run.manifest["parts"].items() if key.startswith("score/")
        )
    if "calibrate" in config.stages and not run.stage_done("calibrate"):
        calibrate_run(run, config)
    # The scores are final here; the report is a view of them and can be rewritten any time
    # (`babelscore report RUN`), so the run is complete before the report is drawn.
    run.finish("complete")
    if "report" in config.stages:
        from engine.report.build import write_report

        write_report(str(run.root))
        run.mark_stage("report")
    return RunSummary(str(run.root), "complete", dict(run.manifest["counts"]), {})


def calibrate_run(run: RunDirectory, config: RunConfig) -> None:
    from engine.calibrate.run import calibrate_run_dir
    from engine.records import CALIBRATION_SCHEMA

    table = calibrate_run_dir(run, config.section("calibrate"))
    write_parquet_atomic(run.path("calibration.parquet"), table, CALIBRATION_SCHEMA)
    run.mark_stage("calibrate", rows=table.num_rows)


def read_samples(run: RunDirectory) -> pa.Table:
    return run.read_samples()


def read_scores(run_dir: str) -> pa.Table:
    return RunDirectory.open_existing(run_dir).read_parts("score/", SCORE_SCHEMA)
