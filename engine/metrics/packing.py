"""Packing short sequences side by side in the rows of an encoder batch.

Comments of about 30 tokens padded to the longest of their batch waste most of what the
encoder executes. Here several sequences share one row of a fixed width: a block-diagonal
attention mask keeps each sequence to its own tokens, position ids restart at every
sequence and token type ids are each sequence's own (0: a single text), so every sequence
sees exactly the inputs it would see alone. Only the rounding of the shared products can
change (the matrix shapes differ), which is why packing is used where the precision's bound
is wider than that (fast mode), never where bit-level agreement with bert_score is promised.

Which rows hold which sequences depends only on the set of sequences given (best fit by
decreasing length, ties by content), never on their input order.
"""
from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    import torch

# Tokens per packed row: wide enough to hold several short comments, narrow enough that the
# attention over the whole row (executed, masked or not) stays small beside the linear layers.
PACK_WIDTH = 128


@dataclass(frozen=True)
class PackedBatch:
    """Model inputs for sequences packed into rows, on the host.

    ids, positions, token_types: (R, W) long; blocks: (R, W) long, the number of the sequence
    each token belongs to (-1 for padding), from which `additive_mask` builds the attention mask
    on whichever device the model is; places[i] = (row, start) of sequence i.
    """

    ids: "torch.Tensor"
    positions: "torch.Tensor"
    token_types: "torch.Tensor"
    blocks: "torch.Tensor"
    dtype: "torch.dtype"
    places: tuple[tuple[int, int], ...]

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.ids.shape[0]), int(self.ids.shape[1])

    @property
    def mask(self) -> "torch.Tensor":
        """(R, 1, W, W) additive mask in `dtype`, on the host (`additive_mask` of `blocks`)."""
        return additive_mask(self.blocks, self.dtype)


def additive_mask(blocks: "torch.Tensor", dtype: "torch.dtype") -> "torch.Tensor":
    """(R, W) sequence numbers -> (R, 1, W, W) additive mask on their device: 0 where a token may
    attend (same sequence), the dtype's lowest value elsewhere. Padding (-1) attends to padding
    only (its rows are never read), so no row of the mask is empty."""
    import torch

    allowed = blocks.unsqueeze(2) == blocks.unsqueeze(1)  # (R, W, W)
    mask = torch.zeros((blocks.shape[0], 1, blocks.shape[1], blocks.shape[1]), dtype=dtype, device=blocks.device)
    return mask.masked_fill_(~allowed.unsqueeze(1), torch.finfo(dtype).min)  # (R, 1, W, W)


def plan_rows(seqs: Sequence[Sequence[int]], width: int) -> list[list[int]]:
    """Indices of `seqs` grouped into rows of at most `width` tokens (best fit, longest first).

    Every sequence must fit a row on its own (len <= width).
    """
    order = sorted(range(len(seqs)), key=lambda i: (-len(seqs[i]), tuple(seqs[i])))
    rows: list[list[int]] = []
    by_room: dict[int, deque[int]] = {}  # free tokens -> rows with that much room (oldest first)
    rooms: list[int] = []  # the keys of by_room whose rows are not all taken, ascending
    for i in order:
        n = len(seqs[i])
        if n > width:
            raise ValueError(f"plan_rows: a sequence of {n} tokens does not fit a row of {width}")
        at = bisect.bisect_left(rooms, n)  # the smallest room that holds n tokens: best fit
        if at == len(rooms):
            rows.append([i])
            row = len(rows) - 1
            room = width
        else:
            room = rooms[at]
            row = by_room[room].popleft()
            if not by_room[room]:
                del rooms[at]
            rows[row].append(i)
        left = by_room.setdefault(room - n, deque())
        if not left:
            bisect.insort(rooms, room - n)
        left.append(row)
    return rows


def build_packed(
    seqs: Sequence[Sequence[int]],
    width: int,
    pad_id: int,
    position_offset: int,
    dtype: "torch.dtype",
) -> PackedBatch:
    """Pack `seqs` (each <= width tokens) into as few rows as `plan_rows` finds."""
    import torch

    rows = plan_rows(seqs, width)
    n_rows = len(rows)
    # Built as Python lists and made tensors once: slice assignments per sequence are tensor ops each.
    ids: list[int] = []
    positions: list[int] = []
    blocks: list[int] = []  # sequence number per token, -1 padding
    places: list[tuple[int, int]] = [(0, 0)] * len(seqs)
    for r, members in enumerate(rows):
        start = 0
        for i in members:
            n = len(seqs[i])
            ids.extend(seqs[i])
            positions.extend(range(position_offset, position_offset + n))
            blocks.extend([i] * n)
            places[i] = (r, start)
            start += n
        ids.extend([pad_id] * (width - start))
        positions.extend([position_offset] * (width - start))
        blocks.extend([-1] * (width - start))

    def table(values: list[int]) -> "torch.Tensor":
        return torch.tensor(values, dtype=torch.long).view(n_rows, width)  # (R, W)

    token_types = torch.zeros((n_rows, width), dtype=torch.long)  # (R, W): one text per sequence
    return PackedBatch(table(ids), table(positions), token_types, table(blocks), dtype, tuple(places))


