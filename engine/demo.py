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
from typing import Callable

logger = logging.getLogger(__name__)
DONE_MARKER = ".babelscore-built"


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


def prepare_demo_models(root: Path) -> dict[str, str]:
    """Build (once) every tiny random model the demo configs use; returns name -> directory."""
    return {name: str(build_demo_model(root, name)) for name in demo_model_names()}
