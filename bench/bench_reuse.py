"""Growing a sweep: N scorers, then the same sweep plus one scorer reusing the first run,
side by side with the plus-one sweep run fresh and with the added scorer run alone.

The sweep: the lexical metrics and N embedding settings of all-MiniLM-L6-v2 (its layers) on
the embedded demo input; the added scorer is one more layer. Prints each time, the ratios
(reuse vs the added scorer alone: the goal is at most 1.3x; reuse vs fresh), and whether
the reused run's rows equal the fresh run's, part file by part file (bitwise).

    .venv/bin/python bench/bench_reuse.py [--n 2] [--part-size 55] [--out /tmp/bench-reuse]
"""
from __future__ import annotations

import argparse
import logging
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyarrow.parquet as pq  # noqa: E402
from bench_determinism import demo_subset  # noqa: E402

from engine.config import config_from_mapping  # noqa: E402
from engine.runner import execute_run  # noqa: E402

MODEL = "pypi:all-MiniLM-L6-v2"


def _scorers(layers: list[int]) -> list[dict]:
    return [{"kind": "lexical", "metrics": ["bleu", "rougeL"]}] + [
        {"kind": "embedding", "model": MODEL, "layer": layer, "mode": "compat", "dtype": "float32"} for layer in layers
    ]


def _config(scorers: list[dict], part_size: int, source: str, reuse: tuple[str, ...] = ()) -> object:
    from dataclasses import replace

    raw = {"name": "bench-reuse", "input": source, "part_size": part_size, "stages": ["score"],
           "score": {"scorers": scorers}}
    return replace(config_from_mapping(raw, Path.cwd()), reuse=reuse)


def _timed(config: object, out: Path) -> float:
    started = time.perf_counter()
    execute_run(config, str(out))
    return time.perf_counter() - started


def _rows(run: Path) -> dict[str, list]:
    return {p.name: pq.read_table(p).to_pylist() for p in sorted((run / "scores").glob("*.parquet"))}


def _identical(a: Path, b: Path) -> bool:
    ra, rb = _rows(a), _rows(b)
    if ra.keys() != rb.keys():
        return False
    return all(len(ra[k]) == len(rb[k]) and all({**x, "value": repr(x["value"])} == {**y, "value": repr(y["value"])}
                                                 for x, y in zip(ra[k], rb[k])) for k in ra)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2, help="embedding settings in the first sweep")
    parser.add_argument("--part-size", type=int, default=55)
    parser.add_argument("--out", default="/tmp/bench-reuse")
    parser.add_argument("--files", type=int, default=0, help="files per language of the demo input (default 0: all)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    source = str(demo_subset(out, args.files)) if args.files else "builtin:demo"
    layers = list(range(1, args.n + 1))
    added = args.n + 1
    # Warm-up (model files, imports), so no timed run pays for the first load of the library.
    _timed(_config(_scorers([added])[1:], args.part_size, source), out / "warmup")
    t_sweep = _timed(_config(_scorers(layers), args.part_size, source), out / "sweep")
    t_alone = _timed(_config(_scorers([added])[1:], args.part_size, source), out / "added-alone")
    t_fresh = _timed(_config(_scorers(layers + [added]), args.part_size, source), out / "plus-one-fresh")
    t_reuse = _timed(_config(_scorers(layers + [added]), args.part_size, source, (str(out / "sweep"),)), out / "plus-one-reuse")
    identical = _identical(out / "plus-one-reuse", out / "plus-one-fresh")
    print(f"sweep of lexical + {args.n} embedding settings (input {source}, part size {args.part_size}): {t_sweep:.1f} s")
    print(f"added scorer alone:                 {t_alone:7.1f} s")
    print(f"plus-one sweep, fresh:              {t_fresh:7.1f} s")
    print(f"plus-one sweep, --reuse the sweep:  {t_reuse:7.1f} s")
    print(f"ratio reuse / added scorer alone:   {t_reuse / t_alone:7.2f}x (goal <= 1.3x)")
    print(f"ratio reuse / fresh:                {t_reuse / t_fresh:7.2f}x")
    print(f"rows identical to the fresh run:    {'yes' if identical else 'no'}")


if __name__ == "__main__":
    main()
