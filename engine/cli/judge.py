"""`babelscore judge render` (the exact messages of each judge call, without a model) and the judges' forecast."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cli.exits import EXIT_OK, usage_error
from engine.errors import ConfigError

if TYPE_CHECKING:
    from engine.config import RunConfig


def add_judge_commands(sub: Any) -> None:
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


def _check_out_file(out: str, command: str) -> None:
    """`--out` must name a file in a directory that exists; checked before any work is done."""
    path = Path(out)
    if path.is_dir():
        usage_error(command, f"--out {out} is a directory; give a file path, e.g. {path / 'render.json'}")
    if not path.parent.is_dir():
        usage_error(command, f"--out {out}: the directory {path.parent} does not exist; create it or give another path")


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
            usage_error("judge render", f"--out {args.out}: cannot write it ({exc.strerror or exc})")
        print(f"wrote {len(records)} call(s) to {args.out}")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def judge_forecast(config: RunConfig, measured: dict | None = None) -> list | None:
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
