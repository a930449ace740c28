"""How many judge requests may be in flight at once: additive increase, multiplicative decrease.

The limit starts at the judge's `max_concurrency` (its ceiling) and is shared by the threads
of one batch. An overload answer (429, 503, 524, a timeout) halves it, and a Retry-After the
request will wait for pauses every new send; rising latency (the running mean above
LATENCY_RISE times the lowest seen, and by at least LATENCY_FLOOR_S) cuts it to CUT_ON_LATENCY
of itself; each other success adds 1/limit, up to the ceiling. One cut per "epoch": answers to
requests sent before the last cut do not cut again. Never below one slot (docs/judges.md).
"""
from __future__ import annotations

import math
import threading
import time
from typing import Callable

LATENCY_RISE = 2.0
LATENCY_FLOOR_S = 0.5
CUT_ON_OVERLOAD = 0.5
CUT_ON_LATENCY = 0.8
_ALPHA = 0.2  # weight of the newest latency in the running mean


class AdaptiveLimit:
    def __init__(self, ceiling: int, clock: Callable[[], float] = time.monotonic):
        self.ceiling = ceiling
        self.limit = float(ceiling)
        self.in_flight = 0
        self.history = [ceiling]  # the whole-slot limit after every change, in order
        self.overloads = self.cuts = 0
        self._clock = clock
        self._cond = threading.Condition()
        self._epoch = 0
        self._paused_until = 0.0
        self._mean: float | None = None
        self._lowest_mean: float | None = None

    @property
    def pause_left_s(self) -> float:
        """Seconds until new sends may start again after a Retry-After (0: none pending)."""
        with self._cond:
            return max(0.0, self._paused_until - self._clock())

    def acquire(self) -> int:
        """Wait for a free slot (and for any Retry-After pause to pass); returns the epoch of the send."""
        with self._cond:
            while True:
                pause = self._paused_until - self._clock()
                if pause > 0:
                    self._cond.wait(pause)
                elif self.in_flight < int(self.limit):
                    self.in_flight += 1
                    return self._epoch
                else:
                    self._cond.wait()

    def release(self, epoch: int, outcome: str, latency_s: float = 0.0, retry_after: float | None = None) -> None:
        """outcome: `ok` (an answer), `overload` (429/503/524/timeout) or `other` (no signal about load)."""
        with self._cond:
            self.in_flight -= 1
            if outcome == "overload":
                self.overloads += 1
                if retry_after and math.isfinite(retry_after) and retry_after > 0:
                    # bounded by what a condition may wait; callers pass only pauses they will wait out
                    pause = min(retry_after, threading.TIMEOUT_MAX / 2)
                    self._paused_until = max(self._paused_until, self._clock() + pause)
                self._cut(epoch, CUT_ON_OVERLOAD)
            elif outcome == "ok":
                self._mean = latency_s if self._mean is None else (1 - _ALPHA) * self._mean + _ALPHA * latency_s
                self._lowest_mean = self._mean if self._lowest_mean is None else min(self._lowest_mean, self._mean)
                if self._mean > max(LATENCY_RISE * self._lowest_mean, self._lowest_mean + LATENCY_FLOOR_S):
                    self._cut(epoch, CUT_ON_LATENCY)
                else:
                    self._set(min(float(self.ceiling), self.limit + 1.0 / self.limit))
            self._cond.notify_all()

    def _cut(self, epoch: int, factor: float) -> None:
        if epoch != self._epoch:  # sent before the last cut: that cut already answered this load
            return
        self._epoch += 1
        self.cuts += 1
        self._set(max(1.0, self.limit * factor))
        if self._mean is not None:  # judged afresh from here: the cut is meant to bring the latency down
            self._lowest_mean = min(self._lowest_mean or self._mean, self._mean)
            self._mean = self._lowest_mean

    def _set(self, limit: float) -> None:
        before = int(self.limit)
        self.limit = limit
        if int(limit) != before:
            self.history.append(int(limit))
