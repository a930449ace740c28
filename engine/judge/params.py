"""The `judge:` config section: judges, their strategies, prompt languages and backend options."""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from engine.errors import ConfigError
from engine.hints import did_you_mean
from engine.judge.promptpack import PROMPT_LANGUAGES, REFERENCE_MODES, STRATEGIES, check_pack_dir
from engine.params import ModelEntry, Params, option_digest, require

CAP_KEYS = ("max_prompt_tokens", "max_completion_tokens", "max_cost")
# Options that limit or price spending but change no judgment: not part of a judge's task name
# or the run's config hash, so a raised cap continues the same run.
POLICY_KEYS = (*CAP_KEYS, "price_per_million")

# Request-body keys the judge's own options set: provider options may not override them.
_BODY_KEYS = ("model", "messages", "temperature", "seed", "max_tokens", "response_format")
# Keys that would break the call or change what is judged, with why.
_REFUSED = {
    "stream": "the judge reads one whole answer per call; a streamed answer would not be read",
    "n": "the judge reads one answer per call; more choices would be paid for and dropped",
    "models": "OpenRouter's fallback models would let another model answer under this judge's name; "
              "give one judge per model instead",
    "extra_headers": "headers are not recorded and may carry credentials; give a secret as "
                     "provider_secret_env: {KEY: NAME_OF_ENV_VARIABLE}",
    "headers": "headers are not recorded and may carry credentials; give a secret as "
               "provider_secret_env: {KEY: NAME_OF_ENV_VARIABLE}",
    "credentials": "credentials would be written to the run's manifest; give them as "
                   "provider_secret_env: {KEY: NAME_OF_ENV_VARIABLE}",
}
# Decoding options whose names contain a secret-looking word but hold none.
_NOT_SECRET = ("max_completion_tokens", "max_new_tokens", "min_tokens", "stop_token_ids", "skip_special_tokens",
               "top_logprobs_tokens")
_SECRET = re.compile(r"(api[_-]?key|token|secret|password|authorization|bearer|credential|cookie)", re.IGNORECASE)
# Values that look like keys (OpenAI/OpenRouter/Anthropic `sk-...`, `Bearer ...`, GitHub and HF tokens).
_SECRET_VALUE = re.compile(r"^\s*(sk-|sk_|rk-|bearer\s|ghp_|github_pat_|hf_[A-Za-z0-9]{20}|xox[abp]-|AKIA[0-9A-Z]{12})",
                           re.IGNORECASE)


def _secret_like(options: Any, path: str = "") -> list[str]:
    """Paths in nested provider options whose key names say they hold a secret, or whose values look like one."""
    found = []
    if isinstance(options, dict):
        for key, value in options.items():
            where = f"{path}.{key}" if path else str(key)
            if _SECRET.search(str(key)) and str(key) not in _NOT_SECRET:
                found.append(where)
            found += _secret_like(value, where)
    elif isinstance(options, (list, tuple)):
        for i, value in enumerate(options):
            found += _secret_like(value, f"{path}[{i}]")
    elif isinstance(options, str) and _SECRET_VALUE.match(options):
        found.append(path)
    return found


# Which backends read a key of a judge: the groups below, and the model entry's dtype and window,
# which only a local engine loads weights with.
LOCAL = ("vllm", "transformers")


