"""Context settings, scored character spans, span -> token masks and model windows.

A scorer shows a model more text than it scores in three context settings:

- `none`: only the scored spans (the prediction; the reference after the prime).
- `minimal`: the whole comment (`prime + prediction`; the reference); the prime is context.
- `full`: the whole file with the comment (prime included) at its place.

The scored tokens are found from the fast tokenizer's offset mapping against the character
span (`span_token_mask`), never by tokenizing prefix, span and suffix separately: merges at
the boundaries differ between the two. Texts longer than the model window are cut into
token windows (`plan_windows`).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Literal, Sequence

from engine.items import ScoreItem

ContextSetting = Literal["none", "minimal", "full"]
CONTEXT_SETTINGS: tuple[ContextSetting, ...] = ("none", "minimal", "full")


@dataclass(frozen=True)
class SpanText:
    """A text given to a model and the character span `[span_start, span_end)` in it that is scored."""

    text: str
    span_start: int
    span_end: int

    def __post_init__(self) -> None:
        if not 0 <= self.span_start <= self.span_end <= len(self.text):
            raise ValueError(
                f"SpanText: span [{self.span_start}, {self.span_end}) is not inside a text of "
                f"{len(self.text)} characters"
            )

    @property
    def span(self) -> str:
        return self.text[self.span_start:self.span_end]


def _check_context(context: str) -> None:
    if context not in CONTEXT_SETTINGS:
        raise ValueError(f"context: got {context!r}; allowed: {', '.join(CONTEXT_SETTINGS)}")


def candidate_text(item: ScoreItem, context: ContextSetting) -> SpanText:
    """The candidate side of `item` under `context`; the span is always the prediction."""
    _check_context(context)
    prediction = item.prediction
    if context == "none":
        return SpanText(prediction, 0, len(prediction))
    if context == "minimal":
        text = item.prime + prediction
        return SpanText(text, len(item.prime), len(text))
    start = item.comment_start + len(item.prime)
    return SpanText(item.candidate_in_context(), start, start + len(prediction))


def reference_text(item: ScoreItem, context: ContextSetting) -> SpanText:
    """The reference side of `item` under `context`; the span is always the reference after the prime."""
    _check_context(context)
    if context == "none":
        tail = item.reference_tail
        return SpanText(tail, 0, len(tail))
    if context == "minimal":
        return SpanText(item.reference, len(item.prime), len(item.reference))
    return SpanText(item.source, item.comment_start + len(item.prime), item.comment_end)


def span_token_mask(offsets: Sequence[tuple[int, int]], span_start: int, span_end: int) -> list[bool]:
    """Which tokens belong to the character span `[span_start, span_end)`.

    Rule: a token with character offsets `(start, end)` counts iff it overlaps the span,
    `start < span_end and end > span_start`, and it covers at least one character,
    `end > start`. So a token straddling a span boundary counts (it carries span
    characters), a token that only touches the boundary does not, and zero-width tokens
    (special tokens, whose offset is `(0, 0)`) never count. An empty span selects nothing,
    even when it lies inside a token (an empty prediction scores as empty, not as the token
    it happens to sit in).
    """
    if span_end <= span_start:
        return [False] * len(offsets)
    return [start < span_end and end > span_start and end > start for start, end in offsets]


@dataclass(frozen=True)
class TokenWindow:
    """Token index range `[start, end)` fed to the model; tokens in `[score_start, score_end)` are scored from it.

    Indices count the text's own tokens (no special tokens); the caller adds the model's
    special tokens around each window, so `max_tokens` is the model window minus those.
    """

    start: int
    end: int
    score_start: int
    score_end: int


def plan_windows(n_tokens: int, span_token_start: int, span_token_end: int, max_tokens: int) -> list[TokenWindow]:
    """Cut a text of `n_tokens` tokens into model windows of at most `max_tokens` tokens.

    - The span fits (`span_token_end - span_token_start <= max_tokens`): one window holding
      the whole span with as much context as fits, centred on the span and clipped at the
      text ends (context cut on one side goes to the other side).
    - A longer span: windows of `max_tokens` tokens with stride `max_tokens // 2`, laid over
      the span plus up to `max_tokens // 4` tokens of context on each side; each span token
      is scored once, from the window in which it is most central (most context on its
      less-served side). The score ranges partition the span in order.
    An empty span gives one window around its position with an empty score range.
    """
    if max_tokens < 1:
        raise ValueError(f"plan_windows: max_tokens must be >= 1, got {max_tokens}")
    if not 0 <= span_token_start <= span_token_end <= n_tokens:
        raise ValueError(
            f"plan_windows: span [{span_token_start}, {span_token_end}) is not inside {n_tokens} tokens"
        )
    span_len = span_token_end - span_token_start
    if span_len <= max_tokens:
        length = min(max_tokens, n_tokens)
        start = span_token_start - (length - span_len) // 2
        start = max(0, min(start, n_tokens - length))
        return [TokenWindow(start, start + length, span_token_start, span_token_end)]

    stride = max(1, max_tokens // 2)
    lo = max(0, span_token_start - max_tokens // 4)
    hi = min(n_tokens, span_token_end + max_tokens // 4)
    starts = list(range(lo, hi - max_tokens, stride)) + [hi - max_tokens]
    ranges: list[list[int]] = [[-1, -1] for _ in starts]
    for token in range(span_token_start, span_token_end):
        # Windows holding `token` start in (token - max_tokens, token]: at most a few.
        first = bisect.bisect_right(starts, token - max_tokens)
        last = bisect.bisect_right(starts, token)
        best, best_margin = first, -1
        for w in range(first, last):
            margin = min(token - starts[w], starts[w] + max_tokens - 1 - token)
            if margin > best_margin:  # ties go to the earlier window: ranges stay contiguous
                best, best_margin = w, margin
        if ranges[best][0] < 0:
            ranges[best][0] = token
        ranges[best][1] = token + 1
    return [
        TokenWindow(start, start + max_tokens, score_start, score_end)
        for start, (score_start, score_end) in zip(starts, ranges)
        if score_start >= 0
    ]
