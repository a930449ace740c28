"""What the judges of a config will cost, before any call: per judge, strategy and prompt language.

Calls are counted exactly from the input's files (one per file, strategy, prompt language and
reference mode; seven for the clustered strategies). Prompt tokens are counted on the rendered
prompts (engine/judge/judging.py `plan`, the run's own code) of up to `sample_files` files, chosen by
a seeded hash, and scaled by calls: with the judge's tokenizer and chat template where one is
known (a local judge's model or `tokenizer:`, an HTTP judge's `tokenizer:`), else estimated as
UTF-8 bytes / ESTIMATE_BYTES_PER_TOKEN plus MESSAGE_TOKENS a message (stated as an estimate on
every line). Completion tokens: at most `max_tokens` a call, and, once a sample has run (`babelscore
bench`), the measured mean a call. Cost from the judge's `price_per_million` (none assumed).
"""
from __future__ import annotations

import dataclasses
import hashlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import pyarrow as pa

from engine.judge.params import JudgeParams
from engine.judge.promptpack import CLUSTERED, resolve_prompt_language
from engine.llm.http_budget import cost_of
from engine.taxonomy import CLUSTERS

if TYPE_CHECKING:
    from engine.data.params import ValidationParams

logger = logging.getLogger(__name__)
ESTIMATE_BYTES_PER_TOKEN = 3.5
MESSAGE_TOKENS = 6
SAMPLE_FILES = 40


@dataclasses.dataclass(frozen=True)
class ForecastRow:
    judge: str
    strategy: str
    prompt_language: str
    calls: int
    prompt_tokens: int
    completion_max: int  # calls x max_tokens
    counted: str  # "tokenizer NAME" or "estimate"
    price: Mapping[str, float] | None = None
    completion_measured: float | None = None  # mean completion tokens a call, from a sample run

    @property
    def completion_expected(self) -> int | None:
        return None if self.completion_measured is None else round(self.completion_measured * self.calls)

    @property
    def cost_max(self) -> float | None:
        return cost_of(self.prompt_tokens, self.completion_max, self.price) if self.price else None

    @property
    def cost_expected(self) -> float | None:
        if not self.price or self.completion_expected is None:
            return None
        return cost_of(self.prompt_tokens, self.completion_expected, self.price)


def _tokenizer_name(judge: JudgeParams) -> str | None:
    if judge.tokenizer:
        return judge.tokenizer
    return None if judge.backend == "http" else judge.model


def _counter(judge: JudgeParams) -> tuple[Any, str]:
    """A function messages -> prompt tokens, and how it counts."""
    name = _tokenizer_name(judge)
    if name is not None:
        from engine.runtime import load_tokenizer, resolve_model

        tokenizer = load_tokenizer(resolve_model(name).path, fast=False)

        def count(messages: Any) -> int:
            ids = tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=True)
            return len(ids["input_ids"] if hasattr(ids, "keys") else ids)

        return count, f"tokenizer {name}"
    return estimate_tokens, "estimate"


def estimate_tokens(messages: Any) -> int:
    """Prompt tokens without a tokenizer: UTF-8 bytes / ESTIMATE_BYTES_PER_TOKEN + MESSAGE_TOKENS a message."""
    return round(sum(len(m["content"].encode("utf-8")) / ESTIMATE_BYTES_PER_TOKEN + MESSAGE_TOKENS for m in messages))


def _sampled(file_ids: Iterable[str], n: int, seed: int) -> set[str]:
    order = sorted(set(file_ids), key=lambda f: hashlib.blake2b(f"{seed}:{f}".encode(), digest_size=8).hexdigest())
    return set(order[:n])


def forecast(table: pa.Table, judges: Iterable[JudgeParams], seed: int = 0, sample_files: int = SAMPLE_FILES,
             measured: Mapping[tuple[str, str, str], float] | None = None) -> list[ForecastRow]:
    """One row per (judge, strategy, prompt language) for the sample rows of `table` (the run's input).
    measured: (judge, strategy, prompt language) -> mean completion tokens a call, from a sample run."""
    from engine.judge.judging import judge_items, plan

    items = judge_items(table)
    chosen = _sampled((item.file_id for item, _ids in items), sample_files, seed)
    sample = table.filter(pa.array([f in chosen for f in table.column("file_id").to_pylist()]))
    rows = []
    for judge in judges:
        calls: dict[tuple[str, str], int] = {}
        for item, _ids in items:
            for strategy in judge.strategies:
                for language in dict.fromkeys(resolve_prompt_language(s, item.language) for s in judge.prompt_languages):
                    per_file = (len(CLUSTERS) if strategy in CLUSTERED else 1) * len(judge.reference)
                    calls[(strategy, language)] = calls.get((strategy, language), 0) + per_file
        count, how = _counter(judge)
        tokens: dict[tuple[str, str], list[int]] = {}
        for entry in plan(sample, judge):
            for _request_id, call in entry.calls:
                tokens.setdefault((entry.strategy, entry.prompt_language), []).append(count(call.messages))
        for (strategy, language), n in calls.items():
            counted = tokens.get((strategy, language)) or [t for (s, _l), ts in tokens.items() if s == strategy for t in ts]
            mean = sum(counted) / len(counted) if counted else 0.0
            rows.append(ForecastRow(judge.judge_name, strategy, language, n, round(mean * n),
                                    n * judge.max_tokens_for(strategy), how, judge.price_per_million,
                                    (measured or {}).get((judge.judge_name, strategy, language))))
    return rows


