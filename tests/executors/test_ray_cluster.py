"""Ray executor on a cluster of this machine (ray.cluster_utils.Cluster, one per module: its
start is the slow part).

The head node runs no parts (0 CPUs); node A has one CPU and one unit of a custom resource
`gpu_slot` that stands in for a GPU, node B one CPU. Model parts ask for that resource, so they
must run on node A, in an actor; model-free parts run on A or B. Every part is committed exactly
once and the output equals the local executor's, also under injected faults, compared as
`babelscore diff` compares (engine/rundiff.py): a task worker SIGKILLed mid-part, a model actor
SIGKILLed mid-part, a whole worker node removed while a part runs on it. (The driver SIGKILLed
and resumed under Ray: tests/executors/test_resume_across_executors.py; single-node kill cases:
tests/executors/test_ray_executor.py.)
"""
from __future__ import annotations

import importlib.util
import math
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")
from ray.cluster_utils import Cluster  # noqa: E402

from engine import runner  # noqa: E402
from engine.config import load_config  # noqa: E402
from engine.executors.ray import RayExecutor  # noqa: E402
from engine.faults import HOLD_PART_ENV, KILL_PART_ENV  # noqa: E402
from engine.part_execution import PartTask  # noqa: E402
from engine.records import SCORE_KEY, SCORE_SCHEMA  # noqa: E402
from engine.stages.plan import build_plan  # noqa: E402
from tests.support.run_compare import assert_runs_equal  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
STORE = 80 * 1024 * 1024


