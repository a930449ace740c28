"""Real memory that honest sandboxed runs hold, per language: what the run bounds must fit.

Runs the reference solution of every polyglot task (three a language; `--tasks humaneval`: the
164 Python ones) through the split run, so each run is one side (the candidate's server or the
tests), and reads each run's memory cgroup peak (`memory.max_usage_in_bytes`: resident pages,
tmpfs files, kernel objects) just before the group is removed: the run's group (the compiler's
step, and the program under it) and the program's child group. Prints per language the largest
of each, against the limits' `run_memory_mb` (programs) and `compile_memory_mb` (toolchain
steps). Needs root and a cgroup v1 memory controller (the engine makes no group otherwise).

    PYTHONPATH=. python bench/bench_run_memory.py [--language java] [--tasks humaneval] [--limit N]
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.roundtrip.tasks import load_tasks
from engine.sandbox import cgroup
from engine.sandbox.languages import LANGUAGES, run_tests, toolchain_missing
from engine.sandbox.limits import SandboxLimits

PEAKS: list[tuple[float, float]] = []  # (run group MB, program group MB) of each run, in order


def _peak_mb(group: Path) -> float:
    try:
        return int((group / "memory.max_usage_in_bytes").read_text()) / (1 << 20)
    except (OSError, ValueError):
        return 0.0


def _recording(remove):
    def remove_after_reading(procs: str) -> None:
        if procs:
            group = Path(procs).parent
            PEAKS.append((_peak_mb(group), _peak_mb(group / cgroup.PROGRAM)))
        remove(procs)
    return remove_after_reading


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--language", choices=LANGUAGES, action="append", help="only these (default: all)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each task")
    parser.add_argument("--tasks", default="polyglot", help="task set (humaneval: Python's 164 canonical solutions)")
    parser.add_argument("--limit", type=int, default=0, help="first N tasks only (0 = all)")
    args = parser.parse_args()
    if not cgroup.available():
        print("skipped: no writable cgroup v1 memory controller (root needed)")
        return 0
    cgroup.remove = _recording(cgroup.remove)
    limits = SandboxLimits()
    worst: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    failed = 0
    tasks = load_tasks(args.tasks).to_pylist()
    for task in tasks[:args.limit or len(tasks)]:
        language = task["programming_language"]
        if args.language and language not in args.language or toolchain_missing(language):
            continue
        for _ in range(args.repeat):
            del PEAKS[:]
            result = run_tests(task, task["code"], limits)
            failed += result.status != "passed"
            for run_mb, program_mb in PEAKS:
                worst[language][0] = max(worst[language][0], run_mb)
                worst[language][1] = max(worst[language][1], program_mb)
            print(f"{task['task_id']:32s} {result.status:8s} runs' peaks (run group / program group, MB): "
                  + ", ".join(f"{a:.0f}/{b:.0f}" for a, b in PEAKS), flush=True)
    print(f"limits: run_memory_mb {limits.run_memory_mb}, compile_memory_mb {limits.compile_memory_mb}")
    for language, (run_mb, program_mb) in worst.items():
        print(f"{language:11s} largest run group {run_mb:7.1f} MB, largest program group {program_mb:7.1f} MB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
