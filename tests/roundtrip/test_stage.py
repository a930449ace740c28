"""Stage `roundtrip`: rows per (task, language, generator, sample), parts, kill -9 and --resume."""
from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from engine.config import config_from_mapping
from engine.records import ROUNDTRIP_KEY, ROUNDTRIP_SCHEMA
from engine.sandbox.outcome import STATUSES
from engine.stages.base import PartContext, PartTask, RunSettings
from engine.stages.registry import build_stage
from tests.support.paths import PYTHON, REPO
from tests.support.roundtrip_tasks import ORACLE, TASKS, roundtrip_config


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    from engine.testing.tiny_lm import build_tiny_causal_lm

    return build_tiny_causal_lm(tmp_path_factory.mktemp("lm") / "tiny")


def test_run_part_oracle_and_tiny_generator(tmp_path, tiny_lm):
    raw = roundtrip_config(tmp_path, {
        "languages": ["en", "nl"], "comment_generator": {"model": tiny_lm, "max_new_tokens": 12},
        "generators": [ORACLE, {"model": tiny_lm, "name": "tiny", "max_new_tokens": 16}], "samples": 2,
        "fluency_model": tiny_lm, "compressions": 2,
    }, part_size=4)
    config = config_from_mapping(raw, tmp_path)
    stage = build_stage("roundtrip", config.section("roundtrip"))
    assert stage.input_parts(tmp_path) == [4]
    (task,) = stage.tasks()
    ctx = PartContext(tmp_path, RunSettings(), PartTask.of(task, 0, stage.directory))
    table = stage.run_part(ctx)
    assert table.schema == ROUNDTRIP_SCHEMA
    rows = table.to_pylist()
    assert len(rows) == 4 * 2 * 2 * 2
    assert len({tuple(r[k] for k in ROUNDTRIP_KEY) for r in rows}) == len(rows)
    by = {(r["task_id"], r["language"], r["generator"], r["sample"]): r for r in rows}
    for task_id in ("add", "rev", "evens"):
        good = by[(task_id, "en", "oracle", 0)]
        assert (good["comment_source"], good["status"], good["pass_at_1"], good["correctness"]) == ("given", "passed", 1.0, 1.0)
        assert by[(task_id, "nl", "oracle", 1)]["comment_source"] == "generated:tiny"
    stuck = by[("loops", "en", "oracle", 0)]
    # Its reference never returns either: a task error, not the candidate's time-out.
    assert (stuck["status"], stuck["tests_verdict"], stuck["value_verdict"], stuck["pass_at_1"]) == ("error", "timeout", "error", 0.0)
    assert "reference solution does not pass" in stuck["reason"] and "CPU-time" in stuck["reason"], stuck["reason"]
    # The original never returns either: no input is usable for differential testing.
    assert math.isnan(stuck["correctness"]) and stuck["n_inputs"] == 0
    for r in rows:
        assert r["status"] in STATUSES or r["status"] == "error"
        assert 0.0 <= r["abstraction"] <= 1.0 and 0.0 < r["fluency"] <= 1.0 and 0.0 <= r["conciseness"] <= 1.0
        if r["generator"] == "tiny" and r["error"] is None and r["status"] != "rejected":
            assert r["code"].startswith(f"def {r['task_id']}(")
        if r["status"] == "rejected":  # the tiny model's noise does not parse as the function: never run, scored 0
            assert r["pass_at_1"] == 0.0 and r["code"] is None and r["reason"]
    signatures = stage.signatures(task, {})
    assert set(signatures) == {"pass@1", "correctness", "abstraction", "conciseness", "fluency"}
    assert "metric:roundtrip-correctness" in signatures["correctness"] and "inputs:10" in signatures["correctness"]


def test_given_language_only_needs_no_comment_generator(tmp_path):
    from engine.errors import ConfigError

    with pytest.raises(ConfigError, match="comment_generator"):
        config_from_mapping(roundtrip_config(tmp_path, {"languages": ["en", "zh"], "generators": [ORACLE]}), tmp_path)
    with pytest.raises(ConfigError, match="roundtrip.sandbox.cpu_seconds"):
        config_from_mapping(roundtrip_config(tmp_path, {"generators": [ORACLE], "sandbox": {"cpu_seconds": 0}}), tmp_path)


def _run_cli(config_path: Path, out: Path, *extra: str, env_extra: dict | None = None):
    env = dict(os.environ, PYTHONPATH=str(REPO), **(env_extra or {}))
    return subprocess.run([PYTHON, "-m", "engine.cli", "run", str(config_path), "--out", str(out), *extra],
                          capture_output=True, text=True, cwd=REPO, env=env)


def _rows(run_dir: Path) -> list[dict]:
    rows = pq.read_table(run_dir / "roundtrip", schema=ROUNDTRIP_SCHEMA).to_pylist()
    for row in rows:
        row.pop("reason")  # a verdict's wording may name the limit that struck first on a loaded machine
        for key, value in row.items():
            if isinstance(value, float) and math.isnan(value):
                row[key] = "nan"  # NaN != NaN would fail the comparison of equal rows
    return sorted(rows, key=lambda r: tuple(r[k] for k in ROUNDTRIP_KEY))


def test_sigkill_then_resume_gives_each_row_once(tmp_path):
    import yaml

    raw = roundtrip_config(tmp_path, {"generators": [ORACLE], "samples": 2, "languages": ["en"]})
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(raw))
    clean = _run_cli(config_path, tmp_path / "clean")
    assert clean.returncode == 0, clean.stderr
    crashed = _run_cli(config_path, tmp_path / "run", env_extra={"BABELSCORE_TEST_CRASH_AFTER_COMMITS": "2"})
    assert crashed.returncode == -9
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "running" and len([k for k in manifest["parts"] if k.startswith("roundtrip/")]) == 2
    resumed = _run_cli(config_path, tmp_path / "run", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    rows = _rows(tmp_path / "run")
    assert len(rows) == len(TASKS) * 2
    assert len({tuple(r[k] for k in ROUNDTRIP_KEY) for r in rows}) == len(rows)
    assert rows == _rows(tmp_path / "clean")
    # Cutting the tasks into one part gives the same rows (values do not depend on parts).
    raw["roundtrip"]["tasks_per_part"] = 4
    raw["stages"] = ["roundtrip", "report"]
    config_path.write_text(yaml.safe_dump(raw))
    one_part = _run_cli(config_path, tmp_path / "one")
    assert one_part.returncode == 0, one_part.stderr
    assert _rows(tmp_path / "one") == rows
    page = (tmp_path / "one" / "report" / "index.html").read_text()
    assert "Execution round trip" in page and 'data-generator="oracle" data-language="en"' in page
