"""`finetune-data`: the experts' verdicts as chat-format training examples, with an aligned,
stratified, seeded split (docs/finetune.md, "What the stage does", has the files written).

An example is one judge call: the prompt the judge stage would send for a file (every
candidate of the file, one strategy, one prompt language: engine.judge.judging.plan renders it)
and, as the assistant's answer, the experts' labels and error codes in that strategy's answer
schema (compact JSON, as a grammar-constrained judge writes it).

The split keeps a file's candidates together (they share one prompt) and, with
`align: language-prefix`, one file's translations on the same side in every language; groups go,
in a seeded order, to the side that brings the test side's label counts per language closest to
(1 - train_ratio) of the totals. Same rows and seed: the same split, byte for byte.
"""
from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from engine.errors import InputError
from engine.finetune.params import FinetuneParams
from engine.io.atomic import write_json_atomic, write_parquet_atomic
from engine.records import LABELS

OUTPUT_DIR = "finetune/data"
_EPS = 1e-9  # sums of |count - target| closer than this are ties
_MAX_SWAP_GROUPS = 400  # pair swaps up to this many groups (files): 160,000 pairs a pass
EXAMPLE_SCHEMA = pa.schema([
    pa.field("example_id", pa.string()), pa.field("split", pa.string()), pa.field("file_id", pa.string()),
    pa.field("group", pa.string()), pa.field("language", pa.string()), pa.field("prompt_language", pa.string()),
    pa.field("strategy", pa.string()), pa.field("sample_ids", pa.list_(pa.string())),
    pa.field("labels", pa.list_(pa.string())), pa.field("messages", pa.string()),
])


def align_key(file_id: str, language: str, align: str) -> str:
    """The group a file belongs to: its translations share it."""
    prefix = f"{language}_"
    if align == "language-prefix" and file_id.startswith(prefix):
        return file_id[len(prefix):]
    return file_id


@dataclass(frozen=True)
class Split:
    test_groups: frozenset[str]
    counts: dict[str, dict[str, dict[str, int]]]  # language -> label -> {train, test}

    def side(self, group: str) -> str:
        return "test" if group in self.test_groups else "train"


