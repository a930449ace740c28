"""Calibration of a run directory, streamed per setting (engine/calibrate/run_directory.py)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engine.calibrate.params import CalibrateParams
from engine.calibrate.run_directory import calibrate_run_dir, score_settings
from engine.calibrate.thresholds import calibrate
from engine.io.rundir import RunDirectory
from engine.records import SAMPLE_SCHEMA, SCORE_SCHEMA
from engine.stages.plan import layout_of_run
from tests.support.calibration_tables import per_generator_study


def _run_dir(tmp_path, samples: pa.Table, scores: pa.Table, n_parts: int) -> RunDirectory:
    run = RunDirectory.open_for_run(tmp_path / "run", {}, "h", {}, resume=False)
    run.use_layout(layout_of_run(()))  # a run directory written by hand: every registered stage's rows
    (run.root / "samples").mkdir()
    for i, chunk in enumerate(np.array_split(np.arange(samples.num_rows), n_parts)):
        pq.write_table(samples.take(chunk), run.root / "samples" / f"part-{i:05d}.parquet")
    # score parts cut across settings and samples, as the score stage's tasks and parts cut them
    for i, chunk in enumerate(np.array_split(np.random.default_rng(0).permutation(scores.num_rows), n_parts + 2)):
        run.commit_part(f"score/t/{i:05d}", f"scores/t__part-{i:05d}.parquet", scores.take(np.sort(chunk)), SCORE_SCHEMA)
    return run


def test_streamed_calibration_equals_the_in_memory_fit(tmp_path):
    samples, scores = per_generator_study(n=600)
    # a second setting, and rows that must be left out: an error row and a NaN row
    second = scores.set_column(scores.schema.get_field_index("metric"), "metric",
                               pa.array(["other"] * scores.num_rows)).cast(SCORE_SCHEMA)
    bad = pa.Table.from_pylist([
        dict(sample_id="s0", generator="gA", language="en", noise="none", metric="m", scorer="", context="",
             variant="F", value=float("nan"), signature="sig", error="out of memory"),
        dict(sample_id="s1", generator="gB", language="nl", noise="none", metric="other", scorer="", context="",
             variant="F", value=float("nan"), signature="sig", error=None),
    ], schema=SCORE_SCHEMA)
    keep = pc.invert(pc.is_in(scores["sample_id"], value_set=pa.array(["s0"])))
    keep2 = pc.invert(pc.is_in(second["sample_id"], value_set=pa.array(["s1"])))
    everything = pa.concat_tables([scores.filter(keep), second.filter(keep2), bad])
    run = _run_dir(tmp_path, samples.cast(SAMPLE_SCHEMA), everything, n_parts=4)
    params = CalibrateParams(grid_points=128, bootstrap=20)
    assert score_settings(run) == [("m", "", "F", ""), ("other", "", "F", "")]
    streamed = calibrate_run_dir(run, params)
    run.close()
    assert streamed.equals(calibrate(everything, samples, params))
    assert streamed.num_rows == 2 * (2 + 2 * 2 * 3 + 2 * 2)  # per setting: agreement, noise per gen + pooled
    left = {(r["metric"], r["language"], r["task"], r["generator"]): r["n_left_out"] for r in streamed.to_pylist()}
    assert left[("m", "en", "agreement", None)] == 1 and left[("other", "nl", "noise-uniform", "gB")] == 1
    assert left[("m", "nl", "agreement", None)] == 0


def test_a_run_without_scores_gives_an_empty_table(tmp_path):
    samples, scores = per_generator_study(n=30)
    run = _run_dir(tmp_path, samples, scores.slice(0, 0), n_parts=1)
    assert calibrate_run_dir(run, CalibrateParams()).num_rows == 0
    run.close()
