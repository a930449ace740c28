"""Judge backend for any OpenAI-compatible chat-completions server (vLLM serve, hosted APIs), on httpx.

Requests run with adaptive concurrency (engine/llm/http_concurrency.py), one pooled
`httpx.Client` per batch with its own retries off: this module retries a 429/500/503/524, a
timeout, a dropped connection or a cut body with exponential backoff or the server's
Retry-After, within each request's `max_retries` and `retry_budget_s`; then the answer is an
error that the stage records as one `api_error` row. Requests with the same body are sent once;
with a budget every attempt is reserved and settled as engine/llm/http_budget.py describes.
The retry, timeout and counter rules: docs/judges.md.

The API key goes only into the Authorization header, never into answers, errors, logs or the
run directory; every error text passes through `redact` first. `provider_options` and the
`provider_secret_env` values are added to every request body (the secrets never recorded).
"""
from __future__ import annotations

import dataclasses
import email.utils
import json
import logging
import math
import os
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any, Callable, Protocol, Sequence

import httpx

from engine.errors import BudgetExhaustedError, MissingSecretError
from engine.llm.http_budget import JudgeBudget, Usage, request_hash
from engine.llm.http_concurrency import AdaptiveLimit
from engine.llm.requests import ChatRequest, ChatResponse

logger = logging.getLogger(__name__)
REDACTED = "[redacted]"
ERROR_BODY_CHARS = 300  # how much of a server's error answer a failure reason quotes
# Read (and redacted) beyond what is quoted, so a key the cut falls into is still found whole.
_ERROR_BODY_READ = 65536
_OVERLOAD = {429, 503, 524}  # answers that say "too many requests": the concurrency backs off


class HttpSettings(Protocol):
    """What the HTTP backend reads of its model entry (a judge's JudgeParams has these; each is
    described in docs/config.md under `judge.judges`)."""

    judge_name: str  # names the judge in error messages
    model: str
    base_url: str | None
    api_key_env: str | None
    max_concurrency: int
    timeout_s: float
    max_retries: int
    backoff_base_s: float
    backoff_cap_s: float
    retry_budget_s: float
    retry_statuses: tuple[int, ...]
    provider_options: dict[str, Any]
    provider_secret_env: dict[str, str]


def request_body(params: HttpSettings, request: ChatRequest, secrets: dict[str, str]) -> dict[str, Any]:
    """The chat-completions body of one request: model, messages, temperature, seed, max_tokens, the
    provider options and secrets as configured, and `response_format` when the strategy's answers
    are structured (a JSON schema)."""
    body: dict[str, Any] = {
        "model": params.model,
        "messages": list(request.messages),
        "temperature": request.temperature,
        "seed": request.seed,
        "max_tokens": request.max_tokens,
    }
    # provider routing, quantisation pins, price caps...: passed through as configured
    body.update(params.provider_options)
    body.update(secrets)
    if request.schema is not None:
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": "judgment", "schema": request.schema, "strict": True}}
    return body


def check_secrets(params: HttpSettings, where: str | None = None) -> None:
    """MissingSecretError unless every variable the judge names (API key, provider secrets) is set.
    Run by the stage's preflight too, so a missing key stops the run before its directory exists."""
    where = where or f"judge {params.judge_name!r}"
    names = [(params.api_key_env, "api_key_env", "the API key")] if params.api_key_env is not None else []
    names += [(name, f"provider_secret_env.{body_key}", "it") for body_key, name in params.provider_secret_env.items()]
    for name, option, what in names:
        if not os.environ.get(name):
            raise MissingSecretError(f"{where}: environment variable {name} is not set ({option}); export {what} "
                                     "under that name where the run starts")


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds from a Retry-After header: a number of seconds or an HTTP date."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:  # `inf`, `nan`: no number of seconds, as if the header were absent
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


@dataclasses.dataclass
class _Attempt:
    """What one attempt ended in: an answer, a final failure, or a reason to retry (with Retry-After)."""

    answer: ChatResponse | None = None
    reason: str = ""
    final: bool = False
    retry_after: float | None = None
    overload: bool = False  # the server is overloaded (429, 503, 524, a timeout): fewer requests in flight
    billed: bool = False  # may have reached the server and been billed without an answer to keep
    usage: tuple[int | None, int | None] = (None, None)  # reported prompt, completion tokens (None: not reported)


