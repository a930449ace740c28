"""Reuse of generations and of likelihood rows (engine.reuse): a sweep grown by one generator
generates only that generator's comments and scores only its rows; the output equals a fresh
run's, part file by part file, whatever the earlier run's cut and input order.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from engine.config import config_from_mapping
from engine.runner import execute_run
from tests.support.samples import write_demo_subset

NEURAL_TOLERANCE = 1e-6
GENERATOR = {"model": "demo:tiny-fim", "card": "starcoder2", "backend": "transformers", "max_new_tokens": 8,
             "dtype": "float32"}


def _config(tmp: Path, input_path: Path, part_size: int, generators: list[dict], reuse=()) -> object:
    raw = {
        "name": "reuse-generate", "input": str(input_path), "part_size": part_size, "stages": ["generate", "score"],
        "generate": {"generators": generators},
        "score": {"scorers": [
            {"kind": "lexical", "metrics": ["bleu"]},
            {"kind": "likelihood", "model": "demo:tiny-bart", "contexts": ["none"], "directions": ["forward"],
             "dtype": "float32"},
        ]},
    }
    return replace(config_from_mapping(raw, tmp), reuse=tuple(str(r) for r in reuse))


def _tables(run: Path, folder: str) -> dict[str, list[dict]]:
    return {p.name: pq.read_table(p).to_pylist() for p in sorted((run / folder).glob("*.parquet"))}


ONE = [dict(GENERATOR, name="fim")]
TWO = [dict(GENERATOR, name="fim"), dict(GENERATOR, name="fim-prime5", prime_tokens=5)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("reuse-generate")
    ordered = write_demo_subset(tmp / "ordered.jsonl", 1)
    shuffled = write_demo_subset(tmp / "shuffled.jsonl", 1, shuffle_seed=5)
    execute_run(_config(tmp, shuffled, 7, ONE), str(tmp / "a"))
    execute_run(_config(tmp, ordered, 100, TWO), str(tmp / "b-fresh"))
    return {"tmp": tmp, "ordered": ordered, "a": tmp / "a", "fresh": tmp / "b-fresh"}


def test_an_added_generator_generates_and_scores_only_its_rows(runs, monkeypatch):
    from engine.generate import fim as generate_stage

    generated: list[str] = []
    original = generate_stage.generate_samples

    def counting(samples, params, max_new_tokens=None):  # where every generator's part is generated
        generated.append(params.generator_name)
        return original(samples, params, max_new_tokens)

    monkeypatch.setattr(generate_stage, "generate_samples", counting)
    out = runs["tmp"] / "b-reuse"
    execute_run(_config(runs["tmp"], runs["ordered"], 100, TWO, [runs["a"]]), str(out))
    assert set(generated) == {"fim-prime5"}
    assert _tables(out, "generations") == _tables(runs["fresh"], "generations")
    got, want = _tables(out, "scores"), _tables(runs["fresh"], "scores")
    assert got.keys() == want.keys()
    for name in want:
        assert len(got[name]) == len(want[name])
        for x, y in zip(got[name], want[name]):
            assert {**x, "value": None} == {**y, "value": None}
            assert abs(x["value"] - y["value"]) <= (0 if x["metric"] == "bleu" else NEURAL_TOLERANCE)
    tasks = json.loads((out / "manifest.json").read_text())["reuse"]["tasks"]
    a = str(runs["a"])
    assert tasks["generate-fim"] == {"stage": "generate", "reused": {a: 5}, "computed": 0}
    assert tasks["generate-fim-prime5"] == {"stage": "generate", "reused": {}, "computed": 5}
    rows = [r for t in want.values() for r in t]
    for task, info in tasks.items():
        if info["stage"] == "score":
            mine = [r for name, t in want.items() if name.startswith(task + "__") for r in t]
            assert info["reused"] == {a: sum(r["generator"] == "fim" for r in mine)}, task
            assert info["computed"] == sum(r["generator"] == "fim-prime5" for r in mine) > 0, task
    assert rows
