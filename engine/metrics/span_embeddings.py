"""From span texts to the embeddings of their scored tokens (plus the model's special tokens).

A text is tokenised once without special tokens; the tokens overlapping its character span
are found from the offsets (engine.context.span_token_mask); the text is cut into model
windows (engine.context.plan_windows, or bert_score's truncation in compatibility mode) with
the special tokens added around each window; only the rows of the scored tokens and of the
special tokens are kept after the forward pass. Identical (text, span) pairs are encoded once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from engine.context import SpanText, TokenWindow, plan_windows, span_token_mask
from engine.metrics.encoder_runtime import EncoderRuntime, Tokenized

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class TextPlan:
    """The model inputs for one span text and which of their rows to keep.

    `sequences[w]` is window w with special tokens; `keep[w]` are the row indices kept from it.
    `token_ids`/`special` describe the kept rows in order (all windows concatenated).
    `span_ids` are the ids of the scored tokens (what idf counts).
    """

    sequences: tuple[tuple[int, ...], ...]
    keep: tuple[tuple[int, ...], ...]
    token_ids: tuple[int, ...]
    special: tuple[bool, ...]
    span_ids: tuple[int, ...]

    @property
    def n_span(self) -> int:
        return len(self.span_ids)


@dataclass(frozen=True)
class TextEmbedding:
    """Kept rows of one span text, ready for matching.

    unit: (K, D) or (K, L+1, D) float32, L2-normalised per token (and layer);
    ids: (K,) long token ids; special: (K,) bool; pooled: (D,) float32 mean of the raw
    embeddings of the scored tokens at the pooling layer (zeros if none).
    """

    unit: "torch.Tensor"
    ids: "torch.Tensor"
    special: "torch.Tensor"
    pooled: "torch.Tensor"
    n_span: int


def is_whole(span: SpanText) -> bool:
    """The span is the whole (non-empty) text: every token is scored, offsets are not needed."""
    return span.span_start == 0 and span.span_end == len(span.text) > 0


def plan_text(
    tokens: Tokenized,
    span: SpanText,
    prefix: Sequence[int],
    suffix: Sequence[int],
    max_content: int,
    truncate: bool,
) -> TextPlan:
    """Windows for one tokenised span text.

    `truncate=True` is bert_score's behaviour: one window of the first `max_content` tokens,
    the rest silently dropped (only meaningful when the span is the whole text). Otherwise
    the span is scored whole, in overlapping windows if it is longer than `max_content`.
    A span covering the whole text scores every token (zero-width ones included); a partial
    span scores the tokens `span_token_mask` selects from the offsets.
    """
    if is_whole(span):
        # The text is the span: every token counts, including zero-width ones the tokenizer
        # inserts (the prefix-space `Ġ` of add_prefix_space, which bert_score scores).
        mask = [True] * len(tokens.ids)
    else:
        if tokens.offsets is None:
            raise ValueError("plan_text: a partial span needs the token offsets")
        mask = span_token_mask(tokens.offsets, span.span_start, span.span_end)
    inside = [i for i, m in enumerate(mask) if m]
    n = len(tokens.ids)
    if not inside:
        return TextPlan((), (), (), (), ())
    first, last = inside[0], inside[-1] + 1
    if truncate:
        end = min(n, max_content)
        windows = [TokenWindow(0, end, min(first, end), min(last, end))]
    else:
        windows = plan_windows(n, first, last, max_content)
    sequences, keep, token_ids, special, span_ids = [], [], [], [], []
    for w in windows:
        seq = tuple(prefix) + tokens.ids[w.start:w.end] + tuple(suffix)
        rows = list(range(len(prefix)))
        scored = [len(prefix) + i - w.start for i in range(w.score_start, w.score_end) if mask[i]]
        rows += scored
        rows += list(range(len(seq) - len(suffix), len(seq)))
        sequences.append(seq)
        keep.append(tuple(rows))
        token_ids.extend(seq[r] for r in rows)
        special.extend([True] * len(prefix) + [False] * len(scored) + [True] * len(suffix))
        span_ids.extend(seq[r] for r in scored)
    return TextPlan(tuple(sequences), tuple(keep), tuple(token_ids), tuple(special), tuple(span_ids))


def encode_plans(
    runtime: EncoderRuntime,
    plans: Sequence[TextPlan],
    batch_tokens: int,
    pool_layer: int | None,
) -> list[TextEmbedding | str]:
    """Run the model over every window of every plan; one TextEmbedding (or an error message) per plan.

    `pool_layer` picks the layer of the pooled mean when the runtime returns all layers.
    Plans without scored tokens are not run (they score 0 whatever the model says).
    """
    import torch

    from kernels.matching import l2_normalise
    from kernels.pooling import segment_masked_mean

    sequences: list[tuple[int, ...]] = []
    keep: list[tuple[int, ...]] = []
    owner: list[int] = []
    for p, plan in enumerate(plans):
        if plan.n_span == 0:
            continue
        sequences.extend(plan.sequences)
        keep.extend(plan.keep)
        owner.extend([p] * len(plan.sequences))
    rows, errors = runtime.forward(sequences, keep, batch_tokens)

    parts: dict[int, list[torch.Tensor]] = {}
    failed: dict[int, str] = {}
    for p, r, e in zip(owner, rows, errors):
        if e is not None or r is None:
            failed.setdefault(p, e or "model forward failed")
        else:
            parts.setdefault(p, []).append(r)

    ok = [p for p, plan in enumerate(plans) if plan.n_span > 0 and p not in failed]
    embedded: dict[int, TextEmbedding] = {}
    if ok:
        # One normalisation, one pooling and one transfer of ids and flags for every text, not
        # one per text: on a GPU each per-text op is a kernel launch or a host-to-device copy.
        pieces = [r for p in ok for r in parts[p]]  # (K_w, D) or (K_w, L+1, D) per window, texts in order
        rows_all = pieces[0] if len(pieces) == 1 else torch.cat(pieces, dim=0)  # (sum K, D) or (sum K, L+1, D)
        sizes = [sum(r.shape[0] for r in parts[p]) for p in ok]
        unit = l2_normalise(rows_all.float()).split(sizes)  # (K, D) or (K, L+1, D) each
        if rows_all.dim() == 3:
            rows_all = rows_all[:, pool_layer if pool_layer is not None else -1]  # (sum K, D)
        device = rows_all.device
        special_all = torch.tensor([flag for p in ok for flag in plans[p].special], dtype=torch.bool).to(device)  # (sum K,)
        ids_all = torch.tensor([t for p in ok for t in plans[p].token_ids], dtype=torch.long).to(device)  # (sum K,)
        segments = torch.repeat_interleave(torch.arange(len(ok)), torch.as_tensor(sizes)).to(device)  # (sum K,)
        pooled = segment_masked_mean(rows_all, segments, ~special_all, len(ok))  # (N, D) float32
        specials, ids = special_all.split(sizes), ids_all.split(sizes)  # (K,) each
        for i, p in enumerate(ok):
            embedded[p] = TextEmbedding(unit[i], ids[i], specials[i], pooled[i], plans[p].n_span)

    out: list[TextEmbedding | str] = []
    for p, plan in enumerate(plans):
        if p in failed:
            out.append(failed[p])
        elif plan.n_span == 0:
            out.append(_empty_embedding(runtime, plan))
        else:
            out.append(embedded[p])
    return out


def _empty_embedding(runtime: EncoderRuntime, plan: TextPlan) -> TextEmbedding:
    """A text without scored tokens: never matched (an empty side scores 0), so no model rows."""
    import torch

    return TextEmbedding(
        torch.zeros((0, 1), dtype=torch.float32, device=runtime.device),
        torch.as_tensor(plan.token_ids, dtype=torch.long, device=runtime.device),
        torch.as_tensor(plan.special, dtype=torch.bool, device=runtime.device),
        torch.zeros(1, dtype=torch.float32, device=runtime.device),
        0,
    )
