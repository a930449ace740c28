from dataclasses import dataclass, field
from typing import Any


@dataclass
class StructuredOutputsParams:
    json: Any = None


@dataclass
class SamplingParams:
    temperature: float = 1.0
    max_tokens: int = 16
    seed: int | None = None
    stop_token_ids: list = field(default_factory=list)
    detokenize: bool = True
    skip_special_tokens: bool = True
    structured_outputs: Any = None
