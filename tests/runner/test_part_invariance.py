"""Part-invariance: the demo config's numbers do not depend on how the work is cut.

The same demo subset (lexical, embedding with idf in three contexts, likelihood, noise,
calibration) runs with parts of 1 file, of 7 rows and of all rows, in shuffled input order,
on the local and the Ray executor. Every run must give the same score rows: lexical values
bitwise equal, fp32 neural values within 1e-6 across part sizes (batch shapes may change the
last bits; docs/running.md states the bounds per precision; this subset's values stay inside
the BERTScore bound), the same signatures (idf corpus hash included) and the same calibration
(thresholds within 1e-9). At one part size the Ray run equals the local run bit for bit, every
output table compared by `babelscore diff` (engine/rundiff.py).
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from engine.config import config_from_mapping
from engine.records import SCORE_KEY
from engine.rundiff import compare_runs
from engine.runner import execute_run
from tests.support.paths import REPO
from tests.support.samples import write_demo_subset

FILES_PER_LANGUAGE = 1
NEURAL_TOLERANCE = 1e-6
LEXICAL_METRICS = {"bleu", "rougeL", "meteor"}


def _subset(path: Path, shuffle_seed: int | None) -> Path:
    return write_demo_subset(path, FILES_PER_LANGUAGE, shuffle_seed)


def _config(tmp: Path, input_path: Path, part_size: int) -> object:
    raw = yaml.safe_load((REPO / "configs" / "demo.yaml").read_text(encoding="utf-8"))
    raw["input"] = str(input_path)
    raw["part_size"] = part_size
    raw["stages"] = ["noise", "score", "calibrate"]
    # Perturbation, judge and round-trip invariance have their own tests (test_perturb,
    # test_judge_stage, test_roundtrip_stage); this one covers the scorers, noise and calibration.
    for section in ("perturb", "judge", "roundtrip"):
        raw.pop(section, None)
    raw.pop("report", None)
    raw["calibrate"]["bootstrap"] = 10
    for scorer in raw["score"]["scorers"]:
        if scorer["kind"] == "embedding":
            scorer["idf"] = True
            scorer["contexts"] = ["none", "minimal", "full"]
    return config_from_mapping(raw, REPO / "configs")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from engine.demo import prepare_demo_models
    from engine.runtime import DEMO_MODELS_ENV

    tmp = tmp_path_factory.mktemp("invariance")
    os.environ[DEMO_MODELS_ENV] = str(tmp / "models")
    prepare_demo_models(tmp / "models")
    ordered = _subset(tmp / "ordered.jsonl", None)
    shuffled = _subset(tmp / "shuffled.jsonl", 7)
    plans = {
        "local-1-file": (ordered, 1, "local"),
        "local-7-rows-shuffled": (shuffled, 7, "local"),
        "local-all-rows": (ordered, 10_000, "local"),
        "ray-7-rows-shuffled": (shuffled, 7, "ray"),
    }
    out = {}
    for name, (input_path, part_size, executor) in plans.items():
        if executor == "ray":
            pytest.importorskip("ray")
        config = _config(tmp, input_path, part_size)
        options = {"num_cpus": 2, "actors_per_model": 1} if executor == "ray" else None
        execute_run(config, str(tmp / name), executor_name=executor, ray_options=options)
        out[name] = tmp / name
    return out


def _scores(run: Path) -> list[dict]:
    rows = pq.read_table(run / "scores").sort_by([(k, "ascending") for k in SCORE_KEY]).to_pylist()
    keys = [tuple(r[k] for k in SCORE_KEY) for r in rows]
    assert len(keys) == len(set(keys)), f"duplicate score keys in {run}"
    return rows


def test_parts_differ_between_runs(runs: dict[str, Path]) -> None:
    parts = {name: json.loads((run / "manifest.json").read_text())["counts"]["parts"] for name, run in runs.items()}
    assert parts["local-1-file"] == 5 * FILES_PER_LANGUAGE
    assert parts["local-all-rows"] == 1
    assert 1 < parts["local-7-rows-shuffled"] < parts["local-1-file"]


def test_score_rows_equal_whatever_the_cut(runs: dict[str, Path]) -> None:
    names = list(runs)
    reference = _scores(runs[names[0]])
    assert {r["metric"] for r in reference} == {"bleu", "rougeL", "meteor", "bertscore", "bartscore"}
    assert all(r["error"] is None for r in reference)
    for name in names[1:]:
        rows = _scores(runs[name])
        assert len(rows) == len(reference), name
        worst = 0.0
        for got, want in zip(rows, reference):
            gv, wv = got.pop("value"), dict(want).pop("value")
            assert got == {k: v for k, v in want.items() if k != "value"}, name
            if want["metric"] in LEXICAL_METRICS:
                assert (math.isnan(gv) and math.isnan(wv)) or gv == wv, (name, want)
            else:
                worst = max(worst, abs(gv - wv))
        assert worst <= NEURAL_TOLERANCE, (name, worst)


def test_ray_equals_local_bit_for_bit_at_one_part_size(runs: dict[str, Path]) -> None:
    result = compare_runs(runs["local-7-rows-shuffled"], runs["ray-7-rows-shuffled"])
    assert result.rows_compared["scores"] > 0
    assert result.equal, result.render()


def test_idf_signature_names_the_corpus_hash(runs: dict[str, Path]) -> None:
    signatures = [
        json.dumps(json.loads((run / "manifest.json").read_text())["signatures"], sort_keys=True) for run in runs.values()
    ]
    assert "idf:corpus:" in signatures[0]
    assert len(set(signatures)) == 1


def test_calibration_equal_whatever_the_cut(runs: dict[str, Path]) -> None:
    def table(run: Path) -> list[dict]:
        rows = pq.read_table(run / "calibration.parquet").to_pylist()
        return sorted(rows, key=lambda r: tuple(str(r[k]) for k in ("task", "metric", "scorer", "variant", "context", "language",
                                                                  "group_by", "generator")))

    reference = table(next(iter(runs.values())))
    assert any(r["fitted"] for r in reference)
    for name, run in runs.items():
        rows = table(run)
        assert len(rows) == len(reference), name
        for got, want in zip(rows, reference):
            # Equal inputs (lexical scores) give thresholds within 1e-9; neural inputs may differ
            # in the last bits, so their thresholds may move by as much.
            tolerance = 1e-9 if want["metric"] in LEXICAL_METRICS else NEURAL_TOLERANCE
            for key, value in want.items():
                if key == "thresholds" and value is not None:
                    assert np.allclose(got[key], value, rtol=0, atol=tolerance), (name, want["metric"], key)
                elif isinstance(value, float) and not math.isnan(value):
                    assert abs(got[key] - value) <= tolerance, (name, want["metric"], key)
                elif not isinstance(value, (float, list)):
                    assert got[key] == value, (name, key)
