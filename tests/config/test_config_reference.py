"""The config reference is generated from the parameter classes and cannot drift from docs/config.md."""
from __future__ import annotations

import dataclasses
import os
import subprocess

from engine import config as config_module
from engine.config_reference import TOP_LEVEL, all_params_classes, key_docs, missing_key_docs, reference_markdown, sections
from engine.metrics.base import SCORER_KINDS
from engine.params import Params
from engine.stages.registry import stage_order
from tests.support.paths import PYTHON, REPO

DOC = REPO / "docs" / "config.md"
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def test_docs_page_is_what_the_generator_prints():
    proc = subprocess.run(
        [PYTHON, "-m", "engine.cli", "config", "reference"], capture_output=True, text=True, cwd=REPO, env=ENV
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == reference_markdown()
    assert DOC.read_text(encoding="utf-8") == proc.stdout, (
        "docs/config.md is out of date: run `babelscore config reference --write docs/config.md`"
    )
    assert "docs/config.md" in (REPO / "README.md").read_text(encoding="utf-8")


def test_every_key_of_every_section_has_a_one_line_meaning():
    undocumented = {f"{where} ({cls.__name__})": missing for where, cls in all_params_classes()
                    if (missing := missing_key_docs(cls))}
    assert not undocumented, f"document these keys in a string under the field: {undocumented}"


@dataclasses.dataclass(frozen=True)
class _Documented(Params):
    """A section with keys documented under their fields, and one not documented.

    Keys:
        size: a `Keys:` block in the docstring is not read.
    """

    size: int = 1
    depth: int = 2
    """from the field,
    over two lines."""
    width: int = 3  # a comment is no documentation
    height: int = 4
    """from the field."""


def test_keys_are_read_from_the_strings_under_their_fields_only():
    assert key_docs(_Documented) == {"depth": "from the field, over two lines.", "height": "from the field."}
    assert missing_key_docs(_Documented) == ["size", "width"]
    made = dataclasses.make_dataclass("Made", [("size", int, dataclasses.field(default=1))], bases=(Params,), frozen=True)
    assert missing_key_docs(made) == ["size"]  # a class made at run time has no source: nothing read, no error


def test_every_section_stage_and_scorer_kind_appears():
    text = reference_markdown()
    documented = {name for name, _ in sections()}
    for stage in stage_order():
        assert f"`{stage}`" in text
        assert stage == "score" or stage in documented, f"stage {stage!r} has no section in the reference"
    for kind in SCORER_KINDS:
        assert f"kind: {kind}" in text
    top = {key for key, *_ in TOP_LEVEL}
    sections_keys = {"report", "validation", *config_module.section_names()}
    assert top | sections_keys == config_module.top_level_keys()
    for where, cls in all_params_classes():
        for field in dataclasses.fields(cls):
            assert f"| `{field.name}` |" in text, (where, field.name)


def test_reference_shows_type_default_and_allowed_values():
    text = reference_markdown()
    assert "| `bleu_tokenize` | one of 'auto', '13a', 'intl', 'zh', 'char', 'none' | `\"auto\"` |" in text
    assert "| `model` | str | `required` |" in text
    assert "| `unknown_error_codes` | one of 'warn', 'reject' | `\"warn\"` |" in text
