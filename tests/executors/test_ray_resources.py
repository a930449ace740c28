"""Config-time refusal of vLLM models a Ray model actor's GPUs cannot hold (no Ray is started)."""
from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.runtime.memory import ModelNeed, ray_resource_errors


def _config(folder: Path, **generator) -> "object":
    import yaml

    from engine.config import load_config
    from engine.testing.tiny_fim import build_tiny_fim_model
    from tests.support.samples import write_demo_subset

    samples = write_demo_subset(folder / "samples.jsonl", files_per_language=1)
    model = build_tiny_fim_model(folder / "fim", "starcoder2", seed=0)
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump({
        "name": "tp", "input": str(samples), "seed": 0, "stages": ["generate"],
        "generate": {"generators": [{"model": model, "card": "starcoder2", "backend": "vllm", "max_new_tokens": 8,
                                     "max_model_len": 1024, **generator}]},
    }), encoding="utf-8")
    return load_config(path)


def test_tensor_parallel_above_the_actors_gpus_is_refused_before_the_run(tmp_path: Path) -> None:
    from engine.runner import execute_run

    config = _config(tmp_path, tensor_parallel_size=2)
    out = tmp_path / "run"
    with pytest.raises(ConfigError) as caught:
        execute_run(config, str(out), executor_name="ray", ray_options={"gpus_per_actor": 1.0})
    message = str(caught.value)
    assert "generate.generators[0].tensor_parallel_size: 2" in message
    assert "--ray-gpus-per-actor 2" in message
    assert not out.exists()  # refused before the run directory (and Ray) exist


def test_what_an_actor_holds() -> None:
    vllm = dict(model="m", stage="generate", where="generate.generators[0]", backend="vllm")
    assert ray_resource_errors([ModelNeed(**vllm, tensor_parallel_size=2)], 2.0) == []
    assert ray_resource_errors([ModelNeed(**vllm, tensor_parallel_size=4)], 2.0)
    # A transformers model is one process on one device whatever the actor asks for.
    assert ray_resource_errors([ModelNeed("m", "score", "score.scorers[0]")], 0.5) == []
    # Half a GPU per actor: an engine taking 0.9 of the device starves the other actor on it.
    (error,) = ray_resource_errors([ModelNeed(**vllm, gpu_memory_utilization=0.9)], 0.5)
    assert "gpu_memory_utilization: 0.9" in error and "0.5" in error
    assert ray_resource_errors([ModelNeed(**vllm, gpu_memory_utilization=0.45)], 0.5) == []


def test_config_check_refuses_tensor_parallel_above_the_actors_gpus(tmp_path: Path, capsys, caplog) -> None:
    """`babelscore config check --executor ray` runs `run`'s Ray resource check (same options)."""
    from engine.cli import main
    from engine.cli.exits import exit_code

    _config(tmp_path, tensor_parallel_size=2)  # writes tmp_path/config.yaml
    path = str(tmp_path / "config.yaml")
    assert main(["config", "check", path]) == 0  # local: no actor to fit
    capsys.readouterr()
    caplog.clear()
    assert main(["config", "check", path, "--executor", "ray"]) == exit_code(ConfigError("x"))
    err = caplog.text
    assert "generate.generators[0].tensor_parallel_size: 2" in err and "--ray-gpus-per-actor 2" in err
    assert main(["config", "check", path, "--executor", "ray", "--ray-gpus-per-actor", "2"]) == 0
    assert "  ok  ray resources: every vLLM model fits a model actor of 2 GPU(s)" in capsys.readouterr().out


def test_a_model_estimated_over_its_budget_is_a_warning_line() -> None:
    from engine.preflight import WARNING_PREFIX, memory_line
    from engine.runtime.memory import PlannedModel

    need = ModelNeed("m", "generate", "generate.generators[0]", backend="vllm")
    over = memory_line(PlannedModel(need, "cuda:0", estimated_bytes=2 * 2**30, budget_bytes=2**30))
    assert over.startswith(WARNING_PREFIX + "memory: generate.generators[0]") and "more than is available" in over
    assert memory_line(PlannedModel(need, "cuda:0", 2**30, 2 * 2**30)).startswith("memory: ")
