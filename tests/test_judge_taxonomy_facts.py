"""The shipped taxonomy texts and packs carry the study's meaning, in every language as the study's own
file in that language gives it (tests/golden/judge_taxonomy_facts.yaml); a planted drift fails."""
from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest
import yaml

from engine.judge.messages import Candidate, JudgeItem, build_calls
from engine.judge.promptpack import PROMPT_LANGUAGES, STRATEGIES, PromptPack, load_pack
from engine.records import LABELS
from engine.taxonomy import CODES, criteria

FACTS = yaml.safe_load((Path(__file__).parent / "golden" / "judge_taxonomy_facts.yaml").read_text(encoding="utf-8"))
SOURCE = "class A {\n    // Adds one.\n    int inc(int x) { return x + 1; }\n}\n"
ITEM = JudgeItem("f", "en", SOURCE, SOURCE.index("// Adds"), SOURCE.index("// Adds") + len("// Adds one."),
                 "// Adds one.", (Candidate("m", "// Adds one to x."),))


def fact_problems(language: str, pack: PromptPack) -> list[str]:
    """Every way `pack` (its names, code texts and label definitions) departs from the study's
    file in `language`, as the facts give it; empty when it follows it."""
    facts, texts, problems = FACTS["languages"][language], pack.codes, []
    field_names = {k: pack.field(k) for k in facts["fields"]}
    for what, ours in (("fields", field_names), ("labels", dict(pack.data["labels"])),
                       ("taxonomy_keys", dict(pack.data["taxonomy_keys"])), ("groups", dict(pack.data["groups"]))):
        if ours != facts[what]:
            problems.append(f"{what}: {ours} != the study's {facts[what]}")
    if [c for c in CODES if texts[c].definition] != [c for c in CODES if c in facts["definitions"]]:
        problems.append("definitions: other codes than the study's have one")
    if {c for c in CODES if texts[c].exclude} != set(facts["exclusions"]):
        problems.append(f"exclusions: {sorted(c for c in CODES if texts[c].exclude)} != {sorted(facts['exclusions'])}")
    for code, fact in facts["codes"].items():
        text = texts[code]
        covered, whole = f"{text.definition} {text.include}", f"{text.name} {text.definition} {text.include} {text.exclude}"
        problems += [f"{code}: lacks {p!r} ({fact['study']})" for p in fact.get("says", []) if p not in covered]
        problems += [f"{code}: exclusion lacks {p!r} ({fact['study']})" for p in fact.get("excludes", []) if p not in text.exclude]
        problems += [f"{code}: says {p!r} ({fact['study']})" for p in fact.get("never", []) if p in whole]
        if "name" in fact and text.name != fact["name"]:
            problems.append(f"{code}: named {text.name!r}, the study {fact['name']!r}")
    for label, fact in facts["label_texts"].items():
        text = pack.raw("rubric", label)
        problems += [f"label {label}: lacks {p!r} ({fact['study']})" for p in fact["says"] if p not in text]
        problems += [f"label {label}: says {p!r} ({fact['study']})" for p in fact["never"] if p in text]
    for strategy in STRATEGIES:
        user = build_calls(pack, ITEM, strategy)[0].messages[-1]["content"]
        shown = [label for label in LABELS if pack.text("rubric", label) in user]
        expected = list(LABELS) if strategy in facts["label_definitions"] else []
        if shown != expected:
            problems.append(f"{strategy}: defines the labels {shown}, the study's prompt {expected}")
    return problems


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_every_shipped_pack_follows_the_studys_file_in_its_language(language: str) -> None:
    assert fact_problems(language, load_pack(language)) == []


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_every_language_keeps_its_markers_and_an_inclusion_for_every_code(language: str) -> None:
    texts = criteria(language)
    assert all(texts[c].include for c in CODES)  # every code has its inclusion criteria
    for fact in FACTS["codes"]:
        include = texts[fact["code"]].include
        assert all(marker in include for marker in fact.get("markers", [])), (fact["code"], fact.get("markers"))


def _planted(language: str, edit) -> PromptPack:
    pack = load_pack(language)
    data, codes = copy.deepcopy(pack.data), dict(pack.codes)
    edit(data, codes)
    return dataclasses.replace(pack, data=data, codes=codes)


def _code(codes: dict, code: str, **changes) -> None:
    codes[code] = dataclasses.replace(codes[code], **changes)


@pytest.mark.parametrize("language, edit, expected", [
    ("nl", lambda d, c: d["labels"].update(incorrect="incorrect"), "labels:"),
    ("nl", lambda d, c: d["fields"].update(overall_quality="algehele_kwaliteit"), "fields:"),
    ("zh", lambda d, c: _code(c, "LG-GR2", exclude=""), "exclusions:"),
    ("zh", lambda d, c: d["groups"].update(syntax="语法格式"), "groups:"),
    ("el", lambda d, c: d.pop("templates"), "standard: defines the labels"),
    ("pl", lambda d, c: _code(c, "LG-WL1", include=c["LG-WL1"].include + " (termin zwykle pozostaje zapożyczeniem)"),
     "LG-WL1: says"),
    ("en", lambda d, c: d["rubric"].update(partial=d["rubric"]["partial"].replace("a small", "one small")), "label partial"),
])
def test_a_planted_drift_is_found(language, edit, expected) -> None:
    problems = fact_problems(language, _planted(language, edit))
    assert any(p.startswith(expected) for p in problems), problems


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
    assert facts["partial_says"] in pack.text("rubric", "partial")
    assert not any(facts["principle_never"] in p for p in pack.data["principles"])
    assert any(facts["position_principle_says"] in p for p in pack.data["principles"])
    assert facts["assignment_says"] in pack.raw("assignment")


def test_the_facts_say_what_every_code_includes_and_excludes() -> None:
    study = FACTS["study_codes"]
    assert set(study) == set(CODES) and len(study) == len(CODES)
    assert all(entry["includes"] for entry in study.values())
    assert {code for code, entry in study.items() if entry["excludes"]} == set(FACTS["languages"]["en"]["exclusions"])
    assert set(FACTS["languages"]) == set(PROMPT_LANGUAGES)


def test_the_docs_table_of_names_is_the_packs() -> None:
    docs = (Path(__file__).resolve().parents[1] / "docs" / "judge_prompts.md").read_text(encoding="utf-8")
    for language in PROMPT_LANGUAGES:
        pack = load_pack(language)
        row = next(line.strip() for line in docs.splitlines() if line.strip().startswith(f"| {language} | "))
        cells = [c.strip() for c in row.strip("|").split("|")][1:]
        names = [pack.field(k) for k in ("evaluations", "model_name", "errors", "code", "overall_quality")]
        assert cells == [*names, ", ".join(pack.label(label) for label in ("correct", "partial", "incorrect"))], language


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_the_six_principles_are_the_studys_in_its_order(language: str) -> None:
    principles = load_pack(language).raw("principles")
    phrases = FACTS["principles"][language]
    assert len(principles) == len(phrases) == 6
    assert all(phrase in principle for phrase, principle in zip(phrases, principles)), language


def _nulls(node, where: str = "") -> list[str]:
    if isinstance(node, dict):
        return [f"{where}/{k}" for k, v in node.items() if v is None] + [
            p for k, v in node.items() for p in _nulls(v, f"{where}/{k}")]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _nulls(v, f"{where}[{i}]")]
    return []


def test_no_fact_has_a_null_value() -> None:
    # An unquoted comma in a flow mapping cuts the value and makes the rest a key with no value.
    assert _nulls(FACTS) == []
