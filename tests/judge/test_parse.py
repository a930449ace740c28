"""The judge answer parser: extraction order, translated keys and labels, error shapes, classes."""
from __future__ import annotations

import json

import pytest

from engine.judge.parse import Verdict, combine_clusters, extract_json, parse_response, verdicts, worst_label
from engine.judge.promptpack import PROMPT_LANGUAGES, load_pack

GENS = ["codegemma-7b", "starcoder2-7b"]


def _answer(language: str, label: str = "partial", errors=("SE-HA3",), name: str = "codegemma-7b") -> str:
    pack = load_pack(language)
    f = pack.field
    return json.dumps({f("evaluations"): [{f("model_name"): name, f("errors"): list(errors), f("explanation"): "…",
                                           f("overall_quality"): pack.label(label)}]}, ensure_ascii=False)


def _one(text: str, finish_reason: str | None = "stop", generator: str = "codegemma-7b") -> Verdict:
    return verdicts(parse_response(text, finish_reason), [generator])[generator]


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
@pytest.mark.parametrize("label", ["correct", "partial", "incorrect"])
def test_translated_keys_and_labels_map_back(language: str, label: str) -> None:
    verdict = _one(_answer(language, label))
    assert (verdict.status, verdict.method, verdict.label, verdict.codes) == ("ok", "whole", label, ("SE-HA3",))


@pytest.mark.parametrize("raw,label", [
    ("partial", "partial"), ("Partially Correct", "partial"), ("partially-correct", "partial"), ("PARTIAL.", "partial"),
    ("gedeeltelijk correct", "partial"), ("częściowo poprawny", "partial"), ("部分正确", "partial"),
    ("Μερικώς σωστό", "partial"), ("wrong", "incorrect"), ("Onjuist", "incorrect"), ("σωστό", "correct"),
])
def test_label_variants(raw: str, label: str) -> None:
    text = json.dumps({"evaluations": [{"model_name": "codegemma-7b", "errors": [], "overall_quality": raw}]}, ensure_ascii=False)
    assert _one(text).label == label


def test_english_keys_are_accepted_whatever_the_prompt_language_and_keys_mix() -> None:
    text = json.dumps({"oceny": [{"model_name": "CodeGemma-7B", "błędy": ["LG-GR4"], "overall_quality": "poprawny"}]},
                      ensure_ascii=False)
    verdict = _one(text)
    assert (verdict.label, verdict.codes) == ("correct", ("LG-GR4",))


def test_fenced_block_after_prose() -> None:
    text = "Here is my evaluation.\n```json\n" + _answer("en") + "\n```\nThanks."
    verdict = _one(text)
    assert (verdict.status, verdict.method) == ("ok", "fenced")


def test_embedded_object_without_fence_uses_first_balanced_object() -> None:
    text = "Reasoning: the braces { in prose } do not parse. Answer: " + _answer("nl", "incorrect") + " done {"
    verdict = _one(text)
    assert (verdict.status, verdict.method, verdict.label) == ("ok", "balanced", "incorrect")


def test_raw_control_characters_inside_strings_are_accepted() -> None:
    # What xgrammar-constrained decoding of a weak model produced through `vllm serve`.
    text = '{"oceny":[{"nazwa_modelu":"codegemma-7b","błędy":[],"wyjaśnienie":"} grup按\x17","ogólna_jakość":"poprawny"}]}'
    assert "\x17" in text
    verdict = _one(text)
    assert (verdict.status, verdict.method, verdict.label) == ("ok", "whole", "correct")


def test_balanced_scan_respects_braces_inside_strings() -> None:
    obj = {"evaluations": [{"model_name": "codegemma-7b", "errors": [], "explanation": "uses } and { and \\\" too",
                            "overall_quality": "correct"}]}
    value, method = extract_json("prefix " + json.dumps(obj) + " suffix")
    assert method == "balanced" and value == obj


def test_empty_text_is_empty() -> None:
    assert parse_response("").status == "empty"
    assert parse_response("   \n").status == "empty"
    assert parse_response(None).status == "empty"


def test_valid_json_without_evaluations_is_empty() -> None:
    assert parse_response('{"evaluations": []}').status == "empty"
    assert parse_response('{"beoordelingen": {}}').status == "empty"
    assert parse_response("{}").status == "empty"


def test_no_json_is_malformed() -> None:
    result = parse_response("The first candidate is correct, the second is not.", "stop")
    assert (result.status, result.method) == ("malformed", "")
    assert parse_response("42").status == "malformed"  # JSON, but not an object


def test_evaluations_that_are_not_objects_are_malformed() -> None:
    assert parse_response('{"evaluations": ["good", "bad"]}').status == "malformed"


def test_hitting_the_token_limit_is_truncated() -> None:
    cut = _answer("en")[:-12]
    result = parse_response(cut, "length")
    assert result.status == "truncated"
    assert _one(cut, "length").label is None


def test_a_complete_object_at_the_token_limit_is_ok() -> None:
    assert parse_response(_answer("el"), "length").status == "ok"


def test_cut_without_a_finish_reason_is_malformed_not_a_label() -> None:
    assert parse_response(_answer("en")[:-12], None).status == "malformed"