def token_count(value: Any) -> int | None:
    """A usage field as a count of tokens; None (not reported) for anything else: a negative,
    fractional or non-finite number, a string, a boolean."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and math.isfinite(value) and value >= 0 and value.is_integer():
        return int(value)
    return None


class HttpChatBackend:
    def __init__(self, params: HttpSettings, sleep: Callable[[float], None] = time.sleep, budget: JudgeBudget | None = None):
        self.params = params
        self.budget = budget  # caps, prices and the answer cache (engine/llm/http_budget.py); None: none of them
        self.url = str(params.base_url).rstrip("/") + "/chat/completions"
        self._sleep = sleep
        self._headers = {"Content-Type": "application/json"}
        check_secrets(params)
        if params.api_key_env is not None:
            self._headers["Authorization"] = f"Bearer {os.environ[params.api_key_env]}"
        self._secrets = {body_key: os.environ[name] for body_key, name in params.provider_secret_env.items()}

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResponse]:
        if not requests:
            return []
        # Requests with the same body (the cache key) are sent once and share the answer.
        keys = [request_hash(self._body_dict(r)) for r in requests]
        first: dict[str, int] = {}
        unique = [i for i, key in enumerate(keys) if first.setdefault(key, i) == i]
        workers = min(self.params.max_concurrency, len(unique))
        limits = httpx.Limits(max_connections=workers, max_keepalive_connections=workers)
        self.limit = AdaptiveLimit(workers)
        self.statuses: Counter[int] = Counter()  # HTTP status -> answers, over every attempt
        self._lock = threading.Lock()
        start = time.perf_counter()
        try:
            with httpx.Client(timeout=self.params.timeout_s, limits=limits, follow_redirects=False) as client, \
                    ThreadPoolExecutor(max_workers=workers) as pool:
                sent = list(pool.map(lambda i: self._cached_or_sent(client, requests[i], keys[i]), unique))
        finally:
            if self.budget is not None:
                self.budget.cache.close()
        by_key = {keys[i]: outcome for i, outcome in zip(unique, sent)}
        answers = [by_key[key][0] for key in keys]
        answers = [a if a is None or a.request_id == r.request_id else dataclasses.replace(a, request_id=r.request_id)
                   for a, r in zip(answers, requests)]
        # Counted here, in the part's own thread: the pool's threads do not see the part's counters.
        from engine import throughput

        results = [(answer, attempts) for answer, attempts in sent if attempts > 0]  # sent, not from the cache
        throughput.count("judge_http_cached", len(requests) - len(results))  # the cache, or a same-body request
        refused = sum(answer is None for answer in answers)
        results = [(answer, attempts) for answer, attempts in results if answer is not None]
        throughput.count("judge_http_requests", len(results))
        throughput.count("judge_http_retries", sum(attempts - 1 for _answer, attempts in results))
        throughput.count("judge_http_failed", sum(answer.error is not None for answer, _attempts in results))
        throughput.count("judge_http_429", self.statuses[429])
        throughput.count("judge_http_overloads", self.limit.overloads)
        throughput.count("judge_http_concurrency_cuts", self.limit.cuts)
        throughput.count("judge_http_send_s", time.perf_counter() - start)
        if self.limit.cuts:
            logger.info("judge %s: concurrency %s over %d requests (%d overload answer(s), %d of them 429)",
                        self.params.judge_name, " -> ".join(map(str, self.limit.history)), len(results),
                        self.limit.overloads, self.statuses[429])
        if refused and self.budget is not None:
            raise BudgetExhaustedError(f"judge {self.params.judge_name}: {self.budget.stop_reason()}; {refused} request(s) "
                                       f"of this part not sent, its {len(results)} answered one(s) kept in RUN/judge_cache")
        return answers  # type: ignore[return-value]  # none is None here

    def _cached_or_sent(self, client: httpx.Client, request: ChatRequest, key: str) -> tuple[ChatResponse | None, int]:
        """The answer and its attempts: from the cache (0), sent, or None when a cap refused it."""
        if self.budget is not None:
            cached = self.budget.cached(request, key)
            if cached is not None:  # paid for by an earlier attempt of this part
                return cached, 0
        return self._one(client, request, key)

    def redact(self, text: str) -> str:
        """`text` with the API key and every provider secret replaced by [redacted]."""
        secrets = [v for v in self._secrets.values() if v]
        auth = self._headers.get("Authorization")
        if auth:
            secrets += [auth, auth.split(" ", 1)[-1]]
        for secret in sorted(set(secrets), key=len, reverse=True):
            text = text.replace(secret, REDACTED)
        return text

    def _body(self, request: ChatRequest) -> bytes:
        return json.dumps(request_body(self.params, request, self._secrets), ensure_ascii=False).encode("utf-8")

    def _body_dict(self, request: ChatRequest) -> dict[str, Any]:
        """The request body without the provider secrets (what the answer cache is keyed by)."""
        return request_body(self.params, request, {})

    def _one(self, client: httpx.Client, request: ChatRequest, key: str) -> tuple[ChatResponse | None, int]:
        """The request's answer (or failure) and how many attempts it took; None when a cap
        refused an attempt. Each attempt reserves its worst case first (a retry may be billed
        again: a dropped connection after the server did the work) and settles it when it ends."""
        params, data, start = self.params, self._body(request), time.perf_counter()
        attempts, waited = params.max_retries + 1, 0.0
        for attempt in range(attempts):
            need = None
            if self.budget is not None:
                need = self.budget.worst_case(request.messages, request.max_tokens)
                if not self.budget.reserve(need):
                    return None, attempt + 1
            epoch, sent = self.limit.acquire(), time.perf_counter()
            # what an attempt that raised (a fault of ours) counts as: failed, and maybe billed
            got = _Attempt(reason="the request failed inside the client", final=True, billed=True)
            wait: float | None = None
            try:
                got = self._attempt(client, request, data, start)
                wait, why = self._next_wait(got, attempt, waited)
            finally:
                # Always: a slot or a reservation that leaks would stall every later request.
                try:
                    # the provider's pause holds only for a request that will retry (within its budget)
                    self.limit.release(epoch, "ok" if got.answer is not None else "overload" if got.overload else "other",
                                       time.perf_counter() - sent, got.retry_after if wait is not None else None)
                finally:
                    if need is not None:
                        self._settle(request, key, need, got)
            if got.answer is not None:
                return got.answer, attempt + 1
            if wait is None:
                return self._failed(request, why, start), attempt + 1
            waited += wait
            logger.warning("judge request %s: %s; retry %d of %d in %.3f s", request.request_id, self.redact(got.reason),
                           attempt + 1, params.max_retries, wait)
            self._sleep(wait)
        raise AssertionError("unreachable: the last attempt returns")  # pragma: no cover

    def _next_wait(self, got: _Attempt, attempt: int, waited: float) -> tuple[float | None, str]:
        """How long to wait before the next attempt, or None and why the request gives up."""
        params = self.params
        if got.final or got.answer is not None:
            return None, got.reason
        if attempt == params.max_retries:
            return None, f"{got.reason} after {attempt + 1} attempt(s)"
        # A server's Retry-After is waited for in full (retrying sooner only meets another 429),
        # the cap bounds our own backoff, the budget bounds both.
        wait = max(min(params.backoff_cap_s, params.backoff_base_s * 2 ** attempt), got.retry_after or 0.0)
        if waited + wait > params.retry_budget_s:
            return None, (f"{got.reason} after {attempt + 1} attempt(s): the next wait ({wait:.3f} s) "
                          f"would pass retry_budget_s ({params.retry_budget_s:g} s)")
        return wait, ""

    def _settle(self, request: ChatRequest, key: str, need: Usage, got: _Attempt) -> None:
        assert self.budget is not None
        if got.answer is not None:
            self.budget.keep(request, key, need, got.answer, got.usage)
        elif got.billed:
            self.budget.charge_unanswered(request, key, need, self.redact(got.reason))
        else:
            self.budget.unsent(need)

    def _attempt(self, client: httpx.Client, request: ChatRequest, data: bytes, start: float) -> _Attempt:
        timeout = self.params.timeout_s
        deadline = time.monotonic() + timeout  # the whole attempt, however slowly the server trickles
        try:
            with client.stream("POST", self.url, content=data, headers=self._headers) as reply:
                status = reply.status_code
                with self._lock:
                    self.statuses[status] += 1
                body = self._read(reply, deadline, None if status < 300 else _ERROR_BODY_READ)
        except (httpx.ConnectTimeout, httpx.PoolTimeout):  # never sent
            return _Attempt(reason=f"timeout after {timeout:g} s (connecting)", overload=True)
        except httpx.TimeoutException:
            return _Attempt(reason=f"timeout after {timeout:g} s", overload=True, billed=True)
        except httpx.RemoteProtocolError as exc:  # the connection closed before the whole answer came
            return _Attempt(reason=f"answer cut short ({self.redact(' '.join(str(exc).split()))[:200]})", billed=True)
        except (httpx.TransportError, OSError) as exc:
            # The exception's text helps (and may echo the request): redacted before the cut, which
            # could otherwise leave a piece of the key that the redaction misses.
            never_sent = isinstance(exc, (httpx.ConnectError, httpx.UnsupportedProtocol, httpx.ProxyError))
            return _Attempt(reason=f"connection error ({type(exc).__name__}: {self.redact(' '.join(str(exc).split()))[:200]})",
                            billed=not never_sent)
        if body is None:
            return _Attempt(reason=f"timeout: no whole answer within timeout_s ({timeout:g} s)", overload=True,
                            billed=status < 300)
        if reply.is_redirect:
            where = reply.headers.get("Location", "")
            return _Attempt(final=True, reason=f"HTTP {status} (not retried): the server redirects to {where!r}; redirects "
                            "are not followed, so the API key goes to no other address: set base_url to where the API is")
        if status in self.params.retry_statuses:
            return _Attempt(reason=f"HTTP {status}", retry_after=retry_after_seconds(reply.headers.get("Retry-After")),
                            overload=status in _OVERLOAD)
        if status >= 300:
            return _Attempt(final=True, reason=f"HTTP {status} (not retried){self._quote(body)}")
        try:
            answer, usage = self._answer(request, json.loads(body), time.perf_counter() - start)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            # a 200 reached the server and may be billed: charged its worst case
            detail = f": {exc}" if isinstance(exc, _NotText) else ""
            return _Attempt(final=True, billed=True, reason=f"the server's answer is not a chat completion{detail}")
        # The raw answer is stored in RUN/judgments: a server that echoes the request (a debugging
        # proxy, an echo endpoint) must not put the key there either.
        return _Attempt(answer=dataclasses.replace(answer, text=self.redact(answer.text or "")), usage=usage)

    @staticmethod
    def _read(reply: httpx.Response, deadline: float, limit: int | None) -> bytes | None:
        """The body (its first `limit` bytes), or None when the deadline passes before it is whole
        (a whole answer that came late is kept: it is paid for)."""
        chunks, size = [], 0
        length = reply.headers.get("Content-Length", "")
        whole = int(length) if length.isdigit() else None
        for chunk in reply.iter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if limit is not None and size >= limit or whole is not None and size >= whole:
                break
            if time.monotonic() > deadline:
                return None
        return b"".join(chunks)

    def _quote(self, body: bytes) -> str:
        """The start of a refused request's error answer (servers say there why), redacted."""
        # redacted before the cut: a key the cut falls into would otherwise leave its start behind
        text = self.redact(" ".join(body[:_ERROR_BODY_READ].decode("utf-8", "replace").split()))
        text = text[:ERROR_BODY_CHARS].strip()
        return f": {text}" if text else ""

    def _failed(self, request: ChatRequest, message: str, start: float) -> ChatResponse:
        message = self.redact(message)
        logger.warning("judge request %s failed: %s", request.request_id, message)
        return ChatResponse(request.request_id, None, None, 0, 0, time.perf_counter() - start, message)

    @staticmethod
    def _answer(request: ChatRequest, payload: dict[str, Any], latency: float) -> tuple[ChatResponse, tuple[int | None, int | None]]:
        """The answer and its reported (prompt, completion) tokens, None where not reported as a count."""
        choice = payload["choices"][0]
        content = choice["message"].get("content")
        if content is not None and not isinstance(content, str):
            raise _NotText(f"its message content is {type(content).__name__}, not text")
        usage = payload.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        prompt, completion = token_count(usage.get("prompt_tokens")), token_count(usage.get("completion_tokens"))
        # the row records what the server reported (0 where it did not); the budget charges the worst case there
        return ChatResponse(request.request_id, content or "", choice.get("finish_reason"), prompt or 0, completion or 0,
                            latency), (prompt, completion)


class _NotText(ValueError):
    """A chat completion whose message content is not text."""
