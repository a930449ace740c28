"""`make gpu-check`: what only a CUDA machine can show, in one table (under 8 minutes on one H200).

    python bench/gpu_check.py            # PYTHON=... make gpu-check runs it with that Python

Steps, each in a child process of this Python (nothing is installed; a step that needs a
missing package is skipped with one line):
1. the `gpu`-marked tests (tests/test_gpu.py: half precision, real CUDA out of memory, memory
   returned after release, vLLM worker memory);
2. the BERTScore bench (bench/bench_bertscore.py; `auto` picks bfloat16 on the GPU) against
   `bert_score`;
3. the generation bench (bench/bench_generate.py, transformers and vLLM backends);
4. a paper-shaped mini run, end to end: two vLLM generators, a vLLM judge, an encoder in three
   contexts and a seq2seq scorer (tiny demo models: a GPU machine may reach no hub), one model
   on the device at a time; its manifest["models"] gives the peak memory of every stage.

Printed: one table of figure, value and peak GPU memory (device-wide, sampled with nvidia-smi
while the step ran; per stage from the run's manifest for the mini run). Without a CUDA device
it prints "no CUDA device: nothing to check" and exits 0.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEP_TIMEOUT_S = {"tests": 120, "bertscore": 90, "generate": 90, "mini-run": 180}  # 8 minutes at most


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def cuda_present() -> bool:
    if not _has("torch"):
        return False
    import torch

    return bool(torch.cuda.is_available())


class GpuMemorySampler(threading.Thread):
    """Peak used memory of GPU 0 (MiB, nvidia-smi) while a step runs."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak_mib = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
                                     capture_output=True, text=True, timeout=10, check=False).stdout
                self.peak_mib = max(self.peak_mib, int(out.strip().splitlines()[0]))
            except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
                pass
            self.stop.wait(0.5)


def run_step(name: str, argv: list[str]) -> tuple[int, str, float, int]:
    """(exit code, output, seconds, peak GPU MiB) of one child process."""
    sampler = GpuMemorySampler()
    sampler.start()
    started = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    try:
        proc = subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=STEP_TIMEOUT_S[name], check=False)
        code, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, output = 124, f"timed out after {STEP_TIMEOUT_S[name]} s\n{exc.stdout or ''}"
    sampler.stop.set()
    sampler.join()
    return code, output if isinstance(output, str) else output.decode(errors="replace"), time.perf_counter() - started, sampler.peak_mib


def _last(pattern: str, text: str, default: str = "?") -> str:
    found = re.findall(pattern, text, flags=re.MULTILINE)
    return found[-1] if found else default


# ----- the mini run (in a child process: `gpu_check.py --mini-run`) --------------------------
def mini_run_config(folder: Path) -> dict:
    """The paper's shape with tiny demo models: two vLLM generators, a vLLM judge, an encoder in
    three contexts and a seq2seq scorer."""
    from engine.testing.tiny_fim import build_tiny_fim_model

    vllm = {"backend": "vllm", "dtype": "bfloat16", "enforce_eager": True, "gpu_memory_utilization": 0.85}
    second = build_tiny_fim_model(folder / "fim-seed1", "starcoder2", seed=1)
    return {
        "name": "gpu-check", "input": "builtin:demo", "seed": 0, "part_size": 55, "stages": ["generate", "score", "judge"],
        "generate": {"generators": [
            {"model": "demo:tiny-fim", "card": "starcoder2", "name": "fim-a", "max_new_tokens": 24, "max_model_len": 1024, **vllm},
            {"model": second, "card": "starcoder2", "name": "fim-b", "max_new_tokens": 24, "max_model_len": 1024, **vllm},
        ]},
        "score": {"scorers": [
            {"kind": "embedding", "model": "pypi:all-MiniLM-L6-v2", "contexts": ["none", "minimal", "full"]},
            {"kind": "likelihood", "model": "demo:tiny-bart", "contexts": ["none", "minimal"], "directions": ["forward"]},
        ]},
        "judge": {"judges": [{"model": "demo:tiny-chat", "name": "tiny-chat", "max_model_len": 4096,
                              "strategies": ["standard"], "structured": ["standard"], "prompt_languages": ["en"],
                              "max_tokens": 300, "max_text_chars": 12, "max_errors": 2, **vllm}]},
    }


