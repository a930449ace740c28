"""`babelscore config reference | check | show`: the config's keys, its checks without work, its resolved form."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from engine.cli.exits import EXIT_OK
from engine.cli.judge import judge_forecast
from engine.errors import ConfigError


def add_config_command(sub: Any) -> None:
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
    rows = judge_forecast(config)
    if rows:
        from engine.judge.forecast import summary_line

        print(f"  {summary_line(rows)}; per judge, strategy and language: babelscore bench {args.file}")
    print("config check passed: nothing was run")
    return EXIT_OK
