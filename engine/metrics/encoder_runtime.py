"""Loading a transformers encoder (or decoder-only LM) once, tokenising, and batched forward passes.

This module owns running an encoder: which class to load (encoders, the encoder half of
encoder-decoders, T5 encoders, decoder-only hidden states), layer truncation (bert_score's
trick: drop the layers above the one used), the model's special tokens around a window,
token-budget batching sorted by length, and halving the batch on out-of-memory. Name
resolution, device, dtype and attention come from the model runtime (engine.runtime). It
knows nothing about spans or scores.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from engine import throughput
from engine.errors import ModelLoadError
from engine.isolation import ItemFailure, run_isolated
from engine.metrics.packing import (
    PACK_WIDTH,
    additive_mask,
    build_packed,
    packing_unsupported,
    plan_rows,
    position_offset,
)
from engine.runtime import (
    load_model,
    load_tokenizer,
    resolve_device,
    resolve_model,
    torch_dtype,
)

if TYPE_CHECKING:
    import torch
    from transformers import PretrainedConfig

logger = logging.getLogger(__name__)

# Tokenizer classes bert_score tokenizes with add_prefix_space=True (its isinstance test).
PREFIX_SPACE_TOKENIZERS = {"GPT2Tokenizer", "GPT2TokenizerFast", "RobertaTokenizer", "RobertaTokenizerFast"}
# Where the stack of transformer layers lives, per architecture family (first match wins).
_LAYER_PATHS = ("encoder.layer", "encoder.block", "encoder.layers", "block", "layers", "layer", "transformer.layer", "transformer.h", "h")
_UNBOUNDED_MAX_LENGTH = 1_000_000
# A batch takes sequences down to this fraction of its longest one.
MIN_FILL = 0.9
# With oneDNN kernels (a kernel is built per new shape): batch width rounded up, rows rounded down.
WIDTH_MULTIPLE = 4
ROWS_MULTIPLE = 8


@dataclass(frozen=True)
class Tokenized:
    """A text's own tokens (no special tokens) and their character offsets."""

    ids: tuple[int, ...]
    offsets: tuple[tuple[int, int], ...] | None  # None when not asked for


class ForwardClock:
    """Adds the time of forward passes to a runtime's stats: `forward_s` (wall seconds of the
    forward passes; on a CUDA device the device's own time between two events around each batch)
    and `forward_cpu_s` (this process's CPU seconds there).

    On CUDA the events are read once per `settle()` (once per `EncoderRuntime.forward` call): a
    synchronisation after every batch would make the host wait for the device before preparing
    the next batch, so the two would never overlap.
    """

    def __init__(self, stats: dict[str, float], device: str):
        self.stats = stats
        self.device = device
        self.cuda = device.startswith("cuda")
        self._pending: list[tuple[Any, Any]] = []  # (start, end) CUDA events not read yet

    def _event(self) -> Any:
        import torch

        event = torch.cuda.Event(enable_timing=True)
        event.record(torch.cuda.current_stream(torch.device(self.device)))
        return event

    def start(self) -> tuple[Any, float]:
        """A lap: (its start, CPU seconds at its start); hand it to `stop`."""
        return (self._event() if self.cuda else time.perf_counter()), time.process_time()

    def stop(self, lap: tuple[Any, float]) -> None:
        begun, cpu = lap
        self.stats["forward_cpu_s"] += time.process_time() - cpu
        if self.cuda:
            self._pending.append((begun, self._event()))
        else:
            self.stats["forward_s"] += time.perf_counter() - begun

    def settle(self) -> None:
        """Add the device time of the laps not read yet (waits for the last one to finish)."""
        if not self._pending:
            return
        self._pending[-1][1].synchronize()
        self.stats["forward_s"] += sum(start.elapsed_time(end) for start, end in self._pending) / 1000.0
        self._pending.clear()


def planned_linear_kernels(device: str, dtype: str, fast: bool) -> str:
    """What `EncoderRuntime.linear_kernels` will say, before loading: onednn or torch."""
    return "onednn" if fast and device == "cpu" and dtype in ("bfloat16", "float32") else "torch"


def _get_path(obj: Any, dotted: str) -> Any:
    for name in dotted.split("."):
        obj = getattr(obj, name, None)
        if obj is None:
            return None
    return obj


