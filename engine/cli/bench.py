"""`babelscore bench`: time every stage on a seeded sample of the input and project the whole run."""
from __future__ import annotations

import argparse
from typing import Any

from engine.cli.exits import EXIT_OK, usage_error
from engine.cli.judge import judge_forecast
from engine.errors import ConfigError


def add_bench_command(sub: Any) -> None:
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


def cmd_bench(args: argparse.Namespace) -> int:
    from engine.config import load_config
    from engine.projection import bench, report_lines

    if args.devices < 1:
        raise ConfigError(f"--devices {args.devices}: give 1 or more")
    if args.profile and (args.write_profile or args.compare):
        both = "--write-profile" if args.write_profile else "--compare"
        usage_error("bench", f"--profile projects a measured profile and runs nothing here; {both} needs a run: "
                    "give one or the other")
    config = load_config(args.config)
    from engine.projection import machine_description

    rows = judge_forecast(config)
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
        print("\n".join(projection_lines(profile, full_rows, full_tasks, args.devices, machine_description()) + notes))
        return EXIT_OK
    result = bench(config, args.sample, devices=args.devices, seed=args.seed, compare=args.compare)
    print("\n".join(report_lines(result)))
    if rows and result.large.judge_completion:
        from engine.judge.forecast import forecast_lines

        rows = judge_forecast(config, result.large.judge_completion)
        print(f"\njudge forecast with the completion tokens measured on the {result.large.rows}-row sample "
              "(expected = mean a call there x calls):")
        print("\n".join(forecast_lines(rows or [])))
    if args.write_profile:
        from engine.bench_profile import profile_of, write_profile
        from engine.stages.plan import build_plan

        tasks = {b.stage.name for b in build_plan(config).own_tables()}
        write_profile(args.write_profile, profile_of(result, machine_description(), tasks, config))
        print(f"profile of this machine ({machine_description()}) written to {args.write_profile}: project with "
              f"`babelscore bench CONFIG --profile {args.write_profile} --devices N`")
    return EXIT_OK
