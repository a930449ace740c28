"""`babelscore bench CONFIG`: how long would this config take on the whole input, here?

The config runs twice on seeded samples of its input (whole files, in the order of
blake2b(seed, file_id)): half the sample and all of it (`--sample N` rows), each in a throwaway
run directory and a fresh process, so every fixed cost is paid in each as in a real run. Per
stage the two timings give `time(rows) = fixed + per_row * rows`, projected to the input's rows.
`--devices N` divides the per-row time of the model stages by N; `--compare` also runs the whole
input. The method, the fixed-cost regime and how to read the numbers: docs/throughput.md.
The round trip reads its own task table, so its sample is a number of tasks (`roundtrip.limit`).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import yaml

from engine.config import RunConfig
from engine.errors import ConfigError, StageError
from engine.io.manifest import Manifest

logger = logging.getLogger(__name__)

_REPO_ROOT = Path(__file__).resolve().parent.parent
# A sampled run is cut into about this many parts per task: the first pays the warm-up, the
# others give the warm per-row time.
PARTS_PER_TASK = 3
# Timings on a shared machine move by this share between runs of the same work.
NOISE = 0.3
# Above this share of a stage's time at the sample size, fixed costs dominate it.
FIXED_REGIME = 0.5


@dataclasses.dataclass(frozen=True)
class Measured:
    """One run of the config: rows it read, seconds per step, and the manifest's throughput."""

    rows: int
    tasks: int
    steps: dict[str, float]
    total_s: float
    throughput: dict[str, Any]
    cpu_steps: dict[str, float] = dataclasses.field(default_factory=dict)
    total_cpu_s: float = 0.0
    # (judge, strategy, prompt language) -> mean completion tokens a call (engine/judge/forecast.py)
    judge_completion: dict[tuple[str, str, str], float] = dataclasses.field(default_factory=dict)

    def cpu_view(self) -> "Measured":
        """The same run in CPU seconds (its processes' own time): other users' load on a shared
        machine stretches wall time far more than CPU time."""
        tasks = {name: {**e, "wall_s": e.get("cpu_s", 0.0), "cold_wall_s": e.get("cold_cpu_s", 0.0)}
                 for name, e in self.throughput.get("tasks", {}).items()}
        return Measured(self.rows, self.tasks, self.cpu_steps, self.total_cpu_s, {**self.throughput, "tasks": tasks},
                        judge_completion=self.judge_completion)


@dataclasses.dataclass(frozen=True)
class StageFit:
    step: str
    model: bool  # a stage that loads a model (scales with devices)
    tokens: tuple[str, float, float] | None  # (unit, tokens/s at the large sample, warm tokens/s)
    fixed_s: float
    per_row_s: float
    small: tuple[int, float]  # (rows, seconds)
    large: tuple[int, float]
    full_rows: int

    @property
    def projected_s(self) -> float:
        return self.fixed_s + self.per_row_s * self.full_rows

    def projected_on(self, devices: int) -> float:
        if not self.model or devices <= 1:
            return self.projected_s
        return self.fixed_s + self.per_row_s * self.full_rows / devices

    @property
    def fixed_share(self) -> float:
        rows, seconds = self.large
        return min(1.0, self.fixed_s / seconds) if seconds > 0 else 0.0


def fit(small: tuple[int, float], large: tuple[int, float]) -> tuple[float, float]:
    """(fixed, per_row) through two (rows, seconds) points; both kept >= 0 (timing noise on a
    busy machine can make the difference negative: then all of it counts as per-row)."""
    (n1, t1), (n2, t2) = small, large
    if n2 <= n1:
        return (0.0, t2 / n2) if n2 else (t2, 0.0)
    per_row = max(0.0, (t2 - t1) / (n2 - n1))
    fixed = t2 - per_row * n2
    if fixed < 0:
        return 0.0, t2 / n2
    return fixed, per_row


def fit_above_noise(small: tuple[int, float], large: tuple[int, float]) -> tuple[float, float]:
    """`fit`, when the larger run took clearly longer (by NOISE); else all fixed (the mean of both):
    a step whose time did not grow with the rows is not charged per row on a noisy machine."""
    (n1, t1), (n2, t2) = small, large
    if n2 > n1 and t2 > t1 * (1 + NOISE):
        return fit(small, large)
    return (t1 + t2) / 2, 0.0


# ----- sampling ---------------------------------------------------------------------------------
def _order_key(seed: int, file_id: str) -> str:
    return hashlib.blake2b(f"{seed}:{file_id}".encode("utf-8"), digest_size=8).hexdigest()


