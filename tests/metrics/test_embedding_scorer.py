"""EmbeddingScorer: parameters, rows, contexts and windows, errors, batching, architectures.

Oracles: a direct transformers forward pass with offsets computed here, bert_score's own
idf dictionary, and invariants (identical candidate and reference score 1).
"""
from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import ConfigError
from engine.items import ScoreItem
from engine.metrics.embedding import EmbeddingScorer
from engine.runtime.model_registry import model_registry
from engine.testing.tiny_lm import build_tiny_bart, build_tiny_causal_lm, build_tiny_t5
from tests.support import tiny_encoders

LAYER = 2
PHRASES = [
    "returns the name of the user", "compute the sum of two numbers", "sort the list", "the cat sat on the mat",
    "unhappy cats", "read the file path", "Zwraca nazwę", "返回用户", "", "   ", "if the list is empty return null",
]


def java(comment: str, filler: int = 3) -> tuple[str, int, int]:
    body = "".join(f"    int v{i} = {i};\n" for i in range(filler))
    head = "public class A {\n" + body + "    "
    source = head + comment + "\n" + body + "}\n"
    return source, len(head), len(head) + len(comment)


def item(sample: str, prediction: str, comment: str = "// returns the name of the user", prime: str = "// returns",
         file_id: str = "f", noise: str = "none", filler: int = 3) -> ScoreItem:
    source, start, end = java(comment, filler)
    return ScoreItem(sample, file_id, "en", "g", noise, source, start, end, comment, prime, prediction)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("tiny_encoders")
    out = {kind: tiny_encoders.build(kind, root / kind) for kind in ("bert", "electra", "deberta", "modernbert", "xlm-roberta")}
    out["t5"] = build_tiny_t5(root / "t5")
    out["bart"] = build_tiny_bart(root / "bart")
    out["llama"] = build_tiny_causal_lm(root / "llama")
    return out


@pytest.fixture(scope="module")
def bert(models: dict[str, str]) -> EmbeddingScorer:
    return EmbeddingScorer(EmbeddingScorer.Params(model=models["bert"], layer=LAYER, contexts=("none", "minimal", "full")))


def by_key(rows) -> dict[tuple[str, str, str], float]:
    return {(r.sample_id, r.context, r.variant): r.value for r in rows}


