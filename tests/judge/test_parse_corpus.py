"""The parser on a corpus of hand-written judge answers (tests/judge/golden/judge_answers.yaml):
every shape real judges produce, in several languages, with each candidate's expected outcome."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from engine.judge.parse import parse_response, response_status, verdicts

CORPUS = yaml.safe_load((Path(__file__).parent / "golden" / "judge_answers.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CORPUS, ids=[c["name"] for c in CORPUS])
def test_every_answer_shape_gives_the_expected_verdicts(case: dict) -> None:
    generators = case["generators"]
    result = parse_response(case["answer"], "stop", None, generators)
    assert result.method == case["route"]
    assert response_status([result]) == case["response"]
    got = verdicts(result, generators)
    assert set(got) == set(case["expected"])
    for generator, (status, label, codes) in case["expected"].items():
        verdict = got[generator]
        assert (verdict.status, verdict.label, list(verdict.codes)) == (status, label, codes), generator
        assert verdict.status == "ok" or verdict.label is None  # a failure is never a label
    parsed = sum(v.status == "ok" for v in got.values())
    assert (result.parsed, result.expected) == (parsed, len(generators))
    assert (result.status == "ok") == (parsed == len(generators))
    if 0 < parsed < len(generators):
        assert result.status == "partial" and result.detail == f"{parsed} of {len(generators)} candidates parsed"


def test_the_corpus_covers_every_shape_and_several_languages() -> None:
    names = " ".join(c["name"] for c in CORPUS)
    for shape in ("results key", "model_predictions", "evaluation_results", "PRESENT/ABSENT", "Greek marks",
                  "Polish status", "codes as keys", "line comments", "block comments", "four of five"):
        assert shape in names, shape
    assert {c["name"].rsplit("(", 1)[1].rstrip(")") for c in CORPUS} >= {"en", "nl", "zh", "el", "pl"}
    assert {c["route"] for c in CORPUS} >= {"whole", "fenced", "balanced", "tolerant", ""}
    # the study's key and label names, which the shipped packs ask for, in every language
    assert {c["name"].rsplit("(", 1)[1].rstrip(")") for c in CORPUS if c["name"].startswith("study keys")} == \
        {"en", "nl", "zh", "el", "pl"}


def test_a_failed_call_counts_as_none_parsed_and_a_hierarchical_file_sums_its_calls() -> None:
    ok = parse_response('{"evaluations": [{"model_name": "a", "errors": [], "overall_quality": "correct"}]}', "stop", None, ["a"])
    failed = parse_response("no json", "stop", None, ["a"])
    cut = parse_response('{"evaluations": [', "length", None, ["a"])
    assert response_status([ok, ok]) == "ok"
    assert response_status([ok, failed, ok]) == "partial 2/3"
    assert response_status([failed, cut, failed]) == "malformed"
    assert response_status([cut]) == "truncated"
