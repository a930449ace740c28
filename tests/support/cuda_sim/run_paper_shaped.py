"""Runs the paper-shaped config on simulated GPUs, locally or on a two-node Ray cluster with
declared GPUs (ray.cluster_utils.Cluster), in the simulation's environment (see README.md).

    python run_paper_shaped.py CONFIG OUT local|ray
Prints one JSON line: the manifest's model records and where each part ran.
"""
from __future__ import annotations

import json
import logging
import sys


def main() -> int:
    config_path, out, executor = sys.argv[1:4]
    from engine.config import load_config
    from engine.runner import execute_run

    logging.basicConfig(level=logging.WARNING)
    if executor == "local":
        execute_run(load_config(config_path), out, executor_name="local")
        placements = {}
    else:
        import ray
        from ray.cluster_utils import Cluster

        from engine import runner
        from engine.executors.ray import RayExecutor

        store = 80 * 1024 * 1024
        cluster = Cluster(initialize_head=True, connect=True,
                          head_node_args={"num_cpus": 1, "object_store_memory": store, "include_dashboard": False,
                                          "env_vars": {"CUDASIM_NODE": "head"}})
        for name in ("node-a", "node-b"):  # two GPUs declared on each: Ray sets CUDA_VISIBLE_DEVICES per actor
            cluster.add_node(num_cpus=2, num_gpus=2, object_store_memory=store, env_vars={"CUDASIM_NODE": name})
        cluster.wait_for_nodes()
        nodes = {n["NodeID"]: n["Resources"].get("GPU", 0) for n in ray.nodes() if n["Alive"]}
        executor_object = RayExecutor(address=cluster.address, actors_per_model=2)
        runner.make_executor = lambda *args, **kwargs: executor_object
        try:
            execute_run(load_config(config_path), out, executor_name="ray")
            placements = {key: dict(value) for key, value in executor_object.placements.items()}
        finally:
            ray.shutdown()
            cluster.shutdown()
        placements["__nodes__"] = nodes
    manifest = json.loads(open(f"{out}/manifest.json", encoding="utf-8").read())
    print("RESULT " + json.dumps({"status": manifest["status"], "models": manifest.get("models", []),
                                  "placements": placements}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
