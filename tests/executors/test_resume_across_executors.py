"""Driver SIGKILLed mid-run, then resumed with the other executor: exactly-once, same values.

One chain of CLI runs on one run directory: local run killed after 2 commits -> Ray --resume
killed after 3 more -> local --resume to the end. So a local crash is resumed by Ray and a Ray
crash by the local executor (one Ray start, which is the slow part). The result must equal a
fault-free local run row for row.
"""
from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")

from engine.config import load_config
from engine.faults import CRASH_AFTER_COMMITS_ENV
from engine.records import SCORE_KEY
from engine.runner import execute_run, read_scores
from engine.stages.plan import build_plan
from tests.support.run_compare import assert_runs_equal

REPO = Path(__file__).resolve().parents[2]
N_PARTS = 8


def _cli(config: Path, out: Path, executor: str, resume: bool, crash_after: int | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != CRASH_AFTER_COMMITS_ENV}
    env["BABELSCORE_NO_PROGRESS"] = "1"
    if crash_after is not None:
        env[CRASH_AFTER_COMMITS_ENV] = str(crash_after)
    command = [sys.executable, "-m", "engine.cli", "run", str(config), "--out", str(out), "--executor", executor]
    command += ["--resume"] if resume else []
    return subprocess.run(command, check=False, capture_output=True, text=True, cwd=REPO, env=env, timeout=300)


def _manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def _rows(run_dir: Path) -> list[dict]:
    rows = read_scores(str(run_dir)).sort_by([(k, "ascending") for k in SCORE_KEY]).to_pylist()
    keys = [tuple(r[k] for k in SCORE_KEY) for r in rows]
    assert len(keys) == len(set(keys)), "duplicate score keys"
    return rows


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("resume-executors")
    spec = importlib.util.spec_from_file_location("make_synthetic", REPO / "bench" / "make_synthetic.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    input_path = module.write_synthetic(folder / "in.jsonl", 40)
    config = folder / "config.yaml"
    config.write_text(f"name: resume-x\ninput: {input_path}\npart_size: 5\nstages: [score]\nscore:\n  scorers:\n    - kind: lexical\n")
    execute_run(load_config(config), str(folder / "reference"), executor_name="local")
    return config, folder / "reference"


def test_kill_and_resume_across_executors(case, tmp_path) -> None:
    config, reference = case
    out = tmp_path / "run"

    killed = _cli(config, out, "local", resume=False, crash_after=2)
    assert killed.returncode == -9, killed.stderr[-3000:]
    manifest = _manifest(out)
    assert manifest["status"] == "running" and len(manifest["parts"]) == 2

    killed = _cli(config, out, "ray", resume=True, crash_after=3)
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert len(_manifest(out)["parts"]) == 5

    done = _cli(config, out, "local", resume=True, crash_after=None)
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = _manifest(out)
    assert manifest["status"] == "complete" and manifest["resumed"] == 2
    assert len(manifest["parts"]) == N_PARTS and not manifest["failed_parts"]
    # Exactly the planned part files: no temp files, no strays, no duplicates.
    files = sorted(p.name for p in (out / "scores").iterdir())
    assert files == sorted(Path(p.relative_path).name for p in build_plan(load_config(config)).bound("score").parts(N_PARTS))

    got, want = _rows(out), _rows(reference)
    assert len(got) == len(want) == manifest["counts"]["score_rows"]
    for g, w in zip(got, want):
        gv, wv = g.pop("value"), w.pop("value")
        assert g == w
        assert (math.isnan(gv) and math.isnan(wv)) or gv == wv
    assert_runs_equal(out, reference)  # and as `babelscore diff` sees the two run directories
