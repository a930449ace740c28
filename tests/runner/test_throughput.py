"""Per-stage throughput: parts are metered where they run, the driver sums them into the
manifest's `throughput` section, and the console prints rows/s (and tokens/s where counted)."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from engine import throughput
from engine.config import config_from_mapping
from engine.console import throughput_lines
from engine.io.manifest import Manifest
from engine.runner import execute_run
from engine.stages.registry import get_stage
from tests.support.samples import make_sample, write_jsonl

BLEU = {"scorers": [{"kind": "lexical", "metrics": ["bleu"]}]}


def test_a_part_carries_its_stats_in_the_table_metadata_and_the_driver_takes_them_off():
    table = pa.table({"x": [1, 2, 3], "generated_tokens": [4, 5, 6]})
    with throughput.part_meter() as meter:
        throughput.count("encoder_tokens", 10)
        throughput.count("encoder_tokens", 5)
        sum(range(10_000))
    carried = throughput.attach(table, meter)
    assert carried.equals(table)  # the data is unchanged; only the schema metadata differs
    clean, stats = throughput.detach(carried)
    assert throughput.METADATA_KEY not in (clean.schema.metadata or {})
    assert stats["out_rows"] == 3 and stats["wall_s"] > 0 and stats["cpu_s"] >= 0 and stats["gpu_s"] == 0
    assert stats["counters"] == {"encoder_tokens": 15, "generated_tokens": 15.0}  # counted + summed column
    assert throughput.detach(table) == (table, None)
    throughput.count("encoder_tokens", 1)  # outside a part: no error, nothing counted


def test_the_recorder_sums_parts_per_stage_and_task_and_keeps_the_first_part_apart():
    manifest = Manifest()
    recorder = throughput.Recorder(manifest)
    for wall in (3.0, 1.0, 1.0):
        recorder.add_part("score", "embedding-x", "model-x", {"out_rows": 20, "wall_s": wall, "cpu_s": wall,
                                                              "counters": {"encoder_tokens": 100}}, in_rows=10)
    own = get_stage("score").rates  # what the run's layout lists for the stage
    stage = manifest.throughput["stages"]["score"]
    task = manifest.throughput["tasks"]["embedding-x"]
    assert stage["parts"] == 3 and stage["in_rows"] == 30 and stage["wall_s"] == 5.0
    assert task["cold_parts"] == 1 and task["cold_wall_s"] == 3.0 and task["cold_rows"] == 10
    assert dict(throughput.rates("score", stage, own=own)) == pytest.approx({"rows/s": 6.0, "encoder tokens/s": 60.0})
    with recorder.timed("calibrate"):
        pass
    assert manifest.throughput["steps"]["calibrate"]["runs"] == 1


def test_a_run_records_per_stage_throughput_in_the_manifest_and_prints_it(tmp_path):
    rows = [make_sample(f"f{i}/gen-a") for i in range(6)]
    write_jsonl(tmp_path / "in.jsonl", rows)
    config = config_from_mapping({"input": "in.jsonl", "part_size": 2, "stages": ["score"], "score": BLEU}, tmp_path)
    summary = execute_run(config, str(tmp_path / "run"))
    section = json.loads((tmp_path / "run" / "manifest.json").read_text())["throughput"]
    score = section["stages"]["score"]
    assert score["parts"] == 3 and score["in_rows"] == 6 and score["out_rows"] == 6
    assert score["wall_s"] > 0 and score["cpu_s"] > 0
    assert {"prepare", "stage:score"} <= set(section["steps"])
    (task,) = section["tasks"].values()
    assert task["stage"] == "score" and task["in_rows"] == 6 and task["cold_parts"] == 1
    lines = throughput_lines(summary.throughput)
    assert lines and any(line.strip().startswith("score") and "6 rows (6 out) in 3 part(s)" in line and "rows/s" in line
                         for line in lines), lines


def test_the_encoder_counts_its_tokens_inside_a_part(tmp_path):
    from engine.metrics.encoder_runtime import EncoderRuntime
    from tests.support.tiny_encoders import build

    path = build("bert", tmp_path / "bert")
    runtime = EncoderRuntime(path, layer=1, dtype="float32", device="cpu", add_prefix_space=False, max_length=None)
    with throughput.part_meter() as meter:
        runtime.forward([[2, 10, 11, 3], [2, 12, 3]], keep=[[1], [1]], batch_tokens=64)
    assert meter.counters["encoder_tokens"] == 7
