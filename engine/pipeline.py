"""The stages of a run as parts: what each part reads, computes and writes.

A part is the unit of work and of exactly-once commit: part `i` of a stage covers the samples
of `samples/part-i.parquet`. `execute_part` is a pure function of (run directory, config,
part) that returns the part's table; executors (local, Ray) call it wherever they like and
the driver commits the result. Nothing here imports torch, ray or vllm at module level.
"""
from __future__ import annotations

import logging
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from engine.config import RunConfig, ScorerSpec
from engine.errors import StageError
from engine.items import ScoreItem, ScoreRow
from engine.records import GENERATION_SCHEMA, NOISE_SCHEMA, SCORE_SCHEMA

logger = logging.getLogger(__name__)

PART_STAGES = ("generate", "noise", "score")
STAGE_DIRS = {"generate": "generations", "noise": "noise", "score": "scores"}
# Columns each stage needs from the table it reads (Ray Data LLM style: checked, stage named).
STAGE_INPUT_COLUMNS = {
    "generate": ("sample_id", "file_id", "source", "comment_start", "comment_end", "reference"),
    "noise": ("sample_id", "source", "comment_start", "comment_end", "reference", "prime", "generator"),
    "score": ("sample_id", "file_id", "language", "source", "comment_start", "comment_end", "reference", "prime", "prediction"),
}
# Test hook (fault-injection tests only): kill the process that runs the named part.
KILL_PART_ENV = "BABELSCORE_TEST_KILL_PART"


@dataclass(frozen=True)
class PartTask:
    stage: str  # generate | noise | score
    task: str  # 'lexical', 'bertscore-<model>', 'generate', 'noise'
    index: int
    model_key: str = ""
    scorer_index: int = -1  # position in config.score.scorers for score parts

    @property
    def key(self) -> str:
        return f"{self.stage}/{self.task}/{self.index:05d}"

    @property
    def relative_path(self) -> str:
        return f"{STAGE_DIRS[self.stage]}/{self.task}__part-{self.index:05d}.parquet"

    @property
    def schema(self) -> pa.Schema:
        return {"generate": GENERATION_SCHEMA, "noise": NOISE_SCHEMA, "score": SCORE_SCHEMA}[self.stage]


def generation_task(generator: Any) -> str:
    return f"generate-{generator.generator_name}"


def sample_part_path(run_root: str | Path, index: int) -> Path:
    return Path(run_root) / "samples" / f"part-{index:05d}.parquet"


def plan_parts(config: RunConfig, stage: str, n_parts: int) -> list[PartTask]:
    """All parts of a stage, model-major: every part of one model before the next model."""
    if stage == "noise":
        return [PartTask(stage, stage, i, model_key="") for i in range(n_parts)]
    if stage == "generate":
        section = config.section("generate")
        return [
            PartTask(stage, generation_task(g), i, model_key=f"generate:{g.model}", scorer_index=k)
            for k, g in enumerate(section.generators)  # type: ignore[attr-defined]
            for i in range(n_parts)
        ]
    assert config.score is not None
    tasks = []
    for scorer_index, spec in enumerate(config.score.scorers):
        scorer = get_scorer(spec)
        tasks.extend(
            PartTask("score", scorer.task_name, i, model_key=scorer.model_key, scorer_index=scorer_index) for i in range(n_parts)
        )
    return sorted(tasks, key=lambda t: (t.model_key, t.task, t.index))


# ----- scorers, one instance per process (models load once per process/actor) ------------------
_SCORERS: dict[tuple[str, Any], Any] = {}


def get_scorer(spec: ScorerSpec) -> Any:
    from engine.metrics.base import scorer_class

    key = (spec.kind, spec.params)
    if key not in _SCORERS:
        _SCORERS[key] = scorer_class(spec.kind)(spec.params)
    return _SCORERS[key]


def release_scorers(keep_model_key: str | None = None) -> None:
    """Drop cached scorers of other models so that only one model sits in memory at a time."""
    for key in list(_SCORERS):
        if _SCORERS[key].model_key not in ("", keep_model_key):
            del _SCORERS[key]


# ----- reading the inputs of a part ---------------------------------------------------------
def _require_columns(stage: str, table: pa.Table, source: str) -> None:
    missing = [c for c in STAGE_INPUT_COLUMNS[stage] if c not in table.column_names]
    if missing:
        raise StageError(stage, f"its input {source} lacks column(s) {missing}; it needs {list(STAGE_INPUT_COLUMNS[stage])}")


