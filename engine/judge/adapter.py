"""A judge's LoRA adapter (`lora: PATH`): checked, and named by its content.

An adapter is a folder as peft writes it (adapter_config.json and the weights). Its identity
is the sha256 of those files' bytes, so a retrained adapter at the same path is another judge
(another task name and signature), never taken for the earlier one's judgments.
"""
from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

from engine.errors import ConfigError

_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")


def check_adapter(path: str | Path) -> Path:
    folder = Path(path)
    if not (folder / "adapter_config.json").is_file():
        raise ConfigError(f"lora: {str(path)!r} is no LoRA adapter folder (no adapter_config.json there); give the "
                          "folder peft's save_pretrained wrote, e.g. RUN/finetune/adapters/<language>/adapter")
    if not any((folder / name).is_file() for name in _WEIGHTS):
        raise ConfigError(f"lora: {str(path)!r} has adapter_config.json but no weights ({' or '.join(_WEIGHTS)})")
    return folder


def adapter_hash(path: str | Path) -> str:
    """16 hex digits of sha256 over the adapter's config and weights."""
    folder = check_adapter(path)
    files = [folder / "adapter_config.json", *[folder / n for n in _WEIGHTS if (folder / n).is_file()]]
    return _hash_files(tuple(str(f) for f in files), tuple(f.stat().st_mtime_ns for f in files))


@lru_cache(maxsize=64)
def _hash_files(files: tuple[str, ...], _mtimes: tuple[int, ...]) -> str:
    digest = hashlib.sha256()
    for file in files:
        data = Path(file).read_bytes()
        if file.endswith(".json"):  # peft writes target_modules from a set: its order varies between processes
            config = json.loads(data)
            if isinstance(config.get("target_modules"), list):
                config["target_modules"] = sorted(config["target_modules"])
            data = json.dumps(config, sort_keys=True).encode("utf-8")
        digest.update(Path(file).name.encode("utf-8"))
        digest.update(data)
    return digest.hexdigest()[:16]


def _model_tail(name: str) -> str:
    """A model's name without its location: `demo:x`, `org/x`, `/some/dir/x` and a hub cache's
    `models--org--x/snapshots/<commit>` are all `x`."""
    parts = [p for p in name.replace("\\", "/").split("/") if p]
    for i, part in enumerate(parts):
        if part.startswith("models--") and i + 1 < len(parts) and parts[i + 1] == "snapshots":
            return part.rsplit("--", 1)[-1].lower()
    return (parts[-1] if parts else name).split(":")[-1].lower()


def check_adapter_base(path: str | Path, model: str, where: str = "lora") -> None:
    """ConfigError when the adapter was trained on another base model than `model`.

    peft records the base in adapter_config.json (`base_model_name_or_path`: the path the
    trainer loaded). An adapter of another model of the same shapes loads without complaint
    and answers with nonsense, and one of other shapes fails deep in the engine, so the two
    are compared here: the same name or path, the same content identity when the recorded base
    is a local folder, else (the adapter moved to another machine) the same model name."""
    from engine.errors import ModelLoadError
    from engine.runtime import resolve_model

    config = json.loads((check_adapter(path) / "adapter_config.json").read_text(encoding="utf-8"))
    base = config.get("base_model_name_or_path")
    if not base:
        return
    try:
        judge = resolve_model(model)
    except ModelLoadError:
        return  # the model's own check reports it
    if base in (model, judge.path):
        return
    if Path(base).is_dir():
        try:
            if resolve_model(str(base)).identity == judge.identity:
                return
        except ModelLoadError:
            pass
    elif _model_tail(base) in (_model_tail(model), _model_tail(judge.path)):
        return
    raise ConfigError(f"{where}: the adapter {str(path)!r} was trained on {base!r}, not on the judge's model {model!r}; "
                      "give the model the adapter was trained on (its adapter_config.json's base_model_name_or_path) "
                      "or an adapter trained on this model")


def adapter_rank(path: str | Path) -> int:
    return int(json.loads((check_adapter(path) / "adapter_config.json").read_text(encoding="utf-8"))["r"])


def served_rank(rank: int) -> int:
    """The smallest LoRA rank limit vLLM accepts that holds `rank`."""
    return next(r for r in (1, 8, 16, 32, 64, 128, 256, 320, 512) if r >= rank)
