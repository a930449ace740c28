"""Fault injection: the one documented way tests make a run fail where a real one can.

A crash, a lost worker or a killed part process cannot be staged from outside a run that is
already going (Ray workers and CLI runs are other processes), so the driver and the part code
ask this module at a few points. Each is off unless its `BABELSCORE_TEST_*` environment
variable is set, and does nothing else. The variables and what each does: docs/development.md,
"Fault injection". This is the only module that may read them (tests/stages/test_boundaries.py).
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

CRASH_AFTER_COMMITS_ENV = "BABELSCORE_TEST_CRASH_AFTER_COMMITS"
KILL_PART_ENV = "BABELSCORE_TEST_KILL_PART"
HOLD_PART_ENV = "BABELSCORE_TEST_HOLD_PART"
KILL_WORKER_CALL_ENV = "BABELSCORE_TEST_KILL_WORKER_CALL"
KILL_TRAINING_AFTER_STEP_ENV = "BABELSCORE_TEST_KILL_TRAINING_AFTER_STEP"


def after_training_step(step: int) -> None:
    """Training's hook: SIGKILL this process after optimizer step `step` when the test asks for it."""
    if os.environ.get(KILL_TRAINING_AFTER_STEP_ENV) == str(step):
        os.kill(os.getpid(), signal.SIGKILL)


def crash_after_commits() -> int | None:
    """After how many part commits the driver is to kill itself (None: never)."""
    limit = os.environ.get(CRASH_AFTER_COMMITS_ENV)
    return int(limit) if limit else None


def crash_now() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def before_part(part_key: str) -> None:
    """Kill (KILL_PART_ENV) or hold (HOLD_PART_ENV) this process when it is about to run the named part, once."""
    if os.environ.get(KILL_PART_ENV) == part_key:
        marker = Path(os.environ.get(KILL_PART_ENV + "_MARKER", "/nonexistent"))
        if marker.parent.is_dir() and not marker.exists():
            marker.write_text("killed once\n")  # kill only the first attempt, so the retry can succeed
            crash_now()
    _hold(part_key)


def _hold(part_key: str) -> None:
    keys = os.environ.get(HOLD_PART_ENV, "").split(",")
    if part_key not in keys:
        return
    marker = Path(os.environ.get(HOLD_PART_ENV + "_MARKER", "/nonexistent"))
    if len(keys) > 1:  # several held parts: one marker each, `<marker>-<position in the list>`
        marker = marker.with_name(f"{marker.name}-{keys.index(part_key)}")
    release = marker.with_name(marker.name + ".release")
    if marker.parent.is_dir() and not marker.exists():
        marker.write_text(f"{os.getpid()}\n")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not release.exists():  # the test removes this process's node meanwhile
            time.sleep(0.05)


def before_worker_call(method: str) -> None:
    """In a model worker: kill the worker's process group at its first call of KILL_WORKER_CALL_ENV's method."""
    if os.environ.get(KILL_WORKER_CALL_ENV) != method:
        return
    marker = Path(os.environ.get(KILL_WORKER_CALL_ENV + "_MARKER", "/nonexistent"))
    if marker.parent.is_dir() and not marker.exists():
        marker.write_text(f"{os.getpid()}\n")
        os.killpg(os.getpgid(0), signal.SIGKILL)
