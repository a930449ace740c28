"""The Python files of the CUDA vLLM wheel `make setup` installs on a GPU machine, and of the
flashinfer-python it pins, downloaded (never installed) and cached between runs.

`make setup` on CUDA installs `vllm==0.32.0` from PyPI (the manylinux x86-64 wheel, about 330 MB)
and with it the `flashinfer-python` that wheel's metadata pins. Those are the sources whose
start-up decisions `tests/support/vllm_cuda_probe.py` evaluates; only their `.py` files and vLLM's
metadata are extracted (the compiled extensions are listed, so the probe can stand in for them).

Cache: `$BABELSCORE_WHEEL_CACHE`, else `~/.cache/babelscore/wheels`. A download that is
impossible (no registry) raises `WheelUnavailable` with pip's last lines.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

# The Makefile's CUDA pin (VLLM_CUDA); tests/runtime/test_vllm_cuda_startup.py checks they agree.
VLLM_CUDA_VERSION = "0.32.0"
PLATFORM_TAG = "manylinux_2_28_x86_64"


class WheelUnavailable(RuntimeError):
    """The wheel could not be downloaded (no package registry reachable)."""


def cache_dir() -> Path:
    root = os.environ.get("BABELSCORE_WHEEL_CACHE") or Path.home() / ".cache" / "babelscore" / "wheels"
    path = Path(root).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def _download(requirement: str, dest: Path) -> Path:
    """`pip download --no-deps` of one pinned wheel for Linux x86-64 (any Python the wheel
    serves: vLLM's is abi3, flashinfer-python's py3-none-any)."""
    name = re.split(r"[=<>!~]", requirement, maxsplit=1)[0].replace("-", "_").lower()
    version = requirement.split("==", 1)[1] if "==" in requirement else None
    for existing in dest.glob("*.whl"):
        dist, ver = existing.name.split("-")[:2]
        if dist.lower() == name and version in (None, ver):
            return existing
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
           "--platform", PLATFORM_TAG, "--python-version", "3.11", "-d", str(dest), requirement]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise WheelUnavailable(f"pip download {requirement} failed: {tail}")
    for existing in dest.glob("*.whl"):
        dist, ver = existing.name.split("-")[:2]
        if dist.lower() == name and version in (None, ver):
            return existing
    raise WheelUnavailable(f"pip download {requirement} left no wheel in {dest}")


def _pinned(wheel: Path, dist: str) -> str:
    """The `dist==X` requirement the wheel's METADATA pins."""
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(meta).decode()
    match = re.search(rf"^Requires-Dist: {re.escape(dist)}==([^\s;]+)", text, re.MULTILINE)
    if match is None:
        raise WheelUnavailable(f"{wheel.name} does not pin {dist}")
    return f"{dist}=={match.group(1)}"


def _extract(wheel: Path, into: Path) -> list[str]:
    """Extract the wheel's .py files (and its dist-info); return its compiled modules' names."""
    compiled = []
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name.endswith(".py") or ".dist-info/" in name and name.endswith(("METADATA", "entry_points.txt")):
                zf.extract(name, into)
            elif name.endswith(".so"):
                compiled.append(name[: -len(".so")].split(".")[0].replace("/", "."))
    return compiled


def sources() -> dict:
    """Download (once) and extract (once) both wheels; return {"root", "compiled", "vllm",
    "flashinfer"}: the directory to put first on sys.path, the compiled module names, and the
    two requirements."""
    cache = cache_dir()
    vllm_req = f"vllm=={VLLM_CUDA_VERSION}"
    vllm_wheel = _download(vllm_req, cache)
    flashinfer_req = _pinned(vllm_wheel, "flashinfer-python")
    root = cache / f"src-vllm-{VLLM_CUDA_VERSION}-{flashinfer_req.split('==')[1]}"
    marker = root / "extracted.json"
    if marker.exists():
        return json.loads(marker.read_text())
    flashinfer_wheel = _download(flashinfer_req, cache)
    # pynvml: flashinfer imports it at once (flashinfer/utils.py); its requirement nvidia-ml-py is
    # unpinned there, and vLLM does not require it (it carries vllm/third_party/pynvml.py).
    nvml_wheel = _download("nvidia-ml-py", cache)
    compiled = _extract(vllm_wheel, root) + _extract(flashinfer_wheel, root) + _extract(nvml_wheel, root)
    info = {"root": str(root), "compiled": sorted(set(compiled)), "vllm": vllm_req, "flashinfer": flashinfer_req}
    marker.write_text(json.dumps(info))
    return info
