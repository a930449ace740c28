"""Command line: `babelscore run | validate | config | demo | bench | convert | report | diff | make-tiny-models | judge render`."""
from __future__ import annotations

import argparse
import logging
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import (
    BabelscoreError,
    BudgetStopError,
    ClusterError,
    ConfigError,
    DamagedModelError,
    DiskFullError,
    InputError,
    MissingSecretError,
    ModelLoadError,
    PartFailedError,
    RejectedRowsError,
    RunDirectoryError,
)

if TYPE_CHECKING:
    from engine.config import RunConfig

logger = logging.getLogger("engine.cli")
DEMO_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "demo.yaml"
DEMO_GENERATE_CONFIG = DEMO_CONFIG.with_name("demo_generate.yaml")
DEMO_ROUNDTRIP_CONFIG = DEMO_CONFIG.with_name("demo_roundtrip.yaml")
DEMO_MODELS = DEMO_CONFIG.parent.parent / ".cache" / "demo-models"  # where configs/demo.yaml looks


# Exit statuses, most specific exception first; documented in `--help` and the README.
EXIT_OK, EXIT_FAILED_PARTS, EXIT_USAGE = 0, 1, 2
EXIT_CODES: tuple[tuple[int, type[BaseException] | None, str], ...] = (
    (0, None, "success (validate: every row valid; config check: every check passed)"),
    (1, PartFailedError, "work ran but some failed: failed parts (run), rejected rows (validate)"),
    (2, None, "command-line usage error"),
    (3, ConfigError, "config error, nothing ran: fix the config"),
    (4, InputError, "input error: the input or labels file missing or unreadable, a converter table not in the wide layout, or no valid row"),
    (5, RunDirectoryError, "run directory error: --out holds another run, or --resume finds no run"),
    (6, ModelLoadError, "a model or tokenizer cannot be loaded"),
    (7, BabelscoreError, "any other babelscore error (a stage cannot run)"),
    (8, RejectedRowsError, "the run finished but rejected more input rows than --max-rejected / "
     "validation.max_rejected allow (default 0; reasons in RUN/rejected.parquet)"),
    (9, ClusterError, "the Ray cluster cannot be reached, refused the driver (authentication token, Ray or Python "
     "version) or was lost mid-run: fix it as the message says, then rerun with --resume"),
    (10, BudgetStopError, "a judge stopped at a spending cap (max_prompt_tokens, max_completion_tokens, max_cost): "
     "nothing over it was sent; raise the cap, then rerun with --resume"),
    (130, None, "interrupted (Ctrl-C): rerun with --resume"),
)
EPILOG = "exit status:\n" + "\n".join(f"  {code:<4d}{meaning}" for code, _, meaning in EXIT_CODES)


def exit_code(exc: BaseException) -> int:
    # The most specific class that matches (the longest ancestry), so a subclass gets its own code.
    matches = [(len(cls.__mro__), code) for code, cls, _ in EXIT_CODES if cls is not None and isinstance(exc, cls)]
    return max(matches)[1] if matches else 7


def _command(args: argparse.Namespace, out: str | None = None, resume: bool = False) -> str:
    parts = ["babelscore", "run", args.config, "--out", out or args.out]
    if getattr(args, "executor", "local") != "local":
        parts += ["--executor", args.executor]
    if getattr(args, "ray_address", None):
        parts += ["--ray-address", args.ray_address]
    if getattr(args, "reuse", None):
        parts += ["--reuse", *args.reuse]
    return shlex.join(parts) + (" --resume" if resume else "")


