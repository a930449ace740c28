"""The driver of a run: prepare the input (from a source stage or the input file), run the
part stages of the registry through an executor, then the driver work: each part stage's
`analyze` and each driver stage's `run_driver`, in registry order. The driver alone writes the
manifest and holds the run directory's lock. Nothing here names a stage: what runs and in
which order follows from the registry and each stage's `kind`.

Recovery: a part that fails (after the executor's retries) is recorded and the other parts go
on; a later stage's part whose inputs failed is recorded as blocked. The run then ends
"failed"; `--resume` retries every failed and blocked part and ends "complete" when nothing
fails any more. Committed parts are never redone.
"""
from __future__ import annotations

import dataclasses
import errno
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from engine import faults, throughput
from engine.config import RunConfig, config_hash, file_fingerprint
from engine.data.loss import DataLoss
from engine.data.loss import assess as assess_data_loss
from engine.errors import BudgetStopError, InputError, PartFailedError, RunDirectoryError, StageError
from engine.io.atomic import disk_full_error, is_disk_full, write_json_atomic
from engine.io.rundir import RunDirectory
from engine.part_execution import PartTask, read_part_input, release_models, sample_part_path, upstream_parts
from engine.prepare import prepare
from engine.records import SCORE_SCHEMA
from engine.signature import library_versions
from engine.stages.base import SCORES, Analyzes, DriverStage, Rates, Stage, prepass_hash
from engine.stages.plan import BoundStage, RunPlan, build_plan, reopen_run

logger = logging.getLogger(__name__)

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
    data_loss: DataLoss | None = None  # the quarantined input rows against the limit
    plan: RunPlan | None = None  # the plan the run was made from


def _input_fingerprint(plan: RunPlan) -> str:
    config = plan.config
    source = plan.input_source
    if source is not None:  # the input is made from the source stage's options, which the config hash covers
        return source.name
    if not Path(config.input).is_file():
        raise InputError(f"input {config.input!r} does not exist; fix `input:` in the config")
    return file_fingerprint(config.input)


def open_run(plan: RunPlan, out: str, resume: bool) -> RunDirectory:
    fingerprint = _input_fingerprint(plan)
    digest = config_hash(plan.config, fingerprint)
    extra = {"input_sha256": fingerprint, "versions": library_versions()}
    run = RunDirectory.open_for_run(out, plan.config.to_dict(), digest, extra, resume)
    run.use_plan(plan)
    return run


# ----- part stages ----------------------------------------------------------------------------
class Committer:
    """Commits finished parts; engine.faults lets tests kill the driver between commits."""

    def __init__(self, run: RunDirectory, rows_per_part: list[int] | None = None, stage: Stage | None = None):
        self.run = run
        self.schema = stage.schema if stage is not None else None  # every part of one stage has it
        self.rows_counter = stage.output_rows_counter if isinstance(stage, Rates) else None
        self.rows_per_part = rows_per_part or []
        self.recorder = throughput.Recorder(run.manifest)
        self.commits = 0
        self.crash_after = faults.crash_after_commits()

    def commit(self, part: PartTask, table: pa.Table) -> None:
        table, stats = throughput.detach(table)
        if stats is not None:  # summed in the manifest, which is saved when the stage ends
            in_rows = self.rows_per_part[part.index] if part.index < len(self.rows_per_part) else 0
            self.recorder.add_part(part.stage, part.task, part.model_key, stats, in_rows, self.rows_counter)
        self.run.commit_part(part.key, part.relative_path, table, self.schema)
        self.commits += 1
        if self.crash_after is not None and self.commits >= self.crash_after:
            # The summary is written first so that a test can read from manifest.json how many
            # parts were committed; resuming reads the completion markers either way.
            self.run.save()
            faults.crash_now()

    def fail(self, part: PartTask, error: str, attempts: int) -> None:
        logger.error("part %s failed after %d attempt(s): %s", part.key, attempts, error)
        self.run.record_failed_part(part.key, error, attempts)


def _prepass_results(run: RunDirectory, plan: RunPlan, bound: BoundStage) -> dict[str, Any]:
    """Run (or reload) the corpus pre-pass of every task of a stage that has one.

    Results live in RUN/prepass/<task>.json and are recorded with their hash in the manifest;
    the input is streamed part by part, never concatenated.
    """
    stage = bound.stage
    n_parts = run.manifest.counts["parts"]
    results: dict[str, Any] = {}
    for task in bound.tasks:
        if not stage.needs_prepass(task):
            continue
        record = run.manifest.prepass_record(task.task)
        path = run.path(f"prepass/{task.task}.json")
        if record is not None and path.exists():
            results[task.task] = json.loads(path.read_text(encoding="utf-8"))
            continue
        logger.info("%s: corpus pre-pass over %d part(s)", task.task, n_parts)
        tables = (read_part_input(run.root, bound, i) for i in range(n_parts))
        with throughput.Recorder(run.manifest).timed(f"prepass:{task.task}"):
            result = stage.prepass(task, tables)
        release_models()  # an idf pre-pass loads its scorer's model here; free it before the parts load theirs
        write_json_atomic(path, result)
        run.manifest.record_prepass(task.task, {"file": f"prepass/{task.task}.json", "hash": prepass_hash(result)})
        run.save()
        results[task.task] = result
    return results


