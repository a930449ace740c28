"""The same numbers bit for bit (engine/numerics.py), checked with `babelscore diff` (engine/rundiff.py).

On a subset of the demo (one file per language, three generators each; noise; the demo's neural
scorers: all-MiniLM-L6-v2 BERTScore in `none` and `minimal`, tiny BART `bartscore` in `minimal`):

- a run killed with SIGKILL mid-score and resumed equals a clean run bit for bit;
- a part computed from its rows in another order equals the first computation bit for bit
  (canonical batching: a retried or resumed part never depends on how its rows were read);
- with `deterministic: batch_invariant`, part sizes 1, 7 and 55 give bit-for-bit equal runs.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from engine.config import BUILTIN_INPUTS, config_from_mapping
from engine.faults import CRASH_AFTER_COMMITS_ENV
from engine.rundiff import compare_runs
from engine.runner import execute_run
from tests.support.paths import PYTHON, REPO
from tests.support.samples import write_jsonl

pytest.importorskip("torch")

GENERATORS_PER_FILE = 3


def _subset(path: Path) -> Path:
    rows = [json.loads(line) for line in BUILTIN_INPUTS["demo"].read_text(encoding="utf-8").splitlines()]
    first_file: dict[str, str] = {}
    taken: dict[str, int] = {}
    keep = []
    for row in rows:
        file_id = first_file.setdefault(row["language"], row["file_id"])
        if row["file_id"] == file_id and taken.get(file_id, 0) < GENERATORS_PER_FILE:
            taken[file_id] = taken.get(file_id, 0) + 1
            keep.append(row)
    return write_jsonl(path, keep)


def _raw(input_path: Path, part_size: int, deterministic: str | None = None) -> dict:
    demo = yaml.safe_load((REPO / "configs" / "demo.yaml").read_text(encoding="utf-8"))
    scorers = []
    for scorer in demo["score"]["scorers"]:
        if scorer["kind"] == "embedding":
            scorers.append(dict(scorer, contexts=["none", "minimal"]))
        elif scorer["kind"] == "likelihood":
            scorers.append(dict(scorer, contexts=["minimal"], directions=["forward"]))
    raw = {"name": "bitwise", "input": str(input_path), "seed": 0, "part_size": part_size,
           "stages": ["noise", "score"], "noise": demo["noise"], "score": {"scorers": scorers}}
    if deterministic:
        raw["deterministic"] = deterministic
    return raw


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from engine.demo import prepare_demo_models
    from engine.runtime import DEMO_MODELS_ENV

    tmp = tmp_path_factory.mktemp("bitwise")
    previous = os.environ.get(DEMO_MODELS_ENV)
    os.environ[DEMO_MODELS_ENV] = str(tmp / "models")
    prepare_demo_models(tmp / "models")
    _subset(tmp / "in.jsonl")
    yield tmp
    if previous is None:  # later modules keep their own demo-model folder
        os.environ.pop(DEMO_MODELS_ENV, None)
    else:
        os.environ[DEMO_MODELS_ENV] = previous


def _cli(workspace: Path, raw: dict, out: Path, *extra: str, env_extra: dict | None = None):
    config = out.with_suffix(".yaml")
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([PYTHON, "-m", "engine.cli", "-q", "run", str(config), "--out", str(out), *extra],
                          capture_output=True, text=True, cwd=REPO, env=env)


def test_sigkill_then_resume_equals_a_clean_run_bit_for_bit(workspace: Path) -> None:
    raw = _raw(workspace / "in.jsonl", 7)
    clean = _cli(workspace, raw, workspace / "clean")
    assert clean.returncode == 0, clean.stderr
    # 2 parts (9 and 6 rows) per task; the count is per stage: killed after the first bartscore part
    crashed = _cli(workspace, raw, workspace / "resumed", env_extra={CRASH_AFTER_COMMITS_ENV: "3"})
    assert crashed.returncode == -9, crashed.stderr
    resumed = _cli(workspace, raw, workspace / "resumed", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((workspace / "resumed" / "manifest.json").read_text())["resumed"] == 1
    result = compare_runs(workspace / "clean", workspace / "resumed")
    assert result.rows_compared["scores"] > 0
    assert result.equal, result.render()


def test_a_part_read_in_another_order_computes_the_same_bits(workspace: Path, monkeypatch) -> None:
    """The demo's Dutch part (55 rows: enough equal-length sequences for ties in a batch), its
    bartscore computed again from its rows shuffled: a retried or resumed part reads its rows
    in whatever order, and its batches must not follow that order (on main: 7 rows moved by 1e-8)."""
    import pyarrow.parquet as pq

    import engine.part_execution as part_execution

    rows = [json.loads(line) for line in BUILTIN_INPUTS["demo"].read_text(encoding="utf-8").splitlines()]
    input_path = write_jsonl(workspace / "nl.jsonl", [r for r in rows if r["language"] == "nl"])
    raw = _raw(input_path, 55)
    raw["score"]["scorers"] = [dict(s, directions=["forward", "reverse"]) for s in raw["score"]["scorers"]
                               if s["kind"] == "likelihood"]
    config = config_from_mapping(raw, workspace)
    run = workspace / "order"
    execute_run(config, str(run))
    read = part_execution.read_part_input

    def shuffled(root, bound, index):
        table = read(root, bound, index)
        order = list(range(table.num_rows))
        random.Random(1).shuffle(order)
        return table.take(pa.array(order))

    monkeypatch.setattr(part_execution, "read_part_input", shuffled)
    from engine.stages.plan import build_plan

    plan = build_plan(config)
    [part] = plan.bound("score").parts(1)
    again = part_execution.execute_part(str(run), plan, part, {})
    key = ["sample_id", "noise", "metric", "context", "variant"]
    first = pq.read_table(run / part.relative_path)
    a = {tuple(r[k] for k in key): r["value"] for r in first.to_pylist()}
    b = {tuple(r[k] for k in key): r["value"] for r in again.to_pylist()}
    assert a.keys() == b.keys() and len(a) > 100
    moved = {k: (a[k], b[k]) for k in a if not (a[k] == b[k] or (a[k] != a[k] and b[k] != b[k]))}
    assert not moved, (len(moved), list(moved.items())[:3])


def test_batch_invariant_part_sizes_1_7_55_are_equal_bit_for_bit(workspace: Path) -> None:
    runs = {}
    for part_size in (1, 7, 55):
        config = config_from_mapping(_raw(workspace / "in.jsonl", part_size, "batch_invariant"), workspace)
        out = workspace / f"invariant-{part_size}"
        execute_run(config, str(out))
        runs[part_size] = out
    parts = {n: json.loads((run / "manifest.json").read_text())["counts"]["parts"] for n, run in runs.items()}
    assert parts[1] > parts[7] > parts[55] == 1, parts
    signature = next(iter(json.loads((runs[1] / "manifest.json").read_text())["signatures"].values()))
    assert "batching:invariant" in json.dumps(signature)
    for n in (7, 55):
        result = compare_runs(runs[1], runs[n])
        assert result.rows_compared["scores"] > 0
        assert result.equal, result.render()
