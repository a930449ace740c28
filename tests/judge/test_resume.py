"""The judge stage under the runner: SIGKILL mid-stage, --resume, every judgment exactly once;
the API key never reaches the run directory or the logs."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from engine.records import JUDGMENT_KEY
from tests.support.http_server import local_http_server
from tests.support.paths import PYTHON, REPO
from tests.support.samples import make_sample, write_jsonl

KEY = "sk-resume-SECRET-987654321"
LABELS = ("correct", "partially_correct", "incorrect")


class _Judge(BaseHTTPRequestHandler):
    """Answers every call with one evaluation per candidate, its label a function of the comment."""

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        user = body["messages"][-1]["content"]
        candidates = json.loads(user.rsplit("--- TEXT TO EVALUATE ---\n", 1)[1])["model_predictions"]
        evaluations = []
        for candidate in candidates:
            name, comment = list(candidate.values())
            evaluations.append({"model_name": name, "errors": ["SE-MD"] if len(comment) % 2 else [],
                                "explanation": "", "overall_quality": LABELS[len(comment) % 3]})
        data = json.dumps({"choices": [{"message": {"content": json.dumps({"evaluations": evaluations})},
                                        "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def server():
    with local_http_server(_Judge) as url:
        yield url


def _inputs(tmp_path: Path, server: str) -> Path:
    rows = []
    for f in range(8):
        reference = f"// Returns element {f} of the list."
        source = f"class C{f} {{\n    {reference}\n    int f() {{ return {f}; }}\n}}\n"
        for g in range(3):
            rows.append(make_sample(f"f{f}/g{g}", prediction=" element" + "!" * (f + g), language=("en", "nl", "pl")[f % 3],
                                    source=source, comment_start=source.index(reference),
                                    comment_end=source.index(reference) + len(reference), reference=reference,
                                    prime="// Returns", generator=f"g{g}", file_id=f"f{f}"))
    input_path = write_jsonl(tmp_path / "in.jsonl", rows)
    config = tmp_path / "config.yaml"
    config.write_text(
        f"name: judge-resume\ninput: {input_path}\npart_size: 3\nstages: [judge]\n"
        "judge:\n  judges:\n"
        f"    - {{model: served-judge, backend: http, base_url: '{server}', api_key_env: JUDGE_RESUME_KEY,\n"
        "       strategies: [standard, hierarchical], prompt_languages: [sample, en], structured: [standard],\n"
        "       max_concurrency: 2, backoff_base_s: 0.01, backoff_cap_s: 0.05}\n"
    )
    return config


def _cli(config: Path, out: Path, *extra: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, JUDGE_RESUME_KEY=KEY, **(env_extra or {}))
    return subprocess.run([PYTHON, "-m", "engine.cli", "run", str(config), "--out", str(out), *extra],
                          capture_output=True, text=True, cwd=REPO, env=env)


def _rows(run: Path) -> list[dict]:
    rows = pq.read_table(run / "judgments").drop(["latency_s"]).to_pylist()
    return sorted(rows, key=lambda r: tuple(r[k] for k in JUDGMENT_KEY))


def test_sigkill_mid_judge_stage_then_resume_judges_each_once(tmp_path, server) -> None:
    config = _inputs(tmp_path, server)
    clean = _cli(config, tmp_path / "clean")
    assert clean.returncode == 0, clean.stderr
    crashed = _cli(config, tmp_path / "run", env_extra={"BABELSCORE_TEST_CRASH_AFTER_COMMITS": "1"})
    assert crashed.returncode == -9, crashed.stderr
    resumed = _cli(config, tmp_path / "run", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "complete"

    got, expected = _rows(tmp_path / "run"), _rows(tmp_path / "clean")
    keys = [tuple(r[k] for k in JUDGMENT_KEY) for r in got]
    # generators x strategies x prompt languages: `sample` and `en` coincide for the 3 English files.
    assert len(keys) == len(set(keys)) == 3 * 2 * (5 * 2 + 3 * 1)
    # Every (file, judge, strategy, prompt language) once: one set of generator rows each.
    calls = {(r["file_id"], r["task"], r["strategy"], r["prompt_language"]) for r in got}
    assert len(calls) == len(got) // 3
    assert got == expected
    assert {r["parse_status"] for r in got} == {"ok"}

    # The key was sent (the server would not care) but is written nowhere.
    for run in (tmp_path / "run", tmp_path / "clean"):
        for path in run.rglob("*"):
            if path.is_file():
                assert KEY.encode() not in path.read_bytes(), path
    for process in (clean, crashed, resumed):
        assert KEY not in process.stdout + process.stderr
    assert re.search("JUDGE_RESUME_KEY", (tmp_path / "run" / "manifest.json").read_text())  # the variable's name only


def test_the_runner_writes_the_analysis_of_a_finished_run(tmp_path, server) -> None:
    """The driver runs the judge stage's analysis after its parts (expert labels from the samples)."""
    config = _inputs(tmp_path, server)
    assert _cli(config, tmp_path / "run").returncode == 0
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["stages"]["judge-analysis"]["done"]
    paths = {name: tmp_path / "run" / "judge_analysis" / f"{name}.parquet" for name in ("agreement", "parse_rates")}
    agreement = pq.read_table(paths["agreement"]).to_pylist()
    # make_sample's expert label is set on every row: every judged candidate is a pair.
    assert sum(r["n"] for r in agreement) == sum(r["n_rows"] for r in agreement) == 78
    rates = pq.read_table(paths["parse_rates"]).to_pylist()
    assert {r["rate_ok"] for r in rates} == {1.0}


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")
def test_the_ray_executor_judges_like_the_local_one(tmp_path, server) -> None:
    """Judge parts on Ray workers (a local Ray, which inherits the key's variable) equal the local run."""
    config = _inputs(tmp_path, server)
    local = _cli(config, tmp_path / "local")
    assert local.returncode == 0, local.stderr
    on_ray = _cli(config, tmp_path / "ray", "--executor", "ray")
    assert on_ray.returncode == 0, on_ray.stderr[-3000:]
    assert _rows(tmp_path / "ray") == _rows(tmp_path / "local")
    assert KEY not in on_ray.stdout + on_ray.stderr
