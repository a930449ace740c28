"""LoRA training resumes bit for bit after a real kill -9 of the training process, and learns.

The trainer (`python -m engine.finetune.train SPEC`) runs in a subprocess on the tiny chat
model with short examples. One run goes uninterrupted; another is SIGKILLed after a step that
is not a checkpoint step (the hook kills the process itself, from inside the step loop, as
kill -9 from outside would), then rerun: it resumes from the last checkpoint and must end with
the same adapter bytes and the same per-step losses.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.faults import KILL_TRAINING_AFTER_STEP_ENV as KILL_AFTER_STEP_ENV
from engine.finetune.train import ADAPTER_DIR, CHECKPOINT, LOG_FILE, load_base, train_adapter
from engine.judge.adapter import adapter_hash
from engine.testing.tiny_chat import build_tiny_chat_model

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
OPTIONS = {"seed": 7, "lora_r": 8, "lora_alpha": 16, "lora_dropout": 0.1, "target_modules": ["q_proj", "v_proj", "down_proj"],
           "learning_rate": 0.02, "weight_decay": 0.0, "epochs": 3, "max_steps": 0, "batch_size": 2, "max_seq_len": 128,
           "dtype": "float32", "quantize": "none", "checkpoint_every": 3, "log_every": 1}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> str:
    return build_tiny_chat_model(tmp_path_factory.mktemp("tiny_chat"), window=256)


def _examples() -> list[list[dict[str, str]]]:
    labels = ["correct", "partial", "incorrect"]
    return [[{"role": "system", "content": "Judge the comment."},
             {"role": "user", "content": f"Comment {i}: returns the size of list {i}."},
             {"role": "assistant", "content": json.dumps({"overall_quality": labels[i % 3]})}] for i in range(6)]


def _train(model_dir: str, out: Path, kill_after: int | None = None, options: dict | None = None) -> subprocess.CompletedProcess:
    spec = out.parent / f"{out.name}.json"
    spec.write_text(json.dumps({"model": model_dir, "options": options or OPTIONS, "examples": _examples(), "out_dir": str(out)}))
    env = {**os.environ, "PYTHONPATH": str(REPO), "BABELSCORE_NO_PROGRESS": "1"}
    env.pop(KILL_AFTER_STEP_ENV, None)
    if kill_after is not None:
        env[KILL_AFTER_STEP_ENV] = str(kill_after)
    return subprocess.run([sys.executable, "-m", "engine.finetune.train", str(spec)], env=env, capture_output=True,
                          text=True, timeout=300)


def test_kill_9_then_resume_ends_with_the_same_adapter_bytes(model_dir: str, tmp_path: Path) -> None:
    whole = _train(model_dir, tmp_path / "whole")
    assert whole.returncode == 0, whole.stderr[-2000:]
    killed = _train(model_dir, tmp_path / "killed", kill_after=5)  # 9 steps in all; checkpoints at 3 and 6
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert (tmp_path / "killed" / CHECKPOINT).is_file() and not (tmp_path / "killed" / ADAPTER_DIR).exists()
    resumed = _train(model_dir, tmp_path / "killed")
    assert resumed.returncode == 0, resumed.stderr[-2000:]

    log_whole = json.loads((tmp_path / "whole" / LOG_FILE).read_text())
    log_resumed = json.loads((tmp_path / "killed" / LOG_FILE).read_text())
    assert log_whole["steps"] == 9 and log_whole["resumed_from"] is None and log_resumed["resumed_from"] == 3
    assert log_resumed["losses"] == log_whole["losses"]  # steps 4 and 5 redone exactly
    weights = "adapter_model.safetensors"
    assert (tmp_path / "killed" / ADAPTER_DIR / weights).read_bytes() == (tmp_path / "whole" / ADAPTER_DIR / weights).read_bytes()
    assert adapter_hash(tmp_path / "killed" / ADAPTER_DIR) == adapter_hash(tmp_path / "whole" / ADAPTER_DIR)
    # the loss falls over the steps (9 steps at a high rate on six short answers)
    losses = [entry["loss"] for entry in log_whole["losses"]]
    assert losses[-1] < losses[0] and sum(losses[-3:]) < sum(losses[:3]), losses
    assert not (tmp_path / "killed" / CHECKPOINT).exists()  # the final adapter replaces the checkpoint


def test_another_seed_gives_another_adapter(model_dir: str, tmp_path: Path) -> None:
    """The bitwise equality above is not a constant: the seed reaches the weights (in this process)."""
    hashes = []
    for seed in (8, 9):
        options = {**OPTIONS, "seed": seed, "epochs": 1}
        base, tokenizer = load_base(model_dir, model_dir, options, "cpu")
        train_adapter(base, tokenizer, _examples(), options, tmp_path / str(seed))
        hashes.append(adapter_hash(tmp_path / str(seed) / ADAPTER_DIR))
    assert hashes[0] != hashes[1]


def test_the_memory_plan_counts_the_lora_parameters_peft_makes(model_dir: str) -> None:
    from peft import LoraConfig, get_peft_model

    from engine.finetune.memory import lora_parameters, training_bytes
    from engine.finetune.params import FinetuneParams

    params = FinetuneParams(model=model_dir, lora_r=8, max_seq_len=128, dtype="float32")
    base, _tokenizer = load_base(model_dir, model_dir, params.trainer_options(), "cpu")
    weights = sum(p.numel() for p in base.parameters())
    model = get_peft_model(base, LoraConfig(r=8, target_modules=list(params.target_modules), task_type="CAUSAL_LM"))
    made = sum(p.numel() for p in model.parameters() if p.requires_grad)
    config = json.loads((Path(model_dir) / "config.json").read_text())
    assert lora_parameters(config, params) == made > 0
    plan = training_bytes(params, "cpu")
    assert plan["base"] == 4 * weights and plan["lora_state"] == 16 * made
    longer = training_bytes(FinetuneParams(model=model_dir, lora_r=8, max_seq_len=256, dtype="float32"), "cpu")
    assert longer["activations"] > 2 * plan["activations"]  # the attention term grows with the square
