"""A new stage is one module (tests/support/toy_stage.py) and one registry line (added here): it runs
end to end under both executors, with its config section, seed, manifest signature, report
section and reuse, without any other file of the engine knowing it."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from engine.config import config_from_mapping
from engine.runner import execute_run
from engine.stages import registry
from tests.support.paths import REPO
from tests.support.samples import make_sample, write_jsonl
from tests.support.toy_stage import TOY_SCHEMA

TOY_LINE = ("toy", "tests.support.toy_stage:ToyStage")


@pytest.fixture
def toy_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one registry line, after the part stages that exist (before calibrate and report)."""
    lines = dict(registry.STAGES)
    names = list(lines)
    at = names.index("calibrate")
    ordered = {n: lines[n] for n in names[:at]} | dict([TOY_LINE]) | {n: lines[n] for n in names[at:]}
    monkeypatch.setattr(registry, "STAGES", ordered)
    # Ray workers import the module by name (tests.support.toy_stage): they see the repository like this process does.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))


def _config(tmp_path: Path, **extra):
    rows = [make_sample(f"f{i}/g", prediction=f" the name {i}") for i in range(5)]
    data = write_jsonl(tmp_path / "in.jsonl", rows)
    raw = {"input": str(data), "part_size": 2, "seed": 7, "stages": ["score", "toy", "report"],
           "score": {"scorers": [{"kind": "lexical", "metrics": ["bleu"]}]}, "toy": {"scale": 3}, **extra}
    return config_from_mapping(raw, tmp_path)


def _toy_rows(run: Path) -> list[dict]:
    return sorted(pq.read_table(run / "toy", schema=TOY_SCHEMA).to_pylist(), key=lambda r: r["sample_id"])


@pytest.mark.parametrize("executor", ["local", "ray"])
def test_a_toy_stage_from_its_own_module_runs_end_to_end(toy_registered, tmp_path: Path, executor: str) -> None:
    config = _config(tmp_path)
    assert config.section("toy").seed == 7 and config.section("toy").scale == 3  # the run seed reaches it
    if executor == "ray":
        ray = pytest.importorskip("ray")
        if ray.is_initialized():
            ray.shutdown()
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024 * 1024, logging_level="WARNING")
    try:
        summary = execute_run(config, str(tmp_path / "run"), executor_name=executor)
    finally:
        if executor == "ray":
            ray.shutdown()
    run = tmp_path / "run"
    rows = _toy_rows(run)
    reference = len(make_sample("x")["reference"])
    assert [r["sample_id"] for r in rows] == [f"f{i}/g" for i in range(5)]
    assert all(r["reference_chars"] == 3 * reference and r["seed"] == 7 for r in rows)
    manifest = json.loads((run / "manifest.json").read_text())
    assert summary.counts["toy_rows"] == 5 and manifest["status"] == "complete"
    (task,) = [t for t in manifest["signatures"] if t.startswith("toy-")]
    assert manifest["signatures"][task] == {"toy": "stage:toy|scale:3|seed:7"}
    page = (run / "report" / "index.html").read_text(encoding="utf-8")
    assert 'id="toy"' in page and f"3 toy part(s), {5 * 3 * reference} reference characters" in page


def test_a_toy_stage_declares_its_reuse_without_any_other_file(toy_registered, tmp_path: Path) -> None:
    execute_run(_config(tmp_path), str(tmp_path / "a"))
    execute_run(_config(tmp_path, reuse=[str(tmp_path / "a")]), str(tmp_path / "b"))
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    (task,) = [t for t in manifest["reuse"]["tasks"] if t.startswith("toy-")]
    assert manifest["reuse"]["tasks"][task]["reused"] == {str(tmp_path / "a"): 5}
    assert manifest["reuse"]["tasks"][task]["computed"] == 0
    assert _toy_rows(tmp_path / "b") == _toy_rows(tmp_path / "a")