@dataclass(frozen=True, kw_only=True)
class JudgeOptions(Params):
    """The keys of a judge that every backend reads."""

    backend: Literal["vllm", "transformers", "http"] = "vllm"
    """vllm (offline engine), transformers (no structured outputs) or http (OpenAI-compatible server).
    A key that only other backends read (marked local:, vllm:, transformers:, http: below; dtype and
    max_model_len are local) is refused unless it holds its default."""
    name: str = ""
    """the judge's name in RUN/judgments; default: the model's last path component."""
    tokenizer: str | None = None
    """tokenizer location when it differs from the model (local backends); http: the served model's
    tokenizer (hub id or folder), with which the forecast counts prompt tokens (else it estimates them)."""
    strategies: tuple[str, ...] = ("standard",)
    """judge strategies: standard, cot, rubric, hierarchical (seven cluster calls),
    combined (the study's fifth: seven cluster calls, each with the rubric and chain-of-thought)."""
    prompt_languages: tuple[str, ...] = ("sample",)
    """`sample` (each sample's language; English without a pack) and/or fixed
    prompt languages (en, nl, zh, el, pl); several entries sweep them."""
    reference: tuple[str, ...] = ("with",)
    """whether the prompt shows the original comment: `with` (the study's setting) and/or
    `without` (reference-free: the code context stays, the original is left out); both sweep them."""
    prompt_pack: str | None = None
    """a folder of the user's prompt packs (<language>.yaml, the layout of
    engine/judge/prompts/); languages without a file there use the shipped pack. Default:
    the section's `prompt_pack`, else the shipped packs."""
    structured: bool | tuple[str, ...] = False
    """strategies answered under a JSON schema: true (all), false (none) or a list."""
    temperature: float = 0.0
    """sampling temperature (0: greedy)."""
    seed: int = 42
    """per-request seed."""
    max_tokens: int | dict[str, Any] = 10_000  # values checked below, each with its key named
    """output token limit per call; an answer that reaches it is `truncated` unless whole JSON.
    One number for every strategy, or a mapping naming each listed strategy's limit, e.g.
    `{standard: 768, cot: 2048}` (structured answers need less room than free reasoning)."""
    max_text_chars: int = 500
    """maxLength of the schema's free-text fields (explanation, reasoning, justification)."""
    max_errors: int = 10
    """maxItems of the schema's error lists."""
    price_per_million: dict[str, float] | None = None
    """prices per million tokens, `{input: X, output: Y}`, for the forecast, the report's
    cost columns and max_cost (null: none assumed). Caps and prices are not part of the run's identity:
    raise a cap and `--resume` the same run."""


@dataclass(frozen=True, kw_only=True)
class LocalJudgeOptions(Params):
    """The keys of a judge whose model runs here: backends vllm and transformers (with the model
    entry's dtype and max_model_len, which only these read).
    """

    backends: ClassVar[tuple[str, ...]] = LOCAL
    lora: str | None = None
    """local: a LoRA adapter folder (peft's layout, e.g. RUN/finetune/adapters/el/adapter) applied to the model
    (vllm: served per request beside the base model; transformers: with peft); its content hash is in
    the judge's task name and signature."""


@dataclass(frozen=True, kw_only=True)
class VllmJudgeOptions(Params):
    """The keys of a judge on backend vllm (the offline engine)."""

    backends: ClassVar[tuple[str, ...]] = ("vllm",)
    enforce_eager: bool = False
    """vllm: no CUDA graphs / compilation (faster start, CPU builds)."""
    gpu_memory_utilization: float = 0.9
    """vllm: share of device memory the engine may take."""
    enable_prefix_caching: bool = True
    """vllm: reuse the shared system prompt's KV cache across calls."""


@dataclass(frozen=True, kw_only=True)
class TransformersJudgeOptions(Params):
    """The keys of a judge on backend transformers."""

    backends: ClassVar[tuple[str, ...]] = ("transformers",)
    batch_size: int = 4
    """transformers: prompts per generate() call."""


@dataclass(frozen=True, kw_only=True)
class HttpJudgeOptions(Params):
    """The keys of a judge on backend http (an OpenAI-compatible chat-completions server)."""

    backends: ClassVar[tuple[str, ...]] = ("http",)
    base_url: str | None = None
    """http: the server's base URL, e.g. http://localhost:8000/v1."""
    api_key_env: str | None = None
    """http: NAME of the environment variable that holds the API key (never the key)."""
    max_concurrency: int = 8
    """http: requests in flight at once."""
    timeout_s: float = 120.0
    """http: seconds before a request times out (then retried)."""
    max_retries: int = 6
    """http: retries after the first attempt (429/500/503/524, timeouts, dropped connections)."""
    backoff_base_s: float = 5.0
    """http: first backoff; doubles per retry, at least the server's Retry-After."""
    backoff_cap_s: float = 120.0
    """http: longest backoff between retries (a server's longer Retry-After is waited for in full,
    within retry_budget_s)."""
    retry_budget_s: float = 600.0
    """http: most seconds one request waits between its retries, in all; a wait that
    would pass it (a long Retry-After) is not made and the request fails with its reason."""
    retry_statuses: tuple[int, ...] = (429, 500, 503, 524)
    """http: HTTP status codes that are retried."""
    provider_options: dict[str, Any] = field(default_factory=dict)
    """http: extra keys of every request body, passed through as given (e.g. OpenRouter's
    `provider: {quantizations: [fp8], max_price: {prompt: 1, completion: 3.1}}`); recorded in the signature.
    Refused: `stream`, `n`, `models`, `extra_headers`, `headers`, `credentials`, secret-looking key names
    and values that look like keys (`sk-...`); see docs/judge_prompts.md."""
    provider_secret_env: dict[str, str] = field(default_factory=dict)
    """http: body key -> NAME of the environment variable holding its value (secrets:
    only the key and the variable's name are recorded, never the value)."""
    # spending caps: policy, not identity (left out of the task name and the config hash)
    max_prompt_tokens: int | None = None
    """http: most prompt tokens this judge may spend in the run (a cap; null: none). Each
    request's worst case is reserved before it is sent; the judge stops when the next one would pass."""
    max_completion_tokens: int | None = None
    """http: most completion tokens this judge may spend in the run (a cap; null: none)."""
    max_cost: float | None = None
    """http: most this judge may cost in the run, in the currency of price_per_million (a cap; null: none)."""


