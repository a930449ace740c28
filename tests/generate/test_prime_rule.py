"""The `letters` prime rule under real-vocabulary-like tokenizers built here.

Two tokenizers whose vocabularies are crafted so that the words of the examples split the way
a Llama-2 vocabulary splits them (`G` + `iven`, `out` + `side`, ` jav` + `adoc`):
- a Llama-style sentencepiece BPE (tokenizer.json form: a "▁" dummy prefix prepended, spaces
  written as "▁", byte fallback for characters outside the vocabulary);
- a GPT-2 style byte-level BPE (regex pre-tokenization, "Ġ" for a space, no dummy prefix).
Both tests check the token splits first, so a vocabulary that stops splitting as intended
fails loudly instead of silently testing something else.
"""
from __future__ import annotations

import pytest
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from engine.generate.cards import load_cards
from engine.generate.prompts import FimPromptBuilder, letter_token_ends, make_prime

WORDS = ["//", "iven", " sides", " of", " a", " tri", "angle", "/**", " <", " The", " jav", "adoc", "out", "side",
         " this", " *", "'s", "Jo", " Returns", " the"]


def _merges_for(words: list[str], space: str) -> tuple[list[str], list[tuple[str, str]]]:
    """Vocabulary entries and merges that build each word from its characters, left to right."""
    entries, merges = [], []
    for word in words:
        w = word.replace(" ", space)
        for i in range(1, len(w)):
            if (w[:i], w[i]) not in merges:
                merges.append((w[:i], w[i]))
            entries.append(w[: i + 1])
    return entries, merges


def _sentencepiece_like() -> PreTrainedTokenizerFast:
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for ch in ["▁"] + [chr(c) for c in range(33, 127)]:
        vocab.setdefault(ch, len(vocab))
    words = ["▁//", "▁/**", "▁▁"] + ["▁" + w[1:] if w.startswith(" ") else w for w in WORDS if w not in ("//", "/**")]
    entries, merges = _merges_for(words, "▁")
    for entry in entries:
        vocab.setdefault(entry, len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   additional_special_tokens=["<fim_middle>"])


def _byte_level() -> PreTrainedTokenizerFast:
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {c: i for i, c in enumerate(alphabet)}
    entries, merges = _merges_for(WORDS, "Ġ")
    for entry in entries:
        vocab.setdefault(entry, len(vocab))
    vocab["<|endoftext|>"] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>",
                                   additional_special_tokens=["<fim_middle>"])


TOKENIZERS = {"sentencepiece": _sentencepiece_like(), "byte_level": _byte_level()}
KINDS = sorted(TOKENIZERS)


def _tokens(tok: PreTrainedTokenizerFast, text: str) -> list[str]:
    """The characters each token covers (offsets), in order."""
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    return [text[a:b] for a, b in enc["offset_mapping"]]


def _pieces(tok: PreTrainedTokenizerFast, text: str) -> list[str]:
    return tok.convert_ids_to_tokens(tok(text, add_special_tokens=False)["input_ids"])


