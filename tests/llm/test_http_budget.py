"""Spending caps of an HTTP judge against a local server that counts every call and bills what
it reports: a cap below the run's need stops the judge stage cleanly (exit status 10, the reason
in the manifest), nothing over the cap is ever sent, no paid answer is lost, and `--resume` with
the cap raised finishes the run without repeating a call; the rows equal an uncapped run's."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from engine import runner
from engine.config import load_config
from engine.errors import BudgetStopError, ConfigError
from engine.judge.params import JudgeParams
from engine.records import JUDGMENT_KEY
from tests.support.http_server import local_http_server, send_body
from tests.support.paths import PYTHON, REPO
from tests.support.samples import make_sample, write_jsonl

PRICE = {"input": 1000.0, "output": 4000.0}  # per million tokens: a call costs about a unit
LABELS = ("correct", "partially_correct", "incorrect")
COMPLETION_TOKENS = 30


class _Counting(BaseHTTPRequestHandler):
    calls: dict[str, int] = {}  # sha1 of the body -> calls
    billed: list[tuple[int, int]] = []  # (prompt, completion) tokens of every answer given
    arrivals = 0
    victim: subprocess.Popen | None = None  # killed when the `kill_at`-th request arrives
    kill_at = 0
    lock = threading.Lock()

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        with self.lock:
            _Counting.arrivals += 1
            if self.victim is not None and _Counting.arrivals == self.kill_at:  # the judging process dies mid-part
                os.kill(self.victim.pid, signal.SIGKILL)
                return
        body = json.loads(raw)
        user = body["messages"][-1]["content"]
        # a tokenizer of about four bytes a token, as real ones on English and code
        prompt_tokens = sum(len(m["content"].encode()) for m in body["messages"]) // 4 + 10
        with self.lock:
            key = hashlib.sha1(raw).hexdigest()
            self.calls[key] = self.calls.get(key, 0) + 1
            self.billed.append((prompt_tokens, COMPLETION_TOKENS))
        candidates = json.loads(user.rsplit("--- TEXT TO EVALUATE ---\n", 1)[1])["model_predictions"]
        evaluations = [{"model_name": name, "errors": [], "explanation": "", "overall_quality": LABELS[len(comment) % 3]}
                       for name, comment in (list(c.values()) for c in candidates)]
        data = json.dumps({"choices": [{"message": {"content": json.dumps({"evaluations": evaluations})},
                                        "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": COMPLETION_TOKENS}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    @classmethod
    def spent(cls) -> float:
        return sum(p * PRICE["input"] + c * PRICE["output"] for p, c in cls.billed) / 1e6


@pytest.fixture(scope="module")
def server():
    with local_http_server(_Counting) as url:
        yield url


def _config(folder: Path, server: str, budget: dict | None = None, concurrency: int = 3, **caps) -> Path:
    rows = []
    for f in range(8):
        reference = f"// Returns element {f} of the list."
        source = f"class C{f} {{\n    {reference}\n    int f() {{ return {f}; }}\n}}\n"
        for g in range(2):
            rows.append(make_sample(f"f{f}/g{g}", prediction=" element" + "!" * (f + g), source=source,
                                    comment_start=source.index(reference), comment_end=source.index(reference) + len(reference),
                                    reference=reference, prime="// Returns", generator=f"g{g}", file_id=f"f{f}"))
    input_path = write_jsonl(folder / "in.jsonl", rows)
    judge = dict(model="served-judge", backend="http", base_url=server, strategies=["standard", "cot"], max_tokens=64,
                 max_concurrency=concurrency, price_per_million=PRICE, **caps)
    section = {"judges": [judge], **({"budget": budget} if budget else {})}
    config = folder / f"config-{len(list(folder.glob('config-*.yaml')))}.yaml"
    config.write_text(f"name: judge-budget\ninput: {input_path}\npart_size: 6\nstages: [judge]\n"
                      f"judge: {json.dumps(section)}\n")
    return config


def _rows(run: Path) -> list[dict]:
    rows = pq.read_table(run / "judgments").drop(["latency_s"]).to_pylist()
    return sorted(rows, key=lambda r: tuple(r[k] for k in JUDGMENT_KEY))


def _reset() -> None:
    _Counting.calls.clear()
    _Counting.billed.clear()
    _Counting.arrivals, _Counting.victim = 0, None


def _cli(config: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([PYTHON, "-m", "engine.cli", "run", str(config), "--out", str(out), *extra], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))


def test_answers_paid_before_a_crash_mid_part_are_not_paid_again(tmp_path, server) -> None:
    """SIGKILL while the first part's fifth request is in flight: its four answers are on disk,
    --resume takes them from there and every call is made exactly once."""
    _reset()
    config = _config(tmp_path, server, max_cost=1e6, concurrency=1)  # one at a time: four answered, none in flight
    _Counting.kill_at = 5
    _Counting.victim = crashed = _cli(config, tmp_path / "run")
    crashed.communicate(timeout=600)
    assert crashed.returncode == -9 and len(_Counting.calls) == 4
    _Counting.victim = None
    resumed = _cli(config, tmp_path / "run", "--resume")
    _out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err[-3000:]
    assert len(_Counting.calls) == 16 and set(_Counting.calls.values()) == {1}
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    [task] = [t for t in manifest["throughput"]["tasks"].values() if t.get("stage") == "judge"]
    assert task["counters"]["judge_http_cached"] == 4 and task["counters"]["judge_http_requests"] == 12


def test_a_cost_cap_stops_cleanly_and_resume_with_a_raised_cap_repeats_no_call(tmp_path, server) -> None:
    _reset()
    runner.execute_run(load_config(_config(tmp_path, server)), str(tmp_path / "clean"), executor_name="local")
    all_calls, full_cost = len(_Counting.calls), _Counting.spent()
    assert all_calls == 16  # 8 files x (standard, cot)

    _reset()
    cap = full_cost / 2
    stopped = subprocess.run([PYTHON, "-m", "engine.cli", "run", str(_config(tmp_path, server, max_cost=cap)),
                              "--out", str(tmp_path / "run")], capture_output=True, text=True, cwd=REPO,
                             env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert stopped.returncode == 10, stopped.stderr[-3000:]
    assert "judge.judges[0].max_cost" in stopped.stderr and "--resume" in stopped.stderr
    assert 0 < len(_Counting.calls) < all_calls
    assert _Counting.spent() <= cap  # never over the cap, whatever the server billed
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "stopped" and "max_cost" in manifest["budget_stop"]["reasons"][0]
    paid = sum(1 for path in (tmp_path / "run" / "judge_cache").rglob("*.jsonl") for _line in path.open())
    assert paid == len(_Counting.calls)  # every paid answer is on disk, though its part never committed

    first = dict(_Counting.calls)
    raised = load_config(_config(tmp_path, server, max_cost=cap * 4))
    summary = runner.execute_run(raised, str(tmp_path / "run"), resume=True, executor_name="local")
    assert summary.status == "complete"
    assert set(_Counting.calls) >= set(first) and set(_Counting.calls.values()) == {1}  # no call made twice
    assert len(_Counting.calls) == all_calls
    assert _rows(tmp_path / "run") == _rows(tmp_path / "clean")
    # the report's usage: the tokens and cost the server billed over both runs, each call once
    usage = pq.read_table(tmp_path / "run" / "judge_analysis" / "usage.parquet").to_pylist()
    assert sum(u["calls"] for u in usage) == all_calls
    assert sum(u["prompt_tokens"] for u in usage) == sum(p for p, _c in _Counting.billed)
    assert sum(u["cost"] for u in usage) == pytest.approx(_Counting.spent())
    from engine.judge.report import judge_section

    _anchor, _title, html = judge_section(tmp_path / "run")
    assert "<th>cost</th>" in html and f"{usage[0]['cost']:.3f}" in html
    # what bench reads after its sample: the completion tokens a call, as the server billed them
    from engine.judge.forecast import measured_completion

    measured = measured_completion(tmp_path / "run")
    assert set(measured) == {("served-judge", "standard", "en"), ("served-judge", "cot", "en")}
    assert set(measured.values()) == {COMPLETION_TOKENS}


def test_config_check_prints_the_forecast_in_one_line(tmp_path, server, capsys) -> None:
    from engine.cli import main

    _reset()
    assert main(["config", "check", str(_config(tmp_path, server, max_cost=5))]) == 0
    [line] = [line for line in capsys.readouterr().out.splitlines() if "judge forecast" in line]
    assert line.strip().startswith("judge forecast: 16 calls,") and "(some estimated: bytes / 3.5" in line
    assert "≤ 1,024 completion tokens" in line and "cost ≤" in line
    assert not _Counting.calls  # nothing was sent


def test_a_run_wide_token_cap_holds_across_parts(tmp_path, server) -> None:
    _reset()
    cap = 40000  # room for a few requests' worst case (their bytes), not for all 16
    with pytest.raises(BudgetStopError, match="judge.budget.max_prompt_tokens 40000"):
        runner.execute_run(load_config(_config(tmp_path, server, budget={"max_prompt_tokens": cap})), str(tmp_path / "run"),
                           executor_name="local")
    assert 4 < len(_Counting.billed) < 16 and sum(p for p, _c in _Counting.billed) <= cap


def test_caps_and_prices_are_checked_and_left_out_of_the_identity(tmp_path, server) -> None:
    base = dict(model="m", backend="http", base_url=server)
    with pytest.raises(ConfigError, match="max_cost.*price_per_million"):
        JudgeParams.from_mapping({**base, "max_cost": 5})
    with pytest.raises(ConfigError, match="price_per_million"):
        JudgeParams.from_mapping({**base, "price_per_million": {"input": 1}})
    with pytest.raises(ConfigError, match="max_prompt_tokens"):
        JudgeParams.from_mapping({**base, "max_prompt_tokens": 0})
    with pytest.raises(ConfigError, match="did you mean 'output'"):
        JudgeParams.from_mapping({**base, "price_per_million": {"input": 1, "ouput": 2}})
    with pytest.raises(ConfigError) as negative:
        load_config(_config(tmp_path, server, budget={"max_cost": -1}))
    assert "judge.budget.max_cost: got -1" in str(negative.value) and "budget.budget" not in str(negative.value)
    plain = JudgeParams.from_mapping(base)
    capped = JudgeParams.from_mapping({**base, "max_cost": 5, "price_per_million": PRICE, "max_completion_tokens": 9})
    assert plain.task_name() == capped.task_name()
    from engine.config import config_hash

    a, b = load_config(_config(tmp_path, server)), load_config(_config(tmp_path, server, budget={"max_cost": 1}, max_cost=2))
    assert config_hash(a, "x") == config_hash(b, "x")


class _NoUsage(BaseHTTPRequestHandler):
    calls = 0

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        _NoUsage.calls += 1
        data = json.dumps({"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}).encode()
        send_body(self, data)


def test_a_server_that_reports_no_usage_is_charged_the_worst_case(tmp_path) -> None:
    from engine.errors import BudgetExhaustedError
    from engine.llm.http_backend import HttpChatBackend
    from engine.llm.http_budget import Caps, JudgeBudget, prompt_token_bound
    from engine.llm.requests import ChatRequest

    with local_http_server(_NoUsage) as url:
        params = JudgeParams.from_mapping(dict(model="m", backend="http", base_url=url, max_concurrency=1,
                                               max_prompt_tokens=500))
        budget = JudgeBudget(tmp_path, "t", 0, Caps.of(params, "judge.judges[0]"), Caps(where="judge.budget"), None)
        # distinct bodies of one length (requests with the same body would be sent once)
        requests = [ChatRequest(f"r{i}", ({"role": "user", "content": f"{i}" + "x" * 99},), 5) for i in range(10)]
        with pytest.raises(BudgetExhaustedError, match="max_prompt_tokens 500"):
            HttpChatBackend(params, budget=budget).chat(requests)
    bound = prompt_token_bound(requests[0].messages)
    assert _NoUsage.calls == 500 // bound and budget.ledger.spent("t").prompt_tokens == _NoUsage.calls * bound


class _Misbehaving(BaseHTTPRequestHandler):
    """Bills every request it reads (prompt: bytes / 4 + 10, completion: 3) and answers as `mode`
    says: `usage` (the answer with `usage` as given), `content` (`content` as the message),
    `html` (a 200 that is no JSON) or `reset` (the first call of each body is reset after billing)."""

    mode, usage, content = "usage", None, "ok"
    arrivals: list[bytes] = []
    billed: list[tuple[int, int]] = []
    lock = threading.Lock()

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        import socket
        import struct

        raw = self.rfile.read(int(self.headers["Content-Length"]))
        prompt_tokens = sum(len(m["content"].encode()) for m in json.loads(raw)["messages"]) // 4 + 10
        with self.lock:
            seen = raw in self.arrivals
            self.arrivals.append(raw)
            self.billed.append((prompt_tokens, 3))
        if self.mode == "reset" and not seen:  # the work is done and billed, the answer never arrives
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            return
        if self.mode == "html":
            data = b"<html>upstream error</html>"
        else:
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 3} if self.mode in ("reset", "content") else self.usage
            data = json.dumps({"choices": [{"message": {"content": self.content if self.mode == "content" else "ok"},
                                            "finish_reason": "stop"}], "usage": usage}).encode()
        send_body(self, data)


@pytest.fixture(scope="module")
def misbehaving():
    with local_http_server(_Misbehaving) as url:
        yield url


def _misbehave(mode: str, usage=None, content=None) -> None:
    _Misbehaving.mode, _Misbehaving.usage, _Misbehaving.content = mode, usage, content
    _Misbehaving.arrivals, _Misbehaving.billed = [], []


MAX_TOKENS = 20


def _question(i: int) -> str:
    return f"question {i} " + "x" * 100  # one length for i < 10


def _bound() -> int:
    from engine.llm.http_budget import prompt_token_bound

    return prompt_token_bound(({"role": "user", "content": _question(0)},))


def _chat_capped(folder: Path, url: str, n: int, **options):
    """n distinct requests through the HTTP backend with a budget (the answers, or the exception
    it raised) and the budget; run in a thread so that a hang fails the test instead of stalling it."""
    from engine.llm.http_backend import HttpChatBackend
    from engine.llm.http_budget import Caps, JudgeBudget
    from engine.llm.requests import ChatRequest

    params = JudgeParams.from_mapping(dict(model="m", backend="http", base_url=url, max_concurrency=1, backoff_base_s=0.001,
                                           backoff_cap_s=0.001, price_per_million=PRICE, **options))
    budget = JudgeBudget(folder, "t", 0, Caps.of(params, "judge.judges[0]"), Caps(where="judge.budget"), PRICE)
    requests = [ChatRequest(f"r{i}", ({"role": "user", "content": _question(i)},), MAX_TOKENS)
                for i in range(n)]
    out: dict = {}

    def chat() -> None:
        try:
            out["answers"] = HttpChatBackend(params, budget=budget).chat(requests)
        except Exception as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    worker = threading.Thread(target=chat, daemon=True)
    worker.start()
    worker.join(120)  # a guard against a hang (a leaked slot waits forever), not a speed check
    assert not worker.is_alive(), "the batch hung"
    return out, budget, requests


def _worst_prompt(requests) -> int:
    from engine.llm.http_budget import prompt_token_bound

    [bound] = {prompt_token_bound(r.messages) for r in requests}
    return bound


@pytest.mark.parametrize("usage, worst", [
    ("valid", (False, False)),
    ({"prompt_tokens": -100000, "completion_tokens": 3}, (True, False)),  # negative: would turn every cap off
    ({"prompt_tokens": "PROMPT"}, (False, True)),  # completion missing: not 0
    ({"prompt_tokens": "abc", "completion_tokens": 3}, (True, False)),
    ({"prompt_tokens": 1.5, "completion_tokens": 3}, (True, False)),
    ({"prompt_tokens": float("inf"), "completion_tokens": 3}, (True, False)),  # Infinity in the JSON
    ("lots", (True, True)),  # usage no object
])
def test_usage_that_is_no_count_of_tokens_is_charged_its_worst_case(tmp_path, misbehaving, usage, worst) -> None:
    from engine.llm.http_budget import AnswerCache, ledger_of

    if usage == "valid":
        usage = {"prompt_tokens": "PROMPT", "completion_tokens": 3}

    _misbehave("usage")
    prompt_real = None
    if isinstance(usage, dict) and usage.get("prompt_tokens") == "PROMPT":
        # every request has the same length, so one server-side count serves all
        prompt_real = len(_question(0).encode()) // 4 + 10
        usage = {**usage, "prompt_tokens": prompt_real}
    _Misbehaving.usage = usage
    out, budget, requests = _chat_capped(tmp_path, misbehaving, 4)
    assert [a.text for a in out["answers"]] == ["ok"] * 4 and len(_Misbehaving.arrivals) == 4
    prompt = _worst_prompt(requests) if worst[0] else prompt_real or 0
    completion = MAX_TOKENS if worst[1] else 3
    spent = ledger_of(tmp_path).spent("t")
    assert (spent.prompt_tokens, spent.completion_tokens) == (4 * prompt, 4 * completion)
    assert spent.cost == pytest.approx(4 * (prompt * PRICE["input"] + completion * PRICE["output"]) / 1e6)
    assert len(AnswerCache(tmp_path, "t", 0).answers) == 4  # kept: a resumed run does not pay again


def test_a_negative_usage_does_not_turn_the_caps_off(tmp_path, misbehaving) -> None:
    from engine.errors import BudgetExhaustedError

    _misbehave("usage", {"prompt_tokens": -100000, "completion_tokens": -5})
    out, budget, requests = _chat_capped(tmp_path, misbehaving, 10, max_prompt_tokens=3 * _bound() + 10,
                                         max_completion_tokens=10 * MAX_TOKENS)
    assert isinstance(out["error"], BudgetExhaustedError) and "max_prompt_tokens" in str(out["error"])
    assert len(_Misbehaving.arrivals) == 3  # three worst cases fit, the fourth is not sent


@pytest.mark.parametrize("mode, content", [("html", None), ("content", 123), ("content", {"label": "correct"}),
                                           ("content", ["a"])])
def test_a_200_that_cannot_be_read_is_charged_its_worst_case_and_fails_with_a_reason(tmp_path, misbehaving, monkeypatch,
                                                                                     mode, content) -> None:
    from engine.llm.http_budget import AnswerCache, ledger_of

    monkeypatch.setenv("JUDGE_TEST_KEY", "sekret-key-123")  # redaction runs on every answer
    _misbehave(mode, content=content)
    out, budget, requests = _chat_capped(tmp_path, misbehaving, 3, api_key_env="JUDGE_TEST_KEY")
    answers = out["answers"]
    assert [a.text for a in answers] == [None] * 3  # 123 is not stored as a number, nor as text
    assert all(a.error.startswith("the server's answer is not a chat completion") for a in answers)
    if mode == "content":
        assert all(f"content is {type(content).__name__}, not text" in a.error for a in answers)
    assert len(_Misbehaving.arrivals) == 3  # a bad 200 is not retried
    worst = (3 * _worst_prompt(requests), 3 * MAX_TOKENS)
    assert (budget.ledger.spent("t").prompt_tokens, budget.ledger.spent("t").completion_tokens) == worst
    assert not AnswerCache(tmp_path, "t", 0).answers  # nothing to reuse ...
    again = ledger_of(tmp_path)  # ... but the charge is on disk: read back from the cache files alone
    again._since.clear()
    again.refresh()
    assert (again.spent("t").prompt_tokens, again.spent("t").completion_tokens) == worst


def test_every_attempt_that_may_have_been_billed_is_charged(tmp_path, misbehaving) -> None:
    """The server does the work, bills it and resets the connection before answering; the retry is
    answered. Both attempts are billed, so both are charged: the ledger is never below the bill."""
    _misbehave("reset")
    out, budget, requests = _chat_capped(tmp_path, misbehaving, 3)
    assert [a.text for a in out["answers"]] == ["ok"] * 3
    assert len(_Misbehaving.arrivals) == 6
    spent = budget.ledger.spent("t")
    answered = _Misbehaving.billed[1][0]
    assert spent.prompt_tokens == 3 * _worst_prompt(requests) + 3 * answered
    assert spent.completion_tokens == 3 * MAX_TOKENS + 3 * 3
    assert spent.prompt_tokens >= sum(p for p, _c in _Misbehaving.billed)
    charged = [json.loads(line) for path in (tmp_path / "judge_cache").rglob("*.jsonl") for line in path.open()
               if "charged" in line]
    assert len(charged) == 3


def test_a_retry_that_would_pass_the_cap_is_not_sent(tmp_path, misbehaving) -> None:
    """Room for three worst cases: r0 is reset (charged in full) and answered on its retry (a few
    tokens); r1 is reset too, and its retry, a fourth worst case, is not sent."""
    from engine.errors import BudgetExhaustedError

    _misbehave("reset")
    out, _budget, requests = _chat_capped(tmp_path, misbehaving, 2, max_prompt_tokens=3 * _bound())
    assert isinstance(out["error"], BudgetExhaustedError) and f"max_prompt_tokens {3 * _bound()}" in str(out["error"])
    assert len(_Misbehaving.arrivals) == 3
