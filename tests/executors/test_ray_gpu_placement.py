"""Placement of model actors on declared GPUs: a real two-node Ray cluster (two GPUs declared
per node, `ray.cluster_utils.Cluster`) on a simulated CUDA machine (tests/support/cuda_sim).

Ray sets CUDA_VISIBLE_DEVICES for each actor from the GPUs it assigned, even when they are only
declared; the model worker's vLLM engine then takes its share of that device. The paper-shaped
config (two vLLM generators, a vLLM judge, an encoder) must complete with no device ever holding
two engines, each model's actors on their own devices, the manifest naming node and device of
every model, and every row equal to the local run's.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

pytest.importorskip("ray")

from tests.support.simulated_cuda import SIM, events, fake_cuda, sim_environment  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _config(folder: Path) -> Path:
    import yaml

    from engine.testing.tiny_fim import build_tiny_fim_model
    from tests.support.samples import write_demo_subset
    from tests.support.tiny_encoders import build

    samples = write_demo_subset(folder / "samples.jsonl", files_per_language=1)
    vllm = {"backend": "vllm", "dtype": "bfloat16", "enforce_eager": True, "gpu_memory_utilization": 0.9}
    config = {
        "name": "placement", "input": str(samples), "seed": 0, "part_size": 5, "stages": ["generate", "score", "judge"],
        "generate": {"generators": [
            {"model": build_tiny_fim_model(folder / "fim-a", "starcoder2", seed=0), "card": "starcoder2", "name": "fim-a",
             "max_new_tokens": 8, "max_model_len": 1024, **vllm},
            {"model": build_tiny_fim_model(folder / "fim-b", "starcoder2", seed=1), "card": "starcoder2", "name": "fim-b",
             "max_new_tokens": 8, "max_model_len": 1024, **vllm},
        ]},
        "score": {"scorers": [{"kind": "embedding", "model": build("bert", folder / "bert"), "device": "cpu",
                               "contexts": ["none"]}]},
        "judge": {"judges": [{"model": "demo:tiny-chat", "name": "tiny-chat", "max_model_len": 4096, "strategies": ["standard"],
                              "structured": ["standard"], "prompt_languages": ["en"], "max_tokens": 40, **vllm}]},
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _start(config: Path, out: Path, executor: str, state: Path, nodes: dict[str, int], node: str) -> subprocess.Popen:
    fake_cuda.make_state(state, nodes)
    env = sim_environment(state)
    env["CUDASIM_NODE"] = node
    env["PYTHONPATH"] = f"{SIM}:{REPO}:{env['PYTHONPATH']}"
    return subprocess.Popen([sys.executable, str(SIM / "run_paper_shaped.py"), str(config), str(out), executor], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc: subprocess.Popen) -> dict:
    try:
        stdout, stderr = proc.communicate(timeout=540)
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, stdout[-3000:] + stderr[-6000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


TIMINGS = {"latency_s"}  # wall time of a call: the only column allowed to differ


def _rows(run: Path, folder: str) -> list[dict]:
    table = pq.read_table(run / folder)
    rows = [{k: v for k, v in row.items() if k not in TIMINGS} for row in table.to_pylist()]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("placement")
    config = _config(folder)
    # Both at once: the cluster run mostly waits for processes to start.
    cluster = _start(config, folder / "ray", "ray", folder / "cuda-ray", {"head": 0, "node-a": 2, "node-b": 2}, "head")
    local = _start(config, folder / "local", "local", folder / "cuda-local", {"local": 4}, "local")
    return folder, _result(local), _result(cluster)


def test_no_device_ever_holds_two_engines_and_each_actor_has_its_own(runs) -> None:
    folder, local, cluster = runs
    assert local["status"] == cluster["status"] == "complete"
    starts = events(folder / "cuda-ray")
    assert len(starts) >= 3  # two generators and the judge, each on at least one actor
    assert all(e["others"] == [] for e in starts), [e for e in starts if e["others"]]
    assert {e["node"] for e in starts} <= {"node-a", "node-b"} and all(e["multiproc_method"] == "spawn" for e in starts)
    vllm = [r for r in cluster["models"] if r["stage"] in ("generate", "judge")]
    assert vllm and all(r["in_worker"] and r["physical_device"] and r["node_id"] for r in vllm)
    for model in {r["model"] for r in vllm}:  # the actors of one model: distinct (node, device)
        places = [(r["node_id"], r["physical_device"]) for r in vllm if r["model"] == model]
        assert len(places) == len(set(places)), places
    for record in vllm:  # the engine's memory, by NVML over the worker's tree: its 0.9 share of 80 GiB
        assert record["peak_device_bytes"] == int(0.9 * 80 * 2**30), record


def test_the_cluster_run_equals_the_local_run(runs) -> None:
    folder, _local, _cluster = runs
    for part in ("generations", "scores", "judgments"):
        if (folder / "local" / part).exists():
            assert _rows(folder / "ray", part) == _rows(folder / "local", part), part
