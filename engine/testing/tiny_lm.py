"""Tiny, random, seeded language models with fast tokenizers, saved with `save_pretrained`.

No hub is reachable in tests or in the offline demo, and no PyPI package ships a BART, T5 or
code LM, so tests and `make demo` build their own: a byte-level BPE tokenizer trained on the
embedded multilingual corpus below (offset mappings work for every language of the study) and
a model of a few hundred thousand random parameters. Its numbers are meaningless, but they
exercise the real loading, tokenization and scoring code. The same call gives the same files.

    build_tiny_bart(dir)        BartForConditionalGeneration, <s> <pad> </s> <unk> <mask>
    build_tiny_t5(dir)          T5ForConditionalGeneration (mT5-style gated-GELU), <pad> </s> <unk>
    build_tiny_causal_lm(dir)   LlamaForCausalLM, <s> </s> <unk> <pad>

Each returns the directory as a string, ready for `from_pretrained`.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

DEFAULT_SEED = 0
VOCAB_SIZE = 1024

# Comment-like sentences in the study's five languages plus some Java and Python code:
# enough for BPE merges in every script, so no language falls apart into single bytes only.
TINY_CORPUS: tuple[str, ...] = (
    # English
    "// Returns the shortest path between two nodes using the Bellman-Ford algorithm.",
    "/** Computes the checksum of the given buffer and stores it in the header. */",
    "# Read the configuration file and fall back to the defaults when a key is missing.",
    "// TODO: handle the case where the list is empty before sorting it.",
    "/* Initialise the cache with a fixed capacity; old entries are evicted first. */",
    "# Convert the timestamp to UTC so that comparisons across time zones work.",
    # Dutch
    "// Geeft het kortste pad tussen twee knopen terug met het Bellman-Ford algoritme.",
    "/** Berekent de controlesom van de buffer en slaat deze op in de header. */",
    "# Lees het configuratiebestand en gebruik de standaardwaarden als een sleutel ontbreekt.",
    "// Controleer of de lijst leeg is voordat we gaan sorteren.",
    "/* Initialiseer de cache met een vaste capaciteit; oude items worden eerst verwijderd. */",
    # Chinese
    "// 使用 Bellman-Ford 算法返回两个节点之间的最短路径。",
    "/** 计算给定缓冲区的校验和并将其存储在头部中。 */",
    "# 读取配置文件，如果缺少某个键则使用默认值。",
    "// 在排序之前检查列表是否为空。",
    "/* 用固定容量初始化缓存；旧的条目会先被删除。 */",
    # Greek
    "// Επιστρέφει τη συντομότερη διαδρομή μεταξύ δύο κόμβων με τον αλγόριθμο Bellman-Ford.",
    "/** Υπολογίζει το άθροισμα ελέγχου του buffer και το αποθηκεύει στην κεφαλίδα. */",
    "# Διαβάζει το αρχείο ρυθμίσεων και χρησιμοποιεί τις προεπιλογές όταν λείπει ένα κλειδί.",
    "// Ελέγχει αν η λίστα είναι κενή πριν από την ταξινόμηση.",
    "/* Αρχικοποιεί την κρυφή μνήμη με σταθερή χωρητικότητα. */",
    # Polish
    "// Zwraca najkrótszą ścieżkę między dwoma węzłami za pomocą algorytmu Bellmana-Forda.",
    "/** Oblicza sumę kontrolną bufora i zapisuje ją w nagłówku. */",
    "# Wczytaj plik konfiguracyjny i użyj wartości domyślnych, gdy brakuje klucza.",
    "// Sprawdź, czy lista jest pusta, zanim zaczniesz sortowanie.",
    "/* Zainicjuj pamięć podręczną o stałej pojemności; stare wpisy są usuwane jako pierwsze. */",
    # Java
    "public class Graph {\n    private final int[][] weights;\n\n"
    "    public int[] shortestPath(int source) {\n        int[] dist = new int[weights.length];\n"
    "        Arrays.fill(dist, Integer.MAX_VALUE);\n        dist[source] = 0;\n        return dist;\n    }\n}\n",
    "for (int i = 0; i < items.size(); i++) {\n    if (items.get(i) == null) {\n"
    "        throw new IllegalArgumentException(\"item \" + i + \" is null\");\n    }\n}\n",
    # Python
    "def read_config(path: str) -> dict:\n    with open(path, encoding=\"utf-8\") as handle:\n"
    "        return json.load(handle)\n",
    "class Cache:\n    def __init__(self, capacity: int) -> None:\n        self.capacity = capacity\n"
    "        self.entries = {}\n\n    def get(self, key):\n        return self.entries.get(key)\n",
    "for index, value in enumerate(values):\n    if value is None:\n        continue\n"
    "    total += value * weights[index]\n",
)


def _train_tokenizer(special_tokens: list[str], template: str, vocab_size: int) -> Any:
    """A byte-level BPE `tokenizers.Tokenizer`; `template` is its single-sequence post-processor."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    # Byte-level: every string is representable (no <unk> in practice) and offsets map to characters.
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=1,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(list(TINY_CORPUS), trainer=trainer)
    used = [t for t in special_tokens if t in template.split()]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=template,
        pair=f"{template} " + template.replace("$A", "$B:1").replace("<s>", "<s>:1").replace("</s>", "</s>:1"),
        special_tokens=[(t, tokenizer.token_to_id(t)) for t in used],
    )
    return tokenizer


