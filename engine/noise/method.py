"""Stage `noise`'s method: synthetic predictions that a robust metric must score below real ones.

For every sample and every configured kind, a noise prediction with as many tokens as the
reference's scored span under the generator's tokenizer: `uniform` draws token ids from the
vocabulary less every special, added or reserved entry (RESERVED_TOKEN); `targeted` draws token
positions from the file's context outside the comment (a sample without context tokens gets
uniform noise instead, with a warning). The prediction is the decode of the sampled ids.

Each (seed, sample_id, kind) has its own generator seeded through blake2b, so a sample's noise
does not depend on which part or order it comes in. docs/calibration.md describes the kinds,
the token count and what is reproducible exactly.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from engine.errors import ModelLoadError, StageError
from engine.noise.params import NoiseParams
from engine.records import NOISE_SCHEMA

logger = logging.getLogger(__name__)

# Vocabulary entries that are not text: placeholders, byte-fallback pieces, control names.
RESERVED_TOKEN = re.compile(r"\[unused\d+\]|<unused\d+>|<0x[0-9A-Fa-f]{2}>|\[[A-Z][A-Z_]*\]|<\|[^|]*\|>")


@dataclass(frozen=True)
class TokenizerInfo:
    """A loaded fast tokenizer with what noise sampling needs from it.

    vocab_ids: (V,) int64 sorted ids of the non-special vocabulary; special_ids: excluded ids.
    """

    name: str
    tokenizer: Any
    vocab_ids: np.ndarray
    special_ids: frozenset[int]

    def encode(self, texts: list[str]) -> list[list[int]]:
        """Token ids of each text, no special tokens added, no truncation."""
        if not texts:
            return []
        return self.tokenizer(texts, add_special_tokens=False, return_attention_mask=False, verbose=False)["input_ids"]

    def decode(self, ids: np.ndarray) -> str:
        return self.tokenizer.decode([int(i) for i in ids], skip_special_tokens=False,
                                     clean_up_tokenization_spaces=False)


@functools.lru_cache(maxsize=16)
def load_tokenizer_info(name: str) -> TokenizerInfo:
    """Load (once per process) the fast tokenizer configured as `name`, with its sampling vocabulary."""
    from engine.runtime import load_tokenizer as load_fast_tokenizer

    tok = load_fast_tokenizer(name, fast=True)
    special = excluded_ids(tok)
    vocab = np.array(sorted(set(int(i) for i in tok.get_vocab().values()) - special), dtype=np.int64)
    if vocab.size == 0:
        raise ModelLoadError(f"tokenizer {name!r} has no non-special token to draw uniform noise from")
    return TokenizerInfo(name, tok, vocab, frozenset(special))


def signature(params: NoiseParams, generators: list[str | None] | None = None) -> str:
    """The noise stage's signature: kinds, seed, and each tokenizer with its identity.

    generators: the generators whose tokenizers are used (None: the default tokenizer and every
    mapped generator).
    """
    from engine.runtime import resolve_model
    from engine.signature import format_signature, package_version

    names = sorted({params.tokenizer_for(g) for g in generators} if generators is not None
                   else {*([params.tokenizer] if params.tokenizer else []), *params.generator_tokenizers.values()})
    return format_signature({
        "stage": "noise",
        "kinds": params.kinds,
        "seed": params.seed,
        "tok": [f"{n}@{resolve_model(n, 'tokenizer').short_identity}" for n in names],
        "numpy": package_version("numpy"),
        "tokenizers": package_version("tokenizers"),
    })


def excluded_ids(tok: Any) -> set[int]:
    """Ids uniform noise never draws: special, added and reserved tokens (module docstring)."""
    out = {int(i) for i in tok.all_special_ids}
    out |= {int(i) for i in tok.added_tokens_decoder}
    out |= {int(i) for token, i in tok.get_vocab().items() if RESERVED_TOKEN.fullmatch(token)}
    return out


def sample_rng(seed: int, sample_id: str, kind: str) -> np.random.Generator:
    """The random generator of one (seed, sample, kind), independent of partitioning."""
    digest = hashlib.blake2b(f"{seed}\x1f{sample_id}\x1f{kind}".encode("utf-8"), digest_size=16).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest, "little")))


def draw_noise_ids(
    rng: np.random.Generator, n_tokens: int, kind: str, vocab_ids: np.ndarray, context_ids: np.ndarray
) -> tuple[np.ndarray, str]:
    """(ids (n_tokens,) int64, kind actually used). Targeted with an empty context -> uniform."""
    if kind == "targeted" and context_ids.size > 0:
        return context_ids[rng.integers(0, context_ids.size, size=n_tokens)], "targeted"
    return vocab_ids[rng.integers(0, vocab_ids.size, size=n_tokens)], "uniform"


def _context_ids(info: TokenizerInfo, prefix_ids: list[int], suffix_ids: list[int]) -> np.ndarray:
    ids = np.array(prefix_ids + suffix_ids, dtype=np.int64)
    if info.special_ids and ids.size:
        ids = ids[~np.isin(ids, np.fromiter(info.special_ids, np.int64))]
    return ids


def make_noise(samples: pa.Table, params: NoiseParams) -> pa.Table:
    """NOISE_SCHEMA rows: for each sample (in input order), one row per kind in params.kinds.

    samples: SAMPLE_SCHEMA columns (sample_id, source, comment_start, comment_end, reference,
    prime, generator are used).
    """
    needed = ("sample_id", "source", "comment_start", "comment_end", "reference")
    missing = [c for c in needed if c not in samples.column_names]
    if missing:
        raise StageError("noise", f"the samples table lacks column(s) {missing}")
    if samples.num_rows == 0:
        return NOISE_SCHEMA.empty_table()
    cols = {c: samples.column(c).to_pylist() for c in needed}
    n = samples.num_rows
    primes = samples.column("prime").to_pylist() if "prime" in samples.column_names else [None] * n
    generators = samples.column("generator").to_pylist() if "generator" in samples.column_names else [None] * n
    tokenizer_of = [params.tokenizer_for(g) for g in generators]  # fails early on a missing mapping

    predictions: list[list[str | None]] = [[None] * len(params.kinds) for _ in range(n)]
    n_tokens = [0] * n
    fallbacks: list[str] = []
    for name in dict.fromkeys(tokenizer_of):
        info = load_tokenizer_info(name)
        idx = [i for i in range(n) if tokenizer_of[i] == name]
        tails = [cols["reference"][i][len(primes[i] or ""):] for i in idx]
        tail_ids = info.encode(tails)
        # a file's context is shared by its generators: tokenize each distinct context once
        spans = {(cols["source"][i], cols["comment_start"][i], cols["comment_end"][i]) for i in idx}
        spans_list = sorted(spans, key=lambda s: (s[1], s[2], s[0]))
        pre = info.encode([s[: a] for s, a, _ in spans_list])
        suf = info.encode([s[b:] for s, _, b in spans_list])
        context = {span: _context_ids(info, p, q) for span, p, q in zip(spans_list, pre, suf)}
        for i, ids in zip(idx, tail_ids):
            n_tokens[i] = len(ids)
            ctx = context[(cols["source"][i], cols["comment_start"][i], cols["comment_end"][i])]
            for k, kind in enumerate(params.kinds):
                rng = sample_rng(params.seed, cols["sample_id"][i], kind)
                drawn, used = draw_noise_ids(rng, len(ids), kind, info.vocab_ids, ctx)
                if used != kind:
                    fallbacks.append(cols["sample_id"][i])
                predictions[i][k] = info.decode(drawn)
    if fallbacks:
        logger.warning("noise: %d sample(s) have no context tokens; their targeted noise is uniform "
                       "(first: %s)", len(fallbacks), fallbacks[:5])
    rows = {"sample_id": [], "noise": [], "prediction": [], "n_tokens": [], "tokenizer": [], "seed": []}
    for i in range(n):
        for k, kind in enumerate(params.kinds):
            rows["sample_id"].append(cols["sample_id"][i])
            rows["noise"].append(kind)
            rows["prediction"].append(predictions[i][k])
            rows["n_tokens"].append(n_tokens[i])
            rows["tokenizer"].append(tokenizer_of[i])
            rows["seed"].append(params.seed)
    return pa.Table.from_pydict(rows, schema=NOISE_SCHEMA)
