"""The OpenAI-compatible judge backend against a local fault-injecting server."""
from __future__ import annotations

import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler

import pytest

from engine.errors import ModelLoadError
from engine.judge.params import JudgeParams
from engine.judge.parse import parse_response
from engine.llm.http_backend import HttpChatBackend, retry_after_seconds
from engine.llm.requests import ChatRequest
from tests.support.http_server import local_http_server

KEY = "sk-test-SECRET-0123456789"
ANSWER = json.dumps({"evaluations": [{"model_name": "g", "errors": [], "explanation": "", "overall_quality": "correct"}]})


class _Handler(BaseHTTPRequestHandler):
    seen: dict[str, int] = {}
    auth: list[str] = []
    lock = threading.Lock()

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        scenario = body["messages"][-1]["content"]
        with self.lock:
            count = self.seen[scenario] = self.seen.get(scenario, 0) + 1
            self.auth.append(self.headers.get("Authorization", ""))
        if scenario == "flaky429" and count == 1:
            return self._status(429, {"Retry-After": "0.05"})
        if scenario == "flaky500" and count == 1:
            return self._status(500)
        if scenario == "hang" and count == 1:
            time.sleep(0.6)
            return self._status(504)
        if scenario == "down":
            return self._status(503)
        if scenario == "bad":
            return self._status(400)
        payload = {"choices": [{"message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 11, "completion_tokens": 7}, "schema_seen": "response_format" in body}
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _status(self, code: int, headers: dict | None = None) -> None:
        try:
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", "0")
            self.end_headers()
        except OSError:  # the client gave up (timeout)
            pass


@pytest.fixture(scope="module")
def server():
    with local_http_server(_Handler) as url:
        yield url


def _backend(url: str, monkeypatch, **kw) -> HttpChatBackend:
    monkeypatch.setenv("JUDGE_TEST_KEY", KEY)
    options = dict(model="served-judge", backend="http", base_url=url, api_key_env="JUDGE_TEST_KEY", max_concurrency=4,
                   timeout_s=0.2, max_retries=2, backoff_base_s=0.01, backoff_cap_s=0.1)
    options.update(kw)
    return HttpChatBackend(JudgeParams.from_mapping(options))


def _request(scenario: str, schema=None) -> ChatRequest:
    return ChatRequest(scenario, ({"role": "system", "content": "s"}, {"role": "user", "content": scenario}), 50, schema=schema)


def test_retries_backoff_timeouts_and_final_failures(server, monkeypatch, caplog) -> None:
    _Handler.seen.clear()
    _Handler.auth.clear()
    backend = _backend(server, monkeypatch)
    scenarios = ["ok", "flaky429", "flaky500", "hang", "down", "bad"]
    with caplog.at_level(logging.DEBUG):
        answers = backend.chat([_request(s, schema={"type": "object"} if s == "ok" else None) for s in scenarios])
    by_id = {a.request_id: a for a in answers}
    assert [a.request_id for a in answers] == scenarios
    for ok in ("ok", "flaky429", "flaky500", "hang"):
        answer = by_id[ok]
        assert answer.error is None and answer.text == ANSWER and (answer.prompt_tokens, answer.completion_tokens) == (11, 7)
        assert parse_response(answer.text, answer.finish_reason).status == "ok"
    assert _Handler.seen == {"ok": 1, "flaky429": 2, "flaky500": 2, "hang": 2, "down": 3, "bad": 1}
    assert by_id["down"].error == "HTTP 503 after 3 attempt(s)"
    assert by_id["bad"].error == "HTTP 400 (not retried)"
    for failed in ("down", "bad"):
        assert parse_response(by_id[failed].text, by_id[failed].finish_reason, by_id[failed].error).status == "api_error"
    log = caplog.text
    # Retry-After (0.05 s) wins over the first backoff step (0.01 s); 503s back off 0.01 then 0.02 s.
    assert "judge request flaky429: HTTP 429; retry 1 of 2 in 0.050 s" in log
    assert "judge request flaky500: HTTP 500; retry 1 of 2 in 0.010 s" in log
    assert "judge request hang: timeout after 0.2 s; retry 1 of 2 in 0.010 s" in log
    assert "judge request down: HTTP 503; retry 2 of 2 in 0.020 s" in log
    # The key went to the server and nowhere else.
    assert set(_Handler.auth) == {f"Bearer {KEY}"}
    assert KEY not in log
    assert all(KEY not in repr(a) for a in answers)


def test_backoff_is_capped(server, monkeypatch, caplog) -> None:
    _Handler.seen.clear()
    backend = _backend(server, monkeypatch, max_retries=4, backoff_base_s=0.04, backoff_cap_s=0.06)
    with caplog.at_level(logging.WARNING):
        [answer] = backend.chat([_request("down")])
    assert answer.error == "HTTP 503 after 5 attempt(s)"
    waits = [line.rsplit(" in ", 1)[1] for line in caplog.text.splitlines() if "retry" in line]
    assert waits == ["0.040 s", "0.060 s", "0.060 s", "0.060 s"]


def test_missing_key_variable_is_named_without_a_value(monkeypatch) -> None:
    monkeypatch.delenv("NO_SUCH_JUDGE_KEY", raising=False)
    params = JudgeParams.from_mapping(dict(model="m", backend="http", base_url="http://127.0.0.1:9/v1", api_key_env="NO_SUCH_JUDGE_KEY"))
    with pytest.raises(ModelLoadError, match="NO_SUCH_JUDGE_KEY is not set"):
        HttpChatBackend(params)


def test_retry_after_forms() -> None:
    assert retry_after_seconds("2") == 2.0
    assert retry_after_seconds("0.5") == 0.5
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    assert retry_after_seconds("soon") is None
