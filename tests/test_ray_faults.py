"""Faults on a Ray cluster of this machine (ray.cluster_utils.Cluster), each ending in output
equal to a fault-free local run (engine/rundiff.py, as `babelscore diff` compares).

The head node runs no parts (0 CPUs); node A has one CPU and the `gpu_slot` resource that
stands in for a GPU (model parts run there, in an actor), node B one CPU. Injected: a task
worker SIGKILLed mid-part, a model actor SIGKILLed mid-part, and a whole worker node removed
while a part runs on it. Each part is committed exactly once. (The driver SIGKILLed and resumed
under Ray: tests/test_resume_executors.py.)
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")
from ray.cluster_utils import Cluster  # noqa: E402

from engine import runner  # noqa: E402
from engine.config import load_config  # noqa: E402
from engine.executors.ray import RayExecutor  # noqa: E402
from engine.pipeline import HOLD_PART_ENV, KILL_PART_ENV, PartTask, plan_parts  # noqa: E402
from tests._run_compare import assert_runs_equal  # noqa: E402

STORE = 80 * 1024 * 1024


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(initialize_head=True, connect=True,
                      head_node_args={"num_cpus": 0, "object_store_memory": STORE, "include_dashboard": False})
    node_a = cluster.add_node(num_cpus=1, resources={"gpu_slot": 1}, object_store_memory=STORE)
    cluster.add_node(num_cpus=1, object_store_memory=STORE)
    cluster.wait_for_nodes()
    yield cluster, node_a
    ray.shutdown()
    cluster.shutdown()


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from tests.test_ray_executor import load_make_synthetic

    folder = tmp_path_factory.mktemp("ray-faults")
    input_path = load_make_synthetic().write_synthetic(folder / "in.parquet", 30)
    config = folder / "config.yaml"
    config.write_text(f"name: ray-faults\ninput: {input_path}\npart_size: 5\nstages: [score]\nscore:\n  scorers:\n"
                      "    - kind: lexical\n")
    runner.execute_run(load_config(config), str(folder / "local"), executor_name="local")
    return config, folder / "local"


def _run(cluster: Cluster, config: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> RayExecutor:
    executor = RayExecutor(address=cluster.address, gpu_resource="gpu_slot", max_retries=2)
    monkeypatch.setattr(runner, "make_executor", lambda name, address=None, options=None: executor)
    runner.execute_run(load_config(config), str(out), executor_name="ray")
    return executor


def _part_key(config: Path, index: int) -> str:
    return plan_parts(load_config(config), "score", index + 1)[index].key


def test_task_worker_killed_mid_part(cluster, case, tmp_path, monkeypatch) -> None:
    ray_cluster, _ = cluster
    config, local = case
    key = _part_key(config, 2)
    monkeypatch.setenv(KILL_PART_ENV, key)
    monkeypatch.setenv(KILL_PART_ENV + "_MARKER", str(tmp_path / "killed"))
    executor = _run(ray_cluster, config, tmp_path / "run", monkeypatch)
    assert (tmp_path / "killed").exists()
    assert executor.placements[key]["attempts"] == 2
    assert_runs_equal(tmp_path / "run", local)


def test_model_actor_killed_mid_part(cluster, case, tmp_path, monkeypatch) -> None:
    ray_cluster, node_a = cluster
    config, local = case
    run = runner.open_run(load_config(config), str(tmp_path / "run"), resume=False)
    runner.prepare(run, load_config(config))
    n_parts = run.manifest["counts"]["parts"]
    # The lexical work labelled as a model's: it takes the actor path, on node A (gpu_slot).
    parts = [PartTask("score", p.task, p.index, model_key="fake-model", entry=p.entry)
             for p in plan_parts(load_config(config), "score", n_parts)]
    monkeypatch.setenv(KILL_PART_ENV, parts[3].key)
    monkeypatch.setenv(KILL_PART_ENV + "_MARKER", str(tmp_path / "killed"))
    commits: list[str] = []
    failures: list[Any] = []

    def commit(part: PartTask, table: Any) -> None:
        from engine import throughput

        commits.append(part.key)
        run.commit_part(part.key, part.relative_path, throughput.detach(table)[0], part.schema)

    executor = RayExecutor(address=ray_cluster.address, gpu_resource="gpu_slot")
    executor.run_parts(str(run.root), load_config(config), parts, {}, commit,
                       lambda part, error, attempts: failures.append((part.key, error)), run.manifest["part_rows"])
    executor.close()
    run.save()
    run.finish("complete")
    run.close()
    assert (tmp_path / "killed").exists() and not failures
    assert sorted(commits) == sorted(p.key for p in parts)  # each exactly once
    assert {p["node_id"] for p in executor.placements.values()} == {node_a.node_id}
    assert executor.models_started == ["fake-model"]
    assert len({p["pid"] for p in executor.placements.values()}) == 2  # the killed actor and its replacement
    assert_runs_equal(tmp_path / "run", local)


def _node_of(cluster: Cluster, pid: int) -> Any:
    """The cluster node whose raylet started process `pid` (a worker's parent is its raylet)."""
    ancestors = {p.pid for p in psutil.Process(pid).parents()}
    for node in cluster.worker_nodes:
        raylets = node.all_processes.get("raylet", [])
        if any(info.process.pid in ancestors for info in raylets):
            return node
    raise AssertionError(f"no worker node runs pid {pid}")


def test_worker_node_removed_mid_run(cluster, case, tmp_path, monkeypatch) -> None:
    ray_cluster, _ = cluster
    config, local = case
    key = _part_key(config, 1)
    marker = tmp_path / "held"
    monkeypatch.setenv(HOLD_PART_ENV, key)
    monkeypatch.setenv(HOLD_PART_ENV + "_MARKER", str(marker))
    removed: list[Any] = []

    def remove_the_node_of_the_held_part() -> None:
        deadline = time.monotonic() + 120
        while not marker.exists() or not marker.read_text().strip():
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)
        node = _node_of(ray_cluster, int(marker.read_text()))
        ray_cluster.remove_node(node, allow_graceful=False)
        removed.append(node)

    thread = threading.Thread(target=remove_the_node_of_the_held_part, daemon=True)
    thread.start()
    try:
        executor = _run(ray_cluster, config, tmp_path / "run", monkeypatch)
    finally:
        thread.join(timeout=130)
        if removed:  # the module's cluster keeps its shape for any later test
            ray_cluster.add_node(num_cpus=1, resources={"gpu_slot": 1} if removed[0].node_id == cluster[1].node_id else {},
                                 object_store_memory=STORE)
    assert removed, "the held part never started"
    placement = executor.placements[key]
    assert placement["attempts"] == 2 and placement["node_id"] != removed[0].node_id
    assert_runs_equal(tmp_path / "run", local)
