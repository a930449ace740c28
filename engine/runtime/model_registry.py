"""The model registry: the one owner of every loaded model of a process.

Stages never keep a model themselves. They ask the registry for one by its key (everything
that decides the loaded weights: backend, model, dtype, device, window...) with a loader, use
it, and let go of their reference; the registry keeps what fits the device's memory budget
and frees the least recently used model of that device before it loads another. A worker
process model (every vLLM engine) is freed by ending its process; an in-process torch model is
dropped and its cached device memory handed back.

Budget per device: `BABELSCORE_MODEL_BUDGET_BYTES`, else the device's memory;
`BABELSCORE_MODEL_BUDGET_MODELS` caps the models resident on one device. The estimate a caller
gives is what is charged. Every load is recorded (`records()`, with device and host peaks kept
apart); the executors collect them into the manifest's `models` (fields: docs/hardware.md).
"""
from __future__ import annotations

import atexit
import gc
import logging
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

BUDGET_BYTES_ENV = "BABELSCORE_MODEL_BUDGET_BYTES"
BUDGET_MODELS_ENV = "BABELSCORE_MODEL_BUDGET_MODELS"


def normalize_device(device: str) -> str:
    """`cpu` or `cuda:N` (`auto` resolved, bare `cuda` is `cuda:0`)."""
    if device in ("", "auto"):
        from engine.runtime.hardware import resolve_device

        device = resolve_device("auto")
    if device == "cuda":
        return "cuda:0"
    return device


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(float(raw))
    except ValueError:
        from engine.errors import ConfigError

        raise ConfigError(f"{name}: got {raw!r}; allowed: a whole number (bytes or a count)") from None
    return value if value > 0 else None


def available_host_bytes() -> int:
    """MemAvailable of /proc/meminfo (Linux); else physical memory."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def device_memory_bytes(device: str) -> int:
    """Total memory of a CUDA device, or the host memory available now for `cpu`.

    On CUDA NVML answers first; without it torch answers in a child process (engine.runtime.cuda.
    device_facts): `mem_get_info` here would make a CUDA context in this process, which holds
    device memory of its own for as long as the process lives.
    """
    device = normalize_device(device)
    if device.startswith("cuda"):
        from engine.runtime.cuda import nvml_total_bytes

        total = nvml_total_bytes(device)
        if total is not None:
            return total
        from engine.runtime.cuda import device_facts

        facts = device_facts(device)  # torch in a child process: no CUDA context here
        if facts is None:
            from engine.errors import ModelLoadError

            raise ModelLoadError(f"cannot read the memory of {device}: neither NVML nor torch answered (see the warning "
                                 "above); check `nvidia-smi`")
        return facts[3]
    return available_host_bytes()


def budget_bytes(device: str, resident_bytes: int = 0) -> int:
    """The memory budget of a device (see the module docstring)."""
    forced = _env_int(BUDGET_BYTES_ENV)
    if forced is not None:
        return forced
    device = normalize_device(device)
    if device.startswith("cuda"):
        return device_memory_bytes(device)
    return available_host_bytes() + resident_bytes


def budget_models() -> int | None:
    return _env_int(BUDGET_MODELS_ENV)


def peak_rss_bytes() -> int:
    """Peak resident set size of this process (Linux reports KiB)."""
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _placement(device: str) -> dict[str, Any]:
    """Where a model of this process on `device` is: host, Ray node (when in one) and the
    machine's device id behind `cuda:N`."""
    import socket

    from engine.runtime.cuda import VISIBLE_ENV, physical_device

    where: dict[str, Any] = {"host": socket.gethostname(), "node_id": None, "physical_device": None,
                             "cuda_visible_devices": os.environ.get(VISIBLE_ENV)}
    ray = sys.modules.get("ray")  # never imported here just to ask
    if ray is not None and ray.is_initialized():
        where["node_id"] = ray.get_runtime_context().get_node_id()
    if device.startswith("cuda"):
        where["physical_device"] = f"cuda:{physical_device(device)}"
    return where


def _reset_in_process_peak(device: str) -> None:
    """Start torch's peak counter of `device` afresh, only where this process already uses CUDA:
    a model loaded in a worker process must not make a CUDA context here."""
    torch = sys.modules.get("torch")
    if device.startswith("cuda") and torch is not None and torch.cuda.is_initialized():
        torch.cuda.reset_peak_memory_stats(torch.device(device))


@dataclass
class _Entry:
    key: Hashable
    obj: Any
    device: str
    estimate: int
    record: dict[str, Any] = field(default_factory=dict)


def _short_of_free(device: str, needed: int) -> bool:
    """Whether NVML sees less free on this CUDA device than `needed`. The budget counts the
    estimates of this process's models against total memory; what other processes hold, and
    each engine's CUDA context outside its share, only NVML's free figure shows, and vLLM 0.32.0
    refuses to start when free memory is below its share (`vllm/v1/worker/utils.py`
    `request_memory`). False without NVML or off CUDA."""
    if not device.startswith("cuda") or needed <= 0 or _env_int(BUDGET_BYTES_ENV) is not None:
        return False
    from engine.runtime.cuda import device_used_bytes, nvml_total_bytes, physical_device

    physical = physical_device(device)
    used = (device_used_bytes([physical]) or {}).get(physical)
    total = nvml_total_bytes(device)
    return used is not None and total is not None and total - used < needed


