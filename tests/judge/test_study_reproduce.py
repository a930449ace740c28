"""A Dutch user pack written from docs/judge_prompts.md ("Reproducing what the study sent") renders,
call by call, the text those rules give: the system sentence appended, the taxonomy in the pack's
group order with the cluster's codes alone, the authors' rubric layout, the input as one line of
JSON with the predictions in case-sensitive order. The expected text is written out by hand."""
from __future__ import annotations

from pathlib import Path

import yaml

from engine.judge.messages import Candidate, JudgeItem, build_calls
from engine.judge.promptpack import PROMPTS_DIR, load_pack
from engine.taxonomy import criteria

SOURCE = 'class Q {\n    // Geeft het "eerste" item.\n    Item pop() { return items.remove(0); }\n}\n'
COMMENT = '// Geeft het "eerste" item.'
ITEM = JudgeItem("q1", "nl", SOURCE, SOURCE.index(COMMENT), SOURCE.index(COMMENT) + len(COMMENT), COMMENT,
                 (Candidate("alpha", "// één {item}"), Candidate("Zeta", '// Geeft "het" item\n// C:\\tmp')))
SUFFIX = "\n\nYou must return structured JSON output as specified in the instructions."


def _pack(folder: Path) -> str:
    data = yaml.safe_load((PROMPTS_DIR / "nl.yaml").read_text(encoding="utf-8"))
    data["system"]["basic"] = "Je bent een beoordelaar."
    data["cluster_assignment"] = "Beoordeel alleen {cluster_description}.\\n{taxonomy_json}"
    data["clusters"]["linguistic_language"] = "TAALGEBRUIK"
    data["output"]["basic"] = 'Antwoord als {{"evaluaties": []}}'
    data["rubric_labels"].update(title="Rubriek", present="Markeer AANWEZIG als")
    # the study's file order: the group without a name first, then by English name
    order = ["meta", "code_snippet", "grammar", "hallucination", "comment_format", "linguistic", "memorization",
             "model_specific", "repetition", "semantic", "syntax", "wrong_language"]
    data["groups"] = {key: data["groups"][key] for key in order}
    taxonomy = {code: dict(vars(text)) for code, text in criteria("nl").items()}
    taxonomy["LG-WL1"].update(name="ongewenste vertaling", include="zelden gebruikt", exclude="leenwoorden")
    taxonomy["LG-WL2"].update(name="andere taal", include="in een andere taal", exclude="")
    data["taxonomy"] = taxonomy
    data["cluster_parents"] = False
    data["templates"] = {"hierarchical": [
        {"role": "system", "content": "{system_basic}\n\nYou must return structured JSON output as specified in the instructions."},
        {"role": "user", "content": "{cluster_assignment}\n\n{taxonomy_rubric_authors}\n\n{output_basic}\n\n{separator}\n"
                                    "{input_json_compact}"}]}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nl.yaml").write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return str(folder)


EXPECTED_USER = (
    "Beoordeel alleen TAALGEBRUIK.\\n"
    '{\n  "Verkeerde taal": [\n'
    '    {\n      "id": "LG-WL1",\n      "naam": "ongewenste vertaling",\n      "beschrijving": "",\n'
    '      "inclusiecriteria": "zelden gebruikt",\n      "exclusiecriteria": "leenwoorden"\n    },\n'
    '    {\n      "id": "LG-WL2",\n      "naam": "andere taal",\n      "beschrijving": "",\n'
    '      "inclusiecriteria": "in een andere taal",\n      "exclusiecriteria": ""\n    }\n  ]\n}'
    "\n\n"
    # the authors' rubric reads English key names: with the Dutch keys only the ids remain
    "# Rubriek\\n\\n\\n## Verkeerde taal\\n\\n### [LG-WL1] \\n\\n**Markeer AANWEZIG als:**\\n\\n"
    "### [LG-WL2] \\n\\n**Markeer AANWEZIG als:**\\n"
    "\n\n"
    'Antwoord als {"evaluaties": []}'
    "\n\n--- TEXT TO EVALUATE ---\n"
    '{"source_code": "class Q {\\n    <ORIGINAL_COMMENT_LOCATION>\\n    Item pop() { return items.remove(0); }\\n}\\n", '
    '"original_comment": "// Geeft het \\"eerste\\" item.", '
    '"model_predictions": [{"model_name": "Zeta", "predicted_comment": "// Geeft \\"het\\" item\\n// C:\\\\tmp"}, '
    '{"model_name": "alpha", "predicted_comment": "// één {item}"}]}'
)


def test_a_dutch_pack_written_from_the_docs_renders_the_text_the_rules_give(tmp_path) -> None:
    pack = load_pack("nl", _pack(tmp_path / "packs"))
    calls = {call.cluster: call for call in build_calls(pack, ITEM, "hierarchical")}
    assert list(calls) == ["linguistic_grammar", "linguistic_language", "semantic_accuracy", "semantic_code",
                           "model_behavior", "syntax_format", "meta"]
    system, user = calls["linguistic_language"].messages
    assert system == {"role": "system", "content": "Je bent een beoordelaar." + SUFFIX}
    assert user == {"role": "user", "content": EXPECTED_USER}
    # a call over two groups lists them in the pack's order (Grammatica before Taalkundig), the cluster's codes alone
    grammar = calls["linguistic_grammar"].messages[1]["content"]
    assert grammar.index('"Grammatica"') < grammar.index('"Taalkundig"') and '"LG-GR"' not in grammar
    # the meta cluster's rubric leaves the group without a name out: the title alone
    assert "# Rubriek\\n\n\n" in calls["meta"].messages[1]["content"]
