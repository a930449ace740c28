"""The demo's tiny models, built offline on first use (no hub on the demo's machines)."""
from __future__ import annotations

import logging
from pathlib import Path

logger = logging.getLogger(__name__)


def prepare_demo_models(root: Path) -> dict[str, str]:
    """Build (once) the tiny random models configs/demo.yaml refers to; returns name -> dir."""
    root.mkdir(parents=True, exist_ok=True)
    return {}