def count_layers(model: Any) -> int:
    """Number of transformer layers of a loaded model (from its config)."""
    model_config = model.config
    for key in ("num_hidden_layers", "num_layers", "n_layer", "n_layers"):
        value = getattr(model_config, key, None)
        if isinstance(value, int):
            return value
    raise ModelLoadError(f"cannot tell how many layers model {type(model).__name__} has")


def truncate_layers(model: Any, keep: int) -> None:
    """Drop every layer above `keep` so the last hidden state is layer `keep`'s output (bert_score's way)."""
    import torch

    n_layers = count_layers(model)
    if not 0 <= keep <= n_layers:
        raise ModelLoadError(f"layer {keep} is out of range for {type(model).__name__}: allowed 0..{n_layers}")
    if hasattr(_get_path(model, "encoder"), "albert_layer_groups"):
        model.encoder.config.num_hidden_layers = keep
        return
    for path in _LAYER_PATHS:
        layers = _get_path(model, path)
        if isinstance(layers, torch.nn.ModuleList):
            parent_path, _, attr = path.rpartition(".")
            parent = _get_path(model, parent_path) if parent_path else model
            setattr(parent, attr, torch.nn.ModuleList(list(layers)[:keep]))
            # Some models (Llama, ...) loop over `layers[: config.num_hidden_layers]`.
            for key in ("num_hidden_layers", "num_layers", "n_layer"):
                if isinstance(getattr(model.config, key, None), int):
                    setattr(model.config, key, keep)
            return
    raise ModelLoadError(f"do not know where the layers of {type(model).__name__} are; set all_layers or use another model")


def _load_model_class(path: str, model_config: PretrainedConfig, **kwargs: Any) -> Any:
    """The encoder of `path`: the model itself, a T5 encoder, or the encoder half of an encoder-decoder."""
    import transformers

    if getattr(model_config, "is_encoder_decoder", False):
        if model_config.model_type in ("t5", "mt5", "umt5", "longt5"):
            return transformers.T5EncoderModel.from_pretrained(path, **kwargs)
        model = transformers.AutoModel.from_pretrained(path, **kwargs)
        return model.get_encoder()
    return transformers.AutoModel.from_pretrained(path, **kwargs)