def mini_run() -> None:
    import yaml

    from engine.config import load_config
    from engine.runner import execute_run

    with tempfile.TemporaryDirectory(prefix="babelscore-gpu-check-") as tmp:
        config = mini_run_config(Path(tmp))
        path = Path(tmp) / "config.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        started = time.perf_counter()
        execute_run(load_config(path), str(Path(tmp) / "run"), executor_name="local")
        manifest = json.loads((Path(tmp) / "run" / "manifest.json").read_text(encoding="utf-8"))
        records = manifest["models"]
        overlaps = 0
        ordered = sorted(records, key=lambda r: r["loaded_at"])
        for earlier, later in zip(ordered, ordered[1:]):
            overlaps += earlier["device"] == later["device"] and earlier["released_at"] > later["loaded_at"]
        print("MINI-RUN " + json.dumps({
            "seconds": time.perf_counter() - started, "status": manifest["status"], "counts": manifest["counts"],
            "overlaps": overlaps, "driver_vllm": sum(r["pid"] == os.getpid() and r["stage"] in ("generate", "judge") for r in records),
            "models": [{k: r[k] for k in ("model", "stage", "device", "peak_bytes")} for r in records],
        }))


# ----- the driver -------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mini-run", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mini_run:
        mini_run()
        return 0
    if not cuda_present():
        print("no CUDA device: nothing to check")
        return 0
    import torch

    print(f"GPU: {torch.cuda.get_device_name(0)}, {torch.cuda.mem_get_info(0)[1] / 2**30:.0f} GiB; torch {torch.__version__}; "
          f"python {sys.executable}")
    table: list[tuple[str, str, str]] = []  # figure, value, peak GPU memory
    failed = False
    for module, what in (("vllm", "the generation bench's vLLM backend, the vLLM gpu test and the mini run"),
                         ("flash_attn", "flash-attention (the loader uses sdpa instead)"),
                         ("bert_score", "the BERTScore bench")):
        if not _has(module):
            print(f"skip: {module} is not installed: {what}")
    if _has("pytest"):
        code, out, secs, peak = run_step("tests", ["-m", "pytest", "-q", "-m", "gpu", "tests/test_gpu.py", "-p", "no:cacheprovider"])
        table.append(("gpu-marked tests", _last(r"^=*\s*(.*(?:passed|failed|skipped|error).*?)\s*=*$", out), f"{peak} MiB"))
        failed |= code != 0
        if code != 0:
            print(out[-3000:])
    else:
        print("skip: pytest is not installed: the gpu-marked tests")
    if _has("bert_score"):
        code, out, secs, peak = run_step("bertscore", ["bench/bench_bertscore.py", "--pairs", "500", "--rounds", "3"])
        table.append(("BERTScore fast vs bert_score (pairs/s ratio)", _last(r"^ours fast \S+\s+[\d.]+\s+[\d.]+\s+([\d.]+x)", out),
                      f"{peak} MiB"))
        table.append(("BERTScore compat fp32 vs bert_score max |diff|", _last(r"max \|P/R/F diff\| (\S+)", out), ""))
        failed |= code != 0
        if code != 0:
            print(out[-3000:])
    if _has("vllm"):
        code, out, secs, peak = run_step("generate", ["bench/bench_generate.py", "--prompts", "64", "--dtype", "bfloat16",
                                                      "--gpu-memory-utilization", "0.5"])
        table.append(("generation vllm/transformers (out tok/s)", _last(r"ratio vllm/transformers \(output tokens/s\): (\S+)", out),
                      f"{peak} MiB"))
        table.append(("generation token-identical", _last(r"token-identical outputs: (\S+)", out), ""))
        failed |= code != 0
        if code != 0:
            print(out[-3000:])
        code, out, secs, peak = run_step("mini-run", ["bench/gpu_check.py", "--mini-run"])
        line = _last(r"^MINI-RUN (.*)$", out, "")
        if line:
            result = json.loads(line)
            table.append(("mini run (status, seconds)", f"{result['status']}, {result['seconds']:.0f} s", f"{peak} MiB"))
            table.append(("mini run overlapping models / vLLM in driver", f"{result['overlaps']} / {result['driver_vllm']}", ""))
            for record in result["models"]:
                peak_record = record["peak_bytes"] or 0
                table.append((f"  {record['stage']}: {record['model']}", record["device"], f"{peak_record / 2**20:.0f} MiB"))
        else:
            table.append(("mini run", "failed", f"{peak} MiB"))
        failed |= code != 0 or not line
        if code != 0 or not line:
            print(out[-3000:])
    width = max(len(f) for f, _v, _p in table) + 2
    print()
    print(f"{'figure':<{width}}{'value':<36}{'peak GPU memory':>16}")
    for figure, value, peak in table:
        print(f"{figure:<{width}}{value:<36}{peak:>16}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
