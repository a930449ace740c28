"""Prompts and cleaning for the round trip's three generation steps, through the generate backends.

1. explain: code -> a comment in a target language (prompt `explain.<lang>.txt`);
2. regenerate: comment + signature + context -> code; the prompt ends inside the function,
   after its docstring, so a code model continues with the body (prompt `regenerate.txt`);
3. compress: comment -> a shorter comment within a word (or, for zh, character) budget
   (prompt `compress.<lang>.txt`), for conciseness.

Prompts are data files with `{placeholders}`; a user can point `prompts_dir` at their own.
Generation is greedy through `engine.llm.generator_backend` (transformers or vLLM); a request seed
is derived from its identity so results do not depend on batching, order or part size.
"""
from __future__ import annotations

import hashlib
import logging
import re
import textwrap
from typing import Any, Mapping, Sequence

from engine.errors import ModelLoadError
from engine.llm.generator_backend import get_backend
from engine.llm.requests import GenerationRequest
from engine.roundtrip import completion_function
from engine.roundtrip.params import ModelParams
from engine.sandbox.languages import java_class_name

log = logging.getLogger(__name__)

# Where a generated comment ends: a blank line, or the start of code or of another comment block.
_COMMENT_END = re.compile(r"\n\s*\n|\n(?:def |class |import |from |```|#\s*\w+:)")


def request_seed(*parts: object) -> int:
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def explain_prompt(template: str, task: Mapping[str, str]) -> str:
    return template.format(context=task["context"], code=task["code"].rstrip(), entry_point=task["entry_point"],
                           signature=task["signature"]).lstrip()


def clean_comment(text: str) -> str:
    """The first paragraph of a generated explanation, comment markers removed."""
    text = _COMMENT_END.split(text.strip("\n"), maxsplit=1)[0]
    lines = [re.sub(r"^\s*(?:#+|//+|\*+)\s?", "", line) for line in text.splitlines()]
    return " ".join(line.strip() for line in lines if line.strip()).strip()


def docstring_text(comment: str) -> str:
    """`comment` made safe inside a triple-quoted docstring."""
    return comment.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


def regenerate_prompt(template: str, task: Mapping[str, str], comment: str) -> str:
    wrapped = textwrap.fill(docstring_text(comment), width=88, subsequent_indent="    ") if comment else ""
    return template.format(context=task["context"], signature=task["signature"], comment=wrapped).lstrip("\n")


def function_from_completion(signature: str, completion: str) -> str:
    """The signature plus the completion's body, ending where Python's tokenizer starts a logical
    line at column 0 (completion_function.python_body)."""
    body = completion_function.python_body(completion)
    return signature + "\n" + (body if body.strip(" \t\f\n") else "    pass") + "\n"


def regenerate_java_prompt(template: str, task: Mapping[str, str], comment: str) -> str:
    text = "\n     * ".join(textwrap.wrap(comment.replace("*/", "* /"), width=88)) if comment else ""
    return template.format(context=task["context"], class_name=java_class_name(task["code"]), signature=task["signature"],
                           comment=text).lstrip("\n")


def java_class_from_completion(task: Mapping[str, str], completion: str) -> str:
    """The class holding the signature and the completion up to the brace that closes the method
    (engine.roundtrip.completion_function: the Java parser places it; `Rejected` when it cannot)."""
    body = completion_function.java_method(task["signature"], completion)
    return f"{task['context']}\n\npublic class {java_class_name(task['code'])} {{\n    {task['signature']} {{{body}\n}}\n".lstrip("\n")


def function_from_brace_completion(task: Mapping[str, str], completion: str) -> str:
    """JavaScript, C++, Go, Rust: the function (and the helpers after it) as the language's parser reads them."""
    return completion_function.brace_function(task["programming_language"], task["signature"], completion)


def line_comment(comment: str, marker: str = "//") -> str:
    return f"\n{marker} ".join(textwrap.wrap(comment, width=88)) if comment else ""


