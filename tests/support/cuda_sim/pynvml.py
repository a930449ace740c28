"""Simulated NVML (the pynvml API of nvidia-ml-py) over fake_cuda's state. Like NVML, it sees
every device of the node, whatever CUDA_VISIBLE_DEVICES says."""
from __future__ import annotations

import os
from types import SimpleNamespace

import fake_cuda

if os.environ.get("CUDASIM_NO_PYNVML") == "1":
    # nvidia-ml-py not installed: vLLM 0.32.0 does not require it (it carries
    # vllm/third_party/pynvml.py); it arrives only with flashinfer-python's requirements.
    raise ModuleNotFoundError("No module named 'pynvml'", name="pynvml")


class NVMLError(Exception):
    pass


def nvmlInit() -> None:
    if not fake_cuda.nvml_works():
        raise NVMLError("Driver/library version mismatch" if fake_cuda.physical_count() else "no devices")


def nvmlShutdown() -> None:
    pass


def nvmlDeviceGetCount() -> int:
    return fake_cuda.physical_count()


def nvmlDeviceGetHandleByIndex(index: int):
    if index >= fake_cuda.physical_count():
        raise NVMLError("invalid argument")
    return ("sim", int(index))


def nvmlDeviceGetHandleByUUID(uuid: str):
    physical = fake_cuda.physical_of_uuid(uuid.decode() if isinstance(uuid, bytes) else uuid)
    if physical is None:
        raise NVMLError(f"Not Found: {uuid}")
    return ("sim", physical)


def nvmlDeviceGetUUID(handle) -> str:
    return fake_cuda.uuid(handle[1])


def nvmlDeviceGetMemoryInfo(handle):
    used = sum(fake_cuda.holders(handle[1]).values())
    total = fake_cuda.total_bytes()
    return SimpleNamespace(total=total, used=used, free=total - used)


def nvmlDeviceGetComputeRunningProcesses(handle):
    # CUDASIM_NVML_HOST_PIDS=1: pids of another pid namespace, as NVML reports them inside a container
    offset = 4_000_000 if os.environ.get("CUDASIM_NVML_HOST_PIDS") == "1" else 0
    return [SimpleNamespace(pid=pid + offset, usedGpuMemory=nbytes) for pid, nbytes in fake_cuda.holders(handle[1]).items()]


def nvmlDeviceGetName(handle) -> str:
    return "NVIDIA H200 (simulated)"


def nvmlDeviceGetCudaComputeCapability(handle):
    return (9, 0)
