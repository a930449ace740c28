"""An HTTP judge behind a local fault-injecting server, under the runner.

Every request's first attempt meets one fault (429 with Retry-After, 500, a hang past the
timeout, a body cut short) or none, chosen from the request's content; retries within the
budget end in judgments equal to a fault-free run, each exactly once. Requests that never
succeed (503 until the retries are spent, a 401 whose body echoes the request's headers) end
as one failed (`api_error`) judgment row each, with the reason, counted in the manifest and the
report. The API key is in no file of the run directory and no log line.
"""
from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from engine import runner
from engine.config import load_config
from engine.judge.params import JudgeParams
from engine.judge.report import http_request_rates, judge_section
from engine.llm.http_backend import REDACTED, HttpChatBackend
from engine.llm.requests import ChatRequest
from engine.records import JUDGMENT_KEY
from tests.support.http_server import local_http_server
from tests.support.run_compare import assert_runs_equal
from tests.support.samples import make_sample, write_jsonl

KEY = "sk-faults-SECRET-24680"
LABELS = ("correct", "partially_correct", "incorrect")
FAULTS = ("429", "500", "hang", "cut", None)
RETRY_AFTER_S = 0.2
TIMEOUT_S = 0.3


class _Faulty(BaseHTTPRequestHandler):
    faults_on = False
    always: dict[str, str] = {}  # marker in the prompt -> "503" | "401echo"
    attempts: dict[str, list[tuple[float, str | None]]] = {}
    lock = threading.Lock()

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        body = json.loads(raw)
        user = body["messages"][-1]["content"]
        key = hashlib.sha1(raw).hexdigest()
        fault = FAULTS[int(key, 16) % len(FAULTS)] if self.faults_on else None
        for marker, mode in self.always.items():
            if marker in user:
                fault = mode
        with self.lock:
            seen = self.attempts.setdefault(key, [])
            first = not seen
            seen.append((time.monotonic(), fault))
        if fault == "503":
            return self._status(503)
        if fault == "401echo":  # a proxy that quotes the request back, headers and all
            return self._status(401, body=json.dumps({"error": "bad key", "headers": dict(self.headers)}).encode())
        if first and fault == "429":
            return self._status(429, {"Retry-After": str(RETRY_AFTER_S)})
        if first and fault == "500":
            return self._status(500)
        if first and fault == "hang":
            time.sleep(TIMEOUT_S + 0.3)
            return self._status(504)
        data = self._answer(user)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if first and fault == "cut":
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(data)

    @staticmethod
    def _answer(user: str) -> bytes:
        candidates = json.loads(user.rsplit("--- TEXT TO EVALUATE ---\n", 1)[1])["model_predictions"]
        evaluations = [{"model_name": name, "errors": ["SE-MD"] if len(comment) % 2 else [], "explanation": "",
                        "overall_quality": LABELS[len(comment) % 3]}
                       for name, comment in (list(c.values()) for c in candidates)]
        return json.dumps({"choices": [{"message": {"content": json.dumps({"evaluations": evaluations})},
                                        "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}).encode()

    def _status(self, code: int, headers: dict | None = None, body: bytes = b"") -> None:
        try:
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:  # the client gave up (timeout)
            pass


@pytest.fixture(scope="module")
def server():
    with local_http_server(_Faulty) as url:
        yield url


def _config(tmp_path: Path, server: str, **judge) -> Path:
    rows = []
    for f in range(6):
        reference = f"// Returns element {f} of the list."
        source = f"class C{f} {{\n    {reference}\n    int f() {{ return {f}; }}\n}}\n"
        for g in range(2):
            rows.append(make_sample(f"f{f}/g{g}", prediction=" element" + "!" * (f + g), language=("en", "nl")[f % 2],
                                    source=source, comment_start=source.index(reference),
                                    comment_end=source.index(reference) + len(reference), reference=reference,
                                    prime="// Returns", generator=f"g{g}", file_id=f"f{f}"))
    input_path = write_jsonl(tmp_path / "in.jsonl", rows)
    options = dict(model="served-judge", backend="http", base_url=server, api_key_env="JUDGE_FAULTS_KEY",
                   strategies=["standard", "hierarchical"], max_concurrency=4, timeout_s=TIMEOUT_S, max_retries=3,
                   backoff_base_s=0.01, backoff_cap_s=0.05, retry_budget_s=5, **judge)
    config = tmp_path / "config.yaml"
    config.write_text(f"name: judge-faults\ninput: {input_path}\npart_size: 4\nstages: [judge]\n"
                      f"judge:\n  judges:\n    - {json.dumps(options)}\n")
    return config


def _rows(run: Path) -> list[dict]:
    rows = pq.read_table(run / "judgments").drop(["latency_s"]).to_pylist()
    return sorted(rows, key=lambda r: tuple(r[k] for k in JUDGMENT_KEY))


def _no_key_anywhere(run: Path, log: str) -> None:
    for path in run.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in log


@pytest.fixture(scope="module")
def clean(tmp_path_factory, server) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("judge-faults")
    config = _config(folder, server)
    _Faulty.faults_on, _Faulty.always = False, {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUDGE_FAULTS_KEY", KEY)
        runner.execute_run(load_config(config), str(folder / "clean"), executor_name="local")
    return config, folder / "clean"


def test_transient_faults_are_retried_to_the_clean_output(clean, tmp_path, monkeypatch, caplog) -> None:
    config, clean_run = clean
    monkeypatch.setenv("JUDGE_FAULTS_KEY", KEY)
    _Faulty.faults_on, _Faulty.always = True, {}
    _Faulty.attempts.clear()
    with caplog.at_level(logging.INFO):
        runner.execute_run(load_config(config), str(tmp_path / "run"), executor_name="local")
    _Faulty.faults_on = False
    firsts = [seen[0][1] for seen in _Faulty.attempts.values()]
    assert {f for f in firsts} == set(FAULTS)  # every fault was met
    for seen in _Faulty.attempts.values():
        assert len(seen) == (1 if seen[0][1] is None else 2)  # one retry per fault, none for the rest
        if seen[0][1] == "429":  # Retry-After honoured: the retry came no sooner than asked
            assert seen[1][0] - seen[0][0] >= RETRY_AFTER_S
    got = _rows(tmp_path / "run")
    assert got == _rows(clean_run)  # each judgment once
    assert_runs_equal(tmp_path / "run", clean_run)  # bit for bit, as `babelscore diff` sees it
    assert {r["response_status"] for r in got} == {"ok"}
    faulted = sum(f is not None for f in firsts)
    [rates] = http_request_rates(tmp_path / "run")
    assert (rates["requests"], rates["retries"], rates["failed"]) == (len(firsts), faulted, 0)
    # the 429s counted as such; with the hangs (timeouts) they are the overload answers that cut the concurrency
    assert rates["http_429"] == firsts.count("429") and rates["overloads"] == firsts.count("429") + firsts.count("hang")
    assert rates["requests_per_s"] > 0 and rates["concurrency_cuts"] >= 1
    _no_key_anywhere(tmp_path / "run", caplog.text)


def test_spent_budgets_are_one_failed_row_each_with_the_reason(clean, tmp_path, monkeypatch, caplog) -> None:
    config, clean_run = clean
    monkeypatch.setenv("JUDGE_FAULTS_KEY", KEY)
    _Faulty.faults_on, _Faulty.always = False, {"class C0 ": "503", "class C1 ": "401echo"}
    _Faulty.attempts.clear()
    with caplog.at_level(logging.INFO):
        runner.execute_run(load_config(config), str(tmp_path / "run"), executor_name="local")
    _Faulty.always = {}
    got, want = _rows(tmp_path / "run"), _rows(clean_run)
    assert [tuple(r[k] for k in JUDGMENT_KEY) for r in got] == [tuple(r[k] for k in JUDGMENT_KEY) for r in want]
    for g, w in zip(got, want):
        if g["file_id"] == "f0":
            assert g["response_status"] == "api_error" and "HTTP 503 after 4 attempt(s)" in g["error"]
        elif g["file_id"] == "f1":
            assert g["response_status"] == "api_error" and g["error"].startswith("HTTP 401 (not retried): ")
            assert REDACTED in g["error"] and "bad key" in g["error"]  # the echoed Authorization header, redacted
        else:
            assert g == w
    attempts = {k: len(v) for k, v in _Faulty.attempts.items()}
    assert sorted(set(attempts.values())) == [1, 4]  # 503s stopped at max_retries + 1, the 401s at once
    [rates] = http_request_rates(tmp_path / "run")
    assert rates["failed"] == 2 * 8 and rates["retries"] == 3 * 8  # 8 calls per file: standard + 7 clusters
    anchor, _title, html = judge_section(tmp_path / "run")
    assert "HTTP judge requests" in html and f"{rates['failure_rate']:.3f}" in html
    _no_key_anywhere(tmp_path / "run", caplog.text)


def test_retry_after_is_waited_for_and_the_budget_stops_retries(server, monkeypatch) -> None:
    """The waits the backend asks for, recorded instead of slept: a Retry-After beyond the cap
    is waited for in full; one that would pass retry_budget_s is not, and the request fails."""
    monkeypatch.setenv("JUDGE_FAULTS_KEY", KEY)
    waits: list[float] = []

    def backend(**kw) -> HttpChatBackend:
        options = dict(model="m", backend="http", base_url=server, api_key_env="JUDGE_FAULTS_KEY", timeout_s=TIMEOUT_S,
                       max_retries=3, backoff_base_s=0.01, backoff_cap_s=0.05)
        return HttpChatBackend(JudgeParams.from_mapping({**options, **kw}), sleep=waits.append)

    request = ChatRequest("r", ({"role": "user", "content": "class C9 --- TEXT TO EVALUATE ---\n"
                                 '{"model_predictions": [{"model_name": "g", "comment": "x"}]}'},), 20)
    _Faulty.always, _Faulty.faults_on = {"class C9 ": "503"}, False
    [answer] = backend(retry_budget_s=0.06).chat([request])
    assert waits == [0.01, 0.02]  # the third wait (0.04) would pass 0.06 s of waiting
    assert "after 3 attempt(s): the next wait (0.040 s) would pass retry_budget_s (0.06 s)" in answer.error
    _Faulty.always = {}
    with pytest.raises(Exception, match="retry_budget_s"):
        JudgeParams.from_mapping(dict(model="m", backend="http", base_url=server, retry_budget_s=-1))


def test_an_exception_that_echoes_the_request_headers_is_redacted(server, monkeypatch, caplog) -> None:
    """A failing path whose exception text holds the request's headers (as some proxies' and
    clients' errors do): the reason in the judgment and every log line are redacted."""
    import httpx

    monkeypatch.setenv("JUDGE_FAULTS_KEY", KEY)

    def refuses(client: httpx.Client, request: httpx.Request, **kwargs):
        # the header this test is about first, so that it lies within the 200 characters quoted
        headers = {"authorization": request.headers["authorization"], **dict(request.headers)}
        raise ConnectionError(f"proxy refused the request, headers {headers}")

    monkeypatch.setattr(httpx.Client, "send", refuses)
    backend = HttpChatBackend(JudgeParams.from_mapping(dict(
        model="m", backend="http", base_url=server, api_key_env="JUDGE_FAULTS_KEY", max_retries=1,
        backoff_base_s=0.01, backoff_cap_s=0.01)), sleep=lambda s: None)
    with caplog.at_level(logging.DEBUG):
        [answer] = backend.chat([ChatRequest("r", ({"role": "user", "content": "x"},), 20)])
    assert answer.error.startswith("connection error (ConnectionError: proxy refused the request, headers")
    assert f"'authorization': '{REDACTED}'" in answer.error and KEY not in answer.error
    assert "proxy refused" in caplog.text and KEY not in caplog.text
