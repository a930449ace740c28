"""Run configs: YAML -> frozen, validated `RunConfig`, and the config hash that names a run.

Sections are parsed by their stage: part stages through the stage registry
(`Stage.parse_section`), `build` and `calibrate` by their parameter classes, imported lazily
so a lexical-only run never imports torch. Unknown keys and bad values fail here, before any
work, with the key, the value and what is allowed. After parsing, every stage's config-time
checks run (model and tokenizer names resolve, sections belong to listed stages), so a run
never discovers a config mistake in the middle of its work.

The top-level `seed` is the default seed of every stage that has one (noise, generate,
calibrate, build); a section's own `seed` overrides it.
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
from engine.errors import ConfigError, InputError
from engine.hints import did_you_mean, path_hint, yaml_tab_hint
from engine.params import Params, require
from engine.stages.registry import PART_STAGES, STAGE_ORDER, get_stage

# Sections that are not part stages: "module:ParamsClass".
DRIVER_SECTION_PARAMS = {
    "build": "engine.data.build:BuildParams",
    "calibrate": "engine.calibrate.stage:CalibrateParams",
}
BUILTIN_INPUTS = {"demo": Path(__file__).parent / "data" / "demo" / "samples.jsonl"}
# Stages whose options carry a seed that the top-level `seed` defaults.
SEEDED_SECTIONS = ("build", "noise", "perturb", "calibrate")


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
    """A resolved run config. `input` and `labels` are absolute paths; sections not used are absent."""

    name: str
    input: str
    stages: tuple[str, ...]
    seed: int = 0
    part_size: int = 64
    labels: str | None = None
    sections: Mapping[str, Any] = field(default_factory=dict)
    report: ReportParams = ReportParams()
    validation: ValidationParams = ValidationParams()

    @property
    def score(self) -> Any:
        return self.sections.get("score")

    def section(self, name: str) -> Any:
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
        if self.labels is not None:
            out["labels"] = self.labels
        for name in sorted(self.sections):
            out[name] = self.sections[name].to_dict()
        out["report"] = self.report.to_dict()
        out["validation"] = self.validation.to_dict()
        return out


SECTION_NAMES = (*DRIVER_SECTION_PARAMS, *PART_STAGES)
TOP_LEVEL_KEYS = {"name", "input", "labels", "stages", "seed", "part_size", "report", "validation", *SECTION_NAMES}

# Option names whose values are model or tokenizer locations: a value starting with ./ or ../
# is a path relative to the config file, like `input`.
PATH_OPTIONS = ("model", "tokenizer", "baseline", "source_dir", "cards_file", "tasks")


def _resolve_relative_paths(options: Mapping[str, Any], base_dir: Path) -> dict[str, Any]:
    out = dict(options)
    for key in PATH_OPTIONS:
        value = out.get(key)
        if isinstance(value, str) and value.startswith(("./", "../")):
            out[key] = str((base_dir / value).resolve())
    for key, value in out.items():
        if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            out[key] = [_resolve_relative_paths(v, base_dir) for v in value]
    return out


def resolve_input(value: str, base_dir: Path, key: str = "input") -> str:
    if value.startswith("builtin:"):
        name = value.split(":", 1)[1]
        if name not in BUILTIN_INPUTS:
            raise ConfigError(f"{key}: got {value!r}; allowed builtin inputs: {sorted('builtin:' + k for k in BUILTIN_INPUTS)}")
        return str(BUILTIN_INPUTS[name])
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = base_dir / path
    return str(path.resolve())


def _with_seed(section: str, options: Any, seed: int) -> Any:
    """Default a section's seed(s) to the top-level seed (a section's own seed wins)."""
    if not isinstance(options, Mapping):
        return options
    out = dict(options)
    if section in SEEDED_SECTIONS:
        out.setdefault("seed", seed)
    if section == "generate" and isinstance(out.get("generators"), list):
        out["generators"] = [dict(g, seed=g.get("seed", seed)) if isinstance(g, Mapping) else g for g in out["generators"]]
    return out


def _parse_section(name: str, options: Any, base_dir: Path) -> Any:
    if isinstance(options, Mapping):
        options = _resolve_relative_paths(options, base_dir)
    if name in PART_STAGES:
        return get_stage(name).parse_section(options if options is not None else {}, base_dir, name)
    module_name, class_name = DRIVER_SECTION_PARAMS[name].split(":")
    params_class = getattr(importlib.import_module(module_name), class_name)
    return params_class.from_mapping(options, where=name)


def _int_option(raw: Mapping[str, Any], key: str, default: int, minimum: int | None, allowed: str) -> int:
    value = raw.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or (minimum is not None and value < minimum):
        raise ConfigError(f"{key}: got {value!r}; allowed: {allowed}")
    return value


def config_from_mapping(
    raw: Mapping[str, Any], base_dir: Path, overrides: Mapping[str, Any] | None = None, check: bool = True
) -> RunConfig:
    """Validate a parsed YAML mapping. `base_dir` anchors relative paths (the config's folder).

    check: also run every stage's config-time checks (model names resolve, ...).
    """
    raw = dict(raw)
    raw.update(overrides or {})
    unknown = sorted(set(raw) - TOP_LEVEL_KEYS)
    if unknown:
        raise ConfigError(f"{unknown[0]}: unknown top-level key (value {raw[unknown[0]]!r}){did_you_mean(unknown[0], TOP_LEVEL_KEYS)}; "
                          f"allowed: {sorted(TOP_LEVEL_KEYS)}")
    stages = raw.get("stages", ["score"])
    if not isinstance(stages, list) or not stages:
        raise ConfigError(f"stages: got {stages!r}; allowed: a non-empty list drawn from {list(STAGE_ORDER)}")
    for stage in stages:
        if stage not in STAGE_ORDER:
            raise ConfigError(f"stages: got {stage!r}{did_you_mean(stage, STAGE_ORDER)}; allowed: {list(STAGE_ORDER)}")
    ordered = tuple(s for s in STAGE_ORDER if s in stages)
    if list(ordered) != list(stages):
        raise ConfigError(f"stages: got {stages!r}; stages run in the order {list(STAGE_ORDER)}, list them in that order")
    for section in (*SECTION_NAMES, "report"):
        if section in raw and section not in ordered:
            raise ConfigError(
                f"{section}: the config has a `{section}:` section but `stages` ({list(ordered)}) does not list "
                f"{section!r}; add it to stages or remove the section"
            )
    name = raw.get("name", "run")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"name: got {name!r}; allowed: a non-empty string")
    seed = _int_option(raw, "seed", 0, None, "an integer")
    part_size = _int_option(raw, "part_size", 64, 1, "a positive integer (samples per part; a file never spans two parts)")
    input_value = raw.get("input")
    if "build" not in ordered:
        if not isinstance(input_value, str) or not input_value:
            raise ConfigError("input: required key is missing; give a Parquet or JSONL sample table (or builtin:demo)")
        input_path = resolve_input(input_value, base_dir)
    else:
        input_path = ""
    labels = raw.get("labels")
    if labels is not None:
        if not isinstance(labels, str) or not labels:
            raise ConfigError(f"labels: got {labels!r}; allowed: a Parquet or JSONL table of file_id, generator, label, error_codes")
        labels = resolve_input(labels, base_dir, key="labels")
    for section in ("score",):
        if section in ordered and section not in raw:
            raise ConfigError(f"{section}: the config lists stage {section!r} but has no `{section}:` section")
    sections: dict[str, Any] = {}
    for section in SECTION_NAMES:
        if section in raw or section in ordered:
            options = _with_seed(section, raw.get(section) if raw.get(section) is not None else {}, seed)
            sections[section] = _parse_section(section, options, base_dir)
    report = ReportParams.from_mapping(raw.get("report") or {}, where="report")
    validation = ValidationParams.from_mapping(raw.get("validation") or {}, where="validation")
    config = RunConfig(
        name=name,
        input=input_path,
        stages=ordered,
        seed=seed,
        part_size=part_size,
        labels=labels,
        sections=sections,
        report=report,
        validation=validation,
    )
    if check:
        check_config(config)
    return config


def check_config(config: RunConfig) -> None:
    """Every config-time check of every listed part stage (models resolve, inputs present)."""
    if config.labels is not None and not Path(config.labels).is_file():
        raise InputError(f"labels: {config.labels!r} does not exist{path_hint(config.labels)}; fix `labels:` in the config "
                         "(relative paths are relative to the config file's folder)")
    for name in PART_STAGES:
        if name in config.stages:
            get_stage(name).check_config(config)


def _yaml_error(path: Path, exc: yaml.YAMLError, text: str = "") -> ConfigError:
    mark = getattr(exc, "problem_mark", None)
    where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark is not None else str(path)
    problem = getattr(exc, "problem", None) or str(exc)
    return ConfigError(f"config file {where}: not valid YAML: {problem}{yaml_tab_hint(text)}")


def load_config(path: str | Path, overrides: Mapping[str, Any] | None = None, check: bool = True) -> RunConfig:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist{path_hint(path)}")
    text = path.read_text(encoding="utf-8")
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _yaml_error(path, exc, text) from exc
    if not isinstance(raw, Mapping):
        raise ConfigError(f"config file {str(path)!r}: expected a mapping at the top level, got {type(raw).__name__}")
    return config_from_mapping(raw, path.parent.resolve(), overrides, check=check)


def file_fingerprint(path: str) -> str:
    """sha256 of a file's bytes: a changed input is a changed run."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def config_hash(config: RunConfig, input_fingerprint: str) -> str:
    """The run's identity: the resolved config and the input's (and labels') content.

    Model files are not covered: a repaired model file keeps the run the same run, and the
    model's content hash or revision is recorded in the signatures instead.
    """
    labels = file_fingerprint(config.labels) if config.labels else ""
    payload = json.dumps(config.to_dict(), sort_keys=True, ensure_ascii=True) + "\n" + input_fingerprint + "\n" + labels
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