def _waits_for(run: RunDirectory, plan: RunPlan, bound: BoundStage, index: int) -> list[str]:
    """Part keys this part reads that are not committed (they failed or were blocked)."""
    return [part.key for part in upstream_parts(plan, bound, index) if not run.is_done(part.key)]


def run_part_stage(run: RunDirectory, plan: RunPlan, bound: BoundStage, executor: Any) -> dict[str, int]:
    """Run the parts of a bound stage not committed yet; returns {"kept": committed before, "run": tried now}."""
    stage_name = bound.name
    rows_per_part = bound.stage.input_parts(run.root)
    # A stage that cuts its own input (cut in RUN/ before its parts run) waits for no other stage.
    reads_earlier_stages = rows_per_part is None
    if rows_per_part is None:
        rows_per_part = run.manifest.part_rows
    n_parts = len(rows_per_part)
    todo: list[PartTask] = []
    kept = 0
    for part in bound.parts(n_parts):
        if run.is_done(part.key):
            kept += 1
            continue
        waits = _waits_for(run, plan, bound, part.index) if reads_earlier_stages else []
        if waits:
            logger.warning("part %s waits for %s, which did not complete; it runs on --resume", part.key, ", ".join(waits))
            run.record_blocked_part(part.key, waits)
            continue
        todo.append(part)
    if kept:
        logger.info("%s: %d part(s) committed earlier are kept, %d to run", stage_name, kept, len(todo))
    if not todo:
        return {"kept": kept, "run": 0}
    prepass = _prepass_results(run, plan, bound)
    committer = Committer(run, list(rows_per_part), bound.stage)
    try:
        # The plan travels in place of the config: workers find each part's bound stage in it.
        executor.run_parts(str(run.root), plan, todo, prepass, committer.commit, committer.fail, rows_per_part)
    finally:
        _record_placements(run, executor, todo)
        run.save()  # the manifest summarises the stage's completion markers once, not per commit
    return {"kept": kept, "run": len(todo)}


def _record_placements(run: RunDirectory, executor: Any, parts: list[PartTask]) -> None:
    """The manifest's placements: for each part committed now, the node, host and process that computed it."""
    for part in parts:
        where = executor.placements.get(part.key)
        if where is not None and run.is_done(part.key):
            run.manifest.record_placement(part.key, {k: where.get(k) for k in ("node_id", "hostname", "pid", "attempts")})


def record_signatures(run: RunDirectory, plan: RunPlan) -> None:
    from engine.signature import present_languages_only

    languages = {lang for table in run.sample_tables(["language"]) for lang in table.column("language").to_pylist()}
    for bound in plan.part_stages():
        prepass = _prepass_results(run, plan, bound)
        for task in bound.tasks:
            signatures = bound.stage.signatures(task, prepass.get(task.task, {}))
            if signatures:
                run.manifest.record_signatures(task.task, present_languages_only(signatures, languages))
    run.save()
    unsigned = run.manifest.unsigned_tasks()
    if unsigned:
        raise StageError(
            unsigned[0].split("/")[0],
            f"task(s) {unsigned} wrote rows but record no signature in the manifest; the stage's `signatures()` "
            "must describe every task whose rows it writes (model identity, options, versions)",
        )


def _record_reuse(run: RunDirectory, plan: RunPlan) -> None:
    """Task identities (what later runs reuse by) and, with `reuse`, what this run reused."""
    from engine.reuse import record_identities, summarize_reuse

    record_identities(run, plan, lambda bound: _prepass_results(run, plan, bound))
    summarize_reuse(run, plan)


def log_model_plan(run: RunDirectory, run_plan: RunPlan) -> None:
    """Say, before any work, which models the run loads, where, and what each is estimated to need."""
    from engine.runtime.memory import plan_models

    plan = plan_models(run_plan.model_needs())
    for planned in plan:
        logger.info("model plan: %s", planned.line())
    run.manifest.record_model_plan([
        {"where": p.need.where, "model": p.need.model, "stage": p.need.stage, "backend": p.need.backend, "device": p.device,
         "estimated_bytes": p.estimated_bytes, "budget_bytes": p.budget_bytes, "dtype": p.dtype,
         "dtype_reason": p.dtype_reason} for p in plan
    ])
    run.save()


