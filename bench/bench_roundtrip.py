"""HumanEval canonical solutions in the round-trip sandbox, against plain subprocess runs.

Prints passed/164 and runs/s for both ways; the anchor is one unsandboxed `python file.py`
per problem (what a harness without isolation does), so the ratio is the sandbox's cost.
With --values it also times the value verdict (engine.roundtrip.values) of every canonical
solution (each must pass). With --difftest it also compares every canonical solution with itself
on 50 seeded differential-testing inputs (correctness must be 1 for all) and prints inputs/s.

    PYTHONPATH=. python bench/bench_roundtrip.py [--limit N] [--isolation hook] [--difftest]

A sandboxed run passes only when the tests' harness reported the run's token after the last
assert, so 164/164 also checks that every canonical solution's values cross the proxy intact
(docs/roundtrip.md; the split run: docs/sandbox.md).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.roundtrip import values
from engine.roundtrip.difftest import outcome_matches
from engine.roundtrip.inputs import generate_inputs
from engine.roundtrip.scores import correctness
from engine.roundtrip.tasks import load_tasks, python_program
from engine.sandbox.languages import run_tests
from engine.sandbox.limits import SandboxLimits
from engine.sandbox.process import isolation_name
from engine.sandbox.relay import Recording

# Measured on 2 shared cores with the tests in the candidate's process (busy and quiet machine).
ANCHOR_RATIO = "0.39-0.76"
# The split run before the tests' typed comparison and the server-based difftest (runs/s, same machine).
SPLIT_ANCHOR = "6.5-7.8 sandboxed vs 28.9-32.7 plain"


def plain_run(task: dict) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "program.py")
        Path(path).write_text(python_program(task["context"], task["code"], task["tests"], task["entry_point"]))
        done = subprocess.run([sys.executable, "-I", "-B", path], cwd=tmp, capture_output=True, timeout=30)
        return done.returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=0, help="first N problems only (0 = all 164)")
    parser.add_argument("--isolation", default="bwrap", choices=["bwrap", "hook"])
    parser.add_argument("--difftest", action="store_true", help="also time self-agreement on 50 inputs per problem")
    parser.add_argument("--values", action="store_true",
                        help="also time the value verdict (the tests' calls recorded against the reference, asked of the solution)")
    args = parser.parse_args()
    tasks = load_tasks("humaneval").to_pylist()
    if args.limit:
        tasks = tasks[: args.limit]
    limits = SandboxLimits(isolation=args.isolation, cpu_seconds=10, wall_seconds=20.0)

    load_at_start = os.getloadavg()
    start = time.perf_counter()
    seen = [Recording() for _ in tasks]  # the answers each run's tests got, checked by the value verdict
    results = [run_tests(task, task["code"], limits, record=mine) for task, mine in zip(tasks, seen)]
    sandbox_s = time.perf_counter() - start
    passed = sum(r.status == "passed" for r in results)

    start = time.perf_counter()
    plain_passed = sum(plain_run(task) for task in tasks)
    plain_s = time.perf_counter() - start

    n = len(tasks)
    print(f"isolation: {isolation_name(limits)}  load average at the start: {' '.join(f'{x:.2f}' for x in load_at_start)}")
    print(f"sandbox : passed {passed}/{n}  {n / sandbox_s:6.2f} runs/s  ({sandbox_s:.1f} s)")
    print(f"plain   : passed {plain_passed}/{n}  {n / plain_s:6.2f} runs/s  ({plain_s:.1f} s)")
    print(f"ratio (sandbox runs/s / plain runs/s): {plain_s / sandbox_s:.2f}  "
          f"(before the split run, one sandbox per run: {ANCHOR_RATIO}; split run of the previous version: {SPLIT_ANCHOR})")
    for task, result in zip(tasks, results):
        if result.status != "passed":
            print(f"  {task['task_id']}: {result.status} {result.reason}")
    if args.values:
        start = time.perf_counter()
        verdicts = [values.verdict(task, task["code"], limits, 1.0, mine) for task, mine in zip(tasks, seen)]
        elapsed = time.perf_counter() - start
        agreed = sum(v.status == "passed" for v in verdicts)
        print(f"values  : passed {agreed}/{n}  {n / elapsed:6.2f} rows/s  ({elapsed:.1f} s, recording included); "
              f"ratio with the tests' run (rows/s both / plain runs/s): {plain_s / (sandbox_s + elapsed):.2f}")
        for task, verdict in zip(tasks, verdicts):
            if verdict.status != "passed":
                print(f"  {task['task_id']}: {verdict.status} {verdict.reason}")
    if args.difftest:
        start = time.perf_counter()
        n_inputs, perfect = 0, 0
        for task in tasks:
            inputs = generate_inputs(task["signature"], task["tests"], task["entry_point"], 50, seed=0)
            agree, _result = outcome_matches(task, task["code"], inputs, limits)
            n_inputs += len(inputs)
            perfect += correctness(agree) == 1.0
        elapsed = time.perf_counter() - start
        print(f"difftest: self-agreement 1.0 on {perfect}/{n}  {n_inputs} inputs  {n_inputs / elapsed:6.1f} inputs/s  "
              f"({n / elapsed:.2f} comparisons/s; load average now {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
