"""Run configs: YAML -> frozen, validated `RunConfig`, and the config hash that names a run.

Every section is parsed by its stage's own parameter class (engine.params.Params), imported
lazily so a lexical-only run never imports torch. Unknown keys and bad values fail here,
before any work, with the key, the value and what is allowed.
"""
from __future__ import annotations

import hashlib
import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

import yaml

from engine.data.validate import ValidationParams
from engine.errors import ConfigError
from engine.params import Params, require

STAGE_ORDER = ("build", "generate", "noise", "score", "calibrate", "report")
# Section name -> "module:ParamsClass"; each stage owns the validation of its options.
STAGE_PARAMS = {
    "build": "engine.data.build:BuildParams",
    "generate": "engine.generate.stage:GenerateSection",
    "noise": "engine.noise:NoiseParams",
    "calibrate": "engine.calibrate.stage:CalibrateParams",
}
BUILTIN_INPUTS = {"demo": Path(__file__).parent / "data" / "demo" / "samples.jsonl"}
REPO_ROOT = Path(__file__).resolve().parent.parent


def _stage_params_class(section: str) -> type[Params]:
    module_name, class_name = STAGE_PARAMS[section].split(":")
    return getattr(importlib.import_module(module_name), class_name)


@dataclass(frozen=True)
class ScorerSpec:
    """One entry of `score.scorers`: the scorer kind and its validated parameters."""

    kind: str
    params: Params

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.params.to_dict()}


@dataclass(frozen=True)
class ScoreSection:
    scorers: tuple[ScorerSpec, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"scorers": [s.to_dict() for s in self.scorers]}


@dataclass(frozen=True)
class ReportParams(Params):
    """Options of stage `report`.

    Keys:
        max_strip_points: at most this many points per strip plot (a random, seeded subset beyond it).
        image_format: file format of the report's figures.
    """

    max_strip_points: int = 5000
    image_format: Literal["png", "svg"] = "png"

    def __post_init__(self) -> None:
        require(self.max_strip_points > 0, "report.max_strip_points", self.max_strip_points, "a positive integer")


@dataclass(frozen=True)
class RunConfig:
    """A resolved run config. `input` is an absolute path; sections not used are None."""

    name: str
    input: str
    stages: tuple[str, ...]
    seed: int = 0
    part_size: int = 64
    score: ScoreSection | None = None
    sections: Mapping[str, Params] = field(default_factory=dict)  # build/generate/noise/calibrate
    report: ReportParams = ReportParams()
    validation: ValidationParams = ValidationParams()

    def section(self, name: str) -> Params:
        if name not in self.sections:
            raise ConfigError(f"{name}: the config lists stage {name!r} but has no `{name}:` section")
        return self.sections[name]

    def to_dict(self) -> dict[str, Any]:
        """The resolved config, JSON-ready; what the manifest records and the hash covers."""
        out: dict[str, Any] = {
            "name": self.name,
            "input": self.input,
            "stages": list(self.stages),
            "seed": self.seed,
            "part_size": self.part_size,
        }
        if self.score is not None:
            out["score"] = self.score.to_dict()
        for name in sorted(self.sections):
            out[name] = self.sections[name].to_dict()
        out["report"] = self.report.to_dict()
        out["validation"] = self.validation.to_dict()
        return out


TOP_LEVEL_KEYS = {"name", "input", "stages", "seed", "part_size", "score", "report", "validation", *STAGE_PARAMS}
# Sections that configure a stage: present without the stage in `stages`, they would be ignored.
STAGE_SECTIONS = ("score", "report", *STAGE_PARAMS)


# Option names whose values are model or tokenizer locations: a value starting with ./ or ../
# is a path relative to the config file, like `input`.
PATH_OPTIONS = ("model", "tokenizer", "baseline", "source_dir", "cards_file")


def _resolve_relative_paths(options: Mapping[str, Any], base_dir: Path) -> dict[str, Any]:
    out = dict(options)
    for key in PATH_OPTIONS:
        value = out.get(key)
        if isinstance(value, str) and value.startswith(("./", "../")):
            out[key] = str((base_dir / value).resolve())
    return out


def _parse_score(raw: Any, base_dir: Path) -> ScoreSection:
    from engine.metrics.base import SCORER_KINDS, scorer_class

    if not isinstance(raw, Mapping):
        raise ConfigError(f"score: got {raw!r}; allowed: a mapping with key 'scorers'")
    unknown = sorted(set(raw) - {"scorers"})
    if unknown:
        raise ConfigError(f"score.{unknown[0]}: unknown key; allowed keys here: ['scorers']")
    scorers_raw = raw.get("scorers")
    if not isinstance(scorers_raw, list) or not scorers_raw:
        raise ConfigError(f"score.scorers: got {scorers_raw!r}; allowed: a non-empty list of scorer mappings")
    specs = []
    for i, entry in enumerate(scorers_raw):
        where = f"score.scorers[{i}]"
        if not isinstance(entry, Mapping) or "kind" not in entry:
            raise ConfigError(f"{where}: got {entry!r}; allowed: a mapping with 'kind' (one of {sorted(SCORER_KINDS)})")
        options = _resolve_relative_paths({k: v for k, v in entry.items() if k != "kind"}, base_dir)
        cls = scorer_class(entry["kind"])
        specs.append(ScorerSpec(entry["kind"], cls.Params.from_mapping(options, where=where)))
    return ScoreSection(scorers=tuple(specs))


