"""FIM prompts from samples, and predictions from generated token ids.

A prompt is built as token ids, part by part, following the family's model card: special
tokens by id, text segments encoded exactly as written. Building ids rather than a string to
re-tokenize means a FIM marker can never be split or merged with its neighbours, and a
literal `<fim_middle>` inside a source file stays text (encoded with `split_special_tokens`).

The prime (the start of the reference given to the model) follows rule `letters` (the default;
how the study's published prompts were cut) or `text-tokens`; docs/generation.md ("The prime,
precisely") gives both rules token by token.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.errors import BabelscoreError
from engine.generate.cards import PRIME_RULES, FimCard

logger = logging.getLogger(__name__)

# The opener of a comment in any language the engine meets, then its layout: line breaks,
# indentation, and the decoration repeated at the start of continuation lines (` * `, `//`, `#`).
_OPENER = r"(?:/\*+!?|//+!?|#+|--+|;+|%+|[rRbBuUfF]{0,2}(?:\"\"\"|''')|<!--)"
_LAYOUT = r"(?:[ \t]*(?:\r\n|\r|\n)[ \t]*(?:\*(?!/)|//+!?|#+)?)*[ \t]*"
_HEAD = re.compile(rf"[ \t]*{_OPENER}{_LAYOUT}|\s*")
# A character outside the vocabularies of code tokenizers: encoded in front of a text so that
# a sentencepiece tokenizer's dummy prefix lands on it instead of on the text.
_SENTINEL = "\u263a"
_SPACE_MARKERS = ("▁", "Ġ")  # how sentencepiece / byte-level BPE write an implicit leading space


class PromptError(BabelscoreError):
    """A sample cannot become a prompt; the stage records the reason as an error row."""


class FimTokenError(BabelscoreError):
    """The tokenizer lacks the family's FIM tokens (or they do not encode to one special id)."""


@dataclass(frozen=True)
class FimPrompt:
    """A FIM prompt for one sample.

    `prefix` is `source[:comment_start] + prime`, `suffix` is `source[comment_end:]`; the prime
    spans `source[prime_start:prime_end]` (`prime_start == comment_start`).
    """

    prompt_ids: tuple[int, ...]
    prime: str
    prefix: str
    suffix: str
    prime_start: int
    prime_end: int
    text: str  # the prompt rendered with the card's `display` template (logs and docs)


def comment_head(reference: str) -> str:
    """The opener of a comment and its layout: `"/**\\n     * "` of a Javadoc comment, `"// "`."""
    match = _HEAD.match(reference)
    return match.group() if match else ""


_LETTER = re.compile(r"[^\W\d_]")


def make_prime(reference: str, tokenizer: Any, n_tokens: int = 3, rule: str = "letters") -> str:
    """The start of `reference` given to the generator, by `rule` (see the module docstring)."""
    if rule == "letters":
        return _letters_prime(reference, tokenizer, n_tokens)
    if rule == "text-tokens":
        return _text_tokens_prime(reference, tokenizer, n_tokens)
    raise ValueError(f"prime rule {rule!r}; allowed: {list(PRIME_RULES)}")


def letter_token_ends(reference: str, tokenizer: Any) -> list[int]:
    """End offsets, in order, of the tokens of `reference` that count for rule `letters`."""
    if not reference:
        return []
    encoding = tokenizer(reference, add_special_tokens=False, return_offsets_mapping=True, split_special_tokens=True)
    pieces = tokenizer.convert_ids_to_tokens(encoding["input_ids"])
    ends: list[int] = []
    previous: tuple[int, int] | None = None
    for piece, (start, end) in zip(pieces, encoding["offset_mapping"]):
        span = (int(start), int(end))
        # A bare space marker (a sentencepiece dummy prefix) may be given the span of the
        # character after it; it holds no character of its own. Byte pieces of one multi-byte
        # character share that character's span: the character counts once.
        if not piece.strip("".join(_SPACE_MARKERS)):
            continue
        if span != previous and end > start and _LETTER.search(reference[start:end]):
            ends.append(span[1])
        previous = span
    return ends


