"""The simulated CUDA machine of tests/support/cuda_sim: its fake torch.cuda module, the environment
that makes a process (and what it starts) see it, and the events it records."""
from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

SIM = Path(__file__).resolve().parent / "cuda_sim"
_spec = importlib.util.spec_from_file_location("fake_cuda", SIM / "fake_cuda.py")
fake_cuda = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("fake_cuda", fake_cuda)
_spec.loader.exec_module(fake_cuda)


def sim_environment(state: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["CUDASIM_DIR"] = str(state)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SIM), env.get("PYTHONPATH", "")) if p)
    for name in ("CUDA_VISIBLE_DEVICES", "VLLM_WORKER_MULTIPROC_METHOD", "VLLM_ENABLE_V1_MULTIPROCESSING", "CUDASIM_NODE"):
        env.pop(name, None)
    return env


def events(state: Path) -> list[dict]:
    path = state / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
