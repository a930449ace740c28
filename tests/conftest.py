"""Shared fixtures: small sample tables in the input schema, and a quiet environment."""
from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("BABELSCORE_NO_PROGRESS", "1")
# Tiny models gain nothing from intra-op threads, and on a busy 2-core machine the threads
# of torch (and of Ray workers, which inherit this) spin against each other.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def make_sample(sample_id: str, prediction: str | None = "returns the user name.", **changes: Any) -> dict[str, Any]:
    """A valid input row; `changes` override fields."""
    source = "class User {\n    // Returns the name of the user.\n    String name() { return name; }\n}\n"
    reference = "// Returns the name of the user."
    start = source.index(reference)
    row = {
        "sample_id": sample_id,
        "file_id": sample_id.split("/")[0],
        "language": "en",
        "source": source,
        "comment_start": start,
        "comment_end": start + len(reference),
        "reference": reference,
        "generator": "gen-a",
        "prime": "// Returns the",
        "prediction": prediction,
        "label": "correct",
        "error_codes": None,
    }
    row.update(changes)
    return row


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


@pytest.fixture
def sample_factory():
    return make_sample


def write_demo_subset(path: Path, files_per_language: int, shuffle_seed: int | None = None) -> Path:
    """The first `files_per_language` files of each language of the embedded demo data, as JSONL
    (rows shuffled with `shuffle_seed` when given)."""
    import random

    from engine.config import BUILTIN_INPUTS

    rows = [json.loads(line) for line in BUILTIN_INPUTS["demo"].read_text(encoding="utf-8").splitlines()]
    keep: dict[str, list[str]] = {}
    for row in rows:
        files = keep.setdefault(row["language"], [])
        if row["file_id"] not in files and len(files) < files_per_language:
            files.append(row["file_id"])
    subset = [r for r in rows if r["file_id"] in keep[r["language"]]]
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(subset)
    return write_jsonl(path, subset)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under `-m "not heavy"` a heavy module is not even imported: every test of it would be
    deselected anyway, and importing Ray, vLLM and the rest costs a minute on 2 cores."""
    from _tiers import HEAVY_MODULES

    if config.getoption("markexpr", "").strip() == "not heavy" and collection_path.name in HEAVY_MODULES:
        return True
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks `heavy` what tests/_tiers.py classifies so (`make test-fast` deselects it)."""
    from _tiers import is_heavy

    for item in items:
        if is_heavy(item.nodeid, {m.name for m in item.iter_markers()}):
            item.add_marker(pytest.mark.heavy)


@pytest.fixture(scope="module", autouse=True)
def _release_models_after_module():
    """Models (and vLLM worker processes) of one test module never stay loaded for the next."""
    yield
    from engine.runtime.model_registry import model_registry, release_all_models

    release_all_models()
    model_registry().take_records()  # the next module's record checks see only its own loads


def send_body(handler: Any, data: bytes, status: int = 200) -> None:
    """Answer a request of a `local_http_server` handler with `data` as the whole body."""
    handler.send_response(status)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@contextlib.contextmanager
def local_http_server(handler: type, path: str = "/v1"):
    """A threaded HTTP server on a free local port answering with `handler`; yields its base URL
    (`path` appended). Shut down and closed on exit."""
    from http.server import ThreadingHTTPServer

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}{path}"
    finally:
        httpd.shutdown()
        httpd.server_close()
