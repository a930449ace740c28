"""A generator's backend, from the model registry (engine.runtime.model_registry).

Two kinds behind one interface (engine/llm/requests.py `Backend`): `transformers`
(engine/llm/transformers_backend.py) in this process, and `vllm` (engine/llm/vllm_backend.py)
always in a worker process of its own, since vLLM cannot free an engine in-process. So any
number of vLLM generators follow each other in one run: the registry ends the previous worker
before the next one starts when both do not fit.
"""
from __future__ import annotations

import logging

from engine.llm.requests import Backend, BackendSpec

logger = logging.getLogger(__name__)

def get_backend(spec: BackendSpec, *, stage: str) -> Backend:
    """The loaded backend for `spec`, from the model registry (loaded there on first use), on
    behalf of `stage` (recorded with the model in the manifest).

    A vLLM engine lives in a worker process of its own (engine.runtime.model_process); a
    transformers model in this process. Callers keep it only while they use it: the registry
    decides when it is freed.
    """
    from engine.runtime.memory import device_of, estimate_model_bytes
    from engine.runtime.model_registry import acquire

    device = device_of(spec.kind, spec.device)
    return acquire(("generator", spec), lambda: _load_backend(spec), model=spec.model, stage=stage, device=device,
                   estimate_bytes=lambda: estimate_model_bytes(
                       spec.model, backend=spec.kind, dtype=spec.dtype, device=device, max_model_len=spec.max_model_len,
                       gpu_memory_utilization=spec.gpu_memory_utilization))


def _load_backend(spec: BackendSpec) -> Backend:
    logger.info("loading generator %s with the %s backend", spec.model, spec.kind)
    if spec.kind == "vllm":
        # vLLM cannot free an engine in-process: it lives in a worker process of its own.
        from engine.runtime.memory import device_of
        from engine.runtime.model_process import ProcessModel

        return ProcessModel("engine.llm.vllm_backend:VllmBackend", spec, attrs=("max_model_len",),  # type: ignore[return-value]
                            label=f"generator {spec.model}", device=device_of(spec.kind, spec.device),
                            devices=spec.tensor_parallel_size)
    from engine.llm.transformers_backend import TransformersBackend

    return TransformersBackend(spec)
