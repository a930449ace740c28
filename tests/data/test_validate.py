"""Bad input rows are quarantined with a reason; every valid row is still scored."""
from __future__ import annotations

import json
import subprocess

import pyarrow.parquet as pq
import pytest

from engine.config import config_from_mapping
from engine.errors import InputError
from engine.runner import execute_run
from tests.support.paths import PYTHON, REPO
from tests.support.samples import make_sample, write_jsonl

BAD_ROWS = {
    # sample_id -> (row, expected reason prefix)
    "missing-source": (make_sample("missing-source", source=None), "missing required field 'source'"),
    "missing-reference": ({k: v for k, v in make_sample("missing-reference").items() if k != "reference"}, "missing required field 'reference'"),
    "offsets-out": (make_sample("offsets-out", comment_end=10_000), "offsets out of range"),
    "offsets-negative": (make_sample("offsets-negative", comment_start=-1), "offsets out of range"),
    "offsets-empty": (make_sample("offsets-empty", comment_end=make_sample("x")["comment_start"]), "offsets out of range"),
    "offset-not-int": (make_sample("offset-not-int", comment_start="17"), "field 'comment_start' must be an integer"),
    "ref-mismatch": (make_sample("ref-mismatch", reference="// Returns the name of the admin."), "reference does not equal source[comment_start:comment_end]"),
    "bad-label": (make_sample("bad-label", label="mostly right"), "unknown label 'mostly right'"),
    "nonstring-text": (make_sample("nonstring-text", prediction=42), "field 'prediction' must be a string or null"),
    "nonstring-source": (make_sample("nonstring-source", source=["class A {}"]), "field 'source' must be a string"),
    "empty-source": (make_sample("empty-source", source="", comment_start=0, comment_end=0, reference=""), "empty source"),
    "bad-prime": (make_sample("bad-prime", prime="/* Returns"), "reference does not start with prime"),
    "surrogate": (make_sample("surrogate", prediction="bad \ud800 text"), "field 'prediction' is not valid UTF-8"),
    "no-prediction": (make_sample("no-prediction", prediction=None), "missing prediction"),
}


def _write_fixture(path):
    rows = [make_sample("good-1"), make_sample("good-2", language="nl", prediction="geeft de naam terug.")]
    for row, _ in BAD_ROWS.values():
        rows.append(row)
    rows.append(make_sample("good-1", prediction="duplicate of good-1"))  # duplicate sample_id
    rows.append(make_sample("good-3", label=None, error_codes="SE-MD, MS-LT"))
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=True) + "\n")  # ascii keeps the lone surrogate escaped
        handle.write('{"sample_id": "truncated json", \n')
        handle.write(b'{"sample_id": "latin1-\xe9"}\n'.decode("latin-1"))  # placeholder line, replaced below
    # A line with invalid UTF-8 bytes (written raw).
    data = path.read_bytes().replace('"latin1-\u00e9"'.encode("utf-8"), b'"latin1-\xe9"')
    path.write_bytes(data)
    return path


def _lexical_config(input_path, **extra):
    raw = {"name": "t", "input": str(input_path), "part_size": 2, "stages": ["score"], "score": {"scorers": [{"kind": "lexical"}]}}
    raw.update(extra)
    return config_from_mapping(raw, input_path.parent)


def test_every_bad_row_is_rejected_with_its_reason_and_the_rest_scored(tmp_path):
    input_path = _write_fixture(tmp_path / "input.jsonl")
    summary = execute_run(_lexical_config(input_path), str(tmp_path / "run"))
    rejected = pq.read_table(tmp_path / "run" / "rejected.parquet").to_pylist()
    reasons = {r["sample_id"]: r["reason"] for r in rejected if r["sample_id"]}
    for sample_id, (_, expected) in BAD_ROWS.items():
        assert sample_id in reasons, f"{sample_id} was not rejected"
        assert reasons[sample_id].startswith(expected), (sample_id, reasons[sample_id])
    duplicate = [r for r in rejected if r["sample_id"] == "good-1"]
    assert len(duplicate) == 1 and duplicate[0]["reason"].startswith("duplicate sample_id (first seen at row 0)")
    undecodable = [r for r in rejected if r["sample_id"] is None]
    assert sorted(r["reason"].split(":")[0].split(" at ")[0] for r in undecodable) == ["invalid JSON", "invalid UTF-8"]
    assert len(rejected) == len(BAD_ROWS) + 3
    # every valid row scored, nothing else
    scores = pq.read_table(tmp_path / "run" / "scores").to_pylist()
    assert {r["sample_id"] for r in scores} == {"good-1", "good-2", "good-3"}
    good1 = [r for r in scores if r["sample_id"] == "good-1" and r["metric"] == "bleu"]
    assert len(good1) == 1  # the duplicate did not replace or add to the first occurrence
    counts = summary.counts
    assert counts["valid_rows"] == 3 and counts["rejected_rows"] == len(BAD_ROWS) + 3
    assert counts["input_rows"] == counts["valid_rows"] + counts["rejected_rows"]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert sum(manifest["counts"]["rejected_by_reason"].values()) == len(BAD_ROWS) + 3
    samples = pq.read_table(tmp_path / "run" / "samples").to_pylist()
    assert [s["error_codes"] for s in samples if s["sample_id"] == "good-3"] == [["SE-MD", "MS-LT"]]


def test_all_rows_invalid_fails_with_a_clear_message(tmp_path):
    input_path = write_jsonl(tmp_path / "bad.jsonl", [row for row, _ in list(BAD_ROWS.values())[:4]])
    with pytest.raises(InputError, match="no valid row in the input"):
        execute_run(_lexical_config(input_path), str(tmp_path / "run"))
    config_path = tmp_path / "c.yaml"
    config_path.write_text(f"input: {input_path}\nstages: [score]\nscore:\n  scorers:\n    - kind: lexical\n")
    proc = subprocess.run(
        [PYTHON, "-m", "engine.cli", "run", str(config_path), "--out", str(tmp_path / "run2")],
        capture_output=True, text=True, cwd=REPO,
    )
    assert proc.returncode != 0
    assert "no valid row in the input" in proc.stderr and "Traceback" not in proc.stderr


def test_validate_command_lists_bad_rows_without_running(tmp_path):
    input_path = _write_fixture(tmp_path / "input.jsonl")
    proc = subprocess.run([PYTHON, "-m", "engine.cli", "validate", str(input_path), "--show", "100"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 1, proc.stderr  # some rows bad, some good
    assert f"{len(BAD_ROWS) + 6} rows, 3 valid, {len(BAD_ROWS) + 3} rejected" in proc.stdout
    assert "offsets out of range" in proc.stdout and "duplicate sample_id" in proc.stdout
    assert not (tmp_path / "run").exists()


def test_parquet_input_is_read_like_jsonl(tmp_path):
    import pyarrow as pa

    rows = [make_sample("p-1"), make_sample("p-2", label="wrong label")]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "in.parquet")
    summary = execute_run(_lexical_config(tmp_path / "in.parquet"), str(tmp_path / "run"))
    assert summary.counts["valid_rows"] == 1 and summary.counts["rejected_rows"] == 1
