"""A user's own prompt pack (`judge.prompt_pack: DIR`): checked at config check with the
missing key and the file named, used for the prompts, its wording read back by the parser."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from engine.config import config_from_mapping
from engine.errors import ConfigError
from engine.judge.messages import Candidate, JudgeItem, build_calls
from engine.judge.parse import parse_response, verdicts
from engine.judge.promptpack import PROMPTS_DIR, load_pack
from engine.taxonomy import CODES, criteria
from tests.support.samples import make_sample, write_jsonl


def _pack(folder: Path, language: str = "en", edit=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = yaml.safe_load((PROMPTS_DIR / f"{language}.yaml").read_text(encoding="utf-8"))
    if edit is not None:
        edit(data)
    (folder / f"{language}.yaml").write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return folder


def _config(tmp_path: Path, judge_section: dict) -> dict:
    inputs = write_jsonl(tmp_path / "in.jsonl", [make_sample("f1/g0", generator="g0", file_id="f1")])
    return {"name": "t", "input": str(inputs), "stages": ["judge"], "judge": judge_section}


def _judge() -> dict:
    return {"model": "served", "backend": "http", "base_url": "http://localhost:1/v1"}


def test_a_missing_key_is_refused_at_config_check_naming_the_key_and_the_file(tmp_path) -> None:
    folder = _pack(tmp_path / "packs", "en", lambda d: (d.pop("principles"), d["system"].pop("enhanced")))
    with pytest.raises(ConfigError) as info:
        config_from_mapping(_config(tmp_path, {"prompt_pack": "packs", "judges": [_judge()]}), tmp_path)
    message = str(info.value)
    assert "principles: missing" in message and "system.enhanced: missing" in message
    assert str(folder / "en.yaml") in message and "judge.prompt_pack" in message


def test_a_bad_taxonomy_section_and_an_unknown_file_are_refused(tmp_path) -> None:
    def bad_taxonomy(data):
        data["taxonomy"] = {code: dict(vars(text)) for code, text in criteria("en").items()}
        del data["taxonomy"]["MS-RE"]
        data["taxonomy"]["SE-MD"]["definition"] = ""  # an empty criterion is allowed (the study has many)
        data["taxonomy"]["SE-MD"]["exclude"] = None
    _pack(tmp_path / "a", "en", bad_taxonomy)
    with pytest.raises(ConfigError, match=r"MS-RE: missing.*SE-MD.exclude: must be a string \(\"\" when the code has no such criterion\)") as info:
        config_from_mapping(_config(tmp_path, {"judges": [dict(_judge(), prompt_pack=str(tmp_path / "a"))]}), tmp_path)
    assert "SE-MD.include" not in str(info.value)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "de.yaml").write_text("language: de\n")
    with pytest.raises(ConfigError, match=r"unknown: \['de.yaml'\]"):
        config_from_mapping(_config(tmp_path, {"prompt_pack": "b", "judges": [_judge()]}), tmp_path)
    with pytest.raises(ConfigError, match="is not a folder"):
        config_from_mapping(_config(tmp_path, {"prompt_pack": "nowhere", "judges": [_judge()]}), tmp_path)


def test_the_users_texts_are_the_prompt_and_their_wording_is_parsed(tmp_path) -> None:
    def edit(data):
        data["labels"]["correct"] = "CORRECT_STUDY"
        data["fields"]["evaluations"] = "model_predictions"
        data["system"]["enhanced"] = "Reason first, as the study asked."
        data["taxonomy"] = {code: dict(vars(text), definition=f"study definition of {code}") for code, text in criteria("en").items()}
    folder = _pack(tmp_path / "packs", "en", edit)
    config = config_from_mapping(_config(tmp_path, {"prompt_pack": "packs", "judges": [_judge(), dict(_judge(), name="b")]}),
                                 tmp_path)
    judges = config.section("judge").judges
    assert all(j.prompt_pack == str(folder) for j in judges)  # the section's pack is each judge's, resolved
    shipped_task = config_from_mapping(_config(tmp_path, {"judges": [_judge()]}), tmp_path).section("judge").judges[0]
    assert judges[0].task_name() != shipped_task.task_name()  # other prompts: another judge identity
    pack = load_pack("en", str(folder))
    assert pack.source == str(folder / "en.yaml") and load_pack("nl", str(folder)).source == "shipped"
    item = JudgeItem("f", "en", "x = 1  # set x\n", 7, 14, "# set x", (Candidate("a", "# b"),))
    system, user = (m["content"] for m in build_calls(pack, item, "cot")[0].messages)
    assert system == "Reason first, as the study asked." and "CORRECT_STUDY" in user
    assert all(f"study definition of {code}" in user for code in CODES)
    answer = json.dumps({"model_predictions": [{"model_name": "a", "reasoning": "..", "errors": [], "overall_quality": "CORRECT_STUDY"}]})
    result = parse_response(answer, "stop", None, ["a"], pack)
    assert verdicts(result, ["a"])["a"].label == "correct" and result.status == "ok"
