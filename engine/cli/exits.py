"""Exit statuses of the command line, and the next command to run after a failed one."""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

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


def usage_error(command: str, message: str) -> None:
    """Say a usage error of `babelscore COMMAND` the way argparse does, and exit 2."""
    print(f"babelscore {command}: error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def run_command(args: argparse.Namespace, out: str | None = None, resume: bool = False) -> str:
    """The `babelscore run` command line of `args`, to print as the next step."""
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
                f"repeated: {run_command(args, resume=True)}")
    if isinstance(exc, PartFailedError):
        if exc.environment_caused and not exc.config_caused:
            return f"export the variable named above, then continue: {run_command(args, resume=True)}"
        if exc.files_caused and not exc.config_caused:
            return f"repair or re-download the model file named above, then continue: {run_command(args, resume=True)}"
        if exc.config_caused:
            new_out = str(out.with_name(out.name + "-2"))
            return (
                "the cause is in the config: fix it, then start a new run directory (a changed config "
                f"cannot --resume {out}): {run_command(args, new_out)}"
            )
        return f"fix the cause, then continue (committed parts are kept): {run_command(args, resume=True)}"
    if isinstance(exc, RunDirectoryError) and "already holds this run" in str(exc) and not getattr(args, "resume", False):
        return f"continue it: {run_command(args, resume=True)}"
    if isinstance(exc, ClusterError):
        started = (out / "manifest.json").exists()
        return f"fix the cluster as said above, then {'continue' if started else 'run'}: {run_command(args, resume=started)}"
    if isinstance(exc, DiskFullError):
        return f"free space on that disk, then continue (committed parts are kept): {run_command(args, resume=True)}"
    if isinstance(exc, MissingSecretError):
        return f"export the variable named above, then run: {run_command(args)}"
    if isinstance(exc, DamagedModelError):
        return f"repair or re-download the model file named above, then run: {run_command(args)}"
    if isinstance(exc, (ConfigError, ModelLoadError)):
        fresh = not (out / "manifest.json").exists()
        target = args.out if fresh else str(out.with_name(out.name + "-2"))
        return f"fix {args.config}, then run: {run_command(args, target)}"
    return None