def _file_ids(path: Path) -> list[str]:
    """The file_id of every row, in input order (the sample_id where a row has none)."""
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        names = pq.ParquetFile(path).schema_arrow.names
        cols = [c for c in ("file_id", "sample_id") if c in names]
        table = pq.read_table(path, columns=cols)
        rows = table.to_pylist()
    else:
        rows = []
        with open(path, "rb") as handle:
            for line in handle:
                if line.strip():
                    try:
                        value = json.loads(line)
                    except ValueError:
                        value = {}
                    rows.append(value if isinstance(value, dict) else {})
    return [str(r.get("file_id") or r.get("sample_id") or f"row-{i}") for i, r in enumerate(rows)]


def choose_files(file_ids: Sequence[str], rows: int, seed: int) -> list[str]:
    """Whole files in seeded order until at least `rows` rows are chosen (a part never splits a file)."""
    sizes: dict[str, int] = {}
    for fid in file_ids:
        sizes[fid] = sizes.get(fid, 0) + 1
    chosen, total = [], 0
    for fid in sorted(sizes, key=lambda f: _order_key(seed, f)):
        if total >= rows:
            break
        chosen.append(fid)
        total += sizes[fid]
    return chosen


def write_sample(path: Path, out: Path, files: set[str]) -> int:
    """Write the rows of `files` (same format as the input); returns the number of rows."""
    ids = _file_ids(path)
    keep = [i for i, fid in enumerate(ids) if fid in files]
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        pq.write_table(pq.read_table(path).take(keep), out)
        return len(keep)
    wanted, index = set(keep), 0
    with open(path, "rb") as src, open(out, "wb") as dst:
        for line in src:
            if not line.strip():
                continue
            if index in wanted:
                dst.write(line if line.endswith(b"\n") else line + b"\n")
            index += 1
    return len(keep)


