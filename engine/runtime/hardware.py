"""What the device computes fast: a capability probe per device, once per process, and dtype choice.

A dtype is never assumed fast (a CPU runs bfloat16 7x faster than float32 with AMX, 470x slower
emulated); it is probed: on CUDA the compute capability (by NVML: no CUDA context), on a CPU
torch's capability and instruction-set flags plus a short matmul probe of each dtype.

`dtype: auto`: on a GPU bfloat16 with bfloat16 tensor cores (8.0+), float16 on 7.x, else
float32. On a CPU a half dtype is picked only where it is measurably faster than float32 (AMX
for it, or a one-thread linear probe at the model's shapes running at FAST_RATIO x float32's
rate): a CPU with AVX512-BF16 but no AMX runs bfloat16 at about half float32's rate. Each choice
comes with its reason (`choose_dtype`), logged and kept in the run's model plan. An explicit
dtype measured more than SLOW_RATIO times slower than float32 falls back to float32 with one
warning, unless strict: then it is a config error. Details: docs/hardware.md.
"""
from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.errors import ConfigError

logger = logging.getLogger(__name__)

DTYPES = ("float32", "bfloat16", "float16")
# An explicit dtype this many times slower than float32 is not worth running.
SLOW_RATIO = 4.0
# `auto` on a CPU without AMX for it picks a half dtype whose linear layer runs this many times
# float32's rate or more.
FAST_RATIO = 1.5
# The linear probe's shape when the model's config does not say: BERT-base's feed-forward.
DEFAULT_LINEAR = (768, 3072)
_LINEAR_ROWS = 256  # tokens of one probe product (fewer for wide layers: see linear_probe_shape)
_LINEAR_FLOPS = 2**31  # at most this many FLOPs per probe product (about 27 ms at 80 GFLOP/s)
_PROBE_SIZE = 256
_PROBE_REPEATS = 3
_PROBE_BUDGET_S = 0.04  # per dtype, after one warm-up product


@dataclass(frozen=True)
class DeviceCapability:
    """What one device computes fast. `seconds`: best time of one probe matmul per dtype (on a
    CPU: one thread's CPU time, so rates are per core; on a GPU: wall time)."""

    device: str  # "cpu", "cuda:0", "mps"
    name: str  # CPU or GPU model name
    isa: str  # CPU: get_cpu_capability() (e.g. AVX2, AVX512); CUDA: "sm_90"
    native_bf16: bool
    native_fp16: bool
    seconds: dict[str, float] = field(default_factory=dict)
    amx_bf16: bool = False  # a CPU's AMX tiles for the dtype: its half-precision matmul many times float32's
    amx_fp16: bool = False

    def ratio(self, dtype: str) -> float:
        """Probe time of `dtype` over float32's (> 1: slower than float32); 1.0 when not probed."""
        base, other = self.seconds.get("float32"), self.seconds.get(dtype)
        if not base or not other:
            return 1.0
        return other / base

    def is_slow(self, dtype: str) -> bool:
        """Whether `dtype` is not worth running here: measured more than SLOW_RATIO x float32's
        time, or, where it was not timed (a GPU in a process without a CUDA context), not native
        to the GPU's compute capability (bfloat16 before 8.0, float16 before 7.0)."""
        if dtype == "float32":
            return False
        if self.seconds.get("float32") and self.seconds.get(dtype):
            return self.ratio(dtype) > SLOW_RATIO
        if device_kind(self.device) == "cuda":
            return not (self.native_bf16 if dtype == "bfloat16" else self.native_fp16)
        return False

    def gflops(self, dtype: str) -> float:
        seconds = self.seconds.get(dtype)
        return 2 * _PROBE_SIZE**3 / seconds / 1e9 if seconds else float("nan")

    def describe(self) -> str:
        peaks = ", ".join(f"{d} {self.gflops(d):.1f}" for d in DTYPES if d in self.seconds)
        amx = [d for d, has in (("bf16", self.amx_bf16), ("fp16", self.amx_fp16)) if has]
        return (f"{self.device} ({self.name}, {self.isa}; native bf16: {'yes' if self.native_bf16 else 'no'}, "
                f"native fp16: {'yes' if self.native_fp16 else 'no'}, AMX: {', '.join(amx) or 'no'}); "
                f"quick matmul probe, GFLOP/s: {peaks}")