def next_step(args: argparse.Namespace, exc: BaseException) -> str | None:
    """What to run next after `babelscore run` failed with `exc` (None: nothing to suggest)."""
    if isinstance(exc, RejectedRowsError):
        return exc.suggestion or None
    if getattr(args, "command", None) != "run":
        return None
    out = Path(args.out)
    if isinstance(exc, BudgetStopError):
        return (f"raise the cap named above in {args.config} (or judge.budget), then continue; no paid call is "
                f"repeated: {_command(args, resume=True)}")
    if isinstance(exc, PartFailedError):
        if exc.environment_caused and not exc.config_caused:
            return f"export the variable named above, then continue: {_command(args, resume=True)}"
        if exc.files_caused and not exc.config_caused:
            return f"repair or re-download the model file named above, then continue: {_command(args, resume=True)}"
        if exc.config_caused:
            new_out = str(out.with_name(out.name + "-2"))
            return (
                "the cause is in the config: fix it, then start a new run directory (a changed config "
                f"cannot --resume {out}): {_command(args, new_out)}"
            )
        return f"fix the cause, then continue (committed parts are kept): {_command(args, resume=True)}"
    if isinstance(exc, RunDirectoryError) and "already holds this run" in str(exc) and not getattr(args, "resume", False):
        return f"continue it: {_command(args, resume=True)}"
    if isinstance(exc, ClusterError):
        started = (out / "manifest.json").exists()
        return f"fix the cluster as said above, then {'continue' if started else 'run'}: {_command(args, resume=started)}"
    if isinstance(exc, DiskFullError):
        return f"free space on that disk, then continue (committed parts are kept): {_command(args, resume=True)}"
    if isinstance(exc, MissingSecretError):
        return f"export the variable named above, then run: {_command(args)}"
    if isinstance(exc, DamagedModelError):
        return f"repair or re-download the model file named above, then run: {_command(args)}"
    if isinstance(exc, (ConfigError, ModelLoadError)):
        fresh = not (out / "manifest.json").exists()
        target = args.out if fresh else str(out.with_name(out.name + "-2"))
        return f"fix {args.config}, then run: {_command(args, target)}"
    return None


