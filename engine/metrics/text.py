"""Unicode-aware word tokenisation shared by the lexical metrics.

rouge-score's default tokenizer keeps only [a-z0-9], so Chinese and Greek comments score 0
even when identical (rouge-score 0.1.2's `tokenize`). Here CJK ideographs, kana and hangul syllables are one
token each and other scripts split on word boundaries; on ASCII text the ROUGE tokens are
exactly rouge-score's (lowercased runs of [a-z0-9]).
"""
from __future__ import annotations

import re
import unicodedata

# Scripts written without spaces between words: one token per character.
_CJK_RANGES = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\U00020000-\U0002ffff"  # CJK extensions B-F
)
# A word: letters/digits of any script except '_' (rouge-score splits on '_') and CJK.
_ROUGE_TOKEN = re.compile(f"[{_CJK_RANGES}]|[^\\W_{_CJK_RANGES}]+")
# METEOR works on words and punctuation marks as separate tokens (nltk expects pre-tokenised input).
_METEOR_TOKEN = re.compile(f"[{_CJK_RANGES}]|[^\\W{_CJK_RANGES}]+|[^\\w\\s]")


def normalise(text: str) -> str:
    """NFC so that a letter with a combining accent is one word character."""
    return unicodedata.normalize("NFC", text)


class UnicodeRougeTokenizer:
    """Tokenizer object for rouge-score's `RougeScorer(tokenizer=...)` and for our own ROUGE-L."""

    def tokenize(self, text: str) -> list[str]:
        return _ROUGE_TOKEN.findall(normalise(text).lower())


def meteor_tokens(text: str) -> list[str]:
    """Words and punctuation marks, case kept (METEOR lowercases itself)."""
    return _METEOR_TOKEN.findall(normalise(text))
