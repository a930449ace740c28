"""The driver of a run: prepare the input, run the part stages of the registry through an
executor, then the driver-side stages (calibrate, report). The driver alone writes the manifest
and holds the run directory's lock.

Recovery: a part that fails (after the executor's retries) is recorded and the other parts go
on; a later stage's part whose inputs failed is recorded as blocked. The run then ends
"failed"; `--resume` retries every failed and blocked part and ends "complete" when nothing
fails any more. Committed parts are never redone.
"""
from __future__ import annotations

import json
import logging
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from engine import throughput
from engine.config import RunConfig, config_hash, file_fingerprint
from engine.errors import InputError, PartFailedError
from engine.io.atomic import write_json_atomic
from engine.io.rundir import RunDirectory
from engine.pipeline import PartTask, plan_parts, read_part_input, sample_part_path, upstream_parts
from engine.prepare import prepare
from engine.records import SCORE_SCHEMA
from engine.signature import library_versions
from engine.stages.base import Stage, prepass_hash
from engine.stages.registry import get_stage, part_stages_of

logger = logging.getLogger(__name__)

# Test hook (crash/resume tests only): SIGKILL the driver after this many part commits.
CRASH_AFTER_COMMITS_ENV = "BABELSCORE_TEST_CRASH_AFTER_COMMITS"

__all__ = ["execute_run", "open_run", "prepare", "read_scores", "sample_part_path", "RunSummary"]


@dataclass
class RunSummary:
    run_dir: str
    status: str
    counts: dict[str, Any] = field(default_factory=dict)
    failed_parts: dict[str, Any] = field(default_factory=dict)
    # per stage: {"kept": parts already committed by an earlier attempt, "run": parts computed now}
    parts_by_stage: dict[str, dict[str, int]] = field(default_factory=dict)
    throughput: dict[str, Any] = field(default_factory=dict)


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


# ----- part stages ----------------------------------------------------------------------------
class _Committer:
    """Commits finished parts; the crash hook lets tests kill the driver between commits."""

    def __init__(self, run: RunDirectory, rows_per_part: list[int] | None = None):
        self.run = run
        self.rows_per_part = rows_per_part or []
        self.recorder = throughput.Recorder(run.manifest)
        self.commits = 0
        limit = os.environ.get(CRASH_AFTER_COMMITS_ENV)
        self.crash_after = int(limit) if limit else None

    def commit(self, part: PartTask, table: pa.Table) -> None:
        table, stats = throughput.detach(table)
        if stats is not None:  # recorded before the commit, which saves the manifest
            in_rows = self.rows_per_part[part.index] if part.index < len(self.rows_per_part) else 0
            self.recorder.add_part(part.stage, part.task, part.model_key, stats, in_rows)
        self.run.commit_part(part.key, part.relative_path, table, part.schema)
        self.commits += 1
        if self.crash_after is not None and self.commits >= self.crash_after:
            os.kill(os.getpid(), signal.SIGKILL)

    def fail(self, part: PartTask, error: str, attempts: int) -> None:
        logger.error("part %s failed after %d attempt(s): %s", part.key, attempts, error)
        self.run.record_failed_part(part.key, error, attempts)


def _prepass_results(run: RunDirectory, config: RunConfig, stage_name: str) -> dict[str, Any]:
    """Run (or reload) the corpus pre-pass of every task of a stage that has one.

    Results live in RUN/prepass/<task>.json and are recorded with their hash in the manifest;
    the input is streamed part by part, never concatenated.
    """
    stage = get_stage(stage_name)
    n_parts = run.manifest["counts"]["parts"]
    results: dict[str, Any] = {}
    for task in stage.tasks(config):
        if not stage.needs_prepass(config, task):
            continue
        record = run.manifest.setdefault("prepass", {}).get(task.task)
        path = run.path(f"prepass/{task.task}.json")
        if record is not None and path.exists():
            results[task.task] = json.loads(path.read_text(encoding="utf-8"))
            continue
        logger.info("%s: corpus pre-pass over %d part(s)", task.task, n_parts)
        tables = (read_part_input(run.root, config, stage_name, i) for i in range(n_parts))
        with throughput.Recorder(run.manifest).timed(f"prepass:{task.task}"):
            result = stage.prepass(config, task, tables)
        write_json_atomic(path, result)
        run.manifest["prepass"][task.task] = {"file": f"prepass/{task.task}.json", "hash": prepass_hash(result)}
        run.save()
        results[task.task] = result
    return results


def _waits_for(run: RunDirectory, config: RunConfig, stage_name: str, index: int) -> list[str]:
    """Part keys this part reads that are not committed (they failed or were blocked)."""
    return [part.key for part in upstream_parts(config, stage_name, index) if not run.is_done(part.key)]


