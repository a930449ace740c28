"""Context settings, span -> token masks and model windows (engine/context.py)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.context import (
    SpanText,
    TokenWindow,
    candidate_text,
    plan_windows,
    reference_text,
    span_token_mask,
)
from engine.items import ScoreItem
from tests.support import tiny_encoders

SOURCE = "class A {\n    // Returns the sum\n    int f() { return 1; }\n}\n"
START = SOURCE.index("//")
END = SOURCE.index("\n", START)


def make_item(prime: str = "// Returns", prediction: str = " a total") -> ScoreItem:
    return ScoreItem("s", "f", "en", "g", "none", SOURCE, START, END, SOURCE[START:END], prime, prediction)


# ------------------------------------------------------------------ span texts
@pytest.mark.parametrize("prime", ["", "// Returns"])
def test_span_texts_per_setting(prime: str) -> None:
    item = make_item(prime)
    tail = SOURCE[START + len(prime):END]
    assert candidate_text(item, "none") == SpanText(" a total", 0, 8)
    assert reference_text(item, "none") == SpanText(tail, 0, len(tail))
    c = candidate_text(item, "minimal")
    assert c.text == prime + " a total" and c.span == " a total"
    r = reference_text(item, "minimal")
    assert r.text == SOURCE[START:END] and r.span == tail
    c = candidate_text(item, "full")
    assert c.text == SOURCE[:START] + prime + " a total" + SOURCE[END:]
    assert c.span == " a total" and c.span_start == START + len(prime)
    r = reference_text(item, "full")
    assert r.text == SOURCE and (r.span_start, r.span_end) == (START + len(prime), END) and r.span == tail


def test_span_text_rejects_bad_spans_and_settings() -> None:
    with pytest.raises(ValueError, match="span"):
        SpanText("abc", 2, 5)
    with pytest.raises(ValueError, match="context"):
        candidate_text(make_item(), "everything")  # type: ignore[arg-type]


# ------------------------------------------------------------------ masks
offsets_strategy = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 60)).map(lambda t: (min(t), max(t))), max_size=30
)


@given(offsets=offsets_strategy, a=st.integers(0, 60), b=st.integers(0, 60))
def test_mask_is_character_overlap(offsets: list[tuple[int, int]], a: int, b: int) -> None:
    start, end = min(a, b), max(a, b)
    mask = span_token_mask(offsets, start, end)
    span_chars = set(range(start, end))
    for (s, e), m in zip(offsets, mask):
        assert m == bool(set(range(s, e)) & span_chars)  # shares at least one character


def test_mask_boundaries_and_special_tokens() -> None:
    offsets = [(0, 0), (0, 3), (3, 6), (5, 9), (9, 12), (0, 0)]
    # (3,6) touches nothing at 6..; (5,9) straddles the start; (9,12) starts at the end
    assert span_token_mask(offsets, 6, 9) == [False, False, False, True, False, False]
    assert span_token_mask(offsets, 0, 12) == [False, True, True, True, True, False]
    assert span_token_mask(offsets, 4, 4) == [False] * 6  # an empty span selects nothing


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return {"wordpiece": tiny_encoders.bert_tokenizer(), "bpe": tiny_encoders.roberta_tokenizer()}


texts = st.text(alphabet=st.sampled_from(list("abcdehnpstuy ,.;ΑΒγδ中文ąęł")), max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prefix=texts, span=texts, suffix=texts, which=st.sampled_from(["wordpiece", "bpe"]))
def test_mask_on_real_tokenizers(tokenizers: dict, prefix: str, span: str, suffix: str, which: str) -> None:
    """The masked tokens of prefix+span+suffix are exactly those whose characters overlap the span."""
    tok = tokenizers[which]
    text = prefix + span + suffix
    enc = tok(text, add_special_tokens=True, return_offsets_mapping=True)
    lo, hi = len(prefix), len(prefix) + len(span)
    mask = span_token_mask(enc["offset_mapping"], lo, hi)
    special = set(tok.all_special_ids)
    for (s, e), token_id, m in zip(enc["offset_mapping"], enc["input_ids"], mask):
        if token_id in special and s == e:
            assert not m
        else:
            assert m == (lo < hi and s < hi and e > lo and e > s)
        if m:
            assert text[s:e].strip() == "" or any(lo <= c < hi for c in range(s, e))


def test_boundary_merge_differs_from_separate_tokenisation(tokenizers: dict) -> None:
    """`unhappy` with the span on `happy`: whole-text tokens are `un ##happy`, separate ones `un happy`."""
    tok = tokenizers["wordpiece"]
    prefix, span, suffix = "the un", "happy", " cats"
    text = prefix + span + suffix
    whole = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    separate = [tok(p, add_special_tokens=False)["input_ids"] for p in (prefix, span, suffix)]
    assert sum(separate, []) != whole["input_ids"]  # the case the offset masks exist for
    mask = span_token_mask(whole["offset_mapping"], len(prefix), len(prefix) + len(span))
    chosen = [t for t, m in zip(tok.convert_ids_to_tokens(whole["input_ids"]), mask) if m]
    assert chosen == ["##happy"]


# ------------------------------------------------------------------ windows
@given(n=st.integers(0, 300), a=st.integers(0, 300), b=st.integers(0, 300), max_tokens=st.integers(1, 64))
def test_windows_cover_the_span_once(n: int, a: int, b: int, max_tokens: int) -> None:
    start, end = sorted((min(a, n), min(b, n)))
    windows = plan_windows(n, start, end, max_tokens)
    assert windows
    scored: list[int] = []
    for w in windows:
        assert 0 <= w.start <= w.score_start <= w.score_end <= w.end <= n
        assert w.end - w.start <= max_tokens
        scored.extend(range(w.score_start, w.score_end))
    assert scored == list(range(start, end))  # a partition, in order
    if end - start <= max_tokens:
        (w,) = windows
        assert w.end - w.start == min(max_tokens, n)  # as much context as fits
        left, right = start - w.start, w.end - end
        if w.start > 0 and w.end < n:
            assert abs(left - right) <= 1  # centred unless clipped at a text end


def test_long_span_windows_overlap_with_half_stride() -> None:
    windows = plan_windows(1000, 100, 900, 128)
    starts = [w.start for w in windows]
    assert all(b - a == 64 for a, b in zip(starts[:-2], starts[1:-1]))
    for w in windows:
        # every scored token has context on both sides inside its window, except at the ends
        assert w.score_start - w.start >= 31 or w.start == windows[0].start
        assert w.end - w.score_end >= 31 or w.end == windows[-1].end
    assert windows[0] == TokenWindow(68, 196, 100, 164)
