"""`babelscore diff`: two run directories compared row by row (engine/rundiff.py)."""
from __future__ import annotations

import shutil
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.config import config_from_mapping
from engine.records import JUDGMENT_SCHEMA, SCORE_KEY, SCORE_SCHEMA
from engine.rundiff import compare_runs, key_columns
from engine.runner import execute_run
from tests.support.paths import PYTHON, REPO
from tests.support.samples import make_sample, write_jsonl


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("diff")
    rows = [
        make_sample(f"f{f}/g{g}", prediction=f" returns {g} of {f}", file_id=f"f{f}", generator=f"g{g}")
        for f in range(3) for g in range(2)
    ]
    input_path = write_jsonl(tmp / "in.jsonl", rows)
    config = config_from_mapping(
        {"input": str(input_path), "part_size": 2, "stages": ["score"], "score": {"scorers": [{"kind": "lexical"}]}}, tmp
    )
    execute_run(config, str(tmp / "run"))
    return tmp / "run"


def _copy(run, tmp_path):
    target = tmp_path / "copy"
    shutil.copytree(run, target)
    return target


def _rewrite_first_score_part(run, change):
    path = sorted((run / "scores").glob("*__part-*.parquet"))[0]
    table = pq.read_table(path)
    pq.write_table(change(table), path)
    return table


def test_a_copy_is_equal_bit_for_bit(clean_run, tmp_path):
    result = compare_runs(clean_run, _copy(clean_run, tmp_path))
    assert result.equal, result.render()
    assert result.rows_compared["scores"] > 0 and "samples" in result.rows_compared


def test_a_moved_value_is_found_with_its_delta_and_tolerance_decides(clean_run, tmp_path):
    other = _copy(clean_run, tmp_path)

    def nudge(table):
        values = table.column("value").to_pylist()
        values[0] = values[0] + 1e-9
        return table.set_column(table.schema.get_field_index("value"), "value", pa.array(values, pa.float64()))

    before = _rewrite_first_score_part(other, nudge)
    result = compare_runs(clean_run, other)
    assert not result.equal and result.differing_rows == 1
    [difference] = result.differences
    assert difference.column == "value" and difference.delta == pytest.approx(1e-9, rel=1e-3)
    assert difference.key == tuple(before.slice(0, 1).to_pylist()[0][k] for k in SCORE_KEY)
    assert max(result.max_delta.values()) == pytest.approx(1e-9, rel=1e-3)
    assert compare_runs(clean_run, other, tolerance=1e-8).equal


def test_rows_only_in_one_run_and_a_changed_signature_are_differences(clean_run, tmp_path):
    other = _copy(clean_run, tmp_path)

    def drop_and_resign(table):
        signatures = table.column("signature").to_pylist()
        signatures[1] = signatures[1] + "x"
        table = table.set_column(table.schema.get_field_index("signature"), "signature", pa.array(signatures))
        return table.slice(1)

    _rewrite_first_score_part(other, drop_and_resign)
    result = compare_runs(clean_run, other)
    assert len(result.only_a) == 1 and not result.only_b
    assert [d.column for d in result.differences] == ["signature"]
    assert "only in A" in result.render()


def test_timing_columns_are_not_compared_and_keys_follow_the_schema():
    assert key_columns(SCORE_SCHEMA) == SCORE_KEY
    assert "latency_s" not in key_columns(JUDGMENT_SCHEMA)
    from engine.rundiff import is_timing_column

    assert is_timing_column("latency_s") and not is_timing_column("n_tokens") and not is_timing_column("value")


def test_cli_exits_0_only_when_equal(clean_run, tmp_path):
    other = _copy(clean_run, tmp_path)
    same = subprocess.run([PYTHON, "-m", "engine.cli", "diff", str(clean_run), str(other)],
                          capture_output=True, text=True, cwd=REPO)
    assert same.returncode == 0 and "equal" in same.stdout, same.stdout + same.stderr
    _rewrite_first_score_part(other, lambda t: t.slice(1))
    differ = subprocess.run([PYTHON, "-m", "engine.cli", "diff", str(clean_run), str(other)],
                            capture_output=True, text=True, cwd=REPO)
    assert differ.returncode == 1 and "DIFFERENT" in differ.stdout


def test_a_row_duplicated_into_another_part_file_is_a_difference(clean_run, tmp_path):
    # The exactly-once failure a resume could make: one row committed in two parts of a task.
    # Keys are per task, not per file, so the copy in the second file must not replace the first.
    other = _copy(clean_run, tmp_path)
    first, second = sorted((other / "scores").glob("*__part-*.parquet"))[:2]
    assert first.name.split("__part-")[0] == second.name.split("__part-")[0]
    pq.write_table(pa.concat_tables([pq.read_table(second), pq.read_table(first).slice(0, 1)]), second)
    result = compare_runs(clean_run, other)
    assert not result.equal and len(result.only_b) == 1 and not result.only_a, result.render()
    assert result.only_b[0][2][-1] == "#1"


def test_nan_equals_nan_and_a_zero_of_the_other_sign_differs_only_bit_for_bit(clean_run, tmp_path):
    def values(table, new):
        column = table.column("value").to_pylist()
        column[:2] = new
        return table.set_column(table.schema.get_field_index("value"), "value", pa.array(column, pa.float64()))

    nan_a, nan_b = _copy(clean_run, tmp_path / "a"), _copy(clean_run, tmp_path / "b")
    _rewrite_first_score_part(nan_a, lambda t: values(t, [float("nan"), 0.0]))
    _rewrite_first_score_part(nan_b, lambda t: values(t, [float("nan"), -0.0]))
    result = compare_runs(nan_a, nan_b)
    assert [d.column for d in result.differences] == ["value"] and result.differences[0].b == 0.0
    assert compare_runs(nan_a, nan_b, tolerance=1e-12).equal  # NaN == NaN, and -0.0 == 0.0 within a tolerance
    assert not compare_runs(clean_run, nan_a).equal  # a number against NaN is a difference


def test_a_run_that_did_not_complete_is_named_with_its_status(clean_run, tmp_path):
    import json

    copy = _copy(clean_run, tmp_path)
    manifest_path = copy / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["status"], manifest["failure"] = "failed", {"error": "lost the Ray cluster in the middle of the run"}
    manifest_path.write_text(json.dumps(manifest))
    text = compare_runs(clean_run, copy).render()
    assert (f"  {copy} is not a complete run (status failed: lost the Ray cluster in the middle of the run): "
            "only its committed parts are compared") in text
    assert str(clean_run) + " is not" not in text
    manifest["status"] = "running"
    manifest_path.write_text(json.dumps(manifest))
    assert f"{copy} is not a complete run (status running: its driver still runs" in compare_runs(copy, clean_run).render()
    assert "is not a complete run" not in compare_runs(clean_run, _copy(clean_run, tmp_path / "again")).render()
