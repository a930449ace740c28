"""Stage `score`: every configured scorer over each part's predictions and noise/perturbation texts.

Identity: each `score.scorers` entry is one task (engine.score.section.section_tasks). The
`scorer` column carries the model as configured; two entries of one kind naming the same model
get the options in which they differ (`model[idf=true]`), and two entries whose rows would
share a score key are refused at config time (engine.score.params). The idf corpus pre-pass is
engine.score.corpus; a part's items and rows, error rows included, engine.score.rows.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import pyarrow as pa

from engine.records import SCORE_SCHEMA
from engine.score.corpus import count_corpus_idf, entry_scorer, needs_corpus_idf
from engine.score.params import ScorerSpec, ScoreSection, parse_scorers
from engine.score.rows import part_items, part_table
from engine.score.section import check_section, reported_layers, section_tasks
from engine.score.section import model_needs as scorer_model_needs
from engine.stages.base import CANDIDATES, LAYER_SETTING, SAMPLES, SCORES, PartContext, PartStage, Rates, ReportSettings, Reusable, StageTask

if TYPE_CHECKING:
    from engine.io.rundir import RunDirectory


class ScoreStage(PartStage[ScoreSection, ScorerSpec], Reusable, Rates, ReportSettings):
    name = "score"
    package = "engine.score"
    section = "score"
    params_class = "engine.score.params:ScoreSection"
    entries_by_kind = True  # each scorer kind has its own Params class (engine.metrics.params)
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

    def tasks(self) -> list[StageTask[ScorerSpec]]:
        return section_tasks(self.params, self.name)

    def needs_prepass(self, task: StageTask[ScorerSpec]) -> bool:
        return needs_corpus_idf(task.params)

    def prepass(self, task: StageTask[ScorerSpec], tables: Iterable[pa.Table]) -> dict[str, Any]:
        return count_corpus_idf(task.params, tables, self.name)

    def signatures(self, task: StageTask[ScorerSpec], prepass: dict[str, Any]) -> dict[str, Any]:
        return entry_scorer(task.params, prepass, self.name).signatures()

    def console_lines(self, run: "RunDirectory", counts: dict[str, Any]) -> list[str]:
        """Its row count and the mean score per setting and language."""
        from engine.report.summary import run_summary

        return [f"{self.name} rows {counts.get(f'{self.name}_rows')}", "", run_summary(run)]

    def report_settings(self, options: dict[str, Any]) -> dict[str, Any]:
        """The layer each embedding scorer reports without a sweep (engine.score.section.reported_layers)."""
        return {LAYER_SETTING: reported_layers(options)}

    def reuse_identity(self, task: StageTask[ScorerSpec], prepass: dict[str, Any]) -> str:
        from engine.score.reuse import score_identity

        return score_identity(task.params, prepass)

    def reuse_part(self, ctx: PartContext[ScorerSpec], sources: Any) -> tuple[pa.Table, dict[str, int], int] | None:
        from engine.score.reuse import score_part

        return score_part(self, ctx, sources)

    def run_part(self, ctx: PartContext[ScorerSpec]) -> pa.Table:
        items, reasons = part_items(ctx, self)
        return part_table(entry_scorer(ctx.part.params, ctx.prepass, self.name), items, reasons, ctx.part.params.scorer_label)