def _save_tokenizer(tokenizer: Any, directory: Path, model_max_length: int, **special: str) -> Any:
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, model_max_length=model_max_length, **special)
    fast.save_pretrained(str(directory))
    return fast


def _seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def build_tiny_bart(directory: str | Path, *, seed: int = DEFAULT_SEED, d_model: int = 32, layers: int = 2) -> str:
    """Save a tiny random BART (BartForConditionalGeneration) and its fast tokenizer into `directory`.

    Special tokens and ids as in facebook/bart-*: <s>=0, <pad>=1, </s>=2, <unk>=3, plus <mask>;
    the tokenizer wraps a text as `<s> ... </s>`, and the model window is 1,024 tokens.
    """
    from transformers import BartConfig, BartForConditionalGeneration

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _train_tokenizer(["<s>", "<pad>", "</s>", "<unk>", "<mask>"], "<s> $A </s>", VOCAB_SIZE)
    fast = _save_tokenizer(
        tokenizer, out, 1024,
        bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>", mask_token="<mask>",
        cls_token="<s>", sep_token="</s>",
    )
    config = BartConfig(
        vocab_size=len(fast),
        d_model=d_model,
        encoder_layers=layers,
        decoder_layers=layers,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=2 * d_model,
        decoder_ffn_dim=2 * d_model,
        max_position_embeddings=1024,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        decoder_start_token_id=fast.eos_token_id,  # as facebook/bart-*: decoding starts from </s>
        forced_bos_token_id=fast.bos_token_id,
    )
    _seed(seed)
    BartForConditionalGeneration(config).eval().save_pretrained(str(out))
    logger.info("built tiny BART in %s (%d tokens in vocabulary)", out, len(fast))
    return str(out)


def build_tiny_t5(directory: str | Path, *, seed: int = DEFAULT_SEED, d_model: int = 32, layers: int = 2) -> str:
    """Save a tiny random mT5-style model (T5ForConditionalGeneration, gated GELU) and its tokenizer.

    Special tokens and ids as in t5/mT5: <pad>=0 (also the decoder start), </s>=1, <unk>=2;
    the tokenizer appends `</s>` and adds no BOS. Relative positions: no hard window; the
    tokenizer says 512 tokens, as t5-* do.
    """
    from transformers import T5Config, T5ForConditionalGeneration

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _train_tokenizer(["<pad>", "</s>", "<unk>"], "$A </s>", VOCAB_SIZE)
    fast = _save_tokenizer(tokenizer, out, 512, eos_token="</s>", pad_token="<pad>", unk_token="<unk>")
    config = T5Config(
        vocab_size=len(fast),
        d_model=d_model,
        d_kv=d_model // 2,
        d_ff=2 * d_model,
        num_layers=layers,
        num_decoder_layers=layers,
        num_heads=2,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,
        pad_token_id=fast.pad_token_id,
        eos_token_id=fast.eos_token_id,
        decoder_start_token_id=fast.pad_token_id,
    )
    _seed(seed)
    T5ForConditionalGeneration(config).eval().save_pretrained(str(out))
    logger.info("built tiny T5 in %s (%d tokens in vocabulary)", out, len(fast))
    return str(out)


def build_tiny_causal_lm(
    directory: str | Path,
    *,
    seed: int = DEFAULT_SEED,
    hidden_size: int = 64,
    layers: int = 2,
    heads: int = 2,
    head_dim: int | None = None,
) -> str:
    """Save a tiny random Llama (LlamaForCausalLM) and its fast tokenizer into `directory`.

    Special tokens: <s>=0 (prepended by the tokenizer), </s>=1, <unk>=2, <pad>=3. Window
    2,048 tokens. `head_dim` defaults to hidden_size // heads (32); vLLM's CPU attention
    wants 64 or more, so pass `head_dim=64` for a model that vLLM serves.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _train_tokenizer(["<s>", "</s>", "<unk>", "<pad>"], "<s> $A", VOCAB_SIZE)
    fast = _save_tokenizer(
        tokenizer, out, 2048, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>"
    )
    config = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        head_dim=head_dim if head_dim is not None else hidden_size // heads,
        max_position_embeddings=2048,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        tie_word_embeddings=False,
    )
    _seed(seed)
    LlamaForCausalLM(config).eval().save_pretrained(str(out))
    logger.info("built tiny Llama in %s (%d tokens in vocabulary)", out, len(fast))
    return str(out)