BACKEND_GROUPS = (LocalJudgeOptions, VllmJudgeOptions, TransformersJudgeOptions, HttpJudgeOptions)


def backend_keys() -> dict[str, tuple[str, ...]]:
    """Key -> the backends that read it, for every key some backends do not read."""
    keys = {name: LOCAL for name in ("dtype", "max_model_len")}
    for group in BACKEND_GROUPS:
        keys.update({f.name: group.backends for f in dataclasses.fields(group)})
    return keys


def _default(key: str) -> Any:
    """The default of a judge's key."""
    field = next(f for f in dataclasses.fields(JudgeParams) if f.name == key)
    return field.default if field.default_factory is dataclasses.MISSING else field.default_factory()


@dataclass(frozen=True)
class JudgeParams(HttpJudgeOptions, TransformersJudgeOptions, VllmJudgeOptions, LocalJudgeOptions, JudgeOptions,
                  ModelEntry):
    """One judge: a model entry (`ModelEntry`: model, dtype, max_model_len) behind a backend, the
    strategies and prompt languages it runs. Its keys are grouped by the backends that read them:
    `JudgeOptions` (every backend), `LocalJudgeOptions` (vllm and transformers; also the model entry's
    dtype and max_model_len), `VllmJudgeOptions`, `TransformersJudgeOptions`, `HttpJudgeOptions`. A key
    of another backend than the judge's is refused (unless it holds its default, as a recorded
    config does), so a setting that would be silently ignored is never taken for one in effect.
    """

    policy_fields = POLICY_KEYS

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_backend_keys()
        for strategy in self.strategies:
            require(strategy in STRATEGIES, "strategies", strategy, f"one of {list(STRATEGIES)}")
        require(len(set(self.strategies)) == len(self.strategies) and self.strategies, "strategies", self.strategies,
                "a non-empty list without repeats")
        for language in self.prompt_languages:
            require(language == "sample" or language in PROMPT_LANGUAGES, "prompt_languages", language,
                    f"'sample' or one of {list(PROMPT_LANGUAGES)}")
        require(len(set(self.prompt_languages)) == len(self.prompt_languages) and self.prompt_languages,
                "prompt_languages", self.prompt_languages, "a non-empty list without repeats")
        for mode in self.reference:
            require(mode in REFERENCE_MODES, "reference", mode, f"one of {list(REFERENCE_MODES)}")
        require(len(set(self.reference)) == len(self.reference) and self.reference, "reference", self.reference,
                "a non-empty list without repeats, e.g. [with] or [with, without]")
        if isinstance(self.structured, tuple):
            for strategy in self.structured:
                require(strategy in self.strategies, "structured", strategy, f"true, false or some of {list(self.strategies)}")
        require(self.temperature >= 0, "temperature", self.temperature, "a number >= 0")
        if isinstance(self.max_tokens, dict):
            for strategy, limit in self.max_tokens.items():
                require(strategy in self.strategies, f"max_tokens.{strategy}", limit,
                        f"keys drawn from the listed strategies {list(self.strategies)}"
                        f"{did_you_mean(str(strategy), self.strategies)}")
                require(isinstance(limit, int) and not isinstance(limit, bool) and limit > 0, f"max_tokens.{strategy}", limit,
                        "a positive integer")
            missing = [s for s in self.strategies if s not in self.max_tokens]
            require(not missing, "max_tokens", self.max_tokens, f"a limit for every listed strategy; missing: {missing}")
        else:
            require(self.max_tokens > 0, "max_tokens", self.max_tokens, "a positive integer")
        require(self.max_text_chars > 0 and self.max_errors > 0, "max_text_chars", self.max_text_chars, "positive limits")
        require(self.max_concurrency > 0, "max_concurrency", self.max_concurrency, "a positive integer")
        require(self.timeout_s > 0, "timeout_s", self.timeout_s, "a positive number of seconds")
        require(self.max_retries >= 0, "max_retries", self.max_retries, "an integer >= 0")
        require(0 < self.backoff_base_s <= self.backoff_cap_s, "backoff_base_s", self.backoff_base_s, "> 0 and <= backoff_cap_s")
        require(self.retry_budget_s >= 0, "retry_budget_s", self.retry_budget_s, "a number of seconds >= 0")
        require(self.batch_size > 0, "batch_size", self.batch_size, "a positive integer")
        if self.backend == "http":
            require(bool(self.base_url), "base_url", self.base_url, "the server's URL, e.g. http://localhost:8000/v1")
        if self.api_key_env is not None and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.api_key_env) is None:
            # Not echoed: what is here instead of a name is most often the key itself.
            raise ConfigError(f"api_key_env: got a value of {len(self.api_key_env)} character(s) that is not a "
                              "variable name (not shown: it may be the key itself); allowed: the NAME of an "
                              "environment variable, e.g. JUDGE_API_KEY, which holds the key")
        self._check_provider_options()
        check_caps(self, "")
        if self.price_per_million is not None:
            prices = self.price_per_million
            unknown = "".join(did_you_mean(k, ("input", "output")) for k in sorted(set(prices) - {"input", "output"}))
            require(set(prices) == {"input", "output"} and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                             and v >= 0 for v in prices.values()),
                    "price_per_million", prices, "{input: X, output: Y}, prices per million tokens >= 0" + unknown)
        if self.max_cost is not None:
            require(self.price_per_million is not None, "max_cost", self.max_cost,
                    "a cap with the judge's prices: add price_per_million: {input: X, output: Y}")
        if self.backend == "transformers" and self.structured_strategies():
            raise ConfigError("structured: the transformers backend has no structured outputs; "
                              "use backend vllm or http, or set structured: false")

    def __hash__(self) -> int:  # the dataclass hash would fail on the dict-valued provider options
        return hash(option_digest(self.to_dict()))

    def _check_backend_keys(self) -> None:
        """A key that only other backends read is refused unless it holds its default (which a
        recorded config, listing every key, does), so an ignored setting is never taken for one in effect."""
        for key, backends in backend_keys().items():
            if self.backend not in backends and getattr(self, key) != _default(key):
                owners = " or ".join(backends)
                hint = " (a served model names its adapter in `model`)" if key == "lora" else ""
                raise ConfigError(f"{key}: only with backend {owners} (a key of the {owners} backend; this judge's "
                                  f"backend is {self.backend}): remove it, or set backend: {backends[0]}{hint}")

    def _check_provider_options(self) -> None:
        if not (self.provider_options or self.provider_secret_env):
            return
        for key in (*self.provider_options, *self.provider_secret_env):
            require(key not in _BODY_KEYS, "provider_options", key,
                    f"keys other than {list(_BODY_KEYS)}, which the judge's own options set")
        for key in self.provider_options:
            if key in _REFUSED:
                raise ConfigError(f"provider_options.{key}: not allowed: {_REFUSED[key]}")
        for path in _secret_like(self.provider_options):
            raise ConfigError(f"provider_options.{path}: looks like a secret, which would be written to the run's "
                              f"manifest; give it as provider_secret_env: {{{path.split('.')[0]}: NAME_OF_ENV_VARIABLE}}")
        for key, name in self.provider_secret_env.items():
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(name)) is None:  # not echoed: most often the secret itself
                raise ConfigError(f"provider_secret_env.{key}: got a value that is not a variable name (not shown: it "
                                  "may be the secret itself); allowed: the NAME of an environment variable")

    def max_tokens_for(self, strategy: str) -> int:
        """The output token limit of one strategy's calls."""
        return self.max_tokens[strategy] if isinstance(self.max_tokens, dict) else self.max_tokens

    def max_tokens_signature(self) -> int | str:
        """One number as it always was; per strategy `standard=768,cot=2048` in the strategies' order."""
        if isinstance(self.max_tokens, dict):
            return ",".join(f"{s}={self.max_tokens[s]}" for s in self.strategies)
        return self.max_tokens

    def structured_strategies(self) -> tuple[str, ...]:
        if isinstance(self.structured, bool):
            return self.strategies if self.structured else ()
        return self.structured

    @property
    def judge_name(self) -> str:
        return self.name or self.model.rstrip("/").rsplit("/", 1)[-1].split(":")[-1]

    def task_name(self) -> str:
        """`judge-<name>-<digest of every resolved option>`: two differently configured judges never share parts.

        The options include `reference` and, for a user prompt pack, the content of its files, so
        a judgment made with other prompts is never taken for this judge's."""
        options = self.to_dict()
        if self.prompt_pack is not None:
            options["prompt_pack_content"] = check_pack_dir(self.prompt_pack)
        if self.lora is None:  # judges without an adapter keep the task names of earlier versions
            options.pop("lora")
        else:  # named by content: a retrained adapter at the same path is another judge, a copy elsewhere the same
            from engine.judge.adapter import adapter_hash

            options["lora"] = adapter_hash(self.lora)
        digest = option_digest(options, exclude=POLICY_KEYS)
        short = re.sub(r"[^A-Za-z0-9._-]+", "-", self.judge_name).strip("-.")
        return f"judge-{short[:40] or 'model'}-{digest}"


