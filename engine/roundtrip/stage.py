"""Stage `roundtrip`: does a comment carry enough meaning to rebuild the code?

Its input is a task table (functions with tests: the built-in HumanEval set or the user's),
not the sample table, so it cuts its own parts: `own_parts` writes
RUN/roundtrip_tasks/part-NNNNN.parquet once (each part file atomically, then an index that
marks the set complete) and returns the rows of each part; on resume the index is reused, so
part i always holds the same tasks. `run_part` reads part i and runs the round trip
(engine.roundtrip.run) over its tasks; the output rows (ROUNDTRIP_SCHEMA, RUN/roundtrip/) are
one per (task, natural language, generator, sample). Sandbox verdicts and generation failures
are row results; only an infrastructure failure (a model that does not load) fails the part.

One task per configured section (`roundtrip-<hash of the resolved options>`): a comment is
shared by every generator of the section, and abstraction compares all U x V regenerations of
one (task, language), so the whole section runs within each part.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from engine.errors import ConfigError, InputError
from engine.params import option_digest
from engine.records import ROUNDTRIP_SCHEMA
from engine.stages.base import MODEL_PATH_OPTIONS, ROUNDTRIP_ROWS, OwnTable, PartContext, PartStage, Rates, ReportSection, StageTask

log = logging.getLogger(__name__)

TASKS_DIR = "roundtrip_tasks"
INDEX_FILE = "index.json"


def task_part_path(run_root: str | Path, index: int) -> Path:
    return Path(run_root) / TASKS_DIR / f"part-{index:05d}.parquet"


class RoundTripStage(PartStage, Rates, OwnTable, ReportSection):
    name = "roundtrip"
    package = "engine.roundtrip"
    section = "roundtrip"
    params_class = "engine.roundtrip.params:RoundTripParams"
    provides = ROUNDTRIP_ROWS
    consumes = ()  # its own task table (own_parts), not the samples
    seeded = True
    path_options = (*MODEL_PATH_OPTIONS, "fluency_model", "tasks", "prompts_dir")
    directory = "roundtrip"
    schema = ROUNDTRIP_SCHEMA
    input_columns = ()
    rates = (("runs", "runs/s"),)
    output_rows_counter = "runs"  # one output row per sandboxed run

    # ----- configuration ------------------------------------------------------------------
    def parse_section(self, raw: Any, base_dir: Path, where: str) -> Any:
        from engine.roundtrip.params import RoundTripParams

        # Relative `tasks`, `prompts_dir` and model paths (./, ../) are already resolved
        # against the config's folder by the config loader (`path_options`).
        return RoundTripParams.from_mapping(dict(raw or {}), where=where)

    def with_run_seed(self, options: dict[str, Any], seed: int) -> dict[str, Any]:
        """The section's seed (inputs, requests) and each model entry's seed default to the run's."""
        options.setdefault("seed", seed)
        for key in ("generators", "comment_generator"):
            value = options.get(key)
            if isinstance(value, list):
                options[key] = [dict(g, seed=g.get("seed", seed)) if isinstance(g, dict) else g for g in value]
            elif isinstance(value, dict):
                options[key] = dict(value, seed=value.get("seed", seed))
        return options

    def check_config(self, config: Any) -> None:
        from engine.roundtrip.params import ORACLE
        from engine.roundtrip.sandbox import unavailable
        from engine.roundtrip.tasks import load_tasks
        from engine.runtime import check_model_name as check_model

        params = config.section(self.section)
        why = unavailable(params.sandbox)
        if why:  # no silent weaker fallback: generated code runs isolated or by explicit choice
            raise ConfigError(f"roundtrip.sandbox.isolation: {why}")
        if params.sandbox.isolation == "hook":
            log.warning("roundtrip: sandbox.isolation: hook runs generated code WITHOUT isolation "
                        "(not a security boundary); its rows say isolation=hook-not-a-boundary")
        for i, g in enumerate(params.generators):
            if g.backend != ORACLE:
                check_model(g.model, f"roundtrip.generators[{i}].model")
        if params.comment_generator is not None and params.comment_generator.backend != ORACLE:
            check_model(params.comment_generator.model, "roundtrip.comment_generator.model")
        if params.fluency_model:
            check_model(params.fluency_model, "roundtrip.fluency_model")
        try:
            load_tasks(params.tasks, programming_languages=params.programming_languages)
        except InputError as exc:
            raise ConfigError(f"roundtrip.tasks: {exc}") from exc

    def model_needs(self, config: Any) -> list[Any]:
        from engine.roundtrip.params import ORACLE
        from engine.runtime.memory import ModelNeed

        params = config.section(self.section)
        entries = [(f"roundtrip.generators[{i}]", g) for i, g in enumerate(params.generators)]
        if params.comment_generator is not None:
            entries.append(("roundtrip.comment_generator", params.comment_generator))
        needs = [ModelNeed(g.model, self.name, where, g.backend, g.dtype, "auto", g.max_model_len)
                 for where, g in entries if g.backend != ORACLE]
        if params.fluency_model:
            needs.append(ModelNeed(params.fluency_model, self.name, "roundtrip.fluency_model", dtype="float32", device="cpu"))
        return needs

    # ----- identity and planning ----------------------------------------------------------
    def tasks(self, config: Any) -> list[StageTask]:
        params = config.section(self.section)
        digest = option_digest(params.to_dict())
        from engine.roundtrip.params import ORACLE

        models = [g.model for g in (*params.generators, params.comment_generator) if g is not None and g.backend != ORACLE]
        if params.fluency_model:
            models.append(params.fluency_model)
        # Without a model the parts are CPU work (sandbox runs): no model actor, no model key.
        model_key = f"roundtrip:{','.join(models)}" if models else ""
        return [StageTask(self.name, f"roundtrip-{digest}", model_key, 0)]

    def own_table_rows(self, config: Any) -> int | None:
        from engine.roundtrip.tasks import load_tasks

        params = config.section(self.section)
        n = load_tasks(params.tasks, programming_languages=params.programming_languages).num_rows
        return min(n, params.limit) if params.limit else n

    def limit_own_table(self, options: dict[str, Any], limit: int, per_part: int) -> dict[str, Any]:
        return {**options, "limit": limit, "tasks_per_part": per_part}

    def own_parts(self, config: Any, run_root: str | Path) -> list[int]:
        """Cut the task table into parts once per run directory; rows of each part, by index."""
        from engine.io.atomic import write_json_atomic, write_parquet_atomic
        from engine.roundtrip.tasks import TASK_SCHEMA, load_tasks

        index_path = Path(run_root) / TASKS_DIR / INDEX_FILE
        if index_path.exists():
            return list(json.loads(index_path.read_text(encoding="utf-8"))["rows_per_part"])
        params = config.section(self.section)
        table = load_tasks(params.tasks, programming_languages=params.programming_languages)
        if params.limit:
            table = table.slice(0, params.limit)
        size = params.tasks_per_part
        rows = []
        for index, start in enumerate(range(0, table.num_rows, size)):
            part = table.slice(start, size)
            write_parquet_atomic(task_part_path(run_root, index), part, TASK_SCHEMA)
            rows.append(part.num_rows)
        # Written last: its presence says every part file above is complete.
        write_json_atomic(index_path, {"tasks": params.tasks, "n_tasks": table.num_rows, "rows_per_part": rows})
        log.info("roundtrip: %d task(s) in %d part(s)", table.num_rows, len(rows))
        return rows

    # ----- work ---------------------------------------------------------------------------
    def run_part(self, ctx: PartContext) -> pa.Table:
        from engine.roundtrip.orchestrate import run_roundtrip
        from engine.roundtrip.tasks import TASK_SCHEMA

        tasks = pq.read_table(task_part_path(ctx.run_root, ctx.part.index), schema=TASK_SCHEMA).to_pylist()
        return run_roundtrip(tasks, ctx.config.section(self.section))

    def report_section(self, ctx: Any) -> tuple[str, str, str] | None:
        from engine.roundtrip.report import section_html

        body = section_html(ctx.data.root, ctx.data.manifest.get("signatures", {}))
        return None if body is None else ("roundtrip", "Execution round trip", body)

    def signatures(self, config: Any, task: StageTask, prepass: dict[str, Any]) -> dict[str, Any]:
        from engine.roundtrip.sandbox import interpreter_version, isolation_name
        from engine.roundtrip.scores import signature
        from engine.signature import package_version

        p = config.section(self.section)
        box = p.sandbox
        sandbox = {"isolation": isolation_name(box), "cpu": box.cpu_seconds, "wall": box.wall_seconds,
                   "mem": box.memory_mb, "nproc": box.max_processes, "python": interpreter_version(box)}
        generators = [g.display_name for g in p.generators]
        comments = p.comment_generator.display_name if p.comment_generator else "given"
        common = {"tasks": p.tasks if p.tasks in ("humaneval", "polyglot") else Path(p.tasks).name, "generators": generators,
                  "samples": p.samples, "comments": comments, "seed": p.seed, "transformers": package_version("transformers")}
        if p.programming_languages:
            common["programming_languages"] = list(p.programming_languages)
        out = {
            "pass@1": signature("pass@1", **common, verdict=p.verdict, call_s=p.call_seconds, **sandbox),
            "correctness": signature("correctness", **common, inputs=p.inputs, call_s=p.call_seconds, **sandbox),
            "abstraction": signature("abstraction", **common, similarity="mean(ast-edge-jaccard,token-jaccard)",
                                     tokens="no-keywords,no-given"),
        }
        if p.compressions:
            out["conciseness"] = signature("conciseness", **common, compressions=p.compressions, unit="chars",
                                           compressor=comments, keeps="correctness>=original")
        if p.fluency_model:
            out["fluency"] = signature("fluency", model=p.fluency_model, comments=comments, unit="1/perplexity")
        return out
