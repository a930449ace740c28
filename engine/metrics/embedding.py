"""BERTScore-style embedding metrics with context: greedy matching of masked token embeddings.

Per context setting (engine/context.py) the model sees the whole setting's text and only the
tokens overlapping the scored span are matched. The conventions are bert_score 0.3.13's;
`mode: compat` in the `none` setting reproduces `bert_score.score`. docs/metrics.md ("BERTScore:
conventions and departures") lists where ours differ on purpose (padding never enters a max,
idf over unique reference spans, ...), the scope of idf and references, and `mode: fast`.
"""
from __future__ import annotations

import logging
import math
from collections import OrderedDict
from functools import cached_property
from typing import Any, Sequence

from engine.context import ContextSetting, SpanText, candidate_text, reference_text
from engine.errors import ConfigError
from engine.items import ScoreItem, ScoreRow
from engine.metrics.params import EmbeddingParams
from engine.metrics.task_names import task_name_for
from engine.resources import default_layer_table
from engine.signature import format_signature, package_version

logger = logging.getLogger(__name__)

METRIC = "bertscore"
# Groups (sample_id, noise) per model chunk: bounds memory, files are never split.
CHUNK_GROUPS = 2048


class EmbeddingScorer:
    """BERTScore-style scorer for any transformers encoder (or decoder-only hidden states)."""

    kind = "embedding"
    Params = EmbeddingParams

    def __init__(self, params: EmbeddingParams, *, stage: str = ""):
        self.params = params
        self.stage = stage  # who loads its model, as the model registry records it ('' outside a run)
        self._loaded: tuple[str, str, str, str] | None = None  # attn, linear kernels, dtype, identity once loaded
        self._corpus_idf: dict[str, Any] = {}  # context -> IdfTable from the run's pre-pass
        self._corpus_idf_hash = ""
        self._baselines = None
        if params.baseline is not None:
            from engine.metrics.rescale import read_baseline

            self._baselines = read_baseline(params.baseline)

    # ---------------------------------------------------------------- identity
    @property
    def task_name(self) -> str:
        return task_name_for("bertscore", self.params.model, self.params)

    @property
    def model_key(self) -> str:
        return self.params.model

    @cached_property
    def layer(self) -> int:
        """The layer used for P/R/F (or for mean-cos with all_layers)."""
        if self.params.layer is not None:
            return self.params.layer
        table = default_layer_table()
        name = self.params.model
        if name in table:
            return table[name]
        n_layers = self._config_layers()
        logger.warning("model %s has no default layer in %s; using its last layer %d", name, "encoders.yaml", n_layers)
        return n_layers

    def _config_layers(self) -> int:
        import transformers

        from engine.runtime import resolve_model

        resolved = resolve_model(self.params.model)
        config = transformers.AutoConfig.from_pretrained(resolved.path, **resolved.pretrained_kwargs())
        for key in ("num_hidden_layers", "num_layers", "n_layer", "n_layers"):
            if isinstance(getattr(config, key, None), int):
                return int(getattr(config, key))
        raise ConfigError(f"layer: model {self.params.model!r} does not say how many layers it has; set layer explicitly")

    def signatures(self) -> dict[str, str]:
        return {f"{METRIC}/{context}": self._signature(context) for context in self.params.contexts}

    def _signature(self, context: str) -> str:
        from engine import numerics
        from engine.metrics.encoder_runtime import planned_linear_kernels
        from engine.metrics.packing import PACK_WIDTH
        from engine.runtime import attn_implementation, resolve_device, resolve_model
        from engine.version import __version__

        p = self.params
        if self._loaded is not None:
            attn, linear, dtype, identity = self._loaded
        else:
            device = resolve_device(p.device)
            dtype, identity = p.resolved_dtype, resolve_model(p.model).short_identity
            attn = attn_implementation(device, dtype)
            linear = planned_linear_kernels(device, dtype, p.mode == "fast")
        truncates = p.mode == "compat" and context == "none"
        return format_signature({
            "metric": METRIC,
            "model": p.model,
            "model_id": identity,
            "layer": "all" if p.all_layers else self.layer,
            "idf": (f"corpus:{self._corpus_idf_hash}" if self._corpus_idf_hash else "refs-per-call") if p.idf else False,
            "rescale": self._baselines.tag if self._baselines is not None else False,
            "ctx": context,
            "window": "trunc" if truncates else "centred",
            "maxlen": p.max_model_len if p.max_model_len is not None else "model",
            "tok": "fast",
            "dtype": dtype,
            "attn": attn,
            "linear": linear,
            "mode": p.mode,
            "pool": "mean-cos" if p.mean_pool else False,
            # Packed rows move fast-mode values within the precision's bound: rows of a version that
            # packs are never mixed with unpacked ones on resume or reuse (an architecture that
            # cannot pack runs unpacked under this field too, and the log says why).
            "pack": PACK_WIDTH if p.mode == "fast" and not numerics.current().batch_invariant else False,
            **numerics.signature_fields(),
            "transformers": package_version("transformers"),
            "torch": package_version("torch"),
            "babelscore": __version__,
        })

    # ---------------------------------------------------------------- scoring
    @property
    def runtime(self) -> Any:
        """The loaded model, from the model registry (loaded there on first use; never kept here)."""
        from engine.runtime.memory import estimate_model_bytes
        from engine.runtime.model_registry import acquire

        p = self.params
        layer = None if p.all_layers else self.layer
        key = ("encoder", p.model, layer, p.resolved_dtype, p.device, p.max_model_len, p.mode == "fast", p.strict_dtype)
        runtime = acquire(key, lambda: self._load_runtime(layer), model=p.model, stage=self.stage, device=p.device,
                          estimate_bytes=lambda: estimate_model_bytes(p.model, dtype=p.requested_dtype, device=p.device))
        if self._loaded is None:
            self._loaded = (runtime.attn_implementation, runtime.linear_kernels, runtime.dtype_name,
                            runtime.resolved.short_identity)
        return runtime

    def _load_runtime(self, layer: int | None) -> Any:
        from engine.metrics.encoder_runtime import EncoderRuntime

        p = self.params
        runtime = EncoderRuntime(
            p.model,
            layer=layer,
            dtype=p.requested_dtype,
            device=p.device,
            add_prefix_space=True,
            max_length=p.max_model_len,
            cpu_fastpath=p.mode == "fast",
            pack=p.mode == "fast",
            strict_dtype=p.strict_dtype,
        )
        if p.all_layers and self.layer > runtime.n_layers:
            raise ConfigError(f"layer: got {self.layer}; allowed: 0..{runtime.n_layers} for {p.model}")
        return runtime

    def variants(self) -> list[str]:
        if self.params.all_layers:
            names = [f"layer-{k}/{v}" for k in range(self.runtime.n_layers + 1) for v in ("P", "R", "F")]
        else:
            names = ["P", "R", "F"]
        return names + (["mean-cos"] if self.params.mean_pool else [])

    def score(self, items: Sequence[ScoreItem]) -> list[ScoreRow]:
        """Rows for every (sample_id, noise) group of `items`, per context setting and variant."""
        if not items:
            return []
        if self._baselines is not None:  # a missing row is a config error, found before any work
            for layer in range(self.runtime.n_layers + 1) if self.params.all_layers else [self.layer]:
                self._baselines.for_layer(layer)
        groups: OrderedDict[tuple[str, str], list[int]] = OrderedDict()
        for i, item in enumerate(items):
            groups.setdefault((item.sample_id, item.noise), []).append(i)
        variants = self.variants()
        rows: list[ScoreRow] = []
        for context in self.params.contexts:
            signature = self._signature(context)
            values, errors = self._score_context(items, list(groups.values()), context, len(variants))
            for g, (sample_id, noise) in enumerate(groups):
                for v, variant in enumerate(variants):
                    if errors[g] is not None:
                        rows.append(ScoreRow(sample_id, noise, METRIC, self.params.model, context, variant, math.nan, signature, errors[g]))
                    else:
                        rows.append(ScoreRow(sample_id, noise, METRIC, self.params.model, context, variant, values[g][v], signature))
        return rows

    def reference_document_frequencies(self, item_batches: Any) -> dict[str, Any]:
        """Corpus pre-pass: df of scored reference tokens over the unique reference spans of
        every batch of items, per context setting (JSON-ready). Batches are processed one at a
        time, so memory holds one batch's tokenisations plus the counts."""
        from engine.metrics.idf import DocumentFrequencies
        from engine.metrics.scoring_plan import span_key_text
        from engine.metrics.span_embeddings import TextPlan

        counts = {context: DocumentFrequencies() for context in self.params.contexts}
        for batch in item_batches:
            items = list(batch)
            for context in self.params.contexts:
                job = self.context_scoring(context)
                spans = []
                for item in items:
                    try:
                        spans.append(self._span_texts(item, context)[1])
                    except Exception:  # the row becomes an error row when scored; it has no document
                        continue
                for key, plan in job.plans(spans).items():
                    if isinstance(plan, TextPlan):
                        counts[context].add(span_key_text(key), plan.span_ids)
        return {context: df.to_json() for context, df in counts.items()}

    def use_corpus_idf(self, per_context: dict[str, Any], digest: str) -> None:
        """Use the run's corpus document frequencies (from the pre-pass) for idf weights."""
        from engine.metrics.idf import IdfTable

        self._corpus_idf = {context: IdfTable.from_counts(stored) for context, stored in per_context.items()}
        self._corpus_idf_hash = digest

    def score_texts(self, cands: Sequence[str], refs: Sequence[str | Sequence[str]]) -> dict[str, list[float]]:
        """bert_score-like entry point: `none` setting, one or several references per candidate."""
        if len(cands) != len(refs):
            raise ValueError(f"score_texts: {len(cands)} candidates but {len(refs)} reference entries")
        items = []
        for i, (cand, ref) in enumerate(zip(cands, refs)):
            for ref_text in [ref] if isinstance(ref, str) else list(ref):
                items.append(ScoreItem(str(i), str(i), "", None, "none", ref_text, 0, len(ref_text), ref_text, "", cand))
        rows = [r for r in self.score(items) if r.context == self.params.contexts[0]]
        out: dict[str, list[float]] = {}
        for row in rows:
            out.setdefault(row.variant, []).append(row.value)
        return out

    def context_scoring(self, context: ContextSetting) -> Any:
        """One context setting's scoring job (engine.metrics.scoring_plan.ContextScoring) over this
        scorer's model, layer and baselines."""
        from engine.metrics.scoring_plan import ContextScoring

        return ContextScoring(self.params, self.runtime, self.layer, self._baselines, context)

    def _span_texts(self, item: ScoreItem, context: ContextSetting) -> tuple[SpanText, SpanText]:
        cand, ref = candidate_text(item, context), reference_text(item, context)
        if context == "none":  # bert_score strips; the span is the whole text
            cand, ref = (SpanText(s.text.strip(), 0, len(s.text.strip())) for s in (cand, ref))
        return cand, ref

    def _score_context(
        self, items: Sequence[ScoreItem], groups: list[list[int]], context: ContextSetting, n_variants: int
    ) -> tuple[list[list[float]], list[str | None]]:
        job = self.context_scoring(context)
        spans: list[tuple[SpanText, SpanText] | None] = []
        item_error: dict[int, str] = {}
        for i, item in enumerate(items):
            try:
                spans.append(self._span_texts(item, context))
            except Exception as exc:
                spans.append(None)
                item_error[i] = f"{type(exc).__name__}: {exc}"
        for g, members in enumerate(groups):
            predictions = {items[i].prediction for i in members}
            if len(predictions) > 1:
                for i in members:
                    item_error.setdefault(i, "items with the same sample_id and noise have different predictions")
        if self.params.idf and context in self._corpus_idf:
            job.idf = self._corpus_idf[context]
        elif self.params.idf:
            job.build_idf([s[1] for s in spans if s is not None])

        values: list[list[float]] = [[] for _ in groups]
        errors: list[str | None] = [None] * len(groups)
        for chunk in _chunks_by_file(items, groups):
            pair_items = [i for g in chunk for i in groups[g] if i not in item_error]
            pair_values, pair_errors = job.score_items([spans[i] for i in pair_items])  # type: ignore[misc]
            by_item = dict(zip(pair_items, zip(pair_values, pair_errors)))
            for g in chunk:
                member_errors = [item_error.get(i) or by_item[i][1] for i in groups[g]]
                first_error = next((e for e in member_errors if e is not None), None)
                if first_error is not None:
                    errors[g] = first_error
                    values[g] = [math.nan] * n_variants
                    continue
                member_values = [by_item[i][0] for i in groups[g]]
                values[g] = [max(v[k] for v in member_values) for k in range(n_variants)]
        return values, errors


def _chunks_by_file(items: Sequence[ScoreItem], groups: list[list[int]]) -> list[list[int]]:
    """Group indices cut into chunks of about CHUNK_GROUPS, never splitting a file's groups."""
    by_file: OrderedDict[str, list[int]] = OrderedDict()
    for g, members in enumerate(groups):
        by_file.setdefault(items[members[0]].file_id, []).append(g)
    chunks: list[list[int]] = [[]]
    for file_groups in by_file.values():
        if chunks[-1] and len(chunks[-1]) + len(file_groups) > CHUNK_GROUPS:
            chunks.append([])
        chunks[-1].extend(file_groups)
    return [c for c in chunks if c]
