"""Judge prompt packs, assembled messages (golden files) and output schemas.

Regenerate the golden files after an intended prompt change with
    BABELSCORE_REGEN_GOLDEN=1 python -m pytest tests/judge/test_prompts.py
and review the diff.
"""
from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.judge.messages import Candidate, JudgeItem, build_calls, taxonomy_json
from engine.judge.promptpack import CLUSTERED, PROMPT_LANGUAGES, REFERENCE_MODES, STRATEGIES, check_pack, load_pack, read_pack_file, resolve_prompt_language
from engine.judge.schema import REASONING, output_schema
from engine.judge.templates import LAYOUTS
from engine.records import LABELS
from engine.taxonomy import CLUSTERS, CODES, criteria

GOLDEN = Path(__file__).parent / "golden" / "judge"
SOURCE = "public class Stack {\n    // Returns the top element without removing it.\n    public int peek() { return items[size - 1]; }\n}\n"
COMMENT = "// Returns the top element without removing it."
ITEM = JudgeItem(
    file_id="42_1", language="en", source=SOURCE, comment_start=SOURCE.index(COMMENT),
    comment_end=SOURCE.index(COMMENT) + len(COMMENT), reference=COMMENT,
    # Deliberately unsorted: the prompt lists candidates sorted by generator name.
    candidates=(Candidate("starcoder2-7b", "// Returns the top element."), Candidate("codegemma-7b", "// 返回栈顶元素 ἀ\"q\"")),
)


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_every_pack_defines_every_key_of_the_reference(language: str) -> None:
    pack = load_pack(language)
    assert set(pack.data["clusters"]) == set(CLUSTERS)
    # Every code and parent (40 ids) has its texts, in this language (not English copied over).
    assert list(pack.codes) == list(CODES) and len(CODES) == 40
    for code, entry in pack.codes.items():
        assert entry.name.strip() and entry.include.strip(), code
        if language != "en":
            assert entry.include != criteria("en")[code].include, code
    # the answer example of the pack uses the pack's own answer keys and label values
    for key, names in (("basic", ("evaluations", "model_name", "errors", "explanation", "overall_quality")),
                       ("reasoning", ("evaluations", "model_name", "reasoning", "errors", "code", "confidence",
                                      "justification", "overall_quality"))):
        example = pack.text("output", key)
        assert all(f'"{pack.field(name)}"' in example for name in names), (key, names)
        assert all(pack.label(label) in example for label in LABELS)


def test_a_missing_or_extra_key_is_named() -> None:
    reference = read_pack_file("en")
    broken = copy.deepcopy(read_pack_file("nl"))
    del broken["principles"]
    broken["groups"]["surprise"] = "x"
    broken["taxonomy"] = {code: dict(vars(text)) for code, text in criteria("nl").items()}
    del broken["taxonomy"]["SE-HA3"]["exclude"]
    with pytest.raises(ConfigError) as info:
        check_pack("nl", broken, reference)
    assert "principles: missing" in str(info.value)
    assert "SE-HA3.exclude: missing" in str(info.value) and 'write "" for a criterion' in str(info.value)
    assert "groups.surprise" in str(info.value)


def test_unknown_placeholder_and_duplicate_labels_are_refused_with_the_fix() -> None:
    reference = read_pack_file("en")
    broken = copy.deepcopy(read_pack_file("pl"))
    broken["rubric"]["correct"] = "{label_corect}: typo"
    broken["output"]["basic"] = 'Return {"ewaluacje": []}'  # literal braces not doubled
    broken["labels"]["partial"] = broken["labels"]["correct"]
    with pytest.raises(ConfigError) as info:
        check_pack("pl", broken, reference)
    message = str(info.value)
    assert "unknown placeholder {label_corect}" in message and "label values must differ" in message
    assert "output.basic: unknown placeholder" in message and "write them twice: {{ and }}" in message


def test_prompt_language_defaults_to_the_sample_language() -> None:
    assert resolve_prompt_language("sample", "zh") == "zh"
    assert resolve_prompt_language("sample", "de") == "en"  # no pack: English
    assert resolve_prompt_language("en", "zh") == "en"