class ModelRegistry:
    """Loaded models of this process, least recently used first (see the module docstring)."""

    def __init__(self) -> None:
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._records: list[dict[str, Any]] = []
        self._lock = threading.RLock()

    # ----- asking for a model ----------------------------------------------------------------
    def acquire(self, key: Hashable, load: Callable[[], Any], *, model: str, stage: str, device: str,
                estimate_bytes: int | None | Callable[[], int | None] = 0) -> Any:
        """The loaded model for `key`, loaded with `load()` on first use (after making room).

        estimate_bytes: what the model will hold on `device` (a callable is only asked when the
        model has to be loaded); None or 0 when unknown.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and getattr(entry.obj, "alive", True):
                self._entries.move_to_end(key)
                return entry.obj
            if entry is not None:  # its worker process died: forget it and load again
                self._drop(key, reason="its worker process exited")
            device = normalize_device(device)
            if callable(estimate_bytes):
                estimate_bytes = estimate_bytes()
            estimate_bytes = int(estimate_bytes or 0)
            self._make_room(device, max(0, int(estimate_bytes)), model)
            record = {"model": model, "stage": stage, "pid": None, "device": device, **_placement(device),
                      "loaded_at": time.time(), "released_at": None, "peak_device_bytes": None, "peak_host_bytes": None,
                      "estimated_bytes": int(estimate_bytes)}
            _reset_in_process_peak(device)
            logger.info("loading %s for stage %s on %s (estimated %s)", model, stage, device, format_bytes(estimate_bytes))
            started = time.perf_counter()
            obj = load()
            record["load_s"] = round(time.perf_counter() - started, 3)  # a vLLM engine start is most of a small run
            record["pid"] = int(getattr(obj, "worker_pid", os.getpid()))
            record["in_worker"] = hasattr(obj, "worker_pid")
            self._entries[key] = _Entry(key, obj, device, max(0, int(estimate_bytes)), record)
            self._records.append(record)
            return obj

    def _make_room(self, device: str, needed: int, model: str) -> None:
        on_device = [e for e in self._entries.values() if e.device == device]
        resident = sum(e.estimate for e in on_device)
        budget = budget_bytes(device, resident)
        cap = budget_models()
        while on_device and (resident + needed > budget or (cap is not None and len(on_device) >= cap)
                             or _short_of_free(device, needed)):
            lru = on_device.pop(0)
            logger.info("releasing %s to make room for %s on %s", lru.record["model"], model, device)
            self._drop(lru.key)
            resident -= lru.estimate
        if needed > budget:
            logger.warning("%s is estimated at %s, more than the %s budget of %s; loading it alone", model,
                           format_bytes(needed), device, format_bytes(budget))
        elif _short_of_free(device, needed):
            logger.warning("%s needs %s on %s, more than is free there now (other processes hold the rest); its load "
                           "may be refused", model, format_bytes(needed), device)

    # ----- giving models back ----------------------------------------------------------------
    def release(self, key: Hashable) -> None:
        with self._lock:
            if key in self._entries:
                self._drop(key)

    def release_all(self) -> None:
        with self._lock:
            for key in list(self._entries):
                self._drop(key)

    def _drop(self, key: Hashable, reason: str = "") -> None:
        entry = self._entries.pop(key)
        record = entry.record
        obj = entry.obj
        entry.obj = None
        peaks: dict[str, Any] = {}
        try:
            if hasattr(obj, "worker_pid"):
                obj.close()  # ends the worker process; it reports its own peaks
                peaks = dict(obj.peaks)
            else:
                peaks = self._in_process_peaks(entry.device)
                close = getattr(obj, "close", None)
                if close is not None:
                    close()
        except Exception as exc:  # noqa: BLE001 - a model that fails to close is still gone from here
            logger.warning("closing %s failed: %s", record["model"], exc)
        del obj
        gc.collect()
        if entry.device.startswith("cuda"):
            from engine.runtime.loading import free_accelerator_memory

            free_accelerator_memory()
        record["released_at"] = time.time()
        record.update({k: peaks.get(k) for k in ("peak_device_bytes", "peak_host_bytes", "device_bytes_source")})
        if reason:
            record["note"] = reason
        logger.info("released %s (%s)", record["model"], record["device"])

    @staticmethod
    def _in_process_peaks(device: str) -> dict[str, Any]:
        peaks: dict[str, Any] = {"peak_host_bytes": peak_rss_bytes(), "peak_device_bytes": None,
                                 "device_bytes_source": "none (cpu)"}
        if device.startswith("cuda"):
            import torch

            if torch.cuda.is_initialized():
                # Reserved, not allocated: what the allocator took from the device (the worker
                # fallback reports the same), the nearest torch figure to NVML's per-process usage.
                peaks["peak_device_bytes"] = int(torch.cuda.max_memory_reserved(torch.device(device)))
                peaks["device_bytes_source"] = "torch allocator reserved (this process, without its CUDA context)"
        return peaks

    # ----- what was loaded -------------------------------------------------------------------
    def resident(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(e.record) for e in self._entries.values()]

    def records(self) -> list[dict[str, Any]]:
        """Every load so far (a released one has released_at set)."""
        with self._lock:
            return [dict(r) for r in self._records]

    def take_records(self) -> list[dict[str, Any]]:
        """The records of released models, removed from the registry (resident ones stay)."""
        with self._lock:
            done = [r for r in self._records if r["released_at"] is not None]
            self._records = [r for r in self._records if r["released_at"] is None]
            return done


_REGISTRY = ModelRegistry()


def model_registry() -> ModelRegistry:
    """This process's registry."""
    return _REGISTRY


def acquire(key: Hashable, load: Callable[[], Any], *, model: str, stage: str, device: str,
            estimate_bytes: int | None | Callable[[], int | None] = 0) -> Any:
    return _REGISTRY.acquire(key, load, model=model, stage=stage, device=device, estimate_bytes=estimate_bytes)


def release_all_models() -> None:
    _REGISTRY.release_all()


def format_bytes(n: int | None) -> str:
    if n is None:
        return "unknown"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


# A worker process must not outlive this one.
atexit.register(release_all_models)
