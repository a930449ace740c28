"""Stage `finetune`: a judge fine-tuned per language on the experts' verdicts (engine/finetune/).

A driver stage, once after every part: (1) `finetune-data` writes the training examples and
their aligned, stratified split (RUN/finetune/data/); (2) one LoRA adapter per training
language, and one on all of them, is trained by the registry's trainer model (one model per
device, released after), each resumable from its checkpoints (RUN/finetune/adapters/<name>/);
(3) the test side is judged by the base model and every adapter, and the adapter x language
table (kappa, Pearson, Spearman, Williams' test against the base) goes into the report's
judge section and the console. Each step is marked in the manifest, so `--resume` after a
kill continues where it stopped; per-step losses and hyper-parameters are in the manifest
under `finetune`.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Mapping

from engine.errors import ConfigError
from engine.finetune.config import ALL, FinetuneParams
from engine.stages.base import SAMPLES, Stage

logger = logging.getLogger(__name__)

FINETUNE_ROWS = "finetune-adapters"


class FinetuneStage(Stage):
    name = "finetune"
    kind = "driver"
    package = "engine.finetune"
    section = "finetune"
    params_class = "engine.finetune.config:FinetuneParams"
    provides = FINETUNE_ROWS
    consumes = (SAMPLES,)
    # Not `seeded`: the split and training keep their own seeds (default 42) whatever the run
    # seed, so a sweep over the run seed trains the same adapters.

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> FinetuneParams:
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{where}: got {raw!r}; allowed: a mapping with key 'model'")
        return FinetuneParams.from_mapping(raw, where=where)

    def check_config(self, config: Any) -> None:
        from engine.finetune.memory import check_training_memory
        from engine.runtime import check_model_name

        params: FinetuneParams = config.section(self.name)
        if params.quantize == "4bit":
            refusal = quantize_refusal()
            if refusal:
                raise ConfigError(f"finetune.quantize: 4bit (QLoRA) is not available here: {refusal}; set quantize: none")
        check_model_name(params.model, "finetune.model")
        if params.train:
            check_training_memory(params, training_device(params))

    def run_driver(self, run: Any, config: Any) -> None:
        from engine.finetune.data import write_data

        params: FinetuneParams = config.section(self.name)
        record = run.manifest.setdefault("finetune", {"options": params.to_dict(), "adapters": {}})
        if not run.stage_done("finetune-data"):
            info = write_data(run.root, run.read_samples(), params)
            record["split"] = {k: info[k] for k in ("signature", "seed", "train_ratio", "align", "counts", "examples")}
            run.mark_stage("finetune-data", signature=info["signature"])
        adapters = train_all(run, params) if params.train else {}
        if params.train and params.evaluate:
            from engine.finetune.evaluate import evaluate
            from engine.judge.adapter_table import summary_lines
            from engine.progress import write_line

            table = evaluate(run.root, params, adapters)
            write_line("finetune: adapters against the base model on the test side (kappa with the experts, "
                       "Williams' p vs the base)")
            for line in summary_lines(table):
                write_line("  " + line)
        run.mark_stage(self.name, adapters=sorted(adapters))

    def report_section(self, ctx: Any) -> tuple[str, str, str] | None:
        """The adapter x language table, drawn as the judge section draws it (engine.judge.report), with the losses."""
        from html import escape

        from engine.finetune.evaluate import read_table
        from engine.judge.report import adapter_part

        rows = read_table(ctx.data.root)
        adapters = ctx.data.manifest.get("finetune", {}).get("adapters", {})
        if not rows and not adapters:
            return None
        losses = "".join(f"<tr><td class=lbl>{escape(name)}</td><td>{a['examples']}</td><td>{a['steps']}</td>"
                         f"<td>{a['losses'][0]['loss']:.4f}</td><td>{a['losses'][-1]['loss']:.4f}</td></tr>"
                         for name, a in adapters.items() if a.get("losses"))
        body = ["<h3>Training (loss of the first and last logged step)</h3>",
                '<table class="values"><thead><tr><th>adapter</th><th>examples</th><th>steps</th><th>first loss</th>'
                f"<th>last loss</th></tr></thead><tbody>{losses}</tbody></table>", *adapter_part(rows)]
        return "finetune", "Fine-tuned judges (LoRA per language)", "\n".join(body)


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
    from engine.runtime.registry import normalize_device

    if params.device == "auto":
        return "cuda:0" if cuda_available() else "cpu"
    return normalize_device(params.device)


def train_all(run: Any, params: FinetuneParams) -> dict[str, str]:
    """Train every adapter not yet trained; name -> adapter folder. The trainer is one model of the
    registry, released when the last adapter is done."""
    import json

    from engine.finetune.data import read_examples
    from engine.finetune.memory import training_bytes
    from engine.finetune.train import ADAPTER_DIR, LOG_FILE
    from engine.judge.adapter import adapter_hash
    from engine.runtime import resolve_model
    from engine.runtime.model_process import ProcessModel
    from engine.runtime.registry import acquire, model_registry
    from engine.signature import format_signature

    record = run.manifest["finetune"]
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
            run.save()
            logger.info("finetune %s: loss %.4f -> %.4f over %d steps", language, log["losses"][0]["loss"],
                        log["losses"][-1]["loss"], log["steps"])
    finally:
        model_registry().release(key)
    return adapters
