"""Adaptive concurrency of the HTTP judge: the AIMD rule on its own, then a batch against a local
server that answers 429 with Retry-After on a schedule."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler

import pytest
from conftest import local_http_server

from engine import throughput
from engine.judge.backends import ChatRequest
from engine.judge.concurrency import AdaptiveLimit
from engine.judge.config import JudgeParams
from engine.judge.http_backend import HttpChatBackend

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
