"""Attacks on the fine-tuning loop, each one a way it could train on the wrong thing or accept bad input.

- an example whose answer does not fit max_seq_len has no token to learn from (NaN loss,
  every LoRA weight NaN after one step): it is left out, and none fitting is an error;
- the loss is on the answer's tokens only, after the prompt exactly as the judge templates it;
- a `lora:` adapter of another base model is refused at config check;
- the adapter's hash follows every byte of its weights and config, not the copy's mtimes;
- the split on user-shaped data (files missing from some languages, ids without the
  language prefix, one- and two-file labels) stays aligned and near 7:3 per cell;
- Williams' test against an independent computation from the correlation matrix.
"""
from __future__ import annotations

import json
import math
import random
import shutil
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from engine.errors import ConfigError
from engine.finetune.data import align_key, split_groups
from engine.finetune.train import encode, fitting
from engine.judge.adapter import adapter_hash, check_adapter_base
from engine.records import LABELS


@pytest.fixture(scope="module")
def tiny_chat() -> str:
    from engine.demo import install_builder
    from engine.runtime import check_model_name

    install_builder()
    return check_model_name("demo:tiny-chat", "test").path


@pytest.fixture(scope="module")
def tokenizer(tiny_chat: str):
    from transformers import AutoTokenizer  # as the trainer loads it (the judge's slow one takes 20 s here)

    return AutoTokenizer.from_pretrained(tiny_chat)


MESSAGES = [{"role": "system", "content": "Judge the comments."}, {"role": "user", "content": "Candidate A: returns x."},
            {"role": "assistant", "content": '{"evaluations":[]}'}]


def test_loss_is_on_the_answer_only_after_the_judges_own_prompt(tokenizer) -> None:
    ids, labels, cut = encode(tokenizer, MESSAGES, 4096)
    prompt = tokenizer.apply_chat_template(MESSAGES[:-1], add_generation_prompt=True, tokenize=True)
    prompt = list(prompt["input_ids"] if hasattr(prompt, "keys") else prompt)
    assert not cut and ids[:len(prompt)] == prompt  # the judge backends send exactly this prefix
    assert labels[:len(prompt)] == [-100] * len(prompt)
    learned = labels[len(prompt):]
    assert ids[len(prompt):] == learned and learned[-1] == tokenizer.eos_token_id
    assert tokenizer.decode(learned[:-1]) == MESSAGES[-1]["content"]


def test_examples_whose_answer_is_cut_are_left_out(tokenizer) -> None:
    whole = encode(tokenizer, MESSAGES, 4096)
    short = len(whole[0]) - 3  # the answer's end falls off
    cut = encode(tokenizer, MESSAGES, short)
    assert cut[2] and fitting([whole, cut], short) == [whole]
    prompt_only = encode(tokenizer, MESSAGES, 16)
    assert all(label == -100 for label in prompt_only[1])  # all masked: a NaN loss
    with pytest.raises(ConfigError, match="max_seq_len"):
        fitting([cut, prompt_only], short)