def measured_completion(run_dir: str | Path) -> dict[tuple[str, str, str], float]:
    """(judge, strategy, prompt language) -> mean completion tokens a call in a run's judgments."""
    import pyarrow.parquet as pq

    folder = Path(run_dir) / "judgments"
    if not folder.is_dir():
        return {}
    table = pq.read_table(folder, columns=["file_id", "judge", "strategy", "prompt_language", "reference", "calls",
                                           "completion_tokens", "error"])
    seen: dict[tuple[str, str, str], list[int]] = {}  # (judge, strategy, language) -> [calls, tokens]
    done = set()
    for row in table.to_pylist():  # one row per candidate: each file's call(s) counted once
        key = (row["judge"], row["strategy"], row["prompt_language"])
        call = (*key, row["file_id"], row["reference"])
        if call in done or row["error"]:
            continue
        done.add(call)
        total = seen.setdefault(key, [0, 0])
        total[0] += row["calls"]
        total[1] += row["completion_tokens"]
    return {key: tokens / calls for key, (calls, tokens) in seen.items() if calls}


def _tokens(n: float) -> str:
    return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e4 else f"{n:,.0f}"


def forecast_lines(rows: list[ForecastRow]) -> list[str]:
    """The console table: one line per (judge, strategy, prompt language), then the total."""
    lines = [f"{'judge':<20}{'strategy':<14}{'lang':<6}{'calls':>8}{'prompt tok':>12}{'completion ≤':>14}"
             f"{'expected':>10}{'cost ≤':>10}{'expected':>10}  counted with"]
    for r in rows:
        expected = _tokens(r.completion_expected) if r.completion_expected is not None else "–"
        lines.append(f"{r.judge[:19]:<20}{r.strategy:<14}{r.prompt_language:<6}{r.calls:>8,}{_tokens(r.prompt_tokens):>12}"
                     f"{_tokens(r.completion_max):>14}{expected:>10}{_money(r.cost_max):>10}{_money(r.cost_expected):>10}"
                     f"  {r.counted}")
    lines.append(summary_line(rows))
    return lines


def _money(value: float | None) -> str:
    return "–" if value is None else f"{value:,.2f}"


def summary_line(rows: list[ForecastRow]) -> str:
    """All judges in one line (config check)."""
    calls = sum(r.calls for r in rows)
    prompt = sum(r.prompt_tokens for r in rows)
    completion = sum(r.completion_max for r in rows)
    costs = [r.cost_max for r in rows if r.cost_max is not None]
    estimated = any(r.counted == "estimate" for r in rows)
    cost = f", cost ≤ {sum(costs):,.2f}" + ("" if len(costs) == len(rows) else " (judges without price_per_million left out)")
    return (f"judge forecast: {calls:,} calls, {_tokens(prompt)} prompt tokens"
            + (" (some estimated: bytes / 3.5; give `tokenizer:` to count)" if estimated else "")
            + f", ≤ {_tokens(completion)} completion tokens (max_tokens){cost if costs else ', no prices configured'}")


def config_forecast(judges: Sequence[JudgeParams], input_path: str, validation: ValidationParams, seed: int,
                    stage_made_samples: bool = False,
                    measured: Mapping[tuple[str, str, str], float] | None = None) -> list[ForecastRow] | None:
    """The forecast of a config's judges on its input table, its valid rows as `validation` says
    (None: a stage makes the samples). seed: the run's seed."""
    if stage_made_samples:
        return None
    from engine.data.reader import iter_raw_rows
    from engine.data.validate import SampleValidator
    from engine.records import SAMPLE_SCHEMA

    validator = SampleValidator(require_prediction=True, params=validation)
    rows = []
    for raw in iter_raw_rows(input_path):
        sample, rejection = validator.check(raw)
        if rejection is None:
            rows.append(sample)
    table = pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA)
    return forecast(table, judges, seed=seed, measured=measured)
