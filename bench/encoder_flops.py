"""Shared by the bench scripts that rate an encoder: FLOPs it executed and the peak of its own kernel.

Executed FLOPs count what the kernels run, not what the text needs: every linear layer over
every token of every row (padding and the free tail of a packed row included) and attention
over each row's whole width (a block-diagonal or padding mask hides pairs, the kernel still
computes them). The peak is the rate of the model's own largest linear layer (the same module:
stock nn.Linear or the prepacked oneDNN one, the same dtype, this process's threads), timed on
the row shape the model ran and on a full `batch_tokens` batch, the better of the two, so that
a model whose batches are small is rated against what larger ones reach. Each rate is also
taken per CPU second of this process (its threads' CPU time), which on a shared machine leaves
out the time the kernels waited for a core: the model's `forward_cpu_s` against the layer's.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# isort: off
from engine.runtime import thread_plan  # noqa: E402

thread_plan.apply()  # before torch starts its thread pool, whose threads then wait passively
import torch  # noqa: E402
# isort: on


def executed_flops(runtime: Any, st: dict[str, float], layers: int) -> float:
    """FLOPs of the forward passes counted in `st` (the runtime's stats, or a difference of two):
    Q, K, V, output and the two feed-forward products over every executed token, Q K^T and the
    weighted sum over every executed (query, key) pair, all heads, for each of `layers` layers."""
    cfg = runtime.model.config
    d, ff = cfg.hidden_size, cfg.intermediate_size
    linear = 2 * (4 * d * d + 2 * d * ff) * layers * st["padded_tokens"]
    attention = 2 * 2 * d * layers * st["attention_pairs"]
    return float(linear + attention)


def _largest_linear(model: Any) -> Any:
    best, size = None, 0
    for module in model.modules():
        n_in, n_out = getattr(module, "in_features", None), getattr(module, "out_features", None)
        if isinstance(n_in, int) and isinstance(n_out, int) and n_in * n_out > size:
            best, size = module, n_in * n_out
    if best is None:
        raise ValueError(f"{type(model).__name__} has no linear layer to time")
    return best


def _time_linear(module: Any, rows: int, width: int, dtype: torch.dtype, device: str, seconds: float) -> tuple[float, float]:
    """(best FLOP/s by wall time, best FLOP per CPU second) of `module` on a (rows, width) batch."""
    x = torch.randn(rows, width, module.in_features, device=device).to(dtype)  # (B, T, D_in)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    flops = 2 * rows * width * module.in_features * module.out_features
    with torch.inference_mode():
        module(x)
        sync()
        best, best_cpu, spent, reps = 0.0, 0.0, 0.0, 0
        while spent < seconds or reps < 3:
            start, cpu = time.perf_counter(), time.process_time()
            module(x)
            sync()
            elapsed = time.perf_counter() - start
            spent += elapsed
            reps += 1
            best = max(best, flops / elapsed)
            best_cpu = max(best_cpu, flops / max(time.process_time() - cpu, 1e-9))
    return best, best_cpu


def kernel_peak(runtime: Any, st: dict[str, float], batch_tokens: int, seconds: float = 0.15) -> tuple[float, str, float]:
    """(FLOP/s, what was timed, FLOP per CPU second): the model's largest linear layer on the mean
    row shape of the batches in `st` and on a `batch_tokens` batch of that width, the better of the two."""
    module = _largest_linear(runtime.model)
    dtype = next(runtime.model.parameters()).dtype
    batches = max(1, int(st["batches"]))
    tokens = max(1, int(st["padded_tokens"]) // batches)
    width = max(1, int(st["attention_pairs"]) // max(1, int(st["padded_tokens"])))  # sum B*T*T / sum B*T
    rows = max(1, tokens // width)
    own = _time_linear(module, rows, width, dtype, runtime.device, seconds)
    full_rows = max(1, batch_tokens // width)
    full = _time_linear(module, full_rows, width, dtype, runtime.device, seconds) if full_rows != rows else own
    label = (f"its {module.in_features}x{module.out_features} {runtime.linear_kernels} linear on "
             f"{rows}x{width} and {full_rows}x{width} tokens")
    return max(own[0], full[0]), label, max(own[1], full[1])


def cpu_share(flops: float, st: dict[str, float], cpu_peak: float) -> str:
    """`N% by CPU seconds`: the executed FLOPs per CPU second of the forward passes in `st`
    against the layer's best FLOP per CPU second."""
    rate = flops / max(st.get("forward_cpu_s", 0.0), 1e-9)
    pct = 100 * rate / cpu_peak if cpu_peak > 0 else float("nan")
    return f"{pct:.0f}% by CPU seconds ({rate / 1e9:.1f} of {cpu_peak / 1e9:.1f} GFLOP per CPU-second)"


def share(flops_per_s: float, peak: float) -> str:
    """`N% of its kernel peak`, flagged when above (the load changed between the two timings)."""
    pct = 100 * flops_per_s / peak if peak > 0 else float("nan")
    flag = " (above: the load changed between the model's run and the peak's)" if pct > 100 else ""
    return f"{pct:.0f}% of its kernel peak{flag}"
