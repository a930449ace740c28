"""`babelscore report` (a run's HTML report) and `babelscore diff` (two runs compared row by row)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from engine.cli.exits import EXIT_FAILED_PARTS, EXIT_OK


def add_report_command(sub: Any) -> None:
    report = sub.add_parser("report", help="write RUN/report/index.html")
    report.add_argument("run", help="run directory")
    report.set_defaults(func=cmd_report)


def add_diff_command(sub: Any) -> None:
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


def cmd_report(args: argparse.Namespace) -> int:
    from engine.report.build import write_report
    from engine.stages.plan import reopen_run

    path = write_report(reopen_run(args.run))
    print(f"report: open {Path(path).resolve()}")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    """Compare two run directories row by row; exit 0 only when they are equal."""
    from engine.rundiff import compare_runs

    result = compare_runs(Path(args.run_a), Path(args.run_b), args.tolerance)
    print(result.render(limit=args.show))
    return EXIT_OK if result.equal else EXIT_FAILED_PARTS
