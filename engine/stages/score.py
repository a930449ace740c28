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

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import pyarrow as pa

from engine.errors import ConfigError
from engine.items import ScoreItem, ScoreRow
from engine.params import Params
from engine.records import SCORE_SCHEMA
from engine.stages.base import CANDIDATES, SAMPLES, SCORES, PartContext, Reusable, Stage, StageTask, prepass_hash

logger = logging.getLogger(__name__)

# Option names that never change a number of the rows an entry shares with another entry:
# they select which rows exist (metrics, contexts, directions) or only schedule work.
NON_IDENTITY_OPTIONS = frozenset(
    {"metrics", "contexts", "directions", "device", "batch_tokens", "batch_size", "mean_pool", "strict_dtype"}
)
# Option names whose value is a model or tokenizer location.
MODEL_OPTIONS = ("model", "tokenizer")


@dataclass(frozen=True)
class ScorerSpec:
    """One entry of `score.scorers`: its kind, its validated parameters and its display name."""

    kind: str
    params: Params
    scorer_label: str = ""  # the `scorer` column; '' for lexical metrics without a qualifier

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.params.to_dict()}


@dataclass(frozen=True)
class ScoreSection(Params):
    """The `score:` section: a non-empty list of scorer entries (`kind` plus that scorer's options)."""

    scorers: tuple[Any, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"scorers": [s.to_dict() for s in self.scorers]}


def _defaults(params: Params) -> dict[str, Any]:
    import dataclasses

    out = {}
    for f in dataclasses.fields(params):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            out[f.name] = f.default_factory()  # type: ignore[misc]
    return out


def _qualifier(params: Params, differing: set[str]) -> str:
    """`[k=v,...]` of the options in `differing` where this entry leaves the default."""
    defaults = _defaults(params)
    parts = []
    for name, value in params.to_dict().items():
        if name not in differing or name in NON_IDENTITY_OPTIONS or name in MODEL_OPTIONS:
            continue
        if name in defaults and value == _plain(defaults[name]):
            continue
        shown = "true" if value is True else "false" if value is False else value
        parts.append(f"{name}={shown}")
    return "[" + ",".join(parts) + "]" if parts else ""


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _row_keys(spec: ScorerSpec) -> set[tuple[str, str]]:
    """(metric, context) pairs an entry writes rows for; with the scorer column, its key space."""
    p = spec.params.to_dict()
    if spec.kind == "lexical":
        return {(m, "") for m in p["metrics"]}
    metric = {"embedding": "bertscore", "likelihood": "bartscore"}.get(spec.kind, spec.kind)
    return {(metric, c) for c in p.get("contexts", ("none",))}


def parse_scorers(raw: Any) -> ScoreSection:
    from engine.metrics.base import SCORER_KINDS, scorer_class

    if not isinstance(raw, Mapping):
        raise ConfigError(f"score: got {raw!r}; allowed: a mapping with key 'scorers'")
    unknown = sorted(set(raw) - {"scorers"})
    if unknown:
        raise ConfigError(f"score.{unknown[0]}: unknown key; allowed keys here: ['scorers']")
    entries = raw.get("scorers")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"score.scorers: got {entries!r}; allowed: a non-empty list of scorer mappings")
    specs: list[ScorerSpec] = []
    for i, entry in enumerate(entries):
        where = f"score.scorers[{i}]"
        if not isinstance(entry, Mapping) or "kind" not in entry:
            raise ConfigError(f"{where}: got {entry!r}; allowed: a mapping with 'kind' (one of {sorted(SCORER_KINDS)})")
        options = {k: v for k, v in entry.items() if k != "kind"}  # relative paths resolved by the config loader
        cls = scorer_class(entry["kind"])
        specs.append(ScorerSpec(entry["kind"], cls.Params.from_mapping(options, where=where)))
    return ScoreSection(scorers=tuple(_label_and_check(specs)))


def _label_and_check(specs: list[ScorerSpec]) -> list[ScorerSpec]:
    for i, a in enumerate(specs):
        for j in range(i):
            if specs[j] == a:
                raise ConfigError(
                    f"score.scorers[{i}]: an exact duplicate of score.scorers[{j}] (same kind and options); remove one"
                )
    groups: dict[tuple[str, str], list[ScorerSpec]] = {}
    for spec in specs:
        groups.setdefault((spec.kind, str(spec.params.to_dict().get("model", ""))), []).append(spec)
    labelled = []
    for spec in specs:
        model = str(spec.params.to_dict().get("model", ""))
        group = groups[(spec.kind, model)]
        options = [g.params.to_dict() for g in group]
        differing = {name for name in options[0] if len({repr(o[name]) for o in options}) > 1}
        labelled.append(replace(spec, scorer_label=model + _qualifier(spec.params, differing)))
    for i, a in enumerate(labelled):
        for j in range(i):
            b = labelled[j]
            overlap = _row_keys(a) & _row_keys(b) if a.scorer_label == b.scorer_label else set()
            if overlap:
                metric, context = sorted(overlap)[0]
                raise ConfigError(
                    f"score.scorers[{i}] and score.scorers[{j}] would both write {metric} rows"
                    + (f" in context {context!r}" if context else "")
                    + f" under scorer {a.scorer_label!r}: give them options that change their numbers, or merge them"
                )
    return labelled


# ----- scorer instances: light objects; their models belong to the model registry ----------
def get_scorer(spec: ScorerSpec) -> Any:
    """A scorer for `spec`. Cheap: it loads nothing itself; its model comes from the model
    registry (engine.runtime.registry) when it first scores, and stays there, not in the scorer."""
    from engine.metrics.base import scorer_class

    return scorer_class(spec.kind)(spec.params)