def _write_input(path: Path, n: int) -> Path:
    spec = importlib.util.spec_from_file_location("make_synthetic", REPO / "bench" / "make_synthetic.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_synthetic(path, n)


def _sorted(table: Any) -> list[dict[str, Any]]:
    return table.sort_by([(k, "ascending") for k in SCORE_KEY]).to_pylist()


def _same(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> bool:
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        gv, wv = g["value"], w["value"]
        if {k: v for k, v in g.items() if k != "value"} != {k: v for k, v in w.items() if k != "value"}:
            return False
        if not ((math.isnan(gv) and math.isnan(wv)) or gv == wv):
            return False
    return True


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(initialize_head=True, connect=True,
                      head_node_args={"num_cpus": 0, "object_store_memory": STORE, "include_dashboard": False})
    gpu_node = cluster.add_node(num_cpus=1, resources={"gpu_slot": 1}, object_store_memory=STORE)
    cluster.add_node(num_cpus=1, object_store_memory=STORE)
    cluster.wait_for_nodes()
    yield cluster, gpu_node.node_id
    ray.shutdown()
    cluster.shutdown()


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    folder = tmp_path_factory.mktemp("cluster")
    input_path = _write_input(folder / "in.parquet", 30)
    config = folder / "config.yaml"
    config.write_text(f"name: cluster\ninput: {input_path}\npart_size: 5\nstages: [score]\nscore:\n  scorers:\n"
                      "    - kind: lexical\n      metrics: [bleu]\n")  # BLEU alone: workers start fast
    runner.execute_run(load_config(config), str(folder / "local"), executor_name="local")
    return config, runner.read_scores(str(folder / "local"))


def test_model_parts_run_on_the_gpu_node_exactly_once(cluster, case, tmp_path) -> None:
    ray_cluster, gpu_node_id = cluster
    config_path, local_scores = case
    plan = build_plan(load_config(config_path))
    run = runner.open_run(plan, str(tmp_path / "run"), resume=False)
    runner.prepare(run, plan)
    n_parts = run.manifest.counts["parts"]
    lexical = plan.bound("score").parts(n_parts)
    # The same lexical work, labelled as a model's: it must take the actor path on node A.
    model = [PartTask("score", "lexical-gpu", p.index, model_key="fake-model", entry=p.entry, directory=p.directory,
                     params=p.params)
             for p in lexical]
    commits: list[str] = []
    failures: list[Any] = []

    def commit(part: PartTask, table: Any) -> None:
        commits.append(part.key)
        run.commit_part(part.key, part.relative_path, table, SCORE_SCHEMA)

    executor = RayExecutor(address=ray_cluster.address, gpu_resource="gpu_slot")
    executor.run_parts(str(run.root), plan, lexical + model, {}, commit,
                       lambda part, error, attempts: failures.append((part.key, error)), run.manifest.part_rows)
    executor.close()

    assert not failures
    assert sorted(commits) == sorted(p.key for p in lexical + model)  # each exactly once
    for part in model:
        placement = executor.placements[part.key]
        assert placement["actor"] and placement["node_id"] == gpu_node_id, (part.key, placement)
    assert all(p["attempts"] == 1 for p in executor.placements.values())
    assert executor.models_started == ["fake-model"]
    # Both routes computed the same rows, equal to the local executor's.
    for prefix in (f"score/{lexical[0].task}/", "score/lexical-gpu/"):
        assert _same(_sorted(run.read_parts(prefix, local_scores.schema)), _sorted(local_scores))
    assert pq.read_table(tmp_path / "run" / "scores" / "lexical-gpu__part-00001.parquet").num_rows > 0


def test_whole_run_on_the_cluster_equals_local(cluster, case, tmp_path, monkeypatch) -> None:
    ray_cluster, _ = cluster
    config_path, local_scores = case
    executor = RayExecutor(address=ray_cluster.address, gpu_resource="gpu_slot")
    monkeypatch.setattr(runner, "make_executor", lambda name, address=None, options=None: executor)
    runner.execute_run(load_config(config_path), str(tmp_path / "ray"), executor_name="ray")
    assert _same(_sorted(runner.read_scores(str(tmp_path / "ray"))), _sorted(local_scores))
    assert len(executor.placements) == 6


def _run(cluster: Cluster, config: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> RayExecutor:
    executor = RayExecutor(address=cluster.address, gpu_resource="gpu_slot", max_retries=2)
    monkeypatch.setattr(runner, "make_executor", lambda name, address=None, options=None: executor)
    runner.execute_run(load_config(config), str(out), executor_name="ray")
    return executor


def _part_key(config: Path, index: int) -> str:
    return build_plan(load_config(config)).bound("score").parts(index + 1)[index].key


def test_task_worker_killed_mid_part(cluster, case, tmp_path, monkeypatch) -> None:
    ray_cluster, _ = cluster
    config, _ = case
    local = config.parent / "local"
    key = _part_key(config, 2)
    monkeypatch.setenv(KILL_PART_ENV, key)
    monkeypatch.setenv(KILL_PART_ENV + "_MARKER", str(tmp_path / "killed"))
    executor = _run(ray_cluster, config, tmp_path / "run", monkeypatch)
    assert (tmp_path / "killed").exists()
    assert executor.placements[key]["attempts"] == 2
    assert_runs_equal(tmp_path / "run", local)


def test_model_actor_killed_mid_part(cluster, case, tmp_path, monkeypatch) -> None:
    ray_cluster, gpu_node_id = cluster
    config, _ = case
    local = config.parent / "local"
    plan = build_plan(load_config(config))
    run = runner.open_run(plan, str(tmp_path / "run"), resume=False)
    runner.prepare(run, plan)
    n_parts = run.manifest.counts["parts"]
    # The lexical work labelled as a model's: it takes the actor path, on node A (gpu_slot).
    parts = [PartTask("score", p.task, p.index, model_key="fake-model", entry=p.entry, directory=p.directory,
                     params=p.params)
             for p in plan.bound("score").parts(n_parts)]
    monkeypatch.setenv(KILL_PART_ENV, parts[3].key)
    monkeypatch.setenv(KILL_PART_ENV + "_MARKER", str(tmp_path / "killed"))
    commits: list[str] = []
    failures: list[Any] = []

    def commit(part: PartTask, table: Any) -> None:
        from engine import throughput

        commits.append(part.key)
        run.commit_part(part.key, part.relative_path, throughput.detach(table)[0], SCORE_SCHEMA)

    executor = RayExecutor(address=ray_cluster.address, gpu_resource="gpu_slot")
    executor.run_parts(str(run.root), plan, parts, {}, commit,
                       lambda part, error, attempts: failures.append((part.key, error)), run.manifest.part_rows)
    executor.close()
    run.save()
    run.finish("complete")
    run.close()
    assert (tmp_path / "killed").exists() and not failures
    assert sorted(commits) == sorted(p.key for p in parts)  # each exactly once
    assert {p["node_id"] for p in executor.placements.values()} == {gpu_node_id}
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
    config, _ = case
    local = config.parent / "local"
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
            ray_cluster.add_node(num_cpus=1, resources={"gpu_slot": 1} if removed[0].node_id == cluster[1] else {},
                                 object_store_memory=STORE)
    assert removed, "the held part never started"
    placement = executor.placements[key]
    assert placement["attempts"] == 2 and placement["node_id"] != removed[0].node_id
    assert_runs_equal(tmp_path / "run", local)
