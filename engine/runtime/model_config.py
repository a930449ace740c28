"""A model's config.json as it is on disk, read without loading the model or transformers.

For the memory plan (parameters, KV cache) and the dtype probe (the shape of its linear layers).
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any


def local_model_path(model: str) -> Path | None:
    """The model's local folder (a directory, or a hub id's cached snapshot); None when not on disk."""
    from engine.runtime.names import resolve_model

    try:
        resolved = resolve_model(model, "model")
    except Exception:  # noqa: BLE001 - unresolvable here: no estimate (config check names it elsewhere)
        return None
    path = Path(resolved.path)
    if path.is_dir():
        return path
    try:  # a hub id already in the local cache
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(resolved.path, revision=resolved.revision, local_files_only=True,
                                      allow_patterns=["config.json", "*.safetensors"]))
    except Exception:  # noqa: BLE001 - not cached: no estimate
        return None


def read_model_config(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """Multimodal configs nest the language model's numbers."""
    return config.get("text_config") or config


@functools.lru_cache(maxsize=256)
def linear_features(model: str) -> tuple[int, int] | None:
    """(hidden, intermediate) of the model's feed-forward layer from its config.json (intermediate
    4 x hidden where the config does not say); None when the model or its config is not here."""
    path = local_model_path(model)
    config = read_model_config(path) if path is not None else None
    if config is None:
        return None
    c = text_config(config)
    hidden = c.get("hidden_size") or c.get("d_model") or c.get("n_embd") or c.get("dim")
    if not isinstance(hidden, int) or hidden <= 0:
        return None
    inner = c.get("intermediate_size") or c.get("d_ff") or c.get("encoder_ffn_dim") or c.get("n_inner") or c.get("hidden_dim")
    return hidden, inner if isinstance(inner, int) and inner > 0 else 4 * hidden
