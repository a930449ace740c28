"""The `score:` section (its Stage is engine/score/stage.py): scorer entries parsed with their
`scorer` labels and config-time checks, and a scorer built from an entry. Each entry's own
options (one Params class per scorer kind) live in engine.metrics.params, beside the scorers
that read them, below this stage.

Labels: the `scorer` column carries the model as configured; when two entries of one kind
name the same model (e.g. idf on and off), each entry's label gets the options in which it
differs from the defaults (`model[idf=true]`), so score keys and calibration groups differ.
Two entries whose rows would share a score key are refused at config time, naming both.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from engine.errors import ConfigError
from engine.hints import did_you_mean
from engine.params import Params, error_messages, raise_all

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

    def to_dict(self, identity: bool = False) -> dict[str, Any]:
        return {"kind": self.kind, **self.params.to_dict(identity)}


@dataclass(frozen=True)
class ScoreSection(Params):
    """The `score:` section: a non-empty list of scorer entries (`kind` plus that scorer's options)."""

    scorers: tuple[Any, ...] = ()

    def to_dict(self, identity: bool = False) -> dict[str, Any]:
        return {"scorers": [s.to_dict(identity) for s in self.scorers]}


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
    """`[k=v,...]` of the options in `differing` where this entry leaves the default, named and
    ordered as the run's identities are (a renamed key keeps its old name in the label)."""
    defaults = _defaults(params)
    parts = []
    for name, value in params.to_dict(identity=True).items():
        field = params.renamed_keys.get(name, name)
        if field not in differing or field in NON_IDENTITY_OPTIONS or field in MODEL_OPTIONS:
            continue
        if field in defaults and value == _plain(defaults[field]):
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


_METRIC_KINDS = {"bleu": "lexical", "rouge": "lexical", "rougel": "lexical", "rouge-l": "lexical", "meteor": "lexical",
                 "bertscore": "embedding", "bartscore": "likelihood", "gptscore": "likelihood"}


def parse_scorers(raw: Any) -> ScoreSection:
    from engine.metrics.base import SCORER_KINDS, scorer_class

    if not isinstance(raw, Mapping):
        raise ConfigError(f"score: got {raw!r}; allowed: a mapping with key 'scorers'")
    errors = [f"score.{key}: unknown key{did_you_mean(key, ['scorers'])}; allowed keys here: ['scorers']"
              for key in sorted(set(raw) - {"scorers"})]  # said with the scorers' own errors, in one pass
    entries = raw.get("scorers")
    if not isinstance(entries, list) or not entries:
        raise_all(errors + [f"score.scorers: got {entries!r}; allowed: a non-empty list of scorer mappings"])
    specs: list[ScorerSpec] = []
    for i, entry in enumerate(entries):
        where = f"score.scorers[{i}]"
        if not isinstance(entry, Mapping) or "kind" not in entry:
            errors.append(f"{where}: got {entry!r}; allowed: a mapping with 'kind' (one of {sorted(SCORER_KINDS)})")
            continue
        if entry["kind"] not in SCORER_KINDS:
            metric = _METRIC_KINDS.get(str(entry["kind"]).lower())  # a metric's name given as the kind
            hint = f"; {entry['kind']!r} is a metric of kind {metric!r}" if metric else did_you_mean(entry["kind"], SCORER_KINDS)
            errors.append(f"{where}.kind: unknown kind {entry['kind']!r}{hint}; allowed: {sorted(SCORER_KINDS)}")
            continue
        options = {k: v for k, v in entry.items() if k != "kind"}  # relative paths resolved by the config loader
        cls = scorer_class(entry["kind"])
        try:
            specs.append(ScorerSpec(entry["kind"], cls.Params.from_mapping(options, where=where)))
        except ConfigError as exc:
            errors += error_messages(exc)
    raise_all(errors)
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
def get_scorer(spec: ScorerSpec, *, stage: str) -> Any:
    """A scorer for `spec`. Cheap: it loads nothing itself; its model comes from the model
    registry (engine.runtime.model_registry) when it first scores, recorded as loaded for
    `stage`, and stays there, not in the scorer."""
    from engine.metrics.base import scorer_class

    return scorer_class(spec.kind)(spec.params, stage=stage)
