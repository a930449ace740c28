"""Damaged model files are bad input: each a DamagedModelError naming the file and what to do.

Before any work where config check can see it (a damaged safetensors header, weights cut short
behind an intact header, a missing config.json or tokenizer vocabulary); where it only shows at
load (the file changed after config check), a failed part with its reason, redone by --resume
once the file is repaired, and then the output equals a clean run.
"""
from __future__ import annotations

import logging
import shutil
import struct
from pathlib import Path

import pytest

from engine import cli, runner
from engine.config import load_config
from engine.errors import DamagedModelError, PartFailedError
from engine.runtime.model_files import check_model_dir
from tests.support.run_compare import assert_runs_equal

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tiny_bart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from engine.testing.tiny_lm import build_tiny_bart

    return Path(build_tiny_bart(tmp_path_factory.mktemp("tiny-bart")))


def _copy(model: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(model, tmp_path / "model"))


def _cut_header(model: Path) -> Path:
    file = model / "model.safetensors"
    data = file.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    file.write_bytes(data[: 8 + length // 2])  # the JSON header cut in the middle
    return file


def _cut_weights(model: Path) -> Path:
    file = model / "model.safetensors"
    data = file.read_bytes()
    file.write_bytes(data[: len(data) - 1000])
    return file


@pytest.mark.parametrize("damage, words", [
    (_cut_header, "damaged header"),
    (_cut_weights, "is truncated: its header says"),
    (lambda m: (m / "config.json").unlink() or m / "config.json", "config.json is missing"),
    (lambda m: [(m / n).unlink(missing_ok=True) for n in ("tokenizer.json", "vocab.json", "merges.txt")] and m / "tokenizer.json",
     "tokenizer.json is missing"),
])
def test_each_damage_is_named(tiny_bart, tmp_path, damage, words) -> None:
    model = _copy(tiny_bart, tmp_path)
    check_model_dir(model)  # whole: no error
    file = damage(model)
    with pytest.raises(DamagedModelError, match="re-download") as caught:
        check_model_dir(model, "score.scorers[0].model")
    assert str(file) in str(caught.value) and words in str(caught.value)
    assert str(caught.value).startswith("score.scorers[0].model: ")


def _config(tmp_path: Path, model: Path) -> Path:
    from tests.support.synthetic import write_synthetic

    input_path = write_synthetic(tmp_path / "in.parquet", 10)
    config = tmp_path / "config.yaml"
    config.write_text(f"name: damaged\ninput: {input_path}\npart_size: 5\nstages: [score]\nscore:\n  scorers:\n"
                      f"    - kind: likelihood\n      model: {model}\n      directions: [forward]\n")
    return config


def test_damaged_header_fails_config_check_before_the_run_directory(tiny_bart, tmp_path, caplog) -> None:
    model = _copy(tiny_bart, tmp_path)
    file = _cut_header(model)
    config, out = _config(tmp_path, model), tmp_path / "run"
    with caplog.at_level(logging.ERROR):
        code = cli.main(["run", str(config), "--out", str(out)])
    assert code == 6 and not out.exists()
    assert f"score.scorers[0].model: model file {file} declares" in caplog.text or str(file) in caplog.text
    assert "JSONDecodeError" not in caplog.text and "re-download" in caplog.text and "next: repair" in caplog.text


def test_damage_seen_only_at_load_fails_the_part_and_resume_redoes_it(tiny_bart, tmp_path, monkeypatch) -> None:
    model = _copy(tiny_bart, tmp_path)
    config = _config(tmp_path, model)
    runner.execute_run(load_config(config), str(tmp_path / "clean"), executor_name="local")
    good = (model / "model.safetensors").read_bytes()
    planned = runner.log_model_plan

    def plan_then_cut(run, config):  # cut after the driver's checks (a sweep's shared disk, another node's copy)
        planned(run, config)
        _cut_weights(model)

    monkeypatch.setattr(runner, "log_model_plan", plan_then_cut)
    with pytest.raises(PartFailedError) as caught:
        runner.execute_run(load_config(config), str(tmp_path / "run"), executor_name="local")
    assert caught.value.files_caused and not caught.value.config_caused
    manifest = runner.RunDirectory.open_existing(tmp_path / "run").manifest
    reasons = [p["error"] for p in manifest.failed_parts.values()]
    assert reasons and all("DamagedModelError" in r and "model.safetensors is truncated" in r for r in reasons)
    (model / "model.safetensors").write_bytes(good)  # repaired
    monkeypatch.setattr(runner, "log_model_plan", planned)
    runner.execute_run(load_config(config), str(tmp_path / "run"), resume=True, executor_name="local")
    assert_runs_equal(tmp_path / "run", tmp_path / "clean")
