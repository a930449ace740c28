"""FIM prompts: markers, primes, prompt token ids and offsets, cleaning, for every family.

Two kinds of tokenizers, both carrying the family's special tokens:
- "bytes" tokenizers built here without merges (one token per character, non-ASCII through
  bytes), so the expected primes can be written by hand;
- the trained tiny tokenizers of engine/testing/tiny_fim.py, whose prompt ids are compared
  with the families' own recipes: the single prompt string encoded by the tokenizer (what the
  StarCoder2 / CodeGemma / CodeQwen model cards show) and Meta's `infilling_prompt_tokens`
  for CodeLlama.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from engine.errors import ConfigError
from engine.generate.cards import load_cards
from engine.generate.fim import generation_limit
from engine.generate.params import GenerateParams
from engine.generate.prompts import (
    FimPromptBuilder,
    FimTokenError,
    PromptError,
    comment_head,
    encode_exact,
    fim_token_ids,
    make_prime,
)
from engine.records import SAMPLE_SCHEMA
from engine.testing.tiny_fim import build_tiny_fim_model

CARDS = load_cards()
FAMILIES = sorted(CARDS)
BYTE_LEVEL = [f for f in FAMILIES if CARDS[f].tokenizer_kind == "byte_level_bpe"]


def _bytes_tokenizer(family: str) -> PreTrainedTokenizerFast:
    """One token per character (ASCII) or per UTF-8 byte, plus the family's special tokens."""
    card = CARDS[family]
    if card.tokenizer_kind == "sentencepiece":
        vocab = {"<unk>": 0, "▁": 1}
        for ch in map(chr, range(33, 127)):
            vocab[ch] = len(vocab)
        for b in range(256):
            vocab[f"<0x{b:02X}>"] = len(vocab)
        tok = Tokenizer(models.BPE(vocab=vocab, merges=[], byte_fallback=True, unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    else:
        alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
        tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
    named = {k: card.tokens[k] for k in ("bos", "eos") if k in card.tokens}
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=named.get("bos"), eos_token=named["eos"],
        additional_special_tokens=[t for t in card.special_tokens if t not in named.values()],
    )


@pytest.fixture(scope="session")
def tiny_tokenizers(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("tiny_fim_tokenizers")
    return {f: AutoTokenizer.from_pretrained(build_tiny_fim_model(root / f, f)) for f in FAMILIES}


@pytest.mark.parametrize("family", FAMILIES)
def test_every_fim_marker_is_one_special_token(family: str, tiny_tokenizers) -> None:
    tok = tiny_tokenizers[family]
    ids = fim_token_ids(CARDS[family], tok)
    for name, token in CARDS[family].tokens.items():
        encoded = tok(token, add_special_tokens=False)["input_ids"]
        assert len(encoded) == 1, (token, encoded)
        assert encoded[0] in tok.all_special_ids
        assert ids[name] == encoded[0] == tok.convert_tokens_to_ids(token)


def test_tokenizer_without_fim_tokens_is_rejected(tiny_tokenizers) -> None:
    with pytest.raises(FimTokenError, match="<fim_prefix>"):
        fim_token_ids(CARDS["starcoder2"], tiny_tokenizers["codegemma"])


@pytest.mark.parametrize(
    "reference, head",
    [
        ("//bellman ford algorithm", "//"),
        ("// Returns x", "// "),
        ("/**\n     * Returns the component\n     */", "/**\n     * "),
        ("/**\r\n     *\r\n     * Returns x */", "/**\r\n     *\r\n     * "),
        ("# 返回图", "# "),
        ('"""Docstring."""', '"""'),
        ("// a\n    // b", "// "),
        ("//! crate docs", "//! "),
    ],
)
def test_comment_head(reference: str, head: str) -> None:
    assert comment_head(reference) == head


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(
    "reference, prime",
    [
        ("//bellman ford algorithm", "//bel"),
        ("/**\n     * Returns the component\n     */", "/**\n     * Ret"),
        ("/**\r\n     * Returns the component */", "/**\r\n     * Ret"),
        ("// 返回图中节点的数量", "// 返"),  # 3 bytes = one CJK character
        ("// 😀 smile", "// 😀"),  # the 3 tokens end inside the 4-byte emoji: it is kept whole
        ("# ab😀c", "# ab😀"),
        ("// ab", "// ab"),  # shorter than 3 tokens: all of it
        ("//", "//"),
    ],
)
def test_prime_keeps_head_and_three_tokens(family: str, reference: str, prime: str) -> None:
    assert make_prime(reference, _bytes_tokenizer(family), 3, rule="text-tokens") == prime


@pytest.mark.parametrize("family", FAMILIES)
def test_prime_counts_tokens_of_the_model_tokenizer(family: str, tiny_tokenizers) -> None:
    tok = tiny_tokenizers[family]
    reference = "/**\n     * Returns the component of the graph.\n     */"
    body = "Returns the component of the graph.\n     */"
    prime = make_prime(reference, tok, 3, rule="text-tokens")
    assert prime.startswith("/**\n     * ") and body.startswith(prime[len("/**\n     * "):])
    encoding = tok(body, add_special_tokens=False, return_offsets_mapping=True)
    tokens = tok.convert_ids_to_tokens(encoding["input_ids"])
    spans = [s for t, s in zip(tokens, encoding["offset_mapping"]) if t != "▁"]  # a bare dummy prefix
    assert len(prime) - len("/**\n     * ") == spans[2][1]


SOURCES = {
    "middle": ("class A {\n    // bellman ford algorithm here\n    int x;\n}\n", "// bellman ford algorithm here"),
    "start": ("// leading comment of the file\nint x;\n", "// leading comment of the file"),
    "end": ("int x;\n/* trailing block at the very end */", "/* trailing block at the very end */"),
    "crlf": ("class A {\r\n    /**\r\n     * Returns the graph.\r\n     */\r\n    int x;\r\n}\r\n",
             "/**\r\n     * Returns the graph.\r\n     */"),
    "cjk_emoji": ("s = \"中文😀\"  # 返回图中节点的数量 😀\nt = '😀'  # 第二\n", "# 返回图中节点的数量 😀"),
}


def _reference_prompt_ids(family: str, tok, prefix: str, suffix: str) -> list[int]:
    """The family's own recipe, independent of engine.generate.prompts."""
    card = CARDS[family]
    if card.tokenizer_kind == "sentencepiece":
        # Meta's infilling_prompt_tokens: [BOS, <PRE>] + encode(pre) + [<SUF>] + encode_infilling(suf) + [<MID>],
        # encode_infilling(s) = encode("☺" + s) without the tokens of "☺".
        t = card.tokens
        def ids(text):
            return tok(text, add_special_tokens=False)["input_ids"]

        def one(name):
            return tok.convert_tokens_to_ids(t[name])

        infill = ids("☺" + suffix)[len(ids("☺")):] if suffix else []
        return [one("bos"), one("prefix")] + ids(prefix) + [one("suffix")] + infill + [one("middle")]
    text = card.tokens["prefix"] + prefix + card.tokens["suffix"] + suffix + card.tokens["middle"]
    return tok(text, add_special_tokens=card.add_bos)["input_ids"]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("case", sorted(SOURCES))
def test_prompt_ids_and_offsets(family: str, case: str, tiny_tokenizers) -> None:
    tok = tiny_tokenizers[family]
    source, comment = SOURCES[case]
    start = source.index(comment)
    end = start + len(comment)
    prompt = FimPromptBuilder(CARDS[family], tok).build(source, start, end)

    assert prompt.prime_start == start
    assert prompt.prime_end == start + len(prompt.prime)
    assert source[prompt.prime_start:prompt.prime_end] == prompt.prime
    assert comment.startswith(prompt.prime) and len(prompt.prime) < len(comment)
    assert prompt.prefix == source[:start] + prompt.prime
    assert prompt.suffix == source[end:]
    assert list(prompt.prompt_ids) == _reference_prompt_ids(family, tok, prompt.prefix, prompt.suffix)
    if family in BYTE_LEVEL:  # byte-level BPE decodes back to the exact prompt text
        bos = CARDS[family].tokens["bos"] if CARDS[family].add_bos else ""
        assert tok.decode(list(prompt.prompt_ids), skip_special_tokens=False) == bos + prompt.text


@pytest.mark.parametrize("family", FAMILIES)
def test_literal_markers_in_source_stay_text(family: str, tiny_tokenizers) -> None:
    tok = tiny_tokenizers[family]
    card = CARDS[family]
    source = f'String s = "{card.tokens["middle"]}{card.tokens["eos"]}";\n// comment here\n'
    start = source.index("// comment")
    prompt = FimPromptBuilder(card, tok).build(source, start, start + len("// comment here"))
    ids = fim_token_ids(card, tok)
    assert list(prompt.prompt_ids).count(ids["middle"]) == 1
    assert ids["eos"] not in prompt.prompt_ids


def test_codellama_spacing(tiny_tokenizers) -> None:
    tok = tiny_tokenizers["codellama"]
    builder = FimPromptBuilder(CARDS["codellama"], tok)
    prompt = builder.build("a\n// x y z w\nb", 2, 12)
    tokens = tok.convert_ids_to_tokens(list(prompt.prompt_ids))
    assert tokens[:3] == ["<s>", "▁<PRE>", "▁a"]  # the space after <PRE>: the prefix's dummy prefix
    suf = tokens.index("▁<SUF>")
    assert tokens[suf + 1] == "\n"  # no space before the suffix
    assert tokens[-1] == "▁<MID>"
    assert prompt.text == f"<PRE> a\n{prompt.prime} <SUF>\nb <MID>"


@pytest.mark.parametrize("family", FAMILIES)
def test_clean_cuts_at_first_stop_token_and_keeps_raw(family: str, tiny_tokenizers) -> None:
    tok = tiny_tokenizers[family]
    card = CARDS[family]
    builder = FimPromptBuilder(card, tok)
    ids = fim_token_ids(card, tok)
    first_stop = ids[card.stop[0]]
    words = encode_exact(tok, " component of the graph")
    raw, cleaned = builder.clean(words + [first_stop] + encode_exact(tok, " tail"))
    assert cleaned == " component of the graph"  # leading space kept, also under sentencepiece
    assert raw.startswith(" component of the graph") and raw.endswith(" tail")
    assert card.tokens[card.stop[0]].replace("▁", " ").strip() in raw
    # a stop token spelled out with ordinary tokens is cut as well
    spelled = encode_exact(tok, " done" + card.tokens["eos"] + "more")
    assert builder.clean(spelled)[1] == " done"
    assert builder.clean([]) == ("", "")


STUDY_STOPS = ["<|file_separator|>", "<|endoftext|>", "<file_sep>", "<fim_suffix>", "<fim_middle>", "<fim_pad>",
               "<|fim_suffix|>", "<|fim_middle|>", "</s>", "<eos>", "<|end|>"]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("stop", STUDY_STOPS)
def test_clean_cuts_at_every_study_stop_string_of_the_card(family: str, stop: str) -> None:
    card = CARDS[family]
    assert list(card.stop_strings) == STUDY_STOPS
    builder = FimPromptBuilder(card, _bytes_tokenizer(family))
    # spelled out by ordinary tokens (split_special_tokens), whatever the family's own markers
    ids = encode_exact(builder.tokenizer, " returns x" + stop + " more <|end|>")
    raw, cleaned = builder.clean(ids)
    assert cleaned == " returns x"
    assert raw == " returns x" + stop + " more <|end|>"


def test_cut_at_stop_strings_takes_the_earliest() -> None:
    from engine.generate.prompts import cut_at_stop_strings

    assert cut_at_stop_strings("a<eos>b</s>c", ["</s>", "<eos>"]) == "a"
    assert cut_at_stop_strings("abc", ["</s>"]) == "abc"
    assert cut_at_stop_strings("</s>", ["</s>", "<eos>"]) == ""


def test_prompt_errors(tiny_tokenizers) -> None:
    builder = FimPromptBuilder(CARDS["starcoder2"], tiny_tokenizers["starcoder2"])
    with pytest.raises(PromptError, match="empty source file"):
        builder.build("", 0, 0)
    with pytest.raises(PromptError, match="out of range"):
        builder.build("abc", 2, 9)


def test_generation_limit_is_mean_plus_three_std(tiny_tokenizers, monkeypatch) -> None:
    tok = tiny_tokenizers["starcoder2"]
    refs = ["// a", "// the component of the graph", "/* 返回图中节点的数量 */", "// x y z w v u t s r q"]
    rows = []
    for i, ref in enumerate(refs):
        source = f"int x{i};\n{ref}\n"
        rows.append({"sample_id": f"f{i}", "file_id": f"f{i}", "language": "en", "source": source,
                         "comment_start": source.index(ref), "comment_end": source.index(ref) + len(ref), "reference": ref})
    rows.append({**rows[0], "sample_id": "f0/other"})  # a second row of file f0 does not count twice
    lengths = np.array([len(tok.encode(r, add_special_tokens=False)) for r in refs], dtype=float)
    expected = math.ceil(lengths.mean() + 3 * lengths.std(ddof=0))
    assert generation_limit(pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA), tok) == expected
    # The run's pre-pass streams the parts (a file never spans two): the same limit however they are cut.
    import engine.generate.fim as fim

    monkeypatch.setattr(fim, "generator_tokenizer", lambda name: tok)
    params = GenerateParams(model="m", card="starcoder2")
    parts = [[rows[0], rows[4]], rows[1:2], rows[2:4]]
    plan = fim.plan_generation((pa.Table.from_pylist(p, schema=SAMPLE_SCHEMA) for p in parts), params)
    assert plan == {"max_new_tokens": expected, "limit_source": "mean+3std", "generator": "m", "files": 4}


def test_generate_params_validation() -> None:
    with pytest.raises(ConfigError, match="card"):
        GenerateParams(model="m", card="gpt")
    with pytest.raises(ConfigError, match="batch_size"):
        GenerateParams.from_mapping({"model": "m", "card": "starcoder2", "batch_size": 0})
    with pytest.raises(ConfigError, match="backend"):
        GenerateParams.from_mapping({"model": "m", "card": "starcoder2", "backend": "tgi"})
    params = GenerateParams.from_mapping({"model": "bigcode/starcoder2-7b", "card": "starcoder2"})
    assert params.generator_name == "starcoder2-7b"
    assert json.loads(json.dumps(params.to_dict()))["card"] == "starcoder2"


def test_paper_config_generation_plan() -> None:
    import yaml

    from engine.build.params import BuildParams
    from tests.support.paths import REPO

    data = yaml.safe_load((REPO / "configs" / "paper.yaml").read_text(encoding="utf-8"))
    build = BuildParams.from_mapping(data["build"])
    generators = [GenerateParams.from_mapping(g) for g in data["generate"]["generators"]]
    assert len(build.languages) * build.files_per_language * len(generators) == 12_500
    assert sorted(g.card for g in generators) == FAMILIES  # one generator per family
    for g in generators:
        assert g.model in CARDS[g.card].models and g.tensor_parallel_size == 1 and g.backend == "vllm"
    assert len({g.generator_name for g in generators}) == 5
