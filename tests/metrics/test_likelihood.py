"""LikelihoodScorer against independent computations of BARTScore / GPTScore on tiny random models.

The oracles below are written the way BARTScore's own scorer is (tokenize, run the model with
`labels=`, log-softmax, gather, NLL at reduction='none' with pad ignored, divide by the target
length), not with any of the scorer's code.
"""
from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from engine.context import plan_windows  # noqa: E402
from engine.errors import ConfigError  # noqa: E402
from engine.items import ScoreItem  # noqa: E402
from engine.metrics.likelihood import LikelihoodScorer  # noqa: E402
from engine.testing.tiny_lm import build_tiny_bart, build_tiny_causal_lm, build_tiny_t5  # noqa: E402

ATOL = 1e-5


@pytest.fixture(scope="session")
def bart_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_tiny_bart(tmp_path_factory.mktemp("tiny-bart"))


@pytest.fixture(scope="session")
def t5_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_tiny_t5(tmp_path_factory.mktemp("tiny-t5"))


@pytest.fixture(scope="session")
def llama_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-llama"))


def _item(sample_id: str, reference: str, prime: str, prediction: str, noise: str = "none",
          before: str = "public class Graph {\n    ", after: str = "\n    int[] dist;\n}\n") -> ScoreItem:
    source = before + reference + after
    return ScoreItem(sample_id, "f-" + sample_id, "xx", "gen", noise, source, len(before),
                     len(before) + len(reference), reference, prime, prediction)


ITEMS = [
    _item("en", "// Returns the shortest path between two nodes.", "// Returns the", " shortest route between nodes."),
    _item("nl", "// Geeft het kortste pad tussen twee knopen terug.", "// Geeft het", " kortste pad terug."),
    _item("zh", "// 返回两个节点之间的最短路径。", "// 返回两个", "节点的最短路径。"),
    _item("el", "// Επιστρέφει τη συντομότερη διαδρομή.", "// Επιστρέφει τη", " συντομότερη διαδρομή μεταξύ κόμβων."),
    _item("pl", "/** Zwraca najkrótszą ścieżkę między węzłami. */", "/** Zwraca", " najkrótszą ścieżkę */"),
    _item("empty", "// Checks whether the list is empty.", "// Checks whether", ""),
    _item("noisy", "// Checks whether the list is empty.", "// Checks whether", " dist int Graph {", noise="uniform"),
]


def _scorer(model_dir: str, **options: object) -> LikelihoodScorer:
    # float32 unless a test says otherwise: the references below are computed in float32
    return LikelihoodScorer(LikelihoodScorer.Params.from_mapping({"model": model_dir, "dtype": "float32", **options}))


def _values(rows: list) -> dict[tuple[str, str, str, str], float]:
    return {(r.sample_id, r.noise, r.context, r.variant): r.value for r in rows}


# ----- oracles ----------------------------------------------------------------------------------
def _load(model_dir: str, causal: bool = False):
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    cls = transformers.AutoModelForCausalLM if causal else transformers.AutoModelForSeq2SeqLM
    return tokenizer, cls.from_pretrained(model_dir).eval()


def bartscore_reference(model_dir: str, srcs: list[str], tgts: list[str], batch_size: int = 4,
                        max_length: int = 1024) -> list[float]:
    """BARTScore's formula, step by step as in neulab/BARTScore's `BARTScorer.score`."""
    tokenizer, model = _load(model_dir)
    loss_fct = torch.nn.NLLLoss(reduction="none", ignore_index=model.config.pad_token_id)
    lsm = torch.nn.LogSoftmax(dim=1)
    scores = []
    for i in range(0, len(srcs), batch_size):
        with torch.no_grad():
            enc_src = tokenizer(srcs[i:i + batch_size], max_length=max_length, truncation=True,
                                padding=True, return_tensors="pt")
            enc_tgt = tokenizer(tgts[i:i + batch_size], max_length=max_length, truncation=True,
                                padding=True, return_tensors="pt")
            tgt_tokens = enc_tgt["input_ids"]
            tgt_len = enc_tgt["attention_mask"].sum(dim=1)
            output = model(input_ids=enc_src["input_ids"], attention_mask=enc_src["attention_mask"],
                           labels=tgt_tokens)
            logits = output.logits.view(-1, model.config.vocab_size)
            loss = loss_fct(lsm(logits), tgt_tokens.view(-1)).view(tgt_tokens.shape[0], -1)
            scores += [-x.item() for x in loss.sum(dim=1) / tgt_len]
    return scores


