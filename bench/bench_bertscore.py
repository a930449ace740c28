"""Throughput of babelscore's BERTScore against the bert_score package, side by side.

On N seeded prediction-reference pairs (N/5 unique references, in Java-like source files), with
all-MiniLM-L6-v2 on both sides, times:

  bert_score.BERTScorer(...).score(...)       the anchor (model kept loaded, batch_size 64)
  ours, none setting, mode compat, float32    must equal bert_score (max |diff| printed)
  ours, none setting, mode fast, bfloat16     vs our float32: max |F diff| and Spearman
  the encoder per context setting             compat, fast unpacked, fast packed: executed FLOP/s

with the CPU capability, a square matmul peak and bert_score's encoder share and executed tokens;
where bfloat16 is emulated, fast mode runs in float32. What the figures mean: docs/development.md.
python bench/bench_bertscore.py [--pairs 500] [--full-pairs 20] [--efficiency-pairs 200]   (defaults finish in 15 min on 2 cores)
"""
from __future__ import annotations

import argparse
import logging
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# isort: off
from engine.runtime import thread_plan  # noqa: E402

thread_plan.apply()  # before torch starts its thread pool, whose threads then wait passively
import torch  # noqa: E402
# isort: on

from bench.encoder_flops import cpu_share, executed_flops, kernel_peak, share  # noqa: E402
from bench.precision import matmul_peak, print_hardware, slow_reason  # noqa: E402
from engine.items import ScoreItem  # noqa: E402
from engine.metrics.embedding import EmbeddingScorer  # noqa: E402
from engine.runtime import resolve_model  # noqa: E402

MODEL = "pypi:all-MiniLM-L6-v2"
LAYER = 5
GENERATORS = ("codegemma", "codellama", "codeqwen", "starcoder2", "granite")

WORDS = (
    "the a an of to in for on with by from at as is are was be returns return value values list "
    "array map key keys index number numbers string strings name names user users file files path "
    "read write open close create delete update insert remove add get set check checks whether if "
    "true false null empty given new old current next previous first last count size length total "
    "sum average maximum minimum sort sorted order reverse compute computes calculate calculates "
    "method function class object instance field parameter argument result results error errors "
    "exception thrown throws when while until each every all any none only this that these those "
    "data node nodes tree graph edge edges vertex path distance shortest algorithm bellman ford "
    "dijkstra queue stack buffer stream input output connection server client request response "
    "message event handler listener thread lock cache entry entries table row column query "
    "database transaction commit rollback config option options default settings format parse "
    "parses converts convert into json xml text line lines character characters byte bytes "
    "token tokens matrix vector element elements position offset start end begin range"
).split()
FOREIGN = (
    "geeft retourneert lijst waarde bestand gebruiker naam zwraca wartość listę pliku użytkownika "
    "nazwę sprawdza czy επιστρέφει το όνομα του χρήστη λίστα αρχείο 返回 用户 名称 列表 文件"
).split()


def sentence(rng: random.Random, n_words: int) -> str:
    words = [rng.choice(FOREIGN) if rng.random() < 0.08 else rng.choice(WORDS) for _ in range(n_words)]
    text = " ".join(words)
    return text[0].upper() + text[1:] + "." if text else text


def edit(rng: random.Random, text: str, rate: float) -> str:
    out = []
    for w in text.split():
        u = rng.random()
        if u < rate / 3:
            continue
        if u < 2 * rate / 3:
            out.append(rng.choice(WORDS))
        else:
            out.append(w)
        if rng.random() < rate / 4:
            out.append(rng.choice(WORDS))
    return " ".join(out)


def java_file(rng: random.Random, comment: str) -> tuple[str, int, int]:
    """A Java-like file with `comment` (as a // line comment) before one method."""
    lines = ["package org.example.util;", "", "import java.util.List;", "import java.util.Map;", "",
             f"public class {rng.choice(WORDS).title()}{rng.choice(WORDS).title()} {{"]
    n_methods = rng.randint(2, 14)
    target = rng.randrange(n_methods)
    source = "\n".join(lines) + "\n"
    start = end = 0
    for m in range(n_methods):
        name = rng.choice(WORDS) + rng.choice(WORDS).title()
        if m == target:
            source += "    "
            start = len(source)
            source += "// " + comment
            end = len(source)
            source += "\n"
        elif rng.random() < 0.5:
            source += f"    // {sentence(rng, rng.randint(3, 12))}\n"
        source += f"    public int {name}(int {rng.choice(WORDS)}, List<String> items) {{\n"
        for _ in range(rng.randint(2, 12)):
            var = rng.choice(WORDS)
            source += f"        int {var}{rng.randint(0, 99)} = items.size() + {rng.randint(0, 999)};\n"
        source += "        return 0;\n    }\n\n"
    source += "}\n"
    return source, start, end


