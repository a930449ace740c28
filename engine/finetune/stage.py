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

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from engine.errors import ConfigError
from engine.finetune.params import FinetuneParams
from engine.stages.base import SAMPLES, DriverStage, ReportSection

if TYPE_CHECKING:
    from engine.io.rundir import RunDirectory

FINETUNE_ROWS = "finetune-adapters"


class FinetuneStage(DriverStage[FinetuneParams], ReportSection):
    name = "finetune"
    package = "engine.finetune"
    section = "finetune"
    params_class = "engine.finetune.params:FinetuneParams"
    provides = FINETUNE_ROWS
    consumes = (SAMPLES,)
    # Not `seeded`: the split and training keep their own seeds (default 42) whatever the run
    # seed, so a sweep over the run seed trains the same adapters.

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> FinetuneParams:
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{where}: got {raw!r}; allowed: a mapping with key 'model'")
        return FinetuneParams.from_mapping(raw, where=where)

    def check_config(self) -> None:
        from engine.finetune.memory import check_training_memory
        from engine.finetune.schedule import quantize_refusal, training_device
        from engine.runtime import check_model_name

        params = self.params
        if params.quantize == "4bit":
            refusal = quantize_refusal()
            if refusal:
                raise ConfigError(f"finetune.quantize: 4bit (QLoRA) is not available here: {refusal}; set quantize: none")
        check_model_name(params.model, "finetune.model")
        if params.train:
            check_training_memory(params, training_device(params))

    def run_driver(self, run: "RunDirectory") -> None:
        from engine.finetune.data import write_data
        from engine.finetune.schedule import train_all

        params = self.params
        record = run.manifest.stage_record(self.name, {"options": params.to_dict(), "adapters": {}})
        if not run.stage_done("finetune-data"):
            info = write_data(run.root, run.read_samples(), params)
            record["split"] = {k: info[k] for k in ("signature", "seed", "train_ratio", "align", "counts", "examples")}
            run.manifest.record_stage_section(self.name, record)
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
        adapters = ctx.data.manifest.recorded_by(self.name).get("adapters", {})
        if not rows and not adapters:
            return None
        losses = "".join(f"<tr><td class=lbl>{escape(name)}</td><td>{a['examples']}</td><td>{a['steps']}</td>"
                         f"<td>{a['losses'][0]['loss']:.4f}</td><td>{a['losses'][-1]['loss']:.4f}</td></tr>"
                         for name, a in adapters.items() if a.get("losses"))
        body = ["<h3>Training (loss of the first and last logged step)</h3>",
                '<table class="values"><thead><tr><th>adapter</th><th>examples</th><th>steps</th><th>first loss</th>'
                f"<th>last loss</th></tr></thead><tbody>{losses}</tbody></table>", *adapter_part(rows)]
        return "finetune", "Fine-tuned judges (LoRA per language)", "\n".join(body)
