"""What an executor does: compute parts (anywhere) and hand each result to the driver to commit."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

import pyarrow as pa

from engine.part_execution import PartTask
from engine.stages.plan import RunPlan

# Called by the executor in the driver process once per finished part.
CommitFn = Callable[[PartTask, pa.Table], None]
# Called once per part that failed after its retries: (part, error text, attempts).
FailFn = Callable[[PartTask, str, int], None]


@dataclass(frozen=True)
class RetryPolicy:
    """When a part that did not finish is tried again; both executors apply it.

    A part is tried at most `max_attempts` times in all. It is tried again after a *system*
    failure (its worker or node died, an actor could not start) or a `TransientError` raised
    by its code (out of memory on one item, a lost device: engine.errors); any other exception
    raised by its code would fail again, so it fails the part at once unless
    `retry_exceptions` is set.
    """

    max_attempts: int = 3
    retry_exceptions: bool = False

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts: got {self.max_attempts!r}; allowed: an integer >= 1")

    def is_retried(self, exc: BaseException) -> bool:
        """Whether an exception raised by a part's own code is worth another attempt."""
        from engine.errors import TransientError

        return isinstance(exc, TransientError) or self.retry_exceptions

    def try_again(self, attempt: int, retried: bool) -> bool:
        """After failed attempt `attempt` (1-based) of a failure that `is_retried` (or a system failure)."""
        return retried and attempt < self.max_attempts


class Executor(Protocol):
    name: str
    # part key -> where it was computed: node_id (Ray's; None locally), hostname, pid, attempts
    placements: dict[str, dict[str, Any]]

    def run_parts(
        self,
        run_root: str,
        plan: RunPlan,
        parts: Sequence[PartTask],
        prepass: dict[str, Any],
        commit: CommitFn,
        fail: FailFn,
        rows_per_part: Sequence[int],
    ) -> None:
        """Compute every part in `parts` (already filtered to those not committed)."""

    def close(self) -> None:
        """Release workers and models."""
