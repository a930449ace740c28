"""Short sequences packed into shared encoder rows give what each gives alone.

Oracle: the same model run one sequence per row (`packing` off, each sequence padded only to
its own batch's longest), on tiny random BERT/RoBERTa models saved with save_pretrained and
loaded through the same path as real models, and on the real all-MiniLM-L6-v2.
"""
from __future__ import annotations

import random

import pytest
import torch

from engine.items import ScoreItem
from engine.metrics.embedding import EmbeddingScorer
from engine.metrics.encoder_runtime import EncoderRuntime
from engine.metrics.packing import build_packed, plan_rows
from engine.runtime import resolve_model
from tests.support import tiny_encoders

MINILM = "pypi:all-MiniLM-L6-v2"
# Largest difference of a hidden state (relative to the largest hidden value) packed vs alone:
# float32 rounding of products of another shape; bfloat16 rounds every product to 8 bits.
HIDDEN_BOUND = {"float32": 1e-5, "bfloat16": 3e-2}
TEXTS = [
    "the cat sat on the mat", "a", "returns the name of the user", "sum of two numbers",
    "unhappy cats are happy", "compute the sum of two numbers and return the result",
    "public int sum(int a, int b) { return a + b; }", "the the the the", "given a list of nodes",
    " ".join(["the value of the user file is returned when the list is sorted"] * 8),  # longer than a row
    "返回用户的姓名", "Zwraca najkrótszą ścieżkę", "read", "write the file to the path",
]


def test_rows_hold_every_sequence_once_within_the_width_whatever_the_input_order() -> None:
    rng = random.Random(0)
    seqs = [tuple(rng.randrange(50) for _ in range(rng.randint(1, 40))) for _ in range(60)]
    rows = plan_rows(seqs, 64)
    assert sorted(i for row in rows for i in row) == list(range(len(seqs)))
    assert all(sum(len(seqs[i]) for i in row) <= 64 for row in rows)
    assert len(rows) < len(seqs) / 2  # short sequences do share rows
    perm = list(range(len(seqs)))
    rng.shuffle(perm)
    shuffled = [seqs[p] for p in perm]
    by_content = sorted(sorted(seqs[i] for i in row) for row in rows)
    assert sorted(sorted(shuffled[i] for i in row) for row in plan_rows(shuffled, 64)) == by_content
    with pytest.raises(ValueError, match="does not fit"):
        plan_rows([tuple(range(65))], 64)


def test_packed_inputs_keep_each_sequence_to_itself() -> None:
    seqs = [(5, 6, 7), (8, 9), (10,)]
    batch = build_packed(seqs, 8, pad_id=1, position_offset=2, dtype=torch.float32)
    assert batch.shape == (1, 8)
    for (row, start), s in zip(batch.places, seqs):
        assert batch.ids[row, start:start + len(s)].tolist() == list(s)
        assert batch.positions[row, start:start + len(s)].tolist() == list(range(2, 2 + len(s)))
    allowed = batch.mask[0, 0] == 0  # (W, W)
    row, start = batch.places[0]
    block = torch.zeros(8, dtype=torch.bool)
    block[start:start + 3] = True
    assert allowed[start].tolist() == block.tolist()  # a token sees its own sequence only
    assert bool(allowed.any(dim=1).all())  # no row of the mask is empty (padding sees padding)
    assert batch.token_types.eq(0).all()


@pytest.fixture(scope="module")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("packing")
    return {kind: tiny_encoders.build(kind, root / kind) for kind in ("bert", "roberta", "modernbert")}


