"""`babelscore bench CONFIG`: seeded whole-file samples, the fixed + per-row fit, and the CLI's
table with projected and (with --compare) measured time side by side. No timing is asserted:
the projection's accuracy is a measurement (docs/throughput.md)."""
from __future__ import annotations

import json
import os
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.projection import StageFit, choose_files, fit, fit_above_noise, write_sample
from tests.support.paths import PYTHON, REPO
from tests.support.samples import make_sample, write_jsonl


def test_fit_separates_fixed_and_per_row_costs_and_never_goes_negative():
    assert fit((10, 12.0), (20, 14.0)) == pytest.approx((10.0, 0.2))
    assert fit((10, 5.0), (20, 4.0)) == (4.0, 0.0)  # noise made the larger run faster: all fixed
    assert fit((10, 1.0), (20, 10.0)) == pytest.approx((0.0, 0.5))  # a negative intercept: all per-row
    assert fit_above_noise((10, 10.0), (20, 11.0)) == (10.5, 0.0)  # grew by less than the noise
    assert fit_above_noise((10, 10.0), (20, 20.0)) == pytest.approx((0.0, 1.0))
    stage = StageFit("stage:score", True, None, fixed_s=10.0, per_row_s=0.5, small=(10, 15.0), large=(20, 20.0),
                     full_rows=1000)
    assert stage.projected_s == 510.0 and stage.projected_on(4) == 135.0 and stage.fixed_share == 0.5
    cpu = StageFit("calibrate", False, None, 1.0, 0.01, (10, 1.1), (20, 1.2), 1000)
    assert cpu.projected_on(4) == cpu.projected_s  # CPU and driver steps do not scale with devices


def test_samples_are_whole_files_chosen_by_seed(tmp_path):
    rows = [make_sample(f"f{i}/g{j}", generator=f"g{j}") for i in range(10) for j in range(3)]
    ids = [r["file_id"] for r in rows]
    chosen = choose_files(ids, 7, seed=0)
    assert len(chosen) == 3  # 3 files x 3 rows >= 7 rows; files are never split
    assert chosen == choose_files(ids, 7, seed=0) and chosen != choose_files(ids, 7, seed=1)
    assert choose_files(ids, 4, seed=0) == chosen[:2]  # the smaller sample is part of the larger
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    assert write_sample(src, tmp_path / "s.jsonl", set(chosen)) == 9
    kept = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert {r["file_id"] for r in kept} == set(chosen) and kept == [r for r in rows if r["file_id"] in chosen]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "in.parquet")
    assert write_sample(tmp_path / "in.parquet", tmp_path / "s.parquet", set(chosen)) == 9
    assert pq.read_table(tmp_path / "s.parquet").to_pylist() == kept


def test_bench_prints_per_stage_rates_and_the_projection_beside_the_measured_run(tmp_path):
    rows = [make_sample(f"f{i}/gen-a", language=("en", "nl")[i % 2]) for i in range(24)]
    write_jsonl(tmp_path / "in.jsonl", rows)
    config = tmp_path / "my.yaml"
    config.write_text("input: in.jsonl\nstages: [score]\nscore:\n  scorers: [{kind: lexical, metrics: [bleu]}]\n")
    proc = subprocess.run([PYTHON, "-m", "engine.cli", "bench", str(config), "--sample", "8", "--compare", "--devices", "2",
                           "--write-profile", str(tmp_path / "p.json")],
                          capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    # the runs' progress is relayed: a bench would otherwise print nothing for minutes
    assert "bench small run: score: 2 part(s), 4 rows to run" in proc.stderr, proc.stderr
    out = proc.stdout
    assert "samples of 4 and 8 of the input's 24 rows" in out
    header = next(line for line in out.splitlines() if line.startswith("stage"))
    for column in ("rows/s", "warm rows/s", "fixed share", "projected s", "measured s", "ratio"):
        assert column in header
    score = next(line for line in out.splitlines() if line.startswith("score "))
    assert len(score.split()) == 10, score  # every column filled for a part stage
    assert "projected time for the whole input on this machine:" in out
    assert "projection for 2 devices like this one (" in out and "not measured" in out and "regime:" in out
    assert "says nothing about a GPU" in out or "like this one (gpu" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "my.yaml", "p.json"]  # nothing else left beside the config
    # The profile projects the same input to the same total, and to N devices only as the measured kind
    projected = float(next(line for line in out.splitlines() if line.startswith("total")).split()[-3])
    again = subprocess.run([PYTHON, "-m", "engine.cli", "bench", str(config), "--profile", str(tmp_path / "p.json")],
                           capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert again.returncode == 0, again.stderr
    assert "projection from the profile measured on cpu (" in again.stdout and "bench small run" not in again.stderr
    total = float(next(line for line in again.stdout.splitlines() if line.strip().startswith("total")).split()[-1])
    assert total == pytest.approx(projected, abs=0.15)


def _profile(tmp_path, steps, **extra):
    body = {"format": 1, "device": "gpu (H200)", "measured": "2026-01-01T00:00:00Z", "sample_rows": 8,
            "steps": [{"step": s, "model": m, "fixed_s": 1.0, "unit": "row", "per_unit_s": 0.01} for s, m in steps], **extra}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(body))
    return path


