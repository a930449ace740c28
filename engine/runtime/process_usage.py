"""Peak memory of a process and every process under it, on the host and on CUDA devices.

A model worker measures itself with this: a vLLM engine holds its device memory in its
EngineCore, a child of the worker, so neither the worker's own RSS nor its torch allocator
says what the model took. Host bytes: the summed RSS of the process tree (psutil). Device
bytes, best source first, named in `device_bytes_source`:
1. NVML's per-process usage summed over the tree (engine.runtime.cuda);
2. where NVML lists none of the tree's pids (inside a container NVML reports the host's pids),
   the growth of NVML's device-wide used memory on the worker's devices since it started: every
   process's, so only the model's own figure while it is the one model on those devices (the
   registry keeps it so unless two fit);
3. without NVML, the torch allocator's peak of the worker process alone.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any

from engine.runtime.cuda import device_bytes_by_pid

logger = logging.getLogger(__name__)
SAMPLE_EVERY_S = 0.25


def _tree_pids() -> list[int]:
    import psutil

    me = psutil.Process(os.getpid())
    try:
        children = me.children(recursive=True)
    except psutil.Error:
        children = []
    return [me.pid, *(c.pid for c in children)]


def _host_bytes(pids: list[int]) -> int:
    import psutil

    total = 0
    for pid in pids:
        try:
            total += psutil.Process(pid).memory_info().rss
        except psutil.Error:  # ended between listing and reading
            continue
    return total


def _own_allocator_peak() -> int | None:
    torch = sys.modules.get("torch")  # never imported here just to ask
    # The sampler thread runs while the worker imports torch (a model load): a module that is
    # still importing has no `cuda` yet. Until it has, there is no allocator to ask.
    cuda = getattr(torch, "cuda", None) if torch is not None else None
    if cuda is None or not hasattr(cuda, "is_initialized") or not cuda.is_initialized():
        return None
    return int(sum(torch.cuda.max_memory_reserved(i) for i in range(torch.cuda.device_count())))


class UsageSampler:
    """Samples the tree every SAMPLE_EVERY_S in a daemon thread (and on `sample()`); `stop()`
    returns the peaks."""

    def __init__(self) -> None:
        from engine.runtime.cuda import VISIBLE_ENV, device_used_bytes

        visible = os.environ.get(VISIBLE_ENV)
        self._devices = [d.strip() for d in visible.split(",") if d.strip()] if visible else []
        self._baseline = device_used_bytes(self._devices) if self._devices else None
        self.peak_host_bytes = 0
        self.peak_device_bytes: int | None = None
        self.device_bytes_source = "none"
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="usage-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY_S):
            try:
                self.sample()
            except Exception as exc:  # one failed sample must not end the sampling (nor print a traceback)
                logger.debug("usage sample failed: %s: %s", type(exc).__name__, exc)

    def sample(self) -> None:
        pids = _tree_pids()
        host = _host_bytes(pids)
        by_device = device_bytes_by_pid(pids)
        if by_device:
            device, source = sum(by_device.values()), "nvml (worker and its children)"
        elif by_device is not None and self._baseline:
            from engine.runtime.cuda import device_used_bytes

            now = device_used_bytes(self._baseline) or {}
            device = sum(max(0, now.get(d, 0) - used) for d, used in self._baseline.items())
            source = "nvml device-wide growth since the worker started (its pids are not visible to NVML here)"
        else:
            device, source = _own_allocator_peak(), "torch allocator reserved (worker process only, without its CUDA context)"
        with self._lock:
            self.peak_host_bytes = max(self.peak_host_bytes, host)
            if device is not None:
                self.peak_device_bytes = max(self.peak_device_bytes or 0, device)
                self.device_bytes_source = source

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self.sample()
        with self._lock:
            return {"peak_host_bytes": self.peak_host_bytes, "peak_device_bytes": self.peak_device_bytes,
                    "device_bytes_source": self.device_bytes_source}
