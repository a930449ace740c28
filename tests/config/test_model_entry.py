"""The shared model entry (engine.params.ModelEntry) of the six model sections, the scorers'
old window key `max_length`, and the judge's per-backend keys."""
from __future__ import annotations

import dataclasses
import logging

import pytest

from engine.errors import ConfigError
from engine.finetune.params import FinetuneParams
from engine.generate.params import GenerateParams
from engine.judge.params import JudgeParams
from engine.metrics.params import EmbeddingParams, LikelihoodParams
from engine.metrics.task_names import task_name_for
from engine.params import ModelEntry
from engine.roundtrip.params import ModelParams

ENTRIES = (GenerateParams, ModelParams, JudgeParams, EmbeddingParams, LikelihoodParams, FinetuneParams)
REQUIRED = {GenerateParams: {"card": "starcoder2"}}


@pytest.mark.parametrize("cls", ENTRIES)
def test_every_model_section_has_the_one_model_entry(cls: type) -> None:
    assert issubclass(cls, ModelEntry)
    shared = {f.name: f.type for f in dataclasses.fields(ModelEntry)}
    assert {f.name: f.type for f in dataclasses.fields(cls) if f.name in shared} == shared
    params = cls.from_mapping({"model": "m", "max_model_len": 512, "dtype": "float32", **REQUIRED.get(cls, {})})
    assert (params.model, params.max_model_len, params.dtype) == ("m", 512, "float32")
    with pytest.raises(ConfigError, match=r"judges\[0\]\.max_model_len: got 0; allowed: null .* or an integer >= "):
        cls.from_mapping({"model": "m", "max_model_len": 0, **REQUIRED.get(cls, {})}, where="judges[0]")
    with pytest.raises(ConfigError, match="model: got ' '"):
        cls.from_mapping({"model": " ", **REQUIRED.get(cls, {})})


def test_finetune_trains_in_the_dtypes_it_supports() -> None:
    assert FinetuneParams.from_mapping({"model": "m", "dtype": "bfloat16"}).dtype == "bfloat16"
    with pytest.raises(ConfigError, match=r"finetune\.dtype: got 'float16'; allowed: auto, float32 or bfloat16"):
        FinetuneParams.from_mapping({"model": "m", "dtype": "float16"}, where="finetune")


@pytest.mark.parametrize("cls", (EmbeddingParams, LikelihoodParams))
def test_the_scorers_old_window_key_is_read_with_a_warning_naming_the_new_one(
        cls: type, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="engine.params"):
        old = cls.from_mapping({"model": "m", "max_length": 64}, where="score.scorers[1]")
    assert old.max_model_len == 64
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == ["score.scorers[1].max_length: renamed max_model_len; write `max_model_len:` (the old name is still read)"]
    new = cls.from_mapping({"model": "m", "max_model_len": 64})
    assert old == new
    # the run's identities keep the old name: a task made before the rename keeps its name and part files
    assert new.to_dict(identity=True)["max_length"] == 64 and "max_model_len" not in new.to_dict(identity=True)
    assert new.to_dict()["max_model_len"] == 64 and "max_length" not in new.to_dict()
    assert task_name_for("m", "m", new) == task_name_for("m", "m", old)
    assert task_name_for("m", "m", new) != task_name_for("m", "m", cls.from_mapping({"model": "m", "max_model_len": 65}))
    with pytest.raises(ConfigError, match=r"max_length: the old name of max_model_len, which is given too; keep only max_model_len"):
        cls.from_mapping({"model": "m", "max_length": 64, "max_model_len": 64})


@pytest.mark.parametrize("backend, key, value, owner", [
    ("transformers", "base_url", "http://localhost:8000/v1", "http"),
    ("vllm", "max_concurrency", 2, "http"),
    ("vllm", "batch_size", 2, "transformers"),
    ("transformers", "enforce_eager", True, "vllm"),
    ("http", "gpu_memory_utilization", 0.5, "vllm"),
    ("http", "dtype", "float16", "vllm or transformers"),
    ("http", "max_model_len", 2048, "vllm or transformers"),
    ("http", "lora", "./adapter", "vllm or transformers"),
])
def test_a_key_of_another_backend_is_refused_naming_its_backend(backend: str, key: str, value: object, owner: str) -> None:
    judge = {"model": "m", "backend": backend, **({"base_url": "http://localhost:8000/v1"} if backend == "http" else {})}
    with pytest.raises(ConfigError) as caught:
        JudgeParams.from_mapping({**judge, key: value}, where="judge.judges[0]")
    assert str(caught.value).startswith(f"judge.judges[0].{key}: only with backend {owner} (a key of the {owner} backend; "
                                        f"this judge's backend is {backend})")
    with pytest.raises(ConfigError, match=f"^{key}: only with backend {owner} "):  # built in code, not read: the same rule
        JudgeParams(**{**judge, key: value})
    # its default is not a setting (a recorded config lists every key): taken as before
    default = JudgeParams.from_mapping(judge)
    assert JudgeParams.from_mapping({**judge, key: getattr(default, key)}) == default


def test_a_recorded_judge_is_read_back_whole_and_keeps_its_task_name() -> None:
    for judge in ({"model": "m", "backend": "transformers", "batch_size": 2},
                  {"model": "a/b", "backend": "http", "base_url": "http://x/v1", "max_retries": 1}):
        params = JudgeParams.from_mapping(judge)
        again = JudgeParams.from_mapping(params.to_dict())
        assert again == params and again.task_name() == params.task_name()


def test_the_scorer_column_names_a_window_by_its_old_key_in_its_old_place() -> None:
    from engine.score.params import parse_scorers

    for cls in (EmbeddingParams, LikelihoodParams):  # the identity order names every key once
        assert sorted(cls.identity_order) == sorted(cls.from_mapping({"model": "m"}).to_dict(identity=True))
    section = parse_scorers({"scorers": [
        {"kind": "embedding", "model": "m"},
        {"kind": "embedding", "model": "m", "mode": "fast", "dtype": "bfloat16", "max_model_len": 64},
        {"kind": "likelihood", "model": "b", "max_model_len": 32, "dtype": "float16"},
        {"kind": "likelihood", "model": "b"},
    ]})
    # written out by hand: the labels runs made before the shared model entry wrote
    assert [s.scorer_label for s in section.scorers] == ["m", "m[mode=fast,dtype=bfloat16,max_length=64]",
                                                         "b[dtype=float16,max_length=32]", "b"]
