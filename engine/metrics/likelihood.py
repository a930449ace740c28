"""BARTScore-style likelihood scores (seq2seq) and their GPTScore-style causal-LM twin.

A score is the mean log-probability of the target side's scored tokens given the source side:
`forward` reads the reference and scores the candidate, `reverse` the other way round, `avg`
is their mean. Which tokens are read and scored in each context setting, and the causal
prompt format: docs/metrics.md, "Likelihood scores" (planned in `likelihood_tokens`). An item
whose scored span has no token, or whose forward pass fails, gets NaN rows with `error` set.
"""
from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING, Any, Sequence

from engine import numerics, throughput
from engine.errors import ModelLoadError
from engine.isolation import ItemFailure, run_isolated
from engine.items import ScoreItem, ScoreRow
from engine.metrics.likelihood_tokens import Key, LikelihoodInput, TokenPlanner, describe_error
from engine.metrics.params import LikelihoodParams
from engine.metrics.task_names import task_name_for
from engine.runtime import load_model, load_tokenizer, resolve_model
from engine.runtime.names import read_config_json
from engine.signature import format_signature, package_version

if TYPE_CHECKING:  # torch is imported lazily: the CLI imports this module's siblings at start-up
    import torch
    from transformers import PretrainedConfig

logger = logging.getLogger(__name__)

_FALLBACK_MAX_LENGTH = 1024  # BARTScore's truncation length


