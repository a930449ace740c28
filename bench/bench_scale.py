"""Scale benchmark: rows/s by worker count, and peak memory vs input size for a lexical and a
neural scorer, through the score, calibrate, summary and report steps.

    python bench/bench_scale.py                       # 12,500 and 125,000 samples, both scorers
    python bench/bench_scale.py --samples 2000 --scale 10 --scorers lexical --workers 1 2
    python bench/bench_scale.py --generators          # driver memory with two generators + an encoder

Printed: samples/s of the lexical score stage per worker count (and the speed-up; skip with
--no-throughput), then per scorer the peak RSS of the driver (whole run and per step), of the
largest worker and of the whole process tree at N and scale x N samples, with the ratio; the
check is that driver and worker memory at 10x the input stays within 1.5x (with --generators, the
driver's within 1.2x of the encoder alone). How each measurement runs, and one run's figures:
docs/cluster.md, "Memory and size".
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this tree's `engine`, in the measured children too
MEMORY_BOUND = 1.5
GENERATOR_BOUND = 1.2


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
        self.peak_worker_any = 0  # the largest descendant of any kind (e.g. a model worker process)
        self.phase = "start"
        self.peak_phase: dict[str, int] = {}  # driver peak per step
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(self.interval)

    def sample(self) -> None:
        """One reading of the driver and its children (also taken at each step's start and end, so a
        step shorter than the interval still has its peak)."""
        import psutil

        total = 0
        try:
            driver = self.me.memory_info().rss
            total += driver
            self.peak_driver = max(self.peak_driver, driver)
            self.peak_phase[self.phase] = max(self.peak_phase.get(self.phase, 0), driver)
            for child in self.me.children(recursive=True):
                try:
                    rss = child.memory_info().rss
                    title = " ".join(child.cmdline())
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
                total += rss
                self.peak_worker_any = max(self.peak_worker_any, rss)
                if "ray::" in title or "default_worker" in title:  # a Ray worker, not raylet/GCS
                    self.peak_worker = max(self.peak_worker, rss)
        except psutil.Error:
            pass
        self.peak_tree = max(self.peak_tree, total)


def write_config(folder: Path, input_path: Path, part_size: int, scorer: str, model_dir: Path | None) -> Path:
    path = folder / f"config-{scorer}-{input_path.stem}-{part_size}.yaml"
    if scorer == "lexical":
        entry = "    - kind: lexical\n"
    else:
        entry = f"    - kind: embedding\n      model: {model_dir}\n      contexts: [none]\n      batch_tokens: 8192\n"
    path.write_text(
        f"name: bench-scale\ninput: {input_path}\npart_size: {part_size}\nstages: [score, calibrate]\n"
        f"score:\n  scorers:\n{entry}calibrate:\n  bootstrap: 20\n"
    )
    return path


def write_generator_config(folder: Path, input_path: Path, model_dir: Path, generators: list[Path], backend: str) -> Path:
    """Stages [generate, score] with the given generators, or [score] alone when there are none."""
    name = "with-generators" if generators else "encoder-alone"
    lines = [f"name: bench-scale-{name}", f"input: {input_path}", "part_size: 100",
             f"stages: [{'generate, ' if generators else ''}score]"]
    if generators:
        lines.append("generate:\n  generators:")
        for i, g in enumerate(generators):
            lines.append(f"    - {{model: {g}, card: starcoder2, name: gen-{i}, backend: {backend}, max_new_tokens: 8, "
                         "dtype: float32, max_model_len: 512, enforce_eager: true, gpu_memory_utilization: 0.2}")
    lines.append(f"score:\n  scorers:\n    - kind: embedding\n      model: {model_dir}\n      contexts: [none]\n"
                 "      batch_tokens: 8192\n      dtype: float32")
    path = folder / f"config-{name}.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def generator_memory(work: Path, n_samples: int) -> None:
    """Driver peak RSS: two generators + the encoder vs the encoder alone (see the module docstring)."""
    import importlib.util

    from engine.testing.tiny_fim import build_tiny_fim_model

    sys.path.insert(0, str(HERE))
    from make_synthetic import write_synthetic

    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    backend = "vllm" if importlib.util.find_spec("vllm") is not None else "transformers"
    input_path = work / f"synthetic-gen-{n_samples}.parquet"
    if not input_path.exists():
        write_synthetic(input_path, n_samples, generators=1)
    model_dir = build_tiny_encoder(work / "tiny-bert")
    generators = []
    for seed in (0, 1):
        target = work / f"tiny-fim-{seed}"
        if not (target / "config.json").exists():
            build_tiny_fim_model(target, "starcoder2", seed=seed)
        generators.append(target)
    warmup = write_config(work, input_path, 10, "lexical", None)
    alone = measure("local", 1, write_generator_config(work, input_path, model_dir, [], backend), warmup, work)
    both = measure("local", 1, write_generator_config(work, input_path, model_dir, generators, backend), warmup, work)
    ratio = both["peak_driver"] / alone["peak_driver"]
    print(f"driver peak RSS, local executor, {n_samples} files; generators on {backend}")
    print(f"{'encoder alone':>32} {mib(alone['peak_driver']):>12}")
    print(f"{'two generators + encoder':>32} {mib(both['peak_driver']):>12}  ({both['score_rows']} score rows)")
    print(f"{'ratio':>32} {ratio:>11.2f}x (bound {GENERATOR_BOUND}x): {'OK' if ratio <= GENERATOR_BOUND else 'OVER'}")
    print(f"{'largest child process':>32} {mib(both['peak_worker_any']):>12}  (the generators' worker processes)")


def build_tiny_encoder(directory: Path) -> Path:
    """A tiny random BERT with a fast WordPiece tokenizer, saved with save_pretrained."""
    if (directory / "config.json").exists():
        return directory
    import torch
    import transformers as tf

    sys.path.insert(0, str(HERE))
    from make_synthetic import WORDS

    directory.mkdir(parents=True, exist_ok=True)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens += list("abcdefghijklmnopqrstuvwxyz0123456789.,;:(){}[]<>=+-*/_") + [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"]
    tokens += sorted({w.lower() for words in WORDS.values() for w in words})
    vocab = directory / "vocab.txt"
    vocab.write_text("\n".join(dict.fromkeys(tokens)) + "\n", encoding="utf-8")
    tokenizer = tf.BertTokenizerFast(vocab_file=str(vocab), model_max_length=512)
    torch.manual_seed(0)
    config = tf.BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=512)
    tokenizer.save_pretrained(str(directory))
    tf.BertModel(config).eval().save_pretrained(str(directory))
    return directory


def child(args: argparse.Namespace) -> None:
    os.environ["BABELSCORE_NO_PROGRESS"] = "1"
    import logging

    logging.basicConfig(level=logging.WARNING)
    from engine import runner, throughput
    from engine.config import load_config

    sampler = TreeSampler()
    sampler.start()
    if args.executor == "ray":
        import ray

        ray.init(num_cpus=args.workers[0], include_dashboard=False, logging_level="WARNING",
                 object_store_memory=256 * 1024 * 1024)
    from engine.report.build import write_report
    from engine.report.summary import run_summary
    from engine.stages.plan import reopen_run

    stage_seconds: dict[str, float] = {}
    original_timed = throughput.Recorder.timed

    @contextmanager
    def timed(recorder: Any, step: str) -> Iterator[None]:
        # Every driver-side step of a run goes through Recorder.timed ("stage:score", "calibrate"):
        # hooking it names the sampler's phase without depending on the runner's internals.
        name = step.split(":", 1)[-1]
        sampler.phase = name
        sampler.sample()
        start = time.perf_counter()
        with original_timed(recorder, step):
            yield
        sampler.sample()
        stage_seconds[name] = stage_seconds.get(name, 0.0) + time.perf_counter() - start

    throughput.Recorder.timed = timed  # type: ignore[method-assign]
    work = Path(args.work)
    warm = runner.execute_run(load_config(args.warmup_config), str(work / f"warm-{os.getpid()}"), executor_name=args.executor)
    del warm
    sampler.peak_phase.clear()  # the steps of the measured run only
    stage_seconds.clear()
    sampler.phase = "prepare"
    summary = runner.execute_run(load_config(args.config), str(work / f"run-{os.getpid()}"), executor_name=args.executor)
    sampler.phase = "summary"
    start = time.perf_counter()
    text = run_summary(reopen_run(summary.run_dir))
    stage_seconds["summary"] = time.perf_counter() - start
    time.sleep(0.3)  # one more sample of the summary step
    sampler.phase = "report"
    start = time.perf_counter()
    write_report(reopen_run(summary.run_dir))
    stage_seconds["report"] = time.perf_counter() - start
    time.sleep(0.3)
    sampler.stop.set()
    sampler.join()
    ru_driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    result = {
        "samples": summary.counts["valid_rows"],
        "score_rows": summary.counts["score_rows"],
        "seconds": stage_seconds,
        "peak_driver": max(ru_driver, sampler.peak_driver),
        "peak_phase": sampler.peak_phase,
        "peak_worker": sampler.peak_worker,
        "peak_tree": sampler.peak_tree,
        "peak_worker_any": sampler.peak_worker_any,
        "summary_lines": len(text.splitlines()),
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


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def scaling_limits(n_parts: int, workers: int) -> list[str]:
    """Why the worker table cannot show a speed-up this time, where that follows from its sizes."""
    reasons = []
    if n_parts < 2 * workers:
        reasons.append(f"{n_parts} part(s) for {workers} workers: a part is the unit of work, so at most "
                       f"{min(n_parts, workers)} worker(s) compute at once and the step ends with the slowest part; use "
                       f"--samples >= {2 * workers} x --part-size for a speed-up figure")
    cpus = os.cpu_count() or 1
    if workers >= cpus:
        reasons.append(f"{workers} workers on {cpus} CPU(s): the driver and raylet need CPU time too, so the "
                       f"workers cannot all run at full speed")
    return reasons


def mib(n: float) -> str:
    return f"{n / 2**20:8.1f} MiB"


def memory_table(scorer: str, small_n: int, large_n: int, small: dict[str, Any], large: dict[str, Any], executor: str) -> float:
    """Print one scorer's RSS table; returns the worst driver / worker ratio."""
    rows = [("peak_driver", "driver, whole run", small["peak_driver"], large["peak_driver"])]
    for phase in ("score", "calibrate", "summary", "report"):
        rows.append((phase, f"driver, {phase}", small["peak_phase"].get(phase, 0), large["peak_phase"].get(phase, 0)))
    rows.append(("peak_worker", "largest worker", small["peak_worker"], large["peak_worker"]))
    rows.append(("peak_tree", "process tree", small["peak_tree"], large["peak_tree"]))
    print(f"{'':>20} {small_n:>12} {large_n:>12} {'ratio':>7}")
    worst = 0.0
    for key, label, a, b in rows:
        if not a:
            continue  # no worker processes under the local executor
        ratio = b / a
        if key != "peak_tree" or executor == "local":
            worst = max(worst, ratio)
        print(f"{label:>20} {mib(a):>12} {mib(b):>12} {ratio:>6.2f}x")
    steps = ", ".join(f"{k} {large['seconds'].get(k, 0):.1f} s" for k in ("score", "calibrate", "summary", "report"))
    print(f"{'':>20} time at {large_n} samples: {steps}; {large['score_rows']} score rows")
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=12_500, help="the small input (default 12,500)")
    parser.add_argument("--scale", type=int, default=10, help="the large input is this many times larger")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="Ray CPU counts to compare")
    parser.add_argument("--part-size", type=int, default=250, help="samples per part")
    parser.add_argument("--executor", choices=["ray", "local"], default="ray", help="executor of the memory runs")
    parser.add_argument("--scorers", nargs="+", choices=["lexical", "neural"], default=["lexical", "neural"],
                        help="scorers whose memory is measured")
    parser.add_argument("--neural-samples", type=int, default=None,
                        help="small input of the neural runs (default: --samples); the large one is scale x this")
    parser.add_argument("--no-throughput", action="store_true", help="skip the throughput table")
    parser.add_argument("--generators", action="store_true",
                        help="only the driver-memory check: two generators + an encoder vs the encoder alone")
    parser.add_argument("--generator-samples", type=int, default=200, help="files of the --generators runs (default 200)")
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
    if args.generators:
        generator_memory(work, args.generator_samples)
        return
    sizes = {"lexical": args.samples, "neural": args.neural_samples or args.samples}
    inputs: dict[int, Path] = {}
    for n in {200, *sizes.values(), *(v * args.scale for v in sizes.values())}:
        inputs[n] = work / f"synthetic-{n}.parquet"
        if not inputs[n].exists():
            write_synthetic(inputs[n], n)
    model_dir = build_tiny_encoder(work / "tiny-bert") if "neural" in args.scorers else None
    print(f"scorers: lexical (bleu, rougeL, meteor); neural (bertscore with a tiny random BERT, {model_dir})")
    print(f"stages [score, calibrate] then the console summary and the report; part_size {args.part_size}; work folder {work}")
    print(f"machine: {os.cpu_count()} CPU(s), load average {load_average()} (1, 5, 15 min) at the start\n")

    if not args.no_throughput:
        configs = {n: write_config(work, inputs[n], args.part_size, "lexical", None) for n in (args.samples,)}
        warmup = write_config(work, inputs[200], 10, "lexical", None)
        small_n = args.samples
        n_parts = -(-small_n // args.part_size)
        print(f"throughput of the lexical score stage, {small_n} samples in {n_parts} part(s) of {args.part_size} "
              f"(after a warm-up run); speed-up vs local")
        print("seconds: the driver's wall time of the score step (parts scheduled, computed, sent back and "
              f"committed); the driver, raylet and workers share the machine's {os.cpu_count()} CPU(s)")
        print(f"{'executor':>16} {'seconds':>9} {'samples/s':>10} {'score rows/s':>13} {'speed-up':>9}  load average")
        base = None
        for executor, workers in [("local", 1)] + [("ray", w) for w in args.workers]:
            r = measure(executor, workers, configs[small_n], warmup, work)
            seconds = r["seconds"]["score"]
            rate = r["samples"] / seconds
            base = base or rate
            label = "local, 1 process" if executor == "local" else f"ray, {workers} worker{'s' if workers > 1 else ''}"
            print(f"{label:>16} {seconds:>9.1f} {rate:>10.1f} {r['score_rows'] / seconds:>13.1f} {rate / base:>8.2f}x"
                  f"  {load_average()}")
        for reason in scaling_limits(n_parts, max(args.workers)):
            print(f"note: {reason}")
        print()

    workers = max(args.workers) if args.executor == "ray" else 1
    worst = 0.0
    for scorer in args.scorers:
        small_n, large_n = sizes[scorer], sizes[scorer] * args.scale
        warmup = write_config(work, inputs[200], 10, scorer, model_dir)
        small = measure(args.executor, workers, write_config(work, inputs[small_n], args.part_size, scorer, model_dir), warmup, work)
        large = measure(args.executor, workers, write_config(work, inputs[large_n], args.part_size, scorer, model_dir), warmup, work)
        print(f"peak resident memory, {scorer} scorer, {args.executor} executor, {workers} worker(s)")
        worst = max(worst, memory_table(scorer, small_n, large_n, small, large, args.executor))
        print()
    print(f"load average {load_average()} (1, 5, 15 min) at the end")
    verdict = "OK" if worst <= MEMORY_BOUND else "OVER"
    print(f"memory at {args.scale}x the input: worst driver/worker ratio {worst:.2f}x (bound {MEMORY_BOUND}x): {verdict}")


if __name__ == "__main__":
    main()