def _setup_logging(verbose: bool, quiet: bool = False) -> None:
    import os

    if verbose:  # model workers show their libraries' start-up logs too (engine/runtime/model_process.py)
        os.environ["BABELSCORE_VERBOSE"] = "1"
    else:  # the hub's and transformers' own bars ("Loading weights", "Writing model shards") are start-up noise
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if quiet:  # warnings and errors only, no progress bars, and the models' own logs turned down
        os.environ.setdefault("BABELSCORE_NO_PROGRESS", "1")
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("httpx", "urllib3", "filelock", "numba", "matplotlib", "PIL"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


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
    from engine.kinds import CALIBRATION
    from engine.reuse import reuse_lines
    from engine.stages.plan import build_plan

    plan = summary.plan or build_plan(config)
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
        for bound in plan.part_stages():
            lines = bound.stage.console_lines(finished, counts)
            if lines:
                print("\n".join(lines))
    if plan.layout.has_provider(CALIBRATION) and not quiet:
        print_kappa(summary.run_dir)
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


def print_kappa(run_dir: str) -> None:
    import pyarrow.parquet as pq

    from engine.calibrate.summary import kappa_summary
    from engine.console import small_sample_note

    path = Path(run_dir) / "calibration.parquet"
    if path.exists():
        table = pq.read_table(path)
        print()
        print(kappa_summary(table))
        note = small_sample_note(table)
        if note:
            print(note)
        from engine.report.sweep import best_lines
        from engine.stages.plan import reopen_run

        best = best_lines(reopen_run(run_dir))
        if best:
            print("\n" + best)


def cmd_validate(args: argparse.Namespace) -> int:
    from engine.data.reader import iter_raw_rows
    from engine.data.validate import SampleValidator, ValidationParams

    params = ValidationParams(unknown_error_codes=args.unknown_error_codes)
    validator = SampleValidator(require_prediction=not args.allow_missing_prediction, params=params)
    shown, unshown, said = 0, 0, 0
    for raw in iter_raw_rows(args.input):
        _, rejection = validator.check(raw)
        for message in validator.column_messages[said:]:  # once per input, before the rows it explains
            print(f"columns: {message}")
        said = len(validator.column_messages)
        # a row rejected for a misnamed column is not listed row by row: the column message says it once
        if rejection is not None and shown < args.show and "present: rename it to" not in rejection["reason"]:
            if not shown:
                print("rejected rows (numbered from 0 in input order; blank JSONL lines are not counted):")
            print(f"row {rejection['row_index']} ({rejection['sample_id']}): {rejection['reason']}")
            shown += 1
        elif rejection is not None and "present: rename it to" not in rejection["reason"]:
            unshown += 1
    if unshown:
        print(f"... {unshown} more rejected row(s) not shown (--show {shown + unshown} lists them all)")
    total = validator.valid + validator.rejected
    print(f"{args.input}: {total} rows, {validator.valid} valid, {validator.rejected} rejected")
    if validator.rejected:
        print("rejected rows by reason:")
        for line in validator.summary_lines(where=None, all_listed=not unshown):
            print("  " + line)
    for warning in (validator.label_warning(), validator.unknown_codes_warning()):
        if warning:
            print(f"warning: {warning}")
    if validator.valid == 0:
        raise InputError(f"{args.input}: no valid row ({validator.rejected} rejected); fix the input")
    return EXIT_FAILED_PARTS if validator.rejected else EXIT_OK


def cmd_config(args: argparse.Namespace) -> int:
    from engine.config import load_config

    if args.action == "reference":
        from engine.config_reference import reference_markdown

        text = reference_markdown()
        if args.write:
            Path(args.write).parent.mkdir(parents=True, exist_ok=True)
            Path(args.write).write_text(text, encoding="utf-8")
            print(f"wrote {args.write}")
        else:
            sys.stdout.write(text)
        return EXIT_OK
    if not args.file:
        raise ConfigError(f"babelscore config {args.action}: give the config file, e.g. babelscore config {args.action} my.yaml")
    from engine.runtime.names import recorded_checks

    with recorded_checks() as model_checks:
        config = load_config(args.file)
    if args.action == "show":
        import yaml

        sys.stdout.write(yaml.safe_dump(config.to_dict(), sort_keys=False, allow_unicode=True))
        return EXIT_OK
    from engine.preflight import WARNING_PREFIX, preflight
    from engine.stages.plan import build_plan

    plan = build_plan(config)
    checked = preflight(plan)
    if args.executor == "ray":
        from engine.runner import check_ray_resources

        check_ray_resources(plan, {"gpus_per_actor": args.ray_gpus_per_actor})
        checked.append(f"ray resources: every vLLM model fits a model actor of {args.ray_gpus_per_actor:g} GPU(s)")
    print(f"{args.file}: every key valid (stages {list(config.stages)})")
    for where, kind, resolved in model_checks:
        print(f"  ok  {where}: {kind} {resolved.name!r} found ({resolved.source}: {resolved.path})")
    if not model_checks:
        print("  ok  no model or tokenizer to check (lexical metrics only)")
    for line in checked:
        warning = line.startswith(WARNING_PREFIX)
        print(f"  {'warn' if warning else 'ok'}  {line.removeprefix(WARNING_PREFIX)}")
    rows = _judge_forecast(config)
    if rows:
        from engine.judge.forecast import summary_line

        print(f"  {summary_line(rows)}; per judge, strategy and language: babelscore bench {args.file}")
    print("config check passed: nothing was run")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    """Generation job (configs/demo_generate.yaml), the round trip (configs/demo_roundtrip.yaml),
    then the main job (configs/demo.yaml), whose report ends it."""
    import os
    import shutil

    from engine.demo import finish_warmup, start_warmup, timed_prepare
    from engine.runtime import DEMO_MODELS_ENV

    models = Path(args.models) if args.models else DEMO_MODELS
    os.environ[DEMO_MODELS_ENV] = str(models.resolve())
    _, built, build_s = timed_prepare(models)
    warmup = start_warmup(models)
    out = Path(args.out)
    jobs = [
        (DEMO_GENERATE_CONFIG, out.with_name(out.name + "-generate")),
        (DEMO_ROUNDTRIP_CONFIG, out.with_name(out.name + "-roundtrip")),
        (DEMO_CONFIG, out),
    ]
    for config, run_dir in jobs:
        if (run_dir / "manifest.json").exists() and not args.resume:
            logger.info("removing the previous demo run in %s", run_dir)
            shutil.rmtree(run_dir)
        print(f"\n=== {config.name} -> {run_dir}")
        args.config, args.out = str(config), str(run_dir)
        status = cmd_run(args)
        if status:
            finish_warmup(warmup, timeout_s=0)
            return status
    warmed = finish_warmup(warmup)
    print("\nthe demo's reports:")
    for config, run_dir in jobs:
        report = run_dir / "report" / "index.html"
        print(f"  {config.name:<22} " + (f"open {report.resolve()}" if report.exists() else
                                          f"none (`report` not in its stages): babelscore report {run_dir}"))
    print_demo_closing(built, build_s, [run_dir for _, run_dir in jobs], warmed)
    return 0


# ----- the demo's closing note: one-off costs, and how to go on from the shell ---------
def print_demo_closing(built: list[str], build_s: float, run_dirs: list[Path], warmed: dict[str, float]) -> None:
    import os
    import shutil

    from engine.demo import one_off_lines

    lines = one_off_lines(built, build_s, run_dirs, warmed)
    if lines:
        print("\n" + "\n".join(lines))
    bin_dir = Path(sys.prefix) / "bin"
    found = shutil.which("babelscore")
    where = "" if found and Path(found).parent == bin_dir else f" (it is in {bin_dir}, not on your PATH)"
    relative = os.path.relpath(bin_dir)
    bin_dir = Path(relative) if not relative.startswith("..") else bin_dir  # `.venv/bin` from the repository folder
    example = os.path.relpath(DEMO_CONFIG.parent.parent / "examples" / "samples.jsonl")
    print(f"\nnext: use babelscore from the shell{where}:")
    print(f"  source {shlex.quote(str(bin_dir / 'activate'))}    # once per shell (or call {bin_dir / 'babelscore'})")
    print(f"  babelscore validate {shlex.quote(example)}    # the README's walk-through, \"Bring your own data\"")


def cmd_bench(args: argparse.Namespace) -> int:
    from engine.config import load_config
    from engine.projection import bench, report_lines

    if args.devices < 1:
        raise ConfigError(f"--devices {args.devices}: give 1 or more")
    if args.profile and (args.write_profile or args.compare):
        both = "--write-profile" if args.write_profile else "--compare"
        _usage_error("bench", f"--profile projects a measured profile and runs nothing here; {both} needs a run: "
                     "give one or the other")
    config = load_config(args.config)
    from engine.projection import device_kind

    rows = _judge_forecast(config)
    if rows:
        from engine.judge.forecast import forecast_lines

        print("judge forecast for the whole input, before any call (completion: at most max_tokens a call):")
        print("\n".join(forecast_lines(rows)) + "\n", flush=True)
    if args.profile:  # project from what a bench measured on the target machine: nothing runs here
        from engine.bench_profile import check_covers, projection_lines, read_profile
        from engine.projection import input_size

        profile = read_profile(args.profile)
        notes = check_covers(profile, config, args.profile)
        full_rows, full_tasks = input_size(config)
        print("\n".join(projection_lines(profile, full_rows, full_tasks, args.devices, device_kind()) + notes))
        return EXIT_OK
    result = bench(config, args.sample, devices=args.devices, seed=args.seed, compare=args.compare)
    print("\n".join(report_lines(result)))
    if rows and result.large.judge_completion:
        from engine.judge.forecast import forecast_lines

        rows = _judge_forecast(config, result.large.judge_completion)
        print(f"\njudge forecast with the completion tokens measured on the {result.large.rows}-row sample "
              "(expected = mean a call there x calls):")
        print("\n".join(forecast_lines(rows or [])))
    if args.write_profile:
        from engine.bench_profile import profile_of, write_profile
        from engine.stages.plan import build_plan

        tasks = {b.stage.name for b in build_plan(config).own_tables()}
        write_profile(args.write_profile, profile_of(result, device_kind(), tasks, config))
        print(f"profile of this machine ({device_kind()}) written to {args.write_profile}: project with "
              f"`babelscore bench CONFIG --profile {args.write_profile} --devices N`")
    return EXIT_OK


def _judge_forecast(config: RunConfig, measured: dict | None = None) -> list | None:
    """The judges' forecast on the config's input (None without a judge stage, or when a stage makes the samples)."""
    from engine.judge.forecast import config_forecast
    from engine.judge.section import judges_of
    from engine.stages.plan import makes_samples

    judges = judges_of(config.sections)
    if judges is None:
        return None
    made = makes_samples(config.stages)
    return config_forecast(judges, config.input, config.validation, config.seed, stage_made_samples=made,
                           measured=measured)


def cmd_convert(args: argparse.Namespace) -> int:
    from engine.data.convert import convert_public_tables
    from engine.io.atomic import write_parquet_atomic

    if args.language:  # `--language nl zh` and `--language nl --language zh` both work
        args.language = [code for value in args.language for code in value.replace(",", " ").split()]
    tokenizers = {}
    for item in args.tokenizer or []:
        generator, sep, name = item.partition("=")
        if not sep or not generator or not name:
            raise SystemExit(f"--tokenizer {item!r}: write GENERATOR=TOKENIZER, e.g. bigcode/starcoder2-7b=./tok")
        tokenizers[generator] = name
    table = convert_public_tables(args.inputs, languages=args.language, tokenizers=tokenizers)
    write_parquet_atomic(args.out, table)
    print(f"wrote {table.num_rows} samples to {args.out}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from engine.report.build import write_report
    from engine.stages.plan import reopen_run

    path = write_report(reopen_run(args.run))
    print(f"report: open {Path(path).resolve()}")
    return 0


def cmd_make_tiny_models(args: argparse.Namespace) -> int:
    from engine.demo import prepare_demo_models

    for name, path in prepare_demo_models(Path(args.dir)).items():
        print(f"{name}: {path}")
    return 0


# ----- `babelscore judge render` (the judge's own commands; kept apart from the others) -----------
def _usage_error(command: str, message: str) -> None:
    print(f"babelscore {command}: error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def _check_out_file(out: str, command: str) -> None:
    """`--out` must name a file in a directory that exists; checked before any work is done."""
    path = Path(out)
    if path.is_dir():
        _usage_error(command, f"--out {out} is a directory; give a file path, e.g. {path / 'render.json'}")
    if not path.parent.is_dir():
        _usage_error(command, f"--out {out}: the directory {path.parent} does not exist; create it or give another path")


def cmd_judge(args: argparse.Namespace) -> int:
    """Print (or write) the exact messages of each judge call of a config, as a JSON list."""
    import json

    from engine.config import load_config
    from engine.judge.render import render_calls
    from engine.judge.section import judges_of

    if args.out:
        _check_out_file(args.out, "judge render")
    config = load_config(args.config, check=False)  # no model is loaded or checked: nothing is sent
    from engine.stages.plan import makes_samples

    made = makes_samples(config.stages)
    judges = judges_of(config.sections)
    if judges is None:
        raise ConfigError("judge render: the config has no judge stage; add `judge` to `stages` and a `judge:` section")
    records = list(render_calls(judges, config.input, config.validation, args.sample,
                                args.strategy, args.language, args.judge, stage_made_samples=made,
                                request=args.request))
    text = json.dumps(records, ensure_ascii=False, indent=1) + "\n"
    if args.out:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:  # e.g. no permission: said as a usage error, like a wrong --out
            _usage_error("judge render", f"--out {args.out}: cannot write it ({exc.strerror or exc})")
        print(f"wrote {len(records)} call(s) to {args.out}")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_diff(args: argparse.Namespace) -> int:
    """Compare two run directories row by row; exit 0 only when they are equal."""
    from engine.rundiff import compare_runs

    result = compare_runs(Path(args.run_a), Path(args.run_b), args.tolerance)
    print(result.render(limit=args.show))
    return EXIT_OK if result.equal else EXIT_FAILED_PARTS


def _add_judge_commands(sub: Any) -> None:
    judge = sub.add_parser("judge", help="judge tools: render (the exact prompts of each call, without a model)")
    judge_sub = judge.add_subparsers(dest="judge_command", required=True)
    render = judge_sub.add_parser(
        "render", help="print the exact messages each judge call of a config would send",
        description="Plans the judge calls of one file of the config's input as a run would and prints each call's "
                    "messages as JSON ({judge, request_id, id, messages}); `id` is the name under which a run stores "
                    "the same prompt in RUN/judge_prompts/<id>.json. No model is loaded.")
    render.add_argument("config", help="YAML run config with a judge stage")
    render.add_argument("--sample", default=None, help="a sample_id of the input: its file is rendered (default: the first file)")
    render.add_argument("--strategy", default=None, help="only this strategy (one the judge runs)")
    render.add_argument("--language", default=None, help="only this prompt language (en, nl, zh, el, pl)")
    render.add_argument("--judge", default=None, help="only the judge of this name (default: every judge)")
    render.add_argument("--out", default=None, help="write the JSON to this file instead of stdout")
    render.add_argument("--request", action="store_true",
                        help="add each call's whole request body (`request`: model, messages, temperature, seed, "
                             "max_tokens, provider options, response_format when its answers are structured)")
    render.set_defaults(func=cmd_judge)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="babelscore", description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="warnings and errors only: no progress bars, no tables; the result paths are still printed")
    sub = parser.add_subparsers(dest="command", required=True)

    def add_run_options(p: argparse.ArgumentParser) -> None:
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

    run = sub.add_parser("run", help="run a config", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("config", help="YAML run config")
    add_run_options(run)
    run.add_argument("--reuse", nargs="+", default=None, metavar="RUN",
                     help="earlier run directories: every identical finished row is taken from them, not computed "
                     "(replaces the config's `reuse:`)")
    run.set_defaults(func=cmd_run)

    demo = sub.add_parser("demo", help="run the embedded demo (configs/demo.yaml) offline")
    add_run_options(demo)
    demo.add_argument("--models", default=None, help=f"where the demo's tiny models are built (default {DEMO_MODELS})")
    demo.set_defaults(func=cmd_demo)

    validate = sub.add_parser("validate", help="report bad rows of an input table without running")
    validate.add_argument("input", help="Parquet or JSONL sample table")
    validate.add_argument("--show", type=int, default=20, help="how many rejected rows to list")
    validate.add_argument("--allow-missing-prediction", action="store_true", help="rows may lack predictions (a generate stage will add them)")
    validate.add_argument("--unknown-error-codes", choices=["warn", "reject"], default="warn",
                          help="rows with error codes outside the taxonomy: keep with a warning (default) or reject")
    validate.set_defaults(func=cmd_validate)

    config_cmd = sub.add_parser(
        "config", help="config tools: reference (every key), check (every config-time check), show (resolved config)"
    )
    config_cmd.add_argument("action", choices=["reference", "check", "show"],
                            help="reference: print the config reference (Markdown); check: run every config-time "
                            "check without doing work; show: print the resolved config (YAML)")
    config_cmd.add_argument("file", nargs="?", help="the YAML run config (check, show)")
    config_cmd.add_argument("--write", default=None, help="reference: write it to this file instead (docs/config.md)")
    config_cmd.add_argument("--executor", choices=["local", "ray"], default="local",
                            help="check: where parts would run (default: local); ray adds the Ray resource checks of `run`")
    config_cmd.add_argument("--ray-gpus-per-actor", type=float, default=1.0,
                            help="check with --executor ray: GPUs each model actor would ask for (0.5: two actors per GPU)")
    config_cmd.set_defaults(func=cmd_config)

    bench_cmd = sub.add_parser(
        "bench", help="time every stage of a config on a seeded sample of its input and project the whole run",
        description="Runs the config on two seeded samples of its input (whole files; N/2 and N rows) in a "
        "throwaway directory, each in a fresh process, fits fixed + per-row time per stage, and projects the "
        "time of the whole input (and for --devices N). Nothing is written beside the config.",
    )
    bench_cmd.add_argument("config", help="YAML run config")
    bench_cmd.add_argument("--sample", type=int, default=100, help="rows of the larger sample (default 100)")
    bench_cmd.add_argument("--devices", type=int, default=1, help="also project the time on this many devices of this machine's kind (a CPU-only "
                           "machine projects CPU workers, never GPUs: bench on the target, see --profile)")
    bench_cmd.add_argument("--seed", type=int, default=None, help="seed of the sample (default: the config's seed)")
    bench_cmd.add_argument("--write-profile", metavar="FILE", default=None,
                           help="also write this machine's measured costs (per input row, per stage) to FILE, to project "
                                "runs for this kind of machine elsewhere with --profile")
    bench_cmd.add_argument("--profile", metavar="FILE", default=None,
                           help="project the whole input from a profile written by --write-profile on the target machine "
                                "(nothing runs here; --devices N spreads its model stages over N such devices)")
    bench_cmd.add_argument("--compare", action="store_true",
                           help="also run the whole input and print measured beside projected time (checks the projection)")
    bench_cmd.set_defaults(func=cmd_bench)

    convert = sub.add_parser(
        "convert",
        help="convert wide per-language tables (the study's public layout) to the input schema",
        description="Columns: file_id, content, original_comment, and per generator G any of masked_data_G, "
        "predict_G, predicted_comment_G, expert_accuracy_G, error_codes_G (see docs/input.md).",
    )
    convert.add_argument("inputs", nargs="+", help="Parquet/JSONL files in the wide layout, one per language")
    convert.add_argument("--language", nargs="+", action="extend",
                         help="language code of each input file, in order: --language nl zh (default: from the file name)")
    convert.add_argument("--out", required=True, help="output Parquet file")
    convert.add_argument("--tokenizer", action="append", metavar="GENERATOR=TOKENIZER",
                         help="a generator's tokenizer (hub id or directory), to recover primes missing from masked_data")
    convert.set_defaults(func=cmd_convert)

    report = sub.add_parser("report", help="write RUN/report/index.html")
    report.add_argument("run", help="run directory")
    report.set_defaults(func=cmd_report)

    diff = sub.add_parser(
        "diff", help="compare two run directories row by row (exit 0 only when equal)",
        description="Rows only in one run, rows whose value, signature or error differ, and the largest difference "
                    "per task, over every row output of the two runs (timings ignored; see docs/running.md).")
    diff.add_argument("run_a", help="run directory")
    diff.add_argument("run_b", help="run directory")
    diff.add_argument("--tolerance", type=float, default=0.0,
                      help="largest absolute difference of a float value that still counts as equal (default 0: bit for bit)")
    diff.add_argument("--show", type=int, default=20, help="how many differing rows to list")
    diff.set_defaults(func=cmd_diff)

    tiny = sub.add_parser("make-tiny-models", help="build the tiny random models the demo uses")
    tiny.add_argument("dir")
    tiny.set_defaults(func=cmd_make_tiny_models)
    _add_judge_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _setup_logging(args.verbose, args.quiet)
    try:
        return args.func(args)
    except BabelscoreError as exc:
        logger.error("%s", exc)
        hint = next_step(args, exc)
        if hint:
            logger.error("next: %s", hint)
        return exit_code(exc)
    except KeyboardInterrupt:
        logger.error("interrupted; rerun with --resume to continue (committed parts are kept)")
        if getattr(args, "command", None) == "run":
            started = (Path(args.out) / "manifest.json").exists()
            logger.error("next: %s", f"continue: {_command(args, resume=True)}" if started else f"run: {_command(args)}")
        return 130


if __name__ == "__main__":
    sys.exit(main())
