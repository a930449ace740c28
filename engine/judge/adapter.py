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


def adapter_rank(path: str | Path) -> int:
    return int(json.loads((check_adapter(path) / "adapter_config.json").read_text(encoding="utf-8"))["r"])


def served_rank(rank: int) -> int:
    """The smallest LoRA rank limit vLLM accepts that holds `rank`."""
    return next(r for r in (1, 8, 16, 32, 64, 128, 256, 320, 512) if r >= rank)