def resolve_input(value: str, base_dir: Path) -> str:
    if value.startswith("builtin:"):
        key = value.split(":", 1)[1]
        if key not in BUILTIN_INPUTS:
            raise ConfigError(f"input: got {value!r}; allowed builtin inputs: {sorted('builtin:' + k for k in BUILTIN_INPUTS)}")
        return str(BUILTIN_INPUTS[key])
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = base_dir / path
    return str(path.resolve())


def config_from_mapping(raw: Mapping[str, Any], base_dir: Path, overrides: Mapping[str, Any] | None = None) -> RunConfig:
    """Validate a parsed YAML mapping. `base_dir` anchors relative paths (the config's folder)."""
    raw = dict(raw)
    raw.update(overrides or {})
    unknown = sorted(set(raw) - TOP_LEVEL_KEYS)
    if unknown:
        raise ConfigError(f"{unknown[0]}: unknown top-level key (value {raw[unknown[0]]!r}); allowed: {sorted(TOP_LEVEL_KEYS)}")
    stages = raw.get("stages", ["score"])
    if not isinstance(stages, list) or not stages:
        raise ConfigError(f"stages: got {stages!r}; allowed: a non-empty list drawn from {list(STAGE_ORDER)}")
    for stage in stages:
        if stage not in STAGE_ORDER:
            raise ConfigError(f"stages: got {stage!r}; allowed: {list(STAGE_ORDER)}")
    ordered = tuple(s for s in STAGE_ORDER if s in stages)
    if list(ordered) != list(stages):
        raise ConfigError(f"stages: got {stages!r}; stages run in the order {list(STAGE_ORDER)}, list them in that order")
    name = raw.get("name", "run")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"name: got {name!r}; allowed: a non-empty string")
    seed = raw.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigError(f"seed: got {seed!r}; allowed: an integer")
    part_size = raw.get("part_size", 64)
    if not isinstance(part_size, int) or isinstance(part_size, bool) or part_size < 1:
        raise ConfigError(f"part_size: got {part_size!r}; allowed: a positive integer (samples per part)")
    input_value = raw.get("input")
    if "build" not in ordered:
        if not isinstance(input_value, str) or not input_value:
            raise ConfigError("input: required key is missing; give a Parquet or JSONL sample table (or builtin:demo)")
        input_path = resolve_input(input_value, base_dir)
    else:
        input_path = ""
    for section in STAGE_SECTIONS:
        if section in raw and section not in ordered:
            raise ConfigError(
                f"{section}: the config has a `{section}:` section but stage {section!r} is not in "
                f"stages {list(stages)}, so it would be ignored; add {section!r} to stages (in the order "
                f"{list(STAGE_ORDER)}) or remove the `{section}:` section"
            )
    if "score" in ordered and "score" not in raw:
        raise ConfigError("score: the config lists stage 'score' but has no `score:` section")
    score = _parse_score(raw["score"], base_dir) if "score" in raw else None
    sections: dict[str, Params] = {}
    for section in STAGE_PARAMS:
        if section in raw:
            options = raw[section]
            if isinstance(options, Mapping):
                options = _resolve_relative_paths(options, base_dir)
                if isinstance(options.get("generators"), list):
                    options["generators"] = [
                        _resolve_relative_paths(g, base_dir) if isinstance(g, Mapping) else g for g in options["generators"]
                    ]
            sections[section] = _stage_params_class(section).from_mapping(options, where=section)
        elif section in ordered:
            sections[section] = _stage_params_class(section).from_mapping({}, where=section)
    report = ReportParams.from_mapping(raw.get("report") or {}, where="report")
    validation = ValidationParams.from_mapping(raw.get("validation") or {}, where="validation")
    return RunConfig(
        name=name,
        input=input_path,
        stages=ordered,
        seed=seed,
        part_size=part_size,
        score=score,
        sections=sections,
        report=report,
        validation=validation,
    )


def load_config(path: str | Path, overrides: Mapping[str, Any] | None = None) -> RunConfig:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(yaml_error_message(path, exc)) from None
    if not isinstance(raw, Mapping):
        raise ConfigError(f"config file {str(path)!r}: expected a mapping at the top level, got {type(raw).__name__}")
    return config_from_mapping(raw, path.parent.resolve(), overrides)


def yaml_error_message(path: Path, exc: yaml.YAMLError) -> str:
    """'my.yaml:3:7: not valid YAML: <problem>' (1-based line and column, as editors count)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    problem = " ".join(p for p in (getattr(exc, "context", None), getattr(exc, "problem", None)) if p) or str(exc)
    return f"{where}: not valid YAML: {problem}; fix the config file there"


def file_fingerprint(path: str) -> str:
    """sha256 of a file's bytes: a changed input is a changed run."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def config_hash(config: RunConfig, input_fingerprint: str) -> str:
    payload = json.dumps(config.to_dict(), sort_keys=True, ensure_ascii=True) + "\n" + input_fingerprint
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