# ------------------------------------------------------------------ parameters and identity
@pytest.mark.parametrize(
    "mapping, field",
    [
        ({"model": "m", "contexts": ["none", "wide"]}, "contexts"),
        ({"model": "m", "contexts": []}, "contexts"),
        ({"model": "m", "dtype": "bfloat16"}, "dtype"),
        ({"model": "m", "mode": "fast", "dtype": "int8"}, "dtype"),
        ({"model": "m", "layer": -1}, "layer"),
        ({"model": "m", "device": "gpu0"}, "device"),
        ({"model": "m", "batch_tokens": 0}, "batch_tokens"),
        ({"model": "m", "baseline": "/no/such/file.tsv"}, "baseline"),
        ({"model": "m", "colour": "red"}, "colour"),
        ({}, "model"),
    ],
)
def test_params_are_validated(mapping: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        EmbeddingScorer.Params.from_mapping(mapping, where="score.embedding")


def test_identity_and_signatures(models: dict[str, str]) -> None:
    params = EmbeddingScorer.Params.from_mapping({"model": "pypi:all-MiniLM-L6-v2", "contexts": ["none", "full"], "idf": True})
    scorer = EmbeddingScorer(params)
    assert scorer.kind == "embedding" and scorer.model_key == "pypi:all-MiniLM-L6-v2"
    assert scorer.task_name.startswith("bertscore-all-MiniLM-L6-v2-") and "/" not in scorer.task_name
    other = EmbeddingScorer(EmbeddingScorer.Params(model="pypi:all-MiniLM-L6-v2", contexts=("none", "full")))
    assert other.task_name != scorer.task_name  # idf changes the numbers, so the task
    sigs = scorer.signatures()
    assert set(sigs) == {"bertscore/none", "bertscore/full"}
    assert scorer._loaded is None and not model_registry().resident()  # signatures never load the model
    fields = dict(part.split(":", 1) for part in sigs["bertscore/full"].split("|"))
    assert fields["metric"] == "bertscore" and fields["layer"] == "5"  # the shipped encoders.yaml
    assert fields["ctx"] == "full" and fields["window"] == "centred" and fields["idf"] == "refs-per-call"
    assert fields["dtype"] == "float32" and fields["mode"] == "compat" and fields["tok"] == "fast"
    assert fields["pack"] == "no"  # compat runs bert_score's own batches
    assert {"transformers", "torch", "babelscore", "attn", "rescale"} <= set(fields)
    assert dict(p.split(":", 1) for p in sigs["bertscore/none"].split("|"))["window"] == "trunc"


# ------------------------------------------------------------------ rows
def test_rows_shape_and_keys(bert: EmbeddingScorer) -> None:
    items = [item(f"s{i}", " " + p) for i, p in enumerate(PHRASES[:4])] + [item("s0", " noisy words", noise="uniform")]
    rows = bert.score(items)
    keys = [(r.sample_id, r.noise, r.metric, r.scorer, r.context, r.variant) for r in rows]
    assert len(keys) == len(set(keys)) == 5 * 3 * 4
    assert {r.variant for r in rows} == {"P", "R", "F", "mean-cos"}
    assert all(r.metric == "bertscore" and r.scorer == bert.params.model and r.error is None for r in rows)
    assert all(-1.0 <= r.value <= 1.0 for r in rows)
    assert rows[0].signature == bert.signatures()[f"bertscore/{rows[0].context}"]


def test_identical_candidate_and_reference_score_one(bert: EmbeddingScorer) -> None:
    """The prediction equals the reference tail: same text, same span, in every setting."""
    comment = "// returns the name of the user"
    rows = bert.score([item("s", comment[len("// returns"):], comment)])
    for r in rows:
        assert r.value == pytest.approx(1.0, abs=1e-6), r


def test_failures_become_error_rows(bert: EmbeddingScorer, monkeypatch) -> None:
    good = item("ok", " sort the list")
    bad_offsets = ScoreItem("bad", "f2", "en", "g", "none", "short", 0, 99, "// x", "", "y")
    poisoned = item("tok", " POISON here", file_id="f3")
    real = bert.runtime.tokenize

    def tokenize(texts, offsets=True):
        return [ValueError("cannot tokenize") if "POISON" in t else r for t, r in zip(texts, real(texts, offsets))]

    monkeypatch.setattr(bert.runtime, "tokenize", tokenize)
    rows = bert.score([good, bad_offsets, poisoned])
    for r in rows:
        if r.sample_id == "ok":
            assert r.error is None and not math.isnan(r.value)
        elif r.sample_id == "tok":
            assert math.isnan(r.value) and "cannot tokenize" in r.error
        elif r.context == "full":  # offsets outside the source only matter with the file
            assert math.isnan(r.value) and "span" in r.error
    assert len(rows) == 3 * 3 * 4


def test_group_with_different_predictions_is_an_error(bert: EmbeddingScorer) -> None:
    rows = bert.score([item("s", " a"), item("s", " b", comment="// returns other")])
    assert len(rows) == 12 and all(r.error and math.isnan(r.value) for r in rows)


# ------------------------------------------------------------------ contexts against a direct forward pass
def direct_scores(model_dir: str, cand: tuple[str, int, int], ref: tuple[str, int, int], layer: int) -> tuple[float, float, float, float]:
    """P, R, F, mean-cos computed here: whole text through the model, tokens picked by offsets."""
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()

    def embed(text: str, lo: int, hi: int):
        enc = tok(text, return_offsets_mapping=True, return_tensors="pt")
        offsets = enc.pop("offset_mapping")[0].tolist()
        with torch.no_grad():
            hidden = model(**enc, output_hidden_states=True).hidden_states[layer][0]
        ids = enc["input_ids"][0].tolist()
        special = [i in tok.all_special_ids for i in ids]
        scored = [not sp and s < hi and e > lo and e > s for (s, e), sp in zip(offsets, special)]
        keep = [a or b for a, b in zip(special, scored)]
        return hidden[keep], torch.tensor([s for s, k in zip(scored, keep) if k]), hidden[torch.tensor(scored)]

    ce, cs, c_raw = embed(*cand)
    re_, rs, r_raw = embed(*ref)
    sim = torch.nn.functional.normalize(ce, dim=-1) @ torch.nn.functional.normalize(re_, dim=-1).T
    p = sim.max(dim=1).values[cs].mean().item()
    r = sim.max(dim=0).values[rs].mean().item()
    cos = torch.nn.functional.cosine_similarity(c_raw.mean(0), r_raw.mean(0), dim=0).item()
    return p, r, 2 * p * r / (p + r), cos


@pytest.mark.parametrize("context", ["minimal", "full"])
def test_context_scores_equal_direct_computation(models: dict[str, str], bert: EmbeddingScorer, context: str) -> None:
    it = item("s", " gives the unhappy user name", comment="// returns the name of the user")
    got = by_key(bert.score([it]))
    from engine.context import candidate_text, reference_text

    c, r = candidate_text(it, context), reference_text(it, context)
    p, rec, f, cos = direct_scores(models["bert"], (c.text, c.span_start, c.span_end), (r.text, r.span_start, r.span_end), LAYER)
    assert got[("s", context, "P")] == pytest.approx(p, abs=1e-5)
    assert got[("s", context, "R")] == pytest.approx(rec, abs=1e-5)
    assert got[("s", context, "F")] == pytest.approx(f, abs=1e-5)
    assert got[("s", context, "mean-cos")] == pytest.approx(cos, abs=1e-5)


def test_long_files_and_long_spans_use_windows(bert: EmbeddingScorer) -> None:
    """Model window 64 tokens: a long file is cut around the comment; a comment over 64 tokens
    is scored in overlapping windows, each of its tokens once."""
    from engine.context import reference_text

    long_comment = "// returns " + " ".join(["the name of the user file path"] * 20)
    short = item("short", " the name of a user", filler=40)
    long = item("long", long_comment[len("// returns"):], comment=long_comment, filler=40)
    rows = by_key(bert.score([short, long]))
    assert all(not math.isnan(v) for v in rows.values())
    assert rows[("long", "full", "F")] == pytest.approx(1.0, abs=1e-6)
    job = bert.context_scoring("full")
    span = reference_text(long, "full")
    plan = job.plans([span])[(span.text, span.span_start, span.span_end)]
    assert len(plan.sequences) > 2 and all(len(s) <= 64 for s in plan.sequences)
    enc = bert.runtime.tokenizer(span.text, add_special_tokens=False, return_offsets_mapping=True)
    expected = [i for (s, e), i in zip(enc["offset_mapping"], enc["input_ids"]) if s < span.span_end and e > span.span_start and e > s]
    assert list(plan.span_ids) == expected  # every span token scored exactly once, in order


# ------------------------------------------------------------------ batching and sharing
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 1000), batch_tokens=st.sampled_from([1, 37, 200, 16384]))
def test_scores_do_not_depend_on_batching(bert: EmbeddingScorer, models: dict[str, str], seed: int, batch_tokens: int) -> None:
    rng = random.Random(seed)
    items = [
        item(f"s{i}", " " + rng.choice(PHRASES), comment="// returns " + rng.choice(PHRASES), file_id=f"f{i % 3}", filler=rng.randint(1, 30))
        for i in range(8)
    ]
    reference = by_key(bert.score(items))
    other = EmbeddingScorer(EmbeddingScorer.Params(model=models["bert"], layer=LAYER, contexts=("none", "minimal", "full"), batch_tokens=batch_tokens))
    shuffled = items[:]
    rng.shuffle(shuffled)
    half = len(shuffled) // 2
    got = by_key(other.score(shuffled[:half]) + other.score(shuffled[half:]))
    assert got.keys() == reference.keys()
    for key, value in reference.items():
        assert got[key] == pytest.approx(value, abs=1e-6), key


