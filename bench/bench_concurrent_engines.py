"""Two engines doing round trips at once on one host, each as its own process.

Each engine repeats: forget the bubblewrap probe (so it probes again, claiming a uid of the
pool that the other engine draws from too), then one round-trip row through the stage's own
function (`orchestrate.execute_row`: the split run and the value verdict) of a correct Python
completion. Prints per engine the probe failures and the rows that did not pass, then the
leftovers the host kept: processes under the pool's uids, the pool's memory cgroups, files in
the temporary directory. Exits 1 when any of these is not zero.

    PYTHONPATH=. python bench/bench_concurrent_engines.py [--iterations 100] [--engines 2] [--uid 233000]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.roundtrip import orchestrate
from engine.roundtrip.tasks import load_tasks
from engine.sandbox import bwrap, process
from engine.sandbox.cgroup import ROOT
from engine.sandbox.limits import SandboxLimits
from engine.sandbox.uids import uid_processes

# A pool of its own, shared by the engines: what runs under these uids afterwards is theirs.
POOL_UID, POOL_SLOTS = 233000, 4
LIMITS = SandboxLimits(uid=POOL_UID, uid_slots=POOL_SLOTS)


def worker(iterations: int) -> dict:
    task = [t for t in load_tasks("polyglot").to_pylist() if t["task_id"] == "polyglot/python/add"][0]
    params = type("P", (), {"sandbox": LIMITS, "call_seconds": 5.0, "verdict": "values"})()
    probe_failures, not_passed = [], []
    for _ in range(iterations):
        bwrap.forget()
        why = process.unavailable(LIMITS)
        if why:
            probe_failures.append(why[:200])
            continue
        row = orchestrate.execute_row(task, task["code"], None, params)
        if row["status"] != "passed" or row.get("value_verdict") != "passed":
            not_passed.append(f"{row['status']}: {row.get('reason', '')[:200]}")
    return {"iterations": iterations, "probe_failures": probe_failures, "not_passed": not_passed}


def leftovers(before: set[str]) -> dict:
    """What the runs left on the host: processes under the pool's uids, their memory cgroups, new
    files in the temporary directory owned by them (other work on the machine writes there too)."""
    pool = range(LIMITS.uid, LIMITS.uid + LIMITS.uid_slots)
    processes = [pid for uid in pool for pid in uid_processes(uid)]
    # A zombie of the last run is reaped by the init that adopted it (engine.sandbox.uids.end_uid):
    # it is a leftover only if it is still there a while later.
    deadline = time.monotonic() + 10
    while processes and time.monotonic() < deadline:
        time.sleep(0.1)
        processes = [pid for uid in pool for pid in uid_processes(uid)]
    groups = [f"run-{uid}" for uid in pool if (ROOT / "babelscore" / f"run-{uid}").exists()]
    files = []
    for name in sorted(set(os.listdir(tempfile.gettempdir())) - before):
        try:
            if os.lstat(os.path.join(tempfile.gettempdir(), name)).st_uid in pool:
                files.append(name)
        except FileNotFoundError:
            pass
    return {"processes": processes, "cgroups": groups, "files": files}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=100, help="round trips per engine")
    parser.add_argument("--engines", type=int, default=2)
    parser.add_argument("--uid", type=int, default=POOL_UID, help=f"first uid of the engines' pool ({POOL_SLOTS} uids)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    global LIMITS
    LIMITS = SandboxLimits(uid=args.uid, uid_slots=POOL_SLOTS)
    if args.worker:
        print(json.dumps(worker(args.iterations)))
        return 0
    why = process.unavailable(LIMITS)  # the pool's lock folder exists before the snapshot
    if why:
        print(f"skipped: {why}")
        return 0
    before = set(os.listdir(tempfile.gettempdir()))
    start = time.perf_counter()
    engines = [subprocess.Popen([sys.executable, __file__, "--worker", "--iterations", str(args.iterations),
                                 "--uid", str(args.uid)],
                                stdout=subprocess.PIPE, text=True) for _ in range(args.engines)]
    reports = []
    for engine in engines:
        out, _ = engine.communicate()
        lines = out.strip().splitlines()
        reports.append(json.loads(lines[-1]) if engine.returncode == 0 and lines else
                       {"iterations": args.iterations, "probe_failures": [f"engine exited {engine.returncode}"], "not_passed": []})
    seconds = time.perf_counter() - start
    left = leftovers(before)
    bad = 0
    for number, report in enumerate(reports, 1):
        print(f"engine {number}: {report['iterations']} round trips, probe failures {len(report['probe_failures'])}, "
              f"rows not passed {len(report['not_passed'])}")
        for why in report["probe_failures"][:3] + report["not_passed"][:3]:
            print(f"  {why}")
        bad += len(report["probe_failures"]) + len(report["not_passed"])
    print(f"leftover processes {len(left['processes'])}, cgroups {len(left['cgroups'])}, files {len(left['files'])}"
          + (f": {left}" if any(left.values()) else ""))
    print(f"{args.engines * args.iterations} round trips in {seconds:.1f} s ({args.engines * args.iterations / seconds:.2f}/s)")
    return 1 if bad or any(left.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
