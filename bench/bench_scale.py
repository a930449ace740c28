"""Scale benchmark of the lexical stage: rows/s by worker count, and peak memory vs input size.

Each measurement runs in its own subprocess (a fresh Ray instance with N CPUs, or the local
executor): a small warm-up run first (Ray workers start and import the metrics once), then the
measured run of a synthetic input from bench/make_synthetic.py. A sampler thread follows the
resident memory of the driver and of every process under it (raylet, Ray workers).

    python bench/bench_scale.py                       # 12,500 and 125,000 samples, 1 and 2 workers
    python bench/bench_scale.py --samples 2000 --scale 10 --workers 1 2 --part-size 250

Printed: samples/s of the score stage per worker count (and the speed-up), then peak RSS of the
driver, of the largest worker and of the whole process tree at N and scale x N samples, with
the ratio; the check is that memory at 10x the input stays within 1.5x (streamed parts).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MEMORY_BOUND = 1.5


# ----- child: one measured run --------------------------------------------------------------
class TreeSampler(threading.Thread):
    """Peak RSS of this process, of its largest descendant, and of the tree, every `interval` s."""

    def __init__(self, interval: float = 0.1):
        super().__init__(daemon=True)
        import psutil

        self.me = psutil.Process()
        self.interval = interval
        self.peak_driver = 0
        self.peak_worker = 0
        self.peak_tree = 0
        self.stop = threading.Event()

    def run(self) -> None:
        import psutil

        while not self.stop.is_set():
            total = 0
            try:
                driver = self.me.memory_info().rss
                total += driver
                self.peak_driver = max(self.peak_driver, driver)
                for child in self.me.children(recursive=True):
                    try:
                        rss = child.memory_info().rss
                        title = " ".join(child.cmdline())
                    except (psutil.NoSuchProcess, psutil.AccessDenied):
                        continue
                    total += rss
                    if "ray::" in title or "default_worker" in title:  # a Ray worker, not raylet/GCS
                        self.peak_worker = max(self.peak_worker, rss)
            except psutil.Error:
                pass
            self.peak_tree = max(self.peak_tree, total)
            self.stop.wait(self.interval)


def write_config(folder: Path, input_path: Path, part_size: int) -> Path:
    path = folder / f"config-{input_path.stem}-{part_size}.yaml"
    path.write_text(
        f"name: bench-scale\ninput: {input_path}\npart_size: {part_size}\nstages: [score]\n"
        "score:\n  scorers:\n    - kind: lexical\n"
    )
    return path


def child(args: argparse.Namespace) -> None:
    os.environ["BABELSCORE_NO_PROGRESS"] = "1"
    import logging

    logging.basicConfig(level=logging.WARNING)
    from engine import runner
    from engine.config import load_config

    sampler = TreeSampler()
    sampler.start()
    if args.executor == "ray":
        import ray

        ray.init(num_cpus=args.workers[0], include_dashboard=False, logging_level="WARNING",
                 object_store_memory=256 * 1024 * 1024)
    stage_seconds: dict[str, float] = {}
    original = runner.run_part_stage

    def timed(run: Any, config: Any, stage: str, executor: Any) -> None:
        start = time.perf_counter()
        original(run, config, stage, executor)
        stage_seconds[stage] = time.perf_counter() - start

    runner.run_part_stage = timed
    work = Path(args.work)
    warm = runner.execute_run(load_config(args.warmup_config), str(work / f"warm-{os.getpid()}"), executor_name=args.executor)
    del warm
    summary = runner.execute_run(load_config(args.config), str(work / f"run-{os.getpid()}"), executor_name=args.executor)
    sampler.stop.set()
    sampler.join()
    ru_driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    result = {
        "samples": summary.counts["valid_rows"],
        "score_rows": summary.counts["score_rows"],
        "score_seconds": stage_seconds["score"],
        "peak_driver": max(ru_driver, sampler.peak_driver),
        "peak_worker": sampler.peak_worker,
        "peak_tree": sampler.peak_tree,
    }
    if args.executor == "ray":
        import ray

        ray.shutdown()
    print("RESULT " + json.dumps(result))


# ----- parent: inputs, subprocesses, table ----------------------------------------------------
def measure(executor: str, workers: int, config: Path, warmup: Path, work: Path) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", "--executor", executor, "--workers", str(workers),
               "--config", str(config), "--warmup-config", str(warmup), "--work", str(work)]
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"measurement failed ({' '.join(command)}):\n{done.stderr[-4000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def mib(n: float) -> str:
    return f"{n / 2**20:8.1f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=12_500, help="the small input (default 12,500)")
    parser.add_argument("--scale", type=int, default=10, help="the large input is this many times larger")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="Ray CPU counts to compare")
    parser.add_argument("--part-size", type=int, default=250, help="samples per part")
    parser.add_argument("--executor", choices=["ray", "local"], default="ray", help="executor of the memory runs")
    parser.add_argument("--work", default=None, help="folder for inputs and runs (default: a temp folder)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    parser.add_argument("--warmup-config", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    sys.path.insert(0, str(HERE))
    from make_synthetic import write_synthetic

    work = Path(args.work or tempfile.mkdtemp(prefix="babelscore-bench-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    small_n, large_n = args.samples, args.samples * args.scale
    inputs = {n: work / f"synthetic-{n}.parquet" for n in (200, small_n, large_n)}
    for n, path in inputs.items():
        if not path.exists():
            write_synthetic(path, n)
    configs = {n: write_config(work, path, args.part_size) for n, path in inputs.items()}
    # Small parts, so that every worker gets one and has imported the metrics before timing.
    warmup = write_config(work, inputs[200], 10)
    print(f"lexical stage (bleu, rougeL, meteor), part_size {args.part_size}, work folder {work}")
    print(f"machine: {os.cpu_count()} CPU(s)\n")

    print(f"throughput of the score stage, {small_n} samples (after a warm-up run); speed-up vs local")
    print(f"{'executor':>16} {'seconds':>9} {'samples/s':>10} {'score rows/s':>13} {'speed-up':>9}")
    base = None
    for executor, workers in [("local", 1)] + [("ray", w) for w in args.workers]:
        r = measure(executor, workers, configs[small_n], warmup, work)
        rate = r["samples"] / r["score_seconds"]
        base = base or rate
        label = "local, 1 process" if executor == "local" else f"ray, {workers} worker{'s' if workers > 1 else ''}"
        print(f"{label:>16} {r['score_seconds']:>9.1f} {rate:>10.1f} {r['score_rows'] / r['score_seconds']:>13.1f} {rate / base:>8.2f}x")

    workers = max(args.workers) if args.executor == "ray" else 1
    print(f"\npeak resident memory, {args.executor} executor, {workers} worker(s)")
    small = measure(args.executor, workers, configs[small_n], warmup, work)
    large = measure(args.executor, workers, configs[large_n], warmup, work)
    print(f"{'':>14} {small_n:>12} {large_n:>12} {'ratio':>7}")
    worst = 0.0
    for key, label in (("peak_driver", "driver"), ("peak_worker", "largest worker"), ("peak_tree", "process tree")):
        if not small[key]:
            continue  # no worker processes under the local executor
        ratio = large[key] / small[key]
        if key != "peak_tree" or args.executor == "local":
            worst = max(worst, ratio)
        print(f"{label:>14} {mib(small[key]):>12} {mib(large[key]):>12} {ratio:>6.2f}x")
    verdict = "OK" if worst <= MEMORY_BOUND else "OVER"
    print(f"\nmemory at {args.scale}x the input: worst driver/worker ratio {worst:.2f}x (bound {MEMORY_BOUND}x): {verdict}")
    print(f"score-stage rate at {large_n} samples: {large['samples'] / large['score_seconds']:.1f} samples/s")


if __name__ == "__main__":
    main()
