"""The Ray executor's pure parts, without Ray: pool and task sizes, how parts are split into
model-free tasks and per-model groups, and the head watch's idle clock."""
from __future__ import annotations

import pytest

from engine.errors import ClusterError
from engine.executors import head_watch
from engine.executors.head_watch import STATUS_EVERY_S, HeadWatch
from engine.executors.params import RayOptions
from engine.executors.ray_parts import split_parts
from engine.part_execution import PartTask


def test_actor_request_asks_for_gpus_or_a_custom_resource_or_runs_on_cpus() -> None:
    assert RayOptions(gpus_per_actor=0.5).actor_request(2.0) == ({"num_cpus": 1.0, "num_gpus": 0.5}, 4)
    assert RayOptions(gpu_resource="A100").actor_request(3.0) == ({"num_cpus": 1.0, "resources": {"A100": 1.0}}, 3)
    assert RayOptions().actor_request(0.0) == ({"num_cpus": 1.0}, 1)
    assert RayOptions(actors_per_model=2).actor_request(8.0)[1] == 2


def test_task_limit_is_twice_the_cpu_slots_unless_set() -> None:
    assert RayOptions().task_limit(4.0) == 8
    assert RayOptions(num_cpus_per_task=2.0).task_limit(1.0) == 1
    assert RayOptions(max_tasks_in_flight=3).task_limit(64.0) == 3


def test_parts_split_into_tasks_and_model_groups_in_order_of_first_appearance() -> None:
    parts = [PartTask("score", "bleu", 0), PartTask("score", "bart", 0, "b"), PartTask("score", "mini", 0, "m"),
             PartTask("score", "bart", 1, "b"), PartTask("score", "bleu", 1)]
    tasks, groups = split_parts(parts)
    assert list(tasks) == [(parts[0], 1), (parts[4], 1)]
    assert [(key, list(queue)) for key, queue in groups] == [("b", [(parts[1], 1), (parts[3], 1)]),
                                                             ("m", [(parts[2], 1)])]


def test_the_watch_reports_idleness_every_status_interval() -> None:
    now = [0.0]
    watch = HeadWatch(None, clock=lambda: now[0])
    assert not watch.idle()  # the first idle slice starts the clock
    now[0] = STATUS_EVERY_S - 1
    assert not watch.idle()
    now[0] = STATUS_EVERY_S
    assert watch.idle() and not watch.idle()
    watch.busy()
    now[0] += 2 * STATUS_EVERY_S
    assert not watch.idle()


def test_a_head_that_stops_answering_is_a_cluster_error(monkeypatch) -> None:
    def refused(address: str) -> None:
        raise ClusterError(f"cannot reach the Ray cluster at {address}")

    monkeypatch.setattr(head_watch, "probe", refused)
    watch = HeadWatch("127.0.0.1:6379")
    with pytest.raises(ClusterError, match="lost the Ray cluster in the middle of the run"):
        watch.check()
    assert watch.lost
    assert HeadWatch(None).check() is None  # a local Ray has no head to probe
