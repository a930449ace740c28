"""The rendered prompt of every judge call, on record: RUN/judge_prompts/<id>.json.

A prompt's id is the SHA-256 (first 16 hex digits) of its messages in a canonical JSON form,
so a prompt sent again (a retried or resumed part, the same file and setup in another judge
task) is stored once, and each judgment row links its call(s) by id (column `prompt_ids`). The file holds exactly what the backend was sent as
messages: `{"id": ..., "messages": [{"role": ..., "content": ...}, ...]}`; `babelscore judge
render` prints the same object for the same call.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

PROMPTS_DIR = "judge_prompts"


def prompt_id(messages: Sequence[dict[str, str]]) -> str:
    canonical = json.dumps(list(messages), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def prompt_record(messages: Sequence[dict[str, str]]) -> dict[str, Any]:
    return {"id": prompt_id(messages), "messages": [dict(m) for m in messages]}


def store_prompt(run_root: str | Path, messages: Sequence[dict[str, str]]) -> str:
    """Write the prompt once (temporary file + rename, so a crash never leaves half a file); return its id."""
    record = prompt_record(messages)
    folder = Path(run_root) / PROMPTS_DIR
    path = folder / f"{record['id']}.json"
    if path.is_file():
        return record["id"]
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=folder, suffix=".tmp", delete=False) as handle:
        json.dump(record, handle, ensure_ascii=False, indent=1)
        handle.write("\n")
    os.replace(handle.name, path)  # two workers storing one prompt write the same bytes
    return record["id"]


def read_prompt(run_root: str | Path, pid: str) -> dict[str, Any]:
    return json.loads((Path(run_root) / PROMPTS_DIR / f"{pid}.json").read_text(encoding="utf-8"))
