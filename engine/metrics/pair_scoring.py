"""Greedy-matching P/R and pooled cosine for many (candidate, reference) embedding pairs.

Pairs are sorted by size and padded into batches bounded by the similarity-matrix size, so
that one long file does not pad thousands of short comments. All layers (when present) are
matched in the same batched call by folding the layer axis into the batch axis.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

from engine.metrics.span_embeddings import TextEmbedding

if TYPE_CHECKING:
    import torch

# Upper bound on B * Tc * Tr * layers per matching batch (float32 elements).
MATCH_BUDGET = 1 << 21


def token_weights(emb: TextEmbedding, idf: Callable[[Sequence[int]], list[float]] | None) -> "torch.Tensor":
    """Per kept token: 0 for special tokens, idf(token) or 1 for scored tokens. (K,) float32."""
    import torch

    if idf is None:
        base = torch.ones(emb.ids.shape[0], dtype=torch.float32, device=emb.ids.device)
    else:
        base = torch.tensor(idf(emb.ids.tolist()), dtype=torch.float32, device=emb.ids.device)
    return torch.where(emb.special, torch.zeros_like(base), base)


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
    p_out = torch.zeros((n, n_layers), dtype=torch.float32)
    r_out = torch.zeros((n, n_layers), dtype=torch.float32)
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
        p, r = _match_batch(
            [cands[i] for i in batch], [refs[i] for i in batch],
            [cand_weights[i] for i in batch], [ref_weights[i] for i in batch],
            n_layers,
        )
        index = torch.as_tensor(batch, dtype=torch.long)
        p_out[index] = p.cpu()
        r_out[index] = r.cpu()
        start = end
    cos = pooled_cosine(torch.stack([c.pooled for c in cands]), torch.stack([r.pooled for r in refs])).cpu()  # (N,)
    return p_out, r_out, cos


def _match_batch(
    cands: Sequence[TextEmbedding],
    refs: Sequence[TextEmbedding],
    cand_w: Sequence["torch.Tensor"],
    ref_w: Sequence["torch.Tensor"],
    n_layers: int,
) -> tuple["torch.Tensor", "torch.Tensor"]:
    """P, R (B, Lo) for one padded batch of pairs."""
    import torch
    from torch.nn.utils.rnn import pad_sequence

    from kernels.matching import greedy_match

    def padded(embs: Sequence[TextEmbedding], weights: Sequence[torch.Tensor]):
        unit = pad_sequence([e.unit for e in embs], batch_first=True)  # (B, T, D) or (B, T, Lo, D)
        match = pad_sequence(
            [torch.ones(e.unit.shape[0], dtype=torch.bool, device=e.unit.device) for e in embs],
            batch_first=True,
        )  # (B, T)
        weight = pad_sequence(list(weights), batch_first=True)  # (B, T)
        if unit.dim() == 4:
            b, t, lo, d = unit.shape
            unit = unit.permute(0, 2, 1, 3).reshape(b * lo, t, d)  # (B*Lo, T, D)
            match = match.repeat_interleave(lo, dim=0)  # (B*Lo, T)
            weight = weight.repeat_interleave(lo, dim=0)  # (B*Lo, T)
        return unit, match, weight

    cu, cm, cw = padded(cands, cand_w)
    ru, rm, rw = padded(refs, ref_w)
    p, r = greedy_match(cu, cm, cw, ru, rm, rw, normalised=True)  # (B*Lo,)
    return p.view(len(cands), n_layers), r.view(len(cands), n_layers)