# ----- one run in a child process ---------------------------------------------------------------
def _config_dict(plan: Any, input_path: str | None, task_limit: int | None, rows: int | None) -> dict[str, Any]:
    data = plan.config.to_dict()
    if input_path is not None:
        data["input"] = input_path
    if rows is not None:  # about PARTS_PER_TASK parts per task, so that warm parts can be timed
        data["part_size"] = max(1, -(-rows // PARTS_PER_TASK))
    if task_limit is not None:
        for stage in (b.stage for b in plan.own_tables()):
            if stage.section in data:
                own = stage.own_table()
                data[stage.section] = {**data[stage.section], own.limit_option: task_limit,
                                       own.per_part_option: max(1, -(-task_limit // PARTS_PER_TASK))}
    return data


def run_once(plan: Any, workdir: Path, label: str, input_path: str | None, task_limit: int | None,
             rows: int | None = None, timeout: float | None = None) -> Measured:
    """Run the plan's config (on `input_path` of `rows` rows, at most `task_limit` round-trip tasks) in a
    fresh process; `rows` None keeps the config's part size (the whole input, as a real run)."""
    cfg = workdir / f"{label}.yaml"
    out = workdir / f"run-{label}"
    data = _config_dict(plan, input_path, task_limit, rows)
    cfg.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "BABELSCORE_NO_PROGRESS"}
    env["BABELSCORE_PROGRESS"] = "lines"  # its progress lines are relayed below, so a bench is never silent
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    logger.info("bench: running the %s run (%s rows%s)", label, rows if rows is not None else "all",
                f", {task_limit} round-trip tasks" if task_limit else "")
    start, cpu_start = time.perf_counter(), _children_cpu()
    # Rejected rows are the config's own matter here: the bench times the rows that are valid.
    argv = [sys.executable, "-m", "engine.cli", "run", str(cfg), "--out", str(out), "--max-rejected", "100%"]
    returncode, stderr = _run_relaying_progress(argv, env, label, timeout)
    total, total_cpu = time.perf_counter() - start, _children_cpu() - cpu_start
    if returncode != 0:
        raise StageError("bench", f"the {label} run exited with {returncode}:\n{stderr[-3000:]}")
    manifest = Manifest.load(out / "manifest.json")
    section = manifest.throughput
    kept = {name: entry for name, entry in section.get("steps", {}).items() if not name.startswith("prepass:")}
    steps = {name: entry["wall_s"] for name, entry in kept.items()}
    cpu_steps = {name: entry.get("cpu_s", 0.0) for name, entry in kept.items()}
    counts = manifest.counts
    tasks_index = out / "roundtrip_tasks" / "index.json"
    tasks = json.loads(tasks_index.read_text(encoding="utf-8"))["n_tasks"] if tasks_index.exists() else 0
    from engine.judge.forecast import measured_completion

    return Measured(int(counts.get("valid_rows") or 0), tasks, steps, total, section, cpu_steps, total_cpu,
                    measured_completion(out))


def _run_relaying_progress(argv: list[str], env: dict[str, str], label: str, timeout: float | None) -> tuple[int, str]:
    """Run a child `babelscore run`, logging its progress lines as they come; (exit status, stderr)."""
    import threading

    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []

    def relay() -> None:
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("INFO engine.progress: "):
                logger.info("bench %s run: %s", label, line.split(": ", 1)[1].rstrip())

    reader = threading.Thread(target=relay, daemon=True)
    reader.start()
    try:
        returncode = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    finally:
        reader.join(timeout=10)
    return returncode, "".join(lines)


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# ----- the whole bench --------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class BenchResult:
    fits: list[StageFit]
    small: Measured
    large: Measured
    full_rows: int
    full_tasks: int
    sample_rows: int
    devices: int
    measured_full: Measured | None = None
    cpu_fits: list[StageFit] = dataclasses.field(default_factory=list)


def _tokens(stage: str, small: Measured, large: Measured, own_rates: dict[str, Any]) -> tuple[str, float, float] | None:
    """(unit, tokens/s at the large sample, warm tokens/s from the difference) of a stage that counts tokens."""
    for counter, unit in own_rates.get(stage, ()):
        if not unit.endswith("tokens/s"):
            continue
        got = [m.throughput.get("stages", {}).get(stage, {}).get("counters", {}).get(counter, 0) for m in (small, large)]
        seconds = [m.steps.get(f"stage:{stage}", 0.0) for m in (small, large)]
        if got[1] and seconds[1] > 0:
            warm = (got[1] - got[0]) / (seconds[1] - seconds[0]) if seconds[1] > seconds[0] and got[1] > got[0] else got[1] / seconds[1]
            return unit, got[1] / seconds[1], warm
    return None


def _rows_of(step: str, m: Measured, own_tables: set[str]) -> int:
    """Rows of a step's input: the stage's own (generated rows, round-trip tasks), else the samples."""
    stage = step.removeprefix("stage:")
    tasks = [e for e in m.throughput.get("tasks", {}).values() if e.get("stage") == stage]
    if tasks:
        return int(tasks[0]["in_rows"])
    return m.tasks if stage in own_tables else m.rows


def _warm_per_row(stage: str, runs: Sequence[Measured]) -> float | None:
    """Seconds per input row of a stage from the warm parts (every part but each task's first in
    its process), summed over the stage's tasks (each task reads every row); None without any."""
    total, any_warm = 0.0, False
    names = {name for m in runs for name, e in m.throughput.get("tasks", {}).items() if e.get("stage") == stage}
    for name in names:
        wall = rows = 0.0
        for m in runs:
            e = m.throughput.get("tasks", {}).get(name)
            if e:
                wall += e["wall_s"] - e.get("cold_wall_s", 0.0)
                rows += e["in_rows"] - e.get("cold_rows", 0)
        if rows <= 0:
            return None
        any_warm = True
        total += max(0.0, wall) / rows
    return total if any_warm else None


def _full_tasks(plan: Any) -> int:
    """Rows of the task tables of the listed stages that have their own (`own_table`, the RunPlan's)."""
    return sum(b.stage.own_table().rows for b in plan.own_tables())


def input_size(config: RunConfig) -> tuple[int, int]:
    """(input rows, round-trip tasks) of the config's whole input: what a profile projects."""
    from engine.stages.plan import build_plan

    plan = build_plan(config)
    if plan.input_source is not None:
        raise ConfigError(f"bench projects an input table; a config with the `{plan.input_source.name}` stage makes its "
                          "input: run it once, then bench a config whose `input:` is the built table")
    return len(_file_ids(Path(config.input))), _full_tasks(plan)


def bench(config: RunConfig, sample: int, devices: int = 1, seed: int | None = None, compare: bool = False,
          workdir: str | Path | None = None) -> BenchResult:
    if sample < 2:
        raise ConfigError(f"--sample {sample}: give at least 2 rows (two sample sizes are run)")
    from engine.stages.plan import build_plan

    plan = build_plan(config)
    source = plan.input_source
    if source is not None:
        raise ConfigError(f"bench samples the input table; a config with the `{source.name}` stage makes its input: "
                          "run it once, then bench a config whose `input:` is the built table")
    from engine.preflight import preflight

    preflight(plan)  # the run's own config-time checks, before any sample is drawn
    seed = config.seed if seed is None else seed
    input_path = Path(config.input)
    file_ids = _file_ids(input_path)
    full_rows, full_tasks = len(file_ids), _full_tasks(plan)
    with tempfile.TemporaryDirectory(prefix="babelscore-bench-", dir=workdir) as tmp:
        root = Path(tmp)
        runs: dict[str, Measured] = {}
        large_tasks = min(full_tasks, sample)
        for label, rows, tasks in (("small", max(1, sample // 2), max(1, large_tasks // 2)), ("large", sample, large_tasks)):
            files = set(choose_files(file_ids, rows, seed))
            path = root / f"sample-{label}{input_path.suffix.lower()}"
            n = write_sample(input_path, path, files)
            runs[label] = run_once(plan, root, label, str(path), tasks if full_tasks else None, rows=n)
        measured_full = run_once(plan, root, "full", None, None) if compare else None
    small, large = runs["small"], runs["large"]
    own_tables = {b.name for b in plan.own_tables()}
    fits = _fit_all(small, large, full_rows, full_tasks, own_tables, plan.layout.rates)
    cpu_fits = _fit_all(small.cpu_view(), large.cpu_view(), full_rows, full_tasks, own_tables, plan.layout.rates)
    return BenchResult(fits, small, large, full_rows, full_tasks, large.rows, devices, measured_full, cpu_fits)


def _fit_all(small: Measured, large: Measured, full_rows: int, full_tasks: int, own_tables: set[str],
             own_rates: dict[str, Any]) -> list[StageFit]:
    """own_tables: stages with a task table of their own; own_rates: stage -> its (counter, unit) rates."""
    models = {entry.get("stage") for entry in large.throughput.get("tasks", {}).values() if entry.get("model")}
    fits = []
    for step in large.steps:
        stage = step.removeprefix("stage:")
        points = [(_rows_of(step, m, own_tables), m.steps.get(step, 0.0)) for m in (small, large)]
        scale = (full_tasks / max(1, large.tasks)) if stage in own_tables else full_rows / max(1, large.rows)
        full = round(points[1][0] * scale)
        warm = _warm_per_row(stage, (small, large)) if step.startswith("stage:") else None
        if warm is None:  # a driver step, or a stage with no warm part: fit the two runs
            fixed, per_row = fit_above_noise(points[0], points[1])
        else:  # fixed = the span less the warm time of its rows (planning, pre-pass, loads, warm-up)
            per_row = warm
            fixed = max(0.0, sum(t - per_row * n for n, t in points) / len(points))
        fits.append(StageFit(step, stage in models, _tokens(stage, small, large, own_rates), fixed, per_row, points[0], points[1], full))
    # Process start, imports, config checks, signatures: paid once per run, whatever its size.
    other = [(m.rows, max(0.0, m.total_s - sum(m.steps.values()))) for m in (small, large)]
    fixed, per_row = (other[0][1] + other[1][1]) / 2, 0.0
    fits.append(StageFit("startup+other", False, None, fixed, per_row, other[0], other[1], full_rows))
    return fits


def report_lines(result: BenchResult) -> list[str]:
    """The bench's console table: per stage, measured at both sizes, fitted, projected."""
    lines = [
        f"bench: samples of {result.small.rows} and {result.large.rows} of the input's {result.full_rows:,} rows"
        + (f" ({result.large.tasks} of {result.full_tasks} round-trip tasks)" if result.full_tasks else "")
        + "; each run in a fresh process; rows and rows/s count input rows in every stage",
        f"{'stage':<22}{'rows':>6}{'s':>8}{'rows/s':>10}{'fixed s':>9}{'warm rows/s':>12}{'fixed share':>12}"
        f"{'projected s':>13}" + (f"{'measured s':>12}{'ratio':>7}" if result.measured_full else ""),
    ]
    measured = result.measured_full.steps if result.measured_full else {}
    total_projected = 0.0
    for f in result.fits:
        # one unit for every stage: input rows of the sample (a stage may read prompts, pairs or
        # candidates, more or fewer than the input's rows; its warm rate is converted)
        rows, seconds = result.large.rows, f.large[1]
        total_projected += f.projected_s
        per_input_row = f.per_row_s * f.full_rows / max(1, result.full_rows)
        warm = f"{1 / per_input_row:10,.1f}" if per_input_row > 0 else f"{'-':>10}"
        line = (f"{f.step.removeprefix('stage:'):<22}{rows:>6}{seconds:>8.1f}"
                f"{(rows / seconds if seconds > 0 else 0):>10,.1f}{f.fixed_s:>9.1f}{warm:>12}"
                f"{f.fixed_share:>11.0%} {f.projected_s:>13.1f}")
        if result.measured_full:
            full = (max(0.0, result.measured_full.total_s - sum(measured.values())) if f.step == "startup+other"
                    else measured.get(f.step))
            line += f"{full:>12.1f}{(f.projected_s / full if full else float('nan')):>7.2f}" if full is not None else f"{'-':>12}"
        lines.append(line)
    total = f"{'total':<22}{'':>6}{result.large.total_s:>8.1f}{'':>10}{'':>9}{'':>12}{'':>12}{total_projected:>13.1f}"
    if result.measured_full:
        real = result.measured_full.total_s
        total += f"{real:>12.1f}{total_projected / real:>7.2f}"
    lines.append(total)
    for f in result.fits:
        if f.tokens:
            unit, at_sample, warm = f.tokens
            lines.append(f"  {f.step.removeprefix('stage:')}: {at_sample:,.0f} {unit} at the sample, {warm:,.0f} warm")
    lines.append(f"projected time for the whole input on this machine: {_duration(total_projected)}")
    lines.extend(_cpu_lines(result))
    if result.devices > 1:
        on = sum(f.projected_on(result.devices) for f in result.fits)
        scaled = ", ".join(f.step.removeprefix("stage:") for f in result.fits if f.model) or "none"
        kind = machine_description()
        lines.append(f"projection for {result.devices} devices like this one ({kind}; not measured: per-row time of the model "
                     f"stages [{scaled}] divided by {result.devices}, fixed costs paid once per device in parallel): {_duration(on)}")
        if kind.startswith("cpu"):
            lines.append("  this machine has no GPU: the projection is for N processes of this CPU's speed and says nothing "
                         "about a GPU's; run `babelscore bench` with a small --sample on the target machine to know its time")
    fixed = [f.step.removeprefix("stage:") for f in result.fits if f.fixed_share > FIXED_REGIME and f.large[1] >= 0.5]
    if fixed:
        lines.append(f"regime: fixed costs (model loads, engine starts, imports) are over {FIXED_REGIME:.0%} of the time "
                     f"of {', '.join(fixed)} at this sample size; their rows/s here understates the rate at scale "
                     "(use `warm rows/s`, or a larger --sample)")
    else:
        lines.append("regime: per-row costs dominate every stage at this sample size; its rows/s is the rate at scale")
    lines.append("method: per part stage, warm rows/s from every part but each task's first (warm-up excluded) and "
                 "fixed = the stage's time less its warm row time; driver steps and startup from the two sample "
                 f"sizes (a step that grew by less than {NOISE:.0%} counts as fixed). Timings on a busy machine move "
                 "by 10-30% between runs: check with --compare")
    return lines


def machine_description() -> str:
    """What the model stages run on here: the first CUDA device's name, else 'cpu (N cores)'."""
    try:
        import torch

        if torch.cuda.is_available():
            return f"gpu {torch.cuda.get_device_name(0)}"
    except Exception:  # no torch, or a broken driver: this machine runs models on its CPU
        pass
    return f"cpu ({os.cpu_count()} cores)"


def _cpu_lines(result: BenchResult) -> list[str]:
    """Projected (and measured) CPU seconds per stage: steadier than wall time on a shared machine."""
    if not result.cpu_fits:
        return []
    full = result.measured_full
    lines = ["cpu time (the runs' own processes; other load on the machine moves it less than wall time):",
             f"  {'stage':<20}{'projected cpu s':>16}" + (f"{'measured cpu s':>16}{'ratio':>7}" if full else "")]
    for f in result.cpu_fits:
        line = f"  {f.step.removeprefix('stage:'):<20}{f.projected_s:>16.1f}"
        if full:
            got = (max(0.0, full.total_cpu_s - sum(full.cpu_steps.values())) if f.step == "startup+other"
                   else full.cpu_steps.get(f.step))
            line += f"{got:>16.1f}{(f.projected_s / got if got else float('nan')):>7.2f}" if got is not None else f"{'-':>16}"
        lines.append(line)
    total = sum(f.projected_s for f in result.cpu_fits)
    line = f"  {'total':<20}{total:>16.1f}"
    if full and full.total_cpu_s:
        line += f"{full.total_cpu_s:>16.1f}{total / full.total_cpu_s:>7.2f}"
    lines.append(line)
    return lines


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
