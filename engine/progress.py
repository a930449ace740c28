"""Progress of long work, one mechanism for every stage: a bar on a terminal, periodic lines elsewhere.

- On a terminal (stderr is a TTY) a tqdm bar shows rows, rows/s and the time left. While it is
  drawn, log records are written through tqdm (`logging_redirect_tqdm`), which clears the bar
  first, so a bar never overwrites a log line; other writers use `write_line`.
- When stderr is not a terminal (a file, nohup, a cluster job, a pipe) a line is logged when a
  part finishes, at most every `BABELSCORE_PROGRESS_INTERVAL` seconds (default 15), and the
  last part always: `score: part 3/15 done, 41.2 rows/s, about 60 s left`. A part that runs
  longer than the interval gets a heartbeat line from a timer thread (`score: part 4/15 running
  for 45 s (3 done, about 60 s left)`), so a log never stays silent for minutes.
- `BABELSCORE_NO_PROGRESS=1` (set by `--quiet`, and by the test suite) turns both off;
  `BABELSCORE_PROGRESS=bar|lines|off` forces a mode.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import time
from contextlib import ExitStack, contextmanager
from typing import Callable, Iterator

logger = logging.getLogger(__name__)

INTERVAL_ENV = "BABELSCORE_PROGRESS_INTERVAL"
MODE_ENV = "BABELSCORE_PROGRESS"
DEFAULT_INTERVAL_S = 15.0

_active_bars = 0  # bars being drawn in this process (write_line goes through tqdm while > 0)


def progress_mode() -> str:
    """'bar', 'lines' or 'off' for this process's stderr and environment."""
    forced = os.environ.get(MODE_ENV, "").strip().lower()
    if forced in ("bar", "lines", "off"):
        return forced
    if os.environ.get("BABELSCORE_NO_PROGRESS") == "1":
        return "off"
    try:
        return "bar" if sys.stderr.isatty() else "lines"
    except (AttributeError, ValueError):  # a closed or replaced stream
        return "lines"


def _interval() -> float:
    try:
        return max(0.5, float(os.environ.get(INTERVAL_ENV, DEFAULT_INTERVAL_S)))
    except ValueError:
        return DEFAULT_INTERVAL_S


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class ProgressLines:
    """The periodic lines of one task: parts done of all, rows/s so far, time left at that rate.

    `clock` and `emit` are injectable so tests drive it without waiting.
    """

    def __init__(self, task: str, total_rows: int, total_parts: int, interval_s: float,
                 clock: Callable[[], float] = time.monotonic, emit: Callable[[str], None] | None = None):
        self.task, self.total_rows, self.total_parts = task, total_rows, max(total_parts, 1)
        self.interval_s = interval_s
        self.clock = clock
        self.emit = emit or (lambda line: logger.info("%s", line))
        self.start = self.last_line = self.last_part = clock()
        self.rows = self.parts = 0
        self.first_part_at, self.first_part_rows = self.start, 0
        self._lock = threading.Lock()

    def begin(self) -> None:
        self.emit(f"{self.task}: {self.total_parts} part(s), {self.total_rows} rows to run")

    def rate(self) -> float:
        elapsed = self.clock() - self.start
        return self.rows / elapsed if elapsed > 0 else 0.0

    def _eta_rate(self) -> float:
        """Rows/s after the first part: the first pays the model load (a vLLM start takes
        minutes on a small CPU), which would make every later estimate far too long."""
        if self.parts >= 2:
            elapsed = self.clock() - self.first_part_at
            return (self.rows - self.first_part_rows) / elapsed if elapsed > 0 else 0.0
        return self.rate()

    def _left(self) -> str:
        rate = self._eta_rate()
        return f", about {_duration((self.total_rows - self.rows) / rate)} left" if rate > 0 and self.rows < self.total_rows else ""

    def status(self) -> str:
        """After a part finished: `score: part 3/15 done, 41.2 rows/s, about 60 s left`."""
        line = f"{self.task}: part {self.parts}/{self.total_parts} done, {self.rate():.1f} rows/s"
        if self.parts >= self.total_parts:
            return f"{line}, all done in {_duration(self.clock() - self.start)}"
        return line + self._left()

    def update(self, rows: int) -> None:
        with self._lock:
            now = self.clock()
            self.rows += rows
            self.parts += 1
            self.last_part = now
            if self.parts == 1:
                self.first_part_at, self.first_part_rows = now, self.rows
            if self.parts >= self.total_parts or now - self.last_line >= self.interval_s or self.parts == 1:
                self.last_line = now
                self.emit(self.status())

    def heartbeat(self) -> None:
        """Called by the timer: `score: part 4/15 running for 45 s (3 done, about 60 s left)` when
        nothing was said for an interval."""
        with self._lock:
            now = self.clock()
            # Only for a part running longer than an interval: shorter parts speak through update().
            if self.parts >= self.total_parts or min(now - self.last_line, now - self.last_part) < self.interval_s:
                return
            self.last_line = now
            self.emit(f"{self.task}: part {self.parts + 1}/{self.total_parts} running for "
                      f"{_duration(now - self.last_part)} ({self.parts} done{self._left()})")


class _Bar:
    """tqdm's bar counting rows; `update(rows)` per finished part, as ProgressLines."""

    def __init__(self, task: str, total_rows: int):
        from tqdm import tqdm

        self.bar = tqdm(total=total_rows, desc=f"{task:>9}", unit="rows", dynamic_ncols=True, file=sys.stderr,
                        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} rows "
                        "[{elapsed}<{remaining}, {rate_fmt}]")

    def update(self, rows: int) -> None:
        self.bar.update(rows)


class _Off:
    def update(self, rows: int) -> None:
        pass


@contextmanager
def progress_bar(task: str, total_rows: int, total_parts: int | None = None) -> Iterator[object]:
    """Progress of `total_parts` parts of `total_rows` rows in all; the object's `update(rows)` is
    called once per finished part (the name is historical: off a terminal it writes lines)."""
    global _active_bars
    mode = progress_mode()
    if mode == "off" or total_rows <= 0:
        yield _Off()
        return
    if mode == "bar":
        from tqdm.contrib.logging import logging_redirect_tqdm

        with ExitStack() as stack:
            stack.enter_context(logging_redirect_tqdm())
            bar = _Bar(task, total_rows)
            _active_bars += 1
            try:
                yield bar
            finally:
                _active_bars -= 1
                bar.bar.close()
        return
    lines = ProgressLines(task, total_rows, total_parts or 1, _interval())
    lines.begin()
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(lines.interval_s):
            lines.heartbeat()

    timer = threading.Thread(target=beat, name=f"progress-{task}", daemon=True)
    timer.start()
    try:
        yield lines
    finally:
        stop.set()
        timer.join(timeout=5)


def write_line(text: str) -> None:
    """Write a line to stderr without breaking a progress bar being drawn."""
    if _active_bars:
        from tqdm import tqdm

        tqdm.write(text, file=sys.stderr)
    else:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
