"""Where the repository is, and the interpreter the tests run under (for subprocesses)."""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
