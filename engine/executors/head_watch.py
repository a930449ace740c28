"""The Ray driver's watch over its cluster: does the head still answer, and how long has nothing finished."""
from __future__ import annotations

import time
from typing import Callable

from engine.errors import ClusterError
from engine.executors.cluster import probe

HEAD_CHECK_EVERY_S = 5.0  # how often the driver checks, while waiting for parts, that the head still answers
STATUS_EVERY_S = 300.0  # log what is outstanding when nothing finished for this long


class HeadWatch:
    """Ray ends a driver whose head is gone about a minute later, so the loop probes the head
    itself (one TCP connect) and stops the run first, saying so. No address: nothing to probe."""

    def __init__(self, address: str | None, clock: Callable[[], float] = time.monotonic):
        self.address = address
        self.clock = clock
        self.lost = False
        self.checked = clock()  # when the head last answered a probe
        self.idle_since: float | None = None  # when the driver last saw nothing finish

    def check(self) -> None:
        """Raise ClusterError when the head stops answering."""
        if not self.address:
            return
        try:
            probe(self.address)
        except ClusterError as exc:
            self.lost = True
            raise ClusterError(f"lost the Ray cluster in the middle of the run: {exc}. Committed parts are kept: "
                               "once a cluster runs, rerun the same command with --resume") from None

    def check_due(self, force: bool = False) -> None:
        """Probe the head when a slice passed with nothing finished, or when the last probe is
        HEAD_CHECK_EVERY_S old."""
        now = self.clock()
        if force or now - self.checked >= HEAD_CHECK_EVERY_S:
            self.check()
            self.checked = now

    def idle(self) -> bool:
        """Nothing finished in the last slice; True when it is time to say what is outstanding."""
        now = self.clock()
        if self.idle_since is None:
            self.idle_since = now
        elif now - self.idle_since >= STATUS_EVERY_S:
            self.idle_since = now
            return True
        return False

    def busy(self) -> None:
        """Something finished: the idle time starts over."""
        self.idle_since = None
