"""CUDA facts the engine relies on, asked without initialising CUDA in the asking process.

`torch.cuda.is_available()` initialises CUDA and so poisons `fork` unless the NVML-based check
is on, and vLLM forks its EngineCore unless told to spawn. So every process that imports the
engine sets the NVML check (`use_fork_safe_cuda_check`), and every model worker gets
`worker_environment`: the NVML check, `VLLM_WORKER_MULTIPROC_METHOD=spawn`, the configured
device as `CUDA_VISIBLE_DEVICES`, and FlashInfer's JIT-built sampler and all-reduce turned off
(PyPI's torch ships no nvcc to build them). Device memory per process comes from NVML
(`pynvml`), which sees a vLLM engine's child too; where NVML cannot answer, a device's facts are
asked in a short-lived child (`device_facts`), since torch's own queries make a CUDA context.
The torch 2.13.0 and vLLM 0.32.0 sources behind each fact: docs/gpu.md, "How a vLLM engine is
started on CUDA".
"""
from __future__ import annotations

import functools
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping

logger = logging.getLogger(__name__)

NVML_CHECK_ENV = "PYTORCH_NVML_BASED_CUDA_CHECK"
MULTIPROC_ENV = "VLLM_WORKER_MULTIPROC_METHOD"
FLASHINFER_SAMPLER_ENV = "VLLM_USE_FLASHINFER_SAMPLER"
FLASHINFER_ALLREDUCE_ENV = "VLLM_ALLREDUCE_USE_FLASHINFER"
# Set (if unset) in every model worker and before an in-process engine start: no FlashInfer JIT.
FLASHINFER_OFF = {FLASHINFER_SAMPLER_ENV: "0", FLASHINFER_ALLREDUCE_ENV: "0"}
VISIBLE_ENV = "CUDA_VISIBLE_DEVICES"


def use_fork_safe_cuda_check() -> None:
    """Make `torch.cuda.is_available()` of this process ask NVML (no CUDA initialisation, so
    `fork` stays safe), and number CUDA devices in PCI bus order, as NVML, nvidia-smi and Ray do
    (CUDA's own default puts the fastest first, so on a machine of mixed GPUs `cuda:1` and NVML
    device 1 could differ). Values the user set win."""
    os.environ.setdefault(NVML_CHECK_ENV, "1")
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")


def cuda_available() -> bool:
    """Whether a CUDA device is visible, asked without initialising CUDA here."""
    use_fork_safe_cuda_check()
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def visible_devices(env: Mapping[str, str] | None = None) -> list[str] | None:
    """The entries of CUDA_VISIBLE_DEVICES (ids or UUIDs), or None when it is not set (all visible)."""
    raw = (os.environ if env is None else env).get(VISIBLE_ENV)
    if raw is None:
        return None
    return [part.strip() for part in raw.split(",") if part.strip()]


def device_index(device: str) -> int:
    """`cuda:N` -> N; `cuda` -> 0."""
    _kind, _, index = device.partition(":")
    return int(index) if index else 0


def physical_device(device: str, env: Mapping[str, str] | None = None) -> str:
    """What `cuda:N` of this process is on the machine: the N-th entry of CUDA_VISIBLE_DEVICES
    (Ray sets it per actor from the GPUs it assigned), or N itself when nothing is hidden."""
    if not device.startswith("cuda"):
        return device
    index = device_index(device)
    visible = visible_devices(env)
    if visible is None:
        return str(index)
    if index >= len(visible):
        from engine.errors import ConfigError

        raise ConfigError(f"device: {device} is not visible here ({VISIBLE_ENV}={','.join(visible) or '(empty)'}); "
                          f"allowed: cuda:0 .. cuda:{max(0, len(visible) - 1)}, or auto")
    return visible[index]


def worker_environment(device: str, base: Mapping[str, str] | None = None, count: int = 1) -> dict[str, str]:
    """The environment of a model worker process whose model runs on `device` (and the `count` - 1
    devices after it: a tensor-parallel engine's ranks need one each).

    On `cuda:N` the worker sees only those devices, the first as its device 0 (vLLM always starts
    from device 0 of what it sees), and starts every child with spawn. The NVML check and the
    FlashInfer sampler and all-reduce off (see the module docstring) are set everywhere; a value
    the user set wins.
    """
    env = dict(os.environ if base is None else base)
    env.setdefault(NVML_CHECK_ENV, "1")
    for key, value in FLASHINFER_OFF.items():
        env.setdefault(key, value)
    if device.startswith("cuda"):
        first = device_index(device)
        env[VISIBLE_ENV] = ",".join(physical_device(f"cuda:{first + k}", env) for k in range(max(1, count)))
        # Forced, not defaulted: `fork` after CUDA use in the worker is always fatal on CUDA.
        env[MULTIPROC_ENV] = "spawn"
    return env


