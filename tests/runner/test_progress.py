"""One progress mechanism: periodic lines off a terminal, a heartbeat during a long
part, and model workers' library noise kept back without -v (shown after a failure)."""
from __future__ import annotations

import io

from engine import progress
from engine.runtime import model_process


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_lines_say_part_rate_and_time_left_at_most_once_per_interval():
    clock, out = Clock(), []
    lines = progress.ProgressLines("score", total_rows=100, total_parts=4, interval_s=15, clock=clock, emit=out.append)
    lines.begin()
    clock.now = 10
    lines.update(25)            # the first part always speaks
    clock.now = 12
    lines.update(25)            # 2 s later: within the interval, silent
    clock.now = 30
    lines.heartbeat()           # 18 s since the last line, a part is running: a heartbeat
    clock.now = 40
    lines.update(25)            # 10 s after the heartbeat: silent
    clock.now = 41
    lines.update(25)            # the last part always speaks
    assert out == [
        "score: 4 part(s), 100 rows to run",
        "score: part 1/4 done, 2.5 rows/s, about 30 s left",
        "score: part 3/4 running for 18 s (2 done, about 40 s left)",
        "score: part 4/4 done, 2.4 rows/s, all done in 41 s",
    ]


def test_the_time_left_leaves_the_first_parts_model_load_out():
    clock, out = Clock(), []
    lines = progress.ProgressLines("judge", 50, 5, interval_s=0.5, clock=clock, emit=out.append)
    clock.now = 200            # the first part starts vLLM: 200 s
    lines.update(10)
    clock.now = 210            # later parts take 10 s each
    lines.update(10)
    assert out[-1] == "judge: part 2/5 done, 0.1 rows/s, about 30 s left"  # not the 6 min the mean rate says


def test_no_heartbeat_within_the_interval_or_after_the_end():
    clock, out = Clock(), []
    lines = progress.ProgressLines("judge", 10, 1, interval_s=15, clock=clock, emit=out.append)
    clock.now = 14
    lines.heartbeat()
    assert out == []
    clock.now = 16
    lines.heartbeat()
    assert out == ["judge: part 1/1 running for 16 s (0 done)"]
    lines.update(10)
    clock.now = 100
    lines.heartbeat()
    assert out[-1].startswith("judge: part 1/1 done") and len(out) == 2


def test_mode_follows_the_environment(monkeypatch):
    monkeypatch.setenv("BABELSCORE_NO_PROGRESS", "1")
    assert progress.progress_mode() == "off"
    monkeypatch.setenv(progress.MODE_ENV, "lines")
    assert progress.progress_mode() == "lines"
    monkeypatch.delenv(progress.MODE_ENV)
    monkeypatch.delenv("BABELSCORE_NO_PROGRESS")
    monkeypatch.setattr("sys.stderr", io.StringIO())  # not a terminal
    assert progress.progress_mode() == "lines"


def test_worker_noise_is_kept_back_without_verbose_and_shown_after_a_failure(monkeypatch, caplog):
    shown = []
    monkeypatch.setattr(progress, "write_line", shown.append)
    monkeypatch.delenv(model_process.VERBOSE_ENV, raising=False)
    stream = io.BytesIO(b"WARNING 12-01 [__init__.py:26] libtcmalloc is not found\n"
                        b"INFO engine.judge.chat_backend[worker]: loading judge\n"
                        b"Triton is installed but doesn't include CPU backend\n"
                        b"ERROR 12-01 engine core failed\n")
    log = model_process.WorkerLog(stream, "tiny-chat")
    log.join()
    assert shown == ["INFO engine.judge.chat_backend[worker]: loading judge", "ERROR 12-01 engine core failed"]
    assert log.hidden == 2
    log.show_tail()
    assert "libtcmalloc is not found" in caplog.text and "last lines of the worker of tiny-chat" in caplog.text


def test_verbose_shows_every_worker_line(monkeypatch):
    shown = []
    monkeypatch.setattr(progress, "write_line", shown.append)
    monkeypatch.setenv(model_process.VERBOSE_ENV, "1")
    log = model_process.WorkerLog(io.BytesIO(b"libtcmalloc is not found\nTriton ...\n"), "x")
    log.join()
    assert shown == ["libtcmalloc is not found", "Triton ..."]


def test_on_a_terminal_log_records_go_through_the_bar_so_none_is_overwritten(monkeypatch):
    import logging

    monkeypatch.setenv(progress.MODE_ENV, "bar")
    import sys

    monkeypatch.setattr("sys.stderr", io.StringIO())
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)  # the CLI's console handler
    root.addHandler(handler)
    try:
        with progress.progress_bar("score", 10, 1) as bar:
            # while the bar is drawn, the stream handlers write through tqdm (which clears the bar first)
            assert any(type(h).__name__ == "_TqdmLoggingHandler" for h in root.handlers)
            assert handler not in root.handlers
            bar.update(10)
        assert handler in root.handlers  # given back afterwards
    finally:
        root.removeHandler(handler)