# ----- items --------------------------------------------------------------------------------
def score_items(samples: pa.Table, extra_predictions: Mapping[str, list[dict[str, Any]]]) -> Iterator[ScoreItem]:
    """Every item to score: each sample's prediction, then its noise (or perturbed) predictions.

    extra_predictions: sample_id -> rows with `noise` (the score rows' noise value) and `prediction`.
    """
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
        for extra in extra_predictions.get(row["sample_id"], []):
            yield ScoreItem(noise=extra["noise"], prediction=extra["prediction"], **common)


def _group_by_sample(rows: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(row["sample_id"], []).append(row)
    return out


def rows_to_table(rows: Sequence[ScoreRow], items_by_id: Mapping[str, ScoreItem], scorer_label: str | None) -> pa.Table:
    columns: dict[str, list[Any]] = {name: [] for name in SCORE_SCHEMA.names}
    for row in rows:
        item = items_by_id[row.sample_id]
        columns["sample_id"].append(row.sample_id)
        columns["generator"].append(item.generator)
        columns["language"].append(item.language)
        columns["noise"].append(row.noise)
        columns["metric"].append(row.metric)
        columns["scorer"].append(row.scorer if scorer_label is None else scorer_label)
        columns["context"].append(row.context)
        columns["variant"].append(row.variant)
        columns["value"].append(float(row.value))
        columns["signature"].append(row.signature)
        columns["error"].append(row.error)
    return pa.table(columns, schema=SCORE_SCHEMA)


def _missing_prediction_rows(scorer: Any, items: Sequence[ScoreItem], reasons: Mapping[str, str]) -> list[ScoreRow]:
    """Error rows with the scorer's real metric names and variants for items without a prediction.

    The rows' shape comes from scoring an empty prediction; every value is then replaced by NaN
    and the reason, so a missing prediction never looks like a score.
    """
    if not items:
        return []
    stand_ins = [replace(item, prediction="") for item in items]
    rows = scorer.score(stand_ins)
    return [
        row._replace(value=float("nan"), error=reasons.get(row.sample_id) or "no prediction")
        for row in rows
    ]


class ScoreStage(Stage, Reusable):
    name = "score"
    package = "engine.metrics"
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

    def check_config(self, config: Any) -> None:
        from engine.runtime import check_model_name

        for i, spec in enumerate(config.section(self.name).scorers):
            model = spec.params.to_dict().get("model")
            if model:
                check_model_name(model, f"score.scorers[{i}].model")

    def model_needs(self, config: Any) -> list[Any]:
        from engine.runtime.memory import ModelNeed

        needs = []
        for i, spec in enumerate(config.section(self.name).scorers):
            options = spec.params.to_dict()
            if options.get("model"):
                dtype = getattr(spec.params, "requested_dtype", options.get("dtype", "auto"))
                needs.append(ModelNeed(options["model"], self.name, f"score.scorers[{i}]", "transformers", dtype,
                                       options.get("device", "auto")))
        return needs

    def tasks(self, config: Any) -> list[StageTask]:
        out = []
        for i, spec in enumerate(config.section(self.name).scorers):
            scorer = get_scorer(spec)
            out.append(StageTask(self.name, scorer.task_name, scorer.model_key, i))
        return out

    # ----- corpus pre-pass: idf document frequencies over the run's unique references ---------
    def needs_prepass(self, config: Any, task: StageTask) -> bool:
        spec = config.section(self.name).scorers[task.entry]
        return spec.kind == "embedding" and bool(spec.params.to_dict().get("idf"))

    def prepass(self, config: Any, task: StageTask, tables: Iterable[pa.Table]) -> dict[str, Any]:
        spec = config.section(self.name).scorers[task.entry]
        scorer = get_scorer(spec)
        counts = scorer.reference_document_frequencies(score_items(t, {}) for t in tables)
        return {"idf": counts}

    def signatures(self, config: Any, task: StageTask, prepass: dict[str, Any]) -> dict[str, Any]:
        spec = config.section(self.name).scorers[task.entry]
        scorer = get_scorer(spec)
        if prepass:
            scorer.use_corpus_idf(prepass["idf"], prepass_hash(prepass))
        return scorer.signatures()

    def reuse_identity(self, config: Any, task: StageTask, prepass: dict[str, Any]) -> str:
        from engine.metrics.reuse import score_identity

        return score_identity(config.section(self.name).scorers[task.entry], prepass)

    def reuse_part(self, ctx: PartContext, sources: Any) -> tuple[pa.Table, dict[str, int], int] | None:
        from engine.metrics.reuse import score_part

        return score_part(self, ctx, sources)

    def part_scorer(self, ctx: PartContext) -> tuple[ScorerSpec, Any]:
        """The entry of this part and its scorer (built, not loaded), with the run's corpus idf."""
        spec = ctx.config.section(self.name).scorers[ctx.part.entry]
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
        items = list(score_items(samples, _group_by_sample(extra)))
        missing = [item for item in items if item.prediction is None]
        reasons: dict[str, str] = {}
        if missing and "generation_error" in samples.column_names:
            reasons = {
                r["sample_id"]: f"no prediction: {r['generation_error']}"
                for r in samples.select(["sample_id", "generation_error"]).to_pylist()
                if r["generation_error"]
            }
        return items, reasons

    def run_part(self, ctx: PartContext) -> pa.Table:
        spec, scorer = self.part_scorer(ctx)
        items, reasons = self.part_items(ctx)
        ready = [item for item in items if item.prediction is not None]
        missing = [item for item in items if item.prediction is None]
        rows = scorer.score(ready) + _missing_prediction_rows(scorer, missing, reasons)
        items_by_id = {item.sample_id: item for item in items}
        return rows_to_table(rows, items_by_id, spec.scorer_label)