def seq2seq_token_logp(model_dir: str, src_ids: list[int], tgt_ids: list[int]) -> list[float]:
    """log p of each target token, one unbatched example."""
    _, model = _load(model_dir)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([src_ids]), labels=torch.tensor([tgt_ids])).logits[0]
    logp = torch.log_softmax(logits, dim=-1)
    return [logp[j, t].item() for j, t in enumerate(tgt_ids)]


def causal_token_logp(model_dir: str, ids: list[int]) -> list[float]:
    """log p of ids[1:], one unbatched sequence."""
    _, model = _load(model_dir, causal=True)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0]
    logp = torch.log_softmax(logits, dim=-1)
    return [logp[j - 1, ids[j]].item() for j in range(1, len(ids))]


def overlapping(offsets: list[tuple[int, int]], start: int, end: int) -> list[int]:
    return [i for i, (a, b) in enumerate(offsets) if b > a and a < end and b > start]


# ----- the `none` setting is BARTScore ----------------------------------------------------------
@pytest.mark.parametrize("which", ["bart", "t5"])
def test_none_equals_bartscore_formula(which: str, bart_dir: str, t5_dir: str) -> None:
    model_dir = bart_dir if which == "bart" else t5_dir
    rows = _scorer(model_dir, batch_size=3).score(ITEMS)
    refs = [it.reference_tail for it in ITEMS]
    preds = [it.prediction for it in ITEMS]
    forward = bartscore_reference(model_dir, refs, preds)
    reverse = bartscore_reference(model_dir, preds, refs)
    got = _values(rows)
    assert len(rows) == len(ITEMS) * 3
    for it, f, r in zip(ITEMS, forward, reverse):
        assert got[(it.sample_id, it.noise, "none", "forward")] == pytest.approx(f, abs=ATOL)
        assert got[(it.sample_id, it.noise, "none", "reverse")] == pytest.approx(r, abs=ATOL)
        assert got[(it.sample_id, it.noise, "none", "avg")] == pytest.approx((f + r) / 2, abs=ATOL)
    assert all(r.error is None and r.metric == "bartscore" and r.scorer == model_dir for r in rows)


def test_none_truncates_like_bartscore(bart_dir: str) -> None:
    long_pred = " ".join(["Zwraca najkrótszą ścieżkę między dwoma węzłami."] * 12)
    items = [_item("long", "// Returns the shortest path.", "// Returns", long_pred), ITEMS[0]]
    rows = _scorer(bart_dir, max_model_len=40, directions=["forward", "reverse"]).score(items)
    refs = [it.reference_tail for it in items]
    preds = [it.prediction for it in items]
    forward = bartscore_reference(bart_dir, refs, preds, max_length=40)
    reverse = bartscore_reference(bart_dir, preds, refs, max_length=40)
    got = _values(rows)
    for it, f, r in zip(items, forward, reverse):
        assert got[(it.sample_id, "none", "none", "forward")] == pytest.approx(f, abs=ATOL)
        assert got[(it.sample_id, "none", "none", "reverse")] == pytest.approx(r, abs=ATOL)


