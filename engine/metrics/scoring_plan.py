"""One context setting of one `EmbeddingScorer.score()` call: plans, idf, encoding, values per item.

Identical (text, span) pairs are tokenised, planned and encoded once per chunk, so a
reference shared by the generators of a file (and its noise settings) is encoded once.
"""
from __future__ import annotations

from typing import Any, Sequence

from engine.context import ContextSetting, SpanText
from engine.metrics.idf import IdfTable
from engine.metrics.span_embeddings import TextEmbedding, TextPlan, encode_plans, is_whole, plan_text

Key = tuple[str, int, int]
# Texts tokenised per tokenizer call (bounds the memory of offsets of whole files).
TOKENIZE_BATCH = 512


def _key(span: SpanText) -> Key:
    return (span.text, span.span_start, span.span_end)


def span_key_text(key: Key) -> str:
    """A span's identity as one string (for de-duplicating documents across parts)."""
    text, start, end = key
    return f"{start}:{end}:{text}"


class ContextScoring:
    """params: the scorer's EmbeddingParams; runtime: its EncoderRuntime; layer: the layer it
    reports; baselines: its rescaling baselines (None: no rescaling)."""

    def __init__(self, params: Any, runtime: Any, layer: int, baselines: Any, context: ContextSetting):
        self.params = params
        self.layer = layer
        self.baselines = baselines
        self.context = context
        self.runtime = runtime
        self.truncate = self.params.mode == "compat" and context == "none"
        self.idf: IdfTable | None = None
        self._plans: dict[Key, TextPlan | str] = {}

    def plans(self, spans: Sequence[SpanText]) -> dict[Key, TextPlan | str]:
        """Plan (or error message) for every distinct span text; cached for this call."""
        missing: dict[Key, SpanText] = {}
        for s in spans:
            k = _key(s)
            if k not in self._plans and k not in missing:
                missing[k] = s
        todo = list(missing.values())
        rt = self.runtime
        for start in range(0, len(todo), TOKENIZE_BATCH):
            batch = todo[start:start + TOKENIZE_BATCH]
            need_offsets = not all(is_whole(s) for s in batch)
            for span, tokens in zip(batch, rt.tokenize([s.text for s in batch], offsets=need_offsets)):
                if isinstance(tokens, Exception):
                    self._plans[_key(span)] = f"tokenizer: {type(tokens).__name__}: {tokens}"
                else:
                    self._plans[_key(span)] = plan_text(tokens, span, rt.prefix_ids, rt.suffix_ids, rt.max_content_tokens, self.truncate)
        return {_key(s): self._plans[_key(s)] for s in spans}

    def build_idf(self, reference_spans: Sequence[SpanText]) -> None:
        """idf over the distinct reference span texts of this call (documents = their scored tokens)."""
        unique = list({_key(s): s for s in reference_spans}.values())
        plans = self.plans(unique)
        self.idf = IdfTable(p.span_ids for p in plans.values() if isinstance(p, TextPlan))

    def score_items(self, pairs: Sequence[tuple[SpanText, SpanText]]) -> tuple[list[list[float]], list[str | None]]:
        """Values in `scorer.variants()` order, or an error, per (candidate, reference) pair."""
        import torch

        from engine.metrics.pair_scoring import score_pairs, token_weights
        from kernels.matching import f_score

        spans = [s for pair in pairs for s in pair]
        plans = self.plans(spans)
        keys = list(dict.fromkeys(k for k, p in plans.items() if isinstance(p, TextPlan)))
        encoded: dict[Key, TextEmbedding | str] = dict(
            zip(keys, encode_plans(self.runtime, [plans[k] for k in keys], self.params.batch_tokens, self.layer))
        )
        for k, p in plans.items():
            if isinstance(p, str):
                encoded[k] = p
        errors: list[str | None] = [None] * len(pairs)
        to_match: list[int] = []
        for i, (c, r) in enumerate(pairs):
            ce, re_ = encoded[_key(c)], encoded[_key(r)]
            if isinstance(ce, str) or isinstance(re_, str):
                errors[i] = ce if isinstance(ce, str) else re_  # type: ignore[assignment]
            elif ce.n_span > 0 and re_.n_span > 0:
                to_match.append(i)
        n_layers = (self.runtime.n_layers + 1) if self.params.all_layers else 1
        p_all = torch.zeros((len(pairs), n_layers))
        r_all = torch.zeros((len(pairs), n_layers))
        cos_all = torch.zeros(len(pairs))
        if to_match:
            ck = [_key(pairs[i][0]) for i in to_match]
            rk = [_key(pairs[i][1]) for i in to_match]
            from engine import numerics

            matched = list(dict.fromkeys(ck + rk))
            device = encoded[matched[0]].unit.device  # type: ignore[union-attr]
            idf_fn = self.idf.weights if self.idf is not None else None
            weights = dict(zip(matched, token_weights([plans[k] for k in matched], idf_fn, device)))  # type: ignore[misc]
            p, r, cos = score_pairs(
                [encoded[k] for k in ck], [encoded[k] for k in rk],  # type: ignore[misc]
                [weights[k] for k in ck], [weights[k] for k in rk],
                ties=list(zip(ck, rk)), one_per_batch=numerics.current().batch_invariant,
            )
            index = torch.as_tensor(to_match, dtype=torch.long)
            p_all[index], r_all[index], cos_all[index] = p, r, cos
        f_all = f_score(p_all, r_all)  # (N, Lo)
        return self._assemble(p_all, r_all, f_all, cos_all, errors), errors

    def _assemble(self, p, r, f, cos, errors) -> list[list[float]]:
        """Rows of values in variant order, with baseline rescaling of P, R and F."""
        baselines = self.baselines
        layers = list(range(p.shape[1])) if self.params.all_layers else [self.layer]
        out: list[list[float]] = []
        p_list, r_list, f_list, cos_list = p.tolist(), r.tolist(), f.tolist(), cos.tolist()
        for i in range(len(p_list)):
            if errors[i] is not None:
                out.append([])
                continue
            row: list[float] = []
            for j, layer in enumerate(layers):
                trio = {"P": p_list[i][j], "R": r_list[i][j], "F": f_list[i][j]}
                for name in ("P", "R", "F"):
                    value = trio[name]
                    if baselines is not None:
                        value = baselines.for_layer(layer).rescale(name, value)
                    row.append(value)
            if self.params.mean_pool:
                row.append(cos_list[i])
            out.append(row)
        return out