def test_reference_encoded_once_per_file(models: dict[str, str]) -> None:
    scorer = EmbeddingScorer(EmbeddingScorer.Params(model=models["bert"], layer=LAYER, contexts=("full",)))
    items = [item(f"f/{g}", f" the user name {g}") for g in range(5)]
    items += [item(f"f/{g}", "  ", noise="uniform") for g in range(5)]  # empty: no forward at all
    stats = scorer.runtime.stats  # the registry's runtime, shared by every scorer of this model
    stats.update(dict.fromkeys(stats, 0))
    scorer.score(items)
    assert scorer.runtime.stats["sequences"] == 5 + 1


@pytest.mark.parametrize("mode, method", [("compat", "forward_padded"), ("fast", "forward_packed")])
def test_oom_halves_the_batch(models: dict[str, str], monkeypatch, mode: str, method: str) -> None:
    scorer = EmbeddingScorer(EmbeddingScorer.Params(model=models["bert"], layer=LAYER, mode=mode, dtype="float32"))
    items = [item(f"s{i}", " " + p) for i, p in enumerate(PHRASES)]
    expected = by_key(scorer.score(items))
    real = getattr(scorer.runtime, method)  # fast mode packs these short sequences into shared rows

    def forward(seqs):
        if len(seqs) > 2:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(seqs)

    monkeypatch.setattr(scorer.runtime, method, forward)
    got = by_key(scorer.score(items))
    assert scorer.runtime.oom_halvings > 0
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-6)


