"""Simulated CUDA devices shared by the processes of one test (see README.md)."""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import sys
import time
import zlib
from pathlib import Path

GiB = 2**30
FORK_ERROR = ("Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
              "you must use the 'spawn' start method")

_initialized = False  # torch's lazy init ran in this process
_driver_touched = False  # cudaGetDeviceCount (or init) ran: fork is poisoned from now on
_bad_fork = False  # this process is a fork of a process that had touched the driver


# ----- shared state ----------------------------------------------------------------------------
def make_state(folder: Path, nodes: dict[str, int], total_bytes: int = 80 * GiB) -> Path:
    folder = Path(folder)
    (folder / "alloc").mkdir(parents=True, exist_ok=True)
    (folder / "sim.json").write_text(json.dumps({"nodes": {n: {"devices": c, "total_bytes": total_bytes}
                                                           for n, c in nodes.items()}}))
    return folder


def _dir() -> Path:
    return Path(os.environ["CUDASIM_DIR"])


def node() -> str:
    return os.environ.get("CUDASIM_NODE", "local")


def _node_config() -> dict:
    config = json.loads((_dir() / "sim.json").read_text())["nodes"]
    return config.get(node(), {"devices": 0, "total_bytes": 0})


def physical_count() -> int:
    return int(_node_config()["devices"])


def total_bytes() -> int:
    return int(_node_config()["total_bytes"])


def uuid(physical: int) -> str:
    """The device's UUID as NVML reports it (nvmlDeviceGetUUID)."""
    return f"GPU-5137{physical:04d}-0000-4000-8000-{zlib.crc32(node().encode()) % 10**12:012d}"


def mig_uuid(physical: int, instance: int = 0) -> str:
    """A MIG instance of the device: here, the whole device under a MIG-prefixed UUID."""
    return f"MIG-5137{physical:04d}-{instance:04d}-4000-8000-{zlib.crc32(node().encode()) % 10**12:012d}"


def physical_of_uuid(text: str) -> int | None:
    """The device a (possibly partial) GPU- or MIG- UUID names, None when none or several do."""
    count = physical_count()
    for table in ([uuid(p) for p in range(count)], [mig_uuid(p) for p in range(count)]):
        hits = [p for p, full in enumerate(table) if full.startswith(text)]
        if len(hits) == 1:
            return hits[0]
    return None


def visible() -> list[int]:
    """torch/cuda/__init__.py `_parse_visible_devices` (torch 2.13.0): ordinals until the first
    entry that is not one; a list that starts with GPU- (or MIG-) takes UUIDs until the first
    entry without that prefix; a repeated entry empties the list."""
    raw = os.environ.get("CUDA_VISIBLE_DEVICES")
    count = physical_count()
    if raw is None:
        return list(range(count))
    out: list[int] = []
    entries = [part.strip() for part in raw.split(",")]
    prefix = "GPU-" if raw.startswith("GPU-") else "MIG-" if raw.startswith("MIG-") else None
    for part in entries:
        if prefix is not None:
            if not part.startswith(prefix):
                break
            physical = physical_of_uuid(part)
            if physical is None:
                break
        else:
            digits = ""
            for ch in part:
                if not ch.isdigit():
                    break
                digits += ch
            if not digits or int(digits) >= count:
                break  # CUDA stops at the first invalid entry
            physical = int(digits)
        if physical in out:
            return []
        out.append(physical)
    return out


def nvml_works() -> bool:
    """NVML answers (CUDASIM_NVML_FAIL=1: its library is there but fails, as on a driver/library
    version mismatch)."""
    return os.environ.get("CUDASIM_NVML_FAIL") != "1" and physical_count() > 0


def nvml_device_count() -> int:
    """torch/cuda/__init__.py `_device_count_nvml`: -1 when NVML fails, and for MIG entries
    (torch skips their parsing), so the caller falls back to `cudaGetDeviceCount`."""
    raw = os.environ.get("CUDA_VISIBLE_DEVICES")
    if raw is not None and raw.startswith("MIG-"):
        return -1
    if not nvml_works():
        return -1
    return len(visible())


# Device memory of a process that exited is returned by the driver some time later, not at once.
FREE_DELAY_ENV = "CUDASIM_FREE_DELAY_S"


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def holders(physical: int) -> dict[int, int]:
    """pid -> bytes of every process holding memory on this node's device: the live ones, and
    those that exited less than CUDASIM_FREE_DELAY_S ago (their exit time is stamped by a watcher
    `allocate` starts)."""
    folder = _dir() / "alloc" / node() / str(physical)
    out = {}
    now = time.time()
    for file in folder.glob("*") if folder.exists() else []:
        if file.suffix in (".dead", ".tmp"):
            continue
        pid = int(file.name)
        if alive(pid):
            out[pid] = int(file.read_text() or 0)
            continue
        stamp = file.with_suffix(".dead")
        try:
            exited, delay = (float(x) for x in stamp.read_text().split())
        except (OSError, ValueError):
            continue
        if now - exited < delay:
            out[pid] = int(file.read_text() or 0)
    return out


_WATCHER = (
    "import os, sys, time\n"
    "pid, stamp, delay = int(sys.argv[1]), sys.argv[2], sys.argv[3]\n"
    "def alive():\n"
    "    try:\n"
    "        with open(f'/proc/{pid}/stat') as fh:\n"
    "            return fh.read().rsplit(')', 1)[1].split()[0] != 'Z'\n"
    "    except (OSError, IndexError):\n"
    "        return False\n"
    "while alive():\n"
    "    time.sleep(0.02)\n"
    "open(stamp + '.tmp', 'w').write(f'{time.time()} {delay}')\n"
    "os.replace(stamp + '.tmp', stamp)\n"
)