def triton_build_tools_missing() -> str | None:
    """What Triton lacks to compile its C launcher here, as a message with the apt line; None when
    nothing. vLLM 0.32.0 runs Triton kernels at every engine start on CUDA (the native top-k/top-p
    sampler `apply_top_k_top_p_triton`, the block table), and Triton (3.7.1, torch 2.13.0's pin)
    builds the launcher with $CC, else gcc, else clang, against Python.h from sysconfig's include
    directory (triton/runtime/build.py `_build`). A set CC is used whenever it is set, as one
    program name with no fallback (`_find_compiler`), so then CC itself must be found."""
    import shutil
    import sysconfig

    version = "%d.%d" % sys.version_info[:2]
    cc = os.environ.get("CC")
    if cc is not None:
        if not shutil.which(cc):
            return (f"CC={cc!r} names no program on PATH: Triton, which vLLM runs at every engine start on CUDA, "
                    f"compiles its C launcher with CC whenever it is set (one program, no arguments); set CC to a "
                    f"compiler on PATH (CC=gcc) or unset it")
    elif shutil.which("gcc") is None and shutil.which("clang") is None:
        return (f"no C compiler (gcc or clang, or one named by CC) on PATH: Triton, which vLLM runs at every engine "
                f"start on CUDA, compiles its C launcher with one; on Debian/Ubuntu: apt-get install gcc python{version}-dev")
    include = sysconfig.get_paths()["include"]
    if not os.path.exists(os.path.join(include, "Python.h")):
        return (f"no Python headers ({include}/Python.h): Triton, which vLLM runs at every engine start on CUDA, "
                f"compiles its C launcher against them; on Debian/Ubuntu: apt-get install python{version}-dev")
    return None


_FACTS_SCRIPT = (
    "import json, sys, torch\n"
    "i = int(sys.argv[1])\n"
    "major, minor = torch.cuda.get_device_capability(i)\n"
    "free, total = torch.cuda.mem_get_info(i)\n"
    "print(json.dumps([torch.cuda.get_device_name(i), major, minor, total]))\n"
)
FACTS_TIMEOUT_S = 120.0  # importing torch and making one context: seconds; a hung driver must not hang a run


@functools.lru_cache(maxsize=None)
def device_facts(device: str) -> tuple[str, int, int, int] | None:
    """(name, major, minor, total bytes) of this process's `cuda:N` from torch, without a CUDA
    context in this process: asked here only where this process already uses CUDA, else in a
    child process that sees what this one sees (the same CUDA_VISIBLE_DEVICES). None where no
    answer came (the reason is logged)."""
    index = device_index(device)
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        major, minor = torch.cuda.get_device_capability(index)
        _free, total = torch.cuda.mem_get_info(index)
        return str(torch.cuda.get_device_name(index)), int(major), int(minor), int(total)
    try:
        done = subprocess.run([sys.executable, "-c", _FACTS_SCRIPT, str(index)], capture_output=True, text=True,
                              timeout=FACTS_TIMEOUT_S, env=dict(os.environ), check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        logger.warning("could not ask torch about %s in a child process: %s", device, exc)
        return None
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        logger.warning("could not ask torch about %s in a child process: %s", device, tail)
        return None
    name, major, minor, total = json.loads(done.stdout.strip().splitlines()[-1])
    return str(name), int(major), int(minor), int(total)


# ----- NVML: memory per device and per process --------------------------------------------------
@functools.lru_cache(maxsize=1)
def nvml_module():
    """pynvml, initialised once per process; None without it or without a driver."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver: NVML answers nothing
        return None
    return pynvml


def nvml_device_handle(nvml, physical: str):
    if physical.isdigit():
        return nvml.nvmlDeviceGetHandleByIndex(int(physical))
    return nvml.nvmlDeviceGetHandleByUUID(physical)


def nvml_total_bytes(device: str) -> int | None:
    """Total memory of this process's `cuda:N` by NVML (no CUDA context is made), None without NVML."""
    nvml = nvml_module()
    if nvml is None:
        return None
    try:
        return int(nvml.nvmlDeviceGetMemoryInfo(nvml_device_handle(nvml, physical_device(device))).total)
    except Exception as exc:  # noqa: BLE001 - NVML without this device: the caller falls back
        logger.debug("NVML could not read %s: %s", device, exc)
        return None


def nvml_capability(device: str) -> tuple[str, int, int] | None:
    """(name, major, minor) of this process's `cuda:N` by NVML, None without NVML."""
    nvml = nvml_module()
    if nvml is None:
        return None
    try:
        handle = nvml_device_handle(nvml, physical_device(device))
        major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
        name = nvml.nvmlDeviceGetName(handle)
    except Exception as exc:  # noqa: BLE001 - the caller falls back to torch
        logger.debug("NVML could not read %s: %s", device, exc)
        return None
    return (name.decode() if isinstance(name, bytes) else str(name)), int(major), int(minor)


def device_used_bytes(physicals: Iterable[str]) -> dict[str, int] | None:
    """Device-wide used memory of these physical devices (every process's), None without NVML."""
    nvml = nvml_module()
    if nvml is None:
        return None
    out: dict[str, int] = {}
    for physical in physicals:
        try:
            out[physical] = int(nvml.nvmlDeviceGetMemoryInfo(nvml_device_handle(nvml, physical)).used)
        except Exception:  # noqa: BLE001 - one unreadable device does not hide the others
            continue
    return out


def device_bytes_by_pid(pids: Iterable[int]) -> dict[str, int] | None:
    """Device memory NVML sees held by `pids`, per physical device id (only devices where one of
    them holds memory); None when NVML is not available."""
    nvml = nvml_module()
    if nvml is None:
        return None
    wanted = set(pids)
    out: dict[str, int] = {}
    try:
        count = nvml.nvmlDeviceGetCount()
    except Exception:  # noqa: BLE001
        return None
    for index in range(count):
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            processes = list(nvml.nvmlDeviceGetComputeRunningProcesses(handle))
        except Exception:  # noqa: BLE001 - one unreadable device does not hide the others
            continue
        used = sum(int(p.usedGpuMemory or 0) for p in processes if p.pid in wanted)
        if used:
            out[str(index)] = used
    return out