def sequences_of(runtime: EncoderRuntime) -> list[tuple[int, ...]]:
    seqs = []
    for tokens in runtime.tokenize(TEXTS, offsets=False):
        content = tokens.ids[: runtime.max_content_tokens]
        seqs.append(tuple(runtime.prefix_ids) + content + tuple(runtime.suffix_ids))
    return seqs


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_packed_hidden_states_equal_unpacked_for_any_batch_cut_and_order(tiny_dirs, kind: str, dtype: str) -> None:
    runtime = EncoderRuntime(tiny_dirs[kind], layer=None, dtype=dtype, device="cpu", add_prefix_space=True,
                             max_length=None, cpu_fastpath=dtype == "bfloat16", pack=True)
    assert runtime.packing, runtime.packing_off_reason
    seqs = sequences_of(runtime)
    keep = [tuple(range(len(s))) for s in seqs]
    runtime.packing = False
    alone, errors = runtime.forward(seqs, keep, batch_tokens=1)  # each sequence in a batch of its own
    assert errors == [None] * len(seqs)
    runtime.packing = True
    scale = max(float(a.float().abs().max()) for a in alone)
    rng = random.Random(1)
    for batch_tokens in (64, 200, 100_000):
        before = dict(runtime.stats)
        order = list(range(len(seqs)))
        rng.shuffle(order)
        got, errors = runtime.forward([seqs[i] for i in order], [keep[i] for i in order], batch_tokens)
        assert errors == [None] * len(seqs)
        added = {k: runtime.stats[k] - before[k] for k in before}
        assert added["packed_rows"] > 0
        # What ran: every row at its whole width (the tiny models' 64-token window is one row).
        assert runtime.pack_width == runtime.max_length
        assert added["padded_tokens"] == added["packed_rows"] * runtime.pack_width
        assert added["attention_pairs"] == added["packed_rows"] * runtime.pack_width ** 2
        assert added["tokens"] == sum(len(s) for s in seqs) < added["padded_tokens"]
        for j, i in enumerate(order):
            assert got[j].shape == alone[i].shape  # (T, L+1, D): every layer's rows
            worst = float((got[j].float() - alone[i].float()).abs().max()) / scale
            assert worst <= HIDDEN_BOUND[dtype], (batch_tokens, TEXTS[i], worst)


def test_architectures_with_their_own_attention_run_unpacked_and_say_why(tiny_dirs) -> None:
    runtime = EncoderRuntime(tiny_dirs["modernbert"], layer=2, dtype="float32", device="cpu", add_prefix_space=True,
                             max_length=None, pack=True)
    assert not runtime.packing and "modernbert" in (runtime.packing_off_reason or "")
    seqs = sequences_of(runtime)
    rows, errors = runtime.forward(seqs, [(0,)] * len(seqs), batch_tokens=10_000)
    assert errors == [None] * len(seqs) and runtime.stats["packed_rows"] == 0


def minilm_items() -> list[ScoreItem]:
    rng = random.Random(3)
    items = []
    # The last is longer than a packed row: it runs padded beside the packed ones.
    for i, ref in enumerate(TEXTS + [" ".join(["the value of the user file is returned when the list is sorted"] * 16)]):
        for g in range(3):
            words = ref.split()
            rng.shuffle(words)
            pred = " " + " ".join(words[: max(1, len(words) - g)])
            items.append(ScoreItem(f"{i}/{g}", str(i), "en", f"g{g}", "none", ref, 0, len(ref), ref, "", pred))
    return items


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_minilm_fast_scores_packed_equal_unpacked(dtype: str) -> None:
    try:
        resolve_model(MINILM)
    except Exception as exc:  # the PyPI model package is part of `make setup`
        pytest.skip(f"all-MiniLM-L6-v2 not installed: {exc}")
    items = minilm_items()
    scorer = EmbeddingScorer(EmbeddingScorer.Params(model=MINILM, layer=4, mode="fast", dtype=dtype,
                                                    contexts=("none", "minimal")))
    runtime = scorer.runtime
    assert runtime.packing, runtime.packing_off_reason
    before = dict(runtime.stats)
    packed = [r.value for r in scorer.score(items)]
    assert runtime.stats["packed_rows"] > before["packed_rows"]
    assert runtime.stats["batches"] - before["batches"] >= 2  # packed rows and the long sequences' padded batch
    reordered = {(r.sample_id, r.context, r.variant): r.value for r in scorer.score(items[::-1])}
    runtime.packing = False
    try:
        unpacked = scorer.score(items)
    finally:
        runtime.packing = True
    # Float32: within compat's own bound; bfloat16: far inside the 0.03 it keeps to float32.
    bound = 1e-6 if runtime.dtype_name == "float32" else 1e-2
    for p, u in zip(packed, unpacked):
        assert p == pytest.approx(u.value, abs=bound), (u.sample_id, u.context, u.variant)
        assert reordered[(u.sample_id, u.context, u.variant)] == pytest.approx(p, abs=bound)
    compat = EmbeddingScorer(EmbeddingScorer.Params(model=MINILM, layer=4, mode="compat"))
    assert not compat.runtime.packing  # compat keeps bert_score's unpacked batches
