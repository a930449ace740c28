"""A model stand-in for tests/runtime/test_gpu.py: built in a model worker process, it holds device memory
and says what device the worker sees (torch only, so it runs on a bare GPU image)."""
from __future__ import annotations

import os


class DeviceHolder:
    def __init__(self, nbytes: int):
        import torch

        self.block = torch.empty(int(nbytes), dtype=torch.uint8, device="cuda")  # shape: (nbytes,)

    def facts(self) -> dict:
        import torch

        return {"cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                "multiproc_method": os.environ.get("VLLM_WORKER_MULTIPROC_METHOD"),
                "flashinfer_sampler": os.environ.get("VLLM_USE_FLASHINFER_SAMPLER"),
                "device_count": torch.cuda.device_count(), "device": str(self.block.device),
                "pid": os.getpid()}
