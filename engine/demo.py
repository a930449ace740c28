"""The demo's tiny models, built offline on first use (no hub on the demo's machines).

configs/demo.yaml and configs/demo_generate.yaml refer to these directories; building is
deterministic (seeded), and a completed build is marked so a rerun reuses it.
"""
from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Callable

logger = logging.getLogger(__name__)
DONE_MARKER = ".babelscore-built"


def _builders() -> dict[str, Callable[[Path], str]]:
    from engine.testing.tiny_chat import build_tiny_chat_model
    from engine.testing.tiny_fim import build_tiny_fim_model
    from engine.testing.tiny_lm import build_tiny_bart

    return {
        "tiny-bart": lambda d: build_tiny_bart(d),
        "tiny-fim": lambda d: build_tiny_fim_model(d, family="starcoder2"),
        "tiny-chat": lambda d: build_tiny_chat_model(d),
    }


def prepare_demo_models(root: Path) -> dict[str, str]:
    """Build (once) the tiny random models the demo configs use; returns name -> directory."""
    root.mkdir(parents=True, exist_ok=True)
    built = {}
    for name, build in _builders().items():
        target = root / name
        if not (target / DONE_MARKER).exists():
            logger.info("building the demo's %s model in %s", name, target)
            shutil.rmtree(target, ignore_errors=True)  # a half-built folder from a crash
            build(target)
            (target / DONE_MARKER).write_text("ok\n")
        built[name] = str(target)
    return built
