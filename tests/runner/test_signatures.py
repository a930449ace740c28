"""Provenance: every stage that writes rows records its signature in the manifest, and the
demo generation job's manifest names the generator's model identity, dtype and decoding."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from engine import runner
from engine.config import config_from_mapping
from engine.errors import StageError
from engine.io.manifest import Manifest
from engine.signature import parse_signature
from engine.stages.base import PartStage
from engine.stages.plan import build_plan, reopen_run
from engine.stages.registry import STAGES, get_stage
from tests.support.paths import REPO
from tests.support.samples import write_demo_subset


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    import os

    from engine.demo import prepare_demo_models
    from engine.runtime import DEMO_MODELS_ENV

    tmp = tmp_path_factory.mktemp("gen")
    os.environ[DEMO_MODELS_ENV] = str(tmp / "models")
    prepare_demo_models(tmp / "models")
    write_demo_subset(tmp / "subset.jsonl", 1)
    raw = yaml.safe_load((REPO / "configs" / "demo_generate.yaml").read_text(encoding="utf-8"))
    raw["input"] = str(tmp / "subset.jsonl")
    config = config_from_mapping(raw, REPO / "configs")
    runner.execute_run(config, str(tmp / "run"))
    return tmp / "run", config


@pytest.mark.parametrize("name", [n for n in STAGES if get_stage(n).kind == "part"])
def test_every_part_stage_of_the_registry_defines_its_signatures(name: str) -> None:
    stage = get_stage(name)
    signs = type(stage).signatures is not PartStage.signatures
    assert signs, f"stage {name} records no signature"


def test_demo_generate_manifest_carries_the_generator_signatures(generated: tuple[Path, object]) -> None:
    run, _config = generated
    manifest = json.loads((run / "manifest.json").read_text())
    assert Manifest(manifest).unsigned_tasks() == []
    for name in ("tiny-fim", "tiny-fim-prime5"):
        fields = parse_signature(manifest["signatures"][f"generate-{name}"]["generation"])
        assert fields["model"] == "demo:tiny-fim" and fields["model_id"].startswith("sha256-")
        assert fields["dtype"] == "float32" and fields["card"] == "starcoder2" and fields["prime_rule"] == "letters"
        assert fields["decode"] == "greedy" and fields["seed"] == "0" and fields["max_new"] == "24"
    assert parse_signature(manifest["signatures"]["generate-tiny-fim-prime5"]["generation"])["prime"] == "5"


def test_a_stage_that_writes_rows_without_a_signature_fails_the_run(
    generated: tuple[Path, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir, config = generated
    shutil.copytree(run_dir, tmp_path / "run")
    written = json.loads((tmp_path / "run" / "manifest.json").read_text())
    (tmp_path / "run" / "manifest.json").write_text(json.dumps({**written, "signatures": {}}))
    run = reopen_run(tmp_path / "run")
    monkeypatch.setattr(type(get_stage("generate")), "signatures", PartStage.signatures)
    with pytest.raises(StageError, match="generate-tiny-fim.*no signature"):
        runner.record_signatures(run, build_plan(config))
