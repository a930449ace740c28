"""The tiny test models: deterministic, loadable, with fast tokenizers whose offsets cover every language."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

from engine.testing.tiny_lm import build_tiny_bart, build_tiny_causal_lm, build_tiny_t5  # noqa: E402

BUILDERS = {
    "bart": (build_tiny_bart, "AutoModelForSeq2SeqLM"),
    "t5": (build_tiny_t5, "AutoModelForSeq2SeqLM"),
    "llama": (build_tiny_causal_lm, "AutoModelForCausalLM"),
}
TEXTS = [
    "// Returns the shortest path.",
    "// Geeft het kortste pad terug.",
    "// 返回两个节点之间的最短路径。",
    "// Επιστρέφει τη συντομότερη διαδρομή.",
    "/** Zwraca najkrótszą ścieżkę. */",
    "def f(x):\n    return x + 1  # 🙂",
]


def _digest(directory: str) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(Path(directory).iterdir())}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_build_is_deterministic_and_loads(name: str, tmp_path: Path) -> None:
    build, auto_class = BUILDERS[name]
    first = build(tmp_path / "a")
    second = build(tmp_path / "b")
    assert first == str(tmp_path / "a")
    assert _digest(first) == _digest(second)
    assert {"config.json", "tokenizer.json", "model.safetensors"} <= set(_digest(first))
    tokenizer = transformers.AutoTokenizer.from_pretrained(first)
    model = getattr(transformers, auto_class).from_pretrained(first)
    assert tokenizer.is_fast
    assert model.config.vocab_size == len(tokenizer)
    assert sum(p.numel() for p in model.parameters()) < 1_000_000


@pytest.mark.parametrize("name, lead, trail", [
    ("bart", ["<s>"], ["</s>"]),
    ("t5", [], ["</s>"]),
    ("llama", ["<s>"], []),
])
def test_special_tokens_and_offsets(name: str, lead: list[str], trail: list[str], tmp_path: Path) -> None:
    tokenizer = transformers.AutoTokenizer.from_pretrained(BUILDERS[name][0](tmp_path / name))
    if name == "bart":
        assert (tokenizer.bos_token_id, tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id) == (0, 1, 2, 3)
        assert tokenizer.mask_token == "<mask>"
    if name == "t5":
        assert (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id) == (0, 1, 2)
    for text in TEXTS:
        enc = tokenizer(text, return_offsets_mapping=True)
        tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"])
        n_lead, n_trail = len(lead), len(trail)
        assert tokens[:n_lead] == lead and tokens[len(tokens) - n_trail:] == trail
        content = enc["offset_mapping"][n_lead:len(tokens) - n_trail]
        assert tokenizer.unk_token_id not in enc["input_ids"]
        # Offsets cover the text in order, from its start to its end, with no gap.
        assert content[0][0] == 0 and content[-1][1] == len(text)
        covered = set()
        for start, end in content:
            covered.update(range(start, end))
        assert covered == set(range(len(text)))
        assert tokenizer.decode(enc["input_ids"], skip_special_tokens=True) == text
