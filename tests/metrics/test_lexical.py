"""Lexical metrics against their anchors: sacrebleu, rouge-score, nltk."""
from __future__ import annotations

import random

import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.translate.meteor_score import meteor_score as nltk_meteor
from rouge_score import rouge_scorer

from engine.items import ScoreItem
from engine.metrics.lexical import LexicalScorer, RougeL, SentenceBleu, lcs_length
from engine.metrics.meteor import MeteorParams, meteor_from_tokens
from engine.metrics.params import LexicalParams
from engine.metrics.text import UnicodeRougeTokenizer

PAIRS = [
    ("en", "Returns the name of the user.", "Return the user name."),
    ("en", "Computes the shortest path with Bellman-Ford.", "Computes shortest paths using the Bellman Ford algorithm"),
    ("nl", "Geeft de naam van de gebruiker terug.", "Geeft de gebruikersnaam terug."),
    ("zh", "返回用户的姓名。", "返回用户名。"),
    ("zh", "计算两个节点之间的最短路径", "计算最短路径"),
    ("el", "Επιστρέφει το όνομα του χρήστη.", "Επιστρέφει το όνομα."),
    ("pl", "Zwraca nazwę użytkownika.", "Zwraca imię użytkownika i nazwisko."),
    ("en", "", "non-empty hypothesis"),
    ("en", "x", ""),
]


class _NoWordNet:
    """nltk's METEOR with the synonym stage switched off."""

    def synsets(self, word):
        return []


@pytest.mark.parametrize("language,reference,hypothesis", PAIRS)
def test_bleu_equals_sacrebleu_sentence_bleu(language, reference, hypothesis):
    tokenize = "zh" if language == "zh" else "13a"
    ours = SentenceBleu(tokenize).score(hypothesis, reference)
    anchor = sacrebleu.sentence_bleu(hypothesis, [reference], tokenize=tokenize).score
    assert ours == anchor


def test_chinese_bleu_uses_the_zh_tokenizer():
    scorer = LexicalScorer(LexicalParams(metrics=("bleu",)))
    item = _item("zh", "返回用户的姓名。", "返回用户名。")
    (row,) = scorer.score([item])
    assert row.value == pytest.approx(sacrebleu.sentence_bleu("返回用户名。", ["返回用户的姓名。"], tokenize="zh").score)
    assert row.value > 0 and "tok:zh" in row.signature
    assert sacrebleu.sentence_bleu("返回用户名。", ["返回用户的姓名。"], tokenize="13a").score == 0.0


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from("the a user name returns of path node graph to from Value x1 y_2 set-up".split()), max_size=14),
    st.lists(st.sampled_from("the a user name returns of path node graph to from Value x1 y_2 set-up".split()), max_size=14),
    st.sampled_from([" ", ", ", ". ", " -- "]),
)
def test_rouge_l_equals_rouge_score_on_ascii_english(target_words, prediction_words, joiner):
    target, prediction = joiner.join(target_words), joiner.join(prediction_words)
    anchor = rouge_scorer.RougeScorer(["rougeL"]).score(target, prediction)["rougeL"]
    ours = RougeL().score(prediction, target)
    assert ours == pytest.approx((anchor.precision, anchor.recall, anchor.fmeasure), abs=1e-15)


@pytest.mark.parametrize(
    "text",
    ["计算两个节点之间的最短路径。", "Επιστρέφει το όνομα του χρήστη.", "Zwraca nazwę użytkownika, jeśli istnieje.", "Geeft de naam terug."],
)
def test_rouge_l_is_one_for_identical_non_english_comments(text):
    assert RougeL().score(text, text) == (1.0, 1.0, 1.0)
    # the anchor's default tokenizer keeps only [a-z0-9]: it cannot see these scripts
    if any(ord(c) > 0x370 for c in text) and "Zwraca" not in text:
        assert rouge_scorer.RougeScorer(["rougeL"]).score(text, text)["rougeL"].fmeasure == 0.0


def test_rouge_l_hand_worked_non_english_cases():
    # zh: target 返回用户的姓名 (6 chars: 返 回 用 户 的 姓 名 -> 7 tokens), prediction 返回用户名 (5 tokens);
    # LCS = 返回用户名 = 5 -> P = 5/5, R = 5/7.
    p, r, f = RougeL().score("返回用户名。", "返回用户的姓名。")
    assert (p, r) == (1.0, 5 / 7) and f == pytest.approx(2 * p * r / (p + r))
    # el: target 6 words, prediction 3 words all in order -> P = 1, R = 3/5 (τοῦ -> one word)
    p, r, _ = RougeL().score("Επιστρέφει το όνομα.", "Επιστρέφει το όνομα του χρήστη.")
    assert (p, r) == (1.0, 3 / 5)
    # pl: diacritics stay inside words; 'nazwę' != 'nazwa'
    p, r, _ = RougeL().score("zwraca nazwa", "Zwraca nazwę użytkownika")
    assert (p, r) == (1 / 2, 1 / 3)
    # a combining accent (NFD) is the same word as the precomposed letter (NFC)
    assert RougeL().score("caf\u00e9 ouvert", "cafe\u0301 ouvert") == (1.0, 1.0, 1.0)