@dataclass(frozen=True)
class RunBudget(Params):
    """`judge.budget`: caps over every HTTP judge of the run together."""

    max_prompt_tokens: int | None = None
    """most prompt tokens all judges together may spend (null: none)."""
    max_completion_tokens: int | None = None
    """most completion tokens all judges together may spend (null: none)."""
    max_cost: float | None = None
    """most all judges together may cost (null: none); every http judge needs price_per_million."""

    def __post_init__(self) -> None:
        check_caps(self, "")


def check_caps(options: Any, prefix: str) -> None:
    for key in CAP_KEYS:
        value = getattr(options, key)
        require(value is None or value > 0, f"{prefix}{key}", value, "a positive number, or null for no cap")


@dataclass(frozen=True)
class JudgeSection(Params):
    """The `judge:` section."""

    judges: tuple[JudgeParams, ...]
    """the judges; each is one task (named from all its options), an exact duplicate is an error."""
    prompt_pack: str | None = None
    """a folder of the user's prompt packs for every judge that names none itself
    (<language>.yaml files laid out like engine/judge/prompts/; checked at config check)."""
    budget: RunBudget = field(default_factory=RunBudget)
    """caps over all HTTP judges together (max_prompt_tokens, max_completion_tokens, max_cost);
    each judge may have its own as well."""
    policy_fields = ("budget",)

    def __post_init__(self) -> None:
        if self.budget.max_cost is not None:
            unpriced = [i for i, j in enumerate(self.judges) if j.backend == "http" and j.price_per_million is None]
            require(not unpriced, "budget.max_cost", self.budget.max_cost,
                    f"a cap on priced judges: judge.judges{unpriced} have no price_per_million")
        require(len(self.judges) > 0, "judge.judges", self.judges, "a non-empty list of judges")
        if self.prompt_pack is not None:
            # frozen: the section's pack becomes each judge's own, so a part needs only its judge
            object.__setattr__(self, "judges", tuple(
                judge if judge.prompt_pack is not None else dataclasses.replace(judge, prompt_pack=self.prompt_pack)
                for judge in self.judges))
        seen: dict[str, int] = {}
        for i, judge in enumerate(self.judges):
            task = judge.task_name()
            if task in seen:
                raise ConfigError(f"judge.judges[{i}]: duplicates judge.judges[{seen[task]}] exactly; remove one")
            seen[task] = i
