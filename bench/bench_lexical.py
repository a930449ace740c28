"""Lexical metrics throughput: babelscore vs direct sacrebleu / rouge-score / nltk calls.

Scores N prediction-reference pairs (default 12,500: 2,500 references x 5 generators, five
languages) with our LexicalScorer and with the anchors called the way their documentation
shows, on the same pairs, checks the values agree, and prints pairs/s and ratios.

    .venv/bin/python bench/bench_lexical.py [--pairs 12500] [--seed 0]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sacrebleu  # noqa: E402
from nltk.translate.meteor_score import meteor_score  # noqa: E402
from rouge_score import rouge_scorer  # noqa: E402

from engine.items import ScoreItem  # noqa: E402
from engine.metrics.lexical import LexicalScorer, bleu_tokenizer_for  # noqa: E402
from engine.metrics.params import LexicalParams  # noqa: E402
from engine.metrics.text import UnicodeRougeTokenizer, meteor_tokens  # noqa: E402

WORDS = {
    "en": "returns the name of user node graph path shortest computes value cache entry file reads writes list sorted when if null".split(),
    "nl": "geeft de naam van gebruiker knoop graaf pad kortste berekent waarde cache bestand leest schrijft lijst gesorteerd als niet".split(),
    "el": "επιστρέφει το όνομα του χρήστη κόμβος γράφος διαδρομή συντομότερη υπολογίζει τιμή αρχείο διαβάζει γράφει λίστα".split(),
    "pl": "zwraca nazwę użytkownika węzeł graf ścieżka najkrótsza oblicza wartość plik czyta zapisuje listę posortowaną gdy".split(),
    "zh": list("返回用户的姓名计算两个节点之间最短路径读取文件写入缓存值列表排序如果为空"),
}


class _NoWordNet:
    def synsets(self, word):
        return []


def make_items(n_pairs: int, seed: int) -> list[ScoreItem]:
    rng = random.Random(seed)
    items = []
    n_files = max(1, n_pairs // 5)
    for f in range(n_files):
        language = list(WORDS)[f % len(WORDS)]
        joiner = "" if language == "zh" else " "
        words = WORDS[language]
        reference = joiner.join(rng.choice(words) for _ in range(rng.randint(8, 30))) + "."
        for g in range(5):
            if len(items) == n_pairs:
                break
            ref_words = reference.rstrip(".").split(joiner) if joiner else list(reference.rstrip("."))
            kept = [w for w in ref_words if rng.random() > 0.3] + [rng.choice(words) for _ in range(rng.randint(0, 6))]
            rng.shuffle(kept) if rng.random() < 0.3 else None
            prediction = joiner.join(kept) + "."
            source = f"class C{f} {{\n    // {reference}\n}}\n"
            start = source.index("// ")
            items.append(
                ScoreItem(
                    sample_id=f"f{f}/g{g}", file_id=f"f{f}", language=language, generator=f"g{g}", noise="none",
                    source=source, comment_start=start, comment_end=start + 3 + len(reference),
                    reference="// " + reference, prime="// ", prediction=prediction,
                )
            )
    return items


def time_ours(metric: str, items: list[ScoreItem]) -> tuple[float, dict[str, float]]:
    scorer = LexicalScorer(LexicalParams(metrics=(metric,), meteor_synonyms="off"))
    start = time.perf_counter()
    rows = scorer.score(items)
    elapsed = time.perf_counter() - start
    values = {r.sample_id: r.value for r in rows if r.variant in ("score", "F")}
    return elapsed, values


def time_anchor(metric: str, items: list[ScoreItem]) -> tuple[float, dict[str, float]]:
    values = {}
    if metric == "rougeL":
        scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=UnicodeRougeTokenizer())
    start = time.perf_counter()
    for item in items:
        hyp, ref = item.prediction, item.reference_tail
        if metric == "bleu":
            values[item.sample_id] = sacrebleu.sentence_bleu(hyp, [ref], tokenize=bleu_tokenizer_for(item.language, "auto")).score
        elif metric == "rougeL":
            values[item.sample_id] = scorer.score(ref, hyp)["rougeL"].fmeasure
        else:
            # nltk's METEOR (Porter stems; no stemmer exists in nltk for el/pl/zh, so the anchor
            # runs on English and Dutch only: timing compares like with like on those)
            values[item.sample_id] = meteor_score([meteor_tokens(ref)], meteor_tokens(hyp), wordnet=_NoWordNet())
    return time.perf_counter() - start, values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=12_500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    items = make_items(args.pairs, args.seed)
    english = [i for i in items if i.language == "en"]
    print(f"{len(items)} pairs ({len({i.reference for i in items})} unique references), languages {sorted(WORDS)}")
    print(f"{'metric':<8} {'anchor':<26} {'ours pairs/s':>13} {'anchor pairs/s':>15} {'ratio':>7} {'max |diff|':>11}")
    for metric, anchor_name, subset in (
        ("bleu", "sacrebleu.sentence_bleu", items),
        ("rougeL", "rouge-score (unicode tok)", items),
        ("meteor", "nltk meteor_score (en)", english),
    ):
        ours_t, ours_v = time_ours(metric, subset)
        anchor_t, anchor_v = time_anchor(metric, subset)
        diff = max(abs(ours_v[k] - anchor_v[k]) for k in anchor_v)
        ratio = anchor_t / ours_t
        print(f"{metric:<8} {anchor_name:<26} {len(subset) / ours_t:13.0f} {len(subset) / anchor_t:15.0f} {ratio:7.2f} {diff:11.2e}")


if __name__ == "__main__":
    main()