# ----- context settings: context is read, only the span is averaged ------------------------------
@pytest.mark.parametrize("which", ["bart", "t5"])
def test_minimal_averages_exactly_the_span_tokens(which: str, bart_dir: str, t5_dir: str) -> None:
    model_dir = bart_dir if which == "bart" else t5_dir
    tokenizer, _ = _load(model_dir)
    got = _values(_scorer(model_dir, contexts=["minimal"], directions=["forward", "reverse"]).score(ITEMS))
    for it in ITEMS:
        if not it.prediction:
            continue
        cand, ref = it.prime + it.prediction, it.reference
        for direction, src, tgt, span_start in (("forward", ref, cand, len(it.prime)),
                                                 ("reverse", cand, ref, len(it.prime))):
            enc = tokenizer(tgt, return_offsets_mapping=True)
            logp = seq2seq_token_logp(model_dir, tokenizer(src)["input_ids"], enc["input_ids"])
            chosen = overlapping(enc["offset_mapping"], span_start, len(tgt))
            assert 0 < len(chosen) < len(logp) - 1  # the prime's tokens and the specials are left out
            expected = sum(logp[i] for i in chosen) / len(chosen)
            assert got[(it.sample_id, it.noise, "minimal", direction)] == pytest.approx(expected, abs=ATOL)
            everything = sum(logp) / len(logp)
            assert abs(everything - expected) > 1e-4  # the span average really differs from the full one


def test_context_changes_score_only_through_model_input(bart_dir: str) -> None:
    """Same prediction, different prime: the averaged tokens are the prediction's in both."""
    tokenizer, _ = _load(bart_dir)
    a = _item("a", "// Returns the shortest path.", "// Returns the", " shortest path.")
    b = _item("b", "// Computes the shortest path.", "// Computes the", " shortest path.")
    got = _values(_scorer(bart_dir, contexts=["minimal", "none"], directions=["forward"]).score([a, b]))
    assert got[("a", "none", "none", "forward")] == pytest.approx(got[("b", "none", "none", "forward")], abs=1e-6)
    assert abs(got[("a", "none", "minimal", "forward")] - got[("b", "none", "minimal", "forward")]) > 1e-6
    ids_a = tokenizer(a.candidate_comment, return_offsets_mapping=True)
    ids_b = tokenizer(b.candidate_comment, return_offsets_mapping=True)
    span_a = [ids_a["input_ids"][i] for i in overlapping(ids_a["offset_mapping"], len(a.prime), 10**6)]
    span_b = [ids_b["input_ids"][i] for i in overlapping(ids_b["offset_mapping"], len(b.prime), 10**6)]
    assert span_a == span_b  # the same tokens are averaged; only what the model reads differs


def test_full_context_fits_equals_whole_file_computation(bart_dir: str) -> None:
    tokenizer, _ = _load(bart_dir)
    it = ITEMS[4]
    got = _values(_scorer(bart_dir, contexts=["full"], directions=["forward"]).score([it]))
    cand = it.candidate_in_context()
    start = it.comment_start + len(it.prime)
    enc = tokenizer(cand, return_offsets_mapping=True)
    logp = seq2seq_token_logp(bart_dir, tokenizer(it.source)["input_ids"], enc["input_ids"])
    chosen = overlapping(enc["offset_mapping"], start, start + len(it.prediction))
    expected = sum(logp[i] for i in chosen) / len(chosen)
    assert got[(it.sample_id, "none", "full", "forward")] == pytest.approx(expected, abs=ATOL)


