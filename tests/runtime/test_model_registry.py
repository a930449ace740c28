"""The model registry (engine.runtime.model_registry) and its worker processes (engine.runtime.model_process).

Eviction is least recently used under a byte budget and a model-count cap set by environment
variables; a model held by a worker process is a real child process that ends on release; a
torch model released in-process is really freed (no reference survives).
"""
from __future__ import annotations

import gc
import os
import signal
import weakref
from fractions import Fraction

import pytest

from engine.errors import TransientError
from engine.runtime.model_process import ProcessModel
from engine.runtime.model_registry import BUDGET_BYTES_ENV, BUDGET_MODELS_ENV, ModelRegistry


class _Model:
    def __init__(self, name: str, closed: list[str]):
        self.name = name
        self._closed = closed

    def close(self) -> None:
        self._closed.append(self.name)


def _load(registry: ModelRegistry, name: str, closed: list[str], estimate: int = 100) -> _Model:
    return registry.acquire(name, lambda: _Model(name, closed), model=name, stage="score", device="cpu",
                            estimate_bytes=estimate)


def test_least_recently_used_model_is_freed_when_the_budget_is_full(monkeypatch) -> None:
    monkeypatch.setenv(BUDGET_BYTES_ENV, "250")
    registry, closed = ModelRegistry(), []
    a = _load(registry, "a", closed)
    _load(registry, "b", closed)
    assert _load(registry, "a", closed) is a  # loaded once; now b is the least recently used
    _load(registry, "c", closed)
    assert closed == ["b"]
    assert [r["model"] for r in registry.resident()] == ["a", "c"]
    registry.release_all()
    assert sorted(closed) == ["a", "b", "c"]
    records = registry.records()
    assert [r["model"] for r in records] == ["a", "b", "c"]
    assert all(r["released_at"] >= r["loaded_at"] and r["pid"] == os.getpid() and r["peak_host_bytes"] > 0 and r["peak_device_bytes"] is None for r in records)


def test_model_cap_holds_one_model_at_a_time_and_intervals_never_overlap(monkeypatch) -> None:
    monkeypatch.delenv(BUDGET_BYTES_ENV, raising=False)
    monkeypatch.setenv(BUDGET_MODELS_ENV, "1")
    registry, closed = ModelRegistry(), []
    for name in ("a", "b", "a", "c"):
        _load(registry, name, closed, estimate=1)
        assert len(registry.resident()) == 1
    registry.release_all()
    records = sorted(registry.records(), key=lambda r: r["loaded_at"])
    assert [r["model"] for r in records] == ["a", "b", "a", "c"]
    for earlier, later in zip(records, records[1:]):
        assert earlier["released_at"] <= later["loaded_at"]
    assert [r["model"] for r in registry.take_records()] == ["a", "b", "a", "c"] and registry.records() == []


def test_a_released_torch_model_is_freed() -> None:
    import torch

    registry = ModelRegistry()
    model = registry.acquire("lin", lambda: torch.nn.Linear(64, 64), model="lin", stage="score", device="cpu")
    ref = weakref.ref(model)
    del model
    registry.release_all()
    gc.collect()
    assert ref() is None


def test_worker_process_model_forwards_calls_and_exits_on_release() -> None:
    registry = ModelRegistry()
    proxy = registry.acquire("frac", lambda: ProcessModel("fractions:Fraction", 3, 4, attrs=("numerator",)),
                             model="frac", stage="judge", device="cpu")
    pid = proxy.worker_pid
    assert pid != os.getpid() and proxy.numerator == 3
    assert proxy.limit_denominator(2) == Fraction(1, 1)
    with pytest.raises(AttributeError):
        proxy.no_such_method()
    registry.release_all()
    record = registry.records()[0]
    assert record["pid"] == pid and record["in_worker"] and record["peak_host_bytes"] > 0 and record["peak_device_bytes"] is None
    assert not proxy.alive


def test_a_dead_worker_is_a_transient_error_and_is_loaded_again() -> None:
    registry = ModelRegistry()

    def get():
        return registry.acquire("frac", lambda: ProcessModel("fractions:Fraction", 1, 2), model="frac", stage="judge",
                                device="cpu")

    first = get()
    os.kill(first.worker_pid, signal.SIGKILL)
    first._proc.wait()
    with pytest.raises(TransientError, match="exited"):
        first.limit_denominator(1)
    second = get()
    assert second is not first and second.worker_pid != first.worker_pid
    assert second.limit_denominator(1) == Fraction(0, 1) or second.limit_denominator(1) == Fraction(1, 1)
    registry.release_all()
    assert len(registry.records()) == 2


# ----- memory planning (engine.runtime.memory) --------------------------------------------------
def _likelihood_config(tmp_path):
    from engine.config import load_config
    from tests.support.samples import write_demo_subset

    path = tmp_path / "config.yaml"
    path.write_text(
        f"name: plan\ninput: {write_demo_subset(tmp_path / 'in.jsonl', files_per_language=1)}\nstages: [score]\n"
        "score:\n  scorers:\n    - kind: likelihood\n      model: demo:tiny-bart\n      contexts: [none]\n"
        "      dtype: float32\n", encoding="utf-8")
    return load_config(path)


def test_parameters_are_counted_from_the_weights_on_disk() -> None:
    import torch

    from engine.runtime import load_model, resolve_model
    from engine.runtime.memory import TORCH_FIXED_BYTES, TORCH_MARGIN, estimate_model_bytes, safetensors_parameters

    model = load_model("demo:tiny-bart", "AutoModelForSeq2SeqLM", dtype="float32", device="cpu").model
    assert next(model.parameters()).dtype is torch.float32  # the dtype the estimate below counts 4 bytes for
    n_params = sum(p.numel() for p in model.parameters())
    from pathlib import Path

    counted = safetensors_parameters(Path(resolve_model("demo:tiny-bart").path))
    assert n_params <= counted <= 1.01 * n_params  # the saved buffers (BART's final_logits_bias) too
    expected = int(counted * 4 * (1 + TORCH_MARGIN) + TORCH_FIXED_BYTES)
    assert estimate_model_bytes("demo:tiny-bart", dtype="float32", device="cpu") == expected
    assert estimate_model_bytes("demo:tiny-bart", dtype="bfloat16", device="cpu") < expected


def test_memory_planning_refuses_a_model_over_the_budget_before_any_work(tmp_path, monkeypatch) -> None:
    from engine.errors import ConfigError
    from engine.preflight import preflight
    from engine.runner import execute_run
    from engine.stages.plan import build_plan

    config = _likelihood_config(tmp_path)
    checked = preflight(build_plan(config))  # the machine's own budget: it fits, and the plan says so
    assert any(line.startswith("memory: score.scorers[0]: demo:tiny-bart (transformers) on cpu") for line in checked)
    monkeypatch.setenv(BUDGET_BYTES_ENV, "1000000")
    message = r"^score\.scorers\[0\]\.model: 'demo:tiny-bart' needs an estimated .* more than the 976\.6 KiB budget \(set by " \
              r"BABELSCORE_MODEL_BUDGET_BYTES\) even with no other model loaded; pick a smaller dtype"
    with pytest.raises(ConfigError, match=message):
        preflight(build_plan(config))  # what `babelscore config check` runs
    out = tmp_path / "run"
    with pytest.raises(ConfigError, match=message):
        execute_run(config, str(out))
    assert not out.exists()  # refused before the run directory, before any work