def _watch_exit(folder: Path) -> None:
    """With CUDASIM_FREE_DELAY_S, a detached watcher stamps when this process exits: its memory
    then stays taken for that many seconds (`holders`)."""
    delay = os.environ.get(FREE_DELAY_ENV)
    if not delay or float(delay) <= 0:
        return
    import subprocess

    stamp = folder / f"{os.getpid()}.dead"
    subprocess.Popen([sys.executable, "-S", "-c", _WATCHER, str(os.getpid()), str(stamp), delay], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def allocate(physical: int, nbytes: int, what: str) -> None:
    """This process holds `nbytes` on the device from now on (until it exits)."""
    folder = _dir() / "alloc" / node() / str(physical)
    folder.mkdir(parents=True, exist_ok=True)
    others = holders(physical)
    (folder / str(os.getpid())).write_text(str(nbytes))
    _watch_exit(folder)
    event = {"event": what, "node": node(), "device": physical, "pid": os.getpid(), "bytes": nbytes, "time": time.time(),
             "others": sorted(others), "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
             "multiproc_method": os.environ.get("VLLM_WORKER_MULTIPROC_METHOD")}
    with open(_dir() / "events.jsonl", "a") as fh:
        fh.write(json.dumps(event) + "\n")


def own_bytes() -> int:
    total = 0
    for physical in range(physical_count()):
        total += holders(physical).get(os.getpid(), 0)
    return total


# ----- torch.cuda semantics ----------------------------------------------------------------------
def _mark_bad_fork() -> None:
    global _bad_fork, _initialized
    _bad_fork, _initialized = True, False


def _touch_driver() -> None:
    global _driver_touched
    if not _driver_touched:
        _driver_touched = True
        os.register_at_fork(after_in_child=_mark_bad_fork)


def lazy_init() -> None:
    global _initialized
    if _bad_fork:
        raise RuntimeError(FORK_ERROR)
    _touch_driver()
    _initialized = True


def _index(device) -> int:
    if device is None:
        return 0
    if isinstance(device, int):
        return device
    index = getattr(device, "index", None)
    if index is not None:
        return int(index)
    text = str(device)
    return int(text.split(":", 1)[1]) if ":" in text else 0


def physical_of(device) -> int:
    seen = visible()
    index = _index(device)
    if index >= len(seen):
        raise RuntimeError("CUDA error: invalid device ordinal")
    return seen[index]


def is_available() -> bool:
    """torch 2.13.0 `is_available`: with PYTORCH_NVML_BASED_CUDA_CHECK=1, `device_count() > 0`
    (NVML first, `cudaGetDeviceCount` where NVML fails or MIG entries are visible); otherwise
    `cudaGetDeviceCount`, which initialises the driver and poisons fork."""
    if os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK") == "1":
        return device_count() > 0
    if _bad_fork:
        return False  # cudaGetDeviceCount fails in a poisoned child
    _touch_driver()
    return len(visible()) > 0


def device_count() -> int:
    """torch 2.13.0 `device_count`: NVML's count before CUDA is initialised, whatever the
    variable; `cudaGetDeviceCount` (driver touched) where NVML answers -1."""
    if not _initialized:
        counted = nvml_device_count()
        if counted >= 0:
            return counted
    if _bad_fork:
        return 0
    _touch_driver()
    return len(visible())


def is_initialized() -> bool:
    return _initialized and not _bad_fork


def mem_get_info(device=None) -> tuple[int, int]:
    lazy_init()
    physical = physical_of(device)
    used = sum(holders(physical).values())
    return total_bytes() - used, total_bytes()


def _own_on(device=None) -> int:
    if not _initialized:
        return 0
    return holders(physical_of(device)).get(os.getpid(), 0)


def get_device_name(device=None) -> str:
    """torch 2.13.0: `get_device_properties(device).name`, and get_device_properties starts with
    `_lazy_init()`: asking a device's name makes a CUDA context."""
    lazy_init()
    physical_of(device)
    return "NVIDIA H200 (simulated)"


def get_device_capability(device=None) -> tuple[int, int]:
    """torch 2.13.0: `get_device_properties(device)` (so `_lazy_init()`), then (major, minor)."""
    lazy_init()
    physical_of(device)
    return (9, 0)


def install_torch(torch) -> None:
    """Replace the parts of torch.cuda the engine and vLLM's start-up use."""
    cuda = torch.cuda
    cuda.is_available = is_available
    cuda.device_count = device_count
    cuda.is_initialized = is_initialized
    cuda.init = lazy_init
    cuda._lazy_init = lazy_init
    cuda.mem_get_info = mem_get_info
    cuda.get_device_name = get_device_name
    cuda.get_device_capability = get_device_capability
    cuda.max_memory_reserved = _own_on
    cuda.max_memory_allocated = _own_on
    cuda.memory_reserved = _own_on
    cuda.memory_allocated = _own_on
    cuda.reset_peak_memory_stats = lambda device=None: lazy_init()
    cuda.empty_cache = lambda: None
    cuda.synchronize = lambda device=None: lazy_init()


class _TorchFinder(importlib.abc.MetaPathFinder):
    """Patches torch.cuda right after `import torch` finishes."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.machinery.PathFinder.find_spec(name, path)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module):
            original(module)
            install_torch(module)

        loader.exec_module = exec_module
        return spec


def install_import_hook() -> None:
    if "torch" in sys.modules:
        install_torch(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchFinder())
