"""The registry names every stage's class with its Params type, and the config agrees with it:
each section parses into that type and each stage class is generic over it."""
from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from engine.config import load_config, section_names
from engine.config_reference import scorers_section, sections
from engine.params import Params
from engine.stages import registry
from engine.stages.base import Stage

REPO = Path(__file__).resolve().parents[2]


def _declared_params(cls: type) -> type | None:
    """The `P` of the `Stage[P]` (or `PartStage[P, E]`) the stage class derives from."""
    for klass in cls.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            origin = typing.get_origin(base)
            if isinstance(origin, type) and issubclass(origin, Stage) and typing.get_args(base):
                return typing.get_args(base)[0]
    return None


@pytest.mark.parametrize("name", list(registry.STAGES))
def test_every_stage_names_a_frozen_params_type_it_is_generic_over(name: str) -> None:
    stage = registry.get_stage(name)
    assert stage.params_class, f"stage {name} declares no params_class"
    params = registry.params_type(name)
    assert isinstance(params, type) and issubclass(params, Params)
    assert dataclasses.is_dataclass(params) and params.__dataclass_params__.frozen
    assert _declared_params(type(stage)) is params


def test_the_registry_and_the_config_sections_agree() -> None:
    with_section = [s for s in registry.listed() if s.section]
    assert section_names() == tuple(s.name for s in with_section)
    assert all(s.section == s.name for s in with_section)
    documented = {where for where, _ in sections()} - {"validation"}
    assert documented | {scorers_section()} == {s.section for s in with_section}


@pytest.mark.parametrize("path", sorted((REPO / "configs").glob("demo*.yaml")), ids=lambda p: p.name)
def test_every_shipped_section_parses_into_its_stages_params_type(path: Path) -> None:
    config = load_config(path, check=False)
    assert config.sections
    for name, section in config.sections.items():
        assert isinstance(section, registry.params_type(name)), name
