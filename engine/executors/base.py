"""What an executor does: compute parts (anywhere) and hand each result to the driver to commit."""
from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence

import pyarrow as pa

from engine.config import RunConfig
from engine.pipeline import PartTask

# Called by the executor in the driver process once per finished part.
CommitFn = Callable[[PartTask, pa.Table], None]
# Called once per part that failed after its retries: (part, error text, attempts).
FailFn = Callable[[PartTask, str, int], None]


class Executor(Protocol):
    name: str

    def run_parts(
        self,
        run_root: str,
        config: RunConfig,
        parts: Sequence[PartTask],
        prepass: dict[str, Any],
        commit: CommitFn,
        fail: FailFn,
        rows_per_part: Sequence[int],
    ) -> None:
        """Compute every part in `parts` (already filtered to those not committed)."""

    def close(self) -> None:
        """Release workers and models."""
