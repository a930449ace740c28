"""What a stage declares instead of a central list naming it: `path_options` (one rule for relative paths),
`seeded` (the run seed reaches every seeded stage; the judges keep theirs), `preflight` (the
noise tokenizer check, once)."""
from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import config_from_mapping
from engine.errors import ConfigError
from engine.preflight import preflight
from engine.stages.plan import build_plan
from tests.support.samples import make_sample, write_jsonl


def test_one_rule_for_relative_paths_in_every_section_and_nested_entry(tmp_path: Path) -> None:
    raw = {"input": "builtin:demo", "stages": ["roundtrip"], "roundtrip": {
        "tasks": "./tasks.jsonl", "prompts_dir": "../prompts", "fluency_model": "./lm",
        "generators": [{"model": "./gen"}, {"model": "org/hub-model"}], "comment_generator": {"model": "./explainer"}}}
    p = config_from_mapping(raw, tmp_path, check=False).section("roundtrip")
    assert p.tasks == str(tmp_path / "tasks.jsonl") and p.prompts_dir == str((tmp_path / "../prompts").resolve())
    assert p.fluency_model == str(tmp_path / "lm")
    assert [g.model for g in p.generators] == [str(tmp_path / "gen"), "org/hub-model"]
    assert p.comment_generator.model == str(tmp_path / "explainer")
    builtin = config_from_mapping({**raw, "roundtrip": {**raw["roundtrip"], "tasks": "humaneval"}}, tmp_path, check=False)
    assert builtin.section("roundtrip").tasks == "humaneval"


def test_the_run_seed_reaches_the_round_trip_and_not_the_judges(tmp_path: Path) -> None:
    raw = {"input": "builtin:demo", "seed": 5, "stages": ["judge", "roundtrip"],
           "judge": {"judges": [{"model": "served", "backend": "http", "base_url": "http://x/v1"}]},
           "roundtrip": {"generators": [{"model": "a/m1"}, {"model": "b/m2", "seed": 2}], "comment_generator": {"model": "c/m3"}}}
    config = config_from_mapping(raw, tmp_path, check=False)
    p = config.section("roundtrip")
    assert p.seed == 5 and [g.seed for g in p.generators] == [5, 2] and p.comment_generator.seed == 5
    assert config.section("judge").judges[0].seed == 42  # the judge stage's docstring says why


def test_the_noise_tokenizer_check_runs_once_in_preflight(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", [make_sample("a/g", generator="g")])
    raw = {"input": str(data), "stages": ["noise", "score"], "noise": {}, "score": {"scorers": [{"kind": "lexical"}]}}
    config = config_from_mapping(raw, tmp_path)  # loading alone does not read the input
    with pytest.raises(ConfigError, match=r"noise.tokenizer: no tokenizer for generator\(s\) 'g'"):
        preflight(build_plan(config))
