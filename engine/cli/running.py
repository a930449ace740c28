"""`babelscore run`: run a config, then print what the run did and where its report is."""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from engine.cli.exits import EPILOG, EXIT_USAGE
from engine.errors import ConfigError, RejectedRowsError


def add_run_options(p: argparse.ArgumentParser) -> None:
    """The options `run` and `demo` share: the run directory, the executor and the rejection limit."""
    p.add_argument("--out", required=True, help="run directory (created; must be new unless --resume)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run in --out: committed parts are kept")
    p.add_argument("--executor", choices=["local", "ray"], default="local", help="where parts run (default: local)")
    p.add_argument("--ray-address", default=None, help="address of an existing Ray cluster (default: start a local one)")
    p.add_argument("--ray-actors-per-model", type=int, default=None, help="model actors per model (default: one per GPU in the cluster)")
    p.add_argument("--ray-gpus-per-actor", type=float, default=1.0, help="GPUs each model actor asks for (0.5: two actors per GPU)")
    p.add_argument("--ray-gpu-resource", default="GPU", help="Ray resource model actors ask for (a custom resource pins models to some nodes)")
    p.add_argument("--ray-max-retries", type=int, default=2, help="resubmissions of a part lost to a dead worker or node")
    p.add_argument("--max-rejected", default=None, metavar="N|P%",
                   help="rejected input rows the run may have and still exit 0: a count (12) or a share of the "
                   "input ('5%%'); default validation.max_rejected, else 0 (over it: exit 8)")
    # SUPPRESS: `babelscore run X --quiet` and `babelscore --quiet run X` both work.
    p.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="warnings and errors only")


def add_run_command(sub: Any) -> None:
    run = sub.add_parser("run", help="run a config", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("config", help="YAML run config")
    add_run_options(run)
    run.add_argument("--reuse", nargs="+", default=None, metavar="RUN",
                     help="earlier run directories: every identical finished row is taken from them, not computed "
                     "(replaces the config's `reuse:`)")
    run.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    from engine.config import load_config
    from engine.io.rundir import RunDirectory
    from engine.runner import execute_run

    config = load_config(args.config)
    config = _with_max_rejected(config, getattr(args, "max_rejected", None))
    if getattr(args, "reuse", None):
        import dataclasses

        from engine.params import config_path

        # Absolute (Ray workers need not share the driver's working directory), and relative to
        # the working directory: given on the command line, not in the config.
        config = dataclasses.replace(config, reuse=tuple(config_path(p, Path.cwd()) for p in args.reuse))
    ray_options = {
        "actors_per_model": args.ray_actors_per_model,
        "gpus_per_actor": args.ray_gpus_per_actor,
        "gpu_resource": args.ray_gpu_resource,
        "max_retries": args.ray_max_retries,
    }
    summary = execute_run(
        config, args.out, resume=args.resume, executor_name=args.executor, ray_address=args.ray_address, ray_options=ray_options
    )
    from engine import console

    counts = summary.counts
    quiet = getattr(args, "quiet", False)
    print(f"run complete: {summary.run_dir}")
    from engine.report.sweep import best_lines
    from engine.reuse import reuse_lines

    plan = summary.plan
    assert plan is not None  # execute_run returns the plan it ran
    finished = RunDirectory.open_existing(summary.run_dir, plan=plan)  # this run's own plan
    for line in reuse_lines(finished.manifest.reuse, plan.layout.reuse_verbs):
        print(line)
    for line in console.resume_lines(summary.parts_by_stage):
        print(line)
    if console.reads_samples(plan):
        print(
            f"input rows {counts.get('input_rows')}, valid {counts.get('valid_rows')}, rejected {counts.get('rejected_rows')}"
            + (f" (see {summary.run_dir}/rejected.parquet)" if counts.get("rejected_rows") else "")
        )
    if not quiet:
        for bound in plan.stages:
            lines = bound.stage.console_lines(finished, counts)
            if lines:
                print("\n".join(lines))
        best = best_lines(finished)
        if best:
            print("\n" + best)
    if not quiet:
        lines = console.throughput_lines(summary.throughput, plan.layout)
        if lines:
            print("\n" + "\n".join(lines))
    report = Path(summary.run_dir) / "report" / "index.html"
    if report.exists():
        print(f"\nreport: open {report.resolve()}")
    else:
        print(f"\nreport: none (`report` is not in stages); write one with: babelscore report {shlex.quote(summary.run_dir)}")
    _end_with_data_loss(summary.data_loss, config)
    return 0


# ----- loud data loss: the run's last lines say how many input rows it lost ---------
def _with_max_rejected(config, value: str | None):
    """`--max-rejected N|P%` replaces `validation.max_rejected` (kept out of the config hash)."""
    if value is None:
        return config
    import dataclasses

    from engine.data.loss import RejectionLimit

    try:
        RejectionLimit.parse(value, where="--max-rejected")  # the flag, not the config key, named in the error
    except ConfigError as exc:  # a usage error of the command line (exit 2), not of the config file
        print(f"babelscore run: error: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from exc
    validation = dataclasses.replace(config.validation, max_rejected=value)
    return dataclasses.replace(config, validation=validation)


def _end_with_data_loss(loss, config) -> None:
    """Print the closing data-loss line; over the limit, raise RejectedRowsError (exit 8)."""
    if loss is None or not loss.rejected:
        return
    line = loss.closing_line()
    if loss.within_limit:
        print(f"\n{line}")
        return
    raise RejectedRowsError(line, loss.suggestion(f"babelscore validate {shlex.quote(config.input)}"))