def position_offset(model: object) -> int:
    """The first position id the model gives a sequence on its own (RoBERTa-style embeddings
    number positions after their padding index)."""
    embeddings = getattr(model, "embeddings", None)
    if embeddings is not None and hasattr(embeddings, "create_position_ids_from_input_ids"):
        return int(getattr(embeddings, "padding_idx", 0) or 0) + 1
    return 0


# Largest difference between packed and unpacked hidden states the load-time probe accepts,
# relative to the largest hidden value: a few roundings in float32; in half precision the
# rounding of products of another shape (a misplaced position or a leaking mask moves values
# by their own size).
# Architectures whose transformers code (5.x) takes a 4D mask as-is through
# `create_bidirectional_mask` and absolute position ids: their own attention adds nothing
# (ModernBERT's local window, DeBERTa's relative bias and 0/1 mask, MPNet's relative bias
# would need their own packed form), so the others run unpacked.
PACKABLE_TYPES = frozenset({"bert", "roberta", "xlm-roberta", "camembert", "electra"})
PROBE_TOLERANCE = {"float32": 1e-4, "bfloat16": 5e-2, "float16": 2e-2}
# The last fills a row: models with a local attention window (ModernBERT) must show it.
PROBE_TEXTS = ("the cat sat on the mat", "a", "returns the name of the user", "sum of two numbers",
               " ".join(["the value of the user file is returned when the list is sorted"] * 30))


def packing_unsupported(runtime: Any) -> str | None:
    """Why `runtime` (an EncoderRuntime) cannot run packed rows, or None when it can.

    The model must be of an architecture known to add no attention of its own
    (PACKABLE_TYPES), take a 4D additive mask as-is (transformers passes one through to eager
    and sdpa attention, not to flash attention) and position ids, and a probe must give the
    same hidden states packed as alone within PROBE_TOLERANCE (which catches models that
    rebuild the mask or compute positions their own way).
    """
    import torch

    model_type = getattr(runtime.model.config, "model_type", None)
    if model_type not in PACKABLE_TYPES:
        known = ", ".join(sorted(PACKABLE_TYPES))
        return f"model type {model_type} is not one whose attention takes a packed mask ({known})"
    attention = getattr(runtime.model.config, "_attn_implementation", None)
    if attention not in ("sdpa", "eager"):
        return f"attention {attention} does not take a block-diagonal 4D mask"
    if not runtime.accepts("position_ids"):
        return f"{type(runtime.model).__name__}.forward takes no position_ids"
    tokenized = runtime.tokenize(PROBE_TEXTS, offsets=False)
    seqs = []
    for tokens in tokenized:
        if isinstance(tokens, Exception):
            return f"the probe texts do not tokenise ({tokens})"
        content = tokens.ids[: max(1, runtime.pack_width - len(runtime.prefix_ids) - len(runtime.suffix_ids))]
        seqs.append(tuple(runtime.prefix_ids) + tuple(content) + tuple(runtime.suffix_ids))
    stats = dict(runtime.stats)
    try:
        with torch.inference_mode():
            alone = [runtime.forward_padded([s])[0].float() for s in seqs]  # (T_i, D) each
            packed = [h.float() for h in runtime.forward_packed(seqs)]  # (T_i, D) each
    except Exception as exc:  # noqa: BLE001 - an architecture that rejects the inputs runs unpacked
        return f"the packed probe failed ({type(exc).__name__}: {exc})"
    finally:
        runtime.stats.update(stats)
    scale = max(float(a.abs().max()) for a in alone) or 1.0
    worst = max(float((a - p).abs().max()) for a, p in zip(alone, packed)) / scale
    bound = PROBE_TOLERANCE.get(runtime.dtype_name, 5e-2)
    if not worst <= bound:
        return f"packed hidden states differ from unpacked ones by {worst:.2e} of their scale (bound {bound:.0e})"
    return None
