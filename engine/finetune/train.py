"""The LoRA training loop: a plain torch loop over peft's LoRA layers, resumable bit for bit.

Everything random is seeded from `seed`: the LoRA initialisation (torch's generator, seeded just
before the adapters are made), the data order (a permutation per epoch from (seed, epoch)) and
dropout (torch's global generator). A checkpoint holds the adapter, the optimizer's state, the
step, the losses and every RNG state, written atomically, so a run killed with SIGKILL and resumed
ends, on CPU, with the same adapter bytes (docs/finetune.md, "Seeds and resuming").

Only the answer's tokens are learned (the prompt's labels are -100); an example whose answer does
not fit max_seq_len is left out (`fitting`). trl's SFTTrainer would add nothing here but another
layer of state to restore. `python -m engine.finetune.train SPEC.json` trains one adapter (what
the kill -9 test kills); `LoraTrainer` is the registry's model for the stage.
"""
from __future__ import annotations

import json
import logging
import math
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from engine import faults
from engine.errors import ConfigError

logger = logging.getLogger(__name__)

CHECKPOINT = "checkpoint.pt"
ADAPTER_DIR = "adapter"
LOG_FILE = "train_log.json"
# Test hook (the kill -9 resume test only): the trainer SIGKILLs itself after this many steps.
_LOSS_SCALE_KEYS = ("seed", "lora_r", "lora_alpha", "lora_dropout", "target_modules", "learning_rate", "weight_decay",
                    "epochs", "max_steps", "batch_size", "max_seq_len", "dtype", "quantize")