def test_idf_over_unique_references_equals_bert_score_dict(models: dict[str, str]) -> None:
    bert_score = pytest.importorskip("bert_score")
    from transformers import AutoTokenizer

    refs = ["// returns the name of the user", "// returns the sum of two numbers", "// returns the sorted list"]
    preds = [" the user name", " a sum", " sorts the list", " the name of the list", " two numbers"]
    items = [item(f"{f}/{g}", preds[(f + g) % 5], comment=refs[f], prime="", file_id=str(f)) for f in range(3) for g in range(5)]
    scorer = EmbeddingScorer(EmbeddingScorer.Params(model=models["bert"], layer=LAYER, idf=True))
    got = scorer.score_texts([it.prediction for it in items], [it.reference_tail for it in items])
    idf_dict = bert_score.utils.get_idf_dict(refs, AutoTokenizer.from_pretrained(models["bert"]), nthreads=0)
    theirs = bert_score.score(
        [it.prediction for it in items], [it.reference_tail for it in items],
        model_type=models["bert"], num_layers=LAYER, idf=idf_dict, batch_size=1,
    )
    for name, want in zip(("P", "R", "F"), theirs):
        assert torch.allclose(torch.tensor(got[name], dtype=torch.float64), want.double(), atol=1e-6), name


def test_all_layers_match_single_layer_runs(models: dict[str, str]) -> None:
    items = [item(f"s{i}", " " + p) for i, p in enumerate(PHRASES[:5])]
    every = by_key(EmbeddingScorer(EmbeddingScorer.Params(model=models["bert"], all_layers=True, contexts=("minimal",))).score(items))
    assert {k[2] for k in every} == {f"layer-{k}/{v}" for k in range(4) for v in "PRF"} | {"mean-cos"}
    for layer in (0, 1, 3):
        single = by_key(EmbeddingScorer(EmbeddingScorer.Params(model=models["bert"], layer=layer, contexts=("minimal",))).score(items))
        for (sample, ctx, variant), value in single.items():
            if variant != "mean-cos":
                assert every[(sample, ctx, f"layer-{layer}/{variant}")] == pytest.approx(value, abs=1e-6)


