"""The memory plan of LoRA training: what the trainer will hold on its device.

- the frozen base weights: parameters x dtype size (half a byte each in 4-bit);
- the LoRA weights with their gradients and AdamW's two moments, in float32: 16 bytes per
  LoRA parameter (r x (in + out) per wrapped module and layer);
- activations kept for the backward pass at the configured batch and sequence length, per
  layer 34 x hidden + 5 x heads x seq bytes per token at 16 bits (Korthikanti et al. 2022,
  "Reducing activation recomputation", without recomputation; scaled to the dtype); plus the
  logits and their gradient in float32 (batch x seq x vocab x 8).
The base model's config gives the shapes (engine.runtime.memory reads it); unknown: no estimate.
"""
from __future__ import annotations

from typing import Any

from engine.finetune.params import FinetuneParams


def _dims(c: dict[str, Any]) -> dict[str, tuple[int, int]]:
    hidden = int(c.get("hidden_size") or 0)
    heads = int(c.get("num_attention_heads") or 1)
    kv_heads = int(c.get("num_key_value_heads") or heads)
    head_dim = int(c.get("head_dim") or hidden // heads)
    inter = int(c.get("intermediate_size") or 4 * hidden)
    return {"q_proj": (hidden, heads * head_dim), "k_proj": (hidden, kv_heads * head_dim),
            "v_proj": (hidden, kv_heads * head_dim), "o_proj": (heads * head_dim, hidden),
            "gate_proj": (hidden, inter), "up_proj": (hidden, inter), "down_proj": (inter, hidden)}


def lora_parameters(config: dict[str, Any], params: FinetuneParams) -> int:
    c = config.get("text_config") or config
    dims = _dims(c)
    hidden = int(c.get("hidden_size") or 0)
    layers = int(c.get("num_hidden_layers") or 0)
    per_layer = sum(params.lora_r * sum(dims.get(m, (hidden, hidden))) for m in params.target_modules)
    return per_layer * layers


def training_bytes(params: FinetuneParams, device: str) -> dict[str, int] | None:
    """{base, lora_state, activations, total} bytes of training on `device`; None when the config is unreadable."""
    from engine.runtime.memory import config_parameters, safetensors_parameters
    from engine.runtime.model_config import local_model_path, read_model_config

    path = local_model_path(params.model)
    config = read_model_config(path) if path is not None else None
    if config is None:
        return None
    n = safetensors_parameters(path) or config_parameters(config) or 0
    dtype_bytes = 4 if params.dtype == "float32" or (params.dtype == "auto" and not device.startswith("cuda")) else 2
    base = n // 2 if params.quantize == "4bit" else n * dtype_bytes
    lora_state = 16 * lora_parameters(config, params)
    c = config.get("text_config") or config
    hidden, layers = int(c.get("hidden_size") or 0), int(c.get("num_hidden_layers") or 0)
    heads, vocab = int(c.get("num_attention_heads") or 1), int(c.get("vocab_size") or 0)
    tokens = params.batch_size * params.max_seq_len
    activations = int(layers * tokens * (34 * hidden + 5 * heads * params.max_seq_len) * dtype_bytes / 2) + tokens * vocab * 8
    return {"base": base, "lora_state": lora_state, "activations": activations, "total": base + lora_state + activations}


def check_training_memory(params: FinetuneParams, device: str) -> dict[str, int] | None:
    """ConfigError when training cannot fit the device's budget alone; the plan otherwise."""
    from engine.errors import ConfigError
    from engine.runtime.model_registry import budget_bytes, format_bytes

    plan = training_bytes(params, device)
    if plan is None:
        return None
    budget = budget_bytes(device)
    if plan["total"] > budget:
        raise ConfigError(
            f"finetune.model: training {params.model!r} needs an estimated {format_bytes(plan['total'])} on {device} "
            f"(weights {format_bytes(plan['base'])}, LoRA state {format_bytes(plan['lora_state'])}, activations "
            f"{format_bytes(plan['activations'])}), more than the {format_bytes(budget)} budget; lower max_seq_len or "
            "batch_size, use quantize: 4bit on CUDA, or a device with more memory")
    return plan
