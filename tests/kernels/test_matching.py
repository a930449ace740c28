"""Batched masked greedy matching and pooling (kernels/) against the slow oracles in kernels/reference.py."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels.matching import f_score, greedy_match, l2_normalise
from kernels.pooling import masked_mean, pooled_cosine, segment_masked_mean
from kernels.reference import (
    f_score_reference,
    greedy_match_reference,
    masked_mean_reference,
    pooled_cosine_reference,
)

TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 3e-2, torch.float16: 5e-3}


def random_batch(seed: int, b: int, tc: int, tr: int, d: int):
    g = torch.Generator().manual_seed(seed)
    cand = torch.randn(b, tc, d, generator=g)
    ref = torch.randn(b, tr, d, generator=g)
    cand_match = torch.rand(b, tc, generator=g) < 0.8
    ref_match = torch.rand(b, tr, generator=g) < 0.8
    cand_weight = torch.rand(b, tc, generator=g) * (torch.rand(b, tc, generator=g) < 0.9)
    ref_weight = torch.rand(b, tr, generator=g) * (torch.rand(b, tr, generator=g) < 0.9)
    return cand, cand_match, cand_weight, ref, ref_match, ref_weight


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    b=st.integers(1, 4),
    tc=st.integers(1, 7),
    tr=st.integers(1, 7),
    d=st.integers(1, 9),
    dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.float16]),
)
def test_greedy_match_equals_reference(seed: int, b: int, tc: int, tr: int, d: int, dtype: torch.dtype) -> None:
    cand, cm, cw, ref, rm, rw = random_batch(seed, b, tc, tr, d)
    # the oracle sees the same (rounded) numbers the kernel sees
    cand_q, ref_q = cand.to(dtype), ref.to(dtype)
    p, r = greedy_match(cand_q, cm, cw, ref_q, rm, rw)
    assert p.dtype == torch.float32 and p.shape == (b,)
    for i in range(b):
        pe, re_ = greedy_match_reference(
            cand_q[i].double().tolist(), cm[i].tolist(), cw[i].tolist(),
            ref_q[i].double().tolist(), rm[i].tolist(), rw[i].tolist(),
        )
        assert p[i].item() == pytest.approx(pe, abs=TOLERANCE[dtype])
        assert r[i].item() == pytest.approx(re_, abs=TOLERANCE[dtype])


def test_inputs_are_not_modified() -> None:
    tensors = random_batch(1, 3, 5, 6, 8)
    before = [t.clone() for t in tensors]
    greedy_match(*tensors)
    masked_mean(tensors[0], tensors[1])
    segment_masked_mean(tensors[0][0], torch.zeros(5, dtype=torch.long), tensors[1][0], 1)
    pooled_cosine(tensors[0][:, 0], tensors[3][:, 0])
    l2_normalise(tensors[0])
    for a, b in zip(before, tensors):
        assert torch.equal(a, b)


def test_padding_never_enters_the_max() -> None:
    """All similarities negative: the max is the best negative one, not a padded 0."""
    cand = torch.tensor([[[1.0, 0.0], [0.0, 0.0]]])  # second row is padding
    ref = torch.tensor([[[-1.0, 0.2], [0.0, 0.0]]])
    match_c = torch.tensor([[True, False]])
    match_r = torch.tensor([[True, False]])
    w = torch.ones(1, 2)
    p, r = greedy_match(cand, match_c, w, ref, match_r, w)
    expected = -1.0 / (1.0 + 0.04) ** 0.5
    assert p.item() == pytest.approx(expected, abs=1e-6) and r.item() == pytest.approx(expected, abs=1e-6)


def test_empty_side_scores_zero() -> None:
    cand, cm, cw, ref, rm, rw = random_batch(2, 2, 4, 4, 6)
    cm = cm.clone()
    cm[0] = False
    p, r = greedy_match(cand, cm, cw, ref, rm, rw)
    assert p[0].item() == 0.0 and r[0].item() == 0.0
    assert not torch.isnan(p).any() and not torch.isnan(r).any()


def test_f_score() -> None:
    p = torch.tensor([0.5, 0.0, 0.9, -0.2])
    r = torch.tensor([0.25, 0.0, 0.1, 0.2])
    f = f_score(p, r)
    for i in range(4):
        assert f[i].item() == pytest.approx(f_score_reference(p[i].item(), r[i].item()), abs=1e-6)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), b=st.integers(1, 4), t=st.integers(1, 6), d=st.integers(1, 6),
       dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.float16]))
def test_pooling_equals_reference(seed: int, b: int, t: int, d: int, dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(seed)
    emb = torch.randn(b, t, d, generator=g).to(dtype)
    mask = torch.rand(b, t, generator=g) < 0.6
    pooled = masked_mean(emb, mask)
    assert pooled.dtype == torch.float32
    for i in range(b):
        expected = masked_mean_reference(emb[i].double().tolist(), mask[i].tolist())
        assert pooled[i].tolist() == pytest.approx(expected, abs=1e-5)
    other = torch.randn(b, d, generator=g)
    cos = pooled_cosine(pooled, other)
    for i in range(b):
        assert cos[i].item() == pytest.approx(pooled_cosine_reference(pooled[i].tolist(), other[i].tolist()), abs=1e-5)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), sizes=st.lists(st.integers(0, 6), min_size=1, max_size=5), d=st.integers(1, 5))
def test_segment_mean_equals_reference(seed: int, sizes: list[int], d: int) -> None:
    """Texts concatenated along rows: the same means as pooling each text on its own."""
    g = torch.Generator().manual_seed(seed)
    rows = torch.randn(sum(sizes), d, generator=g)
    mask = torch.rand(sum(sizes), generator=g) < 0.6
    segments = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes, dtype=torch.long))
    pooled = segment_masked_mean(rows, segments, mask, len(sizes))
    start = 0
    for i, n in enumerate(sizes):
        expected = masked_mean_reference(rows[start:start + n].double().tolist(), mask[start:start + n].tolist()) or [0.0] * d
        assert pooled[i].tolist() == pytest.approx(expected, abs=1e-5)
        start += n


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_greedy_match_on_cuda_equals_cpu() -> None:
    tensors = random_batch(3, 8, 30, 40, 64)
    p_cpu, r_cpu = greedy_match(*tensors)
    p_gpu, r_gpu = greedy_match(*(t.cuda() for t in tensors))
    assert torch.allclose(p_cpu, p_gpu.cpu(), atol=1e-5) and torch.allclose(r_cpu, r_gpu.cpu(), atol=1e-5)