def _set_seed(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _rng_states() -> dict[str, Any]:
    import numpy as np
    import torch

    states = {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "random": random.getstate()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def _restore_rng(states: dict[str, Any]) -> None:
    import numpy as np
    import torch

    torch.set_rng_state(states["torch"])
    np.random.set_state(states["numpy"])
    random.setstate(states["random"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


def encode(tokenizer: Any, messages: list[dict[str, str]], max_seq_len: int) -> tuple[list[int], list[int], bool]:
    """(input ids, labels, cut) of one example: the chat-templated prompt, then the answer and EOS."""
    *prompt, answer = messages
    ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True)
    ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    target = tokenizer(answer["content"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    full, labels = ids + target, [-100] * len(ids) + target
    return full[:max_seq_len], labels[:max_seq_len], len(full) > max_seq_len


def fitting(encoded: list[tuple[list[int], list[int], bool]], max_seq_len: int,
            label: str = "finetune") -> list[tuple[list[int], list[int], bool]]:
    """The examples whose whole answer fits max_seq_len; the others are left out.

    A cut example loses its answer's end (or all of it: the prompts are long), so it would
    teach an answer that never closes, and a batch of answerless examples has no token to
    learn from: its loss is NaN and one optimizer step makes every LoRA weight NaN."""
    kept = [e for e in encoded if not e[2]]
    if not kept:
        raise ConfigError(f"finetune.max_seq_len: none of the {len(encoded)} training examples of {label} fits "
                          f"{max_seq_len} tokens (prompt and answer); raise max_seq_len (the demo's prompts are "
                          "5,000-6,300 tokens)")
    if len(kept) < len(encoded):
        logger.warning("%s: %d of %d training examples are longer than max_seq_len %d and are left out",
                       label, len(encoded) - len(kept), len(encoded), max_seq_len)
    return kept


def _batches(n: int, batch_size: int, seed: int, epoch: int) -> list[list[int]]:
    import torch

    generator = torch.Generator().manual_seed(seed * 1000 + epoch)
    order = torch.randperm(n, generator=generator).tolist()
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


def _collate(encoded: list[tuple[list[int], list[int], bool]], pad_id: int, device: Any) -> dict[str, Any]:
    import torch

    width = max(len(ids) for ids, _, _ in encoded)
    ids = [e[0] + [pad_id] * (width - len(e[0])) for e in encoded]
    labels = [e[1] + [-100] * (width - len(e[1])) for e in encoded]
    mask = [[1] * len(e[0]) + [0] * (width - len(e[0])) for e in encoded]
    return {"input_ids": torch.tensor(ids, device=device), "labels": torch.tensor(labels, device=device),
            "attention_mask": torch.tensor(mask, device=device)}


def torch_dtype_of(dtype: str, device: str) -> Any:
    import torch

    if dtype == "auto":
        dtype = "bfloat16" if device.startswith("cuda") else "float32"
    return {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]


def load_base(model_path: str, tokenizer_path: str, options: dict[str, Any], device: str) -> tuple[Any, Any]:
    """The base model (frozen) and tokenizer on `device`; 4-bit weights with bitsandbytes for QLoRA."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype = torch_dtype_of(options["dtype"], device)
    kwargs: dict[str, Any] = {"dtype": dtype}
    if options.get("quantize") == "4bit":
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                           bnb_4bit_compute_dtype=dtype)
        kwargs["device_map"] = {"": device}
    model = AutoModelForCausalLM.from_pretrained(model_path, **kwargs)
    if options.get("quantize") != "4bit":
        model = model.to(device)
    else:
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(model)
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    return model, tokenizer


def train_adapter(base: Any, tokenizer: Any, examples: list[list[dict[str, str]]], options: dict[str, Any],
                  out_dir: str | Path, *, device: str = "cpu", resume: bool = True, label: str = "finetune") -> dict[str, Any]:
    """Train one LoRA adapter on `examples` (chat messages, the last one the answer) into out_dir/adapter.

    Returns the training log (hyper-parameters, steps, per-step losses, resumed_from)."""
    import torch

    # Deterministic kernels while training only: the setting is process-wide, and a caller
    # (a worker that also scores, a test process) keeps its own afterwards.
    enabled, warn_only = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        return _train_adapter(base, tokenizer, examples, options, out_dir, device=device, resume=resume, label=label)
    finally:
        torch.use_deterministic_algorithms(enabled, warn_only=warn_only)


def _train_adapter(base: Any, tokenizer: Any, examples: list[list[dict[str, str]]], options: dict[str, Any],
                   out_dir: str | Path, *, device: str, resume: bool, label: str) -> dict[str, Any]:
    import torch
    from peft import LoraConfig, get_peft_model, get_peft_model_state_dict, set_peft_model_state_dict

    from engine.progress import progress_bar

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seed = int(options["seed"])
    _set_seed(seed)  # the LoRA initialisation draws from here
    config = LoraConfig(r=options["lora_r"], lora_alpha=options["lora_alpha"], lora_dropout=options["lora_dropout"],
                        target_modules=list(options["target_modules"]), bias="none", task_type="CAUSAL_LM")
    model = get_peft_model(base, config)
    encoded = fitting([encode(tokenizer, m, options["max_seq_len"]) for m in examples], options["max_seq_len"], label)
    per_epoch = math.ceil(len(encoded) / options["batch_size"])
    total = options["max_steps"] or per_epoch * options["epochs"]
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=options["learning_rate"], weight_decay=options["weight_decay"])
    step, losses, resumed_from = 0, [], None
    checkpoint = out / CHECKPOINT
    if resume and checkpoint.is_file():
        state = torch.load(checkpoint, map_location=device, weights_only=False)
        set_peft_model_state_dict(model, state["adapter"])
        optimizer.load_state_dict(state["optimizer"])
        step, losses, resumed_from = state["step"], state["losses"], state["step"]
        _restore_rng(state["rng"])
        logger.info("%s: resuming from the checkpoint at step %d of %d", label, step, total)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    model.train()
    started = time.perf_counter()
    with progress_bar(f"{label} (steps)", total - step, total - step) as bar:
        while step < total:
            epoch, within = divmod(step, per_epoch)
            batch = _collate([encoded[i] for i in _batches(len(encoded), options["batch_size"], seed, epoch)[within]],
                             pad, device)
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            if step % options["log_every"] == 0 or step == total:
                losses.append({"step": step, "loss": float(loss.detach())})
            bar.update(1)
            if step % options["checkpoint_every"] == 0 and step < total:
                _save_checkpoint(checkpoint, {"adapter": get_peft_model_state_dict(model), "optimizer": optimizer.state_dict(),
                                              "step": step, "losses": losses, "rng": _rng_states()})
            faults.after_training_step(step)
    model.save_pretrained(str(out / ADAPTER_DIR))
    log = {"steps": total, "examples": len(encoded), "cut_examples": len(examples) - len(encoded),
           "tokens": sum(len(ids) for ids, _, _ in encoded), "losses": losses, "resumed_from": resumed_from,
           "train_s": round(time.perf_counter() - started, 3),
           "options": {k: options[k] for k in _LOSS_SCALE_KEYS if k in options}}
    (out / LOG_FILE).write_text(json.dumps(log, indent=1), encoding="utf-8")
    checkpoint.unlink(missing_ok=True)  # the adapter is final: a rerun starts nothing over
    model.unload()  # the base model without the adapter's layers, for the next adapter
    return log


def _save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    import torch

    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as fh:
        torch.save(state, fh)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)  # a kill leaves the last whole checkpoint or the new one


class LoraTrainer:
    """The registry's model of the finetune stage: the base model, loaded once, adapters trained in turn."""

    def __init__(self, *, model: str, tokenizer: str, options: dict[str, Any], device_name: str = "cpu"):
        # the worker sees its one device as cuda:0 (CUDA_VISIBLE_DEVICES), or the host
        self.device = "cpu" if device_name == "cpu" else "cuda:0"
        self.options = options
        self.base, self.tokenizer = load_base(model, tokenizer, options, self.device)

    def train(self, examples: list[list[dict[str, str]]], out_dir: str, label: str = "finetune") -> dict[str, Any]:
        return train_adapter(self.base, self.tokenizer, examples, self.options, out_dir, device=self.device, label=label)

    def close(self) -> None:
        del self.base


def main(argv: list[str] | None = None) -> int:
    """`python -m engine.finetune.train SPEC.json`: one adapter from a spec file
    ({model, tokenizer, options, examples, out_dir, device}); resumes from out_dir's checkpoint."""
    args = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    spec = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    device = spec.get("device", "cpu")
    base, tokenizer = load_base(spec["model"], spec.get("tokenizer") or spec["model"], spec["options"], device)
    train_adapter(base, tokenizer, spec["examples"], spec["options"], spec["out_dir"], device=device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