class EncoderRuntime:
    """One loaded model + fast tokenizer, and batched forward passes over token id sequences.

    `layer` given: the model is cut after that layer and each forward returns its output
    (B, T, D). `layer` None: every hidden state is returned, (B, T, L+1, D), index 0 being
    the embedding layer. `cpu_fastpath`: on CPU in bfloat16 or float32, linear layers run through
    oneDNN with prepacked weights (engine/metrics/cpu_fastpath.py).
    """

    def __init__(
        self,
        model_name: str,
        *,
        layer: int | None,
        dtype: str,
        device: str,
        add_prefix_space: bool,
        max_length: int | None,
        cpu_fastpath: bool = False,
        strict_dtype: bool = False,
        pack: bool = False,
    ):
        import transformers

        self.device = resolve_device(device)
        self.resolved = resolve_model(model_name, "model")
        try:
            model_config = transformers.AutoConfig.from_pretrained(self.resolved.path, **self.resolved.pretrained_kwargs())
        except Exception as exc:
            raise ModelLoadError(f"cannot read the config of model {model_name!r} ({self.resolved.path}): {exc}") from exc
        self.tokenizer = load_tokenizer(model_name, fast=True)
        self.prefix_space = add_prefix_space and _wants_prefix_space(self.tokenizer)
        if self.prefix_space:
            # Must be set at load time: transformers 5 ignores it as a call argument (so
            # bert_score 0.3.13's call-time add_prefix_space=True has no effect there).
            self.tokenizer = load_tokenizer(model_name, fast=True, add_prefix_space=True)
        loaded = load_model(model_name, lambda path, **kw: _load_model_class(path, model_config, **kw),
                            dtype=dtype, device=self.device, strict_dtype=strict_dtype)
        model = loaded.model
        self.dtype_name = loaded.dtype
        if not self.tokenizer.is_fast:
            raise ModelLoadError(f"model {model_name!r}: a fast tokenizer (offset mapping) is needed")
        self.n_layers = count_layers(model)
        self.all_layers = layer is None
        if layer is not None:
            truncate_layers(model, layer)
        if hasattr(model.config, "use_cache"):
            model.config.use_cache = False
        if getattr(model, "pooler", None) is not None:
            model.pooler = None  # its output is never used
        self.model = model.eval()  # truncation built a new ModuleList, which starts in training mode
        self.linear_kernels = "torch"
        self.round_shapes = False
        if cpu_fastpath and self.device == "cpu":
            from engine.metrics.cpu_fastpath import apply_cpu_fastpath

            if apply_cpu_fastpath(self.model, torch_dtype(self.dtype_name)):
                self.linear_kernels = "onednn"
                self.round_shapes = True
        self.attn_implementation = loaded.attn_implementation
        self.prefix_ids, self.suffix_ids = self._special_layout()
        self.max_length = max_length or self._model_max_length(model_config)
        self.max_content_tokens = self.max_length - len(self.prefix_ids) - len(self.suffix_ids)
        if self.max_content_tokens < 1:
            raise ModelLoadError(f"model {model_name!r}: max_length {self.max_length} leaves no room for text")
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad) if pad is not None else 0
        self.oom_halvings = 0
        # Work counters (benchmarks): real tokens fed, tokens executed (padding included), sum
        # of B*T*T over batches (attention runs over the whole row, masked or not).
        # forward_s: wall seconds inside the model's forward passes (ForwardClock); forward_cpu_s: this
        # process's CPU seconds there (all its threads), which on a shared machine leave out the time the
        # kernels waited for a core.
        self.stats: dict[str, float] = {"sequences": 0, "tokens": 0, "padded_tokens": 0, "attention_pairs": 0, "batches": 0,
                                        "packed_rows": 0, "forward_s": 0.0, "forward_cpu_s": 0.0}
        self.clock = ForwardClock(self.stats, self.device)
        self.pack_width = min(PACK_WIDTH, self.max_length)
        self.position_offset = position_offset(self.model)
        self._accepts: dict[str, bool] = {}
        self.packing = False
        self.packing_off_reason: str | None = "not asked for"
        if pack:
            self.packing_off_reason = packing_unsupported(self)
            self.packing = self.packing_off_reason is None
            if not self.packing:
                logger.info("model %s: short sequences run unpacked: %s", model_name, self.packing_off_reason)

    def _model_max_length(self, model_config: PretrainedConfig) -> int:
        """The tokenizer's model_max_length (what bert_score truncates at), else the position table."""
        limit = self.tokenizer.model_max_length
        if isinstance(limit, int) and 0 < limit < _UNBOUNDED_MAX_LENGTH:
            return limit
        positions = getattr(model_config, "max_position_embeddings", None) or getattr(model_config, "n_positions", None)
        if isinstance(positions, int) and positions > 0:
            # RoBERTa-style position ids start after the padding index.
            offset = (model_config.pad_token_id + 1) if model_config.model_type in ("roberta", "xlm-roberta", "camembert") else 0
            return positions - offset
        return 512

    def _special_layout(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The special token ids the tokenizer puts before and after a single text."""
        probe = "a b c"
        content = self.tokenizer(probe, add_special_tokens=False)["input_ids"]
        full = self.tokenizer(probe, add_special_tokens=True)["input_ids"]
        for start in range(len(full) - len(content) + 1):
            if full[start:start + len(content)] == content:
                return tuple(full[:start]), tuple(full[start + len(content):])
        raise ModelLoadError("cannot locate the text between the tokenizer's special tokens")

    def tokenize(self, texts: Sequence[str], offsets: bool = True) -> list[Tokenized | Exception]:
        """Fast-tokenise texts (no special tokens, no truncation), with character offsets if asked.

        Failures are returned in place of the text's result, not raised.
        """
        if not texts:
            return []
        backend = getattr(self.tokenizer, "backend_tokenizer", None)
        if backend is not None and backend.truncation is None and backend.padding is None:
            # The Rust tokenizer the fast tokenizer wraps, without its per-token Python conversion.
            try:
                encodings = backend.encode_batch(list(texts), add_special_tokens=False)
                return [Tokenized(tuple(e.ids), tuple(e.offsets) if offsets else None) for e in encodings]
            except Exception:
                pass  # isolate the failing text below

        def encode(batch: Sequence[str]) -> list[Tokenized]:
            enc = self.tokenizer(list(batch), add_special_tokens=False, return_offsets_mapping=True, verbose=False)
            return [
                Tokenized(tuple(ids), tuple((int(a), int(b)) for a, b in offsets))
                for ids, offsets in zip(enc["input_ids"], enc["offset_mapping"])
            ]

        results = run_isolated(encode, texts, what="tokenizer batch")  # the text that fails gets its error
        return [r.exception if isinstance(r, ItemFailure) else r for r in results]  # type: ignore[misc]

    def forward(
        self,
        sequences: Sequence[Sequence[int]],
        keep: Sequence[Sequence[int]],
        batch_tokens: int,
    ) -> tuple[list["torch.Tensor | None"], list[str | None]]:
        """Run the model over id sequences (special tokens included) and keep some rows of each.

        Sequences are sorted by length and put into batches of at most `batch_tokens`
        executed tokens: with `packing` on, those fitting a row of `pack_width` tokens share
        rows (engine/metrics/packing.py), the longer ones are padded to the longest of their
        batch. Returns, per sequence, its kept rows — (K, D), or (K, L+1, D) with all layers —
        on the model's device in the model's dtype, or None and an error message.
        """
        from engine import numerics

        out: list[torch.Tensor | None] = [None] * len(sequences)
        errors: list[str | None] = [None] * len(sequences)
        # batch_invariant: one sequence per batch (a budget below any length closes each batch at 1).
        invariant = numerics.current().batch_invariant
        budget = 1 if invariant else max(1, batch_tokens)
        packed: list[int] = []
        padded = list(range(len(sequences)))
        if self.packing and not invariant:
            packed = [i for i in padded if len(sequences[i]) <= self.pack_width]
            padded = [i for i in padded if len(sequences[i]) > self.pack_width]
        # Ties by content, never by input order (see engine.numerics).
        order = sorted(padded, key=lambda i: (-len(sequences[i]), tuple(sequences[i])))
        pos = 0
        while pos < len(order):
            longest = max(1, len(sequences[order[pos]]))
            size = max(1, budget // longest)
            end = pos + 1
            # Close the batch early where lengths drop below MIN_FILL of the longest: padding
            # costs as much as real tokens.
            while end < min(len(order), pos + size) and len(sequences[order[end]]) >= MIN_FILL * longest:
                end += 1
            if self.round_shapes and end < len(order) and end - pos > ROWS_MULTIPLE:
                # A row count from a few values; the rows left over start the next batch.
                end = pos + (end - pos) // ROWS_MULTIPLE * ROWS_MULTIPLE
            batch = order[pos:end]
            budget = self._run_batch(batch, sequences, keep, out, errors, budget, self.forward_padded)
            pos += len(batch)
        if packed:
            rows = plan_rows([sequences[i] for i in packed], self.pack_width)
            pos = 0
            while pos < len(rows):
                size = max(1, budget // self.pack_width)
                if self.round_shapes and size > ROWS_MULTIPLE:
                    size = size // ROWS_MULTIPLE * ROWS_MULTIPLE
                batch = [packed[j] for row in rows[pos:pos + size] for j in row]
                budget = self._run_batch(batch, sequences, keep, out, errors, budget, self.forward_packed)
                pos += size
        self.clock.settle()
        return out, errors

    def _run_batch(
        self,
        batch: list[int],
        sequences: Sequence[Sequence[int]],
        keep: Sequence[Sequence[int]],
        out: list["torch.Tensor | None"],
        errors: list[str | None],
        budget: int,
        run: Any,
    ) -> int:
        """Forward one batch through `engine.isolation.run_isolated` (out of memory halves it, and
        the budget of the batches after it; a failing sequence gets its error); returns the budget
        to go on with. `run` maps sequences to their hidden states, (T_i, D) or (T_i, L+1, D) each."""
        import torch

        def forward(indices: Sequence[int]) -> list["torch.Tensor"]:
            with torch.inference_mode():
                hidden = run([sequences[i] for i in indices])  # (T_i, D) or (T_i, L+1, D) each
                # One gather for the whole batch: a copy of an index per sequence would be one
                # host-to-device transfer and one kernel per sequence on a GPU.
                flat = hidden[0] if len(hidden) == 1 else torch.cat(hidden, dim=0)  # (sum T_i, ...)
                rows: list[int] = []
                offset = 0
                for h, i in zip(hidden, indices):
                    rows.extend(offset + k for k in keep[i])
                    offset += h.shape[0]
                index = torch.tensor(rows, dtype=torch.long).to(flat.device)  # (sum K_i,)
                return list(flat.index_select(0, index).split([len(keep[i]) for i in indices]))  # (K_i, ...) each

        halvings: list[int] = []
        lap = self.clock.start()
        results = run_isolated(forward, batch, what="encoder batch", on_halve=halvings.append)
        self.clock.stop(lap)
        self.oom_halvings += len(halvings)
        for _ in halvings:
            budget = max(1, budget // 2)
        for i, result in zip(batch, results):
            if isinstance(result, ItemFailure):
                errors[i] = result.error
                logger.warning("model forward failed for a sequence of %d tokens: %s", len(sequences[i]), result.error)
            else:
                out[i] = result
        return budget

    def _count(self, seqs: Sequence[Sequence[int]], rows: int, width: int) -> None:
        real = sum(len(s) for s in seqs)
        self.stats["sequences"] += len(seqs)
        self.stats["tokens"] += real
        throughput.count("encoder_tokens", real)
        self.stats["padded_tokens"] += rows * width
        self.stats["attention_pairs"] += rows * width * width  # every head attends over the whole row
        self.stats["batches"] += 1

    def _hidden(self, result: Any) -> "torch.Tensor":
        import torch

        if self.all_layers:
            return torch.stack(result.hidden_states, dim=2)  # (B, T, L+1, D)
        return result.last_hidden_state  # (B, T, D)

    def forward_padded(self, seqs: Sequence[Sequence[int]]) -> list["torch.Tensor"]:
        """One sequence per row, padded to the longest: (T_i, D) or (T_i, L+1, D) per sequence."""
        import torch

        width = max(len(s) for s in seqs)
        rows = len(seqs)
        if self.round_shapes:
            # oneDNN builds a new kernel for every new (rows x width) shape: keep few shapes
            # (rows are made a multiple of ROWS_MULTIPLE by the batching in `forward`).
            width = -(-width // WIDTH_MULTIPLE) * WIDTH_MULTIPLE
        # Built as Python lists and made a tensor once: a slice assignment per row is a tensor op each.
        flat_ids: list[int] = []
        flat_mask: list[int] = []
        for s in seqs:
            flat_ids.extend(s)
            flat_ids.extend([self.pad_id] * (width - len(s)))
            flat_mask.extend([1] * len(s))
            flat_mask.extend([0] * (width - len(s)))
        ids = torch.tensor(flat_ids, dtype=torch.long).view(rows, width)  # (B, T)
        mask = torch.tensor(flat_mask, dtype=torch.long).view(rows, width)  # (B, T)
        self._count(seqs, rows, width)
        result = self.model(
            input_ids=ids.to(self.device),
            attention_mask=mask.to(self.device),
            output_hidden_states=self.all_layers,
        )
        hidden = self._hidden(result)  # (B, T, D) or (B, T, L+1, D)
        return [hidden[row, : len(s)] for row, s in enumerate(seqs)]

    def forward_packed(self, seqs: Sequence[Sequence[int]]) -> list["torch.Tensor"]:
        """Sequences sharing rows of `pack_width` tokens: (T_i, D) or (T_i, L+1, D) per sequence."""
        import torch

        dtype = next(self.model.parameters()).dtype
        batch = build_packed(seqs, self.pack_width, self.pad_id, self.position_offset, dtype)
        rows, width = batch.shape
        self._count(seqs, rows, width)
        self.stats["packed_rows"] += rows
        # One transfer of the (3, R, W) id, position and sequence tables; the (R, 1, W, W) mask is
        # built from the sequence table where the model is (W times fewer bytes to transfer).
        ids, positions, blocks = torch.stack((batch.ids, batch.positions, batch.blocks)).to(self.device)  # (R, W) each
        extra = {"token_type_ids": torch.zeros_like(ids)} if self.accepts("token_type_ids") else {}
        result = self.model(
            input_ids=ids,
            attention_mask=additive_mask(blocks, dtype),  # (R, 1, W, W) block-diagonal
            position_ids=positions,
            output_hidden_states=self.all_layers,
            **extra,
        )
        hidden = self._hidden(result)  # (R, W, D) or (R, W, L+1, D)
        return [hidden[row, start:start + len(s)] for (row, start), s in zip(batch.places, seqs)]

    def accepts(self, name: str) -> bool:
        import inspect

        known = self._accepts.get(name)
        if known is None:  # asked once per batch: inspect.signature once per name
            known = self._accepts[name] = name in inspect.signature(self.model.forward).parameters
        return known


def _wants_prefix_space(tokenizer: Any) -> bool:
    return any(cls.__name__ in PREFIX_SPACE_TOKENIZERS for cls in type(tokenizer).__mro__)

