"""Whether a local model folder is whole: damaged or missing model files are bad input.

A copy cut short (a full disk, an interrupted download or rsync) leaves files that load
libraries report with raw tracebacks (a JSONDecodeError from the safetensors header, a
SafetensorError deep in a worker). Here each is found by reading only headers and sizes,
so config check can refuse it before any work, naming the file and what to do:

- `config.json` missing or not JSON;
- a `*.safetensors` file whose 8-byte header length or JSON header is damaged;
- a `*.safetensors` file shorter than its header says (the weights were cut short);
- a tokenizer whose `tokenizer_config.json` is there without any vocabulary file
  (tokenizer.json, vocab.txt, vocab.json, a sentencepiece model...).

A folder that is not a local directory (a hub id) is not checked here: the hub's download
checks it. Damage that appears after config check (a file changed under a running sweep, a
node with another copy) shows when the model loads: the part fails with this error as its
reason, and `--resume` redoes it once the file is repaired.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from engine.errors import DamagedModelError

# Any one of these makes a tokenizer loadable (fast JSON, WordPiece, BPE, sentencepiece, tiktoken).
VOCABULARY_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "tokenizer.model", "spiece.model",
                    "sentencepiece.bpe.model", "source.spm", "vocab.model", "sentencepiece.model")
_FIX = "re-download or copy the model again (or point the config at a whole copy)"
_MAX_HEADER = 100 * 2**20  # the safetensors format's own limit on its JSON header


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
    try:
        json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _damaged(config, f"is not readable JSON ({type(exc).__name__}: {str(exc)[:120]})", where) from None
    for file in sorted(folder.glob("*.safetensors")):
        safetensors_header(file, where)
    if tokenizer and (folder / "tokenizer_config.json").is_file():
        if not any((folder / name).is_file() for name in VOCABULARY_FILES) and not list(folder.glob("*.tiktoken")):
            raise _damaged(folder / "tokenizer.json", "is missing: tokenizer_config.json is there but no vocabulary "
                           f"file ({', '.join(VOCABULARY_FILES[:4])}, ...)", where)