def make_items(n_pairs: int, seed: int = 0) -> list[ScoreItem]:
    rng = random.Random(seed)
    items = []
    for f in range(max(1, n_pairs // len(GENERATORS))):
        u = rng.random()
        n_words = rng.randint(3, 40) if u < 0.99 else rng.randint(400, 700)  # ~1% over 512 tokens
        reference_text = sentence(rng, n_words)
        source, start, end = java_file(rng, reference_text)
        reference = source[start:end]
        prime = reference[: 3 + len(reference_text.split(" ")[0])]  # "// " + first word
        tail = reference[len(prime):]
        for g in GENERATORS:
            v = rng.random()
            if v < 0.01:
                prediction = ""
            elif v < 0.1:
                prediction = " " + sentence(rng, rng.randint(3, 30))
            else:
                prediction = " " + edit(rng, tail, rng.uniform(0.0, 0.9))
            items.append(ScoreItem(f"{f}/{g}", str(f), "en", g, "none", source, start, end, reference, prime, prediction))
    return items[:n_pairs]


def start_background() -> subprocess.Popen:
    """One CPU-bound process (a busy loop), as another user's job on a shared machine."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def os_threads() -> int:
    """Threads of this process now (torch's OpenMP pool, tokenizers', numba's, Python's)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


BATCH_TOKENS = EmbeddingScorer.Params(model=MODEL).batch_tokens  # the scorers' default batch
DEVICE = "cpu"  # set from --device: the scorers, the dtype probe and the matmul peaks all use it


def new_scorer(**params) -> EmbeddingScorer:
    return EmbeddingScorer(EmbeddingScorer.Params(model=MODEL, layer=LAYER, device=DEVICE, **params))


def collect(rows, values: dict[str, list[float]]) -> None:
    for row in rows:
        values.setdefault(row.variant, []).append(row.value)


def file_blocks(items: list[ScoreItem], rounds: int) -> list[list[ScoreItem]]:
    """Contiguous blocks of whole files (5 generators each), about equal in size."""
    per_block = -(-len(items) // rounds)
    per_block += (-per_block) % len(GENERATORS)
    return [items[i:i + per_block] for i in range(0, len(items), per_block)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=500, help="prediction-reference pairs (default 500)")
    parser.add_argument("--full-pairs", type=int, default=20, help="pairs for the full-context run (default 20)")
    parser.add_argument("--efficiency-pairs", type=int, default=200,
                        help="pairs for the per-setting encoder efficiency in none and minimal (default 200)")
    parser.add_argument("--efficiency-rounds", type=int, default=3,
                        help="rounds of the per-setting encoder efficiency runs, in rotating order (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=5, help="blocks the three none-setting runs are interleaved in")
    parser.add_argument("--device", default="auto", help="auto (cuda when visible), cpu, cuda, cuda:N")
    parser.add_argument("--phases", nargs="+", default=["idle", "background"], choices=["idle", "background"],
                        help="timed comparisons: with no process of ours beside it, and beside one CPU-bound "
                             "background process the bench starts and stops itself (default: both)")
    args = parser.parse_args()
    from engine.runtime.hardware import resolve_device

    global DEVICE
    DEVICE = resolve_device(args.device)
    if DEVICE == "cuda":
        DEVICE = "cuda:0"
    logging.basicConfig(level=logging.ERROR)
    import transformers

    transformers.logging.set_verbosity_error()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

    import bert_score
    from scipy.stats import spearmanr

    items = make_items(args.pairs, args.seed)
    n_unique_refs = len({it.file_id for it in items})
    print(f"pairs {len(items)}, unique references {n_unique_refs}, model all-MiniLM-L6-v2 layer {LAYER}, "
          f"torch threads {torch.get_num_threads()}, torch {torch.__version__}")

    print_hardware(DEVICE)
    peak32 = matmul_peak("float32", DEVICE)
    peak16 = matmul_peak("bfloat16", DEVICE)
    print(f"square {2048}x{2048} matmul on {DEVICE} at the start: float32 {peak32 / 1e9:.1f} GFLOP/s, "
          f"bfloat16 {peak16 / 1e9:.1f} GFLOP/s (the efficiency figures use the model's own products)")
    skipped = slow_reason("bfloat16", DEVICE)
    fast_dtype = "float32" if skipped else "bfloat16"
    if skipped:
        print(f"skipped: fast bfloat16 ({skipped}); fast mode runs in float32 instead")
    print(f"modes run: bert_score, compat float32, fast {fast_dtype}")

    # bert_score crashes on empty strings with transformers 5.x; give it a stand-in and skip those pairs.
    anchor = bert_score.BERTScorer(model_type=resolve_model(MODEL).path, num_layers=LAYER, batch_size=64)

    # bert_score's own encoder, counted like ours: wall seconds in its forward passes and the
    # tokens they executed (its batches are padded to their longest), so the table can say how
    # much of its time the encoder is and what equal kernels would leave to gain.
    anchor_stats = {"forward_s": 0.0, "padded_tokens": 0, "tokens": 0, "batches": 0}
    anchor_forward = anchor._model.forward

    def counted_forward(*args, **kwargs):
        start = time.perf_counter()
        out = anchor_forward(*args, **kwargs)
        anchor_stats["forward_s"] += time.perf_counter() - start
        mask = kwargs.get("attention_mask")  # (B, T)
        if mask is not None:
            anchor_stats["padded_tokens"] += mask.numel()
            anchor_stats["tokens"] += int(mask.sum())
        anchor_stats["batches"] += 1
        return out

    anchor._model.forward = counted_forward

    def bert_score_block(block: list[ScoreItem]) -> list[torch.Tensor]:
        cands = [it.prediction if it.prediction.strip() else "." for it in block]
        refs = [it.reference_tail if it.reference_tail.strip() else "." for it in block]
        return list(anchor.score(cands, refs, batch_size=64))

    # The machine may be shared: the three runs are interleaved block by block (rotating their
    # order) so that they see the same load; per-block ratios are reported beside the totals.
    # Every side keeps its model loaded (bert_score through its BERTScorer class) and is warmed
    # up outside the clock (lazy imports of transformers' model code, one-off set-up).
    s32 = new_scorer(mode="compat", dtype="float32")
    s16 = new_scorer(mode="fast", dtype=fast_dtype)
    warm = make_items(10, seed=args.seed + 1)
    bert_score_block(warm)
    s32.score(warm)
    s16.score(warm)
    blocks = file_blocks(items, max(1, min(args.rounds, len(items) // 50)))

    def interleaved(phase: str) -> dict:
        """The three runs, block by block (rotating their order so that they see the same load),
        each block followed by the encoders' own product timed in their dtypes (the peak)."""
        s32.runtime.stats.update(dict.fromkeys(s32.runtime.stats, 0))
        s16.runtime.stats.update(dict.fromkeys(s16.runtime.stats, 0))
        anchor_stats.update(dict.fromkeys(anchor_stats, 0))
        r = {"phase": phase, "times": {"bert_score": 0.0, "compat": 0.0, "fast": 0.0},
             "cpu": {"bert_score": 0.0, "compat": 0.0, "fast": 0.0}, "block_ratios": {"compat": [], "fast": []},
             "theirs": [[], [], []], "ours32": {}, "ours16": {}, "peak": {"compat": 0.0, "fast": 0.0}, "peak_label": {},
             "cpu_peak": {"compat": 0.0, "fast": 0.0},
             "load_start": load_average()}
        for b, block in enumerate(blocks):
            runs = [
                ("bert_score", lambda: [r["theirs"][k].extend(t.tolist()) for k, t in enumerate(bert_score_block(block))]),
                ("compat", lambda: collect(s32.score(block), r["ours32"])),
                ("fast", lambda: collect(s16.score(block), r["ours16"])),
            ]
            spent = {}
            for name, run in runs[b % 3:] + runs[: b % 3]:
                start, cpu = time.perf_counter(), time.process_time()
                run()
                spent[name] = time.perf_counter() - start
                r["times"][name] += spent[name]
                r["cpu"][name] += time.process_time() - cpu
            for name in r["block_ratios"]:
                r["block_ratios"][name].append(spent["bert_score"] / spent[name])
            for name, scorer in (("compat", s32), ("fast", s16)):
                peak, r["peak_label"][name], cpu_peak = kernel_peak(scorer.runtime, scorer.runtime.stats, BATCH_TOKENS)
                r["peak"][name] = max(r["peak"][name], peak)
                r["cpu_peak"][name] = max(r["cpu_peak"][name], cpu_peak)
        r["load_end"] = load_average()
        r["threads"] = os_threads()
        r["flops"] = {"compat": executed_flops(s32.runtime, s32.runtime.stats, LAYER),
                      "fast": executed_flops(s16.runtime, s16.runtime.stats, LAYER)}
        r["stats"] = {"compat": dict(s32.runtime.stats), "fast": dict(s16.runtime.stats), "bert_score": dict(anchor_stats)}
        return r

    results = []
    for phase in args.phases:
        background = start_background() if phase == "background" else None
        try:
            results.append(interleaved(phase))
        finally:
            if background is not None:
                background.kill()
                background.wait()
    first = results[0]
    theirs, ours32, ours16 = first["theirs"], first["ours32"], first["ours16"]

    empty = {i for i, it in enumerate(items) if not it.prediction.strip() or not it.reference_tail.strip()}
    keep = [i for i in range(len(items)) if i not in empty]

    def max_diff(indices: list[int], reference: list[list[float]]) -> float:
        return max((abs(ours32[v][j] - reference[k][n]) for n, j in enumerate(indices) for k, v in enumerate("PRF")), default=0.0)

    diff = max((abs(ours32[v][i] - theirs[k][i]) for i in keep for k, v in enumerate("PRF")), default=0.0)
    # bert_score lets a padded position add a 0 to each max, so a pair whose token
    # similarities are all negative scores higher in a padded batch: recheck such pairs
    # with batch_size=1 (no padding), which is what ours reproduces.
    off = [i for i in keep if any(abs(ours32[v][i] - theirs[k][i]) > 1e-6 for k, v in enumerate("PRF"))]
    raised = all(theirs[k][i] >= ours32[v][i] - 1e-6 for i in off for k, v in enumerate("PRF"))
    alone: list[list[float]] = [[], [], []]
    if off:
        rechecked = anchor.score([items[i].prediction for i in off], [items[i].reference_tail for i in off], batch_size=1)
        alone = [t.tolist() for t in rechecked]
    tok = s32.runtime.tokenizer
    fits = [
        i for i, it in enumerate(items)
        if len(tok(it.prediction, add_special_tokens=False)["input_ids"]) <= s32.runtime.max_content_tokens
        and len(tok(it.reference_tail, add_special_tokens=False)["input_ids"]) <= s32.runtime.max_content_tokens
    ]
    f32, f16 = ours32["F"], ours16["F"]
    fdiff_fit = max(abs(f32[i] - f16[i]) for i in fits)
    rho_fit = spearmanr([f32[i] for i in fits], [f16[i] for i in fits]).statistic
    fdiff_all = max(abs(a - b) for a, b in zip(f32, f16))
    rho_all = spearmanr(f32, f16).statistic
    # The dtype alone: fast mode in float32 scores over-long texts in the same windows as the
    # bfloat16 run, so this compares like with like on every pair (not timed).
    s_fast32 = new_scorer(mode="fast", dtype="float32")
    fast32: dict[str, list[float]] = {}
    for block in blocks:
        collect(s_fast32.score(block), fast32)
    fdiff_dtype = max(abs(a - b) for a, b in zip(fast32["F"], f16))
    rho_dtype = spearmanr(fast32["F"], f16).statistic

    n = len(items)
    print()
    for r in results:
        t_bs, t32, t16 = r["times"]["bert_score"], r["times"]["compat"], r["times"]["fast"]
        med = {k: statistics.median(v) for k, v in r["block_ratios"].items()}
        where = "beside 1 CPU-bound background process" if r["phase"] == "background" else "no background process of ours"
        print(f"none setting, {where}: load average {r['load_start']} at the start, {r['load_end']} at the end "
              f"(1, 5, 15 min; {os.cpu_count()} CPUs)")
        print(f"{'':<34}{'seconds':>9}{'pairs/s':>10}{'vs bert_score':>15}{'median of blocks':>18}{'cores used':>12}")
        print(f"{'bert_score 0.3.13 (fp32, bs 64)':<34}{t_bs:>9.2f}{n / t_bs:>10.1f}{1.0:>14.2f}x{'':>18}"
              f"{r['cpu']['bert_score'] / t_bs:>12.2f}")
        print(f"{'ours compat float32':<34}{t32:>9.2f}{n / t32:>10.1f}{t_bs / t32:>14.2f}x{med['compat']:>17.2f}x"
              f"{r['cpu']['compat'] / t32:>12.2f}")
        print(f"{'ours fast ' + fast_dtype:<34}{t16:>9.2f}{n / t16:>10.1f}{t_bs / t16:>14.2f}x{med['fast']:>17.2f}x"
              f"{r['cpu']['fast'] / t16:>12.2f}")
        print(f"(interleaved in {len(blocks)} blocks of whole files; torch threads {torch.get_num_threads()}, "
              f"{r['threads']} threads in this process; cores used = CPU seconds / wall seconds)")
        for key, label in (("compat", "compat float32"), ("fast", f"fast {fast_dtype}")):
            st = r["stats"][key]
            rate = r["flops"][key] / max(st["forward_s"], 1e-9)
            print(f"  {label}: {st['sequences']} sequences, {st['tokens']} tokens ({st['padded_tokens']} executed, "
                  f"{st['batches']} batches, {st['packed_rows']} packed rows), encoder {st['forward_s']:.2f} s, model "
                  f"{rate / 1e9:.1f} GFLOP/s executed = {share(rate, r['peak'][key])} ({r['peak'][key] / 1e9:.1f} "
                  f"GFLOP/s: {r['peak_label'].get(key, '')}, best after each block); "
                  f"{cpu_share(r['flops'][key], st, r['cpu_peak'][key])}")
        where_time_goes(r, fast_dtype)
        print()
    print(f"compat float32 vs bert_score: max |P/R/F diff| {diff:.2e} over {len(keep)} pairs "
          f"({len(empty)} pairs with an empty side left out: bert_score crashes on them)")
    if off:
        print(f"  {len(off)} pairs differ by more than 1e-6, all with bert_score higher: {raised} "
              f"(its padded 0 in the max); against bert_score with batch_size=1 they differ by at most "
              f"{max_diff(off, alone):.2e}")
    print(f"fast {fast_dtype} vs compat float32, {len(fits)} pairs within the 512-token window: "
          f"max |F diff| {fdiff_fit:.4f}, Spearman {rho_fit:.5f}")
    print(f"  all {n} pairs (fast scores over-long texts in windows, compat truncates): "
          f"max |F diff| {fdiff_all:.4f}, Spearman {rho_all:.5f}")
    print(f"fast {fast_dtype} vs fast float32 (same windows), all {n} pairs: max |F diff| {fdiff_dtype:.4f}, Spearman {rho_dtype:.5f}")
    print()
    encoder_efficiency(items, args, fast_dtype)


def where_time_goes(r: dict, fast_dtype: str) -> None:
    """bert_score's encoder share and executed tokens beside ours, and what that leaves to gain:
    with the same fp32 kernels at bert_score's own rate per executed token, compat's lead is at
    most its total over (our executed tokens at that rate + our time outside the encoder)."""
    theirs = r["stats"]["bert_score"]
    t_bs = r["times"]["bert_score"]
    per_token = theirs["forward_s"] / max(1, theirs["padded_tokens"])
    print(f"  bert_score: {theirs['batches']} batches, {theirs['tokens']} tokens ({theirs['padded_tokens']} executed), "
          f"encoder {theirs['forward_s']:.2f} s = {theirs['forward_s'] / max(t_bs, 1e-9):.0%} of its time")
    for key, label in (("compat", "compat float32"), ("fast", f"fast {fast_dtype}")):
        ours = r["stats"][key]
        rest = max(0.0, r["times"][key] - ours["forward_s"])
        bound = t_bs / max(ours["padded_tokens"] * per_token + rest, 1e-9)
        print(f"  {label}: executes {theirs['padded_tokens'] / max(1, ours['padded_tokens']):.2f}x fewer tokens than "
              f"bert_score, {rest:.2f} s outside the encoder; at bert_score's encoder rate per executed token "
              f"its lead would be {bound:.2f}x (measured {t_bs / max(r['times'][key], 1e-9):.2f}x)")
    ratio = r["peak"]["fast"] / max(r["peak"]["compat"], 1e-9)
    print(f"  kernel peaks: fast {fast_dtype} {ratio:.2f}x compat float32's (each its own largest linear layer, "
          f"in its dtype, threads and row shape)")


def encoder_efficiency(items: list[ScoreItem], args: argparse.Namespace, fast_dtype: str) -> None:
    """Per context setting: the encoder's executed FLOP/s over its forward passes against its own
    kernel's peak, compat (never packed), fast unpacked and fast packed. The three runs are
    repeated in rotating order (the machine may be shared); each prints its fastest round against
    the best peak timed after its rounds, and packed vs unpacked is the median of per-round ratios."""
    print(f"encoder efficiency per context setting ({args.efficiency_pairs} pairs in none and minimal, "
          f"{args.full_pairs} in full, {args.efficiency_rounds} rounds each, fastest shown; executed FLOPs include "
          f"padding and the whole width of packed rows):")
    runs = [("compat", "float32", False), ("fast", fast_dtype, False), ("fast", fast_dtype, True)]
    for context in ("none", "minimal", "full"):
        subset = items[: args.full_pairs if context == "full" else args.efficiency_pairs]
        scorers = {run: new_scorer(mode=run[0], dtype=run[1], contexts=(context,)) for run in runs}
        reason = scorers[runs[2]].runtime.packing_off_reason
        todo = runs if reason is None else runs[:2]
        best: dict = {}
        peaks = dict.fromkeys(todo, 0.0)
        cpu_peaks = dict.fromkeys(todo, 0.0)
        labels = dict.fromkeys(todo, "")
        seconds: dict = {run: [] for run in todo}
        load_start = load_average()
        for r in range(args.efficiency_rounds):
            for run in todo[r % len(todo):] + todo[: r % len(todo)]:
                st, t = encoder_round(scorers[run], subset, packed=run[2])
                seconds[run].append(st["forward_s"])
                if run not in best or st["forward_s"] < best[run][0]["forward_s"]:
                    best[run] = (st, t)
                peak, labels[run], cpu_peak = kernel_peak(scorers[run].runtime, st, BATCH_TOKENS)
                peaks[run] = max(peaks[run], peak)
                cpu_peaks[run] = max(cpu_peaks[run], cpu_peak)
        for run in todo:
            st, t = best[run]
            runtime = scorers[run].runtime
            flops = executed_flops(runtime, st, LAYER)
            rate = flops / max(st["forward_s"], 1e-9)
            fill = st["tokens"] / max(1, st["padded_tokens"])
            name = f"{run[0]} {run[1]} {'packed' if run[2] else 'unpacked'}"
            print(f"  {context:<8} {name:<24} encoder {st['forward_s']:.2f} s of {t:.2f} s, {st['tokens'] / t:.0f} tokens/s, "
                  f"{fill:.0%} of executed tokens real, {st['batches']} batches, model {rate / 1e9:.1f} GFLOP/s "
                  f"executed = {share(rate, peaks[run])} ({peaks[run] / 1e9:.1f} GFLOP/s: {labels[run]}), "
                  f"{cpu_share(flops, st, cpu_peaks[run])}; "
                  f"load average {load_start} at the start, {load_average()} at the end")
        if reason is None:
            ratios = [u / max(p, 1e-9) for u, p in zip(seconds[runs[1]], seconds[runs[2]])]
            print(f"  {context:<8} fast {fast_dtype} packed vs unpacked, encoder time: {statistics.median(ratios):.2f}x "
                  f"(median of {len(ratios)} rounds)")
        else:
            print(f"  {context:<8} fast {fast_dtype} packed: skipped ({reason})")


def encoder_round(scorer: EmbeddingScorer, subset: list[ScoreItem], packed: bool) -> tuple[dict, float]:
    """(the encoder's stats added by scoring `subset` once, wall seconds of the whole scoring)."""
    runtime = scorer.runtime  # the registry's, shared with the timed runs above
    was = runtime.packing
    runtime.packing = packed
    before = dict(runtime.stats)
    start = time.perf_counter()
    try:
        scorer.score(subset)
    finally:
        runtime.packing = was
    t = time.perf_counter() - start
    return {k: v - before.get(k, 0) for k, v in runtime.stats.items()}, t


if __name__ == "__main__":
    main()