def test_a_profile_of_another_config_or_with_a_bad_field_is_refused_and_no_run_flag_goes_with_it(tmp_path, capsys, caplog):
    def logged():
        text = caplog.text
        caplog.clear()
        return text

    from engine.cli import main

    write_jsonl(tmp_path / "in.jsonl", [make_sample(f"f{i}/gen-a") for i in range(4)])
    neural = tmp_path / "n.yaml"
    neural.write_text("input: in.jsonl\nstages: [score, calibrate]\nscore:\n  scorers: [{kind: lexical}, "
                      "{kind: embedding, model: pypi:all-MiniLM-L6-v2}]\n")
    lexical_steps = [("calibrate", False), ("stage:score", False)]
    # stages and scorers the profile did not measure: refused, each named
    assert main(["bench", str(neural), "--profile", str(_profile(tmp_path, [("stage:score", False)]))]) == 3
    assert "did not measure stage(s) calibrate" in logged()
    assert main(["bench", str(neural), "--profile", str(_profile(tmp_path, lexical_steps, scorers=["lexical:"]))]) == 3
    assert "did not measure scorer(s) embedding:pypi:all-MiniLM-L6-v2" in logged()
    assert main(["bench", str(neural), "--profile", str(_profile(tmp_path, lexical_steps))]) == 3  # no scorers recorded, no model loaded
    assert "scorer(s) embedding:pypi:all-MiniLM-L6-v2" in logged()
    # a profile that measured them projects; the device footnote names the model stages it spreads, or says none
    path = _profile(tmp_path, [("calibrate", False), ("stage:score", True)], scorers=["embedding:pypi:all-MiniLM-L6-v2", "lexical:"])
    assert main(["bench", str(neural), "--profile", str(path), "--devices", "4"]) == 0
    assert "model stages [score] divided by 4" in capsys.readouterr().out
    lexical = tmp_path / "l.yaml"
    lexical.write_text("input: in.jsonl\nstages: [score]\nscore:\n  scorers: [{kind: lexical}]\n")
    assert main(["bench", str(lexical), "--profile", str(_profile(tmp_path, lexical_steps, scorers=["lexical:"])), "--devices", "4"]) == 0
    out = capsys.readouterr().out
    assert "no stage of the profile loads a model" in out and "model stages [" not in out
    # every field a projection reads is checked, and all bad ones are named in one message
    body = json.loads(path.read_text())
    body["steps"][0]["fixed_s"], body["steps"][1]["unit"], body["steps"][1]["per_unit_s"] = "abc", "rows", float("nan")
    path.write_text(json.dumps(body))
    assert main(["bench", str(neural), "--profile", str(path)]) == 3
    err = logged()
    assert "steps[0].fixed_s 'abc'" in err and "steps[1].unit 'rows'" in err and "steps[1].per_unit_s nan" in err
    assert "Traceback" not in err
    # --profile runs nothing: a flag that needs a run is a usage error, not silently ignored
    for flag in (["--compare"], ["--write-profile", str(tmp_path / "q.json")]):
        with pytest.raises(SystemExit) as stop:
            main(["bench", str(lexical), "--profile", str(path), *flag])
        assert stop.value.code == 2 and flag[0] in capsys.readouterr().err
    assert not (tmp_path / "q.json").exists()
