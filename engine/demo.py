"""The demo's tiny models, built offline on first use (no hub on the demo's machines).

configs/demo.yaml and configs/demo_generate.yaml name them `demo:<name>`; the model runtime
builds one the first time a run asks for it. Building is deterministic (seeded) and safe when
several processes ask at once: each builds into its own temporary directory, marks it
complete, and renames it into place; the first rename wins and the others drop their copy.
"""
from __future__ import annotations

import logging
import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    import subprocess

from engine.io.manifest import Manifest
from engine.runtime.names import DEMO_DONE_MARKER as DONE_MARKER
from engine.runtime.names import use_demo_builder

logger = logging.getLogger(__name__)


def _builders() -> dict[str, Callable[[Path], str]]:
    from engine.testing.tiny_chat import build_tiny_chat_model
    from engine.testing.tiny_encoder import build_tiny_bert
    from engine.testing.tiny_fim import build_tiny_fim_model
    from engine.testing.tiny_lm import build_tiny_bart

    return {
        "tiny-bart": lambda d: build_tiny_bart(d),
        "tiny-bert": lambda d: build_tiny_bert(d),
        "tiny-fim": lambda d: build_tiny_fim_model(d, family="starcoder2"),
        "tiny-chat": lambda d: build_tiny_chat_model(d),
    }


def demo_model_names() -> list[str]:
    return sorted(_builders())


def is_built(target: Path) -> bool:
    return (target / DONE_MARKER).is_file()


def build_demo_model(root: Path, name: str) -> Path:
    """The directory of demo model `name` under `root`, built first if it is not complete.

    Raises KeyError for an unknown name (callers turn it into a config error).
    """
    build = _builders()[name]
    target = root / name
    if is_built(target):
        return target
    root.mkdir(parents=True, exist_ok=True)
    if target.exists():
        # An incomplete folder (a crash of an older, in-place build): move it aside atomically
        # so a concurrent builder never sees it half-deleted, then remove it.
        trash = root / f".trash-{name}-{uuid.uuid4().hex}"
        try:
            os.rename(target, trash)
            shutil.rmtree(trash, ignore_errors=True)
        except OSError:
            pass  # another process moved it or completed it meanwhile
    tmp = root / f".build-{name}-{os.getpid()}-{uuid.uuid4().hex}"
    logger.info("building the demo's %s model in %s", name, target)
    try:
        build(tmp)
        (tmp / DONE_MARKER).write_text("ok\n")
        try:
            os.rename(tmp, target)
        except OSError:
            if not is_built(target):  # the rename failed for another reason than a winner
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def install_builder() -> None:
    """Give the model runtime this module's builder for `demo:<name>` (it cannot import it: the
    builders make judge and generate models, layers above it). The config loader calls it."""
    use_demo_builder(build_demo_model, demo_model_names)


def prepare_demo_models(root: Path) -> dict[str, str]:
    """Build (once) every tiny random model the demo configs use; returns name -> directory."""
    return {name: str(build_demo_model(root, name)) for name in demo_model_names()}


# ----- what a first run spends on one-off work (`babelscore demo` prints it) ---------------------
def timed_prepare(root: Path) -> tuple[dict[str, str], list[str], float]:
    """prepare_demo_models, and which models it had to build (not found complete) and in how long."""
    import time

    missing = [name for name in demo_model_names() if not is_built(Path(root) / name)]
    started = time.perf_counter()
    built = prepare_demo_models(root)
    return built, missing, time.perf_counter() - started


WARM_STEP_TEXT = {
    "kde-kernels": "compiling the KDE kernels (kept in kernels/__pycache__)",
    "figure-fonts": "matplotlib's font list (kept in its config folder)",
    "vllm-inspection": "vLLM's inspection of the judge's model class (kept in vLLM's cache)",
}


