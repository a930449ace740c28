"""Judge backend for any OpenAI-compatible chat-completions server (vLLM serve, hosted APIs).

Standard library only (urllib). Requests run with bounded concurrency; a 429/500/503/524
(configurable), a timeout, a dropped connection or a body cut short is retried with exponential
backoff (base * 2^attempt, at most the cap) or after the server's Retry-After when it asks for
longer (in full: retrying sooner only meets another 429). The retry budget
of one request is `max_retries` retries and `retry_budget_s` seconds of waiting between them,
whichever is spent first (a Retry-After longer than what is left of the budget is not waited
for); then the request's answer is an error with its reason, which the stage records as one
`api_error` judgment row. Attempts, retries and failed requests are counted per part
(engine.throughput counters `judge_http_requests`, `judge_http_retries`, `judge_http_failed`),
summed in the manifest's throughput section and shown in the report's judge section.

The API key is read from the environment variable the config names and goes only into the
Authorization header: never into answers, errors, logs or the run directory; every error text
(which may quote a server's answer or an exception that echoes the request's headers) passes
through `redact` first. `provider_options` are added to every request body as configured;
`provider_secret_env` values are read from the environment and added the same way, but never
recorded.
"""
from __future__ import annotations

import dataclasses
import email.utils
import http.client
import json
import logging
import os
import socket
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

from engine.errors import MissingSecretError
from engine.judge.backends import ChatRequest, ChatResponse
from engine.judge.config import JudgeParams

logger = logging.getLogger(__name__)
REDACTED = "[redacted]"
_ERROR_BODY_CHARS = 300  # how much of a server's error answer a failure reason quotes
# Read (and redacted) beyond what is quoted, so a key the cut falls into is still found whole.
_ERROR_BODY_READ = 65536


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """urllib follows a 301/302/303 with the request's headers, Authorization included, to
    whatever host the Location names; the judge never does (the answer is an HTTP error)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 - urllib's signature
        return None


_OPENER = urllib.request.build_opener(_RefuseRedirects)


def request_body(params: JudgeParams, request: ChatRequest, secrets: dict[str, str]) -> dict[str, Any]:
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


def check_secrets(params: JudgeParams, where: str | None = None) -> None:
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
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


class HttpChatBackend:
    def __init__(self, params: JudgeParams, sleep: Callable[[float], None] = time.sleep):
        self.params = params
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
        with ThreadPoolExecutor(max_workers=min(self.params.max_concurrency, len(requests))) as pool:
            results = list(pool.map(self._one, requests))
        # Counted here, in the part's own thread: the pool's threads do not see the part's counters.
        from engine import throughput

        throughput.count("judge_http_requests", len(results))
        throughput.count("judge_http_retries", sum(attempts - 1 for _answer, attempts in results))
        throughput.count("judge_http_failed", sum(answer.error is not None for answer, _attempts in results))
        return [answer for answer, _attempts in results]

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

    def _one(self, request: ChatRequest) -> tuple[ChatResponse, int]:
        """The request's answer (or failure) and how many attempts it took."""
        params = self.params
        data = self._body(request)
        start = time.perf_counter()
        reason = ""
        attempts = params.max_retries + 1
        waited = 0.0
        for attempt in range(attempts):
            retry_after = None
            try:
                http_request = urllib.request.Request(self.url, data=data, headers=self._headers, method="POST")
                with _OPENER.open(http_request, timeout=params.timeout_s) as reply:
                    payload = json.loads(reply.read().decode("utf-8"))
                answer = self._answer(request, payload, time.perf_counter() - start)
                # The raw answer is stored in RUN/judgments: a server that echoes the request
                # (a debugging proxy, an echo endpoint) must not put the key there either.
                return dataclasses.replace(answer, text=self.redact(answer.text)), attempt + 1
            except urllib.error.HTTPError as exc:
                reason = f"HTTP {exc.code}"
                if 300 <= exc.code < 400:
                    where = exc.headers.get("Location", "") if exc.headers else ""
                    reason += (f" (not retried): the server redirects to {where!r}; redirects are not followed, so "
                               "the API key goes to no other address: set base_url to where the API is")
                    return self._failed(request, reason, start), attempt + 1
                if exc.code not in params.retry_statuses:
                    return self._failed(request, f"{reason} (not retried){self._quote(exc)}", start), attempt + 1
                retry_after = retry_after_seconds(exc.headers.get("Retry-After") if exc.headers else None)
            except (TimeoutError, socket.timeout):
                reason = f"timeout after {params.timeout_s:g} s"
            except urllib.error.URLError as exc:
                if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                    reason = f"timeout after {params.timeout_s:g} s"
                else:
                    reason = f"connection error ({type(exc.reason).__name__})"
            except http.client.IncompleteRead as exc:
                reason = f"answer cut short ({len(exc.partial)} bytes read)"
            except (http.client.HTTPException, ConnectionError, OSError) as exc:
                # the exception's own text helps (and may echo the request: redacted below)
                # redacted before the cut, which could leave a piece of the key the redaction misses
                text = self.redact(' '.join(str(exc).split()))[:200]
                reason = f"connection error ({type(exc).__name__}: {text})"
            except (ValueError, KeyError, IndexError, TypeError):
                return self._failed(request, "the server's answer is not a chat completion", start), attempt + 1
            if attempt + 1 == attempts:
                break
            # A server's Retry-After is waited for in full (retrying sooner only meets another 429),
            # the cap bounds our own backoff, the budget bounds both.
            wait = max(min(params.backoff_cap_s, params.backoff_base_s * 2 ** attempt), retry_after or 0.0)
            if waited + wait > params.retry_budget_s:
                return self._failed(request, f"{reason} after {attempt + 1} attempt(s): the next wait ({wait:.3f} s) "
                                    f"would pass retry_budget_s ({params.retry_budget_s:g} s)", start), attempt + 1
            waited += wait
            logger.warning("judge request %s: %s; retry %d of %d in %.3f s", request.request_id, self.redact(reason),
                           attempt + 1, params.max_retries, wait)
            self._sleep(wait)
        return self._failed(request, f"{reason} after {attempts} attempt(s)", start), attempts

    def _quote(self, exc: urllib.error.HTTPError) -> str:
        """The start of a refused request's error answer (servers say there why), redacted."""
        try:
            body = exc.read(_ERROR_BODY_READ).decode("utf-8", "replace")
        except Exception:  # noqa: BLE001 - the quote is a courtesy; the status says enough
            return ""
        # redacted before the cut: a key the cut falls into would otherwise leave its start behind
        body = self.redact(" ".join(body.split()))[:_ERROR_BODY_CHARS].strip()
        return f": {body}" if body else ""

    def _failed(self, request: ChatRequest, message: str, start: float) -> ChatResponse:
        message = self.redact(message)
        logger.warning("judge request %s failed: %s", request.request_id, message)
        return ChatResponse(request.request_id, None, None, 0, 0, time.perf_counter() - start, message)

    @staticmethod
    def _answer(request: ChatRequest, payload: dict[str, Any], latency: float) -> ChatResponse:
        choice = payload["choices"][0]
        usage = payload.get("usage") or {}
        return ChatResponse(
            request.request_id, choice["message"].get("content") or "", choice.get("finish_reason"),
            int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0), latency,
        )