@pytest.mark.parametrize("kind", ["electra", "deberta", "modernbert", "xlm-roberta", "t5", "bart", "llama"])
def test_architectures(models: dict[str, str], kind: str) -> None:
    scorer = EmbeddingScorer(EmbeddingScorer.Params(model=models[kind], layer=1, contexts=("none", "minimal", "full")))
    comment = "// returns the name of the user"
    rows = scorer.score([item("same", comment[len("// returns"):], comment), item("other", " sorts a list")])
    assert len(rows) == 2 * 3 * 4 and all(r.error is None for r in rows)
    for r in rows:
        assert -1.0 - 1e-6 <= r.value <= 1.0 + 1e-6
        if r.sample_id == "same":
            assert r.value == pytest.approx(1.0, abs=1e-5), r


def test_fast_bfloat16_close_to_float32(models: dict[str, str]) -> None:
    items = [item(f"s{i}", " " + p) for i, p in enumerate(PHRASES)]
    exact = by_key(EmbeddingScorer(EmbeddingScorer.Params(model=models["bert"], layer=LAYER)).score(items))
    fast = EmbeddingScorer(EmbeddingScorer.Params(model=models["bert"], layer=LAYER, mode="fast", dtype="bfloat16"))
    got = by_key(fast.score(items))
    signature = fast.signatures()["bertscore/none"]
    # A CPU without native bfloat16 (AVX2 only) runs it emulated, far slower: the scorer falls back
    # to float32 there (engine.runtime.hardware), and the signature must say which one ran.
    from engine.runtime.hardware import resolve_dtype

    ran = resolve_dtype("bfloat16", "cpu")
    assert f"dtype:{ran}|" in signature and "mode:fast" in signature
    assert "|pack:128|" in signature  # packed rows move values within the bound: never mixed with unpacked ones
    assert f"linear:{fast.runtime.linear_kernels}" in signature
    for key, value in exact.items():
        assert got[key] == pytest.approx(value, abs=0.03), key


def test_fast_float32_runs_prepacked_linears_within_float32_bound(models: dict[str, str]) -> None:
    from engine.metrics.cpu_fastpath import fused_linear_available

    items = [item(f"s{i}", " " + p) for i, p in enumerate(PHRASES)]
    exact = by_key(EmbeddingScorer(EmbeddingScorer.Params(model=models["bert"], layer=LAYER)).score(items))
    fast = EmbeddingScorer(EmbeddingScorer.Params(model=models["bert"], layer=LAYER, mode="fast", dtype="float32"))
    got = by_key(fast.score(items))
    # oneDNN's fused linear replaces nn.Linear (another kernel, another rounding order) in fast mode only.
    assert fast.runtime.linear_kernels == ("onednn" if fused_linear_available() else "torch")
    assert f"linear:{fast.runtime.linear_kernels}" in fast.signatures()["bertscore/none"]
    for key, value in exact.items():
        assert got[key] == pytest.approx(value, abs=1e-6), key


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_equals_cpu(models: dict[str, str]) -> None:
    items = [item(f"s{i}", " " + p) for i, p in enumerate(PHRASES)]
    cpu = by_key(EmbeddingScorer(EmbeddingScorer.Params(model=models["bert"], layer=LAYER, device="cpu")).score(items))
    gpu = by_key(EmbeddingScorer(EmbeddingScorer.Params(model=models["bert"], layer=LAYER, device="cuda")).score(items))
    for key, value in cpu.items():
        assert gpu[key] == pytest.approx(value, abs=1e-5)


def test_baseline_without_the_layer_row_is_a_config_error(models: dict[str, str], tmp_path: Path) -> None:
    table = tmp_path / "b.tsv"
    table.write_text("LAYER,P,R,F\n0,0.5,0.5,0.5\n1,0.6,0.6,0.6\n")
    scorer = EmbeddingScorer(EmbeddingScorer.Params(model=models["bert"], layer=LAYER, baseline=str(table)))
    with pytest.raises(ConfigError, match="layer 2"):
        scorer.score([item("s", " x")])