def run_part_stage(run: RunDirectory, config: RunConfig, stage_name: str, executor: Any) -> dict[str, int]:
    """Run the parts of a stage not committed yet; returns {"kept": committed before, "run": tried now}."""
    rows_per_part = get_stage(stage_name).own_parts(config, run.root)
    # A stage that cuts its own input (cut in RUN/ before its parts run) waits for no other stage.
    reads_earlier_stages = rows_per_part is None
    if rows_per_part is None:
        rows_per_part = run.manifest["part_rows"]
    n_parts = len(rows_per_part)
    todo: list[PartTask] = []
    kept = 0
    for part in plan_parts(config, stage_name, n_parts):
        if run.is_done(part.key):
            kept += 1
            continue
        waits = _waits_for(run, config, stage_name, part.index) if reads_earlier_stages else []
        if waits:
            logger.warning("part %s waits for %s, which did not complete; it runs on --resume", part.key, ", ".join(waits))
            run.record_blocked_part(part.key, waits)
            continue
        todo.append(part)
    if kept:
        logger.info("%s: %d part(s) committed earlier are kept, %d to run", stage_name, kept, len(todo))
    if not todo:
        return {"kept": kept, "run": 0}
    prepass = _prepass_results(run, config, stage_name)
    committer = _Committer(run, list(rows_per_part))
    executor.run_parts(str(run.root), config, todo, prepass, committer.commit, committer.fail, rows_per_part)
    return {"kept": kept, "run": len(todo)}


def _record_signatures(run: RunDirectory, config: RunConfig) -> None:
    from engine.signature import present_languages_only

    languages = {lang for table in run.sample_tables(["language"]) for lang in table.column("language").to_pylist()}
    for stage in part_stages_of(config.stages):
        prepass = _prepass_results(run, config, stage.name)
        for task in stage.tasks(config):
            signatures = stage.signatures(config, task, prepass.get(task.task, {}))
            if signatures:
                run.manifest["signatures"][task.task] = present_languages_only(signatures, languages)
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
    from engine.preflight import preflight

    preflight(config)  # config-time checks that read the input: before the run directory exists
    run = open_run(config, out, resume)
    try:
        return _execute(run, config, executor_name, ray_address, ray_options)
    except KeyboardInterrupt:
        # Ctrl-C: the manifest says so (committed parts stay; `--resume` continues the run).
        run.finish("interrupted")
        raise
    finally:
        run.close()


def _execute(run: RunDirectory, config: RunConfig, executor_name: str, ray_address: str | None, ray_options: dict[str, Any] | None) -> RunSummary:
    recorder = throughput.Recorder(run.manifest)
    with recorder.timed("prepare"):
        prepare(run, config)
    stages = part_stages_of(config.stages)
    parts_by_stage: dict[str, dict[str, int]] = {}
    if stages:
        executor = make_executor(executor_name, ray_address, ray_options)
        try:
            for stage in stages:
                # The span covers planning (which loads the scorers' resources), pre-passes and parts.
                with recorder.timed(f"stage:{stage.name}"):
                    parts_by_stage[stage.name] = run_part_stage(run, config, stage.name, executor)
                run.save()
        finally:
            executor.close()
        _record_signatures(run, config)
    failed = run.manifest["failed_parts"]
    blocked = run.manifest.get("blocked_parts", {})
    if failed or blocked:
        run.finish("failed")
        names = ", ".join(sorted(failed))
        raise PartFailedError(
            f"{len(failed)} part(s) failed: {names}"
            + (f"; {len(blocked)} later part(s) wait for them" if blocked else "")
            + f". Errors are in {run.path('manifest.json')} under failed_parts. Fix the cause (a model file, memory, "
            f"a worker) and rerun the same command with --resume: committed parts are kept. If the cause is in the "
            "config, fix it and start a new --out (a changed config is another run)",
            causes=[info.get("error", "") for info in failed.values()],
        )
    for stage in stages:
        prefix = f"{stage.name}/"
        run.manifest["counts"][f"{stage.name}_rows"] = sum(
            info["rows"] for key, info in run.manifest["parts"].items() if key.startswith(prefix)
        )
    for stage in stages:
        marker = f"{stage.name}-analysis"
        if type(stage).analyze is not Stage.analyze and not run.stage_done(marker):
            with recorder.timed(marker):
                stage.analyze(run, config)
            run.mark_stage(marker)
    if "calibrate" in config.stages and not run.stage_done("calibrate"):
        with recorder.timed("calibrate"):
            calibrate_run(run, config)
    # The scores are final here; the report is a view of them and can be rewritten any time
    # (`babelscore report RUN`), so the run is complete before the report is drawn.
    run.finish("complete")
    if "report" in config.stages:
        from engine.report.build import write_report

        with recorder.timed("report"):
            write_report(str(run.root))
        run.mark_stage("report")
    return RunSummary(str(run.root), "complete", dict(run.manifest["counts"]), {}, parts_by_stage,
                      dict(run.manifest.get("throughput", {})))


def calibrate_run(run: RunDirectory, config: RunConfig) -> None:
    from engine.calibrate.run import calibrate_run_dir
    from engine.io.atomic import write_parquet_atomic
    from engine.records import CALIBRATION_SCHEMA

    table = calibrate_run_dir(run, config.section("calibrate"))
    write_parquet_atomic(run.path("calibration.parquet"), table, CALIBRATION_SCHEMA)
    run.mark_stage("calibrate", rows=table.num_rows)


def read_scores(run_dir: str) -> pa.Table:
    return RunDirectory.open_existing(run_dir).read_parts("score/", SCORE_SCHEMA)