def test_full_context_windows_long_files(bart_dir: str) -> None:
    """A file longer than the window: the target is cut to the centred window; a long span to several."""
    tokenizer, _ = _load(bart_dir)
    filler = "".join(f"    int field{i} = {i};\n" for i in range(40))
    long_pred = " ".join(["najkrótszą ścieżkę między węzłami"] * 6)
    items = [
        _item("short", "// Returns the shortest path.", "// Returns", " the shortest route.", before=filler, after=filler),
        _item("long", "// Returns the shortest path.", "// Returns", long_pred, before=filler, after=filler),
    ]
    max_length = 48
    got = _values(_scorer(bart_dir, contexts=["full"], directions=["forward"], max_model_len=max_length).score(items))
    for it in items:
        src_enc = tokenizer(it.source, return_offsets_mapping=True, add_special_tokens=False)
        tgt_text = it.candidate_in_context()
        tgt_enc = tokenizer(tgt_text, return_offsets_mapping=True, add_special_tokens=False)
        s_start = it.comment_start + len(it.prime)
        src_span = overlapping(src_enc["offset_mapping"], s_start, it.comment_end)
        tgt_span = overlapping(tgt_enc["offset_mapping"], s_start, s_start + len(it.prediction))
        src_window = plan_windows(len(src_enc["input_ids"]), src_span[0], src_span[-1] + 1, max_length - 2)[0]
        src_ids = [0] + src_enc["input_ids"][src_window.start:src_window.end] + [2]
        windows = plan_windows(len(tgt_enc["input_ids"]), tgt_span[0], tgt_span[-1] + 1, max_length - 2)
        assert (len(windows) > 1) == (it.sample_id == "long")
        total, count = 0.0, 0
        for w in windows:
            logp = seq2seq_token_logp(bart_dir, src_ids, [0] + tgt_enc["input_ids"][w.start:w.end] + [2])
            for i in range(w.score_start, w.score_end):
                total += logp[1 + i - w.start]
                count += 1
        assert count == len(tgt_span)
        assert got[(it.sample_id, "none", "full", "forward")] == pytest.approx(total / count, abs=ATOL)


