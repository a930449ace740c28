"""Running a task's tests against an implementation, in the sandbox, for any of the six languages."""
from __future__ import annotations

from engine.roundtrip.languages import run_tests

__all__ = ["run_tests"]