def split_groups(rows: list[dict[str, Any]], train_ratio: float, seed: int, align: str) -> Split:
    """The seeded, stratified split of labelled sample rows into train and test groups."""
    per_group: dict[str, dict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
    totals: dict[tuple[str, str], int] = defaultdict(int)
    for row in rows:
        key = (row["language"], row["label"])
        per_group[align_key(row["file_id"], row["language"], align)][key] += 1
        totals[key] += 1
    # keys in sorted order and a tolerance: the float sums must not depend on the rows' order
    per_group = {g: dict(sorted(keys.items())) for g, keys in per_group.items()}
    order = sorted(per_group)
    random.Random(seed).shuffle(order)
    target = {key: (1 - train_ratio) * n for key, n in totals.items()}
    test: dict[tuple[str, str], int] = defaultdict(int)
    test_groups = set()
    for group in order:
        adds = per_group[group]
        # the side whose choice leaves the test counts closer to their targets (ties: train)
        before = sum(abs(test[k] - target[k]) for k in adds)
        after = sum(abs(test[k] + n - target[k]) for k, n in adds.items())
        if after < before - _EPS:
            test_groups.add(group)
            for k, n in adds.items():
                test[k] += n
    _improve(order, per_group, target, test, test_groups)
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for (language, label), n in sorted(totals.items()):
        counts.setdefault(language, {})[label] = {"train": n - test[(language, label)], "test": test[(language, label)]}
    return Split(frozenset(test_groups), counts)


def _improve(order: list[str], per_group: dict[str, dict[tuple[str, str], int]], target: dict[tuple[str, str], float],
             test: dict[tuple[str, str], int], test_groups: set[str], passes: int = 50) -> None:
    """Move single groups across, then swap pairs, while that brings the test counts closer to their targets.

    The one greedy pass decides each group before it sees the later ones: on real data (files
    missing from some languages, mixed labels per file) it left about one (language, label)
    cell in 20 off by more than one file's worth. Strict improvements only, in the seeded
    order, so it ends and the same rows and seed give the same split."""
    def gain(group: str, sign: int) -> float:
        adds = per_group[group]
        return sum(abs(test[k] - target[k]) - abs(test[k] + sign * n - target[k]) for k, n in adds.items())

    def move(group: str) -> None:
        sign = -1 if group in test_groups else 1
        for k, n in per_group[group].items():
            test[k] += sign * n
        (test_groups.discard if sign < 0 else test_groups.add)(group)

    for _ in range(passes):
        changed = False
        for group in order:
            if gain(group, -1 if group in test_groups else 1) > _EPS:
                move(group)
                changed = True
        if changed:
            continue
        if len(order) > _MAX_SWAP_GROUPS:  # pairs grow as the square; single moves only
            return
        for a in order:  # a test group for a train group
            if a not in test_groups:
                continue
            for b in order:
                if b in test_groups:
                    continue
                before = sum(abs(test[k] - target[k]) for k in sorted({*per_group[a], *per_group[b]}))
                move(a)
                move(b)
                if before - sum(abs(test[k] - target[k]) for k in sorted({*per_group[a], *per_group[b]})) > _EPS:
                    changed = True
                    break
                move(b)
                move(a)
        if not changed:
            return


def expert_answer(pack: Any, strategy: str, rows: list[dict[str, Any]], max_errors: int) -> str:
    """The experts' verdicts on a file's candidates in the strategy's answer schema (compact JSON)."""
    from engine.judge.schema import REASONING, property_order, text_field
    from engine.taxonomy import leaf_codes

    leaves = set(leaf_codes())
    f = pack.field
    evaluations = []
    for row in rows:
        codes = [c for c in (row.get("error_codes") or []) if c in leaves][:max_errors]
        errors: list[Any] = ([{f("code"): c, f("confidence"): 1.0, f("justification"): ""} for c in codes]
                             if strategy in REASONING else codes)
        # The free text stays empty: the experts' verdicts carry no explanation, and an invented
        # one would teach the judge to write it.
        evaluation = {f("model_name"): row["generator"], f("errors"): errors, f(text_field(strategy)): "",
                      f("overall_quality"): pack.label(row["label"])}
        evaluations.append({key: evaluation[key] for key in property_order(pack, strategy)})
    return json.dumps({f("evaluations"): evaluations}, ensure_ascii=False, separators=(",", ":"))


def judge_params_of(params: FinetuneParams) -> Any:
    """The judge whose prompts the examples use (and that the evaluation runs)."""
    from engine.judge.params import JudgeParams

    return JudgeParams(model=params.model, backend="transformers", tokenizer=params.tokenizer,
                       strategies=(params.strategy,), prompt_languages=(params.prompt_language,),
                       max_text_chars=params.max_text_chars, max_errors=params.max_errors, max_tokens=params.max_tokens)


def build_examples(samples: pa.Table, params: FinetuneParams) -> tuple[list[dict[str, Any]], Split, list[dict[str, Any]]]:
    """(examples, split, labelled sample rows) of a run's samples."""
    from engine.judge.judging import plan
    from engine.judge.promptpack import load_pack

    rows = [r for r in samples.to_pylist() if r.get("label") in LABELS and r.get("prediction") is not None]
    if not rows:
        raise InputError("finetune: no sample has an expert label (label: correct, partial or incorrect); "
                         "fine-tuning learns from the experts' verdicts, so give labelled input")
    languages_of: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        languages_of[row["file_id"]].add(row["language"])
    shared = sorted(f for f, langs in languages_of.items() if len(langs) > 1)
    if shared:  # the judge's prompts and request ids are per file id: two languages would merge into one prompt
        raise InputError(f"finetune: file id {shared[0]!r} (and {len(shared) - 1} more) is used in several languages "
                         f"({sorted(languages_of[shared[0]])}); give each language's file its own id, e.g. "
                         f"'<language>_{shared[0]}', which also aligns the translations in the split")
    split = split_groups(rows, params.train_ratio, params.split_seed, params.align)
    by_sample = {r["sample_id"]: r for r in rows}
    judge = judge_params_of(params)
    examples = []
    for entry in plan(pa.Table.from_pylist(rows, schema=samples.schema), judge):
        (request_id, call), = entry.calls
        file_rows = [by_sample[entry.sample_ids[c.generator]] for c in entry.item.candidates]
        answer = expert_answer(load_pack(entry.prompt_language, judge.prompt_pack), params.strategy, file_rows,
                               params.max_errors)
        group = align_key(entry.item.file_id, entry.item.language, params.align)
        examples.append({
            "example_id": request_id, "split": split.side(group), "file_id": entry.item.file_id, "group": group,
            "language": entry.item.language, "prompt_language": entry.prompt_language, "strategy": params.strategy,
            "sample_ids": [r["sample_id"] for r in file_rows], "labels": [r["label"] for r in file_rows],
            "messages": json.dumps([*call.messages, {"role": "assistant", "content": answer}], ensure_ascii=False),
        })
    return examples, split, rows


def split_signature(params: FinetuneParams, examples: list[dict[str, Any]]) -> str:
    """The split's identity: its options, seed and every example's side and content."""
    digest = hashlib.sha256()
    for example in examples:
        digest.update(json.dumps([example["example_id"], example["split"], example["messages"]]).encode("utf-8"))
    fields = {**params.data_options(), "examples": len(examples), "content": digest.hexdigest()[:16]}
    return "|".join(f"{k}:{v}" for k, v in fields.items())


def write_data(run_root: str | Path, samples: pa.Table, params: FinetuneParams) -> dict[str, Any]:
    """Write RUN/finetune/data/: train/test JSONL and Parquet, the test side's ids and sample rows, split.json."""
    examples, split, rows = build_examples(samples, params)
    out = Path(run_root) / OUTPUT_DIR
    out.mkdir(parents=True, exist_ok=True)
    for side in ("train", "test"):
        chosen = [e for e in examples if e["split"] == side]
        write_parquet_atomic(out / f"{side}.parquet", pa.Table.from_pylist(chosen, schema=EXAMPLE_SCHEMA))
        lines = "".join(json.dumps({"messages": json.loads(e["messages"]), "example_id": e["example_id"],
                                    "language": e["language"]}, ensure_ascii=False) + "\n" for e in chosen)
        _write_text(out / f"{side}.jsonl", lines)
    test_ids = sorted({s for e in examples if e["split"] == "test" for s in e["sample_ids"]})
    test_rows = [r for r in rows if r["sample_id"] in set(test_ids)]
    # The test side as an input file: a judge run on it (`input:`) judges exactly these samples.
    _write_text(out / "test_samples.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in test_rows))
    info = {"signature": split_signature(params, examples), "seed": params.split_seed, "train_ratio": params.train_ratio,
            "align": params.align, "test_groups": sorted(split.test_groups), "counts": split.counts,
            "examples": {side: sum(e["split"] == side for e in examples) for side in ("train", "test")},
            "test_sample_ids": test_ids}
    write_json_atomic(out / "split.json", info)
    return info


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def read_examples(run_root: str | Path, side: str) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return pq.read_table(Path(run_root) / OUTPUT_DIR / f"{side}.parquet", schema=EXAMPLE_SCHEMA).to_pylist()
