"""Judge throughput on vLLM: prefix caching on vs off, structured vs free answers.

    python bench/bench_judge.py [--files 24] [--max-tokens 256] [--repeats 2] [--model DIR | --hidden 512 --layers 4]

Each caching setting runs in its own worker process (vLLM holds one model per process) on
the same judge calls (`standard` strategy, prompts in the files' languages, 3 candidates per
file). Within a worker, structured and free batches alternate, each on files no other batch
saw (so only the shared prompt prefix is reusable: the system message and the instructions before the file's JSON), after an untimed warm-up; the best of
`--repeats` counts. Without --model a tiny random chat model
is built (hidden 128, 2 layers; --hidden/--layers make it bigger), so on a CPU this measures
engine overhead (grammar masking, scheduling) more than model compute; with a bigger model
the prefill of the long shared prefix, which prefix caching saves, starts to count. Prints prompts/s and output tokens/s per
setting and the ratios: caching on / off, structured / free.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.judge.messages import Candidate, JudgeItem, build_calls
from engine.judge.promptpack import PROMPT_LANGUAGES, load_pack
from engine.judge.schema import SchemaLimits, output_schema
from engine.llm.requests import ChatRequest

GENERATORS = ("codegemma-7b", "codellama-7b", "starcoder2-7b")


def _requests(n_files: int, max_tokens: int, structured: bool, tag: str, first: int = 0) -> list[ChatRequest]:
    out = []
    for i in range(first, first + n_files):
        language = PROMPT_LANGUAGES[i % len(PROMPT_LANGUAGES)]
        comment = f"// Returns the number of nodes in graph {i}."
        source = f"class G{i} {{\n{''.join(f'    int f{k} = {k};' + chr(10) for k in range(i % 9))}    {comment}\n    int n() {{ return {i}; }}\n}}\n"
        start = source.index(comment)
        item = JudgeItem(str(i), language, source, start, start + len(comment), comment,
                         tuple(Candidate(g, f"// Returns {g} {i}.") for g in GENERATORS))
        pack = load_pack(language)
        [call] = build_calls(pack, item, "standard")
        schema = output_schema(pack, "standard", None, list(GENERATORS), SchemaLimits(max_text_chars=32, max_errors=3)) if structured else None
        out.append(ChatRequest(f"{tag}{i}", call.messages, max_tokens, 0.0, 42, schema))
    return out


def worker(args: argparse.Namespace) -> None:
    from engine.llm.vllm_backend import VllmChatBackend

    start = time.perf_counter()
    backend = VllmChatBackend(model=args.model, tokenizer=args.model, dtype="float32", seed=42, max_model_len=8192,
                              enforce_eager=True, gpu_memory_utilization=0.2, enable_prefix_caching=args.caching == "on")
    result = {"load_s": time.perf_counter() - start}
    # Warm-up (not timed): grammar compilation, cache allocation, and the shared prompt prefixes
    # of every language, which a long judge run has cached after its first calls.
    backend.chat(_requests(len(PROMPT_LANGUAGES), 8, True, "warm", first=10_000))
    # Every batch judges files no other batch saw, so only the shared prefix can be reused;
    # modes alternate and the best of the repeats counts (the machine may be shared).
    first = 0
    for repeat in range(args.repeats):
        for mode in ("structured", "free"):
            requests = _requests(args.files, args.max_tokens, mode == "structured", f"{mode}{repeat}-", first)
            first += args.files
            start = time.perf_counter()
            answers = backend.chat(requests)
            seconds = time.perf_counter() - start
            tokens = sum(a.completion_tokens for a in answers)
            run = {"seconds": seconds, "prompts_per_s": len(requests) / seconds, "output_tokens_per_s": tokens / seconds,
                   "prompt_tokens": sum(a.prompt_tokens for a in answers), "output_tokens": tokens,
                   "hit_limit": sum(a.finish_reason == "length" for a in answers)}
            if mode not in result or run["prompts_per_s"] > result[mode]["prompts_per_s"]:
                result[mode] = run
    print("RESULT " + json.dumps(result), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=24)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--model", default=None, help="a local chat model directory (default: a tiny random one)")
    parser.add_argument("--hidden", type=int, default=128, help="hidden size of the random model (multiple of 64)")
    parser.add_argument("--layers", type=int, default=2, help="layers of the random model")
    parser.add_argument("--worker", choices=["on", "off"], default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        args.caching = args.worker
        worker(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        if args.model is None:
            from engine.testing.tiny_chat import build_tiny_chat_model

            args.model = build_tiny_chat_model(Path(tmp) / "tiny-chat", hidden_size=args.hidden, layers=args.layers)
        env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE=os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"))
        results = {}
        for caching in ("on", "off"):
            proc = subprocess.run([sys.executable, __file__, "--worker", caching, "--files", str(args.files),
                                   "--max-tokens", str(args.max_tokens), "--repeats", str(args.repeats), "--model", args.model],
                                  capture_output=True, text=True, env=env)
            lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
            if proc.returncode != 0 or not lines:
                sys.exit(f"worker (prefix caching {caching}) failed:\n{proc.stderr[-3000:]}")
            results[caching] = json.loads(lines[-1][len("RESULT "):])
    print(f"judge calls: {args.files} files x 1 call (standard strategy, 3 candidates), max_tokens {args.max_tokens}")
    print(f"{'prefix caching':<15}{'answers':<12}{'prompts/s':>12}{'output tok/s':>14}{'prompt tok':>12}{'at limit':>10}{'load s':>9}")
    for caching, result in results.items():
        for mode in ("structured", "free"):
            r = result[mode]
            print(f"{caching:<15}{mode:<12}{r['prompts_per_s']:>12.2f}{r['output_tokens_per_s']:>14.1f}"
                  f"{r['prompt_tokens']:>12d}{r['hit_limit']:>10d}{result['load_s']:>9.1f}")
    for mode in ("structured", "free"):
        ratio = results["on"][mode]["prompts_per_s"] / results["off"][mode]["prompts_per_s"]
        print(f"prefix caching on/off ({mode}): {ratio:.2f}x prompts/s")
    for caching in ("on", "off"):
        r = results[caching]
        print(f"structured/free (caching {caching}): {r['structured']['prompts_per_s'] / r['free']['prompts_per_s']:.2f}x prompts/s, "
              f"{r['structured']['output_tokens_per_s'] / r['free']['output_tokens_per_s']:.2f}x output tok/s")


if __name__ == "__main__":
    main()
