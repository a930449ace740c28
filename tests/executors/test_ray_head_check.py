"""The driver's loop checks the head on a clock, even while parts keep finishing.

Actors on a node that survives the head keep returning parts; Ray ends such a driver about a
minute later, so the loop must notice the lost head by itself. Driven with a fake clock, a fake
`ray.wait` that always has a part ready and a probe that fails once the head is "gone": no
cluster, no sleeps.
"""
from __future__ import annotations

import types
from collections import deque

import pytest

import engine.executors.head_watch as head_watch
import engine.executors.ray as ray_exec
from engine.errors import ClusterError
from engine.executors.head_watch import HEAD_CHECK_EVERY_S, HeadWatch
from engine.executors.ray_parts import PartCall


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _stage_run(parts: int, clock: _Clock) -> ray_exec.StageRun:
    run = object.__new__(ray_exec.StageRun)  # no Ray: only the loop's own state
    run.tasks, run.groups, run.pool_queue = deque(), deque(), deque()
    run.pool = None
    run.calls = {f"ref{i}": PartCall(part=None, attempt=1, seq=i) for i in range(parts)}
    run.watch = HeadWatch("127.0.0.1:6379", clock)
    run.finished_refs = []
    run._result = lambda ref: (run.finished_refs.append(ref), run.calls.pop(ref))
    return run


def _always_one_ready(clock: _Clock, step_s: float):
    def wait(refs, num_returns, timeout):
        clock.now += step_s  # a part finishes every step_s seconds
        return refs[:1], refs[1:]
    return types.SimpleNamespace(wait=wait)


def test_a_lost_head_stops_the_loop_while_parts_keep_finishing(monkeypatch):
    clock = _Clock()
    head_gone_at = clock.now + 12.0
    probes: list[float] = []

    def probe(address: str) -> None:
        probes.append(clock.now)
        if clock.now >= head_gone_at:
            raise ClusterError(f"cannot reach the Ray cluster at {address}: Connection refused")

    monkeypatch.setattr(ray_exec, "ray", _always_one_ready(clock, step_s=1.0))
    monkeypatch.setattr(head_watch, "probe", probe)
    run = _stage_run(parts=100, clock=clock)
    with pytest.raises(ClusterError, match="lost the Ray cluster in the middle of the run"):
        run.loop()
    assert run.watch.lost
    # Parts finished every second up to the end, and the head was probed every few seconds.
    assert 12 <= len(run.finished_refs) < 12 + HEAD_CHECK_EVERY_S
    assert all(b - a >= HEAD_CHECK_EVERY_S for a, b in zip(probes, probes[1:]))
    assert probes[-1] - head_gone_at < HEAD_CHECK_EVERY_S


def test_a_head_that_answers_lets_every_part_finish(monkeypatch):
    clock = _Clock()
    probes: list[float] = []
    monkeypatch.setattr(ray_exec, "ray", _always_one_ready(clock, step_s=1.0))
    monkeypatch.setattr(head_watch, "probe", lambda address: probes.append(clock.now))
    run = _stage_run(parts=20, clock=clock)
    run.loop()
    assert len(run.finished_refs) == 20 and not run.watch.lost
    assert len(probes) == 20 // int(HEAD_CHECK_EVERY_S)  # probed on the clock, not per part