def _record_models(run: RunDirectory, executor: Any, since: float) -> None:
    """Append the residency records of every model released so far (driver and workers) to
    the manifest's `models`: what was loaded, for which stage, in which process, when, and its peak.
    Only loads made since this run's executor started count: a process that ran other work
    before (an earlier run, a notebook) keeps no records of it in this run's manifest."""
    from engine.runtime.model_registry import model_registry

    records = model_registry().take_records() + getattr(executor, "take_model_records", list)()
    records = [r for r in records if r["loaded_at"] >= since]
    if records:
        run.manifest.record_models(records)
        run.save()


def make_executor(name: str, ray_address: str | None = None, ray_options: dict[str, Any] | None = None) -> Any:
    if name == "local":
        from engine.executors.local import LocalExecutor

        return LocalExecutor()
    if name == "ray":
        from engine.executors.params import RayOptions
        from engine.executors.ray import RayExecutor

        return RayExecutor(address=ray_address, options=RayOptions.from_mapping(ray_options or {}, where="ray options"))
    raise ValueError(f"unknown executor {name!r}; allowed: local, ray")


def check_ray_resources(plan: RunPlan, ray_options: dict[str, Any] | None) -> None:
    """Config-time: every vLLM model fits the GPUs one Ray model actor asks for."""
    from engine.errors import ConfigError
    from engine.runtime.memory import ray_resource_errors

    gpus = (ray_options or {}).get("gpus_per_actor")
    errors = ray_resource_errors(plan.model_needs(), 1.0 if gpus is None else float(gpus))
    if errors:
        raise ConfigError("; ".join(errors))


def execute_run(
    config: RunConfig,
    out: str,
    resume: bool = False,
    executor_name: str = "local",
    ray_address: str | None = None,
    ray_options: dict[str, Any] | None = None,
) -> RunSummary:
    from engine.preflight import preflight

    plan = build_plan(config)  # the run resolved once: every layer below takes it, not stage names
    preflight(plan)  # config-time checks that read the input: before the run directory exists
    if executor_name == "ray":
        check_ray_resources(plan, ray_options)
    readers = _hold_reuse_sources(config, out)
    try:
        run = open_run(plan, out, resume)
        try:
            return _execute(run, plan, executor_name, ray_address, ray_options)
        except KeyboardInterrupt:
            # Ctrl-C: the manifest says so (committed parts stay; `--resume` continues the run).
            run.finish("interrupted")
            raise
        except PartFailedError:
            raise  # the manifest already says failed, and which parts
        except BaseException as exc:
            # Whatever stopped the driver (a cluster that refused it, a full disk): the run says
            # it failed and why, never "running" with nobody running it; `--resume` continues it.
            translated = _translated(exc, run)
            try:
                if run.manifest.status == "running":  # a view drawn after "complete" leaves the run complete
                    run.fail(f"{type(translated).__name__}: {translated}")
            except OSError as save_error:  # a full disk may not take the manifest either: the error still says what to do
                logger.warning("could not record the failure in the manifest: %s", save_error)
            if translated is exc:
                raise
            raise translated from exc
        finally:
            run.close()
    finally:
        for reader in readers:
            reader.release()


def _translated(exc: BaseException, run: RunDirectory) -> BaseException:
    """An OSError of the run directory as the project error that says what to do; others as they are."""
    if isinstance(exc, OSError):
        # Writes outside engine.io.atomic (the input's spill, driver work): the same DiskFullError.
        where = Path(exc.filename) if exc.filename else run.root
        if is_disk_full(exc):
            return disk_full_error(where, exc)
        in_run = exc.filename is not None and where.resolve().is_relative_to(run.root.resolve())
        if exc.errno == errno.EROFS or (exc.errno in (errno.EACCES, errno.EPERM) and in_run):
            return RunDirectoryError(f"cannot write {where} ({exc.strerror}): the run directory must stay writable; "
                                     "make it writable again (or copy it to a writable disk), then rerun with "
                                     "--resume (committed parts are kept)")
    return exc


def _hold_reuse_sources(config: RunConfig, out: str) -> list[Any]:
    """Earlier runs named by `reuse`: checked, and held read-only for the whole run (engine.reuse)."""
    if not config.reuse:
        return []
    from engine.reuse import forget_sources, hold_earlier_runs

    forget_sources()  # indexes of an earlier run in this process may be out of date
    return hold_earlier_runs(config.reuse, out)