def device_kind(device: str) -> str:
    """`cuda:1` -> `cuda`."""
    return device.split(":", 1)[0]


def resolve_device(device: str = "auto") -> str:
    """`auto` -> `cuda` when a CUDA device is visible, else `cpu`; anything else unchanged."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _best_seconds(product: Callable[[], object], device: str) -> float:
    """Best time of `product()` over a few repeats after one warm-up (kernel selection, first touch
    of memory), within _PROBE_BUDGET_S."""
    import torch

    on_gpu = device_kind(device) == "cuda"
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    # On a CPU: one thread, timed in this thread's CPU time. On a shared machine wall time
    # mostly measures the other processes, and several threads spin while they wait for each
    # other, which inflates every dtype alike and flattens the ratios the decision rests on.
    clock = time.perf_counter if on_gpu else time.thread_time
    threads = torch.get_num_threads()
    if not on_gpu:
        torch.set_num_threads(1)
    try:
        with torch.inference_mode():
            product()
            sync()
            best = float("inf")
            started = time.perf_counter()
            for _ in range(_PROBE_REPEATS):
                t0 = clock()
                product()
                sync()
                best = min(best, clock() - t0)
                if time.perf_counter() - started > _PROBE_BUDGET_S:
                    break
    finally:
        if not on_gpu:
            torch.set_num_threads(threads)
    return max(best, 1e-9)


def _time_matmul(dtype_name: str, device: str) -> float:
    import torch

    dtype = getattr(torch, dtype_name)
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(_PROBE_SIZE, _PROBE_SIZE, generator=gen).to(device=device, dtype=dtype)  # (N, N)
    b = torch.randn(_PROBE_SIZE, _PROBE_SIZE, generator=gen).to(device=device, dtype=dtype)  # (N, N)
    return _best_seconds(lambda: torch.matmul(a, b), device)


def _cpu_flags() -> dict[str, object]:
    import torch

    try:  # private but stable since torch 2.3; absent flags simply read as "not native"
        return dict(torch._C._cpu._get_cpu_capability())
    except Exception:  # noqa: BLE001 - an older torch: rely on the probe alone
        return {}


def _probe(device: str) -> DeviceCapability:
    import torch

    kind = device_kind(device)
    if kind == "cuda":
        from engine.runtime.cuda import nvml_capability

        known = nvml_capability(device)
        if known is None:  # no pynvml, or NVML failing: torch answers, in a child process (see cuda.device_facts)
            from engine.runtime.cuda import device_facts

            facts = device_facts(device)
            if facts is None:
                raise ConfigError(f"cannot read the compute capability of {device}: neither NVML nor torch answered "
                                  "(see the warning above); check `nvidia-smi`, or set the model's dtype explicitly")
            name, major, minor, _total = facts
        else:
            name, major, minor = known
        # Timing needs a CUDA context in this process. A process that only plans (the driver,
        # whose vLLM models run in worker processes) must not make one: it would hold device
        # memory for the whole run. The capability alone decides `auto` on a GPU.
        seconds = {d: _time_matmul(d, device) for d in DTYPES} if torch.cuda.is_initialized() else {}
        return DeviceCapability(device, name, f"sm_{major}{minor}", native_bf16=major >= 8, native_fp16=major >= 7,
                                seconds=seconds)
    if kind == "cpu":
        flags = _cpu_flags()
        seconds = {d: _time_matmul(d, "cpu") for d in DTYPES}
        return DeviceCapability(
            "cpu", str(flags.get("cpu_name", "unknown CPU")), torch.backends.cpu.get_cpu_capability(),
            native_bf16=bool(flags.get("amx_bf16") or flags.get("avx512_bf16")),
            native_fp16=bool(flags.get("amx_fp16") or flags.get("avx512_fp16")),
            seconds=seconds, amx_bf16=bool(flags.get("amx_bf16")), amx_fp16=bool(flags.get("amx_fp16")),
        )
    # mps and others: not probed; half precision is their usual fast path but not assumed.
    return DeviceCapability(device, kind, kind, native_bf16=False, native_fp16=False)


_lock = threading.Lock()


@functools.lru_cache(maxsize=None)
def _cached_probe(device: str) -> DeviceCapability:
    capability = _probe(device)
    logger.info("device probe: %s", capability.describe())
    return capability


def probe_device(device: str = "auto") -> DeviceCapability:
    """The capability of `device` (`auto` resolved first), measured once per process."""
    device = resolve_device(device)
    if device == "cuda":
        device = "cuda:0"
    with _lock:
        return _cached_probe(device)


@dataclass(frozen=True)
class DtypeChoice:
    """The dtype a model loads in, and why (for the log and the run's model plan)."""

    dtype: str
    reason: str


def linear_probe_shape(features: tuple[int, int] | None = None) -> tuple[int, int, int]:
    """(rows, in, out) of the linear probe for a layer `in -> out` (DEFAULT_LINEAR when None):
    _LINEAR_ROWS tokens, fewer (at least 16) where the layer is so wide that the product would
    pass _LINEAR_FLOPS."""
    n_in, n_out = features or DEFAULT_LINEAR
    rows = max(16, min(_LINEAR_ROWS, _LINEAR_FLOPS // (2 * n_in * n_out) // 8 * 8))
    return rows, n_in, n_out


def _time_linear(dtype_name: str, shape: tuple[int, int, int]) -> float:
    """Best CPU seconds of one `linear(x, W, b)` of `shape` in one thread (oneDNN builds its kernel
    for the shape in the warm-up)."""
    import torch

    rows, n_in, n_out = shape
    dtype = getattr(torch, dtype_name)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(rows, n_in, generator=gen).to(dtype)  # (T, in)
    weight = torch.randn(n_out, n_in, generator=gen).to(dtype)  # (out, in)
    bias = torch.randn(n_out, generator=gen).to(dtype)  # (out,)
    return _best_seconds(lambda: torch.nn.functional.linear(x, weight, bias), "cpu")  # (T, out)


@functools.lru_cache(maxsize=None)
def linear_seconds(dtype_name: str, shape: tuple[int, int, int]) -> float:
    """CPU seconds of one linear product of `shape` in `dtype_name` on this CPU, measured once per process."""
    with _lock:
        return _time_linear(dtype_name, shape)


def choose_auto(capability: DeviceCapability, features: tuple[int, int] | None = None) -> DtypeChoice:
    """What `auto` means on this device, and why (the rule is in the module docstring).

    features: the model's linear layer (hidden -> intermediate) the CPU's kernel-rate probe is
    timed at; None: DEFAULT_LINEAR."""
    if device_kind(capability.device) == "cuda":
        for dtype, native, since in (("bfloat16", capability.native_bf16, "8.0"), ("float16", capability.native_fp16, "7.0")):
            if native:
                return DtypeChoice(dtype, f"{capability.name} ({capability.isa}) has {dtype} tensor cores (compute capability {since}+)")
        return DtypeChoice("float32", f"{capability.name} ({capability.isa}) has no half-precision tensor cores")
    if device_kind(capability.device) != "cpu":
        return DtypeChoice("float32", f"half precision is not probed on {capability.device}")
    reasons = []
    for dtype, native, amx in (("bfloat16", capability.native_bf16, capability.amx_bf16),
                               ("float16", capability.native_fp16, capability.amx_fp16)):
        if not native:
            reasons.append(f"{dtype} not native")
        elif capability.is_slow(dtype):
            reasons.append(f"{dtype} emulated ({capability.ratio(dtype):.0f}x slower than float32)")
        elif amx:
            return DtypeChoice(dtype, "; ".join([*reasons, f"AMX for {dtype} on {capability.name}"]))
        else:
            shape = linear_probe_shape(features)
            speed = linear_seconds("float32", shape) / linear_seconds(dtype, shape)
            measured = f"{dtype} linear at {speed:.2f}x float32's rate ({shape[0]}x{shape[1]}->{shape[2]}, one thread)"
            if speed >= FAST_RATIO:
                return DtypeChoice(dtype, "; ".join([*reasons, f"{measured}, no AMX"]))
            reasons.append(f"{measured}, under {FAST_RATIO:g}x, no AMX")
    return DtypeChoice("float32", "; ".join(reasons) + f" on {capability.name} ({capability.isa})")


def auto_dtype(capability: DeviceCapability, features: tuple[int, int] | None = None) -> str:
    """The dtype `auto` means on this device (see `choose_auto`)."""
    return choose_auto(capability, features).dtype


def _slow_message(requested: str, capability: DeviceCapability) -> str:
    how = (f"runs {capability.ratio(requested):.1f}x slower than float32" if capability.seconds
           else "is not native (no tensor cores for it)")
    return (f"dtype {requested} {how} on {capability.device} "
            f"({capability.name}, {capability.isa}, native bf16: {'yes' if capability.native_bf16 else 'no'})")


_warned: set[tuple[str, str]] = set()
_told: set[tuple[str, tuple[int, int] | None]] = set()


def choose_dtype(requested: str, device: str = "auto", strict: bool = False, model: str | None = None) -> DtypeChoice:
    """The dtype to load a model in and why: `auto` by the probe's rule, an explicit dtype if the
    device runs it fast. model: the configured name, whose config.json gives the shapes the CPU's
    kernel-rate probe is timed at (None: DEFAULT_LINEAR).

    An explicit dtype more than SLOW_RATIO x slower than float32 gives float32 and one warning
    per process and dtype; with `strict` it raises ConfigError instead.
    """
    if requested not in ("auto", *DTYPES):
        raise ConfigError(f"dtype: got {requested!r}; allowed: auto, {', '.join(DTYPES)}")
    capability = probe_device(device)
    if requested == "auto":
        features = None
        if model is not None and device_kind(capability.device) == "cpu":
            from engine.runtime.model_config import linear_features

            features = linear_features(model)
        choice = choose_auto(capability, features)
        if (capability.device, features) not in _told:
            _told.add((capability.device, features))
            logger.info("dtype auto on %s: %s (%s)", capability.device, choice.dtype, choice.reason)
        return choice
    if not capability.is_slow(requested):
        return DtypeChoice(requested, "set in the config")
    message = _slow_message(requested, capability)
    if strict:
        raise ConfigError(f"dtype: {message}; allowed with strict_dtype: true: auto, float32, or a dtype "
                          "this device runs fast (or set strict_dtype: false to fall back to float32)")
    key = (capability.device, requested)
    if key not in _warned:
        _warned.add(key)
        logger.warning("%s: using float32 instead (set strict_dtype: true to refuse the run instead, "
                       "or dtype: auto)", message)
    return DtypeChoice("float32", f"{message}: float32 instead")


def resolve_dtype(requested: str, device: str = "auto", strict: bool = False, model: str | None = None) -> str:
    """The dtype to load a model in (`choose_dtype` without the reason)."""
    return choose_dtype(requested, device, strict, model).dtype


def check_dtype(requested: str, device: str, strict: bool, where: str, model: str | None = None) -> str:
    """Config-time check: the dtype a model will load in; ConfigError naming `where` if strict refuses it."""
    try:
        return resolve_dtype(requested, device, strict, model)
    except ConfigError as exc:
        message = str(exc).removeprefix("dtype: ")
        raise ConfigError(f"{where}: {message}") from None
