"""In-process executor: parts run one after another in this process (CPU or one GPU).

Model-major, as on Ray: the parts of one model run together (the plan sorts them so), and
when the next part needs another model, or the stage ends, every model of this process is
released (engine.runtime.model_registry), so a device never holds a model whose parts are done.

A part is tried again as `RetryPolicy` (engine.executors.base) says, the same policy as the
Ray executor's: a `TransientError` (out of memory at batch size 1, a lost device) is retried
up to `max_attempts` in all; any other exception fails the part at once (it would fail
again). A failed part is handed to `fail`; the other parts go on.
"""
from __future__ import annotations

import logging
import os
import socket
import traceback
from typing import Any, Sequence

from engine.executors.base import CommitFn, FailFn, RetryPolicy
from engine.part_execution import PartTask, execute_part
from engine.progress import progress_bar
from engine.stages.plan import RunPlan

logger = logging.getLogger(__name__)


class LocalExecutor:
    name = "local"

    def __init__(self, retry: RetryPolicy = RetryPolicy()):
        self.retry = retry
        self.placements: dict[str, dict[str, Any]] = {}  # where each committed part ran (the runner records it)

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
        if not parts:
            return
        from engine.part_execution import release_models

        current = parts[0].model_key
        with progress_bar(parts[0].stage, sum(rows_per_part[p.index] for p in parts), len(parts)) as bar:
            for part in parts:
                if part.model_key != current:
                    release_models()  # the previous model's parts are done
                    current = part.model_key
                for attempt in range(1, self.retry.max_attempts + 1):
                    try:
                        table = execute_part(run_root, plan, part, prepass)
                    except Exception as exc:  # a whole-part failure: recorded, the other parts go on
                        logger.debug("part %s failed:\n%s", part.key, traceback.format_exc())
                        if not self.retry.try_again(attempt, self.retry.is_retried(exc)):
                            fail(part, f"{type(exc).__name__}: {exc}", attempt)
                            break
                        logger.warning("part %s: attempt %d failed (%s); trying again", part.key, attempt, exc)
                        continue
                    commit(part, table)
                    self.placements[part.key] = {"node_id": None, "hostname": socket.gethostname(), "pid": os.getpid(),
                                                 "attempts": attempt}
                    break
                bar.update(rows_per_part[part.index])
        release_models()

    def close(self) -> None:
        from engine.part_execution import release_models

        release_models()
