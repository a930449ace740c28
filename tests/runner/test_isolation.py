"""One way to isolate failures (engine.isolation) and one retry policy (engine.executors.base):
a bad item becomes its row's error, out of memory halves the batch and, at one item, fails the
part, which the executor retries and then records as failed (never as result rows)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from engine.errors import ModelLoadError, PartFailedError, TransientError
from engine.executors.base import RetryPolicy
from engine.isolation import ItemFailure, run_isolated


def _oom() -> torch.cuda.OutOfMemoryError:
    return torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")


def test_a_failing_item_gets_its_error_and_the_others_their_results() -> None:
    calls: list[int] = []

    def square(batch):
        calls.append(len(batch))
        if 3 in batch:
            raise ValueError("three is bad")
        return [x * x for x in batch]

    results = run_isolated(square, [1, 2, 3, 4])
    assert results[:2] == [1, 4] and results[3] == 16
    assert isinstance(results[2], ItemFailure) and results[2].error == "ValueError: three is bad"
    assert calls == [4, 1, 1, 1, 1]


def test_out_of_memory_halves_the_batch_until_it_fits() -> None:
    halved: list[int] = []

    def fits_two(batch):
        if len(batch) > 2:
            raise _oom()
        return [x + 1 for x in batch]

    assert run_isolated(fits_two, list(range(8)), on_halve=halved.append) == list(range(1, 9))
    assert halved == [8, 4, 4]


@pytest.mark.parametrize("error", [_oom(), TransientError("device lost"), ModelLoadError("no weights")])
def test_part_failures_are_never_row_errors(error: BaseException) -> None:
    def fails(batch):
        raise error

    with pytest.raises((TransientError, ModelLoadError)):
        run_isolated(fails, [1, 2, 3])


def test_one_retry_policy() -> None:
    policy = RetryPolicy(max_attempts=3)
    assert policy.is_retried(TransientError("oom")) and not policy.is_retried(ValueError("bug"))
    assert [policy.try_again(a, True) for a in (1, 2, 3)] == [True, True, False]
    assert RetryPolicy(retry_exceptions=True).is_retried(ValueError("flaky"))
    from engine.executors.ray import RayExecutor

    assert RayExecutor(max_retries=4, retry_exceptions=True).retry == RetryPolicy(5, True)


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> str:
    from engine.testing.tiny_lm import build_tiny_causal_lm

    return build_tiny_causal_lm(tmp_path_factory.mktemp("lm") / "tiny")


def test_roundtrip_out_of_memory_at_batch_size_one_is_retried_then_a_failed_part(
    tmp_path: Path, tiny_lm: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.config import config_from_mapping
    from engine.llm.transformers_backend import TransformersBackend
    from engine.runner import execute_run
    from tests.support.roundtrip_tasks import roundtrip_config

    attempts: list[int] = []

    def out_of_memory(self, requests, stop_ids):
        attempts.append(len(requests))
        raise _oom()

    monkeypatch.setattr(TransformersBackend, "generate", out_of_memory)
    raw = roundtrip_config(tmp_path, {"languages": ["en"], "generators": [{"model": tiny_lm, "name": "tiny", "max_new_tokens": 8}]},
                  part_size=4)
    with pytest.raises(PartFailedError, match="1 part"):
        execute_run(config_from_mapping(raw, tmp_path), str(tmp_path / "run"))
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    (key,) = manifest["failed_parts"]
    assert key.startswith("roundtrip/") and manifest["failed_parts"][key]["attempts"] == 3
    assert "TransientError" in manifest["failed_parts"][key]["error"]
    assert not manifest["parts"] and not list((tmp_path / "run").glob("roundtrip/*.parquet"))
    # each attempt: the 4 tasks' regeneration prompts, halved down to one prompt
    assert attempts == [4, 2, 1] * 3


def test_a_judge_call_that_fails_alone_is_an_api_error_and_the_other_calls_are_judged() -> None:
    from engine.judge.judging import judge_table
    from engine.judge.params import JudgeSection
    from tests.support.judge_answers import Scripted, judge_samples

    class OneBadCall(Scripted):
        def chat(self, requests):
            if any(r.request_id.startswith("f3|") for r in requests):
                raise ValueError("prompt too long for the model")
            return super().chat(requests)

    judge = JudgeSection.from_mapping({"judges": [{"model": "served", "backend": "http", "base_url": "http://x/v1",
                                                    "name": "j"}]}).judges[0]
    rows = judge_table(judge_samples(), judge, "judge-j", OneBadCall()).to_pylist()
    by_file = {r["file_id"]: r for r in rows}
    assert by_file["f3"]["parse_status"] == "api_error" and "prompt too long" in by_file["f3"]["error"]
    assert by_file["f1"]["parse_status"] == "ok" and by_file["f1"]["label"] is not None
    with pytest.raises(TransientError):
        class OutOfMemory(Scripted):
            def chat(self, requests):
                raise _oom()

        judge_table(judge_samples(), judge, "judge-j", OutOfMemory())