def _render(language: str, strategy: str) -> dict[str, list[dict]]:
    return {
        reference: [{"cluster": call.cluster, "messages": list(call.messages)}
                    for call in build_calls(load_pack(language), ITEM, strategy, reference)]
        for reference in REFERENCE_MODES
    }


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_assembled_messages_equal_the_golden_file(language: str, strategy: str) -> None:
    rendered = _render(language, strategy)
    path = GOLDEN / f"{strategy}-{language}.json"
    text = json.dumps(rendered, ensure_ascii=False, indent=1) + "\n"
    if os.environ.get("BABELSCORE_REGEN_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"{path} is missing; run with BABELSCORE_REGEN_GOLDEN=1"
    assert json.loads(path.read_text(encoding="utf-8")) == rendered
    assert all(len(calls) == (len(CLUSTERS) if strategy in CLUSTERED else 1) for calls in rendered.values())


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_golden_prompts_follow_the_study_layout(language: str, strategy: str) -> None:
    """A short system message; the task with the taxonomy as JSON, the label definitions and the
    principles in the user message, then the separator and the file's JSON last."""
    golden = json.loads((GOLDEN / f"{strategy}-{language}.json").read_text(encoding="utf-8"))
    pack = load_pack(language)
    basic = strategy in ("standard", "hierarchical")
    for reference, calls in golden.items():
        labels_key = "rubric" if reference == "with" else "rubric_without"
        for call in calls:
            system, user = (m["content"] for m in call["messages"])
            assert [m["role"] for m in call["messages"]] == ["system", "user"]
            assert system.startswith(pack.raw("system", "basic" if basic else "enhanced").split("\n")[0])
            assert len(system) < len(user) / 2 and pack.data["separator"] not in system
            # the label definitions wherever the layout has them (the Greek pack leaves them out of
            # standard, rubric and hierarchical, as the study's Greek prompts do)
            defined = "{labels}" in "".join(t for _role, t in (pack.templates(strategy) or LAYOUTS[strategy]))
            assert defined == (language != "el" or strategy in REASONING)
            for label in LABELS:
                assert (pack.text(labels_key, label) in user) == defined, (reference, label)
            if call["cluster"] is None:  # the cluster task has no principles, as the study's
                assert all(principle in user for principle in pack.data["principles"])
            head, file_json = user.rsplit("\n" + pack.data["separator"] + "\n", 1)
            shown = json.loads(file_json)
            keys = pack.data["input_keys"]
            assert list(shown) == ([keys["source"], keys["original"], keys["candidates"]] if reference == "with"
                                   else [keys["source"], keys["candidates"]])
            assert [c[keys["model_name"]] for c in shown[keys["candidates"]]] == ["codegemma-7b", "starcoder2-7b"]
            assert pack.data["placeholder"] in shown[keys["source"]] and COMMENT not in shown[keys["source"]]
            # the taxonomy as JSON: every code (or the cluster's codes) with exactly its criteria
            assert taxonomy_json(load_pack(language), call["cluster"]) in head
            assert ("```" not in user) and ("##" not in head or strategy in ("rubric", "combined"))
            assert (pack.raw("cot_steps_intro") in head) == (strategy in REASONING)
            assert (pack.raw("rubric_labels", "title") in head) == (strategy in ("rubric", "combined"))


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_a_reference_free_prompt_holds_no_text_of_the_original_comment(language: str, strategy: str) -> None:
    golden = json.loads((GOLDEN / f"{strategy}-{language}.json").read_text(encoding="utf-8"))
    for call in golden["without"]:
        text = "\n".join(m["content"] for m in call["messages"])
        assert COMMENT not in text and "without removing it" not in text
        assert "original_comment\"" not in text  # no such key in the file's JSON
        assert "peek()" in text  # the code context stays
    for call in golden["with"]:
        assert json.dumps(COMMENT) in call["messages"][1]["content"]


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_reasoning_schema_and_example_put_reasoning_before_errors_before_the_label(language: str) -> None:
    pack = load_pack(language)
    f = pack.field
    order = [f("model_name"), f("reasoning"), f("errors"), f("overall_quality")]
    for strategy in REASONING:
        for names in (None, ["codegemma-7b", "starcoder2-7b"]):
            schema = output_schema(pack, strategy, None, names)
            evaluations = schema["properties"][f("evaluations")]
            items = evaluations["prefixItems"] if names else [evaluations["items"]]
            for item in items:
                assert list(item["properties"]) == order and item["required"] == order
                error = item["properties"][f("errors")]["items"]
                assert list(error["properties"]) == [f("code"), f("confidence"), f("justification")]
    example = pack.text("output", "reasoning")
    assert example.index(f'"{f("reasoning")}"') < example.index(f'"{f("errors")}"') < example.index(f'"{f("overall_quality")}"')
    user = build_calls(pack, ITEM, "cot")[0].messages[1]["content"]
    assert example in user and "FIM" in user  # the study's seven steps, the FIM one included
    assert all(step.split("{")[0] in user for step in pack.data["cot_steps"])


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_shared_part_is_an_identical_prefix_across_calls_and_files(language: str, strategy: str) -> None:
    pack = load_pack(language)
    other = JudgeItem("7_3", "nl", "x = 1  # zet x\n", 7, 14, "# zet x", (Candidate("a", "# b"),))
    calls, others = build_calls(pack, ITEM, strategy), build_calls(pack, other, strategy)
    separator = "\n" + pack.data["separator"] + "\n"
    for call, twin in zip(calls, others):
        # only the file's JSON after the separator differs between two files
        assert call.messages[0] == twin.messages[0]
        assert call.messages[1]["content"].split(separator)[0] == twin.messages[1]["content"].split(separator)[0]
        assert call.messages[1]["content"] != twin.messages[1]["content"]


def _sample_output(language: str, strategy: str, label: str, cluster: str | None = None) -> dict:
    pack = load_pack(language)
    f = pack.field
    code = (CLUSTERS[cluster] if cluster else ("SE-HA3",))[0]
    error = {f("code"): code, f("confidence"): 0.7, f("justification"): "x"} if strategy in REASONING else code
    text = f("reasoning") if strategy in REASONING else f("explanation")
    return {f("evaluations"): [
        {f("model_name"): "codegemma-7b", f("errors"): [error], text: "...", f("overall_quality"): pack.label(label)},
        {f("model_name"): "starcoder2-7b", f("errors"): [], text: "", f("overall_quality"): pack.label("correct")},
    ]}


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_schema_accepts_sample_outputs_and_rejects_a_wrong_label(language: str, strategy: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    pack = load_pack(language)
    names = ["codegemma-7b", "starcoder2-7b"]
    cluster = "semantic_accuracy" if strategy in CLUSTERED else None
    schema = output_schema(pack, strategy, cluster, names)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for label in ("correct", "partial", "incorrect"):
        assert not list(validator.iter_errors(_sample_output(language, strategy, label, cluster)))
    wrong = _sample_output(language, strategy, "partial", cluster)
    first = next(iter(wrong.values()))[0]
    first[pack.field("overall_quality")] = "excellent"
    assert list(validator.iter_errors(wrong))
    # Another language's field names are not this language's schema (unless they coincide).
    other = "zh" if language != "zh" else "pl"
    assert list(validator.iter_errors(_sample_output(other, strategy, "partial", cluster)))
    # A code outside the call's codes, an overlong text, a missing candidate: all rejected.
    bad_code = _sample_output(language, strategy, "partial", cluster)
    entry = next(iter(bad_code.values()))[0]
    errors_key = pack.field("errors")
    entry[errors_key] = ["XX-9"] if strategy not in REASONING else [dict(entry[errors_key][0], **{pack.field("code"): "XX-9"})]
    assert list(validator.iter_errors(bad_code))
    too_long = _sample_output(language, strategy, "partial", cluster)
    text_key = pack.field("reasoning") if strategy in REASONING else pack.field("explanation")
    next(iter(too_long.values()))[0][text_key] = "x" * 501
    assert list(validator.iter_errors(too_long))
    one = _sample_output(language, strategy, "partial", cluster)
    next(iter(one.values())).pop()
    assert list(validator.iter_errors(one))
    twice = _sample_output(language, strategy, "partial", cluster)  # one candidate judged twice, the other never
    next(iter(twice.values()))[1][pack.field("model_name")] = "codegemma-7b"
    assert list(validator.iter_errors(twice))