def _letters_prime(reference: str, tokenizer: Any, n_tokens: int) -> str:
    if n_tokens == 0:
        return ""
    ends = letter_token_ends(reference, tokenizer)
    if len(ends) < n_tokens:
        return reference
    return reference[: ends[n_tokens - 1]]


def _text_tokens_prime(reference: str, tokenizer: Any, n_tokens: int) -> str:
    head = comment_head(reference)
    body = reference[len(head):]
    if not body or n_tokens == 0:
        return head
    encoding = tokenizer(body, add_special_tokens=False, return_offsets_mapping=True, split_special_tokens=True)
    spans = [tuple(span) for span in encoding["offset_mapping"]]
    first = tokenizer.convert_ids_to_tokens(encoding["input_ids"][:1])
    if first and first[0] in _SPACE_MARKERS and not body[0].isspace():
        spans = spans[1:]  # a bare dummy-prefix marker: no character of the text
    spans = [(s, e) for s, e in spans if e > s]
    if not spans:
        return head
    # Byte-level tokens of one multi-byte character share its span, so spans are not
    # monotonic; the furthest end keeps every counted token whole.
    cut = max(e for _s, e in spans[:n_tokens])
    return head + body[:cut]


def adds_dummy_prefix(tokenizer: Any) -> bool:
    """Whether the tokenizer puts an implicit space marker in front of the text it encodes."""
    ids = tokenizer("a", add_special_tokens=False)["input_ids"]
    first = tokenizer.convert_ids_to_tokens(ids[:1])
    return bool(first) and first[0][:1] in _SPACE_MARKERS


def encode_exact(tokenizer: Any, text: str, dummy_prefix: bool | None = None) -> list[int]:
    """Token ids of `text` exactly as written: no special tokens, no implicit leading space.

    Under a sentencepiece-style tokenizer a sentinel character takes the dummy prefix and its
    tokens are dropped by offset (CodeLlama's `encode_infilling` does the same with "☺").
    """
    if not text:
        return []
    if dummy_prefix is None:
        dummy_prefix = adds_dummy_prefix(tokenizer)
    if not dummy_prefix:
        return list(tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])
    encoding = tokenizer(
        _SENTINEL + text, add_special_tokens=False, return_offsets_mapping=True, split_special_tokens=True
    )
    cut = len(_SENTINEL)
    ids = []
    for token_id, (start, end) in zip(encoding["input_ids"], encoding["offset_mapping"]):
        if start < cut < end:
            raise PromptError(f"the tokenizer merges text {text[:20]!r} with the sentinel; cannot encode it exactly")
        if start >= cut:
            ids.append(token_id)
    return ids


def fim_token_ids(card: FimCard, tokenizer: Any) -> dict[str, int]:
    """Name -> id of every token of the card present in the tokenizer as one special token.

    Raises FimTokenError when a token the prompt needs (or EOS) is missing or does not encode
    to exactly one special token id: such a prompt would silently produce garbage.
    """
    # A vocabulary's dedicated marker is an added token; most tokenizers also flag it special.
    special_ids = set(tokenizer.all_special_ids) | set(getattr(tokenizer, "added_tokens_decoder", {}))
    found: dict[str, int] = {}
    problems = []
    for name, token in card.tokens.items():
        ids = tokenizer(token, add_special_tokens=False)["input_ids"]
        if len(ids) == 1 and ids[0] in special_ids:
            found[name] = ids[0]
        elif token in card.required_tokens:
            problems.append(f"{token!r} encodes to {ids} (need exactly one special token id)")
    if problems:
        raise FimTokenError(
            f"the tokenizer lacks the FIM tokens of family {card.name!r}: " + "; ".join(problems)
            + ". Check that `card` matches the model."
        )
    missing_stops = [card.tokens[n] for n in card.stop if n not in found]
    if missing_stops:
        logger.debug("family %s: stop tokens absent from the tokenizer, skipped: %s", card.name, missing_stops)
    return found


