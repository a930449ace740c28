"""The shipped taxonomy texts and packs carry the study's meaning (tests/golden/judge_taxonomy_facts.yaml)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from engine.judge.promptpack import PROMPT_LANGUAGES, load_pack
from engine.taxonomy import CODES, criteria

FACTS = yaml.safe_load((Path(__file__).parent / "golden" / "judge_taxonomy_facts.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_only_the_studys_criteria_exist_in_every_language(language: str) -> None:
    texts = criteria(language)
    assert [c for c in CODES if texts[c].definition] == [c for c in CODES if c in FACTS["definitions"]]
    assert {c for c in CODES if texts[c].exclude} == set(FACTS["exclusions"])
    assert all(texts[c].include for c in CODES)  # every code has its inclusion criteria
    for fact in FACTS["codes"]:
        include = texts[fact["code"]].include
        assert all(marker in include for marker in fact.get("markers", [])), (fact["code"], fact.get("markers"))


@pytest.mark.parametrize("fact", FACTS["codes"], ids=[f["code"] for f in FACTS["codes"]])
def test_each_changed_meaning_is_the_studys_in_english(fact: dict) -> None:
    text = criteria("en")[fact["code"]]
    covered = f"{text.definition} {text.include}"
    assert all(phrase in covered for phrase in fact["en_says"]), (fact["code"], fact["study_covers"])
    assert all(phrase in text.exclude for phrase in fact["en_excludes"]), (fact["code"], fact["study_excludes"])
    assert bool(text.exclude) == bool(fact["study_excludes"])
    whole = f"{covered} {text.exclude}"
    assert not [phrase for phrase in fact["en_never"] if phrase in whole], (fact["code"], fact["before"])


def test_parents_carry_no_tree_instruction_and_the_labels_and_principles_are_the_studys() -> None:
    texts = criteria("en")
    assert not [(c, w) for c in FACTS["parents"] for w in FACTS["parents_never"] if w in texts[c].include]
    pack, facts = load_pack("en"), FACTS["labels"]
    assert facts["correct_says"] in pack.text("rubric", "correct")
    assert not any(facts["principle_never"] in p for p in pack.data["principles"])
    assert any(facts["position_principle_says"] in p for p in pack.data["principles"])
    assert facts["assignment_says"] in pack.raw("assignment")