def _adapter(folder: Path, base: str, weights: bytes = b"\x00" * 64) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = {"base_model_name_or_path": base, "r": 8, "lora_alpha": 16, "target_modules": ["v_proj", "q_proj"],
              "peft_type": "LORA"}
    (folder / "adapter_config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "adapter_model.safetensors").write_bytes(weights)
    return folder


def test_an_adapter_of_another_base_model_is_refused(tiny_chat: str, tmp_path: Path) -> None:
    check_adapter_base(_adapter(tmp_path / "same", tiny_chat), "demo:tiny-chat")
    # moved from another machine: the recorded folder is gone, the model's name still matches
    check_adapter_base(_adapter(tmp_path / "moved", "/elsewhere/demo-models/tiny-chat"), "demo:tiny-chat")
    with pytest.raises(ConfigError, match="trained on 'Qwen/Qwen2.5-7B-Instruct'"):
        check_adapter_base(_adapter(tmp_path / "other", "Qwen/Qwen2.5-7B-Instruct"), "demo:tiny-chat", "judge.judges[1].lora")
    with pytest.raises(ConfigError, match="no adapter_config.json"):
        check_adapter_base(tmp_path / "missing", "demo:tiny-chat")


def test_the_adapter_hash_follows_the_bytes_not_the_copy(tmp_path: Path) -> None:
    first = _adapter(tmp_path / "a", "m", bytes(range(64)))
    digest = adapter_hash(first)
    copy = tmp_path / "b"
    shutil.copytree(first, copy)  # new mtimes, new path
    assert adapter_hash(copy) == digest
    from engine.judge.params import JudgeParams

    def task(folder: Path) -> str:
        return JudgeParams(model="demo:tiny-chat", backend="transformers", lora=str(folder)).task_name()

    assert task(copy) == task(first)  # the same adapter moved: the same judge, its judgments kept
    flipped = bytearray(range(64))
    flipped[40] ^= 1
    (copy / "adapter_model.safetensors").write_bytes(bytes(flipped))
    assert adapter_hash(copy) != digest and task(copy) != task(first)
    config = json.loads((first / "adapter_config.json").read_text())
    _adapter(tmp_path / "c", "m", bytes(range(64)))
    (tmp_path / "c" / "adapter_config.json").write_text(json.dumps({**config, "lora_alpha": 32}))
    assert adapter_hash(tmp_path / "c") != digest


def _user_rows(rng: random.Random) -> list[dict]:
    languages = ["en", "el", "pl", "nl", "zh"][:rng.randint(2, 5)]
    rows = []
    for f in range(rng.randint(6, 25)):
        present = [lang for lang in languages if rng.random() < 0.85] or languages[:1]
        for lang in present:
            file_id = f"{lang}_f{f}" if f % 3 else f"f{f}"  # some ids without the prefix (same id in every language)
            rows += [{"file_id": file_id, "language": lang, "label": rng.choice(LABELS)} for _ in range(rng.randint(1, 5))]
    return rows


def test_the_split_on_user_shaped_data() -> None:
    cells = over = 0
    for trial in range(60):
        rows = _user_rows(random.Random(trial))
        split = split_groups(rows, 0.7, trial, "language-prefix")
        assert split == split_groups(list(reversed(rows)), 0.7, trial, "language-prefix")  # row order: same split
        worth: dict[tuple, int] = defaultdict(int)
        per_group: dict[str, dict[tuple, int]] = defaultdict(lambda: defaultdict(int))
        for row in rows:
            per_group[align_key(row["file_id"], row["language"], "language-prefix")][(row["language"], row["label"])] += 1
        for counts in per_group.values():
            for key, n in counts.items():
                worth[key] = max(worth[key], n)
        for language, labels in split.counts.items():
            for label, c in labels.items():
                cells += 1
                over += abs(c["test"] - 0.3 * (c["train"] + c["test"])) > worth[(language, label)]
    # one greedy pass left 141 of 2,647 such cells over one file's worth; moves and swaps leave 15
    assert over <= cells // 50, (over, cells)
    one = [{"file_id": "en_a", "language": "en", "label": "correct"}]
    assert split_groups(one, 0.7, 0, "language-prefix").counts["en"]["correct"] == {"train": 1, "test": 0}
    two = one + [{"file_id": "en_b", "language": "en", "label": "correct"}]
    assert split_groups(two, 0.7, 0, "language-prefix").counts["en"]["correct"] == {"train": 1, "test": 1}


def _williams_from_matrix(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> tuple[float, float]:
    """Steiger (1980) eq. 3 from the 3x3 correlation matrix (numpy's determinant), p from scipy."""
    from scipy import stats

    r = np.corrcoef(np.vstack([x, y, z]))
    n, r_xz, r_yz, r_xy = len(x), r[0, 2], r[1, 2], r[0, 1]
    rbar = (r_xz + r_yz) / 2
    t = (r_xz - r_yz) * math.sqrt((n - 1) * (1 + r_xy)) / math.sqrt(
        2 * (n - 1) / (n - 3) * np.linalg.det(r) + rbar ** 2 * (1 - r_xy) ** 3)
    return t, float(stats.t.sf(t, df=n - 3))


def test_williams_against_the_correlation_matrix_form() -> None:
    from engine.stats import williams_test

    rng = np.random.default_rng(7)
    for n in (5, 12, 40, 200):
        z = rng.normal(size=n)
        x, y = z + rng.normal(scale=0.7, size=n), z + rng.normal(scale=1.5, size=n)
        t_ref, p_ref = _williams_from_matrix(x, y, z)
        r = np.corrcoef(np.vstack([x, y, z]))
        t, p = williams_test(r[0, 2], r[1, 2], r[0, 1], n)
        assert t == pytest.approx(t_ref, rel=1e-9) and p == pytest.approx(p_ref, rel=1e-9)
        assert williams_test(r[1, 2], r[0, 2], r[0, 1], n)[1] == pytest.approx(1 - p, abs=1e-12)  # one-sided


def test_config_check_of_a_judge_refuses_a_foreign_adapter(tiny_chat: str, tmp_path: Path) -> None:
    from engine.judge.params import JudgeParams, JudgeSection
    from engine.judge.stage import JudgeStage

    def check(adapter: Path) -> None:
        section = JudgeSection(judges=(JudgeParams(model="demo:tiny-chat", backend="transformers", lora=str(adapter)),))
        JudgeStage(section).check_config()

    check(_adapter(tmp_path / "ok", tiny_chat))
    with pytest.raises(ConfigError, match=r"judge\.judges\[0\]\.lora: .*trained on 'Qwen/Qwen2.5-7B-Instruct'"):
        check(_adapter(tmp_path / "foreign", "Qwen/Qwen2.5-7B-Instruct"))


def test_one_file_id_in_two_languages_is_refused() -> None:
    import pyarrow as pa

    from engine.errors import InputError
    from engine.finetune.data import build_examples
    from engine.finetune.params import FinetuneParams
    from engine.records import SAMPLE_SCHEMA

    demo = Path(__file__).resolve().parents[2] / "engine" / "data" / "demo" / "samples.jsonl"
    rows = [json.loads(line) for line in demo.read_text(encoding="utf-8").splitlines()]
    for row in rows:  # user data that names a file's translations by one id
        row["file_id"] = row["file_id"].split("_", 1)[1]
    with pytest.raises(InputError, match="several languages"):
        build_examples(pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA), FinetuneParams(model="demo:tiny-chat"))