class FimPromptBuilder:
    """Builds FIM prompts of one family under one tokenizer (checked once, on construction)."""

    def __init__(self, card: FimCard, tokenizer: Any, prime_tokens: int = 3, prime_rule: str | None = None):
        self.card = card
        self.tokenizer = tokenizer
        self.prime_tokens = prime_tokens
        self.prime_rule = prime_rule or card.prime_rule
        self.ids = fim_token_ids(card, tokenizer)
        self._dummy_prefix = adds_dummy_prefix(tokenizer)
        self.stop_ids: tuple[int, ...] = tuple(
            dict.fromkeys([self.ids[n] for n in card.stop if n in self.ids] + [self.ids["eos"]])
        )
        self.middle_id = self.ids["middle"]
        # A stop token written out by ordinary tokens shows up as its text or its decoded form.
        kw = {"skip_special_tokens": False, "clean_up_tokenization_spaces": False}
        forms = [card.tokens[name] for name in card.stop]
        forms += [tokenizer.decode([self.ids[n]], **kw) for n in card.stop if n in self.ids]
        forms += list(card.stop_strings)
        self._stop_texts = tuple(dict.fromkeys(f for f in forms if f.strip()))

    def build(self, source: str, comment_start: int, comment_end: int) -> FimPrompt:
        """The prompt for the comment at `source[comment_start:comment_end]`."""
        if not source:
            raise PromptError("empty source file")
        if not 0 <= comment_start <= comment_end <= len(source):
            raise PromptError(f"comment offsets [{comment_start}, {comment_end}) out of range for a file of {len(source)} characters")
        prime = make_prime(source[comment_start:comment_end], self.tokenizer, self.prime_tokens, self.prime_rule)
        prefix = source[:comment_start] + prime
        suffix = source[comment_end:]
        values = {"{prefix}": prefix, "{suffix}": suffix}
        ids: list[int] = []
        for part in self.card.prompt:
            if part.token is not None:
                ids.append(self.ids[part.token])
            else:
                placeholder = "{prefix}" if "{prefix}" in part.text else "{suffix}"
                text = part.text.replace(placeholder, values[placeholder])
                ids.extend(encode_exact(self.tokenizer, text, self._dummy_prefix))
        return FimPrompt(
            prompt_ids=tuple(ids),
            prime=prime,
            prefix=prefix,
            suffix=suffix,
            prime_start=comment_start,
            prime_end=comment_start + len(prime),
            text=self.card.display.format(prefix=prefix, suffix=suffix),
        )

    def decode(self, token_ids: Sequence[int]) -> str:
        """Text of generated ids as a continuation of the prompt.

        Decoded after the middle marker and cut after it, so a sentencepiece decoder keeps the
        leading space it would drop at the start of a text (" component", not "component").
        """
        if not token_ids:
            return ""
        kw = {"skip_special_tokens": False, "clean_up_tokenization_spaces": False}
        anchor = self.tokenizer.decode([self.middle_id], **kw)
        text = self.tokenizer.decode([self.middle_id, *token_ids], **kw)
        return text[len(anchor):] if text.startswith(anchor) else self.tokenizer.decode(list(token_ids), **kw)

    def clean(self, token_ids: Sequence[int]) -> tuple[str, str]:
        """(raw text of all generated ids, cleaned prediction: the text up to the first stop).

        The stop is found by id first; then the text is cut at the first stop string of the
        card (the study's list) or stop token spelled out by ordinary tokens.
        """
        ids = list(token_ids)
        raw = self.decode(ids)
        stops = set(self.stop_ids)
        end = next((i for i, t in enumerate(ids) if t in stops), len(ids))
        return raw, cut_at_stop_strings(self.decode(ids[:end]), self._stop_texts)


def cut_at_stop_strings(text: str, stop_strings: Sequence[str]) -> str:
    """`text` up to the earliest occurrence of any of `stop_strings` (all of it if none occurs)."""
    cut = len(text)
    for stop in stop_strings:
        at = text.find(stop, 0, cut + len(stop) - 1)
        if 0 <= at < cut:
            cut = at
    return text[:cut]
