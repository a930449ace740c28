"""The model runtime: one module for every stage that loads a tokenizer or model.

- names (`engine.runtime.names`): what a configured name points to, config-time checks with
  the key named, and the model identity (hub commit or directory content hash) for signatures;
- hardware (`engine.runtime.hardware`): the per-device capability probe and dtype choice;
- loading (`engine.runtime.loading`): tokenizers, models, attention, out-of-memory halving;
- registry (`engine.runtime.model_registry`): the owner of every loaded model of a process (LRU under
  a per-device memory budget, residency records for the manifest's `models`);
- model_process (`engine.runtime.model_process`): a model in a worker process of its own (every
  vLLM engine), ended on release;
- memory (`engine.runtime.memory`): per-model memory estimates, the run's plan, and the
  config-time refusal of a model that cannot fit its device; model_config: a model's config.json.
"""
from engine.runtime.hardware import (
    DeviceCapability,
    auto_dtype,
    check_dtype,
    probe_device,
    resolve_device,
    resolve_dtype,
)
from engine.runtime.loading import (
    LoadedModel,
    attn_implementation,
    check_tokenizer,
    dtype_keyword,
    free_accelerator_memory,
    halve_on_oom,
    is_oom,
    load_model,
    load_tokenizer,
    torch_dtype,
)
from engine.runtime.names import (
    DEMO_MODELS_ENV,
    DEMO_PREFIX,
    PYPI_MODELS,
    PYPI_PREFIX,
    ResolvedModel,
    check_model_name,
    content_hash,
    demo_models_dir,
    resolve_model,
    split_revision,
)

__all__ = [
    "DEMO_MODELS_ENV", "DEMO_PREFIX", "PYPI_MODELS", "PYPI_PREFIX", "DeviceCapability", "LoadedModel",
    "ResolvedModel", "attn_implementation", "auto_dtype", "check_dtype", "check_model_name", "check_tokenizer", "content_hash",
    "demo_models_dir", "dtype_keyword", "free_accelerator_memory", "halve_on_oom", "is_oom", "load_model",
    "load_tokenizer", "probe_device", "torch_dtype", "resolve_device", "resolve_dtype", "resolve_model", "split_revision",
]
