"""What `deterministic: batch_invariant` costs: the demo's neural scorers in the default mode
and in batch-invariant mode, side by side, and how far the default mode moves across part sizes.

Scorers: all-MiniLM-L6-v2 BERTScore (contexts none, minimal, full) and tiny BART `bartscore`
(none, minimal; forward, reverse) on the embedded demo input (or `--files` files per language),
score stage only. Each mode is run once after a warm-up run (model files, imports). Prints the
wall time of each run, the ratio batch_invariant / default, and the largest difference
between part sizes 55 and 7 in each mode (0 in batch-invariant mode).

    .venv/bin/python bench/bench_determinism.py [--files 11] [--out /tmp/bench-determinism]
"""
from __future__ import annotations

import argparse
import json
import logging
import random
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.config import BUILTIN_INPUTS, config_from_mapping  # noqa: E402
from engine.rundiff import compare_runs  # noqa: E402
from engine.runner import execute_run  # noqa: E402

SCORERS = [
    {"kind": "embedding", "model": "pypi:all-MiniLM-L6-v2", "contexts": ["none", "minimal", "full"], "mode": "compat",
     "dtype": "float32"},
    {"kind": "likelihood", "model": "demo:tiny-bart", "contexts": ["none", "minimal"], "directions": ["forward", "reverse"],
     "dtype": "float32"},
]


def demo_subset(out: Path, files: int) -> Path:
    """The embedded demo input cut to `files` files per language (shuffled, seeded), as out/input.jsonl."""
    rows = [json.loads(line) for line in BUILTIN_INPUTS["demo"].read_text(encoding="utf-8").splitlines()]
    kept: dict[str, list[str]] = {}
    for row in rows:
        ids = kept.setdefault(row["language"], [])
        if row["file_id"] not in ids and len(ids) < files:
            ids.append(row["file_id"])
    subset = [r for r in rows if r["file_id"] in kept[r["language"]]]
    random.Random(0).shuffle(subset)
    path = out / "input.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in subset), encoding="utf-8")
    return path


def _scorers(contexts: list[str]) -> list[dict]:
    """SCORERS in the given contexts only (the seq2seq scorer has no `full`)."""
    chosen = [{**s, "contexts": [c for c in s["contexts"] if c in contexts]} for s in SCORERS]
    return [s for s in chosen if s["contexts"]]


def _run(input_path: Path, out: Path, part_size: int, mode: str, contexts: list[str]) -> None:
    raw = {"name": "bench-determinism", "input": str(input_path), "part_size": part_size, "stages": ["score"],
           "score": {"scorers": _scorers(contexts)}, "deterministic": mode}
    execute_run(config_from_mapping(raw, Path.cwd()), str(out))


def _timed(input_path: Path, out: Path, part_size: int, mode: str, contexts: list[str]) -> float:
    started = time.perf_counter()
    _run(input_path, out, part_size, mode, contexts)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=11, help="files per language (the demo has 11)")
    parser.add_argument("--out", default="/tmp/bench-determinism")
    parser.add_argument("--contexts", nargs="+", default=["none", "minimal", "full"], choices=["none", "minimal", "full"],
                        help="context settings of the scorers (default: all three)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    input_path = demo_subset(out, args.files)
    _timed(input_path, out / "warmup", 55, "default", args.contexts)
    t_default = _timed(input_path, out / "default-55", 55, "default", args.contexts)
    t_invariant = _timed(input_path, out / "invariant-55", 55, "batch_invariant", args.contexts)
    _timed(input_path, out / "default-7", 7, "default", args.contexts)
    _timed(input_path, out / "invariant-7", 7, "batch_invariant", args.contexts)
    d_default = compare_runs(out / "default-55", out / "default-7")
    d_invariant = compare_runs(out / "invariant-55", out / "invariant-7")
    worst = lambda d: max((v for (table, _), v in d.max_delta.items() if table == "scores"), default=0.0)  # noqa: E731
    rows = d_default.rows_compared.get("scores", 0)
    print(f"demo neural scorers, {args.files} file(s) per language, {rows} score rows, part size 55")
    print(f"default mode:          {t_default:7.1f} s")
    print(f"batch_invariant mode:  {t_invariant:7.1f} s")
    print(f"ratio batch_invariant / default: {t_invariant / t_default:.2f}x")
    print(f"part size 55 vs 7, default:         {d_default.differing_rows} row(s) differ, largest |d| {worst(d_default):.3g}")
    print(f"part size 55 vs 7, batch_invariant: {d_invariant.differing_rows} row(s) differ, largest |d| {worst(d_invariant):.3g}")


if __name__ == "__main__":
    main()
