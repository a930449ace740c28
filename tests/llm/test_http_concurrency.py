"""Adaptive concurrency of the HTTP judge: the AIMD rule on its own, then a batch against a local
server that answers 429 with Retry-After on a schedule."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler

import pytest

from engine import throughput
from engine.judge.params import JudgeParams
from engine.llm.http_backend import HttpChatBackend
from engine.llm.http_concurrency import AdaptiveLimit
from engine.llm.requests import ChatRequest
from tests.support.http_server import local_http_server, send_body

CEILING = 8
THROTTLED = range(30, 38)  # the server's 31st to 38th requests are answered 429


def test_overload_halves_once_per_epoch_success_adds_back_latency_rise_cuts() -> None:
    limit = AdaptiveLimit(CEILING)
    epochs = [limit.acquire() for _ in range(CEILING)]  # eight in flight, all sent in epoch 0
    for epoch in epochs[:3]:  # three 429s for requests sent before the first cut: one cut
        limit.release(epoch, "overload")
    assert (limit.limit, limit.cuts, limit.overloads) == (4.0, 1, 3)
    limit.release(epochs[3], "other")  # a 500 says nothing about load
    assert limit.limit == 4.0
    for epoch in epochs[4:]:
        limit.release(epoch, "ok", latency_s=1.0)
    assert 4.0 < limit.limit < 5.0  # + 1/limit per success
    while limit.limit < CEILING:
        limit.release(limit.acquire(), "ok", latency_s=1.0)
    assert limit.limit == CEILING and limit.history == [8, 4, 5, 6, 7, 8]
    for _ in range(20):  # the provider queues: latency climbs from 1 s to 3 s
        limit.release(limit.acquire(), "ok", latency_s=3.0)
    assert limit.cuts >= 2 and limit.limit < CEILING
    tiny = AdaptiveLimit(2)
    for latency in (0.001, 0.004, 0.009):  # jitter of milliseconds is no queue
        tiny.release(tiny.acquire(), "ok", latency_s=latency)
    assert tiny.cuts == 0
    for _ in range(5):
        tiny.release(tiny.acquire(), "overload")
    assert tiny.limit == 1.0  # never below one slot


class _Throttling(BaseHTTPRequestHandler):
    arrivals = 0
    lock = threading.Lock()

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        with self.lock:
            number = _Throttling.arrivals
            _Throttling.arrivals += 1
        if number in THROTTLED:
            data, status = b"", 429
        else:
            data, status = json.dumps({"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}],
                                       "usage": {"prompt_tokens": 5, "completion_tokens": 1}}).encode(), 200
        self.send_response(status)
        if status == 429:
            self.send_header("Retry-After", "0.01")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def server():
    with local_http_server(_Throttling) as url:
        yield url


def test_a_throttling_server_costs_no_call_and_the_concurrency_falls_and_recovers(server) -> None:
    params = JudgeParams.from_mapping(dict(model="m", backend="http", base_url=server, max_concurrency=CEILING,
                                           max_retries=8, backoff_base_s=0.001, backoff_cap_s=0.01, timeout_s=30))
    backend = HttpChatBackend(params)
    requests = [ChatRequest(f"r{i}", ({"role": "user", "content": f"x{i}"},), 5) for i in range(160)]
    with throughput.part_meter() as meter:
        answers = backend.chat(requests)
    assert [a.error for a in answers] == [None] * len(requests)
    assert [a.text for a in answers] == ["ok"] * len(requests)
    history = backend.limit.history
    lowest = history.index(min(history))
    assert min(history) < CEILING, history  # it fell on the 429s ...
    assert CEILING in history[lowest:], history  # ... and came back to the ceiling
    assert backend.statuses[429] == len(THROTTLED) and backend.limit.overloads == len(THROTTLED)
    counters = meter.counters
    assert counters["judge_http_429"] == len(THROTTLED) and counters["judge_http_failed"] == 0
    assert counters["judge_http_requests"] == len(requests) and counters["judge_http_retries"] == len(THROTTLED)


def test_a_retry_after_that_is_no_finite_number_is_absent_and_never_pauses() -> None:
    from engine.llm.http_backend import retry_after_seconds

    assert [retry_after_seconds(v) for v in ("inf", "nan", "-inf", "abc", "-5", "1e12")] == [None, None, None, None, 0.0, 1e12]
    limit = AdaptiveLimit(2)
    for value in (float("inf"), float("nan"), -3.0):
        limit.release(limit.acquire(), "overload", retry_after=value)
        assert limit.pause_left_s == 0.0


class _OnceThrottled(BaseHTTPRequestHandler):
    """The first request of a batch is answered 429 with `retry_after`; every other one, and its retry, 200."""

    retry_after = ""
    arrivals: list[bytes] = []
    lock = threading.Lock()

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        with self.lock:
            first = not self.arrivals
            self.arrivals.append(raw)
        if first:
            self.send_response(429)
            self.send_header("Retry-After", self.retry_after)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = json.dumps({"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 5, "completion_tokens": 1}}).encode()
        send_body(self, data)


@pytest.fixture(scope="module")
def once_throttled():
    with local_http_server(_OnceThrottled) as url:
        yield url


def _chat_guarded(backend: HttpChatBackend, requests: list[ChatRequest]) -> list:
    out: dict = {}
    worker = threading.Thread(target=lambda: out.setdefault("answers", backend.chat(requests)), daemon=True)
    worker.start()
    worker.join(120)  # a guard against a hang, not a speed check
    assert not worker.is_alive(), "the batch hung"
    return out["answers"]


@pytest.mark.parametrize("retry_after, gives_up", [
    ("1e9", True), ("Wed, 21 Oct 2099 07:28:00 GMT", True), ("1e12", True),  # past the retry budget: no pause
    ("inf", False), ("nan", False), ("abc", False),  # no number of seconds: as if absent, retried after the backoff
])
def test_a_retry_after_past_the_retry_budget_fails_that_request_and_pauses_no_other(once_throttled, retry_after,
                                                                                    gives_up) -> None:
    _OnceThrottled.retry_after, _OnceThrottled.arrivals = retry_after, []
    params = JudgeParams.from_mapping(dict(model="m", backend="http", base_url=once_throttled, max_concurrency=2,
                                           backoff_base_s=0.001, backoff_cap_s=0.001, retry_budget_s=5))
    backend = HttpChatBackend(params)
    answers = _chat_guarded(backend, [ChatRequest(f"r{i}", ({"role": "user", "content": f"x{i}"},), 5) for i in range(6)])
    errors = [a.error for a in answers if a.error]
    if gives_up:
        assert len(errors) == 1 and "would pass retry_budget_s (5 s)" in errors[0], errors
        assert len(_OnceThrottled.arrivals) == 6
    else:
        assert not errors and len(_OnceThrottled.arrivals) == 7
    assert [a.text for a in answers].count("ok") == 6 - len(errors)
    assert backend.limit.pause_left_s == 0.0


def test_requests_with_the_same_body_are_sent_once(once_throttled) -> None:
    _OnceThrottled.retry_after, _OnceThrottled.arrivals = "0", [b"not first"]  # no 429
    params = JudgeParams.from_mapping(dict(model="m", backend="http", base_url=once_throttled, max_concurrency=4))
    requests = [ChatRequest(f"r{i}", ({"role": "user", "content": "same" if i < 4 else "other"},), 5) for i in range(5)]
    with throughput.part_meter() as meter:  # counters are per thread: called here
        answers = HttpChatBackend(params).chat(requests)
    assert len(_OnceThrottled.arrivals) == 1 + 2
    assert [a.request_id for a in answers] == [r.request_id for r in requests] and {a.text for a in answers} == {"ok"}
    assert meter.counters["judge_http_requests"] == 2 and meter.counters["judge_http_cached"] == 3


class _Trickling(BaseHTTPRequestHandler):
    """Answers 200 with a whole Content-Length, then its body a byte at a time, each well within a read timeout."""

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        import time

        self.rfile.read(int(self.headers["Content-Length"]))
        data = json.dumps({"choices": [{"message": {"content": "ok" * 200}, "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            for i in range(len(data)):
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                time.sleep(0.02)
        except OSError:  # the client gave up: expected
            pass


def test_a_server_that_trickles_its_answer_is_cut_off_at_timeout_s() -> None:
    with local_http_server(_Trickling) as url:
        params = JudgeParams.from_mapping(dict(model="m", backend="http", base_url=url, max_retries=0, timeout_s=0.5))
        [answer] = _chat_guarded(HttpChatBackend(params), [ChatRequest("r0", ({"role": "user", "content": "x"},), 5)])
    assert answer.text is None and answer.error.startswith("timeout: no whole answer within timeout_s (0.5 s)")
