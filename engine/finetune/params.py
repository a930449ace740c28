"""The `finetune:` config section: the training data's split, the LoRA hyper-parameters, and
how the adapters are judged on the test side."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.errors import ConfigError
from engine.judge.promptpack import CLUSTERED, PROMPT_LANGUAGES, STRATEGIES
from engine.params import Dtype, ModelEntry, option_digest, require

ALL = "all"  # the adapter trained on every language's training side


@dataclass(frozen=True)
class FinetuneParams(ModelEntry):
    """Fine-tune a chat model as a judge on the experts' verdicts, one LoRA adapter per language.
    The base chat model is a model entry (`ModelEntry`: model, dtype, max_model_len)."""

    # The entry's three keys again, same types and defaults, only for what they mean in training.
    model: str
    """the base chat model (local directory, demo:<name> or hub id)."""
    dtype: Dtype = "auto"
    """training dtype: float32, bfloat16 (GPU) or auto (bfloat16 on CUDA, else float32)."""
    max_model_len: int | None = None
    """context window of the evaluation's engine; null: the model's own."""
    tokenizer: str | None = None
    """tokenizer location when it differs from the model."""
    strategy: str = "standard"
    """the judge strategy whose prompt and answer schema the examples use: standard, cot or rubric."""
    prompt_language: str = "sample"
    """`sample` (each file's language) or a fixed prompt language (en, nl, zh, el, pl)."""
    train_ratio: float = 0.7
    """share of each label (per language) on the training side; files stay whole."""
    align: Literal["language-prefix", "none"] = "language-prefix"
    """`language-prefix`: files whose ids differ only in a leading `<language>_` are one file's
    translations and land on the same side in every language (the study's aligned split);
    `none`: each file is split on its own."""
    split_seed: int = 42
    """seed of the split (its order of files)."""
    train_languages: tuple[str, ...] = ("en", "nl", "zh", "el", "pl", ALL)
    """the languages with an adapter of their own; `all` adds one trained on every language."""
    seed: int = 42
    """seed of training (data order, dropout, LoRA initialisation)."""
    lora_r: int = 8
    """LoRA rank (vLLM serves ranks 1, 8, 16, 32, 64, ...)."""
    lora_alpha: int = 16
    """LoRA scaling numerator."""
    lora_dropout: float = 0.05
    """dropout on the LoRA input."""
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    """module names the adapters wrap."""
    learning_rate: float = 2e-4
    """AdamW learning rate."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    epochs: int = 1
    """passes over the training side (the steps follow from it unless max_steps is set)."""
    max_steps: int = 0
    """stop after this many optimizer steps (0: epochs decide)."""
    batch_size: int = 1
    """examples per optimizer step."""
    max_seq_len: int = 8192
    """examples longer than this many tokens (prompt and answer) are left out of
    training, with a warning (the manifest's `cut_examples` counts them); none fitting is an error."""
    quantize: Literal["none", "4bit"] = "none"
    """none or 4bit (QLoRA; needs CUDA and bitsandbytes)."""
    device: str = "auto"
    """auto, cpu or cuda:N."""
    checkpoint_every: int = 10
    """save a resumable checkpoint every this many steps."""
    log_every: int = 1
    """record the loss every this many steps."""
    train: bool = True
    """false writes the training data and split only (RUN/finetune/data/), for training elsewhere."""
    evaluate: bool = True
    """judge the test side with the base model and every adapter (the cross-language table)."""
    eval_backend: Literal["vllm", "transformers"] = "vllm"
    """vllm or transformers (with peft) for that evaluation."""
    max_tokens: int = 512
    """answer token limit of the evaluation's calls."""
    max_text_chars: int = 12
    """maxLength of the answers' free-text fields (structured evaluation)."""
    max_errors: int = 2
    """maxItems of the answers' error lists."""
    structured: bool = True
    """the evaluation answers under the strategy's JSON schema (vllm only)."""
    gpu_memory_utilization: float = 0.2
    """vllm: share of device memory the evaluation's engine may take."""

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.strategy in STRATEGIES and self.strategy not in CLUSTERED, "strategy", self.strategy,
                f"one of {[s for s in STRATEGIES if s not in CLUSTERED]} (a clustered strategy's answer is seven calls)")
        require(self.prompt_language == "sample" or self.prompt_language in PROMPT_LANGUAGES, "prompt_language",
                self.prompt_language, f"'sample' or one of {list(PROMPT_LANGUAGES)}")
        require(0 < self.train_ratio < 1, "train_ratio", self.train_ratio, "a share strictly between 0 and 1, e.g. 0.7")
        require(bool(self.train_languages) and len(set(self.train_languages)) == len(self.train_languages),
                "train_languages", self.train_languages, "a non-empty list without repeats, e.g. [en, el, all]")
        for language in self.train_languages:
            require(language == ALL or language in PROMPT_LANGUAGES, "train_languages", language,
                    f"'{ALL}' or one of {list(PROMPT_LANGUAGES)}")
        require(self.lora_r in (1, 8, 16, 32, 64, 128, 256, 320, 512), "lora_r", self.lora_r,
                "a rank vLLM serves: 1, 8, 16, 32, 64, 128, 256, 320 or 512")
        require(self.lora_alpha > 0, "lora_alpha", self.lora_alpha, "a positive integer")
        require(0 <= self.lora_dropout < 1, "lora_dropout", self.lora_dropout, "a probability in [0, 1)")
        require(bool(self.target_modules), "target_modules", self.target_modules, "module names, e.g. [q_proj, v_proj]")
        require(self.learning_rate > 0, "learning_rate", self.learning_rate, "a positive number")
        require(self.epochs >= 1 and self.max_steps >= 0, "epochs", self.epochs, "epochs >= 1 and max_steps >= 0")
        require(self.batch_size >= 1, "batch_size", self.batch_size, "a positive integer")
        require(self.max_seq_len >= 16, "max_seq_len", self.max_seq_len, "an integer >= 16")
        require(self.dtype in ("auto", "float32", "bfloat16"), "dtype", self.dtype, "auto, float32 or bfloat16")
        require(self.checkpoint_every >= 1 and self.log_every >= 1, "checkpoint_every", self.checkpoint_every,
                "checkpoint_every and log_every >= 1")
        require(self.max_tokens > 0, "max_tokens", self.max_tokens, "a positive integer")
        if self.structured and self.eval_backend == "transformers":
            raise ConfigError("finetune.structured: the transformers backend has no structured outputs; "
                              "use eval_backend: vllm or set structured: false")

    def training_options(self) -> dict:
        """Every option that decides an adapter's weights (besides the training data)."""
        keys = ("model", "tokenizer", "seed", "lora_r", "lora_alpha", "lora_dropout", "target_modules", "learning_rate",
                "weight_decay", "epochs", "max_steps", "batch_size", "max_seq_len", "dtype", "quantize")
        data = self.to_dict()
        return {k: data[k] for k in keys}

    def trainer_options(self) -> dict:
        """What the training loop reads: the weights' options and how often it logs and checkpoints."""
        return {**self.training_options(), "checkpoint_every": self.checkpoint_every, "log_every": self.log_every}

    def data_options(self) -> dict:
        """Every option that decides the training examples and the split."""
        data = self.to_dict()
        return {k: data[k] for k in ("strategy", "prompt_language", "train_ratio", "align", "split_seed", "max_text_chars",
                                     "max_errors")}

    def digest(self) -> str:
        return option_digest(self.to_dict())
