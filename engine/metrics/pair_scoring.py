"""Greedy-matching P/R and pooled cosine for many (candidate, reference) embedding pairs.

Pairs are sorted by size and padded into batches bounded by the similarity-matrix size, so
that one long file does not pad thousands of short comments. All layers (when present) are
matched in the same batched call by folding the layer axis into the batch axis.

Every distinct text's rows are put once into one table, and a batch is padded by one gather
from it (the pad index points at a zero row), not by copying each text: on a GPU that keeps
the kernel launches and host-to-device copies per batch, not per pair, and the results stay
on the device until one transfer at the end.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

from engine.metrics.span_embeddings import TextEmbedding, TextPlan

if TYPE_CHECKING:
    import torch

# Upper bound on B * Tc * Tr * layers per matching batch (float32 elements).
MATCH_BUDGET = 1 << 21


def token_weights(
    plans: Sequence[TextPlan], idf: Callable[[Sequence[int]], list[float]] | None, device: "torch.device | str"
) -> list["torch.Tensor"]:
    """Per plan, per kept token: 0 for special tokens, idf(token) or 1 for scored tokens. (K,) float32
    each, on `device`: computed on the host from the plans and moved in one transfer."""
    import torch

    values: list[float] = []
    for plan in plans:
        base = idf(plan.token_ids) if idf is not None else [1.0] * len(plan.token_ids)
        values.extend(0.0 if special else w for special, w in zip(plan.special, base))
    flat = torch.tensor(values, dtype=torch.float32).to(device)  # (sum K,)
    return list(flat.split([len(plan.token_ids) for plan in plans]))


class _RowTable:
    """The rows of distinct texts stacked once, with a zero row at the end for padding.

    unit: (N + 1, D) or (N + 1, Lo, D) float32; weight: (N + 1,) float32; start/length: where
    each text's rows are, by the text's position in `texts`."""

    def __init__(self, texts: Sequence[TextEmbedding], weights: Sequence["torch.Tensor"]):
        import torch

        first = texts[0].unit
        zero = torch.zeros((1, *first.shape[1:]), dtype=first.dtype, device=first.device)
        self.unit = torch.cat([*(t.unit for t in texts), zero], dim=0)  # (N + 1, ...)
        self.weight = torch.cat([*weights, torch.zeros(1, dtype=torch.float32, device=first.device)])  # (N + 1,)
        self.pad_row = self.unit.shape[0] - 1
        self.length = [t.unit.shape[0] for t in texts]
        self.start = [0] * len(texts)
        for i in range(1, len(texts)):
            self.start[i] = self.start[i - 1] + self.length[i - 1]


def score_pairs(
    cands: Sequence[TextEmbedding],
    refs: Sequence[TextEmbedding],
    cand_weights: Sequence["torch.Tensor"],
    ref_weights: Sequence["torch.Tensor"],
    ties: Sequence[object] | None = None,
    one_per_batch: bool = False,
) -> tuple["torch.Tensor", "torch.Tensor", "torch.Tensor"]:
    """P and R per pair and layer, and pooled cosine per pair.

    ties: a sortable content key per pair, so pairs of equal size are batched in an order that
    does not depend on the input order; one_per_batch: each pair matched alone (batch-invariant).
    Every pair must have scored tokens on both sides (the caller scores empty sides 0).
    Returns P (N, Lo), R (N, Lo) with Lo = 1 or L+1 layers, and cos (N,), all float32 on CPU.
    """
    import torch

    from kernels.pooling import pooled_cosine

    n = len(cands)
    if n == 0:
        return torch.zeros((0, 1)), torch.zeros((0, 1)), torch.zeros(0)
    n_layers = cands[0].unit.shape[1] if cands[0].unit.dim() == 3 else 1
    # Distinct texts (the same object is shared by every pair that has it) and each pair's two.
    slot: dict[int, int] = {}
    texts: list[TextEmbedding] = []
    weights: list[torch.Tensor] = []
    pair_texts: list[tuple[int, int]] = []
    for c, r, cw, rw in zip(cands, refs, cand_weights, ref_weights):
        ends = []
        for emb, w in ((c, cw), (r, rw)):
            if id(emb) not in slot:
                slot[id(emb)] = len(texts)
                texts.append(emb)
                weights.append(w)
            ends.append(slot[id(emb)])
        pair_texts.append((ends[0], ends[1]))
    table = _RowTable(texts, weights)
    device = table.unit.device
    p_out = torch.zeros((n, n_layers), dtype=torch.float32, device=device)
    r_out = torch.zeros((n, n_layers), dtype=torch.float32, device=device)
    order = sorted(range(n), key=lambda i: (cands[i].unit.shape[0], refs[i].unit.shape[0], ties[i] if ties else i))
    start = 0
    while start < n:
        end = start + 1
        max_c, max_r = cands[order[start]].unit.shape[0], refs[order[start]].unit.shape[0]
        while end < n and not one_per_batch:
            nc = max(max_c, cands[order[end]].unit.shape[0])
            nr = max(max_r, refs[order[end]].unit.shape[0])
            if (end - start + 1) * nc * nr * n_layers > MATCH_BUDGET:
                break
            max_c, max_r, end = nc, nr, end + 1
        batch = order[start:end]
        index = torch.tensor(batch, dtype=torch.long).to(device)  # (B,)
        p, r = _match_batch(table, [pair_texts[i] for i in batch], max_c, max_r, n_layers)
        p_out[index] = p
        r_out[index] = r
        start = end
    pooled = torch.stack([t.pooled for t in texts])  # (N_texts, D)
    ends = torch.tensor(pair_texts, dtype=torch.long).to(device)  # (N, 2)
    cos = pooled_cosine(pooled.index_select(0, ends[:, 0]), pooled.index_select(0, ends[:, 1]))  # (N,)
    out = torch.cat([p_out, r_out, cos.unsqueeze(1)], dim=1).cpu()  # (N, 2 Lo + 1): one transfer
    return out[:, :n_layers], out[:, n_layers:2 * n_layers], out[:, 2 * n_layers]


def _match_batch(
    table: _RowTable, pairs: Sequence[tuple[int, int]], max_c: int, max_r: int, n_layers: int
) -> tuple["torch.Tensor", "torch.Tensor"]:
    """P, R (B, Lo) for one padded batch of pairs (text numbers into `table`), padded to max_c and max_r rows."""
    import torch

    from kernels.matching import greedy_match

    def padded(side: int, width: int):
        rows: list[int] = []
        lengths: list[int] = []
        for pair in pairs:
            text = pair[side]
            start, length = table.start[text], table.length[text]
            rows.extend(range(start, start + length))
            rows.extend([table.pad_row] * (width - length))
            lengths.append(length)
        index = torch.tensor(rows, dtype=torch.long).to(table.unit.device)  # (B * T,)
        unit = table.unit.index_select(0, index)  # (B * T, D) or (B * T, Lo, D)
        unit = unit.view(len(pairs), width, *unit.shape[1:])  # (B, T, D) or (B, T, Lo, D)
        weight = table.weight.index_select(0, index).view(len(pairs), width)  # (B, T)
        match = index.view(len(pairs), width) != table.pad_row  # (B, T)
        if unit.dim() == 4:
            b, t, lo, d = unit.shape
            unit = unit.permute(0, 2, 1, 3).reshape(b * lo, t, d)  # (B*Lo, T, D)
            match = match.repeat_interleave(lo, dim=0)  # (B*Lo, T)
            weight = weight.repeat_interleave(lo, dim=0)  # (B*Lo, T)
        return unit, match, weight

    cu, cm, cw = padded(0, max_c)
    ru, rm, rw = padded(1, max_r)
    p, r = greedy_match(cu, cm, cw, ru, rm, rw, normalised=True)  # (B*Lo,)
    return p.view(len(pairs), n_layers), r.view(len(pairs), n_layers)