def regenerate_code_prompt(template: str, task: Mapping[str, str], comment: str) -> str:
    """The regeneration prompt of any language: Python continues after the docstring, the others after `{`."""
    language = task["programming_language"]
    if language == "python":
        return regenerate_prompt(template, task, comment)
    if language == "java":
        return regenerate_java_prompt(template, task, comment)
    return template.format(context=task["context"], signature=task["signature"], comment=line_comment(comment)).lstrip("\n")


def code_from_completion(task: Mapping[str, str], completion: str) -> str:
    """The regenerated function; raises completion_function.Rejected when its language's parser cannot place it."""
    language = task["programming_language"]
    try:
        completion.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate: no source file can hold it (and the parsers read UTF-8 bytes).
        raise completion_function.Rejected("the completion is not valid Unicode (a lone surrogate)") from None
    if language == "python":
        return completion_function.python_function(task, function_from_completion(task["signature"], completion))
    if language == "java":
        return java_class_from_completion(task, completion)
    return function_from_brace_completion(task, completion)


def regenerate_template_name(language: str) -> str:
    return "regenerate.txt" if language == "python" else f"regenerate.{language}.txt"


def compress_prompt(template: str, comment: str, ratio: float) -> str:
    words = max(1, int(len(comment.split()) * ratio))
    chars = max(1, int(len(comment) * ratio))
    return template.format(comment=comment, words=words, chars=chars)


def compression_ratios(n: int) -> list[float]:
    """n target lengths spread over (0, 1): greedy decoding gives n different compressions."""
    return [round(1.0 - (i + 1) / (n + 1), 4) for i in range(n)]


class TextGenerator:
    """One generator model behind the generate stage's backends; prompts in, texts out."""

    def __init__(self, params: ModelParams):
        from engine.runtime import load_tokenizer

        self.params = params
        try:
            self.tokenizer = load_tokenizer(params.tokenizer_name, fast=False)
        except ModelLoadError as exc:
            raise ModelLoadError(f"cannot load the tokenizer of {params.tokenizer_name!r}: {exc}") from exc
        self._spec = params.backend_spec()
        get_backend(self._spec, stage="roundtrip")  # load now: a model that cannot load fails the part here

    @property
    def backend(self) -> Any:
        """The loaded backend, asked of the model registry at each use (it owns the model)."""
        return get_backend(self._spec, stage="roundtrip")

    def complete(
        self, prompts: Sequence[str], seeds: Sequence[int], max_new_tokens: int | None = None, temperature: float = 0.0
    ) -> list[str | Exception]:
        """Continuation of each prompt (greedy, or sampled with its seed when temperature > 0),
        or the exception that stopped that one prompt."""
        limit = max_new_tokens or self.params.max_new_tokens
        stop_ids = [i for i in (self.tokenizer.eos_token_id,) if i is not None]
        out: list[Any] = [None] * len(prompts)
        requests, where = [], []
        for i, (prompt, seed) in enumerate(zip(prompts, seeds)):
            ids = tuple(self.tokenizer(prompt, add_special_tokens=True)["input_ids"])
            if len(ids) + limit > self.backend.max_model_len:
                out[i] = ValueError(f"prompt of {len(ids)} tokens + {limit} new tokens exceeds the window of {self.backend.max_model_len}")
                continue
            requests.append(GenerationRequest(str(i), ids, limit, seed, temperature))
            where.append(i)
        if requests:
            from engine.isolation import ItemFailure, run_isolated

            # Out of memory on one prompt is a TransientError: the part fails and is retried, it
            # never becomes a row's "generation failed".
            results = run_isolated(lambda batch: self.backend.generate(list(batch), stop_ids), requests,
                                   what=f"generator {self.params.display_name}: batch of prompts")
            for i, result in zip(where, results):
                if isinstance(result, ItemFailure):
                    out[i] = result.exception
                else:
                    ids = [t for t in result.token_ids if t not in stop_ids]
                    out[i] = self.tokenizer.decode(ids, skip_special_tokens=True)
        return out
