"""Stage `score`: every configured scorer over each part's predictions and noise/perturbation texts.

Identity: each `score.scorers` entry is one task, named from its complete resolved options
(`engine.metrics.base.task_name_for`), so two entries never share a part file. The `scorer`
column of the rows carries the model as configured; when two entries of one kind name the
same model (e.g. idf on and off), each entry's scorer column gets the options in which it
differs from the defaults (`model[idf=true]`), so score keys and calibration groups differ.
Two entries whose rows would share a score key are refused at config time, naming both.

Corpus pre-pass: an embedding scorer with `idf: true` counts document frequencies over all
unique reference spans of the run (per context setting) once, before any part; every part
uses those counts, so idf weights never depend on how the work was cut.

Rows of items without a prediction (generation failed) are error rows under the scorer's own
metric names and variants, with NaN values and the reason in `error`.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import pyarrow as pa

from engine.items import ScoreItem
from engine.records import SCORE_SCHEMA
from engine.score.params import ScorerSpec, ScoreSection, get_scorer, parse_scorers
from engine.score.rows import group_by_sample, missing_prediction_rows, rows_to_table, score_items
from engine.score.section import check_section, generation_errors, reported_layers
from engine.score.section import model_needs as scorer_model_needs
from engine.stages.base import CANDIDATES, LAYER_SETTING, SAMPLES, SCORES, PartContext, PartStage, Rates, ReportSettings, Reusable, StageTask, prepass_hash

if TYPE_CHECKING:
    from engine.io.rundir import RunDirectory


class ScoreStage(PartStage, Reusable, Rates, ReportSettings):
    name = "score"
    package = "engine.score"
    section = "score"
    rates = (("encoder_tokens", "encoder tokens/s"), ("model_tokens", "likelihood tokens/s"))
    directory = "scores"
    schema = SCORE_SCHEMA
    input_columns = ("sample_id", "file_id", "language", "source", "comment_start", "comment_end", "reference", "prime", "prediction")
    provides = SCORES
    consumes = (SAMPLES, CANDIDATES)
    # Every scorer entry's location options (embedding baselines are files).
    path_options = ("model", "tokenizer", "baseline")

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> ScoreSection:
        return parse_scorers(raw)

    def check_config(self) -> None:
        check_section(self.params)

    def model_needs(self) -> list[Any]:
        return scorer_model_needs(self.params, self.name)

    def tasks(self) -> list[StageTask]:
        out = []
        for i, spec in enumerate(self.params.scorers):
            scorer = get_scorer(spec)
            out.append(StageTask(self.name, scorer.task_name, scorer.model_key, i, params=spec))
        return out

    # ----- corpus pre-pass: idf document frequencies over the run's unique references ---------
    def needs_prepass(self, task: StageTask) -> bool:
        spec = task.params
        return spec.kind == "embedding" and bool(spec.params.to_dict().get("idf"))

    def prepass(self, task: StageTask, tables: Iterable[pa.Table]) -> dict[str, Any]:
        spec = task.params
        scorer = get_scorer(spec)
        counts = scorer.reference_document_frequencies(score_items(t, {}) for t in tables)
        return {"idf": counts}

    def signatures(self, task: StageTask, prepass: dict[str, Any]) -> dict[str, Any]:
        spec = task.params
        scorer = get_scorer(spec)
        if prepass:
            scorer.use_corpus_idf(prepass["idf"], prepass_hash(prepass))
        return scorer.signatures()

    def console_lines(self, run: "RunDirectory", counts: dict[str, Any]) -> list[str]:
        """Its row count and the mean score per setting and language."""
        from engine.report.summary import run_summary

        return [f"{self.name} rows {counts.get(f'{self.name}_rows')}", "", run_summary(run)]

    def report_settings(self, options: dict[str, Any]) -> dict[str, Any]:
        """The layer each embedding scorer reports without a sweep (engine.score.section.reported_layers)."""
        return {LAYER_SETTING: reported_layers(options)}

    def reuse_identity(self, task: StageTask, prepass: dict[str, Any]) -> str:
        from engine.score.reuse import score_identity

        return score_identity(task.params, prepass)

    def reuse_part(self, ctx: PartContext, sources: Any) -> tuple[pa.Table, dict[str, int], int] | None:
        from engine.score.reuse import score_part

        return score_part(self, ctx, sources)

    def part_scorer(self, ctx: PartContext) -> tuple[ScorerSpec, Any]:
        """The entry of this part and its scorer (built, not loaded), with the run's corpus idf."""
        spec = ctx.part.params
        scorer = get_scorer(spec)
        if ctx.prepass:
            scorer.use_corpus_idf(ctx.prepass["idf"], prepass_hash(ctx.prepass))
        return spec, scorer

    def part_items(self, ctx: PartContext) -> tuple[list[ScoreItem], dict[str, str]]:
        """Every item of the part in scoring order, and why items without a prediction lack one."""
        samples = ctx.input_table()
        self.require_columns(samples, "the part's samples")
        extra: list[dict[str, Any]] = []
        for provider in ctx.providers_of(CANDIDATES):
            extra.extend(provider.as_candidates(ctx.stage_output(provider.name)).to_pylist())
        items = list(score_items(samples, group_by_sample(extra)))
        missing = any(item.prediction is None for item in items)
        return items, generation_errors(samples) if missing else {}

    def run_part(self, ctx: PartContext) -> pa.Table:
        spec, scorer = self.part_scorer(ctx)
        items, reasons = self.part_items(ctx)
        ready = [item for item in items if item.prediction is not None]
        missing = [item for item in items if item.prediction is None]
        rows = scorer.score(ready) + missing_prediction_rows(scorer, missing, reasons)
        items_by_id = {item.sample_id: item for item in items}
        return rows_to_table(rows, items_by_id, spec.scorer_label)
