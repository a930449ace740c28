"""The design's judge protocol, reproducible and kept: its JSON block by a template (escaped
slots, the predictions as a mapping, ASCII on request), the parents' criteria and the principles in
every cluster call, PRESENT/ABSENT on every rubric code, the study's group order, and the refusals
of provider options, empty inclusions and templates without the predictions. No model is loaded."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from engine.errors import ConfigError
from engine.judge.messages import Candidate, JudgeItem, build_calls
from engine.judge.params import JudgeParams
from engine.judge.promptpack import PROMPT_LANGUAGES, PROMPTS_DIR, load_pack
from engine.taxonomy import CLUSTERS, GROUPS, ancestors, criteria

SOURCE = 'class Q {\n    /** Pops "the" {first} item. */\n    Item pop() { return items.remove(0); } // C:\\tmp\n}\n'
COMMENT = '/** Pops "the" {first} item. */'
CANDIDATES = (("m2", '// Pops "the" first {item}.\n// C:\\tmp'), ("m1", "// 弹出第一个元素 ἀ"), ("m3", ""))
ITEM = JudgeItem("q1", "en", SOURCE, SOURCE.index(COMMENT), SOURCE.index(COMMENT) + len(COMMENT), COMMENT,
                 tuple(Candidate(g, c) for g, c in CANDIDATES))
SEPARATOR = "--- TEXT TO EVALUATE ---"
# The design's layout: the components as one JSON object after the separator, the taxonomy in it,
# the predictions as a mapping model name -> predicted comment; written out by hand and by slot.
BY_HAND = [
    {"role": "system", "content": "{system_basic}"},
    {"role": "user", "content": '{assignment}\n\n{output_basic}\n\n{separator}\n'
                                '{{"taxonomy": {taxonomy_json_compact}, "source_code": {source_json}, '
                                '"original_comment": {original_comment_json}, "model_predictions": {model_predictions_json}}}'},
]
BY_SLOT = [{"role": "system", "content": "{system_basic}"},
           {"role": "user", "content": "{cluster_assignment}\n\n{separator}\n{components_json}"}]


def _write(folder: Path, edit) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    data = yaml.safe_load((PROMPTS_DIR / "en.yaml").read_text(encoding="utf-8"))
    edit(data)
    (folder / "en.yaml").write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return str(folder)


def _block(call) -> dict:
    return json.loads(call.messages[-1]["content"].split(SEPARATOR + "\n", 1)[1])


@pytest.mark.parametrize("ascii_json", [False, True])
def test_a_template_renders_the_designs_json_block_which_parses(tmp_path, ascii_json) -> None:
    def edit(data):
        data["templates"] = {"standard": BY_HAND, "hierarchical": BY_SLOT}
        if ascii_json:
            data["json_ascii"] = True
    pack = load_pack("en", _write(tmp_path / "p", edit))
    predictions = {"m1": "// 弹出第一个元素 ἀ", "m2": '// Pops "the" first {item}.\n// C:\\tmp', "m3": ""}
    masked = SOURCE.replace(COMMENT, "<ORIGINAL_COMMENT_LOCATION>")
    (standard,) = build_calls(pack, ITEM, "standard")
    block = _block(standard)
    assert list(block) == ["taxonomy", "source_code", "original_comment", "model_predictions"]
    assert block["source_code"] == masked and block["original_comment"] == COMMENT
    assert block["model_predictions"] == predictions and list(block["model_predictions"]) == ["m1", "m2", "m3"]
    assert list(block["taxonomy"])[0] == "Model-specific" and list(block["taxonomy"])[-1] == ""
    for call in build_calls(pack, ITEM, "hierarchical"):
        block = _block(call)
        assert list(block) == ["taxonomy", "source_code", "original_comment", "model_predictions"]
        assert block["model_predictions"] == predictions and block["source_code"] == masked
        shown = {entry["id"] for entries in block["taxonomy"].values() for entry in entries}
        assert shown == {a for code in CLUSTERS[call.cluster] for a in ancestors(code)}
    text = standard.messages[-1]["content"].split(SEPARATOR, 1)[1]
    assert text.isascii() == ascii_json and ("\\u5f39" in text) == ascii_json
    (without,) = build_calls(pack, ITEM, "standard", "without")
    assert _block(without)["original_comment"] == ""
    (hier_without, *_rest) = build_calls(pack, ITEM, "hierarchical", "without")
    assert "original_comment" not in _block(hier_without)


def test_the_shipped_json_block_is_valid_json_and_the_departures_are_documented() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "judge_prompts.md").read_text(encoding="utf-8")
    section = docs.split("### Where the shipped default layout departs from the design", 1)[1].split("\n## ", 1)[0]
    for words in ("before the separator", "list of", "mapping", "json_ascii"):
        assert words in section, words
    for language in PROMPT_LANGUAGES:
        (call,) = build_calls(load_pack(language), ITEM, "standard")
        assert set(_block(call)) == {"source_code", "original_comment", "model_predictions"}


def test_the_taxonomy_follows_the_studys_group_order_with_e_and_m_last() -> None:
    assert list(GROUPS) == ["model_specific", "repetition", "memorization", "linguistic", "grammar", "wrong_language",
                            "semantic", "hallucination", "code_snippet", "syntax", "comment_format", "meta"]
    (call,) = build_calls(load_pack("en"), ITEM, "rubric")
    text = call.messages[1]["content"]
    assert text.index("## Model-specific") < text.index("## Incorrect comment format") < text.index("### [M]")


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_every_cluster_call_has_its_parents_criteria_the_principles_and_say_so_explicitly(language) -> None:
    pack = load_pack(language)
    texts = criteria(language)
    principles = [p for p in pack.raw("principles") if "{" not in p]
    explicit = {"en": "say so explicitly", "nl": "uitdrukkelijk", "zh": "明确说明", "el": "δήλωσέ το ρητά",
                "pl": "powiedz to wyraźnie"}[language]
    for strategy in ("hierarchical", "combined"):
        calls = {c.cluster: c for c in build_calls(pack, ITEM, strategy)}
        for cluster, call in calls.items():
            user = call.messages[1]["content"]
            assert explicit in user and all(p in user for p in principles), (strategy, cluster)
        assert texts["LG-GR"].exclude in calls["linguistic_grammar"].messages[1]["content"]
        assert texts["SE-CS"].exclude in calls["semantic_code"].messages[1]["content"]
        assert texts["MS-RE"].include in calls["model_behavior"].messages[1]["content"]
        assert texts["MS-ME1"].exclude in calls["model_behavior"].messages[1]["content"]


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_the_rubric_asks_for_present_or_absent_on_every_code(language) -> None:
    pack = load_pack(language)
    instruction = pack.raw("rubric_labels", "instruction")
    for strategy in ("rubric", "combined"):
        for call in build_calls(pack, ITEM, strategy):
            user = call.messages[1]["content"]
            assert instruction in user
            assert user.index(instruction) < user.index("### [")
    assert "PRESENT or ABSENT" in load_pack("en").raw("rubric_labels", "instruction")


def _http(**extra) -> dict:
    return {"model": "served", "backend": "http", "base_url": "http://localhost:1/v1", **extra}


@pytest.mark.parametrize("key, why", [("stream", "one whole answer"), ("n", "one answer per call"),
                                      ("models", "another model"), ("extra_headers", "provider_secret_env"),
                                      ("headers", "provider_secret_env"), ("credentials", "provider_secret_env")])
def test_provider_options_that_break_or_change_the_call_are_refused_with_the_reason(key, why) -> None:
    with pytest.raises(ConfigError, match=f"provider_options.{key}: not allowed: .*{why}"):
        JudgeParams.from_mapping(_http(provider_options={key: True}))


def test_decoding_options_pass_and_key_like_values_are_refused_anywhere() -> None:
    params = JudgeParams.from_mapping(_http(provider_options={"max_completion_tokens": 900, "user": "team-a"}))
    assert params.provider_options["max_completion_tokens"] == 900
    for options in ({"user": "sk-or-v1-abcdef"}, {"provider": {"order": ["x"], "note": "Bearer abc"}},
                    {"metadata": [{"k": "sk-ant-123"}]}):
        with pytest.raises(ConfigError, match="looks like a secret.*provider_secret_env"):
            JudgeParams.from_mapping(_http(provider_options=options))


@pytest.mark.parametrize("include", ["", "   "])
def test_a_user_taxonomy_code_without_an_inclusion_is_refused_with_advice(tmp_path, include) -> None:
    def edit(data):
        data["taxonomy"] = {code: dict(vars(text)) for code, text in criteria("en").items()}
        data["taxonomy"]["MS-IG"]["include"] = include
    with pytest.raises(ConfigError, match=r"MS-IG.include: must say when the code applies.*taxonomy_en.yaml") as info:
        load_pack("en", _write(tmp_path / "p", edit))
    assert "defines every key of the shipped English pack" not in str(info.value)  # no key is missing


def test_a_template_without_the_predictions_is_refused(tmp_path) -> None:
    def edit(data):
        data["templates"] = {"cot": [{"role": "user", "content": "{assignment}\n{separator}\n{source_json}"}]}
    with pytest.raises(ConfigError, match=r"templates.cot: no message shows the predictions.*\{model_predictions_json\}"):
        load_pack("en", _write(tmp_path / "p", edit))
