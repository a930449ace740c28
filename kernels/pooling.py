"""Masked mean pooling of token embeddings and the cosine between pooled vectors."""
from __future__ import annotations

import torch


def masked_mean(emb: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of the rows of `emb` where `mask` is set, accumulated in fp32; zeros for an empty mask.

    emb (B, T, D) any float dtype, mask (B, T) bool -> (B, D) float32. Inputs are not modified.
    """
    m = mask.to(torch.float32).unsqueeze(2)  # (B, T, 1)
    total = (emb.float() * m).sum(dim=1)  # (B, D)
    count = m.sum(dim=1)  # (B, 1)
    return total / count.clamp_min(1.0)


def pooled_cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of paired vectors, 0 where either is all zeros. (B, D), (B, D) -> (B,) float32."""
    a = a.float()
    b = b.float()
    na = torch.linalg.vector_norm(a, dim=1)  # (B,)
    nb = torch.linalg.vector_norm(b, dim=1)  # (B,)
    dot = (a * b).sum(dim=1)  # (B,)
    denom = na * nb
    return torch.where(denom > 0, dot / torch.where(denom > 0, denom, torch.ones_like(denom)), torch.zeros_like(denom))


def segment_masked_mean(rows: torch.Tensor, segments: torch.Tensor, mask: torch.Tensor, n_segments: int) -> torch.Tensor:
    """Mean of the masked rows of each segment, for texts concatenated along the row axis.

    rows (N, D) any float dtype, segments (N,) long in [0, n_segments), mask (N,) bool ->
    (n_segments, D) float32; zeros for a segment without masked rows. No padding is built,
    so one long text does not cost memory for all the short ones. Inputs are not modified.
    """
    m = mask.to(torch.float32)  # (N,)
    total = torch.zeros((n_segments, rows.shape[1]), dtype=torch.float32, device=rows.device)
    total = total.index_add(0, segments, rows.float() * m.unsqueeze(1))  # (S, D)
    count = torch.zeros(n_segments, dtype=torch.float32, device=rows.device).index_add(0, segments, m)  # (S,)
    return total / count.clamp_min(1.0).unsqueeze(1)
