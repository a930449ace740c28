"""Every model backend, shared by generation, the round trip and the judge (it imports none of them).

requests.py: the request and answer types and the two interfaces (`Backend`: token-id prompts to
continuations; `ChatBackend`: chat messages to answers). transformers_backend.py: both with
transformers (a causal LM, a chat model). vllm_backend.py: both with vLLM, the one module that
imports it. http_backend.py: `ChatBackend` over an OpenAI-compatible server, with its spending
budget (http_budget.py) and adaptive concurrency (http_concurrency.py). generator_backend.py: a generator's
backend from the model registry. A backend reads its model entry through a small protocol or
`BackendSpec`, never a stage's config.
"""
