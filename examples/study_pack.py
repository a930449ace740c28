"""Build a babelscore prompt pack that sends, byte for byte, what the study's run_workflow.py sends.

    python examples/study_pack.py STUDY_CHECKOUT LANGUAGE OUT_DIR     # LANGUAGE: en, nl, zh, el, pl

STUDY_CHECKOUT is a clone of the study's public repository (D4vidHuang/testpage_Babel). The texts
come from that clone, at run time: its `core/prompting/prompt_<language>.py` (system messages,
task, output instructions, cluster task, rubric words, answer keys and labels) and its
`taxonomy/error_taxonomy_<language>.json` (group order, group names, key names, code texts). This
script holds none of them. It writes OUT_DIR/<LANGUAGE>.yaml: the shipped pack of that language
with the study's texts in it and the message templates of docs/judge_prompts.md ("Reproducing what
the study sent"); point `judge.prompt_pack` at OUT_DIR and run `babelscore judge render --request`.
"""
from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path

import yaml

from engine.judge.promptpack import PROMPTS_DIR
from engine.taxonomy import GROUPS

STUDY_NAMES = {"en": "english", "nl": "dutch", "zh": "chinese", "el": "greek", "pl": "polish"}
# what the study's core/config.py create_judge() appends to every system message (structured_output=True)
SUFFIX = "\n\nYou must return structured JSON output as specified in the instructions."
INPUT = "\n\n{separator}\n{input_json_compact}"
TEMPLATES = {
    "standard": ("{system_basic}", "{assignment}\n\n{output_basic}" + INPUT),
    "cot": ("{system_enhanced}", "{assignment}\n\n{output_reasoning}" + INPUT),
    # the study's rubric branch is never taken: its rubric prompt is standard's with the longer system message
    "rubric": ("{system_enhanced}", "{assignment}\n\n{output_basic}" + INPUT),
    "hierarchical": ("{system_basic}", "{cluster_assignment}\n\n{output_basic}" + INPUT),
    "combined": ("{system_enhanced}", "{cluster_assignment}\n\n{taxonomy_rubric_authors}\n\n{output_reasoning}" + INPUT),
}
TAXONOMY_MARK, CLUSTER_MARK = "\x00#1\x00", "\x00#2\x00"  # kept as they are by str.upper()


def _library(checkout: Path, language: str) -> type:
    """The study's PromptLibrary of `language`, loaded from its files alone (not its package, whose
    __init__ needs the API client's dependencies)."""
    folder = checkout / "core" / "prompting"
    package = types.ModuleType("study_prompting")
    package.__path__ = [str(folder)]
    sys.modules["study_prompting"] = package
    for name in ("prompt_base", f"prompt_{STUDY_NAMES[language]}"):
        spec = importlib.util.spec_from_file_location(f"study_prompting.{name}", folder / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return module.PromptLibrary


def _literal(text: str) -> str:
    """`text` as a pack text: braces doubled, so it renders as itself."""
    return text.replace("{", "{{").replace("}", "}}")


def study_pack(checkout: Path, language: str) -> dict:
    lib = _library(checkout, language)
    pack = yaml.safe_load((PROMPTS_DIR / f"{language}.yaml").read_text(encoding="utf-8"))
    names, words = lib.get_output_field_names(), lib.get_rubric_labels()
    pack["labels"] = {"correct": names["correct"], "partial": names["partially_correct"], "incorrect": names["incorrect"]}
    pack["fields"] = {**pack["fields"], **{k: names[k] for k in ("evaluations", "model_name", "errors", "explanation",
                                                                    "reasoning", "overall_quality", "confidence",
                                                                    "justification")}, "code": names["error_id"]}
    pack["rubric_labels"].update(title=words["rubric_title"], definition=words["definition"],
                                 present=words["mark_present"], absent=words["mark_absent"])
    pack["system"] = {"basic": _literal(lib.system_basic()), "enhanced": _literal(lib.system_enhanced())}
    pack["assignment"] = _literal(lib.assignment_evaluate_models(TAXONOMY_MARK)).replace(TAXONOMY_MARK, "{taxonomy_json}")
    pack["output"] = {"basic": _literal(lib.output_basic()), "reasoning": _literal(lib.output_with_reasoning())}
    pack["cluster_assignment"] = (_literal(lib.assignment_evaluate_cluster(CLUSTER_MARK, TAXONOMY_MARK))
                                  .replace(TAXONOMY_MARK, "{taxonomy_json}").replace(CLUSTER_MARK, "{cluster_description}"))
    # each cluster's description as the study inserts it (its own text, upper-cased)
    head, tail = lib.assignment_evaluate_cluster(CLUSTER_MARK, TAXONOMY_MARK).split(CLUSTER_MARK)
    pack["clusters"] = {name: lib.assignment_evaluate_cluster(name, TAXONOMY_MARK)[len(head):-len(tail)]
                        for name in pack["clusters"]}
    # the taxonomy: the file's group order and names, its key names, its texts
    study = json.loads((checkout / "taxonomy" / (f"error_taxonomy_{STUDY_NAMES[language]}.json" if language != "en"
                                                 else "error_taxonomy.json")).read_text(encoding="utf-8"))
    groups, taxonomy = {}, {}
    for name, entries in study.items():
        key = next(g for g, codes in GROUPS.items() if entries[0]["id"] in codes)
        groups[key] = name
        for entry in entries:
            ident, title, definition, include, exclude = entry.values()
            taxonomy[ident] = {"name": title, "definition": definition, "include": include, "exclude": exclude}
    pack["groups"] = groups
    pack["taxonomy_keys"] = dict(zip(("id", "name", "definition", "include", "exclude"), study[next(iter(study))][0]))
    pack["taxonomy"] = taxonomy
    pack["cluster_parents"] = False  # the study's cluster calls show the cluster's codes alone
    pack["templates"] = {strategy: [{"role": "system", "content": system + _literal(SUFFIX)},
                                    {"role": "user", "content": user}]
                         for strategy, (system, user) in TEMPLATES.items()}
    return pack


if __name__ == "__main__":
    checkout, language, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{language}.yaml"
    target.write_text(yaml.safe_dump(study_pack(checkout, language), allow_unicode=True, sort_keys=False, width=10_000),
                      encoding="utf-8")
    print(f"wrote {target}")
