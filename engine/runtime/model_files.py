"""Whether a local model folder is whole: damaged or missing model files are bad input.

A copy cut short (a full disk, an interrupted download or rsync) leaves files that load
libraries report with raw tracebacks. Here each is found by reading only headers and sizes, so
config check can refuse it before any work, naming the file and what to do: `config.json`
missing or not JSON; a `*.safetensors` file whose header is damaged or that is shorter than its
header says; a shard index that is not JSON or names a missing shard; a torch zip `*.bin` cut
short; tokenizer JSON files that are not JSON, or a `tokenizer_config.json` without any vocabulary.

A hub id is not checked here (the hub's download checks it). Damage that appears after config
check shows when the model loads: the part fails with this error as its reason, and `--resume`
redoes it once the file is repaired (docs/running.md, docs/cluster.md).
"""
from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path
from typing import Any

from engine.errors import DamagedModelError

# Any one of these makes a tokenizer loadable (fast JSON, WordPiece, BPE, sentencepiece, tiktoken).
VOCABULARY_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "tokenizer.model", "spiece.model",
                    "sentencepiece.bpe.model", "source.spm", "vocab.model", "sentencepiece.model")
_FIX = "re-download or copy the model again (or point the config at a whole copy)"
_MAX_HEADER = 100 * 2**20  # the safetensors format's own limit on its JSON header
# JSON files a tokenizer loads when they are there; a copy cut short leaves them unparseable.
TOKENIZER_JSON_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
                        "added_tokens.json")


def _damaged(file: Path, what: str, where: str) -> DamagedModelError:
    prefix = f"{where}: " if where else ""
    return DamagedModelError(f"{prefix}model file {file} {what}; {_FIX}")


def safetensors_header(file: Path, where: str = "") -> dict[str, Any]:
    """The JSON header of one safetensors file, checked against the file's size."""
    try:
        size = file.stat().st_size
        with open(file, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise _damaged(file, f"is {size} bytes, too short for a safetensors header (damaged header)", where)
            (length,) = struct.unpack("<Q", head)
            if length > min(_MAX_HEADER, size - 8):
                raise _damaged(file, f"declares a {length}-byte header but holds {size} bytes (damaged header)", where)
            raw = fh.read(length)
    except OSError as exc:
        raise _damaged(file, f"cannot be read ({exc.strerror or exc})", where) from None
    try:
        header = json.loads(raw)
        if not isinstance(header, dict):
            raise ValueError("not an object")
        end = 0
        for name, info in header.items():
            if name != "__metadata__":
                end = max(end, int(info["data_offsets"][1]))
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise _damaged(file, f"has a damaged safetensors header ({type(exc).__name__}: {str(exc)[:120]})", where) from None
    if size < 8 + length + end:
        raise _damaged(file, f"is truncated: its header says {8 + length + end} bytes, the file holds {size}", where)
    return header


def check_model_dir(path: str | Path, where: str = "", tokenizer: bool = True) -> None:
    """DamagedModelError naming the first damaged or missing file of a local model folder."""
    folder = Path(path)
    if not folder.is_dir():
        return
    config = folder / "config.json"
    if not config.is_file():
        raise _damaged(config, "is missing (every model folder needs one)", where)
    if not isinstance(_json_file(config, where), dict):
        raise _damaged(config, "is JSON but not an object of settings", where)
    for file in sorted(folder.glob("*.safetensors")):
        safetensors_header(file, where)
    for index in sorted([*folder.glob("*.safetensors.index.json"), *folder.glob("*.bin.index.json")]):
        _check_index(index, where)
    for file in sorted(folder.glob("*.bin")):
        _check_torch_zip(file, where)
    if tokenizer:
        for name in TOKENIZER_JSON_FILES:
            if (folder / name).is_file():
                _json_file(folder / name, where)
    if tokenizer and (folder / "tokenizer_config.json").is_file():
        if not any((folder / name).is_file() for name in VOCABULARY_FILES) and not list(folder.glob("*.tiktoken")):
            raise _damaged(folder / "tokenizer.json", "is missing: tokenizer_config.json is there but no vocabulary "
                           f"file ({', '.join(VOCABULARY_FILES[:4])}, ...)", where)


def _json_file(file: Path, where: str) -> Any:
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _damaged(file, f"is not readable JSON ({type(exc).__name__}: {str(exc)[:120]})", where) from None


def _check_index(index: Path, where: str) -> None:
    """A sharded checkpoint's index: every shard it names is in the folder (the shards' own
    headers are checked with the other weight files)."""
    content = _json_file(index, where)
    weight_map = content.get("weight_map") if isinstance(content, dict) else None
    if not isinstance(weight_map, dict):
        raise _damaged(index, "has no weight_map object (damaged index)", where)
    for shard in sorted({str(v) for v in weight_map.values()}):
        if not (index.parent / shard).is_file():
            raise _damaged(index.parent / shard, f"is missing: {index.name} names it", where)


def _check_torch_zip(file: Path, where: str) -> None:
    """torch.save writes a zip archive whose directory is at the end: a cut copy has none."""
    try:
        with open(file, "rb") as fh:
            if fh.read(4) != b"PK\x03\x04":  # a legacy pickle (or not torch's): nothing to check cheaply
                return
        with zipfile.ZipFile(file) as archive:
            archive.infolist()
    except (OSError, zipfile.BadZipFile) as exc:
        raise _damaged(file, f"is cut short or damaged (its zip archive cannot be read: {exc})", where) from None
