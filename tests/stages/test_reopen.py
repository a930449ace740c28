"""Reopening a run directory written earlier gives the RunPlan its recorded config builds (or,
when that config does not validate or there is none, a plan of the listed stages, unbuilt,
with a note), and the layout it carries is plain data."""
from __future__ import annotations

import dataclasses
import json
import logging
import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from engine.config import config_from_mapping
from engine.io.manifest import Manifest
from engine.stages import registry
from engine.stages.base import Stage
from engine.stages.plan import build_plan, layout_of_run, reopen_run
from tests.support.samples import make_sample, write_jsonl

STAGES = ["noise", "perturb", "score", "calibrate", "report"]


def _raw(tmp_path: Path) -> dict[str, Any]:
    data = write_jsonl(tmp_path / "in.jsonl", [make_sample("a/g", generator="g")])
    return {"input": str(data), "stages": STAGES, "noise": {}, "perturb": {},
            "score": {"scorers": [{"kind": "lexical"}]}}


def _write_run(root: Path, recorded: dict[str, Any]) -> Path:
    root.mkdir(parents=True)
    (root / "manifest.json").write_text(json.dumps(Manifest.new(recorded, "h").as_dict()), encoding="utf-8")
    return root


def _values(value: Any) -> list[Any]:
    """Every leaf of a layout's fields (tuples, dicts and nested dataclasses opened up)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [leaf for f in dataclasses.fields(value) for leaf in _values(getattr(value, f.name))]
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in (*_values(k), *_values(v))]
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _values(v)]
    return [value]


def test_a_reopened_run_has_the_plan_its_recorded_config_builds(tmp_path: Path) -> None:
    config = config_from_mapping(_raw(tmp_path), tmp_path, check=False)
    run = reopen_run(_write_run(tmp_path / "run", config.to_dict()))
    plan, fresh = run.plan, build_plan(config)
    assert plan.note is None and plan.config == config
    assert [b.name for b in plan.stages] == STAGES and [len(b.tasks) for b in plan.stages] == [len(b.tasks) for b in fresh.stages]
    assert run.layout == fresh.layout
    # the stages' hooks come from the plan's built stages, in run order
    assert [hook.__self__.name for hook in plan.report_sections()] == ["perturb"]
    assert [s.name for s in plan.candidate_stages()] == ["noise", "perturb"]
    recorded = run.manifest.config
    assert plan.report_settings(recorded) == fresh.report_settings(recorded) != {}
    # the layout is plain data: no stage objects, no callables; it pickles and prints
    leaves = _values(run.layout)
    assert not [v for v in leaves if callable(v) or isinstance(v, Stage)]
    assert all(isinstance(v, (str, bool, int, pa.Schema)) or v is None for v in leaves)
    assert pickle.loads(pickle.dumps(run.layout)) == run.layout and "RunLayout(" in repr(run.layout)


def test_a_recorded_config_that_no_longer_validates_gives_the_listed_stages_unbuilt(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    recorded = config_from_mapping(_raw(tmp_path), tmp_path, check=False).to_dict()
    recorded["score"] = {**recorded["score"], "no_such_option": 1}
    with caplog.at_level(logging.WARNING, logger="engine.stages.plan"):
        run = reopen_run(_write_run(tmp_path / "run", recorded))
    plan = run.plan
    assert plan.config is None and "no_such_option" in plan.note and "unbuilt" in plan.note
    assert plan.note in caplog.text
    assert [b.name for b in plan.stages] == STAGES and all(b.tasks == () for b in plan.stages)
    assert [s.name for s in plan.candidate_stages()] == ["noise", "perturb"]
    assert [hook.__self__.name for hook in plan.report_sections()] == ["perturb"]
    assert run.layout == layout_of_run(STAGES)
    with pytest.raises(Exception, match="this plan cannot run"):
        plan.settings  # noqa: B018 - a plan that only reads a run refuses to run it


def test_a_run_directory_without_a_recorded_config_reads_every_stage_rows(tmp_path: Path) -> None:
    run = reopen_run(_write_run(tmp_path / "run", {}))
    assert run.plan.config is None and "no config" in run.plan.note
    assert run.plan.stages == () and run.plan.report_sections() == ()
    assert run.layout.stages == tuple(s.name for s in registry.listed())
