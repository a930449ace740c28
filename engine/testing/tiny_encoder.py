"""A tiny random BERT encoder with a WordPiece vocabulary, built on the spot (`demo:tiny-bert`).

For machines that cannot install the all-MiniLM-L6-v2 package (a GPU image without a package
registry): the half-precision checks and the paper-shaped mini run of `make gpu-check` need an
encoder with the real loading path, not a pretrained one.
"""
from __future__ import annotations

from pathlib import Path

_WORDS = ("the a an of to in is are returns return value list name user file path read write sum two numbers "
          "compute sort order given new empty null true false public class int void string static if else for while").split()


def build_tiny_bert(directory: str | Path, *, seed: int = 0, hidden: int = 64, layers: int = 4, heads: int = 2,
                    intermediate: int | None = None) -> str:
    """Save a random BERT (intermediate width 2 * hidden unless given) and its tokenizer; returns the directory."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    chars = "abcdefghijklmnopqrstuvwxyz0123456789"
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *("##" + c for c in chars),
              *".,;:!?(){}[]<>=+-*/\"'#@&%$_|\\^~`", *_WORDS]
    vocab = {token: index for index, token in enumerate(dict.fromkeys(tokens))}
    # A vocabulary given as a mapping: transformers 5 ignores `vocab_file=` here and leaves only the
    # five special tokens, which turns every word into [UNK] (and every score into 1.0).
    tokenizer = BertTokenizer(vocab=vocab, model_max_length=512)
    if len(tokenizer) != len(vocab):
        raise RuntimeError(f"tiny BERT tokenizer has {len(tokenizer)} tokens, expected {len(vocab)}")
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=intermediate or 2 * hidden, max_position_embeddings=512)
    tokenizer.save_pretrained(str(directory))
    BertModel(config).eval().save_pretrained(str(directory))
    return str(directory)