# ----- causal LMs ---------------------------------------------------------------------------------
def test_causal_lm_gptscore_prompt(llama_dir: str) -> None:
    tokenizer, _ = _load(llama_dir, causal=True)
    rows = _scorer(llama_dir, contexts=["none", "minimal"], directions=["forward", "reverse"]).score(ITEMS)
    assert {r.metric for r in rows} == {"gptscore"}
    got = _values(rows)

    def ids(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    for it in ITEMS:
        # none: [BOS] src "\n" tgt [EOS], every target token and EOS averaged
        for direction, src, tgt in (("forward", it.reference_tail, it.prediction),
                                    ("reverse", it.prediction, it.reference_tail)):
            prefix = [tokenizer.bos_token_id] + ids(src) + ids("\n")
            target = ids(tgt) + [tokenizer.eos_token_id]
            logp = causal_token_logp(llama_dir, prefix + target)[len(prefix) - 1:]
            assert got[(it.sample_id, it.noise, "none", direction)] == pytest.approx(sum(logp) / len(logp), abs=ATOL)
        if not it.prediction:
            assert math.isnan(got[(it.sample_id, it.noise, "minimal", "forward")])
            continue
        # minimal, forward: [BOS] reference "\n" prime+prediction, the prediction's tokens averaged
        tgt = it.prime + it.prediction
        enc = tokenizer(tgt, add_special_tokens=False, return_offsets_mapping=True)
        prefix = [tokenizer.bos_token_id] + ids(it.reference) + ids("\n")
        logp = causal_token_logp(llama_dir, prefix + enc["input_ids"])[len(prefix) - 1:]
        chosen = overlapping(enc["offset_mapping"], len(it.prime), len(tgt))
        assert 0 < len(chosen) < len(logp)
        expected = sum(logp[i] for i in chosen) / len(chosen)
        assert got[(it.sample_id, it.noise, "minimal", "forward")] == pytest.approx(expected, abs=ATOL)


def test_causal_full_context_long_file_is_finite(llama_dir: str) -> None:
    filler = "".join(f"    int field{i} = {i};\n" for i in range(60))
    it = _item("long", "// Returns the shortest path.", "// Returns", " the shortest route.", before=filler, after=filler)
    rows = _scorer(llama_dir, contexts=["full"], max_model_len=96).score([it])
    assert all(r.error is None and math.isfinite(r.value) for r in rows), rows


# ----- batching, errors, bookkeeping --------------------------------------------------------------
@pytest.mark.parametrize("which", ["bart", "llama"])
def test_batch_composition_and_order_invariance(which: str, bart_dir: str, llama_dir: str) -> None:
    model_dir = bart_dir if which == "bart" else llama_dir
    contexts = ["none", "minimal", "full"]
    base = _values(_scorer(model_dir, contexts=contexts, batch_size=1).score(ITEMS))
    shuffled = ITEMS[::-1][1:] + ITEMS[-1:]
    for batch_size, items in ((5, ITEMS), (3, shuffled), (8, ITEMS[2:5])):
        other = _values(_scorer(model_dir, contexts=contexts, batch_size=batch_size).score(items))
        for key, value in other.items():
            if math.isnan(base[key]):
                assert math.isnan(value)
            else:
                assert value == pytest.approx(base[key], abs=1e-6), key


def test_failing_item_gives_nan_rows_and_others_survive(bart_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    scorer = _scorer(bart_dir, batch_size=4)
    good = _values(scorer.score(ITEMS))
    real_forward = scorer._forward

    def failing_forward(batch):  # sequences of item 2 make the model fail
        if any(job.key[0] == 2 for job in batch):
            raise RuntimeError("boom")
        return real_forward(batch)

    monkeypatch.setattr(scorer, "_forward", failing_forward)
    rows = scorer.score(ITEMS)
    for r in rows:
        key = (r.sample_id, r.noise, r.context, r.variant)
        if r.sample_id == ITEMS[2].sample_id:
            assert math.isnan(r.value) and "boom" in r.error
        else:
            assert r.error is None and r.value == pytest.approx(good[key], abs=1e-6)


def test_empty_span_in_context_is_an_error_row_not_a_crash(bart_dir: str) -> None:
    rows = _scorer(bart_dir, contexts=["minimal"]).score([ITEMS[5]])
    by_variant = {r.variant: r for r in rows}
    assert math.isnan(by_variant["forward"].value) and "scored span" in by_variant["forward"].error
    assert math.isnan(by_variant["avg"].value) and by_variant["avg"].error
    assert math.isfinite(by_variant["reverse"].value) and by_variant["reverse"].error is None


def test_rows_signatures_and_names(bart_dir: str, t5_dir: str, llama_dir: str) -> None:
    scorer = _scorer(bart_dir, contexts=["none", "full"], directions=["avg"])
    rows = scorer.score(ITEMS[:2])
    assert [(r.sample_id, r.context, r.variant) for r in rows] == [
        ("en", "none", "avg"), ("en", "full", "avg"), ("nl", "none", "avg"), ("nl", "full", "avg")]
    sigs = scorer.signatures()
    assert set(sigs) == {"none", "full"}
    assert sigs["full"].startswith("metric:bartscore|") and "|arch:seq2seq|ctx:full|dirs:avg|" in sigs["full"]
    assert "transformers:" in sigs["none"] and "torch:" in sigs["none"] and "dtype:float32" in sigs["none"]
    assert all(r.signature == sigs[r.context] for r in rows)
    assert scorer.task_name.startswith("bartscore-") and "/" not in scorer.task_name
    assert _scorer(t5_dir).architecture == "seq2seq"
    causal = _scorer(llama_dir)
    assert causal.architecture == "causal" and causal.task_name.startswith("gptscore-")
    assert causal.model_key != scorer.model_key
    assert _scorer(bart_dir).score([]) == []


@pytest.mark.parametrize("options, fragment", [
    ({"model": "m", "directions": ["sideways"]}, "directions"),
    ({"model": "m", "contexts": []}, "contexts"),
    ({"model": "m", "batch_size": 0}, "batch_size"),
    ({"model": "m", "max_model_len": 4}, "max_model_len"),
    ({"model": "m", "device": "gpu"}, "device"),
    ({"model": "m", "dtype": "int8"}, "dtype"),
    ({"model": "m", "colour": "red"}, "colour"),
    ({}, "model"),
])
def test_params_validation(options: dict, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        LikelihoodScorer.Params.from_mapping(options, where="score.scorers[0]")