def read_stage_input(run_root: str | Path, config: RunConfig, stage: str, index: int) -> pa.Table:
    """The sample rows a stage works on for part `index`: generated rows when generation ran
    (every generator's rows of that part, in config order)."""
    if stage != "generate" and "generate" in config.stages:
        paths = [
            Path(run_root) / STAGE_DIRS["generate"] / f"{generation_task(g)}__part-{index:05d}.parquet"
            for g in config.section("generate").generators  # type: ignore[attr-defined]
        ]
        table = pa.concat_tables([pq.read_table(p, schema=GENERATION_SCHEMA) for p in paths])
    else:
        paths = [sample_part_path(run_root, index)]
        table = pq.read_table(paths[0])
    _require_columns(stage, table, str(paths[0].relative_to(run_root)))
    return table


def _noise_rows(run_root: str | Path, config: RunConfig, index: int) -> dict[str, list[dict[str, Any]]]:
    if "noise" not in config.stages:
        return {}
    path = Path(run_root) / STAGE_DIRS["noise"] / f"noise__part-{index:05d}.parquet"
    by_sample: dict[str, list[dict[str, Any]]] = {}
    for row in pq.read_table(path).to_pylist():
        by_sample.setdefault(row["sample_id"], []).append(row)
    return by_sample


def score_items(samples: pa.Table, noise: dict[str, list[dict[str, Any]]]) -> Iterator[ScoreItem]:
    """Every item to score: each sample's prediction, then its noise predictions."""
    for row in samples.to_pylist():
        common = dict(
            sample_id=row["sample_id"],
            file_id=row["file_id"],
            language=row["language"],
            generator=row.get("generator"),
            source=row["source"],
            comment_start=row["comment_start"],
            comment_end=row["comment_end"],
            reference=row["reference"],
            prime=row.get("prime") or "",
        )
        yield ScoreItem(noise="none", prediction=row.get("prediction"), **common)  # type: ignore[arg-type]
        for noise_row in noise.get(row["sample_id"], []):
            yield ScoreItem(noise=noise_row["noise"], prediction=noise_row["prediction"], **common)


def _missing_prediction_rows(items: Sequence[ScoreItem], task: str, reasons: dict[str, str]) -> list[ScoreRow]:
    return [
        ScoreRow(item.sample_id, item.noise, task, "", "", "error", float("nan"), f"metric:{task}", reasons.get(item.sample_id) or "no prediction")
        for item in items
    ]


def rows_to_table(rows: Sequence[ScoreRow], items_by_id: dict[str, ScoreItem]) -> pa.Table:
    columns: dict[str, list[Any]] = {name: [] for name in SCORE_SCHEMA.names}
    for row in rows:
        item = items_by_id[row.sample_id]
        columns["sample_id"].append(row.sample_id)
        columns["generator"].append(item.generator)
        columns["language"].append(item.language)
        columns["noise"].append(row.noise)
        columns["metric"].append(row.metric)
        columns["scorer"].append(row.scorer)
        columns["context"].append(row.context)
        columns["variant"].append(row.variant)
        columns["value"].append(float(row.value))
        columns["signature"].append(row.signature)
        columns["error"].append(row.error)
    return pa.table(columns, schema=SCORE_SCHEMA)


# ----- executing one part -------------------------------------------------------------------
def _maybe_kill_for_test(task: PartTask) -> None:
    target = os.environ.get(KILL_PART_ENV)
    if not target or target != task.key:
        return
    marker = Path(os.environ.get(KILL_PART_ENV + "_MARKER", "/nonexistent"))
    if marker.parent.is_dir() and not marker.exists():
        marker.write_text("killed once\n")  # kill only the first attempt, so the retry can succeed
        os.kill(os.getpid(), signal.SIGKILL)


def execute_part(run_root: str, config: RunConfig, task: PartTask, stage_info: dict[str, Any]) -> pa.Table:
    """Compute one part's output table. Row-level failures become error rows, not exceptions."""
    _maybe_kill_for_test(task)
    samples = read_stage_input(run_root, config, task.stage, task.index)
    if task.stage == "generate":
        from engine.generate.stage import generate_part

        generator = config.section("generate").generators[task.scorer_index]  # type: ignore[attr-defined]
        return generate_part(samples, generator, int(stage_info[generator.generator_name]["max_new_tokens"]))
    if task.stage == "noise":
        from engine.noise import make_noise

        return make_noise(samples, config.section("noise"))
    assert config.score is not None
    spec = config.score.scorers[task.scorer_index]
    release_scorers(keep_model_key=task.model_key)
    scorer = get_scorer(spec)
    items = list(score_items(samples, _noise_rows(run_root, config, task.index)))
    ready = [item for item in items if item.prediction is not None]
    missing = [item for item in items if item.prediction is None]
    reasons = {}
    if missing and "generation_error" in samples.column_names:
        reasons = {
            r["sample_id"]: f"no prediction: {r['generation_error']}"
            for r in samples.select(["sample_id", "generation_error"]).to_pylist()
            if r["generation_error"]
        }
    rows = scorer.score(ready) + _missing_prediction_rows(missing, scorer.task_name, reasons)
    items_by_id = {item.sample_id: item for item in items}
    return rows_to_table(rows, items_by_id)
