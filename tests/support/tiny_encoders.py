"""Tiny random encoders (BERT, RoBERTa, XLM-R, ELECTRA, DeBERTa-v2, ModernBERT) for embedding tests.

Hand-made WordPiece vocabulary (so that `unhappy` -> `un ##happy` while `happy` alone is one
token: the boundary case of context masks) and a byte-level BPE trained on the fly. Model
windows are 64 tokens so that truncation and windows are cheap to exercise.
"""
from __future__ import annotations

from pathlib import Path

MAX_LENGTH = 64
WORDS = (
    "the a an of to in is are returns return value list name user file path read write "
    "sum of two numbers compute computes sort sorted order given new empty null true false "
    "cat cats dog dogs sat on mat happy un node nodes graph shortest algorithm result public "
    "class int void string static final private if else for while"
).split()
BPE_CORPUS = [
    "the cat sat on the mat", "unhappy cats are happy", "returns the name of the user",
    "compute the sum of two numbers", "public int sum(int a, int b) { return a + b; }",
    "// Returns the shortest path between two nodes", "Geeft het kortste pad terug",
    "Zwraca najkrótszą ścieżkę", "Επιστρέφει το όνομα του χρήστη", "返回用户的姓名",
] * 20


def wordpiece_vocab() -> dict[str, int]:
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = "abcdefghijklmnopqrstuvwxyz0123456789"
    tokens += list(chars) + ["##" + c for c in chars]
    tokens += list(".,;:!?(){}[]<>=+-*/\"'#@&%$_|\\^~`")
    tokens += [w for w in WORDS if w not in tokens] + ["##happy", "##s", "##ed", "##ing"]
    return {t: i for i, t in enumerate(dict.fromkeys(tokens))}


def bert_tokenizer():
    from transformers import BertTokenizer

    return BertTokenizer(vocab=wordpiece_vocab(), model_max_length=MAX_LENGTH)


def roberta_tokenizer():
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(BPE_CORPUS, vocab_size=400, min_frequency=1, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"], show_progress=False)
    vocab = bpe.get_vocab()
    import json

    merges = json.loads(bpe._tokenizer.to_str())["model"]["merges"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]
    return RobertaTokenizer(vocab=vocab, merges=merges, model_max_length=MAX_LENGTH)


def _save(directory: Path, tokenizer, model) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(directory))
    model.eval().save_pretrained(str(directory))
    return str(directory)


def build(kind: str, directory: Path, seed: int = 0) -> str:
    """Save a tiny random model of `kind` with its tokenizer into `directory`; returns the path."""
    import torch
    import transformers as tf

    torch.manual_seed(seed)
    common = dict(hidden_size=32, num_hidden_layers=3, num_attention_heads=2, intermediate_size=64)
    if kind == "bert":
        tok = bert_tokenizer()
        model = tf.BertModel(tf.BertConfig(vocab_size=len(tok), max_position_embeddings=MAX_LENGTH, **common))
    elif kind == "electra":
        tok = bert_tokenizer()
        model = tf.ElectraModel(tf.ElectraConfig(vocab_size=len(tok), embedding_size=16, max_position_embeddings=MAX_LENGTH, **common))
    elif kind == "deberta":
        tok = bert_tokenizer()
        model = tf.DebertaV2Model(tf.DebertaV2Config(
            vocab_size=len(tok), max_position_embeddings=MAX_LENGTH, relative_attention=True,
            position_buckets=16, pos_att_type=["p2c", "c2p"], **common,
        ))
    elif kind == "modernbert":
        tok = bert_tokenizer()
        model = tf.ModernBertModel(tf.ModernBertConfig(
            vocab_size=len(tok), max_position_embeddings=MAX_LENGTH, pad_token_id=0, cls_token_id=2, sep_token_id=3,
            bos_token_id=2, eos_token_id=3, global_attn_every_n_layers=2, local_attention=16, **common,
        ))
    elif kind in ("roberta", "xlm-roberta"):
        tok = roberta_tokenizer()
        cls = (tf.RobertaModel, tf.RobertaConfig) if kind == "roberta" else (tf.XLMRobertaModel, tf.XLMRobertaConfig)
        model = cls[0](cls[1](vocab_size=len(tok), max_position_embeddings=MAX_LENGTH + 2, pad_token_id=1, bos_token_id=0, eos_token_id=2, **common))
    else:
        raise ValueError(kind)
    return _save(directory, tok, model)
