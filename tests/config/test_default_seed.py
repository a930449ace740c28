"""The top-level `seed` is the default seed of every stage that has one; a section's own wins."""
from __future__ import annotations

from pathlib import Path

from engine.config import config_from_mapping


def _config(raw: dict):
    return config_from_mapping(raw, Path.cwd(), check=False)


def test_noise_and_calibrate_take_the_run_seed_unless_they_set_one() -> None:
    raw = {"input": "builtin:demo", "stages": ["noise", "calibrate"], "seed": 11, "noise": {"tokenizer": "t"}}
    config = _config(raw)
    assert config.section("noise").seed == 11 and config.section("calibrate").seed == 11
    config = _config({**raw, "calibrate": {"seed": 3}})
    assert config.section("noise").seed == 11 and config.section("calibrate").seed == 3


def test_every_generator_and_build_take_the_run_seed_unless_they_set_one() -> None:
    raw = {"stages": ["build", "generate"], "seed": 9, "build": {"source_dir": "/tmp"},
           "generate": {"generators": [{"model": "a/m1", "card": "starcoder2"},
                                       {"model": "b/m2", "card": "codellama", "seed": 5}]}}
    config = _config(raw)
    assert config.section("build").seed == 9
    assert [g.seed for g in config.section("generate").generators] == [9, 5]
