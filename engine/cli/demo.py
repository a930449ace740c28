"""`babelscore demo` (the embedded demo, offline) and `babelscore make-tiny-models`."""
from __future__ import annotations

import argparse
import logging
import shlex
import sys
from pathlib import Path
from typing import Any

from engine.cli.running import add_run_options, cmd_run

logger = logging.getLogger("engine.cli")  # the command line's one logger name, as its lines show it
DEMO_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "demo.yaml"
DEMO_GENERATE_CONFIG = DEMO_CONFIG.with_name("demo_generate.yaml")
DEMO_ROUNDTRIP_CONFIG = DEMO_CONFIG.with_name("demo_roundtrip.yaml")
DEMO_MODELS = DEMO_CONFIG.parent.parent / ".cache" / "demo-models"  # where configs/demo.yaml looks


def add_demo_command(sub: Any) -> None:
    demo = sub.add_parser("demo", help="run the embedded demo (configs/demo.yaml) offline")
    add_run_options(demo)
    demo.add_argument("--models", default=None, help=f"where the demo's tiny models are built (default {DEMO_MODELS})")
    demo.set_defaults(func=cmd_demo)


def add_tiny_models_command(sub: Any) -> None:
    tiny = sub.add_parser("make-tiny-models", help="build the tiny random models the demo uses")
    tiny.add_argument("dir")
    tiny.set_defaults(func=cmd_make_tiny_models)


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


def cmd_make_tiny_models(args: argparse.Namespace) -> int:
    from engine.demo import prepare_demo_models

    for name, path in prepare_demo_models(Path(args.dir)).items():
        print(f"{name}: {path}")
    return 0
