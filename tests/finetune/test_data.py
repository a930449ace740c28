"""`finetune-data` on the demo data: the aligned, stratified, seeded split and the examples.

Checks: no file on both sides; each language's labels split 7:3 within one
sample; a file's translations (ids differing only in the language prefix) on the same side
in every language; the same seed writes the same files byte for byte (another seed another
split). The training answer is read back by the judge's own parser as the experts' labels.
"""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from engine.errors import ConfigError
from engine.finetune.data import OUTPUT_DIR, align_key, build_examples, write_data
from engine.finetune.params import FinetuneParams
from engine.records import SAMPLE_SCHEMA

DEMO = Path(__file__).resolve().parents[2] / "engine" / "data" / "demo" / "samples.jsonl"


@pytest.fixture(scope="module")
def samples() -> pa.Table:
    rows = [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines()]
    return pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA)


def _params(**changes) -> FinetuneParams:
    return FinetuneParams(model="demo:tiny-chat", **changes)


def test_split_keeps_files_whole_aligned_and_stratified(samples: pa.Table, tmp_path: Path) -> None:
    info = write_data(tmp_path, samples, _params())
    examples = [json.loads(line) for side in ("train", "test")
                for line in (tmp_path / OUTPUT_DIR / f"{side}.jsonl").read_text(encoding="utf-8").splitlines()]
    sides: dict[str, set[str]] = {}
    full, _split, _rows = build_examples(samples, _params())
    for example in full:
        sides.setdefault(example["file_id"], set()).add(example["split"])
    assert all(len(s) == 1 for s in sides.values())  # no file on both sides
    groups: dict[str, set[str]] = {}
    for file_id, (side,) in sides.items():
        groups.setdefault(align_key(file_id, file_id.split("_")[0], "language-prefix"), set()).add(side)
    assert all(len(s) == 1 for s in groups.values()) and len(groups) == 11  # translations on one side, every language
    rows = samples.to_pylist()
    test_ids = set(info["test_sample_ids"])
    for language in {r["language"] for r in rows}:
        for label in ("correct", "partial", "incorrect"):
            ids = [r["sample_id"] for r in rows if r["language"] == language and r["label"] == label]
            on_test = sum(s in test_ids for s in ids)
            assert abs(on_test - 0.3 * len(ids)) <= 1, (language, label, on_test, len(ids))
            assert info["counts"][language][label] == {"train": len(ids) - on_test, "test": on_test}
    assert len(examples) == 55 and info["examples"] == {"train": 40, "test": 15}
    # the test side's rows are an input for an evaluation run: exactly the test ids
    test_rows = [json.loads(line) for line in (tmp_path / OUTPUT_DIR / "test_samples.jsonl").read_text().splitlines()]
    assert sorted(r["sample_id"] for r in test_rows) == sorted(test_ids)


def test_same_seed_same_bytes_other_seed_other_split(samples: pa.Table, tmp_path: Path) -> None:
    first = write_data(tmp_path / "a", samples, _params())
    write_data(tmp_path / "b", samples, _params())
    other = write_data(tmp_path / "c", samples, _params(split_seed=7))
    for name in ("train.jsonl", "test.jsonl", "train.parquet", "test.parquet", "split.json", "test_samples.jsonl"):
        assert (tmp_path / "a" / OUTPUT_DIR / name).read_bytes() == (tmp_path / "b" / OUTPUT_DIR / name).read_bytes(), name
    assert other["test_groups"] != first["test_groups"] and other["signature"] != first["signature"]
    assert "split_seed:7" in other["signature"]


@pytest.mark.parametrize("strategy", ["standard", "cot"])
def test_the_answer_parses_back_as_the_experts_verdicts(samples: pa.Table, strategy: str) -> None:
    from engine.judge.parse import parse_response, verdicts
    from engine.judge.promptpack import load_pack

    examples, _split, rows = build_examples(samples, _params(strategy=strategy))
    experts = {r["sample_id"]: (r["label"], sorted(r["error_codes"] or [])) for r in rows}
    for example in examples[::9]:
        messages = json.loads(example["messages"])
        assert [m["role"] for m in messages][-1] == "assistant" and messages[0]["role"] == "system"
        generators = [s.split("/", 1)[1] for s in example["sample_ids"]]
        result = parse_response(messages[-1]["content"], "stop", None, generators, load_pack(example["prompt_language"]))
        for sample_id, generator in zip(example["sample_ids"], generators):
            verdict = verdicts(result, generators)[generator]
            assert verdict.status == "ok" and verdict.label == experts[sample_id][0]
            assert sorted(verdict.codes) == experts[sample_id][1][:2] or len(experts[sample_id][1]) > 2


def test_4bit_is_refused_at_config_check_without_cuda_or_bitsandbytes(tmp_path: Path) -> None:
    from engine.config import config_from_mapping
    from engine.finetune.schedule import quantize_refusal

    reason = quantize_refusal()
    if reason is None:
        pytest.skip("CUDA and bitsandbytes are both here")
    with pytest.raises(ConfigError, match="4bit .QLoRA. is not available here: it needs") as refused:
        config_from_mapping({"input": str(DEMO), "stages": ["finetune"],
                             "finetune": {"model": "demo:tiny-chat", "quantize": "4bit"}}, tmp_path)
    assert reason in str(refused.value)