class LikelihoodScorer:
    """Scores items by conditional log-likelihood under one seq2seq or causal LM, loaded lazily once."""

    kind = "likelihood"
    Params = LikelihoodParams

    def __init__(self, params: LikelihoodParams, *, stage: str = ""):
        self.params = params
        self.stage = stage  # who loads its model, as the model registry records it ('' outside a run)
        self._arch: str | None = None if params.architecture == "auto" else params.architecture
        self._model: Any = None
        self._tokenizer: Any = None
        self._device: Any = None
        self._dtype: str | None = None  # the dtype actually used, once loaded
        self._identity: str | None = None  # the loaded model's revision or content hash
        self._max_length: int = 0

    # ----- identity -------------------------------------------------------------------------
    @property
    def architecture(self) -> str:
        """`seq2seq` or `causal`; `auto` is read from the model's config (no weights loaded)."""
        if self._arch is None:
            self._arch = _detect_architecture(self.params.model)
        return self._arch

    @property
    def metric(self) -> str:
        return "bartscore" if self.architecture == "seq2seq" else "gptscore"

    @property
    def task_name(self) -> str:
        return task_name_for(self.metric, self.params.model, self.params)

    @property
    def model_key(self) -> str:
        return f"{self.params.model}|{self.params.dtype}"

    def signatures(self) -> dict[str, str]:
        p = self.params
        out = {}
        for context in p.contexts:
            fields: dict[str, object] = {
                "metric": self.metric,
                "model": p.model,
                "model_id": self._identity or resolve_model(p.model).short_identity,
                "arch": self.architecture,
                "ctx": context,
                "dirs": p.directions,
                "span": "all-tokens" if context == "none" else "overlap",
                "window": "truncate" if context == "none" and self.architecture == "seq2seq" else "centred",
                "maxlen": p.max_model_len if p.max_model_len is not None else "model",
            }
            if self.architecture == "causal":
                fields["sep"] = p.separator.encode("unicode_escape").decode("ascii")
            fields.update(
                tok="fast", dtype=self._dtype or p.resolved_dtype, **numerics.signature_fields(),
                transformers=package_version("transformers"), torch=package_version("torch"),
            )
            out[context] = format_signature(fields)
        return out

    # ----- scoring --------------------------------------------------------------------------
    def score(self, items: Sequence[ScoreItem]) -> list[ScoreRow]:
        if not items:
            return []
        self._load()
        try:
            return self._score_loaded(items)
        finally:
            self._unbind()

    def _score_loaded(self, items: Sequence[ScoreItem]) -> list[ScoreRow]:
        p = self.params
        jobs: list[LikelihoodInput] = []
        errors: dict[Key, str] = {}
        planner = TokenPlanner(self._tokenizer, self.architecture, self._max_length, p.separator)
        for index, item in enumerate(items):
            for context in p.contexts:
                for direction in self._computed_directions():
                    key = (index, context, direction)
                    try:
                        jobs.extend(planner.plan(key, item))
                    except Exception as exc:  # one bad item must not stop the others
                        errors[key] = describe_error(exc)
        return self._rows(items, self._run(jobs, errors), errors)

    def _computed_directions(self) -> list[str]:
        """forward / reverse, each if asked for itself or for `avg`."""
        asked = self.params.directions
        return [d for d in ("forward", "reverse") if d in asked or "avg" in asked]

    def _rows(self, items: Sequence[ScoreItem], totals: dict[Key, list[float]],
              errors: dict[Key, str]) -> list[ScoreRow]:
        def value(key: Key) -> tuple[float, str | None]:
            if key in errors:
                return math.nan, errors[key]
            logp_sum, count = totals.get(key, (0.0, 0.0))
            if count == 0:
                return math.nan, "no scored token (empty span after tokenization)"
            return logp_sum / count, None

        signatures = self.signatures()
        rows = []
        for index, item in enumerate(items):
            for context in self.params.contexts:
                results = {d: value((index, context, d)) for d in self._computed_directions()}
                for direction in self.params.directions:
                    if direction == "avg":
                        (f, f_err), (r, r_err) = results["forward"], results["reverse"]
                        val, err = (f + r) / 2, f_err or r_err
                        if err is not None:
                            val, err = math.nan, f"avg: {err}"
                    else:
                        val, err = results[direction]
                    rows.append(ScoreRow(item.sample_id, item.noise, self.metric, self.params.model, context,
                                         direction, float(val), signatures[context], err))
        return rows

    # ----- model ----------------------------------------------------------------------------
    def _load(self) -> None:
        """Bind the model of the model registry (loaded there on first use) for one `score` call."""
        from engine.runtime.memory import estimate_model_bytes
        from engine.runtime.model_registry import acquire

        p = self.params
        key = ("likelihood", p.model, self.architecture, p.resolved_dtype, p.device, p.strict_dtype)
        loaded, tokenizer = acquire(key, self._load_model, model=p.model, stage=self.stage, device=p.device,
                                    estimate_bytes=lambda: estimate_model_bytes(p.model, dtype=p.dtype, device=p.device))
        import torch

        self._device = torch.device(loaded.device)
        self._dtype, self._identity = loaded.dtype, loaded.resolved.short_identity
        self._model = loaded.model
        self._tokenizer = tokenizer
        self._max_length = p.max_model_len or _model_window(tokenizer, loaded.model.config)

    def _unbind(self) -> None:
        """Let go of the model after a `score` call: the registry alone decides when it is freed."""
        self._model = None

    def _load_model(self) -> tuple[Any, Any]:
        p = self.params
        auto_class = "AutoModelForSeq2SeqLM" if self.architecture == "seq2seq" else "AutoModelForCausalLM"
        try:
            tokenizer = load_tokenizer(p.model, fast=True)
            loaded = load_model(p.model, auto_class, dtype=p.dtype, device=p.device, strict_dtype=p.strict_dtype)
        except ModelLoadError as exc:
            raise ModelLoadError(
                f"likelihood scorer: {exc}. Scored spans are found from the fast tokenizer's offset mapping "
                "(a tokenizer.json is required); check the model id or directory, or set `architecture`."
            ) from exc
        logger.info("loaded %s (%s, %s) on %s", p.model, self.architecture, loaded.dtype, loaded.device)
        return loaded, tokenizer

    def _pad_id(self) -> int:
        """Any id does (padding is masked or after the scored tokens); the pad token if there is one."""
        tok = self._tokenizer
        return next(int(i) for i in (tok.pad_token_id, tok.eos_token_id, 0) if i is not None)

    # ----- forward passes --------------------------------------------------------------------
    def _run(self, jobs: list[LikelihoodInput], errors: dict[Key, str]) -> dict[Key, list[float]]:
        """Per key, [sum of log p over scored tokens, number of scored tokens]; failing keys go to `errors`."""
        totals: dict[Key, list[float]] = {}
        # Longest first: similar lengths pad little, and an out-of-memory batch shows up at once.
        # Ties by content, never by input order: a part's batches are the same however its rows
        # were ordered (a resumed or retried part computes as the first attempt did).
        order = sorted(jobs, key=lambda j: (-j.length, j.source, j.target, j.scored))
        # batch_invariant: a sequence alone in its batch, so no partner or padding reaches its numbers.
        size = 1 if numerics.current().batch_invariant else self.params.batch_size
        started = last_log = time.perf_counter()
        done_tokens, all_tokens = 0, sum(j.length for j in order)
        for start in range(0, len(order), size):
            batch = order[start:start + size]
            now = time.perf_counter()
            if now - last_log > 30 and done_tokens:
                rate = done_tokens / (now - started)
                logger.info("%s: %d/%d sequences, %.0f tokens/s, about %.0fs left", self.task_name, start,
                            len(order), rate, (all_tokens - done_tokens) / rate)
                last_log = now
            done_tokens += sum(j.length for j in batch)
            # Out of memory halves the batch (a TransientError at one sequence fails the part); a
            # sequence the model cannot take gets its error, the rest keep their values.
            results = run_isolated(self._forward, batch, what=f"{self.task_name}: likelihood batch")
            for job, result in zip(batch, results):
                if isinstance(result, ItemFailure):
                    errors.setdefault(job.key, describe_error(result.exception))
                    result = (math.nan, 0.0)
                logp_sum, count = result
                total = totals.setdefault(job.key, [0.0, 0.0])
                total[0] += logp_sum
                total[1] += count
        elapsed = time.perf_counter() - started
        logger.info("%s: %d sequences, %d tokens in %.1fs (%.0f tokens/s)", self.task_name, len(order),
                    all_tokens, elapsed, all_tokens / max(elapsed, 1e-9))
        return totals

    def _forward(self, batch: list[LikelihoodInput]) -> list[tuple[float, float]]:
        """(sum of scored log p, scored count) per job of `batch`."""
        import torch

        with torch.inference_mode():
            if self.architecture == "seq2seq":
                logp, mask = self._seq2seq_logp(batch)
            else:
                logp, mask = self._causal_logp(batch)
            weights = mask.to(torch.float64)  # (B, T)
            sums = (logp.to(torch.float64) * weights).sum(dim=1)  # (B,)
            counts = weights.sum(dim=1)  # (B,)
        return [(float(s), float(c)) for s, c in zip(sums.cpu().tolist(), counts.cpu().tolist())]

    def _pad(self, rows: list[list[int]], value: int) -> tuple["torch.Tensor", "torch.Tensor"]:
        """Right-pad `rows` -> ids (B, T) and attention mask (B, T) on the model's device."""
        import torch

        width = max(1, max(len(r) for r in rows))
        throughput.count("model_tokens", sum(len(r) for r in rows))  # source and target sides
        ids = torch.full((len(rows), width), value, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
            mask[i, : len(row)] = 1
        return ids.to(self._device), mask.to(self._device)

    def _scored_mask(self, batch: list[LikelihoodInput], width: int, offsets: list[int]) -> "torch.Tensor":
        """(B, width) bool: True where job b's scored target token j sits at column offsets[b] + j."""
        import torch

        mask = torch.zeros((len(batch), width), dtype=torch.bool)
        for b, job in enumerate(batch):
            mask[b, offsets[b]: offsets[b] + len(job.scored)] = torch.tensor(job.scored, dtype=torch.bool)
        return mask.to(self._device)

    def _seq2seq_logp(self, batch: list[LikelihoodInput]) -> tuple["torch.Tensor", "torch.Tensor"]:
        """Log p of every target token, (B, T), and the scored mask, (B, T)."""
        pad = self._pad_id()
        src_ids, src_mask = self._pad([j.source for j in batch], pad)  # (B, S)
        labels, _ = self._pad([j.target for j in batch], pad)  # (B, T)
        # Decoder input = labels shifted right behind the start token, as `model(labels=...)` does.
        prepare = getattr(self._model, "prepare_decoder_input_ids_from_labels", None)
        if prepare is not None:
            logits = self._model(input_ids=src_ids, attention_mask=src_mask,
                                 decoder_input_ids=prepare(labels=labels)).logits  # (B, T, V)
        else:
            logits = self._model(input_ids=src_ids, attention_mask=src_mask, labels=labels).logits  # (B, T, V)
        return _token_logp(logits, labels), self._scored_mask(batch, labels.shape[1], [0] * len(batch))

    def _causal_logp(self, batch: list[LikelihoodInput]) -> tuple["torch.Tensor", "torch.Tensor"]:
        """Log p of every next token, (B, L-1), and the scored mask, (B, L-1)."""
        ids, attention = self._pad([j.source + j.target for j in batch], self._pad_id())  # (B, L)
        logits = self._model(input_ids=ids, attention_mask=attention).logits  # (B, L, V)
        # Column c of the result is token c+1 predicted from tokens 0..c.
        logp = _token_logp(logits[:, :-1], ids[:, 1:])  # (B, L-1)
        return logp, self._scored_mask(batch, logp.shape[1], [len(j.source) - 1 for j in batch])


def _token_logp(logits: "torch.Tensor", targets: "torch.Tensor") -> "torch.Tensor":
    """log softmax(logits)[target], (B, T), in float32 whatever the model's dtype.

    Row by row, so the float32 copy is (T, V), not (B, T, V): with mBART-50's 250k
    vocabulary a whole batch would double the largest tensor of the pass.
    """
    import torch

    rows = []
    for b in range(logits.shape[0]):
        row = logits[b].float()  # (T, V)
        picked = row.gather(-1, targets[b].unsqueeze(-1)).squeeze(-1)  # (T,)
        rows.append(picked - torch.logsumexp(row, dim=-1))
    return torch.stack(rows)  # (B, T)


def _model_window(tokenizer: Any, model_config: PretrainedConfig) -> int:
    """The smallest of the tokenizer's and the position embeddings' limits, else BARTScore's 1,024."""
    limits = [getattr(tokenizer, "model_max_length", None)]
    limits += [getattr(model_config, name, None) for name in ("max_position_embeddings", "n_positions", "max_seq_len")]
    usable = [int(n) for n in limits if isinstance(n, int) and 8 <= n < 1_000_000]
    return min(usable) if usable else _FALLBACK_MAX_LENGTH


def _detect_architecture(model: str) -> str:
    resolved = resolve_model(model)
    is_encoder_decoder = (read_config_json(resolved) or {}).get("is_encoder_decoder")
    if is_encoder_decoder is None:
        try:
            from transformers import AutoConfig

            is_encoder_decoder = AutoConfig.from_pretrained(resolved.path, **resolved.pretrained_kwargs()).is_encoder_decoder
        except Exception as exc:
            raise ModelLoadError(
                f"likelihood scorer: cannot read the config of {model!r} to tell seq2seq from causal: {exc}. "
                "Set `architecture: seq2seq` or `architecture: causal`, or check the model id."
            ) from exc
    return "seq2seq" if is_encoder_decoder else "causal"

