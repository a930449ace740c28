"""Run configs: YAML -> frozen, validated `RunConfig`, and the config hash that names a run.

Sections are parsed by their stage (`Stage.parse_section`; parameter classes are imported
lazily so a lexical-only run never imports torch). Unknown keys and bad values fail here, before
any work, with the key, the value and what is allowed; then every stage's config-time checks run
(model and tokenizer names resolve, sections belong to listed stages).

The top-level `seed` is the default seed of every stage that declares `seeded`; a section's own
`seed` overrides it. The judges keep their own seed (the judge stage says why).
Relative paths are resolved against the config file's folder by one function,
`engine.params.config_path`: `input`, `labels`, `reuse` (and the judge's prompt packs and
adapters) whatever their spelling; the values of each stage's `path_options`, which may also be
hub ids, only when they start with ./ or ../, in nested entries too (`resolve_path_options`).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from engine import demo
from engine.data.params import ValidationParams
from engine.errors import ConfigError, InputError
from engine.hints import did_you_mean, path_hint, yaml_tab_hint
from engine.numerics import DeterministicParams, parse_deterministic
from engine.params import config_path, error_messages, raise_all
from engine.stages import registry
from engine.stages.base import RunSettings, Stage
from engine.stages.registry import DEFAULT_STAGES, build_stage, get_stage

BUILTIN_INPUTS = {"demo": Path(__file__).parent / "data" / "demo" / "samples.jsonl"}


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
    validation: ValidationParams = ValidationParams()
    # Earlier run directories whose finished results this run takes (engine.reuse). Not part
    # of the run's identity: reuse never changes a row, so it stays out of to_dict and the hash.
    reuse: tuple[str, ...] = ()
    # engine.numerics: thread count and batching of neural scorers (`deterministic:`).
    deterministic: DeterministicParams = DeterministicParams()

    def settings(self) -> RunSettings:
        """What a part reads of the run as a whole (engine.stages.base.RunSettings)."""
        return RunSettings(labels=self.labels, reuse=self.reuse)

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
        out["validation"] = self.validation.to_dict()
        if not self.deterministic.is_default:  # absent when default: older runs keep their hash
            out["deterministic"] = self.deterministic.to_dict()
        return out


RUN_KEYS = ("name", "input", "labels", "stages", "seed", "part_size", "validation", "reuse", "deterministic")


def section_names() -> tuple[str, ...]:
    """Section keys of the registered stages, read from the registry when asked (so a stage
    registered at run time, e.g. by a test, is known)."""
    return tuple(stage.name for stage in registry.listed() if stage.section)


def top_level_keys() -> set[str]:
    return {*RUN_KEYS, *section_names()}


def built_stages(config: RunConfig) -> list[Stage]:
    """The listed stages in run order, each built from its own section of `config`."""
    return [build_stage(s.name, config.section(s.name) if s.section else None) for s in registry.listed(config.stages)]


def resolve_path_options(options: Mapping[str, Any], base_dir: Path, keys: tuple[str, ...]) -> dict[str, Any]:
    """The one rule for relative paths in sections: a string value of an option named in `keys`
    (a stage's `path_options`) that starts with ./ or ../ is resolved against `base_dir` (the
    config file's folder); other values (hub ids, built-in names, absolute paths) are kept.
    Nested entries (lists of mappings, mappings) are resolved by the same rule."""
    out = dict(options)
    for key, value in out.items():
        if key in keys and isinstance(value, str) and value.startswith(("./", "../")):
            out[key] = config_path(value, base_dir)
        elif isinstance(value, Mapping):
            out[key] = resolve_path_options(value, base_dir, keys)
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            out[key] = [resolve_path_options(v, base_dir, keys) for v in value]
    return out


def resolve_input(value: str, base_dir: Path, key: str = "input") -> str:
    if value.startswith("builtin:"):
        name = value.split(":", 1)[1]
        if name not in BUILTIN_INPUTS:
            raise ConfigError(f"{key}: got {value!r}; allowed builtin inputs: {sorted('builtin:' + k for k in BUILTIN_INPUTS)}")
        return str(BUILTIN_INPUTS[name])
    return config_path(value, base_dir)


def _parse_section(name: str, options: Any, base_dir: Path, seed: int) -> Any:
    stage = get_stage(name)
    if isinstance(options, Mapping):
        options = stage.with_run_seed(resolve_path_options(options, base_dir, stage.path_options), seed)
    return stage.parse_section(options if options is not None else {}, base_dir, name)


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
    demo.install_builder()  # a config may name `demo:` models; its checks build them on first use
    STAGE_ORDER, SECTION_NAMES, TOP_LEVEL_KEYS = tuple(registry.STAGES), section_names(), top_level_keys()
    errors: list[str] = []  # every mistake found, reported together (one pass, not one round per mistake)

    def collect(parse: Callable[[], Any], default: Any = None) -> Any:
        try:
            return parse()
        except ConfigError as exc:
            errors.extend(error_messages(exc))
            return default

    for key in sorted(set(raw) - TOP_LEVEL_KEYS):
        errors.append(f"{key}: unknown top-level key (value {raw[key]!r}){did_you_mean(key, TOP_LEVEL_KEYS)}; "
                      f"allowed: {sorted(TOP_LEVEL_KEYS)}")
        raw.pop(key)
    stages = raw.get("stages", list(DEFAULT_STAGES))
    if not isinstance(stages, list) or not stages:
        errors.append(f"stages: got {stages!r}; allowed: a non-empty list drawn from {list(STAGE_ORDER)}")
        stages = []
    for stage in stages:
        if stage not in STAGE_ORDER:
            errors.append(f"stages: got {stage!r}{did_you_mean(stage, STAGE_ORDER)}; allowed: {list(STAGE_ORDER)}")
    ordered = tuple(s for s in STAGE_ORDER if s in stages)
    if list(ordered) != [s for s in stages if s in STAGE_ORDER]:
        errors.append(f"stages: got {stages!r}; stages run in the order {list(STAGE_ORDER)}, list them in that order")
    if errors and not ordered:
        raise_all(errors)  # the sections cannot be checked without the stages they belong to
    for section in SECTION_NAMES:
        if section in raw and section not in ordered:
            errors.append(
                f"{section}: the config has a `{section}:` section but `stages` ({list(ordered)}) does not list "
                f"{section!r}; add it to stages or remove the section"
            )
    name = raw.get("name", "run")
    if not isinstance(name, str) or not name:
        errors.append(f"name: got {name!r}; allowed: a non-empty string")
    seed = collect(lambda: _int_option(raw, "seed", 0, None, "an integer"), 0)
    part_size = collect(lambda: _int_option(raw, "part_size", 64, 1, "a positive integer (samples per part; a file never spans two parts)"), 64)
    input_value = raw.get("input")
    input_path = ""
    if not registry.listed(ordered, kind="source"):  # a source stage makes the input: then no `input:`
        if not isinstance(input_value, str) or not input_value:
            errors.append("input: required key is missing; give a Parquet or JSONL sample table (or builtin:demo)")
        else:
            input_path = collect(lambda: resolve_input(input_value, base_dir), "")
    labels = raw.get("labels")
    if labels is not None:
        if not isinstance(labels, str) or not labels:
            errors.append(f"labels: got {labels!r}; allowed: a Parquet or JSONL table of file_id, generator, label, error_codes")
        else:
            labels = collect(lambda: resolve_input(labels, base_dir, key="labels"))
    sections: dict[str, Any] = {}
    for section in SECTION_NAMES:
        if section in ordered:
            options = raw.get(section) if raw.get(section) is not None else {}
            sections[section] = collect(lambda section=section, options=options: _parse_section(section, options, base_dir, seed))
    reuse = collect(lambda: parse_reuse(raw.get("reuse"), base_dir), ())
    validation = collect(lambda: ValidationParams.from_mapping(raw.get("validation") or {}, where="validation"))
    deterministic = collect(lambda: parse_deterministic(raw.get("deterministic")))
    if errors and input_path and not Path(input_path).is_file():  # said with the config errors, not a round later
        errors.append(f"input: {input_path!r} does not exist or is not a file{path_hint(input_path)}; fix `input:` "
                      "(relative paths are relative to the config file's folder)")
    raise_all(errors)
    config = RunConfig(
        name=name,
        input=input_path,
        stages=ordered,
        seed=seed,
        part_size=part_size,
        labels=labels,
        sections=sections,
        validation=validation,
        reuse=reuse,
        deterministic=deterministic,
    )
    if check:
        check_config(config)
    return config


def parse_reuse(value: Any, base_dir: Path) -> tuple[str, ...]:
    """`reuse:` (one earlier run directory or a list of them), relative to the config's folder."""
    if value is None:
        return ()
    paths = [value] if isinstance(value, str) else value
    if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        raise ConfigError(f"reuse: got {value!r}; allowed: an earlier run directory or a list of them")
    return tuple(config_path(p, base_dir) for p in paths)


def check_config(config: RunConfig) -> None:
    """Every config-time check of every listed part stage (models resolve, inputs present), all
    reported in one pass: a ConfigError when any is a config mistake, else an InputError."""
    config_errors: list[str] = []
    input_errors: list[str] = []
    if config.labels is not None and not Path(config.labels).is_file():
        input_errors.append(f"labels: {config.labels!r} does not exist{path_hint(config.labels)}; fix `labels:` in the config "
                            "(relative paths are relative to the config file's folder)")
    for stage in built_stages(config):
        try:
            stage.check_config()
        except ConfigError as exc:
            config_errors.extend(error_messages(exc))
        except InputError as exc:
            input_errors.append(str(exc))
    if config_errors:
        raise_all(config_errors + input_errors)
    raise_all(input_errors, InputError, "input errors")


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
    resolved = config.to_dict()
    for name, section in config.sections.items():  # caps and prices are policy: a raised cap is the same run
        resolved[name] = section.to_dict(identity=True)
    # How many rejected rows a run may have is an exit-status policy, not an input to any number.
    resolved["validation"].pop("max_rejected", None)
    payload = json.dumps(resolved, sort_keys=True, ensure_ascii=True) + "\n" + input_fingerprint + "\n" + labels
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