# (reference, expected prime, expected leading tokens (as covered text), the counted tokens)
EXAMPLES = [
    ("//2-Given sides of a triangle", "//2-Given sides", ["//", "2", "-", "G", "iven", " sides"], ["G", "iven", " sides"]),
    ("/** <b>\n     * The javadoc of it", "/** <b>\n     * The jav",
     ["/**", " <", "b", ">"], ["b", " The", " jav"]),
    ("//outside of this", "//outside of", ["//", "out", "side", " of"], ["out", "side", " of"]),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reference, prime, leading, counted", EXAMPLES)
def test_study_examples_hold_token_by_token(kind, reference, prime, leading, counted) -> None:
    tok = TOKENIZERS[kind]
    tokens = _tokens(tok, reference)
    assert tokens[: len(leading)] == leading
    ends = letter_token_ends(reference, tok)
    assert ends[:3] == [reference.index(c, e0) + len(c) for c, e0 in zip(counted, [0] + ends[:2])]
    assert make_prime(reference, tok) == prime  # the default rule is `letters`, 3 tokens
    assert make_prime(reference, tok, 3, rule="letters") == prime


def test_vocabularies_look_like_the_real_ones() -> None:
    """The pieces as the real vocabularies write them: dummy prefix, ▁ and Ġ spaces, byte fallback."""
    sp, bl = TOKENIZERS["sentencepiece"], TOKENIZERS["byte_level"]
    assert _pieces(sp, "//2-Given sides") == ["▁//", "2", "-", "G", "iven", "▁sides"]
    assert _pieces(bl, "//2-Given sides") == ["//", "2", "-", "G", "iven", "Ġsides"]
    assert _pieces(sp, "/** <b>\n     * The javadoc")[:11] == [
        "▁/**", "▁<", "b", ">", "<0x0A>", "▁▁", "▁▁", "▁*", "▁The", "▁jav", "adoc"]
    assert _pieces(bl, "/** <b>\n     * The javadoc") == ["/**", "Ġ<", "b", ">", "Ċ", "Ġ", "Ġ", "Ġ", "Ġ", "Ġ*", "ĠThe",
                                                        "Ġjav", "adoc"]
    assert _pieces(sp, "John")[:2] == ["▁", "Jo"]  # a bare dummy-prefix marker in front of a word


@pytest.mark.parametrize("kind", KINDS)
def test_digit_punctuation_whitespace_and_comment_marker_tokens_do_not_count(kind) -> None:
    tok = TOKENIZERS[kind]
    reference = "// 2024-11 -- 42:\n    // * Returns the graph"
    assert make_prime(reference, tok) == "// 2024-11 -- 42:\n    // * Returns the g"
    # the letter-free tokens exist and are skipped, not merged away
    assert {"2", "0", "-", ":"} <= {t.strip() for t in _tokens(tok, reference)}


@pytest.mark.parametrize("kind", KINDS)
def test_an_apostrophe_s_token_counts(kind) -> None:
    tok = TOKENIZERS[kind]
    reference = "//A B's value"
    assert "'s" in _tokens(tok, reference)
    assert make_prime(reference, tok) == "//A B's"


def test_a_bare_dummy_prefix_marker_does_not_count() -> None:
    tok = TOKENIZERS["sentencepiece"]
    # "▁" gets the span of "J" here; counted it would end the prime at "Joh" instead of "John".
    enc = tok("John's car", add_special_tokens=False, return_offsets_mapping=True)
    assert _pieces(tok, "John's car")[0] == "▁" and enc["offset_mapping"][0][1] > 0
    assert make_prime("John's car", tok) == "John"


@pytest.mark.parametrize("kind", KINDS)
def test_a_character_split_into_byte_tokens_counts_once(kind) -> None:
    tok = TOKENIZERS[kind]
    reference = "// 返回图的"  # none of these characters is in the vocabulary: byte tokens
    assert len([p for p in _pieces(tok, "返") if p != "▁"]) == 3
    assert make_prime(reference, tok) == "// 返回图"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reference", ["// 1 2 3", "//ab", "/** x */", "#", ""])
def test_fewer_than_three_letter_tokens_give_the_whole_comment(kind, reference) -> None:
    tok = TOKENIZERS[kind]
    assert len(letter_token_ends(reference, tok)) < 3
    assert make_prime(reference, tok) == reference


@pytest.mark.parametrize("kind", KINDS)
def test_a_literal_fim_marker_in_the_comment_is_text(kind) -> None:
    tok = TOKENIZERS[kind]
    # split_special_tokens: the marker's letters are ordinary text tokens (f, i, m, ...)
    assert make_prime("// <fim_middle> x", tok) == "// <fim"


def test_the_text_tokens_rule_stays_available() -> None:
    tok = TOKENIZERS["sentencepiece"]
    # opener and layout, then 3 tokens of "2-Given sides" tokenized alone: 2, -, G
    assert make_prime("//2-Given sides of a triangle", tok, rule="text-tokens") == "//2-G"
    with pytest.raises(ValueError, match="letters"):
        make_prime("// x", tok, rule="words")


def test_every_shipped_card_defaults_to_the_letters_rule_and_the_builder_uses_it() -> None:
    cards = load_cards()
    assert {c.prime_rule for c in cards.values()} == {"letters"}
    card = cards["starcoder2"]
    tok = _byte_level()
    tok.add_special_tokens({"additional_special_tokens": list(card.special_tokens)})
    source = "class A {\n    //2-Given sides of a triangle\n    int x;\n}\n"
    start = source.index("//")
    end = source.index("\n", start)
    assert FimPromptBuilder(card, tok).build(source, start, end).prime == "//2-Given sides"
    assert FimPromptBuilder(card, tok, prime_rule="text-tokens").build(source, start, end).prime == "//2-G"
