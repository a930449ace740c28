"""Seeded sampling in the transformers backend (round-trip samples V > 1): a request's sample
depends on its own seed only, never on the other requests of its batch; greedy stays greedy."""
from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.llm.requests import BackendSpec, GenerationRequest
from engine.llm.transformers_backend import TransformersBackend


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> TransformersBackend:
    from engine.testing.tiny_fim import build_tiny_fim_model

    model = build_tiny_fim_model(tmp_path_factory.mktemp("fim") / "m", "starcoder2", layers=1)
    return TransformersBackend(BackendSpec(kind="transformers", model=model, tokenizer=model, dtype="float32"))


PROMPT = tuple(range(5, 25))


def test_sample_depends_on_its_seed_only(backend: TransformersBackend) -> None:
    alone = backend.generate([GenerationRequest("a", PROMPT, 12, seed=7, temperature=1.5)], [])
    mixed = backend.generate(
        [GenerationRequest("x", PROMPT[:10], 12, seed=1, temperature=1.5), GenerationRequest("a", PROMPT, 12, seed=7, temperature=1.5),
         GenerationRequest("g", PROMPT, 12)],
        [],
    )
    assert mixed[1].token_ids == alone[0].token_ids
    others = {backend.generate([GenerationRequest("a", PROMPT, 12, seed=s, temperature=1.5)], [])[0].token_ids for s in range(6)}
    assert len(others) > 1  # different seeds draw different samples


def test_greedy_requests_ignore_the_seed(backend: TransformersBackend) -> None:
    outs = [backend.generate([GenerationRequest("g", PROMPT, 12, seed=s)], [])[0].token_ids for s in range(3)]
    assert len(set(outs)) == 1


def test_round_trip_refuses_greedy_repeats(tmp_path: Path) -> None:
    from engine.roundtrip.params import RoundTripParams

    with pytest.raises(ConfigError, match="sample_temperature"):
        RoundTripParams.from_mapping({"generators": [{"model": "x", "backend": "oracle"}], "samples": 3, "sample_temperature": 0})
    assert RoundTripParams.from_mapping({"generators": [{"model": "x", "backend": "oracle"}], "samples": 3}).sample_temperature == 0.8
