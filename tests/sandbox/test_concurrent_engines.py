"""Two engines doing round trips at once on one host: no probe failure, no leftover.

On the main of 2026-12-03 the bubblewrap probe ran as the pool's first uid without that uid's
lock, so another engine's run claiming the uid ended it, and the failed probe was kept for the
life of the process. Here two engine processes (bench/bench_concurrent_engines.py, 20 round trips
each; `--iterations 100` by hand) each forget their probe before every row, so each row probes
again while the other engine claims uids of the same pool; every probe must succeed, every row
pass on both verdicts, and nothing of theirs stay on the host (processes under the pool's uids,
memory cgroups, files), which this test checks again itself.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile

import psutil
import pytest

from engine.sandbox import process
from engine.sandbox.limits import SandboxLimits
from tests.support.paths import PYTHON, REPO

ITERATIONS = 20
SCRIPT = REPO / "bench" / "bench_concurrent_engines.py"
POOL = range(234000, 234004)  # the script's pool of 4 uids, used by nothing else
LIMITS = SandboxLimits(uid=POOL[0], uid_slots=len(POOL))


@pytest.mark.skipif(os.geteuid() != 0, reason="runs claim uids of the pool only as root")
def test_two_engines_round_trip_at_once_without_probe_failure_or_leftover():
    why = process.unavailable(LIMITS)
    if why:
        pytest.skip(why)
    pool = POOL
    before = set(os.listdir(tempfile.gettempdir()))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([PYTHON, str(SCRIPT), "--iterations", str(ITERATIONS), "--uid", str(POOL[0])], env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    engines = re.findall(r"^engine \d: (\d+) round trips, probe failures (\d+), rows not passed (\d+)$", done.stdout, re.M)
    assert engines == [(str(ITERATIONS), "0", "0")] * 2, done.stdout
    assert "leftover processes 0, cgroups 0, files 0" in done.stdout, done.stdout
    live = [p.pid for p in psutil.process_iter(["uids", "status"])
            if p.info["uids"] and p.info["uids"].real in pool and p.info["status"] != psutil.STATUS_ZOMBIE]
    assert live == []
    new = set(os.listdir(tempfile.gettempdir())) - before
    assert [n for n in new if _owner(n) in pool] == []


def _owner(name: str) -> int:
    try:
        return os.lstat(os.path.join(tempfile.gettempdir(), name)).st_uid
    except FileNotFoundError:
        return -1
