"""Every path a config names is made absolute by one rule (engine.params.config_path): `~` is the
home folder, a relative path is relative to the config file's folder; options that may also hold
a hub id (`path_options`) only when they start with ./ or ../."""
from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from engine.config import load_config
from engine.judge.promptpack import PROMPTS_DIR


def test_every_config_path_resolves_against_the_config_folder(tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "home"
    (home / "runs" / "b").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    folder = tmp_path / "cfg"
    (folder / "data").mkdir(parents=True)
    (folder / "runs" / "a").mkdir(parents=True)
    (folder / "packs").mkdir()
    shutil.copy(PROMPTS_DIR / "en.yaml", folder / "packs" / "en.yaml")  # a user's pack: one language of its own
    (folder / "data" / "samples.jsonl").write_text("", encoding="utf-8")
    (folder / "labels.jsonl").write_text("", encoding="utf-8")
    config = {
        "input": "data/samples.jsonl",  # no ./ needed: the input is always a path
        "labels": "./labels.jsonl",
        "reuse": ["runs/a", "~/runs/b"],
        "stages": ["judge"],
        "judge": {"prompt_pack": "packs", "judges": [
            {"model": "org/judge", "backend": "transformers", "tokenizer": "../tok"},
        ]},
    }
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    loaded = load_config(path, check=False)
    # written out by hand from the rule, not from the code under test
    assert loaded.input == str(folder / "data" / "samples.jsonl")
    assert loaded.labels == str(folder / "labels.jsonl")
    assert loaded.reuse == (str(folder / "runs" / "a"), str(home / "runs" / "b"))
    (judge,) = loaded.section("judge").judges
    assert judge.model == "org/judge"  # a hub id: kept
    assert judge.tokenizer == str(tmp_path / "tok")
    assert judge.prompt_pack == str(folder / "packs")