def one_off_lines(built: list[str], build_s: float, run_dirs: list[Path], warmed: dict[str, float] | None = None) -> list[str]:
    """The demo's closing note on start-up costs: building the tiny models (first run only), the
    one-off caches the background warm-up filled (a step of 2 CPU-s or more did real work), and
    model loads, the vLLM engine starts above all (every run; the first on a machine is slower,
    as it reads the libraries from disk), from the runs' manifests."""

    lines = []
    if built:
        lines.append(f"  built the tiny models {', '.join(built)} in {build_s:.0f} s wall (first run only; kept in the models folder)")
    for name, seconds in (warmed or {}).items():
        if seconds >= 2:
            lines.append(f"  {WARM_STEP_TEXT.get(name, name)}: {seconds:.0f} CPU-s, in the background at low priority "
                         "while the first jobs ran (first run on a machine only)")
    loads: list[tuple[float, str, str]] = []
    for run_dir in run_dirs:
        manifest = Path(run_dir) / "manifest.json"
        if manifest.exists():
            for record in Manifest.load(manifest).models:
                if record.get("load_s") is not None:
                    loads.append((float(record["load_s"]), str(record["model"]), str(record["stage"])))
    for seconds, model, stage in sorted(loads, reverse=True)[:3]:
        if seconds >= 1:  # a vLLM engine start (the judge's) is the big one
            lines.append(f"  loading {model} for {stage}: {seconds:.0f} s wall (every run pays it; a machine's first, "
                         "with cold file caches, more)")
    if not lines:
        return []
    return ["start-up costs of this run (the rest is the work itself):", *lines]


# ----- one-off caches, filled in the background while the demo's first jobs run ---------------
WARM_STEPS = ("kde-kernels", "figure-fonts", "vllm-inspection")


def warm_caches(chat_model_dir: str) -> dict[str, float]:
    """Do the one-off work a machine's first run pays, each step timed (seconds; absent if it failed):
    compiling the KDE kernels (numba keeps them in kernels/__pycache__), matplotlib's font list
    (kept in its config folder) and vLLM's inspection of the judge's architecture (kept in
    vLLM's cache). Each is what calibration, the report and the judge's engine start would do
    themselves; doing it early in a low-priority process moves it to where the CPUs are idle.
    Returns each step's CPU seconds."""
    import resource

    import numpy as np

    def kde() -> None:
        from kernels.kde import fit_thresholds

        fit_thresholds(np.linspace(0.0, 1.0, 8), np.array([0, 8]), np.array([0, 0, 0, 0, 1, 1, 1, 1]), 2)

    def fonts() -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig = plt.figure()
        fig.text(0.5, 0.5, "warm")
        fig.canvas.draw()
        plt.close(fig)

    def inspection() -> bool:
        from engine.llm.vllm_backend import warm_model_inspection

        return warm_model_inspection(chat_model_dir)

    def cpu_seconds() -> float:
        # CPU time, not wall time: at the lowest priority a step waits while the demo computes.
        # Children count too: vLLM inspects in a child process.
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    done: dict[str, float] = {}
    for name, step in zip(WARM_STEPS, (kde, fonts, inspection)):
        started = cpu_seconds()
        try:
            if step() is False:  # found in its cache: nothing one-off was done
                continue
        except Exception as exc:  # best effort: the stage that needs it does the work itself
            logger.debug("warm-up step %s failed: %s", name, exc)
            continue
        done[name] = round(cpu_seconds() - started, 1)
    return done


def start_warmup(models_root: Path) -> "subprocess.Popen[str] | None":
    """`warm_caches` in a child process at the lowest CPU priority (it takes only idle CPU time);
    None where it cannot start (the demo then pays each step where it is needed)."""
    import subprocess
    import sys

    code = ("import json, os, sys; os.nice(19); from engine.demo import warm_caches; "
            "print(json.dumps(warm_caches(sys.argv[1])))")
    try:
        return subprocess.Popen([sys.executable, "-c", code, str(Path(models_root) / "tiny-chat")],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError as exc:
        logger.debug("no background warm-up: %s", exc)
        return None


def finish_warmup(process: "subprocess.Popen[str] | None", timeout_s: float = 60.0) -> dict[str, float]:
    """The warm-up's step times once it has ended ({} if it failed or is still running after `timeout_s`)."""
    import json
    import subprocess

    if process is None:
        return {}
    try:
        out, _ = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return {}
    try:
        return json.loads(out.strip().splitlines()[-1]) if process.returncode == 0 and out.strip() else {}
    except ValueError:
        return {}
