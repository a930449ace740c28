"""Simulated NVML (the pynvml API of nvidia-ml-py) over fake_cuda's state. Like NVML, it sees
every device of the node, whatever CUDA_VISIBLE_DEVICES says."""
from __future__ import annotations

from types import SimpleNamespace

import fake_cuda


class NVMLError(Exception):
    pass


def nvmlInit() -> None:
    if not fake_cuda.physical_count():
        raise NVMLError("no devices")


def nvmlShutdown() -> None:
    pass


def nvmlDeviceGetCount() -> int:
    return fake_cuda.physical_count()


def nvmlDeviceGetHandleByIndex(index: int):
    if index >= fake_cuda.physical_count():
        raise NVMLError("invalid argument")
    return ("sim", int(index))


def nvmlDeviceGetHandleByUUID(uuid: str):
    raise NVMLError(f"no device with UUID {uuid}")


def nvmlDeviceGetMemoryInfo(handle):
    used = sum(fake_cuda.holders(handle[1]).values())
    total = fake_cuda.total_bytes()
    return SimpleNamespace(total=total, used=used, free=total - used)


def nvmlDeviceGetComputeRunningProcesses(handle):
    return [SimpleNamespace(pid=pid, usedGpuMemory=nbytes) for pid, nbytes in fake_cuda.holders(handle[1]).items()]


def nvmlDeviceGetName(handle) -> str:
    return "NVIDIA H200 (simulated)"


def nvmlDeviceGetCudaComputeCapability(handle):
    return (9, 0)
