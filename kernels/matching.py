"""Batched masked greedy matching of token embeddings (BERTScore's P and R).

For a candidate `c` and reference `r` with L2-normalised token embeddings, every token takes
part in the max if its `match` mask is set; only its `weight` decides how much its own max counts:

    P = sum_i w_c[i] * max_{j: match_r[j]} <c_i, r_j>  /  sum_i w_c[i]      (i over match_c)
    R = sum_j w_r[j] * max_{i: match_c[i]} <c_i, r_j>  /  sum_j w_r[j]      (j over match_r)

Padding (match False) never enters a max, so scores do not depend on batch composition (unlike
bert_score's; docs/metrics.md, "BERTScore: conventions and departures"). A side without weight
(empty text, or no matchable token on the other side) gives 0, as bert_score intends. The
similarity matrix is computed in the inputs' dtype (fp32/bf16/fp16); maxima and weighted sums are
accumulated in fp32. Inputs are never modified.
"""
from __future__ import annotations

import torch


def l2_normalise(emb: torch.Tensor) -> torch.Tensor:
    """Rows divided by their L2 norm; all-zero rows (padding) stay zero. (..., D) -> (..., D)."""
    norm = torch.linalg.vector_norm(emb, dim=-1, keepdim=True)  # (..., 1)
    return emb / norm.clamp_min(torch.finfo(emb.dtype).tiny)


def greedy_match(
    cand: torch.Tensor,
    cand_match: torch.Tensor,
    cand_weight: torch.Tensor,
    ref: torch.Tensor,
    ref_match: torch.Tensor,
    ref_weight: torch.Tensor,
    normalised: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy-matching precision and recall for a batch of candidate/reference pairs.

    cand (B, Tc, D), cand_match (B, Tc) bool, cand_weight (B, Tc) float;
    ref (B, Tr, D), ref_match (B, Tr) bool, ref_weight (B, Tr) float.
    Weights outside the match mask are ignored. `normalised=True` skips the L2 normalisation
    (the caller already did it). Returns P (B,), R (B,) in float32.
    """
    if cand.dim() != 3 or ref.dim() != 3:
        raise ValueError(f"greedy_match: expected (B, T, D) inputs, got {tuple(cand.shape)} and {tuple(ref.shape)}")
    if not normalised:
        cand = l2_normalise(cand)
        ref = l2_normalise(ref)
    sim = torch.bmm(cand, ref.transpose(1, 2)).float()  # (B, Tc, Tr)
    neg_inf = torch.tensor(float("-inf"), dtype=sim.dtype, device=sim.device)
    pair_ok = cand_match.unsqueeze(2) & ref_match.unsqueeze(1)  # (B, Tc, Tr)
    sim = torch.where(pair_ok, sim, neg_inf)
    best_for_cand = sim.amax(dim=2)  # (B, Tc)
    best_for_ref = sim.amax(dim=1)  # (B, Tr)
    return (
        _weighted_mean(best_for_cand, cand_match, cand_weight),
        _weighted_mean(best_for_ref, ref_match, ref_weight),
    )


def _weighted_mean(best: torch.Tensor, match: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """sum(w * best) / sum(w) over usable tokens, 0 where no weight is usable. (B, T) -> (B,)."""
    usable = match & torch.isfinite(best)  # a token with nothing to match against has max -inf
    w = torch.where(usable, weight.float(), torch.zeros((), dtype=torch.float32, device=best.device))  # (B, T)
    total = w.sum(dim=1)  # (B,)
    score = (torch.where(usable, best, torch.zeros((), dtype=best.dtype, device=best.device)) * w).sum(dim=1)
    return torch.where(total > 0, score / torch.where(total > 0, total, torch.ones_like(total)), torch.zeros_like(total))


def f_score(p: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """2PR/(P+R) with 0 where P+R is 0 (bert_score's NaN -> 0). Shapes broadcast."""
    denom = p + r
    return torch.where(denom != 0, 2 * p * r / torch.where(denom != 0, denom, torch.ones_like(denom)), torch.zeros_like(denom))
