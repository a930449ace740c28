"""Configs: validated before any work, frozen, and hashed."""
from __future__ import annotations

import dataclasses

import pytest

from engine.config import config_from_mapping, config_hash, load_config
from engine.errors import ConfigError

BASE = {"name": "t", "input": "in.jsonl", "stages": ["score"], "score": {"scorers": [{"kind": "lexical"}]}}


def _load(tmp_path, **changes):
    raw = dict(BASE, **changes)
    return config_from_mapping(raw, tmp_path)


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"colour": "red"}, "colour: unknown top-level key"),
        ({"part_size": 0}, "part_size: got 0; allowed: a positive integer"),
        ({"part_size": "10"}, "part_size: got '10'"),
        ({"stages": ["score", "explode"]}, "stages: got 'explode'; allowed:"),
        ({"stages": ["score", "noise"]}, "list them in that order"),
        (
            {"score": {"scorers": [{"kind": "lexical", "metrics": ["bleu", "chrf"]}]}},
            "score.scorers[0].metrics[1]: got 'chrf'; allowed: one of 'bleu', 'rougeL', 'meteor'",
        ),
        ({"score": {"scorers": [{"kind": "lexical", "spam": 1}]}}, "score.scorers[0].spam: unknown key"),
        ({"score": {"scorers": [{"kind": "magic"}]}}, "score.scorers[0].kind: unknown kind 'magic'"),
        ({"score": {"scorers": []}}, "score.scorers: got []"),
        ({"input": None}, "input: required key is missing"),
        ({"input": "builtin:nope"}, "allowed builtin inputs"),
    ],
)
def test_bad_configs_fail_naming_key_value_and_what_is_allowed(tmp_path, changes, message):
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, **changes)
    assert message in str(info.value)


def test_config_is_frozen_and_paths_resolve_against_the_config_folder(tmp_path):
    config = _load(tmp_path)
    assert config.input == str((tmp_path / "in.jsonl").resolve())
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.part_size = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.section("score").scorers[0].params.span = "whole"  # type: ignore[misc]


def test_hash_changes_with_config_and_input_but_not_with_key_order(tmp_path):
    a = _load(tmp_path)
    b = config_from_mapping(dict(reversed(list(BASE.items()))), tmp_path)
    assert config_hash(a, "x") == config_hash(b, "x")
    assert config_hash(a, "x") != config_hash(a, "y")
    assert config_hash(a, "x") != config_hash(_load(tmp_path, part_size=7), "x")
    changed = _load(tmp_path, score={"scorers": [{"kind": "lexical", "span": "whole"}]})
    assert config_hash(a, "x") != config_hash(changed, "x")


def test_yaml_errors_are_config_errors(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("stages: [score\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path)
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")


def test_scorer_and_generator_model_paths_resolve_against_the_config_folder(tmp_path):
    raw = {"input": "in.jsonl", "stages": ["generate", "noise", "score"],
           "generate": {"generators": [{"model": "./gen", "card": "starcoder2"}]},
           "noise": {"tokenizer": "../tok"},
           "score": {"scorers": [{"kind": "embedding", "model": "./enc"}, {"kind": "likelihood", "model": "./lm"}]}}
    config = config_from_mapping(raw, tmp_path, check=False)
    assert [s.params.model for s in config.section("score").scorers] == [str(tmp_path / "enc"), str(tmp_path / "lm")]
    assert config.section("generate").generators[0].model == str(tmp_path / "gen")
    assert config.section("noise").tokenizer == str(tmp_path.parent / "tok")


def test_every_missing_model_of_every_stage_is_reported_in_one_pass(tmp_path):
    """A config naming several models that are not there says all of them at once, not one per try."""
    raw = {"input": "in.jsonl", "stages": ["generate", "score"],
           "generate": {"generators": [{"model": "./gen-a", "card": "starcoder2"}, {"model": "./gen-b", "card": "starcoder2"}]},
           "score": {"scorers": [{"kind": "embedding", "model": "./enc"}]}}
    with pytest.raises(ConfigError) as info:
        config_from_mapping(raw, tmp_path)
    message = str(info.value)
    for where in ("generate.generators[0].model", "generate.generators[1].model", "score.scorers[0].model"):
        assert where in message, message