def _execute(run: RunDirectory, plan: RunPlan, executor_name: str, ray_address: str | None, ray_options: dict[str, Any] | None) -> RunSummary:
    from engine import numerics
    from engine.runtime import thread_plan

    # Resolved once here (after the hash) and sent with the plan's config to every worker.
    config = dataclasses.replace(plan.config, deterministic=plan.config.deterministic.resolved())
    plan = dataclasses.replace(plan, config=config)
    numerics.apply(config.deterministic)
    run.manifest.record_numerics(config.deterministic.to_dict())
    run.manifest.record_thread_plan(thread_plan.plan())  # this driver's; workers import engine first too
    recorder = throughput.Recorder(run.manifest)
    with recorder.timed("prepare"):
        prepare(run, plan)
    loss = assess_data_loss(run.manifest, config.validation.rejection_limit, str(run.path("rejected.parquet")))
    run.manifest.record_data_loss(loss.manifest_record())  # also in a failed run's manifest
    stages = plan.part_stages()
    parts_by_stage: dict[str, dict[str, int]] = {}
    if stages:
        log_model_plan(run, plan)
        models_since = time.time()
        executor = make_executor(executor_name, ray_address, ray_options)
        try:
            for stage in stages:
                # The span covers planning (which loads the scorers' resources), pre-passes and parts.
                with recorder.timed(f"stage:{stage.name}"):
                    parts_by_stage[stage.name] = run_part_stage(run, plan, stage, executor)
                _record_models(run, executor, models_since)
                run.save()
        finally:
            executor.close()
            _record_models(run, executor, models_since)
        record_signatures(run, plan)
        _record_reuse(run, plan)
    failed = run.manifest.failed_parts
    blocked = run.manifest.blocked_parts
    if failed or blocked:
        causes = [info.get("error", "") for info in failed.values()]
        if PartFailedError("", causes).budget_caused and not blocked:
            # Judges at their spending caps: a clean stop, said once, recorded with its reasons.
            reasons = sorted({c.removeprefix("BudgetExhaustedError: ") for c in causes})
            run.manifest.record_budget_stop(sorted(failed), reasons)
            run.finish("stopped")
            raise BudgetStopError(
                f"the judge stage stopped at a spending cap ({len(failed)} part(s) not finished): {reasons[0]}"
                + (f" (and {len(reasons) - 1} more reason(s))" if len(reasons) > 1 else "")
                + ". Nothing over the cap was sent and every paid answer is kept; raise the cap in the config "
                "(caps and prices are not part of the run's identity) and rerun the same command with --resume: "
                "no paid call is repeated", causes=causes)
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
        run.manifest.record_counts({f"{stage.name}_rows": run.manifest.committed_rows(prefix)})
    driver_work = [b.stage for b in plan.stages if isinstance(b.stage, (DriverStage, Analyzes))]
    for stage in [s for s in driver_work if not _after_complete(s)]:
        with recorder.timed(_step_name(stage)):
            run_driver_stage(run, stage)
    # The outputs are final here; a stage that is only a view of them (the report) can be
    # redrawn any time (`babelscore report RUN`), so the run is complete before it runs.
    run.finish("complete")
    for stage in [s for s in driver_work if _after_complete(s)]:
        with recorder.timed(_step_name(stage)):
            run_driver_stage(run, stage)
    run.save()
    return RunSummary(str(run.root), "complete", run.manifest.counts, {}, parts_by_stage,
                      run.manifest.throughput, loss, plan)


def _step_name(stage: Stage) -> str:
    """The throughput step of a piece of driver work: `<stage>-analysis` or the driver stage's name."""
    return stage.name if isinstance(stage, DriverStage) else f"{stage.name}-analysis"


def _after_complete(stage: Stage) -> bool:
    """Whether it is a view of the final outputs (drawn after the run is marked complete)."""
    return isinstance(stage, DriverStage) and stage.after_complete


def run_driver_stage(run: RunDirectory, stage: Stage) -> None:
    """One piece of driver work, once per run: a part stage's `analyze` (marked
    `<stage>-analysis`) or a driver stage's `run_driver` (which marks `<stage>`); a view
    (`after_complete`) is redrawn on every run."""
    try:
        if isinstance(stage, DriverStage):
            if stage.after_complete or not run.stage_done(stage.name):
                stage.run_driver(run)
        elif isinstance(stage, Analyzes):
            marker = f"{stage.name}-analysis"
            if not run.stage_done(marker):
                stage.analyze(run)
                run.mark_stage(marker)
    except OSError as exc:
        # Driver work writes with more than engine.io.atomic (the report's figures and page, analysis
        # tables): a full disk there is the same DiskFullError, never a raw traceback.
        if is_disk_full(exc):
            raise disk_full_error(Path(exc.filename) if exc.filename else run.root / stage.name, exc) from exc
        raise


def read_scores(run_dir: str) -> pa.Table:
    run = reopen_run(run_dir)
    tables = [run.read_parts(prefix, SCORE_SCHEMA) for prefix in run.layout.prefixes(SCORES)]
    return pa.concat_tables(tables) if tables else SCORE_SCHEMA.empty_table()

