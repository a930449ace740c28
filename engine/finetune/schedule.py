"""The finetune stage's work in the driver: where training runs, and the adapters trained in
turn by one trainer model of the registry (engine/finetune/train.py in a worker process)."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from engine.errors import ConfigError
from engine.finetune.params import ALL, FinetuneParams

if TYPE_CHECKING:
    from engine.io.rundir import RunDirectory

logger = logging.getLogger(__name__)


def quantize_refusal() -> str | None:
    """Why 4-bit training cannot run here, or None."""
    import importlib.util

    from engine.runtime.cuda import cuda_available

    if not cuda_available():
        return "it needs CUDA, and no CUDA device is visible"
    if importlib.util.find_spec("bitsandbytes") is None:
        return "it needs the bitsandbytes package (pip install bitsandbytes)"
    return None


def training_device(params: FinetuneParams) -> str:
    from engine.runtime.cuda import cuda_available
    from engine.runtime.model_registry import normalize_device

    if params.device == "auto":
        return "cuda:0" if cuda_available() else "cpu"
    return normalize_device(params.device)


def train_all(run: "RunDirectory", params: FinetuneParams) -> dict[str, str]:
    """Train every adapter not yet trained; name -> adapter folder. The trainer is one model of the
    registry, released when the last adapter is done."""
    import json

    from engine.finetune.data import read_examples
    from engine.finetune.memory import training_bytes
    from engine.finetune.train import ADAPTER_DIR, LOG_FILE
    from engine.judge.adapter import adapter_hash
    from engine.runtime import resolve_model
    from engine.runtime.model_process import ProcessModel
    from engine.runtime.model_registry import acquire, model_registry
    from engine.signature import format_signature

    record = run.manifest.stage_record("finetune", {})
    train = read_examples(run.root, "train")
    device = training_device(params)
    key = ("finetune", params.model, params.digest(), device)
    adapters: dict[str, str] = {}
    try:
        for language in params.train_languages:
            out = run.path(f"finetune/adapters/{language}")
            adapters[language] = str(out / ADAPTER_DIR)
            if language in record["adapters"] and (out / LOG_FILE).is_file():
                continue  # trained before a resume
            examples = [json.loads(e["messages"]) for e in train if language == ALL or e["language"] == language]
            if not examples:
                raise ConfigError(f"finetune.train_languages: {language!r} has no training example in this run's input; "
                                  "remove it or give input in that language")
            trainer = acquire(key, lambda: ProcessModel(
                "engine.finetune.train:LoraTrainer", label=f"finetune {params.model}", device=device,
                model=resolve_model(params.model).path, tokenizer=resolve_model(params.tokenizer or params.model).path,
                options=params.trainer_options(), device_name=device),
                model=params.model, stage="finetune", device=device,
                estimate_bytes=lambda: (training_bytes(params, device) or {}).get("total"))
            log = trainer.train(examples, str(out), f"finetune {language}")
            signature = format_signature({"stage": "finetune", "split": record["split"]["signature"], "language": language,
                                          **params.training_options(), "adapter": adapter_hash(out / ADAPTER_DIR)})
            record["adapters"][language] = {**log, "signature": signature, "path": str(out / ADAPTER_DIR)}
            run.manifest.record_stage_section("finetune", record)
            run.save()
            logger.info("finetune %s: loss %.4f -> %.4f over %d steps", language, log["losses"][0]["loss"],
                        log["losses"][-1]["loss"], log["steps"])
    finally:
        model_registry().release(key)
    return adapters
