"""Command line: `babelscore run | validate | config | demo | bench | convert | report | diff | make-tiny-models | judge render`."""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from engine.cli.bench import add_bench_command
from engine.cli.config_tools import add_config_command
from engine.cli.demo import add_demo_command, add_tiny_models_command
from engine.cli.exits import EPILOG, exit_code, next_step, run_command
from engine.cli.input_tables import add_convert_command, add_validate_command
from engine.cli.judge import add_judge_commands
from engine.cli.results import add_diff_command, add_report_command
from engine.cli.running import add_run_command
from engine.errors import BabelscoreError

logger = logging.getLogger("engine.cli")


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="babelscore", description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="warnings and errors only: no progress bars, no tables; the result paths are still printed")
    sub = parser.add_subparsers(dest="command", required=True)
    # In the order `babelscore --help` lists them.
    for add_command in (add_run_command, add_demo_command, add_validate_command, add_config_command, add_bench_command,
                        add_convert_command, add_report_command, add_diff_command, add_tiny_models_command,
                        add_judge_commands):
        add_command(sub)
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
            logger.error("next: %s", f"continue: {run_command(args, resume=True)}" if started else f"run: {run_command(args)}")
        return 130