def test_unicode_tokenizer_matches_rouge_score_default_on_ascii():
    text = "Returns the user_name (ID-42) of node #7!"
    assert UnicodeRougeTokenizer().tokenize(text) == rouge_scorer.tokenizers.DefaultTokenizer().tokenize(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=40), st.lists(st.integers(0, 5), max_size=40))
def test_bit_parallel_lcs_equals_dynamic_programming(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            table[i][j] = table[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(table[i - 1][j], table[i][j - 1])
    assert lcs_length(a, b) == table[-1][-1]


def test_meteor_reference_value_from_reference_md():
    value = meteor_from_tokens("Returns the name of the user .".split(), "Return the user name .".split(), "en", MeteorParams())
    assert value == 0.5470588235294118


def test_meteor_equals_nltk_on_english_with_synonyms_off():
    rng = random.Random(7)
    vocab = "returns return the a name names of user users computing computes path paths node nodes graph . , when if".split()
    for _ in range(300):
        ref = [rng.choice(vocab) for _ in range(rng.randint(0, 14))]
        hyp = [rng.choice(vocab) for _ in range(rng.randint(0, 14))]
        ours = meteor_from_tokens(ref, hyp, "en", MeteorParams(synonyms=False))
        if not ref or not hyp:
            assert ours == 0.0
            continue
        assert ours == nltk_meteor([ref], hyp, wordnet=_NoWordNet()), (ref, hyp)


def test_meteor_stems_by_language():
    ref, hyp = ["gebruikers", "namen"], ["gebruiker", "naam"]
    dutch = meteor_from_tokens(ref, hyp, "nl", MeteorParams())
    assert dutch > 0  # Snowball Dutch matches gebruikers/gebruiker
    assert meteor_from_tokens(ref, hyp, "pl", MeteorParams()) == 0.0  # no stemmer for Polish
    fields = MeteorParams().signature_fields("el")
    assert fields["stem"] == "none" and fields["syn"] == "no"


def _item(language, reference, prediction, prime=""):
    return ScoreItem(
        sample_id="s", file_id="f", language=language, generator="g", noise="none",
        source="x " + reference + " y", comment_start=2, comment_end=2 + len(reference),
        reference=reference, prime=prime, prediction=prediction,
    )


def test_scorer_compares_scored_spans_by_default_and_whole_comments_on_request():
    item = _item("en", "// Returns the name of the user.", " user name.", prime="// Returns the")
    scored = {r.metric + r.variant: r for r in LexicalScorer(LexicalParams()).score([item])}
    whole = {r.metric + r.variant: r for r in LexicalScorer(LexicalParams(span="whole")).score([item])}
    assert scored["bleuscore"].value == sacrebleu.sentence_bleu(" user name.", [" name of the user."]).score
    assert whole["bleuscore"].value == sacrebleu.sentence_bleu("// Returns the user name.", ["// Returns the name of the user."]).score
    assert "span:scored" in scored["bleuscore"].signature and "span:whole" in whole["bleuscore"].signature
    assert {r.variant for r in scored.values() if r.metric == "rougeL"} == {"P", "R", "F"}


_TOKENIZER_ALPHABET = st.sampled_from(
    list("ab Z09.,-'\"&;:()[]{}<>!?/\\@#$%^*_+=`~|") + [" ", " ", "  ", "\t", "\xa0", "5.", ".5", "-1", "计", "算", "。", "，", "é", "ß"]
)


@settings(max_examples=600, deadline=None)
@given(st.lists(_TOKENIZER_ALPHABET, max_size=30).map("".join), st.sampled_from(["13a", "zh"]))
def test_word_cached_tokenizer_equals_sacrebleu_on_any_line(line, name):
    from sacrebleu.metrics.bleu import BLEU

    from engine.metrics.bleu import WordCachedTokenizer

    anchor = BLEU(tokenize=name).tokenizer
    ours = WordCachedTokenizer(name, anchor)
    assert ours(line) == anchor(line)
    assert ours(line) == anchor(line)  # again, from the word cache
