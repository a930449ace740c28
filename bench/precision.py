"""Shared by the bench scripts that run a dtype: name the hardware, measure matmul peaks, skip slow modes.

A dtype the device emulates (bfloat16 on a CPU without AVX512-BF16 or AMX runs hundreds of
times slower than float32) would make a benchmark run for hours, so each script asks here
first and skips, with the printed reason, every mode whose dtype the quick probe finds slow.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# isort: off
from engine.runtime import thread_plan  # noqa: E402

thread_plan.apply()  # before torch starts its thread pool, whose threads then wait passively
import torch  # noqa: E402
# isort: on

from engine.runtime.hardware import SLOW_RATIO, probe_device  # noqa: E402


def slow_reason(dtype: str, device: str = "cpu") -> str | None:
    """Why `dtype` is skipped on `device` (None: it runs fast enough)."""
    capability = probe_device(device)
    if not capability.is_slow(dtype):
        return None
    how = (f"{capability.ratio(dtype):.0f}x slower than float32 in the quick probe" if capability.seconds
           else "not native (no tensor cores for it)")
    return (f"{dtype} is {how} on {capability.name} ({capability.isa}, native bf16: "
            f"{'yes' if capability.native_bf16 else 'no'}); limit {SLOW_RATIO:.0f}x")


def print_hardware(device: str = "cpu") -> None:
    capability = probe_device(device)
    print(f"hardware: {capability.describe()}; torch threads {torch.get_num_threads()}")


# Large enough that the product runs at the device's sustained rate (a small probe is beaten by
# the models it is meant to bound); timed until each trial lasts at least MIN_TRIAL_S.
PEAK_SIZE = {"cpu": 2048, "cuda": 8192}
MIN_TRIAL_S = 0.2


def matmul_peak(dtype: str, device: str = "cpu", trials: int = 5) -> float:
    """Best of `trials` timings of large square `dtype` matmuls on `device`: FLOP/s (the machine
    may be shared). A dtype the quick probe finds slow is not timed at this size (minutes per
    product): its quick-probe rate is returned instead."""
    kind = device.split(":", 1)[0]
    if slow_reason(dtype, device) is not None:
        return probe_device(device).gflops(dtype) * 1e9
    n = PEAK_SIZE.get(kind, 2048)
    a = torch.randn(n, n, device=device).to(getattr(torch, dtype))  # (n, n)
    b = torch.randn(n, n, device=device).to(getattr(torch, dtype))  # (n, n)
    sync = torch.cuda.synchronize if kind == "cuda" else (lambda: None)
    torch.matmul(a, b)
    sync()
    reps = 1
    best = 0.0
    for _ in range(trials):
        while True:
            start = time.perf_counter()
            for _ in range(reps):
                torch.matmul(a, b)
            sync()
            elapsed = time.perf_counter() - start
            if elapsed >= MIN_TRIAL_S:
                break
            reps *= 2
        best = max(best, 2 * n**3 * reps / elapsed)
    return best
