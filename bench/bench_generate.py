"""Generation throughput: the same FIM prompts through the vllm and the transformers backends.

    python bench/bench_generate.py [--prompts 32] [--max-new-tokens 32] [--model DIR --card FAMILY]

Both backends are loaded through the model registry, as in a run (engine.runtime.model_registry:
vLLM in a worker process of its own, transformers here) and see the same prompts; each is
released before the next loads. The timing covers generation only (model loading is printed apart). Without --model a tiny
random StarCoder2-style model is built in a temporary directory, so on a CPU machine this
measures engine overhead more than model compute. Prints prompts/s, output tokens/s, the
vllm/transformers ratio and whether the greedy outputs are token-identical. The CPU capability
is printed first; a --dtype the quick probe finds slow on this machine (bfloat16 without
AVX512-BF16 or AMX) is skipped with the reason printed, and float32 runs instead.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.precision import print_hardware, slow_reason
from engine.generate.cards import get_card
from engine.generate.fim import generator_tokenizer
from engine.generate.params import GenerateParams
from engine.generate.prompts import FimPromptBuilder
from engine.llm.generator_backend import get_backend
from engine.llm.requests import GenerationRequest
from engine.runtime.model_registry import release_all_models
from engine.testing.tiny_fim import build_tiny_fim_model

_WORDS = [
    "returns", "the", "shortest", "path", "between", "two", "nodes", "of", "the", "graph", "using",
    "the", "bellman", "ford", "algorithm", "geeft", "de", "naam", "van", "de", "gebruiker",
    "terug", "zwraca", "liczbę", "węzłów", "返回图中节点的数量", "Επιστρέφει", "το", "όνομα",
]


def _source(i: int) -> tuple[str, int, int]:
    words = " ".join(_WORDS[(i + k) % len(_WORDS)] for k in range(8 + i % 12))
    body = "".join(f"    int field{k} = {k * i};\n" for k in range(5 + (i * 7) % 40))
    source = f"package bench;\n\npublic class C{i} {{\n{body}    // {words}\n    int f() {{ return {i}; }}\n}}\n"
    start = source.index("    // ") + 4
    return source, start, source.index("\n", start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=8, help="transformers backend batch size")
    parser.add_argument("--model", help="model directory or hub id (default: a tiny random model)")
    parser.add_argument("--card", default="starcoder2")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.2,
                        help="vLLM; on CPU the share of host memory that must be free at start")
    args = parser.parse_args()
    from engine.runtime.hardware import resolve_device

    device = "cuda:0" if resolve_device("auto") == "cuda" else "cpu"  # where both backends run here
    print_hardware(device)
    if args.dtype not in ("auto", "float32") and slow_reason(args.dtype, device) is not None:
        print(f"skipped: --dtype {args.dtype} ({slow_reason(args.dtype, device)}); running float32 instead")
        args.dtype = "float32"

    with tempfile.TemporaryDirectory(prefix="bench-generate-") as tmp:
        model = args.model or build_tiny_fim_model(Path(tmp) / "model", args.card)
        builder = FimPromptBuilder(get_card(args.card), generator_tokenizer(model))
        prompts = [list(builder.build(*_source(i)).prompt_ids) for i in range(args.prompts)]
        mean_len = sum(map(len, prompts)) / len(prompts)
        print(f"model {model if args.model else 'tiny random ' + args.card}; {len(prompts)} prompts, "
              f"mean {mean_len:.0f} prompt tokens, max_new_tokens {args.max_new_tokens}, {os.cpu_count()} CPUs")
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # the vLLM worker process inherits it
        results = {}
        for backend in ("transformers", "vllm"):
            params = GenerateParams(model=model, card=args.card, backend=backend, dtype=args.dtype,
                                    max_model_len=1024, batch_size=args.batch_size, enforce_eager=True,
                                    gpu_memory_utilization=args.gpu_memory_utilization)
            started = time.perf_counter()
            loaded_backend = get_backend(params.backend_spec(), stage="generate")
            loaded = time.perf_counter()
            requests = [GenerationRequest(str(i), tuple(p), args.max_new_tokens, params.seed) for i, p in enumerate(prompts)]
            outputs = loaded_backend.generate(requests, builder.stop_ids)
            done = time.perf_counter()
            release_all_models()  # the vLLM worker ends before the next backend loads
            results[backend] = {"token_ids": [list(o.token_ids) for o in outputs], "load_s": loaded - started,
                                "generate_s": done - loaded}

    print(f"{'backend':<14}{'load s':>9}{'gen s':>9}{'prompts/s':>12}{'out tok/s':>12}")
    rates = {}
    for backend, r in results.items():
        n_out = sum(map(len, r["token_ids"]))
        rates[backend] = (len(prompts) / r["generate_s"], n_out / r["generate_s"])
        print(f"{backend:<14}{r['load_s']:>9.1f}{r['generate_s']:>9.2f}{rates[backend][0]:>12.2f}{rates[backend][1]:>12.1f}")
    ratio = rates["vllm"][1] / rates["transformers"][1]
    same = results["vllm"]["token_ids"] == results["transformers"]["token_ids"]
    print(f"ratio vllm/transformers (output tokens/s): {ratio:.2f}x; token-identical outputs: {same}")


if __name__ == "__main__":
    main()