def test_api_error_keeps_no_label() -> None:
    result = parse_response("", error="HTTP 503 after 6 attempts")
    assert result.status == "api_error"
    assert verdicts(result, GENS) == {g: Verdict("api_error", "") for g in GENS}


def test_hallucinated_codes_are_counted_apart_and_aliases_mapped() -> None:
    verdict = _one(_answer("en", errors=("SE-HA3", "XY-Z9", "se-oi", " ms-et ", "SE-HA3")))
    assert verdict.codes == ("SE-HA3", "ST-IF2", "MS-ET")
    assert verdict.hallucinated == ("XY-Z9",)


def test_errors_as_objects_with_confidence() -> None:
    text = json.dumps({"评估": [{"模型名称": "codegemma-7b", "错误": [{"代码": "SE-MD", "置信度": 0.9, "理由": "x"},
                                                                  {"code": "MS-ET", "confidence": "80"}],
                                "推理": "...", "总体质量": "部分正确"}]}, ensure_ascii=False)
    verdict = _one(text)
    assert verdict.codes == ("SE-MD", "MS-ET") and verdict.confidences == (0.9, 0.8) and verdict.label == "partial"


def test_errors_as_a_present_map() -> None:
    text = json.dumps({"evaluations": [{"model_name": "codegemma-7b", "overall_quality": "incorrect",
                                        "errors": {"SE-HA2": "PRESENT", "MS-RE1": "ABSENT", "LG-GR5": True, "LG-GR6": False,
                                                   "ST-IF1": 0.4, "FOO-1": "PRESENT"}}]})
    verdict = _one(text)
    assert verdict.codes == ("SE-HA2", "LG-GR5", "ST-IF1") and verdict.confidences == (None, None, 0.4)
    assert verdict.hallucinated == ("FOO-1",)


def test_errors_as_a_comma_separated_string() -> None:
    text = json.dumps({"evaluations": [{"model_name": "codegemma-7b", "errors": "SE-MD, LG-GR4", "overall_quality": "partial"}]})
    assert _one(text).codes == ("SE-MD", "LG-GR4")


def test_model_names_match_case_insensitively_and_missing_candidates_are_empty() -> None:
    text = json.dumps({"evaluations": [{"model_name": "  CODEGEMMA-7B ", "errors": [], "overall_quality": "correct"}]})
    result = verdicts(parse_response(text), GENS)
    assert result["codegemma-7b"].label == "correct"
    assert (result["starcoder2-7b"].status, result["starcoder2-7b"].label) == ("empty", None)


def test_hub_style_names_match_on_their_last_component() -> None:
    text = json.dumps({"evaluations": [{"model_name": "starcoder2-7b", "errors": [], "overall_quality": "correct"}]})
    assert verdicts(parse_response(text), ["bigcode/starcoder2-7b"])["bigcode/starcoder2-7b"].label == "correct"


def test_unknown_label_is_malformed_and_not_guessed() -> None:
    text = json.dumps({"evaluations": [{"model_name": "codegemma-7b", "errors": ["SE-MD"], "overall_quality": "great"}]})
    verdict = _one(text)
    assert (verdict.status, verdict.label, verdict.codes) == ("malformed", None, ("SE-MD",))


def test_top_level_list_and_single_evaluation_and_name_keyed_map() -> None:
    single = json.dumps({"model_name": "codegemma-7b", "errors": [], "overall_quality": "correct"})
    listed = json.dumps([{"model_name": "codegemma-7b", "errors": [], "overall_quality": "incorrect"}])
    keyed = json.dumps({"evaluations": {"codegemma-7b": {"errors": ["MS-LT"], "overall_quality": "partial"}}})
    assert _one(single).label == "correct"
    assert _one(listed).label == "incorrect"
    assert (_one(keyed).label, _one(keyed).codes) == ("partial", ("MS-LT",))


def test_worst_label_and_hierarchical_union() -> None:
    assert worst_label(["correct", "partial", "correct"]) == "partial"
    assert worst_label([]) is None
    per_cluster = {
        "linguistic_grammar": Verdict("ok", "whole", "correct", ("LG-GR4",), (), (None,)),
        "semantic_accuracy": Verdict("ok", "whole", "partial", ("SE-MD", "LG-GR4"), ("XX",), (0.5, None)),
        "semantic_code": Verdict("malformed", ""),
        "meta": Verdict("ok", "fenced", "incorrect", (), (), ()),
        "syntax_format": Verdict("truncated", "balanced"),
    }
    combined = combine_clusters(per_cluster)
    # Worst over the clusters that parsed (a failed cluster contributes nothing, not "incorrect").
    assert (combined.status, combined.label, combined.method) == ("ok", "incorrect", "whole")
    assert combined.codes == ("LG-GR4", "SE-MD") and combined.confidences == (None, 0.5)
    assert combined.hallucinated == ("XX",)
    assert dict(combined.cluster_status)["semantic_code"] == "malformed"
    failed = combine_clusters({"a": Verdict("empty", ""), "b": Verdict("empty", ""), "c": Verdict("truncated", "")})
    assert (failed.status, failed.label) == ("empty", None)
    tie = combine_clusters({"a": Verdict("empty", ""), "b": Verdict("api_error", "")})
    assert tie.status == "api_error"
