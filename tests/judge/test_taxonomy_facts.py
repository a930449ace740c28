"""The shipped taxonomy texts and packs carry the study's meaning, in every language as the study's own
file in that language gives it (tests/judge/golden/judge_taxonomy_facts.yaml); a planted drift fails."""
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
STUDY_CODES = FACTS["study_codes"]
SOURCE = "class A {\n    // Adds one.\n    int inc(int x) { return x + 1; }\n}\n"
ITEM = JudgeItem("f", "en", SOURCE, SOURCE.index("// Adds"), SOURCE.index("// Adds") + len("// Adds one."),
                 "// Adds one.", (Candidate("m", "// Adds one to x."),))


def _has(text: str, phrase: str) -> bool:
    # A phrase is a stem where the word form may vary ("poważn" for poważne/poważnych): a casefolded
    # substring, so a planted change of ending or case cannot pass for the study's wording.
    return phrase.casefold() in text.casefold()


def _phrase_problems(where: str, fact: dict, text: str, required: list[str], forbidden: list[str]) -> list[str]:
    study = fact.get("study", "the study's meaning")
    problems = [f"{where}: lacks {p!r} ({study})" for p in required if not _has(text, p)]
    return problems + [f"{where}: says {p!r} ({study})" for p in forbidden if _has(text, p)]


def _order_problems(where: str, fact: dict, text: str) -> list[str]:
    """An example's direction: its words in the given order (the wrong word, then the meant one)."""
    order = fact.get("order")
    if not order:
        return []
    at = [text.casefold().find(word.casefold()) for word in order]
    if -1 in at or at != sorted(at):
        return [f"{where}: example not in the direction {' -> '.join(order)} ({fact.get('study', '')})"]
    return []


def _code_problems(code: str, fact: dict, text, never_anywhere: list[str]) -> list[str]:
    covered, whole = f"{text.definition} {text.include}", f"{text.name} {text.definition} {text.include} {text.exclude}"
    study = STUDY_CODES[code]
    fact = {"study": f"the study: {study['includes']}; excludes: {study['excludes'] or 'nothing'}", **fact}
    problems = _phrase_problems(code, fact, covered, fact.get("says", []), [])
    problems += _phrase_problems(f"{code}: exclusion", fact, text.exclude, fact.get("excludes", []), [])
    problems += _phrase_problems(code, fact, whole, [], [*fact.get("never", []), *never_anywhere])
    problems += _order_problems(code, fact, covered)
    if not fact.get("says"):
        problems.append(f"{code}: the facts give no phrase it must say")
    if bool(fact.get("excludes")) != bool(text.exclude):
        problems.append(f"{code}: exclusion {'without' if text.exclude else 'missing, the facts give'} phrases to check")
    if "name" in fact and text.name != fact["name"]:
        problems.append(f"{code}: named {text.name!r}, the study {fact['name']!r}")
    return problems


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
    if set(facts["codes"]) != set(CODES):
        problems.append(f"codes: the facts cover {len(facts['codes'])} codes, not all {len(CODES)}")
    for code, fact in facts["codes"].items():
        problems += _code_problems(code, fact, texts[code], facts.get("never_anywhere", []))
    for label, fact in facts["label_texts"].items():
        problems += _phrase_problems(f"label {label}", fact, pack.raw("rubric", label), fact["says"], fact["never"])
        # the reference-free variant: no study text for `correct`; the other two mean the same
        without = pack.raw("rubric_without", label)
        problems += _phrase_problems(f"label {label} (without)", fact, without, [] if label == "correct" else fact["says"], fact["never"])
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
    # a clause no study text has, in another word form than any listed one
    ("pl", lambda d, c: _code(c, "LG-WL1", include=c["LG-WL1"].include + "; termin zwykle zostaje jako zapożyczenie"),
     "LG-WL1: says"),
    ("pl", lambda d, c: d["rubric"].update(incorrect=d["rubric"]["incorrect"].replace(
        "albo ma poważne błędy", "albo ma jakiekolwiek błędy, nawet drobne,")), "label incorrect: lacks"),
    ("el", lambda d, c: _code(c, "LG-GR", exclude=c["LG-GR"].exclude.replace("εκτός αν", "ακόμη κι αν")),
     "LG-GR: exclusion: lacks"),
    ("zh", lambda d, c: _code(c, "LG-IS", include=c["LG-IS"].include.replace("用“房子”代替“家”", "用“家”代替“房子”")),
     "LG-IS: example not in the direction"),
    ("nl", lambda d, c: _code(c, "SE-TS", include=c["SE-TS"].include.replace("te specifiek", "te algemeen")), "SE-TS: lacks"),
])
def test_a_planted_drift_is_found(language, edit, expected) -> None:
    assert fact_problems(language, load_pack(language)) == []  # the drift, not something else, is found
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
    docs = (Path(__file__).resolve().parents[2] / "docs" / "judge_prompts.md").read_text(encoding="utf-8")
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


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_the_facts_cover_every_code_and_label_in_every_language(language: str) -> None:
    facts = FACTS["languages"][language]
    assert set(facts["codes"]) == set(CODES) and set(facts["label_texts"]) == set(LABELS)
    assert all(fact.get("says") for fact in facts["codes"].values())
    assert {c for c, fact in facts["codes"].items() if fact.get("excludes")} == set(facts["exclusions"])
    assert all(fact["says"] and "never" in fact for fact in facts["label_texts"].values())
