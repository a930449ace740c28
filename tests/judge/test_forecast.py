"""The judge forecast before any call: calls counted from the input's files, prompt tokens with
the judge's own tokenizer and chat template (transformers' count of the same messages is the
anchor), completion tokens at most max_tokens, cost at the configured prices."""
from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest

from engine.judge.forecast import estimate_tokens, forecast, forecast_lines
from engine.judge.judging import plan
from engine.judge.params import JudgeParams
from engine.records import SAMPLE_SCHEMA
from engine.testing.tiny_chat import build_tiny_chat_model

PRICE = {"input": 0.5, "output": 2.0}


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> str:
    return build_tiny_chat_model(tmp_path_factory.mktemp("forecast_chat"))


def _samples(n_files: int) -> pa.Table:
    rows = []
    for i in range(n_files):
        comment = f"// Returns the size of list {i}."
        source = f"class L{i} {{\n    {comment}\n    int size() {{ return n; }}\n}}\n"
        start = source.index(comment)
        for generator in ("a-model", "b-model"):
            rows.append(dict(sample_id=f"{i}/{generator}", file_id=f"f{i}", language=("en", "nl", "pl")[i % 3], source=source,
                             comment_start=start, comment_end=start + len(comment), reference=comment, generator=generator,
                             prime="// Returns", prediction=f" {generator} {i}."))
    return pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA)


def test_calls_tokens_and_cost_before_any_call(tokenizer_dir) -> None:
    from transformers import AutoTokenizer

    judge = JudgeParams.from_mapping(dict(model="served", backend="http", base_url="http://127.0.0.1:9/v1",
                                          tokenizer=tokenizer_dir, strategies=["standard", "hierarchical"],
                                          prompt_languages=["sample", "en"], max_tokens={"standard": 100, "hierarchical": 40},
                                          price_per_million=PRICE))
    table = _samples(6)
    rows = forecast(table, [judge], sample_files=6)
    anchor = AutoTokenizer.from_pretrained(tokenizer_dir)
    calls: Counter = Counter()
    tokens: Counter = Counter()
    for entry in plan(table, judge):
        for _rid, call in entry.calls:
            calls[(entry.strategy, entry.prompt_language)] += 1
            # as an OpenAI-compatible server counts: the template's text, then its tokens
            text = anchor.apply_chat_template(list(call.messages), add_generation_prompt=True, tokenize=False)
            tokens[(entry.strategy, entry.prompt_language)] += len(anchor(text, add_special_tokens=False)["input_ids"])
    got = {(r.strategy, r.prompt_language): r for r in rows}
    assert set(got) == set(calls)
    # `sample` and `en` coincide on the English files: 2 en + 4 (nl, pl) files in English, one call each
    assert got[("standard", "en")].calls == 6 and got[("hierarchical", "en")].calls == 6 * 7
    for key, row in got.items():
        assert row.calls == calls[key] and row.prompt_tokens == tokens[key]
        assert row.completion_max == row.calls * judge.max_tokens_for(row.strategy)
        assert row.cost_max == pytest.approx((row.prompt_tokens * 0.5 + row.completion_max * 2.0) / 1e6)
        assert row.counted == f"tokenizer {tokenizer_dir}"
    # counted on 3 of 6 files and scaled by calls: near the whole count
    scaled = sum(r.prompt_tokens for r in forecast(table, [judge], sample_files=3))
    assert abs(scaled / sum(tokens.values()) - 1) < 0.10
    lines = forecast_lines(rows)
    assert lines[-1].startswith(f"judge forecast: {sum(calls.values()):,} calls")
    assert any(line.split()[:3] == ["served", "hierarchical", "en"] for line in lines)


def test_without_a_tokenizer_the_estimate_is_stated() -> None:
    judge = JudgeParams.from_mapping(dict(model="served", backend="http", base_url="http://127.0.0.1:9/v1"))
    [row] = forecast(_samples(1), [judge])
    assert row.counted == "estimate" and row.cost_max is None
    messages = ({"role": "system", "content": "abcdefg"}, {"role": "user", "content": "κόσμε"})  # 7 + 10 bytes
    assert estimate_tokens(messages) == round(17 / 3.5 + 2 * 6)
    assert "estimated" in forecast_lines([row])[-1]
