"""The top-level `seed` is the default seed of every stage that has one; a section's own wins."""
from __future__ import annotations

import pytest

from engine.calibrate.stage import CalibrateParams
from engine.data.build import BuildParams
from engine.errors import ConfigError
from engine.generate.stage import GenerateSection
from engine.noise import NoiseParams
from engine.params import with_default_seed


@pytest.mark.parametrize("cls", [NoiseParams, CalibrateParams])
def test_a_section_without_a_seed_takes_the_run_seed(cls) -> None:
    assert cls.from_mapping(with_default_seed({}, 41, cls)).seed == 41
    assert cls.from_mapping(with_default_seed(None, 41, cls)).seed == 41
    assert cls.from_mapping(with_default_seed({"seed": 3}, 41, cls)).seed == 3  # its own wins
    assert cls.from_mapping(with_default_seed({}, None, cls)).seed == cls().seed


def test_build_takes_the_run_seed() -> None:
    raw = {"source_dir": "/tmp", "languages": ["en"], "files_per_language": 2}
    assert BuildParams.from_mapping(with_default_seed(raw, 7, BuildParams)).seed == 7
    assert BuildParams.from_mapping(with_default_seed({**raw, "seed": 2}, 7, BuildParams)).seed == 2


def test_every_generator_takes_the_run_seed_unless_it_sets_one() -> None:
    raw = {"generators": [{"model": "a/m1", "card": "starcoder2"}, {"model": "b/m2", "card": "codellama", "seed": 5}]}
    section = GenerateSection.from_mapping(with_default_seed(raw, 9, GenerateSection))
    assert [g.seed for g in section.generators] == [9, 5]
    assert raw["generators"][0] == {"model": "a/m1", "card": "starcoder2"}  # the input is not modified


def test_a_bad_section_is_left_for_validation_to_reject() -> None:
    assert with_default_seed("oops", 1, NoiseParams) == "oops"
    with pytest.raises(ConfigError):
        NoiseParams.from_mapping(with_default_seed({"seed": "x"}, 1, NoiseParams))
