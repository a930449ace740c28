"""Write a synthetic sample table of any size in babelscore's input schema (engine.records.SAMPLE_SCHEMA).

Each file is a small Java class with one comment in one of the study's languages; every file
has one row per generator (5 by default, as in the study), whose prediction is a seeded
perturbation of the reference (words dropped, swapped or replaced), with a label that follows
how much was changed. Rows are written in batches, so any size streams in bounded memory.

    python bench/make_synthetic.py OUT.parquet [--samples 12500] [--generators 5] [--seed 0]
    python bench/make_synthetic.py OUT.jsonl --samples 200        # JSON Lines, same rows

The numbers are meaningless; the shapes (lengths, scripts, shared references, primes) are
those of the study, which is what throughput and memory measurements need.
"""
from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

GENERATORS = ("codegemma-7b", "CodeLlama-7b-hf", "CodeQwen1.5-7B", "starcoder2-7b", "granite-8b-code-base")
LANGUAGES = ("en", "nl", "zh", "el", "pl")
# Words per language from which comments are drawn; Chinese is joined without spaces.
WORDS = {
    "en": "returns the shortest path between two nodes using cache value list empty before sorting read config "
          "file default key missing compute checksum buffer header store update index user name".split(),
    "nl": "geeft het kortste pad tussen twee knopen terug met de cache waarde lijst leeg voordat sorteren lees "
          "configuratie bestand standaard sleutel ontbreekt bereken controlesom buffer kop".split(),
    "zh": list("返回两个节点之间的最短路径使用缓存值列表为空排序前读取配置文件默认键缺失计算校验和缓冲区头部"),
    "el": "επιστρέφει τη συντομότερη διαδρομή μεταξύ δύο κόμβων με κρυφή μνήμη τιμή λίστα κενή πριν ταξινόμηση "
          "διαβάζει αρχείο ρυθμίσεων προεπιλογή κλειδί λείπει υπολογίζει άθροισμα ελέγχου".split(),
    "pl": "zwraca najkrótszą ścieżkę między dwoma węzłami za pomocą pamięci wartość lista pusta przed sortowaniem "
          "wczytaj plik konfiguracji domyślny klucz brakuje oblicz sumę kontrolną bufora nagłówek".split(),
}
ERROR_CODES = ("SE-HA3", "MS-LT", "LG-GR", "SE-MD", "MS-CC")
LABELS = ("correct", "partial", "incorrect")


def _sentence(rng: random.Random, language: str, n_words: int) -> str:
    words = [rng.choice(WORDS[language]) for _ in range(n_words)]
    if language == "zh":
        return "".join(words) + "。"
    return (" ".join(words) + ".").capitalize()


def _source(rng: random.Random, file_no: int, comment: str) -> tuple[str, int, int]:
    """A Java class with `comment` on one method; returns (source, start, end) in characters."""
    fields = "".join(f"    private int field{j} = {rng.randint(0, 999)};\n" for j in range(rng.randint(2, 12)))
    before = f"package synthetic;\n\npublic class File{file_no} {{\n{fields}\n    "
    body = "".join(f"        total += field{j} * {rng.randint(1, 9)};\n" for j in range(rng.randint(1, 8)))
    after = f"\n    public int compute(int total) {{\n{body}        return total;\n    }}\n}}\n"
    return before + comment + after, len(before), len(before) + len(comment)


def _perturb(rng: random.Random, language: str, tail: str, strength: float) -> str:
    """Drop, swap or replace a `strength` share of the tail's words (characters for Chinese)."""
    units = list(tail) if language == "zh" else tail.split(" ")
    for _ in range(round(strength * len(units))):
        if not units:
            break
        i = rng.randrange(len(units))
        action = rng.random()
        if action < 0.3:
            del units[i]
        elif action < 0.6 and len(units) > 1:
            j = rng.randrange(len(units))
            units[i], units[j] = units[j], units[i]
        else:
            units[i] = rng.choice(WORDS[language])
    return "".join(units) if language == "zh" else " ".join(units)


def iter_samples(n_samples: int, generators: int = 5, seed: int = 0) -> Iterator[dict[str, Any]]:
    """Rows in the input schema: files of `generators` rows each, `n_samples` rows in all."""
    rng = random.Random(seed)
    names = [GENERATORS[g % len(GENERATORS)] + ("" if g < len(GENERATORS) else f"-{g}") for g in range(generators)]
    produced, file_no = 0, 0
    while produced < n_samples:
        language = LANGUAGES[file_no % len(LANGUAGES)]
        reference = "// " + _sentence(rng, language, rng.randint(6, 24))
        source, start, end = _source(rng, file_no, reference)
        prime_words = rng.randint(1, 2)
        prime = reference[: 3 + prime_words] if language == "zh" else " ".join(reference.split(" ")[: prime_words + 1]) + " "
        tail = reference[len(prime):]
        file_id = f"{file_no}_{language}"
        for name in names[: n_samples - produced]:
            strength = rng.random()
            label = LABELS[min(2, int(strength * 3))]
            yield {
                "sample_id": f"{file_id}/{name}",
                "file_id": file_id,
                "language": language,
                "source": source,
                "comment_start": start,
                "comment_end": end,
                "reference": reference,
                "generator": name,
                "prime": prime,
                "prediction": _perturb(rng, language, tail, strength),
                "label": label,
                "error_codes": None if label == "correct" else sorted(rng.sample(ERROR_CODES, rng.randint(1, 2))),
            }
            produced += 1
        file_no += 1


def write_synthetic(out: str | Path, n_samples: int = 12_500, generators: int = 5, seed: int = 0, batch_rows: int = 5_000) -> Path:
    """Write `n_samples` rows to `out` (.parquet or .jsonl) in batches of `batch_rows`."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = iter_samples(n_samples, generators, seed)
    if out.suffix == ".jsonl":
        with open(out, "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        return out
    import pyarrow as pa
    import pyarrow.parquet as pq

    from engine.records import SAMPLE_SCHEMA

    with pq.ParquetWriter(out, SAMPLE_SCHEMA, compression="zstd") as writer:
        batch: list[dict[str, Any]] = []
        for row in rows:
            batch.append(row)
            if len(batch) == batch_rows:
                writer.write_table(pa.Table.from_pylist(batch, schema=SAMPLE_SCHEMA))
                batch = []
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=SAMPLE_SCHEMA))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="output file, .parquet or .jsonl")
    parser.add_argument("--samples", type=int, default=12_500, help="rows to write (default 12,500, the study's size)")
    parser.add_argument("--generators", type=int, default=5, help="rows per file (default 5)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.samples < 1 or args.generators < 1:
        parser.error("--samples and --generators must be >= 1")
    path = write_synthetic(args.out, args.samples, args.generators, args.seed)
    print(f"wrote {args.samples} samples ({args.generators} generators per file) to {path}")


if __name__ == "__main__":
    main()
